/*
 * lb_base.c - version, feature gates.  (Quantity, semver and JSON helpers are
 * added by lb_numeric.c and lb_json.c through lb_open_numeric.)
 */
#include "../engine/base/gates.h"
#include "lb.h"

void lb_open_numeric(lua_State *L); /* lb_numeric.c */

static int l_version(lua_State *L)
{
    lua_pushstring(L, "0.1.0");
    return 1;
}

/* gates("A=true,B=false") -> table name -> bool, with 1.37 defaults */
static int l_gates(lua_State *L)
{
    const char *spec = luaL_optstring(L, 1, "");
    de_gates g;
    de_err e;
    de_err_clear(&e);
    de_gates_default(&g);
    if (de_gates_parse(&g, spec, &e) != DE_OK)
        return lb_raise(L, &e);
    lua_newtable(L);
    for (int i = 0; i < DE_GATE_COUNT; i++) {
        lua_pushboolean(L, g.on[i]);
        lua_setfield(L, -2, de_gate_name((de_gate)i));
    }
    return 1;
}

void lb_open_base(lua_State *L)
{
    static const luaL_Reg fns[] = {
        {"version", l_version},
        {"gates", l_gates},
        {NULL, NULL},
    };
    luaL_setfuncs(L, fns, 0);
    lb_open_numeric(L);
}
