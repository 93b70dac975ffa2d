/*
 * graph.c - policy facts in the device graph, and the allocator hooks.
 *
 * Preparing a set computes derive/groups for every device of the graph into
 * the set's own cache without touching the graph, in bounded slices of work
 * so a reload can be prepared between scheduling cycles while the old set
 * keeps serving.  Publishing writes every cached fact into the graph
 * (dg_device_set_derived, which copies and only bumps a device's generation
 * when the facts really change).  A slot remembers the device generation it
 * was computed from and the one right after publishing, so syncing after
 * graph changes recomputes exactly the devices that changed.
 *
 * The allocator hooks (al.h) read the cache: groups per device (arrays that
 * live as long as the set, interned by group mask), score per candidate
 * node (node view + the devices of the placement, derived attributes
 * visible), admit per claim generation (cached).
 */
#include "../alloc/al.h"
#include "../model/dg.h"
#include "facts.h"
#include "polgraph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- computing and publishing ------------------------------------------------- */

static void slot_groups(pol_set *s, pol_slot *sl)
{
    sl->groups = NULL;
    sl->ngroups = 0;
    if (sl->f.nscopes)
        sl->groups = pol_facts_group_ids(s, sl->f.scopes[0].groups, &sl->ngroups);
}

/* Compute one device into its slot (from the graph's current view). */
static void compute_one(pol_set *s, const dg_graph *g, uint32_t id, pol_prepare_stats *st)
{
    pol_slot *sl = pol_facts_slot(s, id);
    de_devview v;
    dg_device_view(g, id, &v);
    pol_devfacts nf;
    pol_failure fail = {0};
    uint32_t nfail = pol_set_compute(s, &v, sl->valid ? &sl->f : NULL, &nf, &fail);
    pol_devfacts_free(&sl->f);
    sl->f = nf;
    sl->valid = true;
    sl->published = false;
    sl->src_gen = v.gen;
    slot_groups(s, sl);
    if (st) {
        st->computed++;
        st->failures += nfail;
        if (nfail && st->first.reason == POL_R_NONE)
            st->first = fail;
    }
}

static bool device_live(const dg_graph *g, uint32_t id, uint32_t *gen)
{
    dg_devref r;
    if (!dg_device_ref(g, id, &r))
        return false;
    de_devview v;
    dg_device_view(g, id, &v);
    *gen = v.gen;
    return true;
}

de_rc pol_set_prepare(pol_set *s, const dg_graph *g, uint64_t budget_ns, bool *done, pol_prepare_stats *st)
{
    pol_facts *f = pol_facts_of(s);
    uint32_t limit = dg_device_id_limit(g);
    uint64_t t0 = de_now_ns();
    if (!(s->hooks & (POL_HOOK_DERIVE | POL_HOOK_GROUPS))) {
        f->cursor = limit;
        *done = true;
        return DE_OK;
    }
    if (f->cursor == 0)
        pol_trip_reset(s);
    s->preparing = true;
    while (f->cursor < limit) {
        uint32_t id = f->cursor++;
        uint32_t gen;
        if (!device_live(g, id, &gen)) {
            if (id < f->cap)
                pol_slot_clear(&f->slots[id]);
            continue;
        }
        const pol_slot *sl = pol_facts_peek(s, id);
        if (sl && (sl->src_gen == gen || (sl->published && sl->pub_gen == gen)))
            continue;
        compute_one(s, g, id, st);
        if (budget_ns && (f->cursor & 63) == 0 && de_now_ns() - t0 > budget_ns)
            break;
    }
    s->preparing = false;
    *done = f->cursor >= limit;
    return DE_OK;
}

void pol_set_prepare_restart(pol_set *s)
{
    pol_facts_of(s)->cursor = 0;
}

/* Publish every fact into the graph.  Devices the set has nothing for get
 * their derived attributes cleared (they may hold the previous set's). */
uint32_t pol_set_publish(pol_set *s, dg_graph *g, pol_prepare_stats *st)
{
    pol_facts *f = pol_facts_of(s);
    uint32_t limit = dg_device_id_limit(g), changed = 0;
    for (uint32_t id = 0; id < limit; id++) {
        uint32_t gen;
        if (!device_live(g, id, &gen))
            continue;
        pol_slot *sl = id < f->cap ? &f->slots[id] : NULL;
        if (sl && sl->valid && !(sl->src_gen == gen || (sl->published && sl->pub_gen == gen))) {
            /* changed since it was prepared */
            compute_one(s, g, id, st);
        }
        const de_attr *attrs = sl && sl->valid ? sl->f.derived : NULL;
        uint32_t n = sl && sl->valid ? sl->f.nderived : 0;
        dg_device_set_derived(g, id, attrs, n);
        uint32_t after = 0;
        device_live(g, id, &after);
        if (after != gen)
            changed++;
        if (sl && sl->valid) {
            sl->published = true;
            sl->pub_gen = after;
        }
    }
    f->graph_gen = dg_devices_generation(g);
    f->synced_limit = limit;
    return changed;
}

uint32_t pol_set_sync(pol_set *s, dg_graph *g, pol_prepare_stats *st)
{
    pol_facts *f = pol_facts_of(s);
    if (f->graph_gen == dg_devices_generation(g) && f->synced_limit == dg_device_id_limit(g))
        return 0;
    uint32_t limit = dg_device_id_limit(g), updated = 0;
    for (uint32_t id = 0; id < limit; id++) {
        uint32_t gen;
        if (!device_live(g, id, &gen)) {
            if (id < f->cap && f->slots[id].valid)
                pol_slot_clear(&f->slots[id]);
            continue;
        }
        const pol_slot *sl = pol_facts_peek(s, id);
        if (sl && sl->published && sl->pub_gen == gen)
            continue;
        if ((s->hooks & (POL_HOOK_DERIVE | POL_HOOK_GROUPS)))
            compute_one(s, g, id, st);
        pol_slot *w = pol_facts_slot(s, id);
        dg_device_set_derived(g, id, w->valid ? w->f.derived : NULL, w->valid ? w->f.nderived : 0);
        uint32_t after = 0;
        device_live(g, id, &after);
        if (w->valid) {
            w->published = true;
            w->pub_gen = after;
        }
        updated++;
    }
    f->graph_gen = dg_devices_generation(g);
    f->synced_limit = limit;
    return updated;
}

void pol_graph_clear(dg_graph *g)
{
    uint32_t limit = dg_device_id_limit(g);
    for (uint32_t id = 0; id < limit; id++) {
        dg_devref r;
        if (dg_device_ref(g, id, &r))
            dg_device_set_derived(g, id, NULL, 0);
    }
}

const pol_devfacts *pol_set_facts(const pol_set *s, uint32_t devid)
{
    const pol_slot *sl = pol_facts_peek(s, devid);
    return sl ? &sl->f : NULL;
}

/* ---- allocator hooks ----------------------------------------------------------- */

typedef struct admit_ent {
    uint64_t gen;
    bool admitted;
    char *reason;
} admit_ent;

struct pol_hookctx {
    pol_set *set;
    uint64_t revision;
    /* admit cache: claim id -> entry index */
    de_map admit_idx;
    admit_ent *admits;
    uint32_t nadmits, capadmits;
    /* free-device counts per node: node name -> (usage gen << 20 | count) */
    de_map node_free;
    uint64_t usage_gen;
    de_arena *scratch;
    /* score_node's inputs, reused from call to call (an arena reset and
     * three allocations cost more than the memo's answer on most calls) */
    uint32_t *lab;      /* label keys, then values */
    uint32_t caplab;
    de_devview *views;
    uint32_t capviews;
};

pol_hookctx *pol_hookctx_new(pol_set *s, uint64_t revision)
{
    pol_hookctx *h = de_xcalloc(1, sizeof *h);
    h->set = s;
    h->revision = revision;
    de_map_init(&h->admit_idx);
    de_map_init(&h->node_free);
    h->scratch = de_arena_new_sized(0, 64 << 10);
    return h;
}

void pol_hookctx_free(pol_hookctx *h)
{
    if (!h)
        return;
    for (uint32_t i = 0; i < h->nadmits; i++)
        free(h->admits[i].reason);
    free(h->admits);
    de_map_destroy(&h->admit_idx);
    de_map_destroy(&h->node_free);
    de_arena_free(h->scratch);
    free(h->lab);
    free(h->views);
    free(h);
}

/* Key/value pairs as the parallel arrays of pol_claiminfo. */
static void split_kv(const dg_kv *kv, uint32_t n, de_arena *a, const uint32_t **keys, const uint32_t **vals)
{
    uint32_t *k = de_arena_alloc(a, (n + 1) * sizeof *k);
    uint32_t *v = de_arena_alloc(a, (n + 1) * sizeof *v);
    for (uint32_t i = 0; i < n; i++) {
        k[i] = kv[i].key;
        v[i] = kv[i].value;
    }
    *keys = k;
    *vals = v;
}

void pol_claiminfo_from_graph(const dg_graph *g, const dg_claim *cl, de_arena *a, pol_claiminfo *ci)
{
    memset(ci, 0, sizeof *ci);
    ci->ns = cl->meta.ns;
    ci->name = cl->meta.name;
    ci->uid = cl->meta.uid;
    split_kv(cl->meta.labels, cl->meta.nlabels, a, &ci->label_keys, &ci->label_values);
    ci->nlabels = cl->meta.nlabels;
    split_kv(cl->meta.annotations, cl->meta.nannotations, a, &ci->annotation_keys, &ci->annotation_values);
    ci->nannotations = cl->meta.nannotations;
    pol_claimreq *rq = de_arena_zalloc(a, (cl->spec.nrequests + 1) * sizeof *rq);
    for (uint32_t i = 0; i < cl->spec.nrequests; i++) {
        const dg_request *r = &cl->spec.requests[i];
        const dg_exact *x = r->has_exactly ? &r->exactly : (r->nsubs ? &r->subs[0] : NULL);
        rq[i].name = r->name;
        if (x) {
            rq[i].class_name = x->class_name;
            rq[i].count = x->count;
            rq[i].all = x->mode == DG_AMODE_ALL;
            uint32_t *sel = de_arena_alloc(a, (x->nselectors + 1) * sizeof *sel);
            uint32_t ns = 0;
            for (uint32_t k = 0; k < x->nselectors; k++)
                if (x->selectors[k].has_cel)
                    sel[ns++] = x->selectors[k].expr;
            rq[i].selectors = sel;
            rq[i].nselectors = ns;
        }
    }
    ci->requests = rq;
    ci->nrequests = cl->spec.nrequests;
    (void)g;
}

de_rc pol_hook_admit(pol_hookctx *h, const dg_graph *g, uint32_t clid, bool *admitted, const char **reason)
{
    const dg_claim *cl = dg_claim_get(g, clid);
    *admitted = true;
    *reason = NULL;
    if (!cl || !(h->set->hooks & POL_HOOK_ADMIT))
        return DE_OK;
    uint64_t gen = dg_claim_generation(g, clid), idx;
    if (de_map_get(&h->admit_idx, clid, &idx) && h->admits[idx].gen == gen) {
        *admitted = h->admits[idx].admitted;
        *reason = h->admits[idx].reason;
        return DE_OK;
    }
    de_arena_reset(h->scratch);
    pol_claiminfo ci;
    pol_claiminfo_from_graph(g, cl, h->scratch, &ci);
    char why[512];
    pol_failure fail = {0};
    pol_set_admit(h->set, &ci, admitted, why, sizeof why, &fail);
    if (!de_map_get(&h->admit_idx, clid, &idx)) {
        if (h->nadmits == h->capadmits) {
            h->capadmits = h->capadmits ? h->capadmits * 2 : 64;
            h->admits = de_xrealloc(h->admits, h->capadmits * sizeof *h->admits);
        }
        idx = h->nadmits++;
        memset(&h->admits[idx], 0, sizeof h->admits[idx]);
        de_map_put(&h->admit_idx, clid, idx);
    }
    admit_ent *ae = &h->admits[idx];
    free(ae->reason);
    ae->gen = gen;
    ae->admitted = *admitted;
    ae->reason = *admitted ? NULL : de_xstrdup(why);
    *reason = ae->reason;
    return DE_OK;
}

static de_rc hook_admit(void *ctx, const dg_graph *g, uint32_t claim, de_err *why)
{
    bool ok;
    const char *reason;
    pol_hook_admit(ctx, g, claim, &ok, &reason);
    if (ok)
        return DE_OK;
    return de_errf(why, DE_EPOLICY, "%s", reason ? reason : "refused by a policy");
}

static void hook_groups(void *ctx, const dg_graph *g, uint32_t devid, al_groups *out)
{
    pol_hookctx *h = ctx;
    (void)g;
    memset(out, 0, sizeof *out);
    const pol_slot *sl = pol_facts_peek(h->set, devid);
    if (!sl)
        return;
    out->blocked = sl->f.blocked;
    if (!sl->f.nscopes)
        return;
    out->scope = sl->f.scopes[0].key;
    out->ngroups = sl->ngroups;
    out->groups = sl->groups;
}

/* Free devices of a node (not in use by any claim), cached per usage
 * generation. */
uint32_t pol_node_free_devices(const dg_graph *g, uint32_t node_name, uint32_t *total)
{
    const uint32_t *sids;
    uint32_t ns, n = 0, nfree = 0;
    dg_slices_on_node(g, node_name, &sids, &ns);
    for (uint32_t i = 0; i < ns; i++) {
        const dg_slice *s = dg_slice_get(g, sids[i]);
        if (!s)
            continue;
        for (uint32_t k = 0; k < s->ndevices; k++) {
            n++;
            dg_usage u;
            if (!dg_usage_get(g, s->driver, s->pool, s->devices[k].name, &u) || (!u.exclusive && !u.shared))
                nfree++;
        }
    }
    *total = n;
    return nfree;
}

static uint32_t node_counts(pol_hookctx *h, const dg_graph *g, uint32_t node_name, uint32_t *total)
{
    uint64_t ug = dg_usage_generation(g) ^ (dg_generation(g) << 1);
    if (ug != h->usage_gen) {
        de_map_clear(&h->node_free);
        h->usage_gen = ug;
    }
    uint64_t v;
    if (de_map_get(&h->node_free, node_name, &v)) {
        *total = (uint32_t)(v >> 32);
        return (uint32_t)v;
    }
    uint32_t n, nfree = pol_node_free_devices(g, node_name, &n);
    de_map_put(&h->node_free, node_name, ((uint64_t)n << 32) | nfree);
    *total = n;
    return nfree;
}

/* counts: the node's devices and free devices when the caller keeps them
 * (the allocator does), NULL to count here */
static de_rc score_node(pol_hookctx *h, const dg_graph *g, uint32_t node_id, uint32_t node_name,
                        const uint32_t *counts, const dg_allocation *allocs, uint32_t nallocs,
                        const uint32_t *devids, double *score)
{
    *score = 0;
    if (!(h->set->hooks & POL_HOOK_SCORE))
        return DE_OK;
    pol_nodeinfo ni;
    memset(&ni, 0, sizeof ni);
    ni.name = node_name;
    if (counts) {
        ni.devices = counts[0];
        ni.free_devices = counts[1];
    } else {
        ni.free_devices = node_counts(h, g, node_name, &ni.devices);
    }
    /* Most answers come from the score memos by the node's counts and the
     * placement's size alone (binpack; numa-score where no device has a
     * NUMA attribute): then the device views and labels are not built. */
    if (devids) {
        uint32_t n = 0, j = 0;
        for (uint32_t i = 0; i < nallocs; i++)
            for (uint32_t k = 0; k < allocs[i].nresults; k++, j++)
                n += devids[j] != DG_NONE;
        if (pol_set_score_memo(h->set, &ni, n, score))
            return DE_OK;
    }
    const dg_node *node = node_id != DG_NONE ? dg_node_get(g, node_id) : NULL;
    if (node) {
        uint32_t nl = node->meta.nlabels;
        if (2 * nl > h->caplab) {
            h->caplab = 2 * nl + 16;
            h->lab = de_xrealloc(h->lab, h->caplab * sizeof *h->lab);
        }
        uint32_t *lk = h->lab, *lv = h->lab + nl;
        for (uint32_t i = 0; i < nl; i++) {
            lk[i] = node->meta.labels[i].key;
            lv[i] = node->meta.labels[i].value;
        }
        ni.label_keys = lk;
        ni.label_values = lv;
        ni.nlabels = nl;
    }
    uint32_t nd = 0;
    for (uint32_t i = 0; i < nallocs; i++)
        nd += allocs[i].nresults;
    if (nd > h->capviews) {
        h->capviews = nd + 8;
        h->views = de_xrealloc(h->views, h->capviews * sizeof *h->views);
    }
    de_devview *views = h->views;
    uint32_t nv = 0, j = 0;
    for (uint32_t i = 0; i < nallocs; i++)
        for (uint32_t k = 0; k < allocs[i].nresults; k++, j++) {
            const dg_result *r = &allocs[i].results[k];
            uint32_t id = devids ? devids[j] : dg_device_find(g, r->driver, r->pool, r->device);
            if (id == DG_NONE)
                continue;
            dg_device_view(g, id, &views[nv++]);
        }
    bool feasible;
    pol_set_score(h->set, &ni, views, nv, score, &feasible, NULL); /* failures are logged */
    if (!feasible)
        *score = -1e300; /* a failed fail-closed score ranks the node last */
    return DE_OK;
}

de_rc pol_hook_score(pol_hookctx *h, const dg_graph *g, uint32_t node_id, uint32_t node_name,
                     const dg_allocation *allocs, uint32_t nallocs, double *score)
{
    return score_node(h, g, node_id, node_name, NULL, allocs, nallocs, NULL, score);
}

static de_rc hook_score(void *ctx, const dg_graph *g, const al_placement *p, double *score, de_err *e)
{
    (void)e;
    uint32_t counts[2] = {p->node_devices, p->node_free_devices};
    return score_node(ctx, g, p->node, p->node_name, p->has_node_counts ? counts : NULL, p->allocs, p->nclaims,
                      p->devids, score);
}

static uint64_t hook_revision(void *ctx)
{
    return ((pol_hookctx *)ctx)->revision;
}

static const char *hook_facts_failed(void *ctx, const dg_graph *g, uint32_t devid)
{
    (void)g;
    pol_hookctx *h = ctx;
    const pol_slot *sl = pol_facts_peek(h->set, devid);
    if (!sl || !sl->f.nfails)
        return NULL;
    return h->set->pols[sl->f.fails[0].policy]->name;
}

void pol_hookctx_al(pol_hookctx *h, al_hooks *out)
{
    memset(out, 0, sizeof *out);
    out->ctx = h;
    unsigned hooks = h->set->hooks;
    if (hooks & POL_HOOK_ADMIT)
        out->admit = hook_admit;
    if (hooks & POL_HOOK_GROUPS)
        out->groups = hook_groups;
    if (hooks & POL_HOOK_SCORE)
        out->score = hook_score;
    out->revision = hook_revision;
    if (hooks & (POL_HOOK_DERIVE | POL_HOOK_GROUPS))
        out->facts_failed = hook_facts_failed;
}
