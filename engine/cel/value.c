/*
 * value.c - CEL value semantics shared by the evaluator and the libraries:
 * heterogeneous equality, ordering, maps, UTF-8 helpers, Go-style double
 * formatting.
 *
 * Numeric comparison across int, uint and double follows cel-go exactly,
 * including its rounding: an int compared with a double is converted to
 * double once the double is inside the int64 range (so
 * `dyn(9223372036854775807) < 9223372036854775808.0` is false, as in
 * Kubernetes).  Map keys match numerically the way cel-go's map lookup
 * does: the exact key first, then a lossless int/uint/double conversion.
 */
#include "cel_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- UTF-8 ------------------------------------------------------------------ */

/* Code points = bytes that are not continuation bytes (10xxxxxx); counted
 * eight bytes at a time (the cost rules ask for sizes on every call). */
static inline size_t cont_bytes(uint64_t w)
{
    /* bit 7 set and bit 6 clear, per byte; then the sum of the eight 0/1 bytes */
    uint64_t m = (w & ~(w << 1) & 0x8080808080808080ULL) >> 7;
    return (size_t)((m * 0x0101010101010101ULL) >> 56);
}

size_t cel_utf8_count(const char *s, size_t n)
{
    size_t cont = 0, i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        cont += cont_bytes(w);
    }
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (i < n && n >= 8) {
        /* the last eight bytes, without the ones already counted */
        uint64_t w;
        memcpy(&w, s + n - 8, 8);
        cont += cont_bytes(w >> (8 * (8 - (n - i))));
        return n - cont;
    }
#endif
    for (; i < n; i++)
        cont += ((unsigned char)s[i] & 0xC0) == 0x80;
    return n - cont;
}

bool cel_utf8_valid(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        unsigned char c = p[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t len;
        uint32_t cp;
        if ((c & 0xE0) == 0xC0) {
            len = 2;
            cp = c & 0x1F;
        } else if ((c & 0xF0) == 0xE0) {
            len = 3;
            cp = c & 0x0F;
        } else if ((c & 0xF8) == 0xF0) {
            len = 4;
            cp = c & 0x07;
        } else {
            return false;
        }
        if (i + len > n)
            return false;
        for (size_t k = 1; k < len; k++) {
            if ((p[i + k] & 0xC0) != 0x80)
                return false;
            cp = cp << 6 | (p[i + k] & 0x3F);
        }
        if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
            cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += len;
    }
    return true;
}

/* ---- types ------------------------------------------------------------------ */

int cel_type_of(cel_v v)
{
    return v.t == CV_DEVICE ? CV_MAP : v.t;
}

const char *cel_type_name(int t)
{
    switch (t) {
    case CV_NULL: return "null_type";
    case CV_BOOL: return "bool";
    case CV_INT: return "int";
    case CV_UINT: return "uint";
    case CV_DOUBLE: return "double";
    case CV_STRING: return "string";
    case CV_BYTES: return "bytes";
    case CV_LIST: return "list";
    case CV_MAP: return "map";
    case CV_TYPE: return "type";
    case CV_QTY: return "kubernetes.Quantity";
    case CV_SEMVER: return "kubernetes.Semver";
    case CV_DEVICE: return "map";
    default: return "error";
    }
}

const char *cel_go_type_name(cel_v v)
{
    switch (v.t) {
    case CV_NULL: return "types.Null";
    case CV_BOOL: return "types.Bool";
    case CV_INT: return "types.Int";
    case CV_UINT: return "types.Uint";
    case CV_DOUBLE: return "types.Double";
    case CV_STRING: return "types.String";
    case CV_BYTES: return "types.Bytes";
    case CV_LIST: return "*types.baseList";
    case CV_MAP:
    case CV_DEVICE: return "*types.baseMap";
    case CV_TYPE: return "*types.Type";
    case CV_QTY: return "cel.Quantity";
    case CV_SEMVER: return "cel.Semver";
    default: return "*types.Err";
    }
}

/* ---- numbers ------------------------------------------------------------------ */

#define DBL_MIN_INT64 (-9223372036854775808.0)
#define DBL_MAX_INT64 (9223372036854775808.0)
#define DBL_MAX_UINT64 (18446744073709551616.0)

static int cmp_d(double a, double b) { return a < b ? -1 : a > b ? 1 : 0; }

static int cmp_double_int(double d, int64_t i)
{
    if (d < DBL_MIN_INT64)
        return -1;
    if (d > DBL_MAX_INT64)
        return 1;
    return cmp_d(d, (double)i);
}

static int cmp_double_uint(double d, uint64_t u)
{
    if (d < 0)
        return -1;
    if (d > DBL_MAX_UINT64)
        return 1;
    return cmp_d(d, (double)u);
}

static int cmp_int_uint(int64_t i, uint64_t u)
{
    if (i < 0 || u > (uint64_t)INT64_MAX)
        return -1;
    int64_t d = i - (int64_t)u;
    return d < 0 ? -1 : d > 0 ? 1 : 0;
}

static bool is_num(int t) { return t == CV_INT || t == CV_UINT || t == CV_DOUBLE; }

int cel_equal(cel_ctx *c, const cel_node *at, cel_v a, cel_v b, cel_v *err)
{
    if (a.t == CV_ERR) {
        *err = a;
        return -1;
    }
    if (b.t == CV_ERR) {
        *err = b;
        return -1;
    }
    if (a.t == CV_NULL || b.t == CV_NULL)
        return a.t == b.t;
    switch (a.t) {
    case CV_BOOL: return b.t == CV_BOOL && a.u.b == b.u.b;
    case CV_INT:
        if (b.t == CV_INT)
            return a.u.i == b.u.i;
        if (b.t == CV_UINT)
            return cmp_int_uint(a.u.i, b.u.u) == 0;
        if (b.t == CV_DOUBLE)
            return !isnan(b.u.d) && cmp_double_int(b.u.d, a.u.i) == 0;
        return 0;
    case CV_UINT:
        if (b.t == CV_UINT)
            return a.u.u == b.u.u;
        if (b.t == CV_INT)
            return cmp_int_uint(b.u.i, a.u.u) == 0;
        if (b.t == CV_DOUBLE)
            return !isnan(b.u.d) && cmp_double_uint(b.u.d, a.u.u) == 0;
        return 0;
    case CV_DOUBLE:
        if (isnan(a.u.d))
            return 0;
        if (b.t == CV_DOUBLE)
            return !isnan(b.u.d) && a.u.d == b.u.d;
        if (b.t == CV_INT)
            return cmp_double_int(a.u.d, b.u.i) == 0;
        if (b.t == CV_UINT)
            return cmp_double_uint(a.u.d, b.u.u) == 0;
        return 0;
    case CV_STRING:
    case CV_BYTES:
        return b.t == a.t && a.n == b.n && (a.n == 0 || !memcmp(a.u.s, b.u.s, a.n));
    case CV_TYPE:
        return b.t == CV_TYPE && a.sub == b.sub;
    case CV_QTY:
        if (b.t != CV_QTY) {
            *err = cel_no_overload(c, at);
            return -1;
        }
        return de_qty_cmp(*a.u.q, *b.u.q) == 0;
    case CV_SEMVER:
        if (b.t != CV_SEMVER) {
            *err = cel_no_overload(c, at);
            return -1;
        }
        return de_semver_cmp(a.u.sv, b.u.sv) == 0;
    case CV_LIST: {
        if (b.t != CV_LIST || a.n != b.n)
            return 0;
        for (uint32_t i = 0; i < a.n; i++) {
            cel_v e;
            if (cel_equal(c, at, a.u.items[i], b.u.items[i], &e) == 0)
                return 0;
        }
        return 1;
    }
    case CV_MAP:
    case CV_DEVICE: {
        if (b.t != CV_MAP && b.t != CV_DEVICE)
            return 0;
        if (a.t == CV_DEVICE && b.t == CV_DEVICE && a.u.dev == b.u.dev)
            return 1;
        cel_v am = cel_materialize(c, a), bm = cel_materialize(c, b);
        uint32_t n = cel_map_size(c, am);
        if (n != cel_map_size(c, bm))
            return 0;
        for (uint32_t i = 0; i < n; i++) {
            cel_v k = cel_map_key_at(c, am, i), ov, e;
            if (!cel_map_find(c, bm, k, &ov))
                return 0;
            if (cel_equal(c, at, cel_map_val_at(c, am, i), ov, &e) == 0)
                return 0;
        }
        return 1;
    }
    default:
        return 0;
    }
}

static int nan_err(cel_ctx *c, const cel_node *at, cel_v *err)
{
    *err = cel_err(c, at, "NaN values cannot be ordered");
    return 2;
}

int cel_compare(cel_ctx *c, const cel_node *at, cel_v a, cel_v b, cel_v *err)
{
    if (a.t == CV_ERR) {
        *err = a;
        return 2;
    }
    if (b.t == CV_ERR) {
        *err = b;
        return 2;
    }
    if (is_num(a.t) && is_num(b.t)) {
        if ((a.t == CV_DOUBLE && isnan(a.u.d)) || (b.t == CV_DOUBLE && isnan(b.u.d)))
            return nan_err(c, at, err);
        switch (a.t) {
        case CV_INT:
            if (b.t == CV_INT)
                return a.u.i < b.u.i ? -1 : a.u.i > b.u.i;
            if (b.t == CV_UINT)
                return cmp_int_uint(a.u.i, b.u.u);
            return -cmp_double_int(b.u.d, a.u.i);
        case CV_UINT:
            if (b.t == CV_UINT)
                return a.u.u < b.u.u ? -1 : a.u.u > b.u.u;
            if (b.t == CV_INT)
                return -cmp_int_uint(b.u.i, a.u.u);
            return -cmp_double_uint(b.u.d, a.u.u);
        default:
            if (b.t == CV_DOUBLE)
                return cmp_d(a.u.d, b.u.d);
            if (b.t == CV_INT)
                return cmp_double_int(a.u.d, b.u.i);
            return cmp_double_uint(a.u.d, b.u.u);
        }
    }
    if ((a.t == CV_STRING || a.t == CV_BYTES) && b.t == a.t) {
        size_t m = a.n < b.n ? a.n : b.n;
        int r = m ? memcmp(a.u.s, b.u.s, m) : 0;
        if (r)
            return r < 0 ? -1 : 1;
        return a.n < b.n ? -1 : a.n > b.n;
    }
    if (a.t == CV_BOOL && b.t == CV_BOOL)
        return (int)a.u.b - (int)b.u.b;
    *err = cel_maybe_no_overload(c, at, b);
    return 2;
}

/* ---- maps ---------------------------------------------------------------------- */

static uint64_t key_hash(cel_v k)
{
    switch (k.t) {
    case CV_INT: return de_hash_u64((uint64_t)k.u.i);
    case CV_UINT: return de_hash_u64(k.u.u);
    case CV_DOUBLE: {
        double d = k.u.d == 0 ? 0.0 : k.u.d;
        uint64_t bits;
        memcpy(&bits, &d, sizeof bits);
        return de_hash_u64(bits ^ 0x9e3779b97f4a7c15ULL);
    }
    case CV_STRING:
    case CV_BYTES: return de_hash_bytes(k.u.s, k.n) ^ k.t;
    case CV_BOOL: return de_hash_u64(k.u.b ? 0x51 : 0x50);
    case CV_NULL: return 0x4e554c4cULL;
    case CV_TYPE: return de_hash_u64(0x7000u + k.sub);
    default: return 0x1234;
    }
}

/* Same type and same value (Go map key equality on ref.Val). */
static bool key_same(cel_v a, cel_v b)
{
    if (a.t != b.t)
        return false;
    switch (a.t) {
    case CV_INT: return a.u.i == b.u.i;
    case CV_UINT: return a.u.u == b.u.u;
    case CV_DOUBLE: return a.u.d == b.u.d;
    case CV_BOOL: return a.u.b == b.u.b;
    case CV_NULL: return true;
    case CV_TYPE: return a.sub == b.sub;
    case CV_STRING:
    case CV_BYTES: return a.n == b.n && (a.n == 0 || !memcmp(a.u.s, b.u.s, a.n));
    case CV_QTY: return de_qty_cmp(*a.u.q, *b.u.q) == 0;
    case CV_SEMVER: return de_semver_cmp(a.u.sv, b.u.sv) == 0;
    default: return false;
    }
}

static int64_t plain_find_exact(const cel_map *m, cel_v k)
{
    if (m->icap) {
        uint32_t mask = m->icap - 1;
        for (uint32_t s = (uint32_t)key_hash(k) & mask;; s = (s + 1) & mask) {
            uint32_t e = m->index[s];
            if (!e)
                return -1;
            if (key_same(m->keys[e - 1], k))
                return (int64_t)e - 1;
        }
    }
    for (uint32_t i = 0; i < m->n; i++)
        if (key_same(m->keys[i], k))
            return i;
    return -1;
}

static int64_t plain_find(const cel_map *m, cel_v k)
{
    int64_t i = plain_find_exact(m, k);
    if (i >= 0)
        return i;
    switch (k.t) {
    case CV_DOUBLE: {
        double d = k.u.d;
        if (d >= DBL_MIN_INT64 && d < DBL_MAX_INT64 && d == floor(d)) {
            i = plain_find_exact(m, cv_int((int64_t)d));
            if (i >= 0)
                return i;
        }
        if (d >= 0 && d < DBL_MAX_UINT64 && d == floor(d))
            return plain_find_exact(m, cv_uint((uint64_t)d));
        return -1;
    }
    case CV_INT:
        return k.u.i >= 0 ? plain_find_exact(m, cv_uint((uint64_t)k.u.i)) : -1;
    case CV_UINT:
        return k.u.u <= (uint64_t)INT64_MAX ? plain_find_exact(m, cv_int((int64_t)k.u.u)) : -1;
    default:
        return -1;
    }
}

cel_v cel_map_build(de_arena *a, const cel_v *keys, const cel_v *vals, uint32_t n, bool *oom)
{
    cel_map *m = de_arena_zalloc(a, sizeof *m);
    cel_v *k = de_arena_alloc(a, (n ? n : 1) * sizeof *k);
    cel_v *v = de_arena_alloc(a, (n ? n : 1) * sizeof *v);
    uint32_t icap = 0;
    if (n > 8) {
        icap = 16;
        while (icap < 2 * n)
            icap <<= 1;
    }
    uint32_t *index = icap ? de_arena_zalloc(a, icap * sizeof *index) : NULL;
    if (!m || !k || !v || (icap && !index)) {
        *oom = true;
        return cv_null();
    }
    m->keys = k;
    m->vals = v;
    m->icap = icap;
    m->index = index;
    uint32_t cnt = 0;
    for (uint32_t i = 0; i < n; i++) {
        m->n = cnt;
        int64_t at = plain_find_exact(m, keys[i]);
        if (at >= 0) { /* cel-go keeps the last duplicate */
            v[at] = vals[i];
            continue;
        }
        k[cnt] = keys[i];
        v[cnt] = vals[i];
        cnt++;
        if (icap) {
            uint32_t mask = icap - 1;
            uint32_t s = (uint32_t)key_hash(keys[i]) & mask;
            while (index[s])
                s = (s + 1) & mask;
            index[s] = cnt;
        }
    }
    m->n = cnt;
    cel_v r = {.t = CV_MAP, .sub = MK_PLAIN, .n = cnt};
    r.u.m = m;
    return r;
}

uint32_t cel_map_size(cel_ctx *c, cel_v m)
{
    if (m.t == CV_DEVICE)
        return 4;
    if (m.sub == MK_PLAIN)
        return m.u.m->n;
    return cel_devmap_size(c, m);
}

bool cel_map_find(cel_ctx *c, cel_v m, cel_v key, cel_v *out)
{
    if (m.t == CV_DEVICE)
        m = cel_materialize(c, m);
    if (m.sub == MK_PLAIN) {
        int64_t i = plain_find(m.u.m, key);
        if (i < 0)
            return false;
        *out = m.u.m->vals[i];
        return true;
    }
    return cel_devmap_find(c, m, key, out);
}

cel_v cel_map_key_at(cel_ctx *c, cel_v m, uint32_t i)
{
    if (m.t == CV_DEVICE)
        m = cel_materialize(c, m);
    if (m.sub == MK_PLAIN)
        return m.u.m->keys[i];
    return cel_devmap_key_at(c, m, i);
}

cel_v cel_map_val_at(cel_ctx *c, cel_v m, uint32_t i)
{
    if (m.t == CV_DEVICE)
        m = cel_materialize(c, m);
    if (m.sub == MK_PLAIN)
        return m.u.m->vals[i];
    return cel_devmap_val_at(c, m, i);
}

cel_v cel_materialize(cel_ctx *c, cel_v v)
{
    if (v.t == CV_LIST) {
        bool lazy = false;
        for (uint32_t i = 0; i < v.n && !lazy; i++) {
            int t = v.u.items[i].t;
            lazy = t == CV_DEVICE || (t == CV_MAP && v.u.items[i].sub != MK_PLAIN) || t == CV_LIST ||
                   t == CV_MAP;
        }
        if (!lazy)
            return v;
        cel_v *items = cel_alloc(c, v.n * sizeof *items + 1);
        for (uint32_t i = 0; i < v.n; i++)
            items[i] = cel_materialize(c, v.u.items[i]);
        return cv_list(items, v.n);
    }
    if (v.t == CV_DEVICE) {
        cel_v keys[4], vals[4];
        static const char *const f[] = {"driver", "allowMultipleAllocations", "attributes",
                                        "capacity"};
        for (int i = 0; i < 4; i++) {
            keys[i] = cv_str(f[i], strlen(f[i]));
            vals[i] = cel_materialize(c, cel_device_field(c, NULL, v, f[i], strlen(f[i])));
        }
        bool oom = false;
        cel_v m = cel_map_build(c->a, keys, vals, 4, &oom);
        if (oom)
            cel_abort(c, DE_ENOMEM, "CEL evaluation ran out of memory");
        return m;
    }
    if (v.t != CV_MAP)
        return v;
    uint32_t n = cel_map_size(c, v);
    bool need = v.sub != MK_PLAIN;
    if (!need)
        for (uint32_t i = 0; i < n && !need; i++) {
            int t = v.u.m->vals[i].t;
            need = t == CV_DEVICE || t == CV_MAP || t == CV_LIST;
        }
    if (!need)
        return v;
    cel_v *keys = cel_alloc(c, (n ? n : 1) * sizeof *keys);
    cel_v *vals = cel_alloc(c, (n ? n : 1) * sizeof *vals);
    for (uint32_t i = 0; i < n; i++) {
        keys[i] = cel_map_key_at(c, v, i);
        vals[i] = cel_materialize(c, cel_map_val_at(c, v, i));
    }
    bool oom = false;
    cel_v m = cel_map_build(c->a, keys, vals, n, &oom);
    if (oom)
        cel_abort(c, DE_ENOMEM, "CEL evaluation ran out of memory");
    return m;
}

/* ---- doubles ---------------------------------------------------------------------- */

/* Shortest digits that round-trip, as "d.ddde[+-]X" parts. */
static int shortest(double d, char *digits, int *exp10)
{
    char buf[64];
    for (int p = 1; p <= 17; p++) {
        snprintf(buf, sizeof buf, "%.*e", p - 1, d);
        if (strtod(buf, NULL) == d || p == 17) {
            int nd = 0;
            const char *s = buf;
            if (*s == '-')
                s++;
            for (; *s && *s != 'e'; s++)
                if (*s >= '0' && *s <= '9')
                    digits[nd++] = *s;
            digits[nd] = 0;
            *exp10 = atoi(s + 1);
            /* strip trailing zeros */
            while (nd > 1 && digits[nd - 1] == '0')
                digits[--nd] = 0;
            return nd;
        }
    }
    return 0;
}

size_t cel_fmt_double_g(double d, char *buf, size_t cap)
{
    if (isnan(d))
        return (size_t)snprintf(buf, cap, "NaN");
    if (isinf(d))
        return (size_t)snprintf(buf, cap, d > 0 ? "+Inf" : "-Inf");
    if (d == 0)
        return (size_t)snprintf(buf, cap, signbit(d) ? "-0" : "0");
    char digits[32];
    int x;
    int nd = shortest(d, digits, &x);
    char out[64];
    size_t o = 0;
    if (d < 0)
        out[o++] = '-';
    if (x < -4 || x >= 6) { /* Go %g, shortest: %e when exp < -4 || exp >= 6 */
        out[o++] = digits[0];
        if (nd > 1) {
            out[o++] = '.';
            for (int i = 1; i < nd; i++)
                out[o++] = digits[i];
        }
        o += (size_t)snprintf(out + o, sizeof out - o, "e%c%02d", x < 0 ? '-' : '+', x < 0 ? -x : x);
    } else if (x < 0) {
        out[o++] = '0';
        out[o++] = '.';
        for (int i = -1; i > x; i--)
            out[o++] = '0';
        for (int i = 0; i < nd; i++)
            out[o++] = digits[i];
    } else {
        for (int i = 0; i <= x; i++)
            out[o++] = i < nd ? digits[i] : '0';
        if (nd > x + 1) {
            out[o++] = '.';
            for (int i = x + 1; i < nd; i++)
                out[o++] = digits[i];
        }
    }
    out[o] = 0;
    return (size_t)snprintf(buf, cap, "%s", out);
}
