/*
 * facts.c - the per-set cache of device facts: one slot per graph device
 * id, holding what derive and groups answered for one generation of the
 * device.  Ids are dense and never reused while a graph lives (dg.h), so a
 * flat array indexed by id is the whole index.  The graph side (computing,
 * publishing into dg, allocator hooks) is in graph.c.
 */
#include "facts.h"

#include <stdlib.h>
#include <string.h>

pol_facts *pol_facts_of(pol_set *s)
{
    if (!s->facts)
        s->facts = de_xcalloc(1, sizeof(pol_facts));
    return s->facts;
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
    free(sl->groups);
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
    free(f);
    s->facts = NULL;
}
