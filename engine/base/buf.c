/*
 * buf.c - capped dynamic buffer.
 */
#include "buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void de_buf_init(de_buf *b, size_t max)
{
    memset(b, 0, sizeof *b);
    b->max = max ? max : ((size_t)1 << 30);
}

void de_buf_free(de_buf *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

void de_buf_reset(de_buf *b)
{
    b->len = 0;
    b->overflow = false;
    if (b->p)
        b->p[0] = 0;
}

static de_rc reserve(de_buf *b, size_t extra)
{
    if (extra > b->max || b->len > b->max - extra) {
        b->overflow = true;
        return DE_ENOMEM;
    }
    size_t need = b->len + extra + 1;
    if (need <= b->cap)
        return DE_OK;
    size_t ncap = b->cap ? b->cap : 256;
    while (ncap < need)
        ncap *= 2;
    b->p = de_xrealloc(b->p, ncap);
    b->cap = ncap;
    return DE_OK;
}

de_rc de_buf_add_slow(de_buf *b, const void *p, size_t n)
{
    DE_TRY(reserve(b, n));
    if (n)
        memcpy(b->p + b->len, p, n);
    b->len += n;
    b->p[b->len] = 0;
    return DE_OK;
}

de_rc de_buf_puts(de_buf *b, const char *s)
{
    return de_buf_add(b, s, strlen(s));
}

de_rc de_buf_vprintf(de_buf *b, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        return DE_EINVAL;
    DE_TRY(reserve(b, (size_t)n));
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
    return DE_OK;
}

de_rc de_buf_printf(de_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    de_rc rc = de_buf_vprintf(b, fmt, ap);
    va_end(ap);
    return rc;
}

const char *de_buf_str(const de_buf *b)
{
    return b->p ? b->p : "";
}

char *de_buf_take(de_buf *b)
{
    char *p = b->p ? b->p : de_xstrdup("");
    b->p = NULL;
    b->len = b->cap = 0;
    b->overflow = false;
    return p;
}
