/*
 * view.c - what a hook sees of the engine: read-only proxy userdata over
 * the C data (style.md 9.7), never copies.
 *
 *   device.driver, .pool, .name     strings
 *   device.node                     node name, nil unless node-local
 *   device.attributes[name]         value or nil; "domain/name" or a bare
 *                                   name (resolved in the driver's domain);
 *                                   int -> integer, bool, string, version ->
 *                                   version object, lists -> arrays
 *   device.capacity[name]           quantity object or nil
 *   pairs(device.attributes)        qualified names in byte order
 *
 * A view records the VM's call generation when it is made; the generation
 * changes when the hook returns, and any later use raises "device view used
 * after its hook returned".  So a policy cannot keep a view in an upvalue
 * and read a device that may have been replaced since.  Views made by the
 * test API (dra.test.device) are persistent for the spec file's VM.
 *
 * Writing to any view raises.  All metatables are protected.
 */
#include "pol_int.h"

#include <string.h>

#define DEVICE_MT "draengine.Device"
#define ATTRS_MT "draengine.DeviceAttributes"
#define CAPS_MT "draengine.DeviceCapacity"
#define NODE_MT "draengine.Node"
#define CLAIM_MT "draengine.Claim"

enum { MT_DEVICE = 0, MT_ATTRS, MT_CAPS, MT_NODE, MT_CLAIM };
static const char *const mt_names[] = {DEVICE_MT, ATTRS_MT, CAPS_MT, NODE_MT, CLAIM_MT};

/* luaL_checkudata / luaL_setmetatable without looking the name up. */
static void *check(lua_State *L, int idx, int which)
{
    void *p = lua_touserdata(L, idx);
    if (p && lua_getmetatable(L, idx)) {
        lua_rawgeti(L, LUA_REGISTRYINDEX, pol_vm_of(L)->mt[which]);
        bool same = lua_rawequal(L, -1, -2);
        lua_pop(L, 2);
        if (same)
            return p;
    }
    luaL_typeerror(L, idx, mt_names[which]);
    return NULL;
}

static void set_mt(lua_State *L, int which)
{
    lua_rawgeti(L, LUA_REGISTRYINDEX, pol_vm_of(L)->mt[which]);
    lua_setmetatable(L, -2);
}

typedef struct devud {
    uint64_t gen; /* 0 = persistent */
    bool derived;
    uint32_t idx; /* position in a score placement (reads are traced by it), else UINT32_MAX */
    de_devview v;
} devud;

typedef struct mapud {
    uint64_t gen;
    bool derived;
    uint32_t idx;
    const de_devview *v; /* inside the device userdata, kept alive by a user value */
} mapud;

typedef struct nodeud {
    uint64_t gen;
    pol_nodeinfo n;
} nodeud;

typedef struct claimud {
    uint64_t gen;
    pol_claiminfo c;
} claimud;

static void check_live(lua_State *L, uint64_t gen, const char *what)
{
    if (gen && gen != pol_vm_of(L)->call_gen)
        pol_raise(L, "%s view used after its hook returned (views are valid only during the hook "
                     "call; keep values, not views)", what);
}

static int ro_newindex(lua_State *L)
{
    const char *k = lua_type(L, 2) == LUA_TSTRING ? lua_tostring(L, 2) : luaL_typename(L, 2);
    return pol_raise(L, "attempt to write '%s': engine views are read-only", k);
}

static void push_interned(lua_State *L, uint32_t id)
{
    pol_vm *vm = pol_vm_of(L);
    lua_pushlstring(L, de_intern_str(vm->in, id), de_intern_len(vm->in, id));
}

void pol_push_attrval(lua_State *L, const de_attrval *a)
{
    pol_vm *vm = pol_vm_of(L);
    switch (a->kind) {
    case DE_V_INT:
        lua_pushinteger(L, a->u.i);
        return;
    case DE_V_BOOL:
        lua_pushboolean(L, a->u.b);
        return;
    case DE_V_STRING:
        push_interned(L, a->u.s);
        return;
    case DE_V_VERSION:
        pol_push_version(L, de_intern_str(vm->in, a->u.s), de_intern_len(vm->in, a->u.s));
        return;
    case DE_V_INTS:
    case DE_V_BOOLS:
    case DE_V_STRINGS:
    case DE_V_VERSIONS:
        lua_createtable(L, (int)a->n, 0);
        for (uint32_t i = 0; i < a->n; i++) {
            switch (a->kind) {
            case DE_V_INTS:
                lua_pushinteger(L, a->u.ints[i]);
                break;
            case DE_V_BOOLS:
                lua_pushboolean(L, a->u.bools[i]);
                break;
            case DE_V_STRINGS:
                push_interned(L, a->u.strs[i]);
                break;
            default:
                pol_push_version(L, de_intern_str(vm->in, a->u.strs[i]),
                                 de_intern_len(vm->in, a->u.strs[i]));
            }
            lua_rawseti(L, -2, (lua_Integer)i + 1);
        }
        return;
    default:
        lua_pushnil(L);
    }
}

/* Resolve a key to (domain, name) ids without interning anything new. */
static bool resolve(lua_State *L, const de_devview *v, int idx, uint32_t *dom, uint32_t *name)
{
    if (lua_type(L, idx) != LUA_TSTRING)
        return false;
    pol_vm *vm = pol_vm_of(L);
    size_t n;
    const char *k = lua_tolstring(L, idx, &n);
    const char *slash = memchr(k, '/', n);
    if (slash) {
        *dom = de_intern_find(vm->in, k, (size_t)(slash - k));
        *name = de_intern_find(vm->in, slash + 1, n - (size_t)(slash - k) - 1);
    } else {
        *dom = v->driver;
        *name = de_intern_find(vm->in, k, n);
    }
    return *dom != UINT32_MAX && *name != UINT32_MAX;
}

static const de_attr *find_attr(const de_devview *v, bool derived, uint32_t dom, uint32_t name)
{
    if (derived)
        return de_devview_attr(v, dom, name);
    for (uint32_t i = 0; i < v->nattrs; i++)
        if (v->attrs[i].name == name && v->attrs[i].domain == dom)
            return &v->attrs[i];
    return NULL;
}

/* A traced read of attributes[key] / capacity[key]: the key's parts are
 * interned so that the memo (memo.c) can evaluate the same read on other
 * devices, also ones that carry a name no device had when it was recorded. */
static void trace_key(lua_State *L, pol_vm *vm, uint32_t idx, uint8_t op, int kidx)
{
    if (idx == UINT32_MAX) {
        pol_trace_impure(vm);
        return;
    }
    if (lua_type(L, kidx) != LUA_TSTRING)
        return; /* nil whatever the device */
    size_t n;
    const char *k = lua_tolstring(L, kidx, &n);
    const char *slash = memchr(k, '/', n);
    /* Keys the engine does not know are not interned: interning every key
     * a policy makes up would grow the graph's interner without bound (it
     * is shared and never shrinks).  No device has such a key, so the read
     * is nil; it is recorded against the VM's own small table of absent
     * keys, and the memo is dropped if one of them is interned later (a
     * device with that name came; memo.c).  Vendor-name lookups such as
     * V.numa_node's stay memoised on clusters without those vendors. */
    uint32_t a = slash ? de_intern_find(vm->in, k, (size_t)(slash - k)) : POL_READ_BARE;
    uint32_t b = slash ? de_intern_find(vm->in, slash + 1, n - (size_t)(slash - k) - 1)
                       : de_intern_find(vm->in, k, n);
    if ((slash && a == UINT32_MAX) || b == UINT32_MAX) { /* not interned */
        uint32_t x = pol_trace_absent(vm, k, n);
        if (x == UINT32_MAX)
            pol_trace_impure(vm);
        else
            pol_trace_read(vm, op, idx, POL_READ_ABSENT, x);
    } else {
        pol_trace_read(vm, op, idx, a, b);
    }
}

static void trace_dev(lua_State *L, uint32_t idx, uint8_t op)
{
    pol_vm *vm = pol_vm_of(L);
    if (!pol_trace_on(vm))
        return;
    if (idx == UINT32_MAX)
        pol_trace_impure(vm);
    else
        pol_trace_read(vm, op, idx, 0, 0);
}

/* ---- attributes and capacity ------------------------------------------------ */

static int attrs_index(lua_State *L)
{
    mapud *m = check(L, 1, MT_ATTRS);
    check_live(L, m->gen, "device");
    if (pol_trace_on(pol_vm_of(L)))
        trace_key(L, pol_vm_of(L), m->idx, POL_READ_DEV_ATTR, 2);
    uint32_t dom, name;
    const de_attr *a;
    if (!resolve(L, m->v, 2, &dom, &name) || !(a = find_attr(m->v, m->derived, dom, name))) {
        lua_pushnil(L);
        return 1;
    }
    pol_push_attrval(L, &a->v);
    return 1;
}

static void push_qualified(lua_State *L, uint32_t dom, uint32_t name)
{
    pol_vm *vm = pol_vm_of(L);
    lua_pushlstring(L, de_intern_str(vm->in, dom), de_intern_len(vm->in, dom));
    lua_pushliteral(L, "/");
    lua_pushlstring(L, de_intern_str(vm->in, name), de_intern_len(vm->in, name));
    lua_concat(L, 3);
}

static int attrs_pairs(lua_State *L)
{
    mapud *m = check(L, 1, MT_ATTRS);
    check_live(L, m->gen, "device");
    trace_dev(L, m->idx, POL_READ_DEV_ATTRS);
    const de_devview *v = m->v;
    lua_newtable(L);
    int t = lua_gettop(L);
    /* published first, then derived on top (derived shadows) */
    for (uint32_t i = 0; i < v->nattrs; i++) {
        push_qualified(L, v->attrs[i].domain, v->attrs[i].name);
        pol_push_attrval(L, &v->attrs[i].v);
        lua_rawset(L, t);
    }
    if (m->derived)
        for (uint32_t i = 0; i < v->nderived; i++) {
            push_qualified(L, v->derived[i].domain, v->derived[i].name);
            pol_push_attrval(L, &v->derived[i].v);
            lua_rawset(L, t);
        }
    return pol_ordered_pairs(L, t);
}

static int caps_index(lua_State *L)
{
    mapud *m = check(L, 1, MT_CAPS);
    check_live(L, m->gen, "device");
    if (pol_trace_on(pol_vm_of(L)))
        trace_key(L, pol_vm_of(L), m->idx, POL_READ_DEV_CAP, 2);
    uint32_t dom, name;
    const de_cap *c;
    if (!resolve(L, m->v, 2, &dom, &name) || !(c = de_devview_cap(m->v, dom, name))) {
        lua_pushnil(L);
        return 1;
    }
    pol_push_quantity(L, &c->value);
    return 1;
}

static int caps_pairs(lua_State *L)
{
    mapud *m = check(L, 1, MT_CAPS);
    check_live(L, m->gen, "device");
    trace_dev(L, m->idx, POL_READ_DEV_CAPS);
    lua_newtable(L);
    int t = lua_gettop(L);
    for (uint32_t i = 0; i < m->v->ncaps; i++) {
        push_qualified(L, m->v->caps[i].domain, m->v->caps[i].name);
        pol_push_quantity(L, &m->v->caps[i].value);
        lua_rawset(L, t);
    }
    return pol_ordered_pairs(L, t);
}

/* ---- device --------------------------------------------------------------- */

static void push_map(lua_State *L, int dev, int slot, int which)
{
    if (lua_getiuservalue(L, dev, slot) == LUA_TUSERDATA)
        return;
    lua_pop(L, 1);
    devud *d = lua_touserdata(L, dev);
    mapud *m = lua_newuserdatauv(L, sizeof *m, 1);
    m->gen = d->gen;
    m->derived = d->derived;
    m->idx = d->idx;
    m->v = &d->v;
    lua_pushvalue(L, dev);
    lua_setiuservalue(L, -2, 1);
    set_mt(L, which);
    lua_pushvalue(L, -1);
    lua_setiuservalue(L, dev, slot);
}

static int dev_index(lua_State *L)
{
    devud *d = check(L, 1, MT_DEVICE);
    check_live(L, d->gen, "device");
    const char *k = luaL_checkstring(L, 2);
    if (!strcmp(k, "driver")) {
        trace_dev(L, d->idx, POL_READ_DEV_DRIVER);
        push_interned(L, d->v.driver);
    } else if (!strcmp(k, "pool")) {
        trace_dev(L, d->idx, POL_READ_DEV_POOL);
        push_interned(L, d->v.pool);
    } else if (!strcmp(k, "name")) {
        trace_dev(L, d->idx, POL_READ_DEV_NAME);
        push_interned(L, d->v.name);
    } else if (!strcmp(k, "node")) {
        trace_dev(L, d->idx, POL_READ_DEV_NODE);
        if (d->v.node)
            push_interned(L, d->v.node);
        else
            lua_pushnil(L);
    } else if (!strcmp(k, "attributes"))
        push_map(L, 1, 1, MT_ATTRS);
    else if (!strcmp(k, "capacity"))
        push_map(L, 1, 2, MT_CAPS);
    else if (!strcmp(k, "allow_multiple_allocations")) {
        trace_dev(L, d->idx, POL_READ_DEV_MULTI);
        lua_pushboolean(L, d->v.allow_multi == 1);
    } else
        return pol_raise(L, "device has no field '%s' (fields: driver, pool, name, node, attributes, "
                            "capacity, allow_multiple_allocations)", k);
    return 1;
}

static int dev_tostring(lua_State *L)
{
    devud *d = check(L, 1, MT_DEVICE);
    check_live(L, d->gen, "device");
    trace_dev(L, d->idx, POL_READ_DEV_DRIVER);
    trace_dev(L, d->idx, POL_READ_DEV_POOL);
    trace_dev(L, d->idx, POL_READ_DEV_NAME);
    lua_pushliteral(L, "device ");
    push_interned(L, d->v.driver);
    lua_pushliteral(L, "/");
    push_interned(L, d->v.pool);
    lua_pushliteral(L, "/");
    push_interned(L, d->v.name);
    lua_concat(L, 6);
    return 1;
}

void pol_push_device(lua_State *L, const de_devview *v, bool derived, bool persistent)
{
    devud *d = lua_newuserdatauv(L, sizeof *d, 2);
    d->gen = persistent ? 0 : pol_vm_of(L)->call_gen;
    d->derived = derived;
    d->idx = UINT32_MAX;
    d->v = *v;
    set_mt(L, MT_DEVICE);
}

void pol_set_device_index(lua_State *L, uint32_t i)
{
    ((devud *)lua_touserdata(L, -1))->idx = i;
}

void pol_push_placement_device(lua_State *L, const de_devview *v, uint32_t i)
{
    pol_push_device(L, v, true, false);
    ((devud *)lua_touserdata(L, -1))->idx = i;
}

const de_devview *pol_check_device(lua_State *L, int idx)
{
    devud *d = check(L, idx, MT_DEVICE);
    check_live(L, d->gen, "device");
    return &d->v;
}

/* ---- node ----------------------------------------------------------------- */

static void push_kv_table(lua_State *L, const uint32_t *keys, const uint32_t *vals, uint32_t n)
{
    lua_createtable(L, 0, (int)n);
    for (uint32_t i = 0; i < n; i++) {
        push_interned(L, keys[i]);
        push_interned(L, vals[i]);
        lua_rawset(L, -3);
    }
}

static int node_index(lua_State *L)
{
    nodeud *n = check(L, 1, MT_NODE);
    check_live(L, n->gen, "node");
    const char *k = luaL_checkstring(L, 2);
    pol_vm *vm = pol_vm_of(L);
    if (!strcmp(k, "name")) {
        pol_trace_read(vm, POL_READ_NODE_NAME, 0, 0, 0);
        push_interned(L, n->n.name);
    } else if (!strcmp(k, "labels")) {
        pol_trace_read(vm, POL_READ_NODE_LABELS, 0, 0, 0);
        push_kv_table(L, n->n.label_keys, n->n.label_values, n->n.nlabels);
    } else if (!strcmp(k, "devices")) {
        pol_trace_read(vm, POL_READ_NODE_DEVICES, 0, 0, 0);
        lua_pushinteger(L, n->n.devices);
    } else if (!strcmp(k, "free_devices")) {
        pol_trace_read(vm, POL_READ_NODE_FREE, 0, 0, 0);
        lua_pushinteger(L, n->n.free_devices);
    } else
        return pol_raise(L, "node has no field '%s' (fields: name, labels, devices, free_devices)", k);
    return 1;
}

void pol_push_node(lua_State *L, const pol_nodeinfo *info)
{
    nodeud *n = lua_newuserdatauv(L, sizeof *n, 0);
    n->gen = pol_vm_of(L)->call_gen;
    n->n = *info;
    set_mt(L, MT_NODE);
}

/* ---- claim ------------------------------------------------------------------ */

static int claim_index(lua_State *L)
{
    claimud *c = check(L, 1, MT_CLAIM);
    check_live(L, c->gen, "claim");
    const char *k = luaL_checkstring(L, 2);
    if (!strcmp(k, "namespace"))
        push_interned(L, c->c.ns);
    else if (!strcmp(k, "name"))
        push_interned(L, c->c.name);
    else if (!strcmp(k, "uid"))
        push_interned(L, c->c.uid);
    else if (!strcmp(k, "labels"))
        push_kv_table(L, c->c.label_keys, c->c.label_values, c->c.nlabels);
    else if (!strcmp(k, "annotations"))
        push_kv_table(L, c->c.annotation_keys, c->c.annotation_values, c->c.nannotations);
    else if (!strcmp(k, "requests")) {
        lua_createtable(L, (int)c->c.nrequests, 0);
        for (uint32_t i = 0; i < c->c.nrequests; i++) {
            const pol_claimreq *r = &c->c.requests[i];
            lua_createtable(L, 0, 5);
            push_interned(L, r->name);
            lua_setfield(L, -2, "name");
            push_interned(L, r->class_name);
            lua_setfield(L, -2, "class");
            lua_pushinteger(L, r->count);
            lua_setfield(L, -2, "count");
            lua_pushboolean(L, r->all);
            lua_setfield(L, -2, "all");
            lua_createtable(L, (int)r->nselectors, 0);
            for (uint32_t j = 0; j < r->nselectors; j++) {
                push_interned(L, r->selectors[j]);
                lua_rawseti(L, -2, (lua_Integer)j + 1);
            }
            lua_setfield(L, -2, "selectors");
            lua_rawseti(L, -2, (lua_Integer)i + 1);
        }
    } else
        return pol_raise(L, "claim has no field '%s' (fields: namespace, name, uid, labels, "
                            "annotations, requests)", k);
    return 1;
}

void pol_push_claim(lua_State *L, const pol_claiminfo *info)
{
    claimud *c = lua_newuserdatauv(L, sizeof *c, 0);
    c->gen = pol_vm_of(L)->call_gen;
    c->c = *info;
    set_mt(L, MT_CLAIM);
}

/* ---- registration ------------------------------------------------------------ */

static void reg(lua_State *L, int which, const luaL_Reg *fns)
{
    luaL_newmetatable(L, mt_names[which]);
    luaL_setfuncs(L, fns, 0);
    lua_pushstring(L, mt_names[which]);
    lua_setfield(L, -2, "__metatable");
    pol_vm_of(L)->mt[which] = luaL_ref(L, LUA_REGISTRYINDEX);
}

void pol_view_open(lua_State *L)
{
    static const luaL_Reg dev[] = {
        {"__index", dev_index}, {"__newindex", ro_newindex}, {"__tostring", dev_tostring}, {NULL, NULL}};
    static const luaL_Reg attrs[] = {
        {"__index", attrs_index}, {"__newindex", ro_newindex}, {"__pairs", attrs_pairs}, {NULL, NULL}};
    static const luaL_Reg caps[] = {
        {"__index", caps_index}, {"__newindex", ro_newindex}, {"__pairs", caps_pairs}, {NULL, NULL}};
    static const luaL_Reg node[] = {{"__index", node_index}, {"__newindex", ro_newindex}, {NULL, NULL}};
    static const luaL_Reg claim[] = {{"__index", claim_index}, {"__newindex", ro_newindex}, {NULL, NULL}};
    reg(L, MT_DEVICE, dev);
    reg(L, MT_ATTRS, attrs);
    reg(L, MT_CAPS, caps);
    reg(L, MT_NODE, node);
    reg(L, MT_CLAIM, claim);
}
