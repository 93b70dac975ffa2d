/*
 * doc.c - reading manifests: files and directories, JSON streams, dispatch
 * to the YAML reader (doc_yaml.c), and List splitting.
 *
 * A JSON text is read value by value with json_loadb(JSON_DISABLE_EOF_CHECK),
 * whose error.position says how far each value went.  When a top-level value
 * is an object, a first pass walks only its top level: every member except
 * "items" is parsed (they are small: apiVersion, kind, metadata), "items" is
 * skipped by a bracket-and-string scanner.  If the object is a List (kind
 * "List" or "*List") the second pass parses and hands over one item at a
 * time, so a 100,000-device snapshot never becomes one tree; otherwise the
 * object is parsed whole.  YAML documents are built one at a time; a YAML
 * List is built whole and then handed over item by item (YAML snapshots are
 * not the large-input path).
 */
#include "doc_int.h"

#include "dir.h"
#include "jload.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_DIR_DEPTH 64

/* ---- small helpers --------------------------------------------------------- */

void de_text_linecol(const char *text, size_t len, size_t off, int *line, int *col)
{
    int l = 1;
    size_t start = 0;
    if (off > len)
        off = len;
    for (size_t i = 0; i < off; i++)
        if (text[i] == '\n') {
            l++;
            start = i + 1;
        }
    *line = l;
    *col = (int)(off - start) + 1;
}

const char *de_json_unknown_key(const json_t *obj, const char *const *known)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v)
    {
        const char *const *k = known;
        while (*k && strcmp(*k, key))
            k++;
        if (!*k)
            return key;
    }
    return NULL;
}

void de_origin_format(const de_origin *o, char *buf, size_t cap)
{
    if (o->item >= 0)
        snprintf(buf, cap, "%s: document %d: items[%d]", o->file, o->doc, o->item);
    else
        snprintf(buf, cap, "%s: document %d", o->file, o->doc);
}

static const char *type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "a list";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: case JSON_REAL: return "a number";
    case JSON_TRUE: case JSON_FALSE: return "a boolean";
    default: return "null";
    }
}

static bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

static bool has_suffix(const char *s, const char *suf)
{
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && strcmp(s + n - m, suf) == 0;
}

static bool is_manifest_name(const char *s)
{
    return has_suffix(s, ".yaml") || has_suffix(s, ".yml") || has_suffix(s, ".json");
}

/* ---- reading files ----------------------------------------------------------- */

de_rc de_read_file(const char *path, size_t max, char **out, size_t *len, de_err *e)
{
    de_read_opts o = {.max = max, .streams = true};
    return de_read_input(path, &o, out, len, NULL, e);
}

/* ---- listing ---------------------------------------------------------------- */

static bool want_manifest(const char *name) { return is_manifest_name(name); }

de_rc de_doc_list_files(const char *path, char ***out, size_t *n, de_err *e)
{
    struct stat st;
    *out = NULL;
    *n = 0;
    if (strcmp(path, "-") != 0 && stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        de_walk_opts o = {.want = want_manifest, .max_depth = MAX_DIR_DEPTH};
        de_walk_out w;
        DE_TRY(de_walk(path, &o, &w, e));
        *out = w.files;
        *n = w.nfiles;
        return DE_OK;
    }
    if (strcmp(path, "-") != 0 && stat(path, &st) != 0) {
        struct stat lst;
        if (errno == ENOENT && lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode))
            return de_errf(e, DE_ENOTFOUND, "%s: dangling symlink (its target does not exist)", path);
        return de_errf(e, errno == ENOENT ? DE_ENOTFOUND : DE_EIO, "%s: %s", path,
                       errno == ELOOP ? "symlink loop" : strerror(errno));
    }
    *out = de_xcalloc(1, sizeof **out);
    (*out)[0] = de_xstrdup(path);
    *n = 1;
    return DE_OK;
}

/* ---- handing objects over ------------------------------------------------- */

typedef struct walkctx {
    const char *name;
    de_doc_cb cb;
    void *ctx;
    size_t delivered; /* objects handed to cb so far */
} walkctx;

static de_rc deliver(walkctx *w, json_t *obj, const de_origin *o, de_err *e)
{
    w->delivered++;
    return w->cb(w->ctx, obj, o, e);
}

static de_rc not_object(const de_origin *o, const json_t *v, de_err *e)
{
    char pfx[DE_ERR_FIELD_MAX + 64];
    de_origin_format(o, pfx, sizeof pfx);
    de_errf(e, DE_EINVAL, "%s: expected an object, got %s", pfx, type_name(v));
    if (e)
        snprintf(e->file, sizeof e->file, "%s", o->file);
    return DE_EINVAL;
}

static bool is_list_kind(const json_t *kind)
{
    const char *k = json_string_value(kind);
    return k && (strcmp(k, "List") == 0 || has_suffix(k, "List"));
}

/* One complete value: a List is split, anything else must be an object. */
static de_rc hand_value(walkctx *w, json_t *v, int doc, de_err *e)
{
    de_origin o = {w->name, doc, -1};
    if (!json_is_object(v))
        return not_object(&o, v, e);
    json_t *items = json_object_get(v, "items");
    if (is_list_kind(json_object_get(v, "kind")) && items && !json_is_array(items) && !json_is_null(items)) {
        char pfx[DE_ERR_FIELD_MAX + 64];
        de_origin_format(&o, pfx, sizeof pfx);
        const json_t *kj = json_object_get(v, "kind");
        char q[DE_QUOTE_MAX + 1];
        de_errf(e, DE_EINVAL, "%s: kind %s: items: Invalid value: %s: must be a list", pfx,
                de_quote(q, json_string_value(kj), json_string_length(kj)), type_name(items));
        if (e)
            snprintf(e->file, sizeof e->file, "%s", o.file);
        return DE_EINVAL;
    }
    if (is_list_kind(json_object_get(v, "kind"))) {
        size_t n = json_array_size(items);
        for (size_t i = 0; i < n; i++) {
            json_t *it = json_incref(json_array_get(items, i));
            json_array_set(items, i, json_null()); /* freed as soon as it is handed */
            o.item = (int)i;
            de_rc rc = json_is_object(it) ? deliver(w, it, &o, e) : not_object(&o, it, e);
            json_decref(it);
            if (rc != DE_OK)
                return rc;
        }
        return DE_OK;
    }
    return deliver(w, v, &o, e);
}

static de_rc yaml_doc(void *ctx, json_t *v, int doc, int line, de_err *e)
{
    DE_UNUSED(line);
    return hand_value(ctx, v, doc, e);
}

/* ---- JSON streams -------------------------------------------------------------- */

/* jansson's words for the two strictness refusals, in the engine's */
static const char *json_reason(const json_error_t *je, char *buf, size_t cap)
{
    if (json_error_code(je) == json_error_duplicate_key) {
        /* "duplicate object key near '"kind"'" */
        const char *near = strstr(je->text, "near '");
        if (near) {
            near += 6;
            size_t n = strlen(near);
            if (n && near[n - 1] == '\'')
                n--;
            snprintf(buf, cap, "duplicate field %.*s (a key may appear once)", (int)n, near);
            return buf;
        }
        return "duplicate field (a key may appear once)";
    }
    if (strstr(je->text, "JSON_ALLOW_NUL"))
        return "a NUL character (\\u0000) in a string: not allowed in a manifest";
    return je->text;
}

static de_rc json_fail(const char *name, int doc, const char *text, size_t len, size_t at,
                       const json_error_t *je, de_err *e)
{
    int line, col;
    char why[JSON_ERROR_TEXT_LENGTH + 64];
    de_text_linecol(text, len, at, &line, &col);
    /* a duplicate key or a NUL is valid JSON syntax the engine refuses:
     * DE_EINVAL, so the text is not retried as YAML (which would only say
     * the same in other words) */
    const char *reason = json_reason(je, why, sizeof why);
    de_rc rc = reason == je->text && strncmp(reason, "duplicate field", 15) ? DE_EPARSE : DE_EINVAL;
    de_errf(e, rc, "%s: document %d: line %d:%d: json: %s", name, doc, line, col, reason);
    if (e) {
        snprintf(e->file, sizeof e->file, "%s", name);
        e->line = line;
        e->col = col;
    }
    return rc;
}

/* Parse one JSON value at text[*pos]; advance *pos past it. */
static json_t *load_at(const char *name, int doc, const char *text, size_t len, size_t *pos,
                       de_err *e)
{
    json_error_t je;
    json_t *v = json_loadb(text + *pos, len - *pos,
                           JSON_DISABLE_EOF_CHECK | JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je);
    if (!v) {
        /* error.position counts bytes read; the offending one is the last */
        size_t at = *pos + (je.position > 0 ? (size_t)je.position - 1 : 0);
        json_fail(name, doc, text, len, at, &je, e);
        return NULL;
    }
    *pos += (size_t)je.position;
    return v;
}

static size_t skip_ws(const char *t, size_t len, size_t p)
{
    while (p < len && is_ws(t[p]))
        p++;
    return p;
}

static bool is_delim(char c)
{
    static const bool tab[256] = {
        [' '] = 1, ['\t'] = 1, ['\n'] = 1, ['\r'] = 1, [','] = 1, [':'] = 1,
        ['{'] = 1, ['}'] = 1, ['['] = 1, [']'] = 1, ['"'] = 1,
    };
    return tab[(unsigned char)c];
}

/* Skip a JSON value without building it; false on a structural error. */
static bool skip_value(const char *t, size_t len, size_t *pos)
{
    size_t p = *pos;
    int depth = 0;
    do {
        p = skip_ws(t, len, p);
        if (p >= len)
            return false;
        char c = t[p];
        if (c == '"') {
            p++;
            for (;;) {
                const char *q = memchr(t + p, '"', len - p);
                if (!q)
                    return false;
                size_t qp = (size_t)(q - t), bs = 0;
                while (qp - bs > p && t[qp - bs - 1] == '\\')
                    bs++;
                p = qp + 1;
                if (bs % 2 == 0)
                    break; /* not escaped */
            }
        } else if (c == '{' || c == '[') {
            depth++;
            p++;
        } else if (c == '}' || c == ']') {
            if (--depth < 0)
                return false;
            p++;
        } else if (c == ',' || c == ':') {
            if (depth == 0)
                return false;
            p++;
        } else {
            size_t s = p;
            while (p < len && !is_delim(t[p]))
                p++;
            if (p == s)
                return false;
        }
    } while (depth > 0);
    *pos = p;
    return true;
}

/* First pass over a top-level object at text[start] ('{'): find "kind" and
 * the span of "items".  Returns false if the object is not well formed at
 * its top level (the caller then lets jansson report the error); *failed
 * when the error is already reported (a bad member, a duplicate key). */
static bool scan_object(const char *name, int doc, const char *t, size_t len, size_t start,
                        json_t **kind, size_t *items_at, size_t *end, de_err *e, bool *failed)
{
    size_t p = start + 1;
    *kind = NULL;
    *items_at = 0;
    *failed = false;
    p = skip_ws(t, len, p);
    if (p < len && t[p] == '}') {
        *end = p + 1;
        return true;
    }
    json_t *seen = json_object(); /* the keys so far: a second one is an error */
    json_t *key = NULL;
    bool ok = false;
    for (;;) {
        p = skip_ws(t, len, p);
        if (p >= len || t[p] != '"')
            break;
        size_t kat = p;
        key = load_at(name, doc, t, len, &p, e);
        if (!key) {
            *failed = true;
            break;
        }
        const char *k = json_string_value(key);
        size_t kl = json_string_length(key);
        if (json_object_getn(seen, k, kl)) {
            json_error_t je;
            memset(&je, 0, sizeof je);
            char q[DE_QUOTE_MAX + 1];
            snprintf(je.text, sizeof je.text, "duplicate field %s (a key may appear once)", de_quote(q, k, kl));
            json_fail(name, doc, t, len, kat, &je, e);
            *failed = true;
            break;
        }
        json_object_setn(seen, k, kl, json_null());
        p = skip_ws(t, len, p);
        if (p >= len || t[p] != ':')
            break;
        p = skip_ws(t, len, p + 1);
        if (strcmp(k, "items") == 0 && p < len && t[p] == '[') {
            *items_at = p;
            if (!skip_value(t, len, &p))
                break;
        } else {
            json_t *v = load_at(name, doc, t, len, &p, e);
            if (!v) {
                *failed = true;
                break;
            }
            if (strcmp(k, "kind") == 0) {
                json_decref(*kind);
                *kind = v;
            } else {
                json_decref(v);
            }
        }
        json_decref(key);
        key = NULL;
        p = skip_ws(t, len, p);
        if (p < len && t[p] == ',') {
            p++;
            continue;
        }
        if (p < len && t[p] == '}') {
            *end = p + 1;
            ok = true;
        }
        break;
    }
    json_decref(key);
    json_decref(seen);
    if (!ok) {
        json_decref(*kind);
        *kind = NULL;
    }
    return ok;
}

/* Second pass for a List: hand the items of the array at text[at] one by one. */
static de_rc stream_items(walkctx *w, int doc, const char *t, size_t len, size_t at, de_err *e)
{
    size_t p = skip_ws(t, len, at + 1);
    int i = 0;
    if (p < len && t[p] == ']')
        return DE_OK;
    for (;; i++) {
        json_t *it = load_at(w->name, doc, t, len, &p, e);
        if (!it)
            return e ? e->rc : DE_EPARSE;
        de_origin o = {w->name, doc, i};
        de_rc rc = json_is_object(it) ? deliver(w, it, &o, e) : not_object(&o, it, e);
        json_decref(it);
        if (rc != DE_OK)
            return rc;
        p = skip_ws(t, len, p);
        if (p < len && t[p] == ',') {
            p++;
            continue;
        }
        if (p < len && t[p] == ']')
            return DE_OK;
        json_error_t je;
        memset(&je, 0, sizeof je);
        snprintf(je.text, sizeof je.text, "expected ',' or ']' after a List item");
        return json_fail(w->name, doc, t, len, p, &je, e);
    }
}

static de_rc json_stream(walkctx *w, const char *t, size_t len, de_err *e)
{
    size_t p = 0;
    int doc = 0;
    for (;;) {
        p = skip_ws(t, len, p);
        if (p >= len)
            return DE_OK;
        doc++;
        if (t[p] == '{') {
            json_t *kind;
            size_t items_at, end;
            bool failed;
            bool ok = scan_object(w->name, doc, t, len, p, &kind, &items_at, &end, e, &failed);
            if (failed)
                return e ? e->rc : DE_EPARSE;
            bool list = ok && items_at && is_list_kind(kind);
            json_decref(kind);
            if (list) {
                DE_TRY(stream_items(w, doc, t, len, items_at, e));
                p = end;
                continue;
            }
        }
        json_t *v = load_at(w->name, doc, t, len, &p, e);
        if (!v)
            return e ? e->rc : DE_EPARSE;
        de_rc rc = hand_value(w, v, doc, e);
        json_decref(v);
        if (rc != DE_OK)
            return rc;
    }
}

/* ---- dispatch ------------------------------------------------------------------ */

static size_t skip_bom(const char *t, size_t len)
{
    return len >= 3 && (unsigned char)t[0] == 0xEF && (unsigned char)t[1] == 0xBB &&
                   (unsigned char)t[2] == 0xBF
               ? 3
               : 0;
}

/* JSON when the first significant byte opens an object or array and the
 * name does not say YAML; YAML otherwise (YAML is a superset of JSON, so a
 * flow-style YAML file that fails as JSON is retried as YAML). */
static bool looks_json(const char *name, const char *t, size_t len)
{
    size_t p = skip_ws(t, len, 0);
    return p < len && (t[p] == '{' || t[p] == '[') && !has_suffix(name, ".yaml") &&
           !has_suffix(name, ".yml");
}

de_rc de_doc_each_text(const char *name, const char *text, size_t len, de_doc_cb cb,
                       void *ctx, de_err *e)
{
    walkctx w = {name, cb, ctx, 0};
    size_t b = skip_bom(text, len);
    text += b;
    len -= b;
    if (looks_json(name, text, len)) {
        de_err je;
        de_err_clear(&je);
        de_rc rc = json_stream(&w, text, len, &je);
        if (rc != DE_EPARSE || has_suffix(name, ".json") || w.delivered) {
            if (rc != DE_OK && e)
                *e = je;
            return rc;
        }
        /* not JSON: YAML may still read it; keep the JSON error if not */
        de_err ye;
        de_err_clear(&ye);
        rc = de_yaml_docs(name, text, len, yaml_doc, &w, &ye);
        if (rc != DE_OK && e)
            *e = ye.rc == DE_EPARSE ? je : ye;
        return rc;
    }
    return de_yaml_docs(name, text, len, yaml_doc, &w, e);
}

de_rc de_doc_each_file(const char *file, bool streams, de_doc_cb cb, void *ctx, de_err *e)
{
    char *text;
    size_t len;
    de_read_opts ro = {.max = DE_DOC_MAX_FILE, .streams = streams};
    DE_TRY(de_read_input(file, &ro, &text, &len, NULL, e));
    const char *nm = strcmp(file, "-") == 0 ? "<stdin>" : file;
    de_rc rc = de_doc_each_text(nm, text, len, cb, ctx, e);
    free(text);
    return rc;
}

de_rc de_doc_each(const char *path, de_doc_cb cb, void *ctx, de_err *e)
{
    char **files;
    size_t n;
    DE_TRY(de_doc_list_files(path, &files, &n, e));
    /* a path the user named may be a stream; what a walk found may not */
    bool named = n == 1 && !strcmp(files[0], path);
    de_rc rc = DE_OK;
    for (size_t i = 0; i < n && rc == DE_OK; i++)
        rc = de_doc_each_file(files[i], named, cb, ctx, e);
    for (size_t i = 0; i < n; i++)
        free(files[i]);
    free(files);
    return rc;
}

/* ---- exactly one value ---------------------------------------------------------- */

typedef struct onectx {
    json_t *v;
    int count;
    const char *name;
} onectx;

static de_rc one_doc(void *ctx, json_t *v, int doc, int line, de_err *e)
{
    onectx *o = ctx;
    if (++o->count > 1) {
        de_errf(e, DE_EINVAL, "%s: document %d (line %d): expected exactly one document",
                o->name, doc, line);
        return DE_EINVAL;
    }
    o->v = json_incref(v);
    return DE_OK;
}

json_t *de_doc_parse_one(const char *name, const char *text, size_t len, de_err *e)
{
    size_t b = skip_bom(text, len);
    text += b;
    len -= b;
    if (looks_json(name, text, len) || has_suffix(name, ".json")) {
        json_error_t je;
        json_t *v = de_json_loadb(text, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je);
        if (v)
            return v;
        if (has_suffix(name, ".json") || looks_json(name, text, len)) {
            de_err ye;
            de_err_clear(&ye);
            onectx o = {NULL, 0, name};
            if (!has_suffix(name, ".json") &&
                de_yaml_docs(name, text, len, one_doc, &o, &ye) == DE_OK && o.v)
                return o.v;
            json_decref(o.v);
            json_fail(name, 1, text, len, je.position > 0 ? (size_t)je.position - 1 : 0, &je,
                      e);
            return NULL;
        }
    }
    onectx o = {NULL, 0, name};
    if (de_yaml_docs(name, text, len, one_doc, &o, e) != DE_OK) {
        json_decref(o.v);
        return NULL;
    }
    if (!o.v)
        de_errf(e, DE_EINVAL, "%s: no document found", name);
    return o.v;
}

json_t *de_doc_load_one(const char *path, de_err *e)
{
    char *text;
    size_t len;
    if (de_read_file(path, DE_DOC_MAX_FILE, &text, &len, e) != DE_OK)
        return NULL;
    json_t *v = de_doc_parse_one(strcmp(path, "-") == 0 ? "<stdin>" : path, text, len, e);
    free(text);
    return v;
}
