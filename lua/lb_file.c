/*
 * lb_file.c - the manifest watcher (drivers/file) in draengine.core:
 *
 *   local w = core.watch({ "dir", "file.yaml" }, { watch = true, debounce_ms = 50 })
 *   w:scan()          -> events since the last scan (the first: every object as "add")
 *   w:poll(ms)        -> wait up to ms for file changes, then debounce and scan
 *   w:sync(graph, ms) -> poll, and apply the events to a core.graph (fd_apply_event);
 *                        returns the events, each with `applied` or `error` set
 *   w:count()         -> objects, files
 *   w:watching()      -> true when inotify is in use
 *   w:close()
 *
 * An event is { op = "add"|"update"|"delete"|"error", kind =, api_version =,
 * namespace =, name =, object = (the object, or the last one for "delete"),
 * file =, doc =, message = (errors) }.
 */
#include "../drivers/file/fd.h"
#include "lb.h"
#include "lb_json.h"

#include <string.h>

#define WATCH_CLASS "draengine.Watch"

void lb_open_file(lua_State *L);

typedef struct lwatch {
    fd_watch *w;
} lwatch;

static fd_watch *check_watch(lua_State *L)
{
    lwatch *u = luaL_checkudata(L, 1, WATCH_CLASS);
    if (!u->w)
        luaL_error(L, "watch is closed");
    return u->w;
}

static int l_watch(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_Integer n = luaL_len(L, 1);
    if (n < 1 || n > 64)
        return luaL_error(L, "watch takes 1 to 64 paths");
    const char *paths[64];
    for (lua_Integer i = 1; i <= n; i++) {
        lua_rawgeti(L, 1, i);
        paths[i - 1] = luaL_checkstring(L, -1);
        lua_pop(L, 1); /* anchored in the table */
    }
    fd_opts o = {0};
    if (lua_istable(L, 2)) {
        lua_getfield(L, 2, "watch");
        o.watch = lua_toboolean(L, -1);
        lua_getfield(L, 2, "debounce_ms");
        o.debounce_ms = (uint32_t)luaL_optinteger(L, -1, 0);
        lua_getfield(L, 2, "max_delay_ms");
        o.max_delay_ms = (uint32_t)luaL_optinteger(L, -1, 0);
        lua_pop(L, 3);
    }
    lwatch *u = lua_newuserdatauv(L, sizeof *u, 0);
    u->w = NULL;
    luaL_setmetatable(L, WATCH_CLASS);
    de_err e;
    de_err_clear(&e);
    u->w = fd_open(paths, (size_t)n, &o, &e);
    if (!u->w)
        return lb_raise(L, &e);
    return 1;
}

static const char *op_name(fd_op op)
{
    static const char *const n[] = {"add", "update", "delete", "error"};
    return op <= FD_ERROR ? n[op] : "?";
}

/* Collects events as Lua tables in the table at stack index `t`. */
typedef struct collect {
    lua_State *L;
    int t;
    lua_Integer n;
} collect;

static void set_s(lua_State *L, const char *k, const char *v)
{
    lua_pushstring(L, v ? v : "");
    lua_setfield(L, -2, k);
}

static void on_event(void *ctx, const fd_event *ev)
{
    collect *c = ctx;
    lua_State *L = c->L;
    luaL_checkstack(L, 8, "events");
    lua_createtable(L, 0, 10);
    set_s(L, "op", op_name(ev->op));
    set_s(L, "api_version", ev->api_version);
    set_s(L, "kind", ev->kind);
    set_s(L, "namespace", ev->ns);
    set_s(L, "name", ev->name);
    if (ev->origin) {
        set_s(L, "file", ev->origin->file);
        lb_set_int(L, "doc", ev->origin->doc);
    }
    if (ev->obj) {
        lb_push_json(L, ev->obj);
        lua_setfield(L, -2, "object");
    }
    if (ev->err) {
        set_s(L, "message", ev->err->msg);
    }
    lua_rawseti(L, c->t, ++c->n);
}

static int do_poll(lua_State *L, fd_watch *w, bool scan, lua_Integer ms)
{
    lua_newtable(L);
    collect c = {L, lua_gettop(L), 0};
    de_err e;
    de_err_clear(&e);
    uint32_t n;
    de_rc rc = scan ? fd_scan(w, on_event, &c, &n, &e) : fd_poll(w, (int)ms, on_event, &c, &n, &e);
    if (rc != DE_OK)
        return lb_raise(L, &e);
    return 1;
}

static int l_scan(lua_State *L) { return do_poll(L, check_watch(L), true, 0); }

static int l_poll(lua_State *L)
{
    fd_watch *w = check_watch(L);
    return do_poll(L, w, false, luaL_optinteger(L, 2, 0));
}

/* poll, then apply each event to the graph with fd_apply_event (the same
 * path the engine's loops use). */
typedef struct sync_ctx {
    collect c;
    dg_graph *g;
} sync_ctx;

static void on_sync_event(void *ctx, const fd_event *ev)
{
    sync_ctx *s = ctx;
    on_event(&s->c, ev);
    if (ev->op == FD_ERROR)
        return;
    lua_State *L = s->c.L;
    de_err e;
    de_err_clear(&e);
    lua_rawgeti(L, s->c.t, s->c.n);
    if (fd_apply_event(s->g, ev, &e) == DE_OK) {
        lb_set_bool(L, "applied", 1);
    } else {
        lb_set_str(L, "error", e.msg);
    }
    lua_pop(L, 1);
}

static int l_sync(lua_State *L)
{
    fd_watch *w = check_watch(L);
    dg_graph *g = lb_check_graph(L, 2);
    lua_Integer ms = luaL_optinteger(L, 3, 0);
    lua_newtable(L);
    sync_ctx s = {{L, lua_gettop(L), 0}, g};
    de_err e;
    de_err_clear(&e);
    uint32_t n;
    if (fd_poll(w, (int)ms, on_sync_event, &s, &n, &e) != DE_OK)
        return lb_raise(L, &e);
    return 1;
}

static int l_count(lua_State *L)
{
    fd_watch *w = check_watch(L);
    lua_pushinteger(L, fd_object_count(w));
    lua_pushinteger(L, fd_file_count(w));
    return 2;
}

static int l_watching(lua_State *L)
{
    lua_pushboolean(L, fd_watching(check_watch(L)));
    return 1;
}

static int l_close(lua_State *L)
{
    lwatch *u = luaL_checkudata(L, 1, WATCH_CLASS);
    fd_close(u->w);
    u->w = NULL;
    return 0;
}

static int l_tostring(lua_State *L)
{
    lwatch *u = luaL_checkudata(L, 1, WATCH_CLASS);
    if (!u->w)
        lua_pushstring(L, "draengine.Watch (closed)");
    else
        lua_pushfstring(L, "draengine.Watch (%d objects in %d files)", (int)fd_object_count(u->w),
                        (int)fd_file_count(u->w));
    return 1;
}

void lb_open_file(lua_State *L)
{
    static const luaL_Reg methods[] = {
        {"scan", l_scan},   {"poll", l_poll},         {"sync", l_sync}, {"count", l_count},
        {"watching", l_watching}, {"close", l_close}, {NULL, NULL},
    };
    static const luaL_Reg meta[] = {
        {"__gc", l_close},
        {"__close", l_close},
        {"__tostring", l_tostring},
        {NULL, NULL},
    };
    lb_class(L, WATCH_CLASS, meta, methods);
    lua_pushcfunction(L, l_watch);
    lua_setfield(L, -2, "watch");
}
