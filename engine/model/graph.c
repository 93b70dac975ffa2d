/*
 * graph.c - the device graph's object tables: construction, classes (with
 * the extended-resource index), templates, taint rules, nodes, namespaces,
 * pool status requests, admission checks, listeners, statistics and device
 * equality.  Loading and removal: graph_load.c; slices and devices:
 * graph_slice.c; claims, pods and usage: graph_claim.c.
 */
#include "graph_int.h"
#include "../cel/cel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- small helpers ------------------------------------------------------------ */

void u32vec_push(u32vec *a, uint32_t x)
{
    if (a->n == a->cap) {
        a->cap = a->cap ? a->cap * 2 : 4;
        a->v = de_xrealloc(a->v, a->cap * sizeof *a->v);
    }
    a->v[a->n++] = x;
}

void u32vec_insert(u32vec *a, uint32_t pos, uint32_t x)
{
    u32vec_push(a, x);
    memmove(a->v + pos + 1, a->v + pos, (a->n - 1 - pos) * sizeof *a->v);
    a->v[pos] = x;
}

bool u32vec_remove(u32vec *a, uint32_t x)
{
    for (uint32_t i = 0; i < a->n; i++)
        if (a->v[i] == x) {
            memmove(a->v + i, a->v + i + 1, (a->n - i - 1) * sizeof *a->v);
            a->n--;
            return true;
        }
    return false;
}

void u32vec_free(u32vec *a)
{
    free(a->v);
    a->v = NULL;
    a->n = a->cap = 0;
}

const char *dg_s(const dg_graph *g, uint32_t id)
{
    return de_intern_str(g->in, id);
}

uint64_t dg_bump(dg_graph *g)
{
    return ++g->gen;
}

void dg_notify(dg_graph *g, dg_kind kind, dg_op op, uint32_t id)
{
    for (uint32_t i = 0; i < g->nlisteners; i++)
        g->listeners[i].fn(g->listeners[i].ctx, kind, op, id);
}

void dg_add_listener(dg_graph *g, dg_listener fn, void *ctx)
{
    g->listeners = de_xrealloc(g->listeners, (g->nlisteners + 1) * sizeof *g->listeners);
    g->listeners[g->nlisteners++] = (listener){fn, ctx};
}

void dg_notify_device(dg_graph *g, uint32_t devid)
{
    for (uint32_t i = 0; i < g->ndev_listeners; i++)
        g->dev_listeners[i].fn(g->dev_listeners[i].ctx, devid);
}

void dg_add_device_listener(dg_graph *g, dg_device_listener fn, void *ctx)
{
    g->dev_listeners = de_xrealloc(g->dev_listeners, (g->ndev_listeners + 1) * sizeof *g->dev_listeners);
    g->dev_listeners[g->ndev_listeners++] = (dev_listener){fn, ctx};
}

void dg_remove_device_listener(dg_graph *g, dg_device_listener fn, void *ctx)
{
    for (uint32_t i = 0; i < g->ndev_listeners; i++)
        if (g->dev_listeners[i].fn == fn && g->dev_listeners[i].ctx == ctx) {
            memmove(g->dev_listeners + i, g->dev_listeners + i + 1,
                    (g->ndev_listeners - i - 1) * sizeof *g->dev_listeners);
            g->ndev_listeners--;
            return;
        }
}

void dg_remove_listener(dg_graph *g, dg_listener fn, void *ctx)
{
    for (uint32_t i = 0; i < g->nlisteners; i++)
        if (g->listeners[i].fn == fn && g->listeners[i].ctx == ctx) {
            memmove(g->listeners + i, g->listeners + i + 1, (g->nlisteners - i - 1) * sizeof *g->listeners);
            g->nlisteners--;
            return;
        }
}

uint32_t obj_table_add(obj_table *t, uint32_t ns, uint32_t name)
{
    if (t->n == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 16;
        t->e = de_xrealloc(t->e, t->cap * sizeof *t->e);
    }
    uint32_t id = t->n++;
    memset(&t->e[id], 0, sizeof t->e[id]);
    de_map_put(&t->names, de_pack2(ns, name), id);
    return id;
}

uint32_t obj_table_find(const obj_table *t, uint32_t ns, uint32_t name)
{
    uint64_t v;
    if (de_map_get(&t->names, de_pack2(ns, name), &v) && t->e[v].o)
        return (uint32_t)v;
    return DG_NONE;
}

static void obj_table_free(obj_table *t)
{
    for (uint32_t i = 0; i < t->n; i++) {
        de_arena_free(t->e[i].a);
        if (t->e[i].json)
            json_decref(t->e[i].json);
    }
    free(t->e);
    de_map_destroy(&t->names);
}

/* Put an object into a generic table: replace in place or add. */
uint32_t obj_table_put(dg_graph *g, obj_table *t, uint32_t ns, uint32_t name, void *o, de_arena *a,
                              json_t *json, bool *replaced)
{
    uint64_t v;
    uint32_t id;
    *replaced = false;
    if (de_map_get(&t->names, de_pack2(ns, name), &v)) {
        id = (uint32_t)v;
        if (t->e[id].o)
            *replaced = true;
        else
            t->live++;
        de_arena_free(t->e[id].a);
        if (t->e[id].json)
            json_decref(t->e[id].json);
    } else {
        id = obj_table_add(t, ns, name);
        t->live++;
    }
    t->e[id].o = o;
    t->e[id].a = a;
    t->e[id].json = json;
    t->e[id].gen = dg_bump(g);
    return id;
}

void obj_table_del(dg_graph *g, obj_table *t, uint32_t id)
{
    de_arena_free(t->e[id].a);
    if (t->e[id].json)
        json_decref(t->e[id].json);
    t->e[id].o = NULL;
    t->e[id].a = NULL;
    t->e[id].json = NULL;
    t->e[id].gen = dg_bump(g);
    t->live--;
}

/* ---- construction ---------------------------------------------------------------- */

dg_graph *dg_new(de_interner *in, const dg_opts *opts)
{
    dg_graph *g = de_xcalloc(1, sizeof *g);
    g->in = in ? in : de_intern_new();
    g->own_in = in == NULL;
    if (opts)
        g->opts = *opts;
    if (g->opts.gates)
        g->gates = *g->opts.gates;
    else
        de_gates_default(&g->gates);
    g->opts.gates = NULL;
    de_map_init(&g->slice_names);
    de_map_init(&g->pool_names);
    de_map_init(&g->pool_devices);
    de_map_init(&g->node_idx);
    de_map_init(&g->driver_idx);
    de_map_init(&g->ext_best);
    de_map_init(&g->claim_names);
    de_map_init(&g->pod_names);
    de_map_init(&g->usage_idx);
    de_map_init(&g->pins);
    obj_table *tables[] = {&g->classes, &g->templates, &g->rules, &g->nodes, &g->namespaces, &g->psrs};
    for (size_t i = 0; i < DE_ARRAY_LEN(tables); i++)
        de_map_init(&tables[i]->names);
    g->id_admin_label = de_intern_cstr(g->in, "resource.kubernetes.io/admin-access");
    g->id_true = de_intern_cstr(g->in, "true");
    g->id_pod_claim_name_ann = de_intern_cstr(g->in, "resource.kubernetes.io/pod-claim-name");
    g->id_metadata_name = de_intern_cstr(g->in, "metadata.name");
    return g;
}

void dg_free(dg_graph *g)
{
    if (!g)
        return;
    dg_slices_free(g);
    dg_claims_free(g);
    obj_table *tables[] = {&g->classes, &g->templates, &g->rules, &g->nodes, &g->namespaces, &g->psrs};
    for (size_t i = 0; i < DE_ARRAY_LEN(tables); i++)
        obj_table_free(tables[i]);
    de_map_destroy(&g->ext_best);
    u32vec_free(&g->rules_sorted);
    free(g->listeners);
    free(g->dev_listeners);
    de_arena_free(g->scratch);
    cel_env_free(g->cel);
    if (g->own_in)
        de_intern_free(g->in);
    free(g);
}

de_interner *dg_intern(const dg_graph *g) { return g->in; }
uint64_t dg_generation(const dg_graph *g) { return g->gen; }
uint64_t dg_devices_generation(const dg_graph *g) { return g->devgen; }

const char *dg_kind_name(dg_kind k)
{
    static const char *const names[DG_KIND_COUNT] = {
        [DG_KIND_NONE] = "",
        [DG_KIND_RESOURCE_SLICE] = "ResourceSlice",
        [DG_KIND_DEVICE_CLASS] = "DeviceClass",
        [DG_KIND_RESOURCE_CLAIM] = "ResourceClaim",
        [DG_KIND_RESOURCE_CLAIM_TEMPLATE] = "ResourceClaimTemplate",
        [DG_KIND_DEVICE_TAINT_RULE] = "DeviceTaintRule",
        [DG_KIND_RESOURCE_POOL_STATUS_REQUEST] = "ResourcePoolStatusRequest",
        [DG_KIND_NODE] = "Node",
        [DG_KIND_POD] = "Pod",
        [DG_KIND_NAMESPACE] = "Namespace",
        [DG_KIND_OTHER] = "other",
    };
    return (unsigned)k < DG_KIND_COUNT ? names[k] : "";
}

const de_gates *dg_gates(const dg_graph *g) { return &g->gates; }

/* ---- extended resources (dra-model 1.3) ---------------------------------------------- */

static bool class_newer(const dg_graph *g, const dg_class *a, const dg_class *b)
{
    if (a->meta.creation != b->meta.creation)
        return a->meta.creation > b->meta.creation;
    return de_intern_cmp(g->in, a->meta.name, b->meta.name) < 0;
}

void dg_ext_recompute(dg_graph *g, uint32_t ern)
{
    if (!ern)
        return;
    uint32_t best = DG_NONE;
    for (uint32_t i = 0; i < g->classes.n; i++) {
        const dg_class *c = g->classes.e[i].o;
        if (!c || c->extended_resource_name != ern)
            continue;
        if (best == DG_NONE || class_newer(g, c, g->classes.e[best].o))
            best = i;
    }
    if (best == DG_NONE)
        de_map_del(&g->ext_best, ern);
    else
        de_map_put(&g->ext_best, ern, best);
}

uint32_t dg_class_for_extended_resource(const dg_graph *g, uint32_t resource_name)
{
    uint64_t v;
    if (de_map_get(&g->ext_best, resource_name, &v))
        return (uint32_t)v;
    static const char prefix[] = "deviceclass.resource.kubernetes.io/";
    const char *s = dg_s(g, resource_name);
    size_t n = de_intern_len(g->in, resource_name);
    if (n > sizeof prefix - 1 && !memcmp(s, prefix, sizeof prefix - 1)) {
        uint32_t cls = de_intern_find(g->in, s + sizeof prefix - 1, n - (sizeof prefix - 1));
        if (cls != UINT32_MAX)
            return dg_class_find(g, cls);
    }
    return DG_NONE;
}

/* ---- objects: accessors ---------------------------------------------------------- */

uint32_t dg_class_id_limit(const dg_graph *g) { return g->classes.n; }
const dg_class *dg_class_get(const dg_graph *g, uint32_t cid)
{
    return cid < g->classes.n ? g->classes.e[cid].o : NULL;
}
uint32_t dg_class_find(const dg_graph *g, uint32_t name) { return obj_table_find(&g->classes, 0, name); }
uint64_t dg_class_generation(const dg_graph *g, uint32_t cid)
{
    return cid < g->classes.n ? g->classes.e[cid].gen : 0;
}

uint32_t dg_template_id_limit(const dg_graph *g) { return g->templates.n; }
const dg_claim_template *dg_template_get(const dg_graph *g, uint32_t tid)
{
    return tid < g->templates.n ? g->templates.e[tid].o : NULL;
}
uint32_t dg_template_find(const dg_graph *g, uint32_t ns, uint32_t name)
{
    return obj_table_find(&g->templates, ns, name);
}
json_t *dg_template_json(const dg_graph *g, uint32_t tid)
{
    return tid < g->templates.n && g->templates.e[tid].o ? g->templates.e[tid].json : NULL;
}

uint32_t dg_taint_rule_id_limit(const dg_graph *g) { return g->rules.n; }
const dg_taint_rule *dg_taint_rule_get(const dg_graph *g, uint32_t rid)
{
    return rid < g->rules.n ? g->rules.e[rid].o : NULL;
}

uint32_t dg_node_id_limit(const dg_graph *g) { return g->nodes.n; }
const dg_node *dg_node_get(const dg_graph *g, uint32_t nid)
{
    return nid < g->nodes.n ? g->nodes.e[nid].o : NULL;
}
uint32_t dg_node_find(const dg_graph *g, uint32_t name) { return obj_table_find(&g->nodes, 0, name); }

uint32_t dg_namespace_find(const dg_graph *g, uint32_t name) { return obj_table_find(&g->namespaces, 0, name); }
const dg_namespace *dg_namespace_get(const dg_graph *g, uint32_t nsid)
{
    return nsid < g->namespaces.n ? g->namespaces.e[nsid].o : NULL;
}

uint32_t dg_pool_status_request_id_limit(const dg_graph *g) { return g->psrs.n; }
const dg_pool_status_request *dg_pool_status_request_get(const dg_graph *g, uint32_t id)
{
    return id < g->psrs.n ? g->psrs.e[id].o : NULL;
}

/* ---- admission: adminAccess needs the namespace label ------------------------------- */

static bool spec_wants_admin(const dg_claim_spec *s)
{
    for (uint32_t i = 0; i < s->nrequests; i++)
        if (s->requests[i].has_exactly && s->requests[i].exactly.admin_access == 1)
            return true;
    return false;
}

/* Only enforced when the Namespace object is known: offline manifests often
 * omit it, and the API server's admission needs the real namespace. */
bool dg_namespace_allows_admin(const dg_graph *g, uint32_t ns)
{
    uint32_t nid = dg_namespace_find(g, ns);
    if (nid == DG_NONE)
        return true;
    const dg_namespace *n = dg_namespace_get(g, nid);
    for (uint32_t i = 0; i < n->meta.nlabels; i++)
        if (n->meta.labels[i].key == g->id_admin_label && n->meta.labels[i].value == g->id_true)
            return true;
    return false;
}

void dg_check_admin(const dg_graph *g, dec *d, const dg_claim_spec *s, uint32_t ns, const char *prefix)
{
    if (!spec_wants_admin(s) || dg_namespace_allows_admin(g, ns))
        return;
    for (uint32_t i = 0; i < s->nrequests; i++) {
        if (!(s->requests[i].has_exactly && s->requests[i].exactly.admin_access == 1))
            continue;
        char path[128];
        snprintf(path, sizeof path, "%sdevices.requests[%u].exactly.adminAccess", prefix, i);
        size_t m = dec_field(d, path);
        dec_forbidden(d, NULL, "admin access to devices requires the `resource.kubernetes.io/admin-access: \"true\"` label on the containing namespace");
        dec_pop(d, m);
    }
}

/* ---- statistics ------------------------------------------------------------------ */

static size_t table_bytes(const obj_table *t)
{
    size_t n = t->cap * sizeof *t->e + t->names.cap * 17;
    for (uint32_t i = 0; i < t->n; i++)
        if (t->e[i].a)
            n += de_arena_reserved(t->e[i].a);
    return n;
}

void dg_get_stats(const dg_graph *g, dg_stats *out)
{
    memset(out, 0, sizeof *out);
    out->slices = g->live_slices;
    out->devices = g->live_devs;
    out->pools = g->live_pools;
    out->classes = g->classes.live;
    out->claims = g->live_claims;
    out->templates = g->templates.live;
    out->taint_rules = g->rules.live;
    out->nodes = g->nodes.live;
    out->pods = g->live_pods;
    out->fast_path_slices = g->fast_path_slices;
    out->fast_path_nodes = g->fast_path_nodes;
    out->cel_programs = g->cel ? cel_env_programs(g->cel) : 0;
    out->strings = de_intern_live(g->in);
    out->claim_ids = g->nclaims;
    out->pod_ids = g->npods;
    size_t b = de_intern_bytes(g->in);
    for (uint32_t i = 0; i < g->nslices; i++)
        if (g->slices[i].a)
            b += de_arena_reserved(g->slices[i].a) + g->slices[i].s->ndevices * sizeof(uint32_t);
    b += g->capslices * sizeof *g->slices + g->capdevs * sizeof *g->devs + g->cappools * sizeof *g->pools;
    b += (g->slice_names.cap + g->pool_names.cap + g->pool_devices.cap + g->usage_idx.cap + g->pins.cap +
          g->claim_names.cap + g->pod_names.cap) * 17;
    for (uint32_t i = 0; i < g->ndevs; i++)
        b += g->devs[i].neff * sizeof(dg_taint);
    for (uint32_t i = 0; i < g->nclaims; i++) {
        if (g->claims[i].a)
            b += de_arena_reserved(g->claims[i].a);
    }
    if (g->slab) {
        de_slab_stats ss;
        de_slab_get_stats(g->slab, &ss);
        b += ss.held;
    }
    for (uint32_t i = 0; i < g->npods; i++)
        if (g->pods[i].a)
            b += de_arena_reserved(g->pods[i].a);
    const obj_table *tables[] = {&g->classes, &g->templates, &g->rules, &g->nodes, &g->namespaces, &g->psrs};
    for (size_t i = 0; i < DE_ARRAY_LEN(tables); i++)
        b += table_bytes(tables[i]);
    out->bytes = b;
}

/* ---- device equality (generation bumps only on real change) ---------------------------- */

bool dg_attrval_equal(const de_attrval *a, const de_attrval *b)
{
    if (a->kind != b->kind || a->n != b->n)
        return false;
    switch (a->kind) {
    case DE_V_INT: return a->u.i == b->u.i;
    case DE_V_BOOL: return a->u.b == b->u.b;
    case DE_V_STRING:
    case DE_V_VERSION: return a->u.s == b->u.s;
    case DE_V_INTS: return !a->n || !memcmp(a->u.ints, b->u.ints, a->n * sizeof(int64_t));
    case DE_V_BOOLS: return !a->n || !memcmp(a->u.bools, b->u.bools, a->n * sizeof(bool));
    case DE_V_STRINGS:
    case DE_V_VERSIONS: return !a->n || !memcmp(a->u.strs, b->u.strs, a->n * sizeof(uint32_t));
    default: return true;
    }
}

static bool qty_eq(de_qty a, de_qty b) { return de_qty_cmp(a, b) == 0 && a.fmt == b.fmt; }

static bool policy_equal(const dg_reqpolicy *a, const dg_reqpolicy *b)
{
    if (!a || !b)
        return a == b;
    if (a->has_default != b->has_default || a->kind != b->kind || a->nvalues != b->nvalues ||
        a->has_max != b->has_max || a->has_step != b->has_step)
        return false;
    if (a->has_default && !qty_eq(a->dflt, b->dflt))
        return false;
    for (uint32_t i = 0; i < a->nvalues; i++)
        if (!qty_eq(a->values[i], b->values[i]))
            return false;
    return qty_eq(a->min, b->min) && (!a->has_max || qty_eq(a->max, b->max)) &&
           (!a->has_step || qty_eq(a->step, b->step));
}

static bool ids_equal(const uint32_t *a, uint32_t na, const uint32_t *b, uint32_t nb)
{
    return na == nb && (!na || !memcmp(a, b, na * sizeof *a));
}

static bool nodesel_equal(const dg_nodesel *a, const dg_nodesel *b)
{
    if (a->nterms != b->nterms)
        return false;
    for (uint32_t i = 0; i < a->nterms; i++) {
        const dg_term *x = &a->terms[i], *y = &b->terms[i];
        if (x->nexprs != y->nexprs || x->nfields != y->nfields)
            return false;
        for (int k = 0; k < 2; k++) {
            const dg_requirement *rx = k ? x->fields : x->exprs, *ry = k ? y->fields : y->exprs;
            uint32_t n = k ? x->nfields : x->nexprs;
            for (uint32_t j = 0; j < n; j++)
                if (rx[j].key != ry[j].key || rx[j].op != ry[j].op ||
                    !ids_equal(rx[j].values, rx[j].nvalues, ry[j].values, ry[j].nvalues))
                    return false;
        }
    }
    return true;
}

bool dg_device_equal(const dg_device *a, const dg_device *b)
{
    if (a->name != b->name || a->nattrs != b->nattrs || a->ncaps != b->ncaps || a->nconsumes != b->nconsumes ||
        a->ntaints != b->ntaints || a->binds_to_node != b->binds_to_node || a->allow_multi != b->allow_multi ||
        a->ns_mode != b->ns_mode || a->node_name != b->node_name || a->nnars != b->nnars)
        return false;
    for (uint32_t i = 0; i < a->nattrs; i++) {
        const de_attr *x = &a->attrs[i], *y = &b->attrs[i];
        if (x->domain != y->domain || x->name != y->name || x->bare != y->bare || !dg_attrval_equal(&x->v, &y->v))
            return false;
    }
    for (uint32_t i = 0; i < a->ncaps; i++) {
        const de_cap *x = &a->caps[i], *y = &b->caps[i];
        if (x->domain != y->domain || x->name != y->name || x->bare != y->bare || !qty_eq(x->value, y->value) ||
            !policy_equal(a->policies[i], b->policies[i]))
            return false;
    }
    for (uint32_t i = 0; i < a->nconsumes; i++) {
        const dg_consumption *x = &a->consumes[i], *y = &b->consumes[i];
        if (x->counterset != y->counterset || x->ncounters != y->ncounters || x->ngroups != y->ngroups ||
            x->groups[0] != y->groups[0] || x->groups[1] != y->groups[1])
            return false;
        for (uint32_t j = 0; j < x->ncounters; j++)
            if (x->counters[j].name != y->counters[j].name || !qty_eq(x->counters[j].value, y->counters[j].value))
                return false;
    }
    for (uint32_t i = 0; i < a->ntaints; i++) {
        const dg_taint *x = &a->taints[i], *y = &b->taints[i];
        if (x->key != y->key || x->value != y->value || x->effect_raw != y->effect_raw ||
            x->time_added != y->time_added)
            return false;
    }
    for (uint32_t i = 0; i < a->nnars; i++) {
        const dg_nar *x = &a->nars[i], *y = &b->nars[i];
        if (x->resource != y->resource || x->capacity_key != y->capacity_key || x->has_cap_mult != y->has_cap_mult ||
            x->has_dev_mult != y->has_dev_mult || x->has_per_pod != y->has_per_pod ||
            x->has_per_container != y->has_per_container || !qty_eq(x->cap_mult, y->cap_mult) ||
            !qty_eq(x->dev_mult, y->dev_mult) || !qty_eq(x->per_pod, y->per_pod) ||
            !qty_eq(x->per_container, y->per_container))
            return false;
    }
    return ids_equal(a->binding_conditions, a->nbinding_conditions, b->binding_conditions,
                     b->nbinding_conditions) &&
           ids_equal(a->binding_failure_conditions, a->nbinding_failure_conditions,
                     b->binding_failure_conditions, b->nbinding_failure_conditions) &&
           nodesel_equal(&a->node_selector, &b->node_selector);
}

/* ---- tolerations ----------------------------------------------------------------- */

bool dg_tolerates(const dg_toleration *t, const dg_taint *x)
{
    if (t->effect_raw) {
        bool same = x->effect_raw ? t->effect_raw == x->effect_raw : t->effect == x->effect;
        if (!same)
            return false;
    }
    if (t->key && t->key != x->key)
        return false;
    switch (t->op) {
    case DG_TOLOP_EQUAL: return t->value == x->value;
    case DG_TOLOP_EXISTS: return true;
    default: return false;
    }
}
