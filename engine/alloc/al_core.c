/*
 * al_core.c - the allocator object: options, gates, caches and how they learn
 * about graph changes.
 *
 * Change detection without a listener: the allocator remembers the graph
 * generation after its own writes (template claims it created, allocations it
 * committed).  When it finds the generation moved on by someone else, it
 * assumes anything may have changed: node tables are rebuilt lazily and usage
 * re-read.  In the offline flows (allocate, bench, run) only the allocator
 * writes between pods, so the caches stay warm; a live scheduler feeding watch
 * events pays a rebuild of the tables it touches after each event.
 */
#include "al_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

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
    de_map_init(&a->ntab_by_name);
    de_map_init(&a->selset_by_key);
    de_map_init(&a->node_rank);
    de_map_init(&a->local_first);
    a->scratch = de_arena_new(64u << 20);
    a->s_metadata_name = al_intern(a, "metadata.name");
    a->s_in = al_intern(a, "In");
    a->epoch = 1;
    a->usage_epoch = 1;
    a->last_usage_gen = dg_generation(g);
    return a;
}

static void ntab_free(al_ntab *t)
{
    if (!t)
        return;
    de_arena_free(t->ar);
    de_arena_free(t->usage_ar);
    free(t->csets);
    free(t);
}

void al_free(al_allocator *a)
{
    if (!a)
        return;
    for (uint32_t i = 0; i < a->nntabs; i++)
        ntab_free(a->ntabs[i]);
    free(a->ntabs);
    for (uint32_t i = 0; i < a->nselsets; i++) {
        al_selset *s = a->selsets[i];
        for (uint32_t k = 0; k < s->nclass + s->nreq; k++)
            free(s->compile_err[k]);
        free(s->compile_err);
        free(s->progs);
        free(s->driver_eq);
        free(s->maybe_free);
        free(s->rexpr);
        free(s->rhascel);
        free(s);
    }
    free(a->selsets);
    de_map_destroy(&a->ntab_by_name);
    de_map_destroy(&a->selset_by_key);
    de_map_destroy(&a->node_rank);
    free(a->all_slices);
    free(a->shared_slices);
    free(a->local_slices);
    free(a->local_next);
    de_map_destroy(&a->local_first);
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
}

/* Notice changes made to the graph by others since we last looked. */
void al_sync(al_allocator *a)
{
    uint64_t gen = dg_generation(a->g);
    if (gen != a->last_usage_gen) {
        a->epoch++;
        a->usage_epoch++;
        a->last_usage_gen = gen;
    }
    if (a->has_hooks && a->hooks.revision) {
        uint64_t rev = a->hooks.revision(a->hooks.ctx);
        if (rev != a->hook_rev) {
            a->hook_rev = rev;
            a->epoch++;
        }
    }
}

al_ntab *al_ntab_get(al_allocator *a, uint32_t node_name, de_err *e)
{
    uint64_t v;
    al_ntab *t;
    if (de_map_get(&a->ntab_by_name, node_name, &v)) {
        t = a->ntabs[v - 1];
    } else {
        t = de_xcalloc(1, sizeof *t);
        t->node_name = node_name;
        if (a->nntabs == a->capntabs) {
            a->capntabs = a->capntabs ? a->capntabs * 2 : 64;
            a->ntabs = de_xrealloc(a->ntabs, a->capntabs * sizeof *a->ntabs);
        }
        a->ntabs[a->nntabs++] = t;
        de_map_put(&a->ntab_by_name, node_name, a->nntabs);
    }
    if (!t->valid || t->epoch != a->epoch) {
        de_rc rc = al_ntab_build(a, t, e);
        if (rc != DE_OK) {
            t->valid = false;
            return NULL;
        }
        t->valid = true;
        t->epoch = a->epoch;
        t->usage_epoch = 0;
        a->stats.node_tables_built++;
    }
    if (t->usage_epoch != a->usage_epoch)
        al_ntab_usage(a, t);
    return t;
}

/* Read the allocated state of the table's devices from the graph (upstream's
 * AllocatedState as kube-scheduler builds it: adminAccess results do not
 * count; with DRAConsumableCapacity a result with a shareID is shared use
 * adding its consumedCapacity, any other result is exclusive use). */
void al_ntab_usage(al_allocator *a, al_ntab *t)
{
    if (!t->usage_ar)
        t->usage_ar = de_arena_new_sized(0, 1024);
    else
        de_arena_reset(t->usage_ar);
    t->inuse = AL_NEW(t->usage_ar, uint64_t, t->nwords);
    t->allocated = AL_NEW(t->usage_ar, uint64_t, t->nwords);
    t->agg = AL_NEW(t->usage_ar, dg_consumed *, t->ndev);
    t->nagg = AL_NEW(t->usage_ar, uint32_t, t->ndev);
    for (uint32_t i = 0; i < t->ndev; i++) {
        const al_dev *d = &t->devs[i];
        const dg_slice *s = d->s;
        dg_usage u;
        if (!dg_usage_get(a->g, s->driver, s->pool, d->name, &u))
            continue;
        de_bit_set(t->allocated, i);
        if (a->f_cc) {
            if (u.exclusive)
                de_bit_set(t->inuse, i);
            if (u.shared && u.nconsumed) {
                t->agg[i] = AL_NEW(t->usage_ar, dg_consumed, u.nconsumed);
                memcpy(t->agg[i], u.consumed, u.nconsumed * sizeof *u.consumed);
                t->nagg[i] = u.nconsumed;
            }
        } else if (u.exclusive || u.shared) {
            de_bit_set(t->inuse, i);
        }
    }
    t->usage_epoch = a->usage_epoch;
}
