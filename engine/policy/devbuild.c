/*
 * devbuild.c - a device view from a Lua table, for dra.test.device (inside
 * spec VMs) and for the draengine.core bindings (the host's busted specs):
 *
 *   { driver = "gpu.nvidia.com", pool = "node-1", name = "gpu-0", node = "node-1",
 *     attributes = { productName = "NVIDIA H100 80GB HBM3", ["dra.net/numaNode"] = 1,
 *                    driverVersion = dra.version("580.105.8") | {version = "580.105.8"},
 *                    ["resource.kubernetes.io/numaNode"] = {0, 1} },
 *     capacity = { memory = "81559Mi" },
 *     allow_multiple_allocations = false }
 *
 * Bare names are filed under the driver's domain (as the graph does);
 * "domain/name" keys as written.  Keys are read in sorted order, so the
 * view is the same whatever the table's hash order.  Storage comes from the
 * caller's arena; strings are interned in `in`.
 */
#include "pol_int.h"

#include <stdio.h>
#include <string.h>

static uint32_t intern_at(lua_State *L, de_interner *in, int idx)
{
    size_t n;
    const char *s = lua_tolstring(L, idx, &n);
    return de_intern(in, s, n);
}

static void split_name(lua_State *L, de_interner *in, int idx, uint32_t driver, uint32_t *dom, uint32_t *name,
                       uint8_t *bare)
{
    size_t n;
    const char *k = lua_tolstring(L, idx, &n);
    const char *slash = memchr(k, '/', n);
    if (slash) {
        *dom = de_intern(in, k, (size_t)(slash - k));
        *name = de_intern(in, slash + 1, n - (size_t)(slash - k) - 1);
        *bare = 0;
    } else {
        *dom = driver;
        *name = de_intern(in, k, n);
        *bare = 1;
    }
}

/* Version text of a value: a version object, or {version = "x.y.z"}. */
static bool version_text(lua_State *L, int idx, const char **t, size_t *n)
{
    if (pol_is_version(L, idx, t, n))
        return true;
    if (lua_type(L, idx) == LUA_TTABLE) {
        lua_getfield(L, idx, "version");
        bool ok = lua_type(L, -1) == LUA_TSTRING;
        if (ok)
            *t = lua_tolstring(L, -1, n); /* kept alive by the table */
        lua_pop(L, 1);
        return ok;
    }
    return false;
}

static int kind_of(lua_State *L, int idx)
{
    const char *t;
    size_t n;
    switch (lua_type(L, idx)) {
    case LUA_TNUMBER:
        return lua_isinteger(L, idx) ? DE_V_INT : DE_V_NONE;
    case LUA_TBOOLEAN:
        return DE_V_BOOL;
    case LUA_TSTRING:
        return DE_V_STRING;
    default:
        return version_text(L, idx, &t, &n) ? DE_V_VERSION : DE_V_NONE;
    }
}

static uint64_t scalar(lua_State *L, de_interner *in, int idx, int kind)
{
    const char *t = NULL;
    size_t n = 0;
    switch (kind) {
    case DE_V_INT:
        return (uint64_t)lua_tointeger(L, idx);
    case DE_V_BOOL:
        return lua_toboolean(L, idx);
    case DE_V_STRING:
        return intern_at(L, in, idx);
    default:
        version_text(L, idx, &t, &n);
        return de_intern(in, t, n);
    }
}

static void value(lua_State *L, de_interner *in, de_arena *a, int idx, de_attrval *v, const char *attr)
{
    idx = lua_absindex(L, idx);
    int k = kind_of(L, idx);
    v->n = 1;
    if (k != DE_V_NONE) {
        v->kind = (uint8_t)k;
        uint64_t raw = scalar(L, in, idx, k);
        if (k == DE_V_INT)
            v->u.i = (int64_t)raw;
        else if (k == DE_V_BOOL)
            v->u.b = raw != 0;
        else
            v->u.s = (uint32_t)raw;
        return;
    }
    if (!lua_istable(L, idx))
        luaL_error(L, "device: attribute \"%s\": a %s is not an attribute value", attr, luaL_typename(L, idx));
    size_t n = lua_rawlen(L, idx);
    if (n > POL_MAX_LIST)
        luaL_error(L, "device: attribute \"%s\": more than %d values", attr, POL_MAX_LIST);
    if (n == 0) {
        v->kind = DE_V_STRINGS;
        v->n = 0;
        return;
    }
    lua_rawgeti(L, idx, 1);
    int first = kind_of(L, -1);
    lua_pop(L, 1);
    if (first == DE_V_NONE)
        luaL_error(L, "device: attribute \"%s\": list of unsupported values", attr);
    void *mem = de_arena_alloc(a, n * 8);
    if (!mem)
        luaL_error(L, "device: out of memory");
    for (size_t i = 0; i < n; i++) {
        lua_rawgeti(L, idx, (lua_Integer)i + 1);
        if (kind_of(L, -1) != first)
            luaL_error(L, "device: attribute \"%s\": list mixes value types", attr);
        uint64_t raw = scalar(L, in, -1, first);
        if (first == DE_V_INT)
            ((int64_t *)mem)[i] = (int64_t)raw;
        else if (first == DE_V_BOOL)
            ((bool *)mem)[i] = raw != 0;
        else
            ((uint32_t *)mem)[i] = (uint32_t)raw;
        lua_pop(L, 1);
    }
    v->kind = (uint8_t)(first + 4);
    v->n = (uint32_t)n;
    v->u.ints = mem;
}

/* Keys of the table at idx, counted up to 65 (more is refused anyway: a
 * count of a huge table would be work in C no budget sees). */
static uint32_t count_keys(lua_State *L, int idx)
{
    uint32_t n = 0;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        lua_pop(L, 1);
        if (++n > 64) {
            lua_pop(L, 1);
            break;
        }
    }
    return n;
}

void pol_build_device(lua_State *L, int idx, de_interner *in, de_arena *a, uint32_t id, de_devview *out)
{
    idx = lua_absindex(L, idx);
    luaL_checktype(L, idx, LUA_TTABLE);
    de_devview v;
    memset(&v, 0, sizeof v);
    v.id = id;
    v.gen = 1;
    v.allow_multi = -1;
    if (lua_getfield(L, idx, "driver") != LUA_TSTRING)
        luaL_error(L, "device: 'driver' (a string) is required");
    v.driver = intern_at(L, in, -1);
    lua_pop(L, 1);
    if (lua_getfield(L, idx, "pool") == LUA_TSTRING)
        v.pool = intern_at(L, in, -1);
    else
        v.pool = de_intern_cstr(in, "pool");
    lua_pop(L, 1);
    if (lua_getfield(L, idx, "name") == LUA_TSTRING)
        v.name = intern_at(L, in, -1);
    else {
        char nm[32];
        snprintf(nm, sizeof nm, "device-%u", id);
        v.name = de_intern_cstr(in, nm);
    }
    lua_pop(L, 1);
    if (lua_getfield(L, idx, "node") == LUA_TSTRING)
        v.node = intern_at(L, in, -1);
    lua_pop(L, 1);
    if (lua_getfield(L, idx, "allow_multiple_allocations") == LUA_TBOOLEAN)
        v.allow_multi = (int8_t)lua_toboolean(L, -1);
    lua_pop(L, 1);

    for (int pass = 0; pass < 2; pass++) {
        const char *field = pass ? "capacity" : "attributes";
        if (lua_getfield(L, idx, field) != LUA_TTABLE) {
            lua_pop(L, 1);
            continue;
        }
        int t = lua_gettop(L);
        uint32_t n = count_keys(L, t);
        if (n > 64)
            luaL_error(L, "device: more than 64 %s", field);
        de_attr *attrs = pass ? NULL : de_arena_zalloc(a, (n ? n : 1) * sizeof *attrs);
        de_cap *caps = pass ? de_arena_zalloc(a, (n ? n : 1) * sizeof *caps) : NULL;
        if (!attrs && !caps)
            luaL_error(L, "device: out of memory");
        pol_ordered_pairs(L, t);
        int f = lua_gettop(L) - 2;
        uint32_t i = 0;
        for (;;) {
            lua_pushvalue(L, f);
            lua_call(L, 0, 2);
            if (lua_isnil(L, -2)) {
                lua_pop(L, 2);
                break;
            }
            if (lua_type(L, -2) != LUA_TSTRING)
                luaL_error(L, "device: %s names are strings", field);
            const char *key = lua_tostring(L, -2);
            uint32_t dom, name;
            uint8_t bare;
            split_name(L, in, -2, v.driver, &dom, &name, &bare);
            for (uint32_t j = 0; j < i; j++) {
                bool dup = pass ? caps[j].domain == dom && caps[j].name == name
                                : attrs[j].domain == dom && attrs[j].name == name;
                if (dup)
                    luaL_error(L, "device: %s \"%s\" given twice (bare and qualified)", field, key);
            }
            if (!pass) {
                attrs[i].domain = dom;
                attrs[i].name = name;
                attrs[i].bare = bare;
                value(L, in, a, -1, &attrs[i].v, key);
            } else {
                caps[i].domain = dom;
                caps[i].name = name;
                caps[i].bare = bare;
                const de_qty *q = pol_to_quantity(L, -1);
                de_err e;
                de_err_clear(&e);
                size_t ql;
                const char *qs;
                if (q)
                    caps[i].value = *q;
                else if (lua_isinteger(L, -1))
                    caps[i].value = de_qty_from_int(lua_tointeger(L, -1), DE_QFMT_DECIMAL_SI);
                else if (lua_type(L, -1) != LUA_TSTRING ||
                         (qs = lua_tolstring(L, -1, &ql), de_qty_parse(qs, ql, &caps[i].value, &e)) != DE_OK)
                    luaL_error(L, "device: capacity \"%s\" is not a quantity%s%s", key, e.msg[0] ? ": " : "",
                               e.msg);
            }
            i++;
            lua_pop(L, 2);
        }
        lua_pop(L, 3);
        if (pass) {
            v.caps = caps;
            v.ncaps = i;
        } else {
            v.attrs = attrs;
            v.nattrs = i;
        }
        lua_pop(L, 1);
    }
    *out = v;
}
