/*
 * facts.h - the facts cache of a policy set (internal to engine/policy).
 */
#ifndef POL_FACTS_H
#define POL_FACTS_H

#include "../base/map.h"
#include "pol_int.h"

typedef struct pol_slot {
    bool valid;        /* computed */
    bool published;    /* written into the graph */
    uint32_t src_gen;  /* device generation the facts were computed from */
    uint32_t pub_gen;  /* device generation right after publishing */
    pol_devfacts f;
    const uint32_t *groups; /* interned group ids of the first scope (allocator hook) */
    uint32_t ngroups;
} pol_slot;

typedef struct pol_facts {
    pol_slot *slots;
    uint32_t cap;
    uint32_t cursor;       /* next device id to prepare */
    uint64_t graph_gen;    /* dg_devices_generation after the last publish/sync */
    uint32_t synced_limit; /* device id limit at the last sync */
    /* group id arrays, interned by mask (they live as long as the set: the
     * allocator may hold them until the revision changes) */
    de_map garrays;
    de_arena *garena;
} pol_facts;

pol_facts *pol_facts_of(pol_set *s);
pol_slot *pol_facts_slot(pol_set *s, uint32_t devid);
const pol_slot *pol_facts_peek(const pol_set *s, uint32_t devid);
void pol_slot_clear(pol_slot *sl);
/* The group ids of a mask, as one array per distinct mask. */
const uint32_t *pol_facts_group_ids(pol_set *s, uint64_t mask, uint32_t *n);

#endif
