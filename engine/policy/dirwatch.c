/*
 * dirwatch.c - inotify on a policy directory (polgraph.h: pol_dirwatch).
 *
 * Why a watch set kept in step instead of re-armed.  The host used to
 * remove every watch and add them again after each reload; each removal
 * queues an IN_IGNORED event, which the next drain counted as a change,
 * which re-armed again: the directory never went quiet, the debounce never
 * expired, and every reload after the first waited for SIGHUP or the 30 s
 * rescan.  Here a watch is only added for a directory that appears and
 * removed for one that is gone, and IN_IGNORED (the kernel's note that a
 * watch ended, for whatever reason) never counts as a change by itself:
 * a deleted or replaced directory announces itself with IN_DELETE_SELF or
 * IN_MOVE_SELF first.
 *
 * What is watched: the directory, its non-hidden folders (packs; a
 * ConfigMap is flat but git-sync checkouts are not), and its parent, for
 * events about the directory's own name only: a root that is a symlink
 * flipped to a new checkout, or a directory deleted and created again,
 * changes in the parent.  A ConfigMap update is a rename of `..data_tmp`
 * over `..data` inside the directory, after the kubelet has written the
 * new timestamped folder: events in the directory itself.  After any event
 * about the directory's entries the set is brought in step again (a new
 * pack folder gets its watch; a folder a flipped link now points to gets a
 * new one).
 */
#include "../base/dir.h"
#include "polgraph.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#define WATCH_MASK                                                                                   \
    (IN_CREATE | IN_DELETE | IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_ATTRIB | \
     IN_DELETE_SELF | IN_MOVE_SELF)
#define PARENT_MASK (IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM | IN_ATTRIB)

/* Folders watched besides the directory itself. */
#define MAX_FOLDERS 256

typedef struct wentry {
    int wd;
    char *path;
} wentry;

struct pol_dirwatch {
    char *dir;
    char *parent, *base; /* the parent directory and the directory's name in it */
    int ifd;
    int pwd;             /* the parent's watch, -1 if none */
    wentry *w;           /* the directory first (when it exists), then its folders */
    size_t n;
    uint64_t events;     /* relevant events seen */
};

static void split(const char *dir, char **parent, char **base)
{
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        n--;
    char *d = de_xstrndup(dir, n);
    char *slash = strrchr(d, '/');
    if (!slash) {
        *parent = de_xstrdup(".");
        *base = d;
    } else {
        *base = de_xstrdup(slash + 1);
        if (slash == d)
            slash[1] = 0;
        else
            *slash = 0;
        *parent = d;
    }
}

static wentry *find_wd(pol_dirwatch *w, int wd)
{
    for (size_t i = 0; i < w->n; i++)
        if (w->w[i].wd == wd)
            return &w->w[i];
    return NULL;
}

static void drop(pol_dirwatch *w, size_t i, bool rm)
{
    if (rm)
        inotify_rm_watch(w->ifd, w->w[i].wd); /* its IN_IGNORED is not a change */
    free(w->w[i].path);
    w->w[i] = w->w[--w->n];
}

/* Bring the watch set in step with the directory and its folders. */
static void resync(pol_dirwatch *w)
{
    char **want = NULL;
    size_t nwant = 0;
    if (de_is_dir(w->dir)) {
        char **names;
        size_t nn;
        want = de_xcalloc(MAX_FOLDERS + 1, sizeof *want);
        want[nwant++] = de_xstrdup(w->dir);
        if (de_dir_names(w->dir, &names, &nn)) {
            for (size_t i = 0; i < nn && nwant <= MAX_FOLDERS; i++) {
                char *p = de_path_join(w->dir, names[i]);
                if (de_is_dir(p))
                    want[nwant++] = p;
                else
                    free(p);
            }
            de_names_free(names, nn);
        }
    }
    /* Add first: inotify_add_watch on a directory already watched returns
     * its wd (and a folder a flipped link points to now gets a new one). */
    int *wds = de_xcalloc(nwant ? nwant : 1, sizeof *wds);
    for (size_t i = 0; i < nwant; i++) {
        wds[i] = inotify_add_watch(w->ifd, want[i], WATCH_MASK);
        if (wds[i] < 0)
            continue;
        wentry *e = find_wd(w, wds[i]);
        if (e) {
            free(e->path);
            e->path = de_xstrdup(want[i]);
        } else {
            w->w = de_xrealloc(w->w, (w->n + 1) * sizeof *w->w);
            w->w[w->n++] = (wentry){wds[i], de_xstrdup(want[i])};
        }
    }
    /* then remove what is no longer wanted */
    for (size_t i = 0; i < w->n;) {
        bool keep = false;
        for (size_t j = 0; j < nwant && !keep; j++)
            keep = wds[j] == w->w[i].wd;
        if (keep)
            i++;
        else
            drop(w, i, true);
    }
    free(wds);
    de_names_free(want, nwant);
}

pol_dirwatch *pol_dirwatch_open(const char *dir)
{
    int ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (ifd < 0)
        return NULL;
    pol_dirwatch *w = de_xcalloc(1, sizeof *w);
    w->dir = de_xstrdup(dir);
    w->ifd = ifd;
    split(dir, &w->parent, &w->base);
    w->pwd = inotify_add_watch(ifd, w->parent, PARENT_MASK);
    resync(w);
    return w;
}

void pol_dirwatch_close(pol_dirwatch *w)
{
    if (!w)
        return;
    close(w->ifd);
    for (size_t i = 0; i < w->n; i++)
        free(w->w[i].path);
    free(w->w);
    free(w->dir);
    free(w->parent);
    free(w->base);
    free(w);
}

int pol_dirwatch_fd(const pol_dirwatch *w) { return w ? w->ifd : -1; }

size_t pol_dirwatch_count(const pol_dirwatch *w) { return w ? w->n + (w->pwd >= 0) : 0; }

bool pol_dirwatch_drain(pol_dirwatch *w)
{
    if (!w)
        return false;
    char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
    bool changed = false, again = false;
    for (;;) {
        ssize_t n = read(w->ifd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        for (char *p = buf; p < buf + n;) {
            const struct inotify_event *ev = (const struct inotify_event *)p;
            p += sizeof *ev + ev->len;
            if (ev->mask & IN_Q_OVERFLOW) {
                changed = again = true; /* events were lost: assume everything */
                continue;
            }
            if (ev->wd == w->pwd) {
                /* the parent: only the directory's own name matters */
                if (ev->len && !strcmp(ev->name, w->base))
                    changed = again = true;
                continue;
            }
            wentry *e = find_wd(w, ev->wd);
            if (ev->mask & IN_IGNORED) {
                /* the watch ended: not a change by itself */
                if (e)
                    drop(w, (size_t)(e - w->w), false);
                again = true;
                continue;
            }
            if (!e)
                continue; /* a watch removed in this batch */
            changed = true;
            if ((ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF)) || !strcmp(e->path, w->dir))
                again = true; /* the directory's entries changed: folders may have too */
        }
    }
    if (again)
        resync(w);
    if (changed)
        w->events++;
    return changed;
}
