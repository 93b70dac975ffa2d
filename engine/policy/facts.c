/*
 * facts.c - the per-set cache of device facts: one slot per graph device
 * id, holding what derive and groups answered for one generation of the
 * device.  Ids are dense and never reused while a graph lives (dg.h), so a
 * flat array indexed by id is the whole index.  The graph side (computing,
 * publishing into dg, allocator hooks) is in graph.c.
 */
#include "facts.h"

#include "../base/map.h"

#include <stdlib.h>
#include <string.h>

pol_facts *pol_facts_of(pol_set *s)
{
    if (!s->facts) {
        pol_facts *f = de_xcalloc(1, sizeof(pol_facts));
        de_map_init(&f->garrays);
        f->garena = de_arena_new_sized(0, 4096);
        s->facts = f;
    }
    return s->facts;
}

const uint32_t *pol_facts_group_ids(pol_set *s, uint64_t mask, uint32_t *n)
{
    pol_facts *f = pol_facts_of(s);
    *n = 0;
    for (unsigned b = 0; b < s->ngroups; b++)
        if (mask & (1ull << b))
            (*n)++;
    if (!*n)
        return NULL;
    uint64_t v;
    if (de_map_get(&f->garrays, mask, &v))
        return (const uint32_t *)(uintptr_t)v;
    uint32_t *ids = de_arena_alloc(f->garena, *n * sizeof *ids);
    uint32_t k = 0;
    for (unsigned b = 0; b < s->ngroups; b++)
        if (mask & (1ull << b))
            ids[k++] = s->group_names[b];
    de_map_put(&f->garrays, mask, (uint64_t)(uintptr_t)ids);
    return ids;
}

pol_slot *pol_facts_slot(pol_set *s, uint32_t devid)
{
    pol_facts *f = pol_facts_of(s);
    if (devid >= f->cap) {
        uint32_t ncap = f->cap ? f->cap : 1024;
        while (ncap <= devid)
            ncap *= 2;
        f->slots = de_xrealloc(f->slots, ncap * sizeof *f->slots);
        memset(f->slots + f->cap, 0, (ncap - f->cap) * sizeof *f->slots);
        f->cap = ncap;
    }
    return &f->slots[devid];
}

const pol_slot *pol_facts_peek(const pol_set *s, uint32_t devid)
{
    const pol_facts *f = s->facts;
    if (!f || devid >= f->cap || !f->slots[devid].valid)
        return NULL;
    return &f->slots[devid];
}

void pol_slot_clear(pol_slot *sl)
{
    pol_devfacts_free(&sl->f);
    memset(sl, 0, sizeof *sl);
}

void pol_facts_free(pol_set *s)
{
    pol_facts *f = s->facts;
    if (!f)
        return;
    for (uint32_t i = 0; i < f->cap; i++)
        pol_slot_clear(&f->slots[i]);
    free(f->slots);
    de_map_destroy(&f->garrays);
    de_arena_free(f->garena);
    free(f);
    s->facts = NULL;
}
