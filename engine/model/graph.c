/*
 * graph.c - the device graph's object tables: construction, dg_apply /
 * dg_remove / dg_check / dg_load_path, classes (with the extended-resource
 * index), templates, taint rules, nodes, namespaces, pool status requests,
 * listeners and statistics.  Slices and devices are in graph_slice.c,
 * claims, pods and usage in graph_claim.c.
 *
 * Every object is decoded into its own arena whose first chunk is sized from
 * the JSON it came from, so a 100,000-device snapshot does not pay for
 * doubling chunks; the arena is freed when the object is replaced.
 */
#include "graph_int.h"

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

static uint32_t obj_table_find(const obj_table *t, uint32_t ns, uint32_t name)
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
static uint32_t obj_table_put(dg_graph *g, obj_table *t, uint32_t ns, uint32_t name, void *o, de_arena *a,
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

static void obj_table_del(dg_graph *g, obj_table *t, uint32_t id)
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
    free(g->tmp);
    if (g->own_in)
        de_intern_free(g->in);
    free(g);
}

de_interner *dg_intern(const dg_graph *g) { return g->in; }
uint64_t dg_generation(const dg_graph *g) { return g->gen; }

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

/* ---- extended resources (dra-model 1.3) ---------------------------------------------- */

static bool class_newer(const dg_graph *g, const dg_class *a, const dg_class *b)
{
    if (a->meta.creation != b->meta.creation)
        return a->meta.creation > b->meta.creation;
    return de_intern_cmp(g->in, a->meta.name, b->meta.name) < 0;
}

static void ext_recompute(dg_graph *g, uint32_t ern)
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

static void check_admin(const dg_graph *g, dec *d, const dg_claim_spec *s, uint32_t ns, const char *prefix)
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

/* ---- dg_apply --------------------------------------------------------------------- */

static size_t estimate_bytes(json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        size_t n = 48;
        const char *k;
        json_t *x;
        json_object_foreach(v, k, x) n += 16 + estimate_bytes(x);
        return n;
    }
    case JSON_ARRAY: {
        size_t n = 32;
        for (size_t i = 0; i < json_array_size(v); i++)
            n += 8 + estimate_bytes(json_array_get(v, i));
        return n;
    }
    default:
        return 8;
    }
}

static void object_label(json_t *obj, char *buf, size_t cap)
{
    json_t *md = json_object_get(obj, "metadata");
    const char *kind = json_string_value(json_object_get(obj, "kind"));
    const char *name = json_is_object(md) ? json_string_value(json_object_get(md, "name")) : NULL;
    const char *ns = json_is_object(md) ? json_string_value(json_object_get(md, "namespace")) : NULL;
    if (!name && json_is_object(md))
        name = json_string_value(json_object_get(md, "generateName"));
    if (!kind)
        kind = "object";
    if (name && ns)
        snprintf(buf, cap, "%s \"%s/%s\"", kind, ns, name);
    else if (name)
        snprintf(buf, cap, "%s \"%s\"", kind, name);
    else
        snprintf(buf, cap, "%s (no name)", kind);
}

static de_rc fail(dec *d, json_t *obj, const de_origin *o, de_err *e)
{
    if (!e)
        return DE_EINVAL;
    char where[512] = "", label[320];
    if (o)
        de_origin_format(o, where, sizeof where);
    object_label(obj, label, sizeof label);
    char more[64] = "";
    if (d->nerr > DEC_MAX_ERRORS)
        snprintf(more, sizeof more, " (and %u more errors)", d->nerr - DEC_MAX_ERRORS);
    de_errf(e, DE_EINVAL, "%s%s%s: %s%s", where, where[0] ? ": " : "", label, de_buf_str(&d->msgs), more);
    snprintf(e->path, sizeof e->path, "%s", d->first_path);
    if (o && o->file)
        snprintf(e->file, sizeof e->file, "%s", o->file);
    return DE_EINVAL;
}

static de_rc apply_one(dg_graph *g, json_t *obj, const de_origin *o, dg_kind *kind_out, de_err *e, bool commit);

static de_rc apply_list(dg_graph *g, json_t *obj, const de_origin *o, dg_kind *kind_out, de_err *e, bool commit)
{
    json_t *items = json_object_get(obj, "items");
    for (size_t i = 0; i < json_array_size(items); i++) {
        de_origin io = o ? *o : (de_origin){"<object>", 1, -1};
        io.item = (int)i;
        DE_TRY(apply_one(g, json_array_get(items, i), &io, kind_out, e, commit));
    }
    if (kind_out)
        *kind_out = DG_KIND_OTHER;
    return DE_OK;
}

static bool is_list(json_t *obj)
{
    const char *kind = json_string_value(json_object_get(obj, "kind"));
    size_t n = kind ? strlen(kind) : 0;
    return n >= 4 && !strcmp(kind + n - 4, "List") && json_is_array(json_object_get(obj, "items"));
}

static de_rc apply_one(dg_graph *g, json_t *obj, const de_origin *o, dg_kind *kind_out, de_err *e, bool commit)
{
    if (kind_out)
        *kind_out = DG_KIND_NONE;
    if (!json_is_object(obj)) {
        char where[512] = "";
        if (o)
            de_origin_format(o, where, sizeof where);
        return de_errf(e, DE_EINVAL, "%s%snot an object (%s)", where, where[0] ? ": " : "",
                       obj ? dec_json_type(obj) : "nothing");
    }
    if (is_list(obj))
        return apply_list(g, obj, o, kind_out, e, commit);
    size_t est = estimate_bytes(obj);
    de_arena *a = de_arena_new_sized((size_t)256 << 20, est < 512 ? 512 : est);
    dec d;
    dec_init(&d, g->in, a, &g->gates, !g->opts.skip_validation);
    dg_kind kind = dec_classify(&d, obj, &d.version);
    void *decoded = NULL;
    switch (kind) {
    case DG_KIND_RESOURCE_SLICE: decoded = dec_slice(&d, obj); break;
    case DG_KIND_DEVICE_CLASS: decoded = dec_class(&d, obj); break;
    case DG_KIND_RESOURCE_CLAIM: {
        dg_claim *c = dec_claim(&d, obj);
        if (c && d.validate)
            check_admin(g, &d, &c->spec, c->meta.ns, "spec.");
        decoded = c;
        break;
    }
    case DG_KIND_RESOURCE_CLAIM_TEMPLATE: {
        dg_claim_template *t = dec_template(&d, obj);
        if (t && d.validate)
            check_admin(g, &d, &t->spec, t->meta.ns, "spec.spec.");
        decoded = t;
        break;
    }
    case DG_KIND_DEVICE_TAINT_RULE: decoded = dec_taint_rule(&d, obj); break;
    case DG_KIND_RESOURCE_POOL_STATUS_REQUEST: decoded = dec_pool_status_request(&d, obj); break;
    case DG_KIND_NODE: decoded = dec_node(&d, obj); break;
    case DG_KIND_POD: decoded = dec_pod(&d, obj); break;
    case DG_KIND_NAMESPACE: decoded = dec_namespace(&d, obj); break;
    default: break;
    }
    if (d.nerr || (kind != DG_KIND_OTHER && kind != DG_KIND_NONE && !decoded)) {
        de_rc rc = fail(&d, obj, o, e);
        dec_fini(&d);
        de_arena_free(a);
        return rc;
    }
    dec_fini(&d);
    if (kind_out)
        *kind_out = kind;
    if (kind == DG_KIND_OTHER || !commit) {
        de_arena_free(a);
        return DE_OK;
    }
    json_t *keep = NULL;
    bool replaced;
    uint32_t id;
    switch (kind) {
    case DG_KIND_RESOURCE_SLICE:
        return dg_slice_upsert(g, decoded, a, g->opts.keep_slice_json ? json_incref(obj) : NULL, &id);
    case DG_KIND_RESOURCE_CLAIM:
        dg_claim_upsert(g, decoded, a, json_incref(obj), &id);
        return DE_OK;
    case DG_KIND_POD:
        dg_pod_upsert(g, decoded, a, json_incref(obj), &id);
        return DE_OK;
    case DG_KIND_DEVICE_TAINT_RULE:
        dg_rule_upsert(g, decoded, a, json_incref(obj), &id);
        return DE_OK;
    case DG_KIND_DEVICE_CLASS: {
        dg_class *c = decoded;
        uint32_t old_ern = 0;
        uint32_t old = dg_class_find(g, c->meta.name);
        if (old != DG_NONE)
            old_ern = ((dg_class *)g->classes.e[old].o)->extended_resource_name;
        id = obj_table_put(g, &g->classes, 0, c->meta.name, c, a, json_incref(obj), &replaced);
        ext_recompute(g, old_ern);
        if (c->extended_resource_name != old_ern)
            ext_recompute(g, c->extended_resource_name);
        dg_notify(g, kind, replaced ? DG_OP_UPDATE : DG_OP_ADD, id);
        return DE_OK;
    }
    case DG_KIND_RESOURCE_CLAIM_TEMPLATE: {
        dg_claim_template *t = decoded;
        keep = json_incref(obj);
        id = obj_table_put(g, &g->templates, t->meta.ns, t->meta.name, t, a, keep, &replaced);
        break;
    }
    case DG_KIND_NODE: {
        dg_node *n = decoded;
        id = obj_table_put(g, &g->nodes, 0, n->meta.name, n, a, NULL, &replaced);
        break;
    }
    case DG_KIND_NAMESPACE: {
        dg_namespace *n = decoded;
        id = obj_table_put(g, &g->namespaces, 0, n->meta.name, n, a, NULL, &replaced);
        break;
    }
    case DG_KIND_RESOURCE_POOL_STATUS_REQUEST: {
        dg_pool_status_request *r = decoded;
        id = obj_table_put(g, &g->psrs, 0, r->meta.name, r, a, NULL, &replaced);
        break;
    }
    default:
        de_arena_free(a);
        return DE_OK;
    }
    dg_notify(g, kind, replaced ? DG_OP_UPDATE : DG_OP_ADD, id);
    return DE_OK;
}

de_rc dg_apply(dg_graph *g, json_t *obj, const de_origin *o, dg_kind *kind_out, de_err *e)
{
    return apply_one(g, obj, o, kind_out, e, true);
}

de_rc dg_check(dg_graph *g, json_t *obj, const de_origin *o, dg_kind *kind_out, de_err *e)
{
    return apply_one(g, obj, o, kind_out, e, false);
}

/* Loading a path: objects defined twice (same kind, namespace and name) in
 * one load are refused - the API server would answer AlreadyExists, and
 * "last one wins" would hide a copy-paste mistake.  With keep_going every
 * object is tried and all errors are reported together. */
typedef struct seen_ent {
    uint8_t kind;
    uint32_t ns, name;
    uint64_t content;
    char where[200];
} seen_ent;

/* Structural hash of a JSON value; object members are combined without
 * regard to order, so the same object written with other key order or
 * formatting hashes the same. */
static uint64_t json_hash(json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        uint64_t h = 0x9e3779b97f4a7c15ULL;
        const char *k;
        json_t *x;
        json_object_foreach(v, k, x) h += de_hash_u64(de_hash_bytes(k, strlen(k)) ^ json_hash(x));
        return de_hash_u64(h ^ 1);
    }
    case JSON_ARRAY: {
        uint64_t h = 0x51ed270b27f1a3c5ULL;
        for (size_t i = 0; i < json_array_size(v); i++)
            h = de_hash_u64(h ^ json_hash(json_array_get(v, i)));
        return de_hash_u64(h ^ 2);
    }
    case JSON_STRING: return de_hash_bytes(json_string_value(v), json_string_length(v)) ^ 3;
    case JSON_INTEGER: return de_hash_u64((uint64_t)json_integer_value(v) ^ 4);
    case JSON_REAL: {
        double d = json_real_value(v);
        uint64_t b;
        memcpy(&b, &d, sizeof b);
        return de_hash_u64(b ^ 5);
    }
    case JSON_TRUE: return 6;
    case JSON_FALSE: return 7;
    default: return 8;
    }
}

typedef struct load_ctx {
    dg_graph *g;
    de_map seen;
    seen_ent *ents;
    uint32_t n, cap;
    de_buf errs;
    uint32_t nerr;
    de_err first;
} load_ctx;

static bool namespaced(dg_kind k)
{
    return k == DG_KIND_RESOURCE_CLAIM || k == DG_KIND_RESOURCE_CLAIM_TEMPLATE || k == DG_KIND_POD;
}

/* The kind, from apiVersion/kind alone (no decoding): DG_KIND_OTHER for
 * anything the graph does not store. */
static dg_kind quick_kind(json_t *obj)
{
    const char *av = json_string_value(json_object_get(obj, "apiVersion"));
    const char *k = json_string_value(json_object_get(obj, "kind"));
    if (!av || !k)
        return DG_KIND_OTHER;
    bool res = !strncmp(av, "resource.k8s.io/", 16), core = !strcmp(av, "v1");
    for (int i = DG_KIND_RESOURCE_SLICE; i < DG_KIND_OTHER; i++) {
        if (strcmp(k, dg_kind_name((dg_kind)i)))
            continue;
        bool is_core = i == DG_KIND_NODE || i == DG_KIND_POD || i == DG_KIND_NAMESPACE;
        return (is_core ? core : res) ? (dg_kind)i : DG_KIND_OTHER;
    }
    return DG_KIND_OTHER;
}

/* Duplicate detection within one load: 0 = new (key filled), 1 = identical
 * redefinition, 2 = different redefinition (*prev set). */
typedef struct dupkey {
    bool tracked;
    uint8_t kind;
    uint32_t ns, name;
    uint64_t key, content;
} dupkey;

static int check_dup(load_ctx *c, json_t *obj, dupkey *k, const seen_ent **prev)
{
    memset(k, 0, sizeof *k);
    dg_kind kind = quick_kind(obj);
    if (kind == DG_KIND_OTHER)
        return 0;
    json_t *md = json_object_get(obj, "metadata");
    const char *name = json_string_value(json_object_get(md, "name"));
    const char *ns = json_string_value(json_object_get(md, "namespace"));
    if (!name)
        return 0;
    k->tracked = true;
    k->kind = (uint8_t)kind;
    k->ns = namespaced(kind) ? de_intern_cstr(c->g->in, ns && *ns ? ns : "default") : 0;
    k->name = de_intern_cstr(c->g->in, name);
    k->key = de_hash_u64(de_pack2(k->ns, k->name) ^ ((uint64_t)kind << 58));
    k->content = json_hash(obj);
    uint64_t v;
    if (!de_map_get(&c->seen, k->key, &v))
        return 0;
    const seen_ent *s = &c->ents[v];
    if (s->kind != kind || s->ns != k->ns || s->name != k->name)
        return 0;
    *prev = s;
    return s->content == k->content ? 1 : 2;
}

static void remember(load_ctx *c, const dupkey *k, const de_origin *o)
{
    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 64;
        c->ents = de_xrealloc(c->ents, c->cap * sizeof *c->ents);
    }
    seen_ent *s = &c->ents[c->n];
    s->kind = k->kind;
    s->ns = k->ns;
    s->name = k->name;
    s->content = k->content;
    s->where[0] = 0;
    if (o)
        de_origin_format(o, s->where, sizeof s->where);
    de_map_put(&c->seen, k->key, c->n++);
}

static de_rc load_cb(void *ctx, json_t *obj, const de_origin *o, de_err *e)
{
    load_ctx *c = ctx;
    de_err local;
    de_err_clear(&local);
    dupkey k;
    const seen_ent *prev = NULL;
    int dup = check_dup(c, obj, &k, &prev);
    if (dup == 1)
        return DE_OK;
    de_rc rc;
    if (dup == 2) {
        /* report a validation error first; do not replace the first definition */
        rc = dg_check(c->g, obj, o, NULL, &local);
        if (rc == DE_OK) {
            char where[512] = "", label[320];
            if (o)
                de_origin_format(o, where, sizeof where);
            object_label(obj, label, sizeof label);
            rc = de_errf(&local, DE_EINVAL, "%s: %s: AlreadyExists: defined differently in %s", where, label,
                         prev->where);
        }
    } else {
        rc = dg_apply(c->g, obj, o, NULL, &local);
        if (rc == DE_OK && k.tracked)
            remember(c, &k, o);
    }
    if (rc == DE_OK)
        return DE_OK;
    if (!c->g->opts.keep_going && !c->g->opts.on_error) {
        if (e)
            *e = local;
        return rc;
    }
    if (c->nerr++ == 0)
        c->first = local;
    if (c->g->opts.on_error) {
        c->g->opts.on_error(c->g->opts.on_error_ctx, &local);
        return DE_OK;
    }
    if (c->nerr > 1)
        de_buf_putc(&c->errs, '\n');
    de_buf_puts(&c->errs, local.msg);
    return DE_OK;
}

static de_rc load_finish(load_ctx *c, de_rc rc, de_err *e)
{
    if (rc == DE_OK && c->nerr) {
        rc = DE_EINVAL;
        if (e) {
            *e = c->first;
            if (c->g->opts.on_error)
                snprintf(e->msg, sizeof e->msg, "%u invalid object%s", c->nerr, c->nerr == 1 ? "" : "s");
            else if (!c->errs.overflow)
                snprintf(e->msg, sizeof e->msg, "%s", de_buf_str(&c->errs));
            else
                snprintf(e->msg, sizeof e->msg, "%.*s\n... (%u invalid objects in all)",
                         (int)(sizeof e->msg - 64), de_buf_str(&c->errs), c->nerr);
        }
    }
    de_map_destroy(&c->seen);
    free(c->ents);
    de_buf_free(&c->errs);
    return rc;
}

static void load_init(load_ctx *c, dg_graph *g)
{
    memset(c, 0, sizeof *c);
    c->g = g;
    de_map_init(&c->seen);
    de_buf_init(&c->errs, DE_ERR_MSG_MAX - 1);
}

de_rc dg_load_path(dg_graph *g, const char *path, de_err *e)
{
    load_ctx c;
    load_init(&c, g);
    return load_finish(&c, de_doc_each(path, load_cb, &c, e), e);
}

de_rc dg_load_text(dg_graph *g, const char *name, const char *text, size_t len, de_err *e)
{
    load_ctx c;
    load_init(&c, g);
    return load_finish(&c, de_doc_each_text(name, text, len, load_cb, &c, e), e);
}

de_rc dg_remove(dg_graph *g, dg_kind kind, const char *ns, const char *name, de_err *e)
{
    uint32_t nsid = ns && *ns ? de_intern_cstr(g->in, ns) : 0;
    uint32_t nid = de_intern_cstr(g->in, name);
    uint32_t id = DG_NONE;
    switch (kind) {
    case DG_KIND_RESOURCE_SLICE:
        id = dg_slice_find(g, name);
        if (id != DG_NONE)
            return dg_slice_delete(g, id);
        break;
    case DG_KIND_RESOURCE_CLAIM:
        id = dg_claim_find(g, nsid ? nsid : de_intern_cstr(g->in, "default"), nid);
        if (id != DG_NONE) {
            dg_claim_delete(g, id);
            return DE_OK;
        }
        break;
    case DG_KIND_POD:
        id = dg_pod_find(g, nsid ? nsid : de_intern_cstr(g->in, "default"), nid);
        if (id != DG_NONE) {
            dg_pod_delete(g, id);
            return DE_OK;
        }
        break;
    case DG_KIND_DEVICE_TAINT_RULE:
        id = obj_table_find(&g->rules, 0, nid);
        if (id != DG_NONE) {
            dg_rule_delete(g, id);
            return DE_OK;
        }
        break;
    case DG_KIND_DEVICE_CLASS:
        id = dg_class_find(g, nid);
        if (id != DG_NONE) {
            uint32_t ern = ((dg_class *)g->classes.e[id].o)->extended_resource_name;
            obj_table_del(g, &g->classes, id);
            ext_recompute(g, ern);
        }
        break;
    case DG_KIND_RESOURCE_CLAIM_TEMPLATE: {
        id = obj_table_find(&g->templates, nsid ? nsid : de_intern_cstr(g->in, "default"), nid);
        if (id != DG_NONE)
            obj_table_del(g, &g->templates, id);
        break;
    }
    case DG_KIND_NODE:
        id = obj_table_find(&g->nodes, 0, nid);
        if (id != DG_NONE)
            obj_table_del(g, &g->nodes, id);
        break;
    case DG_KIND_NAMESPACE:
        id = obj_table_find(&g->namespaces, 0, nid);
        if (id != DG_NONE)
            obj_table_del(g, &g->namespaces, id);
        break;
    case DG_KIND_RESOURCE_POOL_STATUS_REQUEST:
        id = obj_table_find(&g->psrs, 0, nid);
        if (id != DG_NONE)
            obj_table_del(g, &g->psrs, id);
        break;
    default:
        return de_errf(e, DE_EINVAL, "cannot remove objects of kind %s", dg_kind_name(kind));
    }
    if (id == DG_NONE)
        return de_errf(e, DE_ENOTFOUND, "%s \"%s%s%s\" not found", dg_kind_name(kind), nsid ? ns : "",
                       nsid ? "/" : "", name);
    dg_notify(g, kind, DG_OP_DELETE, id);
    return DE_OK;
}

de_rc dg_decode_allocation(dg_graph *g, json_t *v, de_arena *a, dg_allocation *out, de_err *e)
{
    dec d;
    dec_init(&d, g->in, a, &g->gates, true);
    dec_allocation(&d, v, out);
    de_rc rc = DE_OK;
    if (d.nerr) {
        rc = de_errf(e, DE_EINVAL, "allocation: %s", de_buf_str(&d.msgs));
        if (e)
            snprintf(e->path, sizeof e->path, "%s", d.first_path);
    }
    dec_fini(&d);
    return rc;
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
    size_t b = de_intern_bytes(g->in);
    for (uint32_t i = 0; i < g->nslices; i++)
        if (g->slices[i].a)
            b += de_arena_reserved(g->slices[i].a) + g->slices[i].s->ndevices * sizeof(uint32_t);
    b += g->capslices * sizeof *g->slices + g->capdevs * sizeof *g->devs + g->cappools * sizeof *g->pools;
    b += (g->slice_names.cap + g->pool_names.cap + g->pool_devices.cap + g->usage_idx.cap +
          g->claim_names.cap + g->pod_names.cap) * 17;
    for (uint32_t i = 0; i < g->ndevs; i++)
        b += g->devs[i].neff * sizeof(dg_taint);
    for (uint32_t i = 0; i < g->nclaims; i++) {
        if (g->claims[i].a)
            b += de_arena_reserved(g->claims[i].a);
        if (g->claims[i].sa)
            b += de_arena_reserved(g->claims[i].sa);
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
