/*
 * jload.c - JSON text to a jansson tree without jansson's byte callback
 * (jload.h says why, and where it stands back for json_loadb).
 *
 * The walk is recursive descent over the text in place.  A string without
 * an escape goes to jansson straight from the text; one with escapes is
 * decoded into a scratch area first.  That area is a stack: an object's key
 * must stay whole while its value is read, and the value's own strings are
 * decoded above it.  A decoded string is never longer than its text, and
 * the strings alive at once come from disjoint stretches of the text, so
 * the text's length bounds the stack, which is allocated once, at the first
 * escape.  Every refusal returns NULL and frees what was built; no refusal
 * tries to say why, since json_loadb will.
 */
#include "jload.h"
#include "utf8.h"

#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* jansson's own cap is 2,048; past 256 levels the text is hostile, and
 * jansson, not this reader's C stack, takes it */
#define JLOAD_MAX_DEPTH 256
/* 18 decimal digits always fit in a json_int_t (long long): no overflow
 * check is needed below that, and longer integers go to jansson */
#define JLOAD_MAX_INT_DIGITS 18
/* a real's text, copied out for strtod */
#define JLOAD_MAX_REAL 63

#define SUPPORTED (JSON_REJECT_DUPLICATES | JSON_DECODE_ANY | JSON_ALLOW_NUL)

typedef struct jr {
    const unsigned char *p, *end;
    size_t len;    /* the text's, the scratch stack's bound */
    char *scratch; /* decoded strings, a stack */
    size_t top;
    int depth;
} jr;

static inline bool is_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

static inline void ws(jr *r)
{
    while (r->p < r->end && (*r->p == ' ' || *r->p == '\n' || *r->p == '\r' || *r->p == '\t'))
        r->p++;
}

/* an ASCII byte a string holds as it is: not '"', '\\' or a control
 * (0x7F is not one to jansson) */
static inline bool plain(unsigned char c)
{
    return (unsigned char)(c - 0x20) < 0x60 && c != '"' && c != '\\';
}

static int hex4(const unsigned char *p)
{
    int v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned char c = p[i];
        v <<= 4;
        if (is_digit(c))
            v |= c - '0';
        else if (c >= 'a' && c <= 'f')
            v |= c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            v |= c - 'A' + 10;
        else
            return -1;
    }
    return v;
}

/* The escape at p (its backslash), decoded to t: the bytes written, and p
 * moved past it; 0 for what jansson refuses, and for \u0000. */
static size_t unescape(const unsigned char **pp, const unsigned char *end, char *t)
{
    const unsigned char *p = *pp;
    if (end - p < 2)
        return 0;
    char c = (char)p[1];
    switch (c) {
    case '"': case '\\': case '/': *t = c; break;
    case 'b': *t = '\b'; break;
    case 'f': *t = '\f'; break;
    case 'n': *t = '\n'; break;
    case 'r': *t = '\r'; break;
    case 't': *t = '\t'; break;
    case 'u': {
        int v = end - p >= 6 ? hex4(p + 2) : -1;
        if (v <= 0 || (v >= 0xDC00 && v <= 0xDFFF))
            return 0;
        uint32_t cp = (uint32_t)v;
        p += 6;
        if (v >= 0xD800 && v <= 0xDBFF) { /* a surrogate pair, or nothing */
            int lo = end - p >= 6 && p[0] == '\\' && p[1] == 'u' ? hex4(p + 2) : -1;
            if (lo < 0xDC00 || lo > 0xDFFF)
                return 0;
            cp = 0x10000 + (((uint32_t)v - 0xD800) << 10) + ((uint32_t)lo - 0xDC00);
            p += 6;
        }
        *pp = p;
        return de_utf8_put(t, cp);
    }
    default: return 0;
    }
    *pp = p + 2;
    return 1;
}

/* The string whose quote is at r->p: *out and *len are its bytes, in the
 * text or on the scratch stack (above r->top, which the caller restores
 * once jansson has copied them). */
static bool string(jr *r, const char **out, size_t *len)
{
    const unsigned char *s = ++r->p, *p = s, *end = r->end;
    uint32_t cp;
    for (;;) {
        if (p >= end)
            return false;
        if (plain(*p)) {
            p++;
        } else if (*p == '"') {
            *out = (const char *)s;
            *len = (size_t)(p - s);
            r->p = p + 1;
            return true;
        } else if (*p == '\\') {
            break;
        } else {
            size_t k = *p >= 0x80 ? de_utf8_seq(p, (size_t)(end - p), &cp) : 0;
            if (!k)
                return false; /* a control, or not UTF-8 */
            p += k;
        }
    }
    if (!r->scratch && !(r->scratch = malloc(r->len + 1)))
        return false;
    char *t0 = r->scratch + r->top, *t = t0;
    memcpy(t, s, (size_t)(p - s));
    t += p - s;
    while (p < end && *p != '"') {
        if (plain(*p)) {
            *t++ = (char)*p++;
        } else if (*p == '\\') {
            size_t k = unescape(&p, end, t);
            if (!k)
                return false;
            t += k;
        } else {
            size_t k = *p >= 0x80 ? de_utf8_seq(p, (size_t)(end - p), &cp) : 0;
            if (!k)
                return false;
            memcpy(t, p, k);
            t += k;
            p += k;
        }
    }
    if (p >= end)
        return false;
    *out = t0;
    *len = (size_t)(t - t0);
    r->top += *len;
    r->p = p + 1;
    return true;
}

static json_t *number(jr *r)
{
    const unsigned char *s = r->p, *p = s, *end = r->end;
    bool neg = *p == '-';
    if (neg)
        p++;
    if (p >= end || !is_digit(*p))
        return NULL;
    const unsigned char *digits = p;
    if (*p == '0') {
        if (++p < end && is_digit(*p))
            return NULL; /* a leading zero */
    } else {
        while (p < end && is_digit(*p))
            p++;
    }
    if (p >= end || (*p != '.' && *p != 'e' && *p != 'E')) {
        if (p - digits > JLOAD_MAX_INT_DIGITS)
            return NULL;
        json_int_t v = 0;
        for (const unsigned char *d = digits; d < p; d++)
            v = v * 10 + (*d - '0');
        r->p = p;
        return json_integer(neg ? -v : v);
    }
    if (*p == '.') {
        if (++p >= end || !is_digit(*p))
            return NULL;
        while (p < end && is_digit(*p))
            p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        if (++p < end && (*p == '+' || *p == '-'))
            p++;
        if (p >= end || !is_digit(*p))
            return NULL;
        while (p < end && is_digit(*p))
            p++;
    }
    /* jansson's strtod, after it has put the locale's decimal point in
     * place of '.': only the "C" point gives the same text here */
    const char *point = localeconv()->decimal_point;
    size_t len = (size_t)(p - s);
    if (len > JLOAD_MAX_REAL || point[0] != '.' || point[1])
        return NULL;
    char buf[JLOAD_MAX_REAL + 1], *stop;
    memcpy(buf, s, len);
    buf[len] = 0;
    errno = 0;
    double v = strtod(buf, &stop);
    if (stop != buf + len || ((v == HUGE_VAL || v == -HUGE_VAL) && errno == ERANGE))
        return NULL;
    r->p = p;
    return json_real(v);
}

static json_t *value(jr *r);

/* After a member or an element: 1 past a ',' (more follow), 0 past the
 * closing byte, -1 for anything else. */
static int next(jr *r, unsigned char close)
{
    ws(r);
    if (r->p < r->end && (*r->p == ',' || *r->p == close)) {
        bool more = *r->p++ == ',';
        if (more)
            ws(r);
        return more;
    }
    return -1;
}

static json_t *object(jr *r)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    r->p++;
    ws(r);
    if (r->p < r->end && *r->p == '}') {
        r->p++;
        return o;
    }
    for (;;) {
        size_t top = r->top, had = json_object_size(o);
        const char *key;
        size_t klen;
        if (r->p >= r->end || *r->p != '"' || !string(r, &key, &klen))
            break;
        ws(r);
        if (r->p >= r->end || *r->p != ':')
            break;
        r->p++;
        ws(r);
        json_t *v = value(r);
        /* the same key twice: jansson either refuses it or keeps the
         * first's place with the last's value; it judges */
        if (!v || json_object_setn_new_nocheck(o, key, klen, v) || json_object_size(o) == had)
            break;
        r->top = top;
        int more = next(r, '}');
        if (more == 0)
            return o;
        if (more < 0)
            break;
    }
    json_decref(o);
    return NULL;
}

static json_t *array(jr *r)
{
    json_t *a = json_array();
    if (!a)
        return NULL;
    r->p++;
    ws(r);
    if (r->p < r->end && *r->p == ']') {
        r->p++;
        return a;
    }
    for (;;) {
        json_t *v = value(r);
        if (!v || json_array_append_new(a, v))
            break;
        int more = next(r, ']');
        if (more == 0)
            return a;
        if (more < 0)
            break;
    }
    json_decref(a);
    return NULL;
}

static json_t *word(jr *r, const char *w, size_t n, json_t *v)
{
    if ((size_t)(r->end - r->p) < n || memcmp(r->p, w, n))
        return NULL;
    r->p += n;
    return v;
}

static json_t *value(jr *r)
{
    if (r->p >= r->end)
        return NULL;
    switch (*r->p) {
    case '{':
    case '[': {
        if (++r->depth > JLOAD_MAX_DEPTH)
            return NULL;
        json_t *v = *r->p == '{' ? object(r) : array(r);
        r->depth--;
        return v;
    }
    case '"': {
        const char *s;
        size_t n, top = r->top;
        if (!string(r, &s, &n))
            return NULL;
        json_t *v = json_stringn_nocheck(s, n);
        r->top = top;
        return v;
    }
    case 't': return word(r, "true", 4, json_true());
    case 'f': return word(r, "false", 5, json_false());
    case 'n': return word(r, "null", 4, json_null());
    default: return number(r);
    }
}

json_t *de_json_parse(const char *s, size_t n, size_t flags)
{
    if (!s || (flags & ~(size_t)SUPPORTED))
        return NULL;
    jr r = {(const unsigned char *)s, (const unsigned char *)s + n, n, NULL, 0, 0};
    ws(&r);
    if (r.p >= r.end || (!(flags & JSON_DECODE_ANY) && *r.p != '{' && *r.p != '['))
        return NULL;
    json_t *v = value(&r);
    ws(&r);
    if (v && r.p != r.end) {
        json_decref(v);
        v = NULL;
    }
    free(r.scratch);
    return v;
}

json_t *de_json_loadb(const char *s, size_t n, size_t flags, json_error_t *je)
{
    json_t *v = de_json_parse(s, n, flags);
    if (!v)
        return json_loadb(s, n, flags, je);
    if (je) { /* as json_loadb leaves it on success */
        je->text[0] = 0;
        je->line = je->column = -1;
        je->position = 0;
        snprintf(je->source, sizeof je->source, "%s", "<buffer>");
    }
    return v;
}
