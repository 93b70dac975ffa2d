/*
 * intern.c - open-addressing string table; strings live in an arena.
 */
#include "intern.h"
#include "arena.h"

#include <stdlib.h>
#include <string.h>

typedef struct entry {
    const char *s;
    uint32_t len;
    uint32_t hash;
} entry;

struct de_interner {
    de_arena *strings;
    entry *ents; /* by id */
    uint32_t n, cap;
    uint32_t *slots; /* id+1, 0 = empty */
    uint32_t nslots; /* power of two */
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

uint32_t de_intern(de_interner *in, const char *s, size_t len)
{
    uint32_t h = hash32(s, len), i;
    uint32_t found = probe(in, s, len, h, &i);
    if (found != UINT32_MAX)
        return found;
    if (in->n == in->cap) {
        in->cap *= 2;
        in->ents = de_xrealloc(in->ents, in->cap * sizeof *in->ents);
    }
    char *copy = de_arena_strndup(in->strings, s, len);
    if (!copy)
        abort(); /* 8 GiB of names: not a real cluster */
    uint32_t id = in->n++;
    in->ents[id] = (entry){copy, (uint32_t)len, h};
    in->slots[i] = id + 1;
    if ((uint64_t)in->n * 4 > (uint64_t)in->nslots * 3)
        rehash(in, in->nslots * 2);
    return id;
}

uint32_t de_intern_cstr(de_interner *in, const char *s)
{
    return de_intern(in, s, strlen(s));
}

const char *de_intern_str(const de_interner *in, uint32_t id)
{
    return id < in->n ? in->ents[id].s : "";
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
    return de_arena_reserved(in->strings) + in->cap * sizeof(entry) +
           in->nslots * sizeof(uint32_t);
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
