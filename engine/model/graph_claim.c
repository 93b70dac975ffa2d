/*
 * graph_claim.c - claims, pods and the allocated state derived from them.
 *
 * Usage (what the allocator treats as "in use") is kept per device name -
 * (pool id, device name) - so that it also covers devices whose slice is
 * gone or not published yet.  Each allocated claim contributes its results:
 * a result with adminAccess does not count, a result with a shareID is a
 * shared use adding its consumedCapacity, anything else is exclusive use.
 * A claim change removes exactly that claim's old contribution and adds the
 * new one; nothing is recomputed from the other claims.
 *
 * The assume path (dg_claim_set_allocation, dg_claim_add_reservation,
 * dg_claim_deallocate) writes exact-size records from the graph's slab
 * (graph_rec.c), given back on deallocation, so a claim allocated and
 * released many times does not grow, and it never goes through JSON.
 */
#include "graph_int.h"
#include "../base/jdump.h"
#include "../base/jload.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- usage ------------------------------------------------------------------------- */

static usage_ent *usage_slot(dg_graph *g, uint32_t driver, uint32_t pool, uint32_t device, bool create)
{
    uint32_t pid = create ? dg_pool_get_or_add(g, driver, pool) : dg_pool_find(g, driver, pool);
    if (pid == DG_NONE)
        return NULL;
    uint64_t key = de_pack2(pid, device), v;
    if (!create)
        return de_map_get(&g->usage_idx, key, &v) ? &g->usage[v] : NULL;
    /* one probe for the lookup and the insertion (the index is reserved
     * ahead by dg_rec_pending, so the slot stays where it is) */
    uint64_t *slot = de_map_slot(&g->usage_idx, key, UINT64_MAX);
    if (*slot != UINT64_MAX)
        return &g->usage[*slot];
    uint32_t idx;
    if (g->usage_free.n) {
        idx = g->usage_free.v[--g->usage_free.n];
    } else {
        if (g->nusage == g->capusage) {
            g->capusage = g->capusage ? g->capusage * 2 : 256;
            g->usage = de_xrealloc(g->usage, g->capusage * sizeof *g->usage);
        }
        idx = g->nusage++;
    }
    usage_ent *u = &g->usage[idx];
    memset(u, 0, sizeof *u);
    u->driver = driver;
    u->pool = pool;
    u->device = device;
    *slot = idx;
    return u;
}

static void consumed_add(usage_ent *u, const dg_consumed *c, int sign)
{
    for (uint32_t i = 0; i < u->nconsumed; i++)
        if (u->consumed[i].key == c->key) {
            if (sign > 0)
                de_qty_add(u->consumed[i].value, c->value, &u->consumed[i].value);
            else
                de_qty_sub(u->consumed[i].value, c->value, &u->consumed[i].value);
            return;
        }
    if (sign < 0)
        return;
    if (u->nconsumed == u->cap) {
        u->cap = u->cap ? u->cap * 2 : 4;
        u->consumed = de_xrealloc(u->consumed, u->cap * sizeof *u->consumed);
    }
    u->consumed[u->nconsumed++] = *c;
}

static bool usage_apply(dg_graph *g, const dg_claim *c, int sign)
{
    if (!c->allocated)
        return false;
    bool changed = false;
    for (uint32_t i = 0; i < c->allocation.nresults; i++) {
        const dg_result *r = &c->allocation.results[i];
        if (r->admin_access == 1)
            continue;
        usage_ent *u = usage_slot(g, r->driver, r->pool, r->device, sign > 0);
        if (!u)
            continue;
        changed = true;
        if (r->share_id) {
            u->shared = (uint32_t)((int)u->shared + sign);
            for (uint32_t k = 0; k < r->nconsumed; k++)
                consumed_add(u, &r->consumed[k], sign);
        } else {
            u->exclusive = (uint32_t)((int)u->exclusive + sign);
        }
        if (!u->exclusive && !u->shared) {
            uint32_t pid = dg_pool_find(g, u->driver, u->pool);
            uint64_t key = de_pack2(pid, u->device), v;
            if (de_map_get(&g->usage_idx, key, &v)) {
                de_map_del(&g->usage_idx, key);
                free(u->consumed);
                memset(u, 0, sizeof *u);
                u32vec_push(&g->usage_free, (uint32_t)v);
            }
        }
    }
    if (changed)
        g->usage_gen = dg_bump(g);
    return changed;
}

bool dg_usage_get(const dg_graph *g, uint32_t driver, uint32_t pool, uint32_t device, dg_usage *out)
{
    return dg_usage_get_pid(g, dg_pool_find(g, driver, pool), device, out);
}

bool dg_usage_get_pid(const dg_graph *g, uint32_t pid, uint32_t device, dg_usage *out)
{
    memset(out, 0, sizeof *out);
    uint64_t v;
    if (pid == DG_NONE || !de_map_get(&g->usage_idx, de_pack2(pid, device), &v))
        return false;
    const usage_ent *u = &g->usage[v];
    out->exclusive = u->exclusive;
    out->shared = u->shared;
    out->consumed = u->consumed;
    out->nconsumed = u->nconsumed;
    return true;
}

static int usage_cmp(const void *a, const void *b, void *ctx)
{
    const dg_graph *g = ctx;
    const usage_ent *x = &g->usage[*(const uint32_t *)a], *y = &g->usage[*(const uint32_t *)b];
    int c = de_intern_cmp(g->in, x->driver, y->driver);
    if (!c)
        c = de_intern_cmp(g->in, x->pool, y->pool);
    if (!c)
        c = de_intern_cmp(g->in, x->device, y->device);
    return c;
}

void dg_usage_each(const dg_graph *g, dg_usage_cb cb, void *ctx)
{
    uint32_t *idx = de_xmalloc((g->nusage + 1) * sizeof *idx), n = 0;
    for (uint32_t i = 0; i < g->nusage; i++)
        if (g->usage[i].exclusive || g->usage[i].shared)
            idx[n++] = i;
    qsort_r(idx, n, sizeof *idx, usage_cmp, (void *)g);
    for (uint32_t i = 0; i < n; i++) {
        const usage_ent *u = &g->usage[idx[i]];
        dg_usage du = {u->exclusive, u->shared, u->consumed, u->nconsumed};
        cb(ctx, u->driver, u->pool, u->device, &du);
    }
    free(idx);
}

uint64_t dg_usage_generation(const dg_graph *g) { return g->usage_gen; }

/* The input object is kept as compact JSON text, not as a jansson tree:
 * a tree costs ~3 KB for a small claim or pod, its text a tenth of that, and
 * only output (allocate's objects, serve's writes and events) needs it.
 * Dumping and parsing again give the same tree (key order kept, reals with
 * 17 digits, NULs escaped), so output is byte for byte what it was. */
static char *freeze(json_t *j, uint32_t *len)
{
    *len = 0;
    if (!j)
        return NULL;
    char *s = de_json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
    size_t n = s ? strlen(s) : 0;
    if (n > UINT32_MAX) { /* a 4 GiB object never gets past the readers' caps */
        free(s);
        return NULL;
    }
    *len = (uint32_t)n;
    return s;
}

static json_t *thaw(const char *text, size_t len)
{
    json_t *j = text ? de_json_loadb(text, len, JSON_ALLOW_NUL, NULL) : NULL;
    return j ? j : json_object();
}

/* What a claim or pod entry owns besides its object: its decode arena, the
 * records written through the graph (slab), its input text and its encoding
 * cache (json_decref takes NULL). */
static void release_refs(dg_graph *g, const uint32_t *refs, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        de_intern_release(g->in, refs[i]);
}

static void release_claim(dg_graph *g, claim_ent *ce)
{
    if (ce->c && !ce->c->allocated)
        dg_rec_pending(g, ce, -1);
    dg_rec_release(g, ce);
    release_refs(g, ce->refs, ce->nrefs);
    de_arena_free(ce->a);
    free(ce->text);
    json_decref(ce->jcache);
}

static void release_pod(dg_graph *g, pod_ent *pe)
{
    if (pe->status_cap) {
        for (uint32_t i = 0; i < pe->p->nclaim_statuses; i++)
            de_intern_release(g->in, pe->p->claim_statuses[i].claim_name);
        de_slab_free(g->slab, pe->p->claim_statuses, pe->status_cap * sizeof(dg_pod_claim_status));
    }
    release_refs(g, pe->refs, pe->nrefs);
    de_arena_free(pe->a);
    free(pe->text);
    json_decref(pe->jcache);
}

/* ---- claims ------------------------------------------------------------------------- */

void dg_claim_upsert(dg_graph *g, dg_claim *c, de_arena *a, json_t *json, const uint32_t *refs, uint32_t nrefs,
                     uint32_t *clid)
{
    uint64_t key = de_pack2(c->meta.ns, c->meta.name), v;
    uint32_t id;
    bool had = false, changed = false;
    if (de_map_get(&g->claim_names, key, &v)) {
        id = (uint32_t)v;
        claim_ent *ce = &g->claims[id];
        if (ce->c) {
            had = true;
            changed = usage_apply(g, ce->c, -1);
            release_claim(g, ce);
        } else {
            g->live_claims++;
        }
    } else {
        if (g->claim_free.n) {
            id = g->claim_free.v[--g->claim_free.n];
        } else {
            if (g->nclaims == g->capclaims) {
                g->capclaims = g->capclaims ? g->capclaims + g->capclaims / 2 : 64;
                g->claims = de_xrealloc(g->claims, g->capclaims * sizeof *g->claims);
            }
            id = g->nclaims++;
        }
        de_map_put(&g->claim_names, key, id);
        g->live_claims++;
    }
    claim_ent *ce = &g->claims[id];
    memset(ce, 0, sizeof *ce);
    ce->c = c;
    ce->a = a;
    ce->refs = (uint32_t *)refs;
    ce->nrefs = nrefs;
    if (json && dg_claim_encodes_as(g, c, json))
        ce->encoded = true;
    else
        ce->text = freeze(json, &ce->text_len);
    ce->gen = dg_bump(g);
    changed |= usage_apply(g, c, +1);
    if (changed)
        ce->usage_gen = g->usage_gen;
    if (!c->allocated)
        dg_rec_pending(g, ce, +1);
    *clid = id;
    dg_notify(g, DG_KIND_RESOURCE_CLAIM, had ? DG_OP_UPDATE : DG_OP_ADD, id);
}

void dg_claim_delete(dg_graph *g, uint32_t clid)
{
    claim_ent *ce = &g->claims[clid];
    if (!ce->c)
        return;
    usage_apply(g, ce->c, -1);
    de_map_del(&g->claim_names, de_pack2(ce->c->meta.ns, ce->c->meta.name));
    release_claim(g, ce);
    memset(ce, 0, sizeof *ce);
    ce->gen = dg_bump(g);
    g->live_claims--;
    u32vec_push(&g->claim_free, clid);
}

void dg_claims_free(dg_graph *g)
{
    /* the slab goes as a whole: only the arenas and JSON are freed one by one */
    for (uint32_t i = 0; i < g->nclaims; i++) {
        de_arena_free(g->claims[i].a);
        free(g->claims[i].text);
        json_decref(g->claims[i].jcache);
    }
    free(g->claims);
    for (uint32_t i = 0; i < g->npods; i++) {
        de_arena_free(g->pods[i].a);
        free(g->pods[i].text);
        json_decref(g->pods[i].jcache);
    }
    free(g->pods);
    de_slab_free_all(g->slab);
    g->slab = NULL;
    for (uint32_t i = 0; i < g->nusage; i++)
        free(g->usage[i].consumed);
    free(g->usage);
    u32vec_free(&g->usage_free);
    u32vec_free(&g->claim_free);
    u32vec_free(&g->pod_free);
    de_map_destroy(&g->usage_idx);
    de_map_destroy(&g->pins);
    de_map_destroy(&g->claim_names);
    de_map_destroy(&g->pod_names);
}

uint32_t dg_claim_id_limit(const dg_graph *g) { return g->nclaims; }

const dg_claim *dg_claim_get(const dg_graph *g, uint32_t clid)
{
    return clid < g->nclaims ? g->claims[clid].c : NULL;
}

uint32_t dg_claim_find(const dg_graph *g, uint32_t ns, uint32_t name)
{
    uint64_t v;
    if (de_map_get(&g->claim_names, de_pack2(ns, name), &v) && g->claims[v].c)
        return (uint32_t)v;
    return DG_NONE;
}

uint64_t dg_claim_generation(const dg_graph *g, uint32_t clid)
{
    return clid < g->nclaims ? g->claims[clid].gen : 0;
}

uint64_t dg_claim_usage_generation(const dg_graph *g, uint32_t clid)
{
    return clid < g->nclaims ? g->claims[clid].usage_gen : 0;
}

json_t *dg_claim_json(const dg_graph *g, uint32_t clid)
{
    if (clid >= g->nclaims || !g->claims[clid].c)
        return NULL;
    claim_ent *ce = &((dg_graph *)g)->claims[clid];
    if (ce->jcache && ce->jcache_gen == ce->gen)
        return ce->jcache;
    if (ce->jcache)
        json_decref(ce->jcache);
    if (ce->encoded) { /* the struct, status as it is now */
        ce->jcache = dg_encode_claim_object(g, ce->c);
        ce->jcache_gen = ce->gen;
        return ce->jcache;
    }
    json_t *j = thaw(ce->text, ce->text_len);
    json_t *orig_status = json_incref(json_object_get(j, "status"));
    json_t *st = dg_encode_claim_status(g, ce->c, orig_status);
    if (json_object_size(st))
        json_object_set_new(j, "status", st);
    else {
        json_object_del(j, "status");
        json_decref(st);
    }
    json_decref(orig_status);
    ce->jcache = j;
    ce->jcache_gen = ce->gen;
    return j;
}

/* ---- the assume path ------------------------------------------------------------------ */

de_rc dg_claim_set_allocation(dg_graph *g, uint32_t clid, const dg_allocation *a, de_err *e)
{
    if (clid >= g->nclaims || !g->claims[clid].c)
        return de_errf(e, DE_ENOTFOUND, "claim id %u not found", clid);
    claim_ent *ce = &g->claims[clid];
    dg_claim *c = ce->c;
    if (c->allocated)
        return de_errf(e, DE_ECONFLICT, "ResourceClaim \"%s/%s\" is already allocated", dg_s(g, c->meta.ns),
                       dg_s(g, c->meta.name));
    if (!dg_rec_set_allocation(g, ce, a))
        return de_errf(e, DE_ENOMEM, "ResourceClaim \"%s/%s\": no room for its allocation record", dg_s(g, c->meta.ns),
                       dg_s(g, c->meta.name));
    c->allocated = true;
    dg_rec_pending(g, ce, -1);
    if (usage_apply(g, c, +1))
        ce->usage_gen = g->usage_gen;
    ce->gen = dg_bump(g);
    dg_notify(g, DG_KIND_RESOURCE_CLAIM, DG_OP_UPDATE, clid);
    return DE_OK;
}

de_rc dg_claim_deallocate(dg_graph *g, uint32_t clid, de_err *e)
{
    if (clid >= g->nclaims || !g->claims[clid].c)
        return de_errf(e, DE_ENOTFOUND, "claim id %u not found", clid);
    claim_ent *ce = &g->claims[clid];
    dg_claim *c = ce->c;
    if (!c->allocated && !c->nreserved_for)
        return DE_OK;
    if (usage_apply(g, c, -1))
        ce->usage_gen = g->usage_gen;
    bool was = c->allocated;
    dg_rec_release(g, ce);
    c->allocated = false;
    memset(&c->allocation, 0, sizeof c->allocation);
    c->reserved_for = NULL;
    c->nreserved_for = 0;
    c->devices = NULL;
    c->ndevices = 0;
    if (was)
        dg_rec_pending(g, ce, +1);
    ce->gen = dg_bump(g);
    dg_notify(g, DG_KIND_RESOURCE_CLAIM, DG_OP_UPDATE, clid);
    return DE_OK;
}

de_rc dg_claim_add_reservation(dg_graph *g, uint32_t clid, const dg_consumer *cons, de_err *e)
{
    if (clid >= g->nclaims || !g->claims[clid].c)
        return de_errf(e, DE_ENOTFOUND, "claim id %u not found", clid);
    claim_ent *ce = &g->claims[clid];
    dg_claim *c = ce->c;
    if (!c->allocated)
        return de_errf(e, DE_EINVAL, "ResourceClaim \"%s/%s\": status.reservedFor: Forbidden: may not be specified when `allocated` is not set",
                       dg_s(g, c->meta.ns), dg_s(g, c->meta.name));
    for (uint32_t i = 0; i < c->nreserved_for; i++)
        if (c->reserved_for[i].uid == cons->uid)
            return DE_OK;
    if (c->nreserved_for >= 256)
        return de_errf(e, DE_EINVAL, "ResourceClaim \"%s/%s\": status.reservedFor: Too many: 257: must have at most 256 items",
                       dg_s(g, c->meta.ns), dg_s(g, c->meta.name));
    if (c->nreserved_for == ce->reserved_cap || !ce->reserved_cap) {
        uint32_t cap = ce->reserved_cap ? ce->reserved_cap * 2 : 4;
        if (cap < c->nreserved_for + 1)
            cap = c->nreserved_for + 4;
        /* a list decoded from the input stays in its arena, and one in the
         * allocation record goes with the record: copied, not freed */
        dg_consumer *n = dg_rec_grow(g, c->reserved_for, ce->res_in_rec ? 0 : ce->reserved_cap * sizeof *n,
                                     c->nreserved_for * sizeof *n, cap * sizeof *n);
        if (!n)
            return de_errf(e, DE_ENOMEM, "ResourceClaim \"%s/%s\": no room for status.reservedFor",
                           dg_s(g, c->meta.ns), dg_s(g, c->meta.name));
        if (!ce->reserved_cap) /* the list now holds its names itself */
            for (uint32_t i = 0; i < c->nreserved_for; i++) {
                de_intern_retain(g->in, n[i].name);
                de_intern_retain(g->in, n[i].uid);
            }
        c->reserved_for = n;
        ce->reserved_cap = cap;
        ce->res_in_rec = false;
    }
    de_intern_retain(g->in, cons->name);
    de_intern_retain(g->in, cons->uid);
    c->reserved_for[c->nreserved_for++] = *cons;
    ce->gen = dg_bump(g);
    dg_notify(g, DG_KIND_RESOURCE_CLAIM, DG_OP_UPDATE, clid);
    return DE_OK;
}

/* ---- pods ------------------------------------------------------------------------------- */

void dg_pod_upsert(dg_graph *g, dg_pod *p, de_arena *a, json_t *json, const uint32_t *refs, uint32_t nrefs,
                   uint32_t *pid)
{
    uint64_t key = de_pack2(p->meta.ns, p->meta.name), v;
    uint32_t id;
    bool had = false;
    if (de_map_get(&g->pod_names, key, &v)) {
        id = (uint32_t)v;
        pod_ent *pe = &g->pods[id];
        if (pe->p) {
            had = true;
            release_pod(g, pe);
        } else {
            g->live_pods++;
        }
    } else {
        if (g->pod_free.n) {
            id = g->pod_free.v[--g->pod_free.n];
        } else {
            if (g->npods == g->cappods) {
                g->cappods = g->cappods ? g->cappods + g->cappods / 2 : 64;
                g->pods = de_xrealloc(g->pods, g->cappods * sizeof *g->pods);
            }
            id = g->npods++;
        }
        de_map_put(&g->pod_names, key, id);
        g->live_pods++;
    }
    pod_ent *pe = &g->pods[id];
    memset(pe, 0, sizeof *pe);
    pe->p = p;
    pe->a = a;
    pe->refs = (uint32_t *)refs;
    pe->nrefs = nrefs;
    if (!g->opts.no_pod_text)
        pe->text = freeze(json, &pe->text_len);
    pe->gen = dg_bump(g);
    *pid = id;
    dg_notify(g, DG_KIND_POD, had ? DG_OP_UPDATE : DG_OP_ADD, id);
}

void dg_pod_delete(dg_graph *g, uint32_t pid)
{
    pod_ent *pe = &g->pods[pid];
    if (!pe->p)
        return;
    de_map_del(&g->pod_names, de_pack2(pe->p->meta.ns, pe->p->meta.name));
    release_pod(g, pe);
    memset(pe, 0, sizeof *pe);
    pe->gen = dg_bump(g);
    g->live_pods--;
    u32vec_push(&g->pod_free, pid);
}

uint32_t dg_pod_id_limit(const dg_graph *g) { return g->npods; }

const dg_pod *dg_pod_get(const dg_graph *g, uint32_t pid)
{
    return pid < g->npods ? g->pods[pid].p : NULL;
}

uint32_t dg_pod_find(const dg_graph *g, uint32_t ns, uint32_t name)
{
    uint64_t v;
    if (de_map_get(&g->pod_names, de_pack2(ns, name), &v) && g->pods[v].p)
        return (uint32_t)v;
    return DG_NONE;
}

/* From the struct: the pod is kept as text, and parsing all of it for these
 * few strings was a thaw per scheduled pod (about 1 % of serve's
 * instructions on a busy cluster). */
json_t *dg_pod_ref_json(const dg_graph *g, uint32_t pid)
{
    const dg_pod *p = dg_pod_get(g, pid);
    if (!p)
        return NULL;
    json_t *md = json_object();
    const struct {
        const char *key;
        uint32_t id;
    } f[] = {{"name", p->meta.name}, {"namespace", p->meta.ns}, {"uid", p->meta.uid},
             {"resourceVersion", p->meta.resource_version}};
    for (size_t i = 0; i < DE_ARRAY_LEN(f); i++)
        if (*dg_s(g, f[i].id))
            json_object_set_new(md, f[i].key, json_string(dg_s(g, f[i].id)));
    return json_pack("{s:s, s:s, s:o}", "apiVersion", "v1", "kind", "Pod", "metadata", md);
}

json_t *dg_pod_json(const dg_graph *g, uint32_t pid)
{
    if (pid >= g->npods || !g->pods[pid].p || g->opts.no_pod_text)
        return NULL;
    pod_ent *pe = &((dg_graph *)g)->pods[pid];
    if (pe->jcache && pe->jcache_gen == pe->gen)
        return pe->jcache;
    if (pe->jcache)
        json_decref(pe->jcache);
    json_t *j = thaw(pe->text, pe->text_len);
    if (!pe->status_cap) {
        pe->jcache = j;
        pe->jcache_gen = pe->gen;
        return j;
    }
    json_t *st = json_object_get(j, "status");
    if (!json_is_object(st)) {
        st = json_object();
        json_object_set_new(j, "status", st);
    }
    json_t *arr = json_array();
    for (uint32_t i = 0; i < pe->p->nclaim_statuses; i++) {
        const dg_pod_claim_status *s = &pe->p->claim_statuses[i];
        json_t *o = json_object();
        json_object_set_new(o, "name", json_string(dg_s(g, s->name)));
        if (s->claim_name)
            json_object_set_new(o, "resourceClaimName", json_string(dg_s(g, s->claim_name)));
        json_array_append_new(arr, o);
    }
    json_object_set_new(st, "resourceClaimStatuses", arr);
    pe->jcache = j;
    pe->jcache_gen = pe->gen;
    return j;
}

/* ---- claims from templates (the claim controller's job) ------------------------------- */

/* The claim controller's generateName: "<pod>-<claim>-", both parts cut
 * proportionally when longer than 57; the API server then appends 5
 * characters from this alphabet.  We derive them from the pod UID (or
 * namespace/name) and the claim reference so the result is reproducible. */
/* The claim controller's generateName (out_base) and the name the API server
 * makes of it (out): <pod>-<ref>-, both parts cut in proportion past 57
 * characters (then without the trailing '-', as upstream), plus 5 letters. */
static void generated_name(const char *pod, const char *ref, const char *seed, char *out, size_t cap,
                           char *out_base, size_t base_cap)
{
    char base[600];
    snprintf(base, sizeof base, "%s-%s-", pod, ref);
    size_t bl = strlen(base);
    if (bl > 57) {
        size_t pl = strlen(pod), rl = strlen(ref);
        snprintf(base, sizeof base, "%.*s-%.*s", (int)(pl * 57 / bl), pod, (int)(rl * 57 / bl), ref);
    }
    static const char alphabet[] = "bcdfghjklmnpqrstvwxz2456789";
    uint64_t h = de_hash_u64(de_hash_bytes(seed, strlen(seed)) ^ de_hash_bytes(ref, strlen(ref)));
    char suffix[6];
    for (int i = 0; i < 5; i++) {
        suffix[i] = alphabet[h % (sizeof alphabet - 1)];
        h /= sizeof alphabet - 1;
    }
    suffix[5] = 0;
    snprintf(out, cap, "%.250s%s", base, suffix);
    snprintf(out_base, base_cap, "%.250s", base);
}

static void pod_add_claim_status(dg_graph *g, uint32_t pid, uint32_t ref, uint32_t claim)
{
    pod_ent *pe = &g->pods[pid];
    dg_pod *p = pe->p;
    uint32_t at = UINT32_MAX;
    for (uint32_t i = 0; i < p->nclaim_statuses && at == UINT32_MAX; i++)
        if (p->claim_statuses[i].name == ref) {
            if (p->claim_statuses[i].claim_name == claim)
                return;
            at = i;
        }
    /* statuses written through the graph live in a slab list that holds a
     * reference on each claim name (a decoded list leaves that to the pod) */
    if (!pe->status_cap || (at == UINT32_MAX && p->nclaim_statuses == pe->status_cap)) {
        uint32_t cap = pe->status_cap ? pe->status_cap * 2 : 4;
        if (cap < p->nclaim_statuses + 1)
            cap = p->nclaim_statuses + 4;
        dg_pod_claim_status *n = dg_rec_grow(g, p->claim_statuses, pe->status_cap * sizeof *n,
                                             p->nclaim_statuses * sizeof *n, cap * sizeof *n);
        if (!n)
            return;
        if (!pe->status_cap)
            for (uint32_t i = 0; i < p->nclaim_statuses; i++)
                de_intern_retain(g->in, n[i].claim_name);
        p->claim_statuses = n;
        pe->status_cap = cap;
    }
    de_intern_retain(g->in, claim);
    if (at != UINT32_MAX) {
        de_intern_release(g->in, p->claim_statuses[at].claim_name);
        p->claim_statuses[at].claim_name = claim;
        pe->gen = dg_bump(g);
        return;
    }
    p->claim_statuses[p->nclaim_statuses++] = (dg_pod_claim_status){ref, claim};
    pe->gen = dg_bump(g);
    dg_notify(g, DG_KIND_POD, DG_OP_UPDATE, pid);
}

/* Who a claim made from a template is for: its controller owner. */
typedef struct tmpl_owner {
    const char *api_version, *kind, *name, *uid;
    uint32_t ns;
    const char *seed;       /* for the name's suffix */
} tmpl_owner;

/* The claim controller's claim for entry `ref` from template `tmpl`
 * (found again when it exists already: the name is deterministic). */
static de_rc claim_from_template(dg_graph *g, const tmpl_owner *ow, uint32_t ref, uint32_t tmpl, uint32_t *clid,
                                 de_err *e)
{
    uint32_t tid = dg_template_find(g, ow->ns, tmpl);
    if (tid == DG_NONE)
        return de_errf(e, DE_ENOTFOUND, "%s \"%s/%s\": resource claim template \"%s\" not found in namespace \"%s\"",
                       !strcmp(ow->kind, "Pod") ? "pod" : ow->kind, dg_s(g, ow->ns), ow->name, dg_s(g, tmpl),
                       dg_s(g, ow->ns));
    json_t *tj = dg_template_json(g, tid);
    const dg_claim_template *t = dg_template_get(g, tid);
    char name[300], gen[300];
    generated_name(ow->name, dg_s(g, ref), ow->seed, name, sizeof name, gen, sizeof gen);
    uint32_t existing = dg_claim_find(g, ow->ns, de_intern_find(g->in, name, strlen(name)));
    if (existing != DG_NONE) {
        *clid = existing;
        return DE_OK;
    }
    json_t *obj = json_object();
    json_t *av = json_object_get(tj, "apiVersion");
    json_object_set_new(obj, "apiVersion", json_string(json_is_string(av) ? json_string_value(av) : "resource.k8s.io/v1"));
    json_object_set_new(obj, "kind", json_string("ResourceClaim"));
    json_t *md = json_object();
    json_object_set_new(md, "name", json_string(name));
    json_object_set_new(md, "generateName", json_string(gen));
    json_object_set_new(md, "namespace", json_string(dg_s(g, ow->ns)));
    if (t->nlabels) {
        json_t *l = json_object();
        for (uint32_t i = 0; i < t->nlabels; i++)
            json_object_set_new(l, dg_s(g, t->labels[i].key), json_string(dg_s(g, t->labels[i].value)));
        json_object_set_new(md, "labels", l);
    }
    json_t *an = json_object();
    for (uint32_t i = 0; i < t->nannotations; i++)
        json_object_set_new(an, dg_s(g, t->annotations[i].key), json_string(dg_s(g, t->annotations[i].value)));
    json_object_set_new(an, "resource.kubernetes.io/pod-claim-name", json_string(dg_s(g, ref)));
    json_object_set_new(md, "annotations", an);
    json_t *owner = json_object();
    json_object_set_new(owner, "apiVersion", json_string(ow->api_version));
    json_object_set_new(owner, "kind", json_string(ow->kind));
    json_object_set_new(owner, "name", json_string(ow->name));
    json_object_set_new(owner, "uid", json_string(ow->uid));
    /* exactly what the 1.37 claim controller sets: no blockOwnerDeletion */
    json_object_set_new(owner, "controller", json_true());
    json_t *owners = json_array();
    json_array_append_new(owners, owner);
    json_object_set_new(md, "ownerReferences", owners);
    json_object_set_new(obj, "metadata", md);
    json_t *tspec = json_object_get(json_object_get(tj, "spec"), "spec");
    json_object_set_new(obj, "spec", tspec ? json_deep_copy(tspec) : json_object());
    de_origin o = {"<generated from template>", 1, -1};
    dg_kind kind;
    de_rc rc = dg_apply(g, obj, &o, &kind, e);
    json_decref(obj);
    if (rc != DE_OK)
        return rc;
    *clid = dg_claim_find(g, ow->ns, de_intern_find(g->in, name, strlen(name)));
    if (*clid == DG_NONE)
        return de_errf(e, DE_EINTERNAL, "generated claim \"%s\" not found after creation", name);
    return DE_OK;
}

de_rc dg_claim_from_template(dg_graph *g, uint32_t podid, uint32_t ref_index, uint32_t *clid, de_err *e)
{
    if (podid >= g->npods || !g->pods[podid].p)
        return de_errf(e, DE_ENOTFOUND, "pod id %u not found", podid);
    dg_pod *p = g->pods[podid].p;
    if (ref_index >= p->nclaims)
        return de_errf(e, DE_EINVAL, "pod \"%s/%s\" has no resourceClaims[%u]", dg_s(g, p->meta.ns),
                       dg_s(g, p->meta.name), ref_index);
    const dg_pod_claim_ref *ref = &p->claims[ref_index];
    if (!ref->template_name)
        return de_errf(e, DE_EINVAL, "pod \"%s/%s\": resourceClaims[%u] does not name a template",
                       dg_s(g, p->meta.ns), dg_s(g, p->meta.name), ref_index);
    /* already generated (the pod status names it, or a claim of that name exists) */
    for (uint32_t i = 0; i < p->nclaim_statuses; i++)
        if (p->claim_statuses[i].name == ref->name && p->claim_statuses[i].claim_name) {
            uint32_t id = dg_claim_find(g, p->meta.ns, p->claim_statuses[i].claim_name);
            if (id != DG_NONE) {
                *clid = id;
                return DE_OK;
            }
        }
    char seed[600], pname[300], uid[300];
    snprintf(seed, sizeof seed, "%s", p->meta.uid ? dg_s(g, p->meta.uid) : "");
    if (!p->meta.uid)
        snprintf(seed, sizeof seed, "%s/%s", dg_s(g, p->meta.ns), dg_s(g, p->meta.name));
    snprintf(pname, sizeof pname, "%s", dg_s(g, p->meta.name));
    snprintf(uid, sizeof uid, "%s", dg_s(g, p->meta.uid));
    tmpl_owner ow = {"v1", "Pod", pname, uid, p->meta.ns, seed};
    uint32_t ref_name = ref->name;
    DE_TRY(claim_from_template(g, &ow, ref_name, ref->template_name, clid, e));
    pod_add_claim_status(g, podid, ref_name, g->claims[*clid].c->meta.name);
    return DE_OK;
}

de_rc dg_claim_from_template_for_group(dg_graph *g, uint32_t podid, uint32_t ref_index, const char *api_version,
                                       const char *group, const char *group_uid, uint32_t *clid, de_err *e)
{
    if (podid >= g->npods || !g->pods[podid].p)
        return de_errf(e, DE_ENOTFOUND, "pod id %u not found", podid);
    dg_pod *p = g->pods[podid].p;
    if (ref_index >= p->nclaims || !p->claims[ref_index].template_name)
        return de_errf(e, DE_EINVAL, "pod \"%s/%s\": resourceClaims[%u] does not name a template",
                       dg_s(g, p->meta.ns), dg_s(g, p->meta.name), ref_index);
    uint32_t ref = p->claims[ref_index].name, tmpl = p->claims[ref_index].template_name;
    char seed[600];
    snprintf(seed, sizeof seed, "%s", group_uid && *group_uid ? group_uid : "");
    if (!seed[0])
        snprintf(seed, sizeof seed, "podgroups/%s/%s", dg_s(g, p->meta.ns), group);
    tmpl_owner ow = {api_version, "PodGroup", group, group_uid ? group_uid : "", p->meta.ns, seed};
    DE_TRY(claim_from_template(g, &ow, ref, tmpl, clid, e));
    /* the controller records the group's claim in the member pod's status too */
    pod_add_claim_status(g, podid, ref, g->claims[*clid].c->meta.name);
    return DE_OK;
}
