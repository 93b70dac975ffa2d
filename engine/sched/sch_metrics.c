/*
 * sch_metrics.c - the scheduler's Prometheus samples (queue, attempts,
 * latencies, binding workers).
 */
#include "sch_int.h"

void sch_get_stats(const sch_sched *s, sch_stats *out)
{
    *out = s->st;
    out->active = out->backoff = out->unschedulable_now = out->assumed = 0;
    for (uint32_t i = 0; i < s->npods; i++) {
        switch (s->pods[i].state) {
        case SP_ACTIVE: out->active++; break;
        case SP_BACKOFF: out->backoff++; break;
        case SP_UNSCHED: out->unschedulable_now++; break;
        case SP_ASSUMED: out->assumed++; break;
        case SP_WAITING: out->waiting++; break;
        case SP_BINDING: out->binding++; break;
        case SP_HELD: out->held++; break;
        default: break;
        }
    }
}

void sch_metrics(const sch_sched *s, de_buf *b)
{
    sch_stats st;
    sch_get_stats(s, &st);
    sch_prom_head(b, "draengine_scheduler_pending_pods", "gauge",
                  "Pending pods by queue (active, backoff, unschedulable).");
    sch_prom_sample(b, "draengine_scheduler_pending_pods", "queue=\"active\"", st.active);
    sch_prom_sample(b, "draengine_scheduler_pending_pods", "queue=\"backoff\"", st.backoff);
    sch_prom_sample(b, "draengine_scheduler_pending_pods", "queue=\"unschedulable\"",
                    st.unschedulable_now);
    sch_prom_head(b, "draengine_scheduler_assumed_pods", "gauge",
                  "Pods bound by this scheduler that the watch has not shown yet.");
    sch_prom_sample(b, "draengine_scheduler_assumed_pods", "", st.assumed);
    sch_prom_head(b, "draengine_scheduler_binding_pods", "gauge",
                  "Pods whose PreBind/Bind writes run on a binding worker (--parallel-binds), and pods "
                  "waiting for such a job because it writes one of their claims.");
    sch_prom_sample(b, "draengine_scheduler_binding_pods", "state=\"binding\"", st.binding);
    sch_prom_sample(b, "draengine_scheduler_binding_pods", "state=\"held\"", st.held);
    sch_prom_head(b, "draengine_scheduler_schedule_attempts_total", "counter",
                  "Scheduling attempts by result.");
    sch_prom_sample(b, "draengine_scheduler_schedule_attempts_total", "result=\"scheduled\"",
                    (double)s->by_result[0]);
    sch_prom_sample(b, "draengine_scheduler_schedule_attempts_total", "result=\"unschedulable\"",
                    (double)s->by_result[1]);
    sch_prom_sample(b, "draengine_scheduler_schedule_attempts_total", "result=\"error\"",
                    (double)s->by_result[2]);
    sch_prom_head(b, "draengine_scheduler_binding_conditions_waiting_pods", "gauge",
                  "Pods whose PreBind waits for device binding conditions.");
    sch_prom_sample(b, "draengine_scheduler_binding_conditions_waiting_pods", "", st.waiting);
    sch_prom_head(b, "draengine_scheduler_binding_conditions_total", "counter",
                  "PreBind waits for device binding conditions, by outcome.");
    sch_prom_sample(b, "draengine_scheduler_binding_conditions_total", "status=\"success\"",
                    (double)st.waiting_ready);
    sch_prom_sample(b, "draengine_scheduler_binding_conditions_total", "status=\"failed\"",
                    (double)st.waiting_failed);
    sch_prom_sample(b, "draengine_scheduler_binding_conditions_total", "status=\"timeout\"",
                    (double)st.waiting_timeout);
    sch_prom_head(b, "draengine_scheduler_write_conflicts_total", "counter",
                  "Scheduling cycles retried after a 409 Conflict.");
    sch_prom_sample(b, "draengine_scheduler_write_conflicts_total", "", (double)st.conflicts);
    sch_prom_head(b, "draengine_scheduler_queue_incoming_pods_total", "counter",
                  "Pods moved out of the unschedulable queue, by cause, and pods popped from the "
                  "backoff queue by an idle scheduler (SchedulerPopFromBackoffQ).");
    sch_prom_sample(b, "draengine_scheduler_queue_incoming_pods_total", "event=\"index\"",
                    (double)st.requeued_by_event);
    sch_prom_sample(b, "draengine_scheduler_queue_incoming_pods_total", "event=\"flush\"",
                    (double)st.flushed);
    sch_prom_sample(b, "draengine_scheduler_queue_incoming_pods_total", "event=\"PopFromBackoffQ\"",
                    (double)st.popped_from_backoff);
    sch_prom_head(b, "draengine_scheduler_queueing_hint_pods_checked_total", "counter",
                  "Pods a ResourceClaim event checked for requeueing: those its index names with "
                  "SchedulerPreQueueingHints, else every unschedulable pod.");
    sch_prom_sample(b, "draengine_scheduler_queueing_hint_pods_checked_total", "event=\"claim\"",
                    (double)st.hint_pods_checked);
    sch_prom_head(b, "draengine_scheduler_pre_queueing_hint_evaluations_total", "counter",
                  "ResourceClaim events whose pods were narrowed by the PreQueueingHint (SchedulerPreQueueingHints).");
    sch_prom_sample(b, "draengine_scheduler_pre_queueing_hint_evaluations_total",
                    "plugin=\"DynamicResources\",result=\"narrowed\"", (double)st.prehint_narrowed);
    sch_prom_head(b, "draengine_scheduler_invalid_objects_total", "counter",
                  "Watched objects refused by validation.");
    sch_prom_sample(b, "draengine_scheduler_invalid_objects_total", "", (double)st.invalid_objects);
    sch_prom_head(b, "draengine_scheduler_claim_events_ignored_total", "counter",
                  "ResourceClaim watch events not applied: older than draengine's own last write (stale), "
                  "or the echo of that write, dropped before decoding (echo).");
    sch_prom_sample(b, "draengine_scheduler_claim_events_ignored_total", "reason=\"stale\"",
                    (double)st.stale_events_ignored);
    sch_prom_sample(b, "draengine_scheduler_claim_events_ignored_total", "reason=\"echo\"",
                    (double)st.echoes_skipped);
    sch_prom_head(b, "draengine_scheduler_scheduling_attempt_duration_seconds", "histogram",
                  "Scheduling attempt latency (filter, score, writes).");
    sch_prom_hist(b, "draengine_scheduler_scheduling_attempt_duration_seconds", "", &s->attempt_lat);
    sch_prom_head(b, "draengine_scheduler_allocation_duration_seconds", "histogram",
                  "Time in the allocator per scheduling attempt.");
    sch_prom_hist(b, "draengine_scheduler_allocation_duration_seconds", "", &s->alloc_lat);
    sch_prom_head(b, "draengine_scheduler_pod_scheduling_sli_duration_seconds", "histogram",
                  "From the first time a pod was seen to its binding being observed.");
    sch_prom_hist(b, "draengine_scheduler_pod_scheduling_sli_duration_seconds", "", &s->e2e_lat);
    /* flat under churn when every holder of a pod's or claim's names lets
     * them go (base/intern.c, sch_int.h) */
    sch_prom_head(b, "draengine_interned_strings", "gauge",
                  "Strings interned now (names, UIDs, resourceVersions of the objects held).");
    sch_prom_sample(b, "draengine_interned_strings", "", (double)de_intern_live(s->in));
    sch_prom_head(b, "draengine_interned_bytes", "gauge", "Bytes the interner holds (strings and tables).");
    sch_prom_sample(b, "draengine_interned_bytes", "", (double)de_intern_bytes(s->in));
    /* built while the queue is empty (al_prepare), so a decision rarely
     * builds one: the count moves with slices and classes, not with pods */
    al_stats as;
    al_get_stats(s->al, &as);
    sch_prom_head(b, "draengine_node_tables_built_total", "counter",
                  "Node tables (devices, pools, counters of one node) built by the allocator.");
    sch_prom_sample(b, "draengine_node_tables_built_total", "", (double)as.node_tables_built);
    sch_prom_head(b, "draengine_candidate_sets_built_total", "counter",
                  "Candidate sets (one selector set evaluated on one node table) built by the allocator.");
    sch_prom_sample(b, "draengine_candidate_sets_built_total", "", (double)as.candidate_sets_built);
    sch_prom_head(b, "draengine_scheduler_filter_memo_nodes_total", "counter",
                  "Nodes of Filter answered from the memo (hit), evaluated and remembered (evaluated), "
                  "and winners the memo had wrong, decided again (stale; always 0 unless a change "
                  "escaped the node generations).");
    sch_prom_sample(b, "draengine_scheduler_filter_memo_nodes_total", "result=\"hit\"", (double)as.memo_hits);
    sch_prom_sample(b, "draengine_scheduler_filter_memo_nodes_total", "result=\"evaluated\"",
                    (double)as.memo_puts);
    sch_prom_sample(b, "draengine_scheduler_filter_memo_nodes_total", "result=\"stale\"",
                    (double)st.memo_stale);
    sch_event_counts ec;
    sch_event_counts_get(s, &ec);
    sch_prom_head(b, "draengine_scheduler_events_pending", "gauge",
                  "Events queued for the binding workers or being written (they yield to bindings "
                  "until --event-backlog wait).");
    sch_prom_sample(b, "draengine_scheduler_events_pending", "", (double)ec.pending);
    sch_prom_head(b, "draengine_scheduler_events_total", "counter",
                  "Events taken from the queue: written, refused or failed, or dropped (a stop "
                  "without the lease, or past the stop's time for them).");
    sch_prom_sample(b, "draengine_scheduler_events_total", "result=\"written\"", (double)ec.written);
    sch_prom_sample(b, "draengine_scheduler_events_total", "result=\"failed\"", (double)ec.failed);
    sch_prom_sample(b, "draengine_scheduler_events_total", "result=\"dropped\"", (double)ec.dropped);
}
