/*
 * al_nar.c - node allocatable resources (KEP-5517, gate
 * DRANodeAllocatableResources): devices whose ResourceSlice entry maps
 * them to node resources (`nodeAllocatableResources: {cpu: {mapping:
 * {deviceMultiplier: "8"}}}`) take those resources from the node too.  The
 * one implementation of upstream's DynamicResources Filter step
 * (calculateAndCheckNodeAllocatableResources), shared by al_schedule_pod
 * and `serve`, which also writes the result into
 * pod.status.nodeAllocatableResourceClaimStatuses.
 *
 * After Allocate on a node, per claim of the pod (allocated before or now)
 * whose devices on that node carry nodeAllocatableResources:
 *  - mapping: with capacityKey, the result's consumedCapacity[key] times
 *    capacityMultiplier (a result without consumedCapacity is upstream's
 *    error; a key it does not consume adds nothing); else deviceMultiplier
 *    per device;
 *  - overhead: perPod and perContainer summed over the claim's devices;
 *  - containers: the pod's containers (init ones first) naming the claim in
 *    resources.claims, once per reference.
 * The pod's demand is its requests plus, per claim, the mapped quantities,
 * perPod and perContainer times the referencing containers; cpu, memory,
 * ephemeral-storage and hugepages must fit in allocatable minus what the
 * node's pods request (their own statuses counted the same way,
 * al_pod_usage).  A claim with a mapped device reserved for another
 * consumer cannot be shared.  Quantities are summed exactly; a product with
 * capacityMultiplier is computed in milli-units, rounded up.
 */
#include "al_int.h"

#include <stdio.h>
#include <stdlib.h>

static bool device_on_node(al_allocator *a, uint32_t devid, const dg_node *node)
{
    dg_devref ref;
    if (!dg_device_ref(a->g, devid, &ref))
        return false;
    const dg_slice *s = dg_slice_get(a->g, ref.slice);
    const dg_device *d = &s->devices[ref.index];
    uint8_t mode = s->ns_mode == DG_NS_PER_DEVICE ? d->ns_mode : s->ns_mode;
    uint32_t nn = s->ns_mode == DG_NS_PER_DEVICE ? d->node_name : s->node_name;
    const dg_nodesel *sel = s->ns_mode == DG_NS_PER_DEVICE ? &d->node_selector : &s->node_selector;
    switch (mode) {
    case DG_NS_NODE_NAME: return nn == node->meta.name;
    case DG_NS_ALL_NODES: return true;
    case DG_NS_NODE_SELECTOR: {
        bool m = false;
        de_err e;
        de_err_clear(&e);
        return dg_nodesel_match(a->g, sel, node->meta.name, node->meta.labels, node->meta.nlabels, &m, &e) == DE_OK &&
               m;
    }
    default: return false;
    }
}

/* The device a result names, as the node sees it (NULL: not there). */
static const dg_device *result_device(al_allocator *a, const dg_result *x, const dg_node *node)
{
    uint32_t devid = dg_device_find(a->g, x->driver, x->pool, x->device);
    if (devid == DG_NONE || (node && !device_on_node(a, devid, node)))
        return NULL;
    return dg_device_get(a->g, devid);
}

static bool has_nar(const dg_device *d, bool mapped_only)
{
    for (uint32_t i = 0; d && i < d->nnars; i++)
        if (!mapped_only || d->nars[i].has_mapping)
            return true;
    return false;
}

static de_rc qadd(de_qty *acc, de_qty v, de_err *e)
{
    de_qty out;
    if (de_qty_add(*acc, v, &out) != DE_OK)
        return de_errf(e, DE_ERANGE, "node allocatable resources: sum out of range");
    *acc = out;
    return DE_OK;
}

/* consumed * multiplier, in milli-units rounded up, in consumed's format */
static de_rc qmul(de_qty consumed, de_qty mult, de_qty *out, de_err *e)
{
    __int128 c = de_qty_milli_value(consumed), m = de_qty_milli_value(mult);
    __int128 p = c * m, q = p / 1000;
    if (p % 1000 > 0)
        q++;
    if (q > INT64_MAX || q < INT64_MIN)
        return de_errf(e, DE_ERANGE, "node allocatable resources: product out of range");
    *out = de_qty_from_milli((int64_t)q, (de_qfmt)consumed.fmt);
    return DE_OK;
}

static al_nar_res *res_slot(al_nar_status *s, uint32_t name, uint32_t cap)
{
    for (uint32_t i = 0; i < s->nmapping; i++)
        if (s->mapping[i].name == name)
            return &s->mapping[i];
    if (s->nmapping == cap)
        return NULL;
    s->mapping[s->nmapping] = (al_nar_res){.name = name};
    return &s->mapping[s->nmapping++];
}

static al_nar_over *over_slot(al_nar_status *s, uint32_t name, uint32_t cap)
{
    for (uint32_t i = 0; i < s->noverhead; i++)
        if (s->overhead[i].name == name)
            return &s->overhead[i];
    if (s->noverhead == cap)
        return NULL;
    s->overhead[s->noverhead] = (al_nar_over){.name = name};
    return &s->overhead[s->noverhead++];
}

static int cmp_res(const void *x, const void *y, void *in)
{
    return de_intern_cmp(in, ((const al_nar_res *)x)->name, ((const al_nar_res *)y)->name);
}

static int cmp_over(const void *x, const void *y, void *in)
{
    return de_intern_cmp(in, ((const al_nar_over *)x)->name, ((const al_nar_over *)y)->name);
}

static int cmp_status(const void *x, const void *y, void *in)
{
    return de_intern_cmp(in, ((const al_nar_status *)x)->claim, ((const al_nar_status *)y)->claim);
}

/* One claim's status from its allocation (upstream's buildNodeAllocatableDRAInfo). */
static de_rc claim_status(al_allocator *a, const dg_claim *cl, const dg_allocation *al, const dg_node *node,
                          de_arena *ar, al_nar_status *s, de_err *e)
{
    uint32_t cap = 0;
    for (uint32_t i = 0; i < al->nresults; i++) {
        const dg_device *d = result_device(a, &al->results[i], node);
        cap += d ? d->nnars : 0;
    }
    memset(s, 0, sizeof *s);
    s->claim = cl->meta.name;
    s->mapping = AL_NEW(ar, al_nar_res, cap ? cap : 1);
    s->overhead = AL_NEW(ar, al_nar_over, cap ? cap : 1);
    for (uint32_t i = 0; i < al->nresults; i++) {
        const dg_result *x = &al->results[i];
        const dg_device *d = result_device(a, x, node);
        for (uint32_t k = 0; d && k < d->nnars; k++) {
            const dg_nar *n = &d->nars[k];
            if (n->has_mapping && n->capacity_key) {
                if (!x->has_consumed)
                    return de_errf(e, DE_EINVAL,
                                   "claim %s/%s, device %s: ConsumedCapacity is nil, but Capacity key '%s' is set in "
                                   "NodeAllocatableResources for resource %s",
                                   al_str(a, cl->meta.ns), al_str(a, cl->meta.name), al_str(a, x->device),
                                   al_str(a, n->capacity_key), al_str(a, n->resource));
                for (uint32_t j = 0; j < x->nconsumed; j++) {
                    if (x->consumed[j].key != n->capacity_key)
                        continue;
                    de_qty v = x->consumed[j].value;
                    if (n->has_cap_mult && de_qty_cmp(n->cap_mult, de_qty_from_int(1, DE_QFMT_DECIMAL_SI)))
                        DE_TRY(qmul(v, n->cap_mult, &v, e));
                    al_nar_res *r = res_slot(s, n->resource, cap);
                    DE_TRY(qadd(&r->qty, v, e));
                }
            } else if (n->has_mapping && n->has_dev_mult) {
                al_nar_res *r = res_slot(s, n->resource, cap);
                DE_TRY(qadd(&r->qty, n->dev_mult, e));
            }
            if (n->has_per_pod || n->has_per_container) {
                al_nar_over *o = over_slot(s, n->resource, cap);
                if (n->has_per_pod) {
                    DE_TRY(qadd(&o->per_pod, n->per_pod, e));
                    o->has_pod = true;
                }
                if (n->has_per_container) {
                    DE_TRY(qadd(&o->per_ctr, n->per_container, e));
                    o->has_ctr = true;
                }
            }
        }
    }
    qsort_r(s->mapping, s->nmapping, sizeof *s->mapping, cmp_res, a->in);
    qsort_r(s->overhead, s->noverhead, sizeof *s->overhead, cmp_over, a->in);
    return DE_OK;
}

/* The pod's containers (init first, as dg_pod keeps them) naming the pod
 * claim `ref`, once per reference. */
static void containers_of(al_allocator *a, const dg_pod *pod, uint32_t ref, de_arena *ar, al_nar_status *s)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < pod->ncontainers; i++)
        n += pod->containers[i].nclaims;
    s->containers = AL_NEW(ar, uint32_t, n ? n : 1);
    (void)a;
    for (uint32_t i = 0; i < pod->ncontainers; i++)
        for (uint32_t k = 0; k < pod->containers[i].nclaims; k++)
            if (pod->containers[i].claims[k].name == ref)
                s->containers[s->ncontainers++] = pod->containers[i].name;
}

/* Reserved for someone else than the pod or (KEP-5729) its PodGroup. */
static bool reserved_for_other(al_allocator *a, const dg_claim *cl, const dg_pod *pod, uint32_t podid)
{
    const char *gn = a->opts.gates.on[DE_GATE_WORKLOAD_RESOURCE_CLAIMS] ? al_pod_group_name(a->g, podid) : NULL;
    uint32_t group = gn ? al_intern(a, gn) : 0, pg = al_intern(a, "podgroups");
    for (uint32_t i = 0; i < cl->nreserved_for; i++) {
        const dg_consumer *r = &cl->reserved_for[i];
        if (r->uid != pod->meta.uid && !(group && r->resource == pg && r->name == group))
            return true;
    }
    return false;
}

/* Per status: what it adds to the pod's demand (upstream's
 * addDRANodeAllocatableClaimResources). */
void al_nar_demand(const al_nar_status *st, uint32_t n, al_amount **acc, uint32_t *na, uint32_t *cap)
{
    for (uint32_t i = 0; i < n; i++) {
        const al_nar_status *s = &st[i];
        for (uint32_t k = 0; k < s->nmapping; k++)
            al_amount_add(acc, na, cap, s->mapping[k].name, de_qty_milli_value(s->mapping[k].qty));
        for (uint32_t k = 0; k < s->noverhead; k++) {
            const al_nar_over *o = &s->overhead[k];
            int64_t v = o->has_pod ? de_qty_milli_value(o->per_pod) : 0;
            if (o->has_ctr && s->ncontainers)
                v += de_qty_milli_value(o->per_ctr) * (int64_t)s->ncontainers;
            al_amount_add(acc, na, cap, o->name, v);
        }
    }
}

static bool node_resource(al_allocator *a, uint32_t name)
{
    if (name == a->s_cpu || name == a->s_memory)
        return true;
    const char *s = al_str(a, name);
    return !strcmp(s, "ephemeral-storage") || !strncmp(s, "hugepages-", 10);
}

static int cmp_amount(const void *x, const void *y, void *in)
{
    return de_intern_cmp(in, ((const al_amount *)x)->name, ((const al_amount *)y)->name);
}

de_rc al_nar_fit(al_allocator *a, const al_nar_pod *p, const dg_node *node, de_arena *ar, al_nar *out, al_fit *f,
                 de_err *e)
{
    memset(out, 0, sizeof *out);
    al_fit_clear(f);
    if (!a->opts.gates.on[DE_GATE_NODE_ALLOCATABLE_RESOURCES])
        return DE_OK; /* ignored, as upstream does without the gate */
    const dg_pod *pod = p->pod;
    /* claims already allocated with a mapped device cannot be shared */
    for (uint32_t i = 0; i < p->nclaims; i++) {
        const dg_claim *cl = p->claims[i] == DG_NONE ? NULL : dg_claim_get(a->g, p->claims[i]);
        if (!cl || !cl->allocated || !reserved_for_other(a, cl, pod, p->podid))
            continue;
        bool mapped = false;
        for (uint32_t k = 0; k < cl->allocation.nresults && !mapped; k++)
            mapped = has_nar(result_device(a, &cl->allocation.results[k], NULL), true);
        if (mapped) {
            f->bit = AL_FIT_CLAIM_NODE;
            f->unresolvable = true;
            snprintf(f->reasons, sizeof f->reasons,
                     "node allocatable resource claim %s has a mapped device and cannot be shared across pods",
                     al_str(a, cl->meta.name));
            return DE_OK;
        }
    }
    out->st = AL_NEW(ar, al_nar_status, p->nclaims ? p->nclaims : 1);
    for (uint32_t i = 0; i < p->nclaims; i++) {
        const dg_claim *cl = p->claims[i] == DG_NONE ? NULL : dg_claim_get(a->g, p->claims[i]);
        if (!cl)
            continue;
        const dg_allocation *al = cl->allocated ? &cl->allocation : NULL;
        for (uint32_t k = 0; k < p->npending; k++)
            if (p->pending[k] == p->claims[i])
                al = &p->allocs[k].alloc;
        if (!al)
            continue;
        bool any = false;
        for (uint32_t k = 0; k < al->nresults && !any; k++)
            any = has_nar(result_device(a, &al->results[k], node), false);
        if (!any)
            continue;
        al_nar_status *s = &out->st[out->n];
        DE_TRY(claim_status(a, cl, al, node, ar, s, e));
        if (!s->nmapping && !s->noverhead)
            continue;
        /* the ref names of the pod's own claims; the KEP-5004 claim has none */
        if (i < pod->nclaims)
            containers_of(a, pod, pod->claims[i].name, ar, s);
        out->n++;
    }
    if (!out->n)
        return DE_OK;
    qsort_r(out->st, out->n, sizeof *out->st, cmp_status, a->in);
    /* the pod's demand against what is left on the node */
    al_amount *dem = NULL;
    uint32_t nd = 0, cap = 0;
    for (uint32_t i = 0; i < p->nreq; i++)
        al_amount_add(&dem, &nd, &cap, p->req[i].name, p->req[i].milli);
    al_nar_demand(out->st, out->n, &dem, &nd, &cap);
    qsort_r(dem, nd, sizeof *dem, cmp_amount, a->in);
    /* cpu, memory, ephemeral-storage, then hugepages in name order */
    static const int pass_of[] = {0, 1, 2, 3};
    for (int pass = 0; pass < 4; pass++)
        for (uint32_t i = 0; i < nd; i++) {
            uint32_t nm = dem[i].name;
            const char *rn = al_str(a, nm);
            int which = nm == a->s_cpu ? 0 : nm == a->s_memory ? 1 : !strcmp(rn, "ephemeral-storage") ? 2 : 3;
            if (which != pass_of[pass] || dem[i].milli <= 0 || !node_resource(a, nm))
                continue;
            int64_t alloc = -1;
            for (uint32_t k = 0; k < node->nallocatable; k++)
                if (node->allocatable[k].name == nm)
                    alloc = de_qty_milli_value(node->allocatable[k].value);
            if (alloc < 0)
                continue; /* not stated: not checked (al_fit.c) */
            if (dem[i].milli > alloc - al_node_requested(a, node->meta.name, nm)) {
                size_t l = strlen(f->reasons);
                snprintf(f->reasons + l, sizeof f->reasons - l, "%sInsufficient %s", l ? "\n" : "", rn);
                f->bit = AL_FIT_RESOURCES;
                f->unresolvable |= dem[i].milli > alloc;
            }
        }
    out->demand = AL_NEW(ar, al_amount, nd ? nd : 1);
    if (nd)
        memcpy(out->demand, dem, nd * sizeof *dem);
    out->ndemand = nd;
    free(dem);
    return DE_OK;
}

json_t *al_nar_json(const dg_graph *g, const al_nar *n)
{
    const de_interner *in = dg_intern(g);
    json_t *arr = json_array();
    char q[DE_QTY_TEXT_MAX];
    for (uint32_t i = 0; i < n->n; i++) {
        const al_nar_status *s = &n->st[i];
        json_t *o = json_pack("{s:s}", "resourceClaimName", de_intern_str(in, s->claim));
        if (s->ncontainers) {
            json_t *c = json_array();
            for (uint32_t k = 0; k < s->ncontainers; k++)
                json_array_append_new(c, json_string(de_intern_str(in, s->containers[k])));
            json_object_set_new(o, "containers", c);
        }
        if (s->nmapping) {
            json_t *m = json_array();
            for (uint32_t k = 0; k < s->nmapping; k++) {
                de_qty_format(s->mapping[k].qty, q, sizeof q);
                json_array_append_new(m, json_pack("{s:s, s:s}", "name", de_intern_str(in, s->mapping[k].name),
                                                   "quantity", q));
            }
            json_object_set_new(o, "mapping", m);
        }
        if (s->noverhead) {
            json_t *m = json_array();
            for (uint32_t k = 0; k < s->noverhead; k++) {
                const al_nar_over *ov = &s->overhead[k];
                json_t *x = json_pack("{s:s}", "name", de_intern_str(in, ov->name));
                if (ov->has_pod) {
                    de_qty_format(ov->per_pod, q, sizeof q);
                    json_object_set_new(x, "perPod", json_string(q));
                }
                if (ov->has_ctr) {
                    de_qty_format(ov->per_ctr, q, sizeof q);
                    json_object_set_new(x, "perContainer", json_string(q));
                }
                json_array_append_new(m, x);
            }
            json_object_set_new(o, "overhead", m);
        }
        json_array_append_new(arr, o);
    }
    return arr;
}
