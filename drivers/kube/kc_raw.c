/*
 * kc_raw.c - one HTTP/1.1 exchange of kc_http.c's on a connection that
 * libcurl opened and keeps (CURLOPT_CONNECT_ONLY), the request head and the
 * answer's framing done here.
 *
 * Why: libcurl 7.88 (Debian 12's) writes every request head through its own
 * printf, which hands each byte to a callback that appends it to a buffer.
 * A Kubernetes request carries the ServiceAccount token, about a kilobyte,
 * so that printf took some 86,000 instructions of the 200,000 a write cost
 * libcurl, and a pod's four writes were a tenth of serve's CPU.  Here the
 * head is a few memcpy's.  libcurl still does everything else: the
 * connection, TLS with the kubeconfig's CA and client certificate, ALPN
 * (http/1.1 only, as kc_client_setup_easy asks), and the record layer
 * (curl_easy_send, curl_easy_recv).
 *
 * What the exchange understands of an answer: the status line, 1xx answers
 * (skipped), Content-Length, chunked transfer coding (extensions and
 * trailers skipped), a body that runs to the end of the connection, and
 * `Connection: close`.  Each header line goes to the caller's header
 * callback and the body to its body callback, as libcurl would hand them.
 * Failures come back as the CURLcode libcurl gives the same failure, so
 * kc_http.c's retries, reasons and counters are unchanged.
 *
 * A kept-alive connection may have been closed by the server while idle.
 * As libcurl does, a request that gets nothing back on a reused connection
 * (no byte of an answer) is sent once more on a new one; one that got part
 * of an answer is not.
 *
 * Not used (kc_raw_usable): over HTTP/2 (--kube-api-http2), through a proxy
 * (libcurl reads *_proxy from the environment; a proxied request needs its
 * absolute form), or for a server URL with user information or a path.
 */
#define _POSIX_C_SOURCE 200809L
#include "kc_raw.h"

#include "../../engine/base/buf.h"

#include <ctype.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define RAW_HEAD_MAX ((size_t)64 << 10)  /* an answer's head; past it, an error */
#define RAW_OUT_MAX ((size_t)64 << 20)   /* a request, head and body */
#define RAW_READ 16384

#define DE_TRY_CURL(x)                                                                              \
    do {                                                                                           \
        CURLcode try_cc_ = (x);                                                                    \
        if (try_cc_ != CURLE_OK)                                                                   \
            return try_cc_;                                                                        \
    } while (0)

struct kc_raw {
    CURL *h;                 /* NULL: not connected */
    curl_socket_t sock;
    char origin[512];        /* scheme://authority of the connection */
    char *in;                /* bytes read and not yet consumed: in[at, len) */
    size_t at, len, cap;
    de_buf out;
};

/* deadlines are in milliseconds of the project's monotonic clock */
static uint64_t now_ms(void) { return de_now_ns() / 1000000u; }

static bool proxy_env(void)
{
    static const char *const names[] = {"http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY",
                                        "all_proxy",  "ALL_PROXY"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *v = getenv(names[i]);
        if (v && *v)
            return true;
    }
    return false;
}

/* The authority of "scheme://authority/...", or false when the URL is not
 * one this file may send to (user information, no authority). */
static bool split_origin(const char *url, size_t *origin_len, size_t *auth_from)
{
    const char *s = strstr(url, "://");
    if (!s || (strncmp(url, "http://", 7) && strncmp(url, "https://", 8)))
        return false;
    const char *a = s + 3, *e = a + strcspn(a, "/?#");
    if (e == a || memchr(a, '@', (size_t)(e - a)))
        return false;
    *origin_len = (size_t)(e - url);
    *auth_from = (size_t)(a - url);
    return true;
}

bool kc_raw_usable(const char *server_url, bool http2)
{
    static int no_proxy = -1; /* the environment is read once */
    if (no_proxy < 0)
        no_proxy = !proxy_env();
    size_t ol, af;
    /* a server URL with a path keeps libcurl's handling of it */
    return !http2 && no_proxy && split_origin(server_url, &ol, &af) && !server_url[ol];
}

kc_raw *kc_raw_new(void)
{
    kc_raw *r = de_xcalloc(1, sizeof *r);
    de_buf_init(&r->out, RAW_OUT_MAX);
    return r;
}

static void raw_close(kc_raw *r)
{
    if (r->h)
        curl_easy_cleanup(r->h);
    r->h = NULL;
    r->at = r->len = 0;
}

void kc_raw_free(kc_raw *r)
{
    if (!r)
        return;
    raw_close(r);
    free(r->in);
    de_buf_free(&r->out);
    free(r);
}

static CURLcode fail(char *errbuf, CURLcode cc, const char *fmt, const char *what)
{
    snprintf(errbuf, CURL_ERROR_SIZE, fmt, what);
    return cc;
}

/* Wait until the socket is ready for `events`, up to the deadline. */
static CURLcode wait_sock(kc_raw *r, short events, uint64_t deadline, char *errbuf)
{
    for (;;) {
        uint64_t now = now_ms();
        if (now >= deadline)
            return fail(errbuf, CURLE_OPERATION_TIMEDOUT, "%s", "Operation timed out (no answer in time)");
        struct pollfd p = {.fd = r->sock, .events = events};
        int n = poll(&p, 1, (int)DE_MIN(deadline - now, 1000u * 3600u));
        if (n > 0)
            return CURLE_OK; /* ready, or an error the next send or recv reports */
        if (n < 0 && errno != EINTR)
            return fail(errbuf, CURLE_RECV_ERROR, "poll: %s", strerror(errno));
    }
}

static CURLcode send_all(kc_raw *r, const char *p, size_t n, uint64_t deadline, char *errbuf)
{
    while (n) {
        size_t sent = 0;
        CURLcode cc = curl_easy_send(r->h, p, n, &sent);
        if (cc == CURLE_AGAIN) {
            DE_TRY_CURL(wait_sock(r, POLLOUT, deadline, errbuf));
            continue;
        }
        if (cc != CURLE_OK)
            return fail(errbuf, CURLE_SEND_ERROR, "send: %s", curl_easy_strerror(cc));
        p += sent;
        n -= sent;
    }
    return CURLE_OK;
}

/* Read more bytes into r->in; *eof when the server closed the connection. */
static CURLcode fill(kc_raw *r, uint64_t deadline, bool *eof, char *errbuf)
{
    *eof = false;
    if (r->at == r->len)
        r->at = r->len = 0;
    if (r->cap - r->len < RAW_READ) {
        if (r->at) { /* keep what is unread at the front */
            memmove(r->in, r->in + r->at, r->len - r->at);
            r->len -= r->at;
            r->at = 0;
        }
        if (r->cap - r->len < RAW_READ) {
            r->cap = r->len + 2 * RAW_READ;
            r->in = de_xrealloc(r->in, r->cap);
        }
    }
    for (;;) {
        size_t got = 0;
        CURLcode cc = curl_easy_recv(r->h, r->in + r->len, r->cap - r->len, &got);
        if (cc == CURLE_AGAIN) {
            DE_TRY_CURL(wait_sock(r, POLLIN, deadline, errbuf));
            continue;
        }
        if (cc != CURLE_OK)
            return fail(errbuf, CURLE_RECV_ERROR, "recv: %s", curl_easy_strerror(cc));
        if (!got)
            *eof = true;
        r->len += got;
        return CURLE_OK;
    }
}

static const char *find_crlf2(const char *p, size_t n)
{
    for (const char *q = p; n >= 4 && (q = memchr(q, '\r', n - 3)); q++) {
        if (q[1] == '\n' && q[2] == '\r' && q[3] == '\n')
            return q;
        n -= (size_t)(q + 1 - p);
        p = q + 1;
    }
    return NULL;
}

static bool header_is(const char *line, size_t n, const char *name, const char **val, size_t *vlen)
{
    size_t k = strlen(name);
    if (n <= k || strncasecmp(line, name, k) || line[k] != ':')
        return false;
    const char *v = line + k + 1, *e = line + n;
    while (v < e && (*v == ' ' || *v == '\t'))
        v++;
    while (e > v && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r' || e[-1] == '\n'))
        e--;
    *val = v;
    *vlen = (size_t)(e - v);
    return true;
}

static bool has_token(const char *v, size_t n, const char *tok)
{
    size_t k = strlen(tok);
    for (size_t i = 0; i + k <= n; i++)
        if (!strncasecmp(v + i, tok, k) && (i == 0 || v[i - 1] == ',' || v[i - 1] == ' ') &&
            (i + k == n || v[i + k] == ',' || v[i + k] == ' ' || v[i + k] == ';'))
            return true;
    return false;
}

typedef struct head {
    long status;
    bool chunked, has_length, close;
    uint64_t length;
} head;

/* Parse the head in[at, end) (end at its blank line); header lines go to the
 * caller's callback. */
static CURLcode parse_head(kc_raw *r, const char *end, head *h, kc_raw_cb on_header, void *ud,
                           char *errbuf)
{
    char *p = r->in + r->at;
    char *eol = memchr(p, '\n', (size_t)(end + 2 - p));
    int minor = -1;
    long code = 0;
    if (!eol || sscanf(p, "HTTP/1.%d %3ld", &minor, &code) != 2 || code < 100 || code > 999)
        return fail(errbuf, CURLE_WEIRD_SERVER_REPLY, "%s", "not an HTTP/1.x status line");
    memset(h, 0, sizeof *h);
    h->status = code;
    h->close = minor == 0;
    for (char *line = eol + 1; line < end + 2;) {
        char *nl = memchr(line, '\n', (size_t)(end + 2 - line));
        size_t n = (size_t)(nl + 1 - line);
        const char *v;
        size_t vl;
        if (header_is(line, n, "Content-Length", &v, &vl)) {
            char tmp[24];
            char *stop;
            if (!vl || vl >= sizeof tmp || !isdigit((unsigned char)*v))
                return fail(errbuf, CURLE_WEIRD_SERVER_REPLY, "%s", "a bad Content-Length");
            memcpy(tmp, v, vl);
            tmp[vl] = 0;
            h->length = strtoull(tmp, &stop, 10);
            if (*stop)
                return fail(errbuf, CURLE_WEIRD_SERVER_REPLY, "%s", "a bad Content-Length");
            h->has_length = true;
        } else if (header_is(line, n, "Transfer-Encoding", &v, &vl)) {
            h->chunked = has_token(v, vl, "chunked");
        } else if (header_is(line, n, "Connection", &v, &vl)) {
            if (has_token(v, vl, "close"))
                h->close = true;
            else if (has_token(v, vl, "keep-alive"))
                h->close = false;
        }
        if (on_header(line, 1, n, ud) != n)
            return fail(errbuf, CURLE_WRITE_ERROR, "%s", "the header callback refused a line");
        line = nl + 1;
    }
    r->at = (size_t)(end + 4 - r->in);
    return CURLE_OK;
}

static CURLcode deliver(const char *p, size_t n, kc_raw_cb on_body, void *ud, char *errbuf)
{
    if (n && on_body((char *)p, 1, n, ud) != n)
        return fail(errbuf, CURLE_WRITE_ERROR, "%s", "Failure writing output to destination");
    return CURLE_OK;
}

/* The end ('\n') of the line at r->at, reading more as needed. */
static CURLcode next_line(kc_raw *r, uint64_t deadline, size_t max, const char *too_long, const char *cut,
                          char **nl, char *errbuf)
{
    bool eof;
    while (!(*nl = memchr(r->in + r->at, '\n', r->len - r->at))) {
        if (r->len - r->at > max)
            return fail(errbuf, CURLE_WEIRD_SERVER_REPLY, "%s", too_long);
        DE_TRY_CURL(fill(r, deadline, &eof, errbuf));
        if (eof)
            return fail(errbuf, CURLE_PARTIAL_FILE, "%s", cut);
    }
    return CURLE_OK;
}

/* Hand over the next len bytes but their last `skip` (a chunk's CRLF). */
static CURLcode pass(kc_raw *r, uint64_t deadline, uint64_t len, uint64_t skip, const char *cut,
                     kc_raw_cb on_body, void *ud, char *errbuf)
{
    bool eof;
    while (len) {
        if (r->at == r->len) {
            DE_TRY_CURL(fill(r, deadline, &eof, errbuf));
            if (eof)
                return fail(errbuf, CURLE_PARTIAL_FILE, "%s", cut);
        }
        size_t k = (size_t)DE_MIN(len, (uint64_t)(r->len - r->at));
        size_t data = len > skip ? (size_t)DE_MIN((uint64_t)k, len - skip) : 0;
        DE_TRY_CURL(deliver(r->in + r->at, data, on_body, ud, errbuf));
        r->at += k;
        len -= k;
    }
    return CURLE_OK;
}

/* The body, by its framing. */
static CURLcode read_body(kc_raw *r, const head *h, uint64_t deadline, kc_raw_cb on_body, void *ud,
                          bool *until_eof, char *errbuf)
{
    bool eof;
    *until_eof = false;
    if (h->status == 204 || h->status == 304)
        return CURLE_OK;
    if (!h->chunked && h->has_length)
        return pass(r, deadline, h->length, 0, "the connection ended inside the answer's body", on_body, ud,
                    errbuf);
    if (!h->chunked) { /* to the end of the connection */
        *until_eof = true;
        for (;;) {
            DE_TRY_CURL(deliver(r->in + r->at, r->len - r->at, on_body, ud, errbuf));
            r->at = r->len;
            DE_TRY_CURL(fill(r, deadline, &eof, errbuf));
            if (eof)
                return CURLE_OK;
        }
    }
    for (;;) { /* chunked: size line, data, CRLF; a 0 size, trailers, blank line */
        char *nl;
        DE_TRY_CURL(next_line(r, deadline, 1024, "a chunk size line past 1 KiB",
                              "the connection ended inside a chunked answer", &nl, errbuf));
        char *stop;
        const char *sp = r->in + r->at;
        if (!isxdigit((unsigned char)*sp))
            return fail(errbuf, CURLE_WEIRD_SERVER_REPLY, "%s", "a bad chunk size");
        uint64_t size = strtoull(sp, &stop, 16);
        if (stop > nl || size > RAW_OUT_MAX * 4ull)
            return fail(errbuf, CURLE_WEIRD_SERVER_REPLY, "%s", "a bad chunk size");
        r->at = (size_t)(nl + 1 - r->in);
        if (!size)
            break;
        /* the data and its CRLF */
        DE_TRY_CURL(pass(r, deadline, size + 2, 2, "the connection ended inside a chunk", on_body, ud, errbuf));
    }
    for (;;) { /* trailers up to the blank line */
        char *nl;
        DE_TRY_CURL(next_line(r, deadline, RAW_HEAD_MAX, "trailers past 64 KiB",
                              "the connection ended inside the trailers", &nl, errbuf));
        bool blank = nl == r->in + r->at || (nl == r->in + r->at + 1 && r->in[r->at] == '\r');
        r->at = (size_t)(nl + 1 - r->in);
        if (blank)
            return CURLE_OK;
    }
}

/* Read one final answer; *got_any once a byte of it arrived. */
static CURLcode read_answer(kc_raw *r, uint64_t deadline, kc_raw_cb on_header, kc_raw_cb on_body,
                            void *ud, long *status, bool *got_any, bool *close_after, char *errbuf)
{
    head h;
    bool eof;
    *got_any = false;
    for (;;) {
        const char *end;
        while (!(end = find_crlf2(r->in + r->at, r->len - r->at))) {
            if (r->len - r->at > RAW_HEAD_MAX)
                return fail(errbuf, CURLE_WEIRD_SERVER_REPLY, "%s", "an answer head past 64 KiB");
            DE_TRY_CURL(fill(r, deadline, &eof, errbuf));
            if (r->len > r->at)
                *got_any = true;
            if (eof)
                return *got_any ? fail(errbuf, CURLE_PARTIAL_FILE, "%s", "the connection ended inside the answer's head")
                                : fail(errbuf, CURLE_GOT_NOTHING, "%s", "Empty reply from server");
        }
        *got_any = true;
        DE_TRY_CURL(parse_head(r, end, &h, on_header, ud, errbuf));
        if (h.status >= 200 || h.status == 101)
            break; /* 100 Continue and other interim answers: the final one follows */
    }
    if (h.status == 101)
        return fail(errbuf, CURLE_WEIRD_SERVER_REPLY, "%s", "the server switched protocols");
    *status = h.status;
    bool until_eof;
    DE_TRY_CURL(read_body(r, &h, deadline, on_body, ud, &until_eof, errbuf));
    *close_after = h.close || until_eof;
    return CURLE_OK;
}

static CURLcode raw_connect(kc_client *cl, kc_raw *r, uint64_t deadline, char *errbuf)
{
    r->h = curl_easy_init();
    if (!r->h)
        return fail(errbuf, CURLE_FAILED_INIT, "%s", "curl_easy_init failed");
    kc_client_setup_easy(cl, r->h);
    char url[600];
    snprintf(url, sizeof url, "%s/", r->origin);
    uint64_t now = now_ms(), left = deadline > now ? deadline - now : 1;
    curl_easy_setopt(r->h, CURLOPT_URL, url);
    curl_easy_setopt(r->h, CURLOPT_CONNECT_ONLY, 1L);
    curl_easy_setopt(r->h, CURLOPT_CONNECTTIMEOUT_MS, (long)DE_MIN(left, 10000u));
    curl_easy_setopt(r->h, CURLOPT_ERRORBUFFER, errbuf);
    errbuf[0] = 0;
    CURLcode cc = curl_easy_perform(r->h);
    curl_socket_t s = CURL_SOCKET_BAD;
    if (cc == CURLE_OK)
        curl_easy_getinfo(r->h, CURLINFO_ACTIVESOCKET, &s);
    if (cc == CURLE_OK && s == CURL_SOCKET_BAD)
        cc = fail(errbuf, CURLE_COULDNT_CONNECT, "%s", "no socket after connecting");
    curl_easy_setopt(r->h, CURLOPT_ERRORBUFFER, NULL);
    if (cc != CURLE_OK) {
        if (!errbuf[0])
            snprintf(errbuf, CURL_ERROR_SIZE, "%s", curl_easy_strerror(cc));
        raw_close(r);
        return cc;
    }
    r->sock = s;
    return CURLE_OK;
}

static void put_head(de_buf *b, const char *method, const char *target, const char *authority,
                     size_t alen, const char *ua, struct curl_slist *hl, const char *body, size_t blen)
{
    de_buf_puts(b, method);
    de_buf_putc(b, ' ');
    de_buf_puts(b, *target ? target : "/");
    de_buf_puts(b, " HTTP/1.1\r\nHost: ");
    de_buf_add(b, authority, alen);
    de_buf_puts(b, "\r\nUser-Agent: ");
    de_buf_puts(b, ua);
    de_buf_puts(b, "\r\n");
    for (struct curl_slist *s = hl; s; s = s->next) {
        de_buf_puts(b, s->data);
        de_buf_puts(b, "\r\n");
    }
    if (body || strcmp(method, "GET")) {
        char cl[48];
        snprintf(cl, sizeof cl, "Content-Length: %zu\r\n", blen);
        de_buf_puts(b, cl);
    }
    de_buf_puts(b, "\r\n");
    if (blen)
        de_buf_add(b, body, blen);
}

CURLcode kc_raw_perform(kc_client *cl, kc_raw *r, const char *method, const char *url,
                        struct curl_slist *hl, const char *ua, const char *body, size_t blen,
                        long timeout_ms, kc_raw_cb on_header, kc_raw_cb on_body, void *ud,
                        long *status, char *errbuf)
{
    *status = 0;
    errbuf[0] = 0;
    size_t ol, af;
    if (!split_origin(url, &ol, &af) || ol >= sizeof r->origin)
        return fail(errbuf, CURLE_URL_MALFORMAT, "%s", "not an http(s)://host URL");
    if (r->h && (strncmp(r->origin, url, ol) || r->origin[ol]))
        raw_close(r); /* another server: never the case for one client */
    memcpy(r->origin, url, ol);
    r->origin[ol] = 0;
    de_buf_reset(&r->out);
    put_head(&r->out, method, url + ol, url + af, ol - af, ua, hl, body, blen);
    if (r->out.overflow)
        return fail(errbuf, CURLE_SEND_ERROR, "%s", "a request past 64 MiB");
    uint64_t deadline = now_ms() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 30000);
    for (int attempt = 0;; attempt++) {
        bool reused = r->h != NULL, got_any = false, close_after = false;
        if (!r->h)
            DE_TRY_CURL(raw_connect(cl, r, deadline, errbuf));
        r->at = r->len = 0; /* nothing may be left of an earlier answer */
        CURLcode cc = send_all(r, r->out.p, r->out.len, deadline, errbuf);
        if (cc == CURLE_OK)
            cc = read_answer(r, deadline, on_header, on_body, ud, status, &got_any, &close_after, errbuf);
        if (cc != CURLE_OK || close_after)
            raw_close(r);
        /* a kept-alive connection the server closed while idle: once more */
        if (cc != CURLE_OK && reused && !got_any && attempt == 0 && cc != CURLE_OPERATION_TIMEDOUT)
            continue;
        memset(r->out.p, 0, r->out.len); /* the head holds the token */
        if (cc != CURLE_OK)
            *status = 0;
        return cc;
    }
}
