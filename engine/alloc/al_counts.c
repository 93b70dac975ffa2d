/*
 * al_counts.c - devices per node and how many are free, for score hooks
 * (al_placement.node_devices / node_free_devices, al_node_free_devices).
 *
 * What is counted is what the policy host always counted
 * (pol_node_free_devices): the devices of the slices whose spec.nodeName is
 * the node, every generation, each slice entry once; free = no claim uses it
 * (exclusively or shared; adminAccess results do not count).
 *
 * A node is counted by walking its slices once, when first asked.  After
 * that its free count follows usage in O(1) per device: every usage key
 * (graph pool id, device name) the count saw is remembered with its node,
 * its multiplicity and whether it was in use, and the claim events that
 * re-read usage (al_core.c: usage_changed) flip it.  A slice event on a node
 * drops that node's count (recounted when next asked).  Every change of a
 * count is a change of the node's state for the choice cache
 * (al_node_changed).
 */
#include "al_int.h"

#include <stdlib.h>

#define NONE UINT32_MAX

/* One (usage key, node) pair; the pairs of one key are chained. */
typedef struct kref {
    uint32_t node;   /* index into al_counts.nodes */
    uint32_t mult;   /* slice entries of the node with this key */
    uint32_t next;   /* next pair of the same key, NONE = end; free list link when unused */
    uint32_t driver, pool; /* names, for dg_usage_get */
    bool used;
} kref;

typedef struct ncount {
    uint32_t name;
    uint32_t total, nfree;
    bool valid;
    uint64_t *keys;  /* the keys registered for this node (each once) */
    uint32_t nkeys, capkeys;
} ncount;

struct al_counts {
    de_map by_name;   /* node name -> index + 1 */
    ncount *nodes;
    uint32_t n, cap;
    de_map by_key;    /* usage key -> first kref + 1 */
    kref *refs;
    uint32_t nrefs, caprefs, freelist;
    uint32_t *slice_node; /* per slice id: the spec.nodeName last seen (0 = none) */
    uint32_t nslice_node;
};

static struct al_counts *counts(al_allocator *a)
{
    if (!a->counts) {
        a->counts = de_xcalloc(1, sizeof *a->counts);
        de_map_init(&a->counts->by_name);
        de_map_init(&a->counts->by_key);
        a->counts->freelist = NONE;
    }
    return a->counts;
}

void al_counts_free(al_allocator *a)
{
    struct al_counts *c = a->counts;
    if (!c)
        return;
    for (uint32_t i = 0; i < c->n; i++)
        free(c->nodes[i].keys);
    free(c->nodes);
    free(c->refs);
    free(c->slice_node);
    de_map_destroy(&c->by_name);
    de_map_destroy(&c->by_key);
    free(c);
    a->counts = NULL;
}

static uint32_t node_index(struct al_counts *c, uint32_t name, bool create)
{
    uint64_t v;
    if (de_map_get(&c->by_name, name, &v))
        return (uint32_t)v - 1;
    if (!create)
        return NONE;
    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 64;
        c->nodes = de_xrealloc(c->nodes, c->cap * sizeof *c->nodes);
    }
    ncount *nc = &c->nodes[c->n];
    memset(nc, 0, sizeof *nc);
    nc->name = name;
    de_map_put(&c->by_name, name, ++c->n);
    return c->n - 1;
}

static uint32_t kref_new(struct al_counts *c)
{
    if (c->freelist != NONE) {
        uint32_t i = c->freelist;
        c->freelist = c->refs[i].next;
        return i;
    }
    if (c->nrefs == c->caprefs) {
        c->caprefs = c->caprefs ? c->caprefs * 2 : 256;
        c->refs = de_xrealloc(c->refs, c->caprefs * sizeof *c->refs);
    }
    return c->nrefs++;
}

/* Forget the pair (key, node). */
static void kref_drop(struct al_counts *c, uint64_t key, uint32_t node)
{
    uint64_t v;
    if (!de_map_get(&c->by_key, key, &v))
        return;
    uint32_t prev = NONE, i = (uint32_t)v - 1;
    while (i != NONE && c->refs[i].node != node) {
        prev = i;
        i = c->refs[i].next;
    }
    if (i == NONE)
        return;
    uint32_t next = c->refs[i].next;
    if (prev != NONE)
        c->refs[prev].next = next;
    else if (next != NONE)
        de_map_put(&c->by_key, key, (uint64_t)next + 1);
    else
        de_map_del(&c->by_key, key);
    c->refs[i].next = c->freelist;
    c->freelist = i;
}

static bool in_use(const dg_graph *g, uint32_t driver, uint32_t pool, uint32_t device)
{
    dg_usage u;
    return dg_usage_get(g, driver, pool, device, &u) && (u.exclusive || u.shared);
}

static void recount(al_allocator *a, struct al_counts *c, uint32_t ni)
{
    ncount *nc = &c->nodes[ni];
    for (uint32_t k = 0; k < nc->nkeys; k++)
        kref_drop(c, nc->keys[k], ni);
    nc->nkeys = 0;
    nc->total = nc->nfree = 0;
    const uint32_t *sids;
    uint32_t ns;
    dg_slices_on_node(a->g, nc->name, &sids, &ns);
    for (uint32_t i = 0; i < ns; i++) {
        const dg_slice *s = dg_slice_get(a->g, sids[i]);
        if (!s)
            continue;
        uint32_t pid = dg_slice_pool(a->g, sids[i]);
        for (uint32_t d = 0; d < s->ndevices; d++) {
            uint32_t dn = s->devices[d].name;
            bool used = in_use(a->g, s->driver, s->pool, dn);
            nc = &c->nodes[ni];
            nc->total++;
            if (!used)
                nc->nfree++;
            if (pid == DG_NONE)
                continue;
            uint64_t key = de_pack2(pid, dn), v;
            uint32_t r = NONE;
            if (de_map_get(&c->by_key, key, &v))
                for (r = (uint32_t)v - 1; r != NONE && c->refs[r].node != ni; r = c->refs[r].next)
                    ;
            if (r != NONE) {
                c->refs[r].mult++;
                continue;
            }
            r = kref_new(c);
            kref *kr = &c->refs[r];
            kr->node = ni;
            kr->mult = 1;
            kr->driver = s->driver;
            kr->pool = s->pool;
            kr->used = used;
            kr->next = de_map_get(&c->by_key, key, &v) ? (uint32_t)v - 1 : NONE;
            de_map_put(&c->by_key, key, (uint64_t)r + 1);
            if (nc->nkeys == nc->capkeys) {
                nc->capkeys = nc->capkeys ? nc->capkeys * 2 : 16;
                nc->keys = de_xrealloc(nc->keys, nc->capkeys * sizeof *nc->keys);
            }
            nc->keys[nc->nkeys++] = key;
        }
    }
    c->nodes[ni].valid = true;
}

uint32_t al_node_free_devices(al_allocator *a, uint32_t node_name, uint32_t *total)
{
    /* the node's table usually holds exactly the node's devices with their
     * usage bits: no walk, no registration */
    uint64_t v;
    if (de_map_get(&a->ntab_by_name, node_name, &v)) {
        al_ntab *t = a->ntabs[v - 1];
        if (t->valid && !t->own_known) {
            /* the table holds every device of the node's slices (no old
             * generation, incomplete or invalid pool, or gated slice left
             * out): its counts are the node's */
            const uint32_t *sids;
            uint32_t ns, all = 0;
            dg_slices_on_node(a->g, node_name, &sids, &ns);
            for (uint32_t k = 0; k < ns; k++) {
                const dg_slice *s = dg_slice_get(a->g, sids[k]);
                all += s ? s->ndevices : 0;
            }
            t->own_exact = all == t->own_total;
            t->own_known = true;
        }
        if (t->valid && t->epoch == a->epoch && t->own_exact) {
            *total = t->own_total;
            return t->own_free;
        }
    }
    struct al_counts *c = counts(a);
    uint32_t ni = node_index(c, node_name, true);
    if (!c->nodes[ni].valid)
        recount(a, c, ni);
    *total = c->nodes[ni].total;
    return c->nodes[ni].nfree;
}

void al_counts_usage(al_allocator *a, uint64_t key)
{
    struct al_counts *c = a->counts;
    uint64_t v;
    if (!c || !c->by_key.n || !de_map_get(&c->by_key, key, &v))
        return;
    uint32_t i = (uint32_t)v - 1;
    bool used = in_use(a->g, c->refs[i].driver, c->refs[i].pool, (uint32_t)key);
    for (; i != NONE; i = c->refs[i].next) {
        kref *kr = &c->refs[i];
        if (kr->used == used)
            continue;
        kr->used = used;
        ncount *nc = &c->nodes[kr->node];
        if (nc->valid) {
            if (used)
                nc->nfree -= kr->mult;
            else
                nc->nfree += kr->mult;
        }
        al_node_changed(a, nc->name);
    }
}

static void drop_node(al_allocator *a, struct al_counts *c, uint32_t name)
{
    if (!name)
        return;
    uint32_t ni = node_index(c, name, false);
    if (ni != NONE)
        c->nodes[ni].valid = false;
    al_node_changed(a, name);
}

void al_counts_slice(al_allocator *a, uint32_t sid)
{
    struct al_counts *c = counts(a);
    const dg_slice *s = dg_slice_get(a->g, sid);
    uint32_t now = s && s->ns_mode == DG_NS_NODE_NAME ? s->node_name : 0;
    uint32_t was = sid < c->nslice_node ? c->slice_node[sid] : 0;
    drop_node(a, c, was);
    if (now != was)
        drop_node(a, c, now);
    if (sid >= c->nslice_node) {
        if (!now)
            return;
        uint32_t cap = c->nslice_node ? c->nslice_node : 256;
        while (cap <= sid)
            cap *= 2;
        c->slice_node = de_xrealloc(c->slice_node, cap * sizeof *c->slice_node);
        memset(c->slice_node + c->nslice_node, 0, (cap - c->nslice_node) * sizeof *c->slice_node);
        c->nslice_node = cap;
    }
    c->slice_node[sid] = now;
}
