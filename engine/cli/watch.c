/*
 * watch.c - see watch.h.
 */
#include "watch.h"
#include "../policy/polgraph.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- stopping ------------------------------------------------------------------- */

static volatile sig_atomic_t stop_asked;
static int stop_pipe[2] = {-1, -1};

static void on_stop(int sig)
{
    (void)sig;
    int saved = errno;
    stop_asked = 1;
    if (stop_pipe[1] >= 0) {
        ssize_t r = write(stop_pipe[1], "x", 1);
        (void)r;
    }
    errno = saved;
}

void cli_watch_signals(void)
{
    if (stop_pipe[0] >= 0)
        return;
    if (pipe2(stop_pipe, O_NONBLOCK | O_CLOEXEC) != 0)
        stop_pipe[0] = stop_pipe[1] = -1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = (int)SA_RESETHAND; /* a second signal: the default action */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

bool cli_watch_stopping(void) { return stop_asked != 0; }

int cli_watch_wait(const int *fds, int n, int timeout_ms)
{
    struct pollfd p[9];
    int map[9], k = 0;
    if (stop_asked)
        return -1;
    for (int i = 0; i < n && i < 8; i++)
        if (fds[i] >= 0) {
            p[k] = (struct pollfd){fds[i], POLLIN, 0};
            map[k++] = i;
        }
    int sp = -1;
    if (stop_pipe[0] >= 0) {
        sp = k;
        p[k++] = (struct pollfd){stop_pipe[0], POLLIN, 0};
    }
    int r = poll(p, (nfds_t)k, timeout_ms);
    if (stop_asked)
        return -1;
    if (r <= 0)
        return 0; /* timeout, or EINTR from another signal: the caller loops */
    int bits = 0;
    for (int i = 0; i < k; i++)
        if (i != sp && (p[i].revents & (POLLIN | POLLHUP | POLLERR)))
            bits |= 1 << map[i];
    return bits;
}

/* ---- event lines ------------------------------------------------------------------- */

const char *cli_watch_op(fd_op op)
{
    switch (op) {
    case FD_ADD: return "ADDED";
    case FD_UPDATE: return "MODIFIED";
    case FD_DELETE: return "DELETED";
    default: return "ERROR";
    }
}

void cli_watch_event_line(FILE *out, const fd_event *ev)
{
    fprintf(out, "%-8s  %-13s  %s%s%s", cli_watch_op(ev->op), ev->kind, ev->ns, *ev->ns ? "/" : "", ev->name);
    if (ev->origin && ev->origin->file)
        fprintf(out, "  (%s)", ev->origin->file);
    fputc('\n', out);
}

/* ---- a policy directory ------------------------------------------------------------- */

struct cli_polwatch {
    char *dir;
    pol_dirwatch *dw;
    char hash[65];
};

cli_polwatch *cli_polwatch_open(const char *dir)
{
    cli_polwatch *w = de_xcalloc(1, sizeof *w);
    w->dir = de_xstrdup(dir);
    w->dw = pol_dirwatch_open(dir);
    pol_dir_hash(dir, w->hash);
    return w;
}

void cli_polwatch_close(cli_polwatch *w)
{
    if (!w)
        return;
    pol_dirwatch_close(w->dw);
    free(w->dir);
    free(w);
}

int cli_polwatch_fd(const cli_polwatch *w) { return w ? pol_dirwatch_fd(w->dw) : -1; }

bool cli_polwatch_changed(cli_polwatch *w, uint32_t quiet_ms)
{
    if (w->dw) {
        pol_dirwatch_drain(w->dw);
        /* quiet: no relevant event for quiet_ms (at most 10 rounds) */
        struct pollfd p = {pol_dirwatch_fd(w->dw), POLLIN, 0};
        for (int i = 0; i < 10 && !stop_asked; i++) {
            p.revents = 0;
            if (poll(&p, 1, (int)quiet_ms) <= 0)
                break;
            if (!pol_dirwatch_drain(w->dw))
                break;
        }
    }
    char h[65];
    pol_dir_hash(w->dir, h);
    if (!strcmp(h, w->hash))
        return false;
    memcpy(w->hash, h, sizeof h);
    return true;
}
