/*
 * lb_cel.c - CEL in the draengine.core Lua module, for specs and policy
 * tooling.
 *
 *   core.cel_eval(expr [, device [, opts]])   -> value, kind
 *       Without a device: plain CEL; returns the value as Lua data and its
 *       CEL kind ("int", "uint", "list", ...).  With a device table (the
 *       vector form: driver, attributes, capacity, allowMultipleAllocations):
 *       the expression is a selector and the result a boolean.  Errors are
 *       raised with the engine's message.
 *   core.cel_eval_json(expr [, device [, opts]]) -> typed JSON text of the
 *       value (the conformance vectors' encoding), for exact type checks.
 *   core.cel_compile(expr [, opts]) -> {ok, error, line, col, cost, type}
 *   core.cel_eval_attr(expr, device [, opts]) -> {kind, value}: a derived
 *       attribute (KEP-6080) as the engine stores it.
 *   core.cel_regex(pattern, subject [, {engine = "auto"|"pcre2"|"nfa",
 *       start = byte offset, first = bool}]) -> start, end (0-based byte
 *       offsets, end exclusive) of the match matches()/find() would see, or
 *       nil; "pcre2" and "nfa" force one engine (regex.c and re_nfa.h).
 *   core.cel_regex_knob(force) -> fallbacks: test knob; with force = true
 *       every match of this thread (cel_eval too) takes the fallback path as
 *       if PCRE2 had hit its limits.  Returns how many matches the
 *       linear-time fallback has answered so far.
 *
 * opts: {bindings = {name = value}, driver = "...", new_expressions = bool,
 *        consumable_capacity = bool, list_attributes = bool, cost = true,
 *        value = true (with a device: return the value, any type)}
 * (with cost = true, cel_eval also returns the runtime cost).
 * Lua to CEL: booleans, integers (int), floats (double), strings, sequences
 * (list), other tables (map with string keys), core.null.  CEL to Lua: uint
 * and int become integers (a uint above 2^63 wraps, check the kind), bytes
 * and strings strings, types their name, quantities and semvers their text,
 * null core.null.
 */
#include "../engine/base/intern.h"
#include "../engine/cel/cel.h"
#include "../engine/cel/cel_int.h"
#include "lb.h"
#include "lb_json.h"

#include <string.h>

typedef struct run {
    de_interner *in;
    de_arena *a;
    cel_env *env;
} run;

static void run_free(run *r)
{
    cel_env_free(r->env);
    de_arena_free(r->a);
    de_intern_free(r->in);
}

static bool opt_bool(lua_State *L, int opts, const char *k, bool dflt)
{
    if (opts == 0)
        return dflt;
    lua_getfield(L, opts, k);
    bool v = lua_isnil(L, -1) ? dflt : lua_toboolean(L, -1);
    lua_pop(L, 1);
    return v;
}

/* Lua value at idx -> cel_value (NULL with a message on failure). */
static const cel_value *to_cel(lua_State *L, int idx, de_arena *a, int depth, const char **why)
{
    if (depth > 64) {
        *why = "value nests too deeply";
        return NULL;
    }
    idx = lua_absindex(L, idx);
    switch (lua_type(L, idx)) {
    case LUA_TBOOLEAN: return cel_value_new_bool(a, lua_toboolean(L, idx));
    case LUA_TNUMBER:
        if (lua_isinteger(L, idx))
            return cel_value_new_int(a, lua_tointeger(L, idx));
        return cel_value_new_double(a, lua_tonumber(L, idx));
    case LUA_TSTRING: {
        size_t n;
        const char *s = lua_tolstring(L, idx, &n);
        return cel_value_new_string(a, s, n);
    }
    case LUA_TLIGHTUSERDATA:
        return cel_value_null(a);
    case LUA_TTABLE: {
        lua_Integer n = (lua_Integer)lua_rawlen(L, idx);
        size_t cnt = 0;
        lua_pushnil(L);
        while (lua_next(L, idx)) {
            cnt++;
            lua_pop(L, 1);
        }
        if (n > 0 && (size_t)n == cnt) {
            const cel_value **items = de_arena_alloc(a, (size_t)n * sizeof *items);
            if (!items)
                return NULL;
            for (lua_Integer i = 1; i <= n; i++) {
                lua_rawgeti(L, idx, i);
                items[i - 1] = to_cel(L, -1, a, depth + 1, why);
                lua_pop(L, 1);
                if (!items[i - 1])
                    return NULL;
            }
            return cel_value_new_list(a, items, (size_t)n);
        }
        const cel_value **keys = de_arena_alloc(a, (cnt ? cnt : 1) * sizeof *keys);
        const cel_value **vals = de_arena_alloc(a, (cnt ? cnt : 1) * sizeof *vals);
        if (!keys || !vals)
            return NULL;
        size_t k = 0;
        lua_pushnil(L);
        while (lua_next(L, idx)) {
            keys[k] = to_cel(L, -2, a, depth + 1, why);
            vals[k] = to_cel(L, -1, a, depth + 1, why);
            lua_pop(L, 1);
            if (!keys[k] || !vals[k]) {
                lua_pop(L, 1);
                return NULL;
            }
            k++;
        }
        return cel_value_new_map(a, keys, vals, k);
    }
    default:
        *why = "unsupported Lua value";
        return NULL;
    }
}

/* core.null is the light userdata NULL (lb_json.c) */
static void push_null(lua_State *L) { lua_pushlightuserdata(L, NULL); }

static const char *kind_name(cel_kind k)
{
    static const char *const names[] = {"null", "bool", "int", "uint", "double", "string", "bytes",
                                        "list", "map", "type", "quantity", "semver"};
    return (unsigned)k < DE_ARRAY_LEN(names) ? names[k] : "?";
}

static void push_value(lua_State *L, const cel_value *v, int depth)
{
    char buf[128];
    size_t n;
    const char *s;
    luaL_checkstack(L, 4, "cel value too deep");
    if (depth > 100) {
        lua_pushnil(L);
        return;
    }
    switch (cel_value_kind(v)) {
    case CEL_NULL: push_null(L); break;
    case CEL_BOOL: lua_pushboolean(L, cel_value_bool(v)); break;
    case CEL_INT: lua_pushinteger(L, (lua_Integer)cel_value_int(v)); break;
    case CEL_UINT: lua_pushinteger(L, (lua_Integer)cel_value_uint(v)); break;
    case CEL_DOUBLE: lua_pushnumber(L, cel_value_double(v)); break;
    case CEL_STRING:
    case CEL_BYTES:
    case CEL_TYPE:
        s = cel_value_str(v, &n);
        lua_pushlstring(L, s, n);
        break;
    case CEL_QUANTITY:
    case CEL_SEMVER:
        n = cel_value_text(v, buf, sizeof buf);
        lua_pushlstring(L, buf, n);
        break;
    case CEL_LIST:
        lua_createtable(L, (int)cel_value_len(v), 0);
        for (size_t i = 0; i < cel_value_len(v); i++) {
            push_value(L, cel_value_list_at(v, i), depth + 1);
            lua_rawseti(L, -2, (lua_Integer)i + 1);
        }
        break;
    case CEL_MAP:
        lua_createtable(L, 0, (int)cel_value_len(v));
        for (size_t i = 0; i < cel_value_len(v); i++) {
            push_value(L, cel_value_map_key(v, i), depth + 1);
            push_value(L, cel_value_map_val(v, i), depth + 1);
            if (lua_isnil(L, -2))
                lua_pop(L, 2);
            else
                lua_rawset(L, -3);
        }
        break;
    }
}

/* Build env (and device) from the arguments; raises on bad input. */
static void setup(lua_State *L, run *r, int devidx, int opts, de_devview *dev, bool *has_dev)
{
    r->in = de_intern_new();
    r->a = de_arena_new((size_t)256 << 20);
    cel_env_opts o = {0};
    *has_dev = devidx && !lua_isnoneornil(L, devidx);
    o.plain = !*has_dev;
    o.new_expressions = opt_bool(L, opts, "new_expressions", false);
    o.consumable_capacity = opt_bool(L, opts, "consumable_capacity", true);
    o.list_attributes = opt_bool(L, opts, "list_attributes", false);
    o.any_result = opt_bool(L, opts, "value", false);
    r->env = cel_env_new(r->in, &o);
    de_err e;
    de_err_clear(&e);
    if (*has_dev) {
        luaL_checktype(L, devidx, LUA_TTABLE);
        const char *driver = NULL;
        if (opts) {
            lua_getfield(L, opts, "driver");
            driver = lua_tostring(L, -1); /* kept alive by the opts table */
            lua_pop(L, 1);
        }
        json_t *j = lb_to_json(L, devidx);
        de_rc rc = cel_device_from_json(j, driver, r->in, r->a, dev, &e);
        json_decref(j);
        if (rc != DE_OK) {
            run_free(r);
            lb_raise(L, &e);
        }
    }
    if (opts) {
        lua_getfield(L, opts, "bindings");
        if (lua_istable(L, -1)) {
            int b = lua_gettop(L);
            lua_pushnil(L);
            while (lua_next(L, b)) {
                const char *why = "out of memory";
                const char *name = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : NULL;
                const cel_value *v = name ? to_cel(L, -1, r->a, 0, &why) : NULL;
                if (!name || !v || cel_env_declare(r->env, name, v, &e) != DE_OK) {
                    if (e.rc == DE_OK)
                        de_errf(&e, DE_EINVAL, "bindings: %s", name ? why : "names must be strings");
                    run_free(r);
                    lb_raise(L, &e);
                }
                lua_pop(L, 1);
            }
        }
        lua_pop(L, 1);
    }
}

static int eval_common(lua_State *L, bool json)
{
    size_t len;
    const char *expr = luaL_checklstring(L, 1, &len);
    int opts = lua_istable(L, 3) ? 3 : 0;
    run r;
    de_devview dev;
    bool has_dev;
    setup(L, &r, 2, opts, &dev, &has_dev);
    de_err e;
    de_err_clear(&e);
    cel_prog *p;
    if (cel_compile(r.env, expr, len, &p, &e) != DE_OK) {
        run_free(&r);
        return lb_raise(L, &e);
    }
    uint64_t cost = 0;
    int nret;
    if (has_dev && !json && !opt_bool(L, opts, "value", false)) {
        bool b;
        if (cel_eval_selector(r.env, p, &dev, r.a, &b, &cost, &e) != DE_OK) {
            run_free(&r);
            return lb_raise(L, &e);
        }
        lua_pushboolean(L, b);
        lua_pushstring(L, "bool");
        nret = 2;
    } else {
        const cel_value *v;
        if (cel_eval(r.env, p, has_dev ? &dev : NULL, r.a, &v, &cost, &e) != DE_OK) {
            run_free(&r);
            return lb_raise(L, &e);
        }
        if (json) {
            de_buf b;
            de_buf_init(&b, 64u << 20);
            cel_value_typed_json(v, &b);
            lua_pushlstring(L, de_buf_str(&b), b.len);
            de_buf_free(&b);
            nret = 1;
        } else {
            push_value(L, v, 0);
            lua_pushstring(L, kind_name(cel_value_kind(v)));
            nret = 2;
        }
    }
    if (opt_bool(L, opts, "cost", false)) {
        lua_pushinteger(L, (lua_Integer)cost);
        nret++;
    }
    run_free(&r);
    return nret;
}

static int l_cel_regex(lua_State *L)
{
    size_t pn, sn;
    const char *pat = luaL_checklstring(L, 1, &pn);
    const char *subj = luaL_checklstring(L, 2, &sn);
    int opts = lua_istable(L, 3) ? 3 : 0;
    int engine = CEL_RE_AUTO;
    lua_Integer start = 0;
    if (opts) {
        lua_getfield(L, opts, "engine");
        const char *e = lua_tostring(L, -1);
        if (e && !strcmp(e, "pcre2"))
            engine = CEL_RE_PCRE2;
        else if (e && !strcmp(e, "nfa"))
            engine = CEL_RE_NFA;
        else if (e && strcmp(e, "auto"))
            return luaL_error(L, "cel_regex: unknown engine %s", e);
        lua_getfield(L, opts, "start");
        start = luaL_optinteger(L, -1, 0);
        lua_pop(L, 2);
    }
    if (start < 0)
        return luaL_error(L, "cel_regex: negative start");
    char why[256];
    const char *w = NULL;
    const cel_re *re = cel_re_get(pat, pn, &w, why, sizeof why);
    if (!re)
        return luaL_error(L, "%s", w ? w : "invalid regex");
    size_t ms = 0, me = 0;
    int r = cel_re_search_with(re, engine, subj, sn, (size_t)start, opt_bool(L, opts, "first", false),
                               &ms, &me);
    cel_re_cache_clear(); /* this call owns no environment that would drop it */
    if (r == -1)
        return luaL_error(L, "regex match exceeded its limits");
    if (r == -2)
        return luaL_error(L, "pattern not supported by the fallback matcher");
    if (r == 0) {
        lua_pushnil(L);
        return 1;
    }
    lua_pushinteger(L, (lua_Integer)ms);
    lua_pushinteger(L, (lua_Integer)me);
    return 2;
}

static int l_cel_regex_knob(lua_State *L)
{
    lua_pushinteger(L, (lua_Integer)cel_re_test_knob(lua_toboolean(L, 1)));
    return 1;
}

static int l_cel_eval(lua_State *L) { return eval_common(L, false); }
static int l_cel_eval_json(lua_State *L) { return eval_common(L, true); }

/* cel_eval_attr(expr, device [, opts]) -> {kind = "int"|"ints"|..., value = ...}:
 * a derived attribute (KEP-6080) as the allocator would store it. */
static int l_cel_eval_attr(lua_State *L)
{
    size_t len;
    const char *expr = luaL_checklstring(L, 1, &len);
    luaL_checktype(L, 2, LUA_TTABLE);
    int opts = lua_istable(L, 3) ? 3 : 0;
    run r;
    de_devview dev;
    bool has_dev;
    setup(L, &r, 2, opts, &dev, &has_dev);
    de_err e;
    de_err_clear(&e);
    cel_prog *p;
    de_attrval v;
    if (cel_compile_derived(r.env, expr, len, &p, &e) != DE_OK ||
        cel_eval_attr(r.env, p, &dev, r.a, &v, &e) != DE_OK) {
        run_free(&r);
        return lb_raise(L, &e);
    }
    static const char *const kinds[] = {"none", "int", "bool", "string", "version",
                                        "ints", "bools", "strings", "versions"};
    lua_newtable(L);
    lb_set_str(L, "kind", kinds[v.kind < 9 ? v.kind : 0]);
    if (de_vkind_is_list(v.kind)) {
        lua_createtable(L, (int)v.n, 0);
        for (uint32_t i = 0; i < v.n; i++) {
            switch (v.kind) {
            case DE_V_INTS: lua_pushinteger(L, v.u.ints[i]); break;
            case DE_V_BOOLS: lua_pushboolean(L, v.u.bools[i]); break;
            default: lua_pushstring(L, de_intern_str(r.in, v.u.strs[i])); break;
            }
            lua_rawseti(L, -2, (lua_Integer)i + 1);
        }
    } else {
        switch (v.kind) {
        case DE_V_INT: lua_pushinteger(L, v.u.i); break;
        case DE_V_BOOL: lua_pushboolean(L, v.u.b); break;
        default: lua_pushstring(L, de_intern_str(r.in, v.u.s)); break;
        }
    }
    lua_setfield(L, -2, "value");
    run_free(&r);
    return 1;
}

static int l_cel_compile(lua_State *L)
{
    size_t len;
    const char *expr = luaL_checklstring(L, 1, &len);
    int opts = lua_istable(L, 2) ? 2 : 0;
    run r;
    de_devview dev;
    bool has_dev = false;
    setup(L, &r, 0, opts, &dev, &has_dev);
    /* cel_compile(expr, {selector = true}) compiles in the device env */
    if (opt_bool(L, opts, "selector", false)) {
        cel_env_free(r.env);
        cel_env_opts o = {0};
        o.new_expressions = opt_bool(L, opts, "new_expressions", false);
        o.consumable_capacity = opt_bool(L, opts, "consumable_capacity", true);
        o.list_attributes = opt_bool(L, opts, "list_attributes", false);
        r.env = cel_env_new(r.in, &o);
    }
    de_err e;
    de_err_clear(&e);
    cel_prog *p;
    lua_newtable(L);
    if (cel_compile(r.env, expr, len, &p, &e) != DE_OK) {
        lb_set_bool(L, "ok", false);
        lb_set_str(L, "error", e.msg);
        lb_set_int(L, "line", e.line);
        lb_set_int(L, "col", e.col);
        if (e.line > 0) {
            char caret[2048];
            cel_err_caret(expr, e.line, e.col, caret, sizeof caret);
            lb_set_str(L, "caret", caret);
        }
    } else {
        char ty[256];
        lb_set_bool(L, "ok", true);
        lb_set_int(L, "cost", (lua_Integer)cel_prog_estimated_cost(p));
        cel_prog_type(p, ty, sizeof ty);
        lb_set_str(L, "type", ty);
    }
    run_free(&r);
    return 1;
}

void lb_open_cel(lua_State *L)
{
    static const luaL_Reg fns[] = {
        {"cel_eval", l_cel_eval},
        {"cel_eval_json", l_cel_eval_json},
        {"cel_compile", l_cel_compile},
        {"cel_eval_attr", l_cel_eval_attr},
        {"cel_regex", l_cel_regex},
        {"cel_regex_knob", l_cel_regex_knob},
        {NULL, NULL},
    };
    luaL_setfuncs(L, fns, 0);
}
