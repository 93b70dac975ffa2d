/*
 * al_place.c - scheduling one pod: what kube-scheduler's DynamicResources
 * plugin (with NodeName, NodeUnschedulable, TaintToleration and NodeAffinity)
 * decides for it, deterministically.
 *
 *  1. Resolve the pod's claims (resourceClaimName, or the claim generated for
 *     resourceClaimTemplateName - from pod.status.resourceClaimStatuses, or
 *     instantiated with dg_claim_from_template as the claim controller does).
 *  2. Filter the nodes in canonical (name) order: pod.spec.nodeName, node
 *     unschedulable, nodeSelector / required node affinity, node taints the
 *     pod does not tolerate, node selectors of claims already allocated, and
 *     finally Allocate() of the pending claims on the node.
 *  3. Score feasible nodes: upstream's firstAvailable score (8 - chosen index
 *     per firstAvailable request) plus the policy score hook.  The best total
 *     wins; ties go to the first node in name order.  Without a score hook the
 *     first feasible node reaching the maximum possible firstAvailable score
 *     wins at once, so most pods look at one node.  With one, al_choose.c
 *     gives the same answer from per-node outcomes cached per claim set
 *     signature, re-evaluating only nodes whose state changed; the loop
 *     below stays the reference (al_set_choice_cache(a, false)) and serves
 *     the pods that path does not take (an extended resource claim, nothing
 *     pending, a claim the policies refuse).
 *  4. Commit: dg_claim_set_allocation + a reservation for the pod, and the
 *     node table's used bits are updated in place.
 *
 * Node index: per (class, selectors) a bitset over nodes in canonical order
 * with 1 = "may have a free candidate".  A node whose table shows no free
 * candidate clears its bit; the bit comes back when a device of that node's
 * table is freed or the table is invalidated (al_core.c: al_mf_set_node),
 * and every bit when the class or the node order changes.  A pod therefore
 * skips full nodes without touching them.
 */
#include "al_int.h"
#include "../base/buf.h"

#include <stdio.h>
#include <stdlib.h>

/* ---- canonical node order --------------------------------------------------------- */

static int cmp_names(const void *x, const void *y, void *ctx)
{
    al_allocator *a = ctx;
    return de_intern_cmp(a->in, *(const uint32_t *)x, *(const uint32_t *)y);
}

/* Nodes in canonical (name) order.  Offline inputs often carry no Node
 * objects; then the node names the slices mention (spec.nodeName and
 * per-device nodeName) stand in for label-less nodes, so pods can still be
 * placed. */
void al_node_order(al_allocator *a)
{
    if (!a->order_dirty && a->order_epoch == a->epoch && a->node_order)
        return;
    uint32_t lim = dg_node_id_limit(a->g);
    /* the maps and arrays were sized when the nodes came (al_order_reserve):
     * the first pod does not grow them */
    al_order_reserve(a, lim);
    de_map *seen = &a->order_seen;
    de_map_clear(seen);
    uint32_t cap = a->capnames, n = 0;
    uint32_t *names = a->node_names;
    for (uint32_t i = 0; i < lim; i++) {
        const dg_node *nd = dg_node_get(a->g, i);
        if (nd && !de_map_get(seen, nd->meta.name, NULL)) {
            de_map_put(seen, nd->meta.name, i);
            names[n++] = nd->meta.name;
        }
    }
    bool stubs = n == 0;
    if (stubs) {
        for (uint32_t k = 0, lims = dg_slice_id_limit(a->g); k < lims; k++) {
            const dg_slice *s = dg_slice_get(a->g, k);
            if (!s)
                continue;
            for (uint32_t d = 0; d <= s->ndevices; d++) {
                uint32_t nn = d == 0 ? (s->ns_mode == DG_NS_NODE_NAME ? s->node_name : 0)
                                     : (s->devices[d - 1].ns_mode == DG_NS_NODE_NAME ? s->devices[d - 1].node_name : 0);
                if (!nn || de_map_get(seen, nn, NULL))
                    continue;
                de_map_put(seen, nn, DG_NONE);
                if (n == cap) {
                    cap *= 2;
                    names = de_xrealloc(names, cap * sizeof *names);
                }
                names[n++] = nn;
            }
        }
    }
    qsort_r(names, n, sizeof *names, cmp_names, a);
    free(a->node_stub);
    a->node_names = names;
    if (cap > a->capnames) {
        a->node_order = de_xrealloc(a->node_order, cap * sizeof *a->node_order);
        a->capnames = cap;
    }
    a->node_stub = stubs ? de_xcalloc(n ? n : 1, sizeof *a->node_stub) : NULL;
    a->nnodes = n;
    de_map_clear(&a->node_rank);
    de_map_clear(&a->rank_by_name);
    for (uint32_t i = 0; i < n; i++) {
        uint64_t id = DG_NONE;
        de_map_get(seen, names[i], &id);
        a->node_order[i] = stubs ? DG_NONE : (uint32_t)id;
        if (stubs)
            a->node_stub[i].meta.name = names[i];
        else
            de_map_put(&a->node_rank, a->node_order[i], i);
        de_map_put(&a->rank_by_name, names[i], i + 1);
    }
    a->order_epoch = a->epoch;
    a->order_dirty = false;
    a->order_gen++;
    al_choice_order(a);
}

void al_order_reserve(al_allocator *a, uint32_t nodes)
{
    if (nodes <= a->capnames && a->node_names)
        return;
    uint32_t cap = nodes > a->capnames ? al_grow_cap(a->capnames, nodes) : a->capnames;
    if (!cap)
        cap = 1;
    uint32_t old = a->node_names ? a->capnames : 0;
    a->node_names = de_xrealloc(a->node_names, cap * sizeof *a->node_names);
    a->node_order = de_xrealloc(a->node_order, cap * sizeof *a->node_order);
    /* touched now; what a current order holds stays */
    memset(a->node_names + old, 0, (cap - old) * sizeof *a->node_names);
    memset(a->node_order + old, 0, (cap - old) * sizeof *a->node_order);
    a->capnames = cap;
    de_map_reserve(&a->order_seen, cap);
    de_map_reserve(&a->node_rank, cap);
    de_map_reserve(&a->rank_by_name, cap);
}

const dg_node *al_node_at(al_allocator *a, uint32_t rank)
{
    return a->node_stub ? &a->node_stub[rank] : dg_node_get(a->g, a->node_order[rank]);
}

uint64_t *al_maybe_free(al_allocator *a, al_selset *s)
{
    uint32_t nw = DE_BITS_WORDS(a->nnodes ? a->nnodes : 1);
    if (!s->maybe_free || s->mf_order != a->order_gen) {
        if (s->mf_cap < nw) {
            free(s->maybe_free);
            s->maybe_free = de_xmalloc(nw * sizeof(uint64_t));
            s->mf_cap = nw;
        }
        memset(s->maybe_free, 0xff, nw * sizeof(uint64_t));
        s->mf_low = 0;
        s->mf_order = a->order_gen;
    }
    return s->maybe_free;
}

/* The first decision that used a class's index malloc'ed it, and a malloc
 * inside a decision can take a page the heap never touched. */
void al_maybe_free_reserve(al_allocator *a, al_selset *s)
{
    uint32_t nw = DE_BITS_WORDS(a->nnodes ? a->nnodes : 1);
    if (s->mf_cap >= nw)
        return;
    free(s->maybe_free);
    s->maybe_free = de_xmalloc(nw * sizeof(uint64_t));
    memset(s->maybe_free, 0, nw * sizeof(uint64_t)); /* touched */
    s->mf_cap = nw;
    s->mf_order = UINT64_MAX;
}

/* ---- pod-level filters ------------------------------------------------------------ */

const char *al_pod_filter(al_allocator *a, const al_podctx *p, const dg_node *node, al_fit *f, char *buf,
                          size_t cap)
{
    if (!al_node_fit(a, p->pod, p->req, p->nreq, node, f)) {
        if (al_node_matches_allocated(a, p->claims, p->nclaims, node))
            return NULL;
        f->bit = AL_FIT_CLAIM_NODE;
        f->unresolvable = true;
        snprintf(f->reasons, sizeof f->reasons, "%s", "resourceclaim not available on the node");
        return "node(s) didn't match the node selector of an allocated claim";
    }
    al_fit_text(f, buf, cap);
    return buf;
}

/* KEP-5517 after Allocate on one node: the pod's claims (with `ext`, a
 * KEP-5004 claim, when not DG_NONE), the n pending ones allocated as in o. */
de_rc al_place_nar(al_allocator *a, const al_podctx *p, uint32_t ext, const uint32_t *pending,
                   const al_outcome *o, uint32_t n, const dg_node *node, de_arena *ar, al_nar *out, al_fit *f,
                   de_err *e)
{
    if (!a->opts.gates.on[DE_GATE_NODE_ALLOCATABLE_RESOURCES]) {
        memset(out, 0, sizeof *out);
        /* "fits": the reasons buffer (512 bytes) is read only after a failure */
        f->bit = 0;
        f->unresolvable = false;
        f->reasons[0] = 0;
        return DE_OK;
    }
    uint32_t *claims = AL_NEW(ar, uint32_t, p->nclaims + 1), nc = p->nclaims;
    memcpy(claims, p->claims, p->nclaims * sizeof *claims);
    if (ext != DG_NONE)
        claims[nc++] = ext;
    al_nar_pod np = {p->pod, p->podid, claims, nc, pending, o ? o->claims : NULL, o ? n : 0, p->req, p->nreq};
    return al_nar_fit(a, &np, node, ar, out, f, e);
}

/* ---- reasons ------------------------------------------------------------------------- */


void al_reason_addn(al_reasons *r, const char *s, uint32_t n)
{
    uint64_t h = de_hash_bytes(s, strlen(s)), v;
    if (de_map_get(&r->idx, h, &v)) {
        r->count[v - 1] += n;
        return;
    }
    if (r->n == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 8;
        r->text = de_xrealloc(r->text, r->cap * sizeof *r->text);
        r->count = de_xrealloc(r->count, r->cap * sizeof *r->count);
    }
    r->text[r->n] = de_xstrdup(s);
    r->count[r->n] = n;
    de_map_put(&r->idx, h, ++r->n);
}

const char *al_reasons_summary(al_reasons *r, de_arena *ar, uint32_t nnodes)
{
    de_buf b;
    de_buf_init(&b, 16384);
    if (!nnodes)
        de_buf_puts(&b, "no nodes in the input");
    else
        de_buf_printf(&b, "0/%u nodes are available", nnodes);
    /* top reasons by count (ties by text), at most 3 */
    bool *used = de_xcalloc(r->n ? r->n : 1, 1);
    for (int k = 0; k < 3; k++) {
        int best = -1;
        for (uint32_t i = 0; i < r->n; i++) {
            if (used[i])
                continue;
            if (best < 0 || r->count[i] > r->count[best] ||
                (r->count[i] == r->count[best] && strcmp(r->text[i], r->text[best]) < 0))
                best = (int)i;
        }
        if (best < 0)
            break;
        used[best] = true;
        de_buf_printf(&b, "%s %u x %s", k ? ";" : ":", r->count[best], r->text[best]);
    }
    uint32_t rest = 0;
    for (uint32_t i = 0; i < r->n; i++)
        if (!used[i])
            rest += r->count[i];
    if (rest)
        de_buf_printf(&b, "; %u node(s) for other reasons", rest);
    free(used);
    const char *s = de_arena_strdup(ar, de_buf_str(&b));
    de_buf_free(&b);
    return s;
}

/* Upstream's reasons of one node (one per line), each counted once more. */
void al_kreason_add(al_reasons *k, const char *lines, uint32_t n)
{
    char line[512];
    while (*lines) {
        const char *nl = strchr(lines, '\n');
        size_t len = nl ? (size_t)(nl - lines) : strlen(lines);
        /* snprintf("%.*s") without the formatting: cut to the buffer */
        size_t m = len < sizeof line - 1 ? len : sizeof line - 1;
        memcpy(line, lines, m);
        line[m] = 0;
        al_reason_addn(k, line, n);
        lines += len + (nl ? 1 : 0);
    }
}

static int cmp_cstr(const void *x, const void *y)
{
    return strcmp(*(char *const *)x, *(char *const *)y);
}

/* "<count> <reason>" per reason, sorted as strings (Go's sort.Strings),
 * ", "-joined, then "." - kube-scheduler's histogram. */
static void histogram(de_buf *b, char **items, uint32_t n)
{
    qsort(items, n, sizeof *items, cmp_cstr);
    for (uint32_t i = 0; i < n; i++)
        de_buf_printf(b, "%s%s", i ? ", " : " ", items[i]);
    if (n)
        de_buf_puts(b, ".");
}

const char *al_k8s_message(const al_reasons *k, de_arena *ar, uint32_t nnodes, uint32_t resolvable,
                           bool preempt_never)
{
    de_buf b;
    de_buf_init(&b, 1u << 20);
    de_buf_printf(&b, "0/%u nodes are available:", nnodes);
    char **items = de_xcalloc(k->n + 2, sizeof *items);
    for (uint32_t i = 0; i < k->n; i++)
        items[i] = de_arena_printf(ar, "%u %s", k->count[i], k->text[i]);
    histogram(&b, items, k->n);
    /* DefaultPreemption's PostFilter: draengine never preempts; a node
     * that failed only on resources would need lower-priority victims */
    if (preempt_never) {
        de_buf_puts(&b, " preemption: not eligible due to preemptionPolicy=Never.");
    } else {
        de_buf_printf(&b, " preemption: 0/%u nodes are available:", nnodes);
        uint32_t m = 0;
        if (resolvable)
            items[m++] = de_arena_printf(ar, "%u No preemption victims found for incoming pod", resolvable);
        if (nnodes > resolvable)
            items[m++] = de_arena_printf(ar, "%u Preemption is not helpful for scheduling", nnodes - resolvable);
        histogram(&b, items, m);
    }
    free(items);
    const char *out = de_arena_strdup(ar, de_buf_str(&b));
    de_buf_free(&b);
    return out;
}

void al_reasons_free(al_reasons *r)
{
    if (!r->cap && !r->idx.cap)
        return;
    for (uint32_t i = 0; i < r->n; i++)
        free(r->text[i]);
    free(r->text);
    free(r->count);
    de_map_destroy(&r->idx);
}

/* ---- claims of the pod ------------------------------------------------------------------ */

static de_rc resolve_claims(al_allocator *a, const dg_pod *pod, uint32_t podid, de_arena *ar,
                            al_pod_outcome *out, const char **why, de_err *e)
{
    /* one more slot: the claim for extended resources, if any */
    out->nclaims = pod->nclaims;
    out->allocs = AL_NEW(ar, al_claim_alloc, pod->nclaims + 1);
    out->claims = AL_NEW(ar, uint32_t, pod->nclaims + 1);
    out->allocated_now = AL_NEW(ar, bool, 2 * (pod->nclaims + 1));
    out->group = out->allocated_now + pod->nclaims + 1;
    /* KEP-5729: the PodGroup whose claims the pod may share (al_podgroup.c) */
    json_t *pg = NULL;
    if (a->opts.gates.on[DE_GATE_WORKLOAD_RESOURCE_CLAIMS] && pod->nclaims) {
        const char *gn = al_pod_group_name(a->g, podid);
        pg = gn ? al_podgroup_find(a->g, a->podgroups, podid) : NULL;
        if (gn && !pg) {
            *why = de_arena_printf(ar, "podgroup.scheduling.k8s.io \"%s\" not found", gn);
            return DE_EUNSAT;
        }
    }
    for (uint32_t i = 0; i < pod->nclaims; i++) {
        const dg_pod_claim_ref *ref = &pod->claims[i];
        uint32_t id = DG_NONE;
        out->group[i] = al_podgroup_shares(a->g, pg, pod, i);
        if (ref->claim_name) {
            id = dg_claim_find(a->g, pod->meta.ns, ref->claim_name);
            if (id == DG_NONE) {
                *why = de_arena_printf(ar, "resourceclaim \"%s\" not found", al_str(a, ref->claim_name));
                return DE_EUNSAT;
            }
        } else if (ref->template_name && out->group[i]) {
            /* the group's claim: the one its status names, else the one
             * the claim controller makes for the group */
            uint32_t cn = al_podgroup_claim_name(a->g, pg, ref->name);
            id = cn ? dg_claim_find(a->g, pod->meta.ns, cn) : DG_NONE;
            if (id == DG_NONE) {
                json_t *av = json_object_get(pg, "apiVersion");
                const char *gn = al_pod_group_name(a->g, podid);
                de_err te;
                de_err_clear(&te);
                de_rc rc = dg_claim_from_template_for_group(a->g, podid, i,
                                                            json_is_string(av) ? json_string_value(av)
                                                                               : "scheduling.k8s.io/v1beta1",
                                                            gn, al_podgroup_uid(pg), &id, &te);
                if (rc == DE_ENOTFOUND) {
                    *why = de_arena_printf(ar, "%s", te.msg);
                    return DE_EUNSAT;
                }
                if (rc != DE_OK) {
                    *e = te;
                    return rc;
                }
            }
        } else if (ref->template_name) {
            for (uint32_t k = 0; k < pod->nclaim_statuses; k++)
                if (pod->claim_statuses[k].name == ref->name && pod->claim_statuses[k].claim_name)
                    id = dg_claim_find(a->g, pod->meta.ns, pod->claim_statuses[k].claim_name);
            if (id == DG_NONE) {
                de_err te;
                de_err_clear(&te);
                de_rc rc = dg_claim_from_template(a->g, podid, i, &id, &te);
                if (rc == DE_ENOTFOUND) {
                    *why = de_arena_printf(ar, "%s", te.msg);
                    return DE_EUNSAT;
                }
                if (rc != DE_OK) {
                    *e = te;
                    return rc;
                }
            }
        }
        out->claims[i] = id;
    }
    if (pg) {
        out->group_name = de_arena_strdup(ar, al_pod_group_name(a->g, podid));
        out->group_uid = de_arena_strdup(ar, al_podgroup_uid(pg));
    }
    return DE_OK;
}

/* ---- commit ---------------------------------------------------------------------------- */

/* The graph listener (al_core.c) flips the used bits of the devices. */
static de_rc commit(al_allocator *a, const dg_pod *pod, al_pod_outcome *out, const uint32_t *pending,
                    uint32_t npending, const al_outcome *res, de_err *e)
{
    for (uint32_t i = 0; i < npending; i++)
        DE_TRY(dg_claim_set_allocation(a->g, pending[i], &res->claims[i].alloc, e));
    dg_consumer pod_cons = {.api_group = 0, .resource = al_id_pods(a), .name = pod->meta.name,
                            .uid = pod->meta.uid};
    for (uint32_t i = 0; i < out->nclaims; i++) {
        if (out->claims[i] == DG_NONE)
            continue;
        /* a claim shared through the PodGroup is reserved for the group, once */
        dg_consumer cons = pod_cons;
        if (out->group && out->group[i] && out->group_name)
            cons = (dg_consumer){al_intern(a, "scheduling.k8s.io"), al_intern(a, "podgroups"),
                                 al_intern(a, out->group_name), al_intern(a, out->group_uid)};
        const dg_claim *cl = dg_claim_get(a->g, out->claims[i]);
        bool have = false;
        for (uint32_t k = 0; cl && k < cl->nreserved_for && !have; k++)
            have = cl->reserved_for[k].name == cons.name && cl->reserved_for[k].resource == cons.resource &&
                   (!cons.uid || cl->reserved_for[k].uid == cons.uid);
        if (!have)
            DE_TRY(dg_claim_add_reservation(a->g, out->claims[i], &cons, e));
    }
    return DE_OK;
}

/* ---- scheduling ------------------------------------------------------------------------- */

/* The chosen node: fill the outcome and commit. */
static de_rc place(al_allocator *a, const al_podctx *pc, al_pod_outcome *out, uint32_t *pending,
                   const uint32_t *pidx, uint32_t npending, uint32_t rank, const al_outcome *best,
                   int64_t k8s, double policy, de_arena *ar, de_err *e)
{
    const dg_pod *pod = pc->pod;
    uint32_t podid = pc->podid;
    const dg_node *node = al_node_at(a, rank);
    /* what the devices take from the node (KEP-5517), before the claims
     * are committed: the same computation the filter made */
    al_nar *nar = AL_NEW(ar, al_nar, 1);
    al_fit nf;
    al_podctx pc2 = *pc;
    pc2.claims = out->claims;
    pc2.nclaims = pod->nclaims;
    DE_TRY(al_place_nar(a, &pc2, out->nclaims > pod->nclaims ? out->claims[out->nclaims - 1] : DG_NONE, pending,
                        best, npending, node, ar, nar, &nf, e));
    out->nar = nar->n ? nar : NULL;
    out->node = a->node_order[rank];
    out->node_name = node->meta.name;
    out->k8s_score = k8s;
    out->policy_score = policy;
    for (uint32_t i = 0; i < npending; i++) {
        out->allocated_now[pidx[i]] = true;
        out->allocs[pidx[i]] = best->claims[i];
    }
    if (npending || out->nclaims)
        DE_TRY(commit(a, pod, out, pending, npending, best, e));
    /* the pod now takes its requests from the node (NodeResourcesFit of
     * the next pods); the graph never shows it bound offline */
    al_pod_assume_req(a, podid, node->meta.name, out->nar, pc->req, pc->nreq);
    return DE_OK;
}

bool al_all_admitted(al_allocator *a, const uint32_t *claims, uint32_t n)
{
    for (uint32_t i = 0; a->has_hooks && a->hooks.admit && i < n; i++) {
        de_err why;
        de_err_clear(&why);
        if (a->hooks.admit(a->hooks.ctx, a->g, claims[i], &why) != DE_OK)
            return false;
    }
    return true;
}

/* A node where Allocate failed; its explanation is computed only when the
 * pod turns out unschedulable (al_explain formats text, and most pods fit
 * somewhere).  The state the search saw is the same then: nothing is
 * committed while one pod is being placed. */
typedef struct failure {
    uint32_t rank;
    uint32_t ext;   /* the extended resource claim used there, DG_NONE if none */
    uint32_t nuse;  /* claims allocated together */
} failure;

bool al_node_matches_allocated(al_allocator *a, const uint32_t *claims, uint32_t n,
                                   const dg_node *node)
{
    for (uint32_t i = 0; i < n; i++) {
        const dg_claim *cl = claims[i] == DG_NONE ? NULL : dg_claim_get(a->g, claims[i]);
        if (!cl || !cl->allocated)
            continue;
        /* devices whose binding failed or timed out (KEP-5007): PostFilter
         * may then deallocate the claim */
        if (al_claim_has_binding_conditions(a, cl)) {
            int st = al_binding_state(a, cl, a->now, NULL, 0);
            if (st == AL_BIND_FAILED || st == AL_BIND_TIMEOUT)
                return false;
        }
        /* devices allocated with skipNodeOperations need a node that
         * declares DRAOptionalNodeOperations (KEP-5945) */
        for (uint32_t k = 0; k < cl->allocation.nresults; k++)
            if (cl->allocation.results[k].nskip_node_ops && !al_node_declares(a, node, a->s_optional_ops))
                return false;
        if (!cl->allocation.has_node_selector)
            continue;
        bool m = false;
        de_err e;
        de_err_clear(&e);
        if (dg_nodesel_match(a->g, &cl->allocation.node_selector, node->meta.name, node->meta.labels,
                             node->meta.nlabels, &m, &e) != DE_OK || !m)
            return false;
    }
    return true;
}

/* Why a request has no free candidate on a node, in the terms a user acts
 * on: every match is in use (the usual case: the words stay the same on
 * every such node, so the summary counts them together), or nothing of the
 * class is there, or the class is there and the request's selectors refuse
 * it all - then a policy that failed on those devices is named, since its
 * missing derived attributes are the likely cause. */
/* x y z in the arena, as de_arena_printf("%s%s%s") makes it (a node
 * turned down costs one: printf was most of the cost of saying why) */
static const char *cat3(de_arena *ar, const char *x, const char *y, const char *z)
{
    size_t nx = strlen(x), ny = strlen(y), nz = strlen(z);
    char *p = de_arena_alloc(ar, nx + ny + nz + 1);
    if (!p)
        return NULL;
    memcpy(p, x, nx);
    memcpy(p + nx, y, ny);
    memcpy(p + nx + ny, z, nz);
    p[nx + ny + nz] = 0;
    return p;
}

static const char *no_candidate(al_allocator *a, const al_ntab *t, const al_cset *cs)
{
    const char *cls = al_str(a, cs->ss->class_name);
    if (cs->ncand)
        return cat3(a->scratch, "no free device of class ", cls, "");
    uint32_t nclass = 0, nfacts = 0, first = UINT32_MAX;
    for (uint32_t w = 0; w < t->nwords; w++) {
        nclass += (uint32_t)__builtin_popcountll(cs->clsok[w]);
        uint64_t f = cs->clsok[w] & cs->nofacts[w];
        nfacts += (uint32_t)__builtin_popcountll(f);
        if (f && first == UINT32_MAX)
            first = w * 64 + (uint32_t)__builtin_ctzll(f);
    }
    if (!nclass)
        return cat3(a->scratch, "no device of class ", cls, " on the node");
    const char *pol = first != UINT32_MAX && a->hooks.facts_failed
                          ? a->hooks.facts_failed(a->hooks.ctx, a->g, t->devs[first].devid)
                          : NULL;
    if (pol)
        return de_arena_printf(a->scratch,
                               "none of the %u device%s of class %s matches the request's selectors: policy %s "
                               "failed on %u of them (their derived attributes are missing)",
                               nclass, nclass == 1 ? "" : "s", cls, pol, nfacts);
    return de_arena_printf(a->scratch, "none of the %u device%s of class %s matches the request's selectors", nclass,
                           nclass == 1 ? "" : "s", cls);
}

/* Quick DRA pre-check on a node table: every non-firstAvailable request of
 * the pending claims has at least one free candidate.  Clears the node's bit
 * in the selector set index when it has none. */
static al_cset *quick_failed(al_allocator *a, al_ntab *t, al_selset **ss, uint32_t nss, uint32_t rank)
{
    for (uint32_t i = 0; i < nss; i++) {
        al_cset *cs = al_cset_get(a, t, ss[i]);
        bool any = false;
        for (uint32_t w = 0; w < t->nwords && !any; w++)
            any = (cs->cand[w] & ~t->inuse[w]) || cs->poison[w];
        if (!any) {
            uint64_t *mf = al_maybe_free(a, ss[i]);
            de_bit_clr(mf, rank);
            uint32_t nw = DE_BITS_WORDS(a->nnodes ? a->nnodes : 1);
            while (ss[i]->mf_low < nw && !mf[ss[i]->mf_low])
                ss[i]->mf_low++;
            return cs;
        }
    }
    return NULL;
}

const char *al_quick_check(al_allocator *a, al_ntab *t, al_selset **ss, uint32_t nss, uint32_t rank)
{
    al_cset *cs = quick_failed(a, t, ss, nss, rank);
    return cs ? no_candidate(a, t, cs) : NULL;
}

bool al_quick_fails(al_allocator *a, al_ntab *t, al_selset **ss, uint32_t nss, uint32_t rank)
{
    return quick_failed(a, t, ss, nss, rank) != NULL;
}

static de_rc schedule_resolved(al_allocator *a, const dg_pod *pod, uint32_t podid, de_arena *ar,
                               al_pod_outcome *out, de_err *e);

de_rc al_schedule_pod(al_allocator *a, uint32_t podid, de_arena *ar, al_pod_outcome *out, de_err *e)
{
    memset(out, 0, sizeof *out);
    out->pod = podid;
    out->node = DG_NONE;
    al_sync(a);
    const dg_pod *pod = dg_pod_get(a->g, podid);
    if (!pod)
        return de_errf(e, DE_ENOTFOUND, "pod #%u does not exist", podid);
    const char *why = NULL;
    uint64_t gen = dg_generation(a->g);
    de_rc rc = resolve_claims(a, pod, podid, ar, out, &why, e);
    if (rc == DE_EUNSAT) {
        out->why = why;
        return rc;
    }
    if (rc != DE_OK)
        return rc;
    /* a claim made from a template changes the graph; otherwise the state
     * al_sync saw is still the state */
    if (dg_generation(a->g) != gen) {
        pod = dg_pod_get(a->g, podid);
        al_sync(a);
    }
    a->depth++;
    rc = schedule_resolved(a, pod, podid, ar, out, e);
    a->depth--;
    return rc;
}

/* al_schedule_pod once the pod's claims exist: selector sets and programs
 * are held from here on (a->depth keeps al_sync from emptying the caches). */
static de_rc schedule_req(al_allocator *a, const dg_pod *pod, uint32_t podid, de_arena *ar, al_pod_outcome *out,
                          const al_amount *req, uint32_t nreq, de_err *e);

static de_rc schedule_resolved(al_allocator *a, const dg_pod *pod, uint32_t podid, de_arena *ar,
                               al_pod_outcome *out, de_err *e)
{
    /* computed once (the filters read them, the pod's usage record copies
     * them), on the stack when they fit: a malloc in a decision can take a
     * fresh heap page */
    al_amount buf[16], *heap = NULL;
    uint32_t nreq = al_pod_requests_buf(pod, buf, 16);
    if (nreq == UINT32_MAX)
        nreq = al_pod_requests(pod, &heap);
    de_rc rc = schedule_req(a, pod, podid, ar, out, heap ? heap : buf, nreq, e);
    free(heap);
    return rc;
}

static de_rc schedule_req(al_allocator *a, const dg_pod *pod, uint32_t podid, de_arena *ar, al_pod_outcome *out,
                          const al_amount *req, uint32_t nreq, de_err *e)
{
    de_rc rc;
    /* extended resources backed by DRA: a per-node claim, allocated last */
    al_ext_res ext[AL_EXT_MAX];
    uint32_t next = al_ext_resources(a->g, &a->opts.gates, pod, ext, AL_EXT_MAX);
    uint64_t vmask[8];
    uint32_t vclaim[8], nvar = 0;
    /* pending claims and the selector sets of their plain requests */
    uint32_t *pending = AL_NEW(ar, uint32_t, 2 * (out->nclaims + 1)), npending = 0;
    uint32_t *pidx = pending + out->nclaims + 1;
    uint32_t nrq = 0;
    for (uint32_t i = 0; i < out->nclaims; i++) {
        const dg_claim *cl = out->claims[i] == DG_NONE ? NULL : dg_claim_get(a->g, out->claims[i]);
        nrq += cl && !cl->allocated ? cl->spec.nrequests : 0;
    }
    al_selset **ss = AL_NEW(ar, al_selset *, nrq);
    uint32_t nss = 0;
    int64_t max_score = 0;
    for (uint32_t i = 0; i < out->nclaims; i++) {
        const dg_claim *cl = out->claims[i] == DG_NONE ? NULL : dg_claim_get(a->g, out->claims[i]);
        if (!cl || cl->allocated)
            continue;
        pidx[npending] = i;
        pending[npending++] = out->claims[i];
        /* compiled before (al_ccache.c): the same sets the loop below finds
         * (it compiled, so every plain request has a class that exists, a
         * count and CEL selectors) */
        int64_t subs = 0;
        uint32_t nc = al_ccache_selsets(a, cl->spec.ident, ss + nss, &subs);
        if (nc != UINT32_MAX) {
            nss += nc;
            max_score += 8 * subs;
            continue;
        }
        for (uint32_t r = 0; r < cl->spec.nrequests; r++) {
            const dg_request *rq = &cl->spec.requests[r];
            if (rq->nsubs) {
                max_score += 8;
                continue;
            }
            if (!rq->has_exactly || !rq->exactly.class_name || rq->exactly.mode != DG_AMODE_EXACT_COUNT ||
                rq->exactly.admin_access == 1)
                continue;
            bool bad = false;
            for (uint32_t k = 0; k < rq->exactly.nselectors; k++)
                bad |= !rq->exactly.selectors[k].has_cel;
            if (bad || dg_class_find(a->g, rq->exactly.class_name) == DG_NONE)
                continue;
            ss[nss++] = al_selset_get(a, rq->exactly.class_name, rq->exactly.selectors, rq->exactly.nselectors);
        }
    }
    al_node_order(a);
    al_podctx pc = {.pod = pod, .podid = podid, .claims = out->claims, .nclaims = out->nclaims,
                    .pending = pending, .npending = npending, .ss = ss, .nss = nss, .req = req, .nreq = nreq};
    bool scoring = a->has_hooks && a->hooks.score;
    /* with a score hook: the cached choice (al_choose.c), unless the pod has
     * an extended resource claim (one per node shape) or nothing pending or
     * a claim the policies refuse (the loop below says why on every node) */
    if (scoring && !a->choice_off && !next && npending && al_all_admitted(a, pending, npending)) {
        al_choice ch;
        rc = al_choose(a, &pc, ar, &ch, e);
        out->nodes_feasible = ch.feasible;
        out->nodes_checked = ch.checked;
        if (rc == DE_EUNSAT) {
            out->why = ch.why;
            out->k8s_why = ch.k8s_why;
        }
        if (rc != DE_OK)
            return rc;
        return place(a, &pc, out, pending, pidx, npending, ch.rank, &ch.o, ch.k8s, ch.policy, ar, e);
    }
    al_reasons rs = {0}, ks = {0};
    /* their maps are empty: an all-zero de_map is one (de_map_init) */
    uint32_t resolvable = 0;
    uint32_t nw = DE_BITS_WORDS(a->nnodes ? a->nnodes : 1);
    uint64_t *cand = AL_NEW(ar, uint64_t, nw);
    /* nodes fill in order: start past the words every index has cleared */
    uint32_t low = 0;
    uint64_t **mf = AL_NEW(ar, uint64_t *, nss ? nss : 1);
    for (uint32_t i = 0; i < nss; i++) {
        mf[i] = al_maybe_free(a, ss[i]);
        if (ss[i]->mf_low > low)
            low = ss[i]->mf_low;
    }
    if (low > nw)
        low = nw;
    memset(cand + low, 0xff, (nw - low) * sizeof *cand);
    for (uint32_t i = 0; i < nss; i++)
        de_bits_and(cand + low, mf[i] + low, nw - low);
    failure *failed = NULL;
    uint32_t nfailed = 0, capfailed = 0;
    double best_total = 0;
    int64_t best_k8s = 0;
    double best_policy = 0;
    uint32_t best_rank = UINT32_MAX, best_nuse = 0, best_ext = DG_NONE;
    al_outcome best;
    memset(&best, 0, sizeof best);
    de_rc result = DE_OK;
    char fbuf[512];
    for (size_t r = de_bits_next(cand, a->nnodes, (size_t)low * 64); r < a->nnodes;
         r = de_bits_next(cand, a->nnodes, r + 1)) {
        const dg_node *node = al_node_at(a, (uint32_t)r);
        al_fit fit;
        if (al_pod_filter(a, &pc, node, &fit, fbuf, sizeof fbuf)) {
            de_bit_clr(cand, r); /* explained below if no node fits */
            continue;
        }
        out->nodes_checked++;
        uint32_t nuse = npending;
        if (next) {
            uint64_t mask = al_ext_node_mask(node, ext, next);
            if (mask) {
                uint32_t v = 0;
                while (v < nvar && vmask[v] != mask)
                    v++;
                if (v == nvar) {
                    if (nvar == 8) {
                        al_reason_addn(&rs, "too many different extended resource claims for one pod", 1);
                        al_kreason_add(&ks, AL_K8S_CANNOT_ALLOCATE, 1);
                        continue;
                    }
                    de_err ce;
                    de_err_clear(&ce);
                    rc = al_ext_claim(a, pod, ext, next, mask, &vclaim[nvar], &ce);
                    if (rc != DE_OK) {
                        *e = ce;
                        result = rc;
                        break;
                    }
                    vmask[nvar++] = mask;
                }
                pending[npending] = vclaim[v];
                nuse = npending + 1;
            }
        }
        if (!nuse) {
            /* nothing to allocate; the allocated claims' devices may still
             * take node resources (KEP-5517) */
            al_nar nar;
            de_err xe;
            de_err_clear(&xe);
            rc = al_place_nar(a, &pc, DG_NONE, pending, NULL, 0, node, ar, &nar, &fit, &xe);
            if (rc != DE_OK) {
                *e = xe;
                result = rc;
                break;
            }
            if (fit.bit) {
                al_fit_text(&fit, fbuf, sizeof fbuf);
                al_reason_addn(&rs, fbuf, 1);
                al_kreason_add(&ks, fit.reasons, 1);
                resolvable += !fit.unresolvable;
                continue;
            }
            out->nodes_feasible++;
            best_rank = (uint32_t)r;
            break;
        }
        de_err ne;
        de_err_clear(&ne);
        al_ntab *t = al_ntab_get(a, node->meta.name, &ne);
        if (!t || al_quick_fails(a, t, ss, nss, (uint32_t)r)) {
            de_bit_clr(cand, r); /* explained below if no node fits */
            continue;
        }
        de_arena_mark m = de_arena_save(ar);
        al_outcome o;
        a->no_explain = true;
        rc = al_allocate_tab(a, t, pending, nuse, ar, &o, &ne);
        a->no_explain = false;
        if (rc != DE_OK) {
            de_arena_rewind(ar, m);
            if (rc == DE_EUNSAT || o.invalid_pools || rc == DE_EBUDGET) {
                /* explained only if no node fits (the reasons are dropped otherwise) */
                if (nfailed == capfailed) {
                    capfailed = capfailed ? capfailed * 2 : 16;
                    failed = de_xrealloc(failed, capfailed * sizeof *failed);
                }
                failed[nfailed++] = (failure){(uint32_t)r, nuse > npending ? pending[npending] : DG_NONE, nuse};
                continue;
            }
            /* a hard error aborts the attempt for the pod, as upstream */
            *e = ne;
            result = rc;
            break;
        }
        {
            al_nar nar;
            rc = al_place_nar(a, &pc, nuse > npending ? pending[npending] : DG_NONE, pending, &o, nuse, node, ar,
                              &nar, &fit, &ne);
            if (rc != DE_OK) {
                *e = ne;
                result = rc;
                break;
            }
            if (fit.bit) {
                de_arena_rewind(ar, m);
                al_fit_text(&fit, fbuf, sizeof fbuf);
                al_reason_addn(&rs, fbuf, 1);
                al_kreason_add(&ks, fit.reasons, 1);
                resolvable += !fit.unresolvable;
                continue;
            }
        }
        out->nodes_feasible++;
        double ps = 0;
        if (scoring && (rc = al_score_node(a, podid, (uint32_t)r, pending, nuse, &o, ar, &ps, e)) != DE_OK) {
            result = rc;
            break;
        }
        double total = (double)o.k8s_score + ps;
        if (best_rank == UINT32_MAX || total > best_total) {
            best_rank = (uint32_t)r;
            best_nuse = nuse;
            best_ext = nuse > npending ? pending[npending] : DG_NONE;
            best_total = total;
            best_k8s = o.k8s_score;
            best_policy = ps;
            best = o;
        }
        if (!scoring && o.k8s_score >= max_score)
            break;
    }
    if (result == DE_OK && best_rank == UINT32_MAX)
        for (uint32_t i = 0; i < nfailed; i++) {
            const dg_node *node = al_node_at(a, failed[i].rank);
            if (failed[i].nuse > npending)
                pending[npending] = failed[i].ext;
            de_arena_mark m = de_arena_save(ar);
            de_err ne;
            de_err_clear(&ne);
            al_outcome o;
            al_allocate(a, node->meta.name, pending, failed[i].nuse, ar, &o, &ne);
            al_reason_addn(&rs, o.why.summary ? o.why.summary : ne.msg, 1);
            al_kreason_add(&ks, o.invalid_pools ? AL_K8S_INVALID_POOLS : AL_K8S_CANNOT_ALLOCATE, 1);
            de_arena_rewind(ar, m);
        }
    free(failed);
    /* drop the extended resource claims of nodes not chosen */
    for (uint32_t v = 0; v < nvar; v++) {
        if (result == DE_OK && best_rank != UINT32_MAX && vclaim[v] == best_ext)
            continue;
        const dg_claim *cl = dg_claim_get(a->g, vclaim[v]);
        if (cl) {
            de_err re;
            de_err_clear(&re);
            dg_remove(a->g, DG_KIND_RESOURCE_CLAIM, al_str(a, cl->meta.ns), al_str(a, cl->meta.name), &re);
        }
    }
    if (result != DE_OK) {
        al_reasons_free(&rs);
        al_reasons_free(&ks);
        return result;
    }
    if (best_rank == UINT32_MAX) {
        /* nodes the index skipped, and those the loop turned down before
         * Allocate: their reasons, found again only now (the state has not
         * changed since, and the counts do not depend on the order; a pod
         * that fits never pays for the words).  For a skipped node the index
         * only says some request has no free candidate there, so the quick
         * check fails; which request fails first must not depend on what
         * the index remembers. */
        de_err ne; /* f may point into its message past the branch below */
        for (uint32_t r = 0; r < a->nnodes; r++)
            if (!de_bit_get(cand, r)) {
                const dg_node *node = al_node_at(a, (uint32_t)r);
                al_fit fit;
                const char *f = al_pod_filter(a, &pc, node, &fit, fbuf, sizeof fbuf);
                if (f) {
                    al_kreason_add(&ks, fit.reasons, 1);
                    resolvable += !fit.unresolvable;
                } else {
                    al_kreason_add(&ks, AL_K8S_CANNOT_ALLOCATE, 1);
                    de_err_clear(&ne);
                    al_ntab *t = al_ntab_get(a, node->meta.name, &ne);
                    f = t ? al_quick_check(a, t, ss, nss, (uint32_t)r) : ne.msg;
                }
                al_reason_addn(&rs, f ? f : "no free device matching a request", 1);
            }
        out->why = al_reasons_summary(&rs, ar, a->nnodes);
        out->k8s_why = al_k8s_message(&ks, ar, a->nnodes, resolvable, pod->preempt_never);
        al_reasons_free(&rs);
        al_reasons_free(&ks);
        return DE_EUNSAT;
    }
    al_reasons_free(&rs);
    al_reasons_free(&ks);
    if (best_nuse > npending) {
        /* the extended resource claim joins the pod's claims, last */
        pending[npending] = best_ext;
        pidx[npending] = out->nclaims;
        out->claims[out->nclaims++] = best_ext;
        npending++;
    }
    return place(a, &pc, out, pending, pidx, npending, best_rank, &best, best_k8s, best_policy, ar, e);
}
