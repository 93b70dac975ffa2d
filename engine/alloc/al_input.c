/*
 * al_input.c - loading manifests for offline allocation (the allocate
 * command and core.allocate in Lua): every object goes into the graph, and
 * the pending claims (no status.allocation) and the pods are remembered in
 * input order, which is the order Allocate and scheduling use.
 *
 * Validation: with `checker` set, the graph being loaded decodes only and
 * each object is validated on the side; a problem becomes a warning.  The
 * upstream allocator works on whatever the API server holds, and the
 * conformance vectors (from upstream's unit tests) use names a real API
 * server would refuse, so refusing them would be unfaithful.
 *
 * The same object given twice (same kind, namespace and name) is accepted
 * when both copies are identical and refused otherwise - offline there is no
 * "later version wins" to rely on.
 */
#include "al_int.h"
#include "../base/doc.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct lctx {
    dg_graph *g;
    al_input *in;
} lctx;

static void push(al_input_ref **v, uint32_t *n, uint32_t *cap, al_input_ref r)
{
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 16;
        *v = de_xrealloc(*v, *cap * sizeof **v);
    }
    (*v)[(*n)++] = r;
}

static const char *jstr(json_t *o, const char *k)
{
    json_t *v = o ? json_object_get(o, k) : NULL;
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static de_rc on_object(void *vctx, json_t *obj, const de_origin *o, de_err *e)
{
    lctx *c = vctx;
    al_input *in = c->in;
    de_interner *it = dg_intern(c->g);
    const char *kind = jstr(obj, "kind");
    json_t *meta = json_object_get(obj, "metadata");
    const char *name = jstr(meta, "name"), *ns = jstr(meta, "namespace");
    if (kind && name) {
        char key[1024];
        int n = snprintf(key, sizeof key, "%s\x1f%s\x1f%s", kind, ns ? ns : "", name);
        uint64_t h = de_hash_bytes(key, (size_t)(n > 0 ? n : 0)), v;
        char *txt = json_dumps(obj, JSON_COMPACT | JSON_SORT_KEYS);
        uint64_t body = txt ? de_hash_bytes(txt, strlen(txt)) | 1 : 1;
        free(txt);
        if (de_map_get(&in->seen, h, &v)) {
            if (v == body)
                return DE_OK;
            char where[512];
            de_origin_format(o, where, sizeof where);
            if (!in->keep_duplicates)
                return de_errf(e, DE_EINVAL, "%s: %s \"%s%s%s\" is defined twice with different content",
                               where, kind, ns ? ns : "", ns ? "/" : "", name);
            /* keep both, as a list handed to the allocator would: the second
             * one gets a distinct name (sorted after the first) */
            char nn[600];
            for (uint32_t k = 2;; k++) {
                snprintf(nn, sizeof nn, "%s~%u", name, k);
                n = snprintf(key, sizeof key, "%s\x1f%s\x1f%s", kind, ns ? ns : "", nn);
                h = de_hash_bytes(key, (size_t)(n > 0 ? n : 0));
                if (!de_map_get(&in->seen, h, &v))
                    break;
            }
            if (in->warn) {
                de_err w;
                de_err_clear(&w);
                de_errf(&w, DE_EINVAL, "%s: %s \"%s%s%s\" is defined twice with different content; the second copy is kept as \"%s\"",
                        where, kind, ns ? ns : "", ns ? "/" : "", name, nn);
                in->warn(in->warn_ctx, &w);
            }
            json_object_set_new(meta, "name", json_string(nn));
            name = jstr(meta, "name");
        }
        de_map_put(&in->seen, h, body);
    }
    dg_kind k = DG_KIND_NONE;
    if (in->checker) {
        de_err w;
        de_err_clear(&w);
        if (dg_check(in->checker, obj, o, &k, &w) != DE_OK && in->warn)
            in->warn(in->warn_ctx, &w);
        /* the checker knows the Namespaces read so far, so that adminAccess
         * in a namespace without the admin label is reported as the API
         * server would refuse it (the namespace exists before its claims) */
        else if (k == DG_KIND_NAMESPACE)
            dg_apply(in->checker, obj, o, NULL, &w);
    }
    if (kind && !strcmp(kind, "PodGroup")) {
        /* scheduling.k8s.io PodGroups: read by al_podgroup.c, not modelled */
        if (!in->podgroups)
            in->podgroups = json_object();
        if (!ns)
            json_object_set_new(meta, "namespace", json_string("default"));
        al_podgroups_put(in->podgroups, obj);
        return DE_OK;
    }
    DE_TRY(dg_apply(c->g, obj, o, &k, e));
    /* namespaced objects without a namespace live in "default" */
    al_input_ref r = {de_intern_cstr(it, ns ? ns : "default"), de_intern_cstr(it, name ? name : "")};
    if (k == DG_KIND_RESOURCE_CLAIM) {
        json_t *st = json_object_get(obj, "status");
        json_t *al = st ? json_object_get(st, "allocation") : NULL;
        if (!al || json_is_null(al))
            push(&in->pending, &in->npending, &in->cappending, r);
    } else if (k == DG_KIND_POD) {
        push(&in->pods, &in->npods, &in->cappods, r);
    }
    return DE_OK;
}

void al_input_init(al_input *in)
{
    memset(in, 0, sizeof *in);
    de_map_init(&in->seen);
}

de_rc al_input_load(dg_graph *g, al_input *in, const char *path, de_err *e)
{
    lctx c = {g, in};
    return de_doc_each(path, on_object, &c, e);
}

de_rc al_input_load_text(dg_graph *g, al_input *in, const char *name, const char *text, size_t len,
                         de_err *e)
{
    lctx c = {g, in};
    return de_doc_each_text(name, text, len, on_object, &c, e);
}

de_rc al_input_add(dg_graph *g, al_input *in, json_t *obj, const de_origin *o, de_err *e)
{
    lctx c = {g, in};
    return on_object(&c, obj, o, e);
}

void al_input_free(al_input *in)
{
    free(in->pending);
    free(in->pods);
    json_decref(in->podgroups);
    de_map_destroy(&in->seen);
    memset(in, 0, sizeof *in);
}

uint32_t al_input_claim(const dg_graph *g, const al_input *in, uint32_t i)
{
    return dg_claim_find(g, in->pending[i].ns, in->pending[i].name);
}

uint32_t al_input_pod(const dg_graph *g, const al_input *in, uint32_t i)
{
    return dg_pod_find(g, in->pods[i].ns, in->pods[i].name);
}
