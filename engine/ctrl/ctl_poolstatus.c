/*
 * ctl_poolstatus.c - a ResourcePoolStatusRequest's status as the 1.37
 * controller (pkg/controller/resourcepoolstatusrequest) calculates it:
 *
 *  - pools: every pool of spec.driver (only spec.poolName when set), counted
 *    over its slices at the newest generation; a pool with fewer slices
 *    there than its resourceSliceCount gets validationError "PoolIncomplete:
 *    ..." and no counts (the controller then retries rather than write);
 *  - totalDevices: the devices of those slices; unavailableDevices: those
 *    with a NoSchedule or NoExecute taint of their own or from a matching
 *    DeviceTaintRule (a rule without deviceSelector matches nothing here);
 *    allocatedDevices: distinct device names of the pool in the results of
 *    allocated claims, adminAccess results skipped, so a shared device
 *    counts once; availableDevices = max(0, total - allocated - unavailable)
 *    (a tainted allocated device is subtracted twice, as upstream does);
 *  - nodeName when every slice names the same node;
 *  - partitionSummary / shareableSummary (ctl_pviews.c);
 *  - pools sorted by driver then pool name, poolCount = all of them, the
 *    first spec.limit shown; condition Complete/True "CalculationComplete",
 *    "Calculated status for N pools" (+ " (M incomplete)" counting every
 *    shown pool with a validationError).
 */
#include "../base/buf.h"
#include "ctl_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint32_t ctl_cap_key(de_interner *in, const de_cap *c)
{
    if (c->bare)
        return c->name;
    char k[600];
    snprintf(k, sizeof k, "%s/%s", de_intern_str(in, c->domain), de_intern_str(in, c->name));
    return de_intern_cstr(in, k);
}

static bool blocks(uint8_t effect) { return effect == DG_EFFECT_NO_SCHEDULE || effect == DG_EFFECT_NO_EXECUTE; }

/* A device counts as unavailable: its own taint, or a matching rule. */
static bool unavailable(const dg_graph *g, bool rules, uint32_t driver, uint32_t pool, const dg_device *d)
{
    for (uint32_t i = 0; i < d->ntaints; i++)
        if (blocks(d->taints[i].effect))
            return true;
    for (uint32_t i = 0; rules && i < dg_taint_rule_id_limit(g); i++) {
        const dg_taint_rule *r = dg_taint_rule_get(g, i);
        if (!r || !blocks(r->taint.effect) || !r->has_selector)
            continue;
        if ((r->driver && r->driver != driver) || (r->pool && r->pool != pool) || (r->device && r->device != d->name))
            continue;
        return true;
    }
    return false;
}

/* Per pool of the driver: who holds its devices and what they consumed. */
typedef struct pool_use {
    de_map inuse;
    ctl_amount *consumed;
    uint32_t nconsumed, cap;
} pool_use;

typedef struct use_ctx {
    uint32_t driver;
    de_map by_pool; /* pool name -> index + 1 */
    pool_use *p;
    uint32_t n, cap;
} use_ctx;

static void add_amount(pool_use *u, uint32_t key, de_qty v)
{
    for (uint32_t i = 0; i < u->nconsumed; i++)
        if (u->consumed[i].key == key) {
            de_qty sum;
            if (de_qty_add(u->consumed[i].value, v, &sum) == DE_OK)
                u->consumed[i].value = sum;
            return;
        }
    if (u->nconsumed == u->cap) {
        u->cap = u->cap ? u->cap * 2 : 8;
        u->consumed = de_xrealloc(u->consumed, u->cap * sizeof *u->consumed);
    }
    u->consumed[u->nconsumed++] = (ctl_amount){key, v};
}

static void on_usage(void *vctx, uint32_t driver, uint32_t pool, uint32_t device, const dg_usage *u)
{
    use_ctx *c = vctx;
    if (driver != c->driver)
        return;
    uint64_t *slot = de_map_slot(&c->by_pool, pool, 0);
    if (!*slot) {
        if (c->n == c->cap) {
            c->cap = c->cap ? c->cap * 2 : 8;
            c->p = de_xrealloc(c->p, c->cap * sizeof *c->p);
        }
        memset(&c->p[c->n], 0, sizeof c->p[c->n]);
        de_map_init(&c->p[c->n].inuse);
        *slot = ++c->n;
    }
    pool_use *pu = &c->p[*slot - 1];
    de_map_put(&pu->inuse, device, 1);
    for (uint32_t i = 0; i < u->nconsumed; i++)
        add_amount(pu, u->consumed[i].key, u->consumed[i].value);
}

static const de_interner *sort_in;
static const dg_graph *sort_g;
static int cmp_pool(const void *a, const void *b)
{
    dg_pool x, y;
    dg_pool_get(sort_g, *(const uint32_t *)a, &x);
    dg_pool_get(sort_g, *(const uint32_t *)b, &y);
    int r = de_intern_cmp(sort_in, x.driver, y.driver);
    return r ? r : de_intern_cmp(sort_in, x.name, y.name);
}

/* The pool ids of the request's driver (and pool), sorted. */
static uint32_t *request_pools(const dg_graph *g, const dg_pool_status_request *r, uint32_t *count)
{
    const uint32_t *sids;
    uint32_t ns;
    dg_slices_of_driver(g, r->driver, &sids, &ns);
    uint32_t *ids = de_xmalloc((ns + 1) * sizeof *ids), k = 0;
    de_map seen;
    de_map_init(&seen);
    for (uint32_t i = 0; i < ns; i++) {
        const dg_slice *s = dg_slice_get(g, sids[i]);
        if (!s || s->driver != r->driver || (r->pool_name && s->pool != r->pool_name))
            continue;
        uint32_t pid = dg_slice_pool(g, sids[i]);
        if (pid == DG_NONE || de_map_get(&seen, pid, NULL))
            continue;
        de_map_put(&seen, pid, 1);
        ids[k++] = pid;
    }
    de_map_destroy(&seen);
    sort_g = g;
    sort_in = dg_intern(g);
    qsort(ids, k, sizeof *ids, cmp_pool);
    *count = k;
    return ids;
}

static void set_int(json_t *o, const char *k, int64_t v) { json_object_set_new(o, k, json_integer(v)); }

/* One pool's PoolStatus; *bad when it carries a validationError, *incomplete
 * when that error is PoolIncomplete. */
static json_t *pool_status(const dg_graph *g, const dg_pool_status_request *r, const de_gates *gates, uint32_t pid,
                           use_ctx *use, bool *bad, bool *incomplete)
{
    de_interner *in = dg_intern(g);
    dg_pool p;
    dg_pool_get(g, pid, &p);
    const dg_slice **slices = de_xmalloc((p.nslices + 1) * sizeof *slices);
    uint32_t nslices = 0, total = 0, unavail = 0, ndev = 0, node = 0;
    bool mixed = false;
    bool rules = gates->on[DE_GATE_DEVICE_TAINT_RULES];
    for (uint32_t i = 0; i < p.nslices; i++) {
        const dg_slice *s = dg_slice_get(g, p.slices[i]);
        if (!s || s->generation != p.max_generation)
            continue;
        uint32_t sn = s->ns_mode == DG_NS_NODE_NAME ? s->node_name : 0;
        if (!nslices)
            node = sn;
        else if (sn != node)
            mixed = true;
        slices[nslices++] = s;
        total += s->ndevices;
        for (uint32_t j = 0; j < s->ndevices; j++)
            unavail += unavailable(g, rules, p.driver, p.name, &s->devices[j]);
    }
    uint64_t ui = 0;
    pool_use *pu = de_map_get(&use->by_pool, p.name, &ui) ? &use->p[ui - 1] : NULL;
    json_t *o = json_object();
    json_object_set_new(o, "driver", json_string(de_intern_str(in, p.driver)));
    json_object_set_new(o, "poolName", json_string(de_intern_str(in, p.name)));
    set_int(o, "generation", p.max_generation);
    char err[CTL_PSR_MAX_MESSAGE + 1] = "";
    *bad = *incomplete = false;
    if ((int64_t)nslices < p.slice_count) {
        snprintf(err, sizeof err, "PoolIncomplete: pool %s/%s is incomplete: observed %u/%lld slices at generation %lld",
                 de_intern_str(in, p.driver), de_intern_str(in, p.name), nslices, (long long)p.slice_count,
                 (long long)p.max_generation);
        *incomplete = true;
    } else {
        uint32_t alloc = pu ? (uint32_t)pu->inuse.n : 0;
        int64_t avail = (int64_t)total - alloc - unavail;
        set_int(o, "resourceSliceCount", nslices);
        set_int(o, "totalDevices", total);
        set_int(o, "allocatedDevices", alloc);
        set_int(o, "availableDevices", avail < 0 ? 0 : avail);
        set_int(o, "unavailableDevices", unavail);
    }
    if (node && !mixed)
        json_object_set_new(o, "nodeName", json_string(de_intern_str(in, node)));
    if (!*incomplete) {
        /* the API server drops partitionTypeAttribute (slices) and
         * defaultPartitionTypeAttribute (requests) without the gate */
        bool types = gates->on[DE_GATE_PARTITIONABLE_DEVICES_TYPE];
        for (uint32_t i = 0; i < nslices; i++)
            ndev += slices[i]->ndevices;
        ctl_pdev *devs = de_xcalloc(ndev + 1, sizeof *devs);
        uint32_t k = 0;
        for (uint32_t i = 0; i < nslices; i++)
            for (uint32_t j = 0; j < slices[i]->ndevices; j++)
                devs[k++] = (ctl_pdev){&slices[i]->devices[j], types ? slices[i]->partition_type_attr : 0, false, 0};
        de_map none;
        de_map_init(&none);
        ctl_pool_in pin = {g, in, p.driver, p.name, devs, ndev, slices, nslices, pu ? &pu->inuse : &none,
                           pu ? pu->consumed : NULL, pu ? pu->nconsumed : 0};
        json_t *views = json_object();
        ctl_pool_views(&pin, types ? r->default_partition_type_attr : 0, views, err, sizeof err);
        json_object_update(o, views);
        json_decref(views);
        de_map_destroy(&none);
        free(devs);
    }
    if (err[0]) {
        json_object_set_new(o, "validationError", json_string(err));
        /* keep upstream's field order: validationError before the views */
        json_t *ps = json_incref(json_object_get(o, "partitionSummary"));
        json_t *sh = json_incref(json_object_get(o, "shareableSummary"));
        json_object_del(o, "partitionSummary");
        json_object_del(o, "shareableSummary");
        if (ps)
            json_object_set_new(o, "partitionSummary", ps);
        if (sh)
            json_object_set_new(o, "shareableSummary", sh);
        *bad = true;
    }
    free(slices);
    return o;
}

void ctl_pool_status(const dg_graph *g, const dg_pool_status_request *r, const de_gates *gates,
                     const char *now_rfc3339, ctl_psr_result *out)
{
    memset(out, 0, sizeof *out);
    uint32_t npools;
    uint32_t *pools = request_pools(g, r, &npools);
    use_ctx use = {.driver = r->driver};
    de_map_init(&use.by_pool);
    dg_usage_each(g, on_usage, &use);
    int32_t limit = r->limit > 0 ? r->limit : CTL_PSR_LIMIT_DEFAULT;
    uint32_t shown = npools < (uint32_t)limit ? npools : (uint32_t)limit, nbad = 0;
    json_t *arr = json_array();
    for (uint32_t i = 0; i < shown; i++) {
        bool bad, incomplete;
        json_array_append_new(arr, pool_status(g, r, gates, pools[i], &use, &bad, &incomplete));
        nbad += bad;
        out->incomplete |= incomplete;
    }
    json_t *st = json_object();
    set_int(st, "poolCount", npools);
    if (shown)
        json_object_set_new(st, "pools", arr);
    else
        json_decref(arr);
    char msg[200];
    if (nbad)
        snprintf(msg, sizeof msg, "Calculated status for %u pools (%u incomplete)", shown, nbad);
    else
        snprintf(msg, sizeof msg, "Calculated status for %u pools", shown);
    json_t *cond = json_object();
    json_object_set_new(cond, "type", json_string("Complete"));
    json_object_set_new(cond, "status", json_string("True"));
    if (now_rfc3339)
        json_object_set_new(cond, "lastTransitionTime", json_string(now_rfc3339));
    json_object_set_new(cond, "reason", json_string("CalculationComplete"));
    json_object_set_new(cond, "message", json_string(msg));
    json_t *conds = json_array();
    json_array_append_new(conds, cond);
    json_object_set_new(st, "conditions", conds);
    out->status = st;
    out->pools = npools;
    out->shown = shown;
    for (uint32_t i = 0; i < use.n; i++) {
        de_map_destroy(&use.p[i].inuse);
        free(use.p[i].consumed);
    }
    free(use.p);
    de_map_destroy(&use.by_pool);
    free(pools);
}
