/*
 * err.c - result codes, the error-detail struct, and checked allocation.
 */
#define _POSIX_C_SOURCE 200809L
#include "de.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *const rc_names[DE_RC_COUNT] = {
    [DE_OK] = "ok",
    [DE_ENOMEM] = "out of memory or over a size limit",
    [DE_EINVAL] = "invalid input",
    [DE_EPARSE] = "syntax error",
    [DE_ENOTFOUND] = "not found",
    [DE_EIO] = "input/output error",
    [DE_ERANGE] = "value out of range",
    [DE_ETIMEOUT] = "deadline exceeded",
    [DE_EBUDGET] = "budget exceeded",
    [DE_EPOLICY] = "policy failure",
    [DE_EAPI] = "API server error",
    [DE_ECONFLICT] = "conflict",
    [DE_EUNSAT] = "cannot be satisfied",
    [DE_EINTERNAL] = "internal error",
};

const char *de_quote(char *out, const char *s, size_t n)
{
    size_t j = 0;
    out[j++] = '"';
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        char esc[8];
        size_t k;
        if (c == '"' || c == '\\')
            k = (size_t)snprintf(esc, sizeof esc, "\\%c", c);
        else if (c == '\n')
            k = (size_t)snprintf(esc, sizeof esc, "\\n");
        else if (c == '\t')
            k = (size_t)snprintf(esc, sizeof esc, "\\t");
        else if (c < 0x20 || c == 0x7f)
            k = (size_t)snprintf(esc, sizeof esc, "\\x%02x", c);
        else
            esc[0] = (char)c, k = 1;
        if (j + k + 1 > DE_QUOTE_MAX) {
            snprintf(out, DE_QUOTE_MAX + 1, "a string of %zu bytes", n);
            return out;
        }
        memcpy(out + j, esc, k);
        j += k;
    }
    out[j++] = '"';
    out[j] = 0;
    return out;
}

const char *de_rc_str(de_rc rc)
{
    if ((unsigned)rc >= DE_RC_COUNT)
        return "unknown error";
    return rc_names[rc];
}

void de_err_clear(de_err *e)
{
    if (!e)
        return;
    e->rc = DE_OK;
    e->msg[0] = 0;
    e->file[0] = 0;
    e->line = e->col = 0;
    e->path[0] = 0;
    e->policy[0] = 0;
    e->revision[0] = 0;
}

de_rc de_verrf(de_err *e, de_rc rc, const char *fmt, va_list ap)
{
    if (!e)
        return rc;
    e->rc = rc;
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    return rc;
}

de_rc de_errf(de_err *e, de_rc rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    de_verrf(e, rc, fmt, ap);
    va_end(ap);
    return rc;
}

void de_err_prefix(de_err *e, const char *fmt, ...)
{
    if (!e)
        return;
    char pre[DE_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pre, sizeof pre, fmt, ap);
    va_end(ap);
    char old[DE_ERR_MSG_MAX];
    memcpy(old, e->msg, sizeof old);
    size_t n = strlen(pre);
    if (n >= sizeof e->msg)
        n = sizeof e->msg - 1;
    memcpy(e->msg, pre, n);
    e->msg[n] = 0;
    if (old[0] && n + 2 < sizeof e->msg) {
        memcpy(e->msg + n, ": ", 2);
        size_t m = strlen(old), room = sizeof e->msg - n - 3;
        if (m > room)
            m = room;
        memcpy(e->msg + n + 2, old, m);
        e->msg[n + 2 + m] = 0;
    }
}

static void oom(size_t n)
{
    fprintf(stderr, "draengine: out of memory allocating %zu bytes\n", n);
    abort();
}

void *de_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        oom(n);
    return p;
}

void *de_xcalloc(size_t n, size_t sz)
{
    void *p = calloc(n ? n : 1, sz ? sz : 1);
    if (!p)
        oom(n * sz);
    return p;
}

void *de_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        oom(n);
    return q;
}

char *de_xstrdup(const char *s)
{
    return de_xstrndup(s, strlen(s));
}

char *de_xstrndup(const char *s, size_t n)
{
    char *p = de_xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = 0;
    return p;
}

int64_t de_wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

uint64_t de_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

uint64_t de_hash_bytes(const void *p, size_t n)
{
    const unsigned char *s = p;
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) {
        h ^= s[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}
