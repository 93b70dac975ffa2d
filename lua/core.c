/*
 * core.c - luaopen_draengine_core: builds the module table from the area
 * openers (lb_<area>.c), and the helpers every binding shares.
 */
#include "lb.h"

#include "../engine/base/jalloc.h"

int lb_raise(lua_State *L, const de_err *e)
{
    return luaL_error(L, "%s", e && e->msg[0] ? e->msg : de_rc_str(e ? e->rc : DE_EINTERNAL));
}

void lb_class(lua_State *L, const char *name, const luaL_Reg *meta, const luaL_Reg *methods)
{
    luaL_newmetatable(L, name);
    if (meta)
        luaL_setfuncs(L, meta, 0);
    if (methods) {
        lua_newtable(L);
        luaL_setfuncs(L, methods, 0);
        lua_setfield(L, -2, "__index");
    }
    lua_pop(L, 1);
}

int luaopen_draengine_core(lua_State *L);

int luaopen_draengine_core(lua_State *L)
{
    void (*const openers[])(lua_State *) = {
        lb_open_base, lb_open_graph, lb_open_cel,   lb_open_alloc,
        lb_open_policy, lb_open_sim, lb_open_sched, lb_open_kube,
    };
    de_jalloc_install(); /* before the first tree: see jalloc.h */
    lua_newtable(L);
    for (size_t i = 0; i < sizeof openers / sizeof openers[0]; i++)
        openers[i](L);
    return 1;
}
