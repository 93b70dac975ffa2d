/*
 * map.h - open-addressing hash map from uint64 keys to uint64 values.
 *
 * The engine's only general-purpose map: composite keys (driver id, pool id),
 * (expression id, device id) and so on are packed or hashed into 64 bits by
 * the caller.  Iteration order is slot order and therefore depends on the
 * insertion history: never let it reach an output or a decision (sort first).
 */
#ifndef DE_MAP_H
#define DE_MAP_H

#include "de.h"

/* A key and its value side by side: a lookup that hits reads the state byte
 * and one entry line, where separate key and value arrays took a line each
 * (most of the engine's lookups are of keys not looked at recently). */
typedef struct de_map_ent {
    uint64_t key, val;
} de_map_ent;

typedef struct de_map {
    de_map_ent *ents;
    uint8_t *used; /* 0 empty, 1 full, 2 deleted */
    size_t cap;    /* power of two, or 0 */
    size_t n;      /* live entries */
    size_t tomb;   /* deleted slots */
} de_map;

void de_map_init(de_map *m);
void de_map_destroy(de_map *m);
void de_map_clear(de_map *m);

/* Room for n entries without growing, the tables touched (off a hot path). */
void de_map_reserve(de_map *m, size_t n);
/* Returns true and sets *val when the key is present.  Inline: lookups run
 * about 20 times per scheduled pod, and a lookup needs no tombstone
 * bookkeeping (map.c's find serves the insertions). */
static inline bool de_map_get(const de_map *m, uint64_t key, uint64_t *val)
{
    if (!m->n)
        return false;
    size_t mask = m->cap - 1, i = de_hash_u64(key) & mask;
    for (;;) {
        uint8_t u = m->used[i];
        if (u == 0)
            return false;
        if (u == 1 && m->ents[i].key == key) {
            if (val)
                *val = m->ents[i].val;
            return true;
        }
        i = (i + 1) & mask;
    }
}
void de_map_put(de_map *m, uint64_t key, uint64_t val);
bool de_map_del(de_map *m, uint64_t key);
/* Pointer to the value slot, inserting `dflt` first if absent. The pointer is
 * valid until the next insertion. */
uint64_t *de_map_slot(de_map *m, uint64_t key, uint64_t dflt);

/* Iterate: for (size_t i = 0; de_map_next(m, &i, &k, &v); ) */
bool de_map_next(const de_map *m, size_t *iter, uint64_t *key, uint64_t *val);

static inline uint64_t de_pack2(uint32_t a, uint32_t b)
{
    return ((uint64_t)a << 32) | b;
}

#endif
