/*
 * arena.c - chunked bump allocator (see arena.h for the contract).
 */
#include "arena.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK_MIN (64 * 1024)
#define ALIGN 16

typedef struct chunk {
    struct chunk *next; /* older chunk */
    size_t size;        /* usable bytes in data */
    size_t used;        /* bytes taken when it was last made current */
    _Alignas(16) unsigned char data[];
} chunk;

struct de_arena {
    de_arena_head h; /* first: arena.h's inline bump reads it through a cast */
    chunk *cur;
    size_t cap;
    /* bytes handed out since reset = tbase + (h.ptr - cur->data): the fast
     * path moves only h.ptr, so the count is kept relative to it */
    size_t tbase;
    size_t reserved; /* bytes obtained from malloc */
    size_t first;    /* size of the first chunk */
    chunk *inline_chunk; /* de_arena_new_exact: the first chunk, in this block */
};

static size_t total_of(const de_arena *a)
{
    return a->cur ? a->tbase + (size_t)(a->h.ptr - a->cur->data) : a->tbase;
}

/* Make c current with `used` bytes taken in it and `total` handed out in
 * all; [ptr, lim) then allows what both the chunk and the cap allow. */
static void set_cur(de_arena *a, chunk *c, size_t used, size_t total)
{
    a->cur = c;
    a->tbase = total - used;
    c->used = used;
    a->h.ptr = c->data + used;
    size_t room = c->size - used, left = a->cap - total;
    a->h.lim = a->h.ptr + (room < left ? room : left);
}

de_arena *de_arena_new_sized(size_t cap, size_t first_chunk)
{
    de_arena *a = de_xcalloc(1, sizeof *a);
    a->cap = cap ? cap : ((size_t)1 << 30);
    a->first = first_chunk ? first_chunk : CHUNK_MIN;
    return a;
}

de_arena *de_arena_new_exact(size_t cap, size_t size)
{
    /* one block for the arena, its chunk header and its bytes: a decoded
     * claim or pod pays one malloc, not three */
    size_t head = (sizeof(de_arena) + (ALIGN - 1)) & ~(size_t)(ALIGN - 1);
    size = (size + (ALIGN - 1)) & ~(size_t)(ALIGN - 1);
    de_arena *a = de_xmalloc(head + sizeof(chunk) + size);
    memset(a, 0, sizeof *a);
    a->cap = cap ? cap : ((size_t)1 << 30);
    a->first = size ? size : ALIGN;
    chunk *c = (chunk *)((unsigned char *)a + head);
    c->next = NULL;
    c->size = size;
    a->inline_chunk = c;
    set_cur(a, c, 0, 0);
    a->reserved = size + sizeof(chunk);
    return a;
}

de_arena *de_arena_new(size_t cap)
{
    return de_arena_new_sized(cap, CHUNK_MIN);
}

static void free_chunks(chunk *c, chunk *keep)
{
    while (c && c != keep) {
        chunk *n = c->next;
        free(c);
        c = n;
    }
}

void de_arena_free(de_arena *a)
{
    if (!a)
        return;
    free_chunks(a->cur, a->inline_chunk); /* the inline chunk is the oldest: freed with a */
    free(a);
}

void de_arena_reset(de_arena *a)
{
    if (!a->cur)
        return;
    /* keep the oldest chunk: it is the one sized for the common case */
    chunk *c = a->cur, *oldest = c;
    while (oldest->next)
        oldest = oldest->next;
    while (c != oldest) {
        chunk *n = c->next;
        a->reserved -= c->size + sizeof(chunk);
        free(c);
        c = n;
    }
    set_cur(a, oldest, 0, 0);
}

void *de_arena_alloc_slow(de_arena *a, size_t n)
{
    size_t need = (n + (ALIGN - 1)) & ~(size_t)(ALIGN - 1);
    if (need == 0)
        need = ALIGN;
    size_t total = total_of(a);
    if (need > a->cap || total > a->cap - need)
        return NULL;
    chunk *c = a->cur;
    size_t used = c ? (size_t)(a->h.ptr - c->data) : 0;
    if (!c || c->size - used < need) {
        size_t sz = a->first;
        if (c && c->size < (size_t)16 << 20)
            sz = c->size * 2;
        else if (c)
            sz = c->size;
        if (sz < need)
            sz = need;
        chunk *nc = malloc(sizeof(chunk) + sz);
        if (!nc)
            return NULL;
        if (c)
            c->used = used;
        nc->next = c;
        nc->size = sz;
        a->reserved += sz + sizeof(chunk);
        c = nc;
        used = 0;
    }
    set_cur(a, c, used + need, total + need);
    return c->data + used;
}

char *de_arena_strndup(de_arena *a, const char *s, size_t n)
{
    char *p = de_arena_alloc(a, n + 1);
    if (!p)
        return NULL;
    memcpy(p, s, n);
    p[n] = 0;
    return p;
}

char *de_arena_strdup(de_arena *a, const char *s)
{
    return de_arena_strndup(a, s, strlen(s));
}

char *de_arena_printf(de_arena *a, const char *fmt, ...)
{
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        va_end(ap2);
        return NULL;
    }
    char *p = de_arena_alloc(a, (size_t)n + 1);
    if (p)
        vsnprintf(p, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    return p;
}

de_arena_mark de_arena_save(const de_arena *a)
{
    de_arena_mark m = {a->cur, a->cur ? (size_t)(a->h.ptr - a->cur->data) : 0, total_of(a)};
    return m;
}

void de_arena_rewind(de_arena *a, de_arena_mark m)
{
    /* chunks allocated after the mark are freed; the marked chunk is cut back */
    while (a->cur && a->cur != (chunk *)m.chunk) {
        chunk *n = a->cur->next;
        a->reserved -= a->cur->size + sizeof(chunk);
        free(a->cur);
        a->cur = n;
    }
    if (a->cur) {
        set_cur(a, a->cur, m.used, m.total);
    } else {
        a->h.ptr = a->h.lim = NULL;
        a->tbase = m.total;
    }
}

size_t de_arena_first_left(const de_arena *a)
{
    const chunk *c = a->cur;
    if (!c || c->next)
        return SIZE_MAX;
    return c->size - (size_t)(a->h.ptr - c->data);
}

size_t de_arena_used(const de_arena *a)
{
    return total_of(a);
}

size_t de_arena_reserved(const de_arena *a)
{
    return a->reserved;
}
