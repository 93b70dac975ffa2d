/*
 * lb.h - the draengine.core Lua module: the C engine bound for busted specs,
 * tools and the policy SDK.  One binding file per area (lb_<area>.c) exports
 * one opener that adds its functions and classes to the module table; core.c
 * calls every opener that is linked in.
 *
 * Conventions (liolib.c's class pattern): each class has a luaL_Reg method
 * table, a named metatable "draengine.<Class>" with __index, __tostring, and
 * __gc only where the object owns resources; every method starts with
 * luaL_checkudata.  Errors from the engine are raised as Lua errors whose
 * message is the de_err message (so specs can assert on the exact text).
 */
#ifndef LB_H
#define LB_H

#include "../engine/base/de.h"

#include <lauxlib.h>
#include <lua.h>

/* Openers: each receives the module table at the top of the stack and must
 * leave the stack as it found it. */
void lb_open_base(lua_State *L);    /* version, quantity, semver, gates */
void lb_open_graph(lua_State *L);   /* load manifests, nodes, pools, devices */
void lb_open_cel(lua_State *L);     /* compile / evaluate expressions */
void lb_open_alloc(lua_State *L);   /* allocate claims */
void lb_open_policy(lua_State *L);  /* policy host */
void lb_open_sim(lua_State *L);     /* simulated clusters, sysfs discovery */
void lb_open_sched(lua_State *L);   /* scheduler pieces */
void lb_open_kube(lua_State *L);    /* kube client pieces */

/* The dg_graph behind a core.graph() object at stack index idx (raises if it
 * is not a Graph or is closed).  Other bindings take graphs only through this. */
struct dg_graph;
struct dg_graph *lb_check_graph(lua_State *L, int idx);

/* Register class `name` (luaL_newmetatable, which also sets __name): the
 * `meta` metamethods, and the `methods` table as __index unless it is NULL.
 * Leaves the stack as it found it. */
void lb_class(lua_State *L, const char *name, const luaL_Reg *meta, const luaL_Reg *methods);

/* Field k of the table on top of the stack (a NULL string sets nil). */
static inline void lb_set_str(lua_State *L, const char *k, const char *v)
{
    lua_pushstring(L, v);
    lua_setfield(L, -2, k);
}

static inline void lb_set_int(lua_State *L, const char *k, lua_Integer v)
{
    lua_pushinteger(L, v);
    lua_setfield(L, -2, k);
}

static inline void lb_set_num(lua_State *L, const char *k, lua_Number v)
{
    lua_pushnumber(L, v);
    lua_setfield(L, -2, k);
}

static inline void lb_set_bool(lua_State *L, const char *k, bool v)
{
    lua_pushboolean(L, v);
    lua_setfield(L, -2, k);
}

/* Raise a Lua error carrying a de_err. */
int lb_raise(lua_State *L, const de_err *e);

#endif
