/*
 * lb_graph_int.h - helpers shared by lb_graph.c and lb_graph_claims.c
 * (the draengine.Graph class).  Not part of lb.h.
 */
#ifndef LB_GRAPH_INT_H
#define LB_GRAPH_INT_H

#include "../engine/base/quantity.h"
#include "../engine/model/dg.h"
#include "lb.h"
#include "lb_json.h"

#include <stdio.h>
#include <string.h>

#define GRAPH_CLASS "draengine.Graph"

typedef struct lgevent {
    uint8_t kind, op;
    uint32_t id;
} lgevent;

/* Something built on the graph that must go before it (an allocator made
 * with core.allocator(g) listens to it): called when the graph closes. */
typedef struct lgcloser {
    void (*fn)(void *ctx);
    void *ctx;
} lgcloser;

typedef struct lgraph {
    dg_graph *g;
    lgevent *ev; /* change notifications since the last :events() */
    uint32_t nev, capev;
    lgcloser *closers;
    uint32_t nclosers;
} lgraph;

static inline dg_graph *check_graph(lua_State *L)
{
    return lb_check_graph(L, 1);
}

static inline int raise_err(lua_State *L, const de_err *e)
{
    lua_pushstring(L, e->msg[0] ? e->msg : de_rc_str(e->rc));
    return lua_error(L);
}

static inline uint32_t id_of(dg_graph *g, const char *s)
{
    return de_intern_cstr(dg_intern(g), s ? s : "");
}

/* Looked up without interning (UINT32_MAX when unknown): interning would pin
 * a claim's or pod's name, which the graph releases with the object. */
static inline uint32_t look_id(dg_graph *g, const char *s)
{
    return de_intern_find(dg_intern(g), s, strlen(s));
}

static inline const char *S(dg_graph *g, uint32_t id)
{
    return de_intern_str(dg_intern(g), id);
}

static inline void push_qty(lua_State *L, de_qty q)
{
    char buf[DE_QTY_TEXT_MAX];
    de_qty_format(q, buf, sizeof buf);
    lua_pushstring(L, buf);
}


void lb_graph_claim_methods(lua_State *L); /* adds the claim/pod/usage methods to the table on top */

#endif
