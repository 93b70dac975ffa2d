/*
 * ctl.h - what kube-controller-manager's DRA controllers would do with the
 * device graph, computed the way their 1.37 code does it, for `inspect` to
 * show and for `serve` to act on (ctl_serve.h):
 *
 *  - the ResourcePoolStatusRequest controller (KEP-5677, gate
 *    DRAResourcePoolStatus): a request's status - the pools of its driver
 *    (optionally one pool), their device counts, partitionSummary and
 *    shareableSummary, the limit, the Complete condition (ctl_poolstatus.c,
 *    ctl_pviews.c);
 *  - the device taint eviction controller: the running pods whose allocated
 *    devices carry a NoExecute taint their allocation does not tolerate, when
 *    and why they would be evicted (ctl_evict.c).  draengine never evicts;
 *    it reports.
 *
 * Library code: nothing here prints or talks to the API server.
 */
#ifndef CTL_H
#define CTL_H

#include "../base/arena.h"
#include "../base/de.h"
#include "../base/gates.h"
#include "../model/dg.h"

#include <jansson.h>

/* ---- ResourcePoolStatusRequest ------------------------------------------- */

/* Upstream's spec.limit bounds and the cap of each status list. */
#define CTL_PSR_LIMIT_DEFAULT 100
#define CTL_PSR_MAX_LIST 32
#define CTL_PSR_MAX_MESSAGE 256

typedef struct ctl_psr_result {
    json_t *status;  /* the status object the controller writes (new reference) */
    uint32_t pools;  /* poolCount */
    uint32_t shown;  /* len(pools) after the limit */
    /* a shown pool is still being published (PoolIncomplete): the controller
     * retries instead of writing the status */
    bool incomplete;
} ctl_psr_result;

/*
 * The status of request `r` over graph g, as the controller computes it.
 * `gates` decide what the API server would have kept: partitionTypeAttribute
 * and defaultPartitionTypeAttribute need DRAPartitionableDevicesType, and
 * DeviceTaintRules count only with DRADeviceTaintRules.  `now_rfc3339` is the
 * condition's lastTransitionTime (NULL: left out, for deterministic reports).
 */
void ctl_pool_status(const dg_graph *g, const dg_pool_status_request *r, const de_gates *gates,
                     const char *now_rfc3339, ctl_psr_result *out);

/* ---- NoExecute evictions ------------------------------------------------- */

/* One taint that makes a pod's eviction due. */
typedef struct ctl_evict_reason {
    uint32_t claim;      /* claim name (interned; the pod's namespace) */
    uint32_t driver, pool, device;
    uint32_t key, value; /* the taint */
    uint32_t rule;       /* DeviceTaintRule name, 0 = the ResourceSlice's own taint */
    uint32_t slice;      /* slice name when rule == 0 */
    uint32_t taint_index;
    int64_t time_added;  /* unix seconds, 0 = unset */
    bool tolerated_for;  /* a toleration with tolerationSeconds delays it */
    int64_t seconds;     /* that delay (the smallest one) */
    int64_t evict_at;    /* time_added + seconds (unix seconds; 0 when time_added unset) */
} ctl_evict_reason;

typedef struct ctl_eviction {
    uint32_t pod;        /* pod id in the graph */
    uint32_t ns, name, node;
    int64_t evict_at;    /* earliest of its reasons (unix seconds; 0 = at once, time unknown) */
    ctl_evict_reason *reasons; /* sorted like upstream: rules by name, then slice taints */
    uint32_t nreasons;
} ctl_eviction;

/*
 * The scheduled pods (spec.nodeName set) that the device taint eviction
 * controller would evict: a claim the pod uses and is reserved for (or its
 * PodGroup, with DRAWorkloadResourceClaims) has an allocated device with a
 * NoExecute taint - published in its slice or added by a DeviceTaintRule
 * (DRADeviceTaintRules) - that the allocation result's tolerations do not
 * tolerate forever.  Nothing when DRADeviceTaints is off (the controller does
 * not run).  Sorted by namespace and name; memory from `a`.
 */
void ctl_evictions(const dg_graph *g, const de_gates *gates, de_arena *a, ctl_eviction **out, uint32_t *n);

/* "DeviceTaintRule <name>" or "ResourceSlice <slice> <driver>/<pool>/<device> taint #<i>",
 * upstream's wording for a reason. */
void ctl_evict_reason_text(const dg_graph *g, const ctl_evict_reason *r, char *buf, size_t cap);

#endif
