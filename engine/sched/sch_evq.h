/*
 * sch_evq.h - the Events serve writes while binding workers run, queued
 * for the workers (sch_async.c says when a worker takes one).
 *
 * An Event is the record of a decision, not part of it.  Written inside
 * the binding job, the Scheduled Event held the job's slot for one more
 * round trip and took API server time from the next pod's writes; written
 * from the scheduler's thread, a FailedScheduling Event stopped scheduling
 * for a round trip.  kube-scheduler writes its Events off both paths too,
 * from a queue of 1,000 that drops what does not fit.  This queue drops
 * nothing: its bound (`--event-backlog`) is where Events stop yielding to
 * bindings, not where they are lost.  Each entry keeps the instant of the
 * decision, which becomes the Event's eventTime however late it is
 * written.  The queue is guarded by the pool's mutex.
 */
#ifndef SCH_EVQ_H
#define SCH_EVQ_H

#include "../../drivers/kube/kc.h"

#include <stdint.h>

#define SCH_EVENT_BACKLOG_DEFAULT 4096u
/* Events wait until no binding job has been handed over for this long. */
#define SCH_EVENT_QUIET_NS 100000000ull
/* At a graceful stop, how long the Events still queued may take. */
#define SCH_EVENT_FLUSH_NS 5000000000ull

typedef struct sch_evitem sch_evitem;

typedef struct sch_evq {
    sch_evitem *head, *tail;
    uint32_t n;       /* queued */
    uint32_t writing; /* taken by a worker, not yet answered */
    uint32_t backlog; /* at or above it, Events go before bindings */
    uint64_t written, failed, dropped;
} sch_evq;

/* Queue a copy of the Event, stamped now (regarding is retained).  Caller
 * holds the lock. */
void sch_evq_push(sch_evq *q, json_t *regarding, const char *type, const char *reason, const char *action,
                  const char *note);
/* The oldest, or NULL.  Caller holds the lock; writing is counted. */
sch_evitem *sch_evq_pop(sch_evq *q);
/* Write it (no lock held), then free it.  With `why` set (leadership
 * lost): dropped, and said why at level 1.  Returns whether it
 * was written; the caller counts under the lock (sch_evq_done). */
bool sch_evq_write(kc_client *cl, sch_evitem *it, const char *identity, const char *why);
void sch_evq_done(sch_evq *q, bool written, bool dropped);
void sch_evq_clear(sch_evq *q); /* the rest counted as dropped */

#endif
