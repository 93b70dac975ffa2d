/*
 * doc_yaml.c - YAML documents to jansson values, resolved the way
 * sigs.k8s.io/yaml does (it decodes with go-yaml v2, YAML 1.1 rules, then
 * converts to JSON):
 *   - quoted scalars are strings; plain ones resolve by their first byte:
 *     null "" ~ null Null NULL; bool y Y yes Yes YES n N no No NO true True
 *     TRUE false False FALSE on On ON off Off OFF; ints with '_' removed in
 *     Go's base-0 syntax (0x.., 0o.., 0b.., and a leading 0 means octal);
 *     floats 1.5 .5 1e3; anything else (timestamps included) is a string;
 *   - ints beyond int64 but within uint64, and longer digit strings, become
 *     JSON reals (go-yaml yields uint64 / float64 there); .inf and .nan are
 *     refused because JSON cannot carry them (sigs.k8s.io/yaml fails too);
 *   - tags !!str !!int !!float !!bool !!null !!binary are honoured, other
 *     tags leave the text as a string; a tag that does not fit its text is
 *     go-yaml's "cannot decode !!str `x` as a !!int";
 *   - map keys become strings (ints in decimal, bools as true/false); null
 *     and collection keys are refused;
 *   - "<<" merge keys merge mappings in go-yaml v2's order.
 *
 * Aliases share the anchored value (json_incref) instead of copying it.
 * Expansion is bounded with go-yaml's own rule (the share of nodes that come
 * from alias expansion may not pass 99% for small documents down to 10% for
 * large ones), so a "billion laughs" document fails with "document contains
 * excessive aliasing" after a few thousand nodes instead of exhausting
 * memory in whoever walks the result.
 */
#include "doc_int.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#define MAX_DEPTH 1000

typedef struct anchor {
    char *name;
    json_t *v;
    uint64_t size; /* nodes, aliases expanded */
} anchor;

typedef struct ybuild {
    yaml_parser_t p;
    const char *name;
    int doc;
    anchor *anchors;
    size_t nanchors, capanchors;
    uint64_t decode_count, alias_count;
    de_err *e;
} ybuild;

/* ---- scalar resolution -------------------------------------------------- */

typedef enum rkind { R_STR, R_NULL, R_BOOL, R_INT, R_UINT, R_FLOAT, R_MERGE } rkind;

typedef struct rval {
    rkind k;
    bool b;
    int64_t i;
    uint64_t u;
    double f;
} rval;

static bool eq(const char *s, size_t n, const char *lit)
{
    return strlen(lit) == n && memcmp(s, lit, n) == 0;
}

static bool in_list(const char *s, size_t n, const char *const *list)
{
    for (; *list; list++)
        if (eq(s, n, *list))
            return true;
    return false;
}

/* strconv.ParseInt / ParseUint with base 0 (prefixes, leading-0 octal). */
static bool go_parse_base0(const char *s, size_t n, bool allow_sign, bool *neg, uint64_t *out)
{
    size_t i = 0;
    *neg = false;
    if (allow_sign && i < n && (s[i] == '+' || s[i] == '-'))
        *neg = s[i++] == '-';
    if (i >= n)
        return false;
    unsigned base = 10;
    if (s[i] == '0' && i + 1 < n) {
        char c = s[i + 1];
        if (c == 'x' || c == 'X')
            base = 16, i += 2;
        else if (c == 'o' || c == 'O')
            base = 8, i += 2;
        else if (c == 'b' || c == 'B')
            base = 2, i += 2;
        else
            base = 8, i += 1;
        if (i >= n)
            return false;
    }
    uint64_t v = 0;
    for (; i < n; i++) {
        char c = s[i];
        unsigned d;
        if (c >= '0' && c <= '9')
            d = (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            d = (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            d = (unsigned)(c - 'A' + 10);
        else
            return false;
        if (d >= base)
            return false;
        if (v > (UINT64_MAX - d) / base)
            return false;
        v = v * base + d;
    }
    *out = v;
    return true;
}

/* ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$ */
static bool yaml_style_float(const char *s, size_t n)
{
    size_t i = 0;
    if (i < n && (s[i] == '+' || s[i] == '-'))
        i++;
    size_t d0 = i;
    if (i < n && s[i] == '.') {
        i++;
        size_t f0 = i;
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
        if (i == f0)
            return false;
    } else {
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
        if (i == d0)
            return false;
        if (i < n && s[i] == '.') {
            i++;
            while (i < n && s[i] >= '0' && s[i] <= '9')
                i++;
        }
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-'))
            i++;
        size_t e0 = i;
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
        if (i == e0)
            return false;
    }
    return i == n;
}

/* strtod on a checked decimal text; false when it overflows (Go's
 * ParseFloat reports ErrRange there and go-yaml keeps the string). */
static bool to_double(const char *s, size_t n, double *out)
{
    char buf[128];
    char *tmp = n < sizeof buf ? buf : de_xmalloc(n + 1);
    memcpy(tmp, s, n);
    tmp[n] = 0;
    errno = 0;
    double d = strtod(tmp, NULL);
    if (tmp != buf)
        free(tmp);
    if (isinf(d))
        return false;
    *out = d;
    return true;
}

/* go-yaml v2 resolve("", in) for a plain scalar. */
static rval resolve_plain(const char *s, size_t n)
{
    static const char *const nulls[] = {"", "~", "null", "Null", "NULL", NULL};
    static const char *const trues[] = {"y",  "Y",  "yes",  "Yes", "YES", "true",
                                        "True", "TRUE", "on", "On", "ON", NULL};
    static const char *const falses[] = {"n",     "N",     "no",  "No",  "NO",  "false",
                                         "False", "FALSE", "off", "Off", "OFF", NULL};
    static const char *const nans[] = {".nan", ".NaN", ".NAN", NULL};
    static const char *const pinfs[] = {".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", NULL};
    static const char *const ninfs[] = {"-.inf", "-.Inf", "-.INF", NULL};
    rval r = {R_STR, false, 0, 0, 0.0};
    char c = n ? s[0] : 'N';
    bool hint = n == 0 || c == '+' || c == '-' || (c >= '0' && c <= '9') || c == '.' ||
                (c && strchr("yYnNtTfFoO~", c));
    if (!hint)
        return r;
    if (in_list(s, n, nulls)) { r.k = R_NULL; return r; }
    if (in_list(s, n, trues)) { r.k = R_BOOL; r.b = true; return r; }
    if (in_list(s, n, falses)) { r.k = R_BOOL; r.b = false; return r; }
    if (in_list(s, n, nans)) { r.k = R_FLOAT; r.f = NAN; return r; }
    if (in_list(s, n, pinfs)) { r.k = R_FLOAT; r.f = HUGE_VAL; return r; }
    if (in_list(s, n, ninfs)) { r.k = R_FLOAT; r.f = -HUGE_VAL; return r; }
    if (eq(s, n, "<<")) { r.k = R_MERGE; return r; }
    if (c == '.') {
        if (yaml_style_float(s, n) && to_double(s, n, &r.f))
            r.k = R_FLOAT;
        return r;
    }
    if (!(c == '+' || c == '-' || (c >= '0' && c <= '9')))
        return r;
    /* Remove every '_' (go-yaml does, before trying the number forms). */
    char buf[128];
    char *plain = n < sizeof buf ? buf : de_xmalloc(n + 1);
    size_t pn = 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] != '_')
            plain[pn++] = s[i];
    bool neg;
    uint64_t u;
    if (go_parse_base0(plain, pn, true, &neg, &u) &&
        u <= (neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX)) {
        r.k = R_INT;
        r.i = neg ? (int64_t)(0 - u) : (int64_t)u;
    } else if (go_parse_base0(plain, pn, false, &neg, &u)) {
        r.k = R_UINT;
        r.u = u;
    } else if (yaml_style_float(plain, pn) && to_double(plain, pn, &r.f)) {
        r.k = R_FLOAT;
    }
    if (plain != buf)
        free(plain);
    return r;
}

static const char *short_tag(const char *tag, char *buf, size_t cap)
{
    static const char pfx[] = "tag:yaml.org,2002:";
    if (strncmp(tag, pfx, sizeof pfx - 1) == 0) {
        snprintf(buf, cap, "!!%s", tag + sizeof pfx - 1);
        return buf;
    }
    return tag;
}

static const char *kind_tag(rkind k)
{
    switch (k) {
    case R_NULL: return "!!null";
    case R_BOOL: return "!!bool";
    case R_INT: case R_UINT: return "!!int";
    case R_FLOAT: return "!!float";
    case R_MERGE: return "!!merge";
    default: return "!!str";
    }
}

bool de_yaml_plain_is_string(const char *s, size_t n)
{
    return resolve_plain(s, n).k == R_STR;
}

/* ---- errors -------------------------------------------------------------- */

static de_rc fail_at(ybuild *b, const yaml_mark_t *m, de_rc rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static de_rc fail_at(ybuild *b, const yaml_mark_t *m, de_rc rc, const char *fmt, ...)
{
    char msg[DE_ERR_MSG_MAX / 2];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    int line = m ? (int)m->line + 1 : 0, col = m ? (int)m->column + 1 : 0;
    if (m)
        de_errf(b->e, rc, "%s: document %d: line %d:%d: %s", b->name, b->doc, line, col, msg);
    else
        de_errf(b->e, rc, "%s: document %d: %s", b->name, b->doc, msg);
    if (b->e) {
        snprintf(b->e->file, sizeof b->e->file, "%s", b->name);
        b->e->line = line;
        b->e->col = col;
    }
    return rc;
}

static de_rc next_event(ybuild *b, yaml_event_t *ev)
{
    if (yaml_parser_parse(&b->p, ev))
        return DE_OK;
    const char *problem = b->p.problem ? b->p.problem : "unknown error";
    if (b->p.error == YAML_MEMORY_ERROR)
        return fail_at(b, NULL, DE_ENOMEM, "yaml: out of memory");
    if (b->p.context)
        return fail_at(b, &b->p.problem_mark, DE_EPARSE, "yaml: %s %s (line %d:%d)", problem,
                       b->p.context, (int)b->p.context_mark.line + 1,
                       (int)b->p.context_mark.column + 1);
    return fail_at(b, &b->p.problem_mark, DE_EPARSE, "yaml: %s", problem);
}

/* ---- building ------------------------------------------------------------ */

static void add_anchor(ybuild *b, const char *name, json_t *v, uint64_t size)
{
    if (b->nanchors == b->capanchors) {
        b->capanchors = b->capanchors ? b->capanchors * 2 : 16;
        b->anchors = de_xrealloc(b->anchors, b->capanchors * sizeof *b->anchors);
    }
    anchor *a = &b->anchors[b->nanchors++];
    a->name = de_xstrdup(name);
    a->v = json_incref(v);
    a->size = size;
}

static void clear_anchors(ybuild *b)
{
    for (size_t i = 0; i < b->nanchors; i++) {
        free(b->anchors[i].name);
        json_decref(b->anchors[i].v);
    }
    b->nanchors = 0;
}

/* go-yaml v2's allowedAliasRatio. */
static double allowed_alias_ratio(uint64_t decode)
{
    const double lo = 400000, hi = 4000000;
    if ((double)decode <= lo)
        return 0.99;
    if ((double)decode >= hi)
        return 0.10;
    return 0.99 - 0.89 * (((double)decode - lo) / (hi - lo));
}

static de_rc build(ybuild *b, yaml_event_t *ev, int depth, json_t **out, uint64_t *size);

static de_rc scalar_value(ybuild *b, yaml_event_t *ev, json_t **out, rkind *kind)
{
    const char *s = (const char *)ev->data.scalar.value;
    size_t n = ev->data.scalar.length;
    const char *tag = (const char *)ev->data.scalar.tag;
    char sb[128];
    /* "\0" in a double-quoted scalar: JSON refuses \u0000 (and so does
     * the rest of the engine, which reads names as C strings: "a\0b"
     * would pass as "a"), so YAML refuses it too */
    const char *nul = memchr(s, 0, n);
    if (nul)
        return fail_at(b, &ev->start_mark, DE_EINVAL,
                       "yaml: a NUL character (\\0) at byte %zu of a string: not allowed in a manifest",
                       (size_t)(nul - s));
    rval r = {R_STR, false, 0, 0, 0.0};
    if (!tag || !*tag) {
        if (ev->data.scalar.plain_implicit)
            r = resolve_plain(s, n);
    } else {
        const char *st = short_tag(tag, sb, sizeof sb);
        if (strcmp(st, "!!str") == 0 || strcmp(st, "!!timestamp") == 0) {
            r.k = R_STR;
        } else if (strcmp(st, "!!binary") == 0) {
            r.k = R_STR; /* kept as its base64 text: JSON strings cannot hold bytes */
        } else if (strcmp(st, "!!null") == 0 || strcmp(st, "!!bool") == 0 ||
                   strcmp(st, "!!int") == 0 || strcmp(st, "!!float") == 0) {
            r = resolve_plain(s, n);
            const char *got = kind_tag(r.k);
            if (strcmp(st, "!!float") == 0 && (r.k == R_INT || r.k == R_UINT)) {
                r.f = r.k == R_INT ? (double)r.i : (double)r.u;
                r.k = R_FLOAT;
            } else if (strcmp(got, st) != 0) {
                /* go-yaml's words; a value too long or odd to show whole is described */
                char q[DE_QUOTE_MAX + 1];
                bool plain = n <= DE_QUOTE_MAX - 2;
                for (size_t i = 0; i < n && plain; i++)
                    plain = (unsigned char)s[i] >= 0x20 && s[i] != '`';
                if (plain)
                    snprintf(q, sizeof q, "`%.*s`", (int)n, s);
                else
                    de_quote(q, s, n);
                return fail_at(b, &ev->start_mark, DE_EINVAL, "yaml: cannot decode %s %s as a %s", got, q, st);
            }
        } else {
            r.k = R_STR; /* unknown tags: the text stays a string */
        }
    }
    *kind = r.k;
    switch (r.k) {
    case R_NULL: *out = json_null(); break;
    case R_BOOL: *out = json_boolean(r.b); break;
    case R_INT: *out = json_integer(r.i); break;
    case R_UINT: *out = json_real((double)r.u); break;
    case R_FLOAT:
        if (isnan(r.f) || isinf(r.f))
            return fail_at(b, &ev->start_mark, DE_EINVAL, "json: unsupported value: %s",
                           isnan(r.f) ? "NaN" : r.f > 0 ? "+Inf" : "-Inf");
        *out = json_real(r.f);
        break;
    default: *out = json_stringn(s, n); break;
    }
    if (!*out)
        return fail_at(b, &ev->start_mark, DE_EINVAL, "invalid UTF-8 in a YAML scalar");
    return DE_OK;
}

/* A resolved key node as the JSON object key sigs.k8s.io/yaml makes. */
static de_rc key_text(ybuild *b, yaml_event_t *kev, json_t *k, char *buf, size_t cap,
                      const char **out, size_t *outn)
{
    switch (json_typeof(k)) {
    case JSON_STRING:
        *out = json_string_value(k);
        *outn = json_string_length(k);
        return DE_OK;
    case JSON_INTEGER:
        *outn = (size_t)snprintf(buf, cap, "%" JSON_INTEGER_FORMAT, json_integer_value(k));
        break;
    case JSON_REAL: {
        /* strconv.FormatFloat(f, 'g', -1, 32): shortest text of the float32 */
        float f = (float)json_real_value(k);
        for (int prec = 1; prec <= 9; prec++) {
            snprintf(buf, cap, "%.*g", prec, (double)f);
            if (strtof(buf, NULL) == f)
                break;
        }
        *outn = strlen(buf);
        break;
    }
    case JSON_TRUE: *outn = (size_t)snprintf(buf, cap, "true"); break;
    case JSON_FALSE: *outn = (size_t)snprintf(buf, cap, "false"); break;
    case JSON_NULL:
        return fail_at(b, &kev->start_mark, DE_EINVAL, "unsupported map key of type: <nil>");
    default:
        return fail_at(b, &kev->start_mark, DE_EINVAL,
                       "unsupported map key (a mapping or sequence)");
    }
    *out = buf;
    return DE_OK;
}

static void merge_into(json_t *obj, json_t *merged, json_t *src)
{
    const char *k;
    size_t kl;
    json_t *v;
    json_object_keylen_foreach(src, k, kl, v)
    {
        if (json_object_getn(obj, k, kl) && !json_object_getn(merged, k, kl))
            continue; /* written explicitly: it stays */
        json_object_setn(obj, k, kl, v);
        json_object_setn(merged, k, kl, json_true());
    }
}

/* Duplicate keys (strict decoding, as kubectl's field validation): a key
 * written twice in one mapping is an error, not "the last one wins" - that
 * let `kind` be overridden inside one object.  Keys brought in by a "<<"
 * merge are not written in the mapping: an explicit key replaces them, and
 * they never replace an explicit key (the YAML merge rule); between merges
 * the one read later wins (go-yaml's order). */
static de_rc build_entries(ybuild *b, int depth, json_t *obj, json_t *merged, uint64_t *size);

static de_rc build_mapping(ybuild *b, int depth, json_t *obj, uint64_t *size)
{
    json_t *merged = json_object(); /* keys set by merges only (a set) */
    de_rc rc = build_entries(b, depth, obj, merged, size);
    json_decref(merged);
    return rc;
}

static de_rc build_entries(ybuild *b, int depth, json_t *obj, json_t *merged, uint64_t *size)
{
    for (;;) {
        yaml_event_t kev;
        DE_TRY(next_event(b, &kev));
        if (kev.type == YAML_MAPPING_END_EVENT) {
            yaml_event_delete(&kev);
            return DE_OK;
        }
        yaml_mark_t kmark = kev.start_mark;
        bool is_merge = kev.type == YAML_SCALAR_EVENT && kev.data.scalar.plain_implicit &&
                        !kev.data.scalar.tag && eq((const char *)kev.data.scalar.value,
                                                   kev.data.scalar.length, "<<");
        json_t *k = NULL, *v = NULL;
        uint64_t ks = 0, vs = 0;
        de_rc rc;
        if (is_merge) {
            yaml_event_delete(&kev);
            k = NULL;
        } else {
            kev.start_mark = kmark;
            rc = build(b, &kev, depth + 1, &k, &ks); /* consumes kev */
            if (rc != DE_OK)
                return rc;
        }
        yaml_event_t vev;
        rc = next_event(b, &vev);
        if (rc == DE_OK)
            rc = build(b, &vev, depth + 1, &v, &vs);
        if (rc != DE_OK) {
            json_decref(k);
            return rc;
        }
        *size += ks + vs;
        if (is_merge) {
            if (json_is_object(v)) {
                merge_into(obj, merged, v);
            } else if (json_is_array(v)) {
                for (size_t i = json_array_size(v); i-- > 0;) {
                    json_t *m = json_array_get(v, i);
                    if (!json_is_object(m)) {
                        json_decref(v);
                        return fail_at(b, &kmark, DE_EINVAL,
                                       "yaml: map merge requires map or sequence of maps as the value");
                    }
                    merge_into(obj, merged, m);
                }
            } else {
                json_decref(v);
                return fail_at(b, &kmark, DE_EINVAL,
                               "yaml: map merge requires map or sequence of maps as the value");
            }
            json_decref(v);
            continue;
        }
        char kb[64];
        const char *ks_text = "";
        size_t kn = 0;
        yaml_event_t fake;
        memset(&fake, 0, sizeof fake);
        fake.start_mark = kmark;
        rc = key_text(b, &fake, k, kb, sizeof kb, &ks_text, &kn);
        if (rc == DE_OK && json_object_getn(obj, ks_text, kn) && !json_object_getn(merged, ks_text, kn)) {
            char q[DE_QUOTE_MAX + 1];
            rc = fail_at(b, &kmark, DE_EINVAL, "yaml: key %s already set in map (a key may appear once)",
                         de_quote(q, ks_text, kn));
        } else if (rc == DE_OK) {
            json_object_setn(obj, ks_text, kn, v);
            json_object_deln(merged, ks_text, kn);
        }
        json_decref(k);
        json_decref(v);
        if (rc != DE_OK)
            return rc;
    }
}

/* Build the node whose first event is *ev (consumed). */
static de_rc build(ybuild *b, yaml_event_t *ev, int depth, json_t **out, uint64_t *size)
{
    de_rc rc = DE_OK;
    const char *anchor_name = NULL;
    *out = NULL;
    *size = 1;
    if (depth > MAX_DEPTH) {
        rc = fail_at(b, &ev->start_mark, DE_EINVAL, "yaml: nesting deeper than %d levels",
                     MAX_DEPTH);
        yaml_event_delete(ev);
        return rc;
    }
    b->decode_count++;
    switch (ev->type) {
    case YAML_ALIAS_EVENT: {
        const char *name = (const char *)ev->data.alias.anchor;
        anchor *a = NULL;
        for (size_t i = b->nanchors; i-- > 0;)
            if (strcmp(b->anchors[i].name, name) == 0) {
                a = &b->anchors[i];
                break;
            }
        if (!a) {
            rc = fail_at(b, &ev->start_mark, DE_EINVAL, "yaml: unknown anchor '%s' referenced",
                         name);
            break;
        }
        b->decode_count += a->size;
        b->alias_count += a->size;
        if (b->alias_count > 100 && b->decode_count > 1000 &&
            (double)b->alias_count / (double)b->decode_count >
                allowed_alias_ratio(b->decode_count)) {
            rc = fail_at(b, &ev->start_mark, DE_EINVAL,
                         "yaml: document contains excessive aliasing");
            break;
        }
        *out = json_incref(a->v);
        *size = a->size;
        break;
    }
    case YAML_SCALAR_EVENT: {
        rkind k;
        anchor_name = (const char *)ev->data.scalar.anchor;
        rc = scalar_value(b, ev, out, &k);
        break;
    }
    case YAML_SEQUENCE_START_EVENT: {
        anchor_name = (const char *)ev->data.sequence_start.anchor;
        json_t *arr = json_array();
        for (;;) {
            yaml_event_t cev;
            rc = next_event(b, &cev);
            if (rc != DE_OK)
                break;
            if (cev.type == YAML_SEQUENCE_END_EVENT) {
                yaml_event_delete(&cev);
                break;
            }
            json_t *c;
            uint64_t cs;
            rc = build(b, &cev, depth + 1, &c, &cs);
            if (rc != DE_OK)
                break;
            json_array_append_new(arr, c);
            *size += cs;
        }
        if (rc != DE_OK)
            json_decref(arr);
        else
            *out = arr;
        break;
    }
    case YAML_MAPPING_START_EVENT: {
        anchor_name = (const char *)ev->data.mapping_start.anchor;
        json_t *obj = json_object();
        rc = build_mapping(b, depth, obj, size);
        if (rc != DE_OK)
            json_decref(obj);
        else
            *out = obj;
        break;
    }
    default:
        rc = fail_at(b, &ev->start_mark, DE_EINTERNAL, "yaml: unexpected event %d", ev->type);
        break;
    }
    if (rc == DE_OK && anchor_name)
        add_anchor(b, anchor_name, *out, *size);
    yaml_event_delete(ev);
    return rc;
}

de_rc de_yaml_docs(const char *name, const char *text, size_t len, de_yaml_doc_fn fn,
                   void *ctx, de_err *e)
{
    ybuild b;
    memset(&b, 0, sizeof b);
    b.name = name;
    b.e = e;
    b.doc = 1;
    if (!yaml_parser_initialize(&b.p))
        return de_errf(e, DE_ENOMEM, "%s: yaml: cannot initialise the parser", name);
    yaml_parser_set_input_string(&b.p, (const unsigned char *)text, len);
    de_rc rc = DE_OK;
    int seen = 0;
    for (;;) {
        yaml_event_t ev;
        rc = next_event(&b, &ev);
        if (rc != DE_OK)
            break;
        yaml_event_type_t t = ev.type;
        if (t == YAML_STREAM_END_EVENT) {
            yaml_event_delete(&ev);
            break;
        }
        if (t == YAML_DOCUMENT_START_EVENT) {
            b.doc = ++seen;
            yaml_event_delete(&ev);
            continue;
        }
        if (t == YAML_DOCUMENT_END_EVENT) {
            clear_anchors(&b); /* anchors do not cross documents */
            b.decode_count = b.alias_count = 0;
            yaml_event_delete(&ev);
            continue;
        }
        if (t == YAML_STREAM_START_EVENT) {
            yaml_event_delete(&ev);
            continue;
        }
        int line = (int)ev.start_mark.line + 1;
        json_t *v;
        uint64_t size;
        rc = build(&b, &ev, 0, &v, &size);
        if (rc != DE_OK)
            break;
        if (!json_is_null(v))
            rc = fn(ctx, v, b.doc, line, e);
        json_decref(v);
        if (rc != DE_OK)
            break;
    }
    clear_anchors(&b);
    free(b.anchors);
    yaml_parser_delete(&b.p);
    return rc;
}

/* ---- raw documents ----------------------------------------------------------- */

typedef struct rawctx {
    const char *name;
    de_doc_cb cb;
    void *ctx;
} rawctx;

static de_rc raw_doc(void *ctx, json_t *v, int doc, int line, de_err *e)
{
    rawctx *r = ctx;
    de_origin o = {r->name, doc, -1};
    DE_UNUSED(line);
    return r->cb(r->ctx, v, &o, e);
}

de_rc de_yaml_each_doc(const char *name, const char *text, size_t len, de_doc_cb cb, void *ctx,
                       de_err *e)
{
    rawctx r = {name, cb, ctx};
    return de_yaml_docs(name, text, len, raw_doc, &r, e);
}
