/*
 * lb_alloc.c - the allocator for specs and tools.
 *
 *   local r = core.allocate{files = {...} | file = "x.yaml", text = "...",
 *                           node = "node-1", gates = "A=true,...",
 *                           max_steps = N, seed = N, validate = "warn"}
 *     validate: "warn" (default, as the allocate command: objects an API
 *               server would refuse are allocated anyway and listed in
 *               r.warnings), "strict" (raise), "none" 
 *     r.status  "allocated" | "unsatisfiable" | "error"
 *     r.error   upstream's message (status "error"); r.code = de_rc name
 *     r.reason, r.detail   why it is unsatisfiable
 *     r.steps   search steps used
 *     r.claims  { {namespace=, name=, allocation = <AllocationResult table>,
 *                  chosen = {per request: firstAvailable index or -1}} ... }
 *     r.score   firstAvailable score on the node
 *
 *   local s = core.schedule{files = ..., text = ..., gates = ..., max_steps = N, seed = N}
 *     s.pods  { {namespace=, name=, status = "scheduled"|"unschedulable"|"error",
 *                node=, reason=, error=, claims = { {namespace=, name=,
 *                allocated_now=, allocation=} } } ... }   (pods with claims, input order)
 *     s.stats { allocate_calls=, steps=, node_tables_built=, ... }
 *
 *   local a = core.allocator(g, {...})   -- long-lived, on a core.graph (lb_allocator.c)
 *
 * Each call builds its own graph from the manifests, so specs stay
 * independent of one another.
 */
#include "lb_alloc_int.h"
#include "lb_json.h"

#include <stdlib.h>
#include <string.h>

typedef struct lin {
    dg_graph *g;
    dg_graph *checker;
    al_input in;
    al_opts opts;
    const char *node;
    char **warnings;
    uint32_t nwarn;
} lin;

static void on_warn(void *ctx, const de_err *e)
{
    lin *x = ctx;
    if (x->nwarn >= 1000)
        return;
    x->warnings = de_xrealloc(x->warnings, (x->nwarn + 1) * sizeof *x->warnings);
    x->warnings[x->nwarn++] = de_xstrdup(e->msg);
}

static void lin_free(lin *x)
{
    al_input_free(&x->in);
    dg_free(x->g);
    dg_free(x->checker);
    for (uint32_t i = 0; i < x->nwarn; i++)
        free(x->warnings[i]);
    free(x->warnings);
    x->g = x->checker = NULL;
    x->warnings = NULL;
    x->nwarn = 0;
}

/* result.warnings: objects an API server would refuse (validate = "warn") */
static void push_warnings(lua_State *L, const lin *x)
{
    lua_createtable(L, (int)x->nwarn, 0);
    for (uint32_t i = 0; i < x->nwarn; i++) {
        lua_pushstring(L, x->warnings[i]);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    lua_setfield(L, -2, "warnings");
}

static int fail_load(lua_State *L, lin *x, const de_err *e)
{
    lin_free(x);
    lua_pushstring(L, e->msg[0] ? e->msg : de_rc_str(e->rc));
    return lua_error(L);
}

/* Read the argument table: gates first (they shape validation), then input. */
static void read_input(lua_State *L, lin *x)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    memset(x, 0, sizeof *x);
    de_gates_default(&x->opts.gates);
    de_err e;
    de_err_clear(&e);
    lua_getfield(L, 1, "gates");
    if (lua_isstring(L, -1) && de_gates_parse_library(&x->opts.gates, lua_tostring(L, -1), NULL, 0, &e) != DE_OK)
        luaL_error(L, "gates: %s", e.msg);
    lua_pop(L, 1);
    lua_getfield(L, 1, "max_steps");
    x->opts.max_steps = (uint64_t)luaL_optinteger(L, -1, 0);
    lua_pop(L, 1);
    lua_getfield(L, 1, "seed");
    x->opts.seed = (uint64_t)luaL_optinteger(L, -1, 0);
    lua_pop(L, 1);
    lua_getfield(L, 1, "node");
    x->node = lua_isstring(L, -1) ? lua_tostring(L, -1) : NULL;
    lua_pop(L, 1); /* the string stays alive: the table holds it */
    lua_getfield(L, 1, "validate");
    const char *v = luaL_optstring(L, -1, "warn");
    if (strcmp(v, "warn") && strcmp(v, "strict") && strcmp(v, "none"))
        luaL_error(L, "validate: want warn, strict or none, got \"%s\"", v);
    bool strict = !strcmp(v, "strict"), warn = !strcmp(v, "warn");
    lua_pop(L, 1);
    dg_opts go = {0};
    go.gates = &x->opts.gates;
    go.skip_validation = !strict;
    x->g = dg_new(NULL, &go);
    al_input_init(&x->in);
    x->in.keep_duplicates = !strict;
    if (warn) {
        dg_opts co = {0};
        co.gates = &x->opts.gates;
        x->checker = dg_new(dg_intern(x->g), &co);
        x->in.checker = x->checker;
        x->in.warn = on_warn;
        x->in.warn_ctx = x;
    }
    lua_getfield(L, 1, "file");
    if (lua_isstring(L, -1) && al_input_load(x->g, &x->in, lua_tostring(L, -1), &e) != DE_OK)
        fail_load(L, x, &e);
    lua_pop(L, 1);
    lua_getfield(L, 1, "files");
    if (lua_istable(L, -1)) {
        lua_Integer n = luaL_len(L, -1);
        for (lua_Integer i = 1; i <= n; i++) {
            lua_geti(L, -1, i);
            const char *p = lua_tostring(L, -1);
            if (p && al_input_load(x->g, &x->in, p, &e) != DE_OK)
                fail_load(L, x, &e);
            lua_pop(L, 1);
        }
    }
    lua_pop(L, 1);
    lua_getfield(L, 1, "text");
    if (lua_isstring(L, -1)) {
        size_t len;
        const char *t = lua_tolstring(L, -1, &len);
        if (al_input_load_text(x->g, &x->in, "<text>", t, len, &e) != DE_OK)
            fail_load(L, x, &e);
    }
    lua_pop(L, 1);
}

static void push_claim(lua_State *L, dg_graph *g, uint32_t clid, const dg_allocation *al,
                       const int32_t *chosen, uint32_t nreq)
{
    de_interner *in = dg_intern(g);
    const dg_claim *cl = dg_claim_get(g, clid);
    lua_newtable(L);
    if (cl) {
        lb_set_str(L, "namespace", de_intern_str(in, cl->meta.ns));
        lb_set_str(L, "name", de_intern_str(in, cl->meta.name));
    }
    if (al) {
        json_t *j = dg_encode_allocation(g, al);
        lb_push_json(L, j);
        json_decref(j);
        lua_setfield(L, -2, "allocation");
    }
    if (chosen) {
        lua_createtable(L, (int)nreq, 0);
        for (uint32_t i = 0; i < nreq; i++) {
            lua_pushinteger(L, chosen[i]);
            lua_rawseti(L, -2, (lua_Integer)i + 1);
        }
        lua_setfield(L, -2, "chosen");
    }
}

void lb_set_alloc_outcome(lua_State *L, dg_graph *g, const uint32_t *ids, de_rc rc, const al_outcome *o,
                          const de_err *e)
{
    lb_set_int(L, "steps", (lua_Integer)o->steps);
    if (rc == DE_OK) {
        lb_set_str(L, "status", "allocated");
        lb_set_int(L, "score", o->k8s_score);
        lua_createtable(L, (int)o->nclaims, 0);
        for (uint32_t i = 0; i < o->nclaims; i++) {
            push_claim(L, g, ids[i], &o->claims[i].alloc, o->claims[i].chosen_sub, o->claims[i].nrequests);
            lua_rawseti(L, -2, (lua_Integer)i + 1);
        }
        lua_setfield(L, -2, "claims");
    } else if (rc == DE_EUNSAT) {
        lb_set_str(L, "status", "unsatisfiable");
        lb_set_str(L, "reason", o->why.summary);
        lb_set_str(L, "detail", o->why.detail);
    } else {
        lb_set_str(L, "status", "error");
        lb_set_str(L, "error", e->msg);
        lb_set_str(L, "code", de_rc_str(rc));
    }
}

void lb_set_pod_claims(lua_State *L, dg_graph *g, const al_pod_outcome *po, bool chosen)
{
    lua_newtable(L);
    for (uint32_t c = 0; c < po->nclaims; c++) {
        if (po->claims[c] == DG_NONE)
            continue;
        const dg_claim *cl = dg_claim_get(g, po->claims[c]);
        bool now = po->allocated_now[c];
        push_claim(L, g, po->claims[c], cl && cl->allocated ? &cl->allocation : NULL,
                   chosen && now ? po->allocs[c].chosen_sub : NULL, chosen && now ? po->allocs[c].nrequests : 0);
        lb_set_bool(L, "allocated_now", now);
        lua_rawseti(L, -2, (lua_Integer)c + 1);
    }
    lua_setfield(L, -2, "claims");
}

static int l_allocate(lua_State *L)
{
    lin x;
    read_input(L, &x);
    de_err e;
    de_err_clear(&e);
    if (!x.node) {
        lin_free(&x);
        return luaL_error(L, "allocate: node = NAME is required (use core.schedule for pods)");
    }
    al_allocator *a = al_new(x.g, &x.opts, &e);
    if (!a)
        return fail_load(L, &x, &e);
    uint32_t n = x.in.npending;
    uint32_t *ids = de_xmalloc((n ? n : 1) * sizeof *ids);
    for (uint32_t i = 0; i < n; i++)
        ids[i] = al_input_claim(x.g, &x.in, i);
    de_arena *ar = de_arena_new(0);
    al_outcome o;
    de_rc rc = al_allocate(a, de_intern_cstr(dg_intern(x.g), x.node), ids, n, ar, &o, &e);
    lua_newtable(L);
    push_warnings(L, &x);
    lb_set_alloc_outcome(L, x.g, ids, rc, &o, &e);
    de_arena_free(ar);
    free(ids);
    al_free(a);
    lin_free(&x);
    return 1;
}

static void push_stats(lua_State *L, const al_allocator *a)
{
    al_stats s;
    al_get_stats(a, &s);
    lua_newtable(L);
#define F(x)                              \
    lua_pushinteger(L, (lua_Integer)s.x); \
    lua_setfield(L, -2, #x)
    F(allocate_calls);
    F(steps);
    F(node_tables_built);
    F(candidate_sets_built);
    F(cel_evals);
    F(pruned);
#undef F
}

static int l_schedule(lua_State *L)
{
    lin x;
    read_input(L, &x);
    de_err e;
    de_err_clear(&e);
    al_allocator *a = al_new(x.g, &x.opts, &e);
    if (!a)
        return fail_load(L, &x, &e);
    al_set_podgroups(a, x.in.podgroups);
    de_interner *in = dg_intern(x.g);
    de_arena *ar = de_arena_new(0);
    lua_newtable(L);
    push_warnings(L, &x);
    lua_newtable(L);
    lua_Integer k = 0;
    for (uint32_t i = 0; i < x.in.npods; i++) {
        uint32_t pid = al_input_pod(x.g, &x.in, i);
        const dg_pod *pod = pid == DG_NONE ? NULL : dg_pod_get(x.g, pid);
        if (!pod || !al_pod_uses_dra(a, pid))
            continue;
        lua_newtable(L);
        lb_set_str(L, "namespace", de_intern_str(in, pod->meta.ns));
        lb_set_str(L, "name", de_intern_str(in, pod->meta.name));
        de_arena_reset(ar);
        al_pod_outcome po;
        de_err_clear(&e);
        de_rc rc = al_schedule_pod(a, pid, ar, &po, &e);
        if (rc == DE_OK) {
            lb_set_str(L, "status", "scheduled");
            lb_set_str(L, "node", po.node_name ? de_intern_str(in, po.node_name) : NULL);
            lb_set_int(L, "score", po.k8s_score);
            lb_set_pod_claims(L, x.g, &po, true);
        } else if (rc == DE_EUNSAT) {
            lb_set_str(L, "status", "unschedulable");
            lb_set_str(L, "reason", po.why);
            lb_set_str(L, "k8s_reason", po.k8s_why);
        } else {
            lb_set_str(L, "status", "error");
            lb_set_str(L, "error", e.msg);
        }
        lua_rawseti(L, -2, ++k);
    }
    lua_setfield(L, -2, "pods");
    push_stats(L, a);
    lua_setfield(L, -2, "stats");
    de_arena_free(ar);
    al_free(a);
    lin_free(&x);
    return 1;
}

void lb_open_alloc(lua_State *L)
{
    static const luaL_Reg fns[] = {
        {"allocate", l_allocate},
        {"schedule", l_schedule},
        {"allocator", lb_allocator_new},
        {NULL, NULL},
    };
    lb_allocator_register(L);
    luaL_setfuncs(L, fns, 0);
}
