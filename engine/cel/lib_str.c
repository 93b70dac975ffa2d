/*
 * lib_str.c - ext.Strings version 2 as cel-go implements it (Kubernetes'
 * base environment): charAt, indexOf, lastIndexOf, lowerAscii, upperAscii,
 * replace, split, substring, trim, join.
 *
 * Indices count code points.  Where cel-go and the spec disagree, cel-go
 * wins (Kubernetes parity): indexOf/lastIndexOf with an offset past the end
 * return -1 instead of an error.  replace and split are Go's
 * strings.Replace / strings.SplitN, including their behaviour for an empty
 * separator; trim strips Unicode White_Space like strings.TrimSpace.
 */
#include "cel_int.h"

#include <string.h>

/* byte offsets of each code point, plus the end: count + 1 entries */
static uint32_t *offsets(cel_ctx *c, const char *s, uint32_t n, uint32_t *count)
{
    uint32_t cnt = (uint32_t)cel_utf8_count(s, n);
    uint32_t *o = cel_alloc(c, (cnt + 1) * sizeof *o);
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80)
            o[k++] = i;
    o[cnt] = n;
    *count = cnt;
    return o;
}

static cel_v sub_str(const char *s, uint32_t from, uint32_t to) { return cv_str(s + from, to - from); }

static int64_t index_of(const char *s, uint32_t n, const uint32_t *off, uint32_t len, const char *t,
                        uint32_t tn, uint32_t tlen, int64_t from)
{
    if (tlen > len)
        return -1;
    for (int64_t i = from; i < (int64_t)len - ((int64_t)tlen - 1); i++)
        if (off[i] + tn <= n && !memcmp(s + off[i], t, tn))
            return i;
    return -1;
}

static bool is_space(uint32_t cp)
{
    switch (cp) {
    case '\t': case '\n': case '\v': case '\f': case '\r': case ' ': case 0x85: case 0xA0:
    case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000:
        return true;
    default:
        return cp >= 0x2000 && cp <= 0x200A;
    }
}

static uint32_t decode(const char *s, uint32_t at, uint32_t end, uint32_t *len)
{
    const unsigned char *p = (const unsigned char *)s + at;
    unsigned char c0 = p[0];
    if (c0 < 0x80 || at + 1 >= end) {
        *len = 1;
        return c0;
    }
    if ((c0 & 0xE0) == 0xC0) {
        *len = 2;
        return (uint32_t)(c0 & 0x1F) << 6 | (p[1] & 0x3F);
    }
    if ((c0 & 0xF0) == 0xE0 && at + 2 < end) {
        *len = 3;
        return (uint32_t)(c0 & 0x0F) << 12 | (uint32_t)(p[1] & 0x3F) << 6 | (p[2] & 0x3F);
    }
    if (at + 3 < end) {
        *len = 4;
        return (uint32_t)(c0 & 0x07) << 18 | (uint32_t)(p[1] & 0x3F) << 12 |
               (uint32_t)(p[2] & 0x3F) << 6 | (p[3] & 0x3F);
    }
    *len = 1;
    return c0;
}

static uint32_t count_sub(const char *s, uint32_t n, const char *t, uint32_t tn)
{
    if (tn == 0)
        return (uint32_t)cel_utf8_count(s, n) + 1;
    uint32_t cnt = 0;
    const char *p = s, *end = s + n;
    while ((size_t)(end - p) >= tn) {
        const char *f = memmem(p, (size_t)(end - p), t, tn);
        if (!f)
            break;
        cnt++;
        p = f + tn;
    }
    return cnt;
}

static cel_v replace(cel_ctx *c, cel_v s, cel_v old, cel_v nw, int64_t lim)
{
    if ((old.n == nw.n && !memcmp(old.u.s, nw.u.s, old.n)) || lim == 0)
        return s;
    uint32_t m = count_sub(s.u.s, s.n, old.u.s, old.n);
    if (m == 0)
        return s;
    uint64_t cnt = (lim < 0 || (uint64_t)lim > m) ? m : (uint64_t)lim;
    uint64_t cap = (uint64_t)s.n + cnt * nw.n + 1;
    if (cap > (uint64_t)UINT32_MAX / 2)
        cel_abort(c, DE_ENOMEM, "CEL evaluation exceeded its memory limit");
    char *o = cel_alloc(c, (size_t)cap);
    size_t k = 0;
    uint32_t start = 0;
    for (uint64_t i = 0; i < cnt; i++) {
        uint32_t j = start;
        if (old.n == 0) {
            if (i > 0 && start < s.n) {
                uint32_t w;
                decode(s.u.s, start, s.n, &w);
                j += w;
            }
        } else {
            const char *f = memmem(s.u.s + start, s.n - start, old.u.s, old.n);
            j = (uint32_t)(f - s.u.s);
        }
        memcpy(o + k, s.u.s + start, j - start);
        k += j - start;
        memcpy(o + k, nw.u.s, nw.n);
        k += nw.n;
        start = j + old.n;
    }
    memcpy(o + k, s.u.s + start, s.n - start);
    k += s.n - start;
    o[k] = 0;
    return cv_str(o, k);
}

static cel_v split(cel_ctx *c, cel_v s, cel_v sep, int64_t lim)
{
    if (lim == 0)
        return cv_list(NULL, 0);
    if (sep.n == 0) { /* explode */
        uint32_t l;
        uint32_t *off = offsets(c, s.u.s, s.n, &l);
        uint64_t cnt = (lim < 0 || (uint64_t)lim > l) ? l : (uint64_t)lim;
        cel_v *items = cel_alloc(c, (size_t)(cnt ? cnt : 1) * sizeof *items);
        for (uint64_t i = 0; i + 1 < cnt; i++)
            items[i] = sub_str(s.u.s, off[i], off[i + 1]);
        if (cnt > 0)
            items[cnt - 1] = sub_str(s.u.s, off[cnt - 1], s.n);
        return cv_list(items, (uint32_t)cnt);
    }
    uint64_t cnt = lim < 0 ? (uint64_t)count_sub(s.u.s, s.n, sep.u.s, sep.n) + 1 : (uint64_t)lim;
    if (cnt > (uint64_t)s.n + 1)
        cnt = (uint64_t)s.n + 1;
    cel_v *items = cel_alloc(c, (size_t)cnt * sizeof *items);
    uint32_t i = 0, start = 0;
    while (i + 1 < cnt) {
        const char *f = s.n - start >= sep.n ? memmem(s.u.s + start, s.n - start, sep.u.s, sep.n) : NULL;
        if (!f)
            break;
        uint32_t m = (uint32_t)(f - s.u.s);
        items[i++] = sub_str(s.u.s, start, m);
        start = m + sep.n;
    }
    items[i++] = sub_str(s.u.s, start, s.n);
    return cv_list(items, i);
}

cel_v cel_call_str(cel_ctx *c, const cel_node *n, int impl, cel_v *a, int na)
{
    cel_v s = a[0];
    switch (impl) {
    case IM_CHAR_AT: {
        uint32_t len;
        uint32_t *off = offsets(c, s.u.s, s.n, &len);
        int64_t i = a[1].u.i;
        if (i < 0 || i > (int64_t)len)
            return cel_err(c, n, "index out of range: %lld", (long long)i);
        if (i == (int64_t)len)
            return cv_str("", 0);
        return sub_str(s.u.s, off[i], off[i + 1]);
    }
    case IM_INDEX_OF: {
        int64_t from = na > 2 ? a[2].u.i : 0;
        if (from < 0)
            return cel_err(c, n, "index out of range: %lld", (long long)from);
        uint32_t len, tlen = (uint32_t)cel_utf8_count(a[1].u.s, a[1].n);
        uint32_t *off = offsets(c, s.u.s, s.n, &len);
        if (a[1].n == 0)
            return cv_int(from > (int64_t)len ? (int64_t)len : from);
        if (from >= (int64_t)len)
            return cv_int(-1);
        return cv_int(index_of(s.u.s, s.n, off, len, a[1].u.s, a[1].n, tlen, from));
    }
    case IM_LAST_INDEX_OF: {
        uint32_t len, tlen = (uint32_t)cel_utf8_count(a[1].u.s, a[1].n);
        uint32_t *off = offsets(c, s.u.s, s.n, &len);
        int64_t from;
        if (na > 2) {
            from = a[2].u.i;
            if (from < 0)
                return cel_err(c, n, "index out of range: %lld", (long long)from);
        } else {
            if (a[1].n == 0)
                return cv_int(len);
            if (s.n < a[1].n)
                return cv_int(-1);
            from = (int64_t)len - 1;
        }
        if (a[1].n == 0)
            return cv_int(from > (int64_t)len ? (int64_t)len : from);
        if (from >= (int64_t)len)
            return cv_int(-1);
        if (from > (int64_t)len - (int64_t)tlen)
            from = (int64_t)len - (int64_t)tlen;
        for (int64_t i = from; i >= 0; i--)
            if (off[i] + a[1].n <= s.n && !memcmp(s.u.s + off[i], a[1].u.s, a[1].n))
                return cv_int(i);
        return cv_int(-1);
    }
    case IM_LOWER:
    case IM_UPPER: {
        char *o = cel_alloc(c, s.n + 1);
        for (uint32_t i = 0; i < s.n; i++) {
            char ch = s.u.s[i];
            if (impl == IM_LOWER && ch >= 'A' && ch <= 'Z')
                ch = (char)(ch + 32);
            else if (impl == IM_UPPER && ch >= 'a' && ch <= 'z')
                ch = (char)(ch - 32);
            o[i] = ch;
        }
        o[s.n] = 0;
        return cv_str(o, s.n);
    }
    case IM_REPLACE: return replace(c, s, a[1], a[2], na > 3 ? a[3].u.i : -1);
    case IM_SPLIT: return split(c, s, a[1], na > 2 ? a[2].u.i : -1);
    case IM_SUBSTRING: {
        uint32_t len;
        uint32_t *off = offsets(c, s.u.s, s.n, &len);
        int64_t st = a[1].u.i, en = na > 2 ? a[2].u.i : (int64_t)len;
        if (na > 2 && st > en)
            return cel_err(c, n, "invalid substring range. start: %lld, end: %lld", (long long)st,
                           (long long)en);
        if (st < 0 || st > (int64_t)len)
            return cel_err(c, n, "index out of range: %lld", (long long)st);
        if (en < 0 || en > (int64_t)len)
            return cel_err(c, n, "index out of range: %lld", (long long)en);
        return sub_str(s.u.s, off[st], off[en]);
    }
    case IM_TRIM: {
        uint32_t b = 0, e = s.n, w;
        while (b < e) {
            uint32_t cp = decode(s.u.s, b, e, &w);
            if (!is_space(cp))
                break;
            b += w;
        }
        while (e > b) {
            uint32_t st = e - 1;
            while (st > b && ((unsigned char)s.u.s[st] & 0xC0) == 0x80)
                st--;
            uint32_t cp = decode(s.u.s, st, e, &w);
            if (!is_space(cp))
                break;
            e = st;
        }
        return sub_str(s.u.s, b, e);
    }
    case IM_JOIN: {
        cel_v sep = na > 1 ? a[1] : cv_str("", 0);
        uint64_t tot = 0;
        for (uint32_t i = 0; i < s.n; i++) {
            cel_v e = s.u.items[i];
            if (e.t != CV_STRING) {
                char kt[128];
                cel_key_text(e, kt, sizeof kt);
                return cel_err(c, n, "join: invalid input: %s", kt);
            }
            tot += e.n + (i ? sep.n : 0);
        }
        if (tot > (uint64_t)UINT32_MAX / 2)
            cel_abort(c, DE_ENOMEM, "CEL evaluation exceeded its memory limit");
        char *o = cel_alloc(c, (size_t)tot + 1);
        size_t k = 0;
        for (uint32_t i = 0; i < s.n; i++) {
            if (i) {
                memcpy(o + k, sep.u.s, sep.n);
                k += sep.n;
            }
            memcpy(o + k, s.u.items[i].u.s, s.u.items[i].n);
            k += s.u.items[i].n;
        }
        o[k] = 0;
        return cv_str(o, k);
    }
    default:
        return cel_err(c, n, "internal error: unknown function");
    }
}
