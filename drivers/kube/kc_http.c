/*
 * kc_http.c - synchronous requests to the API server: authentication, the
 * write rate limiter, retries (429 Retry-After, 5xx, transport errors, 401
 * token re-read), Status decoding and the counters behind /metrics.  Every
 * failed attempt, retried or not, is counted and reported (kc_fail.c).
 *
 * Requests reuse one easy handle so its kept-alive connection carries every
 * write.  A request that has to wait keeps the watches flowing through the
 * informer set with kc_client_set_pump(): a slow write never makes the
 * watches fall behind far enough to expire.
 *
 * Clones (kc_client_clone) give other threads their own easy handle (and
 * connection) while sharing the root's rate limiter, counters, failure table
 * and token re-reads, all behind the root's mutex, so --kube-api-qps and
 * /metrics stay one figure however many threads write.  The mutex is held
 * only for bookkeeping, never across a transfer or a wait; a clone waits by
 * sleeping (only the root pumps the informer, which belongs to its thread).
 */
#define _POSIX_C_SOURCE 200809L
#include "kc_int.h"
#include "kc_raw.h"
#include "../../engine/base/jdump.h"

#include "../../engine/base/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <time.h>

#include <openssl/ssl.h>

#define MAX_RESPONSE ((size_t)256 << 20)
#define MAX_RETRY_AFTER_S 60

struct kc_client {
    kc_config *cfg;
    CURL *h;
    kc_raw *raw; /* requests' own HTTP/1.1 framing (kc_raw.c), when raw_ok */
    bool raw_ok;
    kc_client_opts o;
    char *ua;
    char *extra_header;
    kc_informer *pump;
    double tokens;
    uint64_t last_refill;
    kc_stats st;
    kc_backoff bo;
    kc_failtab fails;
    kc_failure_fn fail_fn;
    void *fail_ctx;
    unsigned token_problem_seq;
    char errbuf[CURL_ERROR_SIZE];
    kc_client *root;    /* a clone's root (NULL: this is one) */
    pthread_mutex_t mu; /* root: tokens, st, fails, token re-reads */
    uint64_t write_until; /* this client's, under the root's mu (kc_client_set_write_deadline) */
};

static kc_client *root_of(kc_client *cl) { return cl->root ? cl->root : cl; }
static void lock(kc_client *cl) { pthread_mutex_lock(&root_of(cl)->mu); }
static void unlock(kc_client *cl) { pthread_mutex_unlock(&root_of(cl)->mu); }

/* Set once, with libcurl's global init, by the first client (made on the
 * main thread before any binding worker): curl_version_info fills a static
 * struct on every call, so the workers never ask it themselves. */
static bool curl_ready;
static bool tls_is_openssl; /* keep_tls_buffers applies */

kc_client *kc_client_new(kc_config *cfg, const kc_client_opts *o)
{
    if (!curl_ready) {
        curl_global_init(CURL_GLOBAL_DEFAULT);
        const curl_version_info_data *v = curl_version_info(CURLVERSION_NOW);
        tls_is_openssl = v && v->ssl_version && strncmp(v->ssl_version, "OpenSSL/", 8) == 0;
        curl_ready = true;
    }
    kc_client *cl = de_xcalloc(1, sizeof *cl);
    cl->cfg = cfg;
    if (o)
        cl->o = *o;
    if (cl->o.qps <= 0)
        cl->o.qps = 50;
    if (cl->o.burst <= 0)
        cl->o.burst = 100;
    if (cl->o.max_retries <= 0)
        cl->o.max_retries = 5;
    if (cl->o.timeout_ms <= 0)
        cl->o.timeout_ms = 30000;
    cl->ua = de_xstrdup(cl->o.user_agent ? cl->o.user_agent : "draengine/0.1.0");
    cl->o.user_agent = cl->ua;
    cl->tokens = cl->o.burst;
    cl->last_refill = de_now_ns();
    cl->h = curl_easy_init();
    cl->raw_ok = kc_raw_usable(kc_config_url(cfg), cl->o.http2);
    cl->write_until = UINT64_MAX;
    pthread_mutex_init(&cl->mu, NULL);
    kc_backoff_init(&cl->bo, 100000000ull, 5000000000ull, 0x5eed);
    kc_failtab_init(&cl->fails, cl->o.report_interval_ms > 0
                                    ? (uint64_t)cl->o.report_interval_ms * 1000000ull
                                    : 0);
    return cl;
}

kc_client *kc_client_clone(kc_client *parent)
{
    kc_client *root = root_of(parent);
    kc_client *cl = de_xcalloc(1, sizeof *cl);
    cl->root = root;
    cl->cfg = root->cfg;
    cl->o = root->o;
    cl->ua = de_xstrdup(root->ua);
    cl->o.user_agent = cl->ua;
    lock(root);
    cl->extra_header = root->extra_header ? de_xstrdup(root->extra_header) : NULL;
    cl->token_problem_seq = root->token_problem_seq;
    unlock(root);
    cl->h = curl_easy_init();
    cl->raw_ok = root->raw_ok;
    cl->write_until = UINT64_MAX;
    kc_backoff_init(&cl->bo, 100000000ull, 5000000000ull, 0x5eed ^ (uint64_t)(uintptr_t)cl);
    return cl;
}

void kc_client_free(kc_client *cl)
{
    if (!cl)
        return;
    if (!cl->root)
        pthread_mutex_destroy(&cl->mu);
    if (cl->h)
        curl_easy_cleanup(cl->h);
    kc_raw_free(cl->raw);
    free(cl->ua);
    free(cl->extra_header);
    free(cl);
}

kc_config *kc_client_config(kc_client *cl) { return cl->cfg; }

void kc_client_set_header(kc_client *cl, const char *header)
{
    free(cl->extra_header);
    cl->extra_header = header ? de_xstrdup(header) : NULL;
}
void kc_client_set_pump(kc_client *cl, kc_informer *inf) { cl->pump = inf; }

void kc_client_set_write_deadline(kc_client *cl, uint64_t until_ns)
{
    lock(cl);
    cl->write_until = until_ns;
    unlock(cl);
}

static bool past_write_deadline(kc_client *cl)
{
    lock(cl);
    uint64_t until = cl->write_until;
    unlock(cl);
    return until != UINT64_MAX && de_now_ns() >= until;
}
void kc_client_stats(const kc_client *cl, kc_stats *out)
{
    kc_client *r = root_of((kc_client *)cl);
    lock(r);
    *out = r->st;
    unlock(r);
}
/* The root's counters, for the informer's thread (it alone touches the
 * watch fields). */
kc_stats *kc_client_stats_mut(kc_client *cl) { return &root_of(cl)->st; }

void kc_client_redact(kc_client *cl, char *msg)
{
    lock(cl);
    kc_redact(cl->cfg, msg);
    unlock(cl);
}

void kc_client_set_failure_fn(kc_client *cl, kc_failure_fn fn, void *ctx)
{
    cl->fail_fn = fn;
    cl->fail_ctx = ctx;
}

bool kc_client_failure(const kc_client *cl, size_t i, kc_fail_count *out)
{
    kc_client *r = root_of((kc_client *)cl);
    lock(r);
    bool ok = i < r->fails.n;
    if (ok)
        *out = r->fails.rows[i].c;
    unlock(r);
    return ok;
}

uint64_t kc_client_failures_suppressed(const kc_client *cl)
{
    kc_client *r = root_of((kc_client *)cl);
    lock(r);
    uint64_t n = r->fails.suppressed;
    unlock(r);
    return n;
}

void kc_client_fail(kc_client *cl, const char *resource, const char *verb, long code,
                    const char *reason, const char *message)
{
    char msg[512];
    snprintf(msg, sizeof msg, "%s", message ? message : "");
    for (char *p = msg; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = ' ';
    kc_client *r = root_of(cl);
    lock(r);
    kc_redact(r->cfg, msg);
    kc_failure f = {resource, verb, code, reason, msg, 0}, rep;
    if (kc_failtab_note(&r->fails, &f, &rep) && r->fail_fn)
        r->fail_fn(r->fail_ctx, &rep); /* under the lock: it must not call back into the client */
    unlock(r);
}

void kc_client_count(kc_client *cl, long status)
{
    kc_stats *st = &root_of(cl)->st;
    lock(cl);
    st->requests++;
    int cls = status >= 100 && status < 600 ? (int)(status / 100) : 0;
    st->by_code[cls]++;
    if (status == 409)
        st->conflicts++;
    else if (status == 429)
        st->throttled++;
    else if (status == 401)
        st->unauthorized++;
    unlock(cl);
}

static void count_retry(kc_client *cl)
{
    lock(cl);
    root_of(cl)->st.retries++;
    unlock(cl);
}

/* ---- backoff ------------------------------------------------------------ */

uint64_t kc_rand_next(uint64_t *s)
{
    uint64_t x = *s ? *s : 0x9e3779b97f4a7c15ull;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545f4914f6cdd1dull;
}

void kc_backoff_init(kc_backoff *b, uint64_t initial_ns, uint64_t max_ns, uint64_t seed)
{
    b->initial_ns = initial_ns;
    b->max_ns = max_ns;
    b->cur_ns = 0;
    b->rng = seed ? seed : 0x9e3779b97f4a7c15ull;
    b->reset_ns = b->last_ns = 0;
}

uint64_t kc_backoff_next(kc_backoff *b)
{
    if (b->reset_ns) {
        uint64_t now = de_now_ns();
        if (b->last_ns && now - b->last_ns > b->reset_ns)
            b->cur_ns = 0;
        b->last_ns = now;
    }
    b->cur_ns = b->cur_ns ? DE_MIN(b->cur_ns * 2, b->max_ns) : b->initial_ns;
    /* factor in [1, 2): client-go's jitter 1.0 */
    uint64_t r = kc_rand_next(&b->rng) >> 11; /* 53 bits */
    double f = 1.0 + (double)r / (double)(1ull << 53);
    return (uint64_t)((double)b->cur_ns * f);
}

void kc_backoff_reset(kc_backoff *b) { b->cur_ns = 0; }

/* ---- waiting --------------------------------------------------------------- */

static void wait_ns(kc_client *cl, uint64_t ns)
{
    if (cl->pump) {
        kc_informer_pump_for(cl->pump, ns);
        return;
    }
    struct timespec ts = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
    nanosleep(&ts, NULL);
}

/* Token bucket: `burst` tokens, refilled at `qps` per second. */
static void take_token(kc_client *cl)
{
    kc_client *r = root_of(cl);
    for (;;) {
        lock(r);
        uint64_t now = de_now_ns();
        double add = (double)(now - r->last_refill) / 1e9 * r->o.qps;
        r->last_refill = now;
        r->tokens = DE_MIN(r->tokens + add, (double)r->o.burst);
        if (r->tokens >= 1.0) {
            r->tokens -= 1.0;
            unlock(r);
            return;
        }
        uint64_t need = (uint64_t)((1.0 - r->tokens) / r->o.qps * 1e9) + 1;
        r->st.rate_limited_ns += need;
        unlock(r);
        wait_ns(cl, need);
    }
}

/* ---- easy handle setup ------------------------------------------------------ */

/* libcurl turns on OpenSSL's SSL_MODE_RELEASE_BUFFERS, which frees a
 * connection's 16 KiB read and write buffers whenever they drain and
 * allocates them again for the next record.  On serve's few long-lived
 * connections (watches and write workers, one record after another) that is
 * a 16 KiB malloc and free per record, and each such large request makes
 * glibc consolidate every fastbin that jansson's small objects left behind:
 * 10-15 % of serve's CPU under load.  Keeping the buffers costs about 34 KiB
 * per connection.  The callback only runs with libcurl's OpenSSL backend
 * (tls_is_openssl), the one Debian's libcurl4-openssl-dev links. */
static CURLcode keep_tls_buffers(CURL *h, void *ssl_ctx, void *ud)
{
    (void)h, (void)ud;
    SSL_CTX_clear_mode((SSL_CTX *)ssl_ctx, SSL_MODE_RELEASE_BUFFERS);
    return CURLE_OK;
}

void kc_client_setup_easy(kc_client *cl, CURL *h)
{
    const kc_blob *ca = kc_config_ca(cl->cfg), *cert = kc_config_cert(cl->cfg),
                  *key = kc_config_key(cl->cfg);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_USERAGENT, cl->ua);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
    if (tls_is_openssl)
        curl_easy_setopt(h, CURLOPT_SSL_CTX_FUNCTION, keep_tls_buffers);
    /* HTTP/1.1 unless asked otherwise.  Against kube-apiserver 1.37 the
     * server's HTTP/2 side (frame writes on goroutines of their own, flow
     * control, HPACK) took 7 % of its CPU in the steady bench, where the
     * same requests over HTTP/1.1 take none of it, and libcurl spends 18 %
     * fewer instructions a request.  Serve loses nothing by it: each binding
     * worker has its own connection with one request at a time, and each
     * watch its own stream either way.  It is also the transport the specs
     * exercise (the test API server speaks plain HTTP/1.1). */
    curl_easy_setopt(h, CURLOPT_HTTP_VERSION,
                     cl->o.http2 ? (long)CURL_HTTP_VERSION_2TLS : (long)CURL_HTTP_VERSION_1_1);
    if (ca) {
        struct curl_blob b = {ca->p, ca->len, CURL_BLOB_NOCOPY};
        curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &b);
    }
    if (cert && key) {
        struct curl_blob cb = {cert->p, cert->len, CURL_BLOB_NOCOPY};
        struct curl_blob kb = {key->p, key->len, CURL_BLOB_NOCOPY};
        curl_easy_setopt(h, CURLOPT_SSLCERT_BLOB, &cb);
        curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
        curl_easy_setopt(h, CURLOPT_SSLKEY_BLOB, &kb);
        curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
    }
    if (kc_config_insecure(cl->cfg)) {
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
    }
}

/* Append "Authorization: <scheme> <secret>"; the temporary copy is wiped. */
static struct curl_slist *add_auth(struct curl_slist *hl, const char *scheme, const char *secret)
{
    size_t n = strlen(secret) + 32;
    char *hdr = de_xmalloc(n);
    snprintf(hdr, n, "Authorization: %s %s", scheme, secret);
    hl = curl_slist_append(hl, hdr);
    memset(hdr, 0, n);
    free(hdr);
    return hl;
}

struct curl_slist *kc_client_headers(kc_client *cl, bool force, const char *content_type)
{
    struct curl_slist *hl = NULL;
    kc_client *r = root_of(cl);
    lock(r);
    const char *tok = kc_config_token(cl->cfg, force);
    unsigned seq;
    char why[600] = "";
    const char *problem = kc_config_token_problem(cl->cfg, &seq);
    bool report = seq != r->token_problem_seq; /* a re-read was refused: say so once */
    if (report) {
        r->token_problem_seq = seq;
        snprintf(why, sizeof why, "%s", problem);
    }
    const char *basic = kc_config_basic(cl->cfg);
    if (basic)
        hl = add_auth(hl, "Basic", basic);
    else if (tok && *tok)
        hl = add_auth(hl, "Bearer", tok);
    unlock(r);
    if (report)
        kc_client_fail(cl, "tokenfile", "read", 0, "TokenRefused", why);
    hl = curl_slist_append(hl, "Accept: application/json");
    if (cl->extra_header)
        hl = curl_slist_append(hl, cl->extra_header);
    if (content_type) {
        char ct[256];
        snprintf(ct, sizeof ct, "Content-Type: %s", content_type);
        hl = curl_slist_append(hl, ct);
    }
    return hl;
}

/* ---- one request ------------------------------------------------------------ */

typedef struct resp {
    de_buf body;
    long retry_after; /* seconds, -1 = none */
    kc_client *cl;
    const char *method, *path;
} resp;

/* A Warning header (RFC 7234: `299 - "text"`) means the server accepted the
 * request but dropped or doubted part of it (an unknown field under
 * fieldValidation=Warn, a deprecated API): logged as client-go's default
 * handler does, and counted. */
static void on_warning(resp *r, const char *v, size_t n)
{
    while (n && (*v == ' ' || *v == '\t'))
        v++, n--;
    while (n && (v[n - 1] == '\r' || v[n - 1] == '\n' || v[n - 1] == ' '))
        n--;
    /* drop the "299 - " code and agent, keep the quoted text */
    const char *q = memchr(v, '"', n);
    if (q && n - (size_t)(q - v) >= 2 && v[n - 1] == '"') {
        n = (size_t)(v + n - 1 - (q + 1));
        v = q + 1;
    }
    lock(r->cl);
    root_of(r->cl)->st.warnings++;
    unlock(r->cl);
    /* the text is a quoted-string: undo its backslash escapes */
    char m[768];
    size_t k = 0;
    for (size_t i = 0; i < n && k < 600; i++) {
        if (v[i] == '\\' && i + 1 < n)
            i++;
        m[k++] = v[i];
    }
    m[k] = 0;
    kc_client_redact(r->cl, m);
    DE_WARN("server warning on %s %s: %s", r->method, r->path, m);
}

static size_t on_body(char *p, size_t sz, size_t n, void *ud)
{
    resp *r = ud;
    if (de_buf_add(&r->body, p, sz * n) != DE_OK)
        return 0; /* over the cap: abort the transfer */
    return sz * n;
}

static size_t on_header(char *p, size_t sz, size_t n, void *ud)
{
    resp *r = ud;
    size_t len = sz * n;
    if (len > 12 && !strncasecmp(p, "Retry-After:", 12)) {
        char tmp[32];
        size_t k = DE_MIN(len - 12, sizeof tmp - 1);
        memcpy(tmp, p + 12, k);
        tmp[k] = 0;
        long v = strtol(tmp, NULL, 10);
        r->retry_after = v < 0 ? 0 : v;
    } else if (len > 8 && !strncasecmp(p, "Warning:", 8)) {
        on_warning(r, p + 8, len - 8);
    }
    return len;
}

de_rc kc_status_error(kc_client *cl, de_err *e, const char *method, const char *path,
                      long status, const char *body, size_t len)
{
    de_rc rc = status == 409   ? DE_ECONFLICT
               : status == 404 ? DE_ENOTFOUND
                               : DE_EAPI;
    char reason[128], msg[1024];
    kc_status_reason(status, body, len, reason, sizeof reason, msg, sizeof msg);
    char full[DE_ERR_MSG_MAX];
    snprintf(full, sizeof full, "%s %s: HTTP %ld: %s%s%s", method, path, status, reason,
             *msg ? ": " : "", msg);
    if (cl)
        kc_client_redact(cl, full);
    else
        kc_redact(NULL, full);
    return de_errf(e, rc, "%s", full);
}

static bool has_rv(json_t *body)
{
    const char *rv = json_string_value(json_object_get(json_object_get(body, "metadata"),
                                                       "resourceVersion"));
    return rv && *rv;
}

/* The identity of an answer's object, from its text: peeked, or when that
 * fails (an escape, an odd order), decoded. */
static bool answer_peek(const char *p, size_t n, kc_peek *pk)
{
    if (kc_object_peek(p, n, pk))
        return true;
    json_error_t je;
    json_t *o = kc_loadb_lean(p, n, 1, 0, &je);
    json_t *md = json_object_get(o, "metadata");
    const char *ns = json_string_value(json_object_get(md, "namespace"));
    const char *name = json_string_value(json_object_get(md, "name"));
    const char *rv = json_string_value(json_object_get(md, "resourceVersion"));
    bool ok = name && rv && strlen(name) < sizeof pk->name && strlen(rv) < sizeof pk->rv &&
              (!ns || strlen(ns) < sizeof pk->ns);
    if (ok) {
        snprintf(pk->ns, sizeof pk->ns, "%s", ns ? ns : "");
        snprintf(pk->name, sizeof pk->name, "%s", name);
        snprintf(pk->rv, sizeof pk->rv, "%s", rv);
    }
    json_decref(o);
    return ok;
}

static de_rc request(kc_client *cl, const char *method, const char *path, json_t *body,
                     const char *content_type, long *status_out, json_t **out, kc_peek *pk, de_err *e);

/* One attempt through libcurl's own HTTP (HTTP/2, proxies, odd URLs). */
static CURLcode perform_curl(kc_client *cl, const char *method, const char *url,
                             struct curl_slist *hl, const char *payload, resp *r, long *status)
{
    CURL *h = cl->h;
    curl_easy_reset(h);
    kc_client_setup_easy(cl, h);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, cl->o.timeout_ms);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, cl->errbuf);
    if (!strcmp(method, "GET")) {
        curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    } else {
        if (strcmp(method, "POST"))
            curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
        else
            curl_easy_setopt(h, CURLOPT_POST, 1L);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, payload ? payload : "");
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)(payload ? strlen(payload) : 0));
    }
    CURLcode cc = curl_easy_perform(h);
    if (cc == CURLE_OK)
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
    return cc;
}

de_rc kc_request(kc_client *cl, const char *method, const char *path, json_t *body,
                 const char *content_type, long *status_out, json_t **out, de_err *e)
{
    return request(cl, method, path, body, content_type, status_out, out, NULL, e);
}

de_rc kc_request_peek(kc_client *cl, const char *method, const char *path, json_t *body,
                      const char *content_type, kc_peek *pk, de_err *e)
{
    return request(cl, method, path, body, content_type, NULL, NULL, pk, e);
}

static de_rc request(kc_client *cl, const char *method, const char *path, json_t *body,
                     const char *content_type, long *status_out, json_t **out, kc_peek *pk, de_err *e)
{
    if (out)
        *out = NULL;
    if (status_out)
        *status_out = 0;
    bool write = strcmp(method, "GET") != 0;
    if (!strcmp(method, "PUT") && !has_rv(body))
        return de_errf(e, DE_EINVAL,
                       "PUT %s: refusing to write without metadata.resourceVersion", path);
    bool idempotent = true;
    if (!strcmp(method, "POST") && body &&
        json_object_get(json_object_get(body, "metadata"), "generateName"))
        idempotent = false; /* a retry could create a second object */

    char *payload = body ? de_json_dumps(body, JSON_COMPACT) : NULL;
    char fres[64];
    const char *fverb;
    kc_path_resource(method, path, fres, sizeof fres, &fverb);
    char url[4096];
    const char *fv = cl->o.field_validation;
    if (write && fv && *fv && strcmp(method, "DELETE"))
        snprintf(url, sizeof url, "%s%s%cfieldValidation=%s", kc_config_url(cl->cfg), path,
                 strchr(path, '?') ? '&' : '?', fv);
    else
        snprintf(url, sizeof url, "%s%s", kc_config_url(cl->cfg), path);
    int attempt = 0, throttles = 0;
    bool token_retry = false;
    de_rc rc = DE_OK;
    kc_backoff_reset(&cl->bo);
    for (;;) {
        if (write)
            take_token(cl);
        /* checked before every attempt, retries included, after the rate
         * limiter's wait: nothing goes out past the deadline */
        if (write && past_write_deadline(cl)) {
            rc = de_errf(e, DE_EAPI, "%s %s: not sent: past the write deadline (leadership not renewed in time)",
                         method, path);
            break;
        }
        resp r;
        de_buf_init(&r.body, MAX_RESPONSE);
        r.retry_after = -1;
        r.cl = cl;
        r.method = method;
        r.path = path;
        struct curl_slist *hl = kc_client_headers(
            cl, token_retry, payload ? (content_type ? content_type : "application/json") : NULL);
        long status = 0;
        CURLcode cc;
        cl->errbuf[0] = 0;
        if (cl->raw_ok) {
            if (!cl->raw)
                cl->raw = kc_raw_new();
            cc = kc_raw_perform(cl, cl->raw, method, url, hl, cl->ua, payload,
                                payload ? strlen(payload) : 0, cl->o.timeout_ms, on_header, on_body,
                                &r, &status, cl->errbuf);
        } else {
            cc = perform_curl(cl, method, url, hl, payload, &r, &status);
        }
        /* The header list holds the token: wipe before freeing. */
        for (struct curl_slist *s = hl; s; s = s->next)
            if (!strncmp(s->data, "Authorization:", 14))
                memset(s->data, 0, strlen(s->data));
        curl_slist_free_all(hl);
        kc_client_count(cl, cc == CURLE_OK ? status : 0);
        if (status_out)
            *status_out = status;
        const char *why = cl->errbuf[0] ? cl->errbuf : curl_easy_strerror(cc);
        if (cc != CURLE_OK) {
            kc_client_fail(cl, fres, fverb, 0, kc_curl_reason(cc), why);
        } else if (status < 200 || status >= 300) {
            char reason[128], msg[512];
            kc_status_reason(status, r.body.p, r.body.len, reason, sizeof reason, msg, sizeof msg);
            kc_client_fail(cl, fres, fverb, status, reason, msg);
        }

        if (cc != CURLE_OK) {
            if (idempotent && attempt < cl->o.max_retries) {
                attempt++;
                count_retry(cl);
                de_buf_free(&r.body);
                wait_ns(cl, kc_backoff_next(&cl->bo));
                continue;
            }
            char m[512];
            snprintf(m, sizeof m, "%s %s: %s", method, path, why);
            kc_client_redact(cl, m);
            rc = de_errf(e, DE_EIO, "%s", m);
            de_buf_free(&r.body);
            break;
        }
        if (status == 401 && !token_retry) {
            token_retry = true;
            de_buf_free(&r.body);
            continue;
        }
        if (status == 429 && throttles < 2 * cl->o.max_retries) {
            throttles++;
            count_retry(cl);
            long s = r.retry_after < 0 ? 1 : DE_MIN(r.retry_after, MAX_RETRY_AFTER_S);
            de_buf_free(&r.body);
            wait_ns(cl, (uint64_t)s * 1000000000ull);
            continue;
        }
        if ((status == 500 || status == 502 || status == 503 || status == 504) && idempotent &&
            attempt < cl->o.max_retries) {
            attempt++;
            count_retry(cl);
            uint64_t d = kc_backoff_next(&cl->bo);
            if (r.retry_after >= 0)
                d = (uint64_t)DE_MIN(r.retry_after, MAX_RETRY_AFTER_S) * 1000000000ull;
            de_buf_free(&r.body);
            wait_ns(cl, d);
            continue;
        }
        if (status >= 200 && status < 300) {
            rc = DE_OK;
            if (pk && !answer_peek(r.body.p, r.body.len, pk)) {
                kc_client_fail(cl, fres, fverb, status, "UndecodableBody", "an answer without metadata");
                rc = de_errf(e, DE_EAPI, "%s %s: HTTP %ld: an answer without metadata.name and resourceVersion",
                             method, path, status);
            } else if (out && r.body.len) {
                json_error_t je;
                *out = kc_loadb_lean(r.body.p, r.body.len, 1, 0, &je);
                if (!*out) {
                    char m[300];
                    snprintf(m, sizeof m, "undecodable answer: %s", je.text);
                    kc_client_fail(cl, fres, fverb, status, "UndecodableBody", m);
                    rc = de_errf(e, DE_EAPI, "%s %s: HTTP %ld: %s", method, path, status, m);
                }
            }
        } else {
            rc = kc_status_error(cl, e, method, path, status, r.body.p, r.body.len);
        }
        de_buf_free(&r.body);
        break;
    }
    free(payload);
    return rc;
}
