/*
 * sch_shadow.c - what draengine would have decided for pods another
 * scheduler binds (sch_shadow.h says how the same state is made and undone).
 */
#include "sch_shadow.h"
#include "../base/jdump.h"

#include "sch_http.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { O_SAME = 0, O_SAME_NODE, O_OTHER_NODE, O_INFEASIBLE, O_ERROR, O_UNOBSERVED, O_COUNT };
static const char *const outcome_names[O_COUNT] = {"same", "same_node", "other_node", "infeasible", "error",
                                                   "unobserved"};

#define MAX_CLAIMS 32

/* One decision: both sides, until the other's devices are known. */
typedef struct decision {
    char *ns, *name, *uid, *scheduler;
    char *their_node;
    char *claims[MAX_CLAIMS]; /* the claims this decision allocates (theirs), by name */
    uint32_t nclaims;
    /* ours */
    int result;               /* O_SAME (scheduled), O_INFEASIBLE, O_ERROR, O_UNOBSERVED */
    char *our_node;
    json_t *our_devices;      /* sorted "driver/pool/device" */
    char *why;                /* infeasible or error: why */
    int64_t k8s_score;
    double policy_score;
    char revision[65];
    uint64_t seen_ns;
    int64_t wall_ns;
} decision;

struct sch_shadow {
    dg_graph *g;
    al_allocator *al;
    de_interner *in;
    sch_shadow_opts o;
    char revision[65];
    de_arena *ar;
    decision **waiting;
    uint32_t nwaiting, capwaiting;
    uint64_t counts[O_COUNT];
};

sch_shadow *sch_shadow_new(dg_graph *g, al_allocator *al, const sch_shadow_opts *o)
{
    sch_shadow *sh = de_xcalloc(1, sizeof *sh);
    sh->g = g;
    sh->al = al;
    sh->in = dg_intern(g);
    if (o)
        sh->o = *o;
    if (!sh->o.wait_ns)
        sh->o.wait_ns = 30ull * 1000000000ull;
    sh->ar = de_arena_new(0);
    return sh;
}

static void decision_free(decision *d)
{
    if (!d)
        return;
    free(d->ns);
    free(d->name);
    free(d->uid);
    free(d->scheduler);
    free(d->their_node);
    for (uint32_t i = 0; i < d->nclaims; i++)
        free(d->claims[i]);
    free(d->our_node);
    json_decref(d->our_devices);
    free(d->why);
    free(d);
}

void sch_shadow_free(sch_shadow *sh)
{
    if (!sh)
        return;
    for (uint32_t i = 0; i < sh->nwaiting; i++)
        decision_free(sh->waiting[i]);
    free(sh->waiting);
    de_arena_free(sh->ar);
    free(sh);
}

void sch_shadow_set_revision(sch_shadow *sh, const char *revision)
{
    snprintf(sh->revision, sizeof sh->revision, "%s", revision ? revision : "");
}

static const char *jstr(json_t *o, const char *a, const char *b)
{
    json_t *v = json_object_get(json_object_get(o, a), b);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The devices of an allocation as sorted "driver/pool/device" strings. */
static json_t *device_list(sch_shadow *sh, const dg_allocation *const *allocs, uint32_t n)
{
    uint32_t total = 0;
    for (uint32_t i = 0; i < n; i++)
        total += allocs[i]->nresults;
    char **keys = de_xcalloc(total ? total : 1, sizeof *keys);
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t r = 0; r < allocs[i]->nresults; r++) {
            const dg_result *x = &allocs[i]->results[r];
            size_t len = de_intern_len(sh->in, x->driver) + de_intern_len(sh->in, x->pool) +
                         de_intern_len(sh->in, x->device) + 3;
            keys[k] = de_xmalloc(len);
            snprintf(keys[k], len, "%s/%s/%s", de_intern_str(sh->in, x->driver), de_intern_str(sh->in, x->pool),
                     de_intern_str(sh->in, x->device));
            k++;
        }
    qsort(keys, k, sizeof *keys, cmp_str);
    json_t *a = json_array();
    for (uint32_t i = 0; i < k; i++) {
        json_array_append_new(a, json_string(keys[i]));
        free(keys[i]);
    }
    free(keys);
    return a;
}

/* The claim a pod's reference resolves to in the graph, DG_NONE if it was
 * not observed (a template claim whose name the pod's status does not give
 * yet). */
static uint32_t resolve(const dg_graph *g, const dg_pod *p, uint32_t i)
{
    const dg_pod_claim_ref *ref = &p->claims[i];
    if (ref->claim_name)
        return dg_claim_find(g, p->meta.ns, ref->claim_name);
    for (uint32_t k = 0; k < p->nclaim_statuses; k++)
        if (p->claim_statuses[k].name == ref->name && p->claim_statuses[k].claim_name)
            return dg_claim_find(g, p->meta.ns, p->claim_statuses[k].claim_name);
    return DG_NONE;
}

/* Was this claim allocated for this pod's decision (reserved for no other
 * pod)?  A claim a group or an earlier pod holds stays allocated. */
static bool for_this_pod(const dg_claim *c, const dg_pod *p)
{
    for (uint32_t k = 0; k < c->nreserved_for; k++)
        if (c->reserved_for[k].name != p->meta.name ||
            (p->meta.uid && c->reserved_for[k].uid && c->reserved_for[k].uid != p->meta.uid))
            return false;
    return true;
}

typedef struct aside {
    uint32_t clid;
    json_t *alloc;         /* the other scheduler's allocation, as JSON */
    dg_consumer *cons;     /* and its reservations */
    uint32_t ncons;
} aside;

/* Schedule the pod now, record the decision, undo it. */
static void evaluate(sch_shadow *sh, uint32_t pid, json_t *obj, decision *d)
{
    dg_graph *g = sh->g;
    const dg_pod *p = dg_pod_get(g, pid);
    aside set[MAX_CLAIMS];
    uint32_t nset = 0;
    for (uint32_t i = 0; i < p->nclaims && i < MAX_CLAIMS; i++) {
        uint32_t clid = resolve(g, p, i);
        const dg_claim *c = clid == DG_NONE ? NULL : dg_claim_get(g, clid);
        if (!c) {
            d->result = O_UNOBSERVED;
            d->why = de_xstrdup("a claim of the pod was not observed (its name is not in the pod's status yet)");
            return;
        }
        if (c->allocated && !for_this_pod(c, p))
            continue; /* held before this decision: the same on both sides */
        d->claims[d->nclaims++] = de_xstrdup(de_intern_str(sh->in, c->meta.name));
        if (!c->allocated)
            continue;
        aside *a = &set[nset++];
        a->clid = clid;
        a->alloc = dg_encode_allocation(g, &c->allocation);
        a->ncons = c->nreserved_for;
        a->cons = de_xcalloc(a->ncons ? a->ncons : 1, sizeof *a->cons);
        memcpy(a->cons, c->reserved_for, a->ncons * sizeof *a->cons);
    }
    de_err e;
    de_err_clear(&e);
    for (uint32_t i = 0; i < nset; i++)
        dg_claim_deallocate(g, set[i].clid, &e);
    /* the decision, as serve would make it (policies, scores and all) */
    de_arena_reset(sh->ar);
    al_pod_outcome out;
    de_err pe;
    de_err_clear(&pe);
    de_rc rc = al_schedule_pod(sh->al, pid, sh->ar, &out, &pe);
    p = dg_pod_get(g, pid);
    if (rc == DE_OK) {
        d->result = O_SAME;
        d->our_node = de_xstrdup(out.node_name ? de_intern_str(sh->in, out.node_name) : "");
        const dg_allocation *al[MAX_CLAIMS];
        uint32_t n = 0;
        for (uint32_t k = 0; k < out.nclaims && k < p->nclaims && n < MAX_CLAIMS; k++)
            if (out.allocated_now && out.allocated_now[k])
                al[n++] = &out.allocs[k].alloc;
        d->our_devices = device_list(sh, al, n);
        d->k8s_score = out.k8s_score;
        d->policy_score = out.policy_score;
    } else if (rc == DE_EUNSAT) {
        d->result = O_INFEASIBLE;
        d->why = de_xstrdup(out.why ? out.why : "no node fits");
    } else {
        d->result = O_ERROR;
        d->why = de_xstrdup(pe.msg);
    }
    /* undo ours: allocations, the claim made for extended resources, the
     * pod's place on the node */
    if (rc == DE_OK) {
        for (uint32_t k = 0; k < out.nclaims; k++) {
            if (!out.allocated_now || !out.allocated_now[k] || !out.claims || out.claims[k] == DG_NONE)
                continue;
            const dg_claim *c = dg_claim_get(g, out.claims[k]);
            if (k >= p->nclaims && c) {
                char ns[256], name[256];
                snprintf(ns, sizeof ns, "%s", de_intern_str(sh->in, c->meta.ns));
                snprintf(name, sizeof name, "%s", de_intern_str(sh->in, c->meta.name));
                dg_remove(g, DG_KIND_RESOURCE_CLAIM, ns, name, &e);
            } else {
                dg_claim_deallocate(g, out.claims[k], &e);
            }
        }
        al_pod_forget(sh->al, pid);
    }
    /* the other scheduler's allocations back */
    for (uint32_t i = 0; i < nset; i++) {
        dg_allocation a;
        de_err re;
        de_err_clear(&re);
        de_arena_reset(sh->ar);
        if (dg_decode_allocation(g, set[i].alloc, sh->ar, &a, &re) == DE_OK &&
            dg_claim_set_allocation(g, set[i].clid, &a, &re) == DE_OK)
            for (uint32_t k = 0; k < set[i].ncons; k++)
                dg_claim_add_reservation(g, set[i].clid, &set[i].cons[k], &re);
        json_decref(set[i].alloc);
        free(set[i].cons);
    }
    (void)obj;
}

void sch_shadow_pod_event(sch_shadow *sh, kc_evtype t, json_t *obj)
{
    if (t == KC_EV_DELETED)
        return;
    const char *node = jstr(obj, "spec", "nodeName");
    if (!node || !*node)
        return;
    const char *sched = jstr(obj, "spec", "schedulerName");
    if (!sched || !*sched)
        sched = "default-scheduler"; /* the API server's default */
    if (sh->o.own_name && !strcmp(sched, sh->o.own_name))
        return;
    if (sh->o.of && *sh->o.of && strcmp(sched, sh->o.of))
        return;
    const char *ns = jstr(obj, "metadata", "namespace"), *name = jstr(obj, "metadata", "name");
    if (!ns || !name)
        return;
    /* looked up, not interned: a name interned the plain way is pinned for good */
    uint32_t pid = dg_pod_find(sh->g, de_intern_find(sh->in, ns, strlen(ns)), de_intern_find(sh->in, name, strlen(name)));
    const dg_pod *p = pid == DG_NONE ? NULL : dg_pod_get(sh->g, pid);
    if (!p || p->node_name)
        return; /* not seen pending: bound before we watched, or already compared */
    decision *d = de_xcalloc(1, sizeof *d);
    d->ns = de_xstrdup(ns);
    d->name = de_xstrdup(name);
    const char *uid = jstr(obj, "metadata", "uid");
    d->uid = de_xstrdup(uid ? uid : "");
    d->scheduler = de_xstrdup(sched);
    d->their_node = de_xstrdup(node);
    d->seen_ns = de_now_ns();
    d->wall_ns = de_wall_ns();
    snprintf(d->revision, sizeof d->revision, "%s", sh->revision);
    evaluate(sh, pid, obj, d);
    if (sh->nwaiting == sh->capwaiting) {
        sh->capwaiting = sh->capwaiting ? sh->capwaiting * 2 : 16;
        sh->waiting = de_xrealloc(sh->waiting, sh->capwaiting * sizeof *sh->waiting);
    }
    sh->waiting[sh->nwaiting++] = d;
}

/* The other scheduler's devices for d, or NULL while a claim of its
 * decision is not allocated yet. */
static json_t *their_devices(sch_shadow *sh, const decision *d)
{
    const dg_allocation *al[MAX_CLAIMS];
    uint32_t nsid = de_intern_find(sh->in, d->ns, strlen(d->ns));
    for (uint32_t i = 0; i < d->nclaims; i++) {
        uint32_t clid = dg_claim_find(sh->g, nsid, de_intern_find(sh->in, d->claims[i], strlen(d->claims[i])));
        const dg_claim *c = clid == DG_NONE ? NULL : dg_claim_get(sh->g, clid);
        if (!c || !c->allocated)
            return NULL;
        al[i] = &c->allocation;
    }
    return device_list(sh, al, d->nclaims);
}

static void finish(sch_shadow *sh, decision *d, json_t *theirs)
{
    int o = d->result;
    char reason[DE_ERR_MSG_MAX + 256] = "";
    if (o == O_SAME) {
        if (strcmp(d->our_node, d->their_node)) {
            o = O_OTHER_NODE;
            snprintf(reason, sizeof reason, "draengine prefers node %s (Kubernetes score %lld, policy score %g)",
                     d->our_node, (long long)d->k8s_score, d->policy_score);
        } else if (theirs && !json_equal(theirs, d->our_devices)) {
            o = O_SAME_NODE;
            snprintf(reason, sizeof reason, "the same node, other devices");
        } else if (!theirs && d->nclaims) {
            o = O_SAME_NODE;
            snprintf(reason, sizeof reason, "the same node; the other scheduler's devices were not seen in time");
        }
    } else if (d->why) {
        snprintf(reason, sizeof reason, "%s", d->why);
    }
    sh->counts[o]++;
    if (!sh->o.log)
        return;
    char when[64];
    kc_format_microtime(d->wall_ns, when, sizeof when);
    json_t *ours = json_object();
    if (d->result == O_SAME) {
        json_object_set_new(ours, "node", json_string(d->our_node));
        json_object_set_new(ours, "devices", json_incref(d->our_devices));
        json_object_set_new(ours, "kubernetesScore", json_integer(d->k8s_score));
        json_object_set_new(ours, "policyScore", json_real(d->policy_score));
    } else {
        json_object_set_new(ours, d->result == O_INFEASIBLE ? "unschedulable" : "error",
                            json_string(d->why ? d->why : ""));
    }
    char pod[600];
    snprintf(pod, sizeof pod, "%s/%s", d->ns, d->name);
    json_t *line = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:{s:s, s:o}, s:o, s:s}", "time", when, "pod",
                             pod, "namespace", d->ns, "name", d->name, "uid", d->uid, "scheduler", d->scheduler, "outcome",
                             outcome_names[o], "theirs", "node", d->their_node, "devices",
                             theirs ? json_incref(theirs) : json_null(), "ours", ours, "policyRevision",
                             d->revision);
    json_object_set_new(line, "reason", json_string(reason));
    char *text = de_json_dumps(line, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (text) {
        fprintf(sh->o.log, "%s\n", text);
        fflush(sh->o.log);
    }
    free(text);
    json_decref(line);
}

void sch_shadow_cycle(sch_shadow *sh)
{
    uint64_t now = de_now_ns();
    uint32_t keep = 0;
    for (uint32_t i = 0; i < sh->nwaiting; i++) {
        decision *d = sh->waiting[i];
        json_t *theirs = d->result == O_UNOBSERVED ? NULL : their_devices(sh, d);
        bool late = now - d->seen_ns >= sh->o.wait_ns;
        if (!theirs && !late && d->result != O_UNOBSERVED) {
            sh->waiting[keep++] = d;
            continue;
        }
        finish(sh, d, theirs);
        json_decref(theirs);
        decision_free(d);
    }
    sh->nwaiting = keep;
}

void sch_shadow_get_stats(const sch_shadow *sh, sch_shadow_stats *out)
{
    out->same = sh->counts[O_SAME];
    out->same_node = sh->counts[O_SAME_NODE];
    out->other_node = sh->counts[O_OTHER_NODE];
    out->infeasible = sh->counts[O_INFEASIBLE];
    out->error = sh->counts[O_ERROR];
    out->unobserved = sh->counts[O_UNOBSERVED];
    out->waiting = sh->nwaiting;
}

void sch_shadow_metrics(const sch_shadow *sh, de_buf *out)
{
    sch_prom_head(out, "draengine_shadow_decisions_total", "counter",
                  "Pods another scheduler bound, by how draengine's decision on the same state compares.");
    uint64_t compared = 0;
    for (int o = 0; o < O_COUNT; o++) {
        char l[48];
        snprintf(l, sizeof l, "outcome=\"%s\"", outcome_names[o]);
        sch_prom_sample(out, "draengine_shadow_decisions_total", l, (double)sh->counts[o]);
        if (o != O_UNOBSERVED)
            compared += sh->counts[o];
    }
    sch_prom_head(out, "draengine_shadow_agreement_ratio", "gauge",
                  "Share of compared decisions with the same node and the same devices.");
    sch_prom_sample(out, "draengine_shadow_agreement_ratio", "",
                    compared ? (double)sh->counts[O_SAME] / (double)compared : 0.0);
    sch_prom_head(out, "draengine_shadow_waiting", "gauge",
                  "Decisions waiting for the other scheduler's devices to be observed.");
    sch_prom_sample(out, "draengine_shadow_waiting", "", (double)sh->nwaiting);
}
