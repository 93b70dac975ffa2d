/*
 * lb_alloc_int.h - what core.allocate/core.schedule (lb_alloc.c) and the
 * draengine.Allocator class (lb_allocator.c) share: the Lua shape of their
 * results, so that both answer alike.  Not part of lb.h.
 */
#ifndef LB_ALLOC_INT_H
#define LB_ALLOC_INT_H

#include "../engine/alloc/al.h"
#include "lb.h"

/* Fills the table on top with the outcome of al_allocate for claims `ids`:
 * steps, status and then score and claims {{namespace=, name=, allocation=,
 * chosen=}}, or reason and detail, or error and code. */
void lb_set_alloc_outcome(lua_State *L, dg_graph *g, const uint32_t *ids, de_rc rc, const al_outcome *o,
                          const de_err *e);
/* Sets claims = {{namespace=, name=, allocation=, allocated_now=}} of a
 * scheduled pod; with `chosen`, the claims allocated now also carry chosen=. */
void lb_set_pod_claims(lua_State *L, dg_graph *g, const al_pod_outcome *po, bool chosen);

/* lb_allocator.c */
int lb_allocator_new(lua_State *L);
void lb_allocator_register(lua_State *L);

#endif
