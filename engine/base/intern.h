/*
 * intern.h - string interning: every name in the device graph (drivers,
 * pools, devices, attribute domains and IDs, node names, ...) is stored once
 * and referred to by a dense 32-bit id.  Comparing names is comparing ids;
 * id 0 is always the empty string, so a zeroed struct means "no name".
 *
 * Strings never move once interned (pointers stay valid for the interner's
 * life, counted strings' until their last release) and are NUL-terminated, but may also contain NULs: use the length.
 * Ids are assigned in first-seen order, which is deterministic because input
 * is read in a deterministic order; never sort by id, sort by string.
 */
#ifndef DE_INTERN_H
#define DE_INTERN_H

#include "de.h"

typedef struct de_interner de_interner;

de_interner *de_intern_new(void);
void de_intern_free(de_interner *in);

uint32_t de_intern(de_interner *in, const char *s, size_t len);
uint32_t de_intern_cstr(de_interner *in, const char *s);
/* Look up without inserting; returns UINT32_MAX when absent. */
uint32_t de_intern_find(const de_interner *in, const char *s, size_t len);

/* Counted strings (the names and UIDs of claims and pods, which come and
 * go): de_intern_ref interns and takes a reference, de_intern_retain takes
 * another, de_intern_release drops one; the last release frees the string
 * and its id is reused.  A string interned with de_intern, before or after,
 * is pinned: references are then no-ops and it is never freed.  Holders of
 * a counted id must retain it for as long as they keep it. */
uint32_t de_intern_ref(de_interner *in, const char *s, size_t len);
void de_intern_retain(de_interner *in, uint32_t id);
void de_intern_release(de_interner *in, uint32_t id);
/* Strings interned now (released ones not counted). */
uint32_t de_intern_live(const de_interner *in);

const char *de_intern_str(const de_interner *in, uint32_t id);
size_t de_intern_len(const de_interner *in, uint32_t id);
uint32_t de_intern_count(const de_interner *in);
/* Bytes held by the interner (strings + tables), for memory reports. */
size_t de_intern_bytes(const de_interner *in);

/* Byte-wise comparison of two interned strings (memcmp order, shorter first
 * on a tie): the ordering Kubernetes uses for pools and slices. */
int de_intern_cmp(const de_interner *in, uint32_t a, uint32_t b);

#endif
