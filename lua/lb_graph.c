/*
 * lb_graph.c - core.graph(): the device graph for specs and tools
 * ("draengine.Graph").
 *
 *   local g = core.graph{keep_slice_json = true, skip_validation = false,
 *                        gates = "DRAListTypeAttributes=true",
 *                        cel_program_cap = N}   -- lower validation's CEL cache cap
 *   g:load(path)                    -- file or directory; raises the engine's message
 *   g:apply(table_or_text)          -- one object (table) or manifest text; returns kinds
 *   g:check(table)                  -- validate only: true, or nil + message
 *   g:remove(kind, ns, name)
 *   g:nodes() g:pools() g:pool(driver, name) g:devices{driver=, pool=, node=}
 *   g:device(driver, pool, name)    -- attributes (qualified name -> value), capacity (text)
 *   g:slices_on_node(node) g:shared_slices() g:slice(name)
 *   g:class(name) g:class_for_extended_resource(name)
 *   g:claim(ns, name) g:claim_json(ns, name) g:claims()
 *   g:set_allocation(ns, name, allocation_table) g:deallocate(ns, name)
 *   g:reserve(ns, name, {resource=, name=, uid=, apiGroup=})
 *   g:claim_from_template(pod_ns, pod_name, index) g:pod(ns, name)
 *   g:usage([driver, pool, device]) g:usage_generation()
 *   g:set_derived(driver, pool, device, {["dom/id"] = value, ...})
 *   g:nodesel_match(selector_table, node_name, labels_table)
 *   g:stats() g:generation()
 *
 * Tables returned are snapshots (plain Lua data), so a spec can keep them
 * across later changes and compare.
 */
#include "lb_graph_int.h"

#include <stdlib.h>

static dg_kind kind_of(lua_State *L, int idx)
{
    const char *k = luaL_checkstring(L, idx);
    for (int i = DG_KIND_RESOURCE_SLICE; i < DG_KIND_OTHER; i++)
        if (!strcmp(k, dg_kind_name((dg_kind)i)))
            return (dg_kind)i;
    luaL_error(L, "unknown kind \"%s\"", k);
    return DG_KIND_NONE;
}

/* ---- construction ---------------------------------------------------------------- */

static void on_change(void *ctx, dg_kind kind, dg_op op, uint32_t id)
{
    lgraph *u = ctx;
    if (u->nev == u->capev) {
        u->capev = u->capev ? u->capev * 2 : 16;
        u->ev = de_xrealloc(u->ev, u->capev * sizeof *u->ev);
    }
    u->ev[u->nev++] = (lgevent){(uint8_t)kind, (uint8_t)op, id};
}

static int l_graph(lua_State *L)
{
    dg_opts opts = {0};
    de_gates gates;
    de_gates_default(&gates);
    if (lua_istable(L, 1)) {
        lua_getfield(L, 1, "keep_slice_json");
        opts.keep_slice_json = lua_toboolean(L, -1);
        lua_getfield(L, 1, "skip_validation");
        opts.skip_validation = lua_toboolean(L, -1);
        lua_getfield(L, 1, "keep_going");
        opts.keep_going = lua_toboolean(L, -1);
        lua_getfield(L, 1, "no_fast_path");
        opts.no_fast_path = lua_toboolean(L, -1);
        lua_getfield(L, 1, "cel_program_cap");
        opts.cel_program_cap = (uint32_t)luaL_optinteger(L, -1, 0);
        lua_pop(L, 3);
        lua_getfield(L, 1, "gates");
        if (lua_isstring(L, -1)) {
            de_err e;
            de_err_clear(&e);
            if (de_gates_parse_library(&gates, lua_tostring(L, -1), NULL, 0, &e) != DE_OK)
                return raise_err(L, &e);
        }
        lua_pop(L, 3);
    }
    opts.gates = &gates;
    lgraph *u = lua_newuserdatauv(L, sizeof *u, 0);
    memset(u, 0, sizeof *u);
    luaL_setmetatable(L, GRAPH_CLASS);
    u->g = dg_new(NULL, &opts);
    dg_add_listener(u->g, on_change, u);
    return 1;
}

static int l_gc(lua_State *L)
{
    lgraph *u = luaL_checkudata(L, 1, GRAPH_CLASS);
    for (uint32_t i = u->nclosers; i > 0; i--)
        u->closers[i - 1].fn(u->closers[i - 1].ctx);
    free(u->closers);
    u->closers = NULL;
    u->nclosers = 0;
    dg_free(u->g);
    u->g = NULL;
    free(u->ev);
    u->ev = NULL;
    u->nev = u->capev = 0;
    return 0;
}

/* g:events() -> {{kind=, op=, id=}, ...} since the last call (then cleared) */
static int l_events(lua_State *L)
{
    check_graph(L);
    lgraph *u = luaL_checkudata(L, 1, GRAPH_CLASS);
    static const char *const ops[] = {"add", "update", "delete"};
    lua_createtable(L, (int)u->nev, 0);
    for (uint32_t i = 0; i < u->nev; i++) {
        lua_newtable(L);
        lb_set_str(L, "kind", dg_kind_name((dg_kind)u->ev[i].kind));
        lb_set_str(L, "op", ops[u->ev[i].op < 3 ? u->ev[i].op : 0]);
        lb_set_int(L, "id", u->ev[i].id);
        lua_rawseti(L, -2, i + 1);
    }
    u->nev = 0;
    return 1;
}

static int l_tostring(lua_State *L)
{
    lgraph *u = luaL_checkudata(L, 1, GRAPH_CLASS);
    if (!u->g) {
        lua_pushstring(L, "draengine.Graph (closed)");
        return 1;
    }
    dg_stats st;
    dg_get_stats(u->g, &st);
    lua_pushfstring(L, "draengine.Graph (%d slices, %d devices)", (int)st.slices, (int)st.devices);
    return 1;
}

/* ---- loading ------------------------------------------------------------------------ */

static int l_load(lua_State *L)
{
    dg_graph *g = check_graph(L);
    de_err e;
    de_err_clear(&e);
    if (dg_load_path(g, luaL_checkstring(L, 2), &e) != DE_OK)
        return raise_err(L, &e);
    lua_pushvalue(L, 1);
    return 1;
}

static int apply_or_check(lua_State *L, bool commit)
{
    dg_graph *g = check_graph(L);
    de_err e;
    de_err_clear(&e);
    if (lua_type(L, 2) == LUA_TSTRING) {
        size_t n;
        const char *text = lua_tolstring(L, 2, &n);
        if (!commit)
            return luaL_error(L, "check takes a table");
        if (dg_load_text(g, "<string>", text, n, &e) != DE_OK)
            return raise_err(L, &e);
        lua_pushvalue(L, 1);
        return 1;
    }
    luaL_checktype(L, 2, LUA_TTABLE);
    json_t *obj = lb_to_json(L, 2);
    de_origin o = {"<table>", 1, -1};
    dg_kind kind = DG_KIND_NONE;
    de_rc rc = commit ? dg_apply(g, obj, &o, &kind, &e) : dg_check(g, obj, &o, &kind, &e);
    json_decref(obj);
    if (rc != DE_OK) {
        if (commit)
            return raise_err(L, &e);
        lua_pushnil(L);
        lua_pushstring(L, e.msg);
        lua_pushstring(L, e.path);
        return 3;
    }
    if (commit)
        lua_pushstring(L, dg_kind_name(kind));
    else
        lua_pushboolean(L, 1);
    return 1;
}

static int l_apply(lua_State *L) { return apply_or_check(L, true); }
static int l_check(lua_State *L) { return apply_or_check(L, false); }

static int l_remove(lua_State *L)
{
    dg_graph *g = check_graph(L);
    dg_kind k = kind_of(L, 2);
    const char *ns = luaL_optstring(L, 3, "");
    const char *name = luaL_checkstring(L, 4);
    de_err e;
    de_err_clear(&e);
    if (dg_remove(g, k, ns, name, &e) != DE_OK)
        return raise_err(L, &e);
    return 0;
}

/* ---- nodes, pools, slices ------------------------------------------------------------- */

static de_interner *sort_in;
static int cmp_names(const void *a, const void *b)
{
    return de_intern_cmp(sort_in, *(const uint32_t *)a, *(const uint32_t *)b);
}

static int l_nodes(lua_State *L)
{
    dg_graph *g = check_graph(L);
    const uint32_t *names;
    uint32_t n;
    dg_slice_nodes(g, &names, &n);
    uint32_t lim = dg_node_id_limit(g);
    uint32_t *all = de_xmalloc((n + lim + 1) * sizeof *all), cnt = 0;
    for (uint32_t i = 0; i < n; i++) {
        const uint32_t *s;
        uint32_t ns;
        dg_slices_on_node(g, names[i], &s, &ns);
        if (ns)
            all[cnt++] = names[i];
    }
    for (uint32_t i = 0; i < lim; i++) {
        const dg_node *node = dg_node_get(g, i);
        if (node)
            all[cnt++] = node->meta.name;
    }
    sort_in = dg_intern(g);
    qsort(all, cnt, sizeof *all, cmp_names);
    lua_newtable(L);
    int k = 0;
    for (uint32_t i = 0; i < cnt; i++) {
        if (i && all[i] == all[i - 1])
            continue;
        lua_pushstring(L, S(g, all[i]));
        lua_rawseti(L, -2, ++k);
    }
    free(all);
    return 1;
}

/* g:node(name): what the graph holds of a Node (nil when none) */
static int l_node(lua_State *L)
{
    dg_graph *g = check_graph(L);
    const char *name = luaL_checkstring(L, 2);
    uint32_t id = de_intern_find(dg_intern(g), name, strlen(name));
    const dg_node *n = id == UINT32_MAX ? NULL : dg_node_get(g, dg_node_find(g, id));
    if (!n) {
        lua_pushnil(L);
        return 1;
    }
    lua_newtable(L);
    lb_set_str(L, "name", S(g, n->meta.name));
    if (n->meta.uid)
        lb_set_str(L, "uid", S(g, n->meta.uid));
    if (n->meta.resource_version)
        lb_set_str(L, "resource_version", S(g, n->meta.resource_version));
    lb_set_int(L, "generation", n->meta.generation);
    lb_set_int(L, "creation", n->meta.creation);
    lb_set_bool(L, "unschedulable", n->unschedulable);
    lua_newtable(L);
    for (uint32_t i = 0; i < n->meta.nlabels; i++)
        lb_set_str(L, S(g, n->meta.labels[i].key), S(g, n->meta.labels[i].value));
    lua_setfield(L, -2, "labels");
    lua_newtable(L);
    for (uint32_t i = 0; i < n->meta.nowners; i++) {
        const dg_ownerref *o = &n->meta.owners[i];
        lua_pushfstring(L, "%s/%s %s %s%s", S(g, o->api_version), S(g, o->kind), S(g, o->name), S(g, o->uid),
                        o->controller ? " controller" : "");
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    lua_setfield(L, -2, "owners");
    /* in input order: the order is part of what the decoders must agree on */
    lua_newtable(L);
    for (uint32_t i = 0; i < n->nallocatable; i++) {
        char q[DE_QTY_TEXT_MAX];
        de_qty_format(n->allocatable[i].value, q, sizeof q);
        lua_pushfstring(L, "%s=%s", S(g, n->allocatable[i].name), q);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    lua_setfield(L, -2, "allocatable");
    lua_newtable(L);
    for (uint32_t i = 0; i < n->ntaints; i++) {
        const dg_node_taint *t = &n->taints[i];
        lua_pushfstring(L, "%s=%s:%s", S(g, t->key), S(g, t->value), S(g, t->effect));
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    lua_setfield(L, -2, "taints");
    lua_newtable(L);
    for (uint32_t i = 0; i < n->ndeclared_features; i++) {
        lua_pushstring(L, S(g, n->declared_features[i]));
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    lua_setfield(L, -2, "declared_features");
    return 1;
}

static void push_pool(lua_State *L, dg_graph *g, uint32_t pid, const dg_pool *p)
{
    lua_newtable(L);
    lb_set_int(L, "id", pid);
    lb_set_str(L, "driver", S(g, p->driver));
    lb_set_str(L, "name", S(g, p->name));
    lb_set_int(L, "generation", p->max_generation);
    lb_set_int(L, "slice_count", p->slice_count);
    lb_set_int(L, "slices_at_generation", p->nslices_at_max);
    lb_set_int(L, "gen", (lua_Integer)p->gen);
    lb_set_bool(L, "complete", dg_pool_complete(g, pid));
    lua_newtable(L);
    for (uint32_t i = 0; i < p->nslices; i++) {
        lua_pushstring(L, S(g, dg_slice_get(g, p->slices[i])->meta.name));
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "slices");
}

static int l_pools(lua_State *L)
{
    dg_graph *g = check_graph(L);
    lua_newtable(L);
    int k = 0;
    for (uint32_t i = 0; i < dg_pool_id_limit(g); i++) {
        dg_pool p;
        if (!dg_pool_get(g, i, &p))
            continue;
        push_pool(L, g, i, &p);
        lua_rawseti(L, -2, ++k);
    }
    return 1;
}

static int l_pool(lua_State *L)
{
    dg_graph *g = check_graph(L);
    uint32_t pid = dg_pool_find(g, id_of(g, luaL_checkstring(L, 2)), id_of(g, luaL_checkstring(L, 3)));
    dg_pool p;
    if (pid == DG_NONE || !dg_pool_get(g, pid, &p)) {
        lua_pushnil(L);
        return 1;
    }
    push_pool(L, g, pid, &p);
    return 1;
}

static void push_slice_names(lua_State *L, dg_graph *g, const uint32_t *sids, uint32_t n)
{
    lua_newtable(L);
    for (uint32_t i = 0; i < n; i++) {
        lua_pushstring(L, S(g, dg_slice_get(g, sids[i])->meta.name));
        lua_rawseti(L, -2, i + 1);
    }
}

static int l_slices_on_node(lua_State *L)
{
    dg_graph *g = check_graph(L);
    const uint32_t *s;
    uint32_t n;
    dg_slices_on_node(g, id_of(g, luaL_checkstring(L, 2)), &s, &n);
    push_slice_names(L, g, s, n);
    return 1;
}

static int l_shared_slices(lua_State *L)
{
    dg_graph *g = check_graph(L);
    const uint32_t *s;
    uint32_t n;
    dg_slices_shared(g, &s, &n);
    push_slice_names(L, g, s, n);
    return 1;
}

static int l_slices_of_driver(lua_State *L)
{
    dg_graph *g = check_graph(L);
    const uint32_t *s;
    uint32_t n;
    dg_slices_of_driver(g, id_of(g, luaL_checkstring(L, 2)), &s, &n);
    push_slice_names(L, g, s, n);
    return 1;
}

static int l_slice(lua_State *L)
{
    dg_graph *g = check_graph(L);
    uint32_t sid = dg_slice_find(g, luaL_checkstring(L, 2));
    if (sid == DG_NONE) {
        lua_pushnil(L);
        return 1;
    }
    const dg_slice *s = dg_slice_get(g, sid);
    static const char *const modes[] = {"none", "nodeName", "nodeSelector", "allNodes", "perDeviceNodeSelection"};
    lua_newtable(L);
    lb_set_int(L, "id", sid);
    lb_set_str(L, "name", S(g, s->meta.name));
    lb_set_str(L, "driver", S(g, s->driver));
    lb_set_str(L, "pool", S(g, s->pool));
    lb_set_int(L, "generation", s->generation);
    lb_set_int(L, "slice_count", s->slice_count);
    lb_set_str(L, "node_selection", modes[s->ns_mode < 5 ? s->ns_mode : 0]);
    if (s->node_name)
        lb_set_str(L, "node", S(g, s->node_name));
    lb_set_int(L, "input_version", s->input_version);
    lua_newtable(L);
    for (uint32_t i = 0; i < s->ndevices; i++) {
        lua_pushstring(L, S(g, s->devices[i].name));
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "devices");
    lua_newtable(L);
    for (uint32_t i = 0; i < s->ncountersets; i++) {
        lua_newtable(L);
        for (uint32_t j = 0; j < s->countersets[i].ncounters; j++) {
            push_qty(L, s->countersets[i].counters[j].value);
            lua_setfield(L, -2, S(g, s->countersets[i].counters[j].name));
        }
        lua_setfield(L, -2, S(g, s->countersets[i].name));
    }
    lua_setfield(L, -2, "counters");
    if (s->ns_mode == DG_NS_NODE_SELECTOR) {
        json_t *j = dg_encode_nodesel(g, &s->node_selector);
        lb_push_json(L, j);
        json_decref(j);
        lua_setfield(L, -2, "node_selector");
    }
    return 1;
}

/* ---- devices ------------------------------------------------------------------------- */

static void qualified(dg_graph *g, uint32_t domain, uint32_t name, bool bare, char *buf, size_t cap)
{
    (void)bare;
    snprintf(buf, cap, "%s/%s", S(g, domain), S(g, name));
}

static void push_attrval(lua_State *L, dg_graph *g, const de_attrval *v)
{
    switch (v->kind) {
    case DE_V_INT: lua_pushinteger(L, v->u.i); return;
    case DE_V_BOOL: lua_pushboolean(L, v->u.b); return;
    case DE_V_STRING:
    case DE_V_VERSION: lua_pushstring(L, S(g, v->u.s)); return;
    case DE_V_INTS:
    case DE_V_BOOLS:
    case DE_V_STRINGS:
    case DE_V_VERSIONS:
        lua_createtable(L, (int)v->n, 0);
        for (uint32_t i = 0; i < v->n; i++) {
            if (v->kind == DE_V_INTS)
                lua_pushinteger(L, v->u.ints[i]);
            else if (v->kind == DE_V_BOOLS)
                lua_pushboolean(L, v->u.bools[i]);
            else
                lua_pushstring(L, S(g, v->u.strs[i]));
            lua_rawseti(L, -2, i + 1);
        }
        return;
    default: lua_pushnil(L);
    }
}

static const char *vkind_name(int k)
{
    static const char *const n[] = {"none", "int", "bool", "string", "version", "ints", "bools", "strings", "versions"};
    return k >= 0 && k <= 8 ? n[k] : "none";
}

static void push_taints(lua_State *L, dg_graph *g, const dg_taint *t, uint32_t n)
{
    lua_newtable(L);
    for (uint32_t i = 0; i < n; i++) {
        lua_newtable(L);
        lb_set_str(L, "key", S(g, t[i].key));
        lb_set_str(L, "value", S(g, t[i].value));
        lb_set_str(L, "effect", S(g, t[i].effect_raw));
        if (t[i].rule)
            lb_set_str(L, "rule", S(g, t[i].rule));
        lua_rawseti(L, -2, i + 1);
    }
}

static void push_device(lua_State *L, dg_graph *g, uint32_t devid, bool full)
{
    de_devview v;
    dg_device_view(g, devid, &v);
    dg_devref ref;
    dg_device_ref(g, devid, &ref);
    const dg_device *d = dg_device_get(g, devid);
    lua_newtable(L);
    lb_set_int(L, "id", devid);
    lb_set_int(L, "gen", v.gen);
    lb_set_str(L, "driver", S(g, v.driver));
    lb_set_str(L, "pool", S(g, v.pool));
    lb_set_str(L, "name", S(g, v.name));
    lb_set_str(L, "slice", S(g, dg_slice_get(g, ref.slice)->meta.name));
    if (v.node)
        lb_set_str(L, "node", S(g, v.node));
    if (!full)
        return;
    char key[256];
    lua_newtable(L);
    lua_newtable(L);
    for (uint32_t i = 0; i < v.nattrs; i++) {
        qualified(g, v.attrs[i].domain, v.attrs[i].name, v.attrs[i].bare, key, sizeof key);
        push_attrval(L, g, &v.attrs[i].v);
        lua_setfield(L, -3, key);
        lua_pushstring(L, vkind_name(v.attrs[i].v.kind));
        lua_setfield(L, -2, key);
    }
    lua_setfield(L, -3, "attribute_types");
    lua_setfield(L, -2, "attributes");
    lua_newtable(L);
    for (uint32_t i = 0; i < v.nderived; i++) {
        qualified(g, v.derived[i].domain, v.derived[i].name, false, key, sizeof key);
        push_attrval(L, g, &v.derived[i].v);
        lua_setfield(L, -2, key);
    }
    lua_setfield(L, -2, "derived");
    lua_newtable(L);
    for (uint32_t i = 0; i < v.ncaps; i++) {
        qualified(g, v.caps[i].domain, v.caps[i].name, v.caps[i].bare, key, sizeof key);
        push_qty(L, v.caps[i].value);
        lua_setfield(L, -2, key);
    }
    lua_setfield(L, -2, "capacity");
    lua_newtable(L);
    for (uint32_t i = 0; i < d->ncaps; i++) {
        const dg_reqpolicy *p = d->policies ? d->policies[i] : NULL;
        if (!p)
            continue;
        qualified(g, d->caps[i].domain, d->caps[i].name, d->caps[i].bare, key, sizeof key);
        lua_newtable(L);
        if (p->has_default) {
            push_qty(L, p->dflt);
            lua_setfield(L, -2, "default");
        }
        if (p->kind == DG_RP_VALUES) {
            lua_newtable(L);
            for (uint32_t k = 0; k < p->nvalues; k++) {
                push_qty(L, p->values[k]);
                lua_rawseti(L, -2, k + 1);
            }
            lua_setfield(L, -2, "valid_values");
        } else if (p->kind == DG_RP_RANGE) {
            push_qty(L, p->min);
            lua_setfield(L, -2, "min");
            if (p->has_max) {
                push_qty(L, p->max);
                lua_setfield(L, -2, "max");
            }
            if (p->has_step) {
                push_qty(L, p->step);
                lua_setfield(L, -2, "step");
            }
        }
        lua_setfield(L, -2, key);
    }
    lua_setfield(L, -2, "request_policies");
    const dg_taint *t;
    uint32_t nt;
    dg_device_taints(g, devid, &t, &nt);
    push_taints(L, g, t, nt);
    lua_setfield(L, -2, "taints");
    lua_newtable(L);
    for (uint32_t i = 0; i < d->nconsumes; i++) {
        lua_newtable(L);
        lb_set_str(L, "counter_set", S(g, d->consumes[i].counterset));
        lua_newtable(L);
        for (uint32_t j = 0; j < d->consumes[i].ncounters; j++) {
            push_qty(L, d->consumes[i].counters[j].value);
            lua_setfield(L, -2, S(g, d->consumes[i].counters[j].name));
        }
        lua_setfield(L, -2, "counters");
        lua_newtable(L);
        for (uint32_t j = 0; j < d->consumes[i].ngroups; j++) {
            lua_pushstring(L, S(g, d->consumes[i].groups[j]));
            lua_rawseti(L, -2, j + 1);
        }
        lua_setfield(L, -2, "groups");
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "consumes");
    lua_newtable(L);
    for (uint32_t i = 0; i < d->nbinding_conditions; i++) {
        lua_pushstring(L, S(g, d->binding_conditions[i]));
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "binding_conditions");
    if (d->allow_multi >= 0)
        lb_set_bool(L, "allow_multiple_allocations", d->allow_multi == 1);
    if (d->binds_to_node >= 0)
        lb_set_bool(L, "binds_to_node", d->binds_to_node == 1);
}

static int l_device(lua_State *L)
{
    dg_graph *g = check_graph(L);
    uint32_t id = dg_device_find(g, id_of(g, luaL_checkstring(L, 2)), id_of(g, luaL_checkstring(L, 3)),
                                 id_of(g, luaL_checkstring(L, 4)));
    if (id == DG_NONE) {
        lua_pushnil(L);
        return 1;
    }
    push_device(L, g, id, true);
    return 1;
}

static int l_devices(lua_State *L)
{
    dg_graph *g = check_graph(L);
    const char *fd = NULL, *fp = NULL, *fn = NULL;
    bool full = false;
    if (lua_istable(L, 2)) {
        lua_getfield(L, 2, "driver");
        fd = lua_tostring(L, -1);
        lua_getfield(L, 2, "pool");
        fp = lua_tostring(L, -1);
        lua_getfield(L, 2, "node");
        fn = lua_tostring(L, -1);
        lua_getfield(L, 2, "full");
        full = lua_toboolean(L, -1);
        lua_pop(L, 4);
    }
    uint32_t d = fd ? id_of(g, fd) : 0, p = fp ? id_of(g, fp) : 0, n = fn ? id_of(g, fn) : 0;
    lua_newtable(L);
    int k = 0;
    for (uint32_t i = 0; i < dg_device_id_limit(g); i++) {
        de_devview v;
        if (!dg_device_get(g, i))
            continue;
        dg_device_view(g, i, &v);
        if ((fd && v.driver != d) || (fp && v.pool != p) || (fn && v.node != n))
            continue;
        push_device(L, g, i, full);
        lua_rawseti(L, -2, ++k);
    }
    return 1;
}

static int l_set_derived(lua_State *L)
{
    dg_graph *g = check_graph(L);
    uint32_t id = dg_device_find(g, id_of(g, luaL_checkstring(L, 2)), id_of(g, luaL_checkstring(L, 3)),
                                 id_of(g, luaL_checkstring(L, 4)));
    if (id == DG_NONE)
        return luaL_error(L, "no such device");
    luaL_checktype(L, 5, LUA_TTABLE);
    de_attr attrs[64];
    int64_t ints[64][8];
    uint32_t strs[64][8];
    uint32_t n = 0;
    /* deterministic order: sort keys */
    lua_newtable(L);
    int nk = 0;
    lua_pushnil(L);
    while (lua_next(L, 5)) {
        lua_pop(L, 1);
        lua_pushvalue(L, -1);
        lua_rawseti(L, -3, ++nk);
    }
    lua_getglobal(L, "table");
    lua_getfield(L, -1, "sort");
    lua_pushvalue(L, -3);
    lua_call(L, 1, 0);
    lua_pop(L, 1);
    for (int i = 1; i <= nk && n < 64; i++) {
        lua_rawgeti(L, -1, i);
        const char *key = lua_tostring(L, -1);
        const char *slash = strchr(key, '/');
        if (!slash)
            return luaL_error(L, "derived attribute names need a domain: %s", key);
        de_attr *a = &attrs[n];
        memset(a, 0, sizeof *a);
        a->domain = de_intern(dg_intern(g), key, (size_t)(slash - key));
        a->name = de_intern_cstr(dg_intern(g), slash + 1);
        lua_gettable(L, 5);
        if (lua_isinteger(L, -1)) {
            a->v.kind = DE_V_INT;
            a->v.n = 1;
            a->v.u.i = lua_tointeger(L, -1);
        } else if (lua_isboolean(L, -1)) {
            a->v.kind = DE_V_BOOL;
            a->v.n = 1;
            a->v.u.b = lua_toboolean(L, -1);
        } else if (lua_isstring(L, -1)) {
            a->v.kind = DE_V_STRING;
            a->v.n = 1;
            a->v.u.s = de_intern_cstr(dg_intern(g), lua_tostring(L, -1));
        } else if (lua_istable(L, -1)) {
            lua_Integer len = luaL_len(L, -1);
            if (len > 8)
                len = 8;
            lua_rawgeti(L, -1, 1);
            bool is_int = lua_isinteger(L, -1);
            lua_pop(L, 1);
            a->v.kind = is_int ? DE_V_INTS : DE_V_STRINGS;
            a->v.n = (uint32_t)len;
            for (lua_Integer j = 1; j <= len; j++) {
                lua_rawgeti(L, -1, j);
                if (is_int)
                    ints[n][j - 1] = lua_tointeger(L, -1);
                else
                    strs[n][j - 1] = de_intern_cstr(dg_intern(g), luaL_checkstring(L, -1));
                lua_pop(L, 1);
            }
            if (is_int)
                a->v.u.ints = ints[n];
            else
                a->v.u.strs = strs[n];
        }
        lua_pop(L, 1);
        n++;
    }
    dg_device_set_derived(g, id, attrs, n);
    dg_devref ref;
    dg_device_ref(g, id, &ref);
    lua_pushinteger(L, ref.gen);
    return 1;
}

/* ---- statistics ---------------------------------------------------------------------- */

static int l_stats(lua_State *L)
{
    dg_graph *g = check_graph(L);
    dg_stats st;
    dg_get_stats(g, &st);
    lua_newtable(L);
    lb_set_int(L, "slices", st.slices);
    lb_set_int(L, "devices", st.devices);
    lb_set_int(L, "pools", st.pools);
    lb_set_int(L, "classes", st.classes);
    lb_set_int(L, "claims", st.claims);
    lb_set_int(L, "templates", st.templates);
    lb_set_int(L, "taint_rules", st.taint_rules);
    lb_set_int(L, "nodes", st.nodes);
    lb_set_int(L, "pods", st.pods);
    lb_set_int(L, "bytes", (lua_Integer)st.bytes);
    lb_set_int(L, "fast_path_slices", st.fast_path_slices);
    lb_set_int(L, "fast_path_nodes", st.fast_path_nodes);
    lb_set_int(L, "cel_programs", st.cel_programs);
    lb_set_int(L, "strings", st.strings);
    lb_set_int(L, "claim_ids", st.claim_ids);
    lb_set_int(L, "pod_ids", st.pod_ids);
    return 1;
}

static int l_generation(lua_State *L)
{
    lua_pushinteger(L, (lua_Integer)dg_generation(check_graph(L)));
    return 1;
}

dg_graph *lb_check_graph(lua_State *L, int idx)
{
    lgraph *u = luaL_checkudata(L, idx, GRAPH_CLASS);
    if (!u->g)
        luaL_error(L, "graph is closed");
    return u->g;
}

void lb_open_graph(lua_State *L)
{
    static const luaL_Reg methods[] = {
        {"load", l_load},
        {"apply", l_apply},
        {"check", l_check},
        {"remove", l_remove},
        {"nodes", l_nodes},
        {"node", l_node},
        {"pools", l_pools},
        {"pool", l_pool},
        {"slice", l_slice},
        {"slices_on_node", l_slices_on_node},
        {"shared_slices", l_shared_slices},
        {"slices_of_driver", l_slices_of_driver},
        {"devices", l_devices},
        {"device", l_device},
        {"set_derived", l_set_derived},
        {"stats", l_stats},
        {"events", l_events},
        {"generation", l_generation},
        {NULL, NULL},
    };
    static const luaL_Reg meta[] = {
        {"__gc", l_gc},
        {"__close", l_gc},
        {"__tostring", l_tostring},
        {"__index", NULL},
        {NULL, NULL},
    };
    lb_class(L, GRAPH_CLASS, meta, methods);
    luaL_getmetatable(L, GRAPH_CLASS);
    lua_getfield(L, -1, "__index");
    lb_graph_claim_methods(L); /* lb_graph_claims.c adds its methods */
    lua_pop(L, 2);
    lua_pushcfunction(L, l_graph);
    lua_setfield(L, -2, "graph");
}
