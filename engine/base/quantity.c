/*
 * quantity.c - Kubernetes resource.Quantity (see quantity.h for the
 * representation and the few deliberate differences from apimachinery).
 *
 * Parsing follows apimachinery's scanner step by step (sign, leading zeros,
 * integer digits, optional '.', fraction digits, suffix letters, optional
 * sign and digits), so the same texts are accepted and refused with the same
 * messages.  The value is then computed exactly from the digit string:
 * decimal suffixes only move the exponent; binary suffixes multiply by 2^k,
 * which is done as integer part * 2^k * 10^9 plus a digit-by-digit ceiling
 * of the fraction, so "1.000...0001Ki" rounds to nano exactly without a
 * big-number library.
 */
#include "quantity.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned __int128 u128;
typedef __int128 i128;

#define U128_MAX (~(u128)0)
#define I128_MAX ((u128)(U128_MAX >> 1))
#define NANO 1000000000ULL

static const char ERR_FORMAT[] =
    "quantities must match the regular expression "
    "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
static const char ERR_SUFFIX[] = "unable to parse quantity's suffix";
static const char ERR_NUMERIC[] = "unable to parse numeric part of quantity";
static const char ERR_RANGE[] = "quantity is out of range (more than 38 significant digits)";
static const char ERR_EXP[] = "quantity's exponent is out of range";

/* ---- 128-bit helpers --------------------------------------------------- */

static u128 pow10u(int k) /* 0 <= k <= 38 */
{
    u128 r = 1;
    while (k-- > 0)
        r *= 10;
    return r;
}

/* m * 10^k without overflow past lim; false when it would. */
static bool mul_pow10(u128 m, int64_t k, u128 lim, u128 *out)
{
    while (k-- > 0) {
        if (m > lim / 10)
            return false;
        m *= 10;
    }
    *out = m;
    return true;
}

static u128 mag_of(i128 m) { return m < 0 ? (u128)0 - (u128)m : (u128)m; }

static size_t u128_to_dec(u128 v, char *buf) /* buf >= 40 bytes; no NUL */
{
    char tmp[40];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + (int)(v % 10));
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; i++)
        buf[i] = tmp[n - 1 - i];
    return n;
}

/* Normal form: exp == -9 when the value fits there, else the smallest
 * exponent that keeps |mant| <= 2^127-1 (see quantity.h). */
static de_qty make(bool neg, u128 mag, int64_t exp, de_qfmt fmt)
{
    de_qty q;
    memset(&q, 0, sizeof q);
    q.fmt = (uint8_t)fmt;
    if (mag == 0) {
        q.exp = -9;
        return q;
    }
    while (exp > -9 && mag <= I128_MAX / 10) {
        mag *= 10;
        exp--;
    }
    q.mant = neg ? -(i128)mag : (i128)mag;
    q.exp = (int32_t)exp;
    return q;
}

/* Strip trailing zeros: (mag, exp) with the largest exponent. */
static void strip(u128 *mag, int64_t *exp)
{
    if (*mag == 0)
        return;
    while (*mag % 10 == 0) {
        *mag /= 10;
        (*exp)++;
    }
}

/* ---- apimachinery's int64 form (gscale) -------------------------------- */

/* Does value / 10^g fit int64?  The value is a multiple of 10^g. */
static bool fits_at_scale(const de_qty *q, int64_t g)
{
    u128 m = mag_of(q->mant);
    u128 lim = q->mant < 0 ? ((u128)1 << 63) : (((u128)1 << 63) - 1);
    if (m == 0)
        return true;
    int64_t d = (int64_t)q->exp - g;
    if (d >= 0) {
        u128 v;
        return mul_pow10(m, d, lim, &v) && v <= lim;
    }
    if (-d >= 20)
        return true; /* m < 1.7e38 < 9.2e18 * 1e20 */
    return m / pow10u((int)-d) <= lim;
}

/* ---- parse ------------------------------------------------------------- */

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

static bool is_suffix_char(char c)
{
    return c != 0 && memchr("eEinumkKMGTP", c, 12) != NULL;
}

/* Suffix -> base (10 or 2), exponent, format; false for an unknown one.
 * *range is set when an exponent parses as int64 but not int32. */
static bool interpret(const char *s, size_t n, int *base, int64_t *exp, de_qfmt *fmt,
                      bool *range)
{
    static const struct { const char *s; int base, exp; } tab[] = {
        {"", 10, 0},   {"n", 10, -9}, {"u", 10, -6}, {"m", 10, -3}, {"k", 10, 3},
        {"M", 10, 6},  {"G", 10, 9},  {"T", 10, 12}, {"P", 10, 15}, {"E", 10, 18},
        {"Ki", 2, 10}, {"Mi", 2, 20}, {"Gi", 2, 30}, {"Ti", 2, 40}, {"Pi", 2, 50},
        {"Ei", 2, 60},
    };
    *range = false;
    for (size_t i = 0; i < DE_ARRAY_LEN(tab); i++) {
        if (strlen(tab[i].s) == n && memcmp(tab[i].s, s, n) == 0) {
            *base = tab[i].base;
            *exp = tab[i].exp;
            *fmt = tab[i].base == 2 ? DE_QFMT_BINARY_SI : DE_QFMT_DECIMAL_SI;
            return true;
        }
    }
    if (n < 2 || (s[0] != 'e' && s[0] != 'E'))
        return false;
    /* strconv.ParseInt(s[1:], 10, 64): optional sign, then digits only. */
    size_t i = 1;
    bool neg = false;
    if (s[i] == '+' || s[i] == '-')
        neg = s[i++] == '-';
    if (i >= n)
        return false;
    uint64_t v = 0;
    for (; i < n; i++) {
        if (!is_digit(s[i]))
            return false;
        if (v > (UINT64_MAX - 9) / 10)
            v = UINT64_MAX; /* saturate; judged below */
        else
            v = v * 10 + (uint64_t)(s[i] - '0');
    }
    if (v > (uint64_t)INT64_MAX + (neg ? 1u : 0u))
        return false; /* ParseInt range error -> unknown suffix */
    if (v > (uint64_t)INT32_MAX + (neg ? 1u : 0u)) {
        *range = true;
        return false;
    }
    *base = 10;
    *exp = neg ? -(int64_t)v : (int64_t)v;
    *fmt = DE_QFMT_DECIMAL_EXP;
    return true;
}

/* Decimal: value = digits * 10^e10, rounded up to nano. */
static de_rc value_base10(const char *ip, size_t il, const char *fp, size_t fl, int64_t e10,
                          u128 *mag, int64_t *exp)
{
    /* The significant digits are the concatenation ip|fp with leading zeros
     * removed; index through a tiny accessor instead of copying. */
    size_t n = il + fl, lead = 0;
#define DG(i) ((i) < il ? ip[(i)] : fp[(i) - il])
    while (lead < n && DG(lead) == '0')
        lead++;
    *mag = 0;
    *exp = -9;
    if (lead == n)
        return DE_OK;
    size_t end = n; /* digits [lead, end) */
    bool sticky = false;
    int64_t e = e10;
    if (e < -9) {
        uint64_t drop = (uint64_t)(-9 - e);
        if (drop >= end - lead) {
            *mag = 1; /* everything is below 1n: rounds up to 1n */
            return DE_OK;
        }
        for (size_t i = end - (size_t)drop; i < end; i++)
            if (DG(i) != '0')
                sticky = true;
        end -= (size_t)drop;
        e = -9;
    }
    if (!sticky) {
        while (end > lead && DG(end - 1) == '0') {
            end--;
            e++;
        }
    }
    u128 m = 0;
    for (size_t i = lead; i < end; i++) {
        unsigned d = (unsigned)(DG(i) - '0');
        if (m > (U128_MAX - d) / 10)
            return DE_ERANGE;
        m = m * 10 + d;
    }
#undef DG
    if (sticky) {
        if (m == U128_MAX)
            return DE_ERANGE;
        m++;
    }
    strip(&m, &e);
    if (m > I128_MAX || e > INT32_MAX)
        return DE_ERANGE;
    *mag = m;
    *exp = e;
    return DE_OK;
}

/* Binary: value = (int part + fraction) * 2^k, rounded up to nano and
 * capped at 2^63-1 units like apimachinery.  Result in nano-units. */
static u128 value_base2(const char *ip, size_t il, const char *fp, size_t fl, int k)
{
    const u128 M = ((u128)1 << k) * NANO;
    const u128 cap = (u128)INT64_MAX * NANO;
    u128 I = 0;
    for (size_t i = 0; i < il; i++) {
        I = I * 10 + (unsigned)(ip[i] - '0');
        if (I > cap / M)
            return cap;
    }
    u128 v = I * M;
    /* ceil(0.f1f2...fn * M), from the last digit up (see header comment). */
    u128 q = 0;
    bool sticky = false;
    for (size_t i = fl; i-- > 0;) {
        u128 t = (u128)(unsigned)(fp[i] - '0') * M + q;
        if (t % 10)
            sticky = true;
        q = t / 10;
    }
    v += q + (sticky ? 1 : 0);
    return v > cap ? cap : v;
}

de_rc de_qty_parse(const char *s, size_t len, de_qty *out, de_err *e)
{
    if (len == 0)
        return de_errf(e, DE_EINVAL, "%s", ERR_FORMAT);
    size_t pos = 0;
    bool neg = false;
    if (s[0] == '-' || s[0] == '+')
        neg = s[pos++] == '-';
    while (pos < len && s[pos] == '0')
        pos++;
    const char *ip = s + pos;
    size_t il = 0, fl = 0;
    while (pos < len && is_digit(s[pos]))
        pos++, il++;
    const char *fp = s + pos;
    bool has_digit = il > 0 || ip > s + (neg || s[0] == '+' ? 1 : 0);
    if (pos < len && s[pos] == '.') {
        pos++;
        fp = s + pos;
        while (pos < len && is_digit(s[pos]))
            pos++, fl++;
        has_digit = has_digit || fl > 0;
    }
    size_t sb = pos;
    while (pos < len && is_suffix_char(s[pos]))
        pos++;
    if (pos < len && (s[pos] == '-' || s[pos] == '+'))
        pos++;
    while (pos < len && is_digit(s[pos]))
        pos++;
    if (pos < len)
        return de_errf(e, DE_EINVAL, "%s", ERR_FORMAT);

    int base = 10;
    int64_t sexp = 0;
    de_qfmt fmt = DE_QFMT_DECIMAL_SI;
    bool range = false;
    if (!interpret(s + sb, len - sb, &base, &sexp, &fmt, &range)) {
        if (range)
            return de_errf(e, DE_ERANGE, "%s", ERR_EXP);
        return de_errf(e, DE_EINVAL, "%s", ERR_SUFFIX);
    }

    /* apimachinery's fast path: an int64 at scale >= -9 (ParseQuantity). */
    int64_t nlen = il ? (int64_t)il : 1;
    bool fast;
    int64_t gscale;
    if (base == 10) {
        int64_t precision = 18 - (nlen + (int64_t)fl);
        gscale = sexp - (int64_t)fl;
        fast = precision >= 0 && gscale >= -9;
    } else {
        int64_t precision = 15 - nlen - sexp * 3 / 10 - 1;
        gscale = 0;
        fast = fl == 0 && precision >= 0;
    }
    if (!fast && !has_digit)
        return de_errf(e, DE_EINVAL, "%s", ERR_NUMERIC);

    de_qty q;
    if (base == 10) {
        u128 mag;
        int64_t exp;
        if (value_base10(ip, il, fp, fl, sexp - (int64_t)fl, &mag, &exp) != DE_OK)
            return de_errf(e, DE_ERANGE, "%s", ERR_RANGE);
        q = make(neg, mag, exp, fmt);
        if (!fast)
            gscale = mag ? -9 : sexp - (int64_t)fl;
    } else {
        u128 nano = value_base2(ip, il, fp, fl, (int)sexp);
        if (nano != 0 && nano < NANO)
            fmt = DE_QFMT_DECIMAL_SI; /* between 0 and 1: apimachinery switches */
        q = make(neg, nano, -9, fmt);
        if (!fast)
            gscale = nano == (u128)INT64_MAX * NANO ? 0 : nano ? -9 : -(int64_t)fl;
    }
    if (gscale < INT32_MIN || gscale > INT32_MAX)
        gscale = gscale < 0 ? INT32_MIN : INT32_MAX;
    q.gscale = (int32_t)gscale;
    q.gdec = !fast;
    *out = q;
    return DE_OK;
}

de_rc de_qty_parse_cstr(const char *s, de_qty *out, de_err *e)
{
    return de_qty_parse(s, strlen(s), out, e);
}

/* Go's encoding/json text for a float64 (what sigs.k8s.io/yaml hands to
 * Quantity.UnmarshalJSON for `value: 1.5`): shortest digits, fixed notation
 * for 1e-6 <= |d| < 1e21, else exponent form. */
de_rc de_qty_from_double(double d, de_qty *out, de_err *e)
{
    char sci[40], num[400];
    if (!isfinite(d))
        return de_errf(e, DE_EINVAL, "%s", ERR_FORMAT);
    int prec = 1;
    for (; prec <= 17; prec++) {
        snprintf(sci, sizeof sci, "%.*e", prec - 1, d);
        if (strtod(sci, NULL) == d)
            break;
    }
    double a = fabs(d);
    if (a != 0 && (a < 1e-6 || a >= 1e21))
        return de_qty_parse_cstr(sci, out, e);
    /* digits and exponent of "-d.ddde+XX" -> fixed notation */
    char digits[24];
    size_t nd = 0;
    const char *p = sci;
    bool neg = *p == '-';
    if (neg)
        p++;
    for (; *p && *p != 'e'; p++)
        if (*p >= '0' && *p <= '9')
            digits[nd++] = *p;
    int ex = atoi(p + 1);
    size_t o = 0;
    if (neg)
        num[o++] = '-';
    if (ex < 0) {
        num[o++] = '0';
        num[o++] = '.';
        for (int i = -1; i > ex; i--)
            num[o++] = '0';
        memcpy(num + o, digits, nd);
        o += nd;
    } else {
        for (int i = 0; i <= ex || (size_t)i < nd; i++) {
            if (i == ex + 1)
                num[o++] = '.';
            num[o++] = (size_t)i < nd ? digits[i] : '0';
        }
    }
    num[o] = 0;
    return de_qty_parse_cstr(num, out, e);
}

de_rc de_qty_from_json(const json_t *v, de_qty *out, de_err *e)
{
    char num[64];
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        size_t n = json_string_length(v);
        while (n && (*s == ' ' || (*s >= '\t' && *s <= '\r')))
            s++, n--;
        while (n && (s[n - 1] == ' ' || (s[n - 1] >= '\t' && s[n - 1] <= '\r')))
            n--;
        return de_qty_parse(s, n, out, e);
    }
    if (json_is_integer(v)) {
        snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        return de_qty_parse_cstr(num, out, e);
    }
    if (json_is_real(v))
        return de_qty_from_double(json_real_value(v), out, e);
    return de_errf(e, DE_EINVAL, "quantity must be a string or a number");
}

/* ---- constructors, compare -------------------------------------------- */

de_qty de_qty_from_int(int64_t v, de_qfmt fmt)
{
    u128 m = v < 0 ? (u128)0 - (u128)(i128)v : (u128)v;
    de_qty q = make(v < 0, m * NANO, -9, fmt);
    q.gscale = 0;
    return q;
}

de_qty de_qty_from_milli(int64_t milli, de_qfmt fmt)
{
    u128 m = milli < 0 ? (u128)0 - (u128)(i128)milli : (u128)milli;
    de_qty q = make(milli < 0, m * 1000000u, -9, fmt);
    q.gscale = -3;
    return q;
}

int de_qty_sign(de_qty q) { return q.mant < 0 ? -1 : q.mant > 0; }
bool de_qty_is_zero(de_qty q) { return q.mant == 0; }

/* |a| vs |b| for any exponents (does not rely on the normal form). */
static int cmp_mag(u128 ma, int64_t ea, u128 mb, int64_t eb)
{
    if (ea != eb) {
        bool swap = ea > eb;
        if (swap) {
            u128 t = ma; ma = mb; mb = t;
            int64_t te = ea; ea = eb; eb = te;
        }
        u128 scaled;
        int r;
        if (!mul_pow10(mb, eb - ea, U128_MAX, &scaled))
            r = -1; /* b beyond 2^128 > a */
        else
            r = ma < scaled ? -1 : ma > scaled;
        return swap ? -r : r;
    }
    return ma < mb ? -1 : ma > mb;
}

int de_qty_cmp(de_qty a, de_qty b)
{
    int sa = de_qty_sign(a), sb = de_qty_sign(b);
    if (sa != sb)
        return sa < sb ? -1 : 1;
    if (sa == 0)
        return 0;
    if (a.exp == b.exp)
        return a.mant < b.mant ? -1 : a.mant > b.mant;
    int r = cmp_mag(mag_of(a.mant), a.exp, mag_of(b.mant), b.exp);
    return sa < 0 ? -r : r;
}

/* ---- add / sub --------------------------------------------------------- */

static de_rc add_exact(de_qty a, de_qty b, bool neg_b, bool *rneg, u128 *rmag, int64_t *rexp)
{
    bool na = a.mant < 0, nb = (b.mant < 0) != neg_b;
    u128 ma = mag_of(a.mant), mb = mag_of(b.mant);
    int64_t ea = a.exp, eb = b.exp;
    if (ma == 0) { *rneg = nb; *rmag = mb; *rexp = eb; return DE_OK; }
    if (mb == 0) { *rneg = na; *rmag = ma; *rexp = ea; return DE_OK; }
    if (ea != eb) {
        strip(&ma, &ea);
        strip(&mb, &eb);
        if (ea > eb) {
            if (!mul_pow10(ma, ea - eb, U128_MAX, &ma))
                return DE_ERANGE;
            ea = eb;
        } else if (eb > ea) {
            if (!mul_pow10(mb, eb - ea, U128_MAX, &mb))
                return DE_ERANGE;
            eb = ea;
        }
    }
    if (na == nb) {
        if (ma > U128_MAX - mb)
            return DE_ERANGE;
        *rneg = na;
        *rmag = ma + mb;
    } else if (ma >= mb) {
        *rneg = na;
        *rmag = ma - mb;
    } else {
        *rneg = nb;
        *rmag = mb - ma;
    }
    *rexp = ea;
    strip(rmag, rexp);
    if (*rmag > I128_MAX || *rexp > INT32_MAX)
        return DE_ERANGE;
    return DE_OK;
}

/* Quantity.Add / Quantity.Sub: value, format and apimachinery's form. */
static de_rc addsub(de_qty a, de_qty b, bool sub, de_qty *out)
{
    bool rneg;
    u128 rmag;
    int64_t rexp;
    de_rc rc;
    if (a.exp == -9 && b.exp == -9) {
        i128 r;
        bool ovf = sub ? __builtin_sub_overflow(a.mant, b.mant, &r)
                       : __builtin_add_overflow(a.mant, b.mant, &r);
        if (ovf || mag_of(r) > I128_MAX) {
            rc = add_exact(a, b, sub, &rneg, &rmag, &rexp);
        } else {
            rneg = r < 0;
            rmag = mag_of(r);
            rexp = -9;
            rc = DE_OK;
        }
    } else {
        rc = add_exact(a, b, sub, &rneg, &rmag, &rexp);
    }
    if (rc != DE_OK)
        return rc;
    de_qfmt fmt = (de_qfmt)(a.mant == 0 ? b.fmt : a.fmt);
    de_qty r = make(rneg, rmag, rexp, fmt);

    /* apimachinery: int64Amount.Add keeps the int64 form unless a scaled
     * operand or the sum overflows int64; otherwise (or if either side was
     * already an inf.Dec) the result is an inf.Dec at the larger scale. */
    bool dec = a.gdec || b.gdec;
    int64_t g = DE_MIN(a.gscale, b.gscale);
    if (!dec) {
        if (b.mant == 0) {
            g = a.gscale;
        } else if (a.mant == 0) {
            g = b.gscale;
            dec = !fits_at_scale(&r, g); /* only -INT64_MIN: Go wraps it */
        } else {
            const de_qty *hi = a.gscale > b.gscale ? &a : &b;
            if (a.gscale != b.gscale && !fits_at_scale(hi, g))
                dec = true;
            else if (!fits_at_scale(&r, g))
                dec = true;
        }
    }
    r.gscale = (int32_t)g;
    r.gdec = dec;
    *out = r;
    return DE_OK;
}

de_rc de_qty_add(de_qty a, de_qty b, de_qty *out) { return addsub(a, b, false, out); }
de_rc de_qty_sub(de_qty a, de_qty b, de_qty *out) { return addsub(a, b, true, out); }

/* ---- integers ---------------------------------------------------------- */

/* m / 10^k and its remainder (k <= 38); in 64-bit arithmetic when both
 * fit, the usual case, where the 128-bit division is a library call */
static u128 div_pow10(u128 m, int k, u128 *rem)
{
    u128 p = pow10u(k);
    if (!(m >> 64) && !(p >> 64)) {
        *rem = (uint64_t)m % (uint64_t)p;
        return (uint64_t)m / (uint64_t)p;
    }
    *rem = m % p;
    return m / p;
}

/* value * 10^-s rounded away from zero, saturated (ScaledValue). */
static int64_t scaled_value(de_qty q, int s)
{
    if (q.mant == 0)
        return 0;
    bool neg = q.mant < 0;
    u128 m = mag_of(q.mant), lim = neg ? ((u128)1 << 63) : (((u128)1 << 63) - 1);
    int64_t d = (int64_t)q.exp - s;
    u128 v;
    if (d >= 0) {
        if (!mul_pow10(m, d, lim, &v) || v > lim)
            v = lim;
    } else if (-d > 38) {
        v = 1;
    } else {
        u128 rem;
        v = div_pow10(m, (int)-d, &rem) + (rem ? 1 : 0);
        if (v > lim)
            v = lim;
    }
    return neg ? (int64_t)(0 - (uint64_t)v) : (int64_t)v;
}

int64_t de_qty_value(de_qty q) { return scaled_value(q, 0); }
int64_t de_qty_milli_value(de_qty q) { return scaled_value(q, -3); }

/* Exact value * 10^-s as int64, if it is whole and fits. */
static bool exact_at(de_qty q, int s, int64_t *out)
{
    if (q.mant == 0) {
        *out = 0;
        return true;
    }
    bool neg = q.mant < 0;
    u128 m = mag_of(q.mant), lim = neg ? ((u128)1 << 63) : (((u128)1 << 63) - 1), v;
    int64_t d = (int64_t)q.exp - s;
    if (d >= 0) {
        if (!mul_pow10(m, d, lim, &v) || v > lim)
            return false;
    } else {
        if (-d > 38)
            return false;
        u128 rem;
        v = div_pow10(m, (int)-d, &rem);
        if (rem)
            return false;
        if (v > lim)
            return false;
    }
    *out = neg ? (int64_t)(0 - (uint64_t)v) : (int64_t)v;
    return true;
}

bool de_qty_int64_exact(de_qty q, int64_t *out) { return exact_at(q, 0, out); }
bool de_qty_milli_exact(de_qty q, int64_t *out) { return exact_at(q, -3, out); }

bool de_qty_is_milli_exact(de_qty q)
{
    if (q.mant == 0 || q.exp >= -3)
        return true;
    return mag_of(q.mant) % pow10u(-3 - q.exp) == 0;
}

bool de_qty_is_integer(de_qty q)
{
    int64_t v;
    if (q.gdec || q.gscale < 0)
        return false;
    return exact_at(q, 0, &v);
}

de_rc de_qty_as_int64(de_qty q, int64_t *out)
{
    if (!de_qty_is_integer(q))
        return DE_ERANGE;
    exact_at(q, 0, out);
    return DE_OK;
}

/* Go's math.Pow10, table for table, so products round the same way. */
static double go_pow10(int64_t n)
{
    static const double tab[32] = {
        1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10,
        1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21,
        1e22, 1e23, 1e24, 1e25, 1e26, 1e27, 1e28, 1e29, 1e30, 1e31,
    };
    static const double pos[10] = {1e0,   1e32,  1e64,  1e96,  1e128,
                                   1e160, 1e192, 1e224, 1e256, 1e288};
    static const double negt[11] = {1e-0,   1e-32,  1e-64,  1e-96,  1e-128, 1e-160,
                                    1e-192, 1e-224, 1e-256, 1e-288, 1e-320};
    if (n >= 0 && n <= 308)
        return pos[n / 32] * tab[n % 32];
    if (n < 0 && n >= -323)
        return negt[-n / 32] / tab[-n % 32];
    return n > 0 ? HUGE_VAL : 0.0;
}

double de_qty_approx_double(de_qty q)
{
    if (q.mant == 0)
        return 0.0;
    /* Go: float64(unscaled) * Pow10(exponent), in apimachinery's scale. */
    int64_t d = (int64_t)q.exp - q.gscale;
    u128 m = mag_of(q.mant), u;
    double base;
    int64_t ex;
    if (d >= 0 && mul_pow10(m, d, U128_MAX, &u)) {
        base = (double)u;
        ex = q.gscale;
    } else if (d < 0 && -d <= 38 && m % pow10u((int)-d) == 0) {
        base = (double)(m / pow10u((int)-d));
        ex = q.gscale;
    } else {
        base = (double)m;
        ex = q.exp;
    }
    if (q.mant < 0)
        base = -base;
    return ex == 0 ? base : base * go_pow10(ex);
}

/* ---- printing ---------------------------------------------------------- */

const char *de_qfmt_name(de_qfmt f)
{
    switch (f) {
    case DE_QFMT_BINARY_SI: return "BinarySI";
    case DE_QFMT_DECIMAL_EXP: return "DecimalExponent";
    default: return "DecimalSI";
    }
}

static size_t put(char *buf, size_t cap, const char *s, size_t n)
{
    if (cap == 0)
        return 0;
    size_t w = n < cap - 1 ? n : cap - 1;
    memcpy(buf, s, w);
    buf[w] = 0;
    return w;
}

size_t de_qty_format(de_qty q, char *buf, size_t cap)
{
    char t[DE_QTY_TEXT_MAX];
    size_t n = 0;
    if (q.mant == 0)
        return put(buf, cap, "0", 1);
    bool neg = q.mant < 0;
    u128 m = mag_of(q.mant);
    int64_t e = q.exp;
    de_qfmt fmt = (de_qfmt)q.fmt;
    if (neg)
        t[n++] = '-';

    if (fmt == DE_QFMT_BINARY_SI) {
        /* Within (-1024, 1024) or not a whole number: shown as DecimalSI. */
        u128 whole = 0;
        bool is_whole = true;
        if (e >= 0) {
            if (!mul_pow10(m, e, U128_MAX, &whole))
                is_whole = false; /* cannot happen for a binary value */
        } else {
            u128 p = -e > 38 ? 0 : pow10u((int)-e);
            is_whole = p && m % p == 0;
            whole = p ? m / p : 0;
        }
        if (!is_whole || whole < 1024) {
            fmt = DE_QFMT_DECIMAL_SI;
        } else {
            int k = 0;
            while (whole % 1024 == 0 && k < 6) {
                whole /= 1024;
                k++;
            }
            static const char *const bs[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
            n += u128_to_dec(whole, t + n);
            memcpy(t + n, bs[k], strlen(bs[k]));
            n += strlen(bs[k]);
            return put(buf, cap, t, n);
        }
    }

    /* Decimal: remove factors of ten, then lower the exponent to a multiple
     * of three (AsCanonicalBytes), appending the zeros as text. */
    strip(&m, &e);
    int zeros = 0;
    int r = (int)(e % 3);
    if (r == 1 || r == -2)
        zeros = 1;
    else if (r == 2 || r == -1)
        zeros = 2;
    e -= zeros;
    n += u128_to_dec(m, t + n);
    for (int i = 0; i < zeros; i++)
        t[n++] = '0';
    if (fmt == DE_QFMT_DECIMAL_SI && e > 18 && n + (size_t)(e - 18) + 2 < sizeof t) {
        /* Beyond E there is no larger suffix: keep E and write the zeros. */
        for (int64_t i = 18; i < e; i++)
            t[n++] = '0';
        t[n++] = 'E';
    } else if (fmt == DE_QFMT_DECIMAL_SI && e >= -9 && e <= 18) {
        static const char *const ds[] = {"n", "u", "m", "", "k", "M", "G", "T", "P", "E"};
        const char *sfx = ds[(e + 9) / 3];
        memcpy(t + n, sfx, strlen(sfx));
        n += strlen(sfx);
    } else if (e != 0) {
        n += (size_t)snprintf(t + n, sizeof t - n, "e%lld", (long long)e);
    }
    return put(buf, cap, t, n);
}
