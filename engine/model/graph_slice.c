/*
 * graph_slice.c - slices, pools and devices, and DeviceTaintRule
 * application (dra-model 1.7).
 *
 * Replacing a slice keeps the ids of the devices that keep their name (and
 * driver and pool) and bumps a device's generation only when the device
 * really changed; the pool's bookkeeping (newest generation, completeness,
 * name -> device map) is recomputed from that pool's slices only.
 *
 * Taint rules: a rule's taint is appended, after the driver-published
 * taints, to every device whose driver, pool and name equal the rule's
 * non-empty selector fields - the scheduler's tracker does exactly this.
 * Rules apply in name order (the tracker's order is its informer's, which
 * is not deterministic).  A rule without a deviceSelector is applied to
 * every device, as the 2026-07 tracker code does (the API doc says "matches
 * nothing"; dra-model.md section 6, point 5).  Changing a rule re-evaluates
 * only the devices its old or new selector can reach.
 */
#include "graph_int.h"

#include <stdlib.h>
#include <string.h>

/* ---- pools ------------------------------------------------------------------------ */

static inline uint32_t pool_hint_slot(uint32_t driver, uint32_t name)
{
    return (name ^ (driver * 31u)) & (DG_POOL_HINTS - 1);
}

uint32_t dg_pool_get_or_add(dg_graph *g, uint32_t driver, uint32_t name)
{
    uint64_t v, key = de_pack2(driver, name);
    uint32_t h = pool_hint_slot(driver, name);
    if (g->pool_hint[h].id1 && g->pool_hint[h].key == key)
        return g->pool_hint[h].id1 - 1;
    if (de_map_get(&g->pool_names, key, &v)) {
        g->pool_hint[h].key = key;
        g->pool_hint[h].id1 = (uint32_t)v + 1;
        return (uint32_t)v;
    }
    if (g->npools == g->cappools) {
        g->cappools = g->cappools ? g->cappools * 2 : 64;
        g->pools = de_xrealloc(g->pools, g->cappools * sizeof *g->pools);
    }
    uint32_t id = g->npools++;
    memset(&g->pools[id], 0, sizeof g->pools[id]);
    g->pools[id].driver = driver;
    g->pools[id].name = name;
    de_map_put(&g->pool_names, de_pack2(driver, name), id);
    return id;
}

/* Drop the pool's entries from the (pool, device name) map. */
static void pool_unmap(dg_graph *g, uint32_t pid)
{
    pool_ent *p = &g->pools[pid];
    for (uint32_t i = 0; i < p->slices.n; i++) {
        const slice_ent *se = &g->slices[p->slices.v[i]];
        if (se->s->generation != p->max_generation)
            continue;
        for (uint32_t j = 0; j < se->s->ndevices; j++) {
            uint64_t key = de_pack2(pid, se->s->devices[j].name), v;
            if (de_map_get(&g->pool_devices, key, &v) && v == se->devids[j])
                de_map_del(&g->pool_devices, key);
        }
    }
}

/* Recompute the newest generation, completeness and the device map. */
static void pool_remap(dg_graph *g, uint32_t pid)
{
    pool_ent *p = &g->pools[pid];
    p->max_generation = -1;
    p->nslices_at_max = 0;
    p->slice_count = 0;
    for (uint32_t i = 0; i < p->slices.n; i++) {
        const dg_slice *s = g->slices[p->slices.v[i]].s;
        if (s->generation > p->max_generation) {
            p->max_generation = s->generation;
            p->nslices_at_max = 0;
            p->slice_count = s->slice_count;
        }
        if (s->generation == p->max_generation)
            p->nslices_at_max++;
    }
    for (uint32_t i = 0; i < p->slices.n; i++) {
        const slice_ent *se = &g->slices[p->slices.v[i]];
        if (se->s->generation != p->max_generation)
            continue;
        for (uint32_t j = 0; j < se->s->ndevices; j++) {
            uint64_t key = de_pack2(pid, se->s->devices[j].name), v;
            if (!de_map_get(&g->pool_devices, key, &v))
                de_map_put(&g->pool_devices, key, se->devids[j]);
        }
    }
    bool live = p->slices.n > 0;
    if (live != p->live)
        g->live_pools += live ? 1 : (uint32_t)-1;
    p->live = live;
    p->gen = dg_bump(g);
}

static void pool_insert_slice(dg_graph *g, uint32_t pid, uint32_t sid)
{
    pool_ent *p = &g->pools[pid];
    uint32_t name = g->slices[sid].s->meta.name, lo = 0, hi = p->slices.n;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (de_intern_cmp(g->in, g->slices[p->slices.v[mid]].s->meta.name, name) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    u32vec_insert(&p->slices, lo, sid);
}

/* ---- node / driver / shared indexes ----------------------------------------------- */

static void sorted_insert(u32vec *a, uint32_t x)
{
    uint32_t lo = 0, hi = a->n;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (a->v[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    u32vec_insert(a, lo, x);
}

static u32vec *keyed_list(de_map *idx, u32vec **lists, uint32_t **names, uint32_t *n, uint32_t *cap, uint32_t key,
                          bool create)
{
    uint64_t v;
    if (de_map_get(idx, key, &v))
        return &(*lists)[v];
    if (!create)
        return NULL;
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 64;
        *lists = de_xrealloc(*lists, *cap * sizeof **lists);
        if (names)
            *names = de_xrealloc(*names, *cap * sizeof **names);
    }
    memset(&(*lists)[*n], 0, sizeof **lists);
    if (names)
        (*names)[*n] = key;
    de_map_put(idx, key, *n);
    return &(*lists)[(*n)++];
}

static void index_slice(dg_graph *g, uint32_t sid, bool add)
{
    const dg_slice *s = g->slices[sid].s;
    u32vec *l;
    if (s->ns_mode == DG_NS_NODE_NAME)
        l = keyed_list(&g->node_idx, &g->node_lists, &g->node_list_names, &g->nnode_lists, &g->capnode_lists,
                       s->node_name, add);
    else
        l = &g->shared;
    if (l) {
        if (add)
            sorted_insert(l, sid);
        else
            u32vec_remove(l, sid);
    }
    if (s->ncountersets) {
        if (add)
            sorted_insert(&g->counter_slices, sid);
        else
            u32vec_remove(&g->counter_slices, sid);
    }
    l = keyed_list(&g->driver_idx, &g->driver_lists, NULL, &g->ndriver_lists, &g->capdriver_lists, s->driver, add);
    if (l) {
        if (add)
            sorted_insert(l, sid);
        else
            u32vec_remove(l, sid);
    }
}

/* ---- taint rules applied to devices ------------------------------------------------- */

static bool rule_matches(const dg_taint_rule *r, uint32_t driver, uint32_t pool, uint32_t device)
{
    if (!r->has_selector)
        return true;
    return (!r->driver || r->driver == driver) && (!r->pool || r->pool == pool) && (!r->device || r->device == device);
}

/* Recompute a device's effective taints; true when they changed. */
static bool dev_taints_recompute(dg_graph *g, uint32_t devid)
{
    dev_ent *de = &g->devs[devid];
    if (de->slice == DG_NONE)
        return false;
    const dg_slice *s = g->slices[de->slice].s;
    const dg_device *dev = &s->devices[de->index];
    uint32_t nrule = 0;
    for (uint32_t i = 0; i < g->rules_sorted.n; i++)
        if (rule_matches(g->rules.e[g->rules_sorted.v[i]].o, s->driver, s->pool, dev->name))
            nrule++;
    if (nrule == 0) {
        if (!de->eff)
            return false;
        free(de->eff);
        de->eff = NULL;
        de->neff = 0;
        return true;
    }
    uint32_t n = dev->ntaints + nrule;
    dg_taint *t = de_xmalloc(n * sizeof *t);
    if (dev->ntaints)
        memcpy(t, dev->taints, dev->ntaints * sizeof *t);
    uint32_t k = dev->ntaints;
    for (uint32_t i = 0; i < g->rules_sorted.n; i++) {
        const dg_taint_rule *r = g->rules.e[g->rules_sorted.v[i]].o;
        if (rule_matches(r, s->driver, s->pool, dev->name))
            t[k++] = r->taint;
    }
    bool same = de->eff && de->neff == n;
    for (uint32_t i = 0; same && i < n; i++) {
        const dg_taint *x = &de->eff[i], *y = &t[i];
        same = x->key == y->key && x->value == y->value && x->effect == y->effect &&
               x->effect_raw == y->effect_raw && x->time_added == y->time_added && x->rule == y->rule;
    }
    if (same) {
        free(t);
        return false;
    }
    free(de->eff);
    de->eff = t;
    de->neff = n;
    return true;
}

/* Call fn for every live device a selector (driver, pool, device; 0 = any)
 * can reach. */
static void each_device(dg_graph *g, bool has_sel, uint32_t driver, uint32_t pool, uint32_t device,
                        void (*fn)(dg_graph *, uint32_t))
{
    if (has_sel && driver) {
        uint64_t v;
        if (!de_map_get(&g->driver_idx, driver, &v))
            return;
        const u32vec *l = &g->driver_lists[v];
        /* copy: fn does not change the list, but keep it simple and safe */
        for (uint32_t i = 0; i < l->n; i++) {
            const slice_ent *se = &g->slices[l->v[i]];
            if (pool && se->s->pool != pool)
                continue;
            for (uint32_t j = 0; j < se->s->ndevices; j++)
                if (!device || se->s->devices[j].name == device)
                    fn(g, se->devids[j]);
        }
        return;
    }
    for (uint32_t id = 0; id < g->ndevs; id++) {
        const dev_ent *de = &g->devs[id];
        if (de->slice == DG_NONE)
            continue;
        const dg_slice *s = g->slices[de->slice].s;
        if (!has_sel || ((!pool || s->pool == pool) && (!device || s->devices[de->index].name == device)))
            fn(g, id);
    }
}

static void retaint(dg_graph *g, uint32_t devid)
{
    if (dev_taints_recompute(g, devid)) {
        g->devs[devid].gen = ++g->devgen;
        dg_notify_device(g, devid);
    }
}

void dg_rule_upsert(dg_graph *g, dg_taint_rule *r, de_arena *a, json_t *json, uint32_t *rid)
{
    uint64_t v;
    bool had = false, old_sel = false;
    uint32_t od = 0, op = 0, odev = 0, id;
    if (de_map_get(&g->rules.names, de_pack2(0, r->meta.name), &v)) {
        id = (uint32_t)v;
        const dg_taint_rule *old = g->rules.e[id].o;
        if (old) {
            had = true;
            old_sel = old->has_selector;
            od = old->driver;
            op = old->pool;
            odev = old->device;
        } else {
            g->rules.live++;
        }
        de_arena_free(g->rules.e[id].a);
        if (g->rules.e[id].json)
            json_decref(g->rules.e[id].json);
    } else {
        id = obj_table_add(&g->rules, 0, r->meta.name);
        g->rules.live++;
    }
    g->rules.e[id].o = r;
    g->rules.e[id].a = a;
    g->rules.e[id].json = json;
    g->rules.e[id].gen = dg_bump(g);
    if (!had) {
        uint32_t lo = 0, hi = g->rules_sorted.n;
        while (lo < hi) {
            uint32_t mid = (lo + hi) / 2;
            const dg_taint_rule *m = g->rules.e[g->rules_sorted.v[mid]].o;
            if (de_intern_cmp(g->in, m->meta.name, r->meta.name) < 0)
                lo = mid + 1;
            else
                hi = mid;
        }
        u32vec_insert(&g->rules_sorted, lo, id);
    }
    if (had)
        each_device(g, old_sel, od, op, odev, retaint);
    each_device(g, r->has_selector, r->driver, r->pool, r->device, retaint);
    *rid = id;
    dg_notify(g, DG_KIND_DEVICE_TAINT_RULE, had ? DG_OP_UPDATE : DG_OP_ADD, id);
}

void dg_rule_delete(dg_graph *g, uint32_t rid)
{
    const dg_taint_rule *r = g->rules.e[rid].o;
    bool sel = r->has_selector;
    uint32_t d = r->driver, p = r->pool, dev = r->device;
    u32vec_remove(&g->rules_sorted, rid);
    de_arena_free(g->rules.e[rid].a);
    if (g->rules.e[rid].json)
        json_decref(g->rules.e[rid].json);
    g->rules.e[rid].o = NULL;
    g->rules.e[rid].a = NULL;
    g->rules.e[rid].json = NULL;
    g->rules.e[rid].gen = dg_bump(g);
    g->rules.live--;
    each_device(g, sel, d, p, dev, retaint);
}

/* ---- slices ----------------------------------------------------------------------- */

static uint32_t new_device(dg_graph *g)
{
    if (g->ndevs == g->capdevs) {
        g->capdevs = g->capdevs ? g->capdevs * 2 : 1024;
        g->devs = de_xrealloc(g->devs, g->capdevs * sizeof *g->devs);
    }
    uint32_t id = g->ndevs++;
    memset(&g->devs[id], 0, sizeof g->devs[id]);
    g->live_devs++;
    return id;
}

static void retire_device(dg_graph *g, uint32_t id)
{
    dev_ent *de = &g->devs[id];
    de->slice = DG_NONE;
    free(de->eff);
    free(de->derived);
    de->eff = NULL;
    de->derived = NULL;
    de->neff = de->nderived = 0;
    de->gen = ++g->devgen;
    g->live_devs--;
}

static uint32_t device_node(const dg_slice *s, const dg_device *d)
{
    if (s->ns_mode == DG_NS_NODE_NAME)
        return s->node_name;
    if (s->ns_mode == DG_NS_PER_DEVICE && d->ns_mode == DG_NS_NODE_NAME)
        return d->node_name;
    return 0;
}

de_rc dg_slice_upsert(dg_graph *g, dg_slice *s, de_arena *a, json_t *json, uint32_t *sid_out)
{
    uint64_t v;
    uint32_t sid;
    slice_ent old = {0};
    bool had = false;
    if (de_map_get(&g->slice_names, s->meta.name, &v)) {
        sid = (uint32_t)v;
        if (g->slices[sid].s) {
            had = true;
            old = g->slices[sid];
            pool_unmap(g, old.pool);
            index_slice(g, sid, false);
            u32vec_remove(&g->pools[old.pool].slices, sid);
        } else {
            g->live_slices++;
        }
    } else {
        if (g->nslices == g->capslices) {
            g->capslices = g->capslices ? g->capslices * 2 : 256;
            g->slices = de_xrealloc(g->slices, g->capslices * sizeof *g->slices);
        }
        sid = g->nslices++;
        memset(&g->slices[sid], 0, sizeof g->slices[sid]);
        de_map_put(&g->slice_names, s->meta.name, sid);
        g->live_slices++;
    }
    uint32_t pid = dg_pool_get_or_add(g, s->driver, s->pool);
    if (!had || pid != old.pool)
        pool_unmap(g, pid);

    /* device ids: keep those of devices that keep their name, driver and pool */
    uint32_t *ids = de_xmalloc((s->ndevices ? s->ndevices : 1) * sizeof *ids);
    bool same_home = had && old.s->driver == s->driver && old.s->pool == s->pool;
    bool *reused = had ? de_xcalloc(old.s->ndevices + 1, 1) : NULL;
    for (uint32_t i = 0; i < s->ndevices; i++) {
        const dg_device *dev = &s->devices[i];
        uint32_t id = DG_NONE;
        if (same_home) {
            for (uint32_t j = 0; j < old.s->ndevices; j++)
                if (!reused[j] && old.s->devices[j].name == dev->name) {
                    reused[j] = true;
                    id = old.devids[j];
                    dev_ent *de = &g->devs[id];
                    de->index = i;
                    uint32_t node = device_node(s, dev);
                    if (node != de->node || !dg_device_equal(dev, &old.s->devices[j]))
                        de->gen = ++g->devgen;
                    de->node = node;
                    break;
                }
        }
        if (id == DG_NONE) {
            id = new_device(g);
            dev_ent *de = &g->devs[id];
            de->index = i;
            de->gen = ++g->devgen;
            de->node = device_node(s, dev);
        }
        g->devs[id].slice = sid;
        g->devs[id].pool = pid;
        ids[i] = id;
    }
    if (had) {
        for (uint32_t j = 0; j < old.s->ndevices; j++)
            if (!reused[j])
                retire_device(g, old.devids[j]);
        free(reused);
        free(old.devids);
        de_arena_free(old.a);
        if (old.json)
            json_decref(old.json);
    }
    slice_ent *se = &g->slices[sid];
    se->s = s;
    se->a = a;
    se->json = json;
    se->pool = pid;
    se->devids = ids;
    se->gen = dg_bump(g);
    index_slice(g, sid, true);
    pool_insert_slice(g, pid, sid);
    pool_remap(g, pid);
    if (had && old.pool != pid)
        pool_remap(g, old.pool);
    if (g->rules_sorted.n || had)
        for (uint32_t i = 0; i < s->ndevices; i++)
            retaint(g, ids[i]);
    if (sid_out)
        *sid_out = sid;
    dg_notify(g, DG_KIND_RESOURCE_SLICE, had ? DG_OP_UPDATE : DG_OP_ADD, sid);
    return DE_OK;
}

de_rc dg_slice_delete(dg_graph *g, uint32_t sid)
{
    slice_ent *se = &g->slices[sid];
    if (!se->s)
        return DE_OK;
    uint32_t pid = se->pool;
    pool_unmap(g, pid);
    index_slice(g, sid, false);
    u32vec_remove(&g->pools[pid].slices, sid);
    for (uint32_t i = 0; i < se->s->ndevices; i++)
        retire_device(g, se->devids[i]);
    free(se->devids);
    de_arena_free(se->a);
    if (se->json)
        json_decref(se->json);
    se->s = NULL;
    se->a = NULL;
    se->json = NULL;
    se->devids = NULL;
    se->gen = dg_bump(g);
    g->live_slices--;
    pool_remap(g, pid);
    dg_notify(g, DG_KIND_RESOURCE_SLICE, DG_OP_DELETE, sid);
    return DE_OK;
}

void dg_slices_free(dg_graph *g)
{
    for (uint32_t i = 0; i < g->nslices; i++) {
        free(g->slices[i].devids);
        de_arena_free(g->slices[i].a);
        if (g->slices[i].json)
            json_decref(g->slices[i].json);
    }
    free(g->slices);
    for (uint32_t i = 0; i < g->ndevs; i++) {
        free(g->devs[i].eff);
        free(g->devs[i].derived);
    }
    free(g->devs);
    for (uint32_t i = 0; i < g->npools; i++)
        u32vec_free(&g->pools[i].slices);
    free(g->pools);
    for (uint32_t i = 0; i < g->nnode_lists; i++)
        u32vec_free(&g->node_lists[i]);
    free(g->node_lists);
    free(g->node_list_names);
    for (uint32_t i = 0; i < g->ndriver_lists; i++)
        u32vec_free(&g->driver_lists[i]);
    free(g->driver_lists);
    u32vec_free(&g->shared);
    u32vec_free(&g->counter_slices);
    de_map_destroy(&g->slice_names);
    de_map_destroy(&g->pool_names);
    de_map_destroy(&g->pool_devices);
    de_map_destroy(&g->node_idx);
    de_map_destroy(&g->driver_idx);
}

/* ---- accessors -------------------------------------------------------------------- */

uint32_t dg_slice_id_limit(const dg_graph *g) { return g->nslices; }

const dg_slice *dg_slice_get(const dg_graph *g, uint32_t sid)
{
    return sid < g->nslices ? g->slices[sid].s : NULL;
}

uint32_t dg_slice_find(const dg_graph *g, const char *name)
{
    uint32_t id = de_intern_find(g->in, name, strlen(name));
    uint64_t v;
    if (id == UINT32_MAX || !de_map_get(&g->slice_names, id, &v) || !g->slices[v].s)
        return DG_NONE;
    return (uint32_t)v;
}

json_t *dg_slice_json(const dg_graph *g, uint32_t sid)
{
    return sid < g->nslices ? g->slices[sid].json : NULL;
}

uint32_t dg_slice_pool(const dg_graph *g, uint32_t sid)
{
    return sid < g->nslices && g->slices[sid].s ? g->slices[sid].pool : DG_NONE;
}

uint32_t dg_device_id_limit(const dg_graph *g) { return g->ndevs; }
uint32_t dg_device_count(const dg_graph *g) { return g->live_devs; }

bool dg_device_ref(const dg_graph *g, uint32_t devid, dg_devref *out)
{
    if (devid >= g->ndevs || g->devs[devid].slice == DG_NONE) {
        *out = (dg_devref){.slice = DG_NONE, .pool = DG_NONE};
        return false;
    }
    const dev_ent *de = &g->devs[devid];
    out->slice = de->slice;
    out->index = de->index;
    out->pool = de->pool;
    out->gen = de->gen;
    return true;
}

uint32_t dg_device_id(const dg_graph *g, uint32_t sid, uint32_t index)
{
    if (sid >= g->nslices || !g->slices[sid].s || index >= g->slices[sid].s->ndevices)
        return DG_NONE;
    return g->slices[sid].devids[index];
}

const dg_device *dg_device_get(const dg_graph *g, uint32_t devid)
{
    if (devid >= g->ndevs || g->devs[devid].slice == DG_NONE)
        return NULL;
    const dev_ent *de = &g->devs[devid];
    return &g->slices[de->slice].s->devices[de->index];
}

uint32_t dg_device_node(const dg_graph *g, uint32_t devid)
{
    return devid < g->ndevs && g->devs[devid].slice != DG_NONE ? g->devs[devid].node : 0;
}

uint32_t dg_device_find(const dg_graph *g, uint32_t driver, uint32_t pool, uint32_t name)
{
    uint32_t pid = dg_pool_find(g, driver, pool);
    uint64_t v;
    if (pid == DG_NONE || !de_map_get(&g->pool_devices, de_pack2(pid, name), &v))
        return DG_NONE;
    return (uint32_t)v;
}

void dg_device_view(const dg_graph *g, uint32_t devid, de_devview *out)
{
    memset(out, 0, sizeof *out);
    out->allow_multi = -1;
    if (devid >= g->ndevs || g->devs[devid].slice == DG_NONE)
        return;
    const dev_ent *de = &g->devs[devid];
    const dg_slice *s = g->slices[de->slice].s;
    const dg_device *d = &s->devices[de->index];
    out->id = devid;
    out->gen = de->gen;
    out->driver = s->driver;
    out->pool = s->pool;
    out->name = d->name;
    out->node = de->node;
    out->attrs = d->attrs;
    out->nattrs = d->nattrs;
    out->derived = de->derived;
    out->nderived = de->nderived;
    out->caps = d->caps;
    out->ncaps = d->ncaps;
    out->allow_multi = d->allow_multi;
}

void dg_device_taints(const dg_graph *g, uint32_t devid, const dg_taint **out, uint32_t *n)
{
    *out = NULL;
    *n = 0;
    if (devid >= g->ndevs || g->devs[devid].slice == DG_NONE)
        return;
    const dev_ent *de = &g->devs[devid];
    if (de->eff) {
        *out = de->eff;
        *n = de->neff;
        return;
    }
    const dg_device *d = &g->slices[de->slice].s->devices[de->index];
    *out = d->taints;
    *n = d->ntaints;
}

void dg_device_set_derived(dg_graph *g, uint32_t devid, const de_attr *attrs, uint32_t n)
{
    if (devid >= g->ndevs || g->devs[devid].slice == DG_NONE)
        return;
    dev_ent *de = &g->devs[devid];
    if (de->nderived == n) {
        bool same = true;
        for (uint32_t i = 0; same && i < n; i++)
            same = de->derived[i].domain == attrs[i].domain && de->derived[i].name == attrs[i].name &&
                   de->derived[i].bare == attrs[i].bare && dg_attrval_equal(&de->derived[i].v, &attrs[i].v);
        if (same)
            return;
    }
    free(de->derived);
    de->derived = NULL;
    de->nderived = 0;
    if (n) {
        size_t total = n * sizeof(de_attr);
        for (uint32_t i = 0; i < n; i++)
            total += (de_attrval_list_bytes(&attrs[i].v) + 7) & ~(size_t)7;
        char *block = de_xmalloc(total);
        de_attr *copy = (de_attr *)block;
        memcpy(copy, attrs, n * sizeof(de_attr));
        char *p = block + n * sizeof(de_attr);
        for (uint32_t i = 0; i < n; i++) {
            size_t lb = de_attrval_list_bytes(&attrs[i].v);
            if (!lb)
                continue;
            memcpy(p, attrs[i].v.u.ints, lb);
            copy[i].v.u.ints = (const int64_t *)(void *)p;
            p += (lb + 7) & ~(size_t)7;
        }
        de->derived = copy;
        de->nderived = n;
    }
    de->gen = ++g->devgen;
    dg_notify_device(g, devid);
}

uint32_t dg_pool_id_limit(const dg_graph *g) { return g->npools; }

bool dg_pool_get(const dg_graph *g, uint32_t pid, dg_pool *out)
{
    if (pid >= g->npools || g->pools[pid].slices.n == 0)
        return false;
    const pool_ent *p = &g->pools[pid];
    out->driver = p->driver;
    out->name = p->name;
    out->max_generation = p->max_generation;
    out->nslices_at_max = p->nslices_at_max;
    out->slice_count = p->slice_count;
    out->gen = p->gen;
    out->slices = p->slices.v;
    out->nslices = p->slices.n;
    return true;
}

uint32_t dg_pool_find(const dg_graph *g, uint32_t driver, uint32_t name)
{
    uint64_t v, key = de_pack2(driver, name);
    uint32_t h = pool_hint_slot(driver, name);
    if (g->pool_hint[h].id1 && g->pool_hint[h].key == key)
        return g->pool_hint[h].id1 - 1;
    if (de_map_get(&g->pool_names, key, &v))
        return (uint32_t)v;
    return DG_NONE;
}

bool dg_pool_complete(const dg_graph *g, uint32_t pid)
{
    if (pid >= g->npools || g->pools[pid].slices.n == 0)
        return false;
    return (int64_t)g->pools[pid].nslices_at_max == g->pools[pid].slice_count;
}

void dg_slices_on_node(const dg_graph *g, uint32_t node, const uint32_t **sids, uint32_t *n)
{
    uint64_t v;
    if (de_map_get(&g->node_idx, node, &v)) {
        *sids = g->node_lists[v].v;
        *n = g->node_lists[v].n;
    } else {
        *sids = NULL;
        *n = 0;
    }
}

void dg_slices_shared(const dg_graph *g, const uint32_t **sids, uint32_t *n)
{
    *sids = g->shared.v;
    *n = g->shared.n;
}

void dg_slices_with_counters(const dg_graph *g, const uint32_t **sids, uint32_t *n)
{
    *sids = g->counter_slices.v;
    *n = g->counter_slices.n;
}

void dg_slices_of_driver(const dg_graph *g, uint32_t driver, const uint32_t **sids, uint32_t *n)
{
    uint64_t v;
    if (de_map_get(&g->driver_idx, driver, &v)) {
        *sids = g->driver_lists[v].v;
        *n = g->driver_lists[v].n;
    } else {
        *sids = NULL;
        *n = 0;
    }
}

void dg_slice_nodes(const dg_graph *g, const uint32_t **names, uint32_t *n)
{
    *names = g->node_list_names;
    *n = g->nnode_lists;
}
