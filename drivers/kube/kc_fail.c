/*
 * kc_fail.c - what the client says about API failures.  Every failed
 * request, list page and watch (an error status, a transport error, an
 * answer that does not decode, a watch that ends at once, a list that pages
 * forever) is counted by resource, verb, code and reason for /metrics, and
 * reported through the caller's callback, rate-limited.
 *
 * Rate limit: per (resource, verb, code, reason) the first failure is
 * reported at once and later ones at most once per interval (default 10 s),
 * each report carrying how many were held back since the previous one; on
 * top, a token bucket (burst 20, 2 per second) caps all reports together,
 * so a server that invents a new reason per answer cannot flood the log
 * either.  Counting is never limited.  Reasons come from the server and
 * become metric labels, so only [A-Za-z0-9] up to 40 characters is kept
 * ("Unknown" otherwise), and the table has KC_FAIL_ROWS rows: past that,
 * failures are counted in one "other" row.
 */
#define _POSIX_C_SOURCE 200809L
#include "kc_int.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#define REPORT_BURST 20.0
#define REPORT_PER_S 2.0

void kc_failtab_init(kc_failtab *t, uint64_t interval_ns)
{
    memset(t, 0, sizeof *t);
    t->interval_ns = interval_ns ? interval_ns : 10000000000ull;
    t->tokens = REPORT_BURST;
    t->refill_ns = de_now_ns();
}

/* Keep [A-Za-z0-9] labels only; anything else becomes `dflt`. */
static void label(char *dst, size_t cap, const char *src, const char *dflt)
{
    size_t n = 0;
    bool ok = src && *src;
    for (const char *p = src; ok && *p; p++) {
        if (!isalnum((unsigned char)*p) || n + 1 >= cap || n >= 40) {
            ok = false;
            break;
        }
        dst[n++] = *p;
    }
    if (!ok) {
        snprintf(dst, cap, "%s", dflt);
        return;
    }
    dst[n] = 0;
}

static kc_failrow *row_for(kc_failtab *t, const char *res, const char *verb, const char *code,
                           const char *reason)
{
    for (size_t i = 0; i < t->n; i++) {
        kc_failrow *r = &t->rows[i];
        if (!strcmp(r->c.resource, res) && !strcmp(r->c.verb, verb) && !strcmp(r->c.code, code) &&
            !strcmp(r->c.reason, reason))
            return r;
    }
    if (t->n < KC_FAIL_ROWS - 1) {
        kc_failrow *r = &t->rows[t->n++];
        memset(r, 0, sizeof *r);
        snprintf(r->c.resource, sizeof r->c.resource, "%s", res);
        snprintf(r->c.verb, sizeof r->c.verb, "%s", verb);
        snprintf(r->c.code, sizeof r->c.code, "%s", code);
        snprintf(r->c.reason, sizeof r->c.reason, "%s", reason);
        return r;
    }
    kc_failrow *o = &t->rows[KC_FAIL_ROWS - 1];
    if (t->n == KC_FAIL_ROWS - 1) {
        t->n = KC_FAIL_ROWS;
        memset(o, 0, sizeof *o);
        snprintf(o->c.resource, sizeof o->c.resource, "other");
        snprintf(o->c.verb, sizeof o->c.verb, "other");
        snprintf(o->c.code, sizeof o->c.code, "other");
        snprintf(o->c.reason, sizeof o->c.reason, "Other");
    }
    return o;
}

bool kc_failtab_note(kc_failtab *t, const kc_failure *f, kc_failure *report)
{
    char res[48], code[12], reason[48];
    size_t n = 0;
    for (const char *p = f->resource ? f->resource : ""; *p && n + 1 < sizeof res; p++)
        res[n++] = islower((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '/' ||
                           *p == '.' || *p == '-'
                       ? *p
                       : '_';
    res[n] = 0;
    if (!n)
        snprintf(res, sizeof res, "unknown");
    if (f->code > 0 && f->code < 1000)
        snprintf(code, sizeof code, "%ld", f->code);
    else
        snprintf(code, sizeof code, "<error>"); /* client-go's label for "no answer" */
    label(reason, sizeof reason, f->reason, "Unknown");
    kc_failrow *r = row_for(t, res, f->verb ? f->verb : "unknown", code, reason);
    r->c.count++;
    t->total++;

    uint64_t now = de_now_ns();
    t->tokens += (double)(now - t->refill_ns) / 1e9 * REPORT_PER_S;
    if (t->tokens > REPORT_BURST)
        t->tokens = REPORT_BURST;
    t->refill_ns = now;
    bool due = !r->reported_ns || now - r->reported_ns >= t->interval_ns;
    if (!due || t->tokens < 1.0) {
        r->held++;
        t->suppressed++;
        return false;
    }
    t->tokens -= 1.0;
    *report = *f;
    report->resource = r->c.resource;
    report->verb = r->c.verb;
    report->reason = r->c.reason;
    report->suppressed = r->held;
    r->held = 0;
    r->reported_ns = now;
    return true;
}

const char *kc_curl_reason(CURLcode cc)
{
    switch (cc) {
    case CURLE_COULDNT_CONNECT: return "ConnectionRefused";
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY: return "DNSFailed";
    case CURLE_OPERATION_TIMEDOUT: return "Timeout";
    case CURLE_PEER_FAILED_VERIFICATION: return "TLSVerifyFailed";
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE: return "TLSHandshakeFailed";
    case CURLE_GOT_NOTHING:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_PARTIAL_FILE: return "ConnectionLost";
    case CURLE_WRITE_ERROR: return "ResponseTooLarge";
    case CURLE_URL_MALFORMAT: return "BadURL";
    default: return "TransportError";
    }
}

/* The reason Kubernetes' client gives an error status without a Status
 * body (apimachinery's NewGenericServerResponse). */
static const char *code_reason(long code)
{
    switch (code) {
    case 400: return "BadRequest";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "NotFound";
    case 405: return "MethodNotAllowed";
    case 406: return "NotAcceptable";
    case 409: return "Conflict";
    case 410: return "Gone";
    case 413: return "RequestEntityTooLarge";
    case 415: return "UnsupportedMediaType";
    case 422: return "Invalid";
    case 429: return "TooManyRequests";
    case 500: return "InternalError";
    case 503: return "ServiceUnavailable";
    case 504: return "Timeout";
    default: return code >= 500 ? "InternalError" : code >= 400 ? "BadRequest" : "Unknown";
    }
}

/* One line of at most cap-1 bytes: control characters become spaces. */
static void one_line(char *dst, size_t cap, const char *src, size_t len)
{
    size_t n = 0;
    for (size_t i = 0; i < len && src[i] && n + 1 < cap; i++)
        dst[n++] = (unsigned char)src[i] < 0x20 || src[i] == 0x7f ? ' ' : src[i];
    dst[n] = 0;
}

void kc_status_reason(long status, const char *body, size_t len, char *reason, size_t rcap,
                      char *msg, size_t mcap)
{
    json_t *st = body && len ? json_loadb(body, len, 0, NULL) : NULL;
    const char *m = json_string_value(json_object_get(st, "message"));
    const char *r = json_string_value(json_object_get(st, "reason"));
    snprintf(reason, rcap, "%s", r && *r ? r : code_reason(status));
    if (m)
        one_line(msg, mcap, m, strlen(m));
    else if (body && len)
        one_line(msg, mcap, body, DE_MIN(len, 300));
    else
        msg[0] = 0;
    json_decref(st);
}

void kc_path_resource(const char *method, const char *path, char *res, size_t cap,
                      const char **verb)
{
    char p[512];
    snprintf(p, sizeof p, "%.*s", (int)strcspn(path, "?#"), path);
    const char *seg[12];
    size_t n = 0;
    char *save = NULL; /* strtok_r: binding workers call this at the same time */
    for (char *s = strtok_r(p, "/", &save); s && n < DE_ARRAY_LEN(seg); s = strtok_r(NULL, "/", &save))
        seg[n++] = s;
    /* /api/v1/... or /apis/<group>/<version>/... */
    size_t i = n >= 2 && !strcmp(seg[0], "api") ? 2 : n >= 3 && !strcmp(seg[0], "apis") ? 3 : n;
    if (i + 2 < n && !strcmp(seg[i], "namespaces") && n - i != 2)
        i += 2; /* namespaces/<ns>/<resource>...; "namespaces/<name>" is the object */
    bool named = i + 1 < n;
    if (i >= n)
        snprintf(res, cap, "unknown");
    else if (i + 2 < n)
        snprintf(res, cap, "%s/%s", seg[i], seg[i + 2]);
    else
        snprintf(res, cap, "%s", seg[i]);
    if (!strcmp(method, "GET"))
        *verb = named ? "get" : strstr(path, "watch=1") || strstr(path, "watch=true") ? "watch"
                                                                                       : "list";
    else if (!strcmp(method, "POST"))
        *verb = "create";
    else if (!strcmp(method, "PUT"))
        *verb = "update";
    else if (!strcmp(method, "PATCH"))
        *verb = "patch";
    else if (!strcmp(method, "DELETE"))
        *verb = "delete";
    else
        *verb = "unknown";
}
