/*
 * graph_claim_enc.c - a ResourceClaim as JSON from its decoded form.
 *
 * A claim keeps its decoded struct; its input JSON is needed only for
 * output (allocate's objects, serve's patches).  When the struct encodes
 * back to exactly the input's text - v1 shape, fields in the API's order,
 * nothing the struct does not hold - the input is not kept at all and
 * dg_claim_json encodes the struct; otherwise the input stays as compact
 * text (graph_claim.c).  The check, when the claim is stored, walks the
 * encoded tree and the input side by side for what their compact dumps would
 * show (dumps_alike), so output never changes: the encoder
 * covers the common fields (metadata, requests with exactly, selectors,
 * count, allocationMode, adminAccess, constraints, status) and anything
 * else simply keeps the text.
 */
#include "graph_int.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static json_t *str(const dg_graph *g, uint32_t id)
{
    return json_stringn(dg_s(g, id), de_intern_len(g->in, id));
}

static json_t *kv_object(const dg_graph *g, const dg_kv *kv, uint32_t n)
{
    json_t *o = json_object();
    for (uint32_t i = 0; i < n; i++)
        json_object_set_new(o, dg_s(g, kv[i].key), str(g, kv[i].value));
    return o;
}

static json_t *meta(const dg_graph *g, const dg_meta *m)
{
    json_t *o = json_object();
    if (m->name)
        json_object_set_new(o, "name", str(g, m->name));
    if (m->generate_name)
        json_object_set_new(o, "generateName", str(g, m->generate_name));
    json_object_set_new(o, "namespace", str(g, m->ns));
    if (m->uid)
        json_object_set_new(o, "uid", str(g, m->uid));
    if (m->resource_version)
        json_object_set_new(o, "resourceVersion", str(g, m->resource_version));
    if (m->generation)
        json_object_set_new(o, "generation", json_integer(m->generation));
    if (m->creation) {
        time_t t = (time_t)m->creation;
        struct tm tm;
        char buf[32];
        if (gmtime_r(&t, &tm) && strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm))
            json_object_set_new(o, "creationTimestamp", json_string(buf));
    }
    if (m->nlabels)
        json_object_set_new(o, "labels", kv_object(g, m->labels, m->nlabels));
    if (m->nannotations)
        json_object_set_new(o, "annotations", kv_object(g, m->annotations, m->nannotations));
    if (m->nowners) {
        json_t *a = json_array();
        for (uint32_t i = 0; i < m->nowners; i++) {
            const dg_ownerref *r = &m->owners[i];
            json_t *x = json_object();
            json_object_set_new(x, "apiVersion", str(g, r->api_version));
            json_object_set_new(x, "kind", str(g, r->kind));
            json_object_set_new(x, "name", str(g, r->name));
            json_object_set_new(x, "uid", str(g, r->uid));
            if (r->controller)
                json_object_set_new(x, "controller", json_true());
            json_array_append_new(a, x);
        }
        json_object_set_new(o, "ownerReferences", a);
    }
    if (m->nfinalizers) {
        json_t *a = json_array();
        for (uint32_t i = 0; i < m->nfinalizers; i++)
            json_array_append_new(a, str(g, m->finalizers[i]));
        json_object_set_new(o, "finalizers", a);
    }
    return o;
}

static json_t *exact(const dg_graph *g, const dg_exact *x)
{
    json_t *o = json_object();
    json_object_set_new(o, "deviceClassName", str(g, x->class_name));
    if (x->nselectors) {
        json_t *a = json_array();
        for (uint32_t i = 0; i < x->nselectors; i++) {
            json_t *s = json_object();
            if (x->selectors[i].has_cel)
                json_object_set_new(s, "cel", json_pack("{s:o}", "expression", str(g, x->selectors[i].expr)));
            json_array_append_new(a, s);
        }
        json_object_set_new(o, "selectors", a);
    }
    if (x->mode_raw)
        json_object_set_new(o, "allocationMode", str(g, x->mode_raw));
    if (x->count_set)
        json_object_set_new(o, "count", json_integer(x->count));
    if (x->admin_access >= 0)
        json_object_set_new(o, "adminAccess", json_boolean(x->admin_access));
    return o;
}

static json_t *spec(const dg_graph *g, const dg_claim_spec *s)
{
    json_t *devices = json_object();
    if (s->nrequests) {
        json_t *a = json_array();
        for (uint32_t i = 0; i < s->nrequests; i++) {
            const dg_request *r = &s->requests[i];
            json_t *o = json_object();
            json_object_set_new(o, "name", str(g, r->name));
            if (r->has_exactly)
                json_object_set_new(o, "exactly", exact(g, &r->exactly));
            if (r->nsubs) {
                json_t *subs = json_array();
                for (uint32_t k = 0; k < r->nsubs; k++) {
                    json_t *x = exact(g, &r->subs[k]);
                    /* a subrequest names itself first */
                    json_t *named = json_pack("{s:o}", "name", str(g, r->subs[k].name));
                    json_object_update(named, x);
                    json_decref(x);
                    json_array_append_new(subs, named);
                }
                json_object_set_new(o, "firstAvailable", subs);
            }
            json_array_append_new(a, o);
        }
        json_object_set_new(devices, "requests", a);
    }
    if (s->nconstraints) {
        json_t *a = json_array();
        for (uint32_t i = 0; i < s->nconstraints; i++) {
            const dg_constraint *c = &s->constraints[i];
            json_t *o = json_object();
            if (c->nrequests) {
                json_t *rq = json_array();
                for (uint32_t k = 0; k < c->nrequests; k++)
                    json_array_append_new(rq, str(g, c->requests[k]));
                json_object_set_new(o, "requests", rq);
            }
            if (c->match_attribute)
                json_object_set_new(o, "matchAttribute", str(g, c->match_attribute));
            if (c->distinct_attribute)
                json_object_set_new(o, "distinctAttribute", str(g, c->distinct_attribute));
            json_array_append_new(a, o);
        }
        json_object_set_new(devices, "constraints", a);
    }
    return json_pack("{s:o}", "devices", devices);
}

json_t *dg_encode_claim_object(const dg_graph *g, const dg_claim *c)
{
    json_t *o = json_object();
    json_object_set_new(o, "apiVersion", json_string("resource.k8s.io/v1"));
    json_object_set_new(o, "kind", json_string("ResourceClaim"));
    json_object_set_new(o, "metadata", meta(g, &c->meta));
    json_object_set_new(o, "spec", spec(g, &c->spec));
    json_t *st = dg_encode_claim_status(g, c, NULL);
    if (json_object_size(st))
        json_object_set_new(o, "status", st);
    else
        json_decref(st);
    return o;
}

/* True when a and b dump to the same compact text: the same types, keys in
 * the same order (jansson dumps objects in insertion order), strings of the
 * same bytes, integers and reals of the same value and bits (a real dumps
 * with 17 digits, -0.0 as "-0.0").  Walking the two trees side by side
 * costs a fraction of dumping both, which serve did for every claim in
 * every watch event, and allocates nothing. */
static bool dumps_alike(const json_t *a, const json_t *b, int depth)
{
    if (json_typeof(a) != json_typeof(b) || depth > 64)
        return false;
    switch (json_typeof(a)) {
    case JSON_OBJECT: {
        if (json_object_size(a) != json_object_size(b))
            return false;
        void *ia = json_object_iter((json_t *)a), *ib = json_object_iter((json_t *)b);
        for (; ia && ib; ia = json_object_iter_next((json_t *)a, ia), ib = json_object_iter_next((json_t *)b, ib)) {
            size_t la = json_object_iter_key_len(ia), lb = json_object_iter_key_len(ib);
            if (la != lb || memcmp(json_object_iter_key(ia), json_object_iter_key(ib), la) ||
                !dumps_alike(json_object_iter_value(ia), json_object_iter_value(ib), depth + 1))
                return false;
        }
        return !ia && !ib;
    }
    case JSON_ARRAY: {
        size_t n = json_array_size(a);
        if (n != json_array_size(b))
            return false;
        for (size_t i = 0; i < n; i++)
            if (!dumps_alike(json_array_get(a, i), json_array_get(b, i), depth + 1))
                return false;
        return true;
    }
    case JSON_STRING:
        return json_string_length(a) == json_string_length(b) &&
               !memcmp(json_string_value(a), json_string_value(b), json_string_length(a));
    case JSON_INTEGER:
        return json_integer_value(a) == json_integer_value(b);
    case JSON_REAL: {
        double x = json_real_value(a), y = json_real_value(b);
        return !memcmp(&x, &y, sizeof x);
    }
    default: /* true, false, null: the type says it all */
        return true;
    }
}

/* The encoder writes apiVersion, kind, metadata, spec and a non-empty
 * status, in that order.  The API server writes kind first and an empty
 * status ({}), so in serve no claim could ever compare equal; building the
 * encoded tree to find that out was 3 % of serve's instructions. */
static bool top_keys_alike(const json_t *input)
{
    static const char *const order[] = {"apiVersion", "kind", "metadata", "spec", "status"};
    if (!json_is_object(input))
        return false;
    size_t i = 0;
    for (void *it = json_object_iter((json_t *)input); it; it = json_object_iter_next((json_t *)input, it), i++)
        if (i == DE_ARRAY_LEN(order) || strcmp(json_object_iter_key(it), order[i]))
            return false;
    if (i < 4)
        return false;
    return i == 4 || json_object_size(json_object_get(input, "status")) > 0;
}

bool dg_claim_encodes_as(const dg_graph *g, const dg_claim *c, const json_t *input)
{
    if (!top_keys_alike(input))
        return false;
    json_t *o = dg_encode_claim_object(g, c);
    bool same = dumps_alike(o, input, 0);
    json_decref(o);
    return same;
}
