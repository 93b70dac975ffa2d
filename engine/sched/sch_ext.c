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
 * end of the cycle.  Requests follow upstream's naming:
 * container-<i>-request-<j> (i over initContainers ++ containers, j the
 * index of the resource among that container's sorted request names), one
 * ExactCount request per container and resource; plain init containers ask
 * only for what the long-lived containers do not already cover, merged into
 * one request sized to the largest remainder.  At PreBind the claim is
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
#define EXT_MAX 16

static const de_origin EXT_ORIGIN = {"draengine", 1, -1};

static bool native(sch_sched *s, uint32_t name)
{
    const char *n = de_intern_str(s->in, name);
    return !strcmp(n, "cpu") || !strcmp(n, "memory") || !strcmp(n, "ephemeral-storage") ||
           !strcmp(n, "pods") || !strncmp(n, "hugepages-", 10);
}

static int cmp_res(const void *a, const void *b, void *in)
{
    return de_intern_cmp(in, *(const uint32_t *)a, *(const uint32_t *)b);
}

/* Tiny insertion sort by string (qsort_r would need _GNU_SOURCE ordering
 * guarantees we do not want to depend on for a handful of items). */
static void sort_names(de_interner *in, uint32_t *v, uint32_t n)
{
    for (uint32_t i = 1; i < n; i++)
        for (uint32_t j = i; j > 0 && cmp_res(&v[j - 1], &v[j], in) > 0; j--) {
            uint32_t t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
}

uint32_t sch_ext_resources(sch_sched *s, const dg_pod *p, uint32_t *res, uint32_t *cls)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < p->ncontainers; i++) {
        const dg_container *c = &p->containers[i];
        for (uint32_t k = 0; k < c->nrequests; k++) {
            uint32_t r = c->requests[k].name;
            if (native(s, r) || de_qty_sign(c->requests[k].value) <= 0)
                continue;
            uint32_t cl = dg_class_for_extended_resource(s->g, r);
            if (cl == DG_NONE)
                continue;
            bool dup = false;
            for (uint32_t j = 0; j < n; j++)
                dup |= res[j] == r;
            if (!dup && n < EXT_MAX) {
                res[n] = r;
                cls[n] = cl;
                n++;
            }
        }
    }
    /* sorted by resource name, classes alongside */
    for (uint32_t i = 1; i < n; i++)
        for (uint32_t j = i; j > 0 && de_intern_cmp(s->in, res[j - 1], res[j]) > 0; j--) {
            uint32_t t = res[j];
            res[j] = res[j - 1];
            res[j - 1] = t;
            t = cls[j];
            cls[j] = cls[j - 1];
            cls[j - 1] = t;
        }
    return n;
}

/* Which of the resources this node leaves to DRA: bit i when the node's
 * allocatable has none of res[i]. */
unsigned sch_ext_mask(sch_sched *s, const dg_node *n, const uint32_t *res, uint32_t nres)
{
    (void)s;
    unsigned mask = 0;
    for (uint32_t i = 0; i < nres; i++) {
        bool has = false;
        for (uint32_t k = 0; k < n->nallocatable; k++)
            if (n->allocatable[k].name == res[i] && de_qty_sign(n->allocatable[k].value) > 0)
                has = true;
        if (!has)
            mask |= 1u << i;
    }
    return mask;
}

static int64_t req_of(const dg_container *c, uint32_t r)
{
    for (uint32_t k = 0; k < c->nrequests; k++)
        if (c->requests[k].name == r)
            return de_qty_value(c->requests[k].value);
    return 0;
}

/* j: index of r among the container's request names in byte order */
static uint32_t req_index(sch_sched *s, const dg_container *c, uint32_t r)
{
    uint32_t names[64], n = 0;
    for (uint32_t k = 0; k < c->nrequests && n < 64; k++)
        names[n++] = c->requests[k].name;
    sort_names(s->in, names, n);
    for (uint32_t k = 0; k < n; k++)
        if (names[k] == r)
            return k;
    return 0;
}

/* Build the claim spec requests and the pod-status mappings for the subset
 * `mask` of res[]. Returns requests (sorted by name) and mappings. */
void sch_ext_build(sch_sched *s, const dg_pod *p, const uint32_t *res, const uint32_t *cls,
                   uint32_t nres, unsigned mask, json_t **requests, json_t **mappings)
{
    json_t *reqs = json_object(); /* name -> request, sorted on output */
    json_t *maps = json_array();
    for (uint32_t ri = 0; ri < nres; ri++) {
        if (!(mask & (1u << ri)))
            continue;
        uint32_t r = res[ri];
        const char *cname = de_intern_str(s->in, dg_class_get(s->g, cls[ri])->meta.name);
        char init_name[96] = "";
        int64_t init_max = 0;
        json_t *init_maps = json_array();
        for (uint32_t ci = 0; ci < p->ncontainers; ci++) {
            const dg_container *c = &p->containers[ci];
            int64_t q = req_of(c, r);
            if (q <= 0)
                continue;
            char rn[96];
            snprintf(rn, sizeof rn, "container-%u-request-%u", ci, req_index(s, c, r));
            if (c->init && !c->sidecar) {
                int64_t avail = 0;
                for (uint32_t k = ci; k < p->ncontainers; k++) {
                    const dg_container *o = &p->containers[k];
                    if (!o->init || o->sidecar)
                        avail += req_of(o, r);
                }
                int64_t rem = q - avail;
                if (rem <= 0)
                    continue;
                if (!init_name[0])
                    snprintf(init_name, sizeof init_name, "%s", rn);
                init_max = DE_MAX(init_max, rem);
                json_array_append_new(init_maps,
                                      json_pack("{s:s, s:s}", "containerName",
                                                de_intern_str(s->in, c->name), "resourceName",
                                                de_intern_str(s->in, r)));
                continue;
            }
            json_object_set_new(reqs, rn,
                                json_pack("{s:s, s:{s:s, s:s, s:I}}", "name", rn, "exactly",
                                          "deviceClassName", cname, "allocationMode",
                                          "ExactCount", "count", (json_int_t)q));
            json_array_append_new(maps, json_pack("{s:s, s:s, s:s}", "containerName",
                                                  de_intern_str(s->in, c->name), "resourceName",
                                                  de_intern_str(s->in, r), "requestName", rn));
        }
        if (init_name[0]) {
            json_object_set_new(reqs, init_name,
                                json_pack("{s:s, s:{s:s, s:s, s:I}}", "name", init_name, "exactly",
                                          "deviceClassName", cname, "allocationMode",
                                          "ExactCount", "count", (json_int_t)init_max));
            size_t i;
            json_t *m;
            json_array_foreach(init_maps, i, m) {
                json_object_set_new(m, "requestName", json_string(init_name));
                json_array_append(maps, m);
            }
        }
        json_decref(init_maps);
    }
    /* requests sorted by name */
    size_t n = json_object_size(reqs), k = 0;
    const char **keys = de_xmalloc((n + 1) * sizeof *keys);
    const char *key;
    json_t *v;
    json_object_foreach(reqs, key, v) keys[k++] = key;
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && strcmp(keys[j - 1], keys[j]) > 0; j--) {
            const char *t = keys[j];
            keys[j] = keys[j - 1];
            keys[j - 1] = t;
        }
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append(arr, json_object_get(reqs, keys[i]));
    free(keys);
    json_decref(reqs);
    *requests = arr;
    *mappings = maps;
}

/* The claim object (without name) for a pod. */
json_t *sch_ext_claim_object(sch_sched *s, const dg_pod *p, json_t *requests)
{
    const char *pod = de_intern_str(s->in, p->meta.name);
    char gen[300];
    snprintf(gen, sizeof gen, "%.200s-extended-resources-", pod);
    return json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s}, s:[{s:s, s:s, s:s, s:s, s:b, s:b}]},"
                     " s:{s:{s:O}}}",
                     "apiVersion", "resource.k8s.io/v1", "kind", "ResourceClaim", "metadata",
                     "generateName", gen, "namespace", de_intern_str(s->in, p->meta.ns),
                     "annotations", EXT_ANNOTATION, "true", "ownerReferences", "apiVersion", "v1",
                     "kind", "Pod", "name", pod, "uid", de_intern_str(s->in, p->meta.uid),
                     "controller", 1, "blockOwnerDeletion", 1, "spec", "devices", "requests",
                     requests);
}

/* Place a temporary copy in the graph so the allocator can see it. */
uint32_t sch_ext_temp_claim(sch_sched *s, const dg_pod *p, json_t *obj, unsigned mask)
{
    json_t *o = json_deep_copy(obj);
    json_t *md = json_object_get(o, "metadata");
    char name[300];
    snprintf(name, sizeof name, "%.200s-extended-resources-draengine-%u",
             de_intern_str(s->in, p->meta.name), mask);
    json_object_set_new(md, "name", json_string(name));
    json_object_del(md, "generateName");
    de_err e;
    de_err_clear(&e);
    uint32_t clid = DG_NONE;
    if (dg_apply(s->g, o, &EXT_ORIGIN, NULL, &e) == DE_OK)
        clid = dg_claim_find(s->g, p->meta.ns, de_intern_cstr(s->in, name));
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

/* An extended-resource claim that already exists for this pod. */
uint32_t sch_ext_existing(sch_sched *s, const dg_pod *p)
{
    uint32_t ann = de_intern_cstr(s->in, EXT_ANNOTATION);
    uint32_t lim = dg_claim_id_limit(s->g);
    for (uint32_t i = 0; i < lim; i++) {
        const dg_claim *c = dg_claim_get(s->g, i);
        if (!c || c->meta.ns != p->meta.ns)
            continue;
        bool owned = false, marked = false;
        for (uint32_t k = 0; k < c->meta.nowners; k++)
            owned |= c->meta.owners[k].controller && c->meta.owners[k].uid == p->meta.uid;
        for (uint32_t k = 0; k < c->meta.nannotations; k++)
            marked |= c->meta.annotations[k].key == ann;
        if (owned && marked)
            return i;
    }
    return DG_NONE;
}
