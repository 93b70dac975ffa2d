/*
 * al_ccache.c - compiled claims by spec (issue #19).
 *
 * Every pod made from one ResourceClaimTemplate brings a claim with the same
 * spec, and compiling it (classes found, selector sets and their candidate
 * sets looked up, constraint names split, which constraints apply to which
 * request) cost more than the rest of a simple decision's bookkeeping.  The
 * cache keeps the compiled form of a claim that compiled without error,
 * keyed by the spec's identity the graph interned at decode
 * (dg_claim_spec.ident: the words compilation reads, so equal identities
 * are equal inputs; walking the spec here to compare it cost as much as
 * compiling it).  The form also depends on what the allocator knows:
 * classes (a->cc_gen, bumped by every DeviceClass event, by selector sets
 * being dropped and by a new CEL environment generation), and the
 * node-table and policy epoch (a->epoch); an entry made under other values
 * is never used.  Feature gates are fixed for an allocator's life (al_new).
 * Failures are not cached, so their messages come from the one compiler.
 * What is per claim or per call - the claim, the spec pointers the search
 * reads (tolerations, capacity), the `mine` bits, candidate sets of this
 * node's table, chosen subrequests and constraint state - is filled per
 * call into an arena copy of the template.  Claims with allocationMode All
 * (their device list depends on the table's pools) or derived attributes
 * (per-call memos) are compiled every time.  At most AL_CCACHE_CAP entries;
 * when full the least recently used is replaced (a counter: deterministic).
 */
#include "al_int.h"

#include <stdlib.h>

#define AL_CCACHE_CAP 64

typedef struct al_ccent {
    uint32_t ident;        /* dg_claim_spec.ident */
    uint64_t used;
    uint64_t gen, epoch;   /* a->cc_gen, a->epoch it was compiled at */
    uint32_t nreq, nrq, ncons, ncidx;
    size_t tplsz;          /* req[nreq], rq[nrq], cons[ncons], cidx[ncidx] */
    void *tpl;
} al_ccent;

struct al_ccache {
    al_ccent ent[AL_CCACHE_CAP];
    uint32_t nent;
    uint64_t tick;
    de_map by_ident;       /* ident -> slot + 1 */
};

static inline size_t up16(size_t n)
{
    return (n + 15) & ~(size_t)15;
}

void al_ccache_free(al_allocator *a)
{
    al_ccache *k = a->ccache;
    if (!k)
        return;
    /* the templates are records of the table slab, which al_tmem_free has
     * already given back */
    de_map_destroy(&k->by_ident);
    free(k);
    a->ccache = NULL;
}

/* A spec whose compiled form is the same on every node. */
static bool cacheable(const al_allocator *a, const dg_claim_spec *sp)
{
    if (!sp->ident)
        return false;
    for (uint32_t r = 0; r < sp->nrequests; r++) {
        const dg_request *q = &sp->requests[r];
        for (uint32_t s = 0; s <= q->nsubs; s++) {
            const dg_exact *x = s < q->nsubs ? &q->subs[s] : q->has_exactly ? &q->exactly : NULL;
            if (x && (x->mode != DG_AMODE_EXACT_COUNT || (a->f_derived && x->nderived)))
                return false;
        }
    }
    return true;
}

static inline const al_ccent *al_ccache_find(al_allocator *a, uint32_t ident)
{
    al_ccache *k = a->ccache;
    uint64_t v;
    if (!k || !ident || !de_map_get(&k->by_ident, ident, &v))
        return NULL;
    al_ccent *en = &k->ent[v - 1];
    if (en->gen != a->cc_gen || en->epoch != a->epoch)
        return NULL;
    return en;
}

uint32_t al_ccache_selsets(al_allocator *a, uint32_t ident, al_selset **ss, int64_t *subs)
{
    const al_ccent *en = al_ccache_find(a, ident);
    if (!en)
        return UINT32_MAX;
    const al_req *req = en->tpl;
    const al_rq *rq = (const al_rq *)((const char *)en->tpl + up16(en->nreq * sizeof(al_req)));
    uint32_t n = 0;
    for (uint32_t ri = 0; ri < en->nreq; rq += req[ri].nrq, ri++) {
        if (req[ri].has_subs)
            (*subs)++;
        else if (!rq->admin)
            ss[n++] = rq->ss;
    }
    return n;
}

int al_ccache_get(al_call *c, al_claimc *cc, uint32_t ci)
{
    al_allocator *a = c->a;
    const dg_claim_spec *sp = &cc->c->spec;
    al_ccent *en = (al_ccent *)al_ccache_find(a, sp->ident);
    if (!en)
        return cacheable(a, sp) ? 0 : -1;
    en->used = ++a->ccache->tick;
    /* one arena block, the template's layout; pointers within it redone */
    char *b = de_arena_alloc(c->ar, en->tplsz);
    if (!b)
        al_oom(en->tplsz);
    memcpy(b, en->tpl, en->tplsz);
    cc->nreq = en->nreq;
    cc->req = (al_req *)b;
    al_rq *rq = (al_rq *)(b + up16(en->nreq * sizeof(al_req)));
    cc->ncons = en->ncons;
    cc->cons = (al_cons *)((char *)rq + up16(en->nrq * sizeof(al_rq)));
    uint32_t *cidx = (uint32_t *)((char *)cc->cons + up16(en->ncons * sizeof(al_cons)));
    for (uint32_t ri = 0; ri < cc->nreq; ri++) {
        const dg_request *r = &sp->requests[ri];
        al_req *rr = &cc->req[ri];
        rr->rq = rq;
        for (uint32_t s = 0; s < rr->nrq; s++, rq++) {
            rq->claim = ci;
            rq->x = rr->has_subs ? &r->subs[s] : r->has_exactly ? &r->exactly : &al_exact_none;
            rq->cs = al_cset_get(a, c->t, rq->ss);
            rq->cons = rq->ncons ? cidx : NULL;
            cidx += rq->ncons;
        }
    }
    for (uint32_t k = 0; k < cc->ncons; k++)
        cc->cons[k].reqs = sp->constraints[k].requests;
    a->stats.compile_cache_hits++;
    return 1;
}

/* The table of entries (4.6 KiB) made and written off the decision path
 * (al_prepare): made by the first store, inside the first decision, it
 * faulted a fresh page there.  malloc and memset, not calloc: calloc may
 * leave memory the kernel just handed over untouched. */
void al_ccache_reserve(al_allocator *a)
{
    if (a->ccache)
        return;
    al_ccache *k = a->ccache = de_xmalloc(sizeof *k);
    memset(k, 0, sizeof *k);
    de_map_init(&k->by_ident);
    /* the index too: the first store, inside a decision, made its tables */
    de_map_reserve(&k->by_ident, AL_CCACHE_CAP);
}

void al_ccache_put(al_allocator *a, const al_claimc *cc)
{
    al_ccache_reserve(a);
    al_ccache *k = a->ccache;
    uint32_t ident = cc->c->spec.ident;
    uint64_t v;
    uint32_t slot;
    if (de_map_get(&k->by_ident, ident, &v)) {
        slot = (uint32_t)v - 1; /* out of date: replaced */
    } else if (k->nent < AL_CCACHE_CAP) {
        slot = k->nent++;
    } else {
        slot = 0;
        for (uint32_t i = 1; i < k->nent; i++)
            if (k->ent[i].used < k->ent[slot].used)
                slot = i;
        de_map_del(&k->by_ident, k->ent[slot].ident);
    }
    al_ccent *en = &k->ent[slot];
    if (en->tpl)
        al_tmem_release(a, en->tpl, en->tplsz);
    memset(en, 0, sizeof *en);
    en->ident = ident;
    en->used = ++k->tick;
    en->gen = a->cc_gen;
    en->epoch = a->epoch;
    en->nreq = cc->nreq;
    en->ncons = cc->ncons;
    for (uint32_t ri = 0; ri < cc->nreq; ri++) {
        en->nrq += cc->req[ri].nrq;
        for (uint32_t s = 0; s < cc->req[ri].nrq; s++)
            en->ncidx += cc->req[ri].rq[s].ncons;
    }
    size_t oreq = up16(en->nreq * sizeof(al_req)), orq = up16(en->nrq * sizeof(al_rq)),
           ocons = up16(en->ncons * sizeof(al_cons));
    en->tplsz = oreq + orq + ocons + up16(en->ncidx * sizeof(uint32_t));
    if (!en->tplsz)
        en->tplsz = 16;
    /* from the table slab, whose room is touched ahead: a spec is first
     * stored inside a decision */
    char *b = en->tpl = al_tmem_alloc(a, en->tplsz);
    al_req *req = (al_req *)b;
    al_rq *rq = (al_rq *)(b + oreq);
    al_cons *cons = (al_cons *)(b + oreq + orq);
    uint32_t *cidx = (uint32_t *)(b + oreq + orq + ocons);
    /* only what compilation decided; everything the search writes starts
     * zero (or -1) as a fresh compile leaves it */
    for (uint32_t ri = 0; ri < cc->nreq; ri++) {
        const al_req *sr = &cc->req[ri];
        req[ri].nrq = sr->nrq;
        req[ri].has_subs = sr->has_subs;
        req[ri].chosen = -1;
        for (uint32_t s = 0; s < sr->nrq; s++, rq++) {
            const al_rq *q = &sr->rq[s];
            rq->req = q->req;
            rq->sub = q->sub;
            rq->is_sub = q->is_sub;
            rq->full_name = q->full_name;
            rq->base_name = q->base_name;
            rq->sub_name = q->sub_name;
            rq->cls = q->cls;
            rq->ss = q->ss;
            rq->admin = q->admin;
            rq->need = q->need;
            rq->has_capreq = q->has_capreq;
            rq->ncons = q->ncons;
            if (q->ncons)
                memcpy(cidx, q->cons, q->ncons * sizeof *cidx);
            cidx += q->ncons;
        }
    }
    for (uint32_t i = 0; i < cc->ncons; i++) {
        const al_cons *q = &cc->cons[i];
        cons[i].kind = q->kind;
        cons[i].name = q->name;
        cons[i].domain = q->domain;
        cons[i].id = q->id;
        cons[i].nreqs = q->nreqs;
    }
    de_map_put(&k->by_ident, ident, slot + 1);
    a->stats.compile_cache_stores++;
}
