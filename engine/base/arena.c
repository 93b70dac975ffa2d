/*
 * arena.c - chunked bump allocator (see arena.h for the contract).
 */
#include "arena.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK_MIN (64 * 1024)
#define ALIGN 16

typedef struct chunk {
    struct chunk *next; /* older chunk */
    size_t size;        /* usable bytes in data */
    size_t used;
    _Alignas(16) unsigned char data[];
} chunk;

struct de_arena {
    chunk *cur;
    size_t cap;
    size_t total;    /* bytes handed out since reset */
    size_t reserved; /* bytes obtained from malloc */
    size_t first;    /* size of the first chunk */
    chunk *inline_chunk; /* de_arena_new_exact: the first chunk, in this block */
};

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
    c->used = 0;
    a->cur = a->inline_chunk = c;
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
    oldest->used = 0;
    a->cur = oldest;
    a->total = 0;
}

void *de_arena_alloc(de_arena *a, size_t n)
{
    size_t need = (n + (ALIGN - 1)) & ~(size_t)(ALIGN - 1);
    if (need == 0)
        need = ALIGN;
    if (need > a->cap || a->total > a->cap - need)
        return NULL;
    chunk *c = a->cur;
    if (!c || c->size - c->used < need) {
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
        nc->next = c;
        nc->size = sz;
        nc->used = 0;
        a->cur = nc;
        a->reserved += sz + sizeof(chunk);
        c = nc;
    }
    void *p = c->data + c->used;
    c->used += need;
    a->total += need;
    return p;
}

void *de_arena_zalloc(de_arena *a, size_t n)
{
    void *p = de_arena_alloc(a, n);
    if (p)
        memset(p, 0, n);
    return p;
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
    de_arena_mark m = {a->cur, a->cur ? a->cur->used : 0, a->total};
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
    if (a->cur)
        a->cur->used = m.used;
    a->total = m.total;
}

size_t de_arena_used(const de_arena *a)
{
    return a->total;
}

size_t de_arena_reserved(const de_arena *a)
{
    return a->reserved;
}
