/*
 * graph_load.c - dg_apply / dg_check / dg_remove / dg_load_path: decode,
 * validate and upsert objects, and load manifest files.
 *
 * Every object is decoded into its own arena whose first chunk is sized from
 * the JSON it came from, so a 100,000-device snapshot does not pay for
 * doubling chunks; the arena is freed when the object is replaced.
 */
#include "graph_int.h"
#include "../cel/cel.h"

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

/* Kind and name as the input spells them, quoted or described whole
 * (de_quote): a label never shows a name cut short. */
void dg_object_label(json_t *obj, char *buf, size_t cap)
{
    json_t *md = json_object_get(obj, "metadata");
    json_t *kj = json_object_get(obj, "kind");
    const char *kind = json_string_value(kj);
    const char *name = json_is_object(md) ? json_string_value(json_object_get(md, "name")) : NULL;
    const char *ns = json_is_object(md) ? json_string_value(json_object_get(md, "namespace")) : NULL;
    if (!name && json_is_object(md))
        name = json_string_value(json_object_get(md, "generateName"));
    char kq[DE_QUOTE_MAX + 1], nq[DE_QUOTE_MAX + 1];
    if (!kind)
        snprintf(kq, sizeof kq, "object");
    else if (json_string_length(kj) <= 64 && strspn(kind, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") ==
                                                   json_string_length(kj) && *kind)
        snprintf(kq, sizeof kq, "%s", kind);
    else
        de_quote(kq, kind, json_string_length(kj));
    if (name) {
        size_t nl = strlen(name), sl = ns ? strlen(ns) : 0;
        char *full = de_xmalloc(sl + nl + 2);
        snprintf(full, sl + nl + 2, "%s%s%s", ns ? ns : "", ns ? "/" : "", name);
        de_quote(nq, full, strlen(full));
        free(full);
        snprintf(buf, cap, "%s %s", kq, nq);
    } else {
        snprintf(buf, cap, "%s (no name)", kq);
    }
}

static de_rc fail(dec *d, json_t *obj, const de_origin *o, de_err *e)
{
    if (!e)
        return DE_EINVAL;
    char where[512] = "", label[2 * DE_QUOTE_MAX + 16];
    if (o)
        de_origin_format(o, where, sizeof where);
    dg_object_label(obj, label, sizeof label);
    /* whole messages only: as many as fit after the prefix, the rest counted */
    size_t room = sizeof e->msg - 1 - strlen(where) - 2 - strlen(label) - 2 - 40, len;
    uint32_t shown = dec_fit_messages(d, room, &len);
    char more[64] = "";
    if (dec_error_count(d) > shown)
        snprintf(more, sizeof more, "%s(and %u more errors)", shown ? " " : "", dec_error_count(d) - shown);
    de_errf(e, DE_EINVAL, "%s%s%s: %.*s%s", where, where[0] ? ": " : "", label, (int)len, de_buf_str(&d->msgs),
            more);
    snprintf(e->path, sizeof e->path, "%s", d->first_path);
    if (o && o->file)
        snprintf(e->file, sizeof e->file, "%s", o->file);
    return DE_EINVAL;
}

static de_rc apply_one(dg_graph *g, json_t *obj, const de_origin *o, dg_kind *kind_out, de_err *e, bool commit);

cel_env *dg_cel(dg_graph *g)
{
    if (!g->cel) {
        cel_env_opts o = {0};
        o.consumable_capacity = g->gates.on[DE_GATE_CONSUMABLE_CAPACITY];
        o.list_attributes = g->gates.on[DE_GATE_LIST_TYPE_ATTRIBUTES];
        o.new_expressions = true;
        o.prog_cap = g->opts.cel_program_cap;
        g->cel = cel_env_new(g->in, &o);
    }
    return g->cel;
}

de_arena *dg_scratch(dg_graph *g)
{
    if (!g->scratch)
        g->scratch = de_arena_new_sized((size_t)256 << 20, (size_t)1 << 20);
    de_arena_reset(g->scratch);
    return g->scratch;
}

/* Copy a slice decoded in the scratch arena into its own exact-size arena
 * and put it into the graph. */
de_rc dg_commit_slice(dg_graph *g, const dg_slice *tmp, json_t *json, de_err *e)
{
    size_t used = de_arena_used(g->scratch);
    de_arena *a = de_arena_new_exact((size_t)256 << 20, used);
    dg_slice *s = dg_slice_copy(tmp, a);
    if (!s) {
        de_arena_free(a);
        if (json)
            json_decref(json);
        return de_errf(e, DE_EINTERNAL, "ResourceSlice copy did not fit its arena");
    }
    uint32_t id;
    return dg_slice_upsert(g, s, a, json, &id);
}

de_rc dg_commit_node(dg_graph *g, const dg_node *tmp, de_err *e)
{
    de_arena *a = de_arena_new_exact((size_t)256 << 20, de_arena_used(g->scratch));
    dg_node *n = dg_node_copy(tmp, a);
    if (!n) {
        de_arena_free(a);
        return de_errf(e, DE_EINTERNAL, "Node copy did not fit its arena");
    }
    bool replaced;
    uint32_t id = obj_table_put(g, &g->nodes, 0, n->meta.name, n, a, NULL, &replaced);
    dg_notify(g, DG_KIND_NODE, replaced ? DG_OP_UPDATE : DG_OP_ADD, id);
    return DE_OK;
}

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

bool dg_is_list(json_t *obj)
{
    const char *kind = json_string_value(json_object_get(obj, "kind"));
    size_t n = kind ? strlen(kind) : 0;
    return n >= 4 && !strcmp(kind + n - 4, "List") && json_is_array(json_object_get(obj, "items"));
}

/* A claim or pod decoded once, into an arena of the last one's size plus
 * GUESS_ROOM, is kept when it and its list of counted names fit there with
 * at most GUESS_WASTE bytes to spare; else it is decoded a second time into
 * an arena of exactly its size (exact_decode).  Claims and pods of one
 * workload decode to sizes a few bytes apart (names differ in length), so
 * the second decode - a tenth of serve's work a pod - is mostly saved, for
 * at most GUESS_WASTE bytes an object.  The guess follows the last exact
 * size either way. */
#define GUESS_ROOM 16
#define GUESS_WASTE 32

static size_t refs_room(const dec *d) { return (d->nrefs * sizeof(uint32_t) + 15) & ~(size_t)15; }

static bool keep_guess(de_arena *a, const dec *d, size_t *guess)
{
    size_t left = de_arena_first_left(a), refs = refs_room(d);
    *guess = de_arena_used(a) + refs;
    return left != SIZE_MAX && left >= refs && left - refs <= GUESS_WASTE;
}

/* Claims and pods live as long as the cluster keeps them, tens of thousands
 * at a time: each is decoded a second time, without CEL validation (the
 * first decode, in scratch, validated it and measured it), into an arena
 * whose one chunk is exactly what the same allocations take - plus room for
 * the list of counted names.  The second decode's references replace the
 * first's in *d; returns the arena, NULL on a (never expected) failure. */
static de_arena *exact_decode(dg_graph *g, json_t *obj, dg_kind kind, size_t used, dec *d, void **decoded)
{
    size_t room = used + refs_room(d);
    de_arena *a = de_arena_new_exact((size_t)256 << 20, room);
    dec d2;
    dec_init(&d2, g->in, a, &g->gates, d->validate);
    d2.counted = true;
    dec_classify(&d2, obj, &d2.version);
    void *o = kind == DG_KIND_RESOURCE_CLAIM ? (void *)dec_claim(&d2, obj) : (void *)dec_pod(&d2, obj);
    if (d2.nerr || !o) {
        dec_release_refs(&d2);
        dec_fini(&d2);
        de_arena_free(a);
        return NULL;
    }
    dec_release_refs(d);
    dec_fini(d);
    *d = d2;
    *decoded = o;
    return a;
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
    if (dg_is_list(obj))
        return apply_list(g, obj, o, kind_out, e, commit);
    dec d;
    dec_init(&d, g->in, NULL, &g->gates, !g->opts.skip_validation);
    d.cel = d.validate ? dg_cel(g) : NULL;
    /* validation's programs live only while one object is decoded, so the
     * capped compile cache can be emptied between objects (this env is
     * never handed to an allocator, whose selector sets hold programs) */
    if (d.cel)
        cel_env_collect(d.cel);
    dg_kind kind = dec_classify(&d, obj, &d.version);
    /* claims and pods come and go: their own names and UIDs are counted */
    d.counted = kind == DG_KIND_RESOURCE_CLAIM || kind == DG_KIND_POD;
    de_arena *a;
    size_t *guess = d.counted ? &g->size_guess[kind == DG_KIND_POD] : NULL;
    if (guess && commit && *guess) {
        /* straight into an arena of the last one's size (see keep_guess) */
        a = de_arena_new_exact((size_t)256 << 20, *guess + GUESS_ROOM);
    } else if (kind == DG_KIND_RESOURCE_SLICE || d.counted) {
        /* decoded in scratch, then copied into an arena of the exact size
         * (slices) or decoded again there (claims and pods: exact_decode) */
        a = dg_scratch(g);
    } else {
        size_t est = estimate_bytes(obj);
        a = de_arena_new_sized((size_t)256 << 20, est < 512 ? 512 : est);
    }
    d.a = a;
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
        dec_release_refs(&d);
        dec_fini(&d);
        if (a != g->scratch)
            de_arena_free(a);
        return rc;
    }
    if (d.counted && commit && !keep_guess(a, &d, guess)) {
        /* the first decode validated it and measured it */
        de_arena *first = a;
        a = exact_decode(g, obj, kind, de_arena_used(first), &d, &decoded);
        if (first != g->scratch)
            de_arena_free(first);
        if (!a) {
            dec_release_refs(&d);
            dec_fini(&d);
            return de_errf(e, DE_EINTERNAL, "%s: second decode failed", dg_kind_name(kind));
        }
    }
    uint32_t *refs = NULL, nrefs = d.nrefs;
    if (!commit)
        dec_release_refs(&d);
    else if (nrefs) {
        refs = de_arena_alloc(a, nrefs * sizeof *refs);
        if (refs)
            memcpy(refs, d.refs, nrefs * sizeof *refs);
        else
            nrefs = 0; /* past the arena's cap: the names stay, pinned in effect */
    }
    dec_fini(&d);
    if (kind_out)
        *kind_out = kind;
    if (kind == DG_KIND_OTHER || !commit) {
        if (a != g->scratch)
            de_arena_free(a);
        return DE_OK;
    }
    json_t *keep = NULL;
    bool replaced;
    uint32_t id;
    switch (kind) {
    case DG_KIND_RESOURCE_SLICE:
        return dg_commit_slice(g, decoded, g->opts.keep_slice_json ? json_incref(obj) : NULL, e);
    case DG_KIND_RESOURCE_CLAIM:
        dg_claim_upsert(g, decoded, a, obj, refs, nrefs, &id);
        return DE_OK;
    case DG_KIND_POD:
        dg_pod_upsert(g, decoded, a, obj, refs, nrefs, &id);
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

de_rc dg_remove(dg_graph *g, dg_kind kind, const char *ns, const char *name, de_err *e)
{
    /* looked up, not interned: interning would pin a claim's or pod's name */
    uint32_t nsid = ns && *ns ? de_intern_find(g->in, ns, strlen(ns)) : 0;
    uint32_t nid = de_intern_find(g->in, name, strlen(name));
    uint32_t id = DG_NONE;
    if (nsid == UINT32_MAX || nid == UINT32_MAX)
        return de_errf(e, DE_ENOTFOUND, "%s \"%s%s%s\" not found", dg_kind_name(kind), ns && *ns ? ns : "",
                       ns && *ns ? "/" : "", name);
    uint32_t dflt = de_intern_find(g->in, "default", 7);
    switch (kind) {
    case DG_KIND_RESOURCE_SLICE:
        id = dg_slice_find(g, name);
        if (id != DG_NONE)
            return dg_slice_delete(g, id);
        break;
    case DG_KIND_RESOURCE_CLAIM:
        id = dg_claim_find(g, nsid ? nsid : dflt, nid);
        if (id != DG_NONE)
            dg_claim_delete(g, id);
        break;
    case DG_KIND_POD:
        id = dg_pod_find(g, nsid ? nsid : dflt, nid);
        if (id != DG_NONE)
            dg_pod_delete(g, id);
        break;
    case DG_KIND_DEVICE_TAINT_RULE:
        id = obj_table_find(&g->rules, 0, nid);
        if (id != DG_NONE)
            dg_rule_delete(g, id);
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
        id = obj_table_find(&g->templates, nsid ? nsid : dflt, nid);
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
        size_t len;
        uint32_t shown = dec_fit_messages(&d, sizeof e->msg - 64, &len);
        rc = de_errf(e, DE_EINVAL, "allocation: %.*s%s", (int)len, de_buf_str(&d.msgs),
                     dec_error_count(&d) > shown ? " (and more errors)" : "");
        if (e)
            snprintf(e->path, sizeof e->path, "%s", d.first_path);
    }
    dec_fini(&d);
    return rc;
}

