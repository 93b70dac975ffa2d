/*
 * sch_shadow.h - `draengine serve --shadow`: watch a cluster that another
 * scheduler schedules and, for every pod it binds, compute what draengine
 * (with the current policies) would have decided on the same state, without
 * writing anything.  Agreement goes to /metrics, every decision to a log of
 * JSON lines.  This is how an operator tries a policy revision - or
 * draengine itself - on production traffic before switching.
 *
 * The same state: the binding is seen as a pod event whose spec.nodeName is
 * set while the graph still holds the pod unbound.  At that moment the
 * graph is the cluster as the other scheduler saw it, except that the pod's
 * own claims may already carry the allocation that scheduler wrote (its
 * status update usually arrives before the binding).  Those allocations -
 * only of claims reserved for no other pod: a claim a group already holds
 * stays as it is - are set aside, the allocator schedules the pod for real
 * (al_schedule_pod, policies and all), its decision is recorded and undone
 * (allocations, the pod's node resources, a claim made for extended
 * resources), and the other scheduler's allocations are put back.  Nothing
 * of it reaches the API server: serve runs the shadow with a scheduler that
 * has no client, no leader election and no controllers.
 *
 * The other scheduler's devices are those its claims show once allocated:
 * a decision whose claims are not all allocated yet waits (at most 30 s of
 * cycles; then it is compared by node alone).  Outcomes:
 *   same        the same node and the same devices
 *   same_node   the same node, other devices
 *   other_node  draengine would have chosen another node (feasible elsewhere)
 *   infeasible  draengine finds no node for the pod
 *   error       a hard error (a CEL runtime error, a budget)
 *   unobserved  a claim of the pod was never seen: nothing to compare
 */
#ifndef SCH_SHADOW_H
#define SCH_SHADOW_H

#include "../../drivers/kube/kc.h"
#include "../alloc/al.h"
#include "../base/buf.h"
#include "../model/dg.h"

#include <stdio.h>

typedef struct sch_shadow sch_shadow;

typedef struct sch_shadow_opts {
    const char *own_name; /* draengine's scheduler name: its pods are not shadowed */
    const char *of;       /* only pods of this schedulerName; NULL or "": every other scheduler */
    FILE *log;            /* decision log, JSON lines (borrowed; NULL: none) */
    uint64_t wait_ns;     /* how long a decision waits for the other's devices (default 30 s) */
} sch_shadow_opts;

sch_shadow *sch_shadow_new(dg_graph *g, al_allocator *al, const sch_shadow_opts *o);
void sch_shadow_free(sch_shadow *sh);

/* The policy revision the decisions are made with ("" without policies);
 * call again when the policy host swaps revisions. */
void sch_shadow_set_revision(sch_shadow *sh, const char *revision);

/* A pod event, before the scheduler applies it to the graph: a binding by
 * another scheduler is evaluated here. */
void sch_shadow_pod_event(sch_shadow *sh, kc_evtype t, json_t *obj);

/* At every cycle: compare the decisions whose other side is complete. */
void sch_shadow_cycle(sch_shadow *sh);

typedef struct sch_shadow_stats {
    uint64_t same, same_node, other_node, infeasible, error, unobserved;
    uint32_t waiting; /* decisions waiting for the other scheduler's devices */
} sch_shadow_stats;
void sch_shadow_get_stats(const sch_shadow *sh, sch_shadow_stats *out);
/* Prometheus samples: draengine_shadow_decisions_total{outcome},
 * draengine_shadow_agreement_ratio, draengine_shadow_waiting. */
void sch_shadow_metrics(const sch_shadow *sh, de_buf *out);

#endif
