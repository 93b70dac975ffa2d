/*
 * al_saved.c - a node's allocation for a pod, kept for a later pod of the
 * same claim-set signature (al_choose.c: saved allocations).
 *
 * The copy is one malloc'd block: the allocation's own arrays (results,
 * consumed capacity, config entries, the node selector) are copied; what a
 * result points at in the graph (binding conditions, node ops) stays valid
 * as long as the node's state does, which is as long as the choice cache
 * keeps the copy.  What points into the claim that was allocated (a
 * request's tolerations, a claim config entry) is kept as an index into the
 * claim spec and re-pointed at the claim of the pod that takes the copy:
 * the specs are equal within a signature, the claims are not the same
 * objects, and the first may be gone by then.  An allocation with a shareID
 * (derived from the claim's identity) is never saved.
 */
#include "al_int.h"

#include <stdlib.h>
#include <string.h>

#define NONE UINT32_MAX

/* A saved allocation (one malloc): per claim, the dg_allocation with its
 * arrays, the chosen subrequests and device ids, and for each result with
 * tolerations and each config from the claim, where in the claim spec they
 * came from. */
typedef struct sclaim {
    dg_allocation alloc;
    int32_t *chosen_sub;
    uint32_t nrequests;
    uint32_t *devids;
    uint32_t *tol;     /* per result: request index << 16 | (sub index + 1, 0 = exactly), NONE = none */
    uint32_t *cfg;     /* per config entry: index in the claim's config, NONE = from a class */
} sclaim;

struct al_saved {
    size_t bytes;
    uint32_t nclaims;
    sclaim *c;
};

/* Bump memory over one block; a NULL block only counts the bytes. */
typedef struct bump {
    char *p;
    size_t used;
} bump;

/* 16-byte steps: quantities hold an __int128 */
static void *take(bump *b, size_t n)
{
    void *r = b->p ? b->p + b->used : NULL;
    b->used += (n + 15) & ~(size_t)15;
    return r;
}

/* memcpy that accepts an empty source (a NULL array with no elements) */
static void cpy(void *dst, const void *src, size_t n)
{
    if (n)
        memcpy(dst, src, n);
}

#define TAKE(b, T, n) ((T *)take((b), sizeof(T) * (size_t)(n)))

/* n requirements with their values; NULL while counting */
static dg_requirement *copy_reqs(bump *b, const dg_requirement *from, uint32_t n)
{
    dg_requirement *to = TAKE(b, dg_requirement, n);
    for (uint32_t j = 0; j < n; j++) {
        uint32_t *v = TAKE(b, uint32_t, from[j].nvalues);
        if (to) {
            to[j] = from[j];
            to[j].values = v;
            cpy(v, from[j].values, from[j].nvalues * sizeof *v);
        }
    }
    return to;
}

static void copy_nodesel(bump *b, dg_nodesel *dst, const dg_nodesel *src)
{
    dg_term *t = TAKE(b, dg_term, src->nterms);
    for (uint32_t i = 0; i < src->nterms; i++) {
        const dg_term *s = &src->terms[i];
        dg_requirement *x = copy_reqs(b, s->exprs, s->nexprs);
        dg_requirement *f = copy_reqs(b, s->fields, s->nfields);
        if (t)
            t[i] = (dg_term){x, s->nexprs, f, s->nfields};
    }
    if (b->p) {
        dst->terms = t;
        dst->nterms = src->nterms;
    }
}

/* Copy an allocation's arrays into b (everything the graph will copy again
 * when it is committed); tolerations, binding conditions and node ops keep
 * pointing where they did (the caller re-points tolerations). */
static void copy_alloc(bump *b, dg_allocation *dst, const dg_allocation *src)
{
    dg_result *res = TAKE(b, dg_result, src->nresults);
    for (uint32_t i = 0; i < src->nresults; i++) {
        const dg_result *x = &src->results[i];
        dg_consumed *c = TAKE(b, dg_consumed, x->nconsumed);
        if (res) {
            res[i] = *x;
            res[i].consumed = c;
            cpy(c, x->consumed, x->nconsumed * sizeof *c);
        }
    }
    dg_alloc_config *cfg = TAKE(b, dg_alloc_config, src->nconfig);
    for (uint32_t i = 0; i < src->nconfig; i++) {
        uint32_t *rq = TAKE(b, uint32_t, src->config[i].nrequests);
        if (cfg) {
            cfg[i] = src->config[i];
            cfg[i].requests = rq;
            cpy(rq, src->config[i].requests, src->config[i].nrequests * sizeof *rq);
        }
    }
    if (b->p) {
        *dst = *src;
        dst->results = res;
        dst->config = cfg;
        dst->has_node_selector = false;
        dst->node_selector = (dg_nodesel){0};
    }
    if (src->has_node_selector) {
        copy_nodesel(b, dst ? &dst->node_selector : NULL, &src->node_selector);
        if (b->p)
            dst->has_node_selector = true;
    }
}

/* Where a result's tolerations / a claim config entry came from in the
 * claim spec; false if not found (then nothing is saved). */
static bool tol_index(const dg_claim_spec *s, const dg_toleration *tol, uint32_t *out)
{
    for (uint32_t r = 0; r < s->nrequests && r < 0xffff; r++) {
        const dg_request *q = &s->requests[r];
        if (q->has_exactly && q->exactly.tolerations == tol) {
            *out = r << 16;
            return true;
        }
        for (uint32_t k = 0; k < q->nsubs && k < 0xfffe; k++)
            if (q->subs[k].tolerations == tol) {
                *out = r << 16 | (k + 1);
                return true;
            }
    }
    return false;
}

size_t al_saved_bytes(const al_saved *s)
{
    return s->bytes;
}

al_saved *al_saved_new(al_allocator *a, const uint32_t *pending, const al_outcome *o, size_t budget)
{
    uint32_t n = o->nclaims;
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t k = 0; k < o->claims[i].alloc.nresults; k++)
            if (o->claims[i].alloc.results[k].share_id)
                return NULL;
    /* two passes: count, then copy into one block */
    bump b = {NULL, 0};
    al_saved *out = NULL;
    for (int pass = 0; pass < 2; pass++) {
        if (pass) {
            if (b.used > budget)
                return NULL;
            size_t bytes = b.used;
            b.p = de_xmalloc(bytes ? bytes : 1);
            b.used = 0;
            out = (al_saved *)b.p;
            out->bytes = bytes;
        }
        al_saved *s = TAKE(&b, al_saved, 1);
        sclaim *c = TAKE(&b, sclaim, n);
        if (s) {
            s->nclaims = n;
            s->c = c;
        }
        for (uint32_t i = 0; i < n; i++) {
            const al_claim_alloc *ca = &o->claims[i];
            const dg_allocation *al = &ca->alloc;
            int32_t *cs = TAKE(&b, int32_t, ca->nrequests);
            uint32_t *dev = TAKE(&b, uint32_t, al->nresults);
            uint32_t *tol = TAKE(&b, uint32_t, al->nresults);
            uint32_t *cfg = TAKE(&b, uint32_t, al->nconfig);
            if (c) {
                c[i].chosen_sub = cs;
                c[i].nrequests = ca->nrequests;
                c[i].devids = dev;
                c[i].tol = tol;
                c[i].cfg = cfg;
                cpy(cs, ca->chosen_sub, ca->nrequests * sizeof *cs);
                cpy(dev, ca->devids, al->nresults * sizeof *dev);
            }
            copy_alloc(&b, c ? &c[i].alloc : NULL, al);
            if (!c)
                continue;
            const dg_claim *cl = dg_claim_get(a->g, pending[i]);
            uint32_t next_cfg = 0;
            bool ok = cl != NULL;
            for (uint32_t k = 0; ok && k < al->nresults; k++) {
                tol[k] = NONE;
                if (al->results[k].ntolerations)
                    ok = tol_index(&cl->spec, al->results[k].tolerations, &tol[k]);
            }
            for (uint32_t k = 0; ok && k < al->nconfig; k++) {
                cfg[k] = NONE;
                if (al->config[k].source != DG_CFG_FROM_CLAIM)
                    continue;
                /* claim entries come in spec order */
                while (next_cfg < cl->spec.nconfig && cl->spec.config[next_cfg].requests != al->config[k].requests)
                    next_cfg++;
                ok = next_cfg < cl->spec.nconfig;
                cfg[k] = next_cfg++;
            }
            if (!ok) {
                free(out);
                return NULL;
            }
        }
    }
    return out;
}

void al_saved_restore(al_allocator *a, const al_saved *s, const uint32_t *pending, int64_t k8s, de_arena *ar,
                      al_outcome *o)
{
    memset(o, 0, sizeof *o);
    o->nclaims = s->nclaims;
    o->claims = AL_NEW(ar, al_claim_alloc, s->nclaims ? s->nclaims : 1);
    o->k8s_score = k8s;
    for (uint32_t i = 0; i < s->nclaims; i++) {
        const sclaim *c = &s->c[i];
        const dg_claim *cl = dg_claim_get(a->g, pending[i]);
        al_claim_alloc *ca = &o->claims[i];
        ca->claim = pending[i];
        ca->nrequests = c->nrequests;
        ca->chosen_sub = AL_NEW(ar, int32_t, c->nrequests ? c->nrequests : 1);
        cpy(ca->chosen_sub, c->chosen_sub, c->nrequests * sizeof *ca->chosen_sub);
        ca->devids = AL_NEW(ar, uint32_t, c->alloc.nresults ? c->alloc.nresults : 1);
        cpy(ca->devids, c->devids, c->alloc.nresults * sizeof *ca->devids);
        bump b = {NULL, 0};
        copy_alloc(&b, NULL, &c->alloc);
        b.p = de_arena_alloc(ar, b.used ? b.used : 1);
        b.used = 0;
        copy_alloc(&b, &ca->alloc, &c->alloc);
        for (uint32_t k = 0; k < ca->alloc.nresults; k++) {
            if (c->tol[k] == NONE)
                continue;
            const dg_request *q = &cl->spec.requests[c->tol[k] >> 16];
            uint32_t sub = c->tol[k] & 0xffff;
            ca->alloc.results[k].tolerations = sub ? q->subs[sub - 1].tolerations : q->exactly.tolerations;
        }
        for (uint32_t k = 0; k < ca->alloc.nconfig; k++)
            if (c->cfg[k] != NONE) {
                ca->alloc.config[k].requests = cl->spec.config[c->cfg[k]].requests;
                ca->alloc.config[k].opaque = cl->spec.config[c->cfg[k]].opaque;
            }
    }
}
