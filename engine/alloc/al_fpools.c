/*
 * al_fpools.c - counter pools seen from nodes that see none of their
 * devices ("foreign" pools), one view for the whole cluster.
 *
 * Upstream's GatherPools treats every slice with sharedCounters as visible
 * from every node, so each node's pool list held every counter pool of the
 * cluster: a 5,000-node cluster with a counter pool per node built 5,000 x
 * 300 pool views, and any counter slice change rebuilt every table.  A
 * counter pool whose device slices a node does not see is seen through its
 * counter slices alone (and the rescan of the pool), the same from every
 * node; such a view has no devices, so all it can change is the outcome of
 * a call: an invalid pool makes a failed allocation an error, an
 * incomplete or invalid one fails allocationMode All and is named in
 * explanations.  So the allocator keeps that view once per counter pool,
 * recomputed when a slice of the pool changes (al_fpools_sync, at the next
 * table lookup), and a node table lists only the pools it sees devices of
 * (al_gather.c).  What a table reports is then its own pools plus the
 * foreign views of every other counter pool: the counts below minus the
 * table's own pools' entries (al_ntab.fown_*), and the problem pools in
 * (driver, pool) order merged with the table's own (al_fprob_next).
 */
#include "al_int.h"

#include <stdlib.h>

typedef struct al_fpool {
    uint32_t driver, name;
    uint8_t state;   /* AL_POOL_* */
    bool has;        /* the pool had counter slices when last computed */
    bool present;    /* ... and is not obsolete */
    bool dirty;      /* on a->fdirty */
    char *reason;    /* invalid: why (malloc) */
} al_fpool;

static void fp_grow(al_allocator *a, uint32_t n)
{
    if (n <= a->nfpools)
        return;
    uint32_t cap = a->nfpools ? a->nfpools : 64;
    while (cap < n)
        cap *= 2;
    a->fpools = de_xrealloc(a->fpools, cap * sizeof *a->fpools);
    memset(a->fpools + a->nfpools, 0, (cap - a->nfpools) * sizeof *a->fpools);
    a->nfpools = cap;
}

void al_fpools_free(al_allocator *a)
{
    for (uint32_t i = 0; i < a->nfpools; i++)
        free(a->fpools[i].reason);
    free(a->fpools);
    free(a->fdirty);
    free(a->fprob);
    if (a->fholder) {
        de_arena_free(a->fholder->ar);
        free(a->fholder);
    }
}

void al_fpools_dirty(al_allocator *a, uint32_t gpid)
{
    if (gpid == DG_NONE)
        return;
    fp_grow(a, gpid + 1);
    al_fpool *f = &a->fpools[gpid];
    if (f->dirty)
        return;
    f->dirty = true;
    if (a->nfdirty == a->capfdirty) {
        a->capfdirty = a->capfdirty ? a->capfdirty * 2 : 16;
        a->fdirty = de_xrealloc(a->fdirty, a->capfdirty * sizeof *a->fdirty);
    }
    a->fdirty[a->nfdirty++] = gpid;
}

bool al_fpools_has(const al_allocator *a, uint32_t gpid)
{
    return gpid < a->nfpools && a->fpools[gpid].has;
}

static int cmp_fp(al_allocator *a, uint32_t x, uint32_t y)
{
    const al_fpool *p = &a->fpools[x], *q = &a->fpools[y];
    int c = de_intern_cmp(a->in, p->driver, q->driver);
    return c ? c : de_intern_cmp(a->in, p->name, q->name);
}

static void prob_del(al_allocator *a, uint32_t gpid)
{
    for (uint32_t i = 0; i < a->nfprob; i++)
        if (a->fprob[i] == gpid) {
            memmove(a->fprob + i, a->fprob + i + 1, (a->nfprob - i - 1) * sizeof *a->fprob);
            a->nfprob--;
            return;
        }
}

static void prob_add(al_allocator *a, uint32_t gpid)
{
    if (a->nfprob == a->capfprob) {
        a->capfprob = a->capfprob ? a->capfprob * 2 : 8;
        a->fprob = de_xrealloc(a->fprob, a->capfprob * sizeof *a->fprob);
    }
    uint32_t i = a->nfprob;
    while (i && cmp_fp(a, a->fprob[i - 1], gpid) > 0) {
        a->fprob[i] = a->fprob[i - 1];
        i--;
    }
    a->fprob[i] = gpid;
    a->nfprob++;
}

static void recompute(al_allocator *a, uint32_t gpid)
{
    al_fpool *f = &a->fpools[gpid];
    if (f->present) {
        a->fpresent--;
        if (f->state == AL_POOL_INVALID)
            a->finvalid--;
        if (f->state != AL_POOL_OK)
            prob_del(a, gpid);
    }
    free(f->reason);
    f->reason = NULL;
    f->present = false;
    f->state = AL_POOL_OK;
    if (!a->fholder)
        a->fholder = de_xcalloc(1, sizeof *a->fholder);
    al_pool p;
    int r = al_foreign_view(a, a->fholder, gpid, &p);
    f->has = r >= 0;
    if (r <= 0) {
        if (a->fholder->ar)
            de_arena_reset(a->fholder->ar);
        return;
    }
    f->present = true;
    f->driver = p.driver;
    f->name = p.name;
    f->state = p.state;
    if (p.state == AL_POOL_INVALID && p.invalid_reason)
        f->reason = de_xstrdup(p.invalid_reason);
    if (a->fholder->ar)
        de_arena_reset(a->fholder->ar);
    a->fpresent++;
    if (f->state == AL_POOL_INVALID)
        a->finvalid++;
    if (f->state != AL_POOL_OK)
        prob_add(a, gpid);
}

void al_fpools_sync(al_allocator *a)
{
    if (!a->fready) {
        /* first use: every pool with a counter slice */
        a->fready = true;
        const uint32_t *cn;
        uint32_t ncn;
        dg_slices_with_counters(a->g, &cn, &ncn);
        for (uint32_t i = 0; i < ncn; i++)
            al_fpools_dirty(a, dg_slice_pool(a->g, cn[i]));
    }
    for (uint32_t i = 0; i < a->nfdirty; i++) {
        uint32_t gpid = a->fdirty[i];
        a->fpools[gpid].dirty = false;
        recompute(a, gpid);
    }
    a->nfdirty = 0;
}

/* ---- what a table reports ------------------------------------------------------- */

static bool own_pool(const al_ntab *t, uint32_t gpid)
{
    for (uint32_t i = 0; i < t->ngpools; i++)
        if (t->gpools[i] == gpid)
            return true;
    return false;
}

void al_ntab_foreign(al_allocator *a, al_ntab *t)
{
    t->fown_present = t->fown_invalid = 0;
    for (uint32_t i = 0; i < t->ngpools; i++) {
        uint32_t gpid = t->gpools[i];
        if (gpid >= a->nfpools || !a->fpools[gpid].present)
            continue;
        t->fown_present++;
        if (a->fpools[gpid].state == AL_POOL_INVALID)
            t->fown_invalid++;
    }
}

bool al_ntab_any_invalid(const al_allocator *a, const al_ntab *t)
{
    return t->any_invalid || a->finvalid > t->fown_invalid;
}

bool al_ntab_no_pools(const al_allocator *a, const al_ntab *t)
{
    return !t->npools && a->fpresent == t->fown_present;
}

bool al_fprob_next(al_allocator *a, const al_ntab *t, uint32_t *cursor, const al_pool *before,
                   al_pool *out)
{
    for (; *cursor < a->nfprob; (*cursor)++) {
        uint32_t gpid = a->fprob[*cursor];
        if (own_pool(t, gpid))
            continue;
        const al_fpool *f = &a->fpools[gpid];
        if (before && !before->binding) {
            int c = de_intern_cmp(a->in, f->driver, before->driver);
            if (!c)
                c = de_intern_cmp(a->in, f->name, before->name);
            if (c > 0)
                return false;
        }
        memset(out, 0, sizeof *out);
        out->driver = f->driver;
        out->name = f->name;
        out->state = f->state;
        out->invalid_reason = f->reason;
        (*cursor)++;
        return true;
    }
    return false;
}
