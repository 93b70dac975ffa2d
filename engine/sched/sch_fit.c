/*
 * sch_fit.c - node fit beyond devices, as kube-scheduler's NodeUnschedulable,
 * NodeAffinity, TaintToleration and NodeResourcesFit plugins decide it, and
 * the least-allocated score.
 *
 * Pod requests follow the kubelet/scheduler formula with sidecars: regular
 * and restartable init containers add up; each plain init container needs
 * its own request plus the sidecars started before it; the pod needs the
 * larger of the two.  Amounts are compared in milli-units.
 */
#include "sch_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int64_t milli(de_qty q)
{
    return de_qty_milli_value(q);
}

static void acc_add(amount **a, uint32_t *n, uint32_t *cap, uint32_t name, int64_t v)
{
    for (uint32_t i = 0; i < *n; i++)
        if ((*a)[i].name == name) {
            (*a)[i].milli += v;
            return;
        }
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 8;
        *a = de_xrealloc(*a, *cap * sizeof **a);
    }
    (*a)[(*n)++] = (amount){name, v};
}

static int64_t acc_get(const amount *a, uint32_t n, uint32_t name)
{
    for (uint32_t i = 0; i < n; i++)
        if (a[i].name == name)
            return a[i].milli;
    return 0;
}

static void acc_max(amount **a, uint32_t *n, uint32_t *cap, const amount *b, uint32_t nb)
{
    for (uint32_t i = 0; i < nb; i++) {
        int64_t cur = acc_get(*a, *n, b[i].name);
        if (b[i].milli > cur)
            acc_add(a, n, cap, b[i].name, b[i].milli - cur);
    }
}

uint32_t sch_pod_requests(sch_sched *s, const dg_pod *p, amount **out)
{
    (void)s;
    amount *reqs = NULL, *side = NULL, *init = NULL, *tmp = NULL;
    uint32_t nr = 0, cr = 0, ns = 0, cs = 0, ni = 0, ci = 0, nt = 0, ct = 0;
    for (uint32_t i = 0; i < p->ncontainers; i++) {
        const dg_container *c = &p->containers[i];
        if (!c->init) {
            for (uint32_t k = 0; k < c->nrequests; k++)
                acc_add(&reqs, &nr, &cr, c->requests[k].name, milli(c->requests[k].value));
            continue;
        }
        nt = 0;
        if (c->sidecar) {
            for (uint32_t k = 0; k < c->nrequests; k++) {
                acc_add(&reqs, &nr, &cr, c->requests[k].name, milli(c->requests[k].value));
                acc_add(&side, &ns, &cs, c->requests[k].name, milli(c->requests[k].value));
            }
            for (uint32_t k = 0; k < ns; k++)
                acc_add(&tmp, &nt, &ct, side[k].name, side[k].milli);
        } else {
            for (uint32_t k = 0; k < c->nrequests; k++)
                acc_add(&tmp, &nt, &ct, c->requests[k].name, milli(c->requests[k].value));
            for (uint32_t k = 0; k < ns; k++)
                acc_add(&tmp, &nt, &ct, side[k].name, side[k].milli);
        }
        acc_max(&init, &ni, &ci, tmp, nt);
    }
    acc_max(&reqs, &nr, &cr, init, ni);
    free(side);
    free(init);
    free(tmp);
    *out = reqs;
    return nr;
}

static const char *str(sch_sched *s, uint32_t id) { return de_intern_str(s->in, id); }

static bool tolerates(sch_sched *s, const dg_pod *p, uint32_t key, uint32_t value, const char *effect)
{
    for (uint32_t i = 0; i < p->ntolerations; i++) {
        const dg_pod_toleration *t = &p->tolerations[i];
        const char *op = t->op ? str(s, t->op) : "Equal";
        const char *eff = str(s, t->effect);
        if (*eff && strcmp(eff, effect))
            continue;
        if (!strcmp(op, "Exists")) {
            if (t->key == 0 || t->key == key)
                return true;
        } else if (t->key == key && t->value == value) {
            return true;
        }
    }
    return false;
}

static uint32_t intern(sch_sched *s, const char *c) { return de_intern_cstr(s->in, c); }

unsigned sch_fit(sch_sched *s, const dg_pod *p, const amount *req, uint32_t nreq,
                 const dg_node *n, char *why, size_t cap, double *score)
{
    if (score)
        *score = 0;
    if (n->unschedulable &&
        !tolerates(s, p, intern(s, "node.kubernetes.io/unschedulable"), 0, "NoSchedule")) {
        snprintf(why, cap, "node(s) were unschedulable");
        return SCH_FIT_UNSCHEDULABLE;
    }
    /* nodeSelector */
    for (uint32_t i = 0; i < p->nnode_selector; i++) {
        bool ok = false;
        for (uint32_t k = 0; k < n->meta.nlabels && !ok; k++)
            ok = n->meta.labels[k].key == p->node_selector[i].key &&
                 n->meta.labels[k].value == p->node_selector[i].value;
        if (!ok) {
            snprintf(why, cap, "node(s) didn't match Pod's node affinity/selector");
            return SCH_FIT_SELECTOR;
        }
    }
    if (p->has_required_affinity) {
        bool match = false;
        de_err e;
        de_err_clear(&e);
        if (dg_nodesel_match(s->g, &p->required_affinity, n->meta.name, n->meta.labels,
                             n->meta.nlabels, &match, &e) != DE_OK ||
            !match) {
            snprintf(why, cap, "node(s) didn't match Pod's node affinity/selector");
            return SCH_FIT_SELECTOR;
        }
    }
    for (uint32_t i = 0; i < n->ntaints; i++) {
        const char *eff = str(s, n->taints[i].effect);
        if (strcmp(eff, "NoSchedule") && strcmp(eff, "NoExecute"))
            continue;
        if (!tolerates(s, p, n->taints[i].key, n->taints[i].value, eff)) {
            snprintf(why, cap, "node(s) had untolerated taint {%s: %s}", str(s, n->taints[i].key),
                     str(s, n->taints[i].value));
            return SCH_FIT_TAINT;
        }
    }
    /* resources */
    nusage *u = sch_usage_get(s, n->meta.name);
    uint32_t pods_name = intern(s, "pods"), cpu = intern(s, "cpu"), mem = intern(s, "memory");
    int64_t max_pods = INT64_MAX;
    for (uint32_t k = 0; k < n->nallocatable; k++)
        if (n->allocatable[k].name == pods_name)
            max_pods = de_qty_value(n->allocatable[k].value);
    if ((int64_t)(u ? u->npods : 0) + 1 > max_pods) {
        snprintf(why, cap, "Too many pods");
        return SCH_FIT_RESOURCES;
    }
    double sc = 0;
    int nsc = 0;
    for (uint32_t i = 0; i < nreq; i++) {
        if (req[i].milli <= 0)
            continue;
        int64_t alloc = -1;
        for (uint32_t k = 0; k < n->nallocatable; k++)
            if (n->allocatable[k].name == req[i].name)
                alloc = milli(n->allocatable[k].value);
        const char *rn = str(s, req[i].name);
        bool native = req[i].name == cpu || req[i].name == mem ||
                      !strcmp(rn, "ephemeral-storage") || !strncmp(rn, "hugepages-", 10);
        if (alloc < 0 || (alloc == 0 && !native)) {
            /* Not on the node: a DeviceClass may serve it through DRA
             * (KEP-5004); that is checked with the devices. */
            if (!native && dg_class_for_extended_resource(s->g, req[i].name) != DG_NONE)
                continue;
            if (native && alloc < 0)
                continue; /* a node that does not report it: kube-scheduler treats as 0 */
            snprintf(why, cap, "Insufficient %s", rn);
            return SCH_FIT_RESOURCES;
        }
        int64_t used = u ? acc_get(u->a, u->na, req[i].name) : 0;
        if (used + req[i].milli > alloc) {
            snprintf(why, cap, "Insufficient %s", rn);
            return SCH_FIT_RESOURCES;
        }
    }
    /* least-allocated over cpu and memory */
    uint32_t names[2] = {cpu, mem};
    for (int k = 0; k < 2; k++) {
        int64_t alloc = -1;
        for (uint32_t j = 0; j < n->nallocatable; j++)
            if (n->allocatable[j].name == names[k])
                alloc = milli(n->allocatable[j].value);
        if (alloc <= 0)
            continue;
        int64_t used = (u ? acc_get(u->a, u->na, names[k]) : 0) + acc_get(req, nreq, names[k]);
        sc += (double)(alloc - used) * 100.0 / (double)alloc;
        nsc++;
    }
    if (score)
        *score = nsc ? sc / nsc : 0;
    return 0;
}
