/*
 * dec_fast.h - the JSON tokenizer of the snapshot fast path (dec_fast.c for
 * ResourceSlices, dec_fast_node.c for Nodes), private to those files.
 *
 * Every helper either succeeds or "bails": it sets fx.bail and returns
 * false/0, and the caller gives the whole item to jansson and the full
 * decoder.  Values are hashed as they are read (when fx.hash is set) into
 * the same structural hash as graph_files.c's json_hash, for duplicate
 * detection in dg_load_path.  Static inline: the per-byte loops are inlined
 * into both decoders.
 */
#ifndef DRAENGINE_DEC_FAST_H
#define DRAENGINE_DEC_FAST_H

#include "dec.h"

#include <string.h>

/* What one position (the n-th attribute, capacity or consumed counter of a
 * device) held in the device before, per driver: devices of a snapshot
 * almost always repeat their names and many of their values (model, driver
 * version, memory size), so the split of a name into (domain, ID), the
 * checks, the interning of names and values and the parsing of quantities
 * and versions are done again only when the text differs.  Copies of the
 * text, not pointers: it outlives the slice, and the snapshot's pages are
 * dropped as they are consumed.  Longer texts are simply not remembered. */
#define MEMO_TEXT 64
typedef struct qtycache {
    char q[32];
    uint8_t qn; /* 0: none */
    de_qty qv;
} qtycache;

typedef struct keycache {
    char k[MEMO_TEXT];
    uint8_t kn; /* 0: nothing remembered (a valid name is never empty) */
    uint8_t bare;
    uint32_t domain, name;
    /* the last string or version value */
    char v[MEMO_TEXT];
    uint8_t vn, vkind; /* vkind 0: none */
    uint32_t vid;
    qtycache q;
} keycache;

/* a counter of consumesCounters: its name (a DNS label, interned) */
typedef struct ctrcache {
    char k[MEMO_TEXT];
    uint8_t kn;
    uint32_t name;
    qtycache q;
} ctrcache;

/* Slices of one node come from several drivers, one after the other: a
 * set of positions per driver (the least recently chosen one is reused). */
#define MEMO_SETS 8
typedef struct keyset {
    uint32_t driver;
    uint64_t used; /* when last chosen; 0: never */
    keycache ak[40], ck[40];
    ctrcache cc[2][32];
} keyset;

/* Quantities by text, whatever their position (a counter's value moves
 * with the partition profile): a direct-mapped table behind the
 * positions' own entries. */
#define MEMO_QTYS 256

struct dec_fast_memo {
    keyset set[MEMO_SETS];
    uint64_t clock;
    qtycache qty[MEMO_QTYS];
};

typedef struct fx {
    const char *p, *end;
    dec *d;
    bool bail;
    bool hash; /* compute the structural hash (dg_load_path's duplicates) */
    dec_fast_memo *m;
    keyset *ks; /* the current driver's (devices()) */
} fx;

/* A reader over text[0, len); d and m may be NULL where only tokens are read. */
static inline void fx_init(fx *f, const char *text, size_t len, dec *d, dec_fast_memo *m, bool hash)
{
    memset(f, 0, sizeof *f);
    f->p = text;
    f->end = text + len;
    f->d = d;
    f->m = m;
    f->hash = hash;
}

/* Give up: the caller decodes the item with the full decoder.  Also the
 * `false` of the bool helpers. */
#define BAIL(f)            \
    do {                   \
        (f)->bail = true;  \
        return 0;          \
    } while (0)

/* Items gathered in a stack array, copied into the decode arena at their
 * count (NULL: the arena is full, the caller bails). */
static inline void *keep(fx *f, const void *tmp, size_t n, size_t size)
{
    void *p = dec_alloc(f->d, n * size);
    if (p)
        memcpy(p, tmp, n * size);
    return p;
}

/* Whitespace: snapshots are mostly written without any, so a byte above
 * ' ' ends it at the first test. */
static inline void ws(fx *f)
{
    while (f->p < f->end && (unsigned char)*f->p <= ' ' &&
           (*f->p == ' ' || *f->p == '\n' || *f->p == '\r' || *f->p == '\t'))
        f->p++;
}

static inline bool eat(fx *f, char c)
{
    if (f->p < f->end && *f->p == c) {
        f->p++;
        return true;
    }
    ws(f);
    if (f->p < f->end && *f->p == c) {
        f->p++;
        return true;
    }
    return false;
}

#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL

/* The bytes of w (eight string bytes, little-endian) that end a plain
 * string: '"', '\\', control characters, non-ASCII.  The lowest flagged byte
 * is always a real one (borrows only run upwards), which is all str needs. */
static inline uint64_t stops(uint64_t w)
{
    uint64_t q = w ^ (ONES * '"'), b = w ^ (ONES * '\\');
    return (((q - ONES) & ~q) | ((b - ONES) & ~b) | (w - ONES * 0x20) | w) & HIGHS;
}

/* A string without escapes or non-ASCII bytes (anything else: bail),
 * scanned eight bytes at a time where the byte order allows. */
static inline bool str(fx *f, const char **s, size_t *n)
{
    if (f->p < f->end && *f->p != '"')
        ws(f);
    if (f->p >= f->end || *f->p != '"')
        BAIL(f);
    const char *b = ++f->p, *p = b;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    while (f->end - p >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        uint64_t m = stops(w);
        if (m) {
            p += __builtin_ctzll(m) >> 3;
            goto found;
        }
        p += 8;
    }
#endif
    while (p < f->end && *p != '"' && *p != '\\' && (unsigned char)*p >= 0x20 && (unsigned char)*p < 0x80)
        p++;
    if (p >= f->end)
        BAIL(f);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
found:
#endif
    if (*p != '"')
        BAIL(f);
    *s = b;
    *n = (size_t)(p - b);
    f->p = p + 1;
    return true;
}

static inline uint64_t hstr(fx *f, const char *s, size_t n) { return f->hash ? de_hash_bytes(s, n) ^ 3 : 0; }

static inline bool integer(fx *f, int64_t *v, uint64_t *h)
{
    ws(f);
    const char *b = f->p;
    bool neg = false;
    if (f->p < f->end && *f->p == '-') {
        neg = true;
        f->p++;
    }
    if (f->p >= f->end || *f->p < '0' || *f->p > '9' || (*f->p == '0' && f->p + 1 < f->end && f->p[1] >= '0' && f->p[1] <= '9'))
        BAIL(f);
    uint64_t x = 0;
    while (f->p < f->end && *f->p >= '0' && *f->p <= '9') {
        if (x > (UINT64_MAX - 9) / 10)
            BAIL(f);
        x = x * 10 + (uint64_t)(*f->p - '0');
        f->p++;
    }
    if (f->p < f->end && (*f->p == '.' || *f->p == 'e' || *f->p == 'E'))
        BAIL(f);
    if ((!neg && x > INT64_MAX) || (neg && x > (uint64_t)INT64_MAX + 1) || f->p - b > 20)
        BAIL(f);
    *v = neg ? (int64_t)(0 - x) : (int64_t)x;
    *h = f->hash ? de_hash_u64((uint64_t)*v ^ 4) : 0;
    return true;
}

static inline bool boolean(fx *f, bool *v, uint64_t *h)
{
    ws(f);
    if (f->end - f->p >= 4 && !memcmp(f->p, "true", 4)) {
        f->p += 4;
        *v = true;
        *h = 6;
        return true;
    }
    if (f->end - f->p >= 5 && !memcmp(f->p, "false", 5)) {
        f->p += 5;
        *v = false;
        *h = 7;
        return true;
    }
    BAIL(f);
}

/* Object iteration: begin with '{', then next_key until it returns false.
 * `keys` collects the member names to refuse duplicates: a key is compared
 * with the earlier ones only when its fingerprint's bit is set in `seen`
 * already (one test for most keys instead of one per earlier key). */
typedef struct objit {
    uint64_t h;
    bool first, hash;
    uint64_t seen;
    const char *keys[40];
    uint32_t kfp[40]; /* fingerprints: length and three bytes */
    int nkeys;
} objit;

static inline bool obj_begin(fx *f, objit *it)
{
    it->h = 0x9e3779b97f4a7c15ULL;
    it->first = true;
    it->hash = f->hash;
    it->nkeys = 0;
    it->seen = 0;
    if (!eat(f, '{'))
        BAIL(f);
    return true;
}

/* Remember key k of the object, refusing (bail) one seen before. */
static inline bool key_seen(fx *f, objit *it, const char *k, size_t kn)
{
    const unsigned char *u = (const unsigned char *)k;
    uint32_t fp = kn ? ((uint32_t)kn & 0xff) | (uint32_t)u[0] << 8 | (uint32_t)u[kn - 1] << 16 |
                           (uint32_t)u[kn / 2] << 24
                     : 0;
    uint64_t bit = (uint64_t)1 << ((fp * 0x9e3779b1u) >> 26);
    if (it->seen & bit) {
        for (int i = 0; i < it->nkeys; i++)
            if (it->kfp[i] == fp && !memcmp(it->keys[i], k, kn) && it->keys[i][kn] == '"')
                BAIL(f); /* duplicate key: leave it to jansson's rules */
    }
    it->seen |= bit;
    if (it->nkeys == 40)
        BAIL(f);
    it->keys[it->nkeys] = k;
    it->kfp[it->nkeys++] = fp;
    return true;
}

static inline bool next_key(fx *f, objit *it, const char **k, size_t *kn)
{
    if (f->bail)
        return false;
    if (f->p < f->end && *f->p <= ' ')
        ws(f);
    if (f->p >= f->end)
        BAIL(f);
    if (*f->p == '}') {
        f->p++;
        return false;
    }
    if (!it->first) {
        if (*f->p != ',')
            BAIL(f);
        f->p++;
    }
    it->first = false;
    if (!str(f, k, kn) || !eat(f, ':'))
        BAIL(f);
    return key_seen(f, it, *k, *kn);
}

/* next_key for an attribute, capacity or counter: when the text goes on
 * with the key `ek` (ekn bytes, 0: none) that this position held in the
 * driver's previous device (`"key":`, no whitespace), it is taken without
 * scanning and *hit says so. */
static inline bool next_key_at(fx *f, objit *it, const char *ek, size_t ekn, const char **k, size_t *kn,
                               bool *hit)
{
    *hit = false;
    if (ekn && !f->bail) {
        const char *p = f->p;
        size_t n = ekn;
        if (!it->first) {
            if (p >= f->end || *p != ',')
                return next_key(f, it, k, kn);
            p++;
        }
        if ((size_t)(f->end - p) >= n + 3 && p[0] == '"' && p[n + 1] == '"' && p[n + 2] == ':' &&
            !memcmp(p + 1, ek, n)) {
            *k = p + 1;
            *kn = n;
            f->p = p + n + 3;
            it->first = false;
            *hit = true;
            return key_seen(f, it, *k, *kn);
        }
    }
    return next_key(f, it, k, kn);
}

static inline void member(objit *it, const char *k, size_t kn, uint64_t vh)
{
    if (it->hash)
        it->h += de_hash_u64(de_hash_bytes(k, kn) ^ vh);
}

static inline uint64_t obj_hash(const objit *it) { return de_hash_u64(it->h ^ 1); }

/* Array iteration: arr_begin with '[', then arr_next before each element
 * until it returns false (past the ']'); elem folds in an element's hash. */
typedef struct arrit {
    uint64_t h;
    bool first, hash;
} arrit;

static inline bool arr_begin(fx *f, arrit *it)
{
    it->h = 0x51ed270b27f1a3c5ULL;
    it->first = true;
    it->hash = f->hash;
    if (!eat(f, '['))
        BAIL(f);
    return true;
}

static inline bool arr_next(fx *f, arrit *it)
{
    if (f->bail)
        return false;
    if (it->first) {
        it->first = false;
        return !eat(f, ']');
    }
    if (eat(f, ','))
        return true;
    if (!eat(f, ']'))
        BAIL(f);
    return false;
}

static inline void elem(arrit *it, uint64_t eh)
{
    if (it->hash)
        it->h = de_hash_u64(it->h ^ eh);
}

static inline uint64_t arr_hash(const arrit *it) { return de_hash_u64(it->h ^ 2); }

#define KEY(lit) (kn == sizeof(lit) - 1 && !memcmp(k, lit, sizeof(lit) - 1))

/* string member: interned id + hash */
static inline bool str_id(fx *f, uint32_t *id, uint64_t *h, const char **s, size_t *n)
{
    if (!str(f, s, n))
        return false;
    *id = dec_intern(f->d, *s, *n);
    *h = hstr(f, *s, *n);
    return true;
}

/* metadata (dec_fast.c): name, uid, resourceVersion, generation,
 * creationTimestamp, labels, generateName, ownerReferences; the name must be
 * a DNS subdomain */
uint64_t dec_fx_meta(fx *f, dg_meta *m);
/* a quantity, parsed again only when its text differs from the one the
 * position `c` (may be NULL) held before */
bool dec_fx_qty(fx *f, qtycache *c, const char *s, size_t n, de_qty *out);

/* {"value": "<quantity>"}, the value of a capacity or counter (qc: the
 * position's memo, may be NULL); its structural hash in *h.  The usual
 * spelling is matched as text first. */
static inline bool qty_value(fx *f, qtycache *qc, de_qty *out, uint64_t *h)
{
    objit vi;
    const char *vk, *v;
    size_t vkn, vn;
    if (f->end - f->p > 10 && !memcmp(f->p, "{\"value\":", 9)) {
        vi.h = 0x9e3779b97f4a7c15ULL;
        vi.hash = f->hash;
        vk = f->p + 2;
        vkn = 5;
        f->p += 9;
        if (!str(f, &v, &vn) || !dec_fx_qty(f, qc, v, vn, out) || !eat(f, '}'))
            BAIL(f);
        member(&vi, vk, vkn, hstr(f, v, vn));
        *h = obj_hash(&vi);
        return true;
    }
    if (!obj_begin(f, &vi))
        return false;
    while (next_key(f, &vi, &vk, &vkn)) {
        if (!(vkn == 5 && !memcmp(vk, "value", 5)) || !str(f, &v, &vn))
            BAIL(f);
        if (!dec_fx_qty(f, qc, v, vn, out))
            return false;
        member(&vi, vk, vkn, hstr(f, v, vn));
    }
    if (f->bail || vi.nkeys != 1)
        BAIL(f);
    *h = obj_hash(&vi);
    return true;
}

#endif
