/*
 * testgraph.c - dra.test.snapshot(path): the devices of a manifest snapshot
 * (a file or directory of ResourceSlices and more, validated as the engine
 * loads them) as persistent device views for spec files:
 *
 *   local snap = dra.test.snapshot("spec/fixtures/dgx-h100.yaml")
 *   snap.devices                      array, graph order
 *   snap.device["driver/pool/name"]   by name
 *   snap.nodes                        node names that have devices, sorted
 *
 * The graph shares the spec's interner and lives until the spec file's VM
 * is closed, so the views stay valid for the whole file.
 */
#include "../model/dg.h"
#include "pol_int.h"
#include "testrun.h"

#include <stdlib.h>
#include <string.h>

typedef struct snaplist {
    dg_graph **g;
    uint32_t n;
} snaplist;

int pol_test_snapshot(lua_State *L, pol_testctx *c, const char *path)
{
    dg_opts o = {0};
    dg_graph *g = dg_new(c->in, &o);
    de_err e;
    de_err_clear(&e);
    if (dg_load_path(g, path, &e) != DE_OK) {
        dg_free(g);
        lua_pushstring(L, e.msg);
        return lua_error(L);
    }
    snaplist *sl = c->snapshots;
    if (!sl)
        c->snapshots = sl = de_xcalloc(1, sizeof *sl);
    sl->g = de_xrealloc(sl->g, (sl->n + 1) * sizeof *sl->g);
    sl->g[sl->n++] = g;
    de_interner *in = dg_intern(g);
    lua_createtable(L, 0, 3);
    lua_newtable(L); /* devices */
    lua_newtable(L); /* device */
    lua_newtable(L); /* node set */
    int k = 0;
    for (uint32_t id = 0; id < dg_device_id_limit(g); id++) {
        if (!dg_device_get(g, id))
            continue;
        de_devview v;
        dg_device_view(g, id, &v);
        pol_push_device(L, &v, false, true);
        lua_pushvalue(L, -1);
        lua_rawseti(L, -5, ++k);
        lua_pushfstring(L, "%s/%s/%s", de_intern_str(in, v.driver), de_intern_str(in, v.pool),
                        de_intern_str(in, v.name));
        lua_insert(L, -2);
        lua_rawset(L, -4);
        if (v.node) {
            lua_pushstring(L, de_intern_str(in, v.node));
            lua_pushboolean(L, 1);
            lua_rawset(L, -3);
        }
    }
    /* nodes: sorted array */
    int nodes = lua_gettop(L);
    lua_newtable(L);
    pol_ordered_pairs(L, nodes);
    int f = lua_gettop(L) - 2;
    int n = 0;
    for (;;) {
        lua_pushvalue(L, f);
        lua_call(L, 0, 2);
        if (lua_isnil(L, -2)) {
            lua_pop(L, 2);
            break;
        }
        lua_pop(L, 1);
        lua_rawseti(L, f - 1, ++n);
    }
    lua_pop(L, 3);
    lua_setfield(L, -5, "nodes");
    lua_pop(L, 1);
    lua_setfield(L, -3, "device");
    lua_setfield(L, -2, "devices");
    return 1;
}

void pol_test_snapshots_free(pol_testctx *c)
{
    snaplist *sl = c->snapshots;
    if (!sl)
        return;
    for (uint32_t i = 0; i < sl->n; i++)
        dg_free(sl->g[i]);
    free(sl->g);
    free(sl);
    c->snapshots = NULL;
}
