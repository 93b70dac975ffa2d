/*
 * dir.h - the one place where the engine walks directory trees and opens
 * the files users name (manifests, policy directories and packs, their
 * specs, kubeconfigs, sysfs trees).  Listings come in strcmp order with
 * hidden entries left out, so every machine walks a tree the same way (and
 * a revision hash over it comes out the same).
 *
 * Hostile trees.  A walk enters each directory at most once: it keeps the
 * set of (device, inode) pairs it has entered, so a symlink back to an
 * ancestor (`ln -s . loop`) or to a directory already walked is skipped
 * instead of followed until the depth limit (two such links made 2^depth
 * paths).  Entries a walk would have listed but cannot use - a dangling
 * symlink, a FIFO, a socket or a device named `x.yaml` - are skipped too
 * and never opened: opening a FIFO without a writer blocks forever.  Each
 * skip is reported through the notice sink with the path and the reason.
 *
 * Opening.  Every user path is opened with O_NONBLOCK, so open(2) itself
 * never waits (a FIFO without a writer), and its type is checked on the
 * open descriptor (no window between a stat and the open).  Files found by
 * a walk, policy sources and sysfs attributes must be regular files; a
 * path the user named on the command line may also be a stream (a pipe,
 * `<(cmd)`, /dev/stdin), read as it comes with a cap of its own, and since
 * everything read this way is text, a NUL byte ends the read at once with
 * an error (`-f /dev/zero` stops after one read instead of filling memory
 * up to the size limit).
 *
 * Notices.  Library code never prints; a skipped entry goes to the sink the
 * program installs (the CLI prints a warning, serve logs one).  Without a
 * sink notices are dropped.
 */
#ifndef DE_DIR_H
#define DE_DIR_H

#include "de.h"

#include <sys/stat.h>

bool de_is_dir(const char *path);
bool de_is_file(const char *path); /* a regular file */
bool de_ends_with(const char *s, const char *suffix);
/* "a/b" (malloc'd). */
char *de_path_join(const char *a, const char *b);

/* The names in `dir`, sorted, ".x" names left out (malloc'd; free with
 * de_names_free). false, with errno from opendir, when dir cannot be read. */
bool de_dir_names(const char *dir, char ***names, size_t *n);
void de_names_free(char **names, size_t n);

/* ---- notices ------------------------------------------------------------- */

typedef void (*de_notice_fn)(void *ctx, const char *path, const char *what);
/* Install the process's sink (NULL: drop notices). */
void de_notice_sink(de_notice_fn fn, void *ctx);
void de_notice(const char *path, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- walking ------------------------------------------------------------- */

typedef struct de_walk_opts {
    /* Which regular files to list, by entry name; NULL lists every one.
     * Unusable entries (dangling links, FIFOs, sockets, devices) whose name
     * this accepts are reported; others are ignored silently. */
    bool (*want)(const char *name);
    int max_depth;  /* levels below the root to enter (0: the root's own entries) */
    bool (*enter)(const char *name); /* directories to enter, by name; NULL: all */
    bool keep_dirs; /* also return the directories entered (root first) */
    de_notice_fn notice; /* where this walk's notices go; NULL: the process's sink */
    void *notice_ctx;
} de_walk_opts;

typedef struct de_walk_out {
    char **files; /* sorted by path; "root/sub/x.yaml" */
    size_t nfiles;
    char **dirs;  /* in the order entered, when keep_dirs */
    size_t ndirs;
} de_walk_out;

/* Walk the directory root (its symlinks followed, each directory entered
 * once).  Fails only when root itself cannot be read or the tree holds more
 * than DE_WALK_MAX_ENTRIES files; subdirectories that vanish or cannot be
 * read are reported and skipped. */
de_rc de_walk(const char *root, const de_walk_opts *o, de_walk_out *out, de_err *e);
void de_walk_free(de_walk_out *out);

#define DE_WALK_MAX_ENTRIES 1000000u

/* ---- opening and reading -------------------------------------------------- */

/* Open path for reading without blocking in open(2).  Regular files only,
 * unless `streams`: then pipes, FIFOs and character devices are accepted
 * too and left blocking for reads (the user named them).  Directories,
 * sockets, block devices and unusable types are refused with a message
 * naming the path and its type.  *st (may be NULL) gets the fstat. */
de_rc de_open_input(const char *path, bool streams, int *fd, struct stat *st, de_err *e);

/* A type's name for messages: "a FIFO", "a socket", "a directory", ... */
const char *de_file_type(mode_t mode);

typedef struct de_read_opts {
    size_t max;        /* largest input accepted (bytes) */
    bool streams;      /* accept streams (see de_open_input), capped at DE_STREAM_MAX too */
    bool binary_ok;    /* do not refuse NUL bytes */
} de_read_opts;

/* Largest stream read whole (a pipe has no size to check up front). */
#define DE_STREAM_MAX ((size_t)512 << 20)

/* Read a whole input: a regular file is refused by its size before a byte
 * is read; a stream is refused the moment it passes its cap; text (the
 * default) is refused at the first NUL byte, except UTF-16 with a byte
 * order mark.  *out is NUL-terminated (malloc'd).  "-" is stdin.  *st (may
 * be NULL) gets the fstat of what was read. */
de_rc de_read_input(const char *path, const de_read_opts *o, char **out, size_t *len, struct stat *st,
                    de_err *e);

#endif
