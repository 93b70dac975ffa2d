/*
 * buf.h - growable byte buffer with a maximum size (curl's dynbuf idea):
 * every buffer is created with a cap, and appends past it fail with
 * DE_ENOMEM instead of growing without bound.
 */
#ifndef DE_BUF_H
#define DE_BUF_H

#include "de.h"

#include <string.h>

typedef struct de_buf {
    char *p;
    size_t len, cap, max;
    bool overflow; /* an append was refused */
} de_buf;

void de_buf_init(de_buf *b, size_t max);
void de_buf_free(de_buf *b);
void de_buf_reset(de_buf *b);
de_rc de_buf_add_slow(de_buf *b, const void *p, size_t n);

/* inline: the JSON writer appends a byte or a short run millions of times
 * a second, and the call cost more than the copy.  The fast path needs room
 * for n bytes and the NUL within both the capacity and the cap. */
static inline de_rc de_buf_add(de_buf *b, const void *p, size_t n)
{
    if (n < b->cap - b->len && n <= b->max - b->len) {
        if (n)
            memcpy(b->p + b->len, p, n);
        b->len += n;
        b->p[b->len] = 0;
        return DE_OK;
    }
    return de_buf_add_slow(b, p, n);
}

static inline de_rc de_buf_putc(de_buf *b, char c) { return de_buf_add(b, &c, 1); }
de_rc de_buf_puts(de_buf *b, const char *s);
de_rc de_buf_printf(de_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
de_rc de_buf_vprintf(de_buf *b, const char *fmt, va_list ap);
/* Always NUL-terminated (returns "" for an empty buffer). */
const char *de_buf_str(const de_buf *b);
/* Hand the storage to the caller (malloc'd, NUL-terminated); buffer resets. */
char *de_buf_take(de_buf *b);

#endif
