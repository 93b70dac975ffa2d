/*
 * memo.c - selector results per (program, device, device generation).
 *
 * One de_map entry per (program id, device id): the value packs the
 * generation the result was computed at with the result bit, so a device
 * whose generation moved on simply misses and is overwritten; nothing has
 * to be invalidated explicitly.  Errors are never stored: they abort the
 * allocation and must be reported every time.
 */
#include "cel_int.h"

#include <stdlib.h>

struct cel_memo {
    de_map m;
    uint64_t hits, misses;
};

cel_memo *cel_memo_new(void)
{
    cel_memo *m = de_xcalloc(1, sizeof *m);
    de_map_init(&m->m);
    return m;
}

void cel_memo_free(cel_memo *m)
{
    if (!m)
        return;
    de_map_destroy(&m->m);
    free(m);
}

void cel_memo_clear(cel_memo *m)
{
    de_map_clear(&m->m);
    m->hits = m->misses = 0;
}

int cel_memo_get(cel_memo *m, uint32_t prog, uint32_t dev, uint32_t gen)
{
    uint64_t v;
    if (de_map_get(&m->m, de_pack2(prog, dev), &v) && (uint32_t)(v >> 1) == gen) {
        m->hits++;
        return (int)(v & 1);
    }
    m->misses++;
    return -1;
}

void cel_memo_put(cel_memo *m, uint32_t prog, uint32_t dev, uint32_t gen, bool val)
{
    de_map_put(&m->m, de_pack2(prog, dev), (uint64_t)gen << 1 | (val ? 1u : 0u));
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
