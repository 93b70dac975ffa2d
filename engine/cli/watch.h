/*
 * watch.h - what `inspect --watch` and `allocate --watch` share: ending
 * cleanly on SIGINT/SIGTERM, waiting on several descriptors, the
 * `kubectl get -w` style event line, and a watch on a policy directory.
 *
 * Stopping: the first SIGINT or SIGTERM only asks the loop to stop (a byte
 * into a self-pipe wakes any wait), so the cycle in progress finishes, its
 * output is flushed and the command exits 0; a second one gets the default
 * action, for a loop stuck in a long cycle.
 */
#ifndef CLI_WATCH_H
#define CLI_WATCH_H

#include "../../drivers/file/fd.h"

#include <stdio.h>

/* Install the SIGINT/SIGTERM handlers (idempotent). */
void cli_watch_signals(void);
bool cli_watch_stopping(void);

/* Wait until one of fds (entries < 0 are skipped; at most 8) is readable,
 * or timeout_ms passes (-1: no limit).  Returns a bit per readable fd, 0 on
 * timeout, -1 when a stop was asked. */
int cli_watch_wait(const int *fds, int n, int timeout_ms);

/* "ADDED", "MODIFIED", "DELETED", "ERROR" (kubectl's watch event types). */
const char *cli_watch_op(fd_op op);
/* One line: "MODIFIED  ResourceSlice  ns/name  (file)". */
void cli_watch_event_line(FILE *out, const fd_event *ev);

/* A policy directory under watch: pol_dirwatch (inotify on it, its folders
 * and its parent, kept in step with the tree; a ConfigMap's `..data` flip
 * included), and the content hash of the tree (pol_dir_hash) so that a
 * touch or a rewrite with the same bytes is no change. */
typedef struct cli_polwatch cli_polwatch;
cli_polwatch *cli_polwatch_open(const char *dir);
void cli_polwatch_close(cli_polwatch *w);
/* The inotify descriptor (-1 without inotify: then only polling works). */
int cli_polwatch_fd(const cli_polwatch *w);
/* Drain the events, wait until the tree is quiet for quiet_ms (at most
 * 10 x quiet_ms), re-arm; true when the content differs from the last
 * time this returned true (or from the opening). */
bool cli_polwatch_changed(cli_polwatch *w, uint32_t quiet_ms);

#endif
