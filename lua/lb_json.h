/*
 * lb_json.h - JSON values <-> Lua values, shared by the binding files.
 *
 * Objects become tables and arrays become sequences; each carries a marker
 * metatable (core.json_object_mt / core.json_array_mt) so that empty ones
 * and the object/array distinction survive a round trip.  JSON null is the
 * sentinel core.null (a light userdata).  Integers stay Lua integers, reals
 * Lua floats.
 *
 * Lua to JSON: a table with the array marker is an array; with the object
 * marker an object; an unmarked table is an array when its keys are exactly
 * 1..n (n >= 1), otherwise an object (an empty unmarked table is an object).
 * Object keys must be strings (integer keys are written in decimal); keys
 * are inserted in byte order so encoding is deterministic.  Nesting deeper
 * than 200 levels (or a cycle) is an error.
 */
#ifndef LB_JSON_H
#define LB_JSON_H

#include <jansson.h>

#include "lb.h"

void lb_push_json(lua_State *L, const json_t *v);

/* A new reference; raises a Lua error naming the offending path on failure
 * (nothing leaks: the partial value is anchored on the Lua stack). */
json_t *lb_to_json(lua_State *L, int idx);

void lb_open_json(lua_State *L);

#endif
