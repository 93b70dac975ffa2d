/*
 * graph_load.c - dg_apply / dg_check / dg_remove / dg_load_path: decode,
 * validate and upsert objects, and load manifest files.
 *
 * Every object is decoded into its own arena whose first chunk is sized from
 * the JSON it came from, so a 100,000-device snapshot does not pay for
 * doubling chunks; the arena is freed when the object is replaced.
 */
#include "graph_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
            dg_check_admin(g, &d, &c->spec, c->meta.ns, "spec.");
        decoded = c;
        break;
    }
    case DG_KIND_RESOURCE_CLAIM_TEMPLATE: {
        dg_claim_template *t = dec_template(&d, obj);
        if (t && d.validate)
            dg_check_admin(g, &d, &t->spec, t->meta.ns, "spec.spec.");
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
        dg_ext_recompute(g, old_ern);
        if (c->extended_resource_name != old_ern)
            dg_ext_recompute(g, c->extended_resource_name);
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
            dg_ext_recompute(g, ern);
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

