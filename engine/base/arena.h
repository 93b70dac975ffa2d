/*
 * arena.h - bump allocation with a hard cap, freed in one go.
 *
 * One arena per scheduling cycle (and one per compiled CEL program, per
 * decoded document, ...): everything allocated while deciding one pod is
 * dropped together with de_arena_reset(), so the hot path never calls free()
 * and a bug cannot leak across cycles.  Every arena has a byte cap chosen by
 * its owner; an allocation past the cap returns NULL (callers turn that into
 * DE_ENOMEM) instead of growing without bound.
 */
#ifndef DE_ARENA_H
#define DE_ARENA_H

#include "de.h"

#include <string.h>

typedef struct de_arena de_arena;

/* The head of every arena, visible only for the inline fast path below:
 * [ptr, lim) is what may still be handed out from the current chunk without
 * passing the byte cap (lim = ptr + min(bytes left in the chunk, cap left)).
 * A bump that fits moves ptr and nothing else; everything else (new chunk,
 * cap reached, zero or huge sizes) goes to de_arena_alloc_slow.  The
 * allocator sits on every pod's hot path (about 50 allocations per pod), and
 * a call into arena.c plus its bookkeeping cost more than the bump. */
typedef struct de_arena_head {
    unsigned char *ptr;
    unsigned char *lim;
} de_arena_head;

/* A position in an arena, for rewinding scratch allocations (backtracking). */
typedef struct de_arena_mark {
    void *chunk;
    size_t used;
    size_t total;
} de_arena_mark;

/* cap = maximum bytes handed out over the arena's life between resets
 * (0 means the default cap of 1 GiB). */
de_arena *de_arena_new(size_t cap);
/* Same, with the size of the first chunk (default 64 KiB). Small arenas that
 * live long (one per decoded object) use a small first chunk. */
de_arena *de_arena_new_sized(size_t cap, size_t first_chunk);
/* An arena whose first chunk of exactly `size` bytes lives in the same
 * malloc block as the arena (objects decoded into a measured size). */
de_arena *de_arena_new_exact(size_t cap, size_t size);
void de_arena_free(de_arena *a);
/* The bytes left in the first chunk of an arena that never needed a second
 * one, or SIZE_MAX when it did (a measured-size arena that fit). */
size_t de_arena_first_left(const de_arena *a);

/* Drop every allocation but keep the first chunk for reuse. */
void de_arena_reset(de_arena *a);

/* 16-byte aligned; NULL when the cap is reached. */
void *de_arena_alloc_slow(de_arena *a, size_t n);

static inline void *de_arena_alloc(de_arena *a, size_t n)
{
    de_arena_head *h = (de_arena_head *)a;
    /* n == 0 and sizes that wrap give need == 0: the slow path decides */
    size_t need = (n + 15) & ~(size_t)15;
    if (need - 1 < (size_t)(h->lim - h->ptr)) {
        void *p = h->ptr;
        h->ptr += need;
        return p;
    }
    return de_arena_alloc_slow(a, n);
}

/* inline so that a constant n (sizeof) zeroes without a call to memset */
static inline void *de_arena_zalloc(de_arena *a, size_t n)
{
    void *p = de_arena_alloc(a, n);
    if (p)
        memset(p, 0, n);
    return p;
}
char *de_arena_strndup(de_arena *a, const char *s, size_t n);
char *de_arena_strdup(de_arena *a, const char *s);
char *de_arena_printf(de_arena *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

de_arena_mark de_arena_save(const de_arena *a);
void de_arena_rewind(de_arena *a, de_arena_mark m);

/* Bytes handed out since the last reset, and bytes reserved from malloc. */
size_t de_arena_used(const de_arena *a);
size_t de_arena_reserved(const de_arena *a);

#endif
