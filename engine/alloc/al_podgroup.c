/*
 * al_podgroup.c - PodGroup claims (KEP-5729, gate DRAWorkloadResourceClaims):
 * which of a pod's claims it shares with the other pods of its PodGroup,
 * and which claim that is.  One reading of the PodGroup objects for
 * `serve` (engine/sched, which watches them) and `allocate`
 * (al_schedule_pod, which reads them from its input).
 *
 * PodGroups are kept as their JSON in a map "namespace/name" -> object
 * (al_podgroups_put), since nothing else of them is modelled.  The rules,
 * as upstream's resourceclaim.BindTo and NameFromPodGroup:
 *  - the pod names its group in spec.schedulingGroup.podGroupName;
 *  - a pod claim entry is the group's when an entry of the PodGroup's
 *    spec.resourceClaims has the same name, resourceClaimName and
 *    resourceClaimTemplateName; it is then reserved for the PodGroup, once,
 *    however many pods use it;
 *  - a template entry's claim is the one the claim controller recorded in
 *    the PodGroup's status.resourceClaimStatuses.  `serve` waits for it;
 *    `allocate` plays the controller (dg_claim_from_template_for_group).
 */
#include "al_int.h"

#include <stdio.h>

static const char *jstr(json_t *o, const char *k)
{
    json_t *v = o ? json_object_get(o, k) : NULL;
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static void key_of(const char *ns, const char *name, char *out, size_t cap)
{
    snprintf(out, cap, "%s/%s", ns ? ns : "", name ? name : "");
}

void al_podgroups_put(json_t *map, json_t *obj)
{
    json_t *md = json_object_get(obj, "metadata");
    const char *ns = jstr(md, "namespace"), *name = jstr(md, "name");
    if (!name)
        return;
    char k[600];
    key_of(ns ? ns : "default", name, k, sizeof k);
    json_object_set(map, k, obj);
}

void al_podgroups_del(json_t *map, const char *ns, const char *name)
{
    char k[600];
    key_of(ns, name, k, sizeof k);
    json_object_del(map, k);
}

/* The name is read once, where the pod is decoded (dec_pod: schedulingGroup,
 * or the alpha workloadRef), not from its text on every ask. */
const char *al_pod_group_name(const dg_graph *g, uint32_t pod)
{
    const dg_pod *p = dg_pod_get(g, pod);
    return p && p->group ? de_intern_str(dg_intern(g), p->group) : NULL;
}

json_t *al_podgroup_find(const dg_graph *g, json_t *map, uint32_t pod)
{
    const dg_pod *p = dg_pod_get(g, pod);
    const char *gn = al_pod_group_name(g, pod);
    if (!p || !gn || !map)
        return NULL;
    char k[600];
    key_of(de_intern_str(dg_intern(g), p->meta.ns), gn, k, sizeof k);
    return json_object_get(map, k);
}

const char *al_podgroup_uid(json_t *pg)
{
    const char *u = jstr(json_object_get(pg, "metadata"), "uid");
    return u ? u : "";
}

static bool same(const char *a, const char *b)
{
    return !strcmp(a ? a : "", b ? b : "");
}

bool al_podgroup_shares(const dg_graph *g, json_t *pg, const dg_pod *pod, uint32_t i)
{
    if (!pg || i >= pod->nclaims)
        return false;
    const de_interner *in = dg_intern(g);
    const dg_pod_claim_ref *ref = &pod->claims[i];
    const char *rn = de_intern_str(in, ref->name), *rc = ref->claim_name ? de_intern_str(in, ref->claim_name) : NULL,
               *rt = ref->template_name ? de_intern_str(in, ref->template_name) : NULL;
    size_t k;
    json_t *e;
    json_array_foreach(json_object_get(json_object_get(pg, "spec"), "resourceClaims"), k, e) {
        if (same(jstr(e, "name"), rn) && same(jstr(e, "resourceClaimName"), rc) &&
            same(jstr(e, "resourceClaimTemplateName"), rt))
            return true;
    }
    return false;
}

uint32_t al_podgroup_claim_name(dg_graph *g, json_t *pg, uint32_t ref_name)
{
    const char *rn = de_intern_str(dg_intern(g), ref_name);
    size_t k;
    json_t *e;
    json_array_foreach(json_object_get(json_object_get(pg, "status"), "resourceClaimStatuses"), k, e) {
        const char *cn = jstr(e, "resourceClaimName");
        if (same(jstr(e, "name"), rn) && cn && *cn)
            return de_intern_cstr(dg_intern(g), cn);
    }
    return 0;
}

bool al_claim_owned_by(const dg_claim *c, uint32_t uid)
{
    for (uint32_t i = 0; i < c->meta.nowners; i++)
        if (c->meta.owners[i].controller && c->meta.owners[i].uid == uid)
            return true;
    return false;
}

void al_set_podgroups(al_allocator *a, json_t *map)
{
    a->podgroups = map;
}
