/*
 * fd.h - manifests on disk as a driver: load files and directories of
 * YAML/JSON objects, and with watching on, turn file changes into object
 * add / update / delete events.
 *
 * Model: the watcher remembers, per file, the objects it held and a hash of
 * each.  A scan lists the watched paths again (directories recursively,
 * *.yaml, *.yml, *.json, entries starting with '.' skipped, symlinks
 * followed), re-reads only the files whose identity changed (device, inode,
 * size, mtime) and diffs the union of all objects against the previous
 * scan by identity (API group, kind, namespace, name).  So an editor's
 * write-and-rename, a deleted file, an object moved between files and a
 * Kubernetes ConfigMap volume update (an atomic flip of the `..data`
 * symlink to a new hidden directory) all come out as the minimal set of
 * events.  A file that fails to read or parse is reported once per change
 * and keeps its last good objects, so a half-written file never deletes
 * what it held.
 *
 * Watching uses inotify on every watched directory (and on the parent of
 * each watched file); events are debounced: a scan starts once the tree has
 * been quiet for debounce_ms (or max_delay_ms after the first event).
 * Without inotify (or with watch off) fd_poll sleeps and rescans.
 *
 * Events are delivered in a deterministic order: additions and updates in
 * (file, document, item) order, then deletions sorted by identity.
 */
#ifndef FD_H
#define FD_H

#include "../../engine/base/de.h"
#include "../../engine/base/doc.h"

#include <jansson.h>

typedef struct fd_watch fd_watch;

typedef enum fd_op { FD_ADD = 0, FD_UPDATE, FD_DELETE, FD_ERROR } fd_op;

typedef struct fd_event {
    fd_op op;
    const char *api_version; /* as written ("resource.k8s.io/v1") */
    const char *kind;        /* "ResourceSlice" */
    const char *ns;          /* "" for cluster-scoped objects */
    const char *name;
    json_t *obj;             /* ADD/UPDATE: the new object; DELETE: the last one seen (borrowed) */
    const de_origin *origin; /* where the object is (was, for DELETE) */
    const de_err *err;       /* FD_ERROR: a file could not be read or parsed */
} fd_event;

typedef void (*fd_event_fn)(void *ctx, const fd_event *ev);

typedef struct fd_opts {
    bool watch;            /* use inotify (fd_poll waits for changes) */
    uint32_t debounce_ms;  /* quiet time before a rescan; 0 = 100 */
    uint32_t max_delay_ms; /* rescan at the latest this long after the first event; 0 = 1000 */
} fd_opts;

/* Largest single manifest file read (bytes). */
#define FD_MAX_FILE ((size_t)512 << 20)
/* Most files under the watched paths. */
#define FD_MAX_FILES 100000u

fd_watch *fd_open(const char *const *paths, size_t npaths, const fd_opts *o, de_err *e);
void fd_close(fd_watch *w);

/* Rescan now and report what changed since the last scan (the first scan
 * reports every object as FD_ADD).  *nevents (may be NULL) gets the number
 * of object events.  Errors of single files are FD_ERROR events, not a
 * failed return; a failed return means a watched root is unreadable. */
de_rc fd_scan(fd_watch *w, fd_event_fn fn, void *ctx, uint32_t *nevents, de_err *e);

/* Wait up to timeout_ms (-1: no limit, 0: just check) for changes, then
 * debounce and rescan.  Returns DE_OK with *nevents = 0 on timeout. */
de_rc fd_poll(fd_watch *w, int timeout_ms, fd_event_fn fn, void *ctx, uint32_t *nevents, de_err *e);

/* The inotify descriptor, to wait on it with poll(2) next to other
 * descriptors; -1 when not watching. */
int fd_fileno(const fd_watch *w);
bool fd_watching(const fd_watch *w);

/* Apply one event to a device graph: FD_ADD/FD_UPDATE -> dg_apply,
 * FD_DELETE -> dg_remove (kinds the graph does not model are ignored),
 * FD_ERROR -> returns the file's error.  (fd_graph.c) */
typedef struct dg_graph dg_graph;
de_rc fd_apply_event(dg_graph *g, const fd_event *ev, de_err *e);
/* Every object currently known (the state after the last scan: a broken
 * file's last good objects, no shadowed duplicates), in the order a
 * one-shot de_doc_each over the same paths reads them: paths in the order
 * given, files under a directory in byte order of their path, then
 * document and List item.  The objects are borrowed: the callback must
 * not modify them (json_incref to keep one).  Stops at the first error
 * the callback returns. */
de_rc fd_each(const fd_watch *w, de_doc_cb fn, void *ctx, de_err *e);

/* Objects currently known, and files scanned. */
uint32_t fd_object_count(const fd_watch *w);
uint32_t fd_file_count(const fd_watch *w);

#endif
