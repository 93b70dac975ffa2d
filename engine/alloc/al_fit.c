/*
 * al_fit.c - node fit beyond devices, the one implementation that
 * `allocate` (al_schedule_pod) and `serve` (engine/sched) share: the
 * filters kube-scheduler runs before DynamicResources, in its order and
 * with its reasons (NodeName, NodeUnschedulable, TaintToleration,
 * NodeAffinity, NodeResourcesFit), the pods' requests, what each node
 * already gives to pods, and the least-allocated score.
 *
 * Node usage.  A node's requested resources are those of the pods on it:
 * every pod in the graph with spec.nodeName that has not ended (phase
 * Succeeded/Failed), found through the graph listener, plus the pods the
 * scheduler placed but whose binding the graph does not show yet
 * (al_pod_assume: `serve` between pods/binding and the watch; `allocate`,
 * which never writes spec.nodeName).  One record per pod id says where it
 * is counted, so a pod that the watch later shows bound to the same node is
 * not counted twice.  A change moves the node's choice generation
 * (al_node_changed), since a node's feasibility depends on it.
 *
 * Capacity a node does not state: kubelets always report allocatable cpu,
 * memory, ephemeral-storage and pods; hand-written inputs often do not.  A
 * native resource (or `pods`) missing from a node's allocatable is not
 * checked, and a node without any allocatable (or no Node object at all:
 * the stand-ins of al_place.c) is not checked for resources.  An extended
 * resource missing from a stated allocatable counts as 0, as upstream,
 * unless a DeviceClass serves it through DRA (KEP-5004, DRAExtendedResource).
 */
#include "al_int.h"

#include <stdio.h>
#include <stdlib.h>

/* Resource amounts, the first AMOUNTS_INLINE in the record itself.  Pod
 * and node records get their amounts inside a decision (al_pod_assume); a
 * malloc there that the record kept took heap memory that nothing had
 * freed, and now and then its chunk header landed on a page the heap had
 * never touched: the stray page fault of about one gpu-nic-5000 run in ten
 * (perf record -e page-faults -d: _int_malloc writing at the heap top).
 * The records themselves are reserved and touched when pods and nodes
 * arrive (al_usage_reserve). */
#define AMOUNTS_INLINE 4

typedef struct amounts {
    al_amount *heap;   /* more than AMOUNTS_INLINE: all of them here */
    uint32_t n, cap;   /* cap: of heap */
    al_amount inl[AMOUNTS_INLINE];
} amounts;

static const al_amount *amounts_v(const amounts *x)
{
    return x->heap ? x->heap : x->inl;
}

static void amounts_add(amounts *x, uint32_t name, int64_t v)
{
    al_amount *a = x->heap ? x->heap : x->inl;
    for (uint32_t i = 0; i < x->n; i++)
        if (a[i].name == name) {
            a[i].milli += v;
            return;
        }
    if (x->n == (x->heap ? x->cap : AMOUNTS_INLINE)) {
        uint32_t cap = x->n * 2;
        al_amount *h = de_xmalloc(cap * sizeof *h);
        memcpy(h, a, x->n * sizeof *h);
        free(x->heap);
        x->heap = a = h;
        x->cap = cap;
    }
    a[x->n++] = (al_amount){name, v};
}

/* the record's amounts become v (malloc'ed, taken over: freed or kept) */
static void amounts_take(amounts *x, al_amount *v, uint32_t n)
{
    free(x->heap);
    x->heap = NULL;
    x->n = n;
    x->cap = 0;
    if (n <= AMOUNTS_INLINE) {
        if (n)
            memcpy(x->inl, v, n * sizeof *v);
        free(v);
    } else {
        x->heap = v;
        x->cap = n;
    }
}

typedef struct nuse {
    uint32_t npods;
    amounts a;
} nuse;

typedef struct prec {
    uint32_t node;     /* interned node name, 0 = not counted */
    bool assumed;      /* counted by al_pod_assume, not (yet) by spec.nodeName */
    amounts a;
} prec;

struct al_usage {
    bool ready;        /* every pod of the graph has been looked at */
    de_map node_idx;   /* node name -> index + 1 */
    nuse *nodes;
    uint32_t nnodes, capnodes;
    /* the node node_use found last: pods are placed and checked on one node
     * many times in a row, and an entry keeps its index until al_usage_free */
    uint32_t last_node, last_idx; /* last_idx: index + 1, 0 = none */
    prec *pods;        /* per pod id */
    uint32_t npods;
};

/* ---- requests ------------------------------------------------------------------------- */

void al_amount_add(al_amount **a, uint32_t *n, uint32_t *cap, uint32_t name, int64_t v)
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
    (*a)[(*n)++] = (al_amount){name, v};
}

int64_t al_amount_get(const al_amount *a, uint32_t n, uint32_t name)
{
    for (uint32_t i = 0; i < n; i++)
        if (a[i].name == name)
            return a[i].milli;
    return 0;
}

static void acc_max(al_amount **a, uint32_t *n, uint32_t *cap, const al_amount *b, uint32_t nb)
{
    for (uint32_t i = 0; i < nb; i++) {
        int64_t cur = al_amount_get(*a, *n, b[i].name);
        if (b[i].milli > cur)
            al_amount_add(a, n, cap, b[i].name, b[i].milli - cur);
    }
}

/* The kubelet/scheduler formula with sidecars: regular containers and
 * restartable init containers add up; each plain init container needs its
 * own request plus the sidecars started before it; the pod needs the larger
 * of the two. */
uint32_t al_pod_requests(const dg_pod *p, al_amount **out)
{
    al_amount *reqs = NULL, *side = NULL, *init = NULL, *tmp = NULL;
    uint32_t nr = 0, cr = 0, ns = 0, cs = 0, ni = 0, ci = 0, nt = 0, ct = 0;
    for (uint32_t i = 0; i < p->ncontainers; i++) {
        const dg_container *c = &p->containers[i];
        if (!c->init) {
            for (uint32_t k = 0; k < c->nrequests; k++)
                al_amount_add(&reqs, &nr, &cr, c->requests[k].name, de_qty_milli_value(c->requests[k].value));
            continue;
        }
        nt = 0;
        if (c->sidecar) {
            for (uint32_t k = 0; k < c->nrequests; k++) {
                int64_t v = de_qty_milli_value(c->requests[k].value);
                al_amount_add(&reqs, &nr, &cr, c->requests[k].name, v);
                al_amount_add(&side, &ns, &cs, c->requests[k].name, v);
            }
            for (uint32_t k = 0; k < ns; k++)
                al_amount_add(&tmp, &nt, &ct, side[k].name, side[k].milli);
        } else {
            for (uint32_t k = 0; k < c->nrequests; k++)
                al_amount_add(&tmp, &nt, &ct, c->requests[k].name, de_qty_milli_value(c->requests[k].value));
            for (uint32_t k = 0; k < ns; k++)
                al_amount_add(&tmp, &nt, &ct, side[k].name, side[k].milli);
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

uint32_t al_pod_requests_buf(const dg_pod *p, al_amount *buf, uint32_t cap)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < p->ncontainers; i++) {
        const dg_container *c = &p->containers[i];
        if (c->init)
            return UINT32_MAX; /* al_pod_requests' formula */
        for (uint32_t k = 0; k < c->nrequests; k++) {
            uint32_t name = c->requests[k].name, j = 0;
            int64_t v = de_qty_milli_value(c->requests[k].value);
            while (j < n && buf[j].name != name)
                j++;
            if (j < n) {
                buf[j].milli += v;
                continue;
            }
            if (n == cap)
                return UINT32_MAX;
            buf[n++] = (al_amount){name, v};
        }
    }
    return n;
}

/* ---- usage ----------------------------------------------------------------------------- */

static nuse *node_use(al_allocator *a, uint32_t node, bool create)
{
    struct al_usage *u = a->usage;
    uint64_t v;
    if (u->last_idx && u->last_node == node)
        return &u->nodes[u->last_idx - 1];
    if (de_map_get(&u->node_idx, node, &v)) {
        u->last_node = node;
        u->last_idx = (uint32_t)v;
        return &u->nodes[v - 1];
    }
    if (!create)
        return NULL;
    if (u->nnodes == u->capnodes) {
        u->capnodes = u->capnodes ? u->capnodes * 2 : 64;
        u->nodes = de_xrealloc(u->nodes, u->capnodes * sizeof *u->nodes);
    }
    memset(&u->nodes[u->nnodes], 0, sizeof u->nodes[u->nnodes]);
    de_map_put(&u->node_idx, node, ++u->nnodes);
    u->last_node = node;
    u->last_idx = u->nnodes;
    return &u->nodes[u->nnodes - 1];
}

static void node_add(al_allocator *a, uint32_t node, const al_amount *am, uint32_t n, int sign)
{
    nuse *u = node_use(a, node, true);
    u->npods = (uint32_t)((int64_t)u->npods + sign);
    for (uint32_t i = 0; i < n; i++)
        amounts_add(&u->a, am[i].name, sign * am[i].milli);
    al_node_changed(a, node);
}

static prec *pod_rec(al_allocator *a, uint32_t pid)
{
    struct al_usage *u = a->usage;
    if (pid >= u->npods) {
        uint32_t n = u->npods ? u->npods : 64;
        while (n <= pid)
            n *= 2;
        u->pods = de_xrealloc(u->pods, n * sizeof *u->pods);
        memset(u->pods + u->npods, 0, (n - u->npods) * sizeof *u->pods);
        u->npods = n;
    }
    return &u->pods[pid];
}

static void rec_clear(al_allocator *a, prec *r)
{
    if (r->node)
        node_add(a, r->node, amounts_v(&r->a), r->a.n, -1);
    free(r->a.heap);
    memset(r, 0, sizeof *r);
}

static uint32_t usage_nar(al_allocator *a, const dg_pod *p, al_amount **out, uint32_t n, uint32_t cap);

/* req: the pod's requests (al_pod_requests), NULL: computed here */
static void rec_set(al_allocator *a, prec *r, const dg_pod *p, uint32_t node, bool assumed, const al_nar *nar,
                    const al_amount *req, uint32_t nreq)
{
    rec_clear(a, r);
    r->node = node;
    r->assumed = assumed;
    bool more = (nar && nar->n) || (a->opts.gates.on[DE_GATE_NODE_ALLOCATABLE_RESOURCES] && p->nnar_statuses);
    if (req && !more) {
        /* the usage is the requests: no heap unless there are many */
        if (nreq <= AMOUNTS_INLINE) {
            if (nreq)
                memcpy(r->a.inl, req, nreq * sizeof *req);
            r->a.n = nreq;
        } else {
            al_amount *v = de_xmalloc(nreq * sizeof *v);
            memcpy(v, req, nreq * sizeof *v);
            amounts_take(&r->a, v, nreq);
        }
        node_add(a, node, amounts_v(&r->a), r->a.n, +1);
        return;
    }
    al_amount *v = NULL;
    uint32_t n;
    if (req) {
        if (nreq) {
            v = de_xmalloc(nreq * sizeof *v);
            memcpy(v, req, nreq * sizeof *v);
        }
        n = usage_nar(a, p, &v, nreq, nreq);
    } else {
        n = al_pod_usage(a, p, &v);
    }
    if (nar && nar->n) {
        uint32_t cap = n;
        al_nar_demand(nar->st, nar->n, &v, &n, &cap);
    }
    amounts_take(&r->a, v, n);
    node_add(a, node, amounts_v(&r->a), r->a.n, +1);
}
static bool ended(al_allocator *a, const dg_pod *p)
{
    if (!p->phase)
        return false;
    const char *ph = al_str(a, p->phase);
    return !strcmp(ph, "Succeeded") || !strcmp(ph, "Failed");
}

/* One pod's graph state into its record. */
static void pod_seen(al_allocator *a, uint32_t pid)
{
    const dg_pod *p = dg_pod_get(a->g, pid);
    prec *r = pod_rec(a, pid);
    if (!p || ended(a, p)) {
        rec_clear(a, r);
        return;
    }
    if (p->node_name) {
        rec_set(a, r, p, p->node_name, false, NULL, NULL, 0);
        return;
    }
    /* not bound (any more): only a pod the scheduler placed stays counted */
    if (r->node && !r->assumed)
        rec_clear(a, r);
}

static struct al_usage *usage_get(al_allocator *a)
{
    if (!a->usage) {
        a->usage = de_xcalloc(1, sizeof *a->usage);
        de_map_init(&a->usage->node_idx);
    }
    return a->usage;
}

/* Records for every pod id and node the graph holds, made when they arrive
 * (al_tmem_reserve), so that a decision's first pod or first pod on a node
 * does not grow them (a fresh page faults). */
void al_usage_reserve(al_allocator *a, uint32_t npods, uint32_t nnodes)
{
    struct al_usage *u = usage_get(a);
    if (npods > u->npods) {
        npods = al_grow_cap(u->npods, npods); /* pods arriving one by one */
        u->pods = de_xrealloc(u->pods, npods * sizeof *u->pods);
        memset(u->pods + u->npods, 0, (npods - u->npods) * sizeof *u->pods);
        u->npods = npods;
    }
    if (nnodes > u->capnodes) {
        nnodes = al_grow_cap(u->capnodes, nnodes);
        u->nodes = de_xrealloc(u->nodes, nnodes * sizeof *u->nodes);
        memset(u->nodes + u->capnodes, 0, (nnodes - u->capnodes) * sizeof *u->nodes); /* touched */
        u->capnodes = nnodes;
        de_map_reserve(&u->node_idx, nnodes);
    }
}

static void usage_ready(al_allocator *a)
{
    usage_get(a);
    if (a->usage->ready)
        return;
    a->usage->ready = true;
    for (uint32_t i = 0, lim = dg_pod_id_limit(a->g); i < lim; i++)
        if (dg_pod_get(a->g, i))
            pod_seen(a, i);
}

void al_usage_prepare(al_allocator *a)
{
    usage_ready(a);
}

void al_usage_pod_event(al_allocator *a, dg_op op, uint32_t pid)
{
    if (!a->usage || !a->usage->ready)
        return; /* counted when first needed */
    if (op == DG_OP_DELETE) {
        if (pid < a->usage->npods)
            rec_clear(a, &a->usage->pods[pid]);
        return;
    }
    pod_seen(a, pid);
}

void al_usage_free(al_allocator *a)
{
    struct al_usage *u = a->usage;
    if (!u)
        return;
    for (uint32_t i = 0; i < u->nnodes; i++)
        free(u->nodes[i].a.heap);
    for (uint32_t i = 0; i < u->npods; i++)
        free(u->pods[i].a.heap);
    free(u->nodes);
    free(u->pods);
    de_map_destroy(&u->node_idx);
    free(u);
    a->usage = NULL;
}

void al_pod_assume(al_allocator *a, uint32_t pid, uint32_t node_name, const al_nar *nar)
{
    al_pod_assume_req(a, pid, node_name, nar, NULL, 0);
}

void al_pod_assume_req(al_allocator *a, uint32_t pid, uint32_t node_name, const al_nar *nar, const al_amount *req,
                       uint32_t nreq)
{
    usage_ready(a);
    const dg_pod *p = dg_pod_get(a->g, pid);
    if (!p || !node_name)
        return;
    prec *r = pod_rec(a, pid);
    if (r->node == node_name && !(nar && nar->n))
        return;
    rec_set(a, r, p, node_name, p->node_name != node_name, nar, req, nreq);
}
void al_pod_forget(al_allocator *a, uint32_t pid)
{
    if (!a->usage || pid >= a->usage->npods)
        return;
    prec *r = &a->usage->pods[pid];
    if (r->assumed)
        rec_clear(a, r);
}

uint32_t al_node_pods(al_allocator *a, uint32_t node_name)
{
    usage_ready(a);
    const nuse *u = node_use(a, node_name, false);
    return u ? u->npods : 0;
}

int64_t al_node_requested(al_allocator *a, uint32_t node_name, uint32_t resource)
{
    usage_ready(a);
    const nuse *u = node_use(a, node_name, false);
    return u ? al_amount_get(amounts_v(&u->a), u->a.n, resource) : 0;
}

/* ---- filters ---------------------------------------------------------------------------- */

/* upstream's ToleratesTaint (core/v1 helper) */
static bool tolerates(al_allocator *a, const dg_pod *p, uint32_t key, uint32_t value, uint32_t effect)
{
    for (uint32_t i = 0; i < p->ntolerations; i++) {
        const dg_pod_toleration *t = &p->tolerations[i];
        if (t->effect && t->effect != effect)
            continue;
        if (t->key && t->key != key)
            continue;
        const char *op = t->op ? al_str(a, t->op) : "";
        if (!strcmp(op, "Exists"))
            return true;
        if ((!*op || !strcmp(op, "Equal")) && t->value == value)
            return true;
    }
    return false;
}

static void fit_fail(al_fit *f, unsigned bit, bool unresolvable, const char *reason)
{
    f->bit = bit;
    f->unresolvable = unresolvable;
    snprintf(f->reasons, sizeof f->reasons, "%s", reason);
}

static void fit_more(al_fit *f, bool unresolvable, const char *fmt, const char *arg)
{
    size_t n = strlen(f->reasons);
    if (n && n + 1 < sizeof f->reasons)
        f->reasons[n++] = '\n';
    snprintf(f->reasons + n, sizeof f->reasons - n, fmt, arg);
    f->bit = AL_FIT_RESOURCES;
    f->unresolvable |= unresolvable;
}

static bool native(const char *rn)
{
    return !strcmp(rn, "cpu") || !strcmp(rn, "memory") || !strcmp(rn, "ephemeral-storage") ||
           !strncmp(rn, "hugepages-", 10);
}

static const dg_resource_amount *allocatable(const dg_node *n, uint32_t name)
{
    for (uint32_t k = 0; k < n->nallocatable; k++)
        if (n->allocatable[k].name == name)
            return &n->allocatable[k];
    return NULL;
}

/* NodeResourcesFit: every resource short on the node is a reason; one the
 * node could not hold even empty makes the status unresolvable (no
 * preemption can help). */
static void fit_resources(al_allocator *a, const dg_pod *p, const al_amount *req, uint32_t nreq,
                          const dg_node *n, al_fit *f)
{
    if (!n->nallocatable)
        return;
    const dg_resource_amount *pods = allocatable(n, a->s_pods);
    if (pods && (int64_t)al_node_pods(a, n->meta.name) + 1 > de_qty_value(pods->value))
        fit_more(f, false, "%s", "Too many pods");
    for (uint32_t i = 0; i < nreq; i++) {
        if (req[i].milli <= 0)
            continue;
        const char *rn = al_str(a, req[i].name);
        const dg_resource_amount *al = allocatable(n, req[i].name);
        bool nat = native(rn);
        if (!al && nat)
            continue; /* not stated: not checked (see the file comment) */
        int64_t cap = al ? de_qty_milli_value(al->value) : 0;
        if (!nat && cap <= 0 && a->opts.gates.on[DE_GATE_EXTENDED_RESOURCE] &&
            dg_class_for_extended_resource(a->g, req[i].name) != DG_NONE)
            continue; /* served by DRA (KEP-5004): checked with the devices */
        (void)p;
        int64_t used = al_node_requested(a, n->meta.name, req[i].name);
        if (used + req[i].milli > cap)
            fit_more(f, req[i].milli > cap, "Insufficient %s", rn);
    }
}

unsigned al_node_fit(al_allocator *a, const dg_pod *p, const al_amount *req, uint32_t nreq, const dg_node *n,
                     al_fit *f)
{
    al_fit_clear(f);
    usage_ready(a);
    if (p->node_name && p->node_name != n->meta.name) {
        fit_fail(f, AL_FIT_NODE_NAME, true, "node(s) didn't match the requested node name");
        return f->bit;
    }
    if (n->unschedulable && !tolerates(a, p, a->s_unsched_taint, 0, a->s_noschedule)) {
        fit_fail(f, AL_FIT_UNSCHEDULABLE, true, "node(s) were unschedulable");
        return f->bit;
    }
    for (uint32_t i = 0; i < n->ntaints; i++) {
        const dg_node_taint *t = &n->taints[i];
        if (t->effect != a->s_noschedule && t->effect != a->s_noexecute)
            continue;
        if (!tolerates(a, p, t->key, t->value, t->effect)) {
            fit_fail(f, AL_FIT_TAINT, true, "node(s) had untolerated taint(s)");
            return f->bit;
        }
    }
    bool sel = true;
    for (uint32_t i = 0; i < p->nnode_selector && sel; i++) {
        sel = false;
        for (uint32_t k = 0; k < n->meta.nlabels && !sel; k++)
            sel = n->meta.labels[k].key == p->node_selector[i].key &&
                  n->meta.labels[k].value == p->node_selector[i].value;
    }
    if (sel && p->has_required_affinity) {
        de_err e;
        de_err_clear(&e);
        if (dg_nodesel_match(a->g, &p->required_affinity, n->meta.name, n->meta.labels, n->meta.nlabels, &sel,
                             &e) != DE_OK)
            sel = false;
    }
    if (!sel) {
        fit_fail(f, AL_FIT_SELECTOR, true, "node(s) didn't match Pod's node affinity/selector");
        return f->bit;
    }
    fit_resources(a, p, req, nreq, n, f);
    return f->bit;
}

void al_fit_text(const al_fit *f, char *buf, size_t cap)
{
    size_t o = 0;
    for (const char *s = f->reasons; *s && o + 3 < cap; s++) {
        if (*s == '\n') {
            buf[o++] = ',';
            buf[o++] = ' ';
        } else {
            buf[o++] = *s;
        }
    }
    buf[o < cap ? o : cap - 1] = 0;
}

/* ---- score ------------------------------------------------------------------------------- */

/* NodeResourcesFit's LeastAllocated over cpu and memory, 0-100. */
double al_least_allocated(al_allocator *a, const al_amount *req, uint32_t nreq, const dg_node *n)
{
    uint32_t names[2] = {a->s_cpu, a->s_memory};
    double sc = 0;
    int nsc = 0;
    for (int k = 0; k < 2; k++) {
        const dg_resource_amount *al = allocatable(n, names[k]);
        int64_t cap = al ? de_qty_milli_value(al->value) : -1;
        if (cap <= 0)
            continue;
        int64_t used = al_node_requested(a, n->meta.name, names[k]) + al_amount_get(req, nreq, names[k]);
        sc += (double)(cap - used) * 100.0 / (double)cap;
        nsc++;
    }
    return nsc ? sc / nsc : 0;
}

/* What a pod counts on its node: its requests and, with
 * DRANodeAllocatableResources, what its devices take (the statuses the
 * scheduler wrote, as upstream's PodRequests with
 * UseDRANodeAllocatableResourceClaimStatus). */
uint32_t al_pod_usage(al_allocator *a, const dg_pod *p, al_amount **out)
{
    uint32_t n = al_pod_requests(p, out);
    return usage_nar(a, p, out, n, n);
}

/* al_pod_usage past the requests: *out holds n of cap */
static uint32_t usage_nar(al_allocator *a, const dg_pod *p, al_amount **out, uint32_t n, uint32_t cap)
{
    if (!a->opts.gates.on[DE_GATE_NODE_ALLOCATABLE_RESOURCES])
        return n;
    for (uint32_t i = 0; i < p->nnar_statuses; i++) {
        const dg_pod_nar_status *s = &p->nar_statuses[i];
        for (uint32_t k = 0; k < s->nmapping; k++)
            al_amount_add(out, &n, &cap, s->mapping[k].name, de_qty_milli_value(s->mapping[k].value));
        for (uint32_t k = 0; k < s->noverhead; k++) {
            const dg_nar_overhead *o = &s->overhead[k];
            int64_t v = o->has_pod ? de_qty_milli_value(o->per_pod) : 0;
            if (o->has_ctr)
                v += de_qty_milli_value(o->per_ctr) * (int64_t)s->ncontainers;
            al_amount_add(out, &n, &cap, o->name, v);
        }
    }
    return n;
}

bool al_node_declares(const al_allocator *a, const dg_node *n, uint32_t feature)
{
    if (!n || !a->f_declared)
        return false;
    for (uint32_t i = 0; i < n->ndeclared_features; i++)
        if (n->declared_features[i] == feature)
            return true;
    return false;
}
