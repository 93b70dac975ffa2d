/*
 * jalloc.c - the per-thread block cache behind jansson (see jalloc.h).
 */
#include "jalloc.h"

#include <jansson.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SANITIZE_ADDRESS__)
#define JA_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define JA_SANITIZED 1
#endif
#endif

/* The cap is per class, not one for the whole cache: a thread's first big
 * tree (the list of every ResourceSlice) would otherwise fill a shared cap
 * with blocks of sizes the pods' trees never ask for, and every later block
 * would miss. */
enum {
    JA_CLASSES = 32,          /* 16-byte classes: blocks of up to 512 bytes */
    JA_CLASS_CAP = 32 * 1024, /* bytes a thread keeps of one class; past it, free() */
};

typedef struct blk {
    struct blk *next;
} blk;

typedef struct cache {
    blk *head[JA_CLASSES + 1]; /* by class c: blocks of at least 16c usable bytes */
    uint32_t n[JA_CLASSES + 1];
    size_t bytes, blocks;
    bool registered;           /* the exit destructor is armed */
} cache;

static _Thread_local cache tc;
static pthread_key_t exit_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static bool installed;

/* A thread's cache goes back to glibc when the thread ends. */
static void drain(void *unused)
{
    (void)unused;
    for (int c = 1; c <= JA_CLASSES; c++)
        while (tc.head[c]) {
            blk *b = tc.head[c];
            tc.head[c] = b->next;
            free(b);
        }
    memset(tc.n, 0, sizeof tc.n);
    tc.bytes = tc.blocks = 0;
}

static void make_key(void)
{
    if (pthread_key_create(&exit_key, drain) != 0)
        abort(); /* only at the first free of the process's first thread */
}

static void *ja_malloc(size_t n)
{
    size_t c = (n + 15) >> 4;
    if (c - 1 < JA_CLASSES) { /* n in 1..512 */
        blk *b = tc.head[c];
        if (b) {
            tc.head[c] = b->next;
            tc.n[c]--;
            tc.bytes -= c << 4;
            tc.blocks--;
            return b;
        }
        /* the whole class, so that the block comes back to this class */
        return malloc(c << 4);
    }
    return malloc(n);
}

static void ja_free(void *p)
{
    if (!p)
        return;
    /* glibc rounds to 16 and keeps 8 for itself: malloc(16c) gives 16c+8
     * usable bytes, class c again; a block of another origin lands in the
     * class its usable size fills, never a larger one */
    size_t c = malloc_usable_size(p) >> 4;
    if (c - 1 >= JA_CLASSES || (tc.n[c] + 1) * (c << 4) > JA_CLASS_CAP) {
        free(p);
        return;
    }
    if (!tc.registered) {
        pthread_once(&key_once, make_key);
        pthread_setspecific(exit_key, &tc);
        tc.registered = true;
    }
    blk *b = p;
    b->next = tc.head[c];
    tc.head[c] = b;
    tc.n[c]++;
    tc.bytes += c << 4;
    tc.blocks++;
}

void de_jalloc_install(void)
{
#ifdef JA_SANITIZED
    (void)ja_malloc, (void)ja_free;
#else
    if (!installed) {
        installed = true;
        json_set_alloc_funcs(ja_malloc, ja_free);
    }
#endif
}

bool de_jalloc_stats(size_t *blocks, size_t *bytes)
{
    *blocks = tc.blocks;
    *bytes = tc.bytes;
    return installed;
}
