/*
 * sch.h - the scheduling loop of `draengine serve`: a queue of pending pods,
 * node fit beyond devices, the allocator, and the writes that make a
 * decision real (claim finalizer, claim status, pod binding, Events).
 *
 * It behaves like kube-scheduler with its DynamicResources plugin:
 *  - PreEnqueue: every claim of a pod must exist (template claims are
 *    created by the resource claim controller in kube-controller-manager and
 *    published in pod.status.resourceClaimStatuses: draengine waits for
 *    them, as kube-scheduler does, and never creates them itself), must not
 *    be being deleted, and a template claim must be owned by the pod.
 *  - Filter: node fit (cpu, memory, pods, extended resources against
 *    allocatable minus the pods bound or assumed there; nodeSelector,
 *    required node affinity, taints/tolerations, unschedulable nodes), the
 *    node selectors of already allocated claims, then the allocator.
 *  - Score: least-allocated cpu/memory plus the normalised firstAvailable
 *    score; ties go to node name order (never random: decisions are
 *    reproducible).
 *  - Reserve/PreBind: the allocation is assumed in the graph first
 *    (dg_claim_set_allocation), then written: finalizer
 *    resource.kubernetes.io/delete-protection (plain update), status with
 *    allocation and reservedFor (status update, carrying the
 *    resourceVersion the decision was made on), then pods/binding.  A
 *    failed write is unreserved in memory and the claim re-read; a 409
 *    sends the pod straight back to the active queue.
 *
 * Decisions are made one at a time on the scheduler's thread; their writes
 * run there too, or with parallel_binds > 1 on worker threads, several pods
 * at once, as kube-scheduler's binding cycle runs in a goroutine
 * (sch_async.c).  The assume step matters because a watch can deliver
 * an older version of a claim after draengine wrote a newer one: such
 * events are ignored (resourceVersions of assumed claims are compared as
 * integers, as the upstream assume cache does).
 *
 * Requeueing (KEP-6132's idea): an event requeues only the pods it can
 * help, found through indexes - claim -> pods waiting on it, class ->
 * claims using it, node events -> pods that failed on node fit, freed
 * resources or devices -> pods that failed for that reason.  Nothing scans
 * every waiting pod.  Pods that failed wait at least a backoff (1 s doubling
 * to 10 s) and at most 5 minutes before they are retried anyway.
 */
#ifndef SCH_H
#define SCH_H

#include "../../drivers/kube/kc.h"
#include "../alloc/al.h"
#include "../base/buf.h"
#include "../base/de.h"
#include "../base/gates.h"
#include "../model/dg.h"

typedef struct sch_sched sch_sched;

#define SCH_BACKOFF_INITIAL_NS 1000000000ull /* kube-scheduler's defaults */
#define SCH_BACKOFF_MAX_NS 10000000000ull

typedef struct sch_opts {
    const char *scheduler_name; /* default "draengine" */
    const char *identity;       /* reportingInstance of Events */
    uint64_t backoff_initial_ns, backoff_max_ns; /* 0: SCH_BACKOFF_*_NS */
    bool backoff_explicit;      /* the two above are used as given: 0 = no backoff */
    uint64_t unschedulable_max_ns;               /* 5 min */
    bool no_events;             /* do not write Events */
    uint32_t event_backlog;     /* Events queued before they stop yielding to bindings;
                                 * 0: SCH_EVENT_BACKLOG_DEFAULT (sch_evq.h) */
    bool workload_claims;       /* DRAWorkloadResourceClaims: PodGroup claims (KEP-5729) */
    bool generic_workload;      /* GenericWorkload: PodGroups, GangScheduling's PreEnqueue */
    /* SchedulerPreQueueingHints (KEP-6132): a claim event looks up the pods
     * waiting for that claim in an index; without it every unschedulable
     * pod is checked against the claim, as kube-scheduler then does. */
    bool pre_queueing_hints;
    /* SchedulerPopFromBackoffQ (beta, on since 1.33): with no active pod,
     * the pod whose backoff ends first is tried at once (sch_pop_backoff). */
    bool pop_from_backoff;
    uint64_t binding_timeout_ns; /* PreBind's wait for binding conditions (KEP-5007); 600 s */
    unsigned parallel_binds;     /* PreBind/Bind jobs in flight at once (worker threads);
                                  * 0 or 1: on the scheduler's thread */
    bool no_filter_memo;         /* every node evaluated for every pod (al_memo_open) */
} sch_opts;

/* g, al and cl must outlive the scheduler; cl may be NULL (dry run: the
 * decisions are assumed in the graph but nothing is written). */
sch_sched *sch_new(dg_graph *g, al_allocator *al, kc_client *cl, const sch_opts *o);
void sch_free(sch_sched *s);

/* Policy hooks (score) used when choosing among feasible nodes; the
 * allocator gets the same hooks from the caller.  Copied; NULL clears.
 * Call again whenever the policy host swaps revisions. */
void sch_set_hooks(sch_sched *s, const al_hooks *h);

/* The informer callback: apply one object change to the graph and requeue
 * the pods it affects.  Invalid objects are counted and logged, never
 * fatal. */
void sch_observe(sch_sched *s, kc_res res, kc_evtype type, json_t *obj);
/* The informer's skip filter (kc_skip_fn, ctx the scheduler): drops a
 * claim's MODIFIED event that the graph holds already (sch_bind.c). */
bool sch_skip_event(void *sched, kc_res res, const kc_peek *pk, const char *line, size_t len);

/* Schedule pods from the active queue until it is empty or budget_ns has
 * passed; returns the number of scheduling attempts. */
unsigned sch_run(sch_sched *s, uint64_t budget_ns);
/* With binding workers: a descriptor that becomes readable when a job
 * ends, for the caller's poll (-1: none); sch_run applies what ended. */
int sch_bind_fd(const sch_sched *s);
/* Before stopping: wait for the jobs in flight and apply their results;
 * with `abandon` (leadership lost) their requests not yet started are not
 * sent.  The scheduler stays usable. */
void sch_bind_finish(sch_sched *s, bool abandon);

/* Leader election: no write may start at or after `until_ns` (de_now_ns
 * clock; UINT64_MAX, the default: no limit).  The scheduling loop makes no
 * decision past it, and binding workers send no further request of their
 * jobs: those end as failed writes (the pod goes back to the queue), as
 * when leadership is lost - also while the caller's thread is held up in
 * a slow lease renewal.  Set it after every renewal. */
void sch_set_write_deadline(sch_sched *s, uint64_t until_ns);

/* Nanoseconds until a backed-off pod becomes active (UINT64_MAX: none). */
uint64_t sch_next_due_ns(const sch_sched *s);

typedef struct sch_stats {
    uint64_t attempts, scheduled, unschedulable, errors, conflicts, bind_errors;
    uint64_t requeued_by_event, flushed;
    uint64_t popped_from_backoff; /* tried before their backoff ended: nothing else to do */
    uint64_t invalid_objects, stale_events_ignored;
    uint64_t echoes_skipped; /* our own claim writes coming back, not decoded */
    uint64_t hint_pods_checked;   /* pods a claim event checked (index hits or all unschedulable) */
    uint64_t prehint_narrowed;    /* claim events narrowed by the index (SchedulerPreQueueingHints) */
    uint64_t memo_stale;          /* Filter memo winners that did not allocate again (a bug) */
    /* PreBind waits for binding conditions: begun, bound, failed, timed out */
    uint64_t waiting_started, waiting_ready, waiting_failed, waiting_timeout;
    uint32_t active, backoff, unschedulable_now, assumed, waiting;
    uint32_t binding, held; /* jobs on the binding workers; pods waiting for one */
} sch_stats;
void sch_get_stats(const sch_sched *s, sch_stats *out);
/* The Events queued for the binding workers (sch_evq.h); zeros without them. */
typedef struct sch_event_counts {
    uint64_t pending; /* queued or being written */
    uint64_t written, failed, dropped;
} sch_event_counts;
void sch_event_counts_get(const sch_sched *s, sch_event_counts *out);

/* Prometheus samples of the scheduler (queue, attempts, latencies). */
void sch_metrics(const sch_sched *s, de_buf *out);

/* Node fit beyond devices for one pod on one node: 0 = fits, else a reason
 * bit set (SCH_FIT_*), with a human message. Exposed for specs. */
enum {
    SCH_FIT_UNSCHEDULABLE = 1u << 0, /* node.spec.unschedulable */
    SCH_FIT_SELECTOR = 1u << 1,      /* nodeSelector / required affinity */
    SCH_FIT_TAINT = 1u << 2,         /* untolerated NoSchedule/NoExecute taint */
    SCH_FIT_RESOURCES = 1u << 3,     /* cpu, memory, pods, extended */
    SCH_FIT_CLAIM_NODE = 1u << 4,    /* an allocated claim's nodeSelector */
    SCH_FIT_DEVICES = 1u << 5,       /* the allocator found no devices */
};
unsigned sch_node_fit(sch_sched *s, uint32_t pod, uint32_t node, char *why, size_t cap);

#endif
