/*
 * sch_ext.c - extended resources backed by DRA (KEP-5004): a pod asking for
 * `example.com/gpu: 2` on a node whose allocatable lacks that resource gets
 * it through a DeviceClass that names it (extendedResourceName, or the
 * implicit deviceclass.resource.kubernetes.io/<class>).
 *
 * For each node the set of such resources served by DRA can differ (a node
 * with a device plugin offering the resource serves it natively), so the
 * special claim is built per subset, once per cycle, and placed in the graph
 * under a temporary name so the allocator can see it; it is removed at the
 * end of the cycle.  Which resources, which node leaves which to DRA, and the
 * requests and mappings (dra-model.md 4.3) come from the allocator
 * (al_ext_*), the implementation al_schedule_pod uses too.  At PreBind the claim is
 * created for real (generateName <pod>-extended-resources-, owned by the
 * pod, annotated resource.kubernetes.io/extended-resource-claim: "true"),
 * its status written, and pod.status.extendedResourceClaimStatus patched
 * with the request mappings.
 */
#include "sch_int.h"

#include "../base/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXT_ANNOTATION "resource.kubernetes.io/extended-resource-claim"

static const de_origin EXT_ORIGIN = {"draengine", 1, -1};

/* The resources, the per-node choice and the requests and mappings are the
 * allocator's (al_ext_*, engine/alloc/al_extended.c): one implementation
 * for `draengine serve` and al_schedule_pod. */
uint32_t sch_ext_resources(sch_sched *s, const dg_pod *p, al_ext_res *res)
{
    return al_ext_resources(s->g, al_gates(s->al), p, res, AL_EXT_MAX);
}

uint64_t sch_ext_mask(sch_sched *s, const dg_node *n, const al_ext_res *res, uint32_t nres)
{
    (void)s;
    return al_ext_node_mask(n, res, nres);
}

void sch_ext_build(sch_sched *s, const dg_pod *p, const al_ext_res *res, uint32_t nres, uint64_t mask,
                   json_t **requests, json_t **mappings)
{
    de_arena *ar = de_arena_new_sized(0, 4096);
    al_ext_spec spec;
    al_ext_build(s->g, p, res, nres, mask, ar, &spec);
    *requests = al_ext_requests_json(s->g, &spec);
    *mappings = al_ext_mappings_json(s->g, &spec);
    de_arena_free(ar);
}

/* The claim object (without name) for a pod. */
json_t *sch_ext_claim_object(sch_sched *s, const dg_pod *p, json_t *requests)
{
    const char *pod = de_intern_str(s->in, p->meta.name);
    char gen[300];
    snprintf(gen, sizeof gen, "%.200s-extended-resources-", pod);
    /* the ownerReference kube-scheduler sets: no blockOwnerDeletion */
    return json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s}, s:[{s:s, s:s, s:s, s:s, s:b}]},"
                     " s:{s:{s:O}}}",
                     "apiVersion", "resource.k8s.io/v1", "kind", "ResourceClaim", "metadata",
                     "generateName", gen, "namespace", de_intern_str(s->in, p->meta.ns),
                     "annotations", EXT_ANNOTATION, "true", "ownerReferences", "apiVersion", "v1",
                     "kind", "Pod", "name", pod, "uid", de_intern_str(s->in, p->meta.uid),
                     "controller", 1, "spec", "devices", "requests",
                     requests);
}

/* Place a temporary copy in the graph so the allocator can see it. */
uint32_t sch_ext_temp_claim(sch_sched *s, const dg_pod *p, json_t *obj, uint64_t mask)
{
    json_t *o = json_deep_copy(obj);
    json_t *md = json_object_get(o, "metadata");
    char name[300];
    snprintf(name, sizeof name, "%.200s-extended-resources-draengine-%llx",
             de_intern_str(s->in, p->meta.name), (unsigned long long)mask);
    json_object_set_new(md, "name", json_string(name));
    json_object_del(md, "generateName");
    de_err e;
    de_err_clear(&e);
    uint32_t clid = DG_NONE;
    if (dg_apply(s->g, o, &EXT_ORIGIN, NULL, &e) == DE_OK)
        clid = dg_claim_find(s->g, p->meta.ns, de_intern_find(s->in, name, strlen(name)));
    else
        DE_WARN("extended resource claim for %s: %s", de_intern_str(s->in, p->meta.name), e.msg);
    json_decref(o);
    return clid;
}

void sch_ext_drop_temp(sch_sched *s, uint32_t clid)
{
    const dg_claim *c = dg_claim_get(s->g, clid);
    if (!c)
        return;
    char ns[256], name[300];
    snprintf(ns, sizeof ns, "%s", de_intern_str(s->in, c->meta.ns));
    snprintf(name, sizeof name, "%s", de_intern_str(s->in, c->meta.name));
    de_err e;
    de_err_clear(&e);
    dg_remove(s->g, DG_KIND_RESOURCE_CLAIM, ns, name, &e);
}

/* ---- the owner index ------------------------------------------------------------ */

/* A pod with extended resources looks for the claim made for it before it
 * builds one: a claim in its namespace, annotated EXT_ANNOTATION and
 * controlled by the pod's UID.  Scanning every claim per such pod would
 * cost O(claims) per attempt, so the claims that qualify are indexed by
 * pack(namespace, controller UID), kept by a graph listener: claims come
 * from the API watch, from PreBind and from the temporary per-node claims,
 * and all of them pass through the graph.  A claim is indexed under its
 * first controller reference (the API server allows one).  The reverse map
 * (claim id -> key) is what unindexes a claim whose object has already
 * changed or gone when the listener runs. */
static uint64_t ext_key(sch_sched *s, const dg_claim *c)
{
    uint32_t ann = de_intern_cstr(s->in, EXT_ANNOTATION);
    bool marked = false;
    for (uint32_t k = 0; k < c->meta.nannotations; k++)
        marked |= c->meta.annotations[k].key == ann;
    for (uint32_t k = 0; marked && k < c->meta.nowners; k++)
        if (c->meta.owners[k].controller)
            return sch_key(c->meta.ns, c->meta.owners[k].uid);
    return UINT64_MAX;
}

static void ext_unindex(sch_sched *s, uint32_t clid)
{
    uint64_t key, v;
    if (!de_map_get(&s->ext_owner, clid, &key))
        return;
    de_map_del(&s->ext_owner, clid);
    if (!de_map_get(&s->ext_owned, key, &v))
        return;
    vec32 *vec = &s->vecs[v - 1];
    for (uint32_t i = 0; i < vec->n; i++)
        if (vec->v[i] == clid) {
            vec->v[i] = vec->v[--vec->n];
            break;
        }
    if (!vec->n) { /* the last claim of that owner: the entry and its names go */
        de_map_del(&s->ext_owned, key);
        sch_vec_drop(s, v);
        sch_key_release(s, key);
    }
}

static void ext_index(sch_sched *s, uint32_t clid)
{
    const dg_claim *c = dg_claim_get(s->g, clid);
    uint64_t key = c ? ext_key(s, c) : UINT64_MAX;
    if (key == UINT64_MAX)
        return;
    uint64_t *slot = de_map_slot(&s->ext_owned, key, 0);
    if (!*slot)
        sch_key_retain(s, key); /* the claim's namespace and owner UID, held by the entry */
    vec32 *vec = sch_vec(s, slot);
    if (vec->n == vec->cap) {
        vec->cap = vec->cap ? vec->cap * 2 : 2;
        vec->v = de_xrealloc(vec->v, vec->cap * sizeof *vec->v);
    }
    vec->v[vec->n++] = clid;
    de_map_put(&s->ext_owner, clid, key);
}

static void ext_on_change(void *ctx, dg_kind kind, dg_op op, uint32_t id)
{
    sch_sched *s = ctx;
    if (kind != DG_KIND_RESOURCE_CLAIM)
        return;
    ext_unindex(s, id);
    if (op != DG_OP_DELETE)
        ext_index(s, id);
}

void sch_ext_index_open(sch_sched *s)
{
    de_map_init(&s->ext_owned);
    de_map_init(&s->ext_owner);
    for (uint32_t i = 0; i < dg_claim_id_limit(s->g); i++)
        ext_index(s, i);
    dg_add_listener(s->g, ext_on_change, s);
}

void sch_ext_index_close(sch_sched *s)
{
    dg_remove_listener(s->g, ext_on_change, s);
    uint64_t k, v;
    for (size_t it = 0; de_map_next(&s->ext_owned, &it, &k, &v);)
        sch_key_release(s, k);
    de_map_destroy(&s->ext_owned);
    de_map_destroy(&s->ext_owner);
}

/* An extended-resource claim that already exists for this pod: the one
 * with the lowest id when there are several (the temporary claims of a
 * cycle are gone by the next one). */
uint32_t sch_ext_existing(sch_sched *s, const dg_pod *p)
{
    uint64_t v;
    if (!de_map_get(&s->ext_owned, sch_key(p->meta.ns, p->meta.uid), &v))
        return DG_NONE;
    const vec32 *vec = &s->vecs[v - 1];
    uint32_t best = DG_NONE;
    for (uint32_t i = 0; i < vec->n; i++)
        if (vec->v[i] < best)
            best = vec->v[i];
    return best;
}
