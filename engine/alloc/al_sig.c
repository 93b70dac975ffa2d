/*
 * al_sig.c - a pod's signature: every word of the pod and of its claims
 * that the filters, Allocate and a score can see, and nothing else (not
 * claim names or UIDs), so that the pods of one template share it.  The
 * choice cache (al_choose.c) and serve's Filter memo (al_memo.c) key their
 * tables on it; two pods with equal signatures get the same answer from
 * every node whose state is unchanged.
 */
#include "al_int.h"

#include <stdlib.h>
#include <string.h>

uint64_t al_sig_hash(const uint32_t *w, uint32_t n)
{
    uint64_t h = 0x84222325cbf29ce4ULL ^ n;
    uint32_t i = 0;
    for (; i + 1 < n; i += 2)
        h = (h ^ ((uint64_t)w[i] | (uint64_t)w[i + 1] << 32)) * 0x9e3779b97f4a7c15ULL + (h >> 29);
    if (i < n)
        h = (h ^ w[i]) * 0x9e3779b97f4a7c15ULL;
    return de_hash_u64(h);
}

/* ---- signatures ------------------------------------------------------------------------ */

/* Words are written through a cursor after reserving a bound, so the hot
 * path (one claim per pod, a few dozen words) does no per-word checks. */
static __attribute__((noinline)) void grow(al_sigbuf *c, uint32_t need)
{
    while (c->cap < need)
        c->cap = c->cap ? c->cap * 2 : 256;
    c->w = de_xrealloc(c->w, c->cap * sizeof *c->w);
}

static inline uint32_t *reserve(al_sigbuf *c, uint32_t k)
{
    if (c->n + k > c->cap)
        grow(c, c->n + k);
    return c->w + c->n;
}

static inline void done(al_sigbuf *c, const uint32_t *w)
{
    c->n = (uint32_t)(w - c->w);
}

static inline uint32_t *w64(uint32_t *w, uint64_t v)
{
    w[0] = (uint32_t)v;
    w[1] = (uint32_t)(v >> 32);
    return w + 2;
}

static void put_reqs(al_sigbuf *c, const dg_requirement *r, uint32_t n)
{
    uint32_t need = 1;
    for (uint32_t i = 0; i < n; i++)
        need += 3 + r[i].nvalues;
    uint32_t *w = reserve(c, need);
    *w++ = n;
    for (uint32_t i = 0; i < n; i++) {
        *w++ = r[i].key;
        *w++ = r[i].op;
        *w++ = r[i].nvalues;
        for (uint32_t k = 0; k < r[i].nvalues; k++)
            *w++ = r[i].values[k];
    }
    done(c, w);
}

static void put_nodesel(al_sigbuf *c, const dg_nodesel *s)
{
    *reserve(c, 1) = s->nterms;
    c->n++;
    for (uint32_t i = 0; i < s->nterms; i++) {
        put_reqs(c, s->terms[i].exprs, s->terms[i].nexprs);
        put_reqs(c, s->terms[i].fields, s->terms[i].nfields);
    }
}

static void put_exact(al_sigbuf *c, const dg_exact *x)
{
    uint32_t *w = reserve(c, 15 + 2 * x->nselectors + 9 * x->ntolerations + 11 * x->ncapacity + 4 * x->nderived);
    *w++ = x->name;
    *w++ = x->class_name;
    *w++ = x->nselectors;
    for (uint32_t i = 0; i < x->nselectors; i++) {
        *w++ = x->selectors[i].expr;
        *w++ = x->selectors[i].has_cel;
    }
    *w++ = x->mode;
    *w++ = x->mode_raw;
    w = w64(w, (uint64_t)x->count);
    *w++ = x->count_set;
    *w++ = (uint32_t)(int32_t)x->admin_access;
    *w++ = x->ntolerations;
    for (uint32_t i = 0; i < x->ntolerations; i++) {
        const dg_toleration *t = &x->tolerations[i];
        *w++ = t->key;
        *w++ = t->value;
        *w++ = t->op;
        *w++ = t->op_raw;
        *w++ = t->effect;
        *w++ = t->effect_raw;
        *w++ = t->has_seconds;
        w = w64(w, (uint64_t)t->seconds);
    }
    *w++ = x->has_capacity;
    *w++ = x->ncapacity;
    for (uint32_t i = 0; i < x->ncapacity; i++) {
        const dg_capreq *q = &x->capacity[i];
        *w++ = q->key;
        *w++ = q->domain;
        *w++ = q->name;
        w = w64(w, (uint64_t)q->value.mant);
        w = w64(w, (uint64_t)(q->value.mant >> 64));
        *w++ = (uint32_t)q->value.exp;
        *w++ = (uint32_t)q->value.gscale;
        *w++ = q->value.gdec;
        *w++ = q->value.fmt;
    }
    *w++ = x->nderived;
    for (uint32_t i = 0; i < x->nderived; i++) {
        *w++ = x->derived[i].name;
        *w++ = x->derived[i].domain;
        *w++ = x->derived[i].id;
        *w++ = x->derived[i].expr;
    }
    done(c, w);
}

/* Everything of dg_claim_spec (a field added there must be added here;
 * `ident` is made of the fields below). */
static void put_claim(al_sigbuf *c, const dg_claim *cl)
{
    const dg_claim_spec *s = &cl->spec;
    uint32_t *w = reserve(c, 2);
    *w++ = cl->meta.ns;
    *w++ = s->nrequests;
    done(c, w);
    for (uint32_t i = 0; i < s->nrequests; i++) {
        const dg_request *r = &s->requests[i];
        w = reserve(c, 2);
        *w++ = r->name;
        *w++ = r->has_exactly;
        done(c, w);
        if (r->has_exactly)
            put_exact(c, &r->exactly);
        *reserve(c, 1) = r->nsubs;
        c->n++;
        for (uint32_t k = 0; k < r->nsubs; k++)
            put_exact(c, &r->subs[k]);
    }
    uint32_t need = 2;
    for (uint32_t i = 0; i < s->nconstraints; i++)
        need += 7 + s->constraints[i].nrequests;
    for (uint32_t i = 0; i < s->nconfig; i++)
        need += 4 + s->config[i].nrequests;
    w = reserve(c, need);
    *w++ = s->nconstraints;
    for (uint32_t i = 0; i < s->nconstraints; i++) {
        const dg_constraint *k = &s->constraints[i];
        *w++ = k->nrequests;
        for (uint32_t j = 0; j < k->nrequests; j++)
            *w++ = k->requests[j];
        *w++ = k->match_attribute;
        *w++ = k->distinct_attribute;
        *w++ = k->ma_domain;
        *w++ = k->ma_id;
        *w++ = k->da_domain;
        *w++ = k->da_id;
    }
    *w++ = s->nconfig;
    for (uint32_t i = 0; i < s->nconfig; i++) {
        const dg_claim_config *k = &s->config[i];
        *w++ = k->nrequests;
        for (uint32_t j = 0; j < k->nrequests; j++)
            *w++ = k->requests[j];
        *w++ = k->has_opaque;
        *w++ = k->opaque.driver;
        *w++ = k->opaque.params;
    }
    done(c, w);
}

void al_sig_build(al_allocator *a, const al_podctx *p, al_sigbuf *c)
{
    const dg_pod *pod = p->pod;
    c->n = 0;
    uint32_t *w = reserve(c, 5 + 2 * pod->nnode_selector + 4 * pod->ntolerations);
    *w++ = 1; /* format */
    *w++ = pod->node_name;
    *w++ = pod->nnode_selector;
    for (uint32_t i = 0; i < pod->nnode_selector; i++) {
        *w++ = pod->node_selector[i].key;
        *w++ = pod->node_selector[i].value;
    }
    *w++ = pod->ntolerations;
    for (uint32_t i = 0; i < pod->ntolerations; i++) {
        const dg_pod_toleration *t = &pod->tolerations[i];
        *w++ = t->key;
        *w++ = t->value;
        *w++ = t->op;
        *w++ = t->effect;
    }
    *w++ = pod->has_required_affinity;
    done(c, w);
    w = reserve(c, 1 + 3 * p->nreq);
    *w++ = p->nreq;
    for (uint32_t i = 0; i < p->nreq; i++) {
        *w++ = p->req[i].name;
        w = w64(w, (uint64_t)p->req[i].milli);
    }
    done(c, w);
    if (a->opts.gates.on[DE_GATE_NODE_ALLOCATABLE_RESOURCES]) {
        /* which containers name which claim: perContainer overheads */
        for (uint32_t i = 0; i < pod->ncontainers; i++) {
            const dg_container *k = &pod->containers[i];
            w = reserve(c, 2 + k->nclaims);
            *w++ = k->name;
            *w++ = k->nclaims;
            for (uint32_t j = 0; j < k->nclaims; j++)
                *w++ = k->claims[j].name;
            done(c, w);
        }
    }
    if (pod->has_required_affinity)
        put_nodesel(c, &pod->required_affinity);
    *reserve(c, 1) = p->nclaims;
    c->n++;
    for (uint32_t i = 0; i < p->nclaims; i++) {
        const dg_claim *cl = p->claims[i] == DG_NONE ? NULL : dg_claim_get(a->g, p->claims[i]);
        if (!cl) {
            *reserve(c, 1) = 0;
            c->n++;
        } else if (cl->allocated) {
            w = reserve(c, 2);
            *w++ = 1;
            *w++ = cl->allocation.has_node_selector;
            done(c, w);
            if (cl->allocation.has_node_selector)
                put_nodesel(c, &cl->allocation.node_selector);
        } else {
            *reserve(c, 1) = 2;
            c->n++;
            put_claim(c, cl);
        }
    }
}
