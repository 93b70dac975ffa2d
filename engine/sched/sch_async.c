/*
 * sch_async.c - PreBind and Bind on worker threads (serve --parallel-binds),
 * as kube-scheduler runs its binding cycle in a goroutine once the pod is
 * assumed.
 *
 * The scheduler's thread still makes every decision and owns the graph: it
 * assumes the pod (claims allocated and reserved in memory, the pod counted
 * on its node), builds every request body of the pod from the graph, and
 * hands the job to a small pool of workers, each with its own connection
 * (kc_client_clone: one rate limiter, one set of counters).  A worker runs
 * its job's requests in order - per claim the finalizer and status writes,
 * the pod's nodeAllocatableResourceClaimStatuses, pods/binding - and
 * stops at the first failure.  The Scheduled Event, and every other Event
 * while the pool runs, goes to a queue (sch_evq.h).  A worker takes an
 * Event when no job has been handed over for SCH_EVENT_QUIET_NS, or when
 * --event-backlog Events wait, and then one before each job.  Not merely
 * "when no job waits": a worker runs out of jobs whenever pods arrive a
 * little slower than they bind, while the API server is still busy
 * creating them, and an Event then costs the burst as much as it would
 * inside the job.  So a burst binds at the pace of its own writes, its
 * Events follow it, and a queue at its bound slows the bindings instead
 * of losing Events.  A worker never touches the graph: finished jobs come
 * back through a queue (and a byte on a pipe for
 * the loop's poll) and the scheduler's thread applies them: the answers go
 * into the graph, and on a failure the assumption is undone exactly as the
 * synchronous path does (a claim whose write failed is un-assumed before it
 * is re-read).
 *
 * One claim never has two writes in flight, and never one out of order:
 * while a job writes a claim the claim is busy - a pod using it waits
 * (SP_HELD) until the job has been applied, and watch events for it are
 * kept (the newest one) and replayed then, through the stale-event guard:
 * otherwise the echo of our own finalizer write, which still shows the
 * claim unallocated, would undo the assumption and free its devices for
 * another pod.  Writes that need the graph between two requests (an
 * extended-resource claim to create, binding conditions to wait for) stay
 * on the scheduler's thread; so a claim with binding conditions is never
 * busy, and sch_wait.c's unreserve never races a job.  Jobs are not
 * retried here: a failed one sends its pod back to the queue, which
 * decides again on what the server answered.
 */
#define _POSIX_C_SOURCE 200809L
#include "sch_int.h"
#include "sch_evq.h"

#include "../base/jdump.h"

#include "../base/log.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SCH_MAX_WORKERS 64

static const de_origin API_ORIGIN = {"kube-api", 1, -1};

typedef enum stkind { ST_CLAIM, ST_NAR, ST_BIND, ST_EVENT } stkind;

typedef struct step {
    stkind kind;
    uint32_t clid, cns, cname; /* ST_CLAIM: the claim (interned namespace, name, held) */
    bool pending;              /* allocated by this decision */
    bool add_finalizer, stamp;
    json_t *obj;   /* ST_CLAIM: the claim as decided on; ST_NAR: the statuses; ST_EVENT: the pod */
    json_t *alloc; /* ST_CLAIM: status.allocation, or NULL */
    json_t *entry; /* ST_CLAIM: the reservedFor entry */
    json_t *resp;  /* ST_CLAIM: the status write's answer */
} step;

typedef struct job {
    struct job *next;
    uint32_t pod_ns, pod_name, pod_uid, node_name; /* interned, held by reference (sch_int.h) */
    char ns[256], name[256], uid[128], node[256];
    step *st;
    uint32_t n, ok; /* steps; those that succeeded (a prefix) */
    de_rc rc;
    de_err err;
} job;

typedef struct busy {
    bool has_ev;
    kc_evtype t;
    json_t *ev; /* the newest watch event of the claim while it was busy */
    /* the newest of those kept undecoded (sch_async_drop): its version,
     * its watch line; how many were kept so */
    uint64_t dropped_rv;
    char *line;
    size_t line_len;
    uint32_t dropped;
} busy;

typedef struct sch_pool sch_pool;
struct sch_pool {
    unsigned n;
    pthread_t *th;
    kc_client **cl;
    bool *started;
    pthread_mutex_t mu;
    pthread_cond_t cv, ev_cv;                 /* ev_cv: an Event answered */
    job *todo, *todo_tail, *done, *done_tail; /* mu */
    sch_evq evq;                              /* mu */
    uint64_t last_job_ns;                     /* mu: when a job was last handed over */
    bool flushing;                            /* mu: the stop's flush, Events due at once */
    const char *identity;
    bool stop, abandon;                       /* mu */
    uint64_t write_until;                     /* mu: sch_set_write_deadline */
    int fd[2];                                /* a byte per finished job */
    /* the scheduler's thread only */
    uint32_t in_flight;
    de_map busy; /* claim key (held) -> busy * */
    vec32 held;
};

typedef struct wctx {
    sch_pool *p;
    unsigned i;
} wctx;

/* ---- workers ------------------------------------------------------------------------------- */

/* Checked before every request: after a lost lease, or past the instant
 * until which the lease is sure to be ours, nothing more is sent. */
static const char *abandoned(sch_pool *p)
{
    pthread_mutex_lock(&p->mu);
    const char *why = p->abandon                         ? "leadership lost"
                      : de_now_ns() >= p->write_until ? "leadership not renewed in time"
                                                         : NULL;
    pthread_mutex_unlock(&p->mu);
    return why;
}

static void run_job(sch_pool *p, kc_client *cl, job *j)
{
    bool nar_written = false;
    de_err e;
    de_err_clear(&e);
    for (uint32_t i = 0; i < j->n; i++) {
        step *st = &j->st[i];
        de_rc rc = DE_OK;
        const char *why = abandoned(p);
        if (why) {
            j->rc = de_errf(&j->err, DE_EAPI, "pod %s/%s: not written: %s", j->ns, j->name, why);
            return;
        }
        switch (st->kind) {
        case ST_CLAIM: {
            json_t *obj = st->obj;
            st->obj = NULL;
            char cname[256];
            const char *nm = json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
            snprintf(cname, sizeof cname, "%s", nm ? nm : "");
            rc = sch_claim_put(cl, obj, st->add_finalizer, st->alloc, st->stamp, st->entry, &st->resp, &e);
            if (rc != DE_OK)
                de_err_prefix(&e, "claim %s/%s", j->ns, cname);
            break;
        }
        case ST_NAR: {
            json_t *statuses = st->obj; /* consumed */
            st->obj = NULL;
            rc = sch_write_pod_nar(cl, j->ns, j->name, j->uid, statuses, &e);
            if (rc != DE_OK)
                de_err_prefix(&e, "pod %s/%s: nodeAllocatableResourceClaimStatuses", j->ns, j->name);
            nar_written = rc == DE_OK;
            break;
        }
        case ST_BIND:
            rc = sch_pod_bind_http(cl, j->ns, j->name, j->uid, j->node, &e);
            if (rc != DE_OK && nar_written) {
                de_err ce;
                de_err_clear(&ce);
                if (sch_write_pod_nar(cl, j->ns, j->name, j->uid, NULL, &ce) != DE_OK)
                    DE_INFO(1, "pod %s/%s: nodeAllocatableResourceClaimStatuses not cleared: %s", j->ns, j->name,
                            ce.msg);
            }
            break;
        case ST_EVENT: {
            char note[1100];
            snprintf(note, sizeof note, "Successfully assigned %s/%s to %s", j->ns, j->name, j->node);
            pthread_mutex_lock(&p->mu);
            sch_evq_push(&p->evq, st->obj, "Normal", "Scheduled", "Binding", note);
            pthread_cond_signal(&p->cv);
            pthread_mutex_unlock(&p->mu);
            break;
        }
        }
        if (rc != DE_OK) {
            j->rc = rc;
            j->err = e;
            return;
        }
        j->ok = i + 1;
    }
}

/* A de_now_ns instant as the deadline of a timed wait (the pool's
 * conditions count on CLOCK_MONOTONIC). */
static struct timespec mono_ts(uint64_t ns)
{
    return (struct timespec){(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
}

/* With p->mu held: one Event, written with the lock released. */
static void write_one_event(sch_pool *p, kc_client *cl)
{
    sch_evitem *it = sch_evq_pop(&p->evq);
    pthread_mutex_unlock(&p->mu);
    const char *why = abandoned(p);
    bool ok = sch_evq_write(cl, it, p->identity, why);
    pthread_mutex_lock(&p->mu);
    sch_evq_done(&p->evq, ok, why != NULL);
    pthread_cond_broadcast(&p->ev_cv);
}

static void *worker(void *arg)
{
    wctx *w = arg;
    sch_pool *p = w->p;
    kc_client *cl = p->cl[w->i];
    free(w);
    pthread_mutex_lock(&p->mu);
    for (;;) {
        if (p->stop && !p->todo)
            break;
        uint64_t due = p->flushing ? 0 : p->last_job_ns + SCH_EVENT_QUIET_NS;
        if (p->evq.head && (p->evq.n >= p->evq.backlog || (!p->todo && de_now_ns() >= due))) {
            write_one_event(p, cl);
            continue;
        }
        job *j = p->todo;
        if (!j) {
            if (p->evq.head) {
                struct timespec ts = mono_ts(due);
                pthread_cond_timedwait(&p->cv, &p->mu, &ts);
            } else {
                pthread_cond_wait(&p->cv, &p->mu);
            }
            continue;
        }
        p->todo = j->next;
        if (!p->todo)
            p->todo_tail = NULL;
        pthread_mutex_unlock(&p->mu);
        run_job(p, cl, j);
        pthread_mutex_lock(&p->mu);
        j->next = NULL;
        if (p->done_tail)
            p->done_tail->next = j;
        else
            p->done = j;
        p->done_tail = j;
        ssize_t wr = write(p->fd[1], "x", 1); /* full pipe: the loop has a byte to read already */
        (void)wr;
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* ---- the scheduler's side ------------------------------------------------------------------- */

void sch_async_start(sch_sched *s, unsigned workers)
{
    if (!s->cl || workers < 2)
        return;
    if (workers > SCH_MAX_WORKERS)
        workers = SCH_MAX_WORKERS;
    sch_pool *p = de_xcalloc(1, sizeof *p);
    if (pipe(p->fd) != 0) {
        DE_WARN("binding workers: pipe: %s; binding on the scheduler's thread", strerror(errno));
        free(p);
        return;
    }
    for (int k = 0; k < 2; k++) {
        fcntl(p->fd[k], F_SETFL, fcntl(p->fd[k], F_GETFL) | O_NONBLOCK);
        fcntl(p->fd[k], F_SETFD, FD_CLOEXEC);
    }
    pthread_mutex_init(&p->mu, NULL);
    /* the workers' timed waits count on de_now_ns's clock */
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&p->cv, &ca);
    pthread_cond_init(&p->ev_cv, &ca);
    pthread_condattr_destroy(&ca);
    p->evq.backlog = s->o.event_backlog ? s->o.event_backlog : SCH_EVENT_BACKLOG_DEFAULT;
    p->identity = s->o.identity;
    p->write_until = s->write_until;
    de_map_init(&p->busy);
    p->n = workers;
    p->th = de_xcalloc(workers, sizeof *p->th);
    p->cl = de_xcalloc(workers, sizeof *p->cl);
    p->started = de_xcalloc(workers, sizeof *p->started);
    /* signals go to the scheduler's thread: workers start with all blocked */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    unsigned ok = 0;
    for (unsigned i = 0; i < workers; i++) {
        p->cl[i] = kc_client_clone(s->cl);
        kc_client_set_write_deadline(p->cl[i], s->write_until);
        wctx *w = de_xmalloc(sizeof *w);
        *w = (wctx){p, i};
        int err = pthread_create(&p->th[i], NULL, worker, w);
        if (err) {
            DE_WARN("binding worker %u not started: %s", i, strerror(err));
            free(w);
            continue;
        }
        p->started[i] = true;
        ok++;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    s->pool = p;
    if (!ok) {
        DE_WARN("no binding worker started: binding on the scheduler's thread");
        sch_async_free(s);
    }
}

void sch_async_set_deadline(sch_sched *s, uint64_t until_ns)
{
    sch_pool *p = s->pool;
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->write_until = until_ns;
    pthread_mutex_unlock(&p->mu);
    /* and inside a step: its second request, retries */
    for (unsigned i = 0; i < p->n; i++)
        kc_client_set_write_deadline(p->cl[i], until_ns);
}

int sch_bind_fd(const sch_sched *s) { return s->pool ? s->pool->fd[0] : -1; }

uint32_t sch_async_in_flight(const sch_sched *s) { return s->pool ? s->pool->in_flight : 0; }

bool sch_async_full(const sch_sched *s) { return s->pool && s->pool->in_flight >= 2 * s->pool->n; }

bool sch_async_claim_busy(const sch_sched *s, uint64_t claim_key)
{
    uint64_t v;
    return s->pool && de_map_get(&s->pool->busy, claim_key, &v);
}

bool sch_async_drop(sch_sched *s, uint64_t claim_key, uint64_t rv, const char *line, size_t len)
{
    uint64_t v;
    if (!s->pool || !de_map_get(&s->pool->busy, claim_key, &v))
        return false;
    busy *b = (busy *)(uintptr_t)v;
    b->dropped++;
    if (rv > b->dropped_rv) {
        b->dropped_rv = rv;
        free(b->line);
        b->line = de_xmalloc(len);
        memcpy(b->line, line, len);
        b->line_len = len;
    }
    return true;
}

bool sch_async_defer(sch_sched *s, kc_evtype t, json_t *obj, uint64_t claim_key)
{
    uint64_t v;
    if (!s->pool || !de_map_get(&s->pool->busy, claim_key, &v))
        return false;
    busy *b = (busy *)(uintptr_t)v;
    json_decref(b->ev);
    b->ev = json_incref(obj);
    b->t = t;
    b->has_ev = true;
    return true;
}

void sch_async_hold(sch_sched *s, uint32_t idx)
{
    spod *sp = sch_pod(s, idx);
    sp->state = SP_HELD;
    sp->waits = 0;
    vec32 *h = &s->pool->held;
    if (h->n == h->cap) {
        h->cap = h->cap ? h->cap * 2 : 16;
        h->v = de_xrealloc(h->v, h->cap * sizeof *h->v);
    }
    h->v[h->n++] = idx;
}

/* On the scheduler's thread: the interner is not shared with the workers. */
static void job_free(sch_sched *s, job *j)
{
    sch_key_release(s, sch_key(j->pod_ns, j->pod_name));
    de_intern_release(s->in, j->pod_uid);
    de_intern_release(s->in, j->node_name);
    for (uint32_t i = 0; i < j->n; i++) {
        if (j->st[i].kind == ST_CLAIM)
            sch_key_release(s, sch_key(j->st[i].cns, j->st[i].cname));
        json_decref(j->st[i].obj);
        json_decref(j->st[i].alloc);
        json_decref(j->st[i].entry);
        json_decref(j->st[i].resp);
    }
    free(j->st);
    free(j);
}

de_rc sch_async_submit(sch_sched *s, uint32_t idx, uint32_t pid, const sch_choice *c, de_err *e)
{
    sch_pool *p = s->pool;
    const dg_pod *pod = dg_pod_get(s->g, pid);
    job *j = de_xcalloc(1, sizeof *j);
    j->pod_ns = pod->meta.ns;
    j->pod_name = pod->meta.name;
    j->pod_uid = pod->meta.uid;
    j->node_name = c->node_name;
    sch_key_retain(s, sch_key(j->pod_ns, j->pod_name));
    de_intern_retain(s->in, j->pod_uid);
    de_intern_retain(s->in, j->node_name);
    snprintf(j->ns, sizeof j->ns, "%s", de_intern_str(s->in, pod->meta.ns));
    snprintf(j->name, sizeof j->name, "%s", de_intern_str(s->in, pod->meta.name));
    snprintf(j->uid, sizeof j->uid, "%s", de_intern_str(s->in, pod->meta.uid));
    snprintf(j->node, sizeof j->node, "%s", de_intern_str(s->in, c->node_name));
    j->st = de_xcalloc(c->nclaims + 3, sizeof *j->st);
    /* PreBind: every claim of the pod that is not yet reserved for it, in
     * pod order, each once. */
    for (uint32_t i = 0; i < c->nclaims; i++) {
        uint32_t clid = c->claims[i];
        bool dup = false;
        for (uint32_t k = 0; k < j->n; k++)
            dup |= j->st[k].clid == clid;
        if (clid == DG_NONE || dup)
            continue;
        const dg_allocation *a = NULL;
        for (uint32_t k = 0; k < c->npending; k++)
            if (c->pending[k] == clid)
                a = &c->out.claims[k].alloc;
        const char *ruid = j->uid;
        json_t *entry;
        if (c->group && c->group[i]) {
            ruid = c->group_uid;
            entry = json_pack("{s:s, s:s, s:s, s:s}", "apiGroup", "scheduling.k8s.io", "resource", "podgroups",
                              "name", c->group_name, "uid", c->group_uid);
        } else {
            entry = json_pack("{s:s, s:s, s:s}", "resource", "pods", "name", j->name, "uid", j->uid);
        }
        json_t *cj = dg_claim_json(s->g, clid);
        if (!cj) {
            json_decref(entry);
            job_free(s, j);
            return de_errf(e, DE_EINTERNAL, "claim %u has no JSON", clid);
        }
        if (!a && sch_reserved_for(cj, ruid)) {
            json_decref(entry);
            continue;
        }
        const dg_claim *cl = dg_claim_get(s->g, clid);
        step *st = &j->st[j->n++];
        *st = (step){ST_CLAIM, clid, cl->meta.ns, cl->meta.name, a != NULL, false, sch_binding_gates(s),
                     de_json_copy(cj), a ? sch_alloc_json(s, a) : NULL, entry, NULL};
        st->add_finalizer = !sch_has_finalizer(st->obj);
        sch_key_retain(s, sch_key(st->cns, st->cname));
    }
    if (c->nar && c->nar->n)
        j->st[j->n++] = (step){.kind = ST_NAR, .clid = DG_NONE, .obj = al_nar_json(s->g, c->nar)};
    j->st[j->n++] = (step){.kind = ST_BIND, .clid = DG_NONE};
    if (!s->o.no_events)
        j->st[j->n++] = (step){.kind = ST_EVENT, .clid = DG_NONE, .obj = dg_pod_ref_json(s->g, pid)};
    for (uint32_t i = 0; i < j->n; i++)
        if (j->st[i].kind == ST_CLAIM) {
            uint64_t key = sch_key(j->st[i].cns, j->st[i].cname);
            sch_key_retain(s, key);
            de_map_put(&p->busy, key, (uint64_t)(uintptr_t)de_xcalloc(1, sizeof(busy)));
        }
    al_pod_assume(s->al, pid, c->node_name, c->nar);
    spod *sp = sch_pod(s, idx);
    sp->state = SP_BINDING;
    sp->node = c->node_name;
    p->in_flight++;
    pthread_mutex_lock(&p->mu);
    p->last_job_ns = de_now_ns();
    if (p->todo_tail)
        p->todo_tail->next = j;
    else
        p->todo = j;
    p->todo_tail = j;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
    return DE_OK;
}

/* The newest event of a claim while its job ran was kept undecoded.  At
 * or below the version the job wrote last, it is that write's echo (or an
 * older one): the graph holds its object already, only the requeue is
 * owed.  Above it (someone else wrote the claim meanwhile, or the job's
 * write failed), it is decoded now and observed as it would have been. */
static void dropped_newest(sch_sched *s, const step *st, uint64_t key, const busy *b)
{
    uint64_t mine;
    if (de_map_get(&s->assumed_rv, key, &mine) && b->dropped_rv <= mine) {
        sch_claim_echoed(s, key, b->dropped);
        return;
    }
    kc_wevent ev;
    if (kc_watch_decode(b->line, b->line_len, &ev) && ev.type == KC_W_MODIFIED)
        sch_observe(s, KC_RES_CLAIMS, KC_EV_MODIFIED, ev.obj);
    else if (dg_claim_find(s->g, st->cns, st->cname) == st->clid)
        sch_refresh_claim(s, st->clid); /* it peeked but does not decode: read it */
    json_decref(ev.obj);
}

/* Apply one finished job on the scheduler's thread. */
static void finish(sch_sched *s, job *j)
{
    /* the claims written: their answers into the graph */
    for (uint32_t i = 0; i < j->ok; i++) {
        step *st = &j->st[i];
        if (st->kind != ST_CLAIM || !st->resp)
            continue;
        de_err ae;
        de_err_clear(&ae);
        sch_remember_written(s, st->resp);
        if (dg_apply(s->g, st->resp, &API_ORIGIN, NULL, &ae) != DE_OK)
            DE_WARN("claim written but not re-read: %s", ae.msg);
    }
    /* Unreserve: from the claim whose write failed on, un-assume, then
     * re-read (sch_bind.c says why in that order).  Claims written before
     * stay allocated and reserved for the pod: its next attempt binds to
     * their node. */
    if (j->rc != DE_OK && j->ok < j->n && j->st[j->ok].kind == ST_CLAIM) {
        for (uint32_t i = j->ok; i < j->n; i++) {
            step *st = &j->st[i];
            if (st->kind != ST_CLAIM || dg_claim_find(s->g, st->cns, st->cname) != st->clid)
                continue;
            if (st->pending)
                dg_claim_deallocate(s->g, st->clid, NULL);
            sch_refresh_claim(s, st->clid);
        }
    }
    /* the claims are free again: the events kept meanwhile, through the
     * stale-event guard */
    for (uint32_t i = 0; i < j->n; i++) {
        step *st = &j->st[i];
        if (st->kind != ST_CLAIM)
            continue;
        uint64_t key = sch_key(st->cns, st->cname), v;
        if (!de_map_get(&s->pool->busy, key, &v))
            continue;
        de_map_del(&s->pool->busy, key);
        busy *b = (busy *)(uintptr_t)v;
        bool ok;
        uint64_t kept = b->has_ev ? sch_parse_rv(json_string_value(json_object_get(
                                                     json_object_get(b->ev, "metadata"), "resourceVersion")),
                                                 &ok)
                                  : 0;
        if (b->dropped_rv > kept)
            dropped_newest(s, st, key, b);
        else if (b->has_ev)
            sch_observe(s, KC_RES_CLAIMS, b->t, b->ev);
        json_decref(b->ev);
        free(b->line);
        free(b);
        sch_key_release(s, key);
    }
    /* the pod: the same incarnation (uid), still waiting for this job */
    uint32_t pid = dg_pod_find(s->g, j->pod_ns, j->pod_name);
    bool same = pid != DG_NONE && dg_pod_get(s->g, pid)->meta.uid == j->pod_uid;
    uint32_t idx = sch_pod_lookup(s, j->pod_ns, j->pod_name);
    spod *sp = idx == UINT32_MAX ? NULL : sch_pod(s, idx);
    bool mine = same && sp && sp->state == SP_BINDING;
    if (sp && sp->state == SP_BINDING && !same) {
        sch_activate(s, idx); /* a new pod of that name, never scheduled */
        sp = NULL;
    }
    if (j->rc == DE_OK) {
        s->st.scheduled++;
        s->by_result[0]++;
        DE_INFO(2, "Successfully assigned %s/%s to %s", j->ns, j->name, j->node);
        if (mine)
            sp->state = SP_ASSUMED;
        return;
    }
    if (same)
        al_pod_forget(s->al, pid);
    if (j->rc == DE_ECONFLICT) {
        s->st.conflicts++;
        DE_INFO(1, "conflict, retrying: pod %s/%s: %s", j->ns, j->name, j->err.msg);
        if (mine) {
            if (sp->attempts % 8 == 0)
                sch_to_backoff(s, idx);
            else
                sch_activate(s, idx);
        }
    } else {
        s->st.bind_errors++;
        s->by_result[2]++;
        DE_WARN("binding failed: pod %s/%s: %s", j->ns, j->name, j->err.msg);
        if (mine)
            sch_to_backoff(s, idx);
    }
}

void sch_async_drain(sch_sched *s)
{
    sch_pool *p = s->pool;
    if (!p)
        return;
    char buf[256];
    while (read(p->fd[0], buf, sizeof buf) > 0)
        ;
    pthread_mutex_lock(&p->mu);
    job *list = p->done;
    p->done = p->done_tail = NULL;
    pthread_mutex_unlock(&p->mu);
    if (!list)
        return;
    while (list) {
        job *j = list;
        list = j->next;
        finish(s, j);
        job_free(s, j);
        p->in_flight--;
    }
    /* pods that waited for a busy claim try again (their claim may still
     * be busy with another job: they are held again then) */
    uint32_t n = p->held.n;
    p->held.n = 0;
    for (uint32_t i = 0; i < n; i++)
        if (sch_pod(s, p->held.v[i])->state == SP_HELD)
            sch_activate(s, p->held.v[i]);
}

bool sch_async_event(sch_sched *s, json_t *regarding, const char *type, const char *reason, const char *action,
                     const char *note)
{
    sch_pool *p = s->pool;
    if (!p)
        return false;
    pthread_mutex_lock(&p->mu);
    sch_evq_push(&p->evq, regarding, type, reason, action, note);
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
    return true;
}

void sch_event_counts_get(const sch_sched *s, sch_event_counts *out)
{
    *out = (sch_event_counts){0};
    sch_pool *p = s->pool;
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    out->pending = p->evq.n + p->evq.writing;
    out->written = p->evq.written;
    out->failed = p->evq.failed;
    out->dropped = p->evq.dropped;
    pthread_mutex_unlock(&p->mu);
}

/* The Events still queued, for at most SCH_EVENT_FLUSH_NS: a stop is not
 * held up for long by what is only a record. */
static void flush_events(sch_pool *p)
{
    uint64_t until = de_now_ns() + SCH_EVENT_FLUSH_NS;
    pthread_mutex_lock(&p->mu);
    p->flushing = true;
    pthread_cond_broadcast(&p->cv);
    while ((p->evq.n || p->evq.writing) && de_now_ns() < until) {
        struct timespec ts = mono_ts(until);
        pthread_cond_timedwait(&p->ev_cv, &p->mu, &ts);
    }
    uint32_t left = p->evq.n;
    sch_evq_clear(&p->evq);
    p->flushing = false;
    pthread_mutex_unlock(&p->mu);
    if (left)
        DE_WARN("%u events not written: the stop's %llu s for them ran out", left,
                (unsigned long long)(SCH_EVENT_FLUSH_NS / 1000000000ull));
}

void sch_bind_finish(sch_sched *s, bool abandon)
{
    sch_pool *p = s->pool;
    if (!p)
        return;
    if (abandon) {
        pthread_mutex_lock(&p->mu);
        p->abandon = true;
        pthread_mutex_unlock(&p->mu);
        for (unsigned i = 0; i < p->n; i++)
            kc_client_set_write_deadline(p->cl[i], 0);
    }
    while (p->in_flight) {
        struct pollfd pf = {p->fd[0], POLLIN, 0};
        poll(&pf, 1, 100);
        sch_async_drain(s);
    }
    if (abandon) {
        pthread_mutex_lock(&p->mu);
        uint32_t left = p->evq.n;
        sch_evq_clear(&p->evq);
        pthread_mutex_unlock(&p->mu);
        if (left)
            DE_INFO(1, "%u events not written: stopping on an error or a lost lease", left);
    } else {
        flush_events(p);
    }
}

void sch_async_free(sch_sched *s)
{
    sch_pool *p = s->pool;
    if (!p)
        return;
    sch_bind_finish(s, true);
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (unsigned i = 0; i < p->n; i++) {
        if (p->started[i])
            pthread_join(p->th[i], NULL);
        kc_client_free(p->cl[i]);
    }
    size_t it = 0;
    uint64_t k, v;
    while (de_map_next(&p->busy, &it, &k, &v)) {
        busy *b = (busy *)(uintptr_t)v;
        json_decref(b->ev);
        free(b->line);
        free(b);
        sch_key_release(s, k);
    }
    de_map_destroy(&p->busy);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    pthread_cond_destroy(&p->ev_cv);
    close(p->fd[0]);
    close(p->fd[1]);
    free(p->held.v);
    free(p->th);
    free(p->cl);
    free(p->started);
    free(p);
    s->pool = NULL;
}
