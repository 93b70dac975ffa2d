/*
 * lb_allocator.c - core.allocator(g): a long-lived allocator on a
 * draengine.Graph ("draengine.Allocator"), for specs of its incremental
 * caches: the graph changes between calls and the allocator, which listens
 * to it, must answer exactly as a fresh one would.
 *
 *   local a = core.allocator(g, {gates = "...", seed = N, max_steps = N,
 *                                policies = host, choice_cache = true})
 *     policies: a core.policy_host on the same graph whose hooks (re-read
 *               before every call, so they follow reloads) the allocator uses
 *     choice_cache = false: every pod evaluates every node (al_set_choice_cache),
 *               the reference the cached node choice is compared with
 *     selector_set_cap = N, cel_program_cap = N: lower cache caps (al_set_cache_caps)
 *   a:allocate(node, {{namespace=, name=}, ...})
 *       -> {status = "allocated"|"unsatisfiable"|"error", claims = {{namespace=,
 *           name=, allocation=, chosen=}}, reason=, detail=, error=, code=,
 *           steps=, score=}   (claims in the given order; nothing committed)
 *   a:schedule(namespace, pod)
 *       -> {status = "scheduled"|"unschedulable"|"error", node=, score=,
 *           reason=, error=, claims = {{namespace=, name=, allocation=,
 *           allocated_now=}}, policy_score=, nodes_feasible=}
 *           (commits into the graph, as al_schedule_pod)
 *   a:stats() -> {allocate_calls=, node_tables_built=, candidate_sets_built=, counter_checks=,
 *                 choice_pods=, choice_evals=, choice_reused=, choice_saved=, choice_tables=,
 *                 selector_sets=, cel_programs=, cache_flushes=, ...}
 *   a:node_devices(node) -> devices, free   (the counters score hooks see)
 *   a:set_policies(host | nil)
 *   a:extended_claim(namespace, pod [, node])
 *       -> {requests = {...}, mappings = {...}} of the KEP-5004 claim (the
 *          resources `node` leaves to DRA; all of them without a node), or nil
 *   a:close()    -- free it now (it stops listening to the graph)
 *
 * The allocator keeps the graph userdata alive (user value); when the graph
 * is closed first, the graph frees the allocator (lgcloser) and later calls
 * raise "allocator's graph is closed".
 */
#include "../engine/policy/polgraph.h"
#include "lb_alloc_int.h"
#include "lb_graph_int.h"
#include "lb_policy.h"

#include <stdlib.h>

#define ALLOC_CLASS "draengine.Allocator"

typedef struct lalloc {
    al_allocator *a;
    lgraph *gu;
    bool policies; /* user value 2 is a policy host */
} lalloc;

static void closer(void *ctx)
{
    lalloc *u = ctx;
    al_free(u->a);
    u->a = NULL;
}

static lalloc *check_alloc(lua_State *L)
{
    lalloc *u = luaL_checkudata(L, 1, ALLOC_CLASS);
    if (!u->a || !u->gu->g)
        luaL_error(L, "allocator's graph is closed");
    return u;
}

/* The policy host's current hooks (they change when it swaps revisions;
 * al_set_hooks keeps every cache when they did not). */
static void refresh_hooks(lua_State *L, lalloc *u)
{
    if (!u->policies)
        return;
    lua_getiuservalue(L, 1, 2);
    pol_host *h = lb_policy_host_arg(L, -1);
    lua_pop(L, 1);
    al_hooks hk;
    pol_host_al_hooks(h, &hk);
    al_set_hooks(u->a, &hk);
}

int lb_allocator_new(lua_State *L)
{
    lgraph *gu = luaL_checkudata(L, 1, GRAPH_CLASS);
    if (!gu->g)
        return luaL_error(L, "graph is closed");
    al_opts o;
    memset(&o, 0, sizeof o);
    de_gates_default(&o.gates);
    bool cache = true, policies = false;
    uint32_t selset_cap = 0, prog_cap = 0;
    if (lua_istable(L, 2)) {
        lua_getfield(L, 2, "choice_cache");
        if (lua_isboolean(L, -1))
            cache = lua_toboolean(L, -1);
        lua_getfield(L, 2, "policies");
        if (!lua_isnil(L, -1)) {
            lb_policy_host_arg(L, lua_gettop(L));
            policies = true;
        }
        lua_pop(L, 2);
        de_err e;
        de_err_clear(&e);
        lua_getfield(L, 2, "gates");
        if (lua_isstring(L, -1) && de_gates_parse_library(&o.gates, lua_tostring(L, -1), NULL, 0, &e) != DE_OK)
            return luaL_error(L, "gates: %s", e.msg);
        lua_getfield(L, 2, "seed");
        o.seed = (uint64_t)luaL_optinteger(L, -1, 0);
        lua_getfield(L, 2, "max_steps");
        o.max_steps = (uint64_t)luaL_optinteger(L, -1, 0);
        lua_getfield(L, 2, "selector_set_cap");
        selset_cap = (uint32_t)luaL_optinteger(L, -1, 0);
        lua_getfield(L, 2, "cel_program_cap");
        prog_cap = (uint32_t)luaL_optinteger(L, -1, 0);
        lua_pop(L, 5);
    }
    de_err e;
    de_err_clear(&e);
    al_allocator *a = al_new(gu->g, &o, &e);
    if (!a)
        return raise_err(L, &e);
    al_set_choice_cache(a, cache);
    if (selset_cap || prog_cap)
        al_set_cache_caps(a, selset_cap, prog_cap);
    lalloc *u = lua_newuserdatauv(L, sizeof *u, 2);
    u->a = a;
    u->gu = gu;
    u->policies = policies;
    luaL_setmetatable(L, ALLOC_CLASS);
    lua_pushvalue(L, 1);
    lua_setiuservalue(L, -2, 1);
    if (policies) {
        lua_getfield(L, 2, "policies");
        lua_setiuservalue(L, -2, 2);
    }
    gu->closers = de_xrealloc(gu->closers, (gu->nclosers + 1) * sizeof *gu->closers);
    gu->closers[gu->nclosers++] = (lgcloser){closer, u};
    return 1;
}

static int l_gc(lua_State *L)
{
    lalloc *u = luaL_checkudata(L, 1, ALLOC_CLASS);
    if (!u->a)
        return 0;
    lgraph *gu = u->gu;
    for (uint32_t i = 0; i < gu->nclosers; i++)
        if (gu->closers[i].ctx == u) {
            memmove(gu->closers + i, gu->closers + i + 1, (gu->nclosers - i - 1) * sizeof *gu->closers);
            gu->nclosers--;
            break;
        }
    al_free(u->a);
    u->a = NULL;
    return 0;
}

static int l_allocate(lua_State *L)
{
    lalloc *u = check_alloc(L);
    dg_graph *g = u->gu->g;
    const char *node = luaL_checkstring(L, 2);
    luaL_checktype(L, 3, LUA_TTABLE);
    lua_Integer n = luaL_len(L, 3);
    uint32_t *ids = de_xmalloc((size_t)(n > 0 ? n : 1) * sizeof *ids);
    for (lua_Integer i = 1; i <= n; i++) {
        lua_geti(L, 3, i);
        lua_getfield(L, -1, "namespace");
        lua_getfield(L, -2, "name");
        const char *ns = luaL_optstring(L, -2, "default"), *name = luaL_optstring(L, -1, "");
        ids[i - 1] = dg_claim_find(g, id_of(g, ns), id_of(g, name));
        lua_pop(L, 3);
        if (ids[i - 1] == DG_NONE) {
            free(ids);
            return luaL_error(L, "claim %s/%s not found", ns, name);
        }
    }
    refresh_hooks(L, u);
    de_arena *ar = de_arena_new(0);
    de_err e;
    de_err_clear(&e);
    al_outcome o;
    de_rc rc = al_allocate(u->a, id_of(g, node), ids, (uint32_t)n, ar, &o, &e);
    lua_newtable(L);
    lb_set_alloc_outcome(L, g, ids, rc, &o, &e);
    de_arena_free(ar);
    free(ids);
    return 1;
}

static int l_schedule(lua_State *L)
{
    lalloc *u = check_alloc(L);
    dg_graph *g = u->gu->g;
    const char *ns = luaL_checkstring(L, 2), *name = luaL_checkstring(L, 3);
    uint32_t pid = dg_pod_find(g, id_of(g, ns), id_of(g, name));
    if (pid == DG_NONE)
        return luaL_error(L, "pod %s/%s not found", ns, name);
    refresh_hooks(L, u);
    de_arena *ar = de_arena_new(0);
    de_err e;
    de_err_clear(&e);
    al_pod_outcome po;
    de_rc rc = al_schedule_pod(u->a, pid, ar, &po, &e);
    lua_newtable(L);
    if (rc == DE_OK) {
        lb_set_str(L, "status", "scheduled");
        lb_set_str(L, "node", po.node_name ? S(g, po.node_name) : NULL);
        lb_set_int(L, "score", po.k8s_score);
        lb_set_num(L, "policy_score", po.policy_score);
        lb_set_int(L, "nodes_feasible", po.nodes_feasible);
        lb_set_pod_claims(L, g, &po, false);
    } else if (rc == DE_EUNSAT) {
        lb_set_str(L, "status", "unschedulable");
        lb_set_str(L, "reason", po.why);
        lb_set_str(L, "k8s_reason", po.k8s_why);
    } else {
        lb_set_str(L, "status", "error");
        lb_set_str(L, "error", e.msg);
    }
    de_arena_free(ar);
    return 1;
}

/* a:extended_claim(ns, pod [, node]) -> {requests = {...}, mappings = {...}}
 * or nil when the pod asks for no extended resource a DeviceClass serves
 * (with a node: only what that node leaves to DRA; nil when nothing) */
static int l_extended_claim(lua_State *L)
{
    lalloc *u = check_alloc(L);
    dg_graph *g = u->gu->g;
    const char *ns = luaL_checkstring(L, 2), *name = luaL_checkstring(L, 3);
    const char *node = luaL_optstring(L, 4, NULL);
    uint32_t pid = dg_pod_find(g, id_of(g, ns), id_of(g, name));
    const dg_pod *pod = pid == DG_NONE ? NULL : dg_pod_get(g, pid);
    if (!pod)
        return luaL_error(L, "pod %s/%s not found", ns, name);
    al_ext_res res[AL_EXT_MAX];
    uint32_t n = al_ext_resources(g, al_gates(u->a), pod, res, AL_EXT_MAX);
    uint64_t mask = n >= 64 ? ~0ull : (1ull << n) - 1;
    if (node) {
        uint32_t nid = dg_node_find(g, id_of(g, node));
        mask = al_ext_node_mask(nid == DG_NONE ? NULL : dg_node_get(g, nid), res, n);
    }
    if (!n || !mask) {
        lua_pushnil(L);
        return 1;
    }
    de_arena *ar = de_arena_new_sized(0, 4096);
    al_ext_spec spec;
    al_ext_build(g, pod, res, n, mask, ar, &spec);
    json_t *reqs = al_ext_requests_json(g, &spec), *maps = al_ext_mappings_json(g, &spec);
    de_arena_free(ar);
    lua_newtable(L);
    lb_push_json(L, reqs);
    lua_setfield(L, -2, "requests");
    lb_push_json(L, maps);
    lua_setfield(L, -2, "mappings");
    json_decref(reqs);
    json_decref(maps);
    return 1;
}

static int l_stats(lua_State *L)
{
    lalloc *u = check_alloc(L);
    al_stats s;
    al_get_stats(u->a, &s);
    lua_newtable(L);
    lb_set_int(L, "allocate_calls", (lua_Integer)s.allocate_calls);
    lb_set_int(L, "steps", (lua_Integer)s.steps);
    lb_set_int(L, "node_tables_built", (lua_Integer)s.node_tables_built);
    lb_set_int(L, "candidate_sets_built", (lua_Integer)s.candidate_sets_built);
    lb_set_int(L, "cel_evals", (lua_Integer)s.cel_evals);
    lb_set_int(L, "pruned", (lua_Integer)s.pruned);
    lb_set_int(L, "counter_checks", (lua_Integer)s.counter_checks);
    lb_set_int(L, "choice_pods", (lua_Integer)s.choice_pods);
    lb_set_int(L, "choice_evals", (lua_Integer)s.choice_evals);
    lb_set_int(L, "choice_reused", (lua_Integer)s.choice_reused);
    lb_set_int(L, "choice_saved", (lua_Integer)s.choice_saved);
    lb_set_int(L, "choice_tables", (lua_Integer)s.choice_tables);
    lb_set_int(L, "selector_sets", (lua_Integer)s.selector_sets);
    lb_set_int(L, "cel_programs", (lua_Integer)s.cel_programs);
    lb_set_int(L, "cache_flushes", (lua_Integer)s.cache_flushes);
    lb_set_int(L, "compile_cache_hits", (lua_Integer)s.compile_cache_hits);
    lb_set_int(L, "compile_cache_stores", (lua_Integer)s.compile_cache_stores);
    return 1;
}

/* a:prepare([budget_ms]) -> tables built (al_prepare) */
static int l_prepare(lua_State *L)
{
    lalloc *u = check_alloc(L);
    lua_Number ms = luaL_optnumber(L, 2, 0);
    luaL_argcheck(L, ms >= 0 && ms <= 3.6e6, 2, "budget_ms must be between 0 and 3600000");
    lua_pushinteger(L, (lua_Integer)al_prepare(u->a, (uint64_t)(ms * 1e6)));
    return 1;
}

static int l_node_devices(lua_State *L)
{
    lalloc *u = check_alloc(L);
    uint32_t total, nfree = al_node_free_devices(u->a, id_of(u->gu->g, luaL_checkstring(L, 2)), &total);
    lua_pushinteger(L, total);
    lua_pushinteger(L, nfree);
    return 2;
}

/* a:set_policies(host | nil) */
static int l_set_policies(lua_State *L)
{
    lalloc *u = check_alloc(L);
    if (lua_isnoneornil(L, 2)) {
        u->policies = false;
        al_set_hooks(u->a, NULL);
        lua_pushnil(L);
        lua_setiuservalue(L, 1, 2);
        return 0;
    }
    lb_policy_host_arg(L, 2);
    lua_pushvalue(L, 2);
    lua_setiuservalue(L, 1, 2);
    u->policies = true;
    refresh_hooks(L, u);
    return 0;
}

void lb_allocator_register(lua_State *L)
{
    static const luaL_Reg methods[] = {
        {"allocate", l_allocate},
        {"schedule", l_schedule},
        {"stats", l_stats},
        {"prepare", l_prepare},
        {"node_devices", l_node_devices},
        {"set_policies", l_set_policies},
        {"extended_claim", l_extended_claim},
        {"close", l_gc},
        {"__gc", l_gc},
        {"__close", l_gc},
        {"__index", NULL},
        {NULL, NULL},
    };
    if (luaL_newmetatable(L, ALLOC_CLASS)) {
        luaL_setfuncs(L, methods, 0);
        lua_pushvalue(L, -1);
        lua_setfield(L, -2, "__index");
    }
    lua_pop(L, 1);
}
