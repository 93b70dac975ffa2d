/*
 * ctl_serve.h - the DRA controller work `draengine serve` does beside
 * scheduling, on the same thread and graph:
 *
 *  - with --pool-status-controller (needs DRAResourcePoolStatus), the
 *    ResourcePoolStatusRequest controller of kube-controller-manager: each
 *    request without a status gets one (ctl_pool_status) through its status
 *    subresource; a shown pool still being published is retried with
 *    client-go's per-item backoff (5 ms doubling) at most 5 times, as
 *    upstream's workqueue does, then dropped until the request changes;
 *    requests are deleted (uid precondition) an hour after their Complete or
 *    Failed condition, pending ones a day after creation, checked every ten
 *    minutes.  Off by default: kube-controller-manager runs it too.
 *  - NoExecute reports (with DRADeviceTaints): the pods the device taint
 *    eviction controller deletes (ctl_evictions) get a Warning Event
 *    "DeviceTaintNoExecute" when they become due or their reasons change,
 *    and a Normal "DeviceTaintNoExecuteCleared" when that is over while the
 *    pod still runs; /metrics counts them.  draengine never evicts.
 * Only the leader acts (the caller calls ctl_serve_run while leading).
 */
#ifndef CTL_SERVE_H
#define CTL_SERVE_H

#include "../../drivers/kube/kc.h"
#include "../base/buf.h"
#include "ctl.h"

typedef struct ctl_serve ctl_serve;

typedef struct ctl_serve_opts {
    bool pool_status;       /* run the ResourcePoolStatusRequest controller */
    bool no_events;         /* --no-events: count, but write no Events */
    const char *identity;   /* reportingInstance of Events */
} ctl_serve_opts;

ctl_serve *ctl_serve_new(dg_graph *g, kc_client *cl, const de_gates *gates, const ctl_serve_opts *o);
void ctl_serve_free(ctl_serve *c);
/* A ResourcePoolStatusRequest event from the informer. */
void ctl_serve_observe(ctl_serve *c, kc_evtype t, json_t *obj);
/* Do what is due now (requests, cleanup, eviction reports). */
void ctl_serve_run(ctl_serve *c);
/* Nanoseconds until something is due (UINT64_MAX: nothing). */
uint64_t ctl_serve_next_due_ns(const ctl_serve *c);
/* Prometheus text for /metrics. */
void ctl_serve_metrics(const ctl_serve *c, de_buf *out);

#endif
