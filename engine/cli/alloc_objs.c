/*
 * alloc_objs.c - the objects `allocate -o json|yaml` prints: each claim
 * with the allocation the run gave it, and (without --node) each Pod as
 * the API would show it after the decision.
 *
 *  - Scheduled: what pods/binding makes of it - spec.nodeName set,
 *    status.nominatedNodeName cleared, condition PodScheduled=True - plus
 *    the status the claim controller and the scheduler write before it:
 *    status.resourceClaimStatuses for claims made from templates (sorted
 *    by name, as the controller applies them),
 *    status.extendedResourceClaimStatus for a KEP-5004 claim and
 *    status.nodeAllocatableResourceClaimStatuses (KEP-5517).
 *  - Awaiting binding conditions (KEP-5007): allocated but not bound;
 *    kube-scheduler has published status.nominatedNodeName and waits in
 *    PreBind, so spec.nodeName stays empty.
 *  - Unschedulable: condition PodScheduled=False, reason Unschedulable and
 *    kube-scheduler's message (al_pod_outcome.k8s_why).
 * Timestamps the API server would add (lastTransitionTime) are left out so
 * the output stays byte-stable.
 */
#include "alloc_plan.h"

#include "../base/intern.h"

#include <stdlib.h>
#include <string.h>

json_t *cli_claim_with_allocation(dg_graph *g, uint32_t clid, const dg_allocation *al, const char *revision)
{
    json_t *src = dg_claim_json(g, clid);
    json_t *c = src ? json_deep_copy(src) : json_object();
    if (revision) {
        json_t *md = json_object_get(c, "metadata");
        if (!json_is_object(md)) {
            md = json_object();
            json_object_set_new(c, "metadata", md);
        }
        json_t *an = json_object_get(md, "annotations");
        if (!json_is_object(an)) {
            an = json_object();
            json_object_set_new(md, "annotations", an);
        }
        json_object_set_new(an, CLI_POLICY_REVISION_ANNOTATION, json_string(revision));
    }
    if (al) {
        json_t *st = json_object_get(c, "status");
        if (!json_is_object(st)) {
            st = json_object();
            json_object_set_new(c, "status", st);
        }
        json_object_set_new(st, "allocation", dg_encode_allocation(g, al));
    }
    return c;
}

static json_t *obj_of(json_t *parent, const char *key)
{
    json_t *o = json_object_get(parent, key);
    if (!json_is_object(o)) {
        o = json_object();
        json_object_set_new(parent, key, o);
    }
    return o;
}

/* A copy of the pod with `cond` as its PodScheduled condition. */
static json_t *pod_copy(dg_graph *g, uint32_t pid, json_t *cond)
{
    json_t *src = dg_pod_json(g, pid);
    json_t *p = src ? json_deep_copy(src) : json_object();
    json_t *st = obj_of(p, "status");
    json_t *conds = json_object_get(st, "conditions"), *out = json_array();
    size_t i;
    json_t *c;
    json_array_foreach(conds, i, c) {
        const char *t = json_string_value(json_object_get(c, "type"));
        if (!t || strcmp(t, "PodScheduled"))
            json_array_append(out, c);
    }
    const dg_pod *pod = dg_pod_get(g, pid);
    if (pod && pod->meta.generation > 0 && cond)
        json_object_set_new(cond, "observedGeneration", json_integer(pod->meta.generation));
    if (cond)
        json_array_append_new(out, cond);
    if (json_array_size(out))
        json_object_set_new(st, "conditions", out);
    else {
        json_decref(out);
        json_object_del(st, "conditions");
    }
    return p;
}

static int cmp_status(const void *x, const void *y)
{
    const char *a = json_string_value(json_object_get(*(json_t *const *)x, "name"));
    const char *b = json_string_value(json_object_get(*(json_t *const *)y, "name"));
    return strcmp(a ? a : "", b ? b : "");
}

json_t *cli_pod_scheduled(al_allocator *al, dg_graph *g, const al_pod_outcome *po, bool awaiting)
{
    de_interner *in = dg_intern(g);
    const dg_pod *pod = dg_pod_get(g, po->pod);
    const char *node = de_intern_str(in, po->node_name);
    json_t *p = pod_copy(g, po->pod,
                         awaiting ? NULL : json_pack("{s:s, s:s}", "type", "PodScheduled", "status", "True"));
    json_t *st = obj_of(p, "status");
    if (awaiting) {
        json_object_set_new(st, "nominatedNodeName", json_string(node));
    } else {
        json_object_set_new(obj_of(p, "spec"), "nodeName", json_string(node));
        json_object_del(st, "nominatedNodeName");
    }
    if (!pod)
        return p;
    if (pod->nclaim_statuses) {
        json_t **v = de_xcalloc(pod->nclaim_statuses, sizeof *v);
        for (uint32_t i = 0; i < pod->nclaim_statuses; i++) {
            const dg_pod_claim_status *s = &pod->claim_statuses[i];
            v[i] = json_pack("{s:s}", "name", de_intern_str(in, s->name));
            if (s->claim_name)
                json_object_set_new(v[i], "resourceClaimName", json_string(de_intern_str(in, s->claim_name)));
        }
        qsort(v, pod->nclaim_statuses, sizeof *v, cmp_status);
        json_t *arr = json_array();
        for (uint32_t i = 0; i < pod->nclaim_statuses; i++)
            json_array_append_new(arr, v[i]);
        free(v);
        json_object_set_new(st, "resourceClaimStatuses", arr);
    }
    /* what the devices take from the node (KEP-5517), written in PreBind */
    if (po->nar && po->nar->n)
        json_object_set_new(st, "nodeAllocatableResourceClaimStatuses", al_nar_json(g, po->nar));
        /* the KEP-5004 claim, last among the pod's claims */
    if (po->nclaims > pod->nclaims && po->claims[po->nclaims - 1] != DG_NONE) {
        const dg_claim *c = dg_claim_get(g, po->claims[po->nclaims - 1]);
        uint32_t nid = dg_node_find(g, po->node_name);
        al_ext_res res[AL_EXT_MAX];
        uint32_t n = al_ext_resources(g, al_gates(al), pod, res, AL_EXT_MAX);
        uint64_t mask = al_ext_node_mask(nid == DG_NONE ? NULL : dg_node_get(g, nid), res, n);
        if (c && n && mask) {
            de_arena *ar = de_arena_new_sized(0, 4096);
            al_ext_spec spec;
            al_ext_build(g, pod, res, n, mask, ar, &spec);
            json_object_set_new(st, "extendedResourceClaimStatus",
                                json_pack("{s:s, s:o}", "resourceClaimName", de_intern_str(in, c->meta.name),
                                          "requestMappings", al_ext_mappings_json(g, &spec)));
            de_arena_free(ar);
        }
    }
    return p;
}

json_t *cli_pod_unschedulable(dg_graph *g, uint32_t pid, const char *message)
{
    return pod_copy(g, pid,
                    json_pack("{s:s, s:s, s:s, s:s}", "type", "PodScheduled", "status", "False", "reason",
                              "Unschedulable", "message", message ? message : ""));
}
