/*
 * al_capacity.c - consumable capacity (DRAConsumableCapacity) arithmetic:
 * upstream's CmpRequestOverCapacity, calculateConsumedCapacity, roundUpRange,
 * roundUpValidValues and violatesPolicy.
 *
 * For every capacity of the candidate device: the amount consumed is the
 * request (rounded up by the capacity's requestPolicy), or when not requested
 * the policy default, or the full value; the amount must satisfy the policy;
 * already-aggregated (cluster) + being allocated in this attempt + consumed
 * must not exceed the value.  A request naming a capacity the device does not
 * have makes the device ineligible.  Capacity keys are compared literally, as
 * written in the slice and in the request (the 2026 allocator does a plain
 * map lookup).
 *
 * Rounding to a validRange step uses integer Value() arithmetic, as
 * v0.36.2 does; with DRAFractionalCapacityRange (beta, on in 1.37) a
 * fractional min, step or request switches to milli-unit arithmetic.
 */
#include "al_int.h"

uint32_t al_cap_key(al_allocator *a, const de_cap *cap, uint32_t driver)
{
    (void)driver;
    if (cap->bare)
        return cap->name;
    return al_internf(a, "%s/%s", al_str(a, cap->domain), al_str(a, cap->name));
}

static const uint32_t *cap_keys(al_call *c, uint32_t dev)
{
    al_dev *dv = &c->t->devs[dev];
    if (!c->capkeys[dev] && dv->d->ncaps) {
        uint32_t *k = AL_NEW(c->ar, uint32_t, dv->d->ncaps);
        for (uint32_t i = 0; i < dv->d->ncaps; i++)
            k[i] = al_cap_key(c->a, &dv->d->caps[i], dv->s->driver);
        c->capkeys[dev] = k;
    }
    return c->capkeys[dev];
}

/* whole and within int64: upstream's q == Value(q) (Value saturates), in
 * one exact test instead of a rounding, a conversion and a comparison */
static bool integral(de_qty q)
{
    int64_t v;
    return de_qty_int64_exact(q, &v);
}

/* milli arithmetic only for fractional values that milli units represent
 * exactly (DRAFractionalCapacityRange); integers keep the integer path */
static bool use_milli(al_call *c, de_qty req, const dg_reqpolicy *p)
{
    if (!c->a->f_frac)
        return false;
    if (integral(req) && integral(p->min) && (!p->has_step || integral(p->step)))
        return false;
    return de_qty_is_milli_exact(req) && de_qty_is_milli_exact(p->min) &&
           (!p->has_step || de_qty_is_milli_exact(p->step));
}

static de_qty round_range(al_call *c, de_qty req, const dg_reqpolicy *p)
{
    if (de_qty_cmp(req, p->min) < 0)
        return p->min;
    if (!p->has_step)
        return req;
    if (use_milli(c, req, p)) {
        int64_t r = de_qty_milli_value(req), st = de_qty_milli_value(p->step),
                mn = de_qty_milli_value(p->min);
        if (st <= 0)
            return req;
        int64_t added = r - mn, n = added / st;
        if (added % st)
            n++;
        return de_qty_from_milli(mn + st * n, DE_QFMT_DECIMAL_SI);
    }
    int64_t r = de_qty_value(req), st = de_qty_value(p->step), mn = de_qty_value(p->min);
    if (st <= 0)
        return req;
    int64_t added = r - mn, n = added / st;
    if (added % st)
        n++;
    return de_qty_from_int(mn + st * n, DE_QFMT_BINARY_SI);
}

static de_qty round_values(de_qty req, const dg_reqpolicy *p)
{
    for (uint32_t i = 0; i < p->nvalues; i++)
        if (de_qty_cmp(req, p->values[i]) <= 0)
            return p->values[i];
    return req;
}

static de_qty consumed_for(al_call *c, const de_cap *cap, const dg_reqpolicy *p, const de_qty *req)
{
    if (!req)
        return p && p->has_default ? p->dflt : cap->value;
    if (!p)
        return *req;
    if (p->kind == DG_RP_RANGE)
        return round_range(c, *req, p);
    if (p->kind == DG_RP_VALUES)
        return round_values(*req, p);
    return *req;
}

static bool violates(al_call *c, de_qty v, const dg_reqpolicy *p)
{
    if (!p)
        return false;
    if (p->has_default && de_qty_cmp(v, p->dflt) == 0)
        return false;
    if (p->kind == DG_RP_RANGE) {
        if (p->has_max && de_qty_cmp(v, p->max) > 0)
            return true;
        if (p->has_step) {
            if (use_milli(c, v, p)) {
                int64_t st = de_qty_milli_value(p->step);
                return st > 0 && (de_qty_milli_value(v) - de_qty_milli_value(p->min)) % st != 0;
            }
            int64_t st = de_qty_value(p->step);
            return st > 0 && (de_qty_value(v) - de_qty_value(p->min)) % st != 0;
        }
        return false;
    }
    if (p->kind == DG_RP_VALUES && p->nvalues) {
        for (uint32_t i = 0; i < p->nvalues; i++)
            if (de_qty_cmp(v, p->values[i]) == 0)
                return false;
        return true;
    }
    return false;
}

static const de_qty *requested(const al_rq *rq, uint32_t key)
{
    const dg_exact *x = rq->x;
    for (uint32_t i = 0; i < x->ncapacity; i++)
        if (x->capacity[i].key == key)
            return &x->capacity[i].value;
    return NULL;
}

/* the decoder gives every device with capacities a policy slot each */
static bool has_policy(const dg_device *d)
{
    for (uint32_t j = 0; d->policies && j < d->ncaps; j++)
        if (d->policies[j])
            return true;
    return false;
}

int al_capacity_fits(al_call *c, const al_rq *rq, uint32_t dev)
{
    const al_dev *dv = &c->t->devs[dev];
    /* has_capreq: the request's capacity is not empty (only the decoder
     * fills it, and sets has_capacity with it), read without the spec */
    if (!(dv->flags & AL_DF_CAPS) && !rq->has_capreq)
        return 1;
    const dg_exact *x = rq->x;
    const dg_device *d = dv->d;
    /* nothing asked, no policy, nothing consumed yet: each capacity's whole
     * value is consumed and fits itself (the loop below, without its key
     * strings and quantity arithmetic: every device of upstream's
     * benchmarks has capacities, so this is most of the checks) */
    if (!rq->has_capreq && !c->acap_present[dev] && !(c->t->agg && c->t->agg[dev].n) && !has_policy(d))
        return 1;
    const uint32_t *keys = cap_keys(c, dev);
    for (uint32_t i = 0; i < x->ncapacity; i++) {
        bool found = false;
        for (uint32_t j = 0; j < d->ncaps && !found; j++)
            found = keys[j] == x->capacity[i].key;
        if (!found)
            return -1;
    }
    const dg_consumed *agg = c->t->agg ? c->t->agg[dev].v : NULL;
    uint32_t nagg = c->t->agg ? c->t->agg[dev].n : 0;
    for (uint32_t j = 0; j < d->ncaps; j++) {
        const dg_reqpolicy *p = d->policies ? d->policies[j] : NULL;
        de_qty v = consumed_for(c, &d->caps[j], p, requested(rq, keys[j]));
        if (violates(c, v, p))
            return 0;
        de_qty total = v, r;
        for (uint32_t k = 0; k < nagg; k++)
            if (agg[k].key == keys[j] && de_qty_add(agg[k].value, total, &r) == DE_OK)
                total = r;
        if (c->acap_present[dev] && de_qty_add(total, c->acap[dev][j], &r) == DE_OK)
            total = r;
        if (de_qty_cmp(total, d->caps[j].value) > 0)
            return 0;
    }
    return 1;
}

void al_capacity_consumed(al_call *c, const al_rq *rq, uint32_t dev, dg_consumed **out, uint32_t *n)
{
    const dg_device *d = c->t->devs[dev].d;
    const uint32_t *keys = cap_keys(c, dev);
    *n = d->ncaps;
    *out = NULL;
    if (!d->ncaps)
        return;
    dg_consumed *v = AL_NEW(c->ar, dg_consumed, d->ncaps);
    for (uint32_t j = 0; j < d->ncaps; j++) {
        v[j].key = keys[j];
        v[j].value = consumed_for(c, &d->caps[j], d->policies ? d->policies[j] : NULL,
                                  requested(rq, keys[j]));
    }
    *out = v;
}

void al_acap_insert(al_call *c, uint32_t dev, const dg_consumed *v, uint32_t n)
{
    const dg_device *d = c->t->devs[dev].d;
    if (!c->acap[dev] && d->ncaps) {
        c->acap[dev] = AL_NEW(c->ar, de_qty, d->ncaps);
        for (uint32_t j = 0; j < d->ncaps; j++)
            c->acap[dev][j] = de_qty_from_int(0, DE_QFMT_DECIMAL_SI);
    }
    if (!c->acap_present[dev] && c->acap[dev])
        for (uint32_t j = 0; j < d->ncaps; j++)
            c->acap[dev][j] = de_qty_from_int(0, DE_QFMT_DECIMAL_SI);
    c->acap_present[dev] = true;
    for (uint32_t j = 0; j < n && j < d->ncaps; j++) {
        de_qty r;
        if (de_qty_add(c->acap[dev][j], v[j].value, &r) == DE_OK)
            c->acap[dev][j] = r;
    }
}

void al_acap_remove(al_call *c, uint32_t dev, const dg_consumed *v, uint32_t n)
{
    const dg_device *d = c->t->devs[dev].d;
    if (!c->acap_present[dev])
        return;
    bool zero = true;
    for (uint32_t j = 0; j < n && j < d->ncaps; j++) {
        de_qty r;
        if (de_qty_sub(c->acap[dev][j], v[j].value, &r) == DE_OK)
            c->acap[dev][j] = r;
    }
    for (uint32_t j = 0; j < d->ncaps; j++)
        if (!de_qty_is_zero(c->acap[dev][j]))
            zero = false;
    if (zero)
        c->acap_present[dev] = false;
}

bool al_capacity_in_use(const al_call *c, uint32_t dev)
{
    return (c->t->agg && c->t->agg[dev].v) || c->acap_present[dev];
}
