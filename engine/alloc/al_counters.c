/*
 * al_counters.c - shared counters (partitionable devices), KEP-5963
 * compatibility groups, and the policy-defined compatibility scopes.
 *
 * Counters, as upstream: the counters available in a pool are its counter
 * sets minus what every allocated device of the pool consumes (node-local and
 * off-node slices; may go negative = nothing left), computed once per
 * Allocate call; during the search a running sum of what the picked devices
 * consume is kept, and after adding a device every available counter must
 * still cover its consumption.  The bookkeeping is keyed by the pool NAME
 * only (not driver + pool), and the availability of a name is computed from
 * the first pool of that name that is checked - upstream's behaviour, kept.
 * Only the counters the new device touches can newly go short (the state
 * before the add always passed the full check), so the check looks at those
 * plus a per-pool "something is already negative" flag.
 *
 * Compatibility groups (DRADeviceCompatibilityGroups): per (pool name,
 * counter set) a running intersection seeded from the already-allocated
 * devices (their groups read live from the slices): a device is admitted if
 * nothing is placed yet, or it and every member declare no groups, or all
 * declare groups and the intersection with its own stays non-empty.  With the
 * gate off, devices that declare groups are skipped, and so are devices
 * joining a counter set on which an allocated device declares groups.
 * Policy scopes (al_hooks.groups) follow the same rule per scope.
 */
#include "al_int.h"

#include <stdlib.h>

static al_cgroup *cgroup_for(al_call *c, uint32_t pool_name)
{
    for (uint32_t i = 0; i < c->ncg; i++)
        if (c->cg[i].pool_name == pool_name)
            return &c->cg[i];
    if (c->ncg == c->capcg) {
        uint32_t cap = c->capcg ? c->capcg * 2 : 4;
        al_cgroup *n = AL_NEW(c->ar, al_cgroup, cap);
        if (c->ncg)
            memcpy(n, c->cg, c->ncg * sizeof *n);
        c->cg = n;
        c->capcg = cap;
    }
    al_cgroup *g = &c->cg[c->ncg++];
    memset(g, 0, sizeof *g);
    g->pool_name = pool_name;
    de_map_init(&g->slot);
    return g;
}

static uint32_t slot_of(al_call *c, al_cgroup *g, uint32_t set, uint32_t counter)
{
    uint64_t key = de_pack2(set, counter), v;
    if (de_map_get(&g->slot, key, &v))
        return (uint32_t)v - 1;
    if (g->nslots == g->capslots) {
        uint32_t cap = g->capslots ? g->capslots * 2 : 16;
        de_qty *av = AL_NEW(c->ar, de_qty, cap), *co = AL_NEW(c->ar, de_qty, cap);
        bool *ha = AL_NEW(c->ar, bool, cap);
        if (g->nslots) {
            memcpy(av, g->avail, g->nslots * sizeof *av);
            memcpy(co, g->cons, g->nslots * sizeof *co);
            memcpy(ha, g->has_avail, g->nslots * sizeof *ha);
        }
        g->avail = av;
        g->cons = co;
        g->has_avail = ha;
        g->capslots = cap;
    }
    uint32_t s = g->nslots++;
    g->avail[s] = de_qty_from_int(0, DE_QFMT_DECIMAL_SI);
    g->cons[s] = de_qty_from_int(0, DE_QFMT_DECIMAL_SI);
    g->has_avail[s] = false;
    de_map_put(&g->slot, key, s + 1);
    return s;
}

static bool device_allocated(al_call *c, const dg_slice *s, uint32_t name)
{
    dg_usage u;
    return dg_usage_get(c->a->g, s->driver, s->pool, name, &u);
}

/* Is device d of slice s allocated?  `base` is the local index of the
 * slice's first device when the slice's devices are in the node table (its
 * bits follow the graph's usage), UINT32_MAX when they are not. */
static bool allocated_at(al_call *c, const dg_slice *s, uint32_t d, uint32_t base)
{
    if (base != UINT32_MAX)
        return de_bit_get(c->t->allocated, base + d);
    return device_allocated(c, s, s->devices[d].name);
}

static void subtract_allocated(al_call *c, al_cgroup *g, const uint32_t *sl, uint32_t n, uint32_t base)
{
    for (uint32_t i = 0; i < n; i++) {
        const dg_slice *s = dg_slice_get(c->a->g, sl[i]);
        for (uint32_t d = 0; d < s->ndevices; d++) {
            const dg_device *dev = &s->devices[d];
            if (!dev->nconsumes || !allocated_at(c, s, d, base))
                continue;
            for (uint32_t k = 0; k < dev->nconsumes; k++)
                for (uint32_t m = 0; m < dev->consumes[k].ncounters; m++) {
                    uint64_t v;
                    uint64_t key = de_pack2(dev->consumes[k].counterset, dev->consumes[k].counters[m].name);
                    if (!de_map_get(&g->slot, key, &v) || !g->has_avail[v - 1])
                        continue;
                    de_qty r;
                    if (de_qty_sub(g->avail[v - 1], dev->consumes[k].counters[m].value, &r) == DE_OK)
                        g->avail[v - 1] = r;
                }
        }
        if (base != UINT32_MAX)
            base += s->ndevices;
    }
}

static void compute_available(al_call *c, al_cgroup *g, const al_pool *p)
{
    for (uint32_t i = 0; i < p->ncnt; i++) {
        const dg_slice *s = dg_slice_get(c->a->g, p->cnt_slices[i]);
        for (uint32_t k = 0; k < s->ncountersets; k++) {
            const dg_counterset *cs = &s->countersets[k];
            for (uint32_t m = 0; m < cs->ncounters; m++) {
                uint32_t sl = slot_of(c, g, cs->name, cs->counters[m].name);
                g->avail[sl] = cs->counters[m].value;
                g->has_avail[sl] = true;
            }
        }
    }
    subtract_allocated(c, g, p->on_slices, p->non, p->state == AL_POOL_OK ? p->dev_first : UINT32_MAX);
    subtract_allocated(c, g, p->off_slices, p->noff, UINT32_MAX);
    for (uint32_t s = 0; s < g->nslots; s++)
        if (g->has_avail[s] && de_qty_sign(g->avail[s]) < 0)
            g->broken = true;
    g->have_avail = true;
}

static void apply(al_call *c, uint32_t dev, al_cgroup *g, bool add)
{
    const dg_device *d = c->t->devs[dev].d;
    uint32_t j = 0;
    for (uint32_t k = 0; k < d->nconsumes; k++)
        for (uint32_t m = 0; m < d->consumes[k].ncounters; m++, j++) {
            uint32_t s = c->dev_slots[dev][j];
            de_qty r;
            if ((add ? de_qty_add(g->cons[s], d->consumes[k].counters[m].value, &r)
                     : de_qty_sub(g->cons[s], d->consumes[k].counters[m].value, &r)) == DE_OK)
                g->cons[s] = r;
        }
}

static al_cgroup *prepare(al_call *c, uint32_t dev)
{
    const al_dev *dv = &c->t->devs[dev];
    if (c->dev_cg[dev] >= 0)
        return &c->cg[c->dev_cg[dev]];
    const al_pool *p = &c->t->pools[dv->pool];
    al_cgroup *g = cgroup_for(c, p->name);
    if (!g->have_avail)
        compute_available(c, g, p);
    uint32_t n = 0;
    for (uint32_t k = 0; k < dv->d->nconsumes; k++)
        n += dv->d->consumes[k].ncounters;
    c->dev_slots[dev] = AL_NEW(c->ar, uint32_t, n ? n : 1);
    uint32_t j = 0;
    for (uint32_t k = 0; k < dv->d->nconsumes; k++)
        for (uint32_t m = 0; m < dv->d->consumes[k].ncounters; m++)
            c->dev_slots[dev][j++] =
                slot_of(c, g, dv->d->consumes[k].counterset, dv->d->consumes[k].counters[m].name);
    c->dev_cg[dev] = (int32_t)(g - c->cg);
    return g;
}

bool al_counters_take(al_call *c, uint32_t dev)
{
    al_cgroup *g = prepare(c, dev);
    apply(c, dev, g, true);
    bool ok = !g->broken;
    const dg_device *d = c->t->devs[dev].d;
    uint32_t j = 0;
    for (uint32_t k = 0; k < d->nconsumes && ok; k++)
        for (uint32_t m = 0; m < d->consumes[k].ncounters && ok; m++, j++) {
            uint32_t s = c->dev_slots[dev][j];
            if (g->has_avail[s] && de_qty_cmp(g->avail[s], g->cons[s]) < 0)
                ok = false;
        }
    if (!ok)
        apply(c, dev, g, false);
    return ok;
}

void al_counters_release(al_call *c, uint32_t dev)
{
    apply(c, dev, prepare(c, dev), false);
}

/* ---- group intersections ------------------------------------------------------------- */

static bool gs_admits(const al_gstate *s, const uint32_t *gr, uint32_t n)
{
    if (!s->has_members)
        return true;
    if (!n)
        return s->all_empty;
    if (s->all_empty)
        return false;
    for (uint32_t i = 0; i < s->n; i++)
        for (uint32_t j = 0; j < n; j++)
            if (s->g[i] == gr[j])
                return true;
    return false;
}

static void gs_add(de_arena *ar, al_gstate *s, const uint32_t *gr, uint32_t n)
{
    if (!s->has_members) {
        s->has_members = true;
        s->all_empty = n == 0;
        s->g = AL_NEW(ar, uint32_t, n ? n : 1);
        s->n = 0;
        for (uint32_t j = 0; j < n; j++) {
            bool dup = false;
            for (uint32_t i = 0; i < s->n; i++)
                dup |= s->g[i] == gr[j];
            if (!dup)
                s->g[s->n++] = gr[j];
        }
        return;
    }
    if (s->all_empty || !n)
        return;
    uint32_t *ng = AL_NEW(ar, uint32_t, s->n ? s->n : 1);
    uint32_t m = 0;
    for (uint32_t i = 0; i < s->n; i++)
        for (uint32_t j = 0; j < n; j++)
            if (s->g[i] == gr[j]) {
                ng[m++] = s->g[i];
                break;
            }
    s->g = ng;
    s->n = m;
}

static void undo_push(al_call *c, uint8_t kind, uint32_t idx, const al_gstate *prev)
{
    if (c->nundo == c->capundo) {
        uint32_t cap = c->capundo ? c->capundo * 2 : 64;
        al_undo *u = AL_NEW(c->ar, al_undo, cap);
        if (c->nundo)
            memcpy(u, c->undo, c->nundo * sizeof *u);
        c->undo = u;
        c->capundo = cap;
    }
    c->undo[c->nundo].kind = kind;
    c->undo[c->nundo].idx = idx;
    c->undo[c->nundo].prev = *prev;
    c->nundo++;
}

void al_undo_to(al_call *c, uint32_t mark)
{
    while (c->nundo > mark) {
        al_undo *u = &c->undo[--c->nundo];
        if (u->kind == 1)
            c->cgrp[u->idx] = u->prev;
        else
            c->pgrp[u->idx] = u->prev;
    }
}

static uint32_t gstate_index(al_call *c, de_map *idx, al_gstate **arr, uint32_t *n, uint32_t *cap,
                             uint64_t key, bool *created)
{
    uint64_t v;
    *created = false;
    if (de_map_get(idx, key, &v))
        return (uint32_t)v;
    if (*n == *cap) {
        uint32_t nc = *cap ? *cap * 2 : 16;
        al_gstate *na = AL_NEW(c->ar, al_gstate, nc);
        if (*n)
            memcpy(na, *arr, *n * sizeof *na);
        *arr = na;
        *cap = nc;
    }
    memset(&(*arr)[*n], 0, sizeof **arr);
    de_map_put(idx, key, *n);
    *created = true;
    return (*n)++;
}

/* Seed the intersection of (pool name, counter set) from allocated devices. */
static void cgrp_seed(al_call *c, al_gstate *s, const al_pool *p, uint32_t set)
{
    const uint32_t *lists[2] = {p->on_slices, p->off_slices};
    uint32_t ns[2] = {p->non, p->noff};
    for (int l = 0; l < 2; l++) {
        uint32_t base = l == 0 && p->state == AL_POOL_OK ? p->dev_first : UINT32_MAX;
        for (uint32_t i = 0; i < ns[l]; i++) {
            const dg_slice *sl = dg_slice_get(c->a->g, lists[l][i]);
            for (uint32_t d = 0; d < sl->ndevices; d++) {
                const dg_device *dev = &sl->devices[d];
                if (!dev->nconsumes || !allocated_at(c, sl, d, base))
                    continue;
                for (uint32_t k = 0; k < dev->nconsumes; k++)
                    if (dev->consumes[k].counterset == set)
                        gs_add(c->ar, s, dev->consumes[k].groups, dev->consumes[k].ngroups);
            }
            if (base != UINT32_MAX)
                base += sl->ndevices;
        }
    }
}

bool al_cgroups_skip_disabled(al_call *c, uint32_t dev)
{
    const al_dev *dv = &c->t->devs[dev];
    if (dv->flags & AL_DF_CGROUPS)
        return true;
    if (!(dv->flags & AL_DF_COUNTERS))
        return false;
    const al_pool *p = &c->t->pools[dv->pool];
    for (uint32_t k = 0; k < dv->d->nconsumes; k++) {
        /* per call, the allocated state is fixed: seed each counter set once */
        uint64_t key = de_pack2(dv->pool, dv->d->consumes[k].counterset), v;
        if (!de_map_get(&c->cgskip, key, &v)) {
            al_gstate s = {0};
            cgrp_seed(c, &s, p, dv->d->consumes[k].counterset);
            v = s.has_members && !s.all_empty ? 2 : 1;
            de_map_put(&c->cgskip, key, v);
        }
        if (v == 2)
            return true;
    }
    return false;
}

bool al_cgroups_take(al_call *c, uint32_t dev, uint32_t *undo_mark)
{
    const al_dev *dv = &c->t->devs[dev];
    const al_pool *p = &c->t->pools[dv->pool];
    *undo_mark = c->nundo;
    for (uint32_t k = 0; k < dv->d->nconsumes; k++) {
        const dg_consumption *cc = &dv->d->consumes[k];
        bool created;
        uint32_t i = gstate_index(c, &c->cgrp_idx, &c->cgrp, &c->ncgrp, &c->capcgrp,
                                  de_pack2(p->name, cc->counterset), &created);
        if (created)
            cgrp_seed(c, &c->cgrp[i], p, cc->counterset);
        if (!gs_admits(&c->cgrp[i], cc->groups, cc->ngroups)) {
            al_undo_to(c, *undo_mark);
            return false;
        }
        undo_push(c, 1, i, &c->cgrp[i]);
        gs_add(c->ar, &c->cgrp[i], cc->groups, cc->ngroups);
    }
    return true;
}

bool al_pgroups_take(al_call *c, uint32_t dev)
{
    const al_dev *dv = &c->t->devs[dev];
    if (!dv->pscope)
        return true;
    bool created;
    uint32_t i = gstate_index(c, &c->pgrp_idx, &c->pgrp, &c->npgrp, &c->cappgrp, dv->pscope, &created);
    if (created)
        for (uint32_t j = 0; j < c->t->ndev; j++) {
            const al_dev *o = &c->t->devs[j];
            if (o->pscope == dv->pscope && de_bit_get(c->t->allocated, j))
                gs_add(c->ar, &c->pgrp[i], o->pgroups, o->npgroups);
        }
    if (!gs_admits(&c->pgrp[i], dv->pgroups, dv->npgroups))
        return false;
    undo_push(c, 2, i, &c->pgrp[i]);
    gs_add(c->ar, &c->pgrp[i], dv->pgroups, dv->npgroups);
    return true;
}
