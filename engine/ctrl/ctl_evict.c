/*
 * ctl_evict.c - which running pods kube-controller-manager's device taint
 * eviction controller (pkg/controller/devicetainteviction, 1.37) would
 * delete, and why.  Its rules, followed here:
 *
 *  - a pod counts once it is scheduled (spec.nodeName) and not being
 *    deleted; its claims are those of spec.resourceClaims (a template's
 *    claim through status.resourceClaimStatuses); a claim found that way is
 *    used only when it is allocated, reserved for the pod (reservedFor uid,
 *    or its PodGroup with DRAWorkloadResourceClaims) and, for a template's
 *    claim, controlled by the pod (or its PodGroup);
 *  - for each allocated device: the NoExecute taints of the device in the
 *    newest generation of its pool, and every DeviceTaintRule with effect
 *    NoExecute whose deviceSelector matches the result's driver, pool and
 *    device (a rule without selector matches nothing);
 *  - a taint is tolerated by a toleration of the allocation result whose
 *    effect is NoExecute and that matches key, operator and value; without
 *    tolerationSeconds it is tolerated forever, else the eviction moves to
 *    timeAdded + the smallest such tolerationSeconds (negative = 0);
 *  - a pod's eviction time is the earliest over its taints, and its reasons
 *    are every such taint: rules first by name, then slice taints by driver,
 *    pool, device and index.
 * The controller does not run when DRADeviceTaints is off, and sees rules
 * only with DRADeviceTaintRules.
 */
#include "ctl_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct ectx {
    const dg_graph *g;
    de_interner *in;
    de_arena *a;
    bool rules, groups;
    uint32_t id_pods, id_podgroups, id_pg_group, id_pg_kind;
} ectx;

/* the eviction controller only looks at tolerations with effect NoExecute */
static bool tolerates(const dg_toleration *t, const dg_taint *x)
{
    return t->effect == DG_EFFECT_NO_EXECUTE && t->effect_raw && dg_tolerates(t, x);
}

static int cmp_reason(const ectx *c, const ctl_evict_reason *x, const ctl_evict_reason *y)
{
    if (!!x->rule != !!y->rule)
        return x->rule ? -1 : 1;
    if (x->rule)
        return de_intern_cmp(c->in, x->rule, y->rule);
    int r = de_intern_cmp(c->in, x->driver, y->driver);
    if (!r)
        r = de_intern_cmp(c->in, x->pool, y->pool);
    if (!r)
        r = de_intern_cmp(c->in, x->device, y->device);
    if (!r)
        r = x->taint_index < y->taint_index ? -1 : x->taint_index > y->taint_index;
    return r;
}

typedef struct rvec {
    ctl_evict_reason *v;
    uint32_t n, cap;
} rvec;

/* Insert keeping the order; a reason already there (same origin) is kept once,
 * with the earliest time. */
static void add_reason(const ectx *c, rvec *rv, const ctl_evict_reason *r)
{
    uint32_t i = 0;
    while (i < rv->n && cmp_reason(c, &rv->v[i], r) < 0)
        i++;
    if (i < rv->n && !cmp_reason(c, &rv->v[i], r)) {
        if (r->evict_at < rv->v[i].evict_at)
            rv->v[i] = *r;
        return;
    }
    if (rv->n == rv->cap) {
        rv->cap = rv->cap ? rv->cap * 2 : 4;
        rv->v = de_xrealloc(rv->v, rv->cap * sizeof *rv->v);
    }
    memmove(&rv->v[i + 1], &rv->v[i], (rv->n - i) * sizeof *rv->v);
    rv->v[i] = *r;
    rv->n++;
}

/* One taint against the result's tolerations: false when tolerated forever. */
static bool due(const dg_result *res, const dg_taint *t, ctl_evict_reason *r)
{
    bool have = false;
    int64_t secs = INT64_MAX;
    for (uint32_t i = 0; i < res->ntolerations; i++) {
        const dg_toleration *tol = &res->tolerations[i];
        if (!tolerates(tol, t))
            continue;
        if (!tol->has_seconds)
            return false;
        int64_t s = tol->seconds < 0 ? 0 : tol->seconds;
        secs = s < secs ? s : secs;
        have = true;
    }
    r->key = t->key;
    r->value = t->value;
    r->time_added = t->time_added;
    r->tolerated_for = have;
    r->seconds = have ? secs : 0;
    r->evict_at = t->time_added ? t->time_added + r->seconds : 0;
    return true;
}

static void claim_reasons(const ectx *c, const dg_claim *cl, rvec *rv)
{
    for (uint32_t k = 0; k < cl->allocation.nresults; k++) {
        const dg_result *res = &cl->allocation.results[k];
        uint32_t devid = dg_device_find(c->g, res->driver, res->pool, res->device);
        const dg_device *d = devid == DG_NONE ? NULL : dg_device_get(c->g, devid);
        dg_devref ref;
        const dg_slice *s = devid != DG_NONE && dg_device_ref(c->g, devid, &ref) ? dg_slice_get(c->g, ref.slice) : NULL;
        for (uint32_t i = 0; d && i < d->ntaints; i++) {
            if (d->taints[i].effect != DG_EFFECT_NO_EXECUTE)
                continue;
            ctl_evict_reason r = {cl->meta.name, res->driver, res->pool, res->device, 0, 0, 0, s ? s->meta.name : 0, i};
            if (due(res, &d->taints[i], &r))
                add_reason(c, rv, &r);
        }
        for (uint32_t i = 0; c->rules && i < dg_taint_rule_id_limit(c->g); i++) {
            const dg_taint_rule *tr = dg_taint_rule_get(c->g, i);
            if (!tr || tr->taint.effect != DG_EFFECT_NO_EXECUTE || !tr->has_selector)
                continue;
            if ((tr->driver && tr->driver != res->driver) || (tr->pool && tr->pool != res->pool) ||
                (tr->device && tr->device != res->device))
                continue;
            ctl_evict_reason r = {cl->meta.name, res->driver, res->pool, res->device, 0, 0, tr->meta.name, 0, 0};
            if (due(res, &tr->taint, &r))
                add_reason(c, rv, &r);
        }
    }
}

static bool reserved_for(const ectx *c, const dg_claim *cl, const dg_pod *p, uint32_t group)
{
    for (uint32_t i = 0; i < cl->nreserved_for; i++) {
        const dg_consumer *r = &cl->reserved_for[i];
        if (r->uid == p->meta.uid)
            return true;
        if (c->groups && group && r->api_group == c->id_pg_group && r->resource == c->id_podgroups &&
            r->name == group)
            return true;
    }
    return false;
}

static bool controlled_by(const ectx *c, const dg_claim *cl, const dg_pod *p, uint32_t group)
{
    for (uint32_t i = 0; i < cl->meta.nowners; i++) {
        const dg_ownerref *o = &cl->meta.owners[i];
        if (!o->controller)
            continue;
        if (o->uid == p->meta.uid)
            return true;
        const char *av = de_intern_str(c->in, o->api_version);
        if (c->groups && group && o->name == group && o->kind == c->id_pg_kind &&
            !strncmp(av, "scheduling.k8s.io/", 18))
            return true;
    }
    return false;
}

static int64_t earliest(const rvec *rv)
{
    int64_t t = rv->n ? rv->v[0].evict_at : 0;
    for (uint32_t i = 1; i < rv->n; i++)
        if (rv->v[i].evict_at < t)
            t = rv->v[i].evict_at;
    return t;
}

static const de_interner *sort_in;
static int cmp_eviction(const void *a, const void *b)
{
    const ctl_eviction *x = a, *y = b;
    int r = de_intern_cmp(sort_in, x->ns, y->ns);
    return r ? r : de_intern_cmp(sort_in, x->name, y->name);
}

void ctl_evictions(const dg_graph *g, const de_gates *gates, de_arena *a, ctl_eviction **out, uint32_t *n)
{
    *out = NULL;
    *n = 0;
    if (!gates->on[DE_GATE_DEVICE_TAINTS])
        return;
    de_interner *in = dg_intern(g);
    ectx c = {g, in, a, gates->on[DE_GATE_DEVICE_TAINT_RULES], gates->on[DE_GATE_WORKLOAD_RESOURCE_CLAIMS],
              de_intern_cstr(in, "pods"), de_intern_cstr(in, "podgroups"), de_intern_cstr(in, "scheduling.k8s.io"),
              de_intern_cstr(in, "PodGroup")};
    uint32_t cap = 0;
    ctl_eviction *ev = NULL;
    for (uint32_t pid = 0; pid < dg_pod_id_limit(g); pid++) {
        const dg_pod *p = dg_pod_get(g, pid);
        if (!p || !p->node_name || p->meta.deleting || !p->nclaims)
            continue;
        /* the PodGroup as the scheduler reads it (dec_pod: schedulingGroup,
         * else the alpha workloadRef), so that a claim reserved for the
         * group through either is found here too */
        uint32_t group = c.groups ? p->group : 0;
        rvec rv = {0};
        for (uint32_t i = 0; i < p->nclaims; i++) {
            const dg_pod_claim_ref *ref = &p->claims[i];
            uint32_t cname = ref->claim_name;
            bool check_owner = false;
            if (!cname && ref->template_name) {
                for (uint32_t k = 0; k < p->nclaim_statuses; k++)
                    if (p->claim_statuses[k].name == ref->name)
                        cname = p->claim_statuses[k].claim_name;
                check_owner = true;
            }
            uint32_t clid = cname ? dg_claim_find(g, p->meta.ns, cname) : DG_NONE;
            const dg_claim *cl = clid == DG_NONE ? NULL : dg_claim_get(g, clid);
            if (!cl || !cl->allocated)
                continue;
            if (check_owner && !controlled_by(&c, cl, p, group))
                continue;
            if (!reserved_for(&c, cl, p, group))
                continue;
            claim_reasons(&c, cl, &rv);
        }
        if (rv.n) {
            if (*n == cap) {
                cap = cap ? cap * 2 : 8;
                ctl_eviction *nv = de_arena_alloc(a, cap * sizeof *nv);
                if (*n)
                    memcpy(nv, ev, *n * sizeof *nv);
                ev = nv;
            }
            ctl_eviction *e = &ev[(*n)++];
            e->pod = pid;
            e->ns = p->meta.ns;
            e->name = p->meta.name;
            e->node = p->node_name;
            e->evict_at = earliest(&rv);
            e->reasons = de_arena_alloc(a, rv.n * sizeof *e->reasons);
            memcpy(e->reasons, rv.v, rv.n * sizeof *e->reasons);
            e->nreasons = rv.n;
        }
        free(rv.v);
    }
    sort_in = in;
    if (*n > 1)
        qsort(ev, *n, sizeof *ev, cmp_eviction);
    *out = ev;
}

void ctl_evict_reason_text(const dg_graph *g, const ctl_evict_reason *r, char *buf, size_t cap)
{
    de_interner *in = dg_intern(g);
    if (r->rule)
        snprintf(buf, cap, "DeviceTaintRule %s", de_intern_str(in, r->rule));
    else
        snprintf(buf, cap, "ResourceSlice %s %s/%s/%s taint #%u", r->slice ? de_intern_str(in, r->slice) : "?",
                 de_intern_str(in, r->driver), de_intern_str(in, r->pool), de_intern_str(in, r->device), r->taint_index);
}
