/*
 * jdump.c - json_dumps and json_deep_copy without the cycle guard (jdump.h
 * says why).
 */
#include "jdump.h"
#include "utf8.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* deeper than any object the API server or a manifest gives (the server
 * itself refuses past 10,000 levels of JSON, kube-openapi far less) */
#define JDUMP_MAX_DEPTH 2048

/* JSON_PRESERVE_ORDER is jansson 2.14's only order (it ignores the flag) */
#define SUPPORTED                                                                                         \
    (JSON_COMPACT | JSON_ENCODE_ANY | JSON_ENSURE_ASCII | JSON_ESCAPE_SLASH | JSON_PRESERVE_ORDER |         \
     JSON_REAL_PRECISION(31))

static de_rc put_escape(de_buf *b, uint32_t cp)
{
    static const char hex[] = "0123456789ABCDEF";
    char t[13];
    size_t n = 0;
    switch (cp) {
    case '\\': return de_buf_add(b, "\\\\", 2);
    case '"': return de_buf_add(b, "\\\"", 2);
    case '\b': return de_buf_add(b, "\\b", 2);
    case '\f': return de_buf_add(b, "\\f", 2);
    case '\n': return de_buf_add(b, "\\n", 2);
    case '\r': return de_buf_add(b, "\\r", 2);
    case '\t': return de_buf_add(b, "\\t", 2);
    case '/': return de_buf_add(b, "\\/", 2);
    default: break;
    }
    uint32_t units[2] = {cp, 0};
    size_t nu = 1;
    if (cp >= 0x10000) { /* a UTF-16 surrogate pair */
        cp -= 0x10000;
        units[0] = 0xD800 | ((cp & 0xFFC00) >> 10);
        units[1] = 0xDC00 | (cp & 0x3FF);
        nu = 2;
    }
    for (size_t u = 0; u < nu; u++) {
        t[n++] = '\\';
        t[n++] = 'u';
        for (int sh = 12; sh >= 0; sh -= 4)
            t[n++] = hex[(units[u] >> sh) & 0xF];
    }
    return de_buf_add(b, t, n);
}

static de_rc put_string(de_buf *b, const char *str, size_t len, size_t flags)
{
    const unsigned char *s = (const unsigned char *)str;
    bool slash = flags & JSON_ESCAPE_SLASH, ascii = flags & JSON_ENSURE_ASCII;
    DE_TRY(de_buf_putc(b, '"'));
    size_t run = 0, i = 0;
    while (i < len) {
        unsigned char c = s[i];
        if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\' && !(slash && c == '/')) {
            i++;
            continue;
        }
        uint32_t cp;
        size_t k = de_utf8_seq(s + i, len - i, &cp);
        if (!k)
            return DE_EINVAL;
        if (cp >= 0x80 && !ascii) {
            i += k;
            continue;
        }
        DE_TRY(de_buf_add(b, s + run, i - run));
        DE_TRY(put_escape(b, cp));
        i += k;
        run = i;
    }
    DE_TRY(de_buf_add(b, s + run, len - run));
    return de_buf_putc(b, '"');
}

static de_rc put_real(de_buf *b, const json_t *j, size_t flags)
{
    char *s = json_dumps(j, (flags & JSON_REAL_PRECISION(31)) | JSON_ENCODE_ANY);
    if (!s)
        return DE_EINVAL;
    de_rc rc = de_buf_puts(b, s);
    free(s);
    return rc;
}

static de_rc put(de_buf *b, const json_t *j, size_t flags, int depth)
{
    if (!j || depth > JDUMP_MAX_DEPTH)
        return DE_EINVAL;
    bool compact = flags & JSON_COMPACT;
    switch (json_typeof(j)) {
    case JSON_NULL: return de_buf_add(b, "null", 4);
    case JSON_TRUE: return de_buf_add(b, "true", 4);
    case JSON_FALSE: return de_buf_add(b, "false", 5);
    case JSON_INTEGER: {
        char t[32];
        int n = snprintf(t, sizeof t, "%" JSON_INTEGER_FORMAT, json_integer_value(j));
        return de_buf_add(b, t, (size_t)n);
    }
    case JSON_REAL: return put_real(b, j, flags);
    case JSON_STRING: return put_string(b, json_string_value(j), json_string_length(j), flags);
    case JSON_ARRAY: {
        DE_TRY(de_buf_putc(b, '['));
        size_t n = json_array_size(j);
        for (size_t i = 0; i < n; i++) {
            if (i)
                DE_TRY(compact ? de_buf_putc(b, ',') : de_buf_add(b, ", ", 2));
            DE_TRY(put(b, json_array_get(j, i), flags, depth + 1));
        }
        return de_buf_putc(b, ']');
    }
    case JSON_OBJECT: {
        DE_TRY(de_buf_putc(b, '{'));
        bool first = true;
        for (void *it = json_object_iter((json_t *)j); it; it = json_object_iter_next((json_t *)j, it)) {
            if (!first)
                DE_TRY(compact ? de_buf_putc(b, ',') : de_buf_add(b, ", ", 2));
            first = false;
            /* jansson ignores a key it cannot dump and goes on: keys are
             * checked UTF-8 when set, so here that never happens */
            DE_TRY(put_string(b, json_object_iter_key(it), json_object_iter_key_len(it), flags));
            DE_TRY(compact ? de_buf_putc(b, ':') : de_buf_add(b, ": ", 2));
            DE_TRY(put(b, json_object_iter_value(it), flags, depth + 1));
        }
        return de_buf_putc(b, '}');
    }
    }
    return DE_EINVAL;
}

de_rc de_json_dump(const json_t *j, size_t flags, de_buf *out)
{
    size_t mark = out->len;
    bool overflow = out->overflow;
    de_rc rc;
    if (flags & ~(size_t)SUPPORTED) {
        char *s = json_dumps(j, flags);
        rc = s ? de_buf_puts(out, s) : DE_EINVAL;
        free(s);
    } else if (!(flags & JSON_ENCODE_ANY) && !json_is_object(j) && !json_is_array(j)) {
        rc = DE_EINVAL;
    } else {
        rc = put(out, j, flags, 0);
    }
    if (rc != DE_OK) {
        out->len = mark;
        out->overflow = overflow;
        if (out->p)
            out->p[mark] = 0;
    }
    return rc;
}

char *de_json_dumps(const json_t *j, size_t flags)
{
    de_buf b;
    de_buf_init(&b, 0);
    if (de_json_dump(j, flags, &b) != DE_OK) {
        de_buf_free(&b);
        return NULL;
    }
    if (!b.p)
        return NULL; /* never: every dump writes at least one byte */
    /* at its own size, as json_dumps gives it: the buffer doubled on its way
     * there, and kept claim texts (graph_claim.c's freeze) live as long as
     * their claims - 240 bytes a pod more in gpu-nic-5000 before this */
    size_t n = b.len + 1;
    char *s = de_buf_take(&b);
    char *t = realloc(s, n);
    return t ? t : s;
}

static json_t *copy(const json_t *j, int depth)
{
    if (!j || depth > JDUMP_MAX_DEPTH)
        return NULL;
    switch (json_typeof(j)) {
    case JSON_OBJECT: {
        json_t *o = json_object();
        for (void *it = json_object_iter((json_t *)j); it; it = json_object_iter_next((json_t *)j, it)) {
            json_t *v = copy(json_object_iter_value(it), depth + 1);
            if (!v || json_object_setn_new_nocheck(o, json_object_iter_key(it), json_object_iter_key_len(it), v)) {
                json_decref(o);
                return NULL;
            }
        }
        return o;
    }
    case JSON_ARRAY: {
        json_t *a = json_array();
        size_t n = json_array_size(j);
        for (size_t i = 0; i < n; i++) {
            json_t *v = copy(json_array_get(j, i), depth + 1);
            if (!v || json_array_append_new(a, v)) {
                json_decref(a);
                return NULL;
            }
        }
        return a;
    }
    case JSON_STRING: return json_stringn_nocheck(json_string_value(j), json_string_length(j));
    case JSON_INTEGER: return json_integer(json_integer_value(j));
    case JSON_REAL: return json_real(json_real_value(j));
    default: return (json_t *)j; /* true, false, null: jansson's singletons */
    }
}

json_t *de_json_copy(const json_t *j)
{
    return copy(j, 0);
}
