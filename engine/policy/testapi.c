/*
 * testapi.c - dra.test, the fixtures `draengine policy test` gives spec
 * files (only in test VMs; hooks never see it).
 *
 *   dra.test.device{driver=, pool=, name=, node=, attributes={}, capacity={},
 *                   allow_multiple_allocations=}
 *       a device view like the ones hooks get (bare attribute names are
 *       filed under the driver's domain, "domain/name" keys as written)
 *   dra.test.policy(file)   load one policy of the pack/directory under test
 *                           in its own sandboxed VM; returns a handle
 *   dra.test.set([dir])     load a whole policy directory (ownership checks
 *                           included); same handle methods
 *   dra.test.snapshot(path) devices of a manifest snapshot (testgraph.c)
 *   h:derive(device)        the attributes the engine would publish, keyed
 *                           "domain/name"; raises the engine's report when
 *                           the hook fails or returns something refused
 *   h:groups(device)        {scope=, groups={...}} per groups policy, or nil
 *   h:score(node, devices)  what the engine adds for this node: the sum of
 *                           weight x score; node = {name=, labels=, devices=,
 *                           free_devices=}
 *   h:admit(claim)          claim = {namespace=, name=, labels=, requests=...}
 *   h.name, h.version, h.revision, h.domains
 *   dra.test.protect(fn)    run fn under a fresh per-test budget (the runner)
 *   dra.test.spec_chunk(env) the spec file being run, compiled with env
 *
 * Paths are relative to the directory under test and may not leave it.
 */
#include "pol_int.h"
#include "testrun.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HANDLE_MT "draengine.TestPolicy"

#define TEST_INSTRUCTIONS 50000000ull
#define TEST_DEADLINE_NS (5ull * 1000000000)

static pol_testctx *ctx_of(lua_State *L)
{
    pol_testctx *c = pol_vm_of(L)->test_ctx;
    if (!c)
        pol_raise(L, "dra.test is only available in `draengine policy test`");
    return c;
}

/* ---- budgets per test ----------------------------------------------------- */

static void fresh_budget(lua_State *L, pol_vm *vm)
{
    vm->tripped = POL_R_NONE;
    vm->tripwhy[0] = 0;
    vm->instr = 0;
    vm->unclocked = vm->alloc_unclocked = 0;
    vm->instr_limit = TEST_INSTRUCTIONS;
    vm->deadline_ns = TEST_DEADLINE_NS;
    vm->deadline = de_now_ns() + TEST_DEADLINE_NS;
    vm->call_gen++;
    lua_sethook(L, lua_gethook(L), LUA_MASKCOUNT, POL_HOOK_EVERY);
}

static int t_msgh(lua_State *L)
{
    pol_vm *vm = pol_vm_of(L);
    if (lua_type(L, 1) == LUA_TSTRING)
        snprintf(vm->errmsg, sizeof vm->errmsg, "%s", lua_tostring(L, 1));
    else
        snprintf(vm->errmsg, sizeof vm->errmsg, "(error object is a %s value)", luaL_typename(L, 1));
    lua_Debug ar;
    vm->errline = 0;
    for (int level = 1; lua_getstack(L, level, &ar); level++) {
        if (lua_getinfo(L, "Sl", &ar) && ar.currentline > 0 && ar.source[0] == '@') {
            snprintf(vm->errfile, sizeof vm->errfile, "%s", ar.source + 1);
            vm->errline = ar.currentline;
            break;
        }
    }
    return 1;
}

/* protect(fn) -> true | false, message, "file:line" */
static int t_protect(lua_State *L)
{
    pol_vm *vm = pol_vm_of(L);
    luaL_checktype(L, 1, LUA_TFUNCTION);
    lua_settop(L, 1);
    fresh_budget(L, vm);
    lua_pushcfunction(L, t_msgh);
    lua_insert(L, 1);
    vm->errmsg[0] = 0;
    int st = lua_pcall(L, 0, 0, 1);
    pol_reason r = vm->tripped;
    if (st == LUA_OK && r == POL_R_NONE) {
        fresh_budget(L, vm);
        lua_pushboolean(L, 1);
        return 1;
    }
    char msg[DE_ERR_MSG_MAX + 160];
    if (r != POL_R_NONE && r != POL_R_ERROR)
        snprintf(msg, sizeof msg, "%s (%s budget of a test: %llu instructions, %llu ms)", vm->errmsg,
                 pol_reason_str(r), (unsigned long long)TEST_INSTRUCTIONS,
                 (unsigned long long)(TEST_DEADLINE_NS / 1000000));
    else
        snprintf(msg, sizeof msg, "%s", vm->errmsg[0] ? vm->errmsg : "error");
    char where[DE_ERR_FIELD_MAX + 16] = "";
    if (vm->errline)
        snprintf(where, sizeof where, "%s:%d", vm->errfile, vm->errline);
    fresh_budget(L, vm);
    lua_settop(L, 0);
    if (r == POL_R_MEMORY)
        lua_gc(L, LUA_GCCOLLECT);
    lua_pushboolean(L, 0);
    lua_pushstring(L, msg);
    if (where[0])
        lua_pushstring(L, where);
    else
        lua_pushnil(L);
    return 3;
}

static int t_spec_chunk(lua_State *L)
{
    pol_testctx *c = ctx_of(L);
    luaL_checkany(L, 1);
    lua_pushfstring(L, "@%s", c->spec_path);
    if (luaL_loadbufferx(L, c->spec_text, c->spec_len, lua_tostring(L, -1), "t") != LUA_OK)
        return lua_error(L);
    lua_pushvalue(L, 1);
    lua_setupvalue(L, -2, 1);
    return 1;
}

/* ---- devices ---------------------------------------------------------------- */

static int t_device(lua_State *L)
{
    pol_vm *vm = pol_vm_of(L);
    pol_testctx *c = ctx_of(L);
    luaL_checktype(L, 1, LUA_TTABLE);
    de_devview v;
    pol_build_device(L, 1, vm->in, vm->scratch, c->next_device++, &v);
    pol_push_device(L, &v, true, true);
    return 1;
}

static uint32_t intern_lua(lua_State *L, pol_vm *vm, int idx)
{
    size_t n;
    const char *s = lua_tolstring(L, idx, &n);
    return de_intern(vm->in, s, n);
}

static uint32_t count_keys(lua_State *L, int idx)
{
    uint32_t n = 0;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        lua_pop(L, 1);
        n++;
    }
    return n;
}

/* ---- policy handles ------------------------------------------------------------ */

typedef struct handle {
    pol_set *set;
} handle;

static int h_gc(lua_State *L)
{
    handle *h = luaL_checkudata(L, 1, HANDLE_MT);
    pol_set_free(h->set);
    h->set = NULL;
    return 0;
}

static pol_set *h_set(lua_State *L)
{
    handle *h = luaL_checkudata(L, 1, HANDLE_MT);
    if (!h->set)
        pol_raise(L, "policy handle is closed");
    return h->set;
}


static void raise_failure(lua_State *L, const pol_failure *f)
{
    lua_pushstring(L, f->err.msg);
    lua_error(L);
}

static int h_derive(lua_State *L)
{
    pol_set *s = h_set(L);
    const de_devview *v = pol_check_device(L, 2);
    pol_devfacts f;
    pol_failure fail = {0};
    pol_set_compute(s, v, NULL, &f, &fail);
    if (fail.reason != POL_R_NONE) {
        pol_devfacts_free(&f);
        raise_failure(L, &fail);
    }
    pol_vm *vm = pol_vm_of(L);
    lua_createtable(L, 0, (int)f.nderived);
    for (uint32_t i = 0; i < f.nderived; i++) {
        const de_attr *a = &f.derived[i];
        lua_pushfstring(L, "%s/%s", de_intern_str(vm->in, a->domain), de_intern_str(vm->in, a->name));
        pol_push_attrval(L, &a->v);
        lua_rawset(L, -3);
    }
    pol_devfacts_free(&f);
    return 1;
}

static int h_groups(lua_State *L)
{
    pol_set *s = h_set(L);
    const de_devview *v = pol_check_device(L, 2);
    pol_devfacts f;
    pol_failure fail = {0};
    pol_set_compute(s, v, NULL, &f, &fail);
    if (fail.reason != POL_R_NONE) {
        pol_devfacts_free(&f);
        raise_failure(L, &fail);
    }
    if (!f.nscopes) {
        pol_devfacts_free(&f);
        lua_pushnil(L);
        return 1;
    }
    pol_vm *vm = pol_vm_of(L);
    /* one policy: {scope=, groups=}; several: a list of those */
    lua_createtable(L, (int)f.nscopes, 0);
    for (uint32_t i = 0; i < f.nscopes; i++) {
        lua_createtable(L, 0, 2);
        const char *key = de_intern_str(vm->in, f.scopes[i].key);
        const char *colon = strchr(key, ':');
        lua_pushstring(L, colon ? colon + 1 : key);
        lua_setfield(L, -2, "scope");
        lua_newtable(L);
        int n = 0;
        for (unsigned b = 0; b < POL_MAX_GROUP_BITS; b++)
            if (f.scopes[i].groups & (1ull << b)) {
                lua_pushstring(L, pol_set_group_name(s, b));
                lua_rawseti(L, -2, ++n);
            }
        lua_setfield(L, -2, "groups");
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    if (f.nscopes == 1)
        lua_rawgeti(L, -1, 1);
    pol_devfacts_free(&f);
    return 1;
}

static void kv_arrays(lua_State *L, pol_vm *vm, int t, const char *field, uint32_t **keys, uint32_t **vals,
                      uint32_t *n)
{
    *keys = *vals = NULL;
    *n = 0;
    if (lua_getfield(L, t, field) != LUA_TTABLE) {
        lua_pop(L, 1);
        return;
    }
    int m = lua_gettop(L);
    uint32_t cnt = count_keys(L, m);
    pol_work(L, cnt, cnt >= 256); /* counted, sorted and interned in C */
    *keys = de_arena_alloc(vm->scratch, (cnt ? cnt : 1) * sizeof(uint32_t));
    *vals = de_arena_alloc(vm->scratch, (cnt ? cnt : 1) * sizeof(uint32_t));
    pol_ordered_pairs(L, m);
    int f = lua_gettop(L) - 2;
    for (;;) {
        lua_pushvalue(L, f);
        lua_call(L, 0, 2);
        if (lua_isnil(L, -2)) {
            lua_pop(L, 2);
            break;
        }
        if (lua_type(L, -2) != LUA_TSTRING || lua_type(L, -1) != LUA_TSTRING)
            pol_raise(L, "%s must map strings to strings", field);
        (*keys)[*n] = intern_lua(L, vm, -2);
        (*vals)[*n] = intern_lua(L, vm, -1);
        (*n)++;
        lua_pop(L, 2);
    }
    lua_pop(L, 4);
}

static uint32_t opt_interned(lua_State *L, pol_vm *vm, int t, const char *field, const char *dflt)
{
    uint32_t id;
    if (lua_getfield(L, t, field) == LUA_TSTRING)
        id = intern_lua(L, vm, -1);
    else
        id = de_intern_cstr(vm->in, dflt);
    lua_pop(L, 1);
    return id;
}

static int h_score(lua_State *L)
{
    pol_set *s = h_set(L);
    pol_vm *vm = pol_vm_of(L);
    luaL_checktype(L, 2, LUA_TTABLE);
    luaL_checktype(L, 3, LUA_TTABLE);
    pol_nodeinfo n;
    memset(&n, 0, sizeof n);
    n.name = opt_interned(L, vm, 2, "name", "node");
    kv_arrays(L, vm, 2, "labels", (uint32_t **)&n.label_keys, (uint32_t **)&n.label_values, &n.nlabels);
    lua_getfield(L, 2, "devices");
    n.devices = (uint32_t)luaL_optinteger(L, -1, 0);
    lua_getfield(L, 2, "free_devices");
    n.free_devices = (uint32_t)luaL_optinteger(L, -1, 0);
    lua_pop(L, 2);
    size_t np = lua_rawlen(L, 3);
    de_devview *pl = de_arena_alloc(vm->scratch, (np ? np : 1) * sizeof *pl);
    for (size_t i = 0; i < np; i++) {
        lua_rawgeti(L, 3, (lua_Integer)i + 1);
        pl[i] = *pol_check_device(L, -1);
        lua_pop(L, 1);
    }
    double score;
    bool feasible;
    pol_failure fail = {0};
    pol_set_score(s, &n, pl, (uint32_t)np, &score, &feasible, &fail);
    if (fail.reason != POL_R_NONE)
        raise_failure(L, &fail);
    lua_pushnumber(L, score);
    return 1;
}

static int h_admit(lua_State *L)
{
    pol_set *s = h_set(L);
    pol_vm *vm = pol_vm_of(L);
    luaL_checktype(L, 2, LUA_TTABLE);
    pol_claiminfo c;
    memset(&c, 0, sizeof c);
    c.ns = opt_interned(L, vm, 2, "namespace", "default");
    c.name = opt_interned(L, vm, 2, "name", "claim");
    c.uid = opt_interned(L, vm, 2, "uid", "");
    kv_arrays(L, vm, 2, "labels", (uint32_t **)&c.label_keys, (uint32_t **)&c.label_values, &c.nlabels);
    kv_arrays(L, vm, 2, "annotations", (uint32_t **)&c.annotation_keys, (uint32_t **)&c.annotation_values,
              &c.nannotations);
    if (lua_getfield(L, 2, "requests") == LUA_TTABLE) {
        int rt = lua_gettop(L);
        size_t nr = lua_rawlen(L, rt);
        pol_claimreq *reqs = de_arena_zalloc(vm->scratch, (nr ? nr : 1) * sizeof *reqs);
        for (size_t i = 0; i < nr; i++) {
            lua_rawgeti(L, rt, (lua_Integer)i + 1);
            int r = lua_gettop(L);
            luaL_checktype(L, r, LUA_TTABLE);
            reqs[i].name = opt_interned(L, vm, r, "name", "req");
            reqs[i].class_name = opt_interned(L, vm, r, "class", "");
            lua_getfield(L, r, "count");
            reqs[i].count = luaL_optinteger(L, -1, 1);
            lua_getfield(L, r, "all");
            reqs[i].all = lua_toboolean(L, -1);
            lua_pop(L, 2);
            if (lua_getfield(L, r, "selectors") == LUA_TTABLE) {
                size_t ns = lua_rawlen(L, -1);
                uint32_t *sel = de_arena_alloc(vm->scratch, (ns ? ns : 1) * sizeof *sel);
                for (size_t j = 0; j < ns; j++) {
                    lua_rawgeti(L, -1, (lua_Integer)j + 1);
                    sel[j] = intern_lua(L, vm, -1);
                    lua_pop(L, 1);
                }
                reqs[i].selectors = sel;
                reqs[i].nselectors = (uint32_t)ns;
            }
            lua_pop(L, 2);
        }
        c.requests = reqs;
        c.nrequests = (uint32_t)nr;
    }
    lua_pop(L, 1);
    bool ok;
    char reason[512];
    pol_failure fail = {0};
    pol_set_admit(s, &c, &ok, reason, sizeof reason, &fail);
    if (fail.reason != POL_R_NONE && ok)
        raise_failure(L, &fail);
    lua_pushboolean(L, ok);
    if (ok)
        return 1;
    lua_pushstring(L, reason);
    return 2;
}

static int h_index(lua_State *L)
{
    pol_set *s = h_set(L);
    const char *k = luaL_checkstring(L, 2);
    pol_info info;
    pol_set_info(s, 0, &info);
    bool single = pol_set_count(s) == 1;
    if (!strcmp(k, "revision")) {
        lua_pushstring(L, single ? info.revision : pol_set_revision(s));
        return 1;
    }
    if (!strcmp(k, "count")) {
        lua_pushinteger(L, pol_set_count(s));
        return 1;
    }
    if (single && !strcmp(k, "name")) {
        lua_pushstring(L, info.name);
        return 1;
    }
    if (single && !strcmp(k, "version")) {
        lua_pushstring(L, info.version);
        return 1;
    }
    if (single && !strcmp(k, "domains")) {
        lua_createtable(L, (int)info.ndomains, 0);
        for (uint32_t i = 0; i < info.ndomains; i++) {
            lua_pushstring(L, info.domains[i]);
            lua_rawseti(L, -2, (lua_Integer)i + 1);
        }
        return 1;
    }
    static const luaL_Reg methods[] = {
        {"derive", h_derive}, {"groups", h_groups}, {"score", h_score}, {"admit", h_admit}, {NULL, NULL}};
    for (const luaL_Reg *m = methods; m->name; m++)
        if (!strcmp(k, m->name)) {
            lua_pushcfunction(L, m->func);
            return 1;
        }
    return pol_raise(L, "policy handle has no field '%s'", k);
}

static void push_handle(lua_State *L, pol_set *s)
{
    handle *h = lua_newuserdatauv(L, sizeof *h, 0);
    h->set = s;
    luaL_setmetatable(L, HANDLE_MT);
}

/* Resolve a path relative to the directory under test. */
static const char *rel_path(lua_State *L, pol_testctx *c, int idx)
{
    const char *p = luaL_checkstring(L, idx);
    if (p[0] == '/' || strstr(p, ".."))
        pol_raise(L, "path \"%s\" must be relative to the directory under test and stay inside it", p);
    lua_pushfstring(L, "%s/%s", c->root, p);
    return lua_tostring(L, -1);
}

static int t_policy(lua_State *L)
{
    pol_testctx *c = ctx_of(L);
    const char *path = rel_path(L, c, 1);
    pol_policy *p = de_xcalloc(1, sizeof *p);
    de_err e;
    de_err_clear(&e);
    if (pol_policy_load(p, path, NULL, &c->cfg, c->in, false, &e) != DE_OK) {
        pol_policy_free(p);
        free(p);
        lua_pushstring(L, e.msg);
        return lua_error(L);
    }
    pol_set *s = pol_set_single(p, c->in, &c->cfg);
    push_handle(L, s);
    return 1;
}

static int t_set(lua_State *L)
{
    pol_testctx *c = ctx_of(L);
    const char *path = lua_isnoneornil(L, 1) ? c->root : rel_path(L, c, 1);
    pol_set *s;
    de_err e;
    de_err_clear(&e);
    if (pol_set_load(path, c->in, &c->cfg, &s, &e) != DE_OK) {
        lua_pushstring(L, e.msg);
        return lua_error(L);
    }
    push_handle(L, s);
    return 1;
}

static int t_snapshot(lua_State *L)
{
    pol_testctx *c = ctx_of(L);
    const char *path = rel_path(L, c, 1);
    return pol_test_snapshot(L, c, path);
}

void pol_testapi_open(lua_State *L)
{
    static const luaL_Reg hmeta[] = {{"__index", h_index}, {"__gc", h_gc}, {NULL, NULL}};
    luaL_newmetatable(L, HANDLE_MT);
    luaL_setfuncs(L, hmeta, 0);
    lua_pushliteral(L, HANDLE_MT);
    lua_setfield(L, -2, "__metatable");
    lua_pop(L, 1);
    static const luaL_Reg fns[] = {
        {"protect", t_protect}, {"spec_chunk", t_spec_chunk}, {"device", t_device},
        {"policy", t_policy},   {"set", t_set},               {"snapshot", t_snapshot},
        {NULL, NULL},
    };
    luaL_newlib(L, fns);
    pol_sandbox_freeze(L, -1, "dra.test");
    lua_remove(L, -2);
}
