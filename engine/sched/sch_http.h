/*
 * sch_http.h - a small poll-based HTTP/1.1 responder for /livez, /readyz and
 * /metrics, and the Prometheus text-format writer behind /metrics.
 *
 * The responder runs on the scheduler's thread: it exposes its sockets for
 * the event loop's poll (sch_http_fds) and handles whatever is ready in
 * sch_http_process, never blocking.  One request per connection (the answer
 * carries Connection: close); requests over 8 KiB, bodies, and connections
 * idle for 10 s are refused or dropped.  That is all kubelet probes and a
 * Prometheus scrape need.
 */
#ifndef SCH_HTTP_H
#define SCH_HTTP_H

#include "../base/buf.h"
#include "../base/de.h"

#include <poll.h>

typedef struct sch_http sch_http;

/* Fill `body` and return the status; *content_type defaults to text/plain. */
typedef int (*sch_http_fn)(void *ctx, const char *method, const char *path, const char *query,
                           de_buf *body, const char **content_type);

/* Listen on addr:port (port 0 = any free port; addr "" or NULL = 0.0.0.0). */
sch_http *sch_http_new(const char *addr, int port, sch_http_fn fn, void *ctx, de_err *e);
void sch_http_free(sch_http *h);
int sch_http_port(const sch_http *h);
/* Descriptors to poll (listener + connections); returns how many were
 * written (at most max). */
unsigned sch_http_fds(const sch_http *h, struct pollfd *fds, unsigned max);
/* Accept, read, answer and write whatever is ready (non-blocking). */
void sch_http_process(sch_http *h);

/* ---- Prometheus text format (version 0.0.4) ------------------------------ */

#define SCH_HIST_MAX_BUCKETS 20

typedef struct sch_hist {
    const double *bounds; /* upper bounds, ascending; +Inf is implicit */
    unsigned nbounds;
    uint64_t counts[SCH_HIST_MAX_BUCKETS]; /* per bucket (not cumulative) */
    uint64_t inf;                          /* above the last bound */
    double sum;
    uint64_t count;
} sch_hist;

void sch_hist_init(sch_hist *h, const double *bounds, unsigned n);
void sch_hist_observe(sch_hist *h, double v);

/* "# HELP name help\n# TYPE name type\n" */
void sch_prom_head(de_buf *b, const char *name, const char *type, const char *help);
/* name{labels} value - labels is "" or `k="v",k2="v2"` (already escaped). */
void sch_prom_sample(de_buf *b, const char *name, const char *labels, double v);
/* _bucket{le=...} (cumulative), _sum, _count */
void sch_prom_hist(de_buf *b, const char *name, const char *labels, const sch_hist *h);

#endif
