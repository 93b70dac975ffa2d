/*
 * al_extended.c - extended resources backed by DRA (KEP-5004, GA in 1.37):
 * a pod that asks for `example.com/gpu: 1` or
 * `deviceclass.resource.kubernetes.io/<class>: 1` in its container resources
 * gets the devices through a scheduler-made ResourceClaim.  The one
 * implementation of dra-model.md section 4.3, used by al_schedule_pod and by
 * the scheduler of `draengine serve` (engine/sched/sch_ext.c), which only
 * adds the API writes.
 *
 *  - Which resources: those a DeviceClass serves (its extendedResourceName,
 *    newest class first, or the implicit deviceclass.resource.kubernetes.io/
 *    <class>) with a non-zero integer request in some container; limits
 *    stand in for missing requests (API defaulting), sorted by name.
 *  - Per node: a resource the node's allocatable offers (> 0) is left to the
 *    device plugin; the others are served by DRA (al_ext_node_mask).
 *  - The claim's requests, per resource in name order: every long-lived
 *    container (regular, or init with restartPolicy Always) asking for it
 *    gets an ExactCount request container-<i>-request-<j> (i over
 *    initContainers ++ containers, j the resource's index among that
 *    container's sorted request names) for its quantity.  A plain init
 *    container first counts the requests of the long-lived containers at or
 *    after its own index (in index order, until they cover its need; it is
 *    mapped to each one it counts) and asks only for the remainder; all
 *    such remainders of one resource are merged into one request, the first
 *    of the largest, and the mappings to the others are rewritten to its
 *    name.  Requests are sorted by name.  Mappings: per resource the
 *    long-lived containers' ones, then the init containers' ones.
 *  - The claim (al_ext_claim): named <pod>-extended-resources-<5 characters
 *    derived from the pod>, with the bitmask in hex appended when only some
 *    of the resources go through DRA on that node (so the name depends on
 *    the node's resources, never on which nodes were looked at first),
 *    annotated resource.kubernetes.io/extended-resource-claim: "true" and
 *    owned by the pod; allocated together with the pod's own claims, last.
 */
#include "al_int.h"

#include <stdio.h>
#include <stdlib.h>

#define EXT_ANNOTATION "resource.kubernetes.io/extended-resource-claim"

/* the request quantity of `name` in container c (limits default requests);
 * 0 when absent, not a positive integer */
static int64_t amount(const dg_container *c, uint32_t name)
{
    const dg_resource_amount *x = NULL;
    for (uint32_t i = 0; i < c->nrequests && !x; i++)
        if (c->requests[i].name == name)
            x = &c->requests[i];
    for (uint32_t i = 0; i < c->nlimits && !x; i++)
        if (c->limits[i].name == name)
            x = &c->limits[i];
    int64_t v;
    if (!x || !de_qty_int64_exact(x->value, &v) || v <= 0)
        return 0;
    return v;
}

/* index of `name` among the container's sorted request names (limits
 * without a request count as requests) */
static uint32_t sorted_index(const de_interner *in, const dg_container *c, uint32_t name)
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
        if (k != name && de_intern_cmp(in, k, name) < 0)
            idx++;
    }
    return idx;
}

uint32_t al_ext_resources(const dg_graph *g, const de_gates *gates, const dg_pod *pod, al_ext_res *out,
                          uint32_t cap)
{
    if (!gates->on[DE_GATE_EXTENDED_RESOURCE])
        return 0;
    const de_interner *in = dg_intern(g);
    uint32_t n = 0;
    for (uint32_t ci = 0; ci < pod->ncontainers; ci++) {
        const dg_container *c = &pod->containers[ci];
        for (uint32_t i = 0; i < c->nrequests + c->nlimits; i++) {
            uint32_t name = i < c->nrequests ? c->requests[i].name : c->limits[i - c->nrequests].name;
            if (!amount(c, name))
                continue;
            bool seen = false;
            for (uint32_t k = 0; k < n && !seen; k++)
                seen = out[k].resource == name;
            if (seen)
                continue;
            uint32_t cls = dg_class_for_extended_resource(g, name);
            const dg_class *dc = cls == DG_NONE ? NULL : dg_class_get(g, cls);
            if (!dc || n == cap)
                continue;
            /* insert in name order */
            uint32_t at = n;
            while (at > 0 && de_intern_cmp(in, out[at - 1].resource, name) > 0) {
                out[at] = out[at - 1];
                at--;
            }
            out[at] = (al_ext_res){name, dc->meta.name};
            n++;
        }
    }
    return n;
}

uint64_t al_ext_node_mask(const dg_node *node, const al_ext_res *res, uint32_t n)
{
    uint64_t m = 0;
    for (uint32_t i = 0; i < n && i < 64; i++) {
        bool have = false;
        for (uint32_t k = 0; node && k < node->nallocatable && !have; k++)
            have = node->allocatable[k].name == res[i].resource && de_qty_sign(node->allocatable[k].value) > 0;
        if (!have)
            m |= 1ull << i;
    }
    return m;
}

static void add_map(al_ext_spec *s, uint32_t *cap, de_arena *ar, uint32_t container, uint32_t resource,
                    uint32_t request)
{
    if (s->nmappings == *cap) {
        uint32_t nc = *cap ? *cap * 2 : 8;
        al_ext_mapping *m = AL_NEW(ar, al_ext_mapping, nc);
        if (s->nmappings)
            memcpy(m, s->mappings, s->nmappings * sizeof *m);
        s->mappings = m;
        *cap = nc;
    }
    s->mappings[s->nmappings++] = (al_ext_mapping){container, resource, request};
}

static int cmp_req(const void *p, const void *q, void *ctx)
{
    const al_ext_request *x = p, *y = q;
    return de_intern_cmp(ctx, x->name, y->name);
}

void al_ext_build(dg_graph *g, const dg_pod *pod, const al_ext_res *res, uint32_t n, uint64_t mask,
                  de_arena *ar, al_ext_spec *out)
{
    de_interner *in = dg_intern(g);
    memset(out, 0, sizeof *out);
    uint32_t nc = pod->ncontainers, mapcap = 0;
    out->requests = AL_NEW(ar, al_ext_request, (size_t)nc * (n ? n : 1) + 1);
    /* per resource: the long-lived containers' requests by container index */
    al_ext_request **ll = AL_NEW(ar, al_ext_request *, nc ? nc : 1);
    for (uint32_t ri = 0; ri < n && ri < 64; ri++) {
        if (!(mask & (1ull << ri)))
            continue;
        uint32_t r = res[ri].resource;
        memset(ll, 0, (nc ? nc : 1) * sizeof *ll);
        for (uint32_t ci = 0; ci < nc; ci++) {
            const dg_container *c = &pod->containers[ci];
            int64_t q = amount(c, r);
            if (!q || (c->init && !c->sidecar))
                continue;
            al_ext_request *x = &out->requests[out->nrequests++];
            char name[64];
            snprintf(name, sizeof name, "container-%u-request-%u", ci, sorted_index(in, c, r));
            *x = (al_ext_request){de_intern_cstr(in, name), res[ri].class_name, q};
            ll[ci] = x;
            add_map(out, &mapcap, ar, c->name, r, x->name);
        }
        /* plain init containers: what the later long-lived ones leave over */
        uint32_t map0 = out->nmappings, nnames = 0;
        uint32_t *names = AL_NEW(ar, uint32_t, nc ? nc : 1);
        al_ext_request best = {0};
        for (uint32_t ci = 0; ci < nc; ci++) {
            const dg_container *c = &pod->containers[ci];
            int64_t q = amount(c, r);
            if (!q || !c->init || c->sidecar)
                continue;
            int64_t sum = 0;
            for (uint32_t k = ci; k < nc && sum < q; k++)
                if (ll[k]) {
                    sum += ll[k]->count;
                    add_map(out, &mapcap, ar, c->name, r, ll[k]->name);
                }
            if (sum >= q)
                continue;
            char name[64];
            snprintf(name, sizeof name, "container-%u-request-%u", ci, sorted_index(in, c, r));
            uint32_t nm = de_intern_cstr(in, name);
            names[nnames++] = nm;
            if (!best.name || best.count < q - sum)
                best = (al_ext_request){nm, res[ri].class_name, q - sum};
            add_map(out, &mapcap, ar, c->name, r, nm);
        }
        if (best.name) {
            out->requests[out->nrequests++] = best;
            for (uint32_t k = map0; k < out->nmappings; k++)
                for (uint32_t j = 0; j < nnames; j++)
                    if (out->mappings[k].request == names[j])
                        out->mappings[k].request = best.name;
        }
    }
    qsort_r(out->requests, out->nrequests, sizeof *out->requests, cmp_req, in);
}

json_t *al_ext_requests_json(const dg_graph *g, const al_ext_spec *s)
{
    const de_interner *in = dg_intern(g);
    json_t *reqs = json_array();
    for (uint32_t i = 0; i < s->nrequests; i++)
        json_array_append_new(reqs, json_pack("{s:s, s:{s:s, s:s, s:I}}", "name", de_intern_str(in, s->requests[i].name),
                                              "exactly", "deviceClassName",
                                              de_intern_str(in, s->requests[i].class_name), "allocationMode",
                                              "ExactCount", "count", (json_int_t)s->requests[i].count));
    return reqs;
}

json_t *al_ext_mappings_json(const dg_graph *g, const al_ext_spec *s)
{
    const de_interner *in = dg_intern(g);
    json_t *maps = json_array();
    for (uint32_t i = 0; i < s->nmappings; i++)
        json_array_append_new(maps, json_pack("{s:s, s:s, s:s}", "containerName",
                                              de_intern_str(in, s->mappings[i].container), "resourceName",
                                              de_intern_str(in, s->mappings[i].resource), "requestName",
                                              de_intern_str(in, s->mappings[i].request)));
    return maps;
}

/* The claim for the resources in `mask`, created in the graph (or found
 * there: the same pod and mask give the same name). */
de_rc al_ext_claim(al_allocator *a, const dg_pod *pod, const al_ext_res *res, uint32_t n, uint64_t mask,
                   uint32_t *clid, de_err *e)
{
    static const char alphabet[] = "bcdfghjklmnpqrstvwxz2456789";
    const char *pname = al_str(a, pod->meta.name);
    uint64_t full = n >= 64 ? ~0ull : (1ull << n) - 1;
    uint64_t h = de_hash_bytes(pname, strlen(pname)) ^ de_hash_u64(pod->meta.uid + 0x51ed) ^ de_hash_u64(full);
    char suffix[8];
    for (int i = 0; i < 5; i++) {
        suffix[i] = alphabet[h % (sizeof alphabet - 1)];
        h /= sizeof alphabet - 1;
    }
    suffix[5] = 0;
    char name[300];
    if (mask == full)
        snprintf(name, sizeof name, "%s-extended-resources-%s", pname, suffix);
    else
        snprintf(name, sizeof name, "%s-extended-resources-%s%llx", pname, suffix, (unsigned long long)mask);
    uint32_t id = dg_claim_find(a->g, pod->meta.ns, al_intern(a, name));
    if (id != DG_NONE) {
        *clid = id;
        return DE_OK;
    }
    de_arena *ar = de_arena_new_sized(0, 4096);
    al_ext_spec spec;
    al_ext_build(a->g, pod, res, n, mask, ar, &spec);
    json_t *reqs = al_ext_requests_json(a->g, &spec);
    de_arena_free(ar);
    /* what kube-scheduler sets (extendeddynamicresources.go): no blockOwnerDeletion */
    json_t *owner = json_pack("{s:s, s:s, s:s, s:s, s:b}", "apiVersion", "v1", "kind", "Pod", "name", pname, "uid",
                              pod->meta.uid ? al_str(a, pod->meta.uid) : "", "controller", 1);
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
    al_ext_res r[1];
    return al_ext_resources(a->g, &a->opts.gates, pod, r, 1) > 0;
}
