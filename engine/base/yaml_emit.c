/*
 * yaml_emit.c - jansson values as kubectl-style block YAML (see doc.h).
 *
 * Quoting is decided with the same scalar resolver the reader uses
 * (doc_yaml.c), plus the indicator and layout rules of YAML itself, so
 * every string this writes reads back as the same string.  Strings that
 * look like YAML 1.1 timestamps or sexagesimal numbers are quoted too, as
 * go-yaml does, so that other YAML readers agree.
 */
#include "doc_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 1000

typedef struct emitter {
    de_buf *b;
    de_rc rc;
} emitter;

static void out(emitter *m, const char *s, size_t n)
{
    if (m->rc == DE_OK)
        m->rc = de_buf_add(m->b, s, n);
}

static void outs(emitter *m, const char *s) { out(m, s, strlen(s)); }

static void indent(emitter *m, int n)
{
    static const char sp[] = "                                ";
    while (n > 0) {
        int k = n < 32 ? n : 32;
        out(m, sp, (size_t)k);
        n -= k;
    }
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* YYYY-M[M]-D[D]... (go-yaml quotes what it would read as a timestamp) */
static bool looks_timestamp(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n && is_digit(s[i]))
        i++;
    return i == 4 && i < n && s[i] == '-' && i + 1 < n && is_digit(s[i + 1]);
}

static bool looks_base60(const char *s, size_t n)
{
    size_t i = 0;
    if (i < n && (s[i] == '+' || s[i] == '-'))
        i++;
    if (i >= n || !is_digit(s[i]))
        return false;
    return memchr(s, ':', n) != NULL;
}

/* 0 plain, 1 single-quoted, 2 double-quoted */
static int quote_style(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == 0x7f)
            return 2;
        /* U+0085, U+2028, U+2029 are line breaks to YAML */
        if (c == 0xC2 && i + 1 < n && (unsigned char)s[i + 1] == 0x85)
            return 2;
        if (c == 0xE2 && i + 2 < n && (unsigned char)s[i + 1] == 0x80 &&
            ((unsigned char)s[i + 2] == 0xA8 || (unsigned char)s[i + 2] == 0xA9))
            return 2;
        if (c == 0xEF && i + 2 < n && (unsigned char)s[i + 1] == 0xBB &&
            (unsigned char)s[i + 2] == 0xBF)
            return 2;
    }
    if (n == 0 || !de_yaml_plain_is_string(s, n))
        return 1;
    if (strchr(" -?:,[]{}#&*!|>'\"%@`", s[0]))
        return 1;
    if (s[n - 1] == ' ' || s[n - 1] == ':')
        return 1;
    if (n >= 3 && (memcmp(s, "...", 3) == 0 || memcmp(s, "---", 3) == 0))
        return 1;
    for (size_t i = 0; i + 1 < n; i++) {
        if ((s[i] == ':' && s[i + 1] == ' ') || (s[i] == ' ' && s[i + 1] == '#'))
            return 1;
    }
    if (looks_timestamp(s, n) || looks_base60(s, n))
        return 1;
    return 0;
}

static void emit_string(emitter *m, const char *s, size_t n)
{
    int st = quote_style(s, n);
    if (st == 0) {
        out(m, s, n);
    } else if (st == 1) {
        out(m, "'", 1);
        size_t start = 0;
        for (size_t i = 0; i < n; i++) {
            if (s[i] == '\'') {
                out(m, s + start, i - start + 1);
                out(m, "'", 1);
                start = i + 1;
            }
        }
        out(m, s + start, n - start);
        out(m, "'", 1);
    } else {
        out(m, "\"", 1);
        for (size_t i = 0; i < n; i++) {
            unsigned char c = (unsigned char)s[i];
            char esc[8];
            switch (c) {
            case '"': outs(m, "\\\""); break;
            case '\\': outs(m, "\\\\"); break;
            case '\n': outs(m, "\\n"); break;
            case '\t': outs(m, "\\t"); break;
            case '\r': outs(m, "\\r"); break;
            default:
                if (c < 0x20 || c == 0x7f) {
                    snprintf(esc, sizeof esc, "\\x%02x", c);
                    outs(m, esc);
                } else if (c == 0xC2 && i + 1 < n && (unsigned char)s[i + 1] == 0x85) {
                    outs(m, "\\N");
                    i++;
                } else if (c == 0xE2 && i + 2 < n && (unsigned char)s[i + 1] == 0x80 &&
                           ((unsigned char)s[i + 2] & 0xFE) == 0xA8) {
                    outs(m, (unsigned char)s[i + 2] == 0xA8 ? "\\L" : "\\P");
                    i += 2;
                } else if (c == 0xEF && i + 2 < n && (unsigned char)s[i + 1] == 0xBB &&
                           (unsigned char)s[i + 2] == 0xBF) {
                    outs(m, "\\ufeff");
                    i += 2;
                } else {
                    out(m, (const char *)&s[i], 1);
                }
            }
        }
        out(m, "\"", 1);
    }
}

static void emit_scalar(emitter *m, const json_t *v)
{
    char num[64];
    switch (json_typeof(v)) {
    case JSON_STRING: emit_string(m, json_string_value(v), json_string_length(v)); break;
    case JSON_INTEGER:
        snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        outs(m, num);
        break;
    case JSON_REAL: {
        double d = json_real_value(v);
        for (int prec = 1; prec <= 17; prec++) {
            snprintf(num, sizeof num, "%.*g", prec, d);
            if (strtod(num, NULL) == d)
                break;
        }
        if (!strpbrk(num, ".eEn"))
            strcat(num, ".0");
        outs(m, num);
        break;
    }
    case JSON_TRUE: outs(m, "true"); break;
    case JSON_FALSE: outs(m, "false"); break;
    case JSON_NULL: outs(m, "null"); break;
    case JSON_OBJECT: outs(m, "{}"); break;
    default: outs(m, "[]"); break;
    }
}

static bool is_block(const json_t *v)
{
    return (json_is_object(v) && json_object_size(v) > 0) ||
           (json_is_array(v) && json_array_size(v) > 0);
}

typedef struct kv {
    const char *k;
    size_t kl;
    const json_t *v;
} kv;

static int cmp_kv(const void *a, const void *b)
{
    const kv *x = a, *y = b;
    size_t n = x->kl < y->kl ? x->kl : y->kl;
    int c = memcmp(x->k, y->k, n);
    if (c)
        return c;
    return x->kl < y->kl ? -1 : x->kl > y->kl;
}

static void emit_block(emitter *m, const json_t *v, int ind, bool inline_first, int depth);

/* A mapping at indentation `ind`; the first key goes on the current line
 * when inline_first (after "- "). */
static void emit_map(emitter *m, const json_t *obj, int ind, bool inline_first, int depth)
{
    size_t n = json_object_size(obj), i = 0;
    kv *items = de_xmalloc(n * sizeof *items);
    const char *k;
    size_t kl;
    json_t *v;
    json_object_keylen_foreach((json_t *)obj, k, kl, v)
    {
        items[i].k = k;
        items[i].kl = kl;
        items[i].v = v;
        i++;
    }
    qsort(items, n, sizeof *items, cmp_kv);
    for (i = 0; i < n && m->rc == DE_OK; i++) {
        if (i > 0 || !inline_first)
            indent(m, ind);
        emit_string(m, items[i].k, items[i].kl);
        out(m, ":", 1);
        const json_t *c = items[i].v;
        if (is_block(c)) {
            out(m, "\n", 1);
            /* kubectl: a sequence under a key is not indented further */
            emit_block(m, c, json_is_array(c) ? ind : ind + 2, false, depth + 1);
        } else {
            out(m, " ", 1);
            emit_scalar(m, c);
            out(m, "\n", 1);
        }
    }
    free(items);
}

static void emit_seq(emitter *m, const json_t *arr, int ind, bool inline_first, int depth)
{
    size_t n = json_array_size(arr);
    for (size_t i = 0; i < n && m->rc == DE_OK; i++) {
        if (i > 0 || !inline_first)
            indent(m, ind);
        out(m, "- ", 2);
        const json_t *c = json_array_get(arr, i);
        if (is_block(c)) {
            emit_block(m, c, ind + 2, true, depth + 1);
        } else {
            emit_scalar(m, c);
            out(m, "\n", 1);
        }
    }
}

static void emit_block(emitter *m, const json_t *v, int ind, bool inline_first, int depth)
{
    if (depth > MAX_DEPTH) {
        if (m->rc == DE_OK)
            m->rc = DE_EINVAL;
        return;
    }
    if (json_is_object(v))
        emit_map(m, v, ind, inline_first, depth);
    else
        emit_seq(m, v, ind, inline_first, depth);
}

de_rc de_yaml_emit(const json_t *v, de_buf *b, de_err *e)
{
    emitter m = {b, DE_OK};
    if (!v)
        return de_errf(e, DE_EINVAL, "yaml: nothing to write");
    if (is_block(v)) {
        emit_block(&m, v, 0, false, 0);
    } else {
        emit_scalar(&m, v);
        out(&m, "\n", 1);
    }
    if (m.rc == DE_ENOMEM)
        return de_errf(e, DE_ENOMEM, "yaml: output larger than its %zu-byte limit", b->max);
    if (m.rc != DE_OK)
        return de_errf(e, m.rc, "yaml: value nested deeper than %d levels", MAX_DEPTH);
    return DE_OK;
}
