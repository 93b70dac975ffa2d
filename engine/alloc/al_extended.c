/*
 * al_extended.c - extended resources backed by DRA (KEP-5004, GA in 1.37):
 * a pod that asks for `example.com/gpu: 1` or
 * `deviceclass.resource.kubernetes.io/<class>: 1` in its container resources
 * gets the devices through a scheduler-made ResourceClaim.
 *
 * As kube-scheduler's DynamicResources plugin: a resource qualifies when a
 * DeviceClass serves it (its extendedResourceName, newest class first, or the
 * implicit deviceclass.resource.kubernetes.io/<class>) and the quantity is a
 * non-zero integer; on a node whose allocatable already offers it the device
 * plugin serves it instead.  The claim has one ExactCount request per
 * (container, resource), named container-<i>-request-<j> (i over
 * initContainers then containers, j the resource's index among that
 * container's sorted request names), requests sorted by name; it is
 * allocated together with the pod's own claims, last.  It is named
 * <pod>-extended-resources-<5 characters derived from the pod>, annotated
 * resource.kubernetes.io/extended-resource-claim: "true" and owned by the pod.
 * Resource limits without requests count as requests (API defaulting).
 */
#include "al_int.h"

#include <stdio.h>
#include <stdlib.h>

#define EXT_ANNOTATION "resource.kubernetes.io/extended-resource-claim"

/* the request quantity of `name` in container c (limits default requests) */
static bool amount(const dg_container *c, uint32_t name, de_qty *out)
{
    for (uint32_t i = 0; i < c->nrequests; i++)
        if (c->requests[i].name == name) {
            *out = c->requests[i].value;
            return true;
        }
    for (uint32_t i = 0; i < c->nlimits; i++)
        if (c->limits[i].name == name) {
            *out = c->limits[i].value;
            return true;
        }
    return false;
}

/* index of `name` among the container's sorted request names */
static uint32_t sorted_index(al_allocator *a, const dg_container *c, uint32_t name)
{
    uint32_t idx = 0;
    for (uint32_t i = 0; i < c->nrequests + c->nlimits; i++) {
        uint32_t k = i < c->nrequests ? c->requests[i].name : c->limits[i - c->nrequests].name;
        if (i >= c->nrequests) {
            bool dup = false;
            for (uint32_t j = 0; j < c->nrequests && !dup; j++)
                dup = c->requests[j].name == k;
            if (dup)
                continue;
        }
        if (k != name && de_intern_cmp(a->in, k, name) < 0)
            idx++;
    }
    return idx;
}

uint32_t al_ext_needs(al_allocator *a, const dg_pod *pod, de_arena *ar, al_ext **out)
{
    *out = NULL;
    if (!a->opts.gates.on[DE_GATE_EXTENDED_RESOURCE])
        return 0;
    uint32_t cap = 0, n = 0;
    al_ext *v = NULL;
    for (uint32_t ci = 0; ci < pod->ncontainers; ci++) {
        const dg_container *c = &pod->containers[ci];
        for (uint32_t i = 0; i < c->nrequests + c->nlimits; i++) {
            uint32_t name = i < c->nrequests ? c->requests[i].name : c->limits[i - c->nrequests].name;
            de_qty q;
            int64_t count;
            if (!amount(c, name, &q) || !de_qty_int64_exact(q, &count) || count <= 0)
                continue;
            bool seen = false;
            for (uint32_t k = 0; k < n && !seen; k++)
                seen = v[k].container == ci && v[k].resource == name;
            if (seen)
                continue;
            uint32_t cls = dg_class_for_extended_resource(a->g, name);
            if (cls == DG_NONE)
                continue;
            const dg_class *dc = dg_class_get(a->g, cls);
            if (!dc)
                continue;
            if (n == cap) {
                cap = cap ? cap * 2 : 4;
                al_ext *nv = AL_NEW(ar, al_ext, cap);
                if (n)
                    memcpy(nv, v, n * sizeof *nv);
                v = nv;
            }
            al_ext *e = &v[n++];
            e->container = ci;
            e->resource = name;
            e->class_name = dc->meta.name;
            e->count = count;
            e->request = al_internf(a, "container-%u-request-%u", ci, sorted_index(a, c, name));
        }
    }
    *out = v;
    return n;
}

/* which needs the node's allocatable leaves to DRA: bit i set = DRA */
uint64_t al_ext_mask(const al_ext *x, uint32_t n, const dg_node *node)
{
    uint64_t m = 0;
    for (uint32_t i = 0; i < n && i < 64; i++) {
        bool have = false;
        for (uint32_t k = 0; node && k < node->nallocatable && !have; k++)
            have = node->allocatable[k].name == x[i].resource && de_qty_sign(node->allocatable[k].value) > 0;
        if (!have)
            m |= 1ull << i;
    }
    return m;
}

static int cmp_req(const void *p, const void *q, void *ctx)
{
    const al_ext *x = *(const al_ext *const *)p, *y = *(const al_ext *const *)q;
    return de_intern_cmp(ctx, x->request, y->request);
}

/* The claim for one set of needs, created in the graph (or found there). */
de_rc al_ext_claim(al_allocator *a, const dg_pod *pod, const al_ext *x, uint32_t n, uint64_t mask,
                   uint32_t variant, uint32_t *clid, de_err *e)
{
    static const char alphabet[] = "bcdfghjklmnpqrstvwxz2456789";
    const char *pname = al_str(a, pod->meta.name);
    uint64_t h = de_hash_bytes(pname, strlen(pname)) ^ de_hash_u64(pod->meta.uid + 0x51ed) ^ de_hash_u64(mask);
    char suffix[8];
    for (int i = 0; i < 5; i++) {
        suffix[i] = alphabet[h % (sizeof alphabet - 1)];
        h /= sizeof alphabet - 1;
    }
    suffix[5] = 0;
    char name[300];
    if (variant)
        snprintf(name, sizeof name, "%s-extended-resources-%s%u", pname, suffix, variant);
    else
        snprintf(name, sizeof name, "%s-extended-resources-%s", pname, suffix);
    uint32_t id = dg_claim_find(a->g, pod->meta.ns, al_intern(a, name));
    if (id != DG_NONE) {
        *clid = id;
        return DE_OK;
    }
    const al_ext *sorted[64];
    uint32_t m = 0;
    for (uint32_t i = 0; i < n && i < 64; i++)
        if (mask & (1ull << i))
            sorted[m++] = &x[i];
    qsort_r(sorted, m, sizeof *sorted, cmp_req, a->in);
    json_t *reqs = json_array();
    for (uint32_t i = 0; i < m; i++)
        json_array_append_new(reqs, json_pack("{s:s, s:{s:s, s:s, s:I}}", "name", al_str(a, sorted[i]->request),
                                              "exactly", "deviceClassName", al_str(a, sorted[i]->class_name),
                                              "allocationMode", "ExactCount", "count",
                                              (json_int_t)sorted[i]->count));
    json_t *owner = json_pack("{s:s, s:s, s:s, s:b, s:b}", "apiVersion", "v1", "kind", "Pod", "name", pname,
                              "controller", 1, "blockOwnerDeletion", 1);
    if (pod->meta.uid)
        json_object_set_new(owner, "uid", json_string(al_str(a, pod->meta.uid)));
    json_t *obj = json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:{s:s}, s:[o]}, s:{s:{s:o}}}", "apiVersion",
                            "resource.k8s.io/v1", "kind", "ResourceClaim", "metadata", "name", name,
                            "namespace", al_str(a, pod->meta.ns), "generateName",
                            de_arena_printf(a->scratch, "%s-extended-resources-", pname), "annotations",
                            EXT_ANNOTATION, "true", "ownerReferences", owner, "spec", "devices", "requests", reqs);
    de_origin o = {"<scheduler>", 1, -1};
    dg_kind k;
    de_rc rc = dg_apply(a->g, obj, &o, &k, e);
    json_decref(obj);
    if (rc != DE_OK)
        return rc;
    *clid = dg_claim_find(a->g, pod->meta.ns, al_intern(a, name));
    return *clid == DG_NONE ? de_errf(e, DE_EINTERNAL, "extended resource claim %s vanished", name) : DE_OK;
}

bool al_pod_uses_dra(al_allocator *a, uint32_t podid)
{
    const dg_pod *pod = dg_pod_get(a->g, podid);
    if (!pod)
        return false;
    if (pod->nclaims)
        return true;
    de_arena *ar = de_arena_new_sized(0, 1024);
    al_ext *x;
    bool any = al_ext_needs(a, pod, ar, &x) > 0;
    de_arena_free(ar);
    return any;
}
