/*
 * slab.c - exact-size records from pre-faulted chunks (see slab.h).
 *
 * Sizes are rounded to 16 bytes; each of the DE_SLAB_MAX / 16 classes has a
 * free list threaded through its freed records.  New records are cut from
 * the current chunk; spare chunks made by de_slab_reserve wait, touched, in
 * a list.  The unused tail of a chunk that is left behind is carved into
 * free records of the largest class that fits, so no room is lost.
 *
 * A record over DE_SLAB_MAX is its own malloc block behind a 16-byte link
 * in the slab's list of them: like every record it goes with the slab when
 * de_slab_free_all drops it, whether or not it was freed one by one (the
 * allocator's caches rely on that, and a 4.6 KiB compiled entry of a claim
 * with 24 requests leaked without it).
 */
#include "slab.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* Under AddressSanitizer (make test-asan) a record on a free list, and room
 * not handed out yet, are poisoned: a pointer kept to a freed record (the
 * allocator's candidate sets once lived in an array that moved when it
 * grew) reads stale bytes silently in a normal build and is a report here.
 * The slab unpoisons a free record's link word only while it reads or
 * writes it. */
#if defined(__SANITIZE_ADDRESS__) /* gcc */
#define SLAB_ASAN 1
#elif defined(__has_feature) /* clang (the fuzz targets) */
#if __has_feature(address_sanitizer)
#define SLAB_ASAN 1
#endif
#endif
#ifdef SLAB_ASAN
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

/* The link of a free record (its first word), read or written with the
 * record poisoned around it. */
static void *link_get(void *p)
{
    UNPOISON(p, sizeof(void *));
    void *next = *(void **)p;
    POISON(p, sizeof(void *));
    return next;
}

static void link_put(void *p, size_t sz, void *next)
{
    UNPOISON(p, sizeof(void *));
    *(void **)p = next;
    POISON(p, sz);
}

#define SLAB_ALIGN 16
#define SLAB_CLASSES (DE_SLAB_MAX / SLAB_ALIGN)
#define SLAB_CHUNK ((size_t)256 << 10)
#define SLAB_PAGE 4096

typedef struct slab_chunk {
    struct slab_chunk *next;
    size_t size, used;
    _Alignas(16) unsigned char data[];
} slab_chunk;

typedef struct big {
    struct big *prev, *next;
    _Alignas(16) unsigned char data[];
} big;

struct de_slab {
    void *free[SLAB_CLASSES]; /* class k holds records of (k + 1) * 16 bytes */
    big *bigs;                /* records over DE_SLAB_MAX */
    slab_chunk *cur;          /* records are cut from here */
    slab_chunk *spare;        /* reserved, touched, not started */
    slab_chunk *full;         /* left behind */
    size_t cap, held, in_use, spare_room;
    uint64_t late_chunks;
};

de_slab *de_slab_new(size_t cap)
{
    de_slab *s = de_xcalloc(1, sizeof *s);
    s->cap = cap ? cap : ((size_t)1 << 30);
    return s;
}

static void free_list(slab_chunk *c)
{
    while (c) {
        slab_chunk *n = c->next;
        UNPOISON(c->data, c->size);
        free(c);
        c = n;
    }
}

void de_slab_free_all(de_slab *s)
{
    if (!s)
        return;
    free_list(s->cur);
    free_list(s->spare);
    free_list(s->full);
    while (s->bigs) {
        big *b = s->bigs;
        s->bigs = b->next;
        free(b);
    }
    free(s);
}

static void *big_alloc(de_slab *s, size_t n)
{
    big *b = malloc(sizeof *b + n);
    if (!b)
        return NULL;
    b->prev = NULL;
    b->next = s->bigs;
    if (s->bigs)
        s->bigs->prev = b;
    s->bigs = b;
    return b->data;
}

static void big_free(de_slab *s, void *p)
{
    big *b = (big *)((unsigned char *)p - offsetof(big, data));
    if (b->prev)
        b->prev->next = b->next;
    else
        s->bigs = b->next;
    if (b->next)
        b->next->prev = b->prev;
    free(b);
}

static size_t round_up(size_t n) { return (n + SLAB_ALIGN - 1) & ~(size_t)(SLAB_ALIGN - 1); }

static slab_chunk *new_chunk(de_slab *s)
{
    if (s->held + SLAB_CHUNK > s->cap)
        return NULL;
    slab_chunk *c = malloc(sizeof *c + SLAB_CHUNK);
    if (!c)
        return NULL;
    /* touch every page now: this is the point of the slab.  data does not
     * start on a page (malloc's header and ours come first), so the last
     * bytes sit on a page of their own that the stride passes over */
    for (size_t off = 0; off < SLAB_CHUNK; off += SLAB_PAGE)
        ((volatile unsigned char *)c->data)[off] = 0;
    ((volatile unsigned char *)c->data)[SLAB_CHUNK - 1] = 0;
    POISON(c->data, SLAB_CHUNK);
    c->next = NULL;
    c->size = SLAB_CHUNK;
    c->used = 0;
    s->held += SLAB_CHUNK;
    return c;
}

static void retire_current(de_slab *s)
{
    slab_chunk *c = s->cur;
    if (!c)
        return;
    /* carve the tail into free records, largest class first */
    while (c->size - c->used >= SLAB_ALIGN) {
        size_t left = c->size - c->used, sz = left < DE_SLAB_MAX ? left & ~(size_t)(SLAB_ALIGN - 1) : DE_SLAB_MAX;
        void *p = c->data + c->used;
        c->used += sz;
        size_t k = sz / SLAB_ALIGN - 1;
        link_put(p, sz, s->free[k]);
        s->free[k] = p;
    }
    c->next = s->full;
    s->full = c;
    s->cur = NULL;
}

static size_t room(const de_slab *s)
{
    return (s->cur ? s->cur->size - s->cur->used : 0) + s->spare_room;
}

bool de_slab_reserve(de_slab *s, size_t bytes)
{
    while (room(s) < bytes) {
        slab_chunk *c = new_chunk(s);
        if (!c)
            return false;
        c->next = s->spare;
        s->spare = c;
        s->spare_room += c->size;
    }
    return true;
}

void *de_slab_alloc(de_slab *s, size_t n)
{
    if (!n)
        return NULL;
    if (n > DE_SLAB_MAX)
        return big_alloc(s, n);
    size_t sz = round_up(n), k = sz / SLAB_ALIGN - 1;
    void *p = s->free[k];
    if (p) {
        s->free[k] = link_get(p);
        s->in_use += sz;
        UNPOISON(p, n);
        return p;
    }
    if (!s->cur || s->cur->size - s->cur->used < sz) {
        retire_current(s);
        slab_chunk *c = s->spare;
        if (c) {
            s->spare = c->next;
            s->spare_room -= c->size;
        } else {
            c = new_chunk(s);
            if (!c)
                return NULL;
            s->late_chunks++;
        }
        c->next = NULL;
        s->cur = c;
    }
    p = s->cur->data + s->cur->used;
    s->cur->used += sz;
    s->in_use += sz;
    UNPOISON(p, n);
    return p;
}

void *de_slab_zalloc(de_slab *s, size_t n)
{
    void *p = de_slab_alloc(s, n);
    if (p)
        memset(p, 0, n);
    return p;
}

void de_slab_free(de_slab *s, void *p, size_t n)
{
    if (!p || !n)
        return;
    if (n > DE_SLAB_MAX) {
        big_free(s, p);
        return;
    }
    size_t sz = round_up(n), k = sz / SLAB_ALIGN - 1;
    link_put(p, sz, s->free[k]);
    s->free[k] = p;
    s->in_use -= sz;
}

void de_slab_get_stats(const de_slab *s, de_slab_stats *out)
{
    out->in_use = s->in_use;
    out->held = s->held;
    out->room = room(s);
    out->late_chunks = s->late_chunks;
}
