/*
 * lb_json.c - JSON and YAML for Lua: core.null, core.json_decode,
 * core.json_encode, core.yaml_decode, core.yaml_encode, core.load_docs,
 * and the value conversion every binding shares (lb_json.h).
 */
#include "lb_json.h"

#include "../engine/base/buf.h"
#include "../engine/base/doc.h"
#include "../engine/base/jalloc.h"
#include "../engine/base/jdump.h"
#include "../engine/base/jload.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OBJ_MT "draengine.json_object"
#define ARR_MT "draengine.json_array"
#define MAX_DEPTH 200
#define YAML_OUT_MAX ((size_t)256 << 20)

static int raise_msg(lua_State *L, const char *msg)
{
    lua_pushstring(L, msg);
    return lua_error(L);
}

/* ---- JSON -> Lua ---------------------------------------------------------- */

static void push(lua_State *L, const json_t *v, int depth)
{
    luaL_checkstack(L, 4, "JSON value nested too deeply");
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        const char *k;
        size_t kl;
        json_t *c;
        lua_createtable(L, 0, (int)json_object_size(v));
        json_object_keylen_foreach((json_t *)v, k, kl, c)
        {
            lua_pushlstring(L, k, kl);
            push(L, c, depth + 1);
            lua_rawset(L, -3);
        }
        luaL_setmetatable(L, OBJ_MT);
        break;
    }
    case JSON_ARRAY: {
        size_t n = json_array_size(v);
        lua_createtable(L, (int)n, 0);
        for (size_t i = 0; i < n; i++) {
            push(L, json_array_get(v, i), depth + 1);
            lua_rawseti(L, -2, (lua_Integer)i + 1);
        }
        luaL_setmetatable(L, ARR_MT);
        break;
    }
    case JSON_STRING: lua_pushlstring(L, json_string_value(v), json_string_length(v)); break;
    case JSON_INTEGER: lua_pushinteger(L, (lua_Integer)json_integer_value(v)); break;
    case JSON_REAL: lua_pushnumber(L, json_real_value(v)); break;
    case JSON_TRUE: lua_pushboolean(L, 1); break;
    case JSON_FALSE: lua_pushboolean(L, 0); break;
    default: lua_pushlightuserdata(L, NULL); break;
    }
}

void lb_push_json(lua_State *L, const json_t *v) { push(L, v, 0); }

/* ---- Lua -> JSON ------------------------------------------------------------ */

typedef struct conv {
    lua_State *L;
    char path[256];
    size_t plen;
    char err[400];
} conv;

static size_t path_push_key(conv *c, const char *k, size_t kl)
{
    size_t old = c->plen;
    int n = snprintf(c->path + c->plen, sizeof c->path - c->plen, ".%.*s", (int)DE_MIN(kl, 60),
                     k);
    if (n > 0)
        c->plen = DE_MIN(c->plen + (size_t)n, sizeof c->path - 1);
    return old;
}

static size_t path_push_index(conv *c, lua_Integer i)
{
    size_t old = c->plen;
    int n = snprintf(c->path + c->plen, sizeof c->path - c->plen, "[%lld]", (long long)i);
    if (n > 0)
        c->plen = DE_MIN(c->plen + (size_t)n, sizeof c->path - 1);
    return old;
}

static void path_pop(conv *c, size_t old)
{
    c->plen = old;
    c->path[old] = 0;
}

static json_t *fail(conv *c, const char *what)
{
    snprintf(c->err, sizeof c->err, "cannot encode %s at $%s", what, c->path);
    return NULL;
}

static int marker(lua_State *L, int idx) /* 1 object, 2 array, 0 none */
{
    int r = 0;
    if (!lua_getmetatable(L, idx))
        return 0;
    luaL_getmetatable(L, OBJ_MT);
    if (lua_rawequal(L, -1, -2))
        r = 1;
    lua_pop(L, 1);
    luaL_getmetatable(L, ARR_MT);
    if (lua_rawequal(L, -1, -2))
        r = 2;
    lua_pop(L, 2);
    return r;
}

typedef struct skey {
    const char *s;
    size_t n;
    int ref; /* index of the key string on the Lua stack */
} skey;

static int cmp_skey(const void *a, const void *b)
{
    const skey *x = a, *y = b;
    size_t n = x->n < y->n ? x->n : y->n;
    int c = memcmp(x->s, y->s, n);
    if (c)
        return c;
    return x->n < y->n ? -1 : x->n > y->n;
}

static json_t *conv_value(conv *c, int idx, int depth);

static json_t *conv_table(conv *c, int idx, int depth)
{
    lua_State *L = c->L;
    int mk = marker(L, idx);
    /* count keys and check for a 1..n sequence */
    lua_Integer count = 0, maxi = 0;
    bool all_int = true;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        count++;
        if (lua_isinteger(L, -2) && lua_tointeger(L, -2) >= 1) {
            lua_Integer k = lua_tointeger(L, -2);
            if (k > maxi)
                maxi = k;
        } else {
            all_int = false;
        }
        lua_pop(L, 1);
    }
    bool as_array = mk == 2 || (mk == 0 && count > 0 && all_int && maxi == count);
    if (as_array) {
        if (!all_int || maxi != count)
            return fail(c, "an array with non-sequence keys");
        json_t *arr = json_array();
        for (lua_Integer i = 1; i <= count; i++) {
            lua_rawgeti(L, idx, i);
            size_t old = path_push_index(c, i - 1);
            json_t *v = conv_value(c, lua_gettop(L), depth + 1);
            path_pop(c, old);
            lua_pop(L, 1);
            if (!v) {
                json_decref(arr);
                return NULL;
            }
            json_array_append_new(arr, v);
        }
        return arr;
    }
    /* object: collect keys (as strings) and insert them sorted */
    luaL_checkstack(L, (int)DE_MIN(count, 1000000) + 8, "too many keys");
    skey *keys = count ? de_xmalloc((size_t)count * sizeof *keys) : NULL;
    int base = lua_gettop(L);
    size_t nk = 0;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        lua_pop(L, 1); /* value */
        if (lua_type(L, -1) == LUA_TSTRING) {
            lua_pushvalue(L, -1);
        } else if (lua_isinteger(L, -1)) {
            lua_pushfstring(L, "%I", lua_tointeger(L, -1));
        } else {
            free(keys);
            lua_settop(L, base);
            return fail(c, "a table with a non-string key");
        }
        /* keep the key string below the iteration key */
        lua_insert(L, -2);
        keys[nk].ref = lua_gettop(L) - 1;
        keys[nk].s = lua_tolstring(L, keys[nk].ref, &keys[nk].n);
        nk++;
    }
    if (nk)
        qsort(keys, nk, sizeof *keys, cmp_skey);
    json_t *obj = json_object();
    for (size_t i = 0; i < nk; i++) {
        /* t[key]: an integer-keyed entry is looked up by its number */
        lua_pushvalue(L, keys[i].ref);
        lua_rawget(L, idx);
        if (lua_isnil(L, -1)) {
            lua_pop(L, 1);
            lua_Integer ik = (lua_Integer)strtoll(keys[i].s, NULL, 10);
            lua_rawgeti(L, idx, ik);
        }
        size_t old = path_push_key(c, keys[i].s, keys[i].n);
        json_t *v = conv_value(c, lua_gettop(L), depth + 1);
        path_pop(c, old);
        lua_pop(L, 1);
        if (!v || json_object_setn_new(obj, keys[i].s, keys[i].n, v) != 0) {
            if (v)
                fail(c, "a key that is not valid UTF-8");
            json_decref(obj);
            free(keys);
            lua_settop(L, base);
            return NULL;
        }
    }
    free(keys);
    lua_settop(L, base);
    return obj;
}

static json_t *conv_value(conv *c, int idx, int depth)
{
    lua_State *L = c->L;
    if (depth > MAX_DEPTH)
        return fail(c, "a value nested deeper than 200 levels (a cycle?)");
    luaL_checkstack(L, 8, "value nested too deeply");
    switch (lua_type(L, idx)) {
    case LUA_TNIL: return json_null();
    case LUA_TBOOLEAN: return json_boolean(lua_toboolean(L, idx));
    case LUA_TNUMBER:
        if (lua_isinteger(L, idx))
            return json_integer((json_int_t)lua_tointeger(L, idx));
        if (!isfinite(lua_tonumber(L, idx)))
            return fail(c, "NaN or infinity");
        return json_real(lua_tonumber(L, idx));
    case LUA_TSTRING: {
        size_t n;
        const char *s = lua_tolstring(L, idx, &n);
        json_t *v = json_stringn(s, n);
        return v ? v : fail(c, "a string that is not valid UTF-8");
    }
    case LUA_TLIGHTUSERDATA:
        if (lua_touserdata(L, idx) == NULL)
            return json_null();
        return fail(c, "a light userdata");
    case LUA_TTABLE: return conv_table(c, idx, depth);
    case LUA_TUSERDATA:
        /* values with a text form (quantities, versions) encode as it */
        if (luaL_getmetafield(L, idx, "__tostring") != LUA_TNIL) {
            lua_pop(L, 1);
            size_t n;
            const char *s = luaL_tolstring(L, idx, &n);
            json_t *v = json_stringn(s, n);
            lua_pop(L, 1);
            return v ? v : fail(c, "a string that is not valid UTF-8");
        }
        return fail(c, "a userdata");
    default: return fail(c, luaL_typename(L, idx));
    }
}

json_t *lb_to_json(lua_State *L, int idx)
{
    conv c;
    memset(&c, 0, sizeof c);
    c.L = L;
    idx = lua_absindex(L, idx);
    json_t *v = conv_value(&c, idx, 0);
    if (!v) {
        raise_msg(L, c.err);
        return NULL;
    }
    return v;
}

/* ---- module functions ----------------------------------------------------------- */

static int l_json_decode(lua_State *L)
{
    size_t n;
    const char *s = luaL_checklstring(L, 1, &n);
    json_error_t je;
    json_t *v = json_loadb(s, n, JSON_DECODE_ANY, &je);
    if (!v)
        return luaL_error(L, "json: line %d:%d: %s", je.line, je.column, je.text);
    push(L, v, 0);
    json_decref(v);
    return 1;
}

static int l_json_encode(lua_State *L)
{
    luaL_checkany(L, 1);
    size_t flags = JSON_ENCODE_ANY | JSON_COMPACT;
    if (lua_istable(L, 2)) {
        lua_getfield(L, 2, "pretty");
        if (lua_toboolean(L, -1))
            flags = JSON_ENCODE_ANY | JSON_INDENT(2);
        lua_pop(L, 1);
    }
    json_t *v = lb_to_json(L, 1);
    char *s = json_dumps(v, flags);
    json_decref(v);
    if (!s)
        return luaL_error(L, "json: cannot encode the value");
    lua_pushstring(L, s);
    free(s);
    return 1;
}

/* The flags named true in the table at idx (the specs' spelling). */
typedef struct flagname {
    const char *name;
    size_t flag;
} flagname;

static size_t flags_of(lua_State *L, int idx, const flagname *f, size_t n)
{
    size_t flags = 0;
    for (size_t i = 0; i < n; i++) {
        lua_getfield(L, idx, f[i].name);
        if (lua_toboolean(L, -1))
            flags |= f[i].flag;
        lua_pop(L, 1);
    }
    return flags;
}

/* json_redump(text, flags) -> draengine's dump, json_dumps's, json_dumps's
 * of draengine's deep copy (nil for a refusal): the writers side by side,
 * for jdump's spec.  With
 * flags.raw the text is one string's bytes, unchecked (json_stringn_nocheck),
 * in an array. */
static int l_json_redump(lua_State *L)
{
    size_t n;
    const char *s = luaL_checklstring(L, 1, &n);
    luaL_checktype(L, 2, LUA_TTABLE);
    static const flagname F[] = {
        {"compact", JSON_COMPACT},       {"encode_any", JSON_ENCODE_ANY}, {"ensure_ascii", JSON_ENSURE_ASCII},
        {"escape_slash", JSON_ESCAPE_SLASH}, {"sort_keys", JSON_SORT_KEYS}, {"embed", JSON_EMBED},
        {"preserve_order", JSON_PRESERVE_ORDER}};
    size_t flags = flags_of(L, 2, F, DE_ARRAY_LEN(F));
    lua_getfield(L, 2, "indent");
    flags |= JSON_INDENT((int)luaL_optinteger(L, -1, 0));
    lua_getfield(L, 2, "precision");
    flags |= JSON_REAL_PRECISION((int)luaL_optinteger(L, -1, 0));
    lua_getfield(L, 2, "raw");
    bool raw = lua_toboolean(L, -1);
    lua_pop(L, 3);
    json_t *v;
    if (raw) {
        v = json_array();
        json_array_append_new(v, json_stringn_nocheck(s, n));
    } else {
        json_error_t je;
        v = json_loadb(s, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
        if (!v)
            return luaL_error(L, "json: line %d:%d: %s", je.line, je.column, je.text);
    }
    json_t *cp = de_json_copy(v);
    char *out[3] = {de_json_dumps(v, flags), json_dumps(v, flags), json_dumps(cp, flags)};
    json_decref(v);
    json_decref(cp);
    for (int i = 0; i < 3; i++) {
        if (out[i])
            lua_pushstring(L, out[i]);
        else
            lua_pushnil(L);
        free(out[i]);
    }
    return 3;
}

/* json_reload(text, flags) -> de_json_parse's tree and json_loadb's, each
 * as compact text (nil where it gave none), json_loadb's error text, and
 * de_json_loadb's (which must be json_loadb's): the readers side by side,
 * for jload's spec. */
static int l_json_reload(lua_State *L)
{
    size_t n;
    const char *s = luaL_checklstring(L, 1, &n);
    luaL_checktype(L, 2, LUA_TTABLE);
    static const flagname F[] = {
        {"reject_duplicates", JSON_REJECT_DUPLICATES}, {"decode_any", JSON_DECODE_ANY},
        {"allow_nul", JSON_ALLOW_NUL}, {"disable_eof_check", JSON_DISABLE_EOF_CHECK},
        {"int_as_real", JSON_DECODE_INT_AS_REAL}};
    size_t flags = flags_of(L, 2, F, DE_ARRAY_LEN(F));
    json_error_t je, de;
    json_t *v[3] = {de_json_parse(s, n, flags), json_loadb(s, n, flags, &je), de_json_loadb(s, n, flags, &de)};
    if (v[0] && v[1] && !json_equal(v[0], v[1]))
        lua_pushliteral(L, "json_equal differs"); /* dumps alone would not show it */
    else
        lua_pushnil(L);
    for (int i = 0; i < 2; i++) {
        char *t = v[i] ? json_dumps(v[i], JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
        if (t)
            lua_pushstring(L, t);
        else
            lua_pushnil(L);
        free(t);
    }
    if (v[1])
        lua_pushnil(L);
    else
        lua_pushfstring(L, "%d:%d:%d: %s", je.line, je.column, je.position, je.text);
    if (v[2])
        lua_pushnil(L);
    else
        lua_pushfstring(L, "%d:%d:%d: %s", de.line, de.column, de.position, de.text);
    for (int i = 0; i < 3; i++)
        json_decref(v[i]);
    return 5;
}

/* jalloc_stats() -> installed, this thread's cached blocks, their bytes */
static int l_jalloc_stats(lua_State *L)
{
    size_t blocks, bytes;
    lua_pushboolean(L, de_jalloc_stats(&blocks, &bytes));
    lua_pushinteger(L, (lua_Integer)blocks);
    lua_pushinteger(L, (lua_Integer)bytes);
    return 3;
}

typedef struct luactx {
    lua_State *L;
    int table;
    lua_Integer n;
    bool with_origin;
} luactx;

static de_rc collect(void *ctx, json_t *obj, const de_origin *o, de_err *e)
{
    luactx *c = ctx;
    lua_State *L = c->L;
    DE_UNUSED(e);
    if (c->with_origin) {
        lua_createtable(L, 0, 4);
        push(L, obj, 0);
        lua_setfield(L, -2, "object");
        lb_set_str(L, "file", o->file);
        lb_set_int(L, "doc", o->doc);
        if (o->item >= 0)
            lb_set_int(L, "item", o->item);
    } else {
        push(L, obj, 0);
    }
    lua_rawseti(L, c->table, ++c->n);
    return DE_OK;
}

static int l_yaml_decode(lua_State *L)
{
    size_t n;
    const char *s = luaL_checklstring(L, 1, &n);
    const char *name = luaL_optstring(L, 2, "<string>");
    lua_newtable(L);
    luactx c = {L, lua_gettop(L), 0, false};
    de_err e;
    de_err_clear(&e);
    if (de_yaml_each_doc(name, s, n, collect, &c, &e) != DE_OK)
        return raise_msg(L, e.msg);
    return 1;
}

static int l_yaml_encode(lua_State *L)
{
    luaL_checkany(L, 1);
    json_t *v = lb_to_json(L, 1);
    de_buf b;
    de_buf_init(&b, YAML_OUT_MAX);
    de_err e;
    de_err_clear(&e);
    de_rc rc = de_yaml_emit(v, &b, &e);
    json_decref(v);
    if (rc != DE_OK) {
        de_buf_free(&b);
        return raise_msg(L, e.msg);
    }
    lua_pushlstring(L, b.p ? b.p : "", b.len);
    de_buf_free(&b);
    return 1;
}

static int l_load_docs(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    lua_newtable(L);
    luactx c = {L, lua_gettop(L), 0, true};
    de_err e;
    de_err_clear(&e);
    if (de_doc_each(path, collect, &c, &e) != DE_OK)
        return raise_msg(L, e.msg);
    return 1;
}

/* load_text(text [, name]): the same for text in memory. */
static int l_load_text(lua_State *L)
{
    size_t n;
    const char *s = luaL_checklstring(L, 1, &n);
    const char *name = luaL_optstring(L, 2, "<string>");
    lua_newtable(L);
    luactx c = {L, lua_gettop(L), 0, true};
    de_err e;
    de_err_clear(&e);
    if (de_doc_each_text(name, s, n, collect, &c, &e) != DE_OK)
        return raise_msg(L, e.msg);
    return 1;
}

void lb_open_json(lua_State *L)
{
    static const luaL_Reg fns[] = {
        {"json_decode", l_json_decode},
        {"json_encode", l_json_encode},
        {"json_redump", l_json_redump},
        {"json_reload", l_json_reload},
        {"jalloc_stats", l_jalloc_stats},
        {"yaml_decode", l_yaml_decode},
        {"yaml_encode", l_yaml_encode},
        {"load_docs", l_load_docs},
        {"load_text", l_load_text},
        {NULL, NULL},
    };
    luaL_newmetatable(L, OBJ_MT);
    lb_set_str(L, "__jsontype", "object");
    lua_setfield(L, -2, "json_object_mt");
    luaL_newmetatable(L, ARR_MT);
    lb_set_str(L, "__jsontype", "array");
    lua_setfield(L, -2, "json_array_mt");
    lua_pushlightuserdata(L, NULL);
    lua_setfield(L, -2, "null");
    luaL_setfuncs(L, fns, 0);
}
