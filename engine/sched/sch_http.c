/*
 * sch_http.c - the probe/metrics responder and the Prometheus writer.
 */
#define _POSIX_C_SOURCE 200809L
#include "sch_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_CONNS 32
#define MAX_REQUEST 8192
#define MAX_RESPONSE ((size_t)16 << 20)
#define IDLE_NS 10000000000ull

typedef struct conn {
    int fd;
    bool writing;
    char in[MAX_REQUEST + 1];
    size_t inlen;
    char *out;
    size_t outlen, outoff;
    uint64_t since;
} conn;

struct sch_http {
    int lfd, port;
    sch_http_fn fn;
    void *ctx;
    conn c[MAX_CONNS];
};

static void set_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL, 0);
    fcntl(fd, F_SETFL, fl | O_NONBLOCK);
    fcntl(fd, F_SETFD, FD_CLOEXEC);
}

sch_http *sch_http_new(const char *addr, int port, sch_http_fn fn, void *ctx, de_err *e)
{
    struct sockaddr_in6 a6;
    struct sockaddr_in a4;
    bool v6 = addr && strchr(addr, ':');
    int fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return de_errf(e, DE_EIO, "socket: %s", strerror(errno)), NULL;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    int rc;
    if (v6) {
        memset(&a6, 0, sizeof a6);
        a6.sin6_family = AF_INET6;
        a6.sin6_port = htons((uint16_t)port);
        if (inet_pton(AF_INET6, addr, &a6.sin6_addr) != 1) {
            close(fd);
            return de_errf(e, DE_EINVAL, "--bind-address \"%s\": not an IP address", addr), NULL;
        }
        rc = bind(fd, (struct sockaddr *)&a6, sizeof a6);
    } else {
        memset(&a4, 0, sizeof a4);
        a4.sin_family = AF_INET;
        a4.sin_port = htons((uint16_t)port);
        if (addr && *addr && inet_pton(AF_INET, addr, &a4.sin_addr) != 1) {
            close(fd);
            return de_errf(e, DE_EINVAL, "--bind-address \"%s\": not an IP address", addr), NULL;
        }
        rc = bind(fd, (struct sockaddr *)&a4, sizeof a4);
    }
    if (rc != 0 || listen(fd, 16) != 0) {
        int err = errno;
        close(fd);
        return de_errf(e, DE_EIO, "listen on %s:%d: %s", addr && *addr ? addr : "0.0.0.0", port,
                       strerror(err)),
               NULL;
    }
    set_nonblock(fd);
    sch_http *h = de_xcalloc(1, sizeof *h);
    h->lfd = fd;
    h->fn = fn;
    h->ctx = ctx;
    for (int i = 0; i < MAX_CONNS; i++)
        h->c[i].fd = -1;
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    getsockname(fd, (struct sockaddr *)&ss, &sl);
    h->port = ss.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
                                       : ntohs(((struct sockaddr_in *)&ss)->sin_port);
    return h;
}

static void conn_close(conn *c)
{
    if (c->fd >= 0)
        close(c->fd);
    free(c->out);
    memset(c, 0, sizeof *c);
    c->fd = -1;
}

void sch_http_free(sch_http *h)
{
    if (!h)
        return;
    for (int i = 0; i < MAX_CONNS; i++)
        conn_close(&h->c[i]);
    close(h->lfd);
    free(h);
}

int sch_http_port(const sch_http *h) { return h->port; }

unsigned sch_http_fds(const sch_http *h, struct pollfd *fds, unsigned max)
{
    unsigned n = 0;
    if (n < max)
        fds[n++] = (struct pollfd){h->lfd, POLLIN, 0};
    for (int i = 0; i < MAX_CONNS && n < max; i++)
        if (h->c[i].fd >= 0)
            fds[n++] = (struct pollfd){h->c[i].fd, h->c[i].writing ? POLLOUT : POLLIN, 0};
    return n;
}

static const char *reason(int st)
{
    switch (st) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 413: return "Request Entity Too Large";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return "Status";
    }
}

static void respond(conn *c, int st, const char *ctype, const char *body, size_t blen)
{
    de_buf b;
    de_buf_init(&b, MAX_RESPONSE + 1024);
    de_buf_printf(&b,
                  "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                  "X-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n",
                  st, reason(st), ctype, blen);
    de_buf_add(&b, body, blen);
    c->outlen = b.len;
    c->out = de_buf_take(&b);
    c->outoff = 0;
    c->writing = true;
}

static void handle(sch_http *h, conn *c)
{
    c->in[c->inlen] = 0;
    char method[16], target[2048];
    if (sscanf(c->in, "%15s %2047s", method, target) != 2) {
        respond(c, 400, "text/plain; charset=utf-8", "bad request\n", 12);
        return;
    }
    char *q = strchr(target, '?');
    const char *query = "";
    if (q) {
        *q = 0;
        query = q + 1;
    }
    if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
        respond(c, 405, "text/plain; charset=utf-8", "method not allowed\n", 19);
        return;
    }
    de_buf body;
    de_buf_init(&body, MAX_RESPONSE);
    const char *ctype = NULL;
    int st = h->fn(h->ctx, method, target, query, &body, &ctype);
    respond(c, st, ctype ? ctype : "text/plain; charset=utf-8",
            strcmp(method, "HEAD") ? de_buf_str(&body) : "", strcmp(method, "HEAD") ? body.len : 0);
    de_buf_free(&body);
}

void sch_http_process(sch_http *h)
{
    uint64_t now = de_now_ns();
    for (;;) {
        int fd = accept(h->lfd, NULL, NULL);
        if (fd < 0)
            break;
        int slot = -1;
        for (int i = 0; i < MAX_CONNS; i++)
            if (h->c[i].fd < 0) {
                slot = i;
                break;
            }
        if (slot < 0) {
            close(fd); /* full: the client retries */
            continue;
        }
        set_nonblock(fd);
        conn_close(&h->c[slot]);
        h->c[slot].fd = fd;
        h->c[slot].since = now;
    }
    for (int i = 0; i < MAX_CONNS; i++) {
        conn *c = &h->c[i];
        if (c->fd < 0)
            continue;
        if (!c->writing) {
            ssize_t n = read(c->fd, c->in + c->inlen, MAX_REQUEST - c->inlen);
            if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
                conn_close(c);
                continue;
            }
            if (n > 0) {
                c->inlen += (size_t)n;
                c->in[c->inlen] = 0;
                if (strstr(c->in, "\r\n\r\n") || strstr(c->in, "\n\n"))
                    handle(h, c);
                else if (c->inlen >= MAX_REQUEST)
                    respond(c, 413, "text/plain; charset=utf-8", "request too large\n", 18);
            }
        }
        if (c->writing) {
            while (c->outoff < c->outlen) {
                ssize_t n = write(c->fd, c->out + c->outoff, c->outlen - c->outoff);
                if (n <= 0)
                    break;
                c->outoff += (size_t)n;
            }
            if (c->outoff >= c->outlen) {
                shutdown(c->fd, SHUT_WR);
                conn_close(c);
                continue;
            }
        }
        if (now - c->since > IDLE_NS)
            conn_close(c);
    }
}

/* ---- Prometheus ------------------------------------------------------------ */

void sch_hist_init(sch_hist *h, const double *bounds, unsigned n)
{
    memset(h, 0, sizeof *h);
    h->bounds = bounds;
    h->nbounds = DE_MIN(n, (unsigned)SCH_HIST_MAX_BUCKETS);
}

void sch_hist_observe(sch_hist *h, double v)
{
    unsigned i = 0;
    while (i < h->nbounds && v > h->bounds[i])
        i++;
    if (i < h->nbounds)
        h->counts[i]++;
    else
        h->inf++;
    h->sum += v;
    h->count++;
}

void sch_prom_head(de_buf *b, const char *name, const char *type, const char *help)
{
    de_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void fmt_num(char *buf, size_t cap, double v)
{
    if (v == (double)(int64_t)v && v < 9e15 && v > -9e15)
        snprintf(buf, cap, "%lld", (long long)v);
    else
        snprintf(buf, cap, "%.9g", v);
}

void sch_prom_sample(de_buf *b, const char *name, const char *labels, double v)
{
    char num[64];
    fmt_num(num, sizeof num, v);
    if (labels && *labels)
        de_buf_printf(b, "%s{%s} %s\n", name, labels, num);
    else
        de_buf_printf(b, "%s %s\n", name, num);
}

void sch_prom_hist(de_buf *b, const char *name, const char *labels, const sch_hist *h)
{
    uint64_t cum = 0;
    const char *sep = labels && *labels ? "," : "";
    for (unsigned i = 0; i < h->nbounds; i++) {
        cum += h->counts[i];
        char le[64];
        fmt_num(le, sizeof le, h->bounds[i]);
        de_buf_printf(b, "%s_bucket{%s%sle=\"%s\"} %llu\n", name, labels ? labels : "", sep, le,
                      (unsigned long long)cum);
    }
    cum += h->inf;
    de_buf_printf(b, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, labels ? labels : "", sep,
                  (unsigned long long)cum);
    char num[64];
    fmt_num(num, sizeof num, h->sum);
    if (labels && *labels) {
        de_buf_printf(b, "%s_sum{%s} %s\n", name, labels, num);
        de_buf_printf(b, "%s_count{%s} %llu\n", name, labels, (unsigned long long)h->count);
    } else {
        de_buf_printf(b, "%s_sum %s\n", name, num);
        de_buf_printf(b, "%s_count %llu\n", name, (unsigned long long)h->count);
    }
}
