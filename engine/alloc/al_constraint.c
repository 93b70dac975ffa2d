/*
 * al_constraint.c - matchAttribute and distinctAttribute, with the exact
 * bookkeeping upstream keeps (so a search that backtracks ends in the same
 * state as upstream's, quirks included):
 *
 *  - matchAttribute, scalar mode (DRAListTypeAttributes off): the first
 *    device's attribute is remembered as is; later devices must have a scalar
 *    of the same kind and value.  Removal only decrements the count.
 *  - matchAttribute, list mode: values become sets (scalar = one element); a
 *    device is accepted while the running intersection stays non-empty; the
 *    intersection narrows on add and is NOT widened on removal (it restarts
 *    when the count returns to zero) - upstream's behaviour, kept.
 *  - distinctAttribute: every device's value is kept, newest last; a device
 *    must differ from all of them (scalars: same kind and value is a clash,
 *    another kind is not; lists: disjoint sets, and a device without a value
 *    set is refused even as the first), and a removal drops the newest
 *    (k8s.io/dynamic-resource-allocation v0.37.2, kube-scheduler 1.37).
 *    v0.36.2 kept one value per request name, so within a request of count
 *    3 the third device was compared with the second only: [0, 1, 0] passed.
 *    The shared vectors were made with v0.36.2; none depends on that (all
 *    146 pass either way), and the real kube-scheduler 1.37.2 refuses it
 *    (spec/e2e/diff's numa-spread pods, seed 2).
 *
 * Attribute lookup: "domain/id" exactly, else the bare id when the domain is
 * the device's driver.  Policy-derived attributes (written into the graph by
 * the policy host) are consulted first, and with DRADerivedAttributes a
 * derived attribute of the requesting (sub)request shadows both (KEP-6080);
 * it is evaluated lazily, once per device and request, and a CEL error is a
 * hard error.
 */
#include "al_int.h"

#include <stdlib.h>

bool al_cons_applies(const al_cons *k, const al_rq *rq)
{
    if (!k->nreqs)
        return true;
    for (uint32_t i = 0; i < k->nreqs; i++) {
        if (k->reqs[i] == rq->base_name)
            return true;
        if (rq->is_sub && k->reqs[i] == rq->full_name)
            return true;
    }
    return false;
}

static const de_attr *find_in(const de_attr *at, uint32_t n, uint32_t domain, uint32_t id,
                              uint32_t driver)
{
    if (!domain) {
        /* not a fully qualified name: only the literal (bare) key matches */
        for (uint32_t i = 0; i < n; i++)
            if (at[i].bare && at[i].name == id)
                return &at[i];
        return NULL;
    }
    for (uint32_t i = 0; i < n; i++)
        if (!at[i].bare && at[i].domain == domain && at[i].name == id)
            return &at[i];
    if (domain != driver)
        return NULL;
    for (uint32_t i = 0; i < n; i++)
        if (at[i].bare && at[i].name == id)
            return &at[i];
    return NULL;
}

const de_attr *al_lookup_attr(const al_call *c, uint32_t dev, uint32_t domain, uint32_t id,
                              const de_devview *view)
{
    (void)c;
    (void)dev;
    const de_attr *at = NULL;
    if (view->nderived)
        at = find_in(view->derived, view->nderived, domain, id, view->driver);
    if (!at)
        at = find_in(view->attrs, view->nattrs, domain, id, view->driver);
    return at;
}

/* The device's own value of constraint k's attribute (policy-derived
 * attributes included, request-derived ones not), cached per call. */
const de_attrval *al_cons_value(al_call *c, al_cons *k, uint32_t d, bool *found)
{
    if (!k->ks) {
        k->ks = AL_NEW(c->ar, uint8_t, c->t->ndev ? c->t->ndev : 1);
        k->kv = AL_NEW(c->ar, de_attrval, c->t->ndev ? c->t->ndev : 1);
    }
    if (!k->ks[d]) {
        de_devview view;
        dg_device_view(c->a->g, c->t->devs[d].devid, &view);
        const de_attr *at = al_lookup_attr(c, d, k->domain, k->id, &view);
        if (at) {
            k->kv[d] = at->v;
            k->ks[d] = 1;
        } else {
            k->ks[d] = 2;
        }
    }
    *found = k->ks[d] == 1;
    return &k->kv[d];
}

/* The value a constraint sees for `dev` chosen by `rq`: *found false when the
 * device lacks it. */
static de_rc lookup(al_call *c, const al_cons *k, al_rq *rq, uint32_t dev, de_attrval *out,
                    bool *found, bool *derived)
{
    al_allocator *a = c->a;
    *found = false;
    *derived = false;
    for (uint32_t i = 0; i < rq->nderived; i++) {
        al_derived *d = &rq->derived[i];
        if (d->domain != k->domain || d->id != k->id)
            continue;
        size_t slot = (size_t)dev * rq->nderived + i;
        if (rq->dstate[slot] == 0) {
            const al_dev *dv = &c->t->devs[dev];
            const char *cn = al_kobj(c, &c->claims[rq->claim]);
            if (!d->prog)
                return de_errf(c->e, DE_EINVAL, "claim %s, request %s: derived attribute %s: CEL compile error: %s",
                               cn, al_str(a, rq->full_name), al_str(a, k->name), d->compile_err);
            de_devview view;
            dg_device_view(a->g, dv->devid, &view);
            de_err e;
            de_err_clear(&e);
            if (cel_eval_attr(a->cel, d->prog, &view, c->ar, &rq->dval[slot], &e) != DE_OK)
                return de_errf(c->e, DE_EINVAL,
                               "claim %s, request %s: derived attribute %s on device %s/%s/%s: CEL runtime error: %s",
                               cn, al_str(a, rq->full_name), al_str(a, k->name), al_str(a, dv->s->driver),
                               al_str(a, dv->s->pool), al_str(a, dv->name), e.msg);
            rq->dstate[slot] = 1;
        }
        *out = rq->dval[slot];
        *found = true;
        *derived = true;
        return DE_OK;
    }
    const de_attrval *v = al_cons_value(c, (al_cons *)k, dev, found);
    if (*found)
        *out = *v;
    return DE_OK;
}

/* ---- value sets ------------------------------------------------------------------ */

static int cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

/* attributeAsSet: lists by their element kind (non-empty), then scalars;
 * anything else is nil (kind 0). */
static void as_set(de_arena *ar, const de_attrval *v, al_vset *s)
{
    s->n = 0;
    s->kind = 0;
    uint32_t n = de_vkind_is_list(v->kind) ? v->n : 1;
    if (v->kind == DE_V_NONE || n == 0)
        return;
    if (s->cap < n) {
        s->v = AL_NEW(ar, uint64_t, n);
        s->cap = n;
    }
    s->kind = (uint8_t)de_vkind_scalar(v->kind);
    for (uint32_t i = 0; i < n; i++) {
        switch (v->kind) {
        case DE_V_INT: s->v[i] = (uint64_t)v->u.i; break;
        case DE_V_BOOL: s->v[i] = v->u.b; break;
        case DE_V_STRING:
        case DE_V_VERSION: s->v[i] = v->u.s; break;
        case DE_V_INTS: s->v[i] = (uint64_t)v->u.ints[i]; break;
        case DE_V_BOOLS: s->v[i] = v->u.bools[i]; break;
        default: s->v[i] = v->u.strs[i]; break;
        }
    }
    qsort(s->v, n, sizeof *s->v, cmp_u64);
    uint32_t m = 0;
    for (uint32_t i = 0; i < n; i++)
        if (!m || s->v[m - 1] != s->v[i])
            s->v[m++] = s->v[i];
    s->n = m;
}

/* the device's value as a set: cached per (constraint, device) unless it
 * came from a request's derived attribute */
static const al_vset *set_of(al_call *c, al_cons *k, uint32_t dev, const de_attrval *v, bool derived)
{
    if (derived) {
        al_vset *s = AL_NEW(c->ar, al_vset, 1);
        as_set(c->ar, v, s);
        return s;
    }
    if (!k->dset)
        k->dset = AL_NEW(c->ar, al_vset *, c->t->ndev ? c->t->ndev : 1);
    if (!k->dset[dev]) {
        al_vset *s = AL_NEW(c->ar, al_vset, 1);
        as_set(c->ar, v, s);
        k->dset[dev] = s;
    }
    return k->dset[dev];
}

static bool intersects(const al_vset *x, const al_vset *y)
{
    if (!x->kind || x->kind != y->kind)
        return false;
    uint32_t i = 0, j = 0;
    while (i < x->n && j < y->n) {
        if (x->v[i] == y->v[j])
            return true;
        if (x->v[i] < y->v[j])
            i++;
        else
            j++;
    }
    return false;
}

static void narrow(al_vset *x, const al_vset *y)
{
    uint32_t i = 0, j = 0, m = 0;
    while (i < x->n && j < y->n) {
        if (x->v[i] == y->v[j]) {
            x->v[m++] = x->v[i];
            i++;
            j++;
        } else if (x->v[i] < y->v[j]) {
            i++;
        } else {
            j++;
        }
    }
    x->n = m;
}

/* ---- add / remove ------------------------------------------------------------------ */

static de_rc match_add(al_call *c, al_cons *k, const de_attrval *v, const al_vset *sp, bool *ok)
{
    if (!c->a->f_list) {
        if (k->ndev == 0) {
            k->first = *v;
            k->ndev = 1;
            *ok = true;
            return DE_OK;
        }
        *ok = al_values_equal(v, &k->first);
        if (*ok)
            k->ndev++;
        return DE_OK;
    }
    const al_vset s = *sp;
    if (!s.kind) {
        *ok = false;
        return DE_OK;
    }
    if (k->ndev == 0) {
        if (k->inter.cap < s.n) {
            k->inter.v = AL_NEW(c->ar, uint64_t, s.n);
            k->inter.cap = s.n;
        }
        memcpy(k->inter.v, s.v, s.n * sizeof *s.v);
        k->inter.n = s.n;
        k->inter.kind = s.kind;
        k->ndev = 1;
        *ok = true;
        return DE_OK;
    }
    if (!intersects(&k->inter, &s)) {
        *ok = false;
        return DE_OK;
    }
    narrow(&k->inter, &s);
    k->ndev++;
    *ok = true;
    return DE_OK;
}

static bool distinct_ok(al_call *c, al_cons *k, const de_attrval *v, const al_vset *s)
{
    if (c->a->f_list) {
        if (!s->kind)
            return false;
        for (uint32_t i = 0; i < k->ndev; i++) {
            const al_vset *t = k->held[i].set;
            if (!t->kind)
                continue;
            if (intersects(s, t))
                return false;
        }
        return true;
    }
    for (uint32_t i = 0; i < k->ndev; i++) {
        const de_attrval *e = &k->held[i].v;
        switch (v->kind) {
        case DE_V_INT:
        case DE_V_BOOL:
        case DE_V_STRING:
        case DE_V_VERSION:
            if (al_values_equal(v, e))
                return false;
            break;
        default:
            return false;
        }
    }
    return true;
}

/* The values of the devices the constraint holds, in the order they were
 * added: each new one must differ from all of them, and a removal drops the
 * newest, as the search removes devices in the reverse order it adds them. */
static void stack_push(al_call *c, al_cons *k, const de_attrval *v, const al_vset *set)
{
    if (k->ndev == k->capheld) {
        uint32_t cap = k->capheld ? k->capheld * 2 : 8;
        al_dentry *m = AL_NEW(c->ar, al_dentry, cap);
        if (k->ndev)
            memcpy(m, k->held, k->ndev * sizeof *m);
        k->held = m;
        k->capheld = cap;
    }
    k->held[k->ndev++] = (al_dentry){*v, set};
}

de_rc al_cons_add(al_call *c, al_cons *k, al_rq *rq, uint32_t dev, bool *ok)
{
    de_attrval v;
    bool found, derived;
    DE_TRY(lookup(c, k, rq, dev, &v, &found, &derived));
    if (!found) {
        *ok = false;
        return DE_OK;
    }
    const al_vset *set = c->a->f_list ? set_of(c, k, dev, &v, derived) : NULL;
    if (k->kind == AL_CK_MATCH)
        return match_add(c, k, &v, set, ok);
    if (distinct_ok(c, k, &v, set)) {
        stack_push(c, k, &v, set);
        *ok = true;
    } else {
        *ok = false;
    }
    return DE_OK;
}

void al_cons_remove(al_call *c, al_cons *k, al_rq *rq, uint32_t dev)
{
    (void)c;
    (void)rq;
    (void)dev;
    k->ndev--; /* distinct: drops the top of the stack of held values */
}
