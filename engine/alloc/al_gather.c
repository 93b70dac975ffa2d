/*
 * al_gather.c - the per-node table: which pools a node can allocate from and
 * the canonical device array (upstream's GatherPools + buildPool, with the
 * v1.36.2 behaviour the conformance vectors pin).
 *
 * Candidate slices, in order: slices with spec.nodeName == node and no shared
 * counters (input order), then every other slice that is not node-local or
 * that carries sharedCounters (input order).  Counter-set slices are always
 * relevant, whatever node they name.  Per (driver, pool) only the highest
 * generation seen is kept; a pool whose relevant slice count differs from the
 * resourceSliceCount of its first slice is re-checked against all slices of
 * the cluster: a newer generation anywhere makes it obsolete (dropped),
 * missing slices make it incomplete (never allocated from; an error for
 * allocationMode All), otherwise the off-node slices are kept for counter
 * bookkeeping.  Pools sort by (driver, pool name) byte-wise, pools with a
 * device that has bindingConditions after all others; slices inside a pool by
 * name; devices keep their slice order.
 *
 * The slices come from the graph's own indexes (dg_slices_on_node,
 * dg_slices_shared, dg_slices_with_counters, and a pool's slice list for the
 * rescan): upstream's "shared" list is the graph's non-node-local slices plus
 * the slices with sharedCounters, merged in id (input) order.  The table
 * records which graph pools it looked at (ntab->gpools, relevant pools of any
 * state, obsolete ones included) so that a slice event invalidates exactly
 * the tables that depend on its pool (al_core.c).
 */
#include "al_int.h"

#include <stdlib.h>

/* ---- node matching ------------------------------------------------------------- */

typedef struct gctx {
    al_allocator *a;
    al_ntab *t;
    uint32_t node;           /* node name */
    const dg_kv *labels;
    uint32_t nlabels;
    bool node_ops_optional;  /* devices whose slice skips node operations may go here */
    de_err *e;
} gctx;

static void gctx_init(gctx *g, al_allocator *a, al_ntab *t, uint32_t node_name, de_err *e)
{
    memset(g, 0, sizeof *g);
    g->a = a;
    g->t = t;
    g->node = node_name;
    g->e = e;
    uint32_t nid = dg_node_find(a->g, node_name);
    const dg_node *n = nid == DG_NONE ? NULL : dg_node_get(a->g, nid);
    g->node_ops_optional = a->f_skipops && al_node_declares(a, n, a->s_optional_ops);
    if (n) {
        g->labels = n->meta.labels;
        g->nlabels = n->meta.nlabels;
    }
}

/* upstream NodeMatches: nodeName equality, allNodes, or the selector */
static de_rc node_matches(gctx *g, uint8_t mode, uint32_t node_name, const dg_nodesel *sel,
                          bool *match, de_err *e)
{
    switch (mode) {
    case DG_NS_NODE_NAME:
        *match = node_name && node_name == g->node;
        return DE_OK;
    case DG_NS_ALL_NODES:
        *match = true;
        return DE_OK;
    case DG_NS_NODE_SELECTOR:
        return dg_nodesel_match(g->a->g, sel, g->node, g->labels, g->nlabels, match, e);
    default:
        *match = false;
        return DE_OK;
    }
}

/* GatherPools' relevance of one slice for the node: 1 relevant, 0 not, -1
 * skipped (unknown node selection, or gated off); errors return DE_* with e
 * filled and the upstream prefix. */
static de_rc slice_relevant(gctx *g, const dg_slice *s, int *rel, de_err *e)
{
    al_allocator *a = g->a;
    *rel = -1;
    if (!a->f_part && (s->ns_mode == DG_NS_PER_DEVICE || s->ncountersets))
        return DE_OK;
    bool relevant = false;
    if (s->ncountersets) {
        relevant = true;
    } else if (s->ns_mode == DG_NS_NODE_NAME || s->ns_mode == DG_NS_ALL_NODES ||
               s->ns_mode == DG_NS_NODE_SELECTOR) {
        de_rc rc = node_matches(g, s->ns_mode, s->node_name, &s->node_selector, &relevant, e);
        if (rc != DE_OK) {
            de_err_prefix(e, "gather pool information: failed to perform node selection for slice %s",
                          al_str(a, s->meta.name));
            return rc;
        }
    } else if (s->ns_mode == DG_NS_PER_DEVICE) {
        for (uint32_t d = 0; d < s->ndevices && !relevant; d++) {
            const dg_device *dv = &s->devices[d];
            de_rc rc = node_matches(g, dv->ns_mode, dv->node_name, &dv->node_selector, &relevant, e);
            if (rc != DE_OK) {
                de_err_prefix(e, "gather pool information: failed to perform node selection for device %s in slice %s",
                              al_str(a, dv->name), al_str(a, s->meta.name));
                return rc;
            }
        }
    } else {
        return DE_OK;
    }
    *rel = relevant ? 1 : 0;
    return DE_OK;
}

bool al_slice_relevant(al_allocator *a, const dg_slice *s, uint32_t node_name)
{
    gctx g;
    de_err e;
    de_err_clear(&e);
    gctx_init(&g, a, NULL, node_name, &e);
    int rel;
    return slice_relevant(&g, s, &rel, &e) != DE_OK || rel > 0;
}

/* ---- pool building ------------------------------------------------------------- */

typedef struct pb {
    uint32_t driver, pool;
    uint32_t gpid;           /* graph pool id (DG_NONE: none) */
    int64_t gen;
    uint32_t *sl;
    uint32_t n, cap;
} pb;

static int cmp_u32(const void *x, const void *y)
{
    uint32_t p = *(const uint32_t *)x, q = *(const uint32_t *)y;
    return p < q ? -1 : p > q;
}

/* insertion sort for the few names of a pool, qsort past that */
static void sort_u32(uint32_t *v, uint32_t n)
{
    if (n > 32) {
        qsort(v, n, sizeof *v, cmp_u32);
        return;
    }
    for (uint32_t i = 1; i < n; i++) {
        uint32_t x = v[i], j = i;
        for (; j && v[j - 1] > x; j--)
            v[j] = v[j - 1];
        v[j] = x;
    }
}

static int cmp_ctx_slices(const void *x, const void *y, void *ctx)
{
    al_allocator *a = ctx;
    const dg_slice *p = dg_slice_get(a->g, *(const uint32_t *)x);
    const dg_slice *q = dg_slice_get(a->g, *(const uint32_t *)y);
    int c = de_intern_cmp(a->in, p->meta.name, q->meta.name);
    if (c)
        return c;
    return *(const uint32_t *)x < *(const uint32_t *)y ? -1 : 1;
}

static int cmp_pools(const void *x, const void *y, void *ctx)
{
    al_allocator *a = ctx;
    const al_pool *p = x, *q = y;
    int c = de_intern_cmp(a->in, p->driver, q->driver);
    if (c)
        return c;
    return de_intern_cmp(a->in, p->name, q->name);
}

/* pool lists live in a->bar, the build's scratch */
static void pb_add(al_allocator *a, pb *p, uint32_t sid)
{
    if (p->n == p->cap) {
        uint32_t cap = p->cap ? p->cap * 2 : 4;
        uint32_t *v = AL_NEW(a->bar, uint32_t, cap);
        if (p->n)
            memcpy(v, p->sl, p->n * sizeof *v);
        p->sl = v;
        p->cap = cap;
    }
    p->sl[p->n++] = sid;
}

/* The pool being built for slice sid's (driver, pool), NULL if none yet:
 * graph pools are one per (driver, pool), so their ids index the marks. */
static pb *pb_find(al_allocator *a, pb *pbs, uint32_t npb, uint32_t sid, const dg_slice *s)
{
    uint32_t gp = dg_slice_pool(a->g, sid);
    if (gp == DG_NONE) {
        for (uint32_t i = 0; i < npb; i++)
            if (pbs[i].driver == s->driver && pbs[i].pool == s->pool)
                return &pbs[i];
        return NULL;
    }
    if (gp < a->npbmark && (uint32_t)(a->pbmark[gp] >> 32) == a->pbseq)
        return &pbs[(uint32_t)a->pbmark[gp]];
    return NULL;
}

static void pb_mark(al_allocator *a, uint32_t sid, uint32_t idx)
{
    uint32_t gp = dg_slice_pool(a->g, sid);
    if (gp == DG_NONE)
        return;
    al_pbmark_reserve(a, gp + 1);
    a->pbmark[gp] = (uint64_t)a->pbseq << 32 | idx;
}

/* an invalid pool's reason, kept with the table (its arena is made here) */
static const char *reason(al_allocator *a, al_ntab *t, const char *fmt, uint32_t x, uint32_t y)
{
    de_arena *ar = al_ntab_ar(t);
    return y == UINT32_MAX ? de_arena_printf(ar, fmt, al_str(a, x))
                           : de_arena_printf(ar, fmt, al_str(a, x), al_str(a, y));
}

/* Validate counter consumption of the devices in `sl` against the pool's
 * counter sets.  Returns the reason or NULL. */
static const char *check_consumption(al_allocator *a, al_ntab *t, const dg_counterset **sets,
                                     uint32_t nsets, const uint32_t *sl, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        const dg_slice *s = dg_slice_get(a->g, sl[i]);
        for (uint32_t d = 0; d < s->ndevices; d++) {
            const dg_device *dev = &s->devices[d];
            for (uint32_t k = 0; k < dev->nconsumes; k++) {
                const dg_consumption *cc = &dev->consumes[k];
                const dg_counterset *cs = NULL;
                for (uint32_t j = 0; j < nsets; j++)
                    if (sets[j]->name == cc->counterset) {
                        cs = sets[j];
                        break;
                    }
                if (!cs)
                    return reason(a, t, "counter set %s not found", cc->counterset, UINT32_MAX);
                for (uint32_t m = 0; m < cc->ncounters; m++) {
                    bool found = false;
                    for (uint32_t j = 0; j < cs->ncounters; j++)
                        if (cs->counters[j].name == cc->counters[m].name) {
                            found = true;
                            break;
                        }
                    if (!found)
                        return reason(a, t, "counter %s not found in counter set %s",
                                      cc->counters[m].name, cs->name);
                }
            }
        }
    }
    return NULL;
}

/* Counter pools checked once per pool generation.  Every counter-set slice
 * is relevant to every node, so each node table holds every counter pool of
 * the cluster, and checking each device's consumesCounters against the
 * pool's sets in every table was O(nodes x pools x devices).  The check's
 * outcome depends only on the pool's slices (the graph bumps dg_pool.gen,
 * a graph-wide counter, whenever one of them changes) and on which of them
 * are relevant to the node (b->sl, which decides the counter sets and the
 * rescan); so a pass is remembered per graph pool with that generation and
 * an exact copy of b->sl.  Two slots per pool: the node that owns the
 * pool's device slices sees another b->sl than every other node.  Only
 * passes are remembered - a failing pool is rare and gets its reason
 * computed (and allocated in the table's arena) every time. */
#define AL_PCHECK_SLOTS 2

typedef struct al_pcheck {
    uint64_t gen; /* dg_pool.gen (never 0 for a live pool) */
    uint32_t n, cap; /* cap <= 2: the slices are inline */
    union {
        uint32_t in[2];
        uint32_t *v; /* malloc */
    } u;
} al_pcheck;

static const uint32_t *pcheck_sl(const al_pcheck *c)
{
    return c->cap > 2 ? c->u.v : c->u.in;
}

void al_pchecks_free(al_allocator *a)
{
    for (uint32_t i = 0; i < a->npchecks * AL_PCHECK_SLOTS; i++)
        if (a->pchecks[i].cap > 2)
            free(a->pchecks[i].u.v);
    free(a->pchecks);
    a->pchecks = NULL;
    a->npchecks = 0;
    free(a->pbmark);
    a->pbmark = NULL;
    a->npbmark = 0;
}

void al_pchecks_reserve(al_allocator *a, uint32_t n)
{
    if (n <= a->npchecks)
        return;
    a->pchecks = de_xrealloc(a->pchecks, (size_t)n * AL_PCHECK_SLOTS * sizeof *a->pchecks);
    memset(a->pchecks + (size_t)a->npchecks * AL_PCHECK_SLOTS, 0,
           (size_t)(n - a->npchecks) * AL_PCHECK_SLOTS * sizeof *a->pchecks);
    a->npchecks = n;
}

static al_pcheck *pcheck_slot(al_allocator *a, uint32_t gpid, const pb *b, uint64_t gen, bool *hit)
{
    *hit = false;
    if (gpid == DG_NONE || !gen)
        return NULL;
    if (gpid >= a->npchecks) {
        uint32_t n = dg_pool_id_limit(a->g);
        al_pchecks_reserve(a, n <= gpid ? gpid + 1 : n);
    }
    al_pcheck *slots = &a->pchecks[(size_t)gpid * AL_PCHECK_SLOTS], *victim = NULL;
    for (int i = 0; i < AL_PCHECK_SLOTS; i++) {
        al_pcheck *c = &slots[i];
        if (c->gen == gen && c->n == b->n && !memcmp(pcheck_sl(c), b->sl, b->n * sizeof *b->sl)) {
            *hit = true;
            return c;
        }
        if (!victim || c->gen < victim->gen)
            victim = c; /* empty or oldest */
    }
    return victim;
}

static void pcheck_remember(al_pcheck *c, const pb *b, uint64_t gen)
{
    if (!c)
        return;
    if (b->n > 2 && c->cap < b->n) {
        if (c->cap > 2)
            free(c->u.v);
        c->u.v = de_xmalloc(b->n * sizeof *c->u.v);
        c->cap = b->n;
    }
    memcpy(c->cap > 2 ? c->u.v : c->u.in, b->sl, b->n * sizeof *b->sl);
    c->n = b->n;
    c->gen = gen;
}

/* upstream buildPool; `all` is the rescan result (NULL when the relevant
 * slices were complete by themselves); gpid and gen name the graph pool
 * and its generation (pool_checked). */
static void build_pool(gctx *g, al_pool *p, pb *b, const uint32_t *all, uint32_t nall, uint32_t gpid,
                       uint64_t gen)
{
    al_allocator *a = g->a;
    de_arena *ar = a->bar; /* lists: copied into the table's block */
    al_ntab *keep = g->t;  /* reasons stay with the table */
    qsort_r(b->sl, b->n, sizeof *b->sl, cmp_ctx_slices, a);
    p->on_slices = AL_NEW(ar, uint32_t, b->n);
    p->cnt_slices = AL_NEW(ar, uint32_t, b->n);
    for (uint32_t i = 0; i < b->n; i++) {
        const dg_slice *s = dg_slice_get(a->g, b->sl[i]);
        if (a->f_part && s->ncountersets)
            p->cnt_slices[p->ncnt++] = b->sl[i];
        else
            p->on_slices[p->non++] = b->sl[i];
    }
    /* duplicate device names across the device slices: the names sorted
     * (the scratch arena), the first duplicate in slice order reported */
    uint32_t nnames = 0;
    for (uint32_t i = 0; i < p->non; i++)
        nnames += dg_slice_get(a->g, p->on_slices[i])->ndevices;
    uint32_t *names = AL_NEW(ar, uint32_t, nnames ? nnames : 1), m = 0;
    for (uint32_t i = 0; i < p->non; i++) {
        const dg_slice *s = dg_slice_get(a->g, p->on_slices[i]);
        for (uint32_t d = 0; d < s->ndevices; d++)
            names[m++] = s->devices[d].name;
    }
    sort_u32(names, nnames);
    bool dup = false;
    for (uint32_t i = 1; i < nnames && !dup; i++)
        dup = names[i] == names[i - 1];
    for (uint32_t i = 0; dup && i < p->non && p->state == AL_POOL_OK; i++) {
        /* rare: find the first name seen twice, as a scan in order does */
        const dg_slice *s = dg_slice_get(a->g, p->on_slices[i]);
        for (uint32_t d = 0; d < s->ndevices; d++) {
            bool seen = false;
            for (uint32_t j = 0; j <= i && !seen; j++) {
                const dg_slice *o = dg_slice_get(a->g, p->on_slices[j]);
                for (uint32_t k = 0; k < (j < i ? o->ndevices : d) && !seen; k++)
                    seen = o->devices[k].name == s->devices[d].name;
            }
            if (seen) {
                p->state = AL_POOL_INVALID;
                p->invalid_reason = reason(a, keep, "duplicate device name %s", s->devices[d].name,
                                           UINT32_MAX);
                break;
            }
        }
    }
    if (p->state != AL_POOL_OK || !a->f_part)
        return;
    /* counter sets, unique by name within the pool */
    uint32_t nsets = 0;
    for (uint32_t i = 0; i < p->ncnt; i++)
        nsets += dg_slice_get(a->g, p->cnt_slices[i])->ncountersets;
    const dg_counterset **sets = AL_NEW(ar, const dg_counterset *, nsets);
    nsets = 0;
    for (uint32_t i = 0; i < p->ncnt; i++) {
        const dg_slice *s = dg_slice_get(a->g, p->cnt_slices[i]);
        for (uint32_t k = 0; k < s->ncountersets; k++) {
            for (uint32_t j = 0; j < nsets; j++)
                if (sets[j]->name == s->countersets[k].name) {
                    p->state = AL_POOL_INVALID;
                    p->invalid_reason = reason(a, keep, "duplicate counter set name %s",
                                               s->countersets[k].name, UINT32_MAX);
                    return;
                }
            sets[nsets++] = &s->countersets[k];
        }
    }
    /* b->sl is sorted by name here, so the same relevant slices compare equal */
    bool passed;
    al_pcheck *slot = pcheck_slot(a, gpid, b, gen, &passed);
    if (!passed)
        a->stats.counter_checks++;
    const char *why = passed ? NULL : check_consumption(a, keep, sets, nsets, b->sl, b->n);
    if (why) {
        p->state = AL_POOL_INVALID;
        p->invalid_reason = why;
        return;
    }
    if (!all || nall == b->n) {
        if (!passed)
            pcheck_remember(slot, b, gen);
        return;
    }
    /* slices of the pool that do not target the node: counter bookkeeping */
    p->off_slices = AL_NEW(ar, uint32_t, nall);
    for (uint32_t i = 0; i < nall; i++) {
        const dg_slice *s = dg_slice_get(a->g, all[i]);
        bool seen = false;
        for (uint32_t j = 0; j < b->n && !seen; j++)
            seen = dg_slice_get(a->g, b->sl[j])->meta.name == s->meta.name;
        if (!seen)
            p->off_slices[p->noff++] = all[i];
    }
    why = passed ? NULL : check_consumption(a, keep, sets, nsets, p->off_slices, p->noff);
    if (why) {
        p->state = AL_POOL_INVALID;
        p->invalid_reason = why;
        p->noff = 0;
    } else if (!passed) {
        pcheck_remember(slot, b, gen);
    }
}

static bool pool_has_binding(al_allocator *a, const al_pool *p)
{
    if (p->state != AL_POOL_OK)
        return false;
    for (uint32_t i = 0; i < p->non; i++) {
        const dg_slice *s = dg_slice_get(a->g, p->on_slices[i]);
        for (uint32_t d = 0; d < s->ndevices; d++)
            if (s->devices[d].nbinding_conditions)
                return true;
    }
    return false;
}

/* A relevant slice into its pool: only the highest generation is kept. */
static void pb_take(al_allocator *a, pb *p, uint32_t sid, const dg_slice *s)
{
    if (p->n && s->generation < p->gen)
        return;
    if (p->n && s->generation > p->gen)
        p->n = 0;
    p->gen = s->generation;
    pb_add(a, p, sid);
}

/* The pool as the node sees it from its relevant slices b: complete,
 * incomplete or invalid in *p; false when obsolete (a newer generation
 * elsewhere in the pool). */
static bool pool_view(gctx *g, pb *b, al_pool *p)
{
    al_allocator *a = g->a;
    const dg_slice *first = dg_slice_get(a->g, b->sl[0]);
    uint32_t gpid = b->gpid;
    memset(p, 0, sizeof *p);
    p->driver = b->driver;
    p->name = b->pool;
    dg_pool gp;
    bool have_gp = gpid != DG_NONE && dg_pool_get(a->g, gpid, &gp);
    uint64_t pgen = have_gp ? gp.gen : 0;
    if ((int64_t)b->n == first->slice_count) {
        build_pool(g, p, b, NULL, 0, gpid, pgen);
        return true;
    }
    /* checkSlicesInPool over the pool's slices, in input (id) order */
    uint32_t nall = 0, *all = NULL;
    if (have_gp) {
        all = AL_NEW(a->bar, uint32_t, gp.nslices ? gp.nslices : 1);
        memcpy(all, gp.slices, gp.nslices * sizeof *all);
        sort_u32(all, gp.nslices);
        for (uint32_t k = 0; k < gp.nslices; k++) {
            const dg_slice *s = dg_slice_get(a->g, all[k]);
            if (s->generation == first->generation)
                all[nall++] = all[k];
            else if (s->generation > first->generation)
                return false;
        }
    }
    if ((int64_t)nall != first->slice_count)
        p->state = AL_POOL_INCOMPLETE;
    else
        build_pool(g, p, b, all, nall, gpid, pgen);
    return true;
}

int al_foreign_view(al_allocator *a, al_ntab *holder, uint32_t gpid, al_pool *out)
{
    dg_pool gp;
    if (!a->f_part || !dg_pool_get(a->g, gpid, &gp))
        return -1;
    de_arena_reset(a->bar);
    uint32_t *c = AL_NEW(a->bar, uint32_t, gp.nslices ? gp.nslices : 1), n = 0;
    for (uint32_t k = 0; k < gp.nslices; k++)
        if (dg_slice_get(a->g, gp.slices[k])->ncountersets)
            c[n++] = gp.slices[k];
    if (!n)
        return -1;
    sort_u32(c, n); /* candidate order: dg_slices_with_counters is by id */
    pb b = {0};
    b.gpid = gpid;
    for (uint32_t k = 0; k < n; k++) {
        const dg_slice *s = dg_slice_get(a->g, c[k]);
        b.driver = s->driver;
        b.pool = s->pool;
        pb_take(a, &b, c[k], s);
    }
    gctx g;
    gctx_init(&g, a, holder, 0, NULL);
    return pool_view(&g, &b, out) ? 1 : 0;
}

/* ---- devices --------------------------------------------------------------------- */

static void fill_flags(gctx *g, al_dev *dv);

static void fill_device(gctx *g, al_dev *dv, uint32_t sid, uint32_t idx, uint32_t pool)
{
    al_allocator *a = g->a;
    const dg_slice *s = dg_slice_get(a->g, sid);
    const dg_device *d = &s->devices[idx];
    dv->devid = dg_device_id(a->g, sid, idx);
    dv->slice = sid;
    dv->index = idx;
    dv->pool = pool;
    dv->name = d->name;
    dv->d = d;
    dv->s = s;
    dv->gpool = dg_slice_pool(a->g, sid);
    fill_flags(g, dv);
}

void al_fill_device(al_allocator *a, al_ntab *t, al_dev *dv)
{
    gctx g;
    gctx_init(&g, a, t, t->node_name, NULL);
    fill_flags(&g, dv);
    size_t i = (size_t)(dv - t->devs);
    if (dv->flags & AL_DF_STATIC)
        de_bit_clr(t->plain, i);
    else
        de_bit_set(t->plain, i);
}

/* Everything of a table entry that can change while its slice stays: taints
 * (DeviceTaintRules), policy groups and the generation (derived attributes). */
static void fill_flags(gctx *g, al_dev *dv)
{
    al_allocator *a = g->a;
    const dg_slice *s = dv->s;
    const dg_device *d = dv->d;
    dv->flags = 0;
    dg_devref ref;
    dv->gen = dv->devid != DG_NONE && dg_device_ref(a->g, dv->devid, &ref) ? ref.gen : 0;
    if (d->nconsumes)
        dv->flags |= AL_DF_COUNTERS;
    if (s->ns_mode == DG_NS_NODE_NAME && s->node_name == g->t->node_name)
        dv->flags |= AL_DF_OWN;
    if (a->f_cc && d->allow_multi == 1)
        dv->flags |= AL_DF_MULTI;
    if (d->nbinding_conditions)
        dv->flags |= AL_DF_BINDING;
    if (d->nbinding_conditions || d->nbinding_failure_conditions)
        dv->flags |= AL_DF_BINDLISTS;
    if (d->ncaps)
        dv->flags |= AL_DF_CAPS;
    /* KEP-5945: a slice with skipNodeOperations needs the gate and a node
     * that declares DRAOptionalNodeOperations (upstream's allocateDevice) */
    if (s->nskip_node_ops && !g->node_ops_optional)
        dv->flags |= AL_DF_NODEOPS;
    for (uint32_t k = 0; k < d->nconsumes; k++)
        if (d->consumes[k].ngroups)
            dv->flags |= AL_DF_CGROUPS;
    const dg_taint *tt = NULL;
    uint32_t nt = 0;
    if (dv->devid != DG_NONE)
        dg_device_taints(a->g, dv->devid, &tt, &nt);
    else {
        tt = d->taints;
        nt = d->ntaints;
    }
    bool filter = false;
    for (uint32_t k = 0; k < nt; k++)
        if (tt[k].rule && !a->f_taint_rules)
            filter = true;
    if (filter) {
        dg_taint *c = AL_NEW(al_ntab_ar(g->t), dg_taint, nt);
        uint32_t m = 0;
        for (uint32_t k = 0; k < nt; k++)
            if (!tt[k].rule)
                c[m++] = tt[k];
        tt = c;
        nt = m;
    }
    dv->taints = tt;
    dv->ntaints = nt;
    for (uint32_t k = 0; k < nt; k++)
        if (tt[k].effect == DG_EFFECT_NO_SCHEDULE || tt[k].effect == DG_EFFECT_NO_EXECUTE)
            dv->flags |= AL_DF_TAINTED;
    dv->node_ok = 1;
    if (s->ns_mode == DG_NS_PER_DEVICE) {
        dv->flags |= AL_DF_PERDEV;
        bool m = false;
        de_err e;
        de_err_clear(&e);
        if (node_matches(g, d->ns_mode, d->node_name, &d->node_selector, &m, &e) != DE_OK)
            dv->node_ok = -1;
        else
            dv->node_ok = m ? 1 : 0;
    }
    dv->pscope = dv->npgroups = 0;
    dv->pgroups = NULL;
    if (a->has_hooks && a->hooks.groups && dv->devid != DG_NONE) {
        al_groups gr = {0};
        a->hooks.groups(a->hooks.ctx, a->g, dv->devid, &gr);
        dv->pscope = gr.scope;
        dv->npgroups = gr.ngroups;
        dv->pgroups = gr.groups;
        /* a groups policy failed closed: its compatibility is unknown, so
         * the search never takes it (al_search.c: allocate_device) */
        if (gr.blocked)
            dv->flags |= AL_DF_BLOCKED;
    }
    if (s->ns_mode != DG_NS_NODE_NAME && !(s->ns_mode == DG_NS_PER_DEVICE &&
                                          d->ns_mode == DG_NS_NODE_NAME))
        g->t->any_shared_dev = true;
    if (d->nconsumes)
        g->t->any_counters = true;
}

/* ---- the table ----------------------------------------------------------------------- */

/* Round up to 16 bytes: the block's parts keep the slab's alignment. */
static size_t r16(size_t n)
{
    return (n + 15) & ~(size_t)15;
}

/* The table built in a->bar moves into one exact-size slab block: pools
 * with their slice lists, devices, the device hash, the usage bits and the
 * graph pools it depends on. */
static void freeze(al_allocator *a, al_ntab *t, const uint32_t *gpools, uint32_t ngpools)
{
    size_t nlists = ngpools;
    for (uint32_t i = 0; i < t->npools; i++)
        nlists += (size_t)t->pools[i].non + t->pools[i].ncnt + t->pools[i].noff;
    uint32_t slots = 4;
    while (slots < t->ndev + t->ndev / 2 + 1)
        slots *= 2;
    size_t sz_pools = r16(t->npools * sizeof(al_pool)), sz_devs = r16(t->ndev * sizeof(al_dev));
    size_t sz_hash = r16(slots * sizeof(uint32_t)), sz_bits = 3 * r16(t->nwords * sizeof(uint64_t));
    size_t sz = sz_pools + sz_devs + sz_hash + sz_bits + r16(nlists * sizeof(uint32_t));
    unsigned char *m = al_tmem_alloc(a, sz);
    t->mem = m;
    t->memsz = sz;
    al_pool *pools = (al_pool *)m;
    memcpy(pools, t->pools, t->npools * sizeof *pools);
    t->pools = pools;
    m += sz_pools;
    al_dev *devs = (al_dev *)m;
    memcpy(devs, t->devs, t->ndev * sizeof *devs);
    t->devs = devs;
    m += sz_devs;
    t->dhash = (uint32_t *)m;
    t->dmask = slots - 1;
    for (uint32_t i = 0; i < t->ndev; i++) {
        uint32_t h = (uint32_t)de_hash_u64(de_pack2(devs[i].gpool, devs[i].name)) & t->dmask;
        while (t->dhash[h])
            h = (h + 1) & t->dmask;
        t->dhash[h] = i + 1;
    }
    m += sz_hash;
    t->inuse = (uint64_t *)m;
    t->allocated = (uint64_t *)(m + sz_bits / 3);
    t->plain = (uint64_t *)(m + 2 * (sz_bits / 3));
    for (uint32_t i = 0; i < t->ndev; i++)
        if (!(devs[i].flags & AL_DF_STATIC))
            de_bit_set(t->plain, i);
    m += sz_bits;
    uint32_t *l = (uint32_t *)m;
    for (uint32_t i = 0; i < t->npools; i++) {
        al_pool *p = &pools[i];
        uint32_t *const src[3] = {p->on_slices, p->cnt_slices, p->off_slices};
        uint32_t **const dst[3] = {&p->on_slices, &p->cnt_slices, &p->off_slices};
        const uint32_t n[3] = {p->non, p->ncnt, p->noff};
        for (int k = 0; k < 3; k++) {
            if (n[k])
                memcpy(l, src[k], n[k] * sizeof *l);
            *dst[k] = n[k] ? l : NULL;
            l += n[k];
        }
    }
    if (ngpools)
        memcpy(l, gpools, ngpools * sizeof *l);
    t->gpools = l;
    t->ngpools = ngpools;
}

de_rc al_ntab_build(al_allocator *a, al_ntab *t, de_err *e)
{
    de_arena_reset(a->bar);
    t->npools = t->ndev = t->nwords = 0;
    t->pools = NULL;
    t->devs = NULL;
    t->any_invalid = t->any_incomplete = t->any_shared_dev = t->any_counters = false;
    t->ncsets = 0;
    t->ngpools = 0;
    uint32_t *gpools = NULL, ngpools = 0;
    gctx g;
    gctx_init(&g, a, t, t->node_name, e);
    t->node_id = dg_node_find(a->g, t->node_name);
    /* candidate order (upstream's slicesOnNode ++ slicesShared): node-local
     * slices without counters, then the slices that are not node-local or
     * carry counters, each in input (id) order.  Counter-set slices are
     * relevant to every node, but a counter pool none of whose device
     * slices the node sees looks the same from every node: that view is
     * the allocator's, built once per pool generation (al_fpools.c), and a
     * table lists only the pools its node sees devices of - with their
     * counter slices merged back in candidate order. */
    const uint32_t *on, *sh;
    uint32_t non, nsh;
    dg_slices_on_node(a->g, t->node_name, &on, &non);
    dg_slices_shared(a->g, &sh, &nsh);
    uint32_t *r1 = AL_NEW(a->bar, uint32_t, non + 1), *r2 = AL_NEW(a->bar, uint32_t, nsh + 1);
    uint32_t nr1 = 0, nr2 = 0;
    /* pools seen: a->pbmark[graph pool id] = build number << 32 | index */
    if (++a->pbseq == 0) {
        memset(a->pbmark, 0, a->npbmark * sizeof *a->pbmark);
        a->pbseq = 1;
    }
    pb *pbs = NULL;
    uint32_t npb = 0, cappb = 0;
    de_rc rc = DE_OK;
    for (int part = 0; part < 2; part++) {
        const uint32_t *l = part ? sh : on;
        uint32_t n = part ? nsh : non;
        for (uint32_t i = 0; i < n; i++) {
            const dg_slice *s = dg_slice_get(a->g, l[i]);
            if (s->ncountersets)
                continue; /* with its pool, below */
            int rel;
            rc = slice_relevant(&g, s, &rel, e);
            if (rc != DE_OK)
                goto out;
            if (rel <= 0)
                continue;
            if (part)
                r2[nr2++] = l[i];
            else
                r1[nr1++] = l[i];
            if (!pb_find(a, pbs, npb, l[i], s)) {
                pbs = al_grow(a->bar, pbs, npb, &cappb, sizeof *pbs);
                pbs[npb].driver = s->driver;
                pbs[npb].pool = s->pool;
                pbs[npb].gpid = dg_slice_pool(a->g, l[i]);
                pb_mark(a, l[i], npb++);
            }
        }
    }
    /* the counter slices of those pools, in id order (every one is relevant) */
    uint32_t *r3 = NULL, nr3 = 0, capr3 = 0;
    for (uint32_t i = 0; a->f_part && i < npb; i++) {
        dg_pool gp;
        if (pbs[i].gpid == DG_NONE || !dg_pool_get(a->g, pbs[i].gpid, &gp))
            continue;
        for (uint32_t k = 0; k < gp.nslices; k++) {
            if (!dg_slice_get(a->g, gp.slices[k])->ncountersets)
                continue;
            r3 = al_grow(a->bar, r3, nr3, &capr3, sizeof *r3);
            r3[nr3++] = gp.slices[k];
        }
    }
    if (nr3 > 1)
        sort_u32(r3, nr3);
    for (uint32_t i = 0, j = 0, k = 0; i < nr1 || j < nr2 || k < nr3;) {
        uint32_t sid;
        if (i < nr1)
            sid = r1[i++];
        else if (k == nr3 || (j < nr2 && r2[j] < r3[k]))
            sid = r2[j++];
        else
            sid = r3[k++];
        const dg_slice *s = dg_slice_get(a->g, sid);
        pb_take(a, pb_find(a, pbs, npb, sid, s), sid, s);
    }
    /* per pool: complete, incomplete, obsolete, invalid */
    t->pools = AL_NEW(a->bar, al_pool, npb ? npb : 1);
    gpools = AL_NEW(a->bar, uint32_t, npb ? npb : 1);
    for (uint32_t i = 0; i < npb; i++) {
        pb *b = &pbs[i];
        gpools[ngpools++] = b->gpid;
        al_pool *p = &t->pools[t->npools];
        if (!pool_view(&g, b, p))
            continue; /* obsolete */
        p->binding = pool_has_binding(a, p);
        if (p->state == AL_POOL_INVALID)
            t->any_invalid = true;
        if (p->state == AL_POOL_INCOMPLETE)
            t->any_incomplete = true;
        t->npools++;
    }
    /* order: (driver, pool) with binding-condition pools last */
    qsort_r(t->pools, t->npools, sizeof *t->pools, cmp_pools, a);
    {
        al_pool *tmp = AL_NEW(a->bar, al_pool, t->npools ? t->npools : 1);
        uint32_t m = 0;
        for (int pass = 0; pass < 2; pass++)
            for (uint32_t i = 0; i < t->npools; i++)
                if (t->pools[i].binding == (pass == 1))
                    tmp[m++] = t->pools[i];
        t->pools = tmp;
    }
    /* flatten the devices */
    uint32_t ndev = 0;
    for (uint32_t i = 0; i < t->npools; i++) {
        al_pool *p = &t->pools[i];
        if (p->state != AL_POOL_OK)
            continue;
        for (uint32_t k = 0; k < p->non; k++)
            ndev += dg_slice_get(a->g, p->on_slices[k])->ndevices;
    }
    t->devs = AL_NEW(a->bar, al_dev, ndev ? ndev : 1);
    for (uint32_t i = 0; i < t->npools; i++) {
        al_pool *p = &t->pools[i];
        p->dev_first = t->ndev;
        if (p->state == AL_POOL_OK)
            for (uint32_t k = 0; k < p->non; k++) {
                const dg_slice *s = dg_slice_get(a->g, p->on_slices[k]);
                for (uint32_t d = 0; d < s->ndevices; d++)
                    fill_device(&g, &t->devs[t->ndev++], p->on_slices[k], d, i);
            }
        p->ndev = t->ndev - p->dev_first;
    }
    t->nwords = DE_BITS_WORDS(t->ndev ? t->ndev : 1);
    freeze(a, t, gpools, ngpools);
    al_ntab_foreign(a, t);
out:
    return rc;
}

void al_pbmark_reserve(al_allocator *a, uint32_t npools)
{
    if (npools <= a->npbmark)
        return;
    uint32_t cap = a->npbmark ? a->npbmark : 64;
    while (cap < npools)
        cap *= 2;
    a->pbmark = de_xrealloc(a->pbmark, cap * sizeof *a->pbmark);
    memset(a->pbmark + a->npbmark, 0, (cap - a->npbmark) * sizeof *a->pbmark);
    a->npbmark = cap;
}
