/*
 * intern.c - open-addressing string table; strings live in an arena.
 *
 * Counted strings.  Most names (drivers, pools, devices, attributes, node
 * and class names) are few and live as long as the cluster: they are pinned
 * and never freed.  The names and UIDs of claims and pods are not: a busy
 * cluster creates and deletes them without end, so they are interned with a
 * reference count (de_intern_ref / de_intern_retain / de_intern_release).
 * Such a string lives in a slab record instead of the arena; when its last
 * reference goes, it leaves the table (backward-shift deletion keeps the
 * linear probing chains intact) and its id goes on a free list for the next
 * new string.  Interning a counted string the plain way pins it: code that
 * looks a name up by de_intern never sees its id change meaning.
 */
#include "intern.h"
#include "arena.h"
#include "slab.h"

#include <stdlib.h>
#include <string.h>

typedef struct entry {
    const char *s;
    uint32_t len;
    uint32_t hash;
    uint32_t refs; /* counted strings: references; 0 = pinned (or free) */
} entry;

struct de_interner {
    de_arena *strings;
    de_slab *counted; /* storage of counted strings */
    entry *ents; /* by id */
    uint32_t n, cap;
    uint32_t *slots; /* id+1, 0 = empty */
    uint32_t nslots; /* power of two */
    uint32_t *free_ids; /* ids of released strings, reused first */
    uint32_t nfree, capfree;
};

static uint32_t hash32(const char *s, size_t len)
{
    return (uint32_t)de_hash_u64(de_hash_bytes(s, len));
}

static void rehash(de_interner *in, uint32_t nslots)
{
    free(in->slots);
    in->slots = de_xcalloc(nslots, sizeof *in->slots);
    in->nslots = nslots;
    for (uint32_t id = 0; id < in->n; id++) {
        if (!in->ents[id].s)
            continue; /* released */
        uint32_t i = in->ents[id].hash & (nslots - 1);
        while (in->slots[i])
            i = (i + 1) & (nslots - 1);
        in->slots[i] = id + 1;
    }
}

de_interner *de_intern_new(void)
{
    de_interner *in = de_xcalloc(1, sizeof *in);
    in->strings = de_arena_new((size_t)8 << 30);
    in->counted = de_slab_new((size_t)8 << 30);
    in->cap = 256;
    in->ents = de_xmalloc(in->cap * sizeof *in->ents);
    rehash(in, 512);
    de_intern(in, "", 0);
    return in;
}

void de_intern_free(de_interner *in)
{
    if (!in)
        return;
    de_arena_free(in->strings);
    de_slab_free_all(in->counted);
    free(in->free_ids);
    free(in->ents);
    free(in->slots);
    free(in);
}

/* Linear probing from the hash: the id of s, or UINT32_MAX with *slot at
 * the empty slot where it would go. */
static inline uint32_t probe(const de_interner *in, const char *s, size_t len, uint32_t h, uint32_t *slot)
{
    uint32_t i = h & (in->nslots - 1);
    while (in->slots[i]) {
        const entry *e = &in->ents[in->slots[i] - 1];
        if (e->hash == h && e->len == len && memcmp(e->s, s, len) == 0)
            return in->slots[i] - 1;
        i = (i + 1) & (in->nslots - 1);
    }
    *slot = i;
    return UINT32_MAX;
}

uint32_t de_intern_find(const de_interner *in, const char *s, size_t len)
{
    uint32_t slot;
    return probe(in, s, len, hash32(s, len), &slot);
}

static uint32_t insert(de_interner *in, const char *s, size_t len, uint32_t h, uint32_t slot, bool counted)
{
    char *copy;
    if (counted) {
        copy = de_slab_alloc(in->counted, len + 1);
        if (copy) {
            memcpy(copy, s, len);
            copy[len] = 0;
        }
    } else {
        copy = de_arena_strndup(in->strings, s, len);
    }
    if (!copy)
        abort(); /* 8 GiB of names: not a real cluster */
    uint32_t id;
    if (in->nfree) {
        id = in->free_ids[--in->nfree];
    } else {
        if (in->n == in->cap) {
            in->cap += in->cap / 2;
            in->ents = de_xrealloc(in->ents, in->cap * sizeof *in->ents);
        }
        id = in->n++;
    }
    in->ents[id] = (entry){copy, (uint32_t)len, h, counted ? 1 : 0};
    in->slots[slot] = id + 1;
    if ((uint64_t)(in->n - in->nfree) * 4 > (uint64_t)in->nslots * 3)
        rehash(in, in->nslots * 2);
    return id;
}

uint32_t de_intern(de_interner *in, const char *s, size_t len)
{
    uint32_t h = hash32(s, len), i;
    uint32_t found = probe(in, s, len, h, &i);
    if (found != UINT32_MAX) {
        in->ents[found].refs = 0; /* pinned from now on (its storage stays in the slab) */
        return found;
    }
    return insert(in, s, len, h, i, false);
}

uint32_t de_intern_ref(de_interner *in, const char *s, size_t len)
{
    uint32_t h = hash32(s, len), i;
    uint32_t found = probe(in, s, len, h, &i);
    if (found != UINT32_MAX) {
        if (in->ents[found].refs)
            in->ents[found].refs++;
        return found;
    }
    return insert(in, s, len, h, i, true);
}

void de_intern_retain(de_interner *in, uint32_t id)
{
    if (id && id < in->n && in->ents[id].refs)
        in->ents[id].refs++;
}

void de_intern_release(de_interner *in, uint32_t id)
{
    if (!id || id >= in->n || !in->ents[id].refs || --in->ents[id].refs)
        return;
    entry *e = &in->ents[id];
    /* find its slot, then shift the rest of the probe chain back */
    uint32_t mask = in->nslots - 1, i = e->hash & mask;
    while (in->slots[i] != id + 1)
        i = (i + 1) & mask;
    for (uint32_t j = (i + 1) & mask; in->slots[j]; j = (j + 1) & mask) {
        uint32_t home = in->ents[in->slots[j] - 1].hash & mask;
        /* the entry at j may move to i when i lies cyclically in [home, j) */
        if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
            in->slots[i] = in->slots[j];
            i = j;
        }
    }
    in->slots[i] = 0;
    de_slab_free(in->counted, (void *)e->s, e->len + 1);
    *e = (entry){NULL, 0, 0, 0};
    if (in->nfree == in->capfree) {
        in->capfree = in->capfree ? in->capfree * 2 : 64;
        in->free_ids = de_xrealloc(in->free_ids, in->capfree * sizeof *in->free_ids);
    }
    in->free_ids[in->nfree++] = id;
}

uint32_t de_intern_live(const de_interner *in) { return in->n - in->nfree; }

uint32_t de_intern_cstr(de_interner *in, const char *s)
{
    return de_intern(in, s, strlen(s));
}

const char *de_intern_str(const de_interner *in, uint32_t id)
{
    return id < in->n && in->ents[id].s ? in->ents[id].s : "";
}

size_t de_intern_len(const de_interner *in, uint32_t id)
{
    return id < in->n ? in->ents[id].len : 0;
}

uint32_t de_intern_count(const de_interner *in)
{
    return in->n;
}

size_t de_intern_bytes(const de_interner *in)
{
    de_slab_stats ss;
    de_slab_get_stats(in->counted, &ss);
    return de_arena_reserved(in->strings) + ss.held + in->cap * sizeof(entry) + in->nslots * sizeof(uint32_t) +
           in->capfree * sizeof(uint32_t);
}

int de_intern_cmp(const de_interner *in, uint32_t a, uint32_t b)
{
    if (a == b)
        return 0;
    const entry *x = &in->ents[a], *y = &in->ents[b];
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->s, y->s, n);
    if (c)
        return c;
    return x->len < y->len ? -1 : (x->len > y->len ? 1 : 0);
}
