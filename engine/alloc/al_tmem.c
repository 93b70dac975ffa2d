/*
 * al_tmem.c - where node tables live.
 *
 * A node table is built on the node's first use, inside a scheduling
 * decision.  Built from malloc and a 4 KiB arena per table, the first
 * decision on each node took fresh pages (a page fault costs more than the
 * decision) and every table held a whole chunk for the ~1.6 KiB it used.
 * Now al_ntab_build works in a scratch arena that is reset per build (warm
 * after the first), then copies the result into one exact-size block from
 * the allocator's table slab (engine/base/slab.c): pools, slice lists,
 * devices, the device hash and the usage bits.  Candidate sets and
 * aggregated capacity are exact-size slab records of their own; messages
 * (invalid pools, CEL errors) go to a per-table arena made only when one is
 * written.  A rebuilt table gives its records back to the slab's per-size
 * free lists, where the rebuild finds them again.
 *
 * The slab's room is reserved - its pages touched - when slices and nodes
 * arrive (graph events and al_new, outside any decision): enough for every
 * table not built yet, estimated from the devices each node will list (its
 * node-local devices plus every device visible from all nodes) at the
 * sizes below.  Records past the estimate still work, from a chunk taken
 * late (and faulted then).
 */
#include "al_int.h"

#include "../base/slab.h"

#include <stdlib.h>

/* the estimate: bytes a table needs per device it lists, and per table
 * (struct, two pools, two candidate sets with their bitsets, rounding) */
#define EST_DEV (sizeof(al_dev) + 2 * sizeof(uint32_t) + 8)
#define EST_TABLE (sizeof(al_ntab) + 2 * sizeof(al_pool) + 2 * sizeof(al_cset) + 4 * 64 + 128)
#define EST_SHARED_BIT 0x80000000u
/* ... and per claim: the usage keys of its allocation (al_core.c: on_claim), two devices */
#define EST_CLAIM (2 * sizeof(uint64_t))
#define RESERVE_AHEAD_MAX ((uint64_t)64 << 20) /* never more room than this ahead */

void al_tmem_init(al_allocator *a)
{
    a->tslab = de_slab_new(0);
    a->bar = de_arena_new(0);
}

void al_tmem_free(al_allocator *a)
{
    de_slab_free_all(a->tslab);
    a->tslab = NULL;
    de_arena_free(a->bar);
    a->bar = NULL;
    free(a->slice_est);
    a->slice_est = NULL;
}

void *al_tmem_alloc(al_allocator *a, size_t n)
{
    void *p = de_slab_zalloc(a->tslab, n ? n : 1);
    if (!p)
        al_oom(n);
    return p;
}

void al_tmem_release(al_allocator *a, void *p, size_t n)
{
    de_slab_free(a->tslab, p, n ? n : 1);
}

de_arena *al_ntab_ar(al_ntab *t)
{
    if (!t->ar)
        t->ar = de_arena_new_sized(0, 1024);
    return t->ar;
}

al_ntab *al_ntab_new(al_allocator *a, uint32_t node_name)
{
    al_ntab *t = al_tmem_alloc(a, sizeof *t);
    t->node_name = node_name;
    return t;
}

void al_ntab_clear(al_allocator *a, al_ntab *t)
{
    if (t->agg) {
        for (uint32_t i = 0; i < t->ndev; i++)
            if (t->agg[i].v)
                al_tmem_release(a, t->agg[i].v, t->agg[i].n * sizeof *t->agg[i].v);
        al_tmem_release(a, t->agg, t->ndev * sizeof *t->agg);
        t->agg = NULL;
    }
    for (uint32_t i = 0; i < t->ncsets; i++) {
        al_cset *c = t->csets[i];
        al_tmem_release(a, c->cand, 4 * (size_t)t->nwords * sizeof(uint64_t));
        if (c->poison_msg) {
            al_tmem_release(a, c->poison_msg, t->ndev * sizeof *c->poison_msg);
            al_tmem_release(a, c->poison_kind, t->ndev);
        }
        al_tmem_release(a, c, sizeof *c);
    }
    if (t->csets)
        al_tmem_release(a, t->csets, t->capcsets * sizeof *t->csets);
    t->csets = NULL;
    t->ncsets = t->capcsets = 0;
    if (t->mem)
        al_tmem_release(a, t->mem, t->memsz);
    t->mem = NULL;
    t->memsz = 0;
    de_arena_free(t->ar);
    t->ar = NULL;
    t->dhash = NULL;
    t->dmask = 0;
    t->pools = NULL;
    t->devs = NULL;
    t->gpools = NULL;
    t->inuse = t->allocated = t->plain = NULL;
    t->npools = t->ndev = t->nwords = t->ngpools = 0;
}

/* ---- reservation ------------------------------------------------------------------ */

void al_tmem_slice(al_allocator *a, uint32_t sid)
{
    if (sid >= a->nslice_est) {
        uint32_t n = a->nslice_est ? a->nslice_est : 256;
        while (n <= sid)
            n *= 2;
        a->slice_est = de_xrealloc(a->slice_est, n * sizeof *a->slice_est);
        memset(a->slice_est + a->nslice_est, 0, (n - a->nslice_est) * sizeof *a->slice_est);
        a->nslice_est = n;
    }
    uint32_t old = a->slice_est[sid];
    if (old & EST_SHARED_BIT)
        a->est_shared -= old & ~EST_SHARED_BIT;
    else
        a->est_local -= old;
    const dg_slice *s = dg_slice_get(a->g, sid);
    uint32_t v = 0;
    if (s && s->ndevices) {
        v = s->ndevices & ~EST_SHARED_BIT;
        if (s->ns_mode != DG_NS_NODE_NAME)
            v |= EST_SHARED_BIT;
    }
    a->slice_est[sid] = v;
    if (v & EST_SHARED_BIT)
        a->est_shared += v & ~EST_SHARED_BIT;
    else
        a->est_local += v;
}

void al_tmem_reserve(al_allocator *a)
{
    const uint32_t *names;
    uint32_t nnames;
    dg_slice_nodes(a->g, &names, &nnames);
    uint64_t nodes = dg_node_id_limit(a->g);
    if (nnames > nodes)
        nodes = nnames;
    /* the tables' index, so that a first use does not grow it */
    if (a->capntabs < nodes) {
        a->capntabs = al_grow_cap(a->capntabs, (uint32_t)nodes);
        a->ntabs = de_xrealloc(a->ntabs, a->capntabs * sizeof *a->ntabs);
        de_map_reserve(&a->ntab_by_name, a->capntabs);
    }
    al_usage_reserve(a, dg_pod_id_limit(a->g), (uint32_t)nodes);
    /* the selector memo's per-program tables: the first pods compile a
     * class or two */
    cel_memo_reserve(a->memo, dg_device_id_limit(a->g), 2);
    cel_env_reserve_devices(a->cel, dg_device_id_limit(a->g));
    al_order_reserve(a, (uint32_t)nodes);
    al_choice_reserve(a, (uint32_t)nodes);
    /* indexes by graph pool id that a first build would otherwise grow */
    uint32_t npools = dg_pool_id_limit(a->g);
    al_tabs_reserve(a, npools);
    al_pchecks_reserve(a, npools);
    al_pbmark_reserve(a, npools);
    /* a table whose block is larger than a slab record comes from malloc
     * (many devices visible from every node): not reserved for */
    uint64_t per_table = EST_TABLE + (a->est_shared + (nodes ? a->est_local / nodes : 0)) * EST_DEV;
    uint64_t est = (uint64_t)dg_claim_id_limit(a->g) * EST_CLAIM + nodes * EST_TABLE;
    if (per_table - EST_TABLE <= DE_SLAB_MAX)
        est += nodes * a->est_shared * EST_DEV + a->est_local * EST_DEV;
    de_slab_stats st;
    de_slab_get_stats(a->tslab, &st);
    if (est > st.in_use) {
        uint64_t need = est - st.in_use;
        de_slab_reserve(a->tslab, need < RESERVE_AHEAD_MAX ? need : RESERVE_AHEAD_MAX);
    }
}
