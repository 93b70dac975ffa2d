/*
 * al_core.c - the allocator object: options, gates, caches and how they learn
 * about graph changes.
 *
 * Incremental invalidation (ARCHITECTURE principle 5).  The allocator
 * listens to the graph (dg_add_listener) and touches only what an event can
 * affect:
 *  - ResourceSlice: the node tables that depend on the slice's pool (before
 *    and after the change; a table registers every pool it looked at, in
 *    al_allocator.tabsets) and the tables of the nodes the new slice is
 *    visible from are marked invalid and rebuilt lazily.  Counter
 *    availability and compatibility-group seeds are derived per Allocate
 *    call from the table's used bits (and the graph's usage for a pool's
 *    slices outside the table), so nothing pool-level needs invalidating.
 *  - ResourceClaim: the usage of exactly the devices in the claim's results
 *    (the old results, remembered per claim, and the new ones) is re-read
 *    from the graph into the tables that hold those devices: bit flips and a
 *    consumed-capacity copy, nothing rebuilt.  A new unallocated claim
 *    touches nothing.
 *  - DeviceClass: the selector sets of that class are recompiled on next use
 *    and their candidate bitsets re-evaluated then.
 *  - Node: that node's table (labels decide slice visibility), and the
 *    canonical node order when Nodes come or go.
 *  - DeviceTaintRule, and derived attributes written by the policy host:
 *    the graph reports each device whose taints or attributes changed
 *    (dg_add_device_listener); at the next use the allocator refreshes just
 *    those entries (taints, flags, policy groups, and their bits in every
 *    candidate set).
 *  - Pods, templates, namespaces: nothing.
 * A new policy revision (al_hooks.revision) or new hooks rebuild everything.
 *
 * Each of these also tells the node choice cache (al_choose.c) which nodes
 * changed (al_node_changed): the nodes of every table an event touches, the
 * node named by a node-local slice or a Node, and every node whose table
 * failed to build (any slice event may fix it); a DeviceClass change
 * affects every node (al_allocator.choice_gen).
 */
#include "al_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static void on_change(void *ctx, dg_kind kind, dg_op op, uint32_t id);
static void on_device(void *ctx, uint32_t devid);
static void on_claim(al_allocator *a, uint32_t clid);
static void remember_slice(al_allocator *a, uint32_t sid);
static void remember_name(uint32_t **v, uint32_t *n, uint32_t id, uint32_t name);

void al_oom(size_t n)
{
    /* library code does not log; this is the engine's fatal path (see de_xmalloc) */
    fprintf(stderr, "draengine: allocator arena exhausted allocating %zu bytes\n", n);
    abort();
}

const char *al_str(const al_allocator *a, uint32_t id)
{
    return de_intern_str(a->in, id);
}

uint32_t al_intern(al_allocator *a, const char *s)
{
    return de_intern_cstr(a->in, s);
}

/* Interned on first use, when al_intern(a, "pods") would have interned it,
 * so ids are handed out in the same order; keeping the id is safe because
 * de_intern pins the string (it never goes away or changes meaning).  Saves
 * a strlen, a hash and a probe per scheduled pod. */
uint32_t al_id_pods(al_allocator *a)
{
    if (!a->id_pods)
        a->id_pods = al_intern(a, "pods");
    return a->id_pods;
}

uint32_t al_internf(al_allocator *a, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    if ((size_t)n >= sizeof buf)
        n = sizeof buf - 1;
    return de_intern(a->in, buf, (size_t)n);
}

al_allocator *al_new(dg_graph *g, const al_opts *opts, de_err *e)
{
    al_allocator *a = de_xcalloc(1, sizeof *a);
    a->g = g;
    a->in = dg_intern(g);
    if (opts)
        a->opts = *opts;
    else
        de_gates_default(&a->opts.gates);
    if (!a->opts.max_steps)
        a->opts.max_steps = AL_DEFAULT_MAX_STEPS;
    const bool *on = a->opts.gates.on;
    if (!on[DE_GATE_SCHEDULER_FILTER_TIMEOUT])
        a->opts.filter_timeout_ns = 0;
    else if (!a->opts.filter_timeout_set)
        a->opts.filter_timeout_ns = AL_DEFAULT_FILTER_TIMEOUT_NS;
    a->f_admin = on[DE_GATE_ADMIN_ACCESS];
    a->f_prio = on[DE_GATE_PRIORITIZED_LIST];
    a->f_part = on[DE_GATE_PARTITIONABLE_DEVICES];
    a->f_taints = on[DE_GATE_DEVICE_TAINTS];
    a->f_taint_rules = on[DE_GATE_DEVICE_TAINT_RULES];
    a->f_cc = on[DE_GATE_CONSUMABLE_CAPACITY];
    a->f_bind = on[DE_GATE_DEVICE_BINDING_CONDITIONS] && on[DE_GATE_RESOURCE_CLAIM_DEVICE_STATUS];
    a->f_list = on[DE_GATE_LIST_TYPE_ATTRIBUTES];
    a->f_derived = on[DE_GATE_DERIVED_ATTRIBUTES];
    a->f_cgroups = on[DE_GATE_COMPATIBILITY_GROUPS] && a->f_part;
    a->f_frac = on[DE_GATE_FRACTIONAL_CAPACITY_RANGE];
    a->f_skipops = on[DE_GATE_OPTIONAL_NODE_OPERATIONS];
    a->f_declared = on[DE_GATE_NODE_DECLARED_FEATURES];
    if (a->opts.cel) {
        a->cel = a->opts.cel;
    } else {
        cel_env_opts co = {0};
        co.consumable_capacity = a->f_cc;
        co.list_attributes = a->f_list;
        a->cel = cel_env_new(a->in, &co);
        if (!a->cel) {
            de_errf(e, DE_EINTERNAL, "allocator: cannot create the CEL environment");
            free(a);
            return NULL;
        }
        a->own_cel = true;
    }
    a->memo = cel_memo_new();
    a->env_gen = cel_env_generation(a->cel);
    a->selset_cap = AL_SELSET_CAP;
    de_map_init(&a->ntab_by_name);
    de_map_init(&a->attr_split);
    de_map_init(&a->selset_by_key);
    de_map_init(&a->node_rank);
    de_map_init(&a->rank_by_name);
    de_map_init(&a->order_seen);
    al_tmem_init(a);
    a->scratch = de_arena_new(64u << 20);
    a->s_metadata_name = al_intern(a, "metadata.name");
    a->s_pods = al_intern(a, "pods");
    a->s_cpu = al_intern(a, "cpu");
    a->s_memory = al_intern(a, "memory");
    a->s_unsched_taint = al_intern(a, "node.kubernetes.io/unschedulable");
    a->s_noschedule = al_intern(a, "NoSchedule");
    a->s_noexecute = al_intern(a, "NoExecute");
    a->s_optional_ops = al_intern(a, "DRAOptionalNodeOperations");
    a->s_true = al_intern(a, "True");
    if (!a->opts.binding_timeout_ns)
        a->opts.binding_timeout_ns = 600ull * 1000000000ull;
    a->s_in = al_intern(a, "In");
    a->epoch = 1;
    a->order_dirty = true;
    /* what the events of later changes need to know about earlier states */
    for (uint32_t i = 0, n = dg_claim_id_limit(g); i < n; i++)
        if (dg_claim_get(g, i))
            on_claim(a, i);
    for (uint32_t i = 0, n = dg_slice_id_limit(g); i < n; i++)
        if (dg_slice_get(g, i)) {
            remember_slice(a, i);
            al_counts_slice(a, i);
            al_tmem_slice(a, i);
        }
    for (uint32_t i = 0, n = dg_node_id_limit(g); i < n; i++)
        if (dg_node_get(g, i))
            remember_name(&a->node_name_of, &a->nnode_name_of, i, dg_node_get(g, i)->meta.name);
    for (uint32_t i = 0, n = dg_class_id_limit(g); i < n; i++)
        if (dg_class_get(g, i))
            remember_name(&a->class_name_of, &a->nclass_name_of, i, dg_class_get(g, i)->meta.name);
    al_tmem_reserve(a);
    dg_add_listener(g, on_change, a);
    dg_add_device_listener(g, on_device, a);
    return a;
}

void al_free(al_allocator *a)
{
    if (!a)
        return;
    dg_remove_listener(a->g, on_change, a);
    dg_remove_device_listener(a->g, on_device, a);
    al_memo_free(a);
    al_choose_free(a);
    al_counts_free(a);
    al_usage_free(a);
    free(a->dirty);
    free(a->dirty_bits);
    for (uint32_t i = 0; i < a->ntabsets; i++)
        if (a->tabsets[i].cap > 1)
            free(a->tabsets[i].u.v);
    free(a->tabsets);
    /* records past DE_SLAB_MAX are malloc'd by the slab: given back one by
     * one before the slab goes */
    for (uint32_t i = 0; i < a->ncrec; i++)
        if (a->crec[i].n > 1)
            al_tmem_release(a, a->crec[i].keys.v, a->crec[i].n * sizeof *a->crec[i].keys.v);
    free(a->crec);
    al_pchecks_free(a);
    al_fpools_free(a);
    free(a->slice_pool);
    free(a->node_name_of);
    free(a->class_name_of);
    de_map_destroy(&a->rank_by_name);
    de_map_destroy(&a->order_seen);
    for (uint32_t i = 0; i < a->nntabs; i++)
        al_ntab_clear(a, a->ntabs[i]); /* the structs go with the slab */
    al_tmem_free(a);
    free(a->ntabs);
    al_selsets_free(a);
    al_ccache_free(a);
    free(a->selsets);
    de_map_destroy(&a->ntab_by_name);
    de_map_destroy(&a->attr_split);
    de_map_destroy(&a->selset_by_key);
    de_map_destroy(&a->node_rank);
    free(a->node_order);
    free(a->node_names);
    free(a->node_stub);
    cel_memo_free(a->memo);
    if (a->own_cel)
        cel_env_free(a->cel);
    de_arena_free(a->scratch);
    free(a);
}

void al_set_hooks(al_allocator *a, const al_hooks *h)
{
    /* the same hooks again (a caller refreshing them every cycle): keep
     * every cache */
    if (h ? a->has_hooks && !memcmp(&a->hooks, h, sizeof *h) : !a->has_hooks)
        return;
    if (h) {
        a->hooks = *h;
        a->has_hooks = true;
    } else {
        memset(&a->hooks, 0, sizeof a->hooks);
        a->has_hooks = false;
    }
    /* groups are read into the node tables: rebuild them */
    a->epoch++;
}

const de_gates *al_gates(const al_allocator *a)
{
    return &a->opts.gates;
}

void al_get_stats(const al_allocator *a, al_stats *out)
{
    *out = a->stats;
    out->selector_sets = a->nselsets;
    out->cel_programs = cel_env_programs(a->cel);
}

void al_set_cache_caps(al_allocator *a, uint32_t selector_sets, uint32_t programs)
{
    a->selset_cap = selector_sets ? selector_sets : AL_SELSET_CAP;
    cel_env_set_prog_cap(a->cel, programs);
}

/* ---- registry: which tables depend on which graph pool ------------------------- */

/* Indexed by graph pool id; a pool most tables never see costs 16 bytes,
 * one seen by a single table (a node-local pool) holds it inline.  Sized
 * to the graph's pools when slices arrive (al_tabs_reserve), so a first
 * table build does not grow it. */
void al_tabs_reserve(al_allocator *a, uint32_t n)
{
    if (n <= a->ntabsets)
        return;
    uint32_t cap = a->ntabsets ? a->ntabsets : 64;
    while (cap < n)
        cap *= 2;
    a->tabsets = de_xrealloc(a->tabsets, cap * sizeof *a->tabsets);
    memset(a->tabsets + a->ntabsets, 0, (cap - a->ntabsets) * sizeof *a->tabsets);
    a->ntabsets = cap;
}

static al_tabs *tabset(al_allocator *a, uint32_t gpool, bool create)
{
    if (gpool >= a->ntabsets) {
        if (!create)
            return NULL;
        al_tabs_reserve(a, gpool + 1);
    }
    return &a->tabsets[gpool];
}

static void tabs_add(al_tabs *l, uint32_t t)
{
    if (l->n && al_tabs_v(l)[l->n - 1] == t)
        return; /* the same pool twice in a row */
    if (l->cap <= 1 && l->n < 1) {
        l->u.one = t;
        l->n = 1;
        return;
    }
    if (l->n == 1 && l->cap <= 1) {
        uint32_t one = l->u.one;
        l->u.v = de_xmalloc(4 * sizeof *l->u.v);
        l->u.v[0] = one;
        l->cap = 4;
    } else if (l->n == l->cap) {
        l->cap *= 2;
        l->u.v = de_xrealloc(l->u.v, l->cap * sizeof *l->u.v);
    }
    l->u.v[l->n++] = t;
}

static void tabs_del(al_tabs *l, uint32_t t)
{
    uint32_t *v = l->cap > 1 ? l->u.v : &l->u.one;
    for (uint32_t k = 0; k < l->n; k++)
        if (v[k] == t) {
            v[k] = v[--l->n];
            break;
        }
}

static void tabs_register(al_allocator *a, al_ntab *t, bool add)
{
    for (uint32_t i = 0; i < t->ngpools; i++) {
        al_tabs *l = tabset(a, t->gpools[i], add);
        if (!l)
            continue;
        if (add)
            tabs_add(l, t->self);
        else
            tabs_del(l, t->self);
    }
}

static void ntab_invalidate(al_allocator *a, al_ntab *t)
{
    /* even when already invalid: a choice made from a failed build must be
     * made again */
    al_node_changed(a, t->node_name);
    if (!t->valid)
        return;
    t->valid = false;
    al_mf_set_node(a, t->node_name);
}

static void invalidate_pool(al_allocator *a, uint32_t gpool)
{
    al_tabs *l = tabset(a, gpool, false);
    for (uint32_t i = 0; l && i < l->n; i++)
        ntab_invalidate(a, a->ntabs[al_tabs_v(l)[i]]);
}

/* Decisions look up the same node's table many times in a row (the nodes
 * fill in rank order). */
static al_ntab *ntab_find(al_allocator *a, uint32_t node_name)
{
    if (a->last_ntab && a->last_ntab->node_name == node_name)
        return a->last_ntab;
    uint64_t v;
    if (!de_map_get(&a->ntab_by_name, node_name, &v))
        return NULL;
    return a->last_ntab = a->ntabs[v - 1];
}

/* ---- node index: "may have a free candidate" ----------------------------------- */

void al_mf_set_node(al_allocator *a, uint32_t node_name)
{
    uint64_t r;
    if (a->order_dirty || !de_map_get(&a->rank_by_name, node_name, &r))
        return;
    uint32_t rank = (uint32_t)r - 1, w = rank / 64;
    for (uint32_t i = 0; i < a->nselsets; i++) {
        al_selset *s = a->selsets[i];
        if (!s->maybe_free || s->mf_order != a->order_gen)
            continue;
        de_bit_set(s->maybe_free, rank);
        if (s->mf_low > w)
            s->mf_low = w;
    }
}

/* ---- usage ------------------------------------------------------------------------- */

/* Re-read one device's allocated state from the graph (upstream's
 * AllocatedState as kube-scheduler builds it: adminAccess results do not
 * count; with DRAConsumableCapacity a result with a shareID is shared use
 * adding its consumedCapacity, any other result is exclusive use). */
static void dev_usage(al_allocator *a, al_ntab *t, uint32_t i)
{
    const al_dev *d = &t->devs[i];
    dg_usage u;
    /* d->gpool is the pool of d->s (the table is valid): no lookup by names */
    bool used = dg_usage_get_pid(a->g, d->gpool, d->name, &u);
    if ((d->flags & AL_DF_OWN) && used != de_bit_get(t->allocated, i)) {
        if (used)
            t->own_free--;
        else
            t->own_free++;
    }
    de_bit_clr(t->allocated, i);
    de_bit_clr(t->inuse, i);
    if (t->agg && t->agg[i].v) {
        al_tmem_release(a, t->agg[i].v, t->agg[i].n * sizeof *t->agg[i].v);
        t->agg[i].v = NULL;
        t->agg[i].n = 0;
    }
    if (!used)
        return;
    de_bit_set(t->allocated, i);
    if (a->f_cc) {
        if (u.exclusive)
            de_bit_set(t->inuse, i);
        if (u.shared && u.nconsumed) {
            if (!t->agg)
                t->agg = al_tmem_alloc(a, t->ndev * sizeof *t->agg);
            t->agg[i].v = al_tmem_alloc(a, u.nconsumed * sizeof *u.consumed);
            memcpy(t->agg[i].v, u.consumed, u.nconsumed * sizeof *u.consumed);
            t->agg[i].n = u.nconsumed;
        }
    } else if (u.exclusive || u.shared) {
        de_bit_set(t->inuse, i);
    }
}

/* The whole table, after a (re)build. */
void al_ntab_usage(al_allocator *a, al_ntab *t)
{
    /* inuse and allocated are in the table's block, cleared */
    t->own_total = t->own_free = 0;
    for (uint32_t i = 0; i < t->ndev; i++)
        if (t->devs[i].flags & AL_DF_OWN) {
            t->own_total++;
            t->own_free++; /* allocated bits are clear: dev_usage counts down */
        }
    for (uint32_t i = 0; i < t->ndev; i++)
        dev_usage(a, t, i);
    t->own_known = false; /* own_exact: al_counts.c works it out when asked */
}

/* The usage of device (graph pool, name) changed: update every valid table
 * that holds it. */
static void usage_changed(al_allocator *a, uint64_t key)
{
    al_counts_usage(a, key);
    al_tabs *l = tabset(a, (uint32_t)(key >> 32), false);
    for (uint32_t k = 0; l && k < l->n; k++) {
        al_ntab *t = a->ntabs[al_tabs_v(l)[k]];
        /* counters and compatibility groups of the pool read every device
         * of it, in the table or not */
        al_node_changed(a, t->node_name);
        uint32_t i = t->valid ? al_ntab_find(t, (uint32_t)(key >> 32), (uint32_t)key) : UINT32_MAX;
        if (i == UINT32_MAX)
            continue;
        dev_usage(a, t, i);
        if (!de_bit_get(t->inuse, i))
            al_mf_set_node(a, t->node_name);
    }
}

/* ---- events ------------------------------------------------------------------------ */

static void grow_u32(uint32_t **v, uint32_t *n, uint32_t need)
{
    if (need <= *n)
        return;
    uint32_t cap = *n ? *n : 64;
    while (cap < need)
        cap *= 2;
    *v = de_xrealloc(*v, cap * sizeof **v);
    memset(*v + *n, 0, (cap - *n) * sizeof **v);
    *n = cap;
}

static void remember_name(uint32_t **v, uint32_t *n, uint32_t id, uint32_t name)
{
    grow_u32(v, n, id + 1);
    (*v)[id] = name;
}

static void remember_slice(al_allocator *a, uint32_t sid)
{
    grow_u32(&a->slice_pool, &a->nslice_pool, sid + 1);
    uint32_t p = dg_slice_pool(a->g, sid);
    a->slice_pool[sid] = p == DG_NONE ? 0 : p + 1;
}

static int cmp_u64(const void *x, const void *y)
{
    uint64_t p = *(const uint64_t *)x, q = *(const uint64_t *)y;
    return p < q ? -1 : p > q;
}

/* A claim changed (or was deleted): the devices of its old and new results. */
static void on_claim(al_allocator *a, uint32_t clid)
{
    if (clid >= a->ncrec) {
        uint32_t cap = a->ncrec ? a->ncrec : 256;
        while (cap <= clid)
            cap *= 2;
        a->crec = de_xrealloc(a->crec, cap * sizeof *a->crec);
        memset(a->crec + a->ncrec, 0, (cap - a->ncrec) * sizeof *a->crec);
        a->ncrec = cap;
    }
    al_crec *r = &a->crec[clid];
    const dg_claim *c = dg_claim_get(a->g, clid);
    /* the claim's contribution to usage did not change (a reservation, any
     * other status update, a new unallocated claim): nothing to do */
    uint64_t ugen = dg_claim_usage_generation(a->g, clid);
    if (c && ugen == r->ugen)
        return;
    r->ugen = ugen;
    uint32_t n = 0;
    uint64_t kbuf[16], *keys = kbuf;
    if (c && c->allocated && c->allocation.nresults) {
        if (c->allocation.nresults > 16)
            keys = de_xmalloc(c->allocation.nresults * sizeof *keys);
        for (uint32_t i = 0; i < c->allocation.nresults; i++) {
            const dg_result *x = &c->allocation.results[i];
            if (x->admin_access == 1)
                continue;
            uint32_t p = dg_pool_find(a->g, x->driver, x->pool);
            if (p != DG_NONE)
                keys[n++] = de_pack2(p, x->device);
        }
    }
    /* old and new, each device once (most often one device, allocated or
     * given back: nothing to merge) */
    uint64_t small[16];
    uint32_t m = r->n + n;
    uint64_t *all = small;
    if (m == 1) {
        small[0] = n ? keys[0] : r->keys.one;
    } else if (m > 16) {
        all = de_xmalloc(m * sizeof *all);
        if (r->n)
            memcpy(all, al_crec_keys(r), r->n * sizeof *all);
        memcpy(all + r->n, keys, n * sizeof *all);
        qsort(all, m, sizeof *all, cmp_u64);
    } else {
        if (r->n)
            memcpy(all, al_crec_keys(r), r->n * sizeof *all);
        memcpy(all + r->n, keys, n * sizeof *all);
        for (uint32_t i = 1; i < m; i++) {
            uint64_t x = all[i];
            uint32_t j = i;
            for (; j && all[j - 1] > x; j--)
                all[j] = all[j - 1];
            all[j] = x;
        }
    }
    for (uint32_t i = 0; i < m; i++)
        if (!i || all[i] != all[i - 1])
            usage_changed(a, all[i]);
    if (all != small)
        free(all);
    /* the keys kept: one inline, more an exact-size record of the table
     * slab, whose room is reserved for every claim's (al_tmem_reserve) */
    if (r->n > 1)
        al_tmem_release(a, r->keys.v, r->n * sizeof *r->keys.v);
    r->keys.v = NULL;
    if (n == 1) {
        r->keys.one = keys[0];
    } else if (n) {
        r->keys.v = al_tmem_alloc(a, n * sizeof *r->keys.v);
        memcpy(r->keys.v, keys, n * sizeof *keys);
    }
    r->n = n;
    if (keys != kbuf)
        free(keys);
}

static void on_slice(al_allocator *a, uint32_t sid)
{
    al_counts_slice(a, sid);
    if (a->nfailed_tabs)
        for (uint32_t i = 0; i < a->nntabs; i++)
            if (a->ntabs[i]->failed)
                al_node_changed(a, a->ntabs[i]->node_name);
    uint32_t old = sid < a->nslice_pool && a->slice_pool[sid] ? a->slice_pool[sid] - 1 : DG_NONE;
    if (old != DG_NONE)
        invalidate_pool(a, old);
    const dg_slice *s = dg_slice_get(a->g, sid);
    uint32_t p = s ? dg_slice_pool(a->g, sid) : DG_NONE;
    /* the foreign views of counter pools (al_fpools.c): a pool that has or
     * had counter slices is seen again from every node that does not own
     * it - their outcomes may change, their tables stay */
    bool foreign = false;
    if (old != DG_NONE && al_fpools_has(a, old)) {
        al_fpools_dirty(a, old);
        foreign = true;
    }
    if (p != DG_NONE && ((s && s->ncountersets) || al_fpools_has(a, p))) {
        al_fpools_dirty(a, p);
        foreign = true;
    }
    if (foreign)
        for (uint32_t i = 0; i < a->nntabs; i++)
            al_node_changed(a, a->ntabs[i]->node_name);
    if (s) {
        if (p != DG_NONE)
            invalidate_pool(a, p);
        if (s->ncountersets) {
            /* relevant everywhere, but a counter slice makes no pool a
             * node's own: the tables of its pool's owners were invalidated
             * above, the others see it through the foreign view */
        } else if (s->ns_mode == DG_NS_NODE_NAME) {
            al_ntab *t = ntab_find(a, s->node_name);
            if (t)
                ntab_invalidate(a, t);
        } else {
            for (uint32_t i = 0; i < a->nntabs; i++)
                if (a->ntabs[i]->valid && al_slice_relevant(a, s, a->ntabs[i]->node_name))
                    ntab_invalidate(a, a->ntabs[i]);
        }
        remember_slice(a, sid);
    } else if (sid < a->nslice_pool) {
        a->slice_pool[sid] = 0;
    }
    /* without Node objects the slices name the nodes (al_place.c) */
    if (a->node_stub)
        a->order_dirty = true;
    al_tmem_slice(a, sid);
    al_tmem_reserve(a);
}

static void on_node(al_allocator *a, dg_op op, uint32_t nid)
{
    const dg_node *n = dg_node_get(a->g, nid);
    uint32_t name = n ? n->meta.name : nid < a->nnode_name_of ? a->node_name_of[nid] : 0;
    if (n)
        remember_name(&a->node_name_of, &a->nnode_name_of, nid, name);
    al_ntab *t = name ? ntab_find(a, name) : NULL;
    if (t)
        ntab_invalidate(a, t);
    if (name)
        al_node_changed(a, name); /* labels, taints, unschedulable: the pod filter */
    if (op != DG_OP_UPDATE)
        a->order_dirty = true;
    if (op == DG_OP_ADD)
        al_tmem_reserve(a);
}

static void on_class(al_allocator *a, uint32_t cid)
{
    const dg_class *c = dg_class_get(a->g, cid);
    uint32_t name = c ? c->meta.name : cid < a->nclass_name_of ? a->class_name_of[cid] : 0;
    if (c)
        remember_name(&a->class_name_of, &a->nclass_name_of, cid, name);
    a->choice_gen++;
    a->cc_gen++;
    for (uint32_t i = 0; i < a->nselsets; i++)
        if (a->selsets[i]->class_name == name)
            a->selsets[i]->stale = true;
}

/* A device's generation moved while its slice stayed (taints from
 * DeviceTaintRules, derived attributes): remember it; the entries are
 * refreshed at the next al_sync, outside the graph's callback (refreshing
 * calls the policy groups hook). */
static void on_device(void *ctx, uint32_t devid)
{
    al_allocator *a = ctx;
    if (devid >= a->ndirty_bits * 64u) {
        uint32_t nw = a->ndirty_bits ? a->ndirty_bits : 64;
        while (nw * 64u <= devid)
            nw *= 2;
        a->dirty_bits = de_xrealloc(a->dirty_bits, nw * sizeof *a->dirty_bits);
        memset(a->dirty_bits + a->ndirty_bits, 0, (nw - a->ndirty_bits) * sizeof *a->dirty_bits);
        a->ndirty_bits = nw;
    }
    if (de_bit_get(a->dirty_bits, devid))
        return;
    de_bit_set(a->dirty_bits, devid);
    if (a->ndirty == a->capdirty) {
        a->capdirty = a->capdirty ? a->capdirty * 2 : 64;
        a->dirty = de_xrealloc(a->dirty, a->capdirty * sizeof *a->dirty);
    }
    a->dirty[a->ndirty++] = devid;
}

static void refresh_dirty(al_allocator *a)
{
    for (uint32_t k = 0; k < a->ndirty; k++) {
        uint32_t devid = a->dirty[k];
        de_bit_clr(a->dirty_bits, devid);
        dg_devref ref;
        if (!dg_device_ref(a->g, devid, &ref))
            continue; /* gone: its slice's event invalidated the tables */
        const dg_slice *s = dg_slice_get(a->g, ref.slice);
        uint32_t name = s->devices[ref.index].name;
        al_tabs *l = tabset(a, ref.pool, false);
        for (uint32_t j = 0; l && j < l->n; j++) {
            al_ntab *t = a->ntabs[al_tabs_v(l)[j]];
            if (!t->valid || t->epoch != a->epoch)
                continue;
            uint32_t v = al_ntab_find(t, ref.pool, name);
            if (v == UINT32_MAX)
                continue;
            al_dev *dv = &t->devs[v];
            if (dv->devid != devid || dv->gen == ref.gen)
                continue;
            al_fill_device(a, t, dv);
            al_cset_refresh(a, t, v);
            al_mf_set_node(a, t->node_name);
            al_node_changed(a, t->node_name);
        }
    }
    a->ndirty = 0;
}

static void on_change(void *ctx, dg_kind kind, dg_op op, uint32_t id)
{
    al_allocator *a = ctx;
    switch (kind) {
    case DG_KIND_RESOURCE_SLICE:
        on_slice(a, id);
        break;
    case DG_KIND_RESOURCE_CLAIM:
        on_claim(a, id);
        if (op == DG_OP_ADD)
            al_tmem_reserve(a);
        break;
    case DG_KIND_DEVICE_CLASS:
        on_class(a, id);
        break;
    case DG_KIND_NODE:
        on_node(a, op, id);
        break;
    case DG_KIND_POD:
        if (op == DG_OP_ADD)
            al_usage_reserve(a, dg_pod_id_limit(a->g), 0);
        al_usage_pod_event(a, op, id); /* what pods take from their nodes (al_fit.c) */
        break;
    default:
        break; /* taint rules (their devices: on_device), templates,
                * namespaces, pool status requests */
    }
}

/* Before any use: a new policy revision (no event), devices changed. */
/* The caches that grow with distinct selector texts are capped.  At the
 * start of an outermost call nothing holds a program or a selector set, so
 * this is where they are emptied (never inside al_schedule_pod, whose node
 * evaluations call al_allocate); everything is then rebuilt on use, as after
 * a policy reload.  An emptied compile cache makes every selector set stale
 * (they compile again when next used) and the memo's older programs dead. */
static void cache_caps(al_allocator *a)
{
    /* reasons printed by quick checks (al_place.c) accumulate here between
     * CEL evaluations; when every selector hits the memo nothing else resets
     * it, so a long-running scheduler grew it to its cap */
    de_arena_reset(a->scratch);
    if (cel_env_collect(a->cel))
        a->stats.cache_flushes++;
    uint64_t gen = cel_env_generation(a->cel);
    if (a->env_gen != gen) {
        for (uint32_t i = 0; i < a->nselsets; i++)
            a->selsets[i]->stale = true;
        cel_memo_forget_before(a->memo, cel_env_first_id(a->cel));
        a->env_gen = gen;
        a->cc_gen++;
    }
    if (a->nselsets > a->selset_cap) {
        al_selsets_free(a);
        a->epoch++;
        a->stats.cache_flushes++;
    }
}

void al_sync(al_allocator *a)
{
    if (a->has_hooks && a->hooks.revision) {
        uint64_t rev = a->hooks.revision(a->hooks.ctx);
        if (rev != a->hook_rev) {
            a->hook_rev = rev;
            a->epoch++;
        }
    }
    if (!a->depth)
        cache_caps(a);
    refresh_dirty(a);
}

al_ntab *al_ntab_get(al_allocator *a, uint32_t node_name, de_err *e)
{
    al_ntab *t = ntab_find(a, node_name);
    if (!t) {
        t = al_ntab_new(a, node_name);
        if (a->nntabs == a->capntabs) {
            a->capntabs = a->capntabs ? a->capntabs * 2 : 64;
            a->ntabs = de_xrealloc(a->ntabs, a->capntabs * sizeof *a->ntabs);
        }
        t->self = a->nntabs;
        a->ntabs[a->nntabs++] = t;
        de_map_put(&a->ntab_by_name, node_name, a->nntabs);
    }
    if (!a->fready || a->nfdirty)
        al_fpools_sync(a);
    if (!t->valid || t->epoch != a->epoch) {
        tabs_register(a, t, false);
        al_ntab_clear(a, t);
        t->valid = false;
        de_rc rc = al_ntab_build(a, t, e);
        tabs_register(a, t, true);
        if ((rc != DE_OK) != t->failed) {
            t->failed = rc != DE_OK;
            if (t->failed)
                a->nfailed_tabs++;
            else
                a->nfailed_tabs--;
        }
        if (rc != DE_OK)
            return NULL;
        al_ntab_usage(a, t);
        t->valid = true;
        t->epoch = a->epoch;
        a->stats.node_tables_built++;
    }
    return t;
}
