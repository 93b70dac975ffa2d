/*
 * lb_numeric.c - core.quantity and core.semver: Kubernetes quantities and
 * semantic versions as Lua values ("draengine.Quantity",
 * "draengine.Semver").  Both are immutable; arithmetic returns new values.
 *
 * Where a method takes another quantity it also accepts a quantity text, and
 * add/sub accept a Lua integer the way CEL's q.add(int) does
 * (NewQuantity(n, DecimalExponent)).  Parse errors raise the engine's exact
 * message.  lb_open_numeric also opens lb_json.c's functions.
 */
#include "../engine/base/quantity.h"
#include "../engine/base/semver.h"
#include "lb.h"
#include "lb_json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define QTY_CLASS "draengine.Quantity"
#define SEMVER_CLASS "draengine.Semver"

/* ---- Quantity ---------------------------------------------------------- */

/* Raise the engine's message as is (luaL_error would prefix a position). */
static int raise_msg(lua_State *L, const char *msg)
{
    lua_pushstring(L, msg);
    return lua_error(L);
}

static int raise_err(lua_State *L, const de_err *e)
{
    return raise_msg(L, e->msg[0] ? e->msg : de_rc_str(e->rc));
}

static de_qty *push_qty(lua_State *L, de_qty q)
{
    de_qty *u = lua_newuserdatauv(L, sizeof *u, 0);
    *u = q;
    luaL_setmetatable(L, QTY_CLASS);
    return u;
}

/* A Lua value as a quantity: Quantity userdata, text, or number. */
static de_qty to_qty(lua_State *L, int idx, bool int_as_exp)
{
    de_qty *u = luaL_testudata(L, idx, QTY_CLASS);
    if (u)
        return *u;
    de_qty q;
    de_err e;
    de_err_clear(&e);
    if (lua_type(L, idx) == LUA_TNUMBER) {
        char num[64];
        if (lua_isinteger(L, idx)) {
            lua_Integer n = lua_tointeger(L, idx);
            if (int_as_exp)
                return de_qty_from_int((int64_t)n, DE_QFMT_DECIMAL_EXP);
            snprintf(num, sizeof num, "%lld", (long long)n);
        } else {
            if (de_qty_from_double(lua_tonumber(L, idx), &q, &e) != DE_OK)
                raise_err(L, &e);
            return q;
        }
        if (de_qty_parse_cstr(num, &q, &e) != DE_OK)
            raise_err(L, &e);
        return q;
    }
    size_t n;
    const char *s = luaL_checklstring(L, idx, &n);
    if (de_qty_parse(s, n, &q, &e) != DE_OK)
        raise_err(L, &e);
    return q;
}

static de_qty *check_qty(lua_State *L, int idx) { return luaL_checkudata(L, idx, QTY_CLASS); }

static int l_quantity(lua_State *L)
{
    luaL_checkany(L, 1);
    push_qty(L, to_qty(L, 1, false));
    return 1;
}

static int q_cmp(lua_State *L)
{
    de_qty a = *check_qty(L, 1);
    lua_pushinteger(L, de_qty_cmp(a, to_qty(L, 2, false)));
    return 1;
}

static int q_arith(lua_State *L, bool sub)
{
    de_qty a = *check_qty(L, 1), r;
    de_qty b = to_qty(L, 2, true);
    if ((sub ? de_qty_sub(a, b, &r) : de_qty_add(a, b, &r)) != DE_OK) {
        return raise_msg(L, "quantity is out of range (more than 38 significant digits)");
    }
    push_qty(L, r);
    return 1;
}

static int q_add(lua_State *L) { return q_arith(L, false); }
static int q_sub(lua_State *L) { return q_arith(L, true); }

static int q_value(lua_State *L)
{
    lua_pushinteger(L, de_qty_value(*check_qty(L, 1)));
    return 1;
}

static int q_milli_value(lua_State *L)
{
    lua_pushinteger(L, de_qty_milli_value(*check_qty(L, 1)));
    return 1;
}

static int q_is_integer(lua_State *L)
{
    lua_pushboolean(L, de_qty_is_integer(*check_qty(L, 1)));
    return 1;
}

static int q_as_integer(lua_State *L)
{
    int64_t v;
    if (de_qty_as_int64(*check_qty(L, 1), &v) != DE_OK)
        return raise_msg(L, "cannot convert value to integer");
    lua_pushinteger(L, (lua_Integer)v);
    return 1;
}

/* Value-based: the exact integer (or milli count), or nil. */
static int q_int64_exact(lua_State *L)
{
    int64_t v;
    if (!de_qty_int64_exact(*check_qty(L, 1), &v))
        return 0;
    lua_pushinteger(L, (lua_Integer)v);
    return 1;
}

static int q_milli_exact(lua_State *L)
{
    int64_t v;
    if (!de_qty_milli_exact(*check_qty(L, 1), &v))
        return 0;
    lua_pushinteger(L, (lua_Integer)v);
    return 1;
}

static int q_approx(lua_State *L)
{
    lua_pushnumber(L, de_qty_approx_double(*check_qty(L, 1)));
    return 1;
}

static int q_sign(lua_State *L)
{
    lua_pushinteger(L, de_qty_sign(*check_qty(L, 1)));
    return 1;
}

static int q_fmt(lua_State *L)
{
    lua_pushstring(L, de_qfmt_name((de_qfmt)check_qty(L, 1)->fmt));
    return 1;
}

static int q_tostring(lua_State *L)
{
    char buf[DE_QTY_TEXT_MAX];
    size_t n = de_qty_format(*check_qty(L, 1), buf, sizeof buf);
    lua_pushlstring(L, buf, n);
    return 1;
}

/* __eq only fires between two Quantity userdata; __lt/__le also accept a
 * text or number on either side. */
static int q_eq(lua_State *L)
{
    lua_pushboolean(L, de_qty_cmp(*check_qty(L, 1), *check_qty(L, 2)) == 0);
    return 1;
}

static int q_lt(lua_State *L)
{
    lua_pushboolean(L, de_qty_cmp(to_qty(L, 1, false), to_qty(L, 2, false)) < 0);
    return 1;
}

static int q_le(lua_State *L)
{
    lua_pushboolean(L, de_qty_cmp(to_qty(L, 1, false), to_qty(L, 2, false)) <= 0);
    return 1;
}

/* ---- Semver ------------------------------------------------------------ */

/* The userdata holds the parsed version followed by its own text, which
 * pre/build point into (full userdata never moves). */
typedef struct lsemver {
    de_semver v;
    size_t len;
    char text[];
} lsemver;

static lsemver *check_semver(lua_State *L, int idx) { return luaL_checkudata(L, idx, SEMVER_CLASS); }

static int l_semver(lua_State *L)
{
    size_t n;
    const char *s = luaL_checklstring(L, 1, &n);
    bool normalize = lua_toboolean(L, 2);
    size_t cap = n + 8;
    lsemver *u = lua_newuserdatauv(L, sizeof *u + cap, 0);
    memset(u, 0, sizeof *u);
    de_err e;
    de_err_clear(&e);
    de_rc rc;
    if (normalize) {
        rc = de_semver_parse_normalized(s, n, u->text, cap, &u->v, &e);
        u->len = rc == DE_OK ? strlen(u->text) : 0;
    } else {
        memcpy(u->text, s, n);
        u->text[n] = 0;
        u->len = n;
        rc = de_semver_parse(u->text, n, &u->v, &e);
    }
    if (rc != DE_OK)
        return raise_err(L, &e);
    luaL_setmetatable(L, SEMVER_CLASS);
    return 1;
}

static const de_semver *to_semver(lua_State *L, int idx, de_semver *tmp)
{
    lsemver *u = luaL_testudata(L, idx, SEMVER_CLASS);
    if (u)
        return &u->v;
    size_t n;
    const char *s = luaL_checklstring(L, idx, &n);
    de_err e;
    de_err_clear(&e);
    if (de_semver_parse(s, n, tmp, &e) != DE_OK)
        raise_err(L, &e);
    return tmp;
}

static int v_cmp(lua_State *L)
{
    de_semver t1, t2;
    const de_semver *a = to_semver(L, 1, &t1), *b = to_semver(L, 2, &t2);
    lua_pushinteger(L, de_semver_cmp(a, b));
    return 1;
}

static int v_tostring(lua_State *L)
{
    lsemver *u = check_semver(L, 1);
    char buf[512];
    size_t n = de_semver_format(&u->v, buf, sizeof buf);
    if (n + 1 >= sizeof buf) /* very long prerelease: the text is canonical already */
        lua_pushlstring(L, u->text, u->len);
    else
        lua_pushlstring(L, buf, n);
    return 1;
}

static int v_eq(lua_State *L)
{
    lua_pushboolean(L, de_semver_cmp(&check_semver(L, 1)->v, &check_semver(L, 2)->v) == 0);
    return 1;
}

static int v_lt(lua_State *L)
{
    de_semver t1, t2;
    lua_pushboolean(L, de_semver_cmp(to_semver(L, 1, &t1), to_semver(L, 2, &t2)) < 0);
    return 1;
}

static int v_le(lua_State *L)
{
    de_semver t1, t2;
    lua_pushboolean(L, de_semver_cmp(to_semver(L, 1, &t1), to_semver(L, 2, &t2)) <= 0);
    return 1;
}

static int v_index(lua_State *L)
{
    lsemver *u = check_semver(L, 1);
    const char *k = luaL_checkstring(L, 2);
    if (strcmp(k, "major") == 0)
        lua_pushinteger(L, (lua_Integer)u->v.major);
    else if (strcmp(k, "minor") == 0)
        lua_pushinteger(L, (lua_Integer)u->v.minor);
    else if (strcmp(k, "patch") == 0)
        lua_pushinteger(L, (lua_Integer)u->v.patch);
    else if (strcmp(k, "prerelease") == 0)
        u->v.pre ? (void)lua_pushlstring(L, u->v.pre, u->v.pre_len) : lua_pushnil(L);
    else if (strcmp(k, "build") == 0)
        u->v.build ? (void)lua_pushlstring(L, u->v.build, u->v.build_len) : lua_pushnil(L);
    else if (strcmp(k, "cmp") == 0)
        lua_pushcfunction(L, v_cmp);
    else
        lua_pushnil(L);
    return 1;
}

void lb_open_numeric(lua_State *L);

void lb_open_numeric(lua_State *L)
{
    static const luaL_Reg qmethods[] = {
        {"cmp", q_cmp},
        {"add", q_add},
        {"sub", q_sub},
        {"value", q_value},
        {"milli_value", q_milli_value},
        {"is_integer", q_is_integer},
        {"as_integer", q_as_integer},
        {"int64_exact", q_int64_exact},
        {"milli_exact", q_milli_exact},
        {"approx", q_approx},
        {"sign", q_sign},
        {"fmt", q_fmt},
        {NULL, NULL},
    };
    static const luaL_Reg qmeta[] = {
        {"__tostring", q_tostring},
        {"__eq", q_eq},
        {"__lt", q_lt},
        {"__le", q_le},
        {NULL, NULL},
    };
    static const luaL_Reg vmeta[] = {
        {"__tostring", v_tostring},
        {"__eq", v_eq},
        {"__lt", v_lt},
        {"__le", v_le},
        {"__index", v_index},
        {NULL, NULL},
    };
    static const luaL_Reg fns[] = {
        {"quantity", l_quantity},
        {"semver", l_semver},
        {NULL, NULL},
    };

    lb_class(L, QTY_CLASS, qmeta, qmethods);
    lb_class(L, SEMVER_CLASS, vmeta, NULL); /* __index is a function (v_index) */

    luaL_setfuncs(L, fns, 0);

    /* JSON/YAML functions ride on this opener (lb_base.c calls only this one). */
    lb_open_json(L);
}
