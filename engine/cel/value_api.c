/*
 * value_api.c - the public view of CEL values (cel.h): accessors,
 * constructors, the CEL-ish text form and the typed JSON of the conformance
 * vectors.
 */
#include "cel_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

cel_kind cel_value_kind(const cel_value *v) { return (cel_kind)(v->v.t == CV_DEVICE ? CV_MAP : v->v.t); }
bool cel_value_bool(const cel_value *v) { return v->v.t == CV_BOOL && v->v.u.b; }
int64_t cel_value_int(const cel_value *v) { return v->v.t == CV_INT ? v->v.u.i : 0; }
uint64_t cel_value_uint(const cel_value *v) { return v->v.t == CV_UINT ? v->v.u.u : 0; }
double cel_value_double(const cel_value *v) { return v->v.t == CV_DOUBLE ? v->v.u.d : 0; }

const char *cel_value_str(const cel_value *v, size_t *len)
{
    if (v->v.t == CV_STRING || v->v.t == CV_BYTES) {
        *len = v->v.n;
        return v->v.u.s ? v->v.u.s : "";
    }
    if (v->v.t == CV_TYPE) {
        const char *s = cel_type_name(v->v.sub);
        *len = strlen(s);
        return s;
    }
    *len = 0;
    return "";
}

size_t cel_value_len(const cel_value *v)
{
    if (v->v.t == CV_LIST)
        return v->v.n;
    if (v->v.t == CV_MAP && v->v.sub == MK_PLAIN)
        return v->v.u.m->n;
    return 0;
}

const cel_value *cel_value_list_at(const cel_value *v, size_t i)
{
    return (const cel_value *)&v->v.u.items[i];
}

const cel_value *cel_value_map_key(const cel_value *v, size_t i)
{
    return (const cel_value *)&v->v.u.m->keys[i];
}

const cel_value *cel_value_map_val(const cel_value *v, size_t i)
{
    return (const cel_value *)&v->v.u.m->vals[i];
}

de_qty cel_value_quantity(const cel_value *v)
{
    if (v->v.t == CV_QTY)
        return *v->v.u.q;
    de_qty z = {0, 0};
    return z;
}

size_t cel_value_text(const cel_value *v, char *buf, size_t cap)
{
    if (v->v.t == CV_QTY)
        return de_qty_format(*v->v.u.q, buf, cap);
    if (v->v.t == CV_SEMVER)
        return de_semver_format(v->v.u.sv, buf, cap);
    if (cap)
        buf[0] = 0;
    return 0;
}

/* ---- constructors ------------------------------------------------------------------ */

static cel_value *mkv(de_arena *a, cel_v v)
{
    cel_value *r = de_arena_alloc(a, sizeof *r);
    if (r)
        r->v = v;
    return r;
}

cel_value *cel_value_null(de_arena *a) { return mkv(a, cv_null()); }
cel_value *cel_value_new_bool(de_arena *a, bool b) { return mkv(a, cv_bool(b)); }
cel_value *cel_value_new_int(de_arena *a, int64_t i) { return mkv(a, cv_int(i)); }
cel_value *cel_value_new_uint(de_arena *a, uint64_t u) { return mkv(a, cv_uint(u)); }
cel_value *cel_value_new_double(de_arena *a, double d) { return mkv(a, cv_double(d)); }

cel_value *cel_value_new_string(de_arena *a, const char *s, size_t n)
{
    char *c = de_arena_strndup(a, n ? s : "", n);
    return c ? mkv(a, cv_str(c, n)) : NULL;
}

cel_value *cel_value_new_bytes(de_arena *a, const char *s, size_t n)
{
    char *c = de_arena_strndup(a, n ? s : "", n);
    return c ? mkv(a, cv_bytes(c, n)) : NULL;
}

cel_value *cel_value_new_type(de_arena *a, const char *name)
{
    for (int t = CV_NULL; t <= CV_SEMVER; t++)
        if (!strcmp(cel_type_name(t), name))
            return mkv(a, cv_type(t));
    return NULL;
}

cel_value *cel_value_new_quantity(de_arena *a, de_qty q)
{
    de_qty *p = de_arena_alloc(a, sizeof *p);
    if (!p)
        return NULL;
    *p = q;
    cel_v v = {.t = CV_QTY};
    v.u.q = p;
    return mkv(a, v);
}

cel_value *cel_value_new_semver(de_arena *a, const char *s, size_t n)
{
    char *c = de_arena_strndup(a, s, n);
    de_semver *sv = de_arena_alloc(a, sizeof *sv);
    if (!c || !sv)
        return NULL;
    if (de_semver_parse(c, n, sv, NULL) != DE_OK)
        return NULL;
    cel_v v = {.t = CV_SEMVER};
    v.u.sv = sv;
    return mkv(a, v);
}

cel_value *cel_value_new_list(de_arena *a, const cel_value *const *items, size_t n)
{
    cel_v *it = de_arena_alloc(a, (n ? n : 1) * sizeof *it);
    if (!it)
        return NULL;
    for (size_t i = 0; i < n; i++)
        it[i] = items[i]->v;
    return mkv(a, cv_list(it, (uint32_t)n));
}

cel_value *cel_value_new_map(de_arena *a, const cel_value *const *keys,
                             const cel_value *const *vals, size_t n)
{
    cel_v *k = de_arena_alloc(a, (n ? n : 1) * sizeof *k);
    cel_v *v = de_arena_alloc(a, (n ? n : 1) * sizeof *v);
    if (!k || !v)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        k[i] = keys[i]->v;
        v[i] = vals[i]->v;
    }
    bool oom = false;
    cel_v m = cel_map_build(a, k, v, (uint32_t)n, &oom);
    return oom ? NULL : mkv(a, m);
}

/* ---- printing ------------------------------------------------------------------------- */

static void json_str(de_buf *b, const char *s, size_t n)
{
    de_buf_putc(b, '"');
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        switch (c) {
        case '"': de_buf_puts(b, "\\\""); break;
        case '\\': de_buf_puts(b, "\\\\"); break;
        case '\n': de_buf_puts(b, "\\n"); break;
        case '\r': de_buf_puts(b, "\\r"); break;
        case '\t': de_buf_puts(b, "\\t"); break;
        default:
            if (c < 0x20 || c == 0x7f)
                de_buf_printf(b, "\\u%04x", c);
            else
                de_buf_putc(b, (char)c);
        }
    }
    de_buf_putc(b, '"');
}

static void b64(de_buf *b, const unsigned char *s, size_t n)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    de_buf_putc(b, '"');
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)s[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)s[i + 1] << 8;
        if (i + 2 < n)
            v |= s[i + 2];
        de_buf_putc(b, tab[(v >> 18) & 63]);
        de_buf_putc(b, tab[(v >> 12) & 63]);
        de_buf_putc(b, i + 1 < n ? tab[(v >> 6) & 63] : '=');
        de_buf_putc(b, i + 2 < n ? tab[v & 63] : '=');
    }
    de_buf_putc(b, '"');
}

/* Shortest round-trip decimal, always with a '.' or an exponent. */
static void num_double(de_buf *b, double d)
{
    char buf[64];
    for (int p = 1; p <= 17; p++) {
        snprintf(buf, sizeof buf, "%.*g", p, d);
        if (strtod(buf, NULL) == d)
            break;
    }
    de_buf_puts(b, buf);
    if (!strpbrk(buf, ".eE"))
        de_buf_puts(b, ".0");
}

static void typed(de_buf *b, cel_v v, int depth)
{
    char buf[128];
    if (depth > 200) {
        de_buf_puts(b, "{\"null\":null}");
        return;
    }
    switch (v.t) {
    case CV_NULL: de_buf_puts(b, "{\"null\":null}"); break;
    case CV_BOOL: de_buf_printf(b, "{\"bool\":%s}", v.u.b ? "true" : "false"); break;
    case CV_INT: de_buf_printf(b, "{\"int\":%lld}", (long long)v.u.i); break;
    case CV_UINT: de_buf_printf(b, "{\"uint\":%llu}", (unsigned long long)v.u.u); break;
    case CV_DOUBLE:
        de_buf_puts(b, "{\"double\":");
        if (isnan(v.u.d))
            de_buf_puts(b, "\"NaN\"");
        else if (isinf(v.u.d))
            de_buf_puts(b, v.u.d > 0 ? "\"Infinity\"" : "\"-Infinity\"");
        else
            num_double(b, v.u.d);
        de_buf_putc(b, '}');
        break;
    case CV_STRING:
        de_buf_puts(b, "{\"string\":");
        json_str(b, v.u.s, v.n);
        de_buf_putc(b, '}');
        break;
    case CV_BYTES:
        de_buf_puts(b, "{\"bytes\":");
        b64(b, (const unsigned char *)v.u.s, v.n);
        de_buf_putc(b, '}');
        break;
    case CV_LIST:
        de_buf_puts(b, "{\"list\":[");
        for (uint32_t i = 0; i < v.n; i++) {
            if (i)
                de_buf_putc(b, ',');
            typed(b, v.u.items[i], depth + 1);
        }
        de_buf_puts(b, "]}");
        break;
    case CV_MAP:
        de_buf_puts(b, "{\"map\":[");
        if (v.sub == MK_PLAIN)
            for (uint32_t i = 0; i < v.u.m->n; i++) {
                if (i)
                    de_buf_putc(b, ',');
                de_buf_putc(b, '[');
                typed(b, v.u.m->keys[i], depth + 1);
                de_buf_putc(b, ',');
                typed(b, v.u.m->vals[i], depth + 1);
                de_buf_putc(b, ']');
            }
        de_buf_puts(b, "]}");
        break;
    case CV_TYPE: de_buf_printf(b, "{\"type\":\"%s\"}", cel_type_name(v.sub)); break;
    case CV_QTY:
        de_qty_format(*v.u.q, buf, sizeof buf);
        de_buf_printf(b, "{\"quantity\":\"%s\"}", buf);
        break;
    case CV_SEMVER:
        de_semver_format(v.u.sv, buf, sizeof buf);
        de_buf_puts(b, "{\"semver\":");
        json_str(b, buf, strlen(buf));
        de_buf_putc(b, '}');
        break;
    default: de_buf_puts(b, "{\"null\":null}"); break;
    }
}

de_rc cel_value_typed_json(const cel_value *v, de_buf *out)
{
    typed(out, v->v, 0);
    return out->overflow ? DE_ENOMEM : DE_OK;
}

static void text_str(de_buf *b, const char *s, size_t n, bool bytes)
{
    if (bytes)
        de_buf_putc(b, 'b');
    de_buf_putc(b, '"');
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        switch (c) {
        case '"': de_buf_puts(b, "\\\""); break;
        case '\\': de_buf_puts(b, "\\\\"); break;
        case '\n': de_buf_puts(b, "\\n"); break;
        case '\r': de_buf_puts(b, "\\r"); break;
        case '\t': de_buf_puts(b, "\\t"); break;
        default:
            if (c < 0x20 || c == 0x7f || (bytes && c >= 0x80))
                de_buf_printf(b, "\\x%02x", c);
            else
                de_buf_putc(b, (char)c);
        }
    }
    de_buf_putc(b, '"');
}

static void text(de_buf *b, cel_v v, int depth)
{
    char buf[128];
    if (depth > 200) {
        de_buf_puts(b, "...");
        return;
    }
    switch (v.t) {
    case CV_NULL: de_buf_puts(b, "null"); break;
    case CV_BOOL: de_buf_puts(b, v.u.b ? "true" : "false"); break;
    case CV_INT: de_buf_printf(b, "%lld", (long long)v.u.i); break;
    case CV_UINT: de_buf_printf(b, "%lluu", (unsigned long long)v.u.u); break;
    case CV_DOUBLE:
        if (isnan(v.u.d))
            de_buf_puts(b, "double(\"NaN\")");
        else if (isinf(v.u.d))
            de_buf_puts(b, v.u.d > 0 ? "double(\"Infinity\")" : "double(\"-Infinity\")");
        else
            num_double(b, v.u.d);
        break;
    case CV_STRING: text_str(b, v.u.s, v.n, false); break;
    case CV_BYTES: text_str(b, v.u.s, v.n, true); break;
    case CV_LIST:
        de_buf_putc(b, '[');
        for (uint32_t i = 0; i < v.n; i++) {
            if (i)
                de_buf_puts(b, ", ");
            text(b, v.u.items[i], depth + 1);
        }
        de_buf_putc(b, ']');
        break;
    case CV_MAP:
        de_buf_putc(b, '{');
        if (v.sub == MK_PLAIN)
            for (uint32_t i = 0; i < v.u.m->n; i++) {
                if (i)
                    de_buf_puts(b, ", ");
                text(b, v.u.m->keys[i], depth + 1);
                de_buf_puts(b, ": ");
                text(b, v.u.m->vals[i], depth + 1);
            }
        de_buf_putc(b, '}');
        break;
    case CV_TYPE: de_buf_puts(b, cel_type_name(v.sub)); break;
    case CV_QTY:
        de_qty_format(*v.u.q, buf, sizeof buf);
        de_buf_printf(b, "quantity(\"%s\")", buf);
        break;
    case CV_SEMVER:
        de_semver_format(v.u.sv, buf, sizeof buf);
        de_buf_printf(b, "semver(\"%s\")", buf);
        break;
    default: de_buf_puts(b, "<error>"); break;
    }
}

de_rc cel_value_format(const cel_value *v, de_buf *out)
{
    text(out, v->v, 0);
    return out->overflow ? DE_ENOMEM : DE_OK;
}
