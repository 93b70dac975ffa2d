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

static size_t ids_size(uint32_t n) { return n ? al16((size_t)n * sizeof(uint32_t)) : 0; }
static size_t arr_size(size_t elem, uint32_t n) { return al16(elem * (n ? n : 1)); }

static size_t nodesel_size(const dg_nodesel *s)
{
    size_t b = arr_size(sizeof(dg_term), s->nterms);
    for (uint32_t i = 0; i < s->nterms; i++)
        for (int k = 0; k < 2; k++) {
            const dg_requirement *r = k ? s->terms[i].fields : s->terms[i].exprs;
            uint32_t n = k ? s->terms[i].nfields : s->terms[i].nexprs;
            b += arr_size(sizeof(dg_requirement), n);
            for (uint32_t j = 0; j < n; j++)
                b += ids_size(r[j].nvalues);
        }
    return b;
}

static size_t allocation_size(const dg_allocation *a)
{
    size_t b = arr_size(sizeof(dg_result), a->nresults);
    for (uint32_t i = 0; i < a->nresults; i++) {
        const dg_result *r = &a->results[i];
        if (r->ntolerations)
            b += al16(r->ntolerations * sizeof(dg_toleration));
        b += ids_size(r->nbinding_conditions) + ids_size(r->nbinding_failure_conditions) + ids_size(r->nskip_node_ops);
        if (r->nconsumed)
            b += al16(r->nconsumed * sizeof(dg_consumed));
    }
    b += arr_size(sizeof(dg_alloc_config), a->nconfig);
    for (uint32_t i = 0; i < a->nconfig; i++)
        b += ids_size(a->config[i].nrequests);
    if (a->has_node_selector)
        b += nodesel_size(&a->node_selector);
    return b;
}

/* ---- copying into one block ----------------------------------------------------------- */

typedef struct bump {
    unsigned char *p, *end;
} bump;

static void *take(bump *b, size_t n)
{
    n = al16(n);
    void *p = b->p;
    b->p += n;
    return p;
}

static void *take_zero(bump *b, size_t elem, uint32_t n)
{
    size_t sz = elem * (n ? n : 1);
    void *p = take(b, sz);
    memset(p, 0, sz);
    return p;
}

/* An array whose every element the caller overwrites: zeroed only when
 * empty (the one element take_zero still sets aside). */
static void *take_arr(bump *b, size_t elem, uint32_t n)
{
    return n ? take(b, elem * n) : take_zero(b, elem, 0);
}

static uint32_t *copy_ids(bump *b, const uint32_t *v, uint32_t n)
{
    if (!n)
        return NULL;
    uint32_t *o = take(b, (size_t)n * sizeof *v);
    memcpy(o, v, n * sizeof *v);
    return o;
}

static void copy_nodesel(bump *b, dg_nodesel *dst, const dg_nodesel *src)
{
    dst->nterms = src->nterms;
    dst->terms = take_zero(b, sizeof(dg_term), src->nterms);
    for (uint32_t i = 0; i < src->nterms; i++) {
        const dg_term *s = &src->terms[i];
        dg_term *t = &dst->terms[i];
        for (int k = 0; k < 2; k++) {
            const dg_requirement *sr = k ? s->fields : s->exprs;
            uint32_t n = k ? s->nfields : s->nexprs;
            dg_requirement *r = take_arr(b, sizeof(dg_requirement), n);
            for (uint32_t j = 0; j < n; j++) {
                r[j] = sr[j];
                r[j].values = copy_ids(b, sr[j].values, sr[j].nvalues);
            }
            if (k) {
                t->fields = r;
                t->nfields = n;
            } else {
                t->exprs = r;
                t->nexprs = n;
            }
        }
    }
}

static void copy_allocation(bump *b, dg_allocation *dst, const dg_allocation *src)
{
    *dst = *src;
    dst->results = take_arr(b, sizeof(dg_result), src->nresults);
    for (uint32_t i = 0; i < src->nresults; i++) {
        const dg_result *s = &src->results[i];
        dg_result *r = &dst->results[i];
        *r = *s;
        r->tolerations = NULL;
        if (s->ntolerations) {
            r->tolerations = take(b, s->ntolerations * sizeof *s->tolerations);
            memcpy(r->tolerations, s->tolerations, s->ntolerations * sizeof *s->tolerations);
        }
        r->binding_conditions = copy_ids(b, s->binding_conditions, s->nbinding_conditions);
        r->binding_failure_conditions = copy_ids(b, s->binding_failure_conditions, s->nbinding_failure_conditions);
        r->skip_node_ops = copy_ids(b, s->skip_node_ops, s->nskip_node_ops);
        r->consumed = NULL;
        if (s->nconsumed) {
            r->consumed = take(b, s->nconsumed * sizeof *s->consumed);
            memcpy(r->consumed, s->consumed, s->nconsumed * sizeof *s->consumed);
        }
    }
    dst->config = take_arr(b, sizeof(dg_alloc_config), src->nconfig);
    for (uint32_t i = 0; i < src->nconfig; i++) {
        dst->config[i] = src->config[i];
        dst->config[i].requests = copy_ids(b, src->config[i].requests, src->config[i].nrequests);
    }
    if (src->has_node_selector)
        copy_nodesel(b, &dst->node_selector, &src->node_selector);
}

de_slab *dg_slab(dg_graph *g)
{
    if (!g->slab)
        g->slab = de_slab_new((size_t)1 << 32);
    return g->slab;
}

bool dg_rec_set_allocation(dg_graph *g, claim_ent *ce, const dg_allocation *src)
{
    size_t n = allocation_size(src);
    unsigned char *blk = de_slab_alloc(dg_slab(g), n);
    if (!blk)
        return false;
    bump b = {blk, blk + n};
    copy_allocation(&b, &ce->c->allocation, src);
    ce->rec = blk;
    ce->rec_size = (uint32_t)n;
    return true;
}

void dg_rec_release(dg_graph *g, claim_ent *ce)
{
    if (!g->slab)
        return;
    de_slab_free(g->slab, ce->rec, ce->rec_size);
    if (ce->reserved_cap) {
        const dg_claim *c = ce->c;
        for (uint32_t i = 0; c && i < c->nreserved_for; i++) {
            de_intern_release(g->in, c->reserved_for[i].name);
            de_intern_release(g->in, c->reserved_for[i].uid);
        }
        de_slab_free(g->slab, c ? c->reserved_for : NULL, ce->reserved_cap * sizeof(dg_consumer));
    }
    ce->rec = NULL;
    ce->rec_size = 0;
    ce->reserved_cap = 0;
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
    /* a one-term node selector takes its term, both requirement arrays (the
     * empty one still takes one element, as copy_nodesel does) and one value;
     * each config entry names about one request */
    *bytes = (uint32_t)(al16(n * sizeof(dg_result)) + al16(sizeof(dg_alloc_config) * (c->spec.nconfig + 1)) +
                        16 * (size_t)(c->spec.nconfig + 1) + al16(sizeof(dg_term)) + 2 * al16(sizeof(dg_requirement)) +
                        16 + 4 * sizeof(dg_consumer));
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
