/*
 * sandbox.c - the environment a policy runs in, built by hand from data.
 *
 * Libraries are opened one at a time with luaL_requiref (never
 * luaL_openlibs: a reachable `package` library is what CVE-2022-0543 used
 * in Debian's Redis), then copied name by name from the allow lists below
 * into fresh tables, which are frozen: every library a policy sees is an
 * empty proxy whose __index is the copy, whose __newindex raises and whose
 * __metatable hides the metatable.  The original tables (string.dump and
 * all) stay only in the registry, which no policy can reach (no debug
 * library), and the real global table is emptied.
 *
 * Each chunk (a policy file, an SDK module, a load()ed string) runs with its
 * own _ENV: an empty table whose metatable reads from the frozen globals
 * and raises on assignment; the globals in turn raise on a missing name,
 * so a typo is an "undeclared global" error instead of a silent nil.
 *
 * Copies are bounded where their work is the caller's to choose: the
 * table functions are replaced (sb_table.c), string, utf8, math and some
 * base functions wrapped (bounded.c); see pol_work in pol_int.h.
 *
 * The string metatable is shared by every string of a VM; its __index is
 * pointed at the frozen string proxy and its __metatable set, so
 * getmetatable("") gives a string, never the table.
 *
 * Determinism: `pairs` iterates in a defined order (numbers, then strings
 * byte-wise, then booleans; other keys last in table order), because Lua
 * randomises string hashing per state and policy output must not depend on
 * it.  math.random is xoshiro256**, reseeded at every hook call from the
 * policy revision and the call's input.
 */
#include "pol_int.h"

#include <lualib.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct allow {
    const char *name;
    const char *why;
} allow;

/* Base library entries a policy may use. */
static const allow base_allow[] = {
    {"assert", "argument checks; raises like error; metered"},
    {"error", "raise an error; the host reports it with file:line"},
    {"getmetatable", "engine metatables answer their __metatable field, never the table"},
    {"ipairs", "array iteration in index order"},
    {"next", "emptiness checks (next(t) == nil); its order is unspecified, iterate with pairs; reads the clock (it scans empty slots)"},
    {"pcall", "cannot swallow budget errors: after a trip the hook raises on every line"},
    {"rawequal", "comparison without metamethods; metered (long strings)"},
    {"rawget", "reads only; engine tables are empty read-only proxies"},
    {"rawlen", "length without metamethods"},
    {"select", "varargs; metered (one unit per 8 values)"},
    {"tonumber", "conversion; metered (clock read on long strings)"},
    {"tostring", "replaced below: never prints addresses"},
    {"type", "type names"},
    {"xpcall", "replaced below: the handler is skipped once the call is over budget"},
    {"_VERSION", "the Lua version string"},
};
/* Left out of the base library on purpose:
 *   dofile, loadfile  read files from disk
 *   load              replaced below: text chunks only, always with an _ENV
 *   require           replaced below: only the draengine SDK modules
 *   setmetatable      replaced below: refuses __gc (finalizers would run
 *                     outside any budget, during garbage collection)
 *   pairs             replaced below: deterministic order
 *   print, warn       use dra.log (the engine log, with policy and line)
 *   collectgarbage    could stop the collector or force full collections
 *   rawset            could write into the engine's read-only proxies
 *   _G                globals are read-only and per policy; use locals
 */

static const allow string_allow[] = {
    {"byte", "bounded.c: metered (one unit per 8 results)"},
    {"char", "bounded.c: metered"},
    {"find", "bounded.c: subject size and pattern complexity bounded, work charged"},
    {"format", "bounded.c: no %p, %s without addresses; widths are capped by Lua"},
    {"gmatch", "bounded.c: as find; its iterator is metered too"},
    {"gsub", "bounded.c: as find"},
    {"len", "O(1)"},
    {"lower", "bounded.c: metered (output charged, clock read on big strings)"},
    {"match", "bounded.c: as find"},
    {"rep", "bounded.c: result size bounded (C code is not interruptible)"},
    {"reverse", "bounded.c: metered"},
    {"sub", "bounded.c: metered"},
    {"upper", "bounded.c: metered"},
};
/* Left out of string: dump (bytecode can crash the VM), pack, packsize,
 * unpack (binary layouts; no policy needs them). */

/* The table functions are replaced by sb_table.c's: their loops run in C
 * for a length the caller controls (a range, or __len). */
static const allow table_allow[] = {
    {"concat", "sb_table.c: one unit per element, result within the per-string limit"},
    {"insert", "sb_table.c: one unit per element shifted"},
    {"move", "sb_table.c: one unit per element moved"},
    {"pack", "sb_table.c: one unit per value"},
    {"remove", "sb_table.c: one unit per element shifted"},
    {"sort", "sb_table.c: stable merge sort, one unit per comparison"},
    {"unpack", "sb_table.c: one unit per value"},
};

static const allow math_allow[] = {
    {"abs", "pure"},   {"ceil", "pure"},  {"cos", "pure"},        {"exp", "pure"},
    {"floor", "pure"}, {"fmod", "pure"},  {"huge", "constant"},    {"log", "pure"},
    {"max", "pure"},   {"maxinteger", "constant"}, {"min", "pure"}, {"mininteger", "constant"},
    {"modf", "pure"},  {"pi", "constant"}, {"sin", "pure"},        {"sqrt", "pure"},
    {"tan", "pure"},   {"tointeger", "pure"}, {"type", "pure"},    {"ult", "pure"},
    {"atan", "pure"},  {"asin", "pure"},  {"acos", "pure"},
};
/* math.random and math.randomseed are replaced (deterministic). */

static const allow utf8_allow[] = {
    {"char", "pure"},   {"charpattern", "constant"}, {"codepoint", "pure"},
    {"codes", "iterator"}, {"len", "pure"},          {"offset", "pure"},
};

static const allow coroutine_allow[] = {
    {"close", "ends a suspended coroutine"},
    {"create", "new threads inherit the budget hook; their work is counted"},
    {"isyieldable", "pure"},
    {"resume", "resumed code runs under the same budget"},
    {"running", "pure"},
    {"status", "pure"},
    {"wrap", "as create"},
    {"yield", "only inside a coroutine; hooks are never yieldable"},
};

/* Registry keys (addresses are unique). */
static char K_GLOBALS, K_ENVMT, K_LOADED; /* registry keys: their addresses */

/* ---- read-only proxies ------------------------------------------------------ */

static int ro_newindex(lua_State *L)
{
    const char *what = lua_tostring(L, lua_upvalueindex(1));
    const char *k = lua_type(L, 2) == LUA_TSTRING ? lua_tostring(L, 2) : luaL_typename(L, 2);
    return pol_raise(L, "attempt to modify read-only table '%s' (field '%s')", what ? what : "?", k);
}

/* Ordered iteration: collect keys, sort, iterate. */
typedef struct okey {
    int rank; /* 0 number, 1 string, 2 boolean, 3 other */
    lua_Number n;
    lua_Integer i;
    bool isint;
    const char *s;
    size_t len;
    int b;
    int pos; /* original position (stable order for "other") */
} okey;

static int okey_cmp(const void *pa, const void *pb)
{
    const okey *a = pa, *b = pb;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    switch (a->rank) {
    case 0:
        if (a->isint && b->isint)
            return a->i < b->i ? -1 : a->i > b->i;
        {
            lua_Number x = a->isint ? (lua_Number)a->i : a->n, y = b->isint ? (lua_Number)b->i : b->n;
            if (x != y)
                return x < y ? -1 : 1;
        }
        return a->pos < b->pos ? -1 : a->pos > b->pos;
    case 1: {
        size_t m = a->len < b->len ? a->len : b->len;
        int c = memcmp(a->s, b->s, m);
        if (c)
            return c;
        return a->len < b->len ? -1 : a->len > b->len;
    }
    case 2:
        return a->b - b->b;
    default:
        return a->pos < b->pos ? -1 : a->pos > b->pos;
    }
}

/* upvalues: 1 table, 2 sorted key array, 3 position (integer) */
static int ordered_next(lua_State *L)
{
    lua_Integer i = lua_tointeger(L, lua_upvalueindex(3)) + 1;
    if (lua_rawgeti(L, lua_upvalueindex(2), i) == LUA_TNIL)
        return 1;
    lua_pushinteger(L, i);
    lua_replace(L, lua_upvalueindex(3));
    lua_pushvalue(L, -1);
    lua_rawget(L, lua_upvalueindex(1));
    return 2;
}

/* Push an iterator triple for the keys of the table at idx, in order.
 * charge: the state is a policy VM in a call (the Lua module and the host
 * use this on their own states too), charge the keys to its budget. */
static int ordered_pairs(lua_State *L, int idx, bool charge)
{
    idx = lua_absindex(L, idx);
    luaL_checktype(L, idx, LUA_TTABLE);
    lua_newtable(L); /* key list, keeps strings alive */
    int keys = lua_gettop(L);
    int n = 0;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        lua_pop(L, 1);
        lua_pushvalue(L, -1);
        lua_rawseti(L, keys, ++n);
    }
    /* collecting and sorting the keys runs in C: charged per key */
    if (charge)
        pol_work(L, (uint64_t)n, n >= 256);
    okey *k = lua_newuserdatauv(L, sizeof(okey) * (size_t)(n ? n : 1), 0);
    for (int j = 0; j < n; j++) {
        lua_rawgeti(L, keys, j + 1);
        okey *o = &k[j];
        memset(o, 0, sizeof *o);
        o->pos = j;
        switch (lua_type(L, -1)) {
        case LUA_TNUMBER:
            o->rank = 0;
            o->isint = lua_isinteger(L, -1);
            if (o->isint)
                o->i = lua_tointeger(L, -1);
            else
                o->n = lua_tonumber(L, -1);
            break;
        case LUA_TSTRING:
            o->rank = 1;
            o->s = lua_tolstring(L, -1, &o->len); /* kept alive by `keys` */
            break;
        case LUA_TBOOLEAN:
            o->rank = 2;
            o->b = lua_toboolean(L, -1);
            break;
        default:
            o->rank = 3;
        }
        lua_pop(L, 1);
    }
    qsort(k, (size_t)n, sizeof *k, okey_cmp);
    lua_createtable(L, n, 0);
    for (int j = 0; j < n; j++) {
        lua_rawgeti(L, keys, k[j].pos + 1);
        lua_rawseti(L, -2, j + 1);
    }
    /* stack: keys, ud, sorted */
    lua_pushvalue(L, idx);
    lua_pushvalue(L, -2);
    lua_pushinteger(L, 0);
    lua_pushcclosure(L, ordered_next, 3);
    lua_replace(L, keys);
    lua_pop(L, 2);
    lua_pushnil(L);
    lua_pushnil(L);
    return 3;
}

int pol_ordered_pairs(lua_State *L, int idx)
{
    return ordered_pairs(L, idx, false);
}

static int ro_pairs(lua_State *L)
{
    return ordered_pairs(L, lua_upvalueindex(1), true);
}

static int ro_len(lua_State *L)
{
    lua_pushinteger(L, (lua_Integer)lua_rawlen(L, lua_upvalueindex(1)));
    return 1;
}

void pol_sandbox_freeze(lua_State *L, int idx, const char *name)
{
    idx = lua_absindex(L, idx);
    lua_newtable(L); /* proxy */
    lua_createtable(L, 0, 5);
    lua_pushvalue(L, idx);
    lua_setfield(L, -2, "__index");
    lua_pushstring(L, name);
    lua_pushcclosure(L, ro_newindex, 1);
    lua_setfield(L, -2, "__newindex");
    lua_pushvalue(L, idx);
    lua_pushcclosure(L, ro_pairs, 1);
    lua_setfield(L, -2, "__pairs");
    lua_pushvalue(L, idx);
    lua_pushcclosure(L, ro_len, 1);
    lua_setfield(L, -2, "__len");
    lua_pushliteral(L, "read-only");
    lua_setfield(L, -2, "__metatable");
    lua_setmetatable(L, -2);
}

/* ---- replaced base functions ------------------------------------------------ */

static int sb_pairs(lua_State *L)
{
    luaL_checkany(L, 1);
    if (luaL_getmetafield(L, 1, "__pairs") != LUA_TNIL) {
        lua_pushvalue(L, 1);
        lua_call(L, 1, 3);
        return 3;
    }
    return ordered_pairs(L, 1, true);
}

/* An error raised by the budget hook reaches the message handler while Lua
 * still has hooks disabled (it is unwinding out of the hook), so a looping
 * handler would never be stopped.  The guard runs the policy's handler only
 * for ordinary errors; after a trip it passes the error object through. */
static int xp_guard(lua_State *L)
{
    if (pol_vm_of(L)->tripped != POL_R_NONE)
        return 1;
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, 1);
    return 1;
}

static int sb_xpcall(lua_State *L)
{
    int n = lua_gettop(L);
    luaL_checktype(L, 2, LUA_TFUNCTION);
    lua_pushvalue(L, 2);
    lua_pushcclosure(L, xp_guard, 1);
    lua_replace(L, 2); /* stack: f, guard, args... */
    lua_pushvalue(L, 1);
    lua_rotate(L, 3, 1); /* f, guard, f, args... */
    lua_remove(L, 1);    /* guard, f, args... */
    int st = lua_pcall(L, n - 2, LUA_MULTRET, 1);
    lua_pushboolean(L, st == LUA_OK);
    lua_replace(L, 1); /* status, results... */
    return lua_gettop(L);
}

static int sb_setmetatable(lua_State *L)
{
    int t = lua_type(L, 2);
    luaL_checktype(L, 1, LUA_TTABLE);
    luaL_argexpected(L, t == LUA_TNIL || t == LUA_TTABLE, 2, "nil or table");
    if (luaL_getmetafield(L, 1, "__metatable") != LUA_TNIL)
        return pol_raise(L, "cannot change a protected metatable");
    if (t == LUA_TTABLE) {
        lua_pushliteral(L, "__gc");
        if (lua_rawget(L, 2) != LUA_TNIL)
            return pol_raise(L, "__gc metamethods are not allowed in policies "
                                "(finalizers would run outside any budget)");
        lua_pop(L, 1);
    }
    lua_settop(L, 2);
    lua_setmetatable(L, 1);
    return 1;
}

/* load(chunk [, chunkname [, mode [, env]]]): text only, never binary;
 * without env the chunk gets a fresh read-only _ENV of its own. */
static int sb_load(lua_State *L)
{
    pol_vm *vm = pol_vm_of(L);
    if (lua_type(L, 1) != LUA_TSTRING)
        return pol_raise(L, "load: only text chunks (strings) are allowed in policies");
    size_t len;
    const char *s = lua_tolstring(L, 1, &len);
    const char *mode = luaL_optstring(L, 3, "t");
    if (strcmp(mode, "t") != 0)
        return pol_raise(L, "load: binary chunks are not allowed in policies (mode must be \"t\")");
    if (len > vm->cfg->limits.max_subject)
        return pol_raise(L, "load: chunk too large (%zu bytes, limit %zu)", len,
                         vm->cfg->limits.max_subject);
    const char *cname = luaL_optstring(L, 2, "load");
    lua_pushfstring(L, "=%s", cname[0] == '=' || cname[0] == '@' ? cname + 1 : cname);
    int st = luaL_loadbufferx(L, s, len, lua_tostring(L, -1), "t");
    if (st != LUA_OK) {
        luaL_pushfail(L);
        lua_insert(L, -2);
        return 2;
    }
    if (!lua_isnone(L, 4)) {
        lua_pushvalue(L, 4);
    } else {
        pol_sandbox_push_env(L);
    }
    if (!lua_setupvalue(L, -2, 1))
        lua_pop(L, 1);
    return 1;
}

/* require(name): only the embedded SDK modules; cached per VM. */
int pol_sandbox_require(lua_State *L)
{
    pol_vm *vm = pol_vm_of(L);
    const char *name = luaL_checkstring(L, 1);
    lua_rawgetp(L, LUA_REGISTRYINDEX, &K_LOADED);
    int loaded = lua_gettop(L);
    if (lua_getfield(L, loaded, name) != LUA_TNIL) {
        if (lua_type(L, -1) == LUA_TLIGHTUSERDATA)
            return pol_raise(L, "module '%s': circular require", name);
        return 1;
    }
    lua_pop(L, 1);
    const pol_sdk_module *m = pol_sdk_find(name);
    if (!m || (m->test_only && !vm->test)) {
        size_t n;
        const pol_sdk_module *all = pol_sdk_list(&n);
        luaL_Buffer b;
        luaL_buffinit(L, &b);
        for (size_t i = 0; i < n; i++) {
            if (all[i].test_only && !vm->test)
                continue;
            if (luaL_bufflen(&b))
                luaL_addstring(&b, ", ");
            luaL_addstring(&b, all[i].name);
        }
        luaL_pushresult(&b);
        return pol_raise(L, "module '%s' not found: policies can only require the draengine SDK (%s)",
                         name, lua_tostring(L, -1));
    }
    lua_pushlightuserdata(L, (void *)&K_LOADED);
    lua_setfield(L, loaded, name); /* loading sentinel */
    lua_pushfstring(L, "@%s", m->path);
    if (luaL_loadbufferx(L, m->text, m->len, lua_tostring(L, -1), "t") != LUA_OK)
        return lua_error(L);
    pol_sandbox_push_env(L);
    lua_setupvalue(L, -2, 1);
    lua_pushstring(L, name);
    lua_call(L, 1, 1);
    if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
        lua_pushboolean(L, 1);
    }
    lua_pushvalue(L, -1);
    lua_setfield(L, loaded, name);
    return 1;
}

/* tostring without addresses: "table: 0x55d0..." would make policy output
 * depend on the allocator.  Objects without __tostring print as their
 * __name or type name. */
int pol_tostring(lua_State *L)
{
    luaL_checkany(L, 1);
    if (luaL_getmetafield(L, 1, "__tostring") != LUA_TNIL) {
        lua_insert(L, 1);
        lua_settop(L, 2);
        lua_call(L, 1, 1);
        if (!lua_isstring(L, -1))
            return pol_raise(L, "'__tostring' must return a string");
        return 1;
    }
    switch (lua_type(L, 1)) {
    case LUA_TNUMBER:
    case LUA_TSTRING:
    case LUA_TBOOLEAN:
    case LUA_TNIL:
        luaL_tolstring(L, 1, NULL);
        return 1;
    default:
        if (luaL_getmetafield(L, 1, "__name") == LUA_TSTRING)
            return 1;
        lua_pushstring(L, luaL_typename(L, 1));
        return 1;
    }
}

/* ---- deterministic random ------------------------------------------------ */

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t xnext(uint64_t s[4])
{
    uint64_t r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return r;
}

static int sb_random(lua_State *L)
{
    pol_vm *vm = pol_vm_of(L);
    pol_trace_impure(vm); /* seeded per call: not a function of what was read */
    uint64_t rv = xnext(vm->rng);
    lua_Integer lo, up;
    switch (lua_gettop(L)) {
    case 0:
        lua_pushnumber(L, (lua_Number)(rv >> 11) * 0x1.0p-53);
        return 1;
    case 1:
        lo = 1;
        up = luaL_checkinteger(L, 1);
        if (up == 0) {
            lua_pushinteger(L, (lua_Integer)rv);
            return 1;
        }
        break;
    case 2:
        lo = luaL_checkinteger(L, 1);
        up = luaL_checkinteger(L, 2);
        break;
    default:
        return pol_raise(L, "wrong number of arguments");
    }
    luaL_argcheck(L, lo <= up, 1, "interval is empty");
    uint64_t span = (uint64_t)up - (uint64_t)lo;
    if (span == UINT64_MAX) {
        lua_pushinteger(L, (lua_Integer)rv);
        return 1;
    }
    /* rejection sampling: unbiased */
    uint64_t range = span + 1, limit = UINT64_MAX - (UINT64_MAX % range);
    while (rv >= limit)
        rv = xnext(vm->rng);
    lua_pushinteger(L, (lua_Integer)((uint64_t)lo + rv % range));
    return 1;
}

static int sb_randomseed(lua_State *L)
{
    pol_vm *vm = pol_vm_of(L);
    pol_trace_impure(vm);
    lua_Integer n = luaL_optinteger(L, 1, 0);
    uint64_t x = (uint64_t)n;
    for (int i = 0; i < 4; i++) {
        uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        vm->rng[i] = z ^ (z >> 31);
    }
    return 0;
}

/* ---- environments ---------------------------------------------------------- */

static int undeclared(lua_State *L)
{
    const char *k = lua_type(L, 2) == LUA_TSTRING ? lua_tostring(L, 2) : luaL_typename(L, 2);
    return pol_raise(L, "undeclared global '%s' (policies see only the sandbox globals; declare "
                        "your variables local)", k);
}

static int env_newindex(lua_State *L)
{
    const char *k = lua_type(L, 2) == LUA_TSTRING ? lua_tostring(L, 2) : luaL_typename(L, 2);
    return pol_raise(L, "assignment to global '%s' (the policy environment is read-only; use a "
                        "local variable)", k);
}

void pol_sandbox_push_globals(lua_State *L)
{
    lua_rawgetp(L, LUA_REGISTRYINDEX, &K_GLOBALS);
}

void pol_sandbox_push_env(lua_State *L)
{
    lua_newtable(L);
    lua_rawgetp(L, LUA_REGISTRYINDEX, &K_ENVMT);
    lua_setmetatable(L, -2);
}

int pol_sandbox_load(lua_State *L, const char *text, size_t len, const char *chunkname)
{
    int st = luaL_loadbufferx(L, text, len, chunkname, "t");
    if (st != LUA_OK)
        return st;
    pol_sandbox_push_env(L);
    lua_setupvalue(L, -2, 1);
    return LUA_OK;
}

/* Copy the allowed entries of the table at src into a new table, push it. */
static void copy_allowed(lua_State *L, int src, const allow *list, size_t n)
{
    src = lua_absindex(L, src);
    lua_createtable(L, 0, (int)n);
    for (size_t i = 0; i < n; i++) {
        lua_getfield(L, src, list[i].name);
        lua_setfield(L, -2, list[i].name);
    }
}

/* Open one standard library without registering it as a global; leaves its
 * table on the stack. */
static void open_lib(lua_State *L, const char *name, lua_CFunction f)
{
    luaL_requiref(L, name, f, 0);
}

/* Remove every key of the table at absolute index t. */
static void clear_table(lua_State *L, int t)
{
    lua_pushnil(L);
    while (lua_next(L, t)) {
        lua_pop(L, 1);
        lua_pushvalue(L, -1);
        lua_pushnil(L);
        lua_rawset(L, t);
    }
}

void pol_sandbox_install(lua_State *L, bool test)
{
    /* globals table G (kept in the registry; policies only see proxies) */
    lua_newtable(L);
    int G = lua_gettop(L);

    open_lib(L, LUA_GNAME, luaopen_base);
    int base = lua_gettop(L);
    for (size_t i = 0; i < DE_ARRAY_LEN(base_allow); i++) {
        lua_getfield(L, base, base_allow[i].name);
        lua_setfield(L, G, base_allow[i].name);
    }
    lua_pushcfunction(L, sb_pairs);
    lua_setfield(L, G, "pairs");
    lua_pushcfunction(L, sb_setmetatable);
    lua_setfield(L, G, "setmetatable");
    lua_pushcfunction(L, sb_xpcall);
    lua_setfield(L, G, "xpcall");
    lua_pushcfunction(L, sb_load);
    lua_setfield(L, G, "load");
    lua_pushcfunction(L, pol_sandbox_require);
    lua_setfield(L, G, "require");
    lua_pushcfunction(L, pol_tostring);
    lua_setfield(L, G, "tostring");
    pol_bounded_base(L, G);
    lua_pop(L, 1);

    /* string: copy, wrap, freeze, and point the string metatable at it */
    open_lib(L, LUA_STRLIBNAME, luaopen_string);
    copy_allowed(L, -1, string_allow, DE_ARRAY_LEN(string_allow));
    int s = lua_gettop(L);
    pol_bounded_string(L, s);
    pol_sandbox_freeze(L, s, "string");
    lua_pushvalue(L, -1);
    lua_setfield(L, G, "string");
    /* the shared string metatable */
    lua_pushliteral(L, "");
    if (lua_getmetatable(L, -1)) {
        lua_pushvalue(L, -3);
        lua_setfield(L, -2, "__index");
        lua_pushliteral(L, "string");
        lua_setfield(L, -2, "__metatable");
        lua_pop(L, 1);
    }
    lua_pop(L, 4); /* "", proxy, copy, original */

    open_lib(L, LUA_TABLIBNAME, luaopen_table);
    copy_allowed(L, -1, table_allow, DE_ARRAY_LEN(table_allow));
    pol_bounded_table(L, -1);
    pol_sandbox_freeze(L, -1, "table");
    lua_setfield(L, G, "table");
    lua_pop(L, 2);

    open_lib(L, LUA_MATHLIBNAME, luaopen_math);
    copy_allowed(L, -1, math_allow, DE_ARRAY_LEN(math_allow));
    lua_pushcfunction(L, sb_random);
    lua_setfield(L, -2, "random");
    lua_pushcfunction(L, sb_randomseed);
    lua_setfield(L, -2, "randomseed");
    pol_bounded_math(L, -1);
    pol_sandbox_freeze(L, -1, "math");
    lua_setfield(L, G, "math");
    lua_pop(L, 2);

    open_lib(L, LUA_UTF8LIBNAME, luaopen_utf8);
    copy_allowed(L, -1, utf8_allow, DE_ARRAY_LEN(utf8_allow));
    pol_bounded_utf8(L, -1);
    pol_sandbox_freeze(L, -1, "utf8");
    lua_setfield(L, G, "utf8");
    lua_pop(L, 2);

    open_lib(L, LUA_COLIBNAME, luaopen_coroutine);
    copy_allowed(L, -1, coroutine_allow, DE_ARRAY_LEN(coroutine_allow));
    pol_sandbox_freeze(L, -1, "coroutine");
    lua_setfield(L, G, "coroutine");
    lua_pop(L, 2);

    pol_view_open(L);
    pol_api_open(L, test); /* pushes dra */
    lua_setfield(L, G, "dra");

    /* missing globals raise */
    lua_createtable(L, 0, 2);
    lua_pushcfunction(L, undeclared);
    lua_setfield(L, -2, "__index");
    lua_pushliteral(L, "read-only");
    lua_setfield(L, -2, "__metatable");
    lua_setmetatable(L, G);

    /* the metatable shared by every _ENV of this VM */
    lua_createtable(L, 0, 4);
    lua_pushvalue(L, G);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, env_newindex);
    lua_setfield(L, -2, "__newindex");
    lua_pushvalue(L, G);
    lua_pushcclosure(L, ro_pairs, 1);
    lua_setfield(L, -2, "__pairs");
    lua_pushliteral(L, "read-only");
    lua_setfield(L, -2, "__metatable");
    lua_rawsetp(L, LUA_REGISTRYINDEX, &K_ENVMT);

    lua_pushvalue(L, G);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &K_GLOBALS);
    lua_newtable(L);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &K_LOADED);

    /* Empty the real global table and the loaded-modules table: nothing
     * reads them any more, and what is not there cannot leak. */
    lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_GLOBALS);
    clear_table(L, lua_gettop(L));
    lua_pop(L, 1);
    if (lua_getfield(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE) == LUA_TTABLE)
        clear_table(L, lua_gettop(L));
    lua_pop(L, 1);
    lua_pop(L, 1); /* G */
}
