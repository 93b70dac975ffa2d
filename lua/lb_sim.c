/*
 * lb_sim.c - the simulator and sysfs discovery in draengine.core:
 *
 *   core.sim_shapes()          -> { {name=, summary=, gpus=, ...}, ... }
 *   core.sim{seed=, nodes=, shapes="dgx-h100:2,...", classes=true, node_objects=true}
 *                              -> array of objects as Lua tables
 *   core.sim_text{...}         -> the objects as one JSON v1 List text (byte-stable)
 *   core.sysfs{driver=, node=, root=, class_prefixes={"0x03", ...}}
 *                              -> array of ResourceSlice tables
 *   core.watch(...)            -> the manifest watcher (lb_file.c)
 *
 * Objects come back through lb_json (tables with the JSON marker
 * metatables).  core.sim_text gives a v1 List, so it loads with g:apply.
 */
#include "../drivers/sim/sim.h"
#include "../drivers/sysfs/sfs.h"
#include "lb.h"
#include "lb_json.h"

#include <stdlib.h>
#include <string.h>

static void opt_field(lua_State *L, int t, const char *k)
{
    lua_getfield(L, t, k);
}

static sim_cluster *check_sim(lua_State *L, int t)
{
    sim_opts o = {.seed = 1};
    luaL_checktype(L, t, LUA_TTABLE);
    opt_field(L, t, "seed");
    if (!lua_isnil(L, -1))
        o.seed = (uint64_t)luaL_checkinteger(L, -1);
    lua_pop(L, 1);
    opt_field(L, t, "nodes");
    if (!lua_isnil(L, -1)) {
        lua_Integer n = luaL_checkinteger(L, -1);
        if (n < 1 || n > (lua_Integer)SIM_MAX_NODES)
            luaL_error(L, "nodes must be in 1..%d", (int)SIM_MAX_NODES);
        o.nodes = (uint32_t)n;
    }
    lua_pop(L, 1);
    opt_field(L, t, "classes");
    if (lua_isboolean(L, -1) && !lua_toboolean(L, -1))
        o.no_classes = true;
    lua_pop(L, 1);
    opt_field(L, t, "node_objects");
    if (lua_isboolean(L, -1) && !lua_toboolean(L, -1))
        o.no_nodes = true;
    lua_pop(L, 1);
    opt_field(L, t, "shapes");
    o.mix = lua_isnil(L, -1) ? NULL : luaL_checkstring(L, -1);
    de_err e;
    de_err_clear(&e);
    sim_cluster *c = sim_new(&o, &e);
    lua_pop(L, 1);
    if (!c)
        lb_raise(L, &e);
    return c;
}

typedef struct collect {
    json_t *arr;
} collect;

static de_rc collect_cb(void *ctx, json_t *obj, de_err *e)
{
    (void)e;
    collect *c = ctx;
    json_array_append(c->arr, obj);
    return DE_OK;
}

static json_t *generate(lua_State *L)
{
    sim_cluster *c = check_sim(L, 1);
    collect col = {json_array()};
    de_err e;
    de_err_clear(&e);
    de_rc rc = sim_emit_all(c, collect_cb, &col, &e);
    sim_free(c);
    if (rc != DE_OK) {
        json_decref(col.arr);
        lb_raise(L, &e);
    }
    return col.arr;
}

static int l_sim(lua_State *L)
{
    json_t *arr = generate(L);
    lb_push_json(L, arr);
    json_decref(arr);
    return 1;
}

static int l_sim_text(lua_State *L)
{
    json_t *arr = generate(L);
    json_t *list = json_pack("{s:s, s:s, s:o}", "apiVersion", "v1", "kind", "List", "items", arr);
    char *s = list ? json_dumps(list, JSON_SORT_KEYS | JSON_COMPACT) : NULL;
    json_decref(list);
    if (!s)
        return luaL_error(L, "cannot serialize");
    lua_pushstring(L, s);
    free(s);
    return 1;
}

static int l_sim_shapes(lua_State *L)
{
    lua_createtable(L, (int)sim_shape_count(), 0);
    for (size_t i = 0; i < sim_shape_count(); i++) {
        const sim_shape_info *s = sim_shape_at(i);
        lua_createtable(L, 0, 10);
        lb_set_str(L, "name", s->name);
        lb_set_str(L, "summary", s->summary);
        lb_set_str(L, "instance_type", s->instance_type);
        lb_set_str(L, "vendor", s->vendor);
        lb_set_str(L, "accelerator", s->accelerator);
        lb_set_int(L, "gpus", s->gpus);
        lb_set_int(L, "nics", s->nics);
        lb_set_int(L, "numa_nodes", s->numa_nodes);
        lb_set_int(L, "cpus", s->cpus);
        lb_set_bool(L, "mig", s->mig);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    return 1;
}

static int l_sysfs(lua_State *L)
{
    sfs_opts o = {0};
    const char *prefixes[SFS_MAX_CLASS_PREFIXES];
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_getfield(L, 1, "driver");
    o.driver = luaL_checkstring(L, -1);
    lua_getfield(L, 1, "node");
    o.node = luaL_optstring(L, -1, NULL);
    lua_getfield(L, 1, "root");
    o.root = luaL_optstring(L, -1, NULL);
    lua_getfield(L, 1, "class_prefixes");
    if (!lua_isnil(L, -1)) {
        luaL_checktype(L, -1, LUA_TTABLE);
        lua_Integer n = luaL_len(L, -1);
        if (n > SFS_MAX_CLASS_PREFIXES)
            return luaL_error(L, "at most %d class prefixes", SFS_MAX_CLASS_PREFIXES);
        for (lua_Integer i = 1; i <= n; i++) {
            lua_rawgeti(L, -1, i);
            prefixes[i - 1] = luaL_checkstring(L, -1);
            lua_pop(L, 1); /* the string stays alive: it is anchored in the table */
        }
        o.class_prefixes = prefixes;
        o.nclass_prefixes = (size_t)n;
    }
    de_err e;
    de_err_clear(&e);
    collect col = {json_array()};
    de_rc rc = sfs_discover(&o, collect_cb, &col, &e);
    if (rc != DE_OK) {
        json_decref(col.arr);
        return lb_raise(L, &e);
    }
    lb_push_json(L, col.arr);
    json_decref(col.arr);
    return 1;
}

void lb_open_file(lua_State *L); /* lb_file.c: the manifest watcher */

void lb_open_sim(lua_State *L)
{
    lb_open_file(L);
    static const luaL_Reg fns[] = {
        {"sim", l_sim},
        {"sim_text", l_sim_text},
        {"sim_shapes", l_sim_shapes},
        {"sysfs", l_sysfs},
        {NULL, NULL},
    };
    luaL_setfuncs(L, fns, 0);
}
