/*
 * log.c - klog text and JSON line formats.
 */
#define _POSIX_C_SOURCE 200809L
#include "log.h"
#include "jdump.h"
#include "buf.h"
#include "utf8.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static bool use_json;
static int verbosity;
static FILE *stream;

void de_log_set_format_json(bool json) { use_json = json; }
void de_log_set_verbosity(int v) { verbosity = v; }
int de_log_verbosity(void) { return verbosity; }
void de_log_set_stream(void *fp) { stream = fp; }

static const char *base_name(const char *f)
{
    const char *s = strrchr(f, '/');
    return s ? s + 1 : f;
}

/* The rest of a klog quoted value: \" and \\ escaped, control characters
 * and bytes that are not UTF-8 as de_utf8_shown escapes them (a value may
 * carry a policy's or a manifest's text: it must not drive the terminal,
 * and a newline must not start what reads as another log line), and the
 * closing quote. */
static void quoted(de_buf *b, const char *s)
{
    size_t n = strlen(s);
    for (size_t i = 0, used; i < n; i += used) {
        char one[6];
        size_t m = de_utf8_shown(one, s + i, n - i, &used);
        if (s[i] == '"' || s[i] == '\\')
            de_buf_putc(b, '\\');
        de_buf_add(b, one, m);
    }
    de_buf_putc(b, '"');
}

/* A JSON log value: JSON escapes control characters itself, but jansson
 * refuses bytes that are not UTF-8 (the value would be dropped), so those
 * are shown as escapes. */
static json_t *log_string(const char *s)
{
    size_t at, n = strlen(s);
    if (!de_utf8_problem(s, n, &at))
        return json_string(s);
    size_t cap = n * 4 + 1; /* an escape is at most 4 bytes a byte */
    char *t = de_xmalloc(cap);
    de_utf8_printable(t, cap, s, n);
    json_t *v = json_string(t);
    free(t);
    return v;
}

void de_log_kv(de_log_level lvl, int v, const char *file, int line, const char *msg,
               const char *const *kv)
{
    FILE *out = stream ? stream : stderr;
    struct timeval tv;
    gettimeofday(&tv, NULL);
    de_buf b;
    de_buf_init(&b, 64 * 1024);
    if (use_json) {
        json_t *o = json_object();
        json_object_set_new(o, "ts", json_real((double)tv.tv_sec + tv.tv_usec / 1e6));
        char caller[128];
        snprintf(caller, sizeof caller, "%s:%d", base_name(file), line);
        json_object_set_new(o, "caller", json_string(caller));
        if (lvl == DE_LOG_ERROR)
            json_object_set_new(o, "err", log_string(msg));
        else
            json_object_set_new(o, "msg", log_string(msg));
        if (lvl == DE_LOG_INFO)
            json_object_set_new(o, "v", json_integer(v));
        for (int i = 0; kv && kv[i] && kv[i + 1]; i += 2)
            json_object_set_new(o, kv[i], log_string(kv[i + 1]));
        char *s = de_json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
        de_buf_puts(&b, s ? s : "{}");
        free(s);
        json_decref(o);
    } else {
        struct tm tm;
        time_t t = tv.tv_sec;
        gmtime_r(&t, &tm);
        char c = lvl == DE_LOG_ERROR ? 'E' : lvl == DE_LOG_WARN ? 'W' : 'I';
        de_buf_printf(&b, "%c%02d%02d %02d:%02d:%02d.%06ld %7d %s:%d] \"", c, tm.tm_mon + 1,
                      tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (long)tv.tv_usec,
                      (int)getpid(), base_name(file), line);
        quoted(&b, msg);
        for (int i = 0; kv && kv[i] && kv[i + 1]; i += 2) {
            de_buf_printf(&b, " %s=\"", kv[i]);
            quoted(&b, kv[i + 1]);
        }
    }
    de_buf_putc(&b, '\n');
    fwrite(de_buf_str(&b), 1, b.len, out);
    fflush(out);
    de_buf_free(&b);
}

void de_logf(de_log_level lvl, int v, const char *file, int line, const char *fmt, ...)
{
    char msg[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    de_log_kv(lvl, v, file, line, msg, NULL);
}
