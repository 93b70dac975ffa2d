/*
 * lb_sched.c - scheduler pieces for specs: core.sched.node_fit and
 * core.sched.pod_requests, evaluated on a core.graph() ("draengine.Graph").
 *
 *   local fits, reasons, why = core.sched.node_fit(g, "ns", "pod", "node")
 *   local req = core.sched.pod_requests(g, "ns", "pod")   -- name -> milli-units
 */
#include "../engine/sched/sch.h"
#include "../engine/sched/sch_int.h"
#include "lb.h"

#include <stdlib.h>
#include <string.h>

static dg_graph *graph_arg(lua_State *L, int i)
{
    return lb_check_graph(L, i);
}

static uint32_t find_pod(lua_State *L, dg_graph *g, int i)
{
    de_interner *in = dg_intern(g);
    uint32_t pid = dg_pod_find(g, de_intern_cstr(in, luaL_checkstring(L, i)),
                               de_intern_cstr(in, luaL_checkstring(L, i + 1)));
    if (pid == DG_NONE)
        luaL_error(L, "no pod %s/%s", lua_tostring(L, i), lua_tostring(L, i + 1));
    return pid;
}

static int l_node_fit(lua_State *L)
{
    dg_graph *g = graph_arg(L, 1);
    uint32_t pid = find_pod(L, g, 2);
    uint32_t nid = dg_node_find(g, de_intern_cstr(dg_intern(g), luaL_checkstring(L, 4)));
    if (nid == DG_NONE)
        return luaL_error(L, "no node %s", lua_tostring(L, 4));
    de_err e;
    de_err_clear(&e);
    al_allocator *al = al_new(g, NULL, &e);
    if (!al)
        return luaL_error(L, "%s", e.msg);
    sch_sched *s = sch_new(g, al, NULL, NULL);
    char why[512];
    unsigned bits = sch_node_fit(s, pid, nid, why, sizeof why);
    sch_free(s);
    al_free(al);
    static const char *const names[] = {"unschedulable", "selector", "taint", "resources",
                                        "claim-node", "devices"};
    lua_pushboolean(L, bits == 0);
    lua_newtable(L);
    int n = 0;
    for (unsigned b = 0; b < DE_ARRAY_LEN(names); b++)
        if (bits & (1u << b)) {
            lua_pushstring(L, names[b]);
            lua_rawseti(L, -2, ++n);
        }
    lua_pushstring(L, why);
    return 3;
}

static int l_pod_requests(lua_State *L)
{
    dg_graph *g = graph_arg(L, 1);
    uint32_t pid = find_pod(L, g, 2);
    al_amount *a = NULL;
    uint32_t n = al_pod_requests(dg_pod_get(g, pid), &a);
    lua_newtable(L);
    for (uint32_t i = 0; i < n; i++) {
        lua_pushinteger(L, a[i].milli);
        lua_setfield(L, -2, de_intern_str(dg_intern(g), a[i].name));
    }
    free(a);
    return 1;
}

void lb_open_sched(lua_State *L)
{
    static const luaL_Reg fns[] = {
        {"node_fit", l_node_fit},
        {"pod_requests", l_pod_requests},
        {NULL, NULL},
    };
    lua_newtable(L);
    luaL_setfuncs(L, fns, 0);
    lua_setfield(L, -2, "sched");
}
