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
    int64_t gen;
    uint32_t *sl;
    uint32_t n, cap;
} pb;

static int cmp_u32(const void *x, const void *y)
{
    uint32_t p = *(const uint32_t *)x, q = *(const uint32_t *)y;
    return p < q ? -1 : p > q;
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

static void pb_add(pb *p, uint32_t sid)
{
    if (p->n == p->cap) {
        p->cap = p->cap ? p->cap * 2 : 4;
        p->sl = de_xrealloc(p->sl, p->cap * sizeof *p->sl);
    }
    p->sl[p->n++] = sid;
}

static const char *reason(al_allocator *a, de_arena *ar, const char *fmt, uint32_t x, uint32_t y)
{
    return y == UINT32_MAX ? de_arena_printf(ar, fmt, al_str(a, x))
                           : de_arena_printf(ar, fmt, al_str(a, x), al_str(a, y));
}

/* Validate counter consumption of the devices in `sl` against the pool's
 * counter sets.  Returns the reason or NULL. */
static const char *check_consumption(al_allocator *a, de_arena *ar, const dg_counterset **sets,
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
                    return reason(a, ar, "counter set %s not found", cc->counterset, UINT32_MAX);
                for (uint32_t m = 0; m < cc->ncounters; m++) {
                    bool found = false;
                    for (uint32_t j = 0; j < cs->ncounters; j++)
                        if (cs->counters[j].name == cc->counters[m].name) {
                            found = true;
                            break;
                        }
                    if (!found)
                        return reason(a, ar, "counter %s not found in counter set %s",
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
    uint32_t *sl;
    uint32_t n, cap;
} al_pcheck;

void al_pchecks_free(al_allocator *a)
{
    for (uint32_t i = 0; i < a->npchecks * AL_PCHECK_SLOTS; i++)
        free(a->pchecks[i].sl);
    free(a->pchecks);
    a->pchecks = NULL;
    a->npchecks = 0;
}

static al_pcheck *pcheck_slot(al_allocator *a, uint32_t gpid, const pb *b, uint64_t gen, bool *hit)
{
    *hit = false;
    if (gpid == DG_NONE || !gen)
        return NULL;
    if (gpid >= a->npchecks) {
        uint32_t n = dg_pool_id_limit(a->g);
        if (n <= gpid)
            n = gpid + 1;
        a->pchecks = de_xrealloc(a->pchecks, (size_t)n * AL_PCHECK_SLOTS * sizeof *a->pchecks);
        memset(a->pchecks + (size_t)a->npchecks * AL_PCHECK_SLOTS, 0,
               (size_t)(n - a->npchecks) * AL_PCHECK_SLOTS * sizeof *a->pchecks);
        a->npchecks = n;
    }
    al_pcheck *slots = &a->pchecks[(size_t)gpid * AL_PCHECK_SLOTS], *victim = NULL;
    for (int i = 0; i < AL_PCHECK_SLOTS; i++) {
        al_pcheck *c = &slots[i];
        if (c->gen == gen && c->n == b->n && !memcmp(c->sl, b->sl, b->n * sizeof *b->sl)) {
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
    if (c->cap < b->n) {
        c->cap = b->n;
        c->sl = de_xrealloc(c->sl, c->cap * sizeof *c->sl);
    }
    memcpy(c->sl, b->sl, b->n * sizeof *b->sl);
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
    de_arena *ar = g->t->ar;
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
    /* duplicate device names across the device slices */
    de_map names;
    de_map_init(&names);
    for (uint32_t i = 0; i < p->non && p->state == AL_POOL_OK; i++) {
        const dg_slice *s = dg_slice_get(a->g, p->on_slices[i]);
        for (uint32_t d = 0; d < s->ndevices; d++) {
            uint64_t one;
            if (de_map_get(&names, s->devices[d].name, &one)) {
                p->state = AL_POOL_INVALID;
                p->invalid_reason = reason(a, ar, "duplicate device name %s", s->devices[d].name,
                                           UINT32_MAX);
                break;
            }
            de_map_put(&names, s->devices[d].name, 1);
        }
    }
    de_map_destroy(&names);
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
                    p->invalid_reason = reason(a, ar, "duplicate counter set name %s",
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
    const char *why = passed ? NULL : check_consumption(a, ar, sets, nsets, b->sl, b->n);
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
    why = passed ? NULL : check_consumption(a, ar, sets, nsets, p->off_slices, p->noff);
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
        dg_taint *c = AL_NEW(g->t->ar, dg_taint, nt);
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

de_rc al_ntab_build(al_allocator *a, al_ntab *t, de_err *e)
{
    if (!t->ar)
        t->ar = de_arena_new_sized(0, 4096);
    else
        de_arena_reset(t->ar);
    t->npools = t->ndev = t->nwords = 0;
    t->pools = NULL;
    t->devs = NULL;
    t->any_invalid = t->any_incomplete = t->any_shared_dev = t->any_counters = false;
    t->ncsets = 0;
    t->ngpools = 0;
    gctx g;
    gctx_init(&g, a, t, t->node_name, e);
    t->node_id = dg_node_find(a->g, t->node_name);
    /* candidate order (upstream's slicesOnNode ++ slicesShared): node-local
     * slices without counters, then the slices that are not node-local or
     * carry counters, each in input order */
    const uint32_t *on, *sh, *cn;
    uint32_t non, nsh, ncn;
    dg_slices_on_node(a->g, t->node_name, &on, &non);
    dg_slices_shared(a->g, &sh, &nsh);
    dg_slices_with_counters(a->g, &cn, &ncn);
    uint32_t *cand = de_xmalloc((non + nsh + ncn + 1) * sizeof *cand);
    uint32_t ncand = 0;
    for (uint32_t i = 0; i < non; i++)
        if (!dg_slice_get(a->g, on[i])->ncountersets)
            cand[ncand++] = on[i];
    for (uint32_t i = 0, j = 0; i < nsh || j < ncn;) {
        if (j == ncn || (i < nsh && sh[i] < cn[j]))
            cand[ncand++] = sh[i++];
        else if (i == nsh || cn[j] < sh[i])
            cand[ncand++] = cn[j++];
        else {
            cand[ncand++] = sh[i++];
            j++;
        }
    }
    de_map idx;
    de_map_init(&idx);
    pb *pbs = NULL;
    uint32_t npb = 0, cappb = 0;
    de_rc rc = DE_OK;
    for (uint32_t i = 0; i < ncand; i++) {
        const dg_slice *s = dg_slice_get(a->g, cand[i]);
        int rel;
        rc = slice_relevant(&g, s, &rel, e);
        if (rc != DE_OK)
            goto out;
        if (rel <= 0)
            continue;
        uint64_t key = de_pack2(s->driver, s->pool), v;
        pb *p;
        if (de_map_get(&idx, key, &v)) {
            p = &pbs[v];
        } else {
            if (npb == cappb) {
                cappb = cappb ? cappb * 2 : 16;
                pbs = de_xrealloc(pbs, cappb * sizeof *pbs);
            }
            p = &pbs[npb];
            memset(p, 0, sizeof *p);
            p->driver = s->driver;
            p->pool = s->pool;
            p->gen = s->generation;
            de_map_put(&idx, key, npb++);
        }
        if (p->n && s->generation < p->gen)
            continue;
        if (p->n && s->generation > p->gen)
            p->n = 0;
        p->gen = s->generation;
        pb_add(p, cand[i]);
    }
    /* per pool: complete, incomplete, obsolete, invalid */
    t->pools = AL_NEW(t->ar, al_pool, npb ? npb : 1);
    free(t->gpools);
    t->gpools = de_xmalloc((npb ? npb : 1) * sizeof *t->gpools);
    uint32_t *all = NULL, capall = 0;
    for (uint32_t i = 0; i < npb; i++) {
        pb *b = &pbs[i];
        const dg_slice *first = dg_slice_get(a->g, b->sl[0]);
        uint32_t gpid = dg_slice_pool(a->g, b->sl[0]);
        t->gpools[t->ngpools++] = gpid;
        al_pool *p = &t->pools[t->npools];
        memset(p, 0, sizeof *p);
        p->driver = b->driver;
        p->name = b->pool;
        dg_pool gp;
        bool have_gp = dg_pool_get(a->g, gpid, &gp);
        uint64_t pgen = have_gp ? gp.gen : 0;
        if ((int64_t)b->n == first->slice_count) {
            build_pool(&g, p, b, NULL, 0, gpid, pgen);
        } else {
            /* checkSlicesInPool over the pool's slices, in input (id) order */
            uint32_t nall = 0;
            bool obsolete = false;
            if (have_gp) {
                if (gp.nslices > capall) {
                    capall = gp.nslices;
                    all = de_xrealloc(all, capall * sizeof *all);
                }
                memcpy(all, gp.slices, gp.nslices * sizeof *all);
                qsort(all, gp.nslices, sizeof *all, cmp_u32);
                for (uint32_t k = 0; k < gp.nslices && !obsolete; k++) {
                    const dg_slice *s = dg_slice_get(a->g, all[k]);
                    if (s->generation == first->generation)
                        all[nall++] = all[k];
                    else if (s->generation > first->generation)
                        obsolete = true;
                }
            }
            if (obsolete)
                continue;
            if ((int64_t)nall != first->slice_count)
                p->state = AL_POOL_INCOMPLETE;
            else
                build_pool(&g, p, b, all, nall, gpid, pgen);
        }
        p->binding = pool_has_binding(a, p);
        if (p->state == AL_POOL_INVALID)
            t->any_invalid = true;
        if (p->state == AL_POOL_INCOMPLETE)
            t->any_incomplete = true;
        t->npools++;
    }
    free(all);
    /* order: (driver, pool) with binding-condition pools last */
    qsort_r(t->pools, t->npools, sizeof *t->pools, cmp_pools, a);
    {
        al_pool *tmp = AL_NEW(t->ar, al_pool, t->npools ? t->npools : 1);
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
    t->devs = AL_NEW(t->ar, al_dev, ndev ? ndev : 1);
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
    de_map_clear(&t->devidx);
    for (uint32_t i = 0; i < t->ndev; i++)
        de_map_put(&t->devidx, de_pack2(t->devs[i].gpool, t->devs[i].name), i + 1);
out:
    for (uint32_t i = 0; i < npb; i++)
        free(pbs[i].sl);
    free(pbs);
    free(cand);
    de_map_destroy(&idx);
    return rc;
}
