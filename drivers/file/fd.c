/*
 * fd.c - see fd.h.  Scanning and diffing here; the graph adapter is in
 * fd_graph.c.
 */
#include "fd.h"

#include "../../engine/base/dir.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define WATCH_MASK                                                                                 \
    (IN_CREATE | IN_DELETE | IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_ATTRIB | \
     IN_DELETE_SELF | IN_MOVE_SELF)
#define MAX_DEPTH 32

typedef struct fsig {
    bool valid;
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
} fsig;

typedef struct fobj {
    char *key;       /* group \x1f kind \x1f ns \x1f name */
    uint64_t hash;
    json_t *obj;
    de_origin origin;
    uint32_t file;   /* index of its file in the scan that produced it */
    uint8_t op;      /* fd_op, scratch for the diff */
    bool shadowed;   /* an earlier file defines the same object: not current */
} fobj;

typedef struct ffile {
    char *path;
    fsig sig;
    struct timespec taken; /* when sig was read (CLOCK_REALTIME) */
    uint64_t text_hash;    /* of the bytes last read (parsed or not) */
    bool failed;           /* the last read failed (objects are the last good ones) */
    fobj *objs;
    size_t nobjs;
    bool fresh; /* read during the current scan */
} ffile;

struct fd_watch {
    char **roots;
    size_t nroots;
    fd_opts o;
    ffile *files;
    size_t nfiles;
    fobj **index; /* sorted by key */
    size_t nindex;
    int ifd;
    bool scanned;
};

/* ---- small helpers ---------------------------------------------------- */

static bool has_manifest_ext(const char *name)
{
    const char *dot = strrchr(name, '.');
    return dot && (!strcmp(dot, ".yaml") || !strcmp(dot, ".yml") || !strcmp(dot, ".json"));
}

static void sig_of(const struct stat *st, fsig *s)
{
    s->valid = true;
    s->dev = st->st_dev;
    s->ino = st->st_ino;
    s->size = st->st_size;
    s->mtime = st->st_mtim;
}

static bool sig_eq(const fsig *a, const fsig *b)
{
    return a->valid && b->valid && a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
           a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec;
}

/* A file modified less than RACY_NS before its signature was taken may be
 * modified again within the file system's timestamp granularity without
 * its signature changing (git's "racily clean" problem): such a file is
 * re-read on the next scan.  Re-reading never produces spurious events,
 * since events come from object hashes. */
#define RACY_NS 2000000000LL

static bool racy(const ffile *f)
{
    int64_t m = (int64_t)f->sig.mtime.tv_sec * 1000000000LL + f->sig.mtime.tv_nsec;
    int64_t t = (int64_t)f->taken.tv_sec * 1000000000LL + f->taken.tv_nsec;
    return m + RACY_NS > t;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void free_file(ffile *f)
{
    for (size_t i = 0; i < f->nobjs; i++) {
        free(f->objs[i].key);
        json_decref(f->objs[i].obj);
    }
    free(f->objs);
    free(f->path);
    f->objs = NULL;
    f->nobjs = 0;
    f->path = NULL;
}

/* ---- listing ------------------------------------------------------------- */

typedef struct plist {
    char **v;
    size_t n, cap;
} plist;

static de_rc plist_add(plist *l, const char *p, de_err *e)
{
    if (l->n >= FD_MAX_FILES)
        return de_errf(e, DE_ENOMEM, "more than %u manifest files under the watched paths", FD_MAX_FILES);
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 32;
        l->v = de_xrealloc(l->v, l->cap * sizeof *l->v);
    }
    l->v[l->n++] = de_xstrdup(p);
    return DE_OK;
}

static void plist_free(plist *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
}

/* Walk a directory: manifest files into `files`, directories into `dirs`
 * (for watches).  The shared walker (de_walk) skips hidden entries - that
 * is what keeps the ConfigMap's ..data and ..<timestamp> directories from
 * being read twice - enters each directory once (symlink loops), and
 * reports FIFOs, sockets and dangling links named *.yaml instead of
 * listing them. */
static de_rc walk(const char *dir, plist *files, plist *dirs, de_err *e)
{
    de_walk_opts o = {.want = has_manifest_ext, .max_depth = MAX_DEPTH, .keep_dirs = dirs != NULL};
    de_walk_out out;
    de_rc rc = de_walk(dir, &o, &out, e);
    if (rc == DE_ENOTFOUND)
        return DE_OK; /* vanished while we looked */
    if (rc != DE_OK)
        return rc;
    for (size_t i = 0; i < out.nfiles && rc == DE_OK; i++)
        rc = plist_add(files, out.files[i], e);
    for (size_t i = 0; i < out.ndirs && rc == DE_OK; i++)
        rc = plist_add(dirs, out.dirs[i], e);
    de_walk_free(&out);
    return rc;
}

/* The directory a path is in: "/" for "/x", "." for a bare name. */
static void parent_of(const char *path, char *out, size_t cap)
{
    snprintf(out, cap, "%s", path);
    char *slash = strrchr(out, '/');
    if (slash && slash != out)
        *slash = 0;
    else
        snprintf(out, cap, "%s", slash ? "/" : ".");
}

static de_rc list_all(fd_watch *w, plist *files, plist *dirs, de_err *e)
{
    for (size_t r = 0; r < w->nroots; r++) {
        struct stat st;
        if (stat(w->roots[r], &st) != 0) {
            if (dirs) {
                /* watch the parent so that the root's creation is noticed */
                char parent[PATH_MAX];
                parent_of(w->roots[r], parent, sizeof parent);
                DE_TRY(plist_add(dirs, parent, e));
            }
            continue;
        }
        if (S_ISDIR(st.st_mode)) {
            DE_TRY(walk(w->roots[r], files, dirs, e));
        } else {
            DE_TRY(plist_add(files, w->roots[r], e));
            if (dirs) {
                char parent[PATH_MAX];
                parent_of(w->roots[r], parent, sizeof parent);
                DE_TRY(plist_add(dirs, parent, e));
            }
        }
    }
    if (files->n > 1) {
        qsort(files->v, files->n, sizeof *files->v, cmp_str);
        size_t k = 1;
        for (size_t i = 1; i < files->n; i++) {
            if (!strcmp(files->v[i], files->v[k - 1]))
                free(files->v[i]);
            else
                files->v[k++] = files->v[i];
        }
        files->n = k;
    }
    return DE_OK;
}

/* ---- reading one file ------------------------------------------------------ */

typedef struct readctx {
    ffile *f;
    size_t cap;
    fd_event_fn fn;
    void *ctx;
} readctx;

static const char *str_at(json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

static de_rc collect_obj(void *ctx, json_t *obj, const de_origin *o, de_err *e)
{
    readctx *rc = ctx;
    ffile *f = rc->f;
    json_t *md = json_object_get(obj, "metadata");
    const char *api = str_at(obj, "apiVersion"), *kind = str_at(obj, "kind");
    const char *ns = str_at(md, "namespace"), *name = str_at(md, "name");
    if (!*kind || !*name) {
        de_err err;
        char where[DE_ERR_FIELD_MAX + 64];
        de_origin_format(o, where, sizeof where);
        de_errf(&err, DE_EINVAL, "%s: object without %s cannot be tracked", where,
                *kind ? "metadata.name" : "kind");
        fd_event ev = {.op = FD_ERROR, .api_version = api, .kind = kind, .ns = ns, .name = name,
                       .obj = obj, .origin = o, .err = &err};
        rc->fn(rc->ctx, &ev);
        return DE_OK;
    }
    const char *slash = strchr(api, '/');
    size_t glen = slash ? (size_t)(slash - api) : 0;
    size_t klen = glen + strlen(kind) + strlen(ns) + strlen(name) + 4;
    char *key = de_xmalloc(klen);
    snprintf(key, klen, "%.*s\x1f%s\x1f%s\x1f%s", (int)glen, api, kind, ns, name);
    char *text = json_dumps(obj, JSON_COMPACT | JSON_SORT_KEYS);
    if (!text) {
        free(key);
        return de_errf(e, DE_ENOMEM, "cannot serialize an object of %s", f->path);
    }
    uint64_t h = de_hash_bytes(text, strlen(text));
    free(text);
    if (f->nobjs == rc->cap) {
        rc->cap = rc->cap ? rc->cap * 2 : 8;
        f->objs = de_xrealloc(f->objs, rc->cap * sizeof *f->objs);
    }
    fobj *fo = &f->objs[f->nobjs++];
    fo->key = key;
    fo->hash = h;
    fo->obj = json_incref(obj);
    fo->origin = *o;
    fo->origin.file = f->path;
    fo->file = 0;
    return DE_OK;
}

/* Regular files only (a named root that is a pipe cannot be watched), read
 * with the shared reader: never blocks on a FIFO, refuses binary data. */
static de_rc read_text(ffile *f, char **out, size_t *outlen, de_err *e)
{
    struct stat st;
    de_read_opts o = {.max = FD_MAX_FILE};
    DE_TRY(de_read_input(f->path, &o, out, outlen, &st, e));
    sig_of(&st, &f->sig);
    clock_gettime(CLOCK_REALTIME, &f->taken);
    return DE_OK;
}

static void drop_objs(ffile *f)
{
    for (size_t k = 0; k < f->nobjs; k++) {
        free(f->objs[k].key);
        json_decref(f->objs[k].obj);
    }
    free(f->objs);
    f->objs = NULL;
    f->nobjs = 0;
}

/* Take over the objects of `old` (the last good ones). */
static void adopt(ffile *f, ffile *old)
{
    drop_objs(f);
    f->objs = old->objs;
    f->nobjs = old->nobjs;
    for (size_t k = 0; k < f->nobjs; k++)
        f->objs[k].origin.file = f->path;
    old->objs = NULL;
    old->nobjs = 0;
}

/* ---- diff -------------------------------------------------------------------- */

static int cmp_key(const void *a, const void *b)
{
    const fobj *x = *(fobj *const *)a, *y = *(fobj *const *)b;
    int c = strcmp(x->key, y->key);
    if (c)
        return c;
    if (x->file != y->file)
        return x->file < y->file ? -1 : 1;
    if (x->origin.doc != y->origin.doc)
        return x->origin.doc < y->origin.doc ? -1 : 1;
    return x->origin.item < y->origin.item ? -1 : x->origin.item > y->origin.item;
}

static int cmp_pos(const void *a, const void *b)
{
    const fobj *x = *(fobj *const *)a, *y = *(fobj *const *)b;
    if (x->file != y->file)
        return x->file < y->file ? -1 : 1;
    if (x->origin.doc != y->origin.doc)
        return x->origin.doc < y->origin.doc ? -1 : 1;
    return x->origin.item < y->origin.item ? -1 : x->origin.item > y->origin.item;
}

static void event_of(fd_event *ev, fd_op op, const fobj *o)
{
    json_t *md = json_object_get(o->obj, "metadata");
    ev->op = op;
    ev->api_version = str_at(o->obj, "apiVersion");
    ev->kind = str_at(o->obj, "kind");
    ev->ns = str_at(md, "namespace");
    ev->name = str_at(md, "name");
    ev->obj = o->obj;
    ev->origin = &o->origin;
    ev->err = NULL;
}

static int add_watches(fd_watch *w, de_err *e);

de_rc fd_scan(fd_watch *w, fd_event_fn fn, void *ctx, uint32_t *nevents, de_err *e)
{
    plist files = {0};
    uint32_t count = 0;
    de_rc rc = list_all(w, &files, NULL, e);
    if (rc != DE_OK) {
        plist_free(&files);
        return rc;
    }
    ffile *nf = de_xcalloc(files.n ? files.n : 1, sizeof *nf);
    size_t oi = 0;
    for (size_t i = 0; i < files.n; i++) {
        ffile *f = &nf[i];
        /* old files are sorted by path too: advance the cursor */
        while (oi < w->nfiles && strcmp(w->files[oi].path, files.v[i]) < 0)
            oi++;
        ffile *old = oi < w->nfiles && !strcmp(w->files[oi].path, files.v[i]) ? &w->files[oi] : NULL;
        struct stat st;
        fsig cur = {0};
        if (stat(files.v[i], &st) == 0)
            sig_of(&st, &cur);
        if (old && sig_eq(&old->sig, &cur) && !racy(old)) {
            *f = *old; /* unchanged: take it over */
            f->fresh = false;
            memset(old, 0, sizeof *old);
            oi++; /* its path is gone with it: the cursor must not compare it again */
            free(files.v[i]);
            files.v[i] = NULL;
            continue;
        }
        f->path = files.v[i];
        files.v[i] = NULL;
        f->fresh = true;
        f->sig = cur;
        clock_gettime(CLOCK_REALTIME, &f->taken);
        de_err ferr;
        de_err_clear(&ferr);
        char *text = NULL;
        size_t len = 0;
        de_rc r = read_text(f, &text, &len, &ferr);
        if (r == DE_OK) {
            f->text_hash = de_hash_bytes(text, len);
            if (old && old->text_hash == f->text_hash) {
                /* same bytes (a touch, or a racy re-read): same state, no events */
                f->failed = old->failed;
                f->fresh = false;
                adopt(f, old);
                free(text);
                continue;
            }
            readctx rc2 = {f, 0, fn, ctx};
            r = de_doc_each_text(f->path, text, len, collect_obj, &rc2, &ferr);
            free(text);
        }
        if (r == DE_OK) {
            f->failed = false;
            continue;
        }
        /* keep the last good objects of this file; report once per change */
        drop_objs(f);
        if (old)
            adopt(f, old);
        f->failed = true;
        if (r == DE_ENOTFOUND && !old)
            continue; /* gone between listing and reading */
        fd_event ev = {.op = FD_ERROR, .api_version = "", .kind = "", .ns = "", .name = "", .err = &ferr};
        de_origin o = {f->path, 0, -1};
        ev.origin = &o;
        fn(ctx, &ev);
    }
    size_t nnew = files.n;
    plist_free(&files);

    /* the new index */
    size_t total = 0;
    for (size_t i = 0; i < nnew; i++) {
        for (size_t k = 0; k < nf[i].nobjs; k++)
            nf[i].objs[k].file = (uint32_t)i;
        total += nf[i].nobjs;
    }
    fobj **idx = de_xmalloc((total ? total : 1) * sizeof *idx);
    size_t n = 0;
    for (size_t i = 0; i < nnew; i++)
        for (size_t k = 0; k < nf[i].nobjs; k++)
            idx[n++] = &nf[i].objs[k];
    if (n > 1)
        qsort(idx, n, sizeof *idx, cmp_key);
    /* duplicates: the first in (file, document) order wins */
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        idx[i]->shadowed = m > 0 && !strcmp(idx[i]->key, idx[m - 1]->key);
        if (idx[i]->shadowed) {
            if (nf[idx[i]->file].fresh || nf[idx[m - 1]->file].fresh) {
                de_err err;
                char where[DE_ERR_FIELD_MAX + 64], first[DE_ERR_FIELD_MAX + 64];
                de_origin_format(&idx[i]->origin, where, sizeof where);
                de_origin_format(&idx[m - 1]->origin, first, sizeof first);
                fd_event ev;
                event_of(&ev, FD_ERROR, idx[i]);
                de_errf(&err, DE_EINVAL, "%s: %s %s is also defined in %s; ignored", where, ev.kind,
                        ev.name, first);
                ev.err = &err;
                fn(ctx, &ev);
            }
            continue;
        }
        idx[m++] = idx[i];
    }

    /* diff against the previous index */
    fobj **changed = de_xmalloc((m ? m : 1) * sizeof *changed);
    fobj **gone = de_xmalloc((w->nindex ? w->nindex : 1) * sizeof *gone);
    size_t nch = 0, ngone = 0, a = 0, b = 0;
    while (a < w->nindex || b < m) {
        int c = a >= w->nindex ? 1 : b >= m ? -1 : strcmp(w->index[a]->key, idx[b]->key);
        if (c < 0) {
            gone[ngone++] = w->index[a++];
        } else if (c > 0) {
            idx[b]->op = FD_ADD;
            changed[nch++] = idx[b++];
        } else {
            if (w->index[a]->hash != idx[b]->hash) {
                idx[b]->op = FD_UPDATE;
                changed[nch++] = idx[b];
            }
            a++, b++;
        }
    }
    /* additions and updates in (file, document, item) order */
    if (nch > 1)
        qsort(changed, nch, sizeof *changed, cmp_pos);
    for (size_t i = 0; i < nch; i++) {
        fd_event ev;
        event_of(&ev, (fd_op)changed[i]->op, changed[i]);
        fn(ctx, &ev);
        count++;
    }
    for (size_t i = 0; i < ngone; i++) {
        fd_event ev;
        event_of(&ev, FD_DELETE, gone[i]);
        fn(ctx, &ev);
        count++;
    }
    free(changed);
    free(gone);

    /* swap in the new state; old objects die only now (DELETE events used them) */
    for (size_t i = 0; i < w->nfiles; i++)
        free_file(&w->files[i]);
    free(w->files);
    free(w->index);
    w->files = nf;
    w->nfiles = nnew;
    w->index = idx;
    w->nindex = m;
    w->scanned = true;
    if (w->ifd >= 0)
        add_watches(w, NULL);
    if (nevents)
        *nevents = count;
    return DE_OK;
}

/* ---- watching ------------------------------------------------------------------- */

static int add_watches(fd_watch *w, de_err *e)
{
    plist files = {0}, dirs = {0};
    de_err scratch;
    de_rc rc = list_all(w, &files, &dirs, e ? e : &scratch);
    int added = 0;
    for (size_t i = 0; rc == DE_OK && i < dirs.n; i++)
        if (inotify_add_watch(w->ifd, dirs.v[i], WATCH_MASK) >= 0)
            added++;
    plist_free(&files);
    plist_free(&dirs);
    return rc == DE_OK ? added : -1;
}

fd_watch *fd_open(const char *const *paths, size_t npaths, const fd_opts *o, de_err *e)
{
    if (npaths == 0) {
        de_errf(e, DE_EINVAL, "no paths to read");
        return NULL;
    }
    for (size_t i = 0; i < npaths; i++) {
        struct stat st;
        if (stat(paths[i], &st) != 0) {
            de_errf(e, DE_EIO, "%s: %s", paths[i], strerror(errno));
            return NULL;
        }
    }
    fd_watch *w = de_xcalloc(1, sizeof *w);
    w->roots = de_xcalloc(npaths, sizeof *w->roots);
    w->nroots = npaths;
    for (size_t i = 0; i < npaths; i++) {
        /* strip trailing slashes so listing and parents come out clean */
        size_t l = strlen(paths[i]);
        while (l > 1 && paths[i][l - 1] == '/')
            l--;
        w->roots[i] = de_xstrndup(paths[i], l);
    }
    if (o)
        w->o = *o;
    if (!w->o.debounce_ms)
        w->o.debounce_ms = 100;
    if (!w->o.max_delay_ms)
        w->o.max_delay_ms = 1000;
    w->ifd = -1;
    if (w->o.watch) {
        w->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (w->ifd >= 0 && add_watches(w, e) < 0) {
            fd_close(w);
            return NULL;
        }
    }
    return w;
}

void fd_close(fd_watch *w)
{
    if (!w)
        return;
    for (size_t i = 0; i < w->nfiles; i++)
        free_file(&w->files[i]);
    free(w->files);
    free(w->index);
    for (size_t i = 0; i < w->nroots; i++)
        free(w->roots[i]);
    free(w->roots);
    if (w->ifd >= 0)
        close(w->ifd);
    free(w);
}

int fd_fileno(const fd_watch *w) { return w->ifd; }
bool fd_watching(const fd_watch *w) { return w->ifd >= 0; }
uint32_t fd_object_count(const fd_watch *w) { return (uint32_t)w->nindex; }
uint32_t fd_file_count(const fd_watch *w) { return (uint32_t)w->nfiles; }

static void drain(int fd)
{
    char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
    while (read(fd, buf, sizeof buf) > 0) {
    }
}

static uint64_t now_ms(void) { return de_now_ns() / 1000000u; }

de_rc fd_poll(fd_watch *w, int timeout_ms, fd_event_fn fn, void *ctx, uint32_t *nevents, de_err *e)
{
    if (nevents)
        *nevents = 0;
    if (!w->scanned)
        return fd_scan(w, fn, ctx, nevents, e);
    if (w->ifd < 0) {
        /* no inotify: sleep, then compare every file's identity */
        int ms = timeout_ms < 0 ? 1000 : timeout_ms;
        if (ms > 0) {
            struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
            nanosleep(&ts, NULL);
        }
        return fd_scan(w, fn, ctx, nevents, e);
    }
    struct pollfd p = {w->ifd, POLLIN, 0};
    int r = poll(&p, 1, timeout_ms);
    if (r < 0 && errno != EINTR)
        return de_errf(e, DE_EIO, "poll: %s", strerror(errno));
    if (r <= 0)
        return DE_OK;
    drain(w->ifd);
    /* debounce: wait for a quiet period, bounded by max_delay_ms */
    uint64_t deadline = now_ms() + w->o.max_delay_ms;
    for (;;) {
        uint64_t now = now_ms();
        if (now >= deadline)
            break;
        uint64_t left = deadline - now;
        int wait = (int)(left < w->o.debounce_ms ? left : w->o.debounce_ms);
        p.revents = 0;
        r = poll(&p, 1, wait);
        if (r <= 0)
            break;
        drain(w->ifd);
    }
    return fd_scan(w, fn, ctx, nevents, e);
}

/* ---- the current objects ---------------------------------------------------------- */

/* Index of the first root that lists `path` (roots are stripped of
 * trailing slashes; a directory root lists what is below "root/"). */
static size_t root_of(const fd_watch *w, const char *path)
{
    for (size_t r = 0; r < w->nroots; r++) {
        size_t l = strlen(w->roots[r]);
        if (!strncmp(path, w->roots[r], l) && (path[l] == 0 || path[l] == '/' || !strcmp(w->roots[r], "/")))
            return r;
    }
    return w->nroots;
}

typedef struct fileord {
    size_t root;
    const ffile *f;
} fileord;

static int cmp_fileord(const void *a, const void *b)
{
    const fileord *x = a, *y = b;
    if (x->root != y->root)
        return x->root < y->root ? -1 : 1;
    return strcmp(x->f->path, y->f->path);
}

de_rc fd_each(const fd_watch *w, de_doc_cb fn, void *ctx, de_err *e)
{
    fileord *ord = de_xmalloc((w->nfiles ? w->nfiles : 1) * sizeof *ord);
    for (size_t i = 0; i < w->nfiles; i++)
        ord[i] = (fileord){root_of(w, w->files[i].path), &w->files[i]};
    if (w->nfiles > 1)
        qsort(ord, w->nfiles, sizeof *ord, cmp_fileord);
    de_rc rc = DE_OK;
    for (size_t i = 0; rc == DE_OK && i < w->nfiles; i++)
        for (size_t k = 0; rc == DE_OK && k < ord[i].f->nobjs; k++) {
            const fobj *o = &ord[i].f->objs[k];
            if (!o->shadowed)
                rc = fn(ctx, o->obj, &o->origin, e);
        }
    free(ord);
    return rc;
}
