/*
 * al_compile.c - per-call compilation of the claims to allocate, and
 * upstream's pre-checks in their order (every one of them is a hard error,
 * not "unsatisfiable"): per claim, per request (subrequests in list order):
 * firstAvailable while DRAPrioritizedList is off, capacity requests while
 * DRAConsumableCapacity is off, selectors without CEL, adminAccess while
 * DRAAdminAccess is off, missing or unknown class, unknown allocation mode,
 * allocationMode All on an incomplete or invalid pool (and CEL errors met
 * while collecting the "all" devices); then per claim the 32-device minimum
 * and constraints of no known kind.
 */
#include "al_int.h"

#include <stdio.h>

/* klog.KObj: "ns/name", or "name" for an object written without a
 * namespace (upstream sees the object as given; the graph files it under
 * "default") */
const char *al_kobj(al_call *c, const al_claimc *cc)
{
    al_allocator *a = c->a;
    const dg_claim *cl = cc->c;
    json_t *j = dg_claim_json(a->g, cc->id);
    json_t *m = j ? json_object_get(j, "metadata") : NULL;
    bool written = !j || (m && json_is_string(json_object_get(m, "namespace")));
    if (cl->meta.ns && written)
        return de_arena_printf(c->ar, "%s/%s", al_str(a, cl->meta.ns), al_str(a, cl->meta.name));
    return al_str(a, cl->meta.name);
}

const dg_exact al_exact_none = {.admin_access = -1};

static de_rc raise_poison(al_call *c, al_rq *rq, uint32_t dev, de_err *e)
{
    const al_cset *cs = rq->cs;
    const char *m = cs->poison_msg ? cs->poison_msg[dev] : "selector evaluation failed";
    if (cs->poison_kind && cs->poison_kind[dev])
        return de_errf(e, DE_EINVAL, "claim %s: %s", al_kobj(c, &c->claims[rq->claim]), m);
    return de_errf(e, DE_EINVAL, "%s", m);
}

de_rc al_selectable(al_call *c, al_rq *rq, uint32_t dev, bool *ok)
{
    if (de_bit_get(rq->cs->poison, dev)) {
        *ok = false;
        return raise_poison(c, rq, dev, c->e);
    }
    *ok = de_bit_get(rq->cs->cand, dev);
    return DE_OK;
}

static de_rc validate_rq(al_call *c, al_claimc *cc, al_rq *rq, de_err *e)
{
    al_allocator *a = c->a;
    const dg_exact *x = rq->x;
#define cn al_kobj(c, cc)
    const char *rn = al_str(a, rq->is_sub ? rq->sub_name : rq->base_name);
    for (uint32_t i = 0; i < x->nselectors; i++)
        if (!x->selectors[i].has_cel)
            return de_errf(e, DE_EINVAL,
                           "claim %s, request %s, selector #%u: CEL expression empty (unsupported selector type?)",
                           cn, rn, i);
    if (!a->f_admin && x->admin_access >= 0)
        return de_errf(e, DE_EINVAL, "claim %s, request %s: admin access is requested, but the feature is disabled",
                       cn, rn);
    if (!x->class_name)
        return de_errf(e, DE_EINVAL,
                       "claim %s, request %s: missing device class name (unsupported request type?)", cn, rn);
    uint32_t cid = dg_class_find(a->g, x->class_name);
    rq->cls = cid == DG_NONE ? NULL : dg_class_get(a->g, cid);
    if (!rq->cls)
        return de_errf(e, DE_ENOTFOUND,
                       "claim %s, request %s: could not retrieve device class %s: deviceclass.resource.k8s.io \"%s\" not found",
                       cn, rn, al_str(a, x->class_name), al_str(a, x->class_name));
    rq->admin = x->admin_access == 1;
    rq->ss = al_selset_get(a, x->class_name, x->selectors, x->nselectors);
    rq->cs = al_cset_get(a, c->t, rq->ss);
    rq->has_capreq = x->has_capacity && x->ncapacity;
    /* KEP-6080 derived attributes */
    if (a->f_derived && x->nderived) {
        rq->nderived = x->nderived;
        rq->derived = AL_NEW(c->ar, al_derived, x->nderived);
        for (uint32_t i = 0; i < x->nderived; i++) {
            al_derived *d = &rq->derived[i];
            d->domain = x->derived[i].domain;
            d->id = x->derived[i].id;
            d->expr = x->derived[i].expr;
            de_err ce;
            de_err_clear(&ce);
            if (cel_compile_derived(a->cel, al_str(a, d->expr), de_intern_len(a->in, d->expr), &d->prog, &ce) !=
                DE_OK) {
                d->prog = NULL;
                d->compile_err = de_arena_strdup(c->ar, ce.msg);
            }
        }
        rq->dval = AL_NEW(c->ar, de_attrval, (size_t)c->t->ndev * x->nderived);
        rq->dstate = AL_NEW(c->ar, uint8_t, (size_t)c->t->ndev * x->nderived);
    }
    switch (x->mode) {
    case DG_AMODE_EXACT_COUNT:
        rq->need = x->count;
        return DE_OK;
    case DG_AMODE_ALL:
        break;
    default:
        return de_errf(e, DE_EINVAL, "claim %s, request %s: unsupported count mode %s", cn, rn,
                       x->mode_raw ? al_str(a, x->mode_raw) : "");
    }
    rq->all = true;
    al_ntab *t = c->t;
    rq->all_devs = AL_NEW(c->ar, uint32_t, t->ndev ? t->ndev : 1);
    /* the table's pools merged with the foreign counter pools' problems
     * (al_fpools.c): the first problem in upstream's pool order fails */
    uint32_t fcur = 0;
    al_pool fp;
    for (uint32_t p = 0; p <= t->npools; p++) {
        const al_pool *pl = p < t->npools ? &t->pools[p] : NULL;
        if (al_fprob_next(a, t, &fcur, pl, &fp))
            pl = &fp;
        else if (!pl)
            break;
        if (pl->state == AL_POOL_INCOMPLETE)
            return de_errf(e, DE_EINVAL,
                           "claim %s, request %s: asks for all devices, but resource pool %s/%s is currently being updated",
                           cn, rn, al_str(a, pl->driver), al_str(a, pl->name));
        if (pl->state == AL_POOL_INVALID)
            return de_errf(e, DE_EINVAL,
                           "claim %s, request %s: asks for all devices, but resource pool %s/%s is currently invalid",
                           cn, rn, al_str(a, pl->driver), al_str(a, pl->name));
        for (uint32_t i = pl->dev_first; i < pl->dev_first + pl->ndev; i++) {
            bool ok;
            c->e = e;
            if (al_selectable(c, rq, i, &ok) != DE_OK)
                return e->rc;
            if (!ok)
                continue;
            if (a->f_cc && al_capacity_fits(c, rq, i) != 1)
                continue;
            rq->all_devs[rq->nall++] = i;
        }
    }
    rq->need = rq->nall;
    return DE_OK;
#undef cn
}

/* The halves of a constraint's attribute name, remembered per name: every
 * pod from one template asks again, and interning both halves cost more than
 * the rest of the constraint's compilation.  Names in claims are interned
 * for good (dec_get_id), so an id never comes to mean another string. */
static uint32_t split_domain(al_allocator *a, uint32_t fqn, uint32_t *id)
{
    uint64_t v;
    if (de_map_get(&a->attr_split, fqn, &v)) {
        *id = (uint32_t)v;
        return (uint32_t)(v >> 32);
    }
    uint32_t dom = 0;
    const char *s = al_str(a, fqn);
    const char *slash = strchr(s, '/');
    if (!slash) {
        *id = fqn;
    } else {
        *id = de_intern(a->in, slash + 1, strlen(slash + 1));
        dom = de_intern(a->in, s, (size_t)(slash - s));
    }
    de_map_put(&a->attr_split, fqn, de_pack2(dom, *id));
    return dom;
}

/* One claim, from its spec: upstream's checks in their order. */
static de_rc compile_claim(al_call *c, al_claimc *cc, uint32_t ci, de_err *e)
{
    al_allocator *a = c->a;
    const dg_claim_spec *sp = &cc->c->spec;
#define cn al_kobj(c, cc)
    cc->nreq = sp->nrequests;
    cc->req = AL_NEW(c->ar, al_req, sp->nrequests ? sp->nrequests : 1);
    int64_t min_claim = 0;
    for (uint32_t ri = 0; ri < sp->nrequests; ri++) {
        const dg_request *r = &sp->requests[ri];
        al_req *rr = &cc->req[ri];
        bool subs = r->nsubs > 0;
        if (!a->f_prio && subs)
            return de_errf(e, DE_EINVAL,
                           "claim %s, request %s: has subrequests, but the DRAPrioritizedList feature is disabled",
                           cn, al_str(a, r->name));
        if (!a->f_cc) {
            if (r->has_exactly && r->exactly.has_capacity)
                return de_errf(e, DE_EINVAL,
                               "claim %s, request %s: has capacity requests, but the DRAConsumableCapacity feature is disabled",
                               cn, al_str(a, r->name));
            for (uint32_t s = 0; s < r->nsubs; s++)
                if (r->subs[s].has_capacity)
                    return de_errf(e, DE_EINVAL,
                                   "claim %s, subrequest %s: has capacity requests, but the DRAConsumableCapacity feature is disabled",
                                   cn, al_str(a, r->subs[s].name));
        }
        rr->has_subs = subs;
        rr->nrq = subs ? r->nsubs : 1;
        rr->rq = AL_NEW(c->ar, al_rq, rr->nrq);
        rr->chosen = -1;
        int64_t min_req = INT64_MAX;
        for (uint32_t s = 0; s < rr->nrq; s++) {
            al_rq *rq = &rr->rq[s];
            rq->claim = ci;
            rq->req = ri;
            rq->sub = s;
            rq->is_sub = subs;
            rq->base_name = r->name;
            if (subs) {
                rq->x = &r->subs[s];
                rq->sub_name = r->subs[s].name;
                rq->full_name = al_internf(a, "%s/%s", al_str(a, r->name), al_str(a, rq->sub_name));
            } else {
                rq->x = r->has_exactly ? &r->exactly : &al_exact_none;
                rq->full_name = r->name;
            }
            de_rc rc = validate_rq(c, cc, rq, e);
            if (rc != DE_OK)
                return rc;
            if (rq->need < min_req)
                min_req = rq->need;
        }
        min_claim += min_req;
    }
    if (min_claim > AL_MAX_RESULTS)
        return de_errf(e, DE_EINVAL, "claim %s: number of requested devices %lld exceeds the claim limit of %d",
                       cn, (long long)min_claim, AL_MAX_RESULTS);
    cc->ncons = sp->nconstraints;
    cc->cons = AL_NEW(c->ar, al_cons, sp->nconstraints ? sp->nconstraints : 1);
    for (uint32_t k = 0; k < sp->nconstraints; k++) {
        const dg_constraint *dc = &sp->constraints[k];
        al_cons *kk = &cc->cons[k];
        if (dc->match_attribute) {
            kk->kind = AL_CK_MATCH;
            kk->name = dc->match_attribute;
        } else if (dc->distinct_attribute) {
            kk->kind = AL_CK_DISTINCT;
            kk->name = dc->distinct_attribute;
        } else {
            return de_errf(e, DE_EINVAL, "claim %s, constraint #%u: empty constraint (unsupported constraint type?)",
                           cn, k);
        }
        kk->domain = split_domain(a, kk->name, &kk->id);
        kk->reqs = dc->requests;
        kk->nreqs = dc->nrequests;
    }
    /* which constraints apply to which (sub)request */
    for (uint32_t ri = 0; ri < cc->nreq; ri++)
        for (uint32_t s = 0; s < cc->req[ri].nrq; s++) {
            al_rq *rq = &cc->req[ri].rq[s];
            if (!cc->ncons)
                continue;
            rq->cons = AL_NEW(c->ar, uint32_t, cc->ncons);
            for (uint32_t k = 0; k < cc->ncons; k++)
                if (al_cons_applies(&cc->cons[k], rq))
                    rq->cons[rq->ncons++] = k;
        }
#undef cn
    return DE_OK;
}

de_rc al_call_compile(al_call *c, const uint32_t *claims, uint32_t nclaims, de_err *e)
{
    al_allocator *a = c->a;
    c->nclaims = nclaims;
    c->claims = AL_NEW(c->ar, al_claimc, nclaims ? nclaims : 1);
    for (uint32_t ci = 0; ci < nclaims; ci++) {
        al_claimc *cc = &c->claims[ci];
        cc->id = claims[ci];
        cc->c = dg_claim_get(a->g, claims[ci]);
        if (!cc->c)
            return de_errf(e, DE_ENOTFOUND, "claim #%u does not exist", claims[ci]);
        cc->mine = AL_NEW(c->ar, uint64_t, c->nwords);
        int cached = al_ccache_get(c, cc, ci);
        if (cached == 1)
            continue;
        DE_TRY(compile_claim(c, cc, ci, e));
        if (cached == 0)
            al_ccache_put(a, cc);
    }
    return DE_OK;
}
