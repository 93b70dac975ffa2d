/*
 * run_progress.c - the progress bar of `draengine run`: one line on stderr,
 * redrawn at most ten times a second, only when stderr is a terminal (so
 * logs, pipes and specs never see it).  The bar shows how full the cluster's
 * accelerators are; the stream ends when every workload stops fitting.
 */
#include "run.h"

#include <stdio.h>
#include <sys/ioctl.h>
#include <unistd.h>

void run_progress_init(run_progress *p)
{
    p->on = isatty(STDERR_FILENO) == 1;
    p->last_ns = 0;
    p->width = 80;
    struct winsize ws;
    if (p->on && ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 40)
        p->width = ws.ws_col;
}

void run_progress_update(run_progress *p, uint32_t pods, uint32_t placed, uint32_t pending, double fill,
                         bool force)
{
    if (!p->on)
        return;
    uint64_t now = de_now_ns();
    if (!force && now - p->last_ns < 100000000ull)
        return;
    p->last_ns = now;
    char tail[96];
    int tl = snprintf(tail, sizeof tail, " %3.0f%% GPUs busy  %u pods: %u placed, %u pending", fill * 100.0,
                      pods, placed, pending);
    int bar = p->width - tl - 4;
    if (bar > 50)
        bar = 50;
    if (bar < 10)
        bar = 10;
    int done = (int)(fill * bar + 0.5);
    fputs("\r[", stderr);
    for (int i = 0; i < bar; i++)
        fputc(i < done ? '#' : '.', stderr);
    fputc(']', stderr);
    fputs(tail, stderr);
    fputs("\033[K", stderr);
    fflush(stderr);
}

void run_progress_done(run_progress *p)
{
    if (!p->on)
        return;
    fputs("\r\033[K", stderr);
    fflush(stderr);
}
