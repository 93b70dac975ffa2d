/*
 * bounded.c - the C library functions a policy can call, bounded: every one
 * whose work the caller controls either refuses inputs that would take too
 * long before it starts, or charges its work to the call's budget as it
 * goes (pol_work, vm.c).  The table library is written again in
 * sb_table.c; this file wraps string, utf8, math and a few base functions.
 *
 * The rules, one per kind of work:
 *   - a count the caller chooses (string.rep's result, a pattern's
 *     backtracking, table.move's range): refused up front past a limit;
 *   - output: one unit per POL_BYTES_PER_UNIT bytes of string returned and
 *     one per 8 values, charged after the call;
 *   - input that is only scanned (utf8.len, upper, tonumber, a long
 *     rawequal): bounded by the size of one string (POL_STRING_FACTOR x
 *     max_subject) and followed by a read of the clock whenever a call
 *     touched POL_CLOCK_BYTES or more, so the deadline stops a loop of such
 *     calls promptly and says "timeout".
 * A call that does not touch much costs two additions: policies call these
 * functions in every hook.
 *
 * The wrapped functions are plain C functions of the standard library that
 * use neither upvalues nor continuations, so a wrapper calls them directly
 * in its own frame (same arguments on the stack) instead of through
 * lua_call.  Iterators they return (gmatch, utf8.codes) are wrapped too,
 * through lua_call since gmatch's has upvalues of its own.
 */
#include "pol_int.h"

#include <math.h>
#include <string.h>

/* ---- metering -------------------------------------------------------------- */

static size_t string_bytes(lua_State *L, int from, int to)
{
    size_t n = 0;
    for (int i = from; i <= to; i++)
        if (lua_type(L, i) == LUA_TSTRING)
            n += lua_rawlen(L, i);
    return n;
}

/* Call f in this frame and charge what it did.  `clock`: read the clock
 * afterwards whatever the sizes (work that sizes do not show). */
static int meter_call(lua_State *L, lua_CFunction f, bool clock)
{
    int n = lua_gettop(L);
    size_t in = string_bytes(L, 1, n);
    pol_work(L, 0, false); /* a tripped call stops here */
    int r = f(L);
    int top = lua_gettop(L);
    size_t out = string_bytes(L, top - r + 1, top);
    pol_work(L, (uint64_t)(n + r) / 8 + out / POL_BYTES_PER_UNIT, clock || in + out >= POL_CLOCK_BYTES);
    return r;
}

/* upvalue 1: the original function */
static int metered(lua_State *L)
{
    return meter_call(L, lua_tocfunction(L, lua_upvalueindex(1)), false);
}

/* next(t, k) scans empty slots of t to the next entry: no size shows it. */
static int metered_clock(lua_State *L)
{
    return meter_call(L, lua_tocfunction(L, lua_upvalueindex(1)), true);
}

/* An iterator returned by a library function (upvalue 1), called through
 * lua_call (it may have upvalues of its own); upvalue 2: read the clock
 * after every step. */
static int metered_iter(lua_State *L)
{
    int n = lua_gettop(L);
    size_t in = string_bytes(L, 1, n);
    pol_work(L, 0, false);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, n, LUA_MULTRET);
    int r = lua_gettop(L);
    size_t out = string_bytes(L, 1, r);
    pol_work(L, (uint64_t)(n + r) / 8 + out / POL_BYTES_PER_UNIT,
             lua_toboolean(L, lua_upvalueindex(2)) || in + out >= POL_CLOCK_BYTES);
    return r;
}

/* Replace the iterator at stack index idx by its metered wrapper. */
static void wrap_iter(lua_State *L, int idx, bool clock)
{
    idx = lua_absindex(L, idx);
    lua_pushvalue(L, idx);
    lua_pushboolean(L, clock);
    lua_pushcclosure(L, metered_iter, 2);
    lua_replace(L, idx);
}

/* ---- patterns --------------------------------------------------------------- */

/* An upper bound on the steps Lua's backtracking matcher can take for
 * pattern p on a subject of n bytes.  Each quantified item (*, +, -), each
 * %b and each back reference can be tried at up to n+1 positions and is
 * re-tried for every choice of the items before it: with q such items that
 * is at most C(n+q, q) <= (n+1)^q / q! combinations per start position, and
 * an unanchored search tries n+1 start positions.  '?' doubles the count.
 * Matching inside C cannot be interrupted by the budget hook, so calls whose
 * bound exceeds POL_PATTERN_STEPS are refused; the others are charged one
 * unit per PATTERN_STEPS_PER_UNIT steps of the bound, and read the clock
 * when the bound passes PATTERN_CLOCK_STEPS (one such call can take tens of
 * milliseconds). */
#define POL_PATTERN_STEPS 5e7
#define PATTERN_STEPS_PER_UNIT 1e4
#define PATTERN_CLOCK_STEPS 1e5

static double pattern_cost(const char *p, size_t plen, size_t n)
{
    size_t i = 0;
    bool anchored = plen > 0 && p[0] == '^';
    if (anchored)
        i = 1;
    int q = 0, opt = 0;
    while (i < plen) {
        char c = p[i];
        size_t item_end;
        if (c == '%') {
            if (i + 1 >= plen)
                break;
            char d = p[i + 1];
            if (d == 'b') {
                q++;
                i += 4;
                continue;
            }
            if (d == 'f') {
                i += 2;
                if (i < plen && p[i] == '[') {
                    i++;
                    if (i < plen && p[i] == '^')
                        i++;
                    do {
                        if (i < plen && p[i] == '%')
                            i++;
                        i++;
                    } while (i < plen && p[i] != ']');
                    i++;
                }
                continue;
            }
            if (d >= '0' && d <= '9') {
                q++;
                i += 2;
                continue;
            }
            item_end = i + 2;
        } else if (c == '[') {
            size_t j = i + 1;
            if (j < plen && p[j] == '^')
                j++;
            do {
                if (j < plen && p[j] == '%')
                    j++;
                j++;
            } while (j < plen && p[j] != ']');
            item_end = j + 1;
        } else if (c == '(' || c == ')') {
            i++;
            continue;
        } else if (c == '$' && i + 1 == plen) {
            break;
        } else {
            item_end = i + 1;
        }
        if (item_end < plen) {
            char m = p[item_end];
            if (m == '*' || m == '+' || m == '-') {
                q++;
                item_end++;
            } else if (m == '?') {
                opt++;
                item_end++;
            }
        }
        i = item_end;
    }
    double nn = (double)n + 1, cost = 1;
    for (int k = 1; k <= q; k++)
        cost = cost * (nn + k - 1) / k;
    if (!anchored)
        cost *= nn;
    cost *= (double)(plen ? plen : 1);
    if (opt > 0)
        cost *= pow(2.0, opt > 60 ? 60 : opt);
    return cost;
}

/* Check subject and pattern, charge the bound; returns it. */
static double check_pattern(lua_State *L, int subject, int pattern)
{
    pol_vm *vm = pol_vm_of(L);
    size_t n, plen;
    luaL_checklstring(L, subject, &n);
    if (n > vm->cfg->limits.max_subject)
        pol_raise(L, "string subject too long for pattern functions (%zu bytes, limit %zu)", n,
                  vm->cfg->limits.max_subject);
    const char *p = luaL_checklstring(L, pattern, &plen);
    double cost = pattern_cost(p, plen, n);
    if (cost > POL_PATTERN_STEPS)
        pol_raise(L, "pattern too complex for a subject of %zu bytes (worst case %.3g steps, limit %.3g): anchor "
                     "it, use fewer repetitions, or shorten the subject",
                  n, cost, POL_PATTERN_STEPS);
    return cost;
}

static int pattern_call(lua_State *L, double cost)
{
    pol_work(L, (uint64_t)(cost / PATTERN_STEPS_PER_UNIT), false);
    return meter_call(L, lua_tocfunction(L, lua_upvalueindex(1)), cost >= PATTERN_CLOCK_STEPS);
}

/* match, gsub (upvalue 1: the original) */
static int sb_pattern(lua_State *L)
{
    return pattern_call(L, check_pattern(L, 1, 2));
}

/* gmatch: the iterator matches from where the previous match ended; each
 * step is bounded like one find and metered. */
static int sb_gmatch(lua_State *L)
{
    double cost = check_pattern(L, 1, 2);
    int r = pattern_call(L, cost);
    if (r >= 1)
        wrap_iter(L, -r, cost >= PATTERN_CLOCK_STEPS);
    return r;
}

/* find's 4th argument selects plain matching: bounded subject, no cost. */
static int sb_find(lua_State *L)
{
    if (!lua_toboolean(L, 4))
        return pattern_call(L, check_pattern(L, 1, 2));
    pol_vm *vm = pol_vm_of(L);
    size_t n;
    luaL_checklstring(L, 1, &n);
    luaL_checkstring(L, 2);
    if (n > vm->cfg->limits.max_subject)
        return pol_raise(L, "string subject too long (%zu bytes, limit %zu)", n, vm->cfg->limits.max_subject);
    return meter_call(L, lua_tocfunction(L, lua_upvalueindex(1)), false);
}

/* ---- other string functions -------------------------------------------------- */

/* string.format without %p, and with %s going through the deterministic
 * tostring (pol_tostring: no addresses). */
static int sb_format(lua_State *L)
{
    size_t fl;
    const char *f = luaL_checklstring(L, 1, &fl);
    int arg = 1;
    for (size_t i = 0; i < fl; i++) {
        if (f[i] != '%')
            continue;
        i++;
        if (i < fl && f[i] == '%')
            continue;
        while (i < fl && strchr("-+ #0123456789.", f[i]))
            i++;
        if (i >= fl)
            break;
        arg++;
        if (f[i] == 'p')
            return pol_raise(L, "string.format: %%p is not allowed in policies (addresses are not "
                                "deterministic)");
        if (f[i] == 's' && arg <= lua_gettop(L) && !lua_isstring(L, arg)) {
            lua_pushcfunction(L, pol_tostring);
            lua_pushvalue(L, arg);
            lua_call(L, 1, 1);
            lua_replace(L, arg);
        }
    }
    return meter_call(L, lua_tocfunction(L, lua_upvalueindex(1)), false);
}

/* The result is refused before it is built when it would pass the
 * per-string limit. */
static int sb_rep(lua_State *L)
{
    pol_vm *vm = pol_vm_of(L);
    size_t l, lsep = 0;
    luaL_checklstring(L, 1, &l);
    lua_Integer n = luaL_checkinteger(L, 2);
    luaL_optlstring(L, 3, "", &lsep);
    size_t cap = vm->cfg->limits.max_subject * POL_STRING_FACTOR;
    if (n > 0) {
        double total = (double)l * (double)n + (double)lsep * (double)(n - 1);
        if (total > (double)cap)
            return pol_raise(L, "string.rep result too large (%.0f bytes, limit %zu)", total, cap);
    }
    return meter_call(L, lua_tocfunction(L, lua_upvalueindex(1)), false);
}

/* ---- utf8 ----------------------------------------------------------------------- */

/* utf8.codes: its iterator skips continuation bytes from any position it
 * is given, a scan no size shows: every step reads the clock when the
 * string is long. */
static int sb_codes(lua_State *L)
{
    size_t n;
    luaL_checklstring(L, 1, &n);
    int r = meter_call(L, lua_tocfunction(L, lua_upvalueindex(1)), false);
    if (r >= 1)
        wrap_iter(L, -r, n >= POL_CLOCK_BYTES);
    return r;
}

/* ---- installing ---------------------------------------------------------------- */

static void wrap(lua_State *L, int tbl, const char *name, lua_CFunction fn)
{
    if (lua_getfield(L, tbl, name) != LUA_TFUNCTION) {
        lua_pop(L, 1);
        return;
    }
    lua_pushcclosure(L, fn, 1);
    lua_setfield(L, tbl, name);
}

void pol_bounded_string(lua_State *L, int tbl)
{
    tbl = lua_absindex(L, tbl);
    wrap(L, tbl, "find", sb_find);
    wrap(L, tbl, "match", sb_pattern);
    wrap(L, tbl, "gsub", sb_pattern);
    wrap(L, tbl, "gmatch", sb_gmatch);
    wrap(L, tbl, "rep", sb_rep);
    wrap(L, tbl, "format", sb_format);
    static const char *const plain[] = {"byte", "char", "lower", "upper", "reverse", "sub"};
    for (size_t i = 0; i < DE_ARRAY_LEN(plain); i++)
        wrap(L, tbl, plain[i], metered);
}

void pol_bounded_utf8(lua_State *L, int tbl)
{
    tbl = lua_absindex(L, tbl);
    static const char *const plain[] = {"char", "codepoint", "len", "offset"};
    for (size_t i = 0; i < DE_ARRAY_LEN(plain); i++)
        wrap(L, tbl, plain[i], metered);
    wrap(L, tbl, "codes", sb_codes);
}

void pol_bounded_math(lua_State *L, int tbl)
{
    tbl = lua_absindex(L, tbl);
    wrap(L, tbl, "max", metered);
    wrap(L, tbl, "min", metered);
}

void pol_bounded_base(lua_State *L, int tbl)
{
    tbl = lua_absindex(L, tbl);
    static const char *const plain[] = {"select", "tonumber", "rawequal", "assert", "load"};
    for (size_t i = 0; i < DE_ARRAY_LEN(plain); i++)
        wrap(L, tbl, plain[i], metered);
    wrap(L, tbl, "next", metered_clock);
}
