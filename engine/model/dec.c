/*
 * dec.c - decoder context: JSON paths, apimachinery-style field errors,
 * typed getters, strict field checks.  Name-format checks are in
 * dec_names.c.
 */
#include "dec.h"
#include "../base/jdump.h"
#include "../base/quantity.h"
#include "../cel/cel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void dec_init(dec *d, de_interner *in, de_arena *a, const de_gates *gates, bool validate)
{
    memset(d, 0, sizeof *d);
    d->in = in;
    d->a = a;
    if (gates)
        d->gates = *gates;
    else
        de_gates_default(&d->gates);
    d->validate = validate;
    d->version = DEC_V1;
    de_buf_init(&d->msgs, DE_ERR_MSG_MAX * 2);
}

void dec_fini(dec *d)
{
    de_buf_free(&d->msgs);
    free(d->refs);
    d->refs = NULL;
    d->nrefs = d->caprefs = 0;
}

void dec_release_refs(dec *d)
{
    for (uint32_t i = 0; i < d->nrefs; i++)
        de_intern_release(d->in, d->refs[i]);
    d->nrefs = 0;
}

/* ---- paths ---------------------------------------------------------------- */

/* A step that does not fit is left out whole and the path ends in "..."
 * (DEC_PATH_MAX holds any real path: keys are at most DE_QUOTE_MAX). */
static size_t path_append(dec *d, const char *s)
{
    size_t mark = d->plen, n = strlen(s);
    if (d->plen + n >= DEC_PATH_MAX) {
        s = "...";
        n = d->plen + 3 < DEC_PATH_MAX ? 3 : 0;
    }
    memcpy(d->path + d->plen, s, n);
    d->plen += n;
    d->path[d->plen] = 0;
    return mark;
}

size_t dec_field(dec *d, const char *name)
{
    if (d->plen == 0)
        return path_append(d, name);
    size_t mark = d->plen;
    path_append(d, ".");
    path_append(d, name);
    return mark;
}

size_t dec_index(dec *d, size_t i)
{
    char b[32];
    snprintf(b, sizeof b, "[%zu]", i);
    return path_append(d, b);
}

/* Every key of every label, annotation and resource map passes here, on
 * every object decoded: the common key, which de_quote would copy as it is
 * between quotes, is written so without it (snprintf and de_quote were 4 %
 * of serve's instructions). */
size_t dec_key(dec *d, const char *key)
{
    char b[DE_QUOTE_MAX + 8];
    size_t n = strlen(key);
    bool plain = n + 2 <= DE_QUOTE_MAX;
    for (size_t i = 0; plain && i < n; i++) {
        unsigned char c = (unsigned char)key[i];
        plain = c >= 0x20 && c != 0x7f && c != '"' && c != '\\';
    }
    if (plain) {
        b[0] = '[';
        b[1] = '"';
        memcpy(b + 2, key, n);
        memcpy(b + 2 + n, "\"]", 3);
        return path_append(d, b);
    }
    char q[DE_QUOTE_MAX + 1];
    snprintf(b, sizeof b, "[%s]", de_quote(q, key, n));
    return path_append(d, b);
}

/* ---- errors ---------------------------------------------------------------- */

static void record(dec *d, const char *child, const char *body)
{
    d->nerr++;
    if (d->nerr > DEC_MAX_ERRORS)
        return;
    size_t start = d->msgs.len;
    size_t mark = d->plen;
    if (child) {
        if (child[0] == '[')
            path_append(d, child);
        else
            dec_field(d, child);
    }
    if (d->nerr == 1) {
        size_t n = d->plen < sizeof d->first_path - 1 ? d->plen : sizeof d->first_path - 1;
        memcpy(d->first_path, d->path, n);
        d->first_path[n] = 0;
    }
    if (d->nmsgs)
        de_buf_puts(&d->msgs, "; ");
    if (d->plen) {
        de_buf_puts(&d->msgs, d->path);
        de_buf_puts(&d->msgs, ": ");
    }
    de_buf_puts(&d->msgs, body);
    dec_pop(d, mark);
    /* a message the buffer could not hold whole is not shown at all */
    if (d->msgs.overflow) {
        /* the error still counts; its message is not kept half */
        d->msgs.len = start;
        if (d->msgs.p)
            d->msgs.p[start] = 0;
        d->msgs.overflow = false;
        return;
    }
    d->msg_end[d->nmsgs++] = d->msgs.len;
}

uint32_t dec_fit_messages(const dec *d, size_t room, size_t *len)
{
    uint32_t shown = d->nmsgs;
    while (shown > 0 && d->msg_end[shown - 1] > room)
        shown--;
    *len = shown ? d->msg_end[shown - 1] : 0;
    return shown;
}

uint32_t dec_error_count(const dec *d) { return d->nerr; }

void dec_errf(dec *d, const char *child, const char *fmt, ...)
{
    char body[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(body, sizeof body, fmt, ap);
    va_end(ap);
    record(d, child, body);
}

/* Go's %q for a string value, whole or described (de_quote: never cut). */
static void quote(char *out, const char *s)
{
    de_quote(out, s, strlen(s));
}

void dec_required(dec *d, const char *child, const char *detail)
{
    if (detail && *detail)
        dec_errf(d, child, "Required value: %s", detail);
    else
        dec_errf(d, child, "Required value");
}

void dec_invalid_str(dec *d, const char *child, const char *value, const char *detail)
{
    char q[DE_QUOTE_MAX + 1];
    quote(q, value ? value : "");
    dec_errf(d, child, "Invalid value: %s: %s", q, detail);
}

void dec_invalid_strn(dec *d, const char *child, const char *value, size_t n, const char *detail)
{
    char q[DE_QUOTE_MAX + 1];
    dec_errf(d, child, "Invalid value: %s: %s", de_quote(q, value, n), detail);
}

void dec_invalid_int(dec *d, const char *child, long long value, const char *detail)
{
    dec_errf(d, child, "Invalid value: %lld: %s", value, detail);
}

void dec_forbidden(dec *d, const char *child, const char *detail)
{
    dec_errf(d, child, "Forbidden: %s", detail);
}

void dec_duplicate(dec *d, const char *child, const char *value)
{
    char q[DE_QUOTE_MAX + 1];
    quote(q, value ? value : "");
    dec_errf(d, child, "Duplicate value: %s", q);
}

void dec_too_many(dec *d, const char *child, size_t n, size_t max)
{
    dec_errf(d, child, "Too many: %zu: must have at most %zu items", n, max);
}

void dec_too_long(dec *d, const char *child, size_t max)
{
    dec_errf(d, child, "Too long: may not be more than %zu bytes", max);
}

void dec_unsupported(dec *d, const char *child, const char *value, const char *supported)
{
    char q[DE_QUOTE_MAX + 1];
    quote(q, value ? value : "");
    dec_errf(d, child, "Unsupported value: %s: supported values: %s", q, supported);
}

/* ---- JSON access ------------------------------------------------------------- */

const char *dec_json_type(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    default: return "null";
    }
}

static void type_error(dec *d, const char *key, const json_t *v, const char *want)
{
    dec_errf(d, key, "Invalid value: %s: must be %s", dec_json_type(v), want);
}

void dec_known(dec *d, json_t *obj, const char *const *known, const char *const *hints)
{
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v) {
        bool ok = false;
        for (size_t i = 0; known[i]; i++)
            if (!strcmp(key, known[i])) {
                ok = true;
                break;
            }
        if (ok)
            continue;
        const char *hint = NULL, *caseless = NULL;
        for (size_t i = 0; known[i]; i++)
            if (!strcasecmp(key, known[i])) {
                caseless = known[i];
                break;
            }
        for (size_t i = 0; hints && hints[i]; i += 2)
            if (!strcmp(key, hints[i])) {
                hint = hints[i + 1];
                break;
            }
        char q[DE_QUOTE_MAX + 1];
        quote(q, key);
        if (caseless)
            dec_errf(d, NULL, "unknown field %s (did you mean \"%s\"? field names are case-sensitive)",
                     q, caseless);
        else if (hint)
            dec_errf(d, NULL, "unknown field %s (%s)", q, hint);
        else
            dec_errf(d, NULL, "unknown field %s", q);
    }
}

bool dec_as_str(dec *d, json_t *v, const char **s, size_t *len)
{
    if (!json_is_string(v)) {
        type_error(d, NULL, v, "a string");
        return false;
    }
    *s = json_string_value(v);
    if (len)
        *len = json_string_length(v);
    return true;
}

bool dec_get_str(dec *d, json_t *obj, const char *key, const char **s, size_t *len)
{
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v))
        return false;
    if (!json_is_string(v)) {
        type_error(d, key, v, "a string");
        return false;
    }
    *s = json_string_value(v);
    if (len)
        *len = json_string_length(v);
    return true;
}

bool dec_get_id(dec *d, json_t *obj, const char *key, uint32_t *id)
{
    const char *s;
    size_t n;
    if (!dec_get_str(d, obj, key, &s, &n))
        return false;
    *id = de_intern(d->in, s, n);
    return true;
}

bool dec_get_cid(dec *d, json_t *obj, const char *key, uint32_t *id)
{
    if (!d->counted)
        return dec_get_id(d, obj, key, id);
    const char *s;
    size_t n;
    if (!dec_get_str(d, obj, key, &s, &n))
        return false;
    *id = de_intern_ref(d->in, s, n);
    if (d->nrefs == d->caprefs) {
        d->caprefs = d->caprefs ? d->caprefs * 2 : 8;
        d->refs = de_xrealloc(d->refs, d->caprefs * sizeof *d->refs);
    }
    d->refs[d->nrefs++] = *id;
    return true;
}

bool dec_get_int(dec *d, json_t *obj, const char *key, int64_t *out)
{
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v))
        return false;
    if (json_is_integer(v)) {
        *out = (int64_t)json_integer_value(v);
        return true;
    }
    type_error(d, key, v, "an integer");
    return false;
}

bool dec_get_bool(dec *d, json_t *obj, const char *key, bool *out)
{
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v))
        return false;
    if (json_is_boolean(v)) {
        *out = json_is_true(v);
        return true;
    }
    type_error(d, key, v, "a boolean");
    return false;
}

json_t *dec_get_obj(dec *d, json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v))
        return NULL;
    if (!json_is_object(v)) {
        type_error(d, key, v, "an object");
        return NULL;
    }
    return v;
}

json_t *dec_get_arr(dec *d, json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v))
        return NULL;
    if (!json_is_array(v)) {
        type_error(d, key, v, "an array");
        return NULL;
    }
    return v;
}

bool dec_items_begin(dec *d, json_t *arr, const char *field, size_t max, dec_items *it)
{
    it->arr = arr;
    it->n = arr ? json_array_size(arr) : 0;
    it->i = 0;
    if (!it->n)
        return false;
    it->mark = dec_field(d, field);
    it->field = d->plen;
    if (max && it->n > max && d->validate) {
        dec_too_many(d, NULL, it->n, max);
        dec_pop(d, it->mark);
        return false;
    }
    return true;
}

json_t *dec_items_next(dec *d, dec_items *it)
{
    dec_pop(d, it->field);
    if (it->i >= it->n)
        return NULL;
    dec_index(d, it->i);
    return json_array_get(it->arr, it->i++);
}

json_t *dec_items_next_obj(dec *d, dec_items *it, const char *const *known)
{
    json_t *v;
    while ((v = dec_items_next(d, it)) && !dec_as_obj(d, v))
        ;
    if (v && known)
        dec_known(d, v, known, NULL);
    return v;
}

void dec_items_end(dec *d, dec_items *it)
{
    dec_pop(d, it->mark);
}

bool dec_as_obj(dec *d, json_t *v)
{
    if (json_is_object(v))
        return true;
    type_error(d, NULL, v, "an object");
    return false;
}

/* Quantities may be written as JSON numbers (Go's Quantity accepts them). */
bool dec_as_qty(dec *d, json_t *v, de_qty *q)
{
    if (!json_is_string(v) && !json_is_number(v)) {
        type_error(d, NULL, v, "a quantity (string or number)");
        return false;
    }
    de_err e;
    de_err_clear(&e);
    if (de_qty_from_json(v, q, &e) != DE_OK) {
        if (json_is_string(v))
            dec_invalid_strn(d, NULL, json_string_value(v), json_string_length(v),
                             e.msg[0] ? e.msg : "invalid quantity");
        else
            dec_errf(d, NULL, "Invalid value: %s", e.msg[0] ? e.msg : "invalid quantity");
        return false;
    }
    return true;
}

bool dec_get_qty(dec *d, json_t *obj, const char *key, de_qty *q)
{
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v))
        return false;
    size_t m = dec_field(d, key);
    bool ok = dec_as_qty(d, v, q);
    dec_pop(d, m);
    return ok;
}

uint32_t *dec_str_list(dec *d, json_t *arr, uint32_t *n)
{
    *n = 0;
    if (!arr || !json_array_size(arr))
        return NULL;
    size_t cnt = json_array_size(arr);
    uint32_t *out = DEC_NEW(d, uint32_t, cnt);
    if (!out)
        return NULL;
    for (size_t i = 0; i < cnt; i++) {
        json_t *v = json_array_get(arr, i);
        size_t m = dec_index(d, i);
        const char *s;
        size_t len;
        if (dec_as_str(d, v, &s, &len))
            out[*n] = de_intern(d->in, s, len);
        else
            out[*n] = 0;
        (*n)++;
        dec_pop(d, m);
    }
    return out;
}

size_t dec_json_text(dec *d, json_t *v, uint32_t *id)
{
    char *s = de_json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    if (!s) {
        *id = 0;
        return 0;
    }
    size_t n = strlen(s);
    *id = de_intern(d->in, s, n);
    free(s);
    return n;
}

static int64_t days_from_civil(int64_t y, unsigned m, unsigned dd)
{
    y -= m <= 2;
    const int64_t era = (y >= 0 ? y : y - 399) / 400;
    const unsigned yoe = (unsigned)(y - era * 400);
    const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + dd - 1;
    const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

/* RFC 3339 ("2006-01-02T15:04:05Z", optional fraction, Z or +hh:mm). The
 * text need not be NUL-terminated. */
/* n digits at s as a number, or -1 (every pod and claim carries timestamps:
 * sscanf took 3,500 instructions a call, and let signs and spaces in) */
static int digits(const char *s, int n)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

bool dg_parse_time(const char *s, size_t n, int64_t *out)
{
    /* YYYY-MM-DDThh:mm:ss[.frac](Z|+hh:mm|-hh:mm) */
    if (n < 20 || n >= 64 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':')
        return false;
    int Y = digits(s, 4), M = digits(s + 5, 2), D = digits(s + 8, 2), h = digits(s + 11, 2),
        mi = digits(s + 14, 2), sec = digits(s + 17, 2);
    if (Y < 0 || M < 1 || M > 12 || D < 1 || D > 31 || h < 0 || h > 23 || mi < 0 || mi > 59 || sec < 0 ||
        sec > 60)
        return false;
    size_t i = 19;
    if (s[i] == '.') {
        i++;
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
    }
    int64_t off = 0;
    if (i < n && (s[i] == 'Z' || s[i] == 'z')) {
        i++;
    } else if (i < n && (s[i] == '+' || s[i] == '-')) {
        if (n - i != 6 || s[i + 3] != ':')
            return false;
        int oh = digits(s + i + 1, 2), om = digits(s + i + 4, 2);
        if (oh < 0 || om < 0)
            return false;
        off = (oh * 3600 + om * 60) * (s[i] == '-' ? -1 : 1);
        i += 6;
    } else {
        return false;
    }
    if (i != n)
        return false;
    *out = days_from_civil(Y, (unsigned)M, (unsigned)D) * 86400 + h * 3600 + mi * 60 + sec - off;
    return true;
}

bool dec_time(dec *d, json_t *obj, const char *key, int64_t *out)
{
    const char *s;
    size_t n;
    if (!dec_get_str(d, obj, key, &s, &n))
        return false;
    if (!dg_parse_time(s, n, out)) {
        dec_invalid_str(d, key, s, "must be an RFC 3339 timestamp (e.g. 2026-01-02T15:04:05Z)");
        return false;
    }
    return true;
}

void *dec_alloc(dec *d, size_t n)
{
    void *p = de_arena_zalloc(d->a, n ? n : 1);
    if (!p && !d->oom) {
        d->oom = true;
        dec_errf(d, NULL, "object too large (decoded size over the per-object limit)");
    }
    return p;
}

/* ---- CEL ---------------------------------------------------------------------- */

void dec_cel_expression(dec *d, const char *child, const char *expr, size_t len, bool derived)
{
    if (!d->validate)
        return;
    if (len == 0) {
        dec_required(d, child, NULL);
        return;
    }
    if (len > CEL_MAX_EXPR_LEN) {
        dec_too_long(d, child, CEL_MAX_EXPR_LEN);
        return;
    }
    if (!d->cel)
        return;
    cel_prog *p;
    de_err e;
    de_err_clear(&e);
    de_rc rc = derived ? cel_compile_derived(d->cel, expr, len, &p, &e) : cel_compile(d->cel, expr, len, &p, &e);
    if (rc != DE_OK) {
        char *nl = strchr(e.msg, '\n');
        if (nl)
            *nl = 0;
        dec_invalid_strn(d, child, expr, len, e.msg[0] ? e.msg : "compilation failed");
        return;
    }
    uint64_t cost = cel_prog_estimated_cost(p);
    if (cost > CEL_COST_LIMIT)
        dec_forbidden(d, child, "too complex, exceeds cost limit");
    if (derived)
        d->derived_cost += cost;
}
