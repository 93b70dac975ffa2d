/*
 * dec_copy.c - deep copy of a decoded ResourceSlice or Node into another
 * arena.
 *
 * Slices are decoded into a scratch arena that is reset for every object and
 * then copied into an arena whose single chunk is exactly the size used: the
 * copy makes the same allocations in the same order, so it fits.  This is
 * what keeps a 100,000-device graph at its real size instead of paying for
 * estimated or doubling chunks.
 */
#include "dec.h"

#include <string.h>

#define CP(a, dst, src, n)                                                        \
    do {                                                                          \
        if ((n) && (src)) {                                                       \
            (dst) = de_arena_alloc((a), sizeof(*(src)) * (size_t)(n));            \
            if (!(dst))                                                           \
                return false;                                                     \
            memcpy((void *)(dst), (src), sizeof(*(src)) * (size_t)(n));           \
        } else {                                                                  \
            (dst) = NULL;                                                         \
        }                                                                         \
    } while (0)

static bool copy_nodesel(de_arena *a, dg_nodesel *s)
{
    dg_term *terms;
    CP(a, terms, s->terms, s->nterms);
    s->terms = terms;
    for (uint32_t i = 0; i < s->nterms; i++) {
        dg_term *t = &s->terms[i];
        dg_requirement *r;
        CP(a, r, t->exprs, t->nexprs);
        t->exprs = r;
        CP(a, r, t->fields, t->nfields);
        t->fields = r;
        for (int k = 0; k < 2; k++) {
            dg_requirement *q = k ? t->fields : t->exprs;
            uint32_t n = k ? t->nfields : t->nexprs;
            for (uint32_t j = 0; j < n; j++) {
                uint32_t *v;
                CP(a, v, q[j].values, q[j].nvalues);
                q[j].values = v;
            }
        }
    }
    return true;
}

static bool copy_meta(de_arena *a, dg_meta *m)
{
    dg_kv *kv;
    CP(a, kv, m->labels, m->nlabels);
    m->labels = kv;
    CP(a, kv, m->annotations, m->nannotations);
    m->annotations = kv;
    uint32_t *f;
    CP(a, f, m->finalizers, m->nfinalizers);
    m->finalizers = f;
    dg_ownerref *o;
    CP(a, o, m->owners, m->nowners);
    m->owners = o;
    return true;
}

static size_t list_bytes(const de_attrval *v)
{
    switch (v->kind) {
    case DE_V_INTS: return sizeof(int64_t);
    case DE_V_BOOLS: return sizeof(bool);
    case DE_V_STRINGS:
    case DE_V_VERSIONS: return sizeof(uint32_t);
    default: return 0;
    }
}

static bool copy_device(de_arena *a, dg_device *d)
{
    de_attr *attrs;
    CP(a, attrs, d->attrs, d->nattrs);
    d->attrs = attrs;
    for (uint32_t i = 0; i < d->nattrs; i++) {
        de_attrval *v = &d->attrs[i].v;
        size_t eb = list_bytes(v);
        if (!eb || !v->n || !v->u.ints)
            continue;
        void *p = de_arena_alloc(a, eb * v->n);
        if (!p)
            return false;
        memcpy(p, v->u.ints, eb * v->n);
        v->u.ints = p;
    }
    de_cap *caps;
    CP(a, caps, d->caps, d->ncaps);
    d->caps = caps;
    if (d->policies) {
        dg_reqpolicy **pol;
        CP(a, pol, d->policies, d->ncaps);
        d->policies = pol;
        for (uint32_t i = 0; pol && i < d->ncaps; i++) {
            if (!pol[i])
                continue;
            dg_reqpolicy *p;
            CP(a, p, pol[i], 1);
            de_qty *vals;
            CP(a, vals, p->values, p->nvalues);
            p->values = vals;
            pol[i] = p;
        }
    }
    dg_consumption *c;
    CP(a, c, d->consumes, d->nconsumes);
    d->consumes = c;
    for (uint32_t i = 0; i < d->nconsumes; i++) {
        dg_counter *k;
        CP(a, k, d->consumes[i].counters, d->consumes[i].ncounters);
        d->consumes[i].counters = k;
    }
    dg_taint *t;
    CP(a, t, d->taints, d->ntaints);
    d->taints = t;
    uint32_t *ids;
    CP(a, ids, d->binding_conditions, d->nbinding_conditions);
    d->binding_conditions = ids;
    CP(a, ids, d->binding_failure_conditions, d->nbinding_failure_conditions);
    d->binding_failure_conditions = ids;
    if (!copy_nodesel(a, &d->node_selector))
        return false;
    dg_nar *n;
    CP(a, n, d->nars, d->nnars);
    d->nars = n;
    return true;
}

dg_slice *dg_slice_copy(const dg_slice *src, de_arena *a)
{
    dg_slice *s = de_arena_alloc(a, sizeof *s);
    if (!s)
        return NULL;
    *s = *src;
    if (!copy_meta(a, &s->meta) || !copy_nodesel(a, &s->node_selector))
        return NULL;
    dg_device *devs;
    CP(a, devs, src->devices, src->ndevices);
    s->devices = devs;
    for (uint32_t i = 0; i < s->ndevices; i++)
        if (!copy_device(a, &s->devices[i]))
            return NULL;
    dg_counterset *cs;
    CP(a, cs, src->countersets, src->ncountersets);
    s->countersets = cs;
    for (uint32_t i = 0; i < s->ncountersets; i++) {
        dg_counter *k;
        CP(a, k, s->countersets[i].counters, s->countersets[i].ncounters);
        s->countersets[i].counters = k;
    }
    uint32_t *ids;
    CP(a, ids, src->skip_node_ops, src->nskip_node_ops);
    s->skip_node_ops = ids;
    return s;
}

dg_node *dg_node_copy(const dg_node *src, de_arena *a)
{
    dg_node *n = de_arena_alloc(a, sizeof *n);
    if (!n)
        return NULL;
    *n = *src;
    if (!copy_meta(a, &n->meta))
        return NULL;
    dg_resource_amount *am;
    CP(a, am, src->allocatable, src->nallocatable);
    n->allocatable = am;
    dg_node_taint *t;
    CP(a, t, src->taints, src->ntaints);
    n->taints = t;
    uint32_t *ids;
    CP(a, ids, src->declared_features, src->ndeclared_features);
    n->declared_features = ids;
    return n;
}
