/*
 * memo.c - selector results per (program, device, device generation).
 *
 * Layout: one dense array per program, indexed by device id, each slot
 * holding (generation + 1) << 1 | result (0 = never evaluated).  Device ids
 * are the graph's dense ids, so a lookup is one indexed load and a scan of
 * the devices in id order walks memory sequentially; a device whose
 * generation moved on simply misses and is overwritten, nothing is ever
 * invalidated explicitly.  Ids above MEMO_DENSE_MAX (not expected from the
 * graph) go to a hash map instead.  Program ids are per env: a memo serves
 * the programs of one env.  Errors are never stored: they abort the
 * allocation and must be reported every time.
 */
#include "cel_int.h"

#include <stdlib.h>
#include <string.h>

#define MEMO_DENSE_MAX (1u << 24)

typedef struct memo_tab {
    uint64_t *slot;
    uint32_t cap;
} memo_tab;

#define MEMO_SPARES 4

struct cel_memo {
    memo_tab *tabs; /* by program id - base */
    uint32_t ntabs;
    memo_tab spare[MEMO_SPARES]; /* touched, zeroed tables for new programs (cel_memo_reserve) */
    uint32_t nspare;
    uint32_t base;  /* programs below it were collected (cel_memo_forget_before) */
    de_map sparse;  /* (prog, dev) -> slot value, for huge ids */
    uint64_t hits, misses;
};

cel_memo *cel_memo_new(void)
{
    cel_memo *m = de_xcalloc(1, sizeof *m);
    de_map_init(&m->sparse);
    return m;
}

void cel_memo_free(cel_memo *m)
{
    if (!m)
        return;
    for (uint32_t i = 0; i < m->ntabs; i++)
        free(m->tabs[i].slot);
    for (uint32_t i = 0; i < m->nspare; i++)
        free(m->spare[i].slot);
    free(m->tabs);
    de_map_destroy(&m->sparse);
    free(m);
}

void cel_memo_clear(cel_memo *m)
{
    for (uint32_t i = 0; i < m->ntabs; i++)
        if (m->tabs[i].cap)
            memset(m->tabs[i].slot, 0, m->tabs[i].cap * sizeof *m->tabs[i].slot);
    de_map_clear(&m->sparse);
    m->hits = m->misses = 0;
}

void cel_memo_forget_before(cel_memo *m, uint32_t id)
{
    if (id <= m->base)
        return;
    uint32_t drop = id - m->base < m->ntabs ? id - m->base : m->ntabs;
    for (uint32_t i = 0; i < drop; i++)
        free(m->tabs[i].slot);
    if (m->ntabs > drop)
        memmove(m->tabs, m->tabs + drop, (m->ntabs - drop) * sizeof *m->tabs);
    m->ntabs -= drop;
    m->base = id;
    de_map_clear(&m->sparse); /* huge device ids only: rare, cheap to refill */
}

static uint64_t enc(uint32_t gen, bool val) { return ((uint64_t)gen + 1) << 1 | (val ? 1u : 0u); }

int cel_memo_get(cel_memo *m, uint32_t prog, uint32_t dev, uint32_t gen)
{
    uint64_t v = 0;
    if (prog < m->base) {
        m->misses++;
        return -1;
    }
    if (dev < MEMO_DENSE_MAX) {
        prog -= m->base;
        if (prog < m->ntabs && dev < m->tabs[prog].cap)
            v = m->tabs[prog].slot[dev];
    } else {
        de_map_get(&m->sparse, de_pack2(prog, dev), &v);
    }
    if (v && (v >> 1) == (uint64_t)gen + 1) {
        m->hits++;
        return (int)(v & 1);
    }
    m->misses++;
    return -1;
}

void cel_memo_put(cel_memo *m, uint32_t prog, uint32_t dev, uint32_t gen, bool val)
{
    if (prog < m->base)
        return;
    if (dev >= MEMO_DENSE_MAX) {
        de_map_put(&m->sparse, de_pack2(prog, dev), enc(gen, val));
        return;
    }
    prog -= m->base;
    if (prog >= m->ntabs) {
        uint32_t n = prog + 8;
        m->tabs = de_xrealloc(m->tabs, n * sizeof *m->tabs);
        memset(m->tabs + m->ntabs, 0, (n - m->ntabs) * sizeof *m->tabs);
        m->ntabs = n;
    }
    memo_tab *t = &m->tabs[prog];
    if (!t->cap && m->nspare && dev < m->spare[m->nspare - 1].cap)
        *t = m->spare[--m->nspare]; /* a new program: a table touched ahead */
    if (dev >= t->cap) {
        uint32_t nc = t->cap ? t->cap : 1024;
        while (nc <= dev)
            nc *= 2;
        t->slot = de_xrealloc(t->slot, nc * sizeof *t->slot);
        memset(t->slot + t->cap, 0, (nc - t->cap) * sizeof *t->slot);
        t->cap = nc;
    }
    t->slot[dev] = enc(gen, val);
}

static void tab_grow(memo_tab *t, uint32_t cap)
{
    t->slot = de_xrealloc(t->slot, cap * sizeof *t->slot);
    memset(t->slot + t->cap, 0, (cap - t->cap) * sizeof *t->slot); /* touches the pages */
    t->cap = cap;
}

void cel_memo_reserve(cel_memo *m, uint32_t ndev, uint32_t spare)
{
    if (ndev > MEMO_DENSE_MAX)
        ndev = MEMO_DENSE_MAX;
    if (spare > MEMO_SPARES)
        spare = MEMO_SPARES;
    /* devices arriving a slice at a time: grow by half at least */
    for (uint32_t i = 0; i < m->ntabs; i++)
        if (m->tabs[i].cap && m->tabs[i].cap < ndev)
            tab_grow(&m->tabs[i], ndev > m->tabs[i].cap + m->tabs[i].cap / 2 ? ndev
                                                                                : m->tabs[i].cap + m->tabs[i].cap / 2);
    for (uint32_t i = 0; i < m->nspare; i++)
        if (m->spare[i].cap < ndev)
            tab_grow(&m->spare[i], ndev > m->spare[i].cap + m->spare[i].cap / 2 ? ndev
                                                                                 : m->spare[i].cap + m->spare[i].cap / 2);
    while (m->nspare < spare && ndev) {
        memo_tab *t = &m->spare[m->nspare++];
        memset(t, 0, sizeof *t);
        tab_grow(t, ndev);
    }
}

void cel_memo_stats(const cel_memo *m, uint64_t *hits, uint64_t *misses)
{
    if (hits)
        *hits = m->hits;
    if (misses)
        *misses = m->misses;
}

de_rc cel_eval_selector_memo(cel_env *env, cel_memo *m, const cel_prog *p, const de_devview *dev,
                             de_arena *scratch, bool *out, de_err *e)
{
    int r = cel_memo_get(m, p->id, dev->id, dev->gen);
    if (r >= 0) {
        *out = r == 1;
        return DE_OK;
    }
    DE_TRY(cel_eval_selector(env, p, dev, scratch, out, NULL, e));
    cel_memo_put(m, p->id, dev->id, dev->gen, *out);
    return DE_OK;
}
