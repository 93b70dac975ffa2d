/*
 * sb_table.c - the table library of the sandbox, written again with budget
 * checks (pol_work, vm.c).
 *
 * Why not wrap the standard ones: their loops run in C, so the count hook
 * never fires inside them, and their length comes from the caller -
 * table.move's range, or a __len metamethod that claims 1e12 elements for
 * table.insert, table.remove, table.concat, table.unpack and table.sort.
 * Checking the length before calling the original is not enough either: the
 * original calls __len again and may get another answer.  These versions
 * read the length once, refuse up front a count that cannot fit in what is
 * left of the budget, and charge one unit per element read, written or
 * compared (the clock is read every POL_HOOK_EVERY units), so a loop of any
 * length ends at the instruction budget or the deadline, whichever comes
 * first, with the reason that applies.
 *
 * Semantics are Lua 5.4's (metamethods honoured through lua_geti/lua_seti,
 * the same argument checks and messages), with one deliberate difference:
 * table.sort is a stable merge sort.  Lua's quicksort picks a pivot from
 * the clock and time() once a partition is unbalanced, so equal elements
 * could come out in a different order from run to run; policy output must
 * be deterministic, and a merge sort also bounds the comparisons at
 * n log2 n whatever the comparator does.
 */
#include "pol_int.h"

#include <limits.h>
#include <string.h>

enum { TAB_R = 1, TAB_W = 2, TAB_L = 4 };

static bool has_field(lua_State *L, const char *key)
{
    lua_pushstring(L, key);
    bool ok = lua_rawget(L, -2) != LUA_TNIL;
    lua_pop(L, 1);
    return ok;
}

/* A table, or an object whose metatable gives what `what` needs. */
static void check_tab(lua_State *L, int arg, int what)
{
    if (lua_type(L, arg) == LUA_TTABLE)
        return;
    if (lua_getmetatable(L, arg)) {
        bool ok = (!(what & TAB_R) || has_field(L, "__index")) && (!(what & TAB_W) || has_field(L, "__newindex")) &&
                  (!(what & TAB_L) || has_field(L, "__len"));
        lua_pop(L, 1);
        if (ok)
            return;
    }
    luaL_checktype(L, arg, LUA_TTABLE); /* raises */
}

/* #t, read once (it may call __len). */
static lua_Integer length(lua_State *L, int arg, int what)
{
    check_tab(L, arg, what | TAB_L);
    return luaL_len(L, arg);
}

static inline void step(lua_State *L)
{
    pol_work(L, 1, false);
}

static int tb_insert(lua_State *L)
{
    lua_Integer e = length(L, 1, TAB_R | TAB_W);
    e = (lua_Integer)((lua_Unsigned)e + 1u); /* first empty slot (wraps like luaL_intop) */
    lua_Integer pos;
    switch (lua_gettop(L)) {
    case 2:
        pos = e;
        break;
    case 3:
        pos = luaL_checkinteger(L, 2);
        luaL_argcheck(L, (lua_Unsigned)pos - 1u < (lua_Unsigned)e, 2, "position out of bounds");
        pol_work_need(L, (lua_Unsigned)e - (lua_Unsigned)pos, "table.insert");
        for (lua_Integer i = e; i > pos; i--) {
            lua_geti(L, 1, i - 1);
            lua_seti(L, 1, i);
            step(L);
        }
        break;
    default:
        return luaL_error(L, "wrong number of arguments to 'insert'");
    }
    lua_seti(L, 1, pos);
    return 0;
}

static int tb_remove(lua_State *L)
{
    lua_Integer size = length(L, 1, TAB_R | TAB_W);
    lua_Integer pos = luaL_optinteger(L, 2, size);
    if (pos != size)
        luaL_argcheck(L, (lua_Unsigned)pos - 1u <= (lua_Unsigned)size, 2, "position out of bounds");
    if (pos < size)
        pol_work_need(L, (lua_Unsigned)size - (lua_Unsigned)pos, "table.remove");
    lua_geti(L, 1, pos);
    for (; pos < size; pos++) {
        lua_geti(L, 1, pos + 1);
        lua_seti(L, 1, pos);
        step(L);
    }
    lua_pushnil(L);
    lua_seti(L, 1, pos);
    return 1;
}

static int tb_move(lua_State *L)
{
    lua_Integer f = luaL_checkinteger(L, 2), e = luaL_checkinteger(L, 3), t = luaL_checkinteger(L, 4);
    int tt = !lua_isnoneornil(L, 5) ? 5 : 1;
    check_tab(L, 1, TAB_R);
    check_tab(L, tt, TAB_W);
    if (e >= f) {
        luaL_argcheck(L, f > 0 || e < LUA_MAXINTEGER + f, 3, "too many elements to move");
        lua_Integer n = e - f + 1;
        luaL_argcheck(L, t <= LUA_MAXINTEGER - n + 1, 4, "destination wrap around");
        pol_work_need(L, (lua_Unsigned)n, "table.move");
        bool forward = t > e || t <= f || (tt != 1 && !lua_compare(L, 1, tt, LUA_OPEQ));
        for (lua_Integer i = 0; i < n; i++) {
            lua_Integer k = forward ? i : n - 1 - i;
            lua_geti(L, 1, f + k);
            lua_seti(L, tt, t + k);
            step(L);
        }
    }
    lua_pushvalue(L, tt);
    return 1;
}

/* The result may not pass the per-string limit: refused as it grows, a
 * memory trip naming the function. */
static int tb_concat(lua_State *L)
{
    pol_vm *vm = pol_vm_of(L);
    lua_Integer last = length(L, 1, TAB_R);
    size_t lsep;
    const char *sep = luaL_optlstring(L, 2, "", &lsep);
    lua_Integer i = luaL_optinteger(L, 3, 1);
    last = luaL_optinteger(L, 4, last);
    size_t cap = vm->cfg->limits.max_subject * POL_STRING_FACTOR, total = 0;
    if (i <= last) {
        lua_Unsigned n = (lua_Unsigned)last - (lua_Unsigned)i;
        pol_work_need(L, n == (lua_Unsigned)-1 ? n : n + 1, "table.concat");
    }
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    for (; i <= last; i++) {
        lua_geti(L, 1, i);
        if (!lua_isstring(L, -1))
            return luaL_error(L, "invalid value (at index %I) in table for 'concat'", (LUAI_UACINT)i);
        size_t len;
        lua_tolstring(L, -1, &len);
        total += len + (i < last ? lsep : 0);
        if (total > cap)
            return pol_trip(L, POL_R_MEMORY, "table.concat: a result of more than %zu bytes; at most %zu bytes "
                                             "per string",
                            cap, cap);
        luaL_addvalue(&b);
        if (i < last)
            luaL_addlstring(&b, sep, lsep);
        pol_work(L, 1 + (len + lsep) / POL_BYTES_PER_UNIT, false);
        if (i == LUA_MAXINTEGER)
            break;
    }
    luaL_pushresult(&b);
    return 1;
}

static int tb_pack(lua_State *L)
{
    int n = lua_gettop(L);
    pol_work(L, (uint64_t)n, false);
    lua_createtable(L, n, 1);
    lua_insert(L, 1);
    for (int i = n; i >= 1; i--)
        lua_seti(L, 1, i);
    lua_pushinteger(L, n);
    lua_setfield(L, 1, "n");
    return 1;
}

static int tb_unpack(lua_State *L)
{
    lua_Integer i = luaL_optinteger(L, 2, 1);
    lua_Integer e = lua_isnoneornil(L, 3) ? luaL_len(L, 1) : luaL_checkinteger(L, 3);
    if (i > e)
        return 0;
    lua_Unsigned n = (lua_Unsigned)e - (lua_Unsigned)i; /* count - 1 */
    if (n >= (unsigned int)INT_MAX)
        return luaL_error(L, "too many results to unpack");
    pol_work_need(L, n + 1, "table.unpack");
    if (!lua_checkstack(L, (int)++n))
        return luaL_error(L, "too many results to unpack");
    for (; i < e; i++) {
        lua_geti(L, 1, i);
        step(L);
    }
    lua_geti(L, 1, e);
    step(L);
    return (int)n;
}

/* ---- sort --------------------------------------------------------------------- */

/* a[i] < a[j] for the elements at indices i, j of the work table at w,
 * with the comparator at cmp (0: the < operator). */
static bool less(lua_State *L, int w, int cmp, lua_Integer i, lua_Integer j)
{
    step(L);
    if (cmp) {
        lua_pushvalue(L, cmp);
        lua_rawgeti(L, w, i);
        lua_rawgeti(L, w, j);
        lua_call(L, 2, 1);
        bool r = lua_toboolean(L, -1);
        lua_pop(L, 1);
        return r;
    }
    lua_rawgeti(L, w, i);
    lua_rawgeti(L, w, j);
    bool r = lua_compare(L, -2, -1, LUA_OPLT);
    lua_pop(L, 2);
    return r;
}

static int tb_sort(lua_State *L)
{
    lua_Integer n = length(L, 1, TAB_R | TAB_W);
    if (n <= 1)
        return 0;
    luaL_argcheck(L, n < INT_MAX, 1, "array too big");
    int cmp = 0;
    if (!lua_isnoneornil(L, 2)) {
        luaL_checktype(L, 2, LUA_TFUNCTION);
        cmp = 2;
    }
    /* reading, n log n comparisons, writing back */
    uint64_t lg = 1;
    while (((lua_Integer)1 << lg) < n)
        lg++;
    pol_work_need(L, (uint64_t)n * (lg + 2), "table.sort");
    lua_settop(L, 2);
    lua_createtable(L, (int)n, 0); /* 3: the elements, in their original order */
    for (lua_Integer i = 1; i <= n; i++) {
        lua_geti(L, 1, i);
        lua_rawseti(L, 3, i);
        step(L);
    }
    /* 4, 5: index arrays, merged bottom-up from one into the other */
    int *a = lua_newuserdatauv(L, sizeof(int) * (size_t)n, 0);
    int *b = lua_newuserdatauv(L, sizeof(int) * (size_t)n, 0);
    for (int i = 0; i < (int)n; i++)
        a[i] = i + 1;
    for (lua_Integer width = 1; width < n; width *= 2) {
        for (lua_Integer lo = 0; lo < n; lo += 2 * width) {
            lua_Integer mid = lo + width < n ? lo + width : n, hi = lo + 2 * width < n ? lo + 2 * width : n;
            lua_Integer x = lo, y = mid, k = lo;
            while (x < mid && y < hi) {
                /* stable: take from the right only when it is strictly less */
                if (less(L, 3, cmp, a[y], a[x]))
                    b[k++] = a[y++];
                else
                    b[k++] = a[x++];
            }
            while (x < mid)
                b[k++] = a[x++];
            while (y < hi)
                b[k++] = a[y++];
        }
        int *t = a;
        a = b;
        b = t;
    }
    for (lua_Integer i = 0; i < n; i++) {
        lua_rawgeti(L, 3, a[i]);
        lua_seti(L, 1, i + 1);
        step(L);
    }
    return 0;
}

void pol_bounded_table(lua_State *L, int tbl)
{
    static const luaL_Reg fns[] = {
        {"concat", tb_concat}, {"insert", tb_insert}, {"move", tb_move}, {"pack", tb_pack},
        {"remove", tb_remove}, {"sort", tb_sort},     {"unpack", tb_unpack},
    };
    tbl = lua_absindex(L, tbl);
    for (size_t i = 0; i < DE_ARRAY_LEN(fns); i++) {
        lua_pushcfunction(L, fns[i].func);
        lua_setfield(L, tbl, fns[i].name);
    }
}
