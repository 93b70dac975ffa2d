/*
 * ctl_int.h - shared between the files of the ctrl module.
 */
#ifndef CTL_INT_H
#define CTL_INT_H

#include "../base/map.h"
#include "../base/quantity.h"
#include "ctl.h"

/* One device of a complete pool, for the partition and shareable views. */
typedef struct ctl_pdev {
    const dg_device *d;
    uint32_t part_attr; /* grouping attribute (FQN, interned), 0 = none */
    bool has_type;      /* the device carries part_attr as a string */
    uint32_t type;      /* its value (interned) */
} ctl_pdev;

/* An amount per capacity key as written ("memory", "example.com/bw"). */
typedef struct ctl_amount {
    uint32_t key;
    de_qty value;
} ctl_amount;

/* A complete pool as the views see it. */
typedef struct ctl_pool_in {
    const dg_graph *g;
    de_interner *in;
    uint32_t driver, pool;
    ctl_pdev *devs;          /* slices at the newest generation, in slice-name order */
    uint32_t ndevs;
    const dg_slice **slices; /* those slices */
    uint32_t nslices;
    const de_map *inuse;     /* device name -> 1: held by a claim without adminAccess */
    const ctl_amount *consumed; /* consumedCapacity summed over those results */
    uint32_t nconsumed;
} ctl_pool_in;

/* ctl_pviews.c: resolve each device's grouping attribute and type
 * (`request_attr` 0 = none), then add partitionSummary / shareableSummary to
 * `pool` (the PoolStatus JSON); a structural problem goes to err
 * ("" when none), already prefixed and cut to CTL_PSR_MAX_MESSAGE. */
void ctl_pool_views(ctl_pool_in *in, uint32_t request_attr, json_t *pool, char *err, size_t cap);

/* The capacity key of a device capacity as its slice wrote it. */
uint32_t ctl_cap_key(de_interner *in, const de_cap *c);

#endif
