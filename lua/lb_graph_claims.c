/*
 * lb_graph_claims.c - the draengine.Graph methods about classes, claims,
 * pods, allocated state and node selectors (see lb_graph.c for the class).
 */
#include "lb_graph_int.h"

#include <stdlib.h>

/* ---- classes -------------------------------------------------------------------------- */

static void push_class(lua_State *L, dg_graph *g, uint32_t cid)
{
    const dg_class *c = dg_class_get(g, cid);
    lua_newtable(L);
    lb_set_int(L, "id", cid);
    lb_set_str(L, "name", S(g, c->meta.name));
    lb_set_int(L, "gen", (lua_Integer)dg_class_generation(g, cid));
    if (c->extended_resource_name)
        lb_set_str(L, "extended_resource_name", S(g, c->extended_resource_name));
    lua_newtable(L);
    for (uint32_t i = 0; i < c->nselectors; i++) {
        lua_pushstring(L, S(g, c->selectors[i].expr));
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "selectors");
    lb_set_int(L, "config", c->nconfig);
}

static int l_class(lua_State *L)
{
    dg_graph *g = check_graph(L);
    uint32_t cid = dg_class_find(g, id_of(g, luaL_checkstring(L, 2)));
    if (cid == DG_NONE) {
        lua_pushnil(L);
        return 1;
    }
    push_class(L, g, cid);
    return 1;
}

static int l_class_for_ext(lua_State *L)
{
    dg_graph *g = check_graph(L);
    uint32_t cid = dg_class_for_extended_resource(g, id_of(g, luaL_checkstring(L, 2)));
    if (cid == DG_NONE)
        lua_pushnil(L);
    else
        lua_pushstring(L, S(g, dg_class_get(g, cid)->meta.name));
    return 1;
}

/* ---- claims ------------------------------------------------------------------------- */

static uint32_t find_claim(lua_State *L, dg_graph *g)
{
    const char *ns = luaL_checkstring(L, 2), *name = luaL_checkstring(L, 3);
    uint32_t id = dg_claim_find(g, look_id(g, ns), look_id(g, name));
    if (id == DG_NONE)
        luaL_error(L, "ResourceClaim \"%s/%s\" not found", ns, name);
    return id;
}

static void push_exact(lua_State *L, dg_graph *g, const dg_exact *x)
{
    static const char *const modes[] = {"ExactCount", "All", "unknown"};
    lua_newtable(L);
    if (x->name)
        lb_set_str(L, "name", S(g, x->name));
    lb_set_str(L, "device_class", S(g, x->class_name));
    lb_set_str(L, "allocation_mode", modes[x->mode < 3 ? x->mode : 2]);
    lb_set_int(L, "count", x->count);
    if (x->admin_access >= 0)
        lb_set_bool(L, "admin_access", x->admin_access == 1);
    lua_newtable(L);
    for (uint32_t i = 0; i < x->nselectors; i++) {
        lua_pushstring(L, S(g, x->selectors[i].expr));
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "selectors");
    lb_set_int(L, "tolerations", x->ntolerations);
    lua_newtable(L);
    for (uint32_t i = 0; i < x->ncapacity; i++) {
        push_qty(L, x->capacity[i].value);
        lua_setfield(L, -2, S(g, x->capacity[i].key));
    }
    lua_setfield(L, -2, "capacity");
    lua_newtable(L);
    for (uint32_t i = 0; i < x->nderived; i++) {
        lua_pushstring(L, S(g, x->derived[i].expr));
        lua_setfield(L, -2, S(g, x->derived[i].name));
    }
    lua_setfield(L, -2, "derived_attributes");
}

static void push_claim(lua_State *L, dg_graph *g, uint32_t id)
{
    const dg_claim *c = dg_claim_get(g, id);
    lua_newtable(L);
    lb_set_int(L, "id", id);
    lb_set_str(L, "namespace", S(g, c->meta.ns));
    lb_set_str(L, "name", S(g, c->meta.name));
    lb_set_int(L, "gen", (lua_Integer)dg_claim_generation(g, id));
    lb_set_bool(L, "allocated", c->allocated);
    lua_newtable(L);
    for (uint32_t i = 0; i < c->spec.nrequests; i++) {
        const dg_request *q = &c->spec.requests[i];
        if (q->has_exactly) {
            push_exact(L, g, &q->exactly);
        } else {
            lua_newtable(L);
            lua_newtable(L);
            for (uint32_t j = 0; j < q->nsubs; j++) {
                push_exact(L, g, &q->subs[j]);
                lua_rawseti(L, -2, j + 1);
            }
            lua_setfield(L, -2, "first_available");
        }
        lb_set_str(L, "request", S(g, q->name));
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "requests");
    lua_newtable(L);
    for (uint32_t i = 0; i < c->spec.nconstraints; i++) {
        const dg_constraint *k = &c->spec.constraints[i];
        lua_newtable(L);
        if (k->match_attribute)
            lb_set_str(L, "match_attribute", S(g, k->match_attribute));
        if (k->distinct_attribute)
            lb_set_str(L, "distinct_attribute", S(g, k->distinct_attribute));
        lua_newtable(L);
        for (uint32_t j = 0; j < k->nrequests; j++) {
            lua_pushstring(L, S(g, k->requests[j]));
            lua_rawseti(L, -2, j + 1);
        }
        lua_setfield(L, -2, "requests");
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "constraints");
    lb_set_int(L, "config", c->spec.nconfig);
    lua_newtable(L);
    for (uint32_t i = 0; i < c->nreserved_for; i++) {
        lua_newtable(L);
        lb_set_str(L, "resource", S(g, c->reserved_for[i].resource));
        lb_set_str(L, "name", S(g, c->reserved_for[i].name));
        lb_set_str(L, "uid", S(g, c->reserved_for[i].uid));
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "reserved_for");
    if (c->allocated) {
        json_t *j = dg_encode_allocation(g, &c->allocation);
        lb_push_json(L, j);
        json_decref(j);
        lua_setfield(L, -2, "allocation");
    }
}

static int l_claim(lua_State *L)
{
    dg_graph *g = check_graph(L);
    uint32_t id = dg_claim_find(g, look_id(g, luaL_checkstring(L, 2)), look_id(g, luaL_checkstring(L, 3)));
    if (id == DG_NONE) {
        lua_pushnil(L);
        return 1;
    }
    push_claim(L, g, id);
    return 1;
}

static int l_claims(lua_State *L)
{
    dg_graph *g = check_graph(L);
    lua_newtable(L);
    int k = 0;
    for (uint32_t i = 0; i < dg_claim_id_limit(g); i++) {
        const dg_claim *c = dg_claim_get(g, i);
        if (!c)
            continue;
        lua_newtable(L);
        lb_set_str(L, "namespace", S(g, c->meta.ns));
        lb_set_str(L, "name", S(g, c->meta.name));
        lb_set_bool(L, "allocated", c->allocated);
        lua_rawseti(L, -2, ++k);
    }
    return 1;
}

static int l_claim_json(lua_State *L)
{
    dg_graph *g = check_graph(L);
    json_t *j = dg_claim_json(g, find_claim(L, g));
    char *s = json_dumps(j, JSON_COMPACT);
    lua_pushstring(L, s);
    free(s);
    return 1;
}

static int l_set_allocation(lua_State *L)
{
    dg_graph *g = check_graph(L);
    uint32_t id = find_claim(L, g);
    luaL_checktype(L, 4, LUA_TTABLE);
    json_t *j = lb_to_json(L, 4);
    de_arena *a = de_arena_new(0);
    dg_allocation al;
    de_err e;
    de_err_clear(&e);
    de_rc rc = dg_decode_allocation(g, j, a, &al, &e);
    if (rc == DE_OK)
        rc = dg_claim_set_allocation(g, id, &al, &e);
    json_decref(j);
    de_arena_free(a);
    if (rc != DE_OK)
        return raise_err(L, &e);
    return 0;
}

static int l_deallocate(lua_State *L)
{
    dg_graph *g = check_graph(L);
    de_err e;
    de_err_clear(&e);
    if (dg_claim_deallocate(g, find_claim(L, g), &e) != DE_OK)
        return raise_err(L, &e);
    return 0;
}

static int l_reserve(lua_State *L)
{
    dg_graph *g = check_graph(L);
    uint32_t id = find_claim(L, g);
    luaL_checktype(L, 4, LUA_TTABLE);
    dg_consumer c = {0};
    const char *fields[] = {"apiGroup", "resource", "name", "uid"};
    uint32_t *dst[] = {&c.api_group, &c.resource, &c.name, &c.uid};
    for (int i = 0; i < 4; i++) {
        lua_getfield(L, 4, fields[i]);
        if (lua_isstring(L, -1)) {
            size_t n;
            const char *v = lua_tolstring(L, -1, &n);
            /* the consumer's name and UID come and go with it: counted, the
             * claim takes its own reference */
            *dst[i] = i >= 2 ? de_intern_ref(dg_intern(g), v, n) : id_of(g, v);
        }
        lua_pop(L, 1);
    }
    de_err e;
    de_err_clear(&e);
    de_rc rc = dg_claim_add_reservation(g, id, &c, &e);
    de_intern_release(dg_intern(g), c.name);
    de_intern_release(dg_intern(g), c.uid);
    if (rc != DE_OK)
        return raise_err(L, &e);
    return 0;
}

static int l_claim_from_template(lua_State *L)
{
    dg_graph *g = check_graph(L);
    const char *ns = luaL_checkstring(L, 2), *name = luaL_checkstring(L, 3);
    lua_Integer idx = luaL_optinteger(L, 4, 1);
    uint32_t pid = dg_pod_find(g, id_of(g, ns), id_of(g, name));
    if (pid == DG_NONE)
        return luaL_error(L, "Pod \"%s/%s\" not found", ns, name);
    uint32_t clid;
    de_err e;
    de_err_clear(&e);
    if (dg_claim_from_template(g, pid, (uint32_t)(idx - 1), &clid, &e) != DE_OK)
        return raise_err(L, &e);
    lua_pushstring(L, S(g, dg_claim_get(g, clid)->meta.name));
    return 1;
}

static int l_pod(lua_State *L)
{
    dg_graph *g = check_graph(L);
    uint32_t pid = dg_pod_find(g, look_id(g, luaL_checkstring(L, 2)), look_id(g, luaL_checkstring(L, 3)));
    if (pid == DG_NONE) {
        lua_pushnil(L);
        return 1;
    }
    const dg_pod *p = dg_pod_get(g, pid);
    lua_newtable(L);
    lb_set_str(L, "namespace", S(g, p->meta.ns));
    lb_set_str(L, "name", S(g, p->meta.name));
    if (p->node_name)
        lb_set_str(L, "node_name", S(g, p->node_name));
    lua_newtable(L);
    for (uint32_t i = 0; i < p->nclaims; i++) {
        lua_newtable(L);
        lb_set_str(L, "name", S(g, p->claims[i].name));
        if (p->claims[i].claim_name)
            lb_set_str(L, "resource_claim_name", S(g, p->claims[i].claim_name));
        if (p->claims[i].template_name)
            lb_set_str(L, "resource_claim_template_name", S(g, p->claims[i].template_name));
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "claims");
    lua_newtable(L);
    for (uint32_t i = 0; i < p->nclaim_statuses; i++) {
        lua_pushstring(L, S(g, p->claim_statuses[i].claim_name));
        lua_setfield(L, -2, S(g, p->claim_statuses[i].name));
    }
    lua_setfield(L, -2, "claim_statuses");
    lua_newtable(L);
    for (uint32_t i = 0; i < p->ncontainers; i++) {
        const dg_container *c = &p->containers[i];
        lua_newtable(L);
        lb_set_str(L, "name", S(g, c->name));
        lb_set_bool(L, "init", c->init);
        lb_set_bool(L, "sidecar", c->sidecar);
        lua_newtable(L);
        for (uint32_t j = 0; j < c->nrequests; j++) {
            push_qty(L, c->requests[j].value);
            lua_setfield(L, -2, S(g, c->requests[j].name));
        }
        lua_setfield(L, -2, "requests");
        lua_newtable(L);
        for (uint32_t j = 0; j < c->nlimits; j++) {
            push_qty(L, c->limits[j].value);
            lua_setfield(L, -2, S(g, c->limits[j].name));
        }
        lua_setfield(L, -2, "limits");
        lua_newtable(L);
        for (uint32_t j = 0; j < c->nclaims; j++) {
            lua_pushstring(L, S(g, c->claims[j].name));
            lua_rawseti(L, -2, j + 1);
        }
        lua_setfield(L, -2, "claims");
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "containers");
    lb_set_int(L, "tolerations", p->ntolerations);
    lb_set_bool(L, "has_required_affinity", p->has_required_affinity);
    return 1;
}

/* ---- usage ---------------------------------------------------------------------------- */

static void push_usage(lua_State *L, const dg_usage *u, dg_graph *g)
{
    lua_newtable(L);
    lb_set_int(L, "exclusive", u->exclusive);
    lb_set_int(L, "shared", u->shared);
    lua_newtable(L);
    for (uint32_t i = 0; i < u->nconsumed; i++) {
        push_qty(L, u->consumed[i].value);
        lua_setfield(L, -2, S(g, u->consumed[i].key));
    }
    lua_setfield(L, -2, "consumed");
}

typedef struct usage_ctx {
    lua_State *L;
    dg_graph *g;
    int k;
} usage_ctx;

static void usage_cb(void *ctx, uint32_t driver, uint32_t pool, uint32_t device, const dg_usage *u)
{
    usage_ctx *c = ctx;
    push_usage(c->L, u, c->g);
    lb_set_str(c->L, "driver", S(c->g, driver));
    lb_set_str(c->L, "pool", S(c->g, pool));
    lb_set_str(c->L, "device", S(c->g, device));
    lua_rawseti(c->L, -2, ++c->k);
}

static int l_usage(lua_State *L)
{
    dg_graph *g = check_graph(L);
    if (lua_gettop(L) >= 4) {
        dg_usage u;
        if (!dg_usage_get(g, id_of(g, luaL_checkstring(L, 2)), id_of(g, luaL_checkstring(L, 3)),
                          id_of(g, luaL_checkstring(L, 4)), &u)) {
            lua_pushnil(L);
            return 1;
        }
        push_usage(L, &u, g);
        return 1;
    }
    lua_newtable(L);
    usage_ctx c = {L, g, 0};
    dg_usage_each(g, usage_cb, &c);
    return 1;
}

static int l_usage_generation(lua_State *L)
{
    lua_pushinteger(L, (lua_Integer)dg_usage_generation(check_graph(L)));
    return 1;
}

/* ---- node selectors -------------------------------------------------------------------- */

static int l_nodesel_match(lua_State *L)
{
    dg_graph *g = check_graph(L);
    luaL_checktype(L, 2, LUA_TTABLE);
    const char *node = luaL_checkstring(L, 3);
    /* decode the selector through a throwaway slice-free path: a Pod-less
     * allocation result carries exactly a NodeSelector */
    json_t *sel = lb_to_json(L, 2);
    json_t *alloc = json_pack("{s:o}", "nodeSelector", sel);
    de_arena *a = de_arena_new(0);
    dg_allocation al;
    de_err e;
    de_err_clear(&e);
    if (dg_decode_allocation(g, alloc, a, &al, &e) != DE_OK) {
        json_decref(alloc);
        de_arena_free(a);
        return raise_err(L, &e);
    }
    dg_kv labels[128];
    uint32_t nl = 0;
    if (lua_istable(L, 4)) {
        lua_pushnil(L);
        while (lua_next(L, 4) && nl < 128) {
            labels[nl].key = id_of(g, lua_tostring(L, -2));
            labels[nl].value = id_of(g, lua_tostring(L, -1));
            nl++;
            lua_pop(L, 1);
        }
    }
    bool m;
    de_rc rc = dg_nodesel_match(g, &al.node_selector, id_of(g, node), labels, nl, &m, &e);
    json_decref(alloc);
    de_arena_free(a);
    if (rc != DE_OK)
        return raise_err(L, &e);
    lua_pushboolean(L, m);
    return 1;
}

void lb_graph_claim_methods(lua_State *L)
{
    static const luaL_Reg methods[] = {
        {"class", l_class},
        {"class_for_extended_resource", l_class_for_ext},
        {"claim", l_claim},
        {"claims", l_claims},
        {"claim_json", l_claim_json},
        {"set_allocation", l_set_allocation},
        {"deallocate", l_deallocate},
        {"reserve", l_reserve},
        {"claim_from_template", l_claim_from_template},
        {"pod", l_pod},
        {"usage", l_usage},
        {"usage_generation", l_usage_generation},
        {"nodesel_match", l_nodesel_match},
        {NULL, NULL},
    };
    luaL_setfuncs(L, methods, 0);
}
