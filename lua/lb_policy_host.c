/*
 * lb_policy_host.c - core.policy_host(graph, dir, opts): the policy host on
 * a core.graph(), for the reload and graph specs (see lb_policy.c for the
 * list of methods).
 */
#include "../engine/policy/polgraph.h"
#include "lb.h"
#include "lb_policy.h"

#include <stdlib.h>
#include <string.h>

/* ---- hosts on a graph ---------------------------------------------------------- */

#define HOST_MT "draengine.PolicyHost"

typedef struct lhost {
    pol_host *h;
    dg_graph *g;
    logsink sink;
} lhost;

static dg_graph *graph_arg(lua_State *L, int idx)
{
    return lb_check_graph(L, idx);
}

static lhost *check_host(lua_State *L)
{
    lhost *u = luaL_checkudata(L, 1, HOST_MT);
    if (!u->h)
        luaL_error(L, "policy host is closed");
    return u;
}

pol_host *lb_policy_host_arg(lua_State *L, int idx)
{
    lhost *u = luaL_checkudata(L, idx, HOST_MT);
    if (!u->h)
        luaL_error(L, "policy host is closed");
    return u->h;
}

static int l_host(lua_State *L)
{
    dg_graph *g = graph_arg(L, 1);
    const char *dir = luaL_checkstring(L, 2);
    lhost *u = lua_newuserdatauv(L, sizeof *u, 1);
    memset(u, 0, sizeof *u);
    u->sink.tail = &u->sink.logs;
    luaL_setmetatable(L, HOST_MT);
    lua_pushvalue(L, 1);
    lua_setiuservalue(L, -2, 1); /* keep the graph alive */
    pol_host_opts o;
    pol_host_opts_default(&o);
    lb_policy_read_opts(L, 3, &o.cfg);
    o.watch = false;
    o.rescan_ns = 0;
    if (lua_istable(L, 3)) {
        lua_getfield(L, 3, "watch");
        o.watch = lua_toboolean(L, -1);
        lua_getfield(L, 3, "debounce_ms");
        if (lua_isnumber(L, -1))
            o.debounce_ns = (uint64_t)(lua_tonumber(L, -1) * 1e6);
        lua_getfield(L, 3, "rescan_ms");
        if (lua_isnumber(L, -1))
            o.rescan_ns = (uint64_t)(lua_tonumber(L, -1) * 1e6);
        lua_getfield(L, 3, "slice_ms");
        if (lua_isnumber(L, -1))
            o.prepare_slice_ns = (uint64_t)(lua_tonumber(L, -1) * 1e6);
        lua_getfield(L, 3, "strict");
        if (lua_isboolean(L, -1))
            o.strict_reload = lua_toboolean(L, -1);
        lua_getfield(L, 3, "run_specs");
        o.cfg.run_specs = lua_toboolean(L, -1);
        lua_pop(L, 6);
    }
    o.cfg.log = lb_policy_collect_log;
    o.cfg.log_ctx = &u->sink;
    de_err e;
    de_err_clear(&e);
    if (pol_host_new(dir, g, &o, &u->h, &e) != DE_OK)
        lb_raise(L, &e);
    u->g = g;
    return 1;
}

static int host_close(lua_State *L)
{
    lhost *u = luaL_checkudata(L, 1, HOST_MT);
    if (u->h)
        pol_host_free(u->h);
    u->h = NULL;
    lb_policy_free_logs(&u->sink);
    return 0;
}

static int host_revision(lua_State *L)
{
    lua_pushstring(L, pol_set_revision(pol_host_active(check_host(L)->h)));
    return 1;
}

static int host_count(lua_State *L)
{
    lua_pushinteger(L, pol_set_count(pol_host_active(check_host(L)->h)));
    return 1;
}

static int host_logs(lua_State *L)
{
    lhost *u = check_host(L);
    lua_newtable(L);
    int n = 0;
    for (logline *l = u->sink.logs; l; l = l->next) {
        lua_pushstring(L, l->text);
        lua_rawseti(L, -2, ++n);
    }
    lb_policy_free_logs(&u->sink);
    return 1;
}

static void push_cycle(lua_State *L, const pol_cycle *c)
{
    lua_createtable(L, 0, 8);
    lb_set_bool(L, "swapped", c->swapped);
    lb_set_bool(L, "failed", c->failed);
    lb_set_bool(L, "preparing", c->preparing);
    lb_set_int(L, "devices_updated", c->devices_updated);
    lb_set_num(L, "prepare_ms", (double)c->prepare_ns / 1e6);
    lb_set_num(L, "swap_ms", (double)c->swap_ns / 1e6);
    lb_set_int(L, "swap_changed", c->swap_changed);
    if (c->failed) {
        lb_set_str(L, "error", c->err.msg);
        lb_set_str(L, "file", c->err.file);
        lb_set_int(L, "line", c->err.line);
    }
}

static int host_cycle(lua_State *L)
{
    lhost *u = check_host(L);
    pol_cycle c;
    pol_host_cycle(u->h, &c);
    push_cycle(L, &c);
    return 1;
}

static int host_reload(lua_State *L)
{
    lhost *u = check_host(L);
    pol_cycle c;
    pol_host_reload_now(u->h, &c);
    push_cycle(L, &c);
    return 1;
}

static int host_request(lua_State *L)
{
    pol_host_request_reload(check_host(L)->h);
    return 0;
}

static int host_stats(lua_State *L)
{
    lhost *u = check_host(L);
    pol_host_stats st;
    pol_host_get_stats(u->h, &st);
    lua_createtable(L, 0, 5);
    lb_set_int(L, "reloads_ok", (lua_Integer)st.reloads_ok);
    lb_set_int(L, "reloads_failed", (lua_Integer)st.reloads_failed);
    lb_set_int(L, "swaps", (lua_Integer)st.swaps);
    lb_set_str(L, "revision", st.revision);
    lb_set_str(L, "last_error", st.last_error);
    pol_stats ps;
    pol_set_stats(pol_host_active(u->h), &ps);
    lb_set_int(L, "score_calls", (lua_Integer)ps.calls[2]);
    lb_set_int(L, "score_memo_hits", (lua_Integer)ps.score_memo_hits);
    lb_set_int(L, "derive_memo_hits", (lua_Integer)ps.derive_memo_hits);
    return 1;
}

static int host_groups(lua_State *L)
{
    lhost *u = check_host(L);
    de_interner *in = dg_intern(u->g);
    uint32_t id = dg_device_find(u->g, de_intern_cstr(in, luaL_checkstring(L, 2)), de_intern_cstr(in, luaL_checkstring(L, 3)),
                                 de_intern_cstr(in, luaL_checkstring(L, 4)));
    al_hooks hk;
    pol_host_al_hooks(u->h, &hk);
    if (id == DG_NONE || !hk.groups) {
        lua_pushnil(L);
        return 1;
    }
    al_groups gr;
    hk.groups(hk.ctx, u->g, id, &gr);
    if (!gr.scope) {
        lua_pushnil(L);
        return 1;
    }
    lua_createtable(L, 0, 2);
    lb_set_str(L, "scope", de_intern_str(in, gr.scope));
    lua_createtable(L, (int)gr.ngroups, 0);
    for (uint32_t i = 0; i < gr.ngroups; i++) {
        lua_pushstring(L, de_intern_str(in, gr.groups[i]));
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    lua_setfield(L, -2, "groups");
    return 1;
}

static int host_admit(lua_State *L)
{
    lhost *u = check_host(L);
    de_interner *in = dg_intern(u->g);
    uint32_t clid = dg_claim_find(u->g, de_intern_cstr(in, luaL_checkstring(L, 2)), de_intern_cstr(in, luaL_checkstring(L, 3)));
    if (clid == DG_NONE)
        return luaL_error(L, "no such claim");
    al_hooks hk;
    pol_host_al_hooks(u->h, &hk);
    if (!hk.admit) {
        lua_pushboolean(L, 1);
        return 1;
    }
    de_err why;
    de_err_clear(&why);
    de_rc rc = hk.admit(hk.ctx, u->g, clid, &why);
    lua_pushboolean(L, rc == DE_OK);
    if (rc == DE_OK)
        return 1;
    lua_pushstring(L, why.msg);
    return 2;
}

static int l_install_sighup(lua_State *L)
{
    (void)L;
    pol_host_install_sighup();
    return 0;
}

static int l_dir_hash(lua_State *L)
{
    char hex[65];
    pol_dir_hash(luaL_checkstring(L, 1), hex);
    lua_pushstring(L, hex);
    return 1;
}

void lb_policy_open_host(lua_State *L)
{
    static const luaL_Reg host_methods[] = {
        {"revision", host_revision}, {"count", host_count},   {"logs", host_logs},
        {"cycle", host_cycle},       {"reload", host_reload}, {"request_reload", host_request},
        {"stats", host_stats},       {"groups", host_groups}, {"admit", host_admit},
        {"close", host_close},       {NULL, NULL},
    };
    luaL_newmetatable(L, HOST_MT);
    lua_newtable(L);
    luaL_setfuncs(L, host_methods, 0);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, host_close);
    lua_setfield(L, -2, "__gc");
    lua_pop(L, 1);

    static const luaL_Reg fns[] = {
        {"policy_host", l_host},
        {"policy_dir_hash", l_dir_hash},
        {"policy_install_sighup", l_install_sighup},
        {NULL, NULL},
    };
    luaL_setfuncs(L, fns, 0);
}
