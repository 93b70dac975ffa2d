/*
 * log.h - klog-style logging to stderr, text or JSON
 * (--logging-format=text|json, -v N).  Only the CLI and the scheduler loop
 * log; library code reports through de_err and never prints.
 *
 * Text:  I1201 04:05:06.123456 12345 file.c:42] "msg" key="value"
 * JSON:  {"ts":1733025906.123,"caller":"file.c:42","msg":"msg","v":0,"key":"value"}
 * Values are strings; callers must never pass secrets (tokens are redacted by
 * the kube driver before they reach a log call).
 */
#ifndef DE_LOG_H
#define DE_LOG_H

#include "de.h"

typedef enum de_log_level { DE_LOG_INFO = 0, DE_LOG_WARN, DE_LOG_ERROR } de_log_level;

void de_log_set_format_json(bool json);
void de_log_set_verbosity(int v);
int de_log_verbosity(void);
/* Redirect to a FILE* (tests); NULL restores stderr. */
void de_log_set_stream(void *fp);

/* kv: NULL-terminated list of alternating key, value C strings. */
void de_log_kv(de_log_level lvl, int v, const char *file, int line, const char *msg,
               const char *const *kv);
void de_logf(de_log_level lvl, int v, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

#define DE_INFO(v, ...) \
    do { if ((v) <= de_log_verbosity()) de_logf(DE_LOG_INFO, (v), __FILE__, __LINE__, __VA_ARGS__); } while (0)
#define DE_WARN(...) de_logf(DE_LOG_WARN, 0, __FILE__, __LINE__, __VA_ARGS__)
#define DE_ERROR(...) de_logf(DE_LOG_ERROR, 0, __FILE__, __LINE__, __VA_ARGS__)

#endif
