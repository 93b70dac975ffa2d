/*
 * al_prepare.c - the allocator's caches filled off the decision path.
 *
 * A decision builds what it lacks on first use: a node's table (its devices,
 * pools and counters, al_gather.c), the candidate set of a selector set on
 * that table (one CEL evaluation per device, al_cset.c), and the compiled
 * selectors.  That work is a fixed cost per node and per class, not per pod,
 * but paid inside the first decision that reaches each node it makes the
 * decision slow and page-faulting (new table slab blocks, a fresh CEL
 * program).  al_prepare does the same work ahead of time, in the order the
 * decisions would: nodes in canonical order, and on each table the candidate
 * sets of every DeviceClass's own selectors (what a request without
 * selectors of its own asks for).  It goes through the same getters, so what
 * a decision then reads is exactly what it would have built itself; a table
 * that cannot be built is left for the decision to report.
 *
 * `draengine serve` calls it when its queue is empty (sch_run), so slices
 * that arrive are turned into tables between pods; the benchmarks call it
 * before their clock and print its time on its own line.  An idle serve
 * calls it often: a key of what the caches depend on (devices, classes, the
 * node order, the policy epoch) makes a call that would find everything
 * ready return at once.  A change the key misses only means a decision
 * builds what it needs itself, as it always could.  It also maps the
 * program's code pages (de_map_text) and the compiled-claims table, so that
 * neither is first touched inside a decision, and counts what the graph's
 * pods take from their nodes (one pass over every pod, which the first
 * decision would otherwise make).
 */
#include "al_int.h"

static uint64_t prep_key(al_allocator *a)
{
    uint64_t k = de_hash_u64(dg_devices_generation(a->g));
    k = de_hash_u64(k ^ a->epoch);
    k = de_hash_u64(k ^ a->order_gen);
    for (uint32_t c = 0, n = dg_class_id_limit(a->g); c < n; c++)
        if (dg_class_get(a->g, c))
            k = de_hash_u64(k ^ de_pack2(c, (uint32_t)dg_class_generation(a->g, c)));
    return k | 1; /* 0: never prepared */
}

uint32_t al_prepare(al_allocator *a, uint64_t budget_ns)
{
    uint64_t start = de_now_ns();
    al_sync(a);
    a->depth++; /* keep al_sync's cache caps out of the way until done */
    al_node_order(a);
    al_ccache_reserve(a);
    /* constraint attribute names split (al_compile.c): a few distinct ones */
    if (!a->attr_split.cap)
        de_map_reserve(&a->attr_split, 64);
    al_usage_prepare(a);
    de_map_text();
    uint64_t key = prep_key(a);
    if (key == a->prep_key) {
        a->depth--;
        return 0;
    }
    uint32_t built = 0;
    uint32_t ncls = dg_class_id_limit(a->g);
    bool done = true;
    for (uint32_t r = 0; r < a->nnodes; r++) {
        const dg_node *node = al_node_at(a, r);
        uint64_t before = a->stats.node_tables_built;
        de_err e;
        de_err_clear(&e);
        al_ntab *t = al_ntab_get(a, node->meta.name, &e);
        if (!t)
            continue;
        bool work = a->stats.node_tables_built != before;
        built += work;
        for (uint32_t c = 0; c < ncls; c++) {
            const dg_class *dc = dg_class_get(a->g, c);
            if (!dc)
                continue;
            al_selset *ss = al_selset_get(a, dc->meta.name, NULL, 0);
            if (ss) {
                al_cset_get(a, t, ss);
                if (!r)
                    al_maybe_free_reserve(a, ss); /* room for its node index */
            }
        }
        /* checked after work only: a call after a cut-off one passes the
         * tables built so far at a lookup each and goes on from there */
        if (budget_ns && work && r + 1 < a->nnodes && de_now_ns() - start >= budget_ns) {
            done = false;
            break;
        }
    }
    /* building may have moved the key (a class compiled anew, the epoch) */
    a->prep_key = done ? prep_key(a) : 0;
    a->depth--;
    return built;
}
