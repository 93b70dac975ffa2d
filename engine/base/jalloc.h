/*
 * jalloc.h - a per-thread cache of small blocks for jansson's trees.
 *
 * `serve` builds and frees a jansson tree for every watch event and every
 * write's answer, some 2,500 small blocks a pod (nodes, keys, strings, hash
 * buckets), all freed together when the event is applied.  glibc's
 * per-thread cache holds only 7 blocks of a size, so most of those frees and
 * the next tree's mallocs went through glibc's bins, locks and
 * consolidation: malloc and free were 19 % of serve's instructions.  This
 * cache keeps freed blocks per thread, by 16-byte size class up to 512
 * bytes and up to 32 KiB a class (1 MiB a thread at the very most), and
 * hands them back to the next tree.
 *
 * Every block is a genuine malloc block, taken and given back whole: the
 * cache keeps no header and finds a freed block's class from
 * malloc_usable_size.  So a block may be freed with free() as well as
 * through jansson (json_dumps's text is), installing it late is harmless,
 * and memory a thread caches past its cap goes straight back to glibc.
 * Under AddressSanitizer it is not installed, so every block stays visible
 * to the sanitizer's use-after-free and leak checks.
 */
#ifndef DE_JALLOC_H
#define DE_JALLOC_H

#include <stdbool.h>
#include <stddef.h>

/* Makes jansson allocate through the cache (json_set_alloc_funcs); once per
 * process, before other threads start.  Safe to call more than once. */
void de_jalloc_install(void);

/* Whether the cache is installed (not under AddressSanitizer), and this
 * thread's cached blocks and bytes: for the specs and benchmarks. */
bool de_jalloc_stats(size_t *blocks, size_t *bytes);

#endif
