/*
 * graph_files.c - dg_load_path / dg_load_text: load manifests into the graph.
 *
 * Objects go through de_doc_each (base's reader) and dg_apply, with two
 * additions:
 *  - an object defined twice in one load (same kind, namespace and name) is
 *    refused like the API server's AlreadyExists, naming where it was first
 *    defined, unless both definitions are the same (structural hash);
 *  - a JSON file holding one List (a cluster snapshot) is read by a fast
 *    path: the file is mapped, the List's items are walked in place, and
 *    ResourceSlices and Nodes of the common shape are decoded straight from
 *    the text (dec_fast.c, dec_fast_node.c); every other item is parsed with
 *    jansson and goes through dg_apply as usual.  Pages already consumed are dropped from memory.
 *    Anything unexpected (a syntax error, an item that is not an object)
 *    hands the whole file back to de_doc_each, which reports it exactly as
 *    for any other file; the items already loaded are recognised as
 *    identical and not loaded twice.
 */
#include "graph_int.h"

#include "../base/dir.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Loading a path: objects defined twice (same kind, namespace and name) in
 * one load are refused - the API server would answer AlreadyExists, and
 * "last one wins" would hide a copy-paste mistake.  With keep_going every
 * object is tried and all errors are reported together. */
typedef struct seen_ent {
    uint8_t kind;
    uint32_t ns, name;
    uint64_t content;
    char where[200];
} seen_ent;

/* Structural hash of a JSON value; object members are combined without
 * regard to order, so the same object written with other key order or
 * formatting hashes the same. */
static uint64_t json_hash(json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        uint64_t h = 0x9e3779b97f4a7c15ULL;
        const char *k;
        json_t *x;
        json_object_foreach(v, k, x) h += de_hash_u64(de_hash_bytes(k, strlen(k)) ^ json_hash(x));
        return de_hash_u64(h ^ 1);
    }
    case JSON_ARRAY: {
        uint64_t h = 0x51ed270b27f1a3c5ULL;
        for (size_t i = 0; i < json_array_size(v); i++)
            h = de_hash_u64(h ^ json_hash(json_array_get(v, i)));
        return de_hash_u64(h ^ 2);
    }
    case JSON_STRING: return de_hash_bytes(json_string_value(v), json_string_length(v)) ^ 3;
    case JSON_INTEGER: return de_hash_u64((uint64_t)json_integer_value(v) ^ 4);
    case JSON_REAL: {
        double d = json_real_value(v);
        uint64_t b;
        memcpy(&b, &d, sizeof b);
        return de_hash_u64(b ^ 5);
    }
    case JSON_TRUE: return 6;
    case JSON_FALSE: return 7;
    default: return 8;
    }
}

typedef struct load_ctx {
    dg_graph *g;
    de_map seen;
    seen_ent *ents;
    uint32_t n, cap;
    de_buf errs;
    uint32_t nerr;
    de_err first;
    const char *skip_file; /* items of document 1 of this file below skip_items */
    int skip_items;        /* were already loaded by the fast path */
} load_ctx;

static bool namespaced(dg_kind k)
{
    return k == DG_KIND_RESOURCE_CLAIM || k == DG_KIND_RESOURCE_CLAIM_TEMPLATE || k == DG_KIND_POD;
}

/* The kind, from apiVersion/kind alone (no decoding): DG_KIND_OTHER for
 * anything the graph does not store. */
static dg_kind quick_kind(json_t *obj)
{
    const char *av = json_string_value(json_object_get(obj, "apiVersion"));
    const char *k = json_string_value(json_object_get(obj, "kind"));
    if (!av || !k)
        return DG_KIND_OTHER;
    bool res = !strncmp(av, "resource.k8s.io/", 16), core = !strcmp(av, "v1");
    for (int i = DG_KIND_RESOURCE_SLICE; i < DG_KIND_OTHER; i++) {
        if (strcmp(k, dg_kind_name((dg_kind)i)))
            continue;
        bool is_core = i == DG_KIND_NODE || i == DG_KIND_POD || i == DG_KIND_NAMESPACE;
        return (is_core ? core : res) ? (dg_kind)i : DG_KIND_OTHER;
    }
    return DG_KIND_OTHER;
}

/* Duplicate detection within one load: 0 = new (key filled), 1 = identical
 * redefinition, 2 = different redefinition (*prev set). */
typedef struct dupkey {
    bool tracked;
    uint8_t kind;
    uint32_t ns, name;
    uint64_t key, content;
} dupkey;

static int check_dup(load_ctx *c, json_t *obj, dupkey *k, const seen_ent **prev)
{
    memset(k, 0, sizeof *k);
    dg_kind kind = quick_kind(obj);
    if (kind == DG_KIND_OTHER)
        return 0;
    json_t *md = json_object_get(obj, "metadata");
    const char *name = json_string_value(json_object_get(md, "name"));
    const char *ns = json_string_value(json_object_get(md, "namespace"));
    if (!name)
        return 0;
    k->tracked = true;
    k->kind = (uint8_t)kind;
    k->ns = namespaced(kind) ? de_intern_cstr(c->g->in, ns && *ns ? ns : "default") : 0;
    k->name = de_intern_cstr(c->g->in, name);
    k->key = de_hash_u64(de_pack2(k->ns, k->name) ^ ((uint64_t)kind << 58));
    k->content = json_hash(obj);
    uint64_t v;
    if (!de_map_get(&c->seen, k->key, &v))
        return 0;
    const seen_ent *s = &c->ents[v];
    if (s->kind != kind || s->ns != k->ns || s->name != k->name)
        return 0;
    *prev = s;
    return s->content == k->content ? 1 : 2;
}

static void remember(load_ctx *c, const dupkey *k, const de_origin *o)
{
    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 64;
        c->ents = de_xrealloc(c->ents, c->cap * sizeof *c->ents);
    }
    seen_ent *s = &c->ents[c->n];
    s->kind = k->kind;
    s->ns = k->ns;
    s->name = k->name;
    s->content = k->content;
    s->where[0] = 0;
    if (o)
        de_origin_format(o, s->where, sizeof s->where);
    de_map_put(&c->seen, k->key, c->n++);
}

static de_rc load_report(load_ctx *c, de_rc rc, de_err *local_in, de_err *e);

static de_rc load_cb(void *ctx, json_t *obj, const de_origin *o, de_err *e)
{
    load_ctx *c = ctx;
    if (c->skip_file && o && o->file && o->doc == 1 && o->item >= 0 && o->item < c->skip_items &&
        !strcmp(o->file, c->skip_file))
        return DE_OK;
    de_err local;
    de_err_clear(&local);
    dupkey k;
    const seen_ent *prev = NULL;
    int dup = check_dup(c, obj, &k, &prev);
    if (dup == 1)
        return DE_OK;
    de_rc rc;
    if (dup == 2) {
        /* report a validation error first; do not replace the first definition */
        rc = dg_check(c->g, obj, o, NULL, &local);
        if (rc == DE_OK) {
            char where[512] = "", label[2 * DE_QUOTE_MAX + 16];
            if (o)
                de_origin_format(o, where, sizeof where);
            dg_object_label(obj, label, sizeof label);
            rc = de_errf(&local, DE_EINVAL, "%s: %s: AlreadyExists: defined differently in %s", where, label,
                         prev->where);
        }
    } else {
        rc = dg_apply(c->g, obj, o, NULL, &local);
        if (rc == DE_OK && k.tracked)
            remember(c, &k, o);
    }
    return load_report(c, rc, &local, e);
}

/* An object failed: stop, or (keep_going / on_error) note it and go on. */
static de_rc load_report(load_ctx *c, de_rc rc, de_err *local_in, de_err *e)
{
    de_err local = *local_in;
    if (rc == DE_OK)
        return DE_OK;
    if (!c->g->opts.keep_going && !c->g->opts.on_error) {
        if (e)
            *e = local;
        return rc;
    }
    if (c->nerr++ == 0)
        c->first = local;
    if (c->g->opts.on_error) {
        c->g->opts.on_error(c->g->opts.on_error_ctx, &local);
        return DE_OK;
    }
    if (c->nerr > 1)
        de_buf_putc(&c->errs, '\n');
    de_buf_puts(&c->errs, local.msg);
    return DE_OK;
}

static de_rc load_finish(load_ctx *c, de_rc rc, de_err *e)
{
    if (rc == DE_OK && c->nerr) {
        rc = DE_EINVAL;
        if (e) {
            *e = c->first;
            if (c->g->opts.on_error)
                snprintf(e->msg, sizeof e->msg, "%u invalid object%s", c->nerr, c->nerr == 1 ? "" : "s");
            else if (!c->errs.overflow)
                snprintf(e->msg, sizeof e->msg, "%s", de_buf_str(&c->errs));
            else
                snprintf(e->msg, sizeof e->msg, "%.*s\n... (%u invalid objects in all)",
                         (int)(sizeof e->msg - 64), de_buf_str(&c->errs), c->nerr);
        }
    }
    de_map_destroy(&c->seen);
    free(c->ents);
    de_buf_free(&c->errs);
    return rc;
}

static void load_init(load_ctx *c, dg_graph *g)
{
    memset(c, 0, sizeof *c);
    c->g = g;
    de_map_init(&c->seen);
    de_buf_init(&c->errs, DE_ERR_MSG_MAX - 1);
}

/* ---- the fast path for JSON snapshots ------------------------------------------------ */

typedef struct scan {
    const char *t;
    size_t len, p;
} scan;

static void sws(scan *s)
{
    while (s->p < s->len && (s->t[s->p] == ' ' || s->t[s->p] == '\n' || s->t[s->p] == '\r' || s->t[s->p] == '\t'))
        s->p++;
}

/* Skip one JSON value without validating it (jansson validates whatever we
 * hand it).  false when the text ends first.  It runs over the whole items
 * array of a snapshot before any item is read (a List's "kind" may come
 * after its items), so it is a table-driven byte loop: characters that are
 * not structural cost a load and a test. */
static const unsigned char skip_class[256] = {['"'] = 1, ['{'] = 2, ['['] = 2, ['}'] = 3, [']'] = 3, [','] = 4};

static bool skip_value(scan *s)
{
    sws(s);
    const unsigned char *t = (const unsigned char *)s->t;
    size_t p = s->p, len = s->len;
    int depth = 0;
    while (p < len) {
        switch (skip_class[t[p]]) {
        case 0:
            p++;
            continue;
        case 1:
            /* a string: a backslash escapes the next character */
            p++;
            for (;;) {
                while (p < len && t[p] != '"' && t[p] != '\\')
                    p++;
                if (p >= len) {
                    s->p = len;
                    return false;
                }
                if (t[p] == '"')
                    break;
                p += 2;
            }
            p++;
            if (depth == 0) {
                s->p = p;
                sws(s);
                return true;
            }
            continue;
        case 2:
            depth++;
            p++;
            continue;
        case 3:
            if (depth == 0) {
                s->p = p; /* end of the enclosing container */
                return true;
            }
            depth--;
            p++;
            if (depth == 0) {
                s->p = p;
                sws(s);
                return true;
            }
            continue;
        default: /* ',' */
            if (depth == 0) {
                s->p = p;
                return true;
            }
            p++;
            continue;
        }
    }
    s->p = len;
    return depth == 0;
}

/* The top level of a List object, read member by member.  When "kind" says
 * List before "items" starts (kubectl and the engine's own snapshots write
 * apiVersion, kind, items), the walk starts at once and the members after
 * the items are read when it is done: the items array, most of the file, is
 * then scanned only once.  Otherwise the items are skipped first to find the
 * kind (it may come last). */
typedef struct listtop {
    size_t seen_at[32], seen_len[32], nseen;
    bool list;
    size_t items_at;
} listtop;

enum { TOP_BAD, TOP_LIST, TOP_ITEMS };

/* A top-level member other than the items (small: apiVersion, kind,
 * metadata) is parsed, so that invalid JSON there goes the slow way, which
 * reports it; a List's kind must be a string. */
static bool top_value(scan *s, bool *is_list)
{
    json_error_t je;
    json_t *v = json_loadb(s->t + s->p, s->len - s->p, JSON_DISABLE_EOF_CHECK | JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je);
    if (!v)
        return false;
    s->p += (size_t)je.position;
    bool ok = true;
    if (is_list) {
        const char *k = json_string_value(v);
        size_t n = k ? strlen(k) : 0;
        ok = k != NULL;
        *is_list = n >= 4 && !memcmp(k + n - 4, "List", 4);
    }
    json_decref(v);
    return ok;
}

/* Members from s->p: the first key (after_value false, just past the '{')
 * or the ',' or '}' after a value.  TOP_ITEMS: `early` and the kind said
 * List before the items, s->p at their '['; TOP_LIST: the object ended,
 * nothing follows it, and it is a List with items; TOP_BAD: anything else
 * (a key seen twice, more keys than kept: the slow path reports it). */
static int top_members(scan *s, listtop *lt, bool early, bool after_value)
{
    for (;;) {
        if (after_value) {
            sws(s);
            if (s->p < s->len && s->t[s->p] == '}') {
                s->p++;
                sws(s);
                return lt->list && lt->items_at && s->p == s->len ? TOP_LIST : TOP_BAD;
            }
            if (s->p >= s->len || s->t[s->p] != ',')
                return TOP_BAD;
            s->p++;
        }
        after_value = true;
        sws(s);
        if (s->p >= s->len || s->t[s->p] != '"')
            return TOP_BAD;
        size_t ks = ++s->p;
        while (s->p < s->len && s->t[s->p] != '"' && s->t[s->p] != '\\')
            s->p++;
        if (s->p >= s->len || s->t[s->p] != '"')
            return TOP_BAD;
        size_t kl = s->p++ - ks;
        for (size_t i = 0; i < lt->nseen; i++)
            if (lt->seen_len[i] == kl && !memcmp(s->t + lt->seen_at[i], s->t + ks, kl))
                return TOP_BAD;
        if (lt->nseen == DE_ARRAY_LEN(lt->seen_at))
            return TOP_BAD;
        lt->seen_at[lt->nseen] = ks;
        lt->seen_len[lt->nseen++] = kl;
        sws(s);
        if (s->p >= s->len || s->t[s->p++] != ':')
            return TOP_BAD;
        sws(s);
        if (kl == 4 && !memcmp(s->t + ks, "kind", 4)) {
            if (!top_value(s, &lt->list))
                return TOP_BAD;
        } else if (kl == 5 && !memcmp(s->t + ks, "items", 5)) {
            if (s->p >= s->len || s->t[s->p] != '[')
                return TOP_BAD;
            lt->items_at = s->p;
            if (early && lt->list)
                return TOP_ITEMS;
            if (!skip_value(s))
                return TOP_BAD;
        } else if (!top_value(s, NULL)) {
            return TOP_BAD;
        }
    }
}

static int find_list(scan *s, listtop *lt)
{
    memset(lt, 0, sizeof *lt);
    sws(s);
    if (s->p >= s->len || s->t[s->p] != '{')
        return TOP_BAD;
    s->p++;
    return top_members(s, lt, true, false);
}

/* The List walk shared by dg_load_path and dg_list_each: `decide` says what
 * becomes of a slice the fast path decoded (1 commit, 0 drop, -1 hand it to
 * `item` as JSON), `committed` hears how its commit went, `item` gets every
 * other item; `again` reads the whole file the ordinary way when the walk has
 * to give up (items below skip_items were loaded already). */
typedef struct walk_fns {
    int (*decide)(void *ctx, dg_kind kind, uint32_t name, uint64_t hash, const de_origin *o);
    de_rc (*committed)(void *ctx, dg_kind kind, uint32_t name, uint64_t hash, const de_origin *o, de_rc rc,
                       de_err *local, de_err *e);
    de_doc_cb item;
    de_rc (*again)(void *ctx, const char *path, int skip_items, de_err *e);
} walk_fns;

/* Walk the items of a JSON List file; *handled = false when the file is not
 * such a List (the caller then uses de_doc_each). */
static de_rc list_walk(dg_graph *g, const char *path, bool fast, bool want_hash, const walk_fns *fn, void *ctx,
                       bool *handled, de_err *e)
{
    *handled = false;
    struct stat st;
    int fd;
    if (de_open_input(path, false, &fd, &st, NULL) != DE_OK)
        return DE_OK; /* not a regular file: de_doc_each_file reads it, or says why not */
    if (st.st_size < 16 || (uint64_t)st.st_size > DE_DOC_MAX_FILE) {
        close(fd);
        return DE_OK;
    }
    size_t len = (size_t)st.st_size;
    char *t = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (t == MAP_FAILED)
        return DE_OK;
    scan s = {t, len, 0};
    listtop lt;
    int top = find_list(&s, &lt);
    if (top == TOP_BAD) {
        munmap(t, len);
        return DE_OK;
    }
    *handled = true;
    size_t page = (size_t)sysconf(_SC_PAGESIZE), dropped = 0;
    s.p = lt.items_at + 1;
    sws(&s);
    int idx = 0, nitems = 0;
    de_rc rc = DE_OK;
    bool abandon = false;
    dec_fast_memo *memo = fast ? dec_fast_memo_new() : NULL;
    if (s.p < len && t[s.p] == ']')
        goto done;
    for (;; idx++) {
        de_origin o = {path, 1, idx};
        size_t used = 0;
        bool done_item = false;
        if (fast) {
            dec d;
            dec_init(&d, g->in, dg_scratch(g), &g->gates, true);
            dg_slice *sl = NULL;
            dg_node *nd = NULL;
            uint64_t hash = 0, *hp = want_hash ? &hash : NULL;
            dg_kind kind = dec_fast_kind(t + s.p, len - s.p);
            if ((kind == DG_KIND_RESOURCE_SLICE || kind == DG_KIND_NONE) &&
                dec_fast_slice(&d, memo, t + s.p, len - s.p, &sl, &used, hp) == 1)
                kind = DG_KIND_RESOURCE_SLICE;
            else if ((kind == DG_KIND_NODE || kind == DG_KIND_NONE) &&
                     dec_fast_node(&d, memo, t + s.p, len - s.p, &nd, &used, hp) == 1)
                kind = DG_KIND_NODE;
            else
                kind = DG_KIND_NONE;
            uint32_t name = sl ? sl->meta.name : nd ? nd->meta.name : 0;
            int what = kind != DG_KIND_NONE ? fn->decide(ctx, kind, name, hash, &o) : -1;
            if (what >= 0) {
                done_item = true;
                if (what == 1) {
                    de_err local;
                    de_err_clear(&local);
                    de_rc crc = sl ? dg_commit_slice(g, sl, NULL, &local) : dg_commit_node(g, nd, &local);
                    if (crc == DE_OK)
                        *(sl ? &g->fast_path_slices : &g->fast_path_nodes) += 1;
                    rc = fn->committed(ctx, kind, name, hash, &o, crc, &local, e);
                    if (rc != DE_OK) {
                        dec_fini(&d);
                        break;
                    }
                }
            }
            dec_fini(&d);
        }
        if (!done_item) {
            json_error_t je;
            json_t *obj = json_loadb(t + s.p, len - s.p,
                                     JSON_DISABLE_EOF_CHECK | JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je);
            if (!obj || !json_is_object(obj)) {
                if (obj)
                    json_decref(obj);
                abandon = true;
                break;
            }
            used = (size_t)je.position;
            rc = fn->item(ctx, obj, &o, e);
            json_decref(obj);
            if (rc != DE_OK)
                break;
        }
        s.p += used;
        sws(&s);
        /* drop consumed pages: the snapshot is never held whole in memory */
        if (s.p - dropped > ((size_t)16 << 20)) {
            size_t upto = (s.p - (size_t)(1 << 20)) & ~(page - 1);
            if (upto > dropped) {
                madvise(t + dropped, upto - dropped, MADV_DONTNEED);
                dropped = upto;
            }
        }
        if (s.p < len && t[s.p] == ',') {
            s.p++;
            continue;
        }
        if (!(s.p < len && t[s.p] == ']'))
            abandon = true;
        else
            nitems = idx + 1;
        break;
    }
done:
    dec_fast_memo_free(memo);
    if (top == TOP_ITEMS && !abandon && rc == DE_OK) {
        /* the members after the items: anything amiss there and the whole
         * file is read the ordinary way, which reports it (the items are
         * loaded already and skipped) */
        s.p++; /* the items' ']' */
        if (top_members(&s, &lt, false, true) != TOP_LIST) {
            abandon = true;
            idx = nitems;
        }
    }
    munmap(t, len);
    if (abandon)
        rc = fn->again(ctx, path, idx, e);
    return rc;
}

/* dg_load_path's side of the walk: duplicates by structural hash (slices
 * and Nodes are not namespaced) */
static int load_decide(void *ctx, dg_kind kind, uint32_t name, uint64_t hash, const de_origin *o)
{
    (void)o;
    load_ctx *c = ctx;
    uint64_t key = de_hash_u64(de_pack2(0, name) ^ ((uint64_t)kind << 58)), v;
    const seen_ent *prev = NULL;
    if (de_map_get(&c->seen, key, &v) && c->ents[v].kind == kind && c->ents[v].name == name)
        prev = &c->ents[v];
    if (!prev)
        return 1;
    return prev->content == hash ? 0 : -1;
}

static de_rc load_committed(void *ctx, dg_kind kind, uint32_t name, uint64_t hash, const de_origin *o, de_rc rc,
                            de_err *local, de_err *e)
{
    load_ctx *c = ctx;
    rc = load_report(c, rc, local, e);
    if (rc == DE_OK) {
        dupkey k = {true, (uint8_t)kind, 0, name, 0, hash};
        k.key = de_hash_u64(de_pack2(0, k.name) ^ ((uint64_t)kind << 58));
        remember(c, &k, o);
    }
    return rc;
}

static de_rc load_again(void *ctx, const char *path, int skip_items, de_err *e)
{
    load_ctx *c = ctx;
    c->skip_file = path;
    c->skip_items = skip_items;
    de_rc rc = de_doc_each_file(path, false, load_cb, c, e);
    c->skip_file = NULL;
    return rc;
}

static de_rc load_json_list(load_ctx *c, const char *path, bool *handled, de_err *e)
{
    static const walk_fns fns = {load_decide, load_committed, load_cb, load_again};
    dg_graph *g = c->g;
    bool fast = !g->opts.keep_slice_json && !g->opts.skip_validation && !g->opts.no_fast_path;
    return list_walk(g, path, fast, true, &fns, c, handled, e);
}

/* ---- dg_list_each ----------------------------------------------------------------------- */

typedef struct each_ctx {
    const dg_list_fns *fn;
    void *ctx;
    const char *skip_file;
    int skip_items;
} each_ctx;

static int each_decide(void *ctx, dg_kind kind, uint32_t name, uint64_t hash, const de_origin *o)
{
    (void)hash;
    each_ctx *x = ctx;
    return x->fn->fast(x->ctx, kind, name, o);
}

static de_rc each_committed(void *ctx, dg_kind kind, uint32_t name, uint64_t hash, const de_origin *o, de_rc rc,
                            de_err *local, de_err *e)
{
    (void)hash;
    each_ctx *x = ctx;
    if (rc != DE_OK) {
        if (e)
            *e = *local;
        return rc;
    }
    if (x->fn->committed)
        x->fn->committed(x->ctx, kind, name, o);
    return DE_OK;
}

static de_rc each_item(void *ctx, json_t *obj, const de_origin *o, de_err *e)
{
    each_ctx *x = ctx;
    if (x->skip_file && o && o->file && o->doc == 1 && o->item >= 0 && o->item < x->skip_items &&
        !strcmp(o->file, x->skip_file))
        return DE_OK;
    return x->fn->item(x->ctx, obj, o, e);
}

static de_rc each_again(void *ctx, const char *path, int skip_items, de_err *e)
{
    each_ctx *x = ctx;
    x->skip_file = path;
    x->skip_items = skip_items;
    de_rc rc = de_doc_each_file(path, false, each_item, x, e);
    x->skip_file = NULL;
    return rc;
}

de_rc dg_list_each(dg_graph *g, const char *path, const dg_list_fns *fn, void *ctx, bool *handled, de_err *e)
{
    static const walk_fns fns = {each_decide, each_committed, each_item, each_again};
    each_ctx x = {fn, ctx, NULL, 0};
    bool fast = !g->opts.keep_slice_json && !g->opts.no_fast_path;
    return list_walk(g, path, fast, false, &fns, &x, handled, e);
}

/* streams: the user named this path (it may be a pipe); a file a directory
 * walk found must be a regular file. */
static de_rc load_file(load_ctx *c, const char *path, bool streams, de_err *e)
{
    bool handled;
    de_rc rc = load_json_list(c, path, &handled, e);
    if (handled)
        return rc;
    return de_doc_each_file(path, streams, load_cb, c, e);
}

de_rc dg_load_path(dg_graph *g, const char *path, de_err *e)
{
    load_ctx c;
    load_init(&c, g);
    struct stat st;
    de_rc rc;
    if (strcmp(path, "-") && stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        char **files = NULL;
        size_t n = 0;
        rc = de_doc_list_files(path, &files, &n, e);
        for (size_t i = 0; i < n; i++) {
            if (rc == DE_OK)
                rc = load_file(&c, files[i], false, e);
            free(files[i]);
        }
        free(files);
    } else if (strcmp(path, "-")) {
        rc = load_file(&c, path, true, e);
    } else {
        rc = de_doc_each(path, load_cb, &c, e);
    }
    return load_finish(&c, rc, e);
}

de_rc dg_load_text(dg_graph *g, const char *name, const char *text, size_t len, de_err *e)
{
    load_ctx c;
    load_init(&c, g);
    return load_finish(&c, de_doc_each_text(name, text, len, load_cb, &c, e), e);
}

