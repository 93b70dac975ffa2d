/*
 * sch.c - the scheduler: events into the graph and the queue, and one
 * scheduling cycle per pod (PreEnqueue, Filter, Score, then sch_bind).
 */
#include "sch_int.h"

#include "../base/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const double LAT_BOUNDS[] = {0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05,
                                    0.1,    0.2,   0.5,   1,     2,    5,    10};
static const double E2E_BOUNDS[] = {0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300};
static const de_origin API_ORIGIN = {"kube-api", 1, -1};

sch_sched *sch_new(dg_graph *g, al_allocator *al, kc_client *cl, const sch_opts *o)
{
    sch_sched *s = de_xcalloc(1, sizeof *s);
    s->g = g;
    s->in = dg_intern(g);
    s->al = al;
    s->cl = cl;
    if (o)
        s->o = *o;
    if (!s->o.scheduler_name || !*s->o.scheduler_name)
        s->o.scheduler_name = "draengine";
    if (!s->o.identity)
        s->o.identity = "draengine";
    if (!s->o.backoff_initial_ns && !s->o.backoff_explicit)
        s->o.backoff_initial_ns = SCH_BACKOFF_INITIAL_NS;
    if (!s->o.backoff_max_ns && !s->o.backoff_explicit)
        s->o.backoff_max_ns = SCH_BACKOFF_MAX_NS;
    if (!s->o.unschedulable_max_ns)
        s->o.unschedulable_max_ns = 300000000000ull;
    if (!s->o.binding_timeout_ns)
        s->o.binding_timeout_ns = 600000000000ull;
    s->sched_name = de_intern_cstr(s->in, s->o.scheduler_name);
    s->write_until = UINT64_MAX;
    de_map_init(&s->pod_by_key);
    de_map_init(&s->claim_pods);
    de_map_init(&s->assumed_rv);
    sch_ext_index_open(s);
    s->nodes_dirty = true;
    s->podgroups = json_object();
    s->cycle = de_arena_new(256u << 20);
    sch_hist_init(&s->attempt_lat, LAT_BOUNDS, DE_ARRAY_LEN(LAT_BOUNDS));
    sch_hist_init(&s->alloc_lat, LAT_BOUNDS, DE_ARRAY_LEN(LAT_BOUNDS));
    sch_hist_init(&s->e2e_lat, E2E_BOUNDS, DE_ARRAY_LEN(E2E_BOUNDS));
    if (cl && s->o.parallel_binds > 1)
        sch_async_start(s, s->o.parallel_binds);
    return s;
}

void sch_free(sch_sched *s)
{
    if (!s)
        return;
    sch_async_free(s);
    sch_ext_index_close(s);
    sch_queue_free(s);
    json_decref(s->podgroups);
    de_arena_free(s->cycle);
    free(s);
}

void sch_set_hooks(sch_sched *s, const al_hooks *h)
{
    if (h)
        s->hooks = *h;
    else
        memset(&s->hooks, 0, sizeof s->hooks);
}

/* ---- events -------------------------------------------------------------- */

static dg_kind kind_of(kc_res r)
{
    switch (r) {
    case KC_RES_SLICES: return DG_KIND_RESOURCE_SLICE;
    case KC_RES_CLASSES: return DG_KIND_DEVICE_CLASS;
    case KC_RES_CLAIMS: return DG_KIND_RESOURCE_CLAIM;
    case KC_RES_TEMPLATES: return DG_KIND_RESOURCE_CLAIM_TEMPLATE;
    case KC_RES_TAINT_RULES: return DG_KIND_DEVICE_TAINT_RULE;
    case KC_RES_NODES: return DG_KIND_NODE;
    case KC_RES_PODS: return DG_KIND_POD;
    case KC_RES_NAMESPACES: return DG_KIND_NAMESPACE;
    default: return DG_KIND_OTHER;
    }
}

static const char *md(json_t *o, const char *k)
{
    const char *v = json_string_value(json_object_get(json_object_get(o, "metadata"), k));
    return v ? v : "";
}

static bool apply(sch_sched *s, json_t *obj)
{
    de_err e;
    de_err_clear(&e);
    if (dg_apply(s->g, obj, &API_ORIGIN, NULL, &e) != DE_OK) {
        s->st.invalid_objects++;
        DE_WARN("ignoring invalid object: %s", e.msg);
        return false;
    }
    return true;
}

static bool terminal(sch_sched *s, const dg_pod *p)
{
    const char *ph = de_intern_str(s->in, p->phase);
    return !strcmp(ph, "Succeeded") || !strcmp(ph, "Failed");
}

/* Pods waiting for a PodGroup are indexed like pods waiting for a claim,
 * under a key no claim can have.  _ref: a reference the caller releases;
 * _find: a lookup (no pod waits for a key never interned). */
static uint64_t podgroup_key_ref(sch_sched *s, const char *ns, const char *name)
{
    char k[600];
    snprintf(k, sizeof k, "podgroups/%s", name);
    return sch_key_ref(s, ns, k);
}

static uint64_t podgroup_key_find(sch_sched *s, const char *ns, const char *name)
{
    char k[600];
    snprintf(k, sizeof k, "podgroups/%s", name);
    return sch_key_find(s, ns, k);
}

/* The PodGroup a pod belongs to (spec.schedulingGroup, the older
 * spec.workloadRef), NULL when none. */
/* The gang's AllPodsCount: the live pods of the group. */
static uint32_t group_pods(sch_sched *s, uint32_t ns, const char *group)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < dg_pod_id_limit(s->g); i++) {
        const dg_pod *q = dg_pod_get(s->g, i);
        if (!q || q->meta.ns != ns || q->meta.deleting || terminal(s, q))
            continue;
        const char *gn = al_pod_group_name(s->g, i);
        n += gn && !strcmp(gn, group);
    }
    return n;
}

static void pod_event_key(sch_sched *s, kc_evtype t, json_t *obj, uint32_t ns, uint32_t name);

/* The pod's names are referenced for the event: the graph may drop its
 * own references (a deletion) while the queue still looks them up. */
static void pod_event(sch_sched *s, kc_evtype t, json_t *obj)
{
    uint64_t key = sch_key_ref(s, md(obj, "namespace"), md(obj, "name"));
    pod_event_key(s, t, obj, (uint32_t)(key >> 32), (uint32_t)key);
    sch_key_release(s, key);
}

static void pod_event_key(sch_sched *s, kc_evtype t, json_t *obj, uint32_t ns, uint32_t name)
{
    uint32_t idx = sch_pod_lookup(s, ns, name);
    if (t == KC_EV_DELETED) {
        if (idx != UINT32_MAX) {
            spod *sp = sch_pod(s, idx);
            bool held = sp->state == SP_ASSUMED || sp->state == SP_BOUND || sp->state == SP_BINDING;
            sch_pod_forget(s, idx);
            if (held)
                sch_requeue_bucket(s, WAIT_RESOURCES);
        }
        de_err e;
        de_err_clear(&e);
        dg_remove(s->g, DG_KIND_POD, md(obj, "namespace"), md(obj, "name"), &e);
        return;
    }
    if (!apply(s, obj))
        return;
    uint32_t pid = dg_pod_find(s->g, ns, name);
    const dg_pod *p = pid == DG_NONE ? NULL : dg_pod_get(s->g, pid);
    if (!p)
        return;
    if (p->node_name) {
        /* Bound (by us or anyone): count it on its node until it ends. */
        if (terminal(s, p)) {
            if (idx != UINT32_MAX) {
                uint8_t st = sch_pod(s, idx)->state;
                bool held = st == SP_ASSUMED || st == SP_BOUND || st == SP_BINDING;
                sch_pod_forget(s, idx);
                if (held)
                    sch_requeue_bucket(s, WAIT_RESOURCES);
            }
            return;
        }
        /* what it takes from the node is counted by the allocator (al_fit.c) */
        idx = sch_pod_ensure(s, ns, name);
        spod *sp = sch_pod(s, idx);
        /* a binding job's pod (SP_BINDING) is seen bound before the job is
         * applied: sch_async.c then leaves it bound */
        if ((sp->state == SP_ASSUMED || sp->state == SP_BOUND || sp->state == SP_BINDING) &&
            sp->node == p->node_name) {
            if (sp->state != SP_BOUND)
                sch_hist_observe(&s->e2e_lat, (double)(de_now_ns() - sp->first_seen) / 1e9);
            sp->state = SP_BOUND;
            return;
        }
        sp->node = p->node_name;
        sp->state = SP_BOUND;
        sp->in_active = false;
        return;
    }
    /* a new member may complete a gang (GangScheduling's pod-added hint) */
    const char *group = s->o.generic_workload ? al_pod_group_name(s->g, pid) : NULL;
    if (group && t == KC_EV_ADDED)
        sch_requeue_claim(s, podgroup_key_find(s, md(obj, "namespace"), group));
    bool ours = p->scheduler_name == s->sched_name && !p->meta.deleting && !terminal(s, p);
    if (!ours) {
        if (idx != UINT32_MAX && sch_pod(s, idx)->state != SP_ASSUMED && sch_pod(s, idx)->state != SP_BINDING)
            sch_pod_forget(s, idx);
        return;
    }
    idx = sch_pod_ensure(s, ns, name);
    spod *sp = sch_pod(s, idx);
    switch (sp->state) {
    case SP_NONE:
        sch_activate(s, idx);
        break;
    case SP_UNSCHED:
        if (sp->waits & WAIT_POD)
            sch_leave_waiting(s, idx);
        break;
    case SP_BOUND:
        /* spec.nodeName went away: a new pod with the same name */
        sp->node = 0;
        sch_activate(s, idx);
        break;
    default:
        break; /* active, backoff, or assumed (an event older than our binding) */
    }
}

void sch_observe(sch_sched *s, kc_res res, kc_evtype t, json_t *obj)
{
    if (res == KC_RES_PODS) {
        pod_event(s, t, obj);
        return;
    }
    if (res == KC_RES_PODGROUPS) {
        if (t == KC_EV_DELETED)
            al_podgroups_del(s->podgroups, md(obj, "namespace"), md(obj, "name"));
        else
            al_podgroups_put(s->podgroups, obj);
        sch_requeue_claim(s, podgroup_key_find(s, md(obj, "namespace"), md(obj, "name")));
        return;
    }
    dg_kind kind = kind_of(res);
    const char *ns = md(obj, "namespace"), *name = md(obj, "name");
    de_err e;
    de_err_clear(&e);
    if (res == KC_RES_CLAIMS) {
        /* a claim a binding job is writing: its events wait for the job */
        if (sch_async_on(s) && sch_async_defer(s, t, obj, sch_key_find(s, ns, name)))
            return;
        if (t != KC_EV_DELETED && sch_claim_event_is_stale(s, obj)) {
            s->st.stale_events_ignored++;
            return;
        }
        /* referenced for the event: a deletion drops the graph's references */
        uint64_t key = sch_key_ref(s, ns, name);
        uint32_t nsid = (uint32_t)(key >> 32), nameid = (uint32_t)key;
        uint32_t clid = dg_claim_find(s->g, nsid, nameid);
        const dg_claim *old = clid == DG_NONE ? NULL : dg_claim_get(s->g, clid);
        bool was_alloc = old && old->allocated;
        bool is_alloc = false;
        if (t == KC_EV_DELETED) {
            sch_forget_written(s, key);
            dg_remove(s->g, kind, ns, name, &e);
        } else if (apply(s, obj)) {
            clid = dg_claim_find(s->g, nsid, nameid);
            const dg_claim *c = clid == DG_NONE ? NULL : dg_claim_get(s->g, clid);
            if (c)
                is_alloc = c->allocated;
        }
        sch_requeue_claim(s, key);
        if (was_alloc && !is_alloc)
            sch_requeue_bucket(s, WAIT_DEVICES); /* devices were freed */
        sch_wait_claim(s, key); /* a driver reporting binding conditions */
        sch_key_release(s, key);
        return;
    }
    if (t == KC_EV_DELETED)
        dg_remove(s->g, kind, ns, name, &e);
    else if (!apply(s, obj))
        return;
    switch (res) {
    case KC_RES_CLASSES:
        sch_requeue_class(s, de_intern_find(s->in, name, strlen(name)));
        sch_requeue_bucket(s, WAIT_DEVICES);
        break;
    case KC_RES_SLICES:
    case KC_RES_TAINT_RULES:
        if (t != KC_EV_DELETED || res == KC_RES_TAINT_RULES)
            sch_requeue_bucket(s, WAIT_DEVICES);
        break;
    case KC_RES_NODES:
        s->nodes_dirty = true;
        if (t != KC_EV_DELETED) {
            sch_requeue_bucket(s, WAIT_NODE);
            sch_requeue_bucket(s, WAIT_RESOURCES);
            if (t == KC_EV_ADDED)
                sch_requeue_bucket(s, WAIT_DEVICES);
        }
        break;
    case KC_RES_NAMESPACES:
        sch_requeue_bucket(s, WAIT_DEVICES); /* admin-access label */
        break;
    default:
        break;
    }
}

/* ---- one cycle -------------------------------------------------------------- */

static de_interner *g_sort_in;
static int cmp_node_name(const void *a, const void *b)
{
    return de_intern_cmp(g_sort_in, ((const uint32_t *)a)[1], ((const uint32_t *)b)[1]);
}

static void rebuild_nodes(sch_sched *s)
{
    uint32_t lim = dg_node_id_limit(s->g), n = 0;
    uint32_t *pairs = de_xmalloc((size_t)(lim + 1) * 2 * sizeof *pairs);
    for (uint32_t i = 0; i < lim; i++) {
        const dg_node *nd = dg_node_get(s->g, i);
        if (!nd)
            continue;
        pairs[2 * n] = i;
        pairs[2 * n + 1] = nd->meta.name;
        n++;
    }
    g_sort_in = s->in;
    qsort(pairs, n, 2 * sizeof *pairs, cmp_node_name);
    if (n > s->nodecap) {
        s->nodecap = n;
        s->nodes = de_xrealloc(s->nodes, n * sizeof *s->nodes);
    }
    for (uint32_t i = 0; i < n; i++)
        s->nodes[i] = pairs[2 * i];
    free(pairs);
    s->nnodes = n;
    s->nodes_dirty = false;
    if (s->next_start >= n)
        s->next_start = 0;
}

static bool reserved_for_pod(const dg_claim *c, uint32_t uid)
{
    for (uint32_t i = 0; i < c->nreserved_for; i++)
        if (c->reserved_for[i].uid == uid)
            return true;
    return false;
}

typedef struct feas {
    uint32_t node, name;
    double score;
    int64_t k8s;
    al_outcome out;
    int ext;   /* extended-resource claim variant used, -1 = none */
    bool memo; /* from the Filter memo: out is empty until it wins */
} feas;

/* How many feasible nodes to look for (kube-scheduler's adaptive
 * percentageOfNodesToScore with its minimum of 100). */
static uint32_t nodes_to_find(uint32_t n)
{
    if (n < 100)
        return n;
    int pct = 50 - (int)(n / 125);
    if (pct < 5)
        pct = 5;
    uint32_t k = n * (uint32_t)pct / 100;
    return k < 100 ? 100 : k;
}

static void unschedulable(sch_sched *s, uint32_t idx, uint32_t pid, unsigned waits,
                          const uint64_t *keys, uint32_t nkeys, const char *msg)
{
    s->st.unschedulable++;
    s->by_result[1]++;
    spod *sp = sch_pod(s, idx);
    DE_INFO(2, "unschedulable: pod %s/%s: %s", de_intern_str(s->in, sp->ns),
            de_intern_str(s->in, sp->name), msg);
    /* Aggregate: a new Event when the message changes, else on attempts
     * 1, 2, 4, 8, ... */
    bool same = sp->last_msg && !strcmp(sp->last_msg, msg);
    if (!same || (sp->attempts & (sp->attempts - 1)) == 0)
        sch_pod_event(s, pid, "Warning", "FailedScheduling", "Scheduling", msg);
    if (!same) {
        free(sp->last_msg);
        sp->last_msg = de_xstrdup(msg);
    }
    sch_to_unschedulable(s, idx, waits, keys, nkeys);
}

/* A pod that cannot even enter a scheduling cycle (kube-scheduler's
 * PreEnqueue: a claim not created yet, missing, being deleted or not owned
 * by the pod, its PodGroup missing) waits like an unschedulable one but gets
 * no FailedScheduling Event: kube-scheduler gates such pods silently (logged
 * at -v 4), and an Event would tell the user of a failure that is none. */
static void gated(sch_sched *s, uint32_t idx, unsigned waits, const uint64_t *keys, uint32_t nkeys,
                  const char *msg)
{
    spod *sp = sch_pod(s, idx);
    DE_INFO(4, "gated: pod %s/%s: %s", de_intern_str(s->in, sp->ns), de_intern_str(s->in, sp->name),
            msg);
    /* PreEnqueue runs before a pod enters the active queue, so upstream
     * neither counts a gated pod as attempted nor backs it off: the event
     * that lifts the gate (its claim created, its status patched) sends it
     * straight to the active queue.  Counted, a pod made from a template
     * waited out --pod-initial-backoff after the claim controller's patch. */
    sp->attempts--;
    s->st.attempts--;
    sch_to_unschedulable(s, idx, waits, keys, nkeys);
}

static void schedule_one(sch_sched *s, uint32_t idx)
{
    de_arena_reset(s->cycle);
    spod *sp = sch_pod(s, idx);
    uint32_t pid = dg_pod_find(s->g, sp->ns, sp->name);
    const dg_pod *p = pid == DG_NONE ? NULL : dg_pod_get(s->g, pid);
    if (!p) {
        sch_pod_forget(s, idx);
        return;
    }
    if (p->node_name) {
        sp->state = SP_BOUND;
        return;
    }
    uint64_t t0 = de_now_ns();
    sp->attempts++;
    s->st.attempts++;
    char msg[2048];
    uint32_t nrefs = p->nclaims;
    uint32_t *claims = de_arena_alloc(s->cycle, (nrefs + 2) * sizeof *claims);
    uint32_t *pending = de_arena_alloc(s->cycle, (nrefs + 2) * sizeof *pending);
    uint64_t *keys = de_arena_alloc(s->cycle, (nrefs + 2) * sizeof *keys);
    uint32_t np = 0, nk = 0;
    const char *pns = de_intern_str(s->in, p->meta.ns);

    /* KEP-5729: the pod's PodGroup, whose claims it may share
     * (al_podgroup.c, the reading `allocate` shares). */
    bool *group = de_arena_zalloc(s->cycle, (nrefs + 2) * sizeof *group);
    json_t *pg = NULL;
    char pgname[256] = "", pguid[128] = "";
    /* GenericWorkload: GangScheduling's PreEnqueue - the PodGroup must exist,
     * and a gang waits until minCount of its pods exist.  (Its Permit, which
     * holds every member until minCount are placed, is not modelled: the
     * members bind one by one.) */
    const char *gn = s->o.generic_workload ? al_pod_group_name(s->g, pid) : NULL;
    if (gn) {
        pg = al_podgroup_find(s->g, s->podgroups, pid);
        snprintf(pgname, sizeof pgname, "%s", gn);
        if (!pg) {
            keys[nk++] = podgroup_key_ref(s, pns, gn);
            snprintf(msg, sizeof msg, "waiting for pods's pod group \"%s\" to appear in scheduling queue", gn);
            gated(s, idx, WAIT_CLAIM, keys, nk, msg);
            sch_key_release(s, keys[nk - 1]);
            return;
        }
        json_t *gang = json_object_get(json_object_get(json_object_get(pg, "spec"), "schedulingPolicy"), "gang");
        json_int_t min = json_integer_value(json_object_get(gang, "minCount"));
        if (gang && group_pods(s, p->meta.ns, gn) < (uint64_t)(min > 0 ? min : 0)) {
            keys[nk++] = podgroup_key_ref(s, pns, gn);
            snprintf(msg, sizeof msg, "waiting for minCount pods from a gang to appear in scheduling queue");
            gated(s, idx, WAIT_CLAIM, keys, nk, msg);
            sch_key_release(s, keys[nk - 1]);
            return;
        }
        snprintf(pguid, sizeof pguid, "%s", al_podgroup_uid(pg));
        if (!s->o.workload_claims)
            pg = NULL; /* its claims are shared only with DRAWorkloadResourceClaims */
    }
    /* found, not interned: claims owned by or reserved for the group hold it */
    uint32_t pguid_id = pguid[0] ? de_intern_find(s->in, pguid, strlen(pguid)) : 0;

    /* PreEnqueue + PreFilter: resolve every claim. */
    for (uint32_t i = 0; i < nrefs; i++) {
        const dg_pod_claim_ref *ref = &p->claims[i];
        uint32_t cname = ref->claim_name;
        bool from_template = ref->template_name != 0;
        claims[i] = DG_NONE;
        group[i] = al_podgroup_shares(s->g, pg, p, i);
        if (group[i] && from_template) {
            cname = al_podgroup_claim_name(s->g, pg, ref->name);
            if (!cname) {
                keys[nk++] = podgroup_key_ref(s, pns, pgname);
                snprintf(msg, sizeof msg,
                         "waiting for the resource claim controller to create the ResourceClaim "
                         "\"%s\" of PodGroup \"%s\"", de_intern_str(s->in, ref->name), pgname);
                gated(s, idx, WAIT_CLAIM, keys, nk, msg);
                sch_key_release(s, keys[nk - 1]);
                return;
            }
        } else if (from_template) {
            bool found = false;
            for (uint32_t k = 0; k < p->nclaim_statuses; k++)
                if (p->claim_statuses[k].name == ref->name) {
                    found = true;
                    cname = p->claim_statuses[k].claim_name;
                }
            if (!found) {
                snprintf(msg, sizeof msg,
                         "pod \"%s/%s\": waiting for the resource claim controller to create "
                         "the ResourceClaim for \"%s\"",
                         pns, de_intern_str(s->in, p->meta.name), de_intern_str(s->in, ref->name));
                gated(s, idx, WAIT_POD, keys, nk, msg);
                return;
            }
            if (!cname)
                continue; /* no claim needed */
        }
        uint64_t key = sch_key(p->meta.ns, cname);
        keys[nk++] = key;
        if (sch_async_claim_busy(s, key)) {
            /* a job writes this claim (shared, or the PodGroup's): decide
             * on what it wrote, once it is applied (sch_async.c) */
            sp->attempts--;
            s->st.attempts--;
            sch_async_hold(s, idx);
            return;
        }
        uint32_t clid = dg_claim_find(s->g, p->meta.ns, cname);
        const dg_claim *c = clid == DG_NONE ? NULL : dg_claim_get(s->g, clid);
        const char *cn = de_intern_str(s->in, cname);
        if (!c) {
            snprintf(msg, sizeof msg, "resourceclaim \"%s\" not found", cn);
            gated(s, idx, WAIT_CLAIM, keys, nk, msg);
            return;
        }
        if (c->meta.deleting) {
            snprintf(msg, sizeof msg, "resourceclaim \"%s\" is being deleted", cn);
            gated(s, idx, WAIT_CLAIM, keys, nk, msg);
            return;
        }
        if (from_template && !al_claim_owned_by(c, group[i] ? pguid_id : p->meta.uid)) {
            snprintf(msg, sizeof msg, "ResourceClaim %s/%s was not created for pod %s/%s (pod is not owner)",
                     pns, cn, pns, de_intern_str(s->in, p->meta.name));
            gated(s, idx, WAIT_CLAIM, keys, nk, msg);
            return;
        }
        claims[i] = clid;
        if (c->allocated) {
            if (!reserved_for_pod(c, group[i] ? pguid_id : p->meta.uid) && c->nreserved_for >= 256) {
                snprintf(msg, sizeof msg, "resourceclaim \"%s\" in use (256 consumers)", cn);
                unschedulable(s, idx, pid, WAIT_CLAIM, keys, nk, msg);
                return;
            }
            continue;
        }
        for (uint32_t r = 0; r < c->spec.nrequests; r++) {
            const dg_request *rq = &c->spec.requests[r];
            uint32_t cls = rq->has_exactly ? rq->exactly.class_name : 0;
            for (uint32_t k = 0; k <= rq->nsubs; k++) {
                if (k > 0)
                    cls = rq->subs[k - 1].class_name;
                if (cls && dg_class_find(s->g, cls) == DG_NONE) {
                    snprintf(msg, sizeof msg, "request %s: device class %s does not exist",
                             de_intern_str(s->in, rq->name), de_intern_str(s->in, cls));
                    unschedulable(s, idx, pid, WAIT_CLAIM, keys, nk, msg);
                    return;
                }
            }
        }
        bool dup = false;
        for (uint32_t k = 0; k < np; k++)
            dup |= pending[k] == clid;
        if (!dup)
            pending[np++] = clid;
    }

    /* Extended resources served by DRA (KEP-5004): an existing claim made
     * for this pod is used as it is; otherwise one is built per node. */
    al_ext_res eres[AL_EXT_MAX];
    uint32_t ne = sch_ext_resources(s, p, eres);
    uint32_t nall = nrefs;
    if (ne) {
        uint32_t ex = sch_ext_existing(s, p);
        if (ex != DG_NONE) {
            const dg_claim *c = dg_claim_get(s->g, ex);
            claims[nall++] = ex;
            keys[nk++] = sch_key(c->meta.ns, c->meta.name);
            if (!c->allocated)
                pending[np++] = ex;
            ne = 0;
        }
    }
    typedef struct extv {
        uint64_t mask;
        uint32_t clid;
        json_t *obj, *maps;
    } extv;
    extv ev[8];
    uint32_t nev = 0;
    uint32_t *npend = de_arena_alloc(s->cycle, (np + 2) * sizeof *npend);
    memcpy(npend, pending, np * sizeof *pending);

    /* Filter. */
    if (s->nodes_dirty)
        rebuild_nodes(s);
    al_amount *req = NULL;
    uint32_t nreq;
    {
        al_amount *r0 = NULL;
        nreq = al_pod_requests(p, &r0);
        req = de_arena_alloc(s->cycle, (nreq + 1) * sizeof *req);
        if (nreq)
            memcpy(req, r0, nreq * sizeof *req);
        free(r0);
    }
    uint32_t N = s->nnodes, want = nodes_to_find(N);
    feas *fs = de_arena_alloc(s->cycle, (want + 1) * sizeof *fs);
    uint32_t nf = 0, k;
    unsigned reason_bits = 0;
    uint32_t counts[8] = {0};
    char first_why[6][256] = {{0}};
    char dev_why[1024] = "";
    de_rc hard = DE_OK;
    de_err herr;
    de_err_clear(&herr);
    uint64_t alloc_ns = 0;
    /* The Filter memo (al.h, al_memo_open) for pods whose claims are all
     * their own and pending: not with extended resources (a claim per node
     * shape), claims shared with a PodGroup, or a score hook (it reads
     * every feasible node's allocation). */
    bool shared = false;
    for (uint32_t i = 0; i < nrefs; i++)
        shared |= group[i];
    al_memo_tab *memo_tab = !ne && np && np == nall && !shared && !s->hooks.score && !s->o.no_filter_memo
                                ? al_memo_open(s->al, p, pid, claims, nall, req, nreq)
                                : NULL;
    al_memo_tab *memo = memo_tab;
    bool memo_used = false;
filter:
    for (k = 0; k < N && nf < want; k++) {
        uint32_t nid = s->nodes[(s->next_start + k) % N];
        const dg_node *n = dg_node_get(s->g, nid);
        if (!n)
            continue;
        al_memo_ent me;
        if (memo && al_memo_get(s->al, memo, n->meta.name, &me)) {
            memo_used = true;
            reason_bits |= me.bits;
            if (!me.bits)
                fs[nf++] = (feas){nid, n->meta.name, me.rscore, me.k8s, {0}, -1, true};
            continue;
        }
        bool budget = false;
        char why[256];
        double rscore = 0;
        unsigned bits = sch_fit(s, p, req, nreq, n, why, sizeof why, &rscore);
        if (!bits && !al_node_matches_allocated(s->al, claims, nall, n)) {
            bits = SCH_FIT_CLAIM_NODE;
            snprintf(why, sizeof why, "resourceclaim not available on the node");
        }
        al_outcome out;
        memset(&out, 0, sizeof out);
        int variant = -1;
        uint32_t nuse = np;
        if (!bits && ne) {
            uint64_t mask = sch_ext_mask(s, n, eres, ne);
            if (mask) {
                for (uint32_t v = 0; v < nev; v++)
                    if (ev[v].mask == mask)
                        variant = (int)v;
                if (variant < 0 && nev < DE_ARRAY_LEN(ev)) {
                    json_t *reqs, *maps;
                    sch_ext_build(s, p, eres, ne, mask, &reqs, &maps);
                    json_t *obj = sch_ext_claim_object(s, p, reqs);
                    json_decref(reqs);
                    uint32_t clid = sch_ext_temp_claim(s, p, obj, mask);
                    ev[nev] = (extv){mask, clid, obj, maps};
                    variant = (int)nev++;
                }
                if (variant < 0 || ev[variant].clid == DG_NONE) {
                    bits = SCH_FIT_RESOURCES;
                    snprintf(why, sizeof why, "cannot build the extended resource claim");
                } else {
                    npend[np] = ev[variant].clid;
                    nuse = np + 1;
                }
            }
        }
        if (!bits && nuse) {
            de_err ae;
            de_err_clear(&ae);
            uint64_t a0 = de_now_ns();
            /* only the first node that cannot allocate is quoted (dev_why):
             * the others fail without words, which were most of serve's
             * CPU on a filling cluster (printf per turned-down node) */
            bool explain = !dev_why[0];
            al_set_explain(s->al, explain);
            de_rc rc = al_allocate(s->al, n->meta.name, npend, nuse, s->cycle, &out, &ae);
            al_set_explain(s->al, true);
            if (!explain && out.invalid_pools && rc != DE_OK && rc != DE_EUNSAT && rc != DE_EBUDGET) {
                /* an invalid pool's error quotes the explanation: ask again */
                memset(&out, 0, sizeof out);
                de_err_clear(&ae);
                rc = al_allocate(s->al, n->meta.name, npend, nuse, s->cycle, &out, &ae);
            }
            alloc_ns += de_now_ns() - a0;
            budget = rc == DE_EBUDGET;
            if (rc == DE_EUNSAT || rc == DE_EBUDGET) {
                bits = SCH_FIT_DEVICES;
                snprintf(why, sizeof why, "cannot allocate all claims");
                if (!dev_why[0])
                    snprintf(dev_why, sizeof dev_why, "%s: %.700s", de_intern_str(s->in, n->meta.name),
                             rc == DE_EBUDGET ? ae.msg : (out.why.summary ? out.why.summary : "no devices"));
            } else if (rc != DE_OK) {
                hard = rc;
                herr = ae;
                break;
            }
        }
        if (!bits) {
            al_nar nar;
            de_rc nrc;
            de_err xe;
            de_err_clear(&xe);
            bits = sch_nar(s, p, claims, nall, variant >= 0 ? ev[variant].clid : DG_NONE, npend, &out, nuse, req,
                           nreq, n, &nar, why, sizeof why, &nrc, &xe);
            if (nrc != DE_OK) {
                hard = nrc;
                herr = xe;
                break;
            }
        }
        if (memo && !budget)
            al_memo_put(s->al, memo, n->meta.name, &(al_memo_ent){bits, rscore, bits ? 0 : out.k8s_score});
        if (bits) {
            reason_bits |= bits;
            for (int b = 0; b < 6; b++)
                if (bits & (1u << b)) {
                    counts[b]++;
                    if (!first_why[b][0])
                        snprintf(first_why[b], sizeof first_why[b], "%s", why);
                }
            continue;
        }
        fs[nf] = (feas){nid, n->meta.name, rscore, out.k8s_score, out, variant, false};
        nf++;
    }
    if (memo_used && nf == 0 && hard == DE_OK) {
        /* unschedulable: the reasons are worded by the evaluations
         * themselves, so look again without the memo */
        memo = NULL;
        memo_used = false;
        reason_bits = 0;
        memset(counts, 0, sizeof counts);
        memset(first_why, 0, sizeof first_why);
        dev_why[0] = 0;
        goto filter;
    }
    if (N)
        s->next_start = (s->next_start + k) % N;
    sch_hist_observe(&s->alloc_lat, (double)alloc_ns / 1e9);

    /* From here on every path ends the cycle: the temporary claims go. */
#define DROP_EXT()                                                  \
    do {                                                            \
        for (uint32_t v_ = 0; v_ < nev; v_++) {                     \
            if (ev[v_].clid != DG_NONE)                             \
                sch_ext_drop_temp(s, ev[v_].clid);                  \
            json_decref(ev[v_].obj);                                \
            json_decref(ev[v_].maps);                               \
        }                                                           \
    } while (0)
    if (hard != DE_OK) {
        DROP_EXT();
        s->st.errors++;
        s->by_result[2]++;
        snprintf(msg, sizeof msg, "%s", herr.msg);
        sch_pod_event(s, pid, "Warning", "FailedScheduling", "Scheduling", msg);
        DE_INFO(1, "scheduling error: pod %s/%s: %s", pns, de_intern_str(s->in, p->meta.name), msg);
        sch_to_backoff(s, idx);
        sch_hist_observe(&s->attempt_lat, (double)(de_now_ns() - t0) / 1e9);
        return;
    }
    if (nf == 0 && (reason_bits & SCH_FIT_CLAIM_NODE) && s->cl) {
        /* PostFilter: free a claim whose allocation pins the pod to nodes it
         * cannot use, then try again at once. */
        for (uint32_t i = 0; i < nall; i++) {
            const dg_claim *c = claims[i] == DG_NONE ? NULL : dg_claim_get(s->g, claims[i]);
            if (!c || !c->allocated || group[i])
                continue;
            de_err de;
            de_err_clear(&de);
            uint32_t cname_id = c->meta.name; /* c is replaced by the write */
            if (sch_deallocate(s, claims[i], p->meta.uid, &de) == DE_OK) {
                DE_INFO(1, "deallocated claim %s/%s: its node does not fit pod %s/%s", pns,
                        de_intern_str(s->in, cname_id), pns, de_intern_str(s->in, p->meta.name));
                DROP_EXT();
                sch_activate(s, idx);
                sch_hist_observe(&s->attempt_lat, (double)(de_now_ns() - t0) / 1e9);
                return;
            }
        }
    }
    if (nf == 0) {
        DROP_EXT();
        /* "0/N nodes are available: 3 Insufficient cpu, 2 cannot allocate all claims." */
        de_buf b;
        de_buf_init(&b, sizeof msg);
        de_buf_printf(&b, "0/%u nodes are available", N);
        const char *sep = ": ";
        for (int bit = 0; bit < 6; bit++)
            if (counts[bit]) {
                de_buf_printf(&b, "%s%u %s", sep, counts[bit], first_why[bit]);
                sep = ", ";
            }
        de_buf_puts(&b, ".");
        if (dev_why[0])
            de_buf_printf(&b, " Devices on %s", dev_why);
        snprintf(msg, sizeof msg, "%s", de_buf_str(&b));
        de_buf_free(&b);
        unsigned waits = 0;
        if (reason_bits & (SCH_FIT_UNSCHEDULABLE | SCH_FIT_SELECTOR | SCH_FIT_TAINT))
            waits |= WAIT_NODE;
        if (reason_bits & SCH_FIT_RESOURCES)
            waits |= WAIT_RESOURCES | WAIT_NODE;
        if (reason_bits & SCH_FIT_CLAIM_NODE)
            waits |= WAIT_CLAIM | WAIT_NODE;
        if (reason_bits & SCH_FIT_DEVICES)
            waits |= WAIT_DEVICES | WAIT_CLAIM;
        if (!waits)
            waits = WAIT_NODE; /* no nodes at all */
        unschedulable(s, idx, pid, waits, keys, nk, msg);
        sch_hist_observe(&s->attempt_lat, (double)(de_now_ns() - t0) / 1e9);
        return;
    }

    /* Score: least-allocated + normalised firstAvailable + policy scores;
     * ties by name.  A policy score that fails (closed) drops the node. */
    int64_t maxk = 0;
    for (uint32_t i = 0; i < nf; i++)
        maxk = DE_MAX(maxk, fs[i].k8s);
    uint32_t best = UINT32_MAX;
    double bestsc = -1e300;
    for (uint32_t i = 0; i < nf; i++) {
        double psc = 0;
        if (s->hooks.score && fs[i].out.nclaims) {
            uint32_t *ids = de_arena_alloc(s->cycle, fs[i].out.nclaims * sizeof *ids);
            dg_allocation *al = de_arena_alloc(s->cycle, fs[i].out.nclaims * sizeof *al);
            for (uint32_t q = 0; q < fs[i].out.nclaims; q++) {
                ids[q] = fs[i].out.claims[q].claim;
                al[q] = fs[i].out.claims[q].alloc;
            }
            al_placement pl = {fs[i].node, fs[i].name, pid, fs[i].out.nclaims, ids, al, fs[i].k8s};
            de_err pe;
            de_err_clear(&pe);
            if (s->hooks.score(s->hooks.ctx, s->g, &pl, &psc, &pe) != DE_OK) {
                DE_INFO(2, "policy score refused node %s: %s", de_intern_str(s->in, fs[i].name), pe.msg);
                continue;
            }
        }
        double sc = fs[i].score + (maxk > 0 ? (double)fs[i].k8s * 100.0 / (double)maxk : 0) + psc;
        if (best == UINT32_MAX) {
            best = i;
            bestsc = sc;
            continue;
        }
        if (sc > bestsc + 1e-9 ||
            (sc > bestsc - 1e-9 && de_intern_cmp(s->in, fs[i].name, fs[best].name) < 0)) {
            best = i;
            bestsc = sc;
        }
    }
    if (best == UINT32_MAX) {
        DROP_EXT();
        snprintf(msg, sizeof msg, "0/%u nodes are available: %u refused by policy score hooks.", N, nf);
        unschedulable(s, idx, pid, WAIT_DEVICES | WAIT_NODE, keys, nk, msg);
        sch_hist_observe(&s->attempt_lat, (double)(de_now_ns() - t0) / 1e9);
        return;
    }
    if (fs[best].memo) {
        /* the winner's allocation, for this pod's claims */
        de_err ae;
        de_err_clear(&ae);
        al_set_explain(s->al, false);
        de_rc rc = al_allocate(s->al, fs[best].name, npend, np, s->cycle, &fs[best].out, &ae);
        al_set_explain(s->al, true);
        if (rc != DE_OK || fs[best].out.k8s_score != fs[best].k8s) {
            /* an entry outlived a change no generation recorded: a bug,
             * but not one that places the pod wrongly */
            DE_WARN("filter memo: node %s no longer gives pod %s/%s what it remembered (%s); deciding again",
                    de_intern_str(s->in, fs[best].name), pns, de_intern_str(s->in, p->meta.name),
                    rc != DE_OK ? ae.msg : "another score");
            al_memo_reset(s->al, memo_tab);
            s->st.memo_stale++;
            DROP_EXT();
            sch_activate(s, idx);
            sch_hist_observe(&s->attempt_lat, (double)(de_now_ns() - t0) / 1e9);
            return;
        }
    }
    uint32_t nchosen = np;
    uint32_t ext_clid = DG_NONE;
    json_t *ext_obj = NULL, *ext_maps = NULL;
    if (fs[best].ext >= 0) {
        extv *v = &ev[fs[best].ext];
        npend[np] = v->clid;
        nchosen = np + 1;
        ext_clid = v->clid;
        ext_obj = v->obj;
        ext_maps = v->maps;
        claims[nall++] = v->clid;
    }
    al_nar nar;
    {
        char nwhy[256];
        de_rc nrc;
        de_err xe;
        de_err_clear(&xe);
        sch_nar(s, p, claims, ext_clid == DG_NONE ? nall : nall - 1, ext_clid, npend, &fs[best].out, nchosen, req, nreq,
                dg_node_get(s->g, fs[best].node), &nar, nwhy, sizeof nwhy, &nrc, &xe);
    }
    sch_choice ch = {fs[best].node, fs[best].name, claims, nall, fs[best].out, npend, nchosen,
                     ext_clid, ext_obj, ext_maps, nar.n ? &nar : NULL, group, pgname, pguid};
    de_err be;
    de_err_clear(&be);
    char podname[512];
    snprintf(podname, sizeof podname, "%s/%s", pns, de_intern_str(s->in, p->meta.name));
    bool waiting = false, in_flight = false;
    de_rc rc = sch_bind(s, idx, pid, &ch, &waiting, &in_flight, &be);
    DROP_EXT();
#undef DROP_EXT
    sch_hist_observe(&s->attempt_lat, (double)(de_now_ns() - t0) / 1e9);
    if (rc == DE_OK && in_flight) {
        /* a worker writes it; sch_async.c counts and reports the outcome */
    } else if (rc == DE_OK && waiting) {
        char note[600];
        snprintf(note, sizeof note, "waiting for binding conditions for device on node %s",
                 de_intern_str(s->in, ch.node_name));
        DE_INFO(2, "pod %s: %s", podname, note);
        sch_pod_event(s, pid, "Normal", "BindingConditionsPending", "Scheduling", note);
        sch_wait_first_check(s, idx);
    } else if (rc == DE_OK) {
        s->st.scheduled++;
        s->by_result[0]++;
        char note[2600];
        snprintf(note, sizeof note, "Successfully assigned %s to %s", podname,
                 de_intern_str(s->in, ch.node_name));
        DE_INFO(2, "%s", note);
        sch_pod_event(s, pid, "Normal", "Scheduled", "Binding", note);
    } else if (rc == DE_ECONFLICT) {
        s->st.conflicts++;
        DE_INFO(1, "conflict, retrying: pod %s: %s", podname, be.msg);
        spod *sp2 = sch_pod(s, idx);
        if (sp2->attempts % 8 == 0)
            sch_to_backoff(s, idx);
        else
            sch_activate(s, idx);
    } else {
        s->st.bind_errors++;
        s->by_result[2]++;
        DE_WARN("binding failed: pod %s: %s", podname, be.msg);
        sch_to_backoff(s, idx);
    }
}

void sch_set_write_deadline(sch_sched *s, uint64_t until_ns)
{
    s->write_until = until_ns;
    sch_async_set_deadline(s, until_ns);
}

unsigned sch_run(sch_sched *s, uint64_t budget_ns)
{
    uint64_t start = de_now_ns();
    unsigned n = 0;
    sch_async_drain(s);
    if (start >= s->write_until)
        return 0; /* leadership not renewed in time: decide and write nothing */
    sch_wait_due(s);
    al_set_now(s->al, (int64_t)time(NULL)); /* binding timeouts of allocated claims (Filter) */
    sch_promote_due(s);
    bool idle = false;
    /* with binding workers, at most 2 x --parallel-binds pods assumed and
     * not yet written: decisions stay close to the server's state, and a
     * stop has little to finish */
    while (!sch_async_full(s)) {
        uint32_t idx = sch_pop_active(s);
        if (idx == UINT32_MAX && s->o.pop_from_backoff)
            idx = sch_pop_backoff(s);
        if (idx == UINT32_MAX) {
            idle = true;
            break;
        }
        schedule_one(s, idx);
        n++;
        uint64_t now = de_now_ns();
        if (now - start >= budget_ns || now >= s->write_until)
            break;
    }
    /* nothing to decide: the time left builds the node tables and class
     * candidate sets that new slices need, so the next decisions find them
     * ready (al_prepare; a no-op when nothing changed) */
    uint64_t used = de_now_ns() - start;
    if (idle && used < budget_ns)
        al_prepare(s->al, budget_ns - used);
    return n;
}
