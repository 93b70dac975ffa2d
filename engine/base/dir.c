/*
 * dir.c - directory walks, opening and reading user paths (dir.h).
 */
#include "dir.h"

#include "map.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

bool de_is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

bool de_is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

bool de_ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

char *de_path_join(const char *a, const char *b)
{
    size_t n = strlen(a) + strlen(b) + 2;
    char *s = de_xmalloc(n);
    bool slash = *a && a[strlen(a) - 1] == '/';
    snprintf(s, n, "%s%s%s", a, slash ? "" : "/", b);
    return s;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

bool de_dir_names(const char *dir, char ***names, size_t *n)
{
    *names = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d)
        return false;
    struct dirent *de;
    size_t cap = 0;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            *names = de_xrealloc(*names, cap * sizeof **names);
        }
        (*names)[(*n)++] = de_xstrdup(de->d_name);
    }
    closedir(d);
    if (*n)
        qsort(*names, *n, sizeof **names, cmp_str);
    return true;
}

void de_names_free(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/* ---- notices ------------------------------------------------------------- */

static de_notice_fn notice_fn;
static void *notice_ctx;

void de_notice_sink(de_notice_fn fn, void *ctx)
{
    notice_fn = fn;
    notice_ctx = ctx;
}

static void vnotice(de_notice_fn fn, void *ctx, const char *path, const char *fmt, va_list ap)
{
    if (!fn)
        return;
    char what[512];
    vsnprintf(what, sizeof what, fmt, ap);
    fn(ctx, path, what);
}

void de_notice(const char *path, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vnotice(notice_fn, notice_ctx, path, fmt, ap);
    va_end(ap);
}

const char *de_file_type(mode_t mode)
{
    if (S_ISREG(mode))
        return "a regular file";
    if (S_ISDIR(mode))
        return "a directory";
    if (S_ISFIFO(mode))
        return "a FIFO";
    if (S_ISSOCK(mode))
        return "a socket";
    if (S_ISCHR(mode))
        return "a character device";
    if (S_ISBLK(mode))
        return "a block device";
    if (S_ISLNK(mode))
        return "a symlink";
    return "of an unknown type";
}

/* ---- walking ------------------------------------------------------------- */

typedef struct strv {
    char **v;
    size_t n, cap;
} strv;

static void strv_push(strv *s, char *str)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 16;
        s->v = de_xrealloc(s->v, s->cap * sizeof *s->v);
    }
    s->v[s->n++] = str;
}

static void strv_free(strv *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i]);
    free(s->v);
    s->v = NULL;
    s->n = s->cap = 0;
}

typedef struct walker {
    const de_walk_opts *o;
    strv files;
    strv dirs;   /* every directory entered, in order (the visited set's paths) */
    dev_t *dev;  /* parallel to dirs */
    ino_t *ino;
    de_map seen; /* hash of (dev, ino) -> index in dirs + 1; collisions probe on */
    de_err *e;
} walker;

static uint64_t dirkey(dev_t d, ino_t i)
{
    return de_hash_u64((uint64_t)d * 0x9e3779b97f4a7c15ULL ^ (uint64_t)i);
}

/* The path under which (d, i) was entered, or NULL. */
static const char *seen_as(const walker *w, dev_t d, ino_t i)
{
    uint64_t k = dirkey(d, i), v;
    while (de_map_get(&w->seen, k, &v)) {
        if (w->dev[v - 1] == d && w->ino[v - 1] == i)
            return w->dirs.v[v - 1];
        k++;
    }
    return NULL;
}

static void enter(walker *w, const char *path, dev_t d, ino_t i)
{
    size_t n = w->dirs.n;
    if (n == w->dirs.cap) {
        size_t cap = n ? n * 2 : 16;
        w->dev = de_xrealloc(w->dev, cap * sizeof *w->dev);
        w->ino = de_xrealloc(w->ino, cap * sizeof *w->ino);
    }
    strv_push(&w->dirs, de_xstrdup(path));
    w->dev[n] = d;
    w->ino[n] = i;
    uint64_t k = dirkey(d, i), v;
    while (de_map_get(&w->seen, k, &v))
        k++;
    de_map_put(&w->seen, k, n + 1);
}

static void wnotice(const walker *w, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void wnotice(const walker *w, const char *path, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (w->o->notice)
        vnotice(w->o->notice, w->o->notice_ctx, path, fmt, ap);
    else
        vnotice(notice_fn, notice_ctx, path, fmt, ap);
    va_end(ap);
}

static bool wanted(const walker *w, const char *name)
{
    return !w->o->want || w->o->want(name);
}

static de_rc walk_dir(walker *w, const char *dir, int depth)
{
    DIR *d = opendir(dir);
    if (!d) {
        if (depth > 0 && (errno == ENOENT || errno == ENOTDIR)) {
            wnotice(w, dir, "vanished while it was read, skipped");
            return DE_OK;
        }
        return de_errf(w->e, errno == ENOENT ? DE_ENOTFOUND : DE_EIO, "%s: cannot read directory: %s",
                       dir, strerror(errno));
    }
    strv names = {0};
    struct dirent *ent;
    while ((ent = readdir(d)) != NULL) {
        /* Hidden entries are skipped: a ConfigMap volume holds every file
         * three times (x.yaml -> ..data/x.yaml -> ..2024_01_01_.../x.yaml),
         * and editors leave .swp files. */
        if (ent->d_name[0] != '.')
            strv_push(&names, de_xstrdup(ent->d_name));
    }
    closedir(d);
    if (names.n)
        qsort(names.v, names.n, sizeof *names.v, cmp_str);
    de_rc rc = DE_OK;
    for (size_t i = 0; i < names.n && rc == DE_OK; i++) {
        const char *nm = names.v[i];
        char *full = de_path_join(dir, nm);
        struct stat st, lst;
        if (stat(full, &st) != 0) {
            int err = errno;
            if (wanted(w, nm)) {
                if (err == ELOOP)
                    wnotice(w, full, "symlink loop, skipped");
                else if (lstat(full, &lst) == 0 && S_ISLNK(lst.st_mode) && err == ENOENT)
                    wnotice(w, full, "dangling symlink (its target does not exist), skipped");
                else if (err != ENOENT)
                    wnotice(w, full, "cannot be read (%s), skipped", strerror(err));
            }
        } else if (S_ISDIR(st.st_mode)) {
            const char *as = seen_as(w, st.st_dev, st.st_ino);
            if (as) {
                bool link = lstat(full, &lst) == 0 && S_ISLNK(lst.st_mode);
                wnotice(w, full, "%s a directory already walked as %s, skipped",
                          link ? "symlink to" : "is", as);
            } else if (w->o->enter && !w->o->enter(nm)) {
                /* not one of ours */
            } else if (depth + 1 > w->o->max_depth) {
                if (w->o->max_depth > 0)
                    wnotice(w, full, "deeper than %d levels, not entered", w->o->max_depth);
            } else {
                enter(w, full, st.st_dev, st.st_ino);
                rc = walk_dir(w, full, depth + 1);
            }
        } else if (!wanted(w, nm)) {
            /* not one of ours */
        } else if (S_ISREG(st.st_mode)) {
            if (w->files.n >= DE_WALK_MAX_ENTRIES)
                rc = de_errf(w->e, DE_ENOMEM, "%s: more than %u files", dir, DE_WALK_MAX_ENTRIES);
            else {
                strv_push(&w->files, full);
                full = NULL;
            }
        } else {
            wnotice(w, full, "not a regular file (%s), not read", de_file_type(st.st_mode));
        }
        free(full);
    }
    strv_free(&names);
    return rc;
}

de_rc de_walk(const char *root, const de_walk_opts *o, de_walk_out *out, de_err *e)
{
    memset(out, 0, sizeof *out);
    struct stat st;
    if (stat(root, &st) != 0)
        return de_errf(e, errno == ENOENT ? DE_ENOTFOUND : DE_EIO, "%s: %s", root, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return de_errf(e, DE_EINVAL, "%s: not a directory", root);
    walker w = {.o = o, .e = e};
    de_map_init(&w.seen);
    enter(&w, root, st.st_dev, st.st_ino);
    de_rc rc = walk_dir(&w, root, 0);
    de_map_destroy(&w.seen);
    free(w.dev);
    free(w.ino);
    if (rc != DE_OK) {
        strv_free(&w.files);
        strv_free(&w.dirs);
        return rc;
    }
    if (w.files.n)
        qsort(w.files.v, w.files.n, sizeof *w.files.v, cmp_str);
    out->files = w.files.v;
    out->nfiles = w.files.n;
    if (o->keep_dirs) {
        out->dirs = w.dirs.v;
        out->ndirs = w.dirs.n;
    } else {
        strv_free(&w.dirs);
    }
    return DE_OK;
}

void de_walk_free(de_walk_out *out)
{
    de_names_free(out->files, out->nfiles);
    de_names_free(out->dirs, out->ndirs);
    memset(out, 0, sizeof *out);
}

/* ---- opening and reading -------------------------------------------------- */

static bool usable(mode_t m, bool streams)
{
    return S_ISREG(m) || (streams && (S_ISFIFO(m) || S_ISCHR(m)));
}

de_rc de_open_input(const char *path, bool streams, int *fd, struct stat *st, de_err *e)
{
    struct stat pre, post;
    *fd = -1;
    /* the type first, so that a socket or a FIFO is named as such (open(2)
     * cannot open a socket at all) */
    if (stat(path, &pre) != 0) {
        int err = errno;
        if (err == ENOENT) {
            struct stat lst;
            if (lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode))
                return de_errf(e, DE_ENOTFOUND, "%s: dangling symlink (its target does not exist)", path);
            return de_errf(e, DE_ENOTFOUND, "%s: %s", path, strerror(err));
        }
        return de_errf(e, DE_EIO, "%s: %s", path, err == ELOOP ? "symlink loop" : strerror(err));
    }
    if (!usable(pre.st_mode, streams))
        return de_errf(e, DE_EINVAL, "%s: not a regular file (%s)", path, de_file_type(pre.st_mode));
    int f = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (f < 0)
        return de_errf(e, errno == ENOENT ? DE_ENOTFOUND : DE_EIO, "%s: %s", path, strerror(errno));
    /* the path may have been replaced between the stat and the open */
    if (fstat(f, &post) != 0 || !usable(post.st_mode, streams)) {
        close(f);
        return de_errf(e, DE_EINVAL, "%s: not a regular file (%s)", path, de_file_type(post.st_mode));
    }
    if (!S_ISREG(post.st_mode)) {
        int fl = fcntl(f, F_GETFL);
        if (fl >= 0)
            fcntl(f, F_SETFL, fl & ~O_NONBLOCK);
    }
    *fd = f;
    if (st)
        *st = post;
    return DE_OK;
}

/* UTF-16 text (with its byte order mark) is full of NUL bytes. */
static bool utf16_bom(const char *p, size_t n)
{
    return n >= 2 && (((unsigned char)p[0] == 0xff && (unsigned char)p[1] == 0xfe) ||
                      ((unsigned char)p[0] == 0xfe && (unsigned char)p[1] == 0xff));
}

#define READ_CHUNK ((size_t)1 << 20)

de_rc de_read_input(const char *path, const de_read_opts *o, char **out, size_t *len, struct stat *st_out,
                    de_err *e)
{
    bool is_stdin = !strcmp(path, "-");
    const char *name = is_stdin ? "<stdin>" : path;
    int fd = 0;
    struct stat st;
    if (is_stdin) {
        if (fstat(0, &st) != 0)
            return de_errf(e, DE_EIO, "<stdin>: %s", strerror(errno));
    } else {
        DE_TRY(de_open_input(path, o->streams, &fd, &st, e));
    }
    size_t max = o->max, cap;
    bool regular = S_ISREG(st.st_mode);
    if (regular) {
        if ((uint64_t)st.st_size > max) {
            if (!is_stdin)
                close(fd);
            return de_errf(e, DE_EINVAL, "%s: larger than the %zu-byte limit (%lld bytes)", name, max,
                           (long long)st.st_size);
        }
        cap = (size_t)st.st_size + 1; /* +1: see the end of the file in one read */
    } else {
        if (max > DE_STREAM_MAX)
            max = DE_STREAM_MAX;
        cap = (size_t)1 << 16;
    }
    if (cap > max + 1)
        cap = max + 1;
    char *p = de_xmalloc(cap + 1);
    size_t n = 0;
    bool text = !o->binary_ok;
    de_rc rc = DE_OK;
    for (;;) {
        if (n == cap) {
            if (n > max) {
                rc = de_errf(e, DE_EINVAL, "%s: larger than the %zu-byte limit%s", name, max,
                             regular ? " (it grew while read)" : " for a stream");
                break;
            }
            cap = cap * 2 > max + 1 ? max + 1 : cap * 2;
            p = de_xrealloc(p, cap + 1);
        }
        size_t want = cap - n > READ_CHUNK ? READ_CHUNK : cap - n;
        ssize_t r = read(fd, p + n, want);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            rc = de_errf(e, DE_EIO, "%s: read error: %s", name, strerror(errno));
            break;
        }
        if (r == 0)
            break;
        if (text && n < 2 && n + (size_t)r >= 2 && utf16_bom(p, n + (size_t)r))
            text = false;
        if (text) {
            const char *z = memchr(p + n, 0, (size_t)r);
            if (z) {
                rc = de_errf(e, DE_EINVAL, "%s: a NUL byte at offset %zu: binary data, not text", name,
                             (size_t)(z - p));
                break;
            }
        }
        n += (size_t)r;
        if (n > max) {
            rc = de_errf(e, DE_EINVAL, "%s: larger than the %zu-byte limit%s", name, max,
                         regular ? " (it grew while read)" : " for a stream");
            break;
        }
    }
    if (!is_stdin)
        close(fd);
    if (rc != DE_OK) {
        free(p);
        return rc;
    }
    p[n] = 0;
    *out = p;
    *len = n;
    if (st_out)
        *st_out = st;
    return DE_OK;
}
