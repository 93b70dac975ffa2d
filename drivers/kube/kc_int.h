/*
 * kc_int.h - internals shared by the kube driver's files (not for callers).
 */
#ifndef KC_INT_H
#define KC_INT_H

#include "kc.h"

#include <curl/curl.h>

typedef struct kc_blob {
    unsigned char *p;
    size_t len;
} kc_blob;

de_rc kc_base64_decode(const char *s, kc_blob *out);

const kc_blob *kc_config_ca(const kc_config *c);
const kc_blob *kc_config_cert(const kc_config *c);
const kc_blob *kc_config_key(const kc_config *c);
bool kc_config_insecure(const kc_config *c);
/* The server URL to send requests to (kc_config_server() is the redacted
 * form for messages). */
const char *kc_config_url(const kc_config *c);
/* base64(username:password) for basic auth, NULL when not configured. */
const char *kc_config_basic(const kc_config *c);

/* Configure an easy handle for this server: TLS material, user agent,
 * timeouts. Authentication headers are added per request by the caller. */
void kc_client_setup_easy(kc_client *cl, CURL *h);
/* A fresh header list with Authorization (and Accept / Content-Type). */
struct curl_slist *kc_client_headers(kc_client *cl, bool force_token_reread,
                                     const char *content_type);
void kc_client_count(kc_client *cl, long status);
/* kc_redact under the client's lock (token re-reads run on other threads). */
void kc_client_redact(kc_client *cl, char *msg);
kc_stats *kc_client_stats_mut(kc_client *cl);

/* Run the informer for up to `ns` nanoseconds (used while writes wait). */
void kc_informer_pump_for(kc_informer *inf, uint64_t ns);

/* Build a redacted message from a Status body (or raw text) into e. */
de_rc kc_status_error(kc_client *cl, de_err *e, const char *method, const char *path,
                      long status, const char *body, size_t len);

/* ---- failures (kc_fail.c) ---- */
#define KC_FAIL_ROWS 256

typedef struct kc_failrow {
    kc_fail_count c;
    uint64_t reported_ns; /* last report of this row, 0 = never */
    uint64_t held;        /* held back since */
} kc_failrow;

typedef struct kc_failtab {
    kc_failrow rows[KC_FAIL_ROWS];
    size_t n;
    uint64_t interval_ns, total, suppressed;
    double tokens;
    uint64_t refill_ns;
} kc_failtab;

void kc_failtab_init(kc_failtab *t, uint64_t interval_ns);
/* Count f; true when it is to be reported now, with *report filled (its
 * strings point into the table). */
bool kc_failtab_note(kc_failtab *t, const kc_failure *f, kc_failure *report);
/* Count and (rate-limited) report one failure through the client. The
 * message is redacted here. */
void kc_client_fail(kc_client *cl, const char *resource, const char *verb, long code,
                    const char *reason, const char *message);
const char *kc_curl_reason(CURLcode cc);
/* The Status reason of an error answer (or the code's default reason) and
 * its message as one line. */
void kc_status_reason(long status, const char *body, size_t len, char *reason, size_t rcap,
                      char *msg, size_t mcap);
/* The resource ("pods/binding") and verb ("create") of a request. */
void kc_path_resource(const char *method, const char *path, char *res, size_t cap,
                      const char **verb);

/* Empty a buffer, and give its memory back when one large answer grew it
 * past 1 MiB (a buffer keeps its capacity otherwise). */
void kc_buf_trim(de_buf *b);

/* JSON whitespace (RFC 8259), for the scanners of kc_stream.c and kc_lean.c */
static inline bool kc_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* kc_lean.c: the span of metadata.managedFields of the object at nesting
 * level `level` (1: the text is the object; 2: a member of it, as a watch
 * event's "object"), and a decode that leaves it out. */
bool kc_managed_span(const char *s, size_t n, int level, size_t *from, size_t *to);
json_t *kc_loadb_lean(const char *s, size_t n, int level, size_t flags, json_error_t *je);

/* Deterministic xorshift64*. */
uint64_t kc_rand_next(uint64_t *state);

/* The watch stream's line cutting and event decoding without a transfer:
 * `len` bytes of a 200 answer for resource res, handed over `chunk` bytes
 * at a time as curl would (0: at once).  Returns the events queued; *cut
 * says the stream was cut (an ERROR, undecodable or oversized line).  For
 * spec/fuzz/fuzz_watch.c. */
size_t kc_watch_feed(kc_informer *inf, kc_res res, const char *body, size_t len, size_t chunk, bool *cut);

#endif
