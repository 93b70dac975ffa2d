/*
 * al_choose.c - choosing a node for a pod with a score hook, at a cost per
 * pod that does not grow with the cluster.
 *
 * The decision to reproduce (al_place.c, the uncached loop): every node in
 * canonical order passes the pod's filters, then Allocate of the pending
 * claims; each feasible node is scored (Kubernetes firstAvailable score +
 * the score hook) and the best total wins, ties in node name order.  A hard
 * error (upstream's errors, a failing score hook) on any node aborts the pod
 * with the first such node's error.  Naively that is one Allocate and one
 * score call per node per pod.
 *
 * Design.
 *  - Node state generations.  al_node_changed(node) is called for every
 *    event that can change what a node gives for some pod (al_core.c: the
 *    node's table, usage of any device of a pool the table reads, its
 *    devices' taints/derived facts/groups, its Node object, its own slices;
 *    al_counts.c: its free device count).  It gives the node a new
 *    generation and appends its rank to a change log (once per change
 *    between two syncs).  Changes that affect every node (DeviceClasses, the
 *    hooks or the policy revision = the allocator epoch, the node order)
 *    invalidate every table below.
 *  - Score tables.  A pod's *signature* (al_sig.c) is everything the filters, Allocate
 *    and the score can see of it: its nodeName, nodeSelector, required
 *    affinity, tolerations and requests (NodeResourcesFit: a node's usage
 *    moves its generation), the node selectors of its allocated claims,
 *    and the namespace and full spec of each pending claim, in pod order -
 *    not claim names or UIDs, so the pods of one template share it.  Per
 *    signature a table holds, per node, the generation it was evaluated at
 *    and the outcome: filtered/infeasible (with the reason), feasible (k8s
 *    score, policy score, total) or error; the feasible nodes sit in a
 *    binary max-heap on (total, then lower rank), so the best is the top.
 *    A pod syncs its table by re-evaluating only the nodes in the change log
 *    since the table's last sync whose generation moved (typically the one
 *    node the previous pod went to); a new table, or one that fell behind
 *    the log, looks at every node once.
 *  - The winner's allocation is Allocate on that node for this pod's claims
 *    (shareIDs and results exactly as a direct call gives them): reused when
 *    the node was evaluated by this very pod; else taken from the entry's
 *    saved allocation (below); else computed fresh.
 *  - Saved allocations.  A feasible entry that does not win the pod that
 *    evaluated it keeps a copy of its allocation (one malloc), so when it
 *    wins later - with bin-packing, every node's first pod, long after the
 *    first pod's scan built it - there is no second Allocate on a node
 *    whose tables have gone cold.  Allocate's result on
 *    an unchanged node depends on the claims only through their specs
 *    (equal within a signature) and shareIDs, so: an allocation with a
 *    shareID is not saved, and the pointers a result takes from its claim
 *    (a request's tolerations, the claim's config entries) are kept as
 *    indexes and re-pointed at the winning pod's own claim.  All tables'
 *    blobs together are capped (SAVE_CAP); past it the fresh Allocate
 *    stands in.
 *  - Errors: a table counts its error entries; with any, the lowest ranked
 *    one is evaluated again for this pod to raise its exact error.
 *  - Unschedulable pods: the reasons are kept per table as templates (claim
 *    names written as marks by al_explain, filled in with this pod's claim
 *    names) with a count of nodes per template, maintained as entries
 *    change, so the "0/N nodes are available: ..." summary costs
 *    O(distinct reasons).  Allocate failures are explained lazily, only when
 *    a summary is needed, and then stay explained until the node changes.
 *  - Tables are kept for the 32 most recently used signatures.
 *
 * What it relies on (al.h): the score is a function of the node and of the
 * placement's devices (the policy host's hooks are); Allocate's outcome on a
 * node is a function of the node's state and the claims' specs (names only
 * appear in messages and shareIDs).  spec/alloc_choice_spec.lua compares
 * the cached choice with the uncached loop (al_set_choice_cache(a, false))
 * on randomized clusters and event sequences.
 */
#include "al_int.h"
#include "../base/buf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

enum { E_UNKNOWN = 0, E_FILTERED, E_INFEASIBLE, E_FEASIBLE, E_ERROR };

#define NONE UINT32_MAX
#define UNEXPLAINED (UINT32_MAX - 1) /* an Allocate failure not explained yet */
#define MAX_TABLES 32
#define SAVE_CAP ((size_t)64 << 20) /* bytes of saved allocations, all tables together */

typedef struct ent {
    uint64_t gen;     /* node generation it was evaluated at */
    double total;     /* k8s + policy */
    double ps;        /* policy score */
    int64_t k8s;
    uint32_t reason;  /* filtered/infeasible: reason index, or UNEXPLAINED; else NONE */
    uint32_t kreason; /* filtered/infeasible: upstream's reasons (reason index); else NONE */
    bool kres;        /* ... and kube-scheduler could resolve them by preemption */
    uint32_t hpos;    /* heap position, NONE = not in the heap */
    uint8_t state;
    al_saved *sv;     /* feasible: its allocation, when saved (al_saved.c) */
} ent;

typedef struct stable {
    uint64_t hash;
    uint32_t *sig;
    uint32_t nsig;
    uint64_t epoch, order_gen, choice_gen; /* what the entries were made under */
    uint32_t n;
    ent *e;
    uint32_t *heap;   /* feasible ranks */
    uint32_t nheap;
    uint32_t nerr;
    uint64_t seen;    /* change log position consumed */
    bool full;        /* every node must be looked at */
    /* reason templates and how many nodes give each */
    de_map ridx;      /* text hash + probe -> index + 1 */
    char **rtext;
    uint32_t *rcount;
    uint32_t *kcount; /* nodes giving each text as upstream's reasons */
    uint32_t nr, capr;
    uint32_t nres;    /* nodes whose upstream status is resolvable */
    uint32_t *unexpl; /* ranks that may be UNEXPLAINED */
    uint32_t nunexpl, capunexpl;
    uint64_t used;    /* LRU tick */
} stable;

struct al_chooser {
    de_map by_hash;   /* signature hash + probe -> table index + 1 */
    stable **t;
    uint32_t n;
    uint64_t tick;
    al_sigbuf sig;    /* scratch signature (al_sig.c) */
    size_t saved_bytes; /* saved allocations of every table */
};

/* ---- saved allocations (al_saved.c) ------------------------------------------------------ */

static void saved_free(struct al_chooser *c, ent *x)
{
    if (x->sv) {
        c->saved_bytes -= al_saved_bytes(x->sv);
        free(x->sv);
        x->sv = NULL;
    }
}

/* Keep the allocation o of entry r (pod p's claims) in the entry. */
static void save(al_allocator *a, const al_podctx *p, stable *t, uint32_t r, const al_outcome *o)
{
    ent *x = &t->e[r];
    saved_free(a->chooser, x);
    x->sv = al_saved_new(a, p->pending, o, SAVE_CAP - a->chooser->saved_bytes);
    if (x->sv)
        a->chooser->saved_bytes += al_saved_bytes(x->sv);
}

/* ---- node generations and the change log -------------------------------------------- */

void al_node_changed(al_allocator *a, uint32_t node_name)
{
    uint64_t r;
    /* no score table yet: the first one looks at every node anyway */
    if (!a->chooser || !a->ngen || a->order_dirty || !de_map_get(&a->rank_by_name, node_name, &r))
        return;
    uint32_t rank = (uint32_t)r - 1;
    a->ngen[rank] = ++a->ngen_next;
    /* its last entry has not been consumed by any table yet: enough */
    if (a->nlogged[rank] > a->clog_mark)
        return;
    if (a->clog_end - a->clog_base == a->clog_cap) {
        a->clog_cap = a->clog_cap ? a->clog_cap * 2 : 1024;
        a->clog = de_xrealloc(a->clog, a->clog_cap * sizeof *a->clog);
    }
    a->clog[a->clog_end - a->clog_base] = rank;
    a->nlogged[rank] = ++a->clog_end;
}

/* Per-rank arrays sized (and touched) when nodes arrive (al_tmem_reserve). */
void al_choice_reserve(al_allocator *a, uint32_t n)
{
    if (n <= a->capngen)
        return;
    n = al_grow_cap(a->capngen, n);
    a->ngen = de_xrealloc(a->ngen, n * sizeof *a->ngen);
    a->nlogged = de_xrealloc(a->nlogged, n * sizeof *a->nlogged);
    memset(a->ngen + a->capngen, 0, (n - a->capngen) * sizeof *a->ngen);
    memset(a->nlogged + a->capngen, 0, (n - a->capngen) * sizeof *a->nlogged);
    a->capngen = n;
}

void al_choice_order(al_allocator *a)
{
    uint32_t n = a->nnodes ? a->nnodes : 1;
    al_choice_reserve(a, n);
    memset(a->ngen, 0, n * sizeof *a->ngen);
    memset(a->nlogged, 0, n * sizeof *a->nlogged);
    a->clog_base = a->clog_mark = a->clog_end;
}

/* Drop the older half of a long log; tables behind it look at every node. */
static void log_trim(al_allocator *a)
{
    uint64_t len = a->clog_end - a->clog_base, lim = 4096 + 4 * (uint64_t)a->nnodes;
    if (len <= lim)
        return;
    uint64_t drop = len / 2;
    memmove(a->clog, a->clog + drop, (len - drop) * sizeof *a->clog);
    a->clog_base += drop;
    if (a->clog_mark < a->clog_base)
        a->clog_mark = a->clog_base;
}

/* ---- tables --------------------------------------------------------------------------- */

static void st_free(struct al_chooser *c, stable *t)
{
    for (uint32_t r = 0; r < t->n && t->e; r++)
        saved_free(c, &t->e[r]);
    for (uint32_t i = 0; i < t->nr; i++)
        free(t->rtext[i]);
    free(t->rtext);
    free(t->rcount);
    free(t->kcount);
    de_map_destroy(&t->ridx);
    free(t->unexpl);
    free(t->heap);
    free(t->e);
    free(t->sig);
    free(t);
}

void al_choose_free(al_allocator *a)
{
    struct al_chooser *c = a->chooser;
    if (c) {
        for (uint32_t i = 0; i < c->n; i++)
            st_free(c, c->t[i]);
        free(c->t);
        free(c->sig.w);
        de_map_destroy(&c->by_hash);
        free(c);
        a->chooser = NULL;
    }
    free(a->ngen);
    free(a->nlogged);
    free(a->clog);
    a->ngen = a->nlogged = NULL;
    a->capngen = 0;
    a->clog = NULL;
}

void al_set_choice_cache(al_allocator *a, bool on)
{
    a->choice_off = !on;
}

void al_set_explain(al_allocator *a, bool on)
{
    a->no_explain = !on;
}

static void st_reset(al_allocator *a, stable *t)
{
    for (uint32_t r = 0; r < t->n && t->e; r++)
        saved_free(a->chooser, &t->e[r]);
    if (t->n != a->nnodes || !t->e) {
        free(t->e);
        free(t->heap);
        t->n = a->nnodes;
        t->e = de_xmalloc((t->n ? t->n : 1) * sizeof *t->e);
        t->heap = de_xmalloc((t->n ? t->n : 1) * sizeof *t->heap);
    }
    for (uint32_t r = 0; r < t->n; r++)
        t->e[r] = (ent){.reason = NONE, .kreason = NONE, .hpos = NONE};
    t->nheap = t->nerr = t->nres = 0;
    for (uint32_t i = 0; i < t->nr; i++)
        free(t->rtext[i]);
    t->nr = 0;
    de_map_clear(&t->ridx);
    t->nunexpl = 0;
    t->full = true;
    t->epoch = a->epoch;
    t->order_gen = a->order_gen;
    t->choice_gen = a->choice_gen;
    t->seen = a->clog_end;
    a->stats.choice_tables++;
}

static void reindex(struct al_chooser *c)
{
    de_map_clear(&c->by_hash);
    for (uint32_t i = 0; i < c->n; i++) {
        uint64_t k = c->t[i]->hash;
        while (de_map_get(&c->by_hash, k, NULL))
            k++;
        de_map_put(&c->by_hash, k, i + 1);
    }
}

static stable *st_get(al_allocator *a)
{
    struct al_chooser *c = a->chooser;
    uint64_t h = al_sig_hash(c->sig.w, c->sig.n), v;
    for (uint64_t k = h; de_map_get(&c->by_hash, k, &v); k++) {
        stable *t = c->t[v - 1];
        if (t->hash == h && t->nsig == c->sig.n && !memcmp(t->sig, c->sig.w, c->sig.n * sizeof *c->sig.w))
            return t;
    }
    if (c->n == MAX_TABLES) {
        uint32_t lru = 0;
        for (uint32_t i = 1; i < c->n; i++)
            if (c->t[i]->used < c->t[lru]->used)
                lru = i;
        st_free(c, c->t[lru]);
        c->t[lru] = c->t[--c->n];
        reindex(c);
    }
    stable *t = de_xcalloc(1, sizeof *t);
    t->hash = h;
    t->nsig = c->sig.n;
    t->sig = de_xmalloc((c->sig.n ? c->sig.n : 1) * sizeof *t->sig);
    memcpy(t->sig, c->sig.w, c->sig.n * sizeof *t->sig);
    de_map_init(&t->ridx);
    c->t = de_xrealloc(c->t, (c->n + 1) * sizeof *c->t);
    c->t[c->n++] = t;
    uint64_t k = h;
    while (de_map_get(&c->by_hash, k, NULL))
        k++;
    de_map_put(&c->by_hash, k, c->n);
    st_reset(a, t);
    return t;
}

/* ---- the heap of feasible nodes ------------------------------------------------------- */

static bool better(const stable *t, uint32_t x, uint32_t y)
{
    double p = t->e[x].total, q = t->e[y].total;
    return p > q || (p == q && x < y);
}

static void heap_set(stable *t, uint32_t i, uint32_t r)
{
    t->heap[i] = r;
    t->e[r].hpos = i;
}

static void heap_up(stable *t, uint32_t i)
{
    uint32_t r = t->heap[i];
    while (i > 0) {
        uint32_t p = (i - 1) / 2;
        if (!better(t, r, t->heap[p]))
            break;
        heap_set(t, i, t->heap[p]);
        i = p;
    }
    heap_set(t, i, r);
}

static void heap_down(stable *t, uint32_t i)
{
    uint32_t r = t->heap[i];
    for (;;) {
        uint32_t l = 2 * i + 1, best = i;
        uint32_t br = r;
        if (l < t->nheap && better(t, t->heap[l], br)) {
            best = l;
            br = t->heap[l];
        }
        if (l + 1 < t->nheap && better(t, t->heap[l + 1], br))
            best = l + 1;
        if (best == i)
            break;
        heap_set(t, i, t->heap[best]);
        i = best;
    }
    heap_set(t, i, r);
}

static void heap_remove(stable *t, uint32_t r)
{
    uint32_t i = t->e[r].hpos;
    t->e[r].hpos = NONE;
    uint32_t last = t->heap[--t->nheap];
    if (i == t->nheap)
        return;
    heap_set(t, i, last);
    heap_up(t, i);
    heap_down(t, t->e[last].hpos);
}

/* ---- reasons --------------------------------------------------------------------------- */

static uint32_t reason_ref(stable *t, const char *s)
{
    uint64_t h = de_hash_bytes(s, strlen(s)), v;
    for (uint64_t k = h; de_map_get(&t->ridx, k, &v); k++)
        if (!strcmp(t->rtext[v - 1], s))
            return (uint32_t)v - 1;
    if (t->nr == t->capr) {
        t->capr = t->capr ? t->capr * 2 : 16;
        t->rtext = de_xrealloc(t->rtext, t->capr * sizeof *t->rtext);
        t->rcount = de_xrealloc(t->rcount, t->capr * sizeof *t->rcount);
        t->kcount = de_xrealloc(t->kcount, t->capr * sizeof *t->kcount);
    }
    t->rtext[t->nr] = de_xstrdup(s);
    t->rcount[t->nr] = 0;
    t->kcount[t->nr] = 0;
    uint64_t k = h;
    while (de_map_get(&t->ridx, k, NULL))
        k++;
    de_map_put(&t->ridx, k, ++t->nr);
    return t->nr - 1;
}

/* Claim marks "\x01<index>\x02" (al_explain) replaced by this pod's names. */
static const char *unmark(al_allocator *a, const al_podctx *p, const char *s, de_arena *ar)
{
    if (!strchr(s, '\x01'))
        return s;
    de_buf b;
    de_buf_init(&b, 1u << 20);
    while (*s) {
        const char *m = strchr(s, '\x01');
        if (!m) {
            de_buf_puts(&b, s);
            break;
        }
        de_buf_add(&b, s, (size_t)(m - s));
        char *end;
        unsigned long i = strtoul(m + 1, &end, 10);
        const dg_claim *cl = i < p->npending ? dg_claim_get(a->g, p->pending[i]) : NULL;
        de_buf_puts(&b, cl ? al_str(a, cl->meta.name) : "?");
        s = *end == '\x02' ? end + 1 : end;
    }
    const char *out = de_arena_strdup(ar, de_buf_str(&b));
    de_buf_free(&b);
    return out;
}

/* ---- evaluating one node ---------------------------------------------------------------- */

de_rc al_score_node(al_allocator *a, uint32_t podid, uint32_t rank, const uint32_t *claims, uint32_t n,
                    const al_outcome *o, de_arena *ar, double *ps, de_err *e)
{
    const dg_node *node = al_node_at(a, rank);
    al_placement pl = {.node = a->node_order[rank], .node_name = node->meta.name, .pod = podid, .nclaims = n,
                       .claims = claims, .k8s_score = o->k8s_score, .has_node_counts = true};
    dg_allocation *al = AL_NEW(ar, dg_allocation, n);
    uint32_t nd = 0;
    for (uint32_t i = 0; i < n; i++) {
        al[i] = o->claims[i].alloc;
        nd += al[i].nresults;
    }
    uint32_t *ids = AL_NEW(ar, uint32_t, nd ? nd : 1);
    nd = 0;
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t k = 0; k < al[i].nresults; k++)
            ids[nd++] = o->claims[i].devids[k];
    pl.allocs = al;
    pl.devids = ids;
    pl.node_free_devices = al_node_free_devices(a, node->meta.name, &pl.node_devices);
    de_err se;
    de_err_clear(&se);
    *ps = 0;
    if (a->hooks.score(a->hooks.ctx, a->g, &pl, ps, &se) != DE_OK) {
        *e = se;
        if (!e->rc)
            e->rc = DE_EPOLICY;
        return e->rc;
    }
    if (isnan(*ps))
        *ps = -INFINITY;
    return DE_OK;
}

typedef struct nodeeval {
    uint8_t state;
    const char *reason; /* filtered/infeasible; NULL = not explained */
    const char *kreasons; /* filtered/infeasible: upstream's reasons */
    bool kres;          /* ... resolvable by preemption */
    al_outcome o;       /* feasible */
    double ps;
    de_rc rc;           /* error */
    de_err err;
} nodeeval;

/* What the uncached loop does for one node (without extended resource
 * claims, which this path never sees). */
static void eval_node(al_allocator *a, const al_podctx *p, uint32_t r, de_arena *ar, nodeeval *v,
                      uint32_t *checked)
{
    v->reason = NULL;
    v->kreasons = AL_K8S_CANNOT_ALLOCATE;
    v->kres = false;
    v->ps = 0;
    v->rc = DE_OK;
    de_err_clear(&v->err);
    const dg_node *node = al_node_at(a, r);
    al_fit fit;
    char buf[512];
    const char *f = al_pod_filter(a, p, node, &fit, buf, sizeof buf);
    if (f) {
        v->state = E_FILTERED;
        v->reason = de_arena_strdup(ar, f);
        v->kreasons = de_arena_strdup(ar, fit.reasons);
        v->kres = !fit.unresolvable;
        return;
    }
    (*checked)++;
    al_ntab *t = al_ntab_get(a, node->meta.name, &v->err);
    if (!t) {
        v->state = E_INFEASIBLE;
        v->reason = v->err.msg;
        return;
    }
    const char *q = al_quick_check(a, t, p->ss, p->nss, r);
    if (q) {
        v->state = E_INFEASIBLE;
        v->reason = q;
        return;
    }
    a->no_explain = true;
    de_rc rc = al_allocate(a, node->meta.name, p->pending, p->npending, ar, &v->o, &v->err);
    a->no_explain = false;
    if (rc != DE_OK) {
        v->state = rc == DE_EUNSAT || v->o.invalid_pools || rc == DE_EBUDGET ? E_INFEASIBLE : E_ERROR;
        if (v->o.invalid_pools)
            v->kreasons = AL_K8S_INVALID_POOLS;
        v->rc = rc;
        return;
    }
    al_nar nar;
    al_fit nf;
    rc = al_place_nar(a, p, DG_NONE, p->pending, &v->o, p->npending, node, ar, &nar, &nf, &v->err);
    if (rc != DE_OK) {
        v->state = E_ERROR;
        v->rc = rc;
        return;
    }
    if (nf.bit) {
        al_fit_text(&nf, buf, sizeof buf);
        v->state = E_INFEASIBLE;
        v->reason = de_arena_strdup(ar, buf);
        v->kreasons = de_arena_strdup(ar, nf.reasons);
        v->kres = !nf.unresolvable;
        return;
    }
    rc = al_score_node(a, p->podid, r, p->pending, p->npending, &v->o, ar, &v->ps, &v->err);
    if (rc != DE_OK) {
        v->state = E_ERROR;
        v->rc = rc;
        return;
    }
    v->state = E_FEASIBLE;
}

/* The best node evaluated by this pod, with its allocation (kept in the
 * pod's arena; the other evaluations are rewound). */
typedef struct mine {
    uint32_t rank;
    al_outcome o;
    uint32_t checked;
} mine;

static void ent_clear(al_allocator *a, stable *t, uint32_t r)
{
    ent *x = &t->e[r];
    if (x->hpos != NONE)
        heap_remove(t, r);
    if (x->state == E_ERROR)
        t->nerr--;
    if (x->reason < UNEXPLAINED)
        t->rcount[x->reason]--;
    if (x->kreason != NONE) {
        t->kcount[x->kreason]--;
        t->nres -= x->kres;
    }
    x->kreason = NONE;
    x->kres = false;
    saved_free(a->chooser, x);
    x->reason = NONE;
    x->state = E_UNKNOWN;
}

static void add_unexplained(stable *t, uint32_t r)
{
    if (t->nunexpl == t->capunexpl) {
        /* first drop the ranks explained or changed since, and repeats */
        uint64_t *seen = de_xcalloc(DE_BITS_WORDS(t->n ? t->n : 1), sizeof *seen);
        uint32_t m = 0;
        for (uint32_t i = 0; i < t->nunexpl; i++) {
            uint32_t x = t->unexpl[i];
            if (t->e[x].reason == UNEXPLAINED && !de_bit_get(seen, x)) {
                de_bit_set(seen, x);
                t->unexpl[m++] = x;
            }
        }
        free(seen);
        t->nunexpl = m;
        if (m * 2 >= t->capunexpl) {
            t->capunexpl = t->capunexpl ? t->capunexpl * 2 : 64;
            t->unexpl = de_xrealloc(t->unexpl, t->capunexpl * sizeof *t->unexpl);
        }
    }
    t->unexpl[t->nunexpl++] = r;
}

static void refresh(al_allocator *a, const al_podctx *p, stable *t, uint32_t r, de_arena *ar, mine *my)
{
    de_arena_mark m = de_arena_save(ar);
    nodeeval v;
    eval_node(a, p, r, ar, &v, &my->checked);
    a->stats.choice_evals++;
    /* a feasible node that stays feasible moves within the heap: with
     * bin-packing the previous winner, at the top, usually stays there,
     * where removing and re-inserting it walks the heap's height twice */
    uint32_t hpos = t->e[r].hpos;
    bool inplace = v.state == E_FEASIBLE && hpos != NONE;
    if (inplace)
        t->e[r].hpos = NONE;
    ent_clear(a, t, r);
    ent *x = &t->e[r];
    x->gen = a->ngen[r];
    x->state = v.state;
    switch (v.state) {
    case E_FILTERED:
    case E_INFEASIBLE:
        x->kreason = reason_ref(t, v.kreasons);
        t->kcount[x->kreason]++;
        x->kres = v.kres;
        t->nres += x->kres;
        if (v.reason) {
            x->reason = reason_ref(t, v.reason);
            t->rcount[x->reason]++;
        } else {
            x->reason = UNEXPLAINED;
            add_unexplained(t, r);
        }
        break;
    case E_ERROR:
        t->nerr++;
        break;
    default:
        x->k8s = v.o.k8s_score;
        x->ps = v.ps;
        x->total = (double)v.o.k8s_score + v.ps;
        if (inplace) {
            x->hpos = hpos;
            heap_up(t, hpos);
            heap_down(t, x->hpos);
        } else {
            heap_set(t, t->nheap++, r);
            heap_up(t, t->nheap - 1);
        }
        if (my->rank == NONE || better(t, r, my->rank)) {
            /* the one it displaces may win a later pod */
            if (my->rank != NONE)
                save(a, p, t, my->rank, &my->o);
            my->rank = r;
            my->o = v.o;
            return; /* keep its allocation */
        }
        save(a, p, t, r, &v.o);
    }
    de_arena_rewind(ar, m);
}

static void sync(al_allocator *a, const al_podctx *p, stable *t, de_arena *ar, mine *my)
{
    uint64_t end = a->clog_end;
    if (t->seen < a->clog_base)
        t->full = true;
    if (t->full) {
        for (uint32_t r = 0; r < t->n; r++)
            if (t->e[r].state == E_UNKNOWN || t->e[r].gen != a->ngen[r])
                refresh(a, p, t, r, ar, my);
        t->full = false;
    } else {
        for (uint64_t s = t->seen; s < end; s++) {
            uint32_t r = a->clog[s - a->clog_base];
            if (t->e[r].gen != a->ngen[r])
                refresh(a, p, t, r, ar, my);
        }
    }
    t->seen = end;
    if (a->clog_mark < end)
        a->clog_mark = end;
}

/* ---- choosing ---------------------------------------------------------------------------- */

static const char *summary(al_allocator *a, const al_podctx *p, stable *t, de_arena *ar)
{
    for (uint32_t i = 0; i < t->nunexpl; i++) {
        uint32_t r = t->unexpl[i];
        ent *x = &t->e[r];
        if (x->reason != UNEXPLAINED)
            continue;
        de_arena_mark m = de_arena_save(ar);
        de_err ne;
        de_err_clear(&ne);
        al_outcome o;
        a->explain_marks = true;
        al_allocate(a, al_node_at(a, r)->meta.name, p->pending, p->npending, ar, &o, &ne);
        a->explain_marks = false;
        x->reason = reason_ref(t, o.why.summary ? o.why.summary : ne.msg);
        t->rcount[x->reason]++;
        de_arena_rewind(ar, m);
    }
    t->nunexpl = 0;
    al_reasons rs = {0};
    de_map_init(&rs.idx);
    for (uint32_t i = 0; i < t->nr; i++)
        if (t->rcount[i])
            al_reason_addn(&rs, unmark(a, p, t->rtext[i], ar), t->rcount[i]);
    const char *s = al_reasons_summary(&rs, ar, a->nnodes);
    al_reasons_free(&rs);
    return s;
}

/* kube-scheduler's message: upstream's reasons of every node, kept per
 * table as the human ones are. */
static const char *k8s_summary(al_allocator *a, const al_podctx *p, stable *t, de_arena *ar)
{
    al_reasons ks = {0};
    de_map_init(&ks.idx);
    for (uint32_t i = 0; i < t->nr; i++)
        if (t->kcount[i])
            al_kreason_add(&ks, t->rtext[i], t->kcount[i]);
    const char *s = al_k8s_message(&ks, ar, a->nnodes, t->nres, p->pod->preempt_never);
    al_reasons_free(&ks);
    return s;
}

static void chooser_get(al_allocator *a)
{
    if (!a->chooser) {
        a->chooser = de_xcalloc(1, sizeof *a->chooser);
        de_map_init(&a->chooser->by_hash);
    }
}

uint64_t al_choice_sig(al_allocator *a, const al_podctx *p, const uint32_t **sig, uint32_t *nsig)
{
    chooser_get(a); /* from here on al_node_changed keeps the generations */
    al_sig_build(a, p, &a->chooser->sig);
    *sig = a->chooser->sig.w;
    *nsig = a->chooser->sig.n;
    return al_sig_hash(a->chooser->sig.w, a->chooser->sig.n);
}

de_rc al_choose(al_allocator *a, const al_podctx *p, de_arena *ar, al_choice *ch, de_err *e)
{
    memset(ch, 0, sizeof *ch);
    ch->rank = NONE;
    chooser_get(a);
    a->stats.choice_pods++;
    log_trim(a);
    al_sig_build(a, p, &a->chooser->sig);
    stable *t = st_get(a);
    t->used = ++a->chooser->tick;
    if (t->epoch != a->epoch || t->order_gen != a->order_gen || t->choice_gen != a->choice_gen ||
        t->n != a->nnodes)
        st_reset(a, t);
    mine my = {.rank = NONE};
    for (int attempt = 0;; attempt++) {
        my.rank = NONE;
        sync(a, p, t, ar, &my);
        if (t->nerr) {
            /* the first node in order with an error aborts the pod: raise
             * it again for this pod's claims (the message names them) */
            uint32_t r = 0;
            while (t->e[r].state != E_ERROR)
                r++;
            nodeeval v;
            uint32_t unused = 0;
            eval_node(a, p, r, ar, &v, &unused);
            if (v.state == E_ERROR) {
                *e = v.err;
                return v.rc;
            }
            /* the state moved under a cached entry: impossible unless an
             * event was missed; evaluate it again and choose again */
            t->e[r].gen = ~0ull;
        } else if (!t->nheap) {
            ch->why = summary(a, p, t, ar);
            ch->k8s_why = k8s_summary(a, p, t, ar);
            ch->checked = my.checked;
            return DE_EUNSAT;
        } else {
            uint32_t r = t->heap[0];
            if (my.rank != NONE && r != my.rank)
                save(a, p, t, my.rank, &my.o); /* it lost this pod; it may win a later one */
            if (r == my.rank) {
                ch->o = my.o;
                a->stats.choice_reused++;
            } else if (t->e[r].sv) {
                al_saved_restore(a, t->e[r].sv, p->pending, t->e[r].k8s, ar, &ch->o);
                a->stats.choice_saved++;
            } else {
                de_err ne;
                de_err_clear(&ne);
                a->no_explain = true;
                de_rc rc = al_allocate(a, al_node_at(a, r)->meta.name, p->pending, p->npending, ar, &ch->o, &ne);
                a->no_explain = false;
                if (rc != DE_OK) {
                    t->e[r].gen = ~0ull;
                    if (attempt < 2) {
                        t->full = true;
                        continue;
                    }
                    *e = ne;
                    return de_errf(e, DE_EINTERNAL, "node choice cache: node %s was feasible and is not: %s",
                                   al_str(a, al_node_at(a, r)->meta.name), ne.msg);
                }
            }
            ch->rank = r;
            ch->k8s = t->e[r].k8s;
            ch->policy = t->e[r].ps;
            ch->feasible = t->nheap;
            ch->checked = my.checked;
            return DE_OK;
        }
        if (attempt >= 2)
            return de_errf(e, DE_EINTERNAL, "node choice cache: an error entry did not reproduce");
        t->full = true;
    }
}
