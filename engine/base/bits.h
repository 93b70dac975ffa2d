/*
 * bits.h - fixed-size bitsets over uint64_t words, all inline.
 *
 * The allocator keeps free/used devices and per-(class, selector set)
 * candidates per node as bitsets; scanning them in index order is scanning
 * devices in canonical order, so the index space is laid out canonically.
 */
#ifndef DE_BITS_H
#define DE_BITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define DE_BITS_WORDS(n) (((n) + 63) / 64)

static inline void de_bit_set(uint64_t *b, size_t i) { b[i >> 6] |= 1ULL << (i & 63); }
static inline void de_bit_clr(uint64_t *b, size_t i) { b[i >> 6] &= ~(1ULL << (i & 63)); }
static inline bool de_bit_get(const uint64_t *b, size_t i) { return (b[i >> 6] >> (i & 63)) & 1; }

static inline size_t de_bits_count(const uint64_t *b, size_t nwords)
{
    size_t c = 0;
    for (size_t i = 0; i < nwords; i++)
        c += (size_t)__builtin_popcountll(b[i]);
    return c;
}

/* First set bit at or after `from`, or `n` if none. */
static inline size_t de_bits_next(const uint64_t *b, size_t n, size_t from)
{
    if (from >= n)
        return n;
    size_t w = from >> 6;
    uint64_t x = b[w] & (~0ULL << (from & 63));
    size_t nw = DE_BITS_WORDS(n);
    for (;;) {
        if (x) {
            size_t i = (w << 6) + (size_t)__builtin_ctzll(x);
            return i < n ? i : n;
        }
        if (++w >= nw)
            return n;
        x = b[w];
    }
}

static inline void de_bits_and(uint64_t *dst, const uint64_t *a, size_t nwords)
{
    for (size_t i = 0; i < nwords; i++)
        dst[i] &= a[i];
}

static inline void de_bits_andnot(uint64_t *dst, const uint64_t *a, size_t nwords)
{
    for (size_t i = 0; i < nwords; i++)
        dst[i] &= ~a[i];
}

static inline bool de_bits_any(const uint64_t *b, size_t nwords)
{
    for (size_t i = 0; i < nwords; i++)
        if (b[i])
            return true;
    return false;
}

#endif
