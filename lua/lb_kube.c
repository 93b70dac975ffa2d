/*
 * lb_kube.c - the kube driver for specs and tools: core.kube.{config,
 * client, backoff, parse_time, format_time}.  JSON bodies cross as Lua
 * values through lb_json.h (core.null is JSON null).
 *
 *   local cfg = core.kube.config{kubeconfig = path, context = "cert"}
 *   local cl = core.kube.client(cfg, {qps = 1000, burst = 1000, header = "X-Test-Bypass: 1"})
 *   local status, body, err = cl:request("GET", "/api/v1/pods")
 *   local inf = cl:informer{resources = {"pods", "nodes"}, seed = 7}
 *   for _, ev in ipairs(inf:poll(100)) do ... end   -- {type, resource, namespace, name, rv}
 *   local lease = cl:lease{name = "x", identity = "a", lease_ms = 1500, ...}
 *
 * Tokens never cross into Lua: a Config offers describe() and redact().
 */
#include "../drivers/kube/kc.h"
#include "lb.h"
#include "lb_json.h"

#include <string.h>

#define MT_CONFIG "draengine.KubeConfig"
#define MT_CLIENT "draengine.KubeClient"
#define MT_INFORMER "draengine.KubeInformer"
#define MT_LEASE "draengine.KubeLease"

/* ---- Config ------------------------------------------------------------------ */

typedef struct lconfig {
    kc_config *c;
} lconfig;

static const char *optfield(lua_State *L, int t, const char *k)
{
    lua_getfield(L, t, k);
    const char *v = lua_isnil(L, -1) ? NULL : luaL_checkstring(L, -1);
    lua_pop(L, 1);
    return v; /* stays alive: owned by the table argument */
}

static lua_Integer optint(lua_State *L, int t, const char *k, lua_Integer dflt)
{
    lua_getfield(L, t, k);
    lua_Integer v = luaL_optinteger(L, -1, dflt);
    lua_pop(L, 1);
    return v;
}

static int l_config(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    kc_config_opts o = {0};
    o.kubeconfig = optfield(L, 1, "kubeconfig");
    o.context = optfield(L, 1, "context");
    o.master = optfield(L, 1, "master");
    o.env_kubeconfig = optfield(L, 1, "env_kubeconfig");
    o.home = optfield(L, 1, "home");
    o.sa_dir = optfield(L, 1, "sa_dir");
    o.env_host = optfield(L, 1, "env_host");
    o.env_port = optfield(L, 1, "env_port");
    lua_getfield(L, 1, "no_in_cluster");
    o.no_in_cluster = lua_toboolean(L, -1);
    lua_pop(L, 1);
    lconfig *u = lua_newuserdatauv(L, sizeof *u, 0);
    u->c = NULL;
    luaL_setmetatable(L, MT_CONFIG);
    de_err e;
    de_err_clear(&e);
    if (kc_config_load(&o, &u->c, &e) != DE_OK)
        return lb_raise(L, &e);
    lua_getfield(L, 1, "token_period_ms");
    if (!lua_isnil(L, -1))
        kc_config_set_token_period(u->c, (uint64_t)luaL_checkinteger(L, -1) * 1000000ull);
    lua_pop(L, 1);
    return 1;
}

static lconfig *chkcfg(lua_State *L, int i)
{
    lconfig *u = luaL_checkudata(L, i, MT_CONFIG);
    if (!u->c)
        luaL_error(L, "kube config is closed");
    return u;
}

static int cfg_gc(lua_State *L)
{
    lconfig *u = luaL_checkudata(L, 1, MT_CONFIG);
    kc_config_free(u->c);
    u->c = NULL;
    return 0;
}

static int cfg_server(lua_State *L) { lua_pushstring(L, kc_config_server(chkcfg(L, 1)->c)); return 1; }
static int cfg_source(lua_State *L) { lua_pushstring(L, kc_config_source(chkcfg(L, 1)->c)); return 1; }
static int cfg_context(lua_State *L) { lua_pushstring(L, kc_config_context(chkcfg(L, 1)->c)); return 1; }
static int cfg_namespace(lua_State *L) { lua_pushstring(L, kc_config_namespace(chkcfg(L, 1)->c)); return 1; }

static int cfg_describe(lua_State *L)
{
    de_buf b;
    de_buf_init(&b, 16384);
    kc_config_describe(chkcfg(L, 1)->c, &b);
    lua_pushstring(L, de_buf_str(&b));
    de_buf_free(&b);
    return 1;
}

static int cfg_redact(lua_State *L)
{
    lconfig *u = chkcfg(L, 1);
    size_t n;
    const char *s = luaL_checklstring(L, 2, &n);
    char *t = de_xstrndup(s, n);
    kc_redact(u->c, t);
    lua_pushstring(L, t);
    free(t);
    return 1;
}

/* Re-read a file token now (as after a 401); returns whether a token is set
 * and its length, never the token. */
static int cfg_reload_token(lua_State *L)
{
    const char *t = kc_config_token(chkcfg(L, 1)->c, true);
    lua_pushinteger(L, (lua_Integer)strlen(t));
    return 1;
}

/* Why the last token-file re-read was refused ("" if it was not), and how
 * many re-reads were refused so far. */
static int cfg_token_problem(lua_State *L)
{
    unsigned seq = 0;
    lua_pushstring(L, kc_config_token_problem(chkcfg(L, 1)->c, &seq));
    lua_pushinteger(L, (lua_Integer)seq);
    return 2;
}

static int cfg_tostring(lua_State *L)
{
    lua_pushfstring(L, "KubeConfig(%s)", kc_config_server(chkcfg(L, 1)->c));
    return 1;
}

/* ---- Client ------------------------------------------------------------------- */

/* Failure reports are kept (up to REPORTS_MAX, oldest dropped) until
 * reports() hands them to Lua: the callback may run inside a poll. */
#define REPORTS_MAX 1000

typedef struct lreport {
    char resource[48], verb[12], reason[48], message[512];
    long code;
    uint64_t suppressed;
} lreport;

typedef struct lclient {
    kc_client *cl;
    lreport *rep;
    size_t nrep;
    uint64_t dropped;
} lclient;

static void on_failure(void *ctx, const kc_failure *f)
{
    lclient *u = ctx;
    if (u->nrep == REPORTS_MAX) {
        memmove(u->rep, u->rep + 1, (REPORTS_MAX - 1) * sizeof *u->rep);
        u->nrep--;
        u->dropped++;
    }
    lreport *r = &u->rep[u->nrep++];
    snprintf(r->resource, sizeof r->resource, "%s", f->resource);
    snprintf(r->verb, sizeof r->verb, "%s", f->verb);
    snprintf(r->reason, sizeof r->reason, "%s", f->reason);
    snprintf(r->message, sizeof r->message, "%s", f->message);
    r->code = f->code;
    r->suppressed = f->suppressed;
}

static lclient *chkcl(lua_State *L, int i)
{
    lclient *u = luaL_checkudata(L, i, MT_CLIENT);
    if (!u->cl)
        luaL_error(L, "kube client is closed");
    return u;
}

static int l_client(lua_State *L)
{
    lconfig *c = chkcfg(L, 1);
    kc_client_opts o = {0};
    const char *hdr = NULL;
    if (lua_istable(L, 2)) {
        lua_getfield(L, 2, "qps");
        o.qps = luaL_optnumber(L, -1, 0);
        lua_pop(L, 1);
        o.burst = (int)optint(L, 2, "burst", 0);
        o.max_retries = (int)optint(L, 2, "max_retries", 0);
        o.timeout_ms = (long)optint(L, 2, "timeout_ms", 0);
        o.report_interval_ms = (long)optint(L, 2, "report_interval_ms", 0);
        hdr = optfield(L, 2, "header");
        lua_getfield(L, 2, "http2");
        o.http2 = lua_toboolean(L, -1);
        lua_pop(L, 1);
    }
    lclient *u = lua_newuserdatauv(L, sizeof *u, 1);
    u->rep = NULL;
    u->nrep = 0;
    u->dropped = 0;
    u->cl = kc_client_new(c->c, &o);
    u->rep = de_xmalloc(REPORTS_MAX * sizeof *u->rep);
    kc_client_set_failure_fn(u->cl, on_failure, u);
    if (hdr)
        kc_client_set_header(u->cl, hdr);
    luaL_setmetatable(L, MT_CLIENT);
    lua_pushvalue(L, 1); /* keep the config alive */
    lua_setiuservalue(L, -2, 1);
    return 1;
}

static int cl_gc(lua_State *L)
{
    lclient *u = luaL_checkudata(L, 1, MT_CLIENT);
    kc_client_free(u->cl);
    u->cl = NULL;
    free(u->rep);
    u->rep = NULL;
    return 0;
}

/* request(method, path [, body (table or string)] [, content_type]) ->
 *   status, decoded body or nil, error message or nil */
static int cl_request(lua_State *L)
{
    lclient *u = chkcl(L, 1);
    const char *method = luaL_checkstring(L, 2);
    const char *path = luaL_checkstring(L, 3);
    json_t *body = NULL;
    if (lua_type(L, 4) == LUA_TSTRING) {
        size_t n;
        const char *s = lua_tolstring(L, 4, &n);
        json_error_t je;
        body = json_loadb(s, n, 0, &je);
        if (!body)
            return luaL_error(L, "request body: %s", je.text);
    } else if (lua_istable(L, 4)) {
        body = lb_to_json(L, 4);
    }
    const char *ct = luaL_optstring(L, 5, NULL);
    long status = 0;
    json_t *out = NULL;
    de_err e;
    de_err_clear(&e);
    de_rc rc = kc_request(u->cl, method, path, body, ct, &status, &out, &e);
    json_decref(body);
    lua_pushinteger(L, status);
    if (out)
        lb_push_json(L, out);
    else
        lua_pushnil(L);
    json_decref(out);
    if (rc != DE_OK)
        lua_pushstring(L, e.msg);
    else
        lua_pushnil(L);
    return 3;
}

/* cl:request_peek(method, path, body) -> {namespace, name, resourceVersion}
 * of the answer's object (kc_request_peek), or nil, message */
static int cl_request_peek(lua_State *L)
{
    lclient *u = chkcl(L, 1);
    const char *method = luaL_checkstring(L, 2);
    const char *path = luaL_checkstring(L, 3);
    json_t *body = lua_istable(L, 4) ? lb_to_json(L, 4) : NULL;
    kc_peek pk;
    de_err e;
    de_err_clear(&e);
    de_rc rc = kc_request_peek(u->cl, method, path, body, NULL, &pk, &e);
    json_decref(body);
    if (rc != DE_OK) {
        lua_pushnil(L);
        lua_pushstring(L, e.msg);
        return 2;
    }
    lua_newtable(L);
    lb_set_str(L, "namespace", pk.ns);
    lb_set_str(L, "name", pk.name);
    lb_set_str(L, "resourceVersion", pk.rv);
    return 1;
}

static int cl_stats(lua_State *L)
{
    kc_stats s;
    kc_client_stats(chkcl(L, 1)->cl, &s);
    lua_newtable(L);
#define F(name) (lua_pushinteger(L, (lua_Integer)s.name), lua_setfield(L, -2, #name))
    F(requests);
    F(conflicts);
    F(throttled);
    F(unauthorized);
    F(retries);
    F(watch_restarts);
    F(relists);
#undef F
    lb_set_int(L, "rate_limited_ms", (lua_Integer)(s.rate_limited_ns / 1000000ull));
    lb_set_int(L, "transport_errors", (lua_Integer)s.by_code[0]);
    lb_set_int(L, "server_errors", (lua_Integer)s.by_code[5]);
    return 1;
}

/* failures() -> {{resource, verb, code, reason, count}...} (every failure
 * counted, in order of first occurrence), reports held back in total */
static int cl_failures(lua_State *L)
{
    lclient *u = chkcl(L, 1);
    lua_newtable(L);
    kc_fail_count f;
    for (size_t i = 0; kc_client_failure(u->cl, i, &f); i++) {
        lua_createtable(L, 0, 5);
        lb_set_str(L, "resource", f.resource);
        lb_set_str(L, "verb", f.verb);
        lb_set_str(L, "code", f.code);
        lb_set_str(L, "reason", f.reason);
        lb_set_int(L, "count", (lua_Integer)f.count);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    lua_pushinteger(L, (lua_Integer)kc_client_failures_suppressed(u->cl));
    return 2;
}

/* reports() -> the failure reports since the last call (what serve logs) */
static int cl_reports(lua_State *L)
{
    lclient *u = chkcl(L, 1);
    lua_createtable(L, (int)u->nrep, 0);
    for (size_t i = 0; i < u->nrep; i++) {
        const lreport *r = &u->rep[i];
        lua_createtable(L, 0, 6);
        lb_set_str(L, "resource", r->resource);
        lb_set_str(L, "verb", r->verb);
        lb_set_int(L, "code", r->code);
        lb_set_str(L, "reason", r->reason);
        lb_set_str(L, "message", r->message);
        lb_set_int(L, "suppressed", (lua_Integer)r->suppressed);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    u->nrep = 0;
    return 1;
}

static int cl_bind(lua_State *L)
{
    lclient *u = chkcl(L, 1);
    de_err e;
    de_err_clear(&e);
    de_rc rc = kc_pod_bind(u->cl, luaL_checkstring(L, 2), luaL_checkstring(L, 3),
                           luaL_optstring(L, 4, ""), luaL_checkstring(L, 5), &e);
    lua_pushboolean(L, rc == DE_OK);
    lua_pushstring(L, rc == DE_OK ? "" : e.msg);
    return 2;
}

/* event{regarding = obj, type, reason, action, note} */
static int cl_event(lua_State *L)
{
    lclient *u = chkcl(L, 1);
    luaL_checktype(L, 2, LUA_TTABLE);
    lua_getfield(L, 2, "regarding");
    json_t *reg = lb_to_json(L, -1);
    lua_pop(L, 1);
    kc_event ev = {reg, optfield(L, 2, "type"), optfield(L, 2, "reason"),
                   optfield(L, 2, "action"), optfield(L, 2, "note"), NULL, NULL};
    de_err e;
    de_err_clear(&e);
    de_rc rc = kc_event_create(u->cl, &ev, &e);
    json_decref(reg);
    lua_pushboolean(L, rc == DE_OK);
    lua_pushstring(L, rc == DE_OK ? "" : e.msg);
    return 2;
}

/* ---- Informer ------------------------------------------------------------------- */

typedef struct linformer {
    kc_informer *inf;
    lua_State *L; /* set during poll: events are appended to the table on top */
    int n;
} linformer;

static const char *const EVNAMES[] = {"ADDED", "MODIFIED", "DELETED"};

static void on_event(void *ctx, kc_res res, kc_evtype type, json_t *obj)
{
    linformer *u = ctx;
    lua_State *L = u->L;
    if (!L)
        return;
    json_t *md = json_object_get(obj, "metadata");
    lua_createtable(L, 0, 5);
    lb_set_str(L, "type", EVNAMES[type]);
    lb_set_str(L, "resource", kc_res_name(res));
    const char *ns = json_string_value(json_object_get(md, "namespace"));
    const char *name = json_string_value(json_object_get(md, "name"));
    const char *rv = json_string_value(json_object_get(md, "resourceVersion"));
    lb_set_str(L, "namespace", ns ? ns : "");
    lb_set_str(L, "name", name ? name : "");
    lb_set_str(L, "rv", rv ? rv : "");
    lua_rawseti(L, -2, ++u->n);
}

static kc_res res_by_name(lua_State *L, const char *s)
{
    for (int i = 0; i < KC_RES_COUNT; i++)
        if (!strcmp(s, kc_res_name((kc_res)i)))
            return (kc_res)i;
    luaL_error(L, "unknown resource \"%s\"", s);
    return KC_RES_COUNT;
}

static int cl_informer(lua_State *L)
{
    lclient *c = chkcl(L, 1);
    luaL_checktype(L, 2, LUA_TTABLE);
    kc_informer_opts o = {0};
    lua_getfield(L, 2, "resources");
    luaL_checktype(L, -1, LUA_TTABLE);
    for (lua_Integer i = 1; i <= (lua_Integer)lua_rawlen(L, -1); i++) {
        lua_rawgeti(L, -1, i);
        o.want[res_by_name(L, luaL_checkstring(L, -1))] = true;
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    o.jitter_seed = (uint64_t)optint(L, 2, "seed", 1);
    o.page_limit = (int)optint(L, 2, "page_limit", 0);
    o.backoff_initial_ns = (uint64_t)optint(L, 2, "backoff_ms", 0) * 1000000ull;
    o.backoff_max_ns = (uint64_t)optint(L, 2, "backoff_max_ms", 0) * 1000000ull;
    o.backoff_reset_ns = (uint64_t)optint(L, 2, "backoff_reset_ms", 0) * 1000000ull;
    o.min_watch_ns = (uint64_t)optint(L, 2, "min_watch_ms", 0) * 1000000ull;
    o.max_line = (size_t)optint(L, 2, "max_line", 0);
    o.max_item = (size_t)optint(L, 2, "max_item", 0);
    o.max_body = (size_t)optint(L, 2, "max_body", 0);
    o.watch_timeout_s = (int)optint(L, 2, "watch_timeout_s", 0);
    o.max_pages = (int)optint(L, 2, "max_pages", 0);
    o.max_empty_pages = (int)optint(L, 2, "max_empty_pages", 0);
    linformer *u = lua_newuserdatauv(L, sizeof *u, 1);
    u->L = NULL;
    u->n = 0;
    u->inf = kc_informer_new(c->cl, &o, on_event, u);
    luaL_setmetatable(L, MT_INFORMER);
    lua_pushvalue(L, 1);
    lua_setiuservalue(L, -2, 1);
    return 1;
}

static linformer *chkinf(lua_State *L, int i)
{
    linformer *u = luaL_checkudata(L, i, MT_INFORMER);
    if (!u->inf)
        luaL_error(L, "informer is closed");
    return u;
}

static int inf_gc(lua_State *L)
{
    linformer *u = luaL_checkudata(L, 1, MT_INFORMER);
    kc_informer_free(u->inf);
    u->inf = NULL;
    return 0;
}

/* poll(ms) -> events; polls repeatedly until ms have passed */
static int inf_poll(lua_State *L)
{
    linformer *u = chkinf(L, 1);
    lua_Integer ms = luaL_optinteger(L, 2, 0);
    lua_newtable(L);
    u->L = L;
    u->n = 0;
    uint64_t end = de_now_ns() + (uint64_t)ms * 1000000ull;
    do {
        uint64_t now = de_now_ns();
        int left = now < end ? (int)((end - now) / 1000000ull) + 1 : 0;
        kc_informer_poll(u->inf, DE_MIN(left, 50), NULL, 0);
    } while (de_now_ns() < end);
    u->L = NULL;
    return 1;
}

static int inf_synced(lua_State *L)
{
    linformer *u = chkinf(L, 1);
    if (lua_isstring(L, 2))
        lua_pushboolean(L, kc_informer_res_synced(u->inf, res_by_name(L, lua_tostring(L, 2))));
    else
        lua_pushboolean(L, kc_informer_synced(u->inf));
    return 1;
}

static int inf_rv(lua_State *L)
{
    linformer *u = chkinf(L, 1);
    lua_pushstring(L, kc_informer_rv(u->inf, res_by_name(L, luaL_checkstring(L, 2))));
    return 1;
}

static int inf_describe(lua_State *L)
{
    de_buf b;
    de_buf_init(&b, 65536);
    kc_informer_describe(chkinf(L, 1)->inf, &b);
    lua_pushstring(L, de_buf_str(&b));
    de_buf_free(&b);
    return 1;
}

static int inf_list_peak(lua_State *L)
{
    lua_pushinteger(L, (lua_Integer)kc_informer_list_peak(chkinf(L, 1)->inf));
    return 1;
}

static int inf_last_error(lua_State *L)
{
    lua_pushstring(L, kc_informer_last_error(chkinf(L, 1)->inf));
    return 1;
}

/* ---- Lease ------------------------------------------------------------------------- */

typedef struct llease {
    kc_lease *l;
} llease;

static int cl_lease(lua_State *L)
{
    lclient *c = chkcl(L, 1);
    luaL_checktype(L, 2, LUA_TTABLE);
    kc_lease_opts o = {0};
    o.ns = optfield(L, 2, "namespace");
    o.name = optfield(L, 2, "name");
    o.identity = optfield(L, 2, "identity");
    o.lease_ns = (uint64_t)optint(L, 2, "lease_ms", 0) * 1000000ull;
    o.renew_deadline_ns = (uint64_t)optint(L, 2, "renew_ms", 0) * 1000000ull;
    o.retry_ns = (uint64_t)optint(L, 2, "retry_ms", 0) * 1000000ull;
    llease *u = lua_newuserdatauv(L, sizeof *u, 1);
    u->l = kc_lease_new(c->cl, &o);
    luaL_setmetatable(L, MT_LEASE);
    lua_pushvalue(L, 1);
    lua_setiuservalue(L, -2, 1);
    return 1;
}

static llease *chklease(lua_State *L, int i)
{
    llease *u = luaL_checkudata(L, i, MT_LEASE);
    if (!u->l)
        luaL_error(L, "lease is closed");
    return u;
}

static int lease_gc(lua_State *L)
{
    llease *u = luaL_checkudata(L, 1, MT_LEASE);
    kc_lease_free(u->l);
    u->l = NULL;
    return 0;
}

static int lease_tick(lua_State *L)
{
    bool lost = false;
    bool leader = kc_lease_tick(chklease(L, 1)->l, &lost);
    lua_pushboolean(L, leader);
    lua_pushboolean(L, lost);
    return 2;
}

static int lease_release(lua_State *L)
{
    kc_lease_release(chklease(L, 1)->l);
    return 0;
}

static int lease_holder(lua_State *L)
{
    lua_pushstring(L, kc_lease_holder(chklease(L, 1)->l));
    return 1;
}

/* ---- misc ------------------------------------------------------------------------------ */

/* backoff(initial_ms, max_ms, seed, n) -> n delays in ms */
static int l_backoff(lua_State *L)
{
    kc_backoff b;
    kc_backoff_init(&b, (uint64_t)luaL_checkinteger(L, 1) * 1000000ull,
                    (uint64_t)luaL_checkinteger(L, 2) * 1000000ull,
                    (uint64_t)luaL_checkinteger(L, 3));
    lua_Integer n = luaL_checkinteger(L, 4);
    lua_createtable(L, (int)n, 0);
    for (lua_Integer i = 1; i <= n; i++) {
        lua_pushnumber(L, (double)kc_backoff_next(&b) / 1e6);
        lua_rawseti(L, -2, i);
    }
    return 1;
}

/* parse_list(text [, chunk [, max_item]]) -> items, the other members; or
 * nil, error.  The text is fed to the streaming list parser `chunk` bytes at
 * a time (default: whole), as the network would cut it. */
typedef struct plist {
    json_t *items;
} plist;

static void plist_item(void *ctx, json_t *it)
{
    json_array_append(((plist *)ctx)->items, it);
}

static int l_parse_list(lua_State *L)
{
    size_t n;
    const char *text = luaL_checklstring(L, 1, &n);
    lua_Integer chunk = luaL_optinteger(L, 2, (lua_Integer)(n ? n : 1));
    lua_Integer max_item = luaL_optinteger(L, 3, 16 << 20);
    luaL_argcheck(L, chunk > 0, 2, "chunk must be positive");
    luaL_argcheck(L, max_item > 0, 3, "max_item must be positive");
    plist pl = {json_array()};
    kc_listsplit *sp = kc_listsplit_new((size_t)max_item, plist_item, &pl);
    const char *err = NULL;
    json_t *rest = NULL;
    bool ok = true;
    for (size_t i = 0; ok && i < n; i += (size_t)chunk)
        ok = kc_listsplit_feed(sp, text + i, DE_MIN((size_t)chunk, n - i));
    rest = kc_listsplit_finish(sp, &err);
    int nret;
    if (rest) {
        lb_push_json(L, pl.items);
        lb_push_json(L, rest);
        nret = 2;
    } else {
        lua_pushnil(L);
        lua_pushstring(L, err ? err : "?");
        nret = 2;
    }
    json_decref(rest);
    json_decref(pl.items);
    kc_listsplit_free(sp);
    return nret;
}

/* decode_watch(line) -> type, object (ERROR: the Status), code, reason; or
 * nil, reason, message */
static int l_decode_watch(lua_State *L)
{
    size_t n;
    const char *line = luaL_checklstring(L, 1, &n);
    kc_wevent ev;
    if (!kc_watch_decode(line, n, &ev)) {
        lua_pushnil(L);
        lua_pushstring(L, ev.reason);
        lua_pushstring(L, ev.msg);
        return 3;
    }
    lua_pushstring(L, kc_wtype_name(ev.type));
    lb_push_json(L, ev.obj);
    json_decref(ev.obj);
    lua_pushinteger(L, ev.code);
    lua_pushstring(L, ev.reason);
    return 4;
}

/* peek_watch(line) -> type, namespace, name, resourceVersion; or nil */
static int l_peek_watch(lua_State *L)
{
    size_t n;
    const char *line = luaL_checklstring(L, 1, &n);
    kc_peek pk;
    if (!kc_watch_peek(line, n, &pk)) {
        lua_pushnil(L);
        return 1;
    }
    lua_pushstring(L, kc_wtype_name(pk.type));
    lua_pushstring(L, pk.ns);
    lua_pushstring(L, pk.name);
    lua_pushstring(L, pk.rv);
    return 4;
}

static int l_parse_time(lua_State *L)
{
    int64_t ns;
    if (!kc_parse_time(luaL_checkstring(L, 1), &ns))
        return 0;
    lua_pushinteger(L, (lua_Integer)ns);
    return 1;
}

static int l_format_time(lua_State *L)
{
    char buf[64];
    kc_format_microtime((int64_t)luaL_checkinteger(L, 1), buf, sizeof buf);
    lua_pushstring(L, buf);
    return 1;
}

void lb_open_kube(lua_State *L)
{
    static const luaL_Reg cfgm[] = {
        {"server", cfg_server},   {"source", cfg_source},   {"context", cfg_context},
        {"namespace", cfg_namespace}, {"describe", cfg_describe}, {"redact", cfg_redact},
        {"reload_token", cfg_reload_token}, {"token_problem", cfg_token_problem}, {NULL, NULL}};
    static const luaL_Reg clm[] = {{"request", cl_request}, {"request_peek", cl_request_peek},
                                   {"stats", cl_stats},
                                   {"failures", cl_failures}, {"reports", cl_reports},
                                   {"bind", cl_bind},       {"event", cl_event},
                                   {"informer", cl_informer}, {"lease", cl_lease},
                                   {NULL, NULL}};
    static const luaL_Reg infm[] = {{"poll", inf_poll},         {"synced", inf_synced},
                                    {"rv", inf_rv},             {"describe", inf_describe},
                                    {"last_error", inf_last_error},
                                    {"list_peak", inf_list_peak}, {NULL, NULL}};
    static const luaL_Reg leasem[] = {{"tick", lease_tick},
                                      {"release", lease_release},
                                      {"holder", lease_holder},
                                      {NULL, NULL}};
    static const luaL_Reg cfgmeta[] = {{"__gc", cfg_gc}, {"__tostring", cfg_tostring}, {NULL, NULL}};
    static const luaL_Reg clmeta[] = {{"__gc", cl_gc}, {NULL, NULL}};
    static const luaL_Reg infmeta[] = {{"__gc", inf_gc}, {NULL, NULL}};
    static const luaL_Reg leasemeta[] = {{"__gc", lease_gc}, {NULL, NULL}};
    lb_class(L, MT_CONFIG, cfgmeta, cfgm);
    lb_class(L, MT_CLIENT, clmeta, clm);
    lb_class(L, MT_INFORMER, infmeta, infm);
    lb_class(L, MT_LEASE, leasemeta, leasem);

    static const luaL_Reg fns[] = {
        {"config", l_config},           {"client", l_client},
        {"backoff", l_backoff},         {"parse_time", l_parse_time},
        {"parse_list", l_parse_list},   {"decode_watch", l_decode_watch},
        {"peek_watch", l_peek_watch},
        {"format_time", l_format_time}, {NULL, NULL},
    };
    lua_newtable(L);
    luaL_setfuncs(L, fns, 0);
    lua_setfield(L, -2, "kube");
}
