/*
 * semver.c - semantic versions as blang/semver v4 parses them and as
 * Kubernetes' CEL semver(s, true) normalises them.
 *
 * The parser follows blang's order of checks (split into three parts on the
 * first two dots, then major, minor, build, prerelease, patch, then each
 * prerelease and build identifier) so that a text with several defects
 * fails with the same message as upstream.
 */
#include "semver.h"

#include <stdio.h>
#include <string.h>

static bool all_digits(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return false;
    return true;
}

static bool is_alnum_id(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              c == '-'))
            return false;
    }
    return true;
}

static bool leading_zero(const char *s, size_t n) { return n > 1 && s[0] == '0'; }

/* Length of a valid UTF-8 sequence at s (n bytes left), 0 if invalid. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    size_t k;
    if (s[0] < 0xC2 || s[0] > 0xF4)
        return 0;
    k = s[0] < 0xE0 ? 2 : s[0] < 0xF0 ? 3 : 4;
    if (k > n)
        return 0;
    for (size_t i = 1; i < k; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    return k;
}

/* Go's %q (strconv.Quote) for the texts that appear in messages; valid
 * multi-byte UTF-8 is kept as is. */
static void goquote(const char *s, size_t n, char *out, size_t cap)
{
    size_t o = 0;
#define PUT(c) do { if (o + 1 < cap) out[o++] = (c); } while (0)
    PUT('"');
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        const char *esc = NULL;
        switch (c) {
        case '\a': esc = "\\a"; break;
        case '\b': esc = "\\b"; break;
        case '\f': esc = "\\f"; break;
        case '\n': esc = "\\n"; break;
        case '\r': esc = "\\r"; break;
        case '\t': esc = "\\t"; break;
        case '\v': esc = "\\v"; break;
        case '\\': esc = "\\\\"; break;
        case '"': esc = "\\\""; break;
        default: break;
        }
        if (esc) {
            PUT(esc[0]);
            PUT(esc[1]);
            i++;
        } else if (c < 0x20 || c == 0x7f) {
            char hex[5];
            snprintf(hex, sizeof hex, "\\x%02x", c);
            for (int k = 0; k < 4; k++)
                PUT(hex[k]);
            i++;
        } else if (c < 0x80) {
            PUT((char)c);
            i++;
        } else {
            size_t k = utf8_len((const unsigned char *)s + i, n - i);
            if (k == 0) {
                char hex[5];
                snprintf(hex, sizeof hex, "\\x%02x", c);
                for (int j = 0; j < 4; j++)
                    PUT(hex[j]);
                i++;
            } else {
                for (size_t j = 0; j < k; j++)
                    PUT(s[i + j]);
                i += k;
            }
        }
    }
    PUT('"');
    out[o] = 0;
#undef PUT
}

#define QBUF 160

/* strconv.ParseUint(s, 10, 64) on a digits-only text. */
static de_rc parse_u64(const char *s, size_t n, uint64_t *out, de_err *e)
{
    char q[QBUF];
    if (n == 0) {
        goquote(s, n, q, sizeof q);
        return de_errf(e, DE_EINVAL, "strconv.ParseUint: parsing %s: invalid syntax", q);
    }
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t d = (uint64_t)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10) {
            goquote(s, n, q, sizeof q);
            return de_errf(e, DE_EINVAL, "strconv.ParseUint: parsing %s: value out of range", q);
        }
        v = v * 10 + d;
    }
    *out = v;
    return DE_OK;
}

static de_rc parse_num(const char *what, const char *Cap, const char *s, size_t n,
                       uint64_t *out, de_err *e)
{
    char q[QBUF];
    if (!all_digits(s, n)) {
        goquote(s, n, q, sizeof q);
        return de_errf(e, DE_EINVAL, "Invalid character(s) found in %s number %s", what, q);
    }
    if (leading_zero(s, n)) {
        goquote(s, n, q, sizeof q);
        return de_errf(e, DE_EINVAL, "%s number must not contain leading zeroes %s", Cap, q);
    }
    return parse_u64(s, n, out, e);
}

de_rc de_semver_parse(const char *s, size_t len, de_semver *out, de_err *e)
{
    char q[QBUF];
    if (len == 0)
        return de_errf(e, DE_EINVAL, "Version string empty");
    const char *d1 = memchr(s, '.', len);
    const char *d2 = d1 ? memchr(d1 + 1, '.', len - (size_t)(d1 + 1 - s)) : NULL;
    if (!d2)
        return de_errf(e, DE_EINVAL, "No Major.Minor.Patch elements found");
    de_semver v;
    memset(&v, 0, sizeof v);
    DE_TRY(parse_num("major", "Major", s, (size_t)(d1 - s), &v.major, e));
    DE_TRY(parse_num("minor", "Minor", d1 + 1, (size_t)(d2 - d1 - 1), &v.minor, e));

    const char *p = d2 + 1, *end = s + len;
    const char *plus = memchr(p, '+', (size_t)(end - p));
    const char *pend = plus ? plus : end;
    const char *minus = memchr(p, '-', (size_t)(pend - p));
    const char *patch_end = minus ? minus : pend;
    if (plus) {
        v.build = plus + 1;
        v.build_len = (uint32_t)(end - plus - 1);
    }
    if (minus) {
        v.pre = minus + 1;
        v.pre_len = (uint32_t)(pend - minus - 1);
    }
    DE_TRY(parse_num("patch", "Patch", p, (size_t)(patch_end - p), &v.patch, e));

    if (v.pre) {
        const char *id = v.pre, *stop = v.pre + v.pre_len;
        for (;;) {
            const char *dot = memchr(id, '.', (size_t)(stop - id));
            const char *ie = dot ? dot : stop;
            size_t n = (size_t)(ie - id);
            if (n == 0)
                return de_errf(e, DE_EINVAL, "Prerelease is empty");
            if (all_digits(id, n)) {
                uint64_t ignored;
                if (leading_zero(id, n)) {
                    goquote(id, n, q, sizeof q);
                    return de_errf(e, DE_EINVAL,
                                   "Numeric PreRelease version must not contain leading zeroes %s",
                                   q);
                }
                DE_TRY(parse_u64(id, n, &ignored, e));
            } else if (!is_alnum_id(id, n)) {
                goquote(id, n, q, sizeof q);
                return de_errf(e, DE_EINVAL, "Invalid character(s) found in prerelease %s", q);
            }
            if (!dot)
                break;
            id = dot + 1;
        }
    }
    if (v.build) {
        const char *id = v.build, *stop = v.build + v.build_len;
        for (;;) {
            const char *dot = memchr(id, '.', (size_t)(stop - id));
            const char *ie = dot ? dot : stop;
            size_t n = (size_t)(ie - id);
            if (n == 0)
                return de_errf(e, DE_EINVAL, "Build meta data is empty");
            if (!is_alnum_id(id, n)) {
                goquote(id, n, q, sizeof q);
                return de_errf(e, DE_EINVAL, "Invalid character(s) found in build meta data %s",
                               q);
            }
            if (!dot)
                break;
            id = dot + 1;
        }
    }
    *out = v;
    return DE_OK;
}

size_t de_semver_normalize(const char *s, size_t len, char *buf, size_t cap)
{
    if (len && s[0] == 'v')
        s++, len--;
    /* Split into at most three parts on the first two dots. */
    const char *part[3];
    size_t plen[3], np = 0;
    const char *p = s, *end = s + len;
    while (np < 2) {
        const char *dot = memchr(p, '.', (size_t)(end - p));
        if (!dot)
            break;
        part[np] = p;
        plen[np++] = (size_t)(dot - p);
        p = dot + 1;
    }
    part[np] = p;
    plen[np++] = (size_t)(end - p);

    if (np < 3 && (memchr(part[np - 1], '+', plen[np - 1]) || memchr(part[np - 1], '-', plen[np - 1])))
        return SIZE_MAX;
    size_t o = 0;
    for (size_t i = 0; i < 3; i++) {
        const char *t = i < np ? part[i] : "0";
        size_t n = i < np ? plen[i] : 1;
        bool zero_prefix = false;
        if (n > 1) {
            while (n && *t == '0')
                t++, n--;
            zero_prefix = n == 0 || !(*t >= '0' && *t <= '9');
        }
        size_t need = n + (zero_prefix ? 1 : 0) + (i ? 1 : 0);
        if (o + need + 1 > cap)
            return SIZE_MAX;
        if (i)
            buf[o++] = '.';
        if (zero_prefix)
            buf[o++] = '0';
        memcpy(buf + o, t, n);
        o += n;
    }
    buf[o] = 0;
    return o;
}

de_rc de_semver_parse_normalized(const char *s, size_t len, char *buf, size_t cap,
                                 de_semver *out, de_err *e)
{
    size_t n = de_semver_normalize(s, len, buf, cap);
    if (n == SIZE_MAX) {
        if (cap < len + 8)
            return de_errf(e, DE_ENOMEM, "semver: normalisation buffer too small");
        return de_errf(e, DE_EINVAL, "short version cannot contain PreRelease/Build meta data");
    }
    return de_semver_parse(buf, n, out, e);
}

/* One prerelease identifier against another (blang PRVersion.Compare). */
static int cmp_ident(const char *a, size_t an, const char *b, size_t bn)
{
    bool na = all_digits(a, an), nb = all_digits(b, bn);
    if (na != nb)
        return na ? -1 : 1;
    if (na) {
        /* No leading zeros after a successful parse: longer is larger. */
        if (an != bn)
            return an < bn ? -1 : 1;
        int c = memcmp(a, b, an);
        return c < 0 ? -1 : c > 0;
    }
    size_t m = an < bn ? an : bn;
    int c = memcmp(a, b, m);
    if (c)
        return c < 0 ? -1 : 1;
    return an < bn ? -1 : an > bn;
}

int de_semver_cmp(const de_semver *a, const de_semver *b)
{
    if (a->major != b->major)
        return a->major < b->major ? -1 : 1;
    if (a->minor != b->minor)
        return a->minor < b->minor ? -1 : 1;
    if (a->patch != b->patch)
        return a->patch < b->patch ? -1 : 1;
    if (!a->pre || !b->pre) {
        if (!a->pre && !b->pre)
            return 0;
        return a->pre ? -1 : 1;
    }
    const char *pa = a->pre, *ea = a->pre + a->pre_len;
    const char *pb = b->pre, *eb = b->pre + b->pre_len;
    for (;;) {
        const char *da = memchr(pa, '.', (size_t)(ea - pa));
        const char *db = memchr(pb, '.', (size_t)(eb - pb));
        const char *ia = da ? da : ea, *ib = db ? db : eb;
        int c = cmp_ident(pa, (size_t)(ia - pa), pb, (size_t)(ib - pb));
        if (c)
            return c;
        if (!da || !db) {
            if (!da && !db)
                return 0;
            return da ? 1 : -1; /* more identifiers win a tie */
        }
        pa = da + 1;
        pb = db + 1;
    }
}

size_t de_semver_format(const de_semver *v, char *buf, size_t cap)
{
    int n = snprintf(buf, cap, "%llu.%llu.%llu%s%.*s%s%.*s", (unsigned long long)v->major,
                     (unsigned long long)v->minor, (unsigned long long)v->patch,
                     v->pre ? "-" : "", v->pre ? (int)v->pre_len : 0, v->pre ? v->pre : "",
                     v->build ? "+" : "", v->build ? (int)v->build_len : 0,
                     v->build ? v->build : "");
    if (n < 0)
        return 0;
    return (size_t)n < cap ? (size_t)n : (cap ? cap - 1 : 0);
}
