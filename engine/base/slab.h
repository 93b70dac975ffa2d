/*
 * slab.h - exact-size records from pre-faulted storage, freed one by one.
 *
 * Why: a scheduling decision writes a few hundred bytes of result records
 * (a claim's allocation, its reservedFor list, a pod's claim statuses) that
 * live until the claim is released.  Taken from malloc or a fresh arena,
 * each one lands on a page the process has never touched, and the page
 * fault (1-2 us on a VM) costs more than the decision.  A slab hands out
 * records rounded to 16 bytes from chunks that were touched when they were
 * reserved, and keeps freed records on per-size free lists, so a decision
 * reuses warm memory and a claim allocated and released many times does not
 * grow the heap.  The owner calls de_slab_reserve() off the decision path
 * (the graph does it when a pending claim arrives) to keep enough
 * pre-faulted room for the records it expects; an allocation past that room
 * still succeeds from a new chunk (and faults), it is only slower.
 *
 * Records larger than DE_SLAB_MAX come from malloc, each listed in the
 * slab: freed with de_slab_free (never free()), and by de_slab_free_all
 * with the rest.  Memory is returned to the system only by
 * de_slab_free_all and those frees.  Every slab has a byte cap.
 */
#ifndef DE_SLAB_H
#define DE_SLAB_H

#include "de.h"

typedef struct de_slab de_slab;

#define DE_SLAB_MAX 4096 /* larger records come from malloc */

/* cap: bytes of chunks the slab may hold (0 = 1 GiB). */
de_slab *de_slab_new(size_t cap);
void de_slab_free_all(de_slab *s);

/* n bytes, 16-byte aligned, not zeroed; NULL when n is 0 or past the cap.
 * de_slab_free must be given the same n. */
void *de_slab_alloc(de_slab *s, size_t n);
void *de_slab_zalloc(de_slab *s, size_t n);
void de_slab_free(de_slab *s, void *p, size_t n);

/* Make sure at least `bytes` of never-used, already touched room exists
 * (whole chunks are added and touched now).  Returns false past the cap. */
bool de_slab_reserve(de_slab *s, size_t bytes);

typedef struct de_slab_stats {
    size_t in_use;      /* bytes handed out and not freed (rounded sizes) */
    size_t held;        /* bytes of chunks held, touched */
    size_t room;        /* never-used room left in chunks */
    uint64_t late_chunks; /* chunks added by an allocation, not by a reservation */
} de_slab_stats;
void de_slab_get_stats(const de_slab *s, de_slab_stats *out);

#endif
