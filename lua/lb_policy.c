/*
 * lb_policy.c - the policy host in draengine.core, for busted specs and
 * tools:
 *
 *   core.policy_sha256(s)             hex SHA-256 (the revision function)
 *   core.policy_load(dir [, opts])    a PolicySet (opts: instructions,
 *                                     deadline_ms, load_deadline_ms, memory, max_string,
 *                                     failure = "open"|"closed")
 *     set:revision()  set:count()  set:info(i)  set:stats()  set:logs()
 *     set:derive(device_table)        -> attrs, or nil, message, reason, file, line
 *     set:groups(device_table)        -> {scope=, groups={}} | nil
 *     set:score(node_table, {device_table...}) -> score, feasible
 *     set:admit(claim_table)          -> admitted, reason
 *     set:hold(device_table)          keep a device view from a hook (for
 *                                     the stale-view spec: see policy_vm)
 *     set:close()
 *   core.policy_vm([opts])            a bare sandboxed VM:
 *     vm:run(code)  -> {ok=, value=, reason=, message=, file=, line=}
 *                      (runs like a hook call: same env, budgets, views)
 *     vm:run_device(code, device_table) code is a function body that gets
 *                      the device view as `...`
 *     vm:memory()  vm:close()
 *   core.policy_test(dir)             -> {files=, passed=, failed=, pending=,
 *                                         results = {{file=, name=, status=, where=, message=}}}
 *   core.policy_lint(dir)             -> {ok=, problems = {{file=, line=, severity=, message=}}}
 *   core.policy_host(graph, dir [, opts]) a host on a core.graph() (opts also:
 *                                     watch, debounce_ms, rescan_ms, slice_ms,
 *                                     strict, run_specs)
 *     host:revision()  host:count()  host:logs()  host:stats()
 *     host:cycle()    -> {swapped=, failed=, preparing=, devices_updated=,
 *                         prepare_ms=, swap_ms=, swap_changed=, error=}
 *     host:reload()   (same table: load, prepare and swap now)
 *     host:request_reload()
 *     host:groups(driver, pool, device) -> {scope=, groups={}} | nil
 *     host:admit(ns, name)  -> admitted, reason
 *     host:close()     (clears the derived attributes it published)
 *   core.policy_dir_hash(dir)         content hash used by the reload triggers
 *   core.policy_install_sighup()      SIGHUP makes every host reload (serve does this)
 *
 * Device tables: see engine/policy/devbuild.c.  Versions are written
 * {version = "1.2.3"} here (there is no dra.version in the host).
 */
#include "../engine/policy/lint.h"
#include "../engine/policy/pol_int.h"
#include "../engine/policy/testrun.h"
#include "lb.h"
#include "lb_policy.h"

#include <stdlib.h>
#include <string.h>

#define SET_MT "draengine.PolicySet"
#define VM_MT "draengine.PolicyVM"

typedef struct lset {
    pol_set *set;
    de_interner *in;
    de_arena *arena;
    pol_config cfg;
    logsink sink;
    uint32_t next_id;
} lset;

void lb_policy_collect_log(void *ctx, de_log_level lvl, const char *file, int line, const char *msg,
                        const char *const *kv)
{
    logsink *s = ctx;
    char buf[DE_ERR_MSG_MAX + 256];
    const char *policy = "";
    for (int i = 0; kv && kv[i] && kv[i + 1]; i += 2)
        if (!strcmp(kv[i], "policy"))
            policy = kv[i + 1];
    snprintf(buf, sizeof buf, "%s %s:%d [%s] %s", lvl == DE_LOG_ERROR ? "E" : lvl == DE_LOG_WARN ? "W" : "I",
             file, line, policy, msg);
    logline *l = de_xcalloc(1, sizeof *l);
    l->text = de_xstrdup(buf);
    *s->tail = l;
    s->tail = &l->next;
}

void lb_policy_read_opts(lua_State *L, int idx, pol_config *cfg)
{
    pol_config_default(cfg);
    if (!lua_istable(L, idx))
        return;
    lua_getfield(L, idx, "instructions");
    if (lua_isinteger(L, -1))
        cfg->limits.instructions = (uint64_t)lua_tointeger(L, -1);
    lua_getfield(L, idx, "deadline_ms");
    if (lua_isnumber(L, -1))
        cfg->limits.deadline_ns = (uint64_t)(lua_tonumber(L, -1) * 1e6);
    lua_getfield(L, idx, "load_deadline_ms");
    if (lua_isnumber(L, -1))
        cfg->limits.load_deadline_ns = (uint64_t)(lua_tonumber(L, -1) * 1e6);
    lua_getfield(L, idx, "memory");
    if (lua_isinteger(L, -1))
        cfg->limits.memory = (size_t)lua_tointeger(L, -1);
    lua_getfield(L, idx, "max_string");
    if (lua_isinteger(L, -1))
        cfg->limits.max_string = (size_t)lua_tointeger(L, -1);
    lua_getfield(L, idx, "failure");
    if (lua_type(L, -1) == LUA_TSTRING)
        cfg->failure = !strcmp(lua_tostring(L, -1), "open") ? POL_FAIL_OPEN : POL_FAIL_CLOSED;
    lua_getfield(L, idx, "score_memo");
    if (lua_isboolean(L, -1))
        cfg->no_score_memo = !lua_toboolean(L, -1);
    lua_pop(L, 7);
}

static lset *check_set(lua_State *L)
{
    lset *s = luaL_checkudata(L, 1, SET_MT);
    if (!s->set)
        luaL_error(L, "policy set is closed");
    return s;
}

static void raise(lua_State *L, const de_err *e)
{
    lb_raise(L, e);
}

static int l_sha256(lua_State *L)
{
    size_t n;
    const char *s = luaL_checklstring(L, 1, &n);
    char hex[POL_SHA256_HEX];
    pol_sha256_hex(s, n, hex);
    lua_pushstring(L, hex);
    return 1;
}

static int l_load(lua_State *L)
{
    const char *dir = luaL_checkstring(L, 1);
    lset *s = lua_newuserdatauv(L, sizeof *s, 0);
    memset(s, 0, sizeof *s);
    luaL_setmetatable(L, SET_MT);
    s->sink.tail = &s->sink.logs;
    lb_policy_read_opts(L, 2, &s->cfg);
    s->cfg.log = lb_policy_collect_log;
    s->cfg.log_ctx = &s->sink;
    s->in = de_intern_new();
    s->arena = de_arena_new(0);
    de_err e;
    de_err_clear(&e);
    if (pol_set_load(dir, s->in, &s->cfg, &s->set, &e) != DE_OK)
        raise(L, &e);
    return 1;
}

void lb_policy_free_logs(logsink *s)
{
    for (logline *l = s->logs, *n; l; l = n) {
        n = l->next;
        free(l->text);
        free(l);
    }
    s->logs = NULL;
    s->tail = &s->logs;
}

static int s_close(lua_State *L)
{
    lset *s = luaL_checkudata(L, 1, SET_MT);
    pol_set_free(s->set);
    s->set = NULL;
    if (s->in)
        de_intern_free(s->in);
    s->in = NULL;
    if (s->arena)
        de_arena_free(s->arena);
    s->arena = NULL;
    lb_policy_free_logs(&s->sink);
    return 0;
}

static int s_revision(lua_State *L)
{
    lua_pushstring(L, pol_set_revision(check_set(L)->set));
    return 1;
}

static int s_count(lua_State *L)
{
    lua_pushinteger(L, pol_set_count(check_set(L)->set));
    return 1;
}

static int s_info(lua_State *L)
{
    lset *s = check_set(L);
    lua_Integer i = luaL_checkinteger(L, 2);
    luaL_argcheck(L, i >= 1 && i <= pol_set_count(s->set), 2, "no such policy");
    pol_info info;
    pol_set_info(s->set, (uint32_t)i - 1, &info);
    lua_createtable(L, 0, 10);
    lb_set_str(L, "name", info.name);
    lb_set_str(L, "version", info.version);
    lb_set_str(L, "file", info.file);
    if (info.pack)
        lb_set_str(L, "pack", info.pack);
    lb_set_str(L, "revision", info.revision);
    lua_createtable(L, (int)info.ndomains, 0);
    for (uint32_t k = 0; k < info.ndomains; k++) {
        lua_pushstring(L, info.domains[k]);
        lua_rawseti(L, -2, (lua_Integer)k + 1);
    }
    lua_setfield(L, -2, "domains");
    lua_newtable(L);
    int n = 0;
    for (int h = 0; h < POL_NHOOKS; h++)
        if (info.hooks & (1u << h)) {
            lua_pushstring(L, pol_hook_names[h]);
            lua_rawseti(L, -2, ++n);
        }
    lua_setfield(L, -2, "hooks");
    lb_set_str(L, "failure", info.failure == POL_FAIL_OPEN ? "open" : "closed");
    lb_set_num(L, "weight", info.weight);
    lb_set_int(L, "memory", (lua_Integer)info.memory);
    return 1;
}

static int s_stats(lua_State *L)
{
    lset *s = check_set(L);
    pol_stats st;
    pol_set_stats(s->set, &st);
    lua_createtable(L, 0, 8);
    lua_newtable(L);
    for (int h = 0; h < POL_NHOOKS; h++) {
        lua_pushinteger(L, (lua_Integer)st.calls[h]);
        lua_setfield(L, -2, pol_hook_names[h]);
    }
    lua_setfield(L, -2, "calls");
    lua_newtable(L);
    for (int r = 1; r < POL_R_COUNT; r++) {
        lua_pushinteger(L, (lua_Integer)st.failures[r]);
        lua_setfield(L, -2, pol_reason_str((pol_reason)r));
    }
    lua_setfield(L, -2, "failures");
    lb_set_int(L, "instructions", (lua_Integer)st.instructions);
    lb_set_int(L, "score_memo_hits", (lua_Integer)st.score_memo_hits);
    lb_set_int(L, "derive_memo_hits", (lua_Integer)st.derive_memo_hits);
    return 1;
}

static int s_logs(lua_State *L)
{
    lset *s = check_set(L);
    lua_newtable(L);
    int n = 0;
    for (logline *l = s->sink.logs; l; l = l->next) {
        lua_pushstring(L, l->text);
        lua_rawseti(L, -2, ++n);
    }
    lb_policy_free_logs(&s->sink);
    return 1;
}

static void push_value(lua_State *L, de_interner *in, const de_attrval *v)
{
    switch (v->kind) {
    case DE_V_INT:
        lua_pushinteger(L, v->u.i);
        return;
    case DE_V_BOOL:
        lua_pushboolean(L, v->u.b);
        return;
    case DE_V_STRING:
        lua_pushstring(L, de_intern_str(in, v->u.s));
        return;
    case DE_V_VERSION:
        lua_createtable(L, 0, 1);
        lb_set_str(L, "version", de_intern_str(in, v->u.s));
        return;
    default:
        lua_createtable(L, (int)v->n, 0);
        for (uint32_t i = 0; i < v->n; i++) {
            de_attrval e = {.kind = (uint8_t)de_vkind_scalar(v->kind), .n = 1};
            if (v->kind == DE_V_INTS)
                e.u.i = v->u.ints[i];
            else if (v->kind == DE_V_BOOLS)
                e.u.b = v->u.bools[i];
            else
                e.u.s = v->u.strs[i];
            push_value(L, in, &e);
            lua_rawseti(L, -2, (lua_Integer)i + 1);
        }
    }
}

static int push_failure(lua_State *L, const pol_failure *f)
{
    lua_pushnil(L);
    lua_pushstring(L, f->err.msg);
    lua_pushstring(L, pol_reason_str(f->reason));
    lua_pushstring(L, f->err.file);
    lua_pushinteger(L, f->err.line);
    return 5;
}

/* The facts of the device given as argument 2. */
static void compute(lua_State *L, lset *s, pol_devfacts *f, pol_failure *fail)
{
    de_devview v;
    pol_build_device(L, 2, s->in, s->arena, ++s->next_id, &v);
    pol_set_compute(s->set, &v, NULL, f, fail);
}

static int s_derive(lua_State *L)
{
    lset *s = check_set(L);
    pol_devfacts f;
    pol_failure fail = {0};
    compute(L, s, &f, &fail);
    if (fail.reason != POL_R_NONE) {
        pol_devfacts_free(&f);
        return push_failure(L, &fail);
    }
    lua_createtable(L, 0, (int)f.nderived);
    for (uint32_t i = 0; i < f.nderived; i++) {
        lua_pushfstring(L, "%s/%s", de_intern_str(s->in, f.derived[i].domain),
                        de_intern_str(s->in, f.derived[i].name));
        push_value(L, s->in, &f.derived[i].v);
        lua_rawset(L, -3);
    }
    lua_pushboolean(L, f.blocked);
    pol_devfacts_free(&f);
    return 2;
}

static int s_groups(lua_State *L)
{
    lset *s = check_set(L);
    pol_devfacts f;
    pol_failure fail = {0};
    compute(L, s, &f, &fail);
    if (fail.reason != POL_R_NONE) {
        bool blocked = f.blocked;
        pol_devfacts_free(&f);
        int n = push_failure(L, &fail);
        lua_pushboolean(L, blocked);
        return n + 1;
    }
    if (!f.nscopes) {
        pol_devfacts_free(&f);
        lua_pushnil(L);
        return 1;
    }
    lua_createtable(L, 0, 2);
    lb_set_str(L, "scope", de_intern_str(s->in, f.scopes[0].key));
    lua_newtable(L);
    int n = 0;
    for (unsigned b = 0; b < POL_MAX_GROUP_BITS; b++)
        if (f.scopes[0].groups & (1ull << b)) {
            lua_pushstring(L, pol_set_group_name(s->set, b));
            lua_rawseti(L, -2, ++n);
        }
    lua_setfield(L, -2, "groups");
    lb_set_int(L, "mask", (lua_Integer)f.scopes[0].groups);
    pol_devfacts_free(&f);
    return 1;
}

static int s_score(lua_State *L)
{
    lset *s = check_set(L);
    luaL_checktype(L, 2, LUA_TTABLE);
    luaL_checktype(L, 3, LUA_TTABLE);
    pol_nodeinfo n;
    memset(&n, 0, sizeof n);
    lua_getfield(L, 2, "name");
    n.name = de_intern_cstr(s->in, luaL_optstring(L, -1, "node"));
    lua_getfield(L, 2, "devices");
    n.devices = (uint32_t)luaL_optinteger(L, -1, 0);
    lua_getfield(L, 2, "free_devices");
    n.free_devices = (uint32_t)luaL_optinteger(L, -1, 0);
    lua_pop(L, 3);
    size_t np = lua_rawlen(L, 3);
    de_devview *pl = de_arena_alloc(s->arena, (np ? np : 1) * sizeof *pl);
    for (size_t i = 0; i < np; i++) {
        lua_rawgeti(L, 3, (lua_Integer)i + 1);
        pol_build_device(L, -1, s->in, s->arena, ++s->next_id, &pl[i]);
        lua_pop(L, 1);
    }
    double score;
    bool feasible;
    pol_failure fail = {0};
    pol_set_score(s->set, &n, pl, (uint32_t)np, &score, &feasible, &fail);
    lua_pushnumber(L, score);
    lua_pushboolean(L, feasible);
    if (fail.reason != POL_R_NONE) {
        lua_pushstring(L, fail.err.msg);
        lua_pushstring(L, pol_reason_str(fail.reason));
        return 4;
    }
    return 2;
}

static uint32_t opt_intern(lua_State *L, lset *s, int t, const char *k, const char *dflt)
{
    lua_getfield(L, t, k);
    uint32_t id = de_intern_cstr(s->in, luaL_optstring(L, -1, dflt));
    lua_pop(L, 1);
    return id;
}

static int s_admit(lua_State *L)
{
    lset *s = check_set(L);
    luaL_checktype(L, 2, LUA_TTABLE);
    pol_claiminfo c;
    memset(&c, 0, sizeof c);
    c.ns = opt_intern(L, s, 2, "namespace", "default");
    c.name = opt_intern(L, s, 2, "name", "claim");
    c.uid = opt_intern(L, s, 2, "uid", "");
    uint32_t *lk = NULL, *lv = NULL;
    if (lua_getfield(L, 2, "labels") == LUA_TTABLE) {
        int t = lua_gettop(L);
        uint32_t n = 0;
        lua_pushnil(L);
        while (lua_next(L, t)) {
            lua_pop(L, 1);
            n++;
        }
        lk = de_arena_alloc(s->arena, (n + 1) * sizeof *lk);
        lv = de_arena_alloc(s->arena, (n + 1) * sizeof *lv);
        pol_ordered_pairs(L, t);
        int f = lua_gettop(L) - 2;
        for (;;) {
            lua_pushvalue(L, f);
            lua_call(L, 0, 2);
            if (lua_isnil(L, -2)) {
                lua_pop(L, 2);
                break;
            }
            lk[c.nlabels] = de_intern_cstr(s->in, luaL_checkstring(L, -2));
            lv[c.nlabels] = de_intern_cstr(s->in, luaL_checkstring(L, -1));
            c.nlabels++;
            lua_pop(L, 2);
        }
        lua_pop(L, 3);
    }
    lua_pop(L, 1);
    c.label_keys = lk;
    c.label_values = lv;
    if (lua_getfield(L, 2, "requests") == LUA_TTABLE) {
        int rt = lua_gettop(L);
        size_t nr = lua_rawlen(L, rt);
        pol_claimreq *reqs = de_arena_zalloc(s->arena, (nr ? nr : 1) * sizeof *reqs);
        for (size_t i = 0; i < nr; i++) {
            lua_rawgeti(L, rt, (lua_Integer)i + 1);
            int r = lua_gettop(L);
            reqs[i].name = opt_intern(L, s, r, "name", "req");
            reqs[i].class_name = opt_intern(L, s, r, "class", "");
            lua_getfield(L, r, "count");
            reqs[i].count = luaL_optinteger(L, -1, 1);
            lua_pop(L, 2);
        }
        c.requests = reqs;
        c.nrequests = (uint32_t)nr;
    }
    lua_pop(L, 1);
    bool ok;
    char reason[512];
    pol_failure fail = {0};
    pol_set_admit(s->set, &c, &ok, reason, sizeof reason, &fail);
    lua_pushboolean(L, ok);
    if (ok && fail.reason == POL_R_NONE)
        return 1;
    lua_pushstring(L, ok ? fail.err.msg : reason);
    return 2;
}

/* ---- bare VMs ------------------------------------------------------------- */

typedef struct lvm {
    pol_vm vm;
    bool open;
    pol_config cfg;
    de_interner *in;
    de_arena *arena;
    uint32_t next_id;
    char name[16];
} lvm;

static int l_vm(lua_State *L)
{
    lvm *v = lua_newuserdatauv(L, sizeof *v, 0);
    memset(v, 0, sizeof *v);
    luaL_setmetatable(L, VM_MT);
    lb_policy_read_opts(L, 1, &v->cfg);
    v->in = de_intern_new();
    v->arena = de_arena_new(0);
    snprintf(v->name, sizeof v->name, "sandbox");
    de_err e;
    de_err_clear(&e);
    if (pol_vm_open(&v->vm, &v->cfg, v->in, v->name, "0000000000000000", "sandbox", false, &e) != DE_OK)
        raise(L, &e);
    v->open = true;
    return 1;
}

static lvm *check_vm(lua_State *L)
{
    lvm *v = luaL_checkudata(L, 1, VM_MT);
    if (!v->open)
        luaL_error(L, "VM is closed");
    return v;
}

static int vm_close(lua_State *L)
{
    lvm *v = luaL_checkudata(L, 1, VM_MT);
    if (v->open)
        pol_vm_close(&v->vm);
    v->open = false;
    if (v->in)
        de_intern_free(v->in);
    v->in = NULL;
    if (v->arena)
        de_arena_free(v->arena);
    v->arena = NULL;
    return 0;
}

typedef struct runctx {
    const char *code;
    size_t len;
    const de_devview *dev;
} runctx;

static int run_tramp(lua_State *L)
{
    runctx *c = lua_touserdata(L, 1);
    if (pol_sandbox_load(L, c->code, c->len, "@sandbox") != LUA_OK)
        return lua_error(L);
    int nargs = 0;
    if (c->dev) {
        pol_push_device(L, c->dev, false, false);
        nargs = 1;
    }
    lua_call(L, nargs, 1);
    /* describe the result without running policy code */
    switch (lua_type(L, -1)) {
    case LUA_TNIL:
    case LUA_TBOOLEAN:
    case LUA_TNUMBER:
    case LUA_TSTRING:
        break;
    default:
        lua_pushstring(L, luaL_typename(L, -1));
        lua_replace(L, -2);
    }
    return 1;
}

/* The host receives the value in its own state: copy scalars only. */
static int do_run(lua_State *L, lvm *v, const de_devview *dev)
{
    size_t n;
    const char *code = luaL_checklstring(L, 2, &n);
    runctx c = {code, n, dev};
    pol_vm *vm = &v->vm;
    pol_vm_begin(vm, false, 1);
    lua_pushcfunction(vm->L, run_tramp);
    lua_pushlightuserdata(vm->L, &c);
    pol_reason r = pol_vm_pcall(vm, 1, 1);
    lua_createtable(L, 0, 6);
    lb_set_bool(L, "ok", r == POL_R_NONE);
    lb_set_int(L, "instructions", (lua_Integer)vm->instr);
    if (r == POL_R_NONE) {
        switch (lua_type(vm->L, -1)) {
        case LUA_TBOOLEAN:
            lua_pushboolean(L, lua_toboolean(vm->L, -1));
            break;
        case LUA_TNUMBER:
            if (lua_isinteger(vm->L, -1))
                lua_pushinteger(L, lua_tointeger(vm->L, -1));
            else
                lua_pushnumber(L, lua_tonumber(vm->L, -1));
            break;
        case LUA_TSTRING: {
            size_t sl;
            const char *s = lua_tolstring(vm->L, -1, &sl);
            lua_pushlstring(L, s, sl);
            break;
        }
        default:
            lua_pushnil(L);
        }
        lua_setfield(L, -2, "value");
    } else {
        lb_set_str(L, "reason", pol_reason_str(r));
        lb_set_str(L, "message", vm->errmsg);
        lb_set_str(L, "file", vm->errfile);
        lb_set_int(L, "line", vm->errline);
    }
    pol_vm_end(vm);
    lua_settop(vm->L, 0);
    return 1;
}

static int vm_run(lua_State *L)
{
    return do_run(L, check_vm(L), NULL);
}

static int vm_run_device(lua_State *L)
{
    lvm *v = check_vm(L);
    de_devview dev;
    pol_build_device(L, 3, v->in, v->arena, ++v->next_id, &dev);
    return do_run(L, v, &dev);
}

static int vm_memory(lua_State *L)
{
    lvm *v = check_vm(L);
    lua_pushinteger(L, (lua_Integer)v->vm.mem_used);
    return 1;
}

/* ---- tests and lint ---------------------------------------------------------- */

static void test_cb(void *ctx, const pol_test_result *r)
{
    lua_State *L = ctx;
    lua_createtable(L, 0, 5);
    lb_set_str(L, "file", r->file);
    lb_set_str(L, "name", r->name);
    lb_set_str(L, "status", r->status == POL_TEST_OK ? "ok" : r->status == POL_TEST_PENDING ? "pending" : "fail");
    if (r->where)
        lb_set_str(L, "where", r->where);
    if (r->message)
        lb_set_str(L, "message", r->message);
    lua_rawseti(L, -2, (lua_Integer)lua_rawlen(L, -2) + 1);
}

static int l_test(lua_State *L)
{
    const char *dir = luaL_checkstring(L, 1);
    pol_config cfg;
    lb_policy_read_opts(L, 2, &cfg);
    lua_newtable(L); /* results */
    pol_test_summary sum;
    de_err e;
    de_err_clear(&e);
    if (pol_test_run(dir, &cfg, test_cb, L, &sum, &e) != DE_OK)
        raise(L, &e);
    lua_createtable(L, 0, 5);
    lua_insert(L, -2);
    lua_setfield(L, -2, "results");
    lb_set_int(L, "files", sum.files);
    lb_set_int(L, "passed", sum.passed);
    lb_set_int(L, "failed", sum.failed);
    lb_set_int(L, "pending", sum.pending);
    return 1;
}

static void lint_cb(void *ctx, const pol_lint_problem *p)
{
    lua_State *L = ctx;
    lua_createtable(L, 0, 4);
    lb_set_str(L, "file", p->file);
    lb_set_int(L, "line", p->line);
    lb_set_str(L, "severity", p->error ? "error" : "warning");
    lb_set_str(L, "message", p->message);
    lua_rawseti(L, -2, (lua_Integer)lua_rawlen(L, -2) + 1);
}

static int l_lint(lua_State *L)
{
    const char *dir = luaL_checkstring(L, 1);
    pol_config cfg;
    lb_policy_read_opts(L, 2, &cfg);
    lua_newtable(L);
    pol_lint_summary sum;
    pol_lint_dir(dir, &cfg, lint_cb, L, &sum);
    lua_createtable(L, 0, 4);
    lua_insert(L, -2);
    lua_setfield(L, -2, "problems");
    lb_set_bool(L, "ok", sum.errors == 0);
    lb_set_int(L, "files", sum.files);
    return 1;
}

void lb_open_policy(lua_State *L)
{
    lb_policy_open_host(L);

    static const luaL_Reg set_methods[] = {
        {"revision", s_revision}, {"count", s_count}, {"info", s_info},   {"stats", s_stats},
        {"logs", s_logs},         {"derive", s_derive}, {"groups", s_groups}, {"score", s_score},
        {"admit", s_admit},       {"close", s_close},  {NULL, NULL},
    };
    luaL_newmetatable(L, SET_MT);
    lua_newtable(L);
    luaL_setfuncs(L, set_methods, 0);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, s_close);
    lua_setfield(L, -2, "__gc");
    lua_pop(L, 1);

    static const luaL_Reg vm_methods[] = {
        {"run", vm_run}, {"run_device", vm_run_device}, {"memory", vm_memory}, {"close", vm_close}, {NULL, NULL},
    };
    luaL_newmetatable(L, VM_MT);
    lua_newtable(L);
    luaL_setfuncs(L, vm_methods, 0);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, vm_close);
    lua_setfield(L, -2, "__gc");
    lua_pop(L, 1);

    static const luaL_Reg fns[] = {
        {"policy_sha256", l_sha256}, {"policy_load", l_load}, {"policy_vm", l_vm},
        {"policy_test", l_test},     {"policy_lint", l_lint}, {NULL, NULL},
    };
    luaL_setfuncs(L, fns, 0);
}
