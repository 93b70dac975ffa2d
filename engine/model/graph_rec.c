/*
 * graph_rec.c - the records a decision writes into the graph: a claim's
 * allocation (one exact-size block), its reservedFor list and a pod's claim
 * statuses, all from the graph's slab (base/slab.h).
 *
 * A decision must not fault a page, so the room for these records is
 * reserved and touched before the decision: whenever a claim becomes
 * pending (created, or deallocated) the graph makes sure the slab holds
 * room for every pending claim's record, estimated from what the claim
 * asks for (dg_rec_pending).  Records of released claims go back
 * to the slab's free lists and are reused by the next allocation.
 */
#include "graph_int.h"

#include <string.h>

#define REC_RESERVE_MAX ((size_t)64 << 20) /* never reserve more room than this ahead */

static size_t al16(size_t n) { return (n + 15) & ~(size_t)15; }

/* ---- sizing: mirrors copy_allocation's allocations exactly ---------------------------- */

/* An empty array takes no room and is copied as NULL: every reader walks
 * an array by its count. */
static size_t arr_size(size_t elem, uint32_t n) { return al16(elem * n); }

/* what a result holds beside itself; most results hold nothing */
static bool result_has_lists(const dg_result *r)
{
    return (r->ntolerations | r->nbinding_conditions | r->nbinding_failure_conditions | r->nconsumed |
            r->nskip_node_ops) != 0;
}

static size_t result_lists_size(const dg_result *r)
{
    return arr_size(sizeof(dg_toleration), r->ntolerations) + arr_size(sizeof(uint32_t), r->nbinding_conditions) +
           arr_size(sizeof(uint32_t), r->nbinding_failure_conditions) + arr_size(sizeof(uint32_t), r->nskip_node_ops) +
           arr_size(sizeof(dg_consumed), r->nconsumed);
}

static size_t nodesel_size(const dg_nodesel *s)
{
    size_t b = arr_size(sizeof(dg_term), s->nterms);
    for (uint32_t i = 0; i < s->nterms; i++) {
        const dg_term *t = &s->terms[i];
        b += arr_size(sizeof(dg_requirement), t->nexprs) + arr_size(sizeof(dg_requirement), t->nfields);
        for (uint32_t j = 0; j < t->nexprs; j++)
            b += arr_size(sizeof(uint32_t), t->exprs[j].nvalues);
        for (uint32_t j = 0; j < t->nfields; j++)
            b += arr_size(sizeof(uint32_t), t->fields[j].nvalues);
    }
    return b;
}

static size_t allocation_size(const dg_allocation *a, bool pinned)
{
    /* the results array is never NULL, even empty */
    size_t b = al16(sizeof(dg_result) * (a->nresults ? a->nresults : 1));
    for (uint32_t i = 0; i < a->nresults; i++)
        if (result_has_lists(&a->results[i]))
            b += result_lists_size(&a->results[i]);
    b += arr_size(sizeof(dg_alloc_config), a->nconfig);
    for (uint32_t i = 0; i < a->nconfig; i++)
        b += arr_size(sizeof(uint32_t), a->config[i].nrequests);
    if (a->has_node_selector && !pinned)
        b += nodesel_size(&a->node_selector);
    return b;
}

/* ---- copying into one block ----------------------------------------------------------- */

typedef struct bump {
    unsigned char *p, *end;
} bump;

/* n bytes of the block (NULL for none), filled from src */
static void *copy(bump *b, const void *src, size_t n)
{
    if (!n)
        return NULL;
    void *p = b->p;
    b->p += al16(n);
    memcpy(p, src, n);
    return p;
}

static dg_requirement *copy_reqs(bump *b, const dg_requirement *src, uint32_t n)
{
    dg_requirement *r = copy(b, src, n * sizeof *src);
    for (uint32_t j = 0; j < n; j++)
        r[j].values = copy(b, src[j].values, src[j].nvalues * sizeof *src[j].values);
    return r;
}

static void copy_nodesel(bump *b, dg_nodesel *dst, const dg_nodesel *src)
{
    dst->nterms = src->nterms;
    dst->terms = copy(b, src->terms, src->nterms * sizeof *src->terms);
    for (uint32_t i = 0; i < src->nterms; i++) {
        dg_term *t = &dst->terms[i];
        t->exprs = copy_reqs(b, src->terms[i].exprs, t->nexprs);
        t->fields = copy_reqs(b, src->terms[i].fields, t->nfields);
    }
}

static void copy_result_lists(bump *b, dg_result *r, const dg_result *s)
{
    r->tolerations = copy(b, s->tolerations, s->ntolerations * sizeof *s->tolerations);
    r->binding_conditions = copy(b, s->binding_conditions, s->nbinding_conditions * sizeof(uint32_t));
    r->binding_failure_conditions =
        copy(b, s->binding_failure_conditions, s->nbinding_failure_conditions * sizeof(uint32_t));
    r->skip_node_ops = copy(b, s->skip_node_ops, s->nskip_node_ops * sizeof(uint32_t));
    r->consumed = copy(b, s->consumed, s->nconsumed * sizeof *s->consumed);
}

static void copy_allocation(bump *b, dg_allocation *dst, const dg_allocation *src, dg_pin *pin)
{
    *dst = *src;
    if (src->nresults) {
        dst->results = copy(b, src->results, src->nresults * sizeof *src->results);
    } else {
        dst->results = (dg_result *)b->p;
        memset(dst->results, 0, sizeof *dst->results);
        b->p += al16(sizeof *dst->results);
    }
    for (uint32_t i = 0; i < src->nresults; i++) {
        dg_result *r = &dst->results[i];
        if (result_has_lists(r)) {
            copy_result_lists(b, r, &src->results[i]);
        } else {
            /* pointers beside empty lists are not kept (the source's may
             * point into a claim spec or an arena) */
            r->tolerations = NULL;
            r->binding_conditions = r->binding_failure_conditions = r->skip_node_ops = NULL;
            r->consumed = NULL;
        }
    }
    dst->config = copy(b, src->config, src->nconfig * sizeof *src->config);
    for (uint32_t i = 0; i < src->nconfig; i++)
        dst->config[i].requests = copy(b, src->config[i].requests, src->config[i].nrequests * sizeof(uint32_t));
    if (pin) {
        dst->node_selector.terms = &pin->term;
        dst->node_selector.nterms = 1;
    } else if (src->has_node_selector) {
        copy_nodesel(b, &dst->node_selector, &src->node_selector);
    }
}

/* ---- pins ------------------------------------------------------------------------------- */

static bool pinned(const dg_graph *g, const dg_allocation *a)
{
    if (!a->has_node_selector || a->node_selector.nterms != 1)
        return false;
    const dg_term *t = &a->node_selector.terms[0];
    return !t->nexprs && t->nfields == 1 && t->fields[0].key == g->id_metadata_name && t->fields[0].op == DG_OP_IN &&
           t->fields[0].nvalues == 1;
}

static dg_pin *pin_get(dg_graph *g, uint32_t node)
{
    uint64_t v;
    if (de_map_get(&g->pins, node, &v)) {
        dg_pin *p = (dg_pin *)(uintptr_t)v;
        p->refs++;
        return p;
    }
    dg_pin *p = de_slab_alloc(dg_slab(g), sizeof *p);
    if (!p)
        return NULL;
    memset(p, 0, sizeof *p);
    p->value = node;
    p->req.key = g->id_metadata_name;
    p->req.op = DG_OP_IN;
    p->req.values = &p->value;
    p->req.nvalues = 1;
    p->term.fields = &p->req;
    p->term.nfields = 1;
    p->refs = 1;
    de_map_put(&g->pins, node, (uint64_t)(uintptr_t)p);
    g->npins++;
    return p;
}

static void pin_put(dg_graph *g, dg_pin *p)
{
    if (--p->refs)
        return;
    de_map_del(&g->pins, p->value);
    g->npins--;
    de_slab_free(g->slab, p, sizeof *p);
}

de_slab *dg_slab(dg_graph *g)
{
    if (!g->slab)
        g->slab = de_slab_new((size_t)1 << 32);
    return g->slab;
}

/* The record also holds the claim's first reservedFor list (a claim is
 * reserved right after it is allocated): one block, where two took two
 * allocations and, most often, two fresh cache lines more. */
bool dg_rec_set_allocation(dg_graph *g, claim_ent *ce, const dg_allocation *src)
{
    dg_pin *pin = NULL;
    if (pinned(g, src) && !(pin = pin_get(g, src->node_selector.terms[0].fields[0].values[0])))
        return false;
    size_t n = allocation_size(src, pin != NULL);
    size_t room = !ce->reserved_cap && !ce->c->nreserved_for ? DG_REC_RESERVED * sizeof(dg_consumer) : 0;
    unsigned char *blk = de_slab_alloc(dg_slab(g), n + room);
    if (!blk) {
        if (pin)
            pin_put(g, pin);
        return false;
    }
    bump b = {blk, blk + n};
    copy_allocation(&b, &ce->c->allocation, src, pin);
    ce->pin = pin;
    ce->rec = blk;
    ce->rec_size = (uint32_t)(n + room);
    if (room) {
        ce->c->reserved_for = (dg_consumer *)(blk + n);
        ce->reserved_cap = DG_REC_RESERVED;
        ce->res_in_rec = true;
    }
    return true;
}

void dg_rec_release(dg_graph *g, claim_ent *ce)
{
    if (!g->slab)
        return;
    if (ce->pin)
        pin_put(g, ce->pin);
    ce->pin = NULL;
    /* the reservedFor list may live in the record: read it before the
     * record goes back */
    if (ce->reserved_cap) {
        const dg_claim *c = ce->c;
        for (uint32_t i = 0; c && i < c->nreserved_for; i++) {
            de_intern_release(g->in, c->reserved_for[i].name);
            de_intern_release(g->in, c->reserved_for[i].uid);
        }
        if (!ce->res_in_rec)
            de_slab_free(g->slab, c ? c->reserved_for : NULL, ce->reserved_cap * sizeof(dg_consumer));
    }
    de_slab_free(g->slab, ce->rec, ce->rec_size);
    ce->rec = NULL;
    ce->rec_size = 0;
    ce->reserved_cap = 0;
    ce->res_in_rec = false;
}

void *dg_rec_grow(dg_graph *g, void *old, size_t old_bytes, size_t used_bytes, size_t new_bytes)
{
    void *n = de_slab_alloc(dg_slab(g), new_bytes);
    if (!n)
        return NULL;
    if (used_bytes)
        memcpy(n, old, used_bytes);
    if (old_bytes)
        de_slab_free(g->slab, old, old_bytes);
    return n;
}

/* What a claim's allocation record will take: one result per device it
 * asks for (ExactCount: count; All: a guess of 4; firstAvailable: its
 * largest subrequest), a config entry, a one-term node selector and the
 * first reservedFor list. */
static void estimate(const dg_claim *c, uint32_t *bytes, uint32_t *results)
{
    uint64_t n = 0;
    for (uint32_t i = 0; i < c->spec.nrequests; i++) {
        const dg_request *r = &c->spec.requests[i];
        uint64_t k = 0;
        if (r->has_exactly)
            k = r->exactly.mode == DG_AMODE_EXACT_COUNT && r->exactly.count > 0 ? (uint64_t)r->exactly.count : 4;
        for (uint32_t j = 0; j < r->nsubs; j++) {
            uint64_t s = r->subs[j].mode == DG_AMODE_EXACT_COUNT && r->subs[j].count > 0 ? (uint64_t)r->subs[j].count : 4;
            k = s > k ? s : k;
        }
        n += k;
    }
    if (n > 1024)
        n = 1024; /* the API's own limit on results is far below */
    if (!n)
        n = 1;
    *results = (uint32_t)n;
    /* a one-term node selector takes its term, at most both requirement
     * arrays and one value; each config entry names about one request */
    *bytes = (uint32_t)(al16(n * sizeof(dg_result)) + al16(sizeof(dg_alloc_config) * (c->spec.nconfig + 1)) +
                        16 * (size_t)(c->spec.nconfig + 1) + al16(sizeof(dg_term)) + 2 * al16(sizeof(dg_requirement)) +
                        16 + DG_REC_RESERVED * sizeof(dg_consumer));
}

void dg_rec_pending(dg_graph *g, claim_ent *ce, int sign)
{
    if (sign < 0) {
        if (!g->pending_claims)
            return;
        g->pending_claims--;
        g->pending_bytes -= ce->rec_est;
        g->pending_results -= ce->res_est;
        return;
    }
    estimate(ce->c, &ce->rec_est, &ce->res_est);
    g->pending_claims++;
    g->pending_bytes += ce->rec_est;
    g->pending_results += ce->res_est;
    size_t want = g->pending_bytes < REC_RESERVE_MAX ? (size_t)g->pending_bytes : REC_RESERVE_MAX;
    de_slab_reserve(dg_slab(g), want);
    /* each pending claim may pin a node not pinned yet; pins are of nodes
     * with node-local slices (a per-device nodeName past them grows it) */
    size_t pins = (size_t)g->npins + g->pending_claims;
    if (pins > (size_t)g->nnode_lists + 16)
        pins = (size_t)g->nnode_lists + 16;
    de_map_reserve(&g->pins, pins);
    /* the usage table and its index take one entry per device put in use:
     * sized now for every pending claim's results (at most every device) */
    size_t used = g->usage_idx.n + (size_t)g->pending_results;
    if (used > g->live_devs)
        used = g->live_devs;
    if (used > g->capusage) {
        /* what is asked for, or half again as much: each claim asks a little more */
        size_t cap = g->capusage + g->capusage / 2;
        if (cap < used)
            cap = used;
        if (cap > g->live_devs)
            cap = used;
        g->usage = de_xrealloc(g->usage, cap * sizeof *g->usage);
        memset(g->usage + g->capusage, 0, (cap - g->capusage) * sizeof *g->usage);
        g->capusage = (uint32_t)cap;
    }
    de_map_reserve(&g->usage_idx, used);
}
