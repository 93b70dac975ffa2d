/*
 * re_class.c - character classes of the fallback matcher (re_nfa.h): code
 * point range sets, RE2's Perl and POSIX classes, ASCII case folding, and
 * membership tests.
 *
 * Case folding follows RE2: under (?i) each part of a class is closed under
 * simple case folding first and negated afterwards, so (?i)\W and
 * (?i)[^k] exclude U+212A KELVIN SIGN, which folds to k.  Only ASCII is
 * folded here; a class that needs folding above ASCII is decided by a PCRE2
 * atom instead (re_parse.c chooses), whose answers are memoised per code
 * point in a small direct-mapped table.
 */
#include "re_nfa.h"

#include "../base/de.h"

#include <stdlib.h>
#include <string.h>

#define MAX_CP 0x10FFFFu

void cel_re_cb_add(cel_re_cb *b, uint32_t lo, uint32_t hi)
{
    if (b->n == b->cap) {
        b->cap = b->cap ? b->cap * 2 : 8;
        b->r = de_xrealloc(b->r, b->cap * sizeof *b->r);
    }
    b->r[b->n++] = (cel_re_range){lo, hi};
}

void cel_re_cb_free(cel_re_cb *b)
{
    free(b->r);
    b->r = NULL;
    b->n = b->cap = 0;
}

static int cmp_range(const void *x, const void *y)
{
    const cel_re_range *a = x, *b = y;
    return a->lo < b->lo ? -1 : a->lo > b->lo;
}

/* Sort and merge overlapping or adjacent ranges. */
static void norm(cel_re_cb *b)
{
    if (b->n < 2)
        return;
    qsort(b->r, b->n, sizeof *b->r, cmp_range);
    uint32_t k = 0;
    for (uint32_t i = 1; i < b->n; i++) {
        if (b->r[i].lo <= b->r[k].hi || b->r[i].lo == b->r[k].hi + 1) {
            if (b->r[i].hi > b->r[k].hi)
                b->r[k].hi = b->r[i].hi;
        } else {
            b->r[++k] = b->r[i];
        }
    }
    b->n = k + 1;
}

static void complement(cel_re_cb *b)
{
    norm(b);
    cel_re_cb out = {0};
    uint32_t next = 0;
    for (uint32_t i = 0; i < b->n; i++) {
        if (b->r[i].lo > next)
            cel_re_cb_add(&out, next, b->r[i].lo - 1);
        next = b->r[i].hi + 1;
    }
    if (next <= MAX_CP)
        cel_re_cb_add(&out, next, MAX_CP);
    cel_re_cb_free(b);
    *b = out;
}

void cel_re_cb_add_folded(cel_re_cb *b, uint32_t lo, uint32_t hi)
{
    cel_re_cb_add(b, lo, hi);
    uint32_t top = hi < 0x7F ? hi : 0x7F;
    for (uint32_t c = lo; c <= top; c++) {
        if (c >= 'a' && c <= 'z')
            cel_re_cb_add(b, c - 32, c - 32);
        else if (c >= 'A' && c <= 'Z')
            cel_re_cb_add(b, c + 32, c + 32);
        if (c == 'k' || c == 'K')
            cel_re_cb_add(b, 0x212A, 0x212A);
        else if (c == 's' || c == 'S')
            cel_re_cb_add(b, 0x17F, 0x17F);
    }
}

/* Append part (folded first when fold, then negated when neg) to b. */
static void add_part(cel_re_cb *b, const cel_re_range *r, size_t nr, bool neg, bool fold)
{
    cel_re_cb t = {0};
    for (size_t i = 0; i < nr; i++) {
        if (fold)
            cel_re_cb_add_folded(&t, r[i].lo, r[i].hi);
        else
            cel_re_cb_add(&t, r[i].lo, r[i].hi);
    }
    if (neg)
        complement(&t);
    for (uint32_t i = 0; i < t.n; i++)
        cel_re_cb_add(b, t.r[i].lo, t.r[i].hi);
    cel_re_cb_free(&t);
}

static const cel_re_range R_DIGIT[] = {{'0', '9'}};
static const cel_re_range R_WORD[] = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
static const cel_re_range R_SPACE[] = {{'\t', '\n'}, {'\f', '\r'}, {' ', ' '}};

bool cel_re_cb_perl(cel_re_cb *b, char which, bool fold)
{
    bool neg = which >= 'A' && which <= 'Z';
    switch (which | 0x20) {
    case 'd': add_part(b, R_DIGIT, DE_ARRAY_LEN(R_DIGIT), neg, fold); return true;
    case 'w': add_part(b, R_WORD, DE_ARRAY_LEN(R_WORD), neg, fold); return true;
    case 's': add_part(b, R_SPACE, DE_ARRAY_LEN(R_SPACE), neg, fold); return true;
    default: return false;
    }
}

/* RE2's POSIX classes: ASCII only. */
static const struct posix {
    const char *name;
    cel_re_range r[4];
    int n;
} POSIX[] = {
    {"alnum", {{'0', '9'}, {'A', 'Z'}, {'a', 'z'}}, 3},
    {"alpha", {{'A', 'Z'}, {'a', 'z'}}, 2},
    {"ascii", {{0, 0x7F}}, 1},
    {"blank", {{'\t', '\t'}, {' ', ' '}}, 2},
    {"cntrl", {{0, 0x1F}, {0x7F, 0x7F}}, 2},
    {"digit", {{'0', '9'}}, 1},
    {"graph", {{'!', '~'}}, 1},
    {"lower", {{'a', 'z'}}, 1},
    {"print", {{' ', '~'}}, 1},
    {"punct", {{'!', '/'}, {':', '@'}, {'[', '`'}, {'{', '~'}}, 4},
    {"space", {{'\t', '\r'}, {' ', ' '}}, 2},
    {"upper", {{'A', 'Z'}}, 1},
    {"word", {{'0', '9'}, {'A', 'Z'}, {'a', 'z'}, {'_', '_'}}, 4},
    {"xdigit", {{'0', '9'}, {'A', 'F'}, {'a', 'f'}}, 3},
};

bool cel_re_cb_posix(cel_re_cb *b, const char *name, size_t len, bool neg, bool fold)
{
    for (size_t i = 0; i < DE_ARRAY_LEN(POSIX); i++)
        if (strlen(POSIX[i].name) == len && !memcmp(POSIX[i].name, name, len)) {
            add_part(b, POSIX[i].r, (size_t)POSIX[i].n, neg, fold);
            return true;
        }
    return false;
}

void cel_re_class_make(cel_re_class *c, cel_re_cb *b, bool negate)
{
    memset(c, 0, sizeof *c);
    if (negate)
        complement(b);
    else
        norm(b);
    uint32_t keep = 0;
    for (uint32_t i = 0; i < b->n; i++) {
        cel_re_range r = b->r[i];
        for (uint32_t ch = r.lo; ch <= r.hi && ch < 0x80; ch++)
            c->ascii[ch >> 6] |= (uint64_t)1 << (ch & 63);
        if (r.hi >= 0x80) {
            if (r.lo < 0x80)
                r.lo = 0x80;
            b->r[keep++] = r;
        }
    }
    if (keep) {
        c->r = de_xmalloc(keep * sizeof *c->r);
        memcpy(c->r, b->r, keep * sizeof *c->r);
    }
    c->nr = keep;
    cel_re_cb_free(b);
}

bool cel_re_class_has(cel_re_class *c, uint32_t cp)
{
    if (cp < 0x80)
        return (c->ascii[cp >> 6] >> (cp & 63)) & 1;
    if (c->atom) {
        uint32_t k = cp % CEL_RE_MEMO;
        if (c->memo_key[k] != cp + 1) {
            c->memo_key[k] = cp + 1;
            c->memo_val[k] = cel_re_atom_test(c->atom, cp);
        }
        return c->memo_val[k];
    }
    uint32_t lo = 0, hi = c->nr;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (cp < c->r[mid].lo)
            hi = mid;
        else if (cp > c->r[mid].hi)
            lo = mid + 1;
        else
            return true;
    }
    return false;
}

void cel_re_class_free(cel_re_class *c)
{
    free(c->r);
    cel_re_atom_free(c->atom);
    c->r = NULL;
    c->atom = NULL;
}

size_t cel_re_utf8_dec(const char *s, size_t n, size_t i, uint32_t *cp)
{
    const unsigned char *u = (const unsigned char *)s + i;
    size_t left = n - i;
    unsigned c = u[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    size_t w;
    uint32_t v, min;
    if (c >= 0xC2 && c <= 0xDF) {
        w = 2, v = c & 0x1F, min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
        w = 3, v = c & 0x0F, min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
        w = 4, v = c & 0x07, min = 0x10000;
    } else {
        *cp = 0xFFFD;
        return 1;
    }
    if (left < w) {
        *cp = 0xFFFD;
        return 1;
    }
    for (size_t k = 1; k < w; k++) {
        if ((u[k] & 0xC0) != 0x80) {
            *cp = 0xFFFD;
            return 1;
        }
        v = (v << 6) | (u[k] & 0x3F);
    }
    if (v < min || v > MAX_CP || (v >= 0xD800 && v <= 0xDFFF)) {
        *cp = 0xFFFD;
        return 1;
    }
    *cp = v;
    return w;
}
