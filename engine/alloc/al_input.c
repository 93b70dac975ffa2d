/*
 * al_input.c - loading manifests for offline allocation (the allocate
 * command and core.allocate in Lua): every object goes into the graph, and
 * the pending claims (no status.allocation) and the pods are remembered in
 * input order, which is the order Allocate and scheduling use.
 *
 * Validation: with `checker` set, the graph being loaded decodes only and
 * each object is validated on the side; a problem becomes a warning.  The
 * upstream allocator works on whatever the API server holds, and the
 * conformance vectors (from upstream's unit tests) use names a real API
 * server would refuse, so refusing them would be unfaithful.
 *
 * The same object given twice (same kind, namespace and name) is accepted
 * when both copies are identical and refused otherwise - offline there is no
 * "later version wins" to rely on.
 *
 * Content is hashed only when names collide.  Serialising every object to
 * hash it was 15-20 % of loading a large snapshot, for a check that almost
 * never fires.  Each name remembers where its object came from; when a
 * second object with that name arrives, the first one's file is read again
 * once and every object of it gets its content hash (the file is re-read at
 * most once per load, however many of its objects collide).  Objects that
 * cannot be read again - stdin, text handed over in memory, objects from the
 * file watcher, anything that is not a regular file - are hashed when they
 * arrive, as before.  A file that changed between the two reads makes its
 * objects compare as different.
 */
#include "al_int.h"
#include "../base/doc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct lctx {
    dg_graph *g;
    al_input *in;
    bool rereadable; /* the origins name files that can be read again */
} lctx;

/* One name seen: its content hash (0 = not computed yet) and origin. */
typedef struct dd_ent {
    uint64_t body;
    uint32_t file; /* index into dd files, UINT32_MAX: none */
    int doc, item;
} dd_ent;

typedef struct al_dedup {
    dd_ent *e;
    uint32_t n, cap;
    char **files;    /* paths of the rereadable origins */
    bool *rehashed;  /* per file: read again already */
    uint32_t nfiles, capfiles;
    de_map at;       /* (file, doc, item) -> entry index + 1 */
} al_dedup;

static uint64_t body_hash(json_t *obj)
{
    char *txt = json_dumps(obj, JSON_COMPACT | JSON_SORT_KEYS);
    uint64_t body = txt ? de_hash_bytes(txt, strlen(txt)) | 1 : 1;
    free(txt);
    return body;
}

static uint64_t at_key(uint32_t file, int doc, int item)
{
    return de_hash_u64(((uint64_t)file << 40) ^ ((uint64_t)(uint32_t)doc << 20) ^ (uint64_t)(uint32_t)(item + 1));
}

/* The file index of origin o when it can be read again, else UINT32_MAX. */
static uint32_t dd_file(al_dedup *d, const de_origin *o)
{
    if (!o || !o->file)
        return UINT32_MAX;
    if (d->nfiles && !strcmp(d->files[d->nfiles - 1], o->file))
        return d->nfiles - 1;
    for (uint32_t i = 0; i < d->nfiles; i++)
        if (!strcmp(d->files[i], o->file))
            return i;
    struct stat st;
    if (stat(o->file, &st) != 0 || !S_ISREG(st.st_mode))
        return UINT32_MAX;
    if (d->nfiles == d->capfiles) {
        d->capfiles = d->capfiles ? d->capfiles * 2 : 8;
        d->files = de_xrealloc(d->files, d->capfiles * sizeof *d->files);
        d->rehashed = de_xrealloc(d->rehashed, d->capfiles * sizeof *d->rehashed);
    }
    d->files[d->nfiles] = de_xstrdup(o->file);
    d->rehashed[d->nfiles] = false;
    return d->nfiles++;
}

typedef struct rehash_ctx {
    al_dedup *d;
    uint32_t file;
} rehash_ctx;

static de_rc rehash_one(void *vctx, json_t *obj, const de_origin *o, de_err *e)
{
    (void)e;
    rehash_ctx *r = vctx;
    uint64_t v;
    if (de_map_get(&r->d->at, at_key(r->file, o->doc, o->item), &v)) {
        dd_ent *x = &r->d->e[v - 1];
        if (x->file == r->file && x->doc == o->doc && x->item == o->item && !x->body)
            x->body = body_hash(obj);
    }
    return DE_OK;
}

/* The content hash of entry i, reading its file again if needed (0: the
 * object is no longer there). */
static uint64_t dd_body(al_dedup *d, uint32_t i)
{
    dd_ent *x = &d->e[i];
    if (!x->body && x->file != UINT32_MAX && !d->rehashed[x->file]) {
        d->rehashed[x->file] = true;
        rehash_ctx r = {d, x->file};
        de_err ignored;
        de_err_clear(&ignored);
        de_doc_each_file(d->files[x->file], false, rehash_one, &r, &ignored);
        x = &d->e[i];
    }
    return x->body;
}

static uint32_t dd_add(al_dedup *d, uint64_t body, uint32_t file, const de_origin *o)
{
    if (d->n == d->cap) {
        d->cap = d->cap ? d->cap * 2 : 256;
        d->e = de_xrealloc(d->e, d->cap * sizeof *d->e);
    }
    dd_ent *x = &d->e[d->n];
    x->body = body;
    x->file = file;
    x->doc = o ? o->doc : 0;
    x->item = o ? o->item : 0;
    if (file != UINT32_MAX)
        de_map_put(&d->at, at_key(file, x->doc, x->item), d->n + 1);
    return d->n++;
}

static void push(al_input_ref **v, uint32_t *n, uint32_t *cap, al_input_ref r)
{
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 16;
        *v = de_xrealloc(*v, *cap * sizeof **v);
    }
    (*v)[(*n)++] = r;
}

static const char *jstr(json_t *o, const char *k)
{
    json_t *v = o ? json_object_get(o, k) : NULL;
    return json_is_string(v) ? json_string_value(v) : NULL;
}

/* The identity of kind, namespace and name, hashed part by part: names are
 * not bounded here (the checker only warns of a long one), so no fixed
 * buffer may hold them. */
static uint64_t key_hash(const char *kind, const char *ns, const char *name)
{
    const char *parts[] = {kind, ns ? ns : "", name};
    uint64_t h = 0;
    for (int i = 0; i < 3; i++)
        h = de_hash_u64(h ^ de_hash_bytes(parts[i], strlen(parts[i])));
    return h;
}

static de_rc on_object(void *vctx, json_t *obj, const de_origin *o, de_err *e)
{
    lctx *c = vctx;
    al_input *in = c->in;
    de_interner *it = dg_intern(c->g);
    const char *kind = jstr(obj, "kind");
    json_t *meta = json_object_get(obj, "metadata");
    const char *name = jstr(meta, "name"), *ns = jstr(meta, "namespace");
    if (kind && name) {
        uint64_t h = key_hash(kind, ns, name), v;
        if (!in->dedup) {
            in->dedup = de_xcalloc(1, sizeof *in->dedup);
            de_map_init(&in->dedup->at);
        }
        al_dedup *dd = in->dedup;
        uint32_t file = c->rereadable ? dd_file(dd, o) : UINT32_MAX;
        /* the first object of a name is hashed only if it cannot be read again */
        uint64_t body = 0;
        if (de_map_get(&in->seen, h, &v)) {
            body = body_hash(obj);
            if (dd_body(dd, (uint32_t)v - 1) == body)
                return DE_OK;
            char where[512];
            de_origin_format(o, where, sizeof where);
            if (!in->keep_duplicates)
                return de_errf(e, DE_EINVAL, "%s: %s \"%s%s%s\" is defined twice with different content",
                               where, kind, ns ? ns : "", ns ? "/" : "", name);
            /* keep both, as a list handed to the allocator would: the second
             * one gets a distinct name (sorted after the first) */
            size_t nl = strlen(name) + 16;
            char *nn = de_xmalloc(nl);
            for (uint32_t k = 2;; k++) {
                snprintf(nn, nl, "%s~%u", name, k);
                h = key_hash(kind, ns, nn);
                if (!de_map_get(&in->seen, h, &v))
                    break;
            }
            if (in->warn) {
                de_err w;
                de_err_clear(&w);
                de_errf(&w, DE_EINVAL, "%s: %s \"%s%s%s\" is defined twice with different content; the second copy is kept as \"%s\"",
                        where, kind, ns ? ns : "", ns ? "/" : "", name, nn);
                in->warn(in->warn_ctx, &w);
            }
            json_object_set_new(meta, "name", json_string(nn));
            free(nn);
            name = jstr(meta, "name");
        }
        if (!body && file == UINT32_MAX)
            body = body_hash(obj);
        de_map_put(&in->seen, h, dd_add(dd, body, file, o) + 1);
    }
    dg_kind k = DG_KIND_NONE;
    if (in->checker) {
        de_err w;
        de_err_clear(&w);
        if (dg_check(in->checker, obj, o, &k, &w) != DE_OK && in->warn)
            in->warn(in->warn_ctx, &w);
        /* the checker knows the Namespaces read so far, so that adminAccess
         * in a namespace without the admin label is reported as the API
         * server would refuse it (the namespace exists before its claims) */
        else if (k == DG_KIND_NAMESPACE)
            dg_apply(in->checker, obj, o, NULL, &w);
    }
    if (kind && !strcmp(kind, "PodGroup")) {
        /* scheduling.k8s.io PodGroups: read by al_podgroup.c, not modelled */
        if (!in->podgroups)
            in->podgroups = json_object();
        if (!ns)
            json_object_set_new(meta, "namespace", json_string("default"));
        al_podgroups_put(in->podgroups, obj);
        return DE_OK;
    }
    DE_TRY(dg_apply(c->g, obj, o, &k, e));
    /* namespaced objects without a namespace live in "default" */
    al_input_ref r = {de_intern_cstr(it, ns ? ns : "default"), de_intern_cstr(it, name ? name : "")};
    if (k == DG_KIND_RESOURCE_CLAIM) {
        json_t *st = json_object_get(obj, "status");
        json_t *al = st ? json_object_get(st, "allocation") : NULL;
        if (!al || json_is_null(al))
            push(&in->pending, &in->npending, &in->cappending, r);
    } else if (k == DG_KIND_POD) {
        push(&in->pods, &in->npods, &in->cappods, r);
    }
    return DE_OK;
}

void al_input_init(al_input *in)
{
    memset(in, 0, sizeof *in);
    de_map_init(&in->seen);
}

/* ResourceSlices and Nodes of a JSON List snapshot decoded by the graph's
 * fast path (dg_list_each): valid by construction, so the validating
 * checker has nothing to say about them; a name seen before goes the
 * ordinary way, which compares the copies.  (Neither is namespaced.) */
static uint64_t fast_key(lctx *c, dg_kind kind, uint32_t name)
{
    return key_hash(dg_kind_name(kind), NULL, de_intern_str(dg_intern(c->g), name));
}

static int fast_item(void *vctx, dg_kind kind, uint32_t name, const de_origin *o)
{
    lctx *c = vctx;
    uint64_t v;
    if (de_map_get(&c->in->seen, fast_key(c, kind, name), &v))
        return -1;
    if (!c->in->dedup) {
        c->in->dedup = de_xcalloc(1, sizeof *c->in->dedup);
        de_map_init(&c->in->dedup->at);
    }
    /* its content is hashed from the file if the name comes again */
    return dd_file(c->in->dedup, o) == UINT32_MAX ? -1 : 1;
}

static void fast_committed(void *vctx, dg_kind kind, uint32_t name, const de_origin *o)
{
    lctx *c = vctx;
    al_dedup *dd = c->in->dedup;
    de_map_put(&c->in->seen, fast_key(c, kind, name), dd_add(dd, 0, dd_file(dd, o), o) + 1);
}

static de_rc load_file(lctx *c, const char *file, bool streams, de_err *e)
{
    static const dg_list_fns fns = {fast_item, fast_committed, on_object};
    bool handled = false;
    de_rc rc = dg_list_each(c->g, file, &fns, c, &handled, e);
    if (handled)
        return rc;
    return de_doc_each_file(file, streams, on_object, c, e);
}

de_rc al_input_load(dg_graph *g, al_input *in, const char *path, de_err *e)
{
    lctx c = {g, in, strcmp(path, "-") != 0};
    if (!c.rereadable)
        return de_doc_each(path, on_object, &c, e);
    char **files;
    size_t n;
    DE_TRY(de_doc_list_files(path, &files, &n, e));
    /* a path the user named may be a stream; what a walk found may not */
    bool named = n == 1 && !strcmp(files[0], path);
    de_rc rc = DE_OK;
    for (size_t i = 0; i < n && rc == DE_OK; i++)
        rc = load_file(&c, files[i], named, e);
    for (size_t i = 0; i < n; i++)
        free(files[i]);
    free(files);
    return rc;
}

de_rc al_input_load_text(dg_graph *g, al_input *in, const char *name, const char *text, size_t len,
                         de_err *e)
{
    lctx c = {g, in, false};
    return de_doc_each_text(name, text, len, on_object, &c, e);
}

de_rc al_input_add(dg_graph *g, al_input *in, json_t *obj, const de_origin *o, de_err *e)
{
    lctx c = {g, in, false};
    return on_object(&c, obj, o, e);
}

void al_input_free(al_input *in)
{
    free(in->pending);
    free(in->pods);
    json_decref(in->podgroups);
    de_map_destroy(&in->seen);
    if (in->dedup) {
        for (uint32_t i = 0; i < in->dedup->nfiles; i++)
            free(in->dedup->files[i]);
        free(in->dedup->files);
        free(in->dedup->rehashed);
        free(in->dedup->e);
        de_map_destroy(&in->dedup->at);
        free(in->dedup);
    }
    memset(in, 0, sizeof *in);
}

uint32_t al_input_claim(const dg_graph *g, const al_input *in, uint32_t i)
{
    return dg_claim_find(g, in->pending[i].ns, in->pending[i].name);
}

uint32_t al_input_pod(const dg_graph *g, const al_input *in, uint32_t i)
{
    return dg_pod_find(g, in->pods[i].ns, in->pods[i].name);
}
