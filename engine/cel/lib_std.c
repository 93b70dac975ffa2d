/*
 * lib_std.c - the CEL standard library: logic, arithmetic with overflow
 * errors, comparison, indexing, membership, size, type conversions and the
 * string predicates (../shared/docs/cel.md §5-8).
 *
 * Conversions from strings follow Go's strconv, as cel-go does: ParseInt /
 * ParseUint in base 10 (a sign only for int), ParseFloat (inf, infinity,
 * nan, hex floats with a p exponent; out of range is an error), ParseBool
 * (1 t T TRUE true True 0 f F FALSE false False).
 */
#include "cel_int.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define DBL_MIN_INT64 (-9223372036854775808.0)
#define DBL_MAX_INT64 (9223372036854775808.0)
#define DBL_MAX_UINT64 (18446744073709551616.0)

void cel_key_text(cel_v k, char *buf, size_t cap)
{
    switch (k.t) {
    case CV_STRING: snprintf(buf, cap, "%.*s", (int)(k.n < 200 ? k.n : 200), k.u.s); break;
    case CV_INT: snprintf(buf, cap, "%lld", (long long)k.u.i); break;
    case CV_UINT: snprintf(buf, cap, "%llu", (unsigned long long)k.u.u); break;
    case CV_DOUBLE: cel_fmt_double_g(k.u.d, buf, cap); break;
    case CV_BOOL: snprintf(buf, cap, "%s", k.u.b ? "true" : "false"); break;
    case CV_NULL: snprintf(buf, cap, "NULL_VALUE"); break;
    default: snprintf(buf, cap, "%s", cel_type_name(cel_type_of(k))); break;
    }
}

static cel_v overflow(cel_ctx *c, const cel_node *n) { return cel_err(c, n, "integer overflow"); }
static cel_v uoverflow(cel_ctx *c, const cel_node *n) { return cel_err(c, n, "unsigned integer overflow"); }

static char *concat(cel_ctx *c, const char *a, size_t an, const char *b, size_t bn)
{
    char *s = cel_alloc(c, an + bn + 1);
    if (an)
        memcpy(s, a, an);
    if (bn)
        memcpy(s + an, b, bn);
    s[an + bn] = 0;
    return s;
}

static cel_v add(cel_ctx *c, const cel_node *n, cel_v a, cel_v b)
{
    if (a.t != b.t)
        return cel_maybe_no_overload(c, n, b);
    int64_t r;
    uint64_t ru;
    switch (a.t) {
    case CV_INT:
        if (__builtin_add_overflow(a.u.i, b.u.i, &r))
            return overflow(c, n);
        return cv_int(r);
    case CV_UINT:
        if (__builtin_add_overflow(a.u.u, b.u.u, &ru))
            return uoverflow(c, n);
        return cv_uint(ru);
    case CV_DOUBLE: return cv_double(a.u.d + b.u.d);
    case CV_STRING: return cv_str(concat(c, a.u.s, a.n, b.u.s, b.n), (size_t)a.n + b.n);
    case CV_BYTES: return cv_bytes(concat(c, a.u.s, a.n, b.u.s, b.n), (size_t)a.n + b.n);
    case CV_LIST: {
        uint64_t tot = (uint64_t)a.n + b.n;
        if (tot > UINT32_MAX / 2)
            cel_abort(c, DE_ENOMEM, "CEL evaluation exceeded its memory limit");
        cel_v *items = cel_alloc(c, (size_t)(tot ? tot : 1) * sizeof *items);
        if (a.n)
            memcpy(items, a.u.items, a.n * sizeof *items);
        if (b.n)
            memcpy(items + a.n, b.u.items, b.n * sizeof *items);
        return cv_list(items, (uint32_t)tot);
    }
    default: return cel_no_overload(c, n);
    }
}

static cel_v arith(cel_ctx *c, const cel_node *n, int impl, cel_v a, cel_v b)
{
    if (a.t != b.t || (a.t != CV_INT && a.t != CV_UINT && a.t != CV_DOUBLE))
        return cel_maybe_no_overload(c, n, b);
    if (a.t == CV_DOUBLE) {
        switch (impl) {
        case IM_SUB: return cv_double(a.u.d - b.u.d);
        case IM_MUL: return cv_double(a.u.d * b.u.d);
        case IM_DIV: return cv_double(a.u.d / b.u.d);
        default: return cel_no_overload(c, n);
        }
    }
    if (a.t == CV_INT) {
        int64_t x = a.u.i, y = b.u.i, r;
        switch (impl) {
        case IM_SUB:
            if (__builtin_sub_overflow(x, y, &r))
                return overflow(c, n);
            return cv_int(r);
        case IM_MUL:
            if (__builtin_mul_overflow(x, y, &r))
                return overflow(c, n);
            return cv_int(r);
        case IM_DIV:
            if (y == 0)
                return cel_err(c, n, "division by zero");
            if (x == INT64_MIN && y == -1)
                return overflow(c, n);
            return cv_int(x / y);
        default:
            if (y == 0)
                return cel_err(c, n, "modulus by zero");
            if (x == INT64_MIN && y == -1)
                return overflow(c, n);
            return cv_int(x % y);
        }
    }
    uint64_t x = a.u.u, y = b.u.u, r;
    switch (impl) {
    case IM_SUB:
        if (__builtin_sub_overflow(x, y, &r))
            return uoverflow(c, n);
        return cv_uint(r);
    case IM_MUL:
        if (__builtin_mul_overflow(x, y, &r))
            return uoverflow(c, n);
        return cv_uint(r);
    case IM_DIV:
        if (y == 0)
            return cel_err(c, n, "division by zero");
        return cv_uint(x / y);
    default:
        if (y == 0)
            return cel_err(c, n, "modulus by zero");
        return cv_uint(x % y);
    }
}

static cel_v index_of(cel_ctx *c, const cel_node *n, cel_v a, cel_v k)
{
    if (a.t == CV_LIST) {
        int64_t i;
        switch (k.t) {
        case CV_INT: i = k.u.i; break;
        case CV_UINT:
            if (k.u.u > (uint64_t)INT64_MAX)
                return cel_err(c, n, "unsupported index value %llu in list", (unsigned long long)k.u.u);
            i = (int64_t)k.u.u;
            break;
        case CV_DOUBLE:
            if (!(k.u.d >= DBL_MIN_INT64 && k.u.d < DBL_MAX_INT64) || k.u.d != floor(k.u.d)) {
                char b[64];
                cel_fmt_double_g(k.u.d, b, sizeof b);
                return cel_err(c, n, "unsupported index value %s in list", b);
            }
            i = (int64_t)k.u.d;
            break;
        default:
            return cel_err(c, n, "unsupported index type '%s' in list", cel_type_name(cel_type_of(k)));
        }
        if (i < 0 || i >= (int64_t)a.n)
            return cel_err(c, n, "index '%lld' out of range in list size '%u'", (long long)i, a.n);
        return a.u.items[i];
    }
    if (a.t == CV_MAP || a.t == CV_DEVICE) {
        cel_v out;
        if (cel_map_find(c, a, k, &out))
            return out;
        char kt[256];
        cel_key_text(k, kt, sizeof kt);
        return cel_err_kind(c, n, CE_NO_SUCH_KEY, "no such key: %s", kt);
    }
    return cel_no_overload(c, n);
}

static cel_v in_agg(cel_ctx *c, const cel_node *n, cel_v x, cel_v agg)
{
    if (agg.t == CV_LIST) {
        for (uint32_t i = 0; i < agg.n; i++) {
            cel_v e;
            if (cel_equal(c, n, x, agg.u.items[i], &e) == 1)
                return cv_bool(true);
        }
        return cv_bool(false);
    }
    if (agg.t == CV_MAP && agg.sub != MK_PLAIN)
        return cv_bool(cel_devmap_contains(c, agg, x));
    if (agg.t == CV_MAP || agg.t == CV_DEVICE) {
        cel_v out;
        return cv_bool(cel_map_find(c, agg, x, &out));
    }
    return cel_no_overload(c, n);
}

/* ---- conversions --------------------------------------------------------------- */

static bool parse_int10(const char *s, size_t n, bool allow_sign, bool *neg, uint64_t *mag)
{
    size_t i = 0;
    *neg = false;
    if (allow_sign && i < n && (s[i] == '+' || s[i] == '-')) {
        *neg = s[i] == '-';
        i++;
    }
    if (i == n)
        return false;
    uint64_t v = 0;
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        uint64_t d = (uint64_t)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return false; /* caller reports range separately via *mag = MAX */
        v = v * 10 + d;
    }
    *mag = v;
    return true;
}

static bool all_digits(const char *s, size_t n, size_t from)
{
    if (from >= n)
        return false;
    for (size_t i = from; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return false;
    return true;
}

static cel_v str_to_int(cel_ctx *c, const cel_node *n, cel_v s, bool is_uint)
{
    bool neg;
    uint64_t mag = 0;
    const char *fn = is_uint ? "ParseUint" : "ParseInt";
    if (!parse_int10(s.u.s, s.n, !is_uint, &neg, &mag)) {
        /* digits only but too large: a range error, otherwise syntax */
        size_t st = (!is_uint && s.n && (s.u.s[0] == '+' || s.u.s[0] == '-')) ? 1 : 0;
        const char *why = all_digits(s.u.s, s.n, st) ? "value out of range" : "invalid syntax";
        return cel_err(c, n, "strconv.%s: parsing \"%.*s\": %s", fn, (int)(s.n < 100 ? s.n : 100),
                       s.u.s, why);
    }
    if (is_uint)
        return cv_uint(mag);
    if ((!neg && mag > (uint64_t)INT64_MAX) || (neg && mag > (uint64_t)INT64_MAX + 1))
        return cel_err(c, n, "strconv.ParseInt: parsing \"%.*s\": value out of range",
                       (int)(s.n < 100 ? s.n : 100), s.u.s);
    return cv_int(neg ? (int64_t)(0 - mag) : (int64_t)mag);
}

/* Go strconv.ParseFloat syntax check (decimal or hex float, inf, nan). */
static bool go_float_syntax(const char *s, size_t n, int *special)
{
    size_t i = 0;
    *special = 0;
    if (i < n && (s[i] == '+' || s[i] == '-'))
        i++;
    size_t rest = n - i;
    if ((rest == 3 && !strncasecmp(s + i, "inf", 3)) || (rest == 8 && !strncasecmp(s + i, "infinity", 8))) {
        *special = 1;
        return true;
    }
    if (rest == 3 && !strncasecmp(s + i, "nan", 3) && i == 0) {
        *special = 2;
        return true;
    }
    if (rest > 2 && s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X')) {
        i += 2;
        size_t digits = 0;
        while (i < n && isxdigit((unsigned char)s[i])) {
            i++;
            digits++;
        }
        if (i < n && s[i] == '.') {
            i++;
            while (i < n && isxdigit((unsigned char)s[i])) {
                i++;
                digits++;
            }
        }
        if (!digits || i >= n || (s[i] != 'p' && s[i] != 'P'))
            return false;
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-'))
            i++;
        return all_digits(s, n, i);
    }
    size_t digits = 0;
    while (i < n && s[i] >= '0' && s[i] <= '9') {
        i++;
        digits++;
    }
    if (i < n && s[i] == '.') {
        i++;
        while (i < n && s[i] >= '0' && s[i] <= '9') {
            i++;
            digits++;
        }
    }
    if (!digits)
        return false;
    if (i == n)
        return true;
    if (s[i] != 'e' && s[i] != 'E')
        return false;
    i++;
    if (i < n && (s[i] == '+' || s[i] == '-'))
        i++;
    return all_digits(s, n, i);
}

static cel_v str_to_double(cel_ctx *c, const cel_node *n, cel_v s)
{
    int special;
    int shown = (int)(s.n < 100 ? s.n : 100);
    if (!go_float_syntax(s.u.s, s.n, &special))
        return cel_err(c, n, "strconv.ParseFloat: parsing \"%.*s\": invalid syntax", shown, s.u.s);
    bool neg = s.n && s.u.s[0] == '-';
    if (special == 1)
        return cv_double(neg ? -INFINITY : INFINITY);
    if (special == 2)
        return cv_double(NAN);
    char *tmp = cel_alloc(c, s.n + 1);
    memcpy(tmp, s.u.s, s.n);
    tmp[s.n] = 0;
    double d = strtod(tmp, NULL);
    if (isinf(d))
        return cel_err(c, n, "strconv.ParseFloat: parsing \"%.*s\": value out of range", shown, s.u.s);
    return cv_double(d);
}

static cel_v to_string(cel_ctx *c, const cel_node *n, cel_v v)
{
    char buf[64];
    size_t len;
    switch (v.t) {
    case CV_STRING: return v;
    case CV_BOOL: return v.u.b ? cv_str("true", 4) : cv_str("false", 5);
    case CV_BYTES:
        if (!cel_utf8_valid(v.u.s, v.n))
            return cel_err(c, n, "invalid UTF-8 in bytes, cannot convert to string");
        return cv_str(v.u.s, v.n);
    case CV_INT: len = (size_t)snprintf(buf, sizeof buf, "%lld", (long long)v.u.i); break;
    case CV_UINT: len = (size_t)snprintf(buf, sizeof buf, "%llu", (unsigned long long)v.u.u); break;
    case CV_DOUBLE: len = cel_fmt_double_g(v.u.d, buf, sizeof buf); break;
    default: return cel_no_overload(c, n);
    }
    char *s = cel_alloc(c, len + 1);
    memcpy(s, buf, len + 1);
    return cv_str(s, len);
}

static cel_v convert(cel_ctx *c, const cel_node *n, int impl, cel_v v)
{
    switch (impl) {
    case IM_TO_BOOL:
        if (v.t == CV_BOOL)
            return v;
        if (v.t == CV_STRING) {
            static const char *const t[] = {"1", "t", "T", "TRUE", "true", "True"};
            static const char *const f[] = {"0", "f", "F", "FALSE", "false", "False"};
            for (size_t i = 0; i < 6; i++) {
                if (strlen(t[i]) == v.n && !memcmp(t[i], v.u.s, v.n))
                    return cv_bool(true);
                if (strlen(f[i]) == v.n && !memcmp(f[i], v.u.s, v.n))
                    return cv_bool(false);
            }
            return cel_err(c, n, "strconv.ParseBool: parsing \"%.*s\": invalid syntax",
                           (int)(v.n < 100 ? v.n : 100), v.u.s);
        }
        break;
    case IM_TO_BYTES:
        if (v.t == CV_BYTES)
            return v;
        if (v.t == CV_STRING)
            return cv_bytes(v.u.s, v.n);
        break;
    case IM_TO_DOUBLE:
        switch (v.t) {
        case CV_DOUBLE: return v;
        case CV_INT: return cv_double((double)v.u.i);
        case CV_UINT: return cv_double((double)v.u.u);
        case CV_STRING: return str_to_double(c, n, v);
        default: break;
        }
        break;
    case IM_TO_INT:
        switch (v.t) {
        case CV_INT: return v;
        case CV_UINT:
            if (v.u.u > (uint64_t)INT64_MAX)
                return overflow(c, n);
            return cv_int((int64_t)v.u.u);
        case CV_DOUBLE:
            if (isnan(v.u.d) || v.u.d <= DBL_MIN_INT64 || v.u.d >= DBL_MAX_INT64)
                return overflow(c, n);
            return cv_int((int64_t)v.u.d);
        case CV_STRING: return str_to_int(c, n, v, false);
        default: break;
        }
        break;
    case IM_TO_UINT:
        switch (v.t) {
        case CV_UINT: return v;
        case CV_INT:
            if (v.u.i < 0)
                return uoverflow(c, n);
            return cv_uint((uint64_t)v.u.i);
        case CV_DOUBLE:
            if (isnan(v.u.d) || v.u.d < 0 || v.u.d >= DBL_MAX_UINT64)
                return uoverflow(c, n);
            return cv_uint((uint64_t)v.u.d);
        case CV_STRING: return str_to_int(c, n, v, true);
        default: break;
        }
        break;
    case IM_TO_STRING:
        return to_string(c, n, v);
    default:
        break;
    }
    return cel_no_overload(c, n);
}

/* ---- strings --------------------------------------------------------------------- */

static bool has_sub(const char *s, size_t n, const char *t, size_t m)
{
    if (m == 0)
        return true;
    if (m > n)
        return false;
    return memmem(s, n, t, m) != NULL;
}

cel_v cel_call_std(cel_ctx *c, const cel_node *n, int impl, cel_v *a, int na)
{
    (void)na;
    switch (impl) {
    case IM_NOT:
        if (a[0].t != CV_BOOL)
            return cel_no_overload(c, n);
        return cv_bool(!a[0].u.b);
    case IM_NEG:
        if (a[0].t == CV_INT) {
            if (a[0].u.i == INT64_MIN)
                return overflow(c, n);
            return cv_int(-a[0].u.i);
        }
        if (a[0].t == CV_DOUBLE)
            return cv_double(-a[0].u.d);
        return cel_no_overload(c, n);
    case IM_EQ:
    case IM_NE: {
        cel_v err;
        int r = cel_equal(c, n, a[0], a[1], &err);
        if (r < 0)
            return err;
        return cv_bool(impl == IM_EQ ? r == 1 : r == 0);
    }
    case IM_ADD: return add(c, n, a[0], a[1]);
    case IM_SUB:
    case IM_MUL:
    case IM_DIV:
    case IM_MOD: return arith(c, n, impl, a[0], a[1]);
    case IM_LT:
    case IM_LE:
    case IM_GT:
    case IM_GE: {
        cel_v err;
        int r = cel_compare(c, n, a[0], a[1], &err);
        if (r == 2)
            return err;
        switch (impl) {
        case IM_LT: return cv_bool(r < 0);
        case IM_LE: return cv_bool(r <= 0);
        case IM_GT: return cv_bool(r > 0);
        default: return cv_bool(r >= 0);
        }
    }
    case IM_INDEX: return index_of(c, n, a[0], a[1]);
    case IM_IN: return in_agg(c, n, a[0], a[1]);
    case IM_SIZE:
        switch (a[0].t) {
        case CV_STRING: return cv_int((int64_t)cel_utf8_count(a[0].u.s, a[0].n));
        case CV_BYTES:
        case CV_LIST: return cv_int(a[0].n);
        case CV_MAP:
        case CV_DEVICE: return cv_int(cel_map_size(c, a[0]));
        default: return cel_no_overload(c, n);
        }
    case IM_TYPE: return cv_type(cel_type_of(a[0]));
    case IM_DYN: return a[0];
    case IM_TO_BOOL:
    case IM_TO_BYTES:
    case IM_TO_DOUBLE:
    case IM_TO_INT:
    case IM_TO_STRING:
    case IM_TO_UINT: return convert(c, n, impl, a[0]);
    case IM_CONTAINS:
        return cv_bool(has_sub(a[0].u.s, a[0].n, a[1].u.s, a[1].n));
    case IM_STARTS:
        return cv_bool(a[1].n <= a[0].n && !memcmp(a[0].u.s, a[1].u.s, a[1].n));
    case IM_ENDS:
        return cv_bool(a[1].n <= a[0].n && !memcmp(a[0].u.s + a[0].n - a[1].n, a[1].u.s, a[1].n));
    case IM_MATCHES: {
        char why[256];
        const char *w = NULL;
        const cel_re *re = cel_re_get(a[1].u.s, a[1].n, &w, why, sizeof why);
        if (!re)
            return cel_err(c, n, "%s", w ? w : "invalid regex");
        int r = cel_re_matches(re, a[0].u.s, a[0].n);
        if (r < 0)
            return cel_err(c, n, "regex match exceeded its limits");
        return cv_bool(r == 1);
    }
    default:
        return cel_err(c, n, "internal error: unknown function");
    }
}
