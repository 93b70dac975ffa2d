/*
 * api.c - the `dra` table policies see, and the two value classes it hands
 * out: versions (semver, compared by precedence) and quantities
 * (Kubernetes resource.Quantity, exact).
 *
 *   dra.api               1
 *   dra.version(s)        version object; strict semver, error if invalid
 *   dra.quantity(s|n)     quantity object ("80Gi", "500m", 42)
 *   dra.log(...)          an info line in the engine log, with the policy's
 *   dra.warn(...)         name, revision and file:line (at most
 *                         POL_MAX_LOG_LINES per hook call)
 *   dra.test              only in `policy test` VMs (testapi.c)
 *
 * Version objects: v.major, v.minor, v.patch (integers), v.prerelease,
 * v.build (strings or nil), v:compare(o) (-1/0/1), ==, <, <= (also against
 * version strings), tostring(v).
 *
 * Quantity objects: q:value() (integer, rounded up like Quantity.Value()),
 * q:milli_value(), q:as_float(), q:is_integer(), q:to(unit) (number of
 * "Gi", "Mi", "G", "k", "m", ... exact integer when it divides), q:compare(o),
 * ==, <, <=, +, - (operands may be quantities, quantity strings or
 * integers), tostring(q) (canonical form).
 */
#include "../base/semver.h"
#include "pol_int.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define VERSION_MT "draengine.Version"
#define QUANTITY_MT "draengine.Quantity"

/* ---- versions ---------------------------------------------------------------- */

typedef struct pol_version {
    de_semver v;
    size_t len;
    char text[];
} pol_version;

void pol_push_version(lua_State *L, const char *text, size_t len)
{
    if (len > 256)
        pol_raise(L, "invalid version: longer than 256 bytes");
    pol_version *pv = lua_newuserdatauv(L, sizeof *pv + len + 1, 0);
    memcpy(pv->text, text, len);
    pv->text[len] = 0;
    pv->len = len;
    de_err e;
    de_err_clear(&e);
    if (de_semver_parse(pv->text, len, &pv->v, &e) != DE_OK)
        pol_raise(L, "invalid version \"%s\": %s", pv->text, e.msg);
    luaL_setmetatable(L, VERSION_MT);
}

bool pol_is_version(lua_State *L, int idx, const char **text, size_t *len)
{
    pol_version *pv = luaL_testudata(L, idx, VERSION_MT);
    if (!pv)
        return false;
    *text = pv->text;
    *len = pv->len;
    return true;
}

/* Version operand: a version object or a version string. */
static const de_semver *version_arg(lua_State *L, int idx)
{
    pol_version *pv = luaL_testudata(L, idx, VERSION_MT);
    if (pv)
        return &pv->v;
    if (lua_type(L, idx) == LUA_TSTRING) {
        size_t n;
        const char *s = lua_tolstring(L, idx, &n);
        pol_push_version(L, s, n);
        lua_replace(L, idx);
        return &((pol_version *)lua_touserdata(L, idx))->v;
    }
    pol_raise(L, "version expected, got %s", luaL_typename(L, idx));
    return NULL;
}

static int v_index(lua_State *L)
{
    pol_version *pv = luaL_checkudata(L, 1, VERSION_MT);
    const char *k = luaL_checkstring(L, 2);
    if (!strcmp(k, "major"))
        lua_pushinteger(L, (lua_Integer)pv->v.major);
    else if (!strcmp(k, "minor"))
        lua_pushinteger(L, (lua_Integer)pv->v.minor);
    else if (!strcmp(k, "patch"))
        lua_pushinteger(L, (lua_Integer)pv->v.patch);
    else if (!strcmp(k, "prerelease")) {
        if (pv->v.pre)
            lua_pushlstring(L, pv->v.pre, pv->v.pre_len);
        else
            lua_pushnil(L);
    } else if (!strcmp(k, "build")) {
        if (pv->v.build)
            lua_pushlstring(L, pv->v.build, pv->v.build_len);
        else
            lua_pushnil(L);
    } else {
        lua_getmetatable(L, 1);
        lua_getfield(L, -1, "methods");
        lua_getfield(L, -1, k);
        if (lua_isnil(L, -1))
            return pol_raise(L, "version has no field '%s'", k);
    }
    return 1;
}

static int v_compare(lua_State *L)
{
    const de_semver *a = version_arg(L, 1), *b = version_arg(L, 2);
    lua_pushinteger(L, de_semver_cmp(a, b));
    return 1;
}

static int v_eq(lua_State *L)
{
    const de_semver *a = version_arg(L, 1), *b = version_arg(L, 2);
    lua_pushboolean(L, de_semver_cmp(a, b) == 0);
    return 1;
}

static int v_lt(lua_State *L)
{
    const de_semver *a = version_arg(L, 1), *b = version_arg(L, 2);
    lua_pushboolean(L, de_semver_cmp(a, b) < 0);
    return 1;
}

static int v_le(lua_State *L)
{
    const de_semver *a = version_arg(L, 1), *b = version_arg(L, 2);
    lua_pushboolean(L, de_semver_cmp(a, b) <= 0);
    return 1;
}

static int v_tostring(lua_State *L)
{
    pol_version *pv = luaL_checkudata(L, 1, VERSION_MT);
    lua_pushlstring(L, pv->text, pv->len);
    return 1;
}

static int ro_value(lua_State *L)
{
    return pol_raise(L, "versions and quantities are read-only");
}

static int dra_version(lua_State *L)
{
    size_t n;
    const char *s = luaL_checklstring(L, 1, &n);
    pol_push_version(L, s, n);
    return 1;
}

/* ---- quantities ---------------------------------------------------------- */

typedef struct pol_quantity {
    de_qty q;
} pol_quantity;

void pol_push_quantity(lua_State *L, const de_qty *q)
{
    pol_quantity *pq = lua_newuserdatauv(L, sizeof *pq, 0);
    pq->q = *q;
    luaL_setmetatable(L, QUANTITY_MT);
}

const de_qty *pol_to_quantity(lua_State *L, int idx)
{
    pol_quantity *pq = luaL_testudata(L, idx, QUANTITY_MT);
    return pq ? &pq->q : NULL;
}

static de_qty qty_arg(lua_State *L, int idx)
{
    pol_quantity *pq = luaL_testudata(L, idx, QUANTITY_MT);
    if (pq)
        return pq->q;
    if (lua_type(L, idx) == LUA_TSTRING) {
        size_t n;
        const char *s = lua_tolstring(L, idx, &n);
        de_qty q;
        de_err e;
        de_err_clear(&e);
        /* parsed in C on every call: bounded like version texts */
        if (n > 256)
            pol_raise(L, "invalid quantity: longer than 256 bytes");
        if (de_qty_parse(s, n, &q, &e) != DE_OK)
            pol_raise(L, "invalid quantity \"%s\": %s", s, e.msg);
        return q;
    }
    if (lua_isinteger(L, idx))
        return de_qty_from_int(lua_tointeger(L, idx), DE_QFMT_DECIMAL_SI);
    if (lua_type(L, idx) == LUA_TNUMBER) {
        lua_Number f = lua_tonumber(L, idx);
        if (!isfinite(f) || fabs(f) > 9e15)
            pol_raise(L, "quantity out of range");
        return de_qty_from_milli((int64_t)llround(f * 1000.0), DE_QFMT_DECIMAL_SI);
    }
    pol_raise(L, "quantity expected, got %s", luaL_typename(L, idx));
    return de_qty_from_int(0, DE_QFMT_DECIMAL_SI);
}

static int dra_quantity(lua_State *L)
{
    de_qty q = qty_arg(L, 1);
    pol_push_quantity(L, &q);
    return 1;
}

static int q_value(lua_State *L)
{
    de_qty q = qty_arg(L, 1);
    lua_pushinteger(L, (lua_Integer)de_qty_value(q));
    return 1;
}

static int q_milli(lua_State *L)
{
    de_qty q = qty_arg(L, 1);
    lua_pushinteger(L, (lua_Integer)de_qty_milli_value(q));
    return 1;
}

static int q_float(lua_State *L)
{
    de_qty q = qty_arg(L, 1);
    lua_pushnumber(L, de_qty_approx_double(q));
    return 1;
}

static int q_is_integer(lua_State *L)
{
    de_qty q = qty_arg(L, 1);
    lua_pushboolean(L, de_qty_is_integer(q));
    return 1;
}

static const struct {
    const char *unit;
    __int128 nano; /* size of one unit in nano-units */
} units[] = {
    {"n", 1},
    {"u", 1000},
    {"m", 1000000},
    {"", 1000000000},
    {"1", 1000000000},
    {"k", (__int128)1000 * 1000000000},
    {"M", (__int128)1000000 * 1000000000},
    {"G", (__int128)1000000000 * 1000000000},
    {"T", (__int128)1000000000000LL * 1000000000},
    {"P", (__int128)1000000000000000LL * 1000000000},
    {"E", (__int128)1000000000000000000LL * 1000000000},
    {"Ki", (__int128)1024 * 1000000000},
    {"Mi", (__int128)(1LL << 20) * 1000000000},
    {"Gi", (__int128)(1LL << 30) * 1000000000},
    {"Ti", (__int128)(1LL << 40) * 1000000000},
    {"Pi", (__int128)(1LL << 50) * 1000000000},
    {"Ei", (__int128)(1LL << 60) * 1000000000},
};

/* q:to(unit): the quantity counted in `unit`; an integer when it divides
 * exactly (and fits), a float otherwise. */
static int q_to(lua_State *L)
{
    de_qty q = qty_arg(L, 1);
    const char *u = luaL_optstring(L, 2, "");
    for (size_t i = 0; i < DE_ARRAY_LEN(units); i++) {
        if (strcmp(u, units[i].unit))
            continue;
        __int128 d = units[i].nano;
        if (q.exp == -9) { /* the normal form: a count of nano-units */
            if (q.mant % d == 0) {
                __int128 v = q.mant / d;
                if (v >= INT64_MIN && v <= INT64_MAX) {
                    lua_pushinteger(L, (lua_Integer)(int64_t)v);
                    return 1;
                }
            }
            lua_pushnumber(L, (double)q.mant / (double)d);
            return 1;
        }
        lua_pushnumber(L, de_qty_approx_double(q) / ((double)d / 1e9));
        return 1;
    }
    return pol_raise(L, "unknown quantity unit \"%s\" (use one of n u m k M G T P E Ki Mi Gi Ti Pi Ei)", u);
}

static int q_compare(lua_State *L)
{
    de_qty a = qty_arg(L, 1), b = qty_arg(L, 2);
    lua_pushinteger(L, de_qty_cmp(a, b));
    return 1;
}

static int q_eq(lua_State *L)
{
    de_qty a = qty_arg(L, 1), b = qty_arg(L, 2);
    lua_pushboolean(L, de_qty_cmp(a, b) == 0);
    return 1;
}

static int q_lt(lua_State *L)
{
    de_qty a = qty_arg(L, 1), b = qty_arg(L, 2);
    lua_pushboolean(L, de_qty_cmp(a, b) < 0);
    return 1;
}

static int q_le(lua_State *L)
{
    de_qty a = qty_arg(L, 1), b = qty_arg(L, 2);
    lua_pushboolean(L, de_qty_cmp(a, b) <= 0);
    return 1;
}

static int q_add(lua_State *L)
{
    de_qty a = qty_arg(L, 1), b = qty_arg(L, 2), r;
    if (de_qty_add(a, b, &r) != DE_OK)
        return pol_raise(L, "quantity overflow");
    pol_push_quantity(L, &r);
    return 1;
}

static int q_sub(lua_State *L)
{
    de_qty a = qty_arg(L, 1), b = qty_arg(L, 2), r;
    if (de_qty_sub(a, b, &r) != DE_OK)
        return pol_raise(L, "quantity overflow");
    pol_push_quantity(L, &r);
    return 1;
}

static int q_tostring(lua_State *L)
{
    de_qty q = qty_arg(L, 1);
    char buf[DE_QTY_TEXT_MAX];
    size_t n = de_qty_format(q, buf, sizeof buf);
    lua_pushlstring(L, buf, n);
    return 1;
}

static int q_index(lua_State *L)
{
    luaL_checkudata(L, 1, QUANTITY_MT);
    const char *k = luaL_checkstring(L, 2);
    lua_getmetatable(L, 1);
    lua_getfield(L, -1, "methods");
    lua_getfield(L, -1, k);
    if (lua_isnil(L, -1))
        return pol_raise(L, "quantity has no field '%s'", k);
    return 1;
}

/* ---- logging ----------------------------------------------------------------- */

static int do_log(lua_State *L, de_log_level lvl)
{
    pol_vm *vm = pol_vm_of(L);
    pol_trace_impure(vm); /* a line per call: the score memo must not skip it */
    int n = lua_gettop(L);
    pol_work(L, (uint64_t)n / 8, false);
    if (vm->state == POL_VM_CALL && vm->log_lines++ >= POL_MAX_LOG_LINES)
        return 0; /* dropped: not even built */
    /* built only as far as it is shown (a line is cut at POL_MAX_LOG_MSG
     * bytes, and says so with "...") */
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    for (int i = 1; i <= n && luaL_bufflen(&b) <= POL_MAX_LOG_MSG; i++) {
        lua_pushcfunction(L, pol_tostring);
        lua_pushvalue(L, i);
        lua_call(L, 1, 1);
        if (i > 1)
            luaL_addchar(&b, ' ');
        size_t l;
        const char *t = lua_tolstring(L, -1, &l);
        if (l > POL_MAX_LOG_MSG + 1) {
            lua_pushlstring(L, t, POL_MAX_LOG_MSG + 1);
            lua_remove(L, -2);
        }
        luaL_addvalue(&b);
    }
    luaL_pushresult(&b);
    size_t len;
    const char *msg = lua_tolstring(L, -1, &len);
    char text[POL_MAX_LOG_MSG + 32];
    if (vm->log_lines == POL_MAX_LOG_LINES && vm->state == POL_VM_CALL)
        snprintf(text, sizeof text, "%.*s (further dra.log lines of this call are dropped)",
                 (int)(len > POL_MAX_LOG_MSG ? POL_MAX_LOG_MSG : len), msg);
    else
        snprintf(text, sizeof text, "%.*s%s", (int)(len > POL_MAX_LOG_MSG ? POL_MAX_LOG_MSG : len),
                 msg, len > POL_MAX_LOG_MSG ? "..." : "");
    if (!vm->cfg->log)
        return 0;
    lua_Debug ar;
    const char *file = vm->file ? vm->file : "?";
    int line = 0;
    if (lua_getstack(L, 1, &ar) && lua_getinfo(L, "Sl", &ar) && ar.currentline > 0) {
        file = ar.source[0] == '@' ? ar.source + 1 : ar.short_src;
        line = ar.currentline;
    }
    char rev[16];
    snprintf(rev, sizeof rev, "%.12s", vm->revision ? vm->revision : "");
    const char *kv[] = {"policy", vm->name ? vm->name : "?", "revision", rev, NULL};
    vm->cfg->log(vm->cfg->log_ctx, lvl, file, line, text, kv);
    return 0;
}

static int dra_log(lua_State *L) { return do_log(L, DE_LOG_INFO); }
static int dra_warn(lua_State *L) { return do_log(L, DE_LOG_WARN); }

void pol_log_to_engine(void *ctx, de_log_level lvl, const char *file, int line, const char *msg,
                       const char *const *kv)
{
    (void)ctx;
    if (lvl == DE_LOG_INFO && de_log_verbosity() < 0)
        return;
    de_log_kv(lvl, 0, file, line, msg, kv);
}

/* ---- opening ---------------------------------------------------------------- */

static void class(lua_State *L, const char *name, const luaL_Reg *meta, const luaL_Reg *methods)
{
    luaL_newmetatable(L, name);
    luaL_setfuncs(L, meta, 0);
    lua_newtable(L);
    luaL_setfuncs(L, methods, 0);
    pol_sandbox_freeze(L, -1, name);
    lua_setfield(L, -3, "methods");
    lua_pop(L, 1);
    lua_pushstring(L, name);
    lua_setfield(L, -2, "__metatable");
    lua_pop(L, 1);
}

void pol_api_open(lua_State *L, bool test)
{
    static const luaL_Reg vmeta[] = {
        {"__index", v_index}, {"__newindex", ro_value}, {"__eq", v_eq},
        {"__lt", v_lt},       {"__le", v_le},           {"__tostring", v_tostring},
        {NULL, NULL},
    };
    static const luaL_Reg vmethods[] = {
        {"compare", v_compare},
        {NULL, NULL},
    };
    class(L, VERSION_MT, vmeta, vmethods);

    static const luaL_Reg qmeta[] = {
        {"__index", q_index}, {"__newindex", ro_value}, {"__eq", q_eq},   {"__lt", q_lt},
        {"__le", q_le},       {"__add", q_add},         {"__sub", q_sub}, {"__tostring", q_tostring},
        {NULL, NULL},
    };
    static const luaL_Reg qmethods[] = {
        {"value", q_value},       {"milli_value", q_milli}, {"as_float", q_float},
        {"is_integer", q_is_integer}, {"to", q_to},         {"compare", q_compare},
        {NULL, NULL},
    };
    class(L, QUANTITY_MT, qmeta, qmethods);

    static const luaL_Reg fns[] = {
        {"version", dra_version},
        {"quantity", dra_quantity},
        {"log", dra_log},
        {"warn", dra_warn},
        {NULL, NULL},
    };
    luaL_newlib(L, fns);
    lua_pushinteger(L, POL_API);
    lua_setfield(L, -2, "api");
    if (test) {
        pol_testapi_open(L);
        lua_setfield(L, -2, "test");
    }
    pol_sandbox_freeze(L, -1, "dra");
    lua_remove(L, -2);
}
