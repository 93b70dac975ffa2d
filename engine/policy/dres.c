/*
 * dres.c - the derive memo's table of distinct answers: the trie's leaf
 * (memo.c) holds an index into it, and equal answers of many devices are
 * filed once (hooks.c, "the derive memo", says how calls are traced).
 */
#include "../base/map.h"
#include "pol_int.h"

#include <stdlib.h>
#include <string.h>

#define DRES_MAX 4096

typedef struct dres_ent {
    cattr *a;
    uint32_t n;
} dres_ent;

struct pol_dres {
    dres_ent *e;
    uint32_t n, cap;
    de_map by_hash; /* content hash -> index + 1 */
};

void pol_dres_free(pol_policy *p)
{
    pol_memo_free(p->dmemo);
    p->dmemo = NULL;
    if (!p->dres)
        return;
    for (uint32_t i = 0; i < p->dres->n; i++)
        free(p->dres->e[i].a);
    free(p->dres->e);
    de_map_destroy(&p->dres->by_hash);
    free(p->dres);
    p->dres = NULL;
}

static uint64_t cattr_hash(const cattr *a, uint32_t n)
{
    uint64_t h = de_hash_u64(n);
    for (uint32_t i = 0; i < n; i++) {
        h = de_hash_u64(h ^ ((uint64_t)a[i].domain << 32 | a[i].name));
        h = de_hash_u64(h ^ ((uint64_t)a[i].v.kind << 32 | a[i].v.n));
        switch (a[i].v.kind) {
        case DE_V_INT: h = de_hash_u64(h ^ (uint64_t)a[i].v.u.i); break;
        case DE_V_BOOL: h = de_hash_u64(h ^ a[i].v.u.b); break;
        case DE_V_STRING:
        case DE_V_VERSION: h = de_hash_u64(h ^ a[i].v.u.s); break;
        default: h ^= de_hash_bytes(a[i].vals, de_attrval_list_bytes(&a[i].v)); break;
        }
    }
    return h;
}

static bool cattr_same(const cattr *x, const cattr *y, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        if (x[i].domain != y[i].domain || x[i].name != y[i].name || x[i].v.kind != y[i].v.kind ||
            x[i].v.n != y[i].v.n)
            return false;
        size_t pb = de_attrval_list_bytes(&x[i].v);
        if (pb ? memcmp(x[i].vals, y[i].vals, pb) : memcmp(&x[i].v.u, &y[i].v.u, sizeof x[i].v.u))
            return false;
    }
    return true;
}

uint32_t pol_dres_put(pol_policy *p, const cattr *a, uint32_t n)
{
    if (!p->dres) {
        p->dres = de_xcalloc(1, sizeof *p->dres);
        de_map_init(&p->dres->by_hash);
    }
    struct pol_dres *d = p->dres;
    uint64_t h = cattr_hash(a, n), v;
    if (de_map_get(&d->by_hash, h, &v) && d->e[v - 1].n == n && cattr_same(d->e[v - 1].a, a, n))
        return (uint32_t)v - 1;
    if (d->n == DRES_MAX)
        return UINT32_MAX;
    if (d->n == d->cap) {
        d->cap = d->cap ? d->cap * 2 : 64;
        d->e = de_xrealloc(d->e, d->cap * sizeof *d->e);
    }
    dres_ent *x = &d->e[d->n];
    x->n = n;
    x->a = n ? de_xmalloc(n * sizeof *x->a) : NULL;
    if (n)
        memcpy(x->a, a, n * sizeof *a);
    de_map_put(&d->by_hash, h, d->n + 1);
    return d->n++;
}

/* Copy a filed answer into `out` (POL_MAX_DERIVED); list payloads point
 * into each copy's own vals.  Returns the count. */
uint32_t pol_dres_get(const pol_policy *p, uint32_t i, cattr *out)
{
    const dres_ent *x = &p->dres->e[i];
    for (uint32_t k = 0; k < x->n; k++) {
        out[k] = x->a[k];
        if (de_attrval_list_bytes(&out[k].v))
            out[k].v.u.ints = (const int64_t *)out[k].vals;
    }
    return x->n;
}
