/*
 * map.c - linear probing with tombstones; grows at 70 % load.
 */
#include "map.h"

#include <stdlib.h>
#include <string.h>

void de_map_init(de_map *m)
{
    memset(m, 0, sizeof *m);
}

void de_map_destroy(de_map *m)
{
    free(m->ents);
    free(m->used);
    memset(m, 0, sizeof *m);
}

void de_map_clear(de_map *m)
{
    if (m->cap)
        memset(m->used, 0, m->cap);
    m->n = m->tomb = 0;
}

static size_t find(const de_map *m, uint64_t key, bool *found)
{
    size_t mask = m->cap - 1, i = de_hash_u64(key) & mask, first_tomb = SIZE_MAX;
    for (;;) {
        if (m->used[i] == 0) {
            *found = false;
            return first_tomb != SIZE_MAX ? first_tomb : i;
        }
        if (m->used[i] == 1 && m->ents[i].key == key) {
            *found = true;
            return i;
        }
        if (m->used[i] == 2 && first_tomb == SIZE_MAX)
            first_tomb = i;
        i = (i + 1) & mask;
    }
}

static void rehash(de_map *m, size_t ncap, bool touch);

static void grow(de_map *m)
{
    size_t ncap = m->cap ? m->cap : 16;
    if ((m->n + 1) * 10 > ncap * 7)
        ncap *= 2;
    rehash(m, ncap, false);
}

void de_map_reserve(de_map *m, size_t n)
{
    size_t ncap = m->cap ? m->cap : 16;
    while (n * 10 > ncap * 7)
        ncap *= 2;
    if (ncap == m->cap)
        return;
    rehash(m, ncap, true);
}

static void rehash(de_map *m, size_t ncap, bool touch)
{
    de_map_ent *oe = m->ents;
    uint8_t *ou = m->used;
    size_t ocap = m->cap;
    m->ents = de_xmalloc(ncap * sizeof *m->ents);
    m->used = de_xcalloc(ncap, 1);
    if (touch) { /* now, not at the insertions that will fill the tables */
        memset(m->ents, 0, ncap * sizeof *m->ents);
        memset(m->used, 0, ncap);
    }
    m->cap = ncap;
    m->n = m->tomb = 0;
    for (size_t i = 0; i < ocap; i++)
        if (ou[i] == 1)
            de_map_put(m, oe[i].key, oe[i].val);
    free(oe);
    free(ou);
}

uint64_t *de_map_slot(de_map *m, uint64_t key, uint64_t dflt)
{
    if (!m->cap || (m->n + m->tomb + 1) * 10 > m->cap * 7)
        grow(m);
    bool found;
    size_t i = find(m, key, &found);
    if (!found) {
        if (m->used[i] == 2)
            m->tomb--;
        m->used[i] = 1;
        m->ents[i].key = key;
        m->ents[i].val = dflt;
        m->n++;
    }
    return &m->ents[i].val;
}

void de_map_put(de_map *m, uint64_t key, uint64_t val)
{
    *de_map_slot(m, key, val) = val;
}

bool de_map_del(de_map *m, uint64_t key)
{
    if (!m->n)
        return false;
    bool found;
    size_t i = find(m, key, &found);
    if (!found)
        return false;
    m->used[i] = 2;
    m->n--;
    m->tomb++;
    return true;
}

bool de_map_next(const de_map *m, size_t *iter, uint64_t *key, uint64_t *val)
{
    for (size_t i = *iter; i < m->cap; i++) {
        if (m->used[i] == 1) {
            if (key)
                *key = m->ents[i].key;
            if (val)
                *val = m->ents[i].val;
            *iter = i + 1;
            return true;
        }
    }
    *iter = m->cap;
    return false;
}
