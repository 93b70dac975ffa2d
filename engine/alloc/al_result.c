/*
 * al_result.c - building the AllocationResult of each claim after a
 * successful search.
 *
 *  - devices.results in the order devices were chosen; request "req" or
 *    "req/sub"; adminAccess only when true; the (sub)request's tolerations;
 *    binding conditions copied from the device while the binding gates are on;
 *    for multi-allocatable devices a shareID and consumedCapacity (every
 *    capacity of the device, keys as in the slice, sorted like Go's JSON).
 *  - devices.config: class configs first, each class once (later requests of
 *    the same class are appended to its entries' requests), then claim
 *    configs that apply (no `requests` = all; naming a request, or the chosen
 *    "req/sub").  Like v0.36.2 (the vectors), requests lists are not cleared
 *    when they cover every request; like 1.37, a claim config naming several
 *    requests is emitted once.
 *    Decision (vector alloc-extra-failing/803): v0.37 clears `requests` of a
 *    config whose list names every request (upstream commit fe39ea7).  The
 *    shared conformance vectors 054/069/070 are pinned at v0.36.2 and expect
 *    the lists kept; the conformance vectors are the measure, so the v0.36.2
 *    behaviour stays and 803 stays in the failing set until the vectors move
 *    to 1.37 together.
 *  - nodeSelector, walking the results in order as upstream: the first
 *    node-local device (slice or device nodeName) or one with bindsToNode
 *    pins the claim to the node (matchFields metadata.name), unless a device
 *    with a multi-term nodeSelector comes before it (an error); otherwise the
 *    single-term union of the devices' node selectors, without repeating
 *    identical requirements; none when every device is on allNodes.
 *
 * shareID: upstream draws a random UUID.  draengine derives it from a seeded
 * hash of (seed, claim, result index, device) and prints it in lowercase RFC
 * 4122 version-4 form, so the same input gives the same bytes every time.
 */
#include "al_int.h"

#include <stdio.h>
#include <stdlib.h>

uint32_t al_share_id(al_allocator *a, const al_call *c, uint32_t claim, uint32_t idx, uint32_t dev)
{
    const dg_claim *cl = c->claims[claim].c;
    const al_dev *dv = &c->t->devs[dev];
    uint64_t parts[8] = {a->opts.seed, cl->meta.ns, cl->meta.name, cl->meta.uid, idx,
                         dv->s->driver, dv->s->pool, dv->name};
    /* mix the names' text, not their interned ids (ids depend on load order) */
    uint64_t h1 = de_hash_u64(a->opts.seed ^ 0x9e3779b97f4a7c15ULL);
    for (int i = 1; i < 8; i++) {
        uint64_t v = parts[i];
        if (i != 4) {
            const char *s = al_str(a, (uint32_t)v);
            v = de_hash_bytes(s, de_intern_len(a->in, (uint32_t)v));
        }
        h1 = de_hash_u64(h1 ^ v) + 0x632be59bd9b4e019ULL;
    }
    uint64_t h2 = de_hash_u64(h1 ^ 0xd6e8feb86659fd93ULL);
    char buf[40];
    snprintf(buf, sizeof buf, "%08x-%04x-4%03x-%x%03x-%012llx", (unsigned)(h1 >> 32),
             (unsigned)((h1 >> 16) & 0xffff), (unsigned)(h1 & 0xfff),
             (unsigned)(8 + ((h2 >> 60) & 3)), (unsigned)((h2 >> 48) & 0xfff),
             (unsigned long long)(h2 & 0xffffffffffffULL));
    return al_intern(a, buf);
}

static int cmp_consumed(const void *x, const void *y, void *ctx)
{
    const dg_consumed *p = x, *q = y;
    return de_intern_cmp(ctx, p->key, q->key);
}

static bool req_equal(const dg_requirement *x, const dg_requirement *y)
{
    if (x->key != y->key || x->op != y->op || x->nvalues != y->nvalues)
        return false;
    for (uint32_t i = 0; i < x->nvalues; i++) {
        bool found = false;
        for (uint32_t j = 0; j < y->nvalues && !found; j++)
            found = x->values[i] == y->values[j];
        if (!found)
            return false;
    }
    for (uint32_t j = 0; j < y->nvalues; j++) {
        bool found = false;
        for (uint32_t i = 0; i < x->nvalues && !found; i++)
            found = x->values[i] == y->values[j];
        if (!found)
            return false;
    }
    return true;
}

static void merge_reqs(const dg_requirement *from, uint32_t n, dg_requirement *to, uint32_t *nto)
{
    for (uint32_t i = 0; i < n; i++) {
        bool have = false;
        for (uint32_t j = 0; j < *nto && !have; j++)
            have = req_equal(&to[j], &from[i]);
        if (!have)
            to[(*nto)++] = from[i];
    }
}

static bool pins_to_node(const al_dev *dv)
{
    bool perdev = dv->s->ns_mode == DG_NS_PER_DEVICE;
    uint8_t mode = perdev ? dv->d->ns_mode : dv->s->ns_mode;
    return mode == DG_NS_NODE_NAME || dv->d->binds_to_node == 1;
}

/* The device's own node selection: (mode, selector) of the slice, or of the
 * device with perDeviceNodeSelection. */
static const dg_nodesel *dev_selector(const al_dev *dv)
{
    bool perdev = dv->s->ns_mode == DG_NS_PER_DEVICE;
    uint8_t mode = perdev ? dv->d->ns_mode : dv->s->ns_mode;
    if (mode != DG_NS_NODE_SELECTOR)
        return NULL;
    return perdev ? &dv->d->node_selector : &dv->s->node_selector;
}

/* upstream createNodeSelector: one pass over the results in order; the first
 * node-pinning device returns the pin, a multi-term selector met before it is
 * an error, single-term selectors are merged into one term. */
static de_rc node_selector(al_call *c, uint32_t ci, dg_allocation *al, de_err *e)
{
    al_allocator *a = c->a;
    /* the merged term is made when the first selector is met (devices of
     * node-local slices, the common case, pin without one) */
    dg_term *term = NULL;
    for (uint32_t i = 0; i < c->nres[ci]; i++) {
        const al_dev *dv = &c->t->devs[c->res[ci][i].dev];
        if (pins_to_node(dv)) {
            /* one read-only selector per call, shared by its claims */
            if (!c->pin) {
                dg_requirement *r = AL_NEW(c->ar, dg_requirement, 1);
                r->key = a->s_metadata_name;
                r->op = DG_OP_IN;
                r->values = AL_NEW(c->ar, uint32_t, 1);
                r->values[0] = c->node_name;
                r->nvalues = 1;
                dg_term *t = AL_NEW(c->ar, dg_term, 1);
                t->fields = r;
                t->nfields = 1;
                c->pin = t;
            }
            al->has_node_selector = true;
            al->node_selector.terms = c->pin;
            al->node_selector.nterms = 1;
            return DE_OK;
        }
        const dg_nodesel *ns = dev_selector(dv);
        if (!ns || !ns->nterms)
            continue;
        if (ns->nterms > 1)
            return de_errf(e, DE_EINVAL,
                           "create NodeSelector for claim %s: unsupported ResourceSlice.NodeSelector with %u terms",
                           al_str(a, c->claims[ci].c->meta.name), ns->nterms);
        if (!term) {
            uint32_t nf = 0, nx = 0;
            for (uint32_t k = 0; k < c->nres[ci]; k++) {
                const dg_nodesel *ks = dev_selector(&c->t->devs[c->res[ci][k].dev]);
                if (ks && ks->nterms == 1) {
                    nf += ks->terms[0].nfields;
                    nx += ks->terms[0].nexprs;
                }
            }
            term = AL_NEW(c->ar, dg_term, 1);
            term->fields = AL_NEW(c->ar, dg_requirement, nf ? nf : 1);
            term->exprs = AL_NEW(c->ar, dg_requirement, nx ? nx : 1);
        }
        merge_reqs(ns->terms[0].fields, ns->terms[0].nfields, term->fields, &term->nfields);
        merge_reqs(ns->terms[0].exprs, ns->terms[0].nexprs, term->exprs, &term->nexprs);
    }
    if (term && (term->nfields || term->nexprs)) {
        al->has_node_selector = true;
        al->node_selector.terms = term;
        al->node_selector.nterms = 1;
    }
    return DE_OK;
}

static bool contains(const uint32_t *v, uint32_t n, uint32_t x)
{
    for (uint32_t i = 0; i < n; i++)
        if (v[i] == x)
            return true;
    return false;
}

static void build_config(al_call *c, uint32_t ci, dg_allocation *al)
{
    al_claimc *cc = &c->claims[ci];
    const dg_claim_spec *sp = &cc->c->spec;
    uint32_t max = sp->nconfig;
    for (uint32_t ri = 0; ri < cc->nreq; ri++)
        for (uint32_t s = 0; s < cc->req[ri].nrq; s++)
            if (cc->req[ri].rq[s].cls)
                max += cc->req[ri].rq[s].cls->nconfig;
    if (!max)
        return;
    dg_alloc_config *cfg = AL_NEW(c->ar, dg_alloc_config, max);
    uint32_t n = 0;
    /* class configs: once per class, later requests appended */
    uint32_t *seen_class = AL_NEW(c->ar, uint32_t, cc->nreq ? cc->nreq : 1);
    uint32_t *seen_start = AL_NEW(c->ar, uint32_t, cc->nreq ? cc->nreq : 1);
    uint32_t *seen_end = AL_NEW(c->ar, uint32_t, cc->nreq ? cc->nreq : 1);
    uint32_t nseen = 0;
    for (uint32_t ri = 0; ri < cc->nreq; ri++) {
        al_req *rr = &cc->req[ri];
        al_rq *rq = &rr->rq[rr->has_subs ? (uint32_t)rr->chosen : 0];
        if (!rq->cls)
            continue;
        uint32_t cname = rq->cls->meta.name;
        bool found = false;
        for (uint32_t k = 0; k < nseen && !found; k++) {
            if (seen_class[k] != cname)
                continue;
            found = true;
            for (uint32_t m = seen_start[k]; m < seen_end[k]; m++)
                cfg[m].requests[cfg[m].nrequests++] = rq->full_name;
        }
        if (found)
            continue;
        seen_class[nseen] = cname;
        seen_start[nseen] = n;
        for (uint32_t k = 0; k < rq->cls->nconfig; k++) {
            dg_alloc_config *e = &cfg[n++];
            e->source = DG_CFG_FROM_CLASS;
            e->requests = AL_NEW(c->ar, uint32_t, cc->nreq);
            e->requests[0] = rq->full_name;
            e->nrequests = 1;
            e->opaque = rq->cls->config[k].opaque;
        }
        seen_end[nseen++] = n;
    }
    /* claim configs */
    for (uint32_t k = 0; k < sp->nconfig; k++) {
        const dg_claim_config *cf = &sp->config[k];
        bool use = cf->nrequests == 0;
        for (uint32_t ri = 0; ri < cc->nreq && !use; ri++) {
            const dg_request *r = &sp->requests[ri];
            if (contains(cf->requests, cf->nrequests, r->name))
                use = true;
            else if (cc->req[ri].has_subs)
                use = contains(cf->requests, cf->nrequests,
                               cc->req[ri].rq[cc->req[ri].chosen].full_name);
        }
        if (!use)
            continue;
        dg_alloc_config *e = &cfg[n++];
        e->source = DG_CFG_FROM_CLAIM;
        e->requests = cf->requests;
        e->nrequests = cf->nrequests;
        e->opaque = cf->opaque;
    }
    al->config = cfg;
    al->nconfig = n;
}

de_rc al_build_results(al_call *c, al_outcome *out, de_err *e)
{
    al_allocator *a = c->a;
    out->nclaims = c->nclaims;
    out->claims = AL_NEW(c->ar, al_claim_alloc, c->nclaims ? c->nclaims : 1);
    int64_t score = 0;
    for (uint32_t ci = 0; ci < c->nclaims; ci++) {
        al_claimc *cc = &c->claims[ci];
        al_claim_alloc *ca = &out->claims[ci];
        ca->claim = cc->id;
        ca->nrequests = cc->nreq;
        ca->chosen_sub = AL_NEW(c->ar, int32_t, cc->nreq ? cc->nreq : 1);
        for (uint32_t ri = 0; ri < cc->nreq; ri++) {
            ca->chosen_sub[ri] = cc->req[ri].has_subs ? cc->req[ri].chosen : -1;
            if (cc->req[ri].has_subs)
                score += 8 - cc->req[ri].chosen;
        }
        dg_allocation *al = &ca->alloc;
        al->nresults = c->nres[ci];
        al->results = AL_NEW(c->ar, dg_result, al->nresults ? al->nresults : 1);
        ca->devids = AL_NEW(c->ar, uint32_t, al->nresults ? al->nresults : 1);
        for (uint32_t i = 0; i < al->nresults; i++) {
            const al_resent *r = &c->res[ci][i];
            const al_dev *dv = &c->t->devs[r->dev];
            dg_result *x = &al->results[i];
            ca->devids[i] = dv->devid;
            x->request = r->rq->full_name;
            x->driver = dv->s->driver;
            x->pool = dv->s->pool;
            x->device = dv->name;
            x->admin_access = r->admin ? 1 : -1;
            x->tolerations = r->rq->x->tolerations;
            x->ntolerations = r->rq->x->ntolerations;
            if (a->f_bind && (dv->flags & AL_DF_BINDLISTS)) {
                x->binding_conditions = dv->d->binding_conditions;
                x->nbinding_conditions = dv->d->nbinding_conditions;
                x->binding_failure_conditions = dv->d->binding_failure_conditions;
                x->nbinding_failure_conditions = dv->d->nbinding_failure_conditions;
            }
            if (r->shared)
                x->share_id = al_share_id(a, c, ci, i, r->dev);
            if (r->nconsumed) {
                x->consumed = AL_NEW(c->ar, dg_consumed, r->nconsumed);
                memcpy(x->consumed, r->consumed, r->nconsumed * sizeof *x->consumed);
                x->nconsumed = r->nconsumed;
                x->has_consumed = true;
                qsort_r(x->consumed, x->nconsumed, sizeof *x->consumed, cmp_consumed, a->in);
            }
            if (a->f_skipops) {
                x->skip_node_ops = dv->s->skip_node_ops;
                x->nskip_node_ops = dv->s->nskip_node_ops;
            }
        }
        build_config(c, ci, al);
        DE_TRY(node_selector(c, ci, al, e));
    }
    out->k8s_score = score;
    return DE_OK;
}
