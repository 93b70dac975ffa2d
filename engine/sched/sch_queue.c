/*
 * sch_queue.c - the pod table, the three queues (active FIFO, backoff heap,
 * unschedulable with a flush heap), the requeue indexes and the per-node
 * resource usage.
 *
 * Index entries are removed lazily: a pod leaving the waiting state is not
 * searched for in every vector it was added to; a requeue through an index
 * skips entries whose pod no longer waits for that reason.  Vectors are
 * emptied when they are used, so they cannot grow past the number of
 * failures since the last event on that key.
 */
#include "sch_int.h"

#include <stdlib.h>
#include <string.h>

static void vpush(vec32 *v, uint32_t x)
{
    if (v->n == v->cap) {
        v->cap = v->cap ? v->cap * 2 : 4;
        v->v = de_xrealloc(v->v, v->cap * sizeof *v->v);
    }
    v->v[v->n++] = x;
}

vec32 *sch_vec(sch_sched *s, uint64_t *slot)
{
    if (*slot == 0) {
        if (s->nfree_vecs) {
            *slot = s->free_vecs[--s->nfree_vecs];
        } else {
            if (s->nvecs == s->veccap) {
                s->veccap = s->veccap ? s->veccap * 2 : 64;
                s->vecs = de_xrealloc(s->vecs, s->veccap * sizeof *s->vecs);
            }
            memset(&s->vecs[s->nvecs], 0, sizeof s->vecs[s->nvecs]);
            *slot = ++s->nvecs;
        }
    }
    return &s->vecs[*slot - 1];
}

void sch_vec_drop(sch_sched *s, uint64_t v)
{
    free(s->vecs[v - 1].v);
    memset(&s->vecs[v - 1], 0, sizeof s->vecs[v - 1]);
    if (s->nfree_vecs == s->free_veccap) {
        s->free_veccap = s->free_veccap ? s->free_veccap * 2 : 64;
        s->free_vecs = de_xrealloc(s->free_vecs, s->free_veccap * sizeof *s->free_vecs);
    }
    s->free_vecs[s->nfree_vecs++] = (uint32_t)v;
}

/* ---- names held by reference (sch_int.h) ----------------------------------------- */

uint64_t sch_key_ref(sch_sched *s, const char *ns, const char *name)
{
    return sch_key(de_intern_ref(s->in, ns, strlen(ns)), de_intern_ref(s->in, name, strlen(name)));
}

uint64_t sch_key_find(const sch_sched *s, const char *ns, const char *name)
{
    uint32_t a = de_intern_find(s->in, ns, strlen(ns)), b = de_intern_find(s->in, name, strlen(name));
    return a == UINT32_MAX || b == UINT32_MAX ? SCH_NO_KEY : sch_key(a, b);
}

void sch_key_retain(sch_sched *s, uint64_t key)
{
    de_intern_retain(s->in, (uint32_t)(key >> 32));
    de_intern_retain(s->in, (uint32_t)key);
}

void sch_key_release(sch_sched *s, uint64_t key)
{
    de_intern_release(s->in, (uint32_t)(key >> 32));
    de_intern_release(s->in, (uint32_t)key);
}

/* ---- heaps ------------------------------------------------------------------ */

static void hpush(heap *h, uint64_t at, uint32_t pod)
{
    if (h->n == h->cap) {
        h->cap = h->cap ? h->cap * 2 : 64;
        h->v = de_xrealloc(h->v, h->cap * sizeof *h->v);
    }
    uint32_t i = h->n++;
    while (i > 0) {
        uint32_t p = (i - 1) / 2;
        if (h->v[p].at <= at)
            break;
        h->v[i] = h->v[p];
        i = p;
    }
    h->v[i] = (heapent){at, pod};
}

static heapent hpop(heap *h)
{
    heapent top = h->v[0], last = h->v[--h->n];
    uint32_t i = 0;
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && h->v[c + 1].at < h->v[c].at)
            c++;
        if (last.at <= h->v[c].at)
            break;
        h->v[i] = h->v[c];
        i = c;
    }
    if (h->n)
        h->v[i] = last;
    return top;
}

/* ---- pod table ----------------------------------------------------------------- */

spod *sch_pod(sch_sched *s, uint32_t idx) { return &s->pods[idx]; }

uint32_t sch_pod_lookup(sch_sched *s, uint32_t ns, uint32_t name)
{
    uint64_t v;
    return de_map_get(&s->pod_by_key, sch_key(ns, name), &v) ? (uint32_t)v : UINT32_MAX;
}

uint32_t sch_pod_ensure(sch_sched *s, uint32_t ns, uint32_t name)
{
    uint32_t idx = sch_pod_lookup(s, ns, name);
    if (idx != UINT32_MAX)
        return idx;
    if (s->nfree) {
        idx = s->free_slots[--s->nfree];
    } else {
        if (s->npods == s->podcap) {
            s->podcap = s->podcap ? s->podcap * 2 : 256;
            s->pods = de_xrealloc(s->pods, s->podcap * sizeof *s->pods);
        }
        idx = s->npods++;
    }
    memset(&s->pods[idx], 0, sizeof s->pods[idx]);
    s->pods[idx].ns = ns;
    s->pods[idx].name = name;
    s->pods[idx].first_seen = de_now_ns();
    sch_key_retain(s, sch_key(ns, name));
    de_map_put(&s->pod_by_key, sch_key(ns, name), idx);
    return idx;
}

/* The claim -> pods index (SchedulerPreQueueingHints) holds its keys by
 * reference; an entry goes when its last pod leaves it or its claim's
 * event empties it, so it stays as large as the pods waiting now. */
static void index_pod(sch_sched *s, uint64_t key, uint32_t idx)
{
    uint64_t *slot = de_map_slot(&s->claim_pods, key, 0);
    if (!*slot)
        sch_key_retain(s, key);
    vec32 *vec = sch_vec(s, slot);
    vpush(vec, idx);
}

static void index_del(sch_sched *s, uint64_t key, uint64_t v)
{
    de_map_del(&s->claim_pods, key);
    sch_vec_drop(s, v);
    sch_key_release(s, key);
}

/* Drop the pod's claim keys, and the pod from the index under each. */
static void unindex_claims(sch_sched *s, uint32_t idx)
{
    spod *p = &s->pods[idx];
    for (uint32_t i = 0; i < p->nclaims; i++) {
        uint64_t key = (uint64_t)p->claims[2 * i] << 32 | p->claims[2 * i + 1], v;
        if (s->o.pre_queueing_hints && de_map_get(&s->claim_pods, key, &v)) {
            vec32 *vec = &s->vecs[v - 1];
            uint32_t k = 0;
            for (uint32_t j = 0; j < vec->n; j++)
                if (vec->v[j] != idx)
                    vec->v[k++] = vec->v[j];
            vec->n = k;
            if (!k)
                index_del(s, key, v);
        }
    }
    for (uint32_t i = 0; i < p->nclaims; i++)
        sch_key_release(s, (uint64_t)p->claims[2 * i] << 32 | p->claims[2 * i + 1]);
    free(p->claims);
    p->claims = NULL;
    p->nclaims = 0;
}

void sch_pod_forget(sch_sched *s, uint32_t idx)
{
    spod *p = &s->pods[idx];
    if (p->state == SP_NONE && p->ns == 0 && p->name == 0)
        return;
    if (p->state == SP_WAITING || p->wait_keys)
        sch_wait_drop(s, idx);
    unindex_claims(s, idx);
    de_map_del(&s->pod_by_key, sch_key(p->ns, p->name));
    sch_key_release(s, sch_key(p->ns, p->name));
    free(p->last_msg);
    memset(p, 0, sizeof *p);
    if (s->nfree == s->freecap) {
        s->freecap = s->freecap ? s->freecap * 2 : 64;
        s->free_slots = de_xrealloc(s->free_slots, s->freecap * sizeof *s->free_slots);
    }
    s->free_slots[s->nfree++] = idx;
    /* Stale queue and heap entries are skipped: their state no longer
     * matches (a reused slot starts as SP_NONE until activated again, and
     * then the in_active flag guards the FIFO). */
}

/* ---- queues ----------------------------------------------------------------------- */

void sch_activate(sch_sched *s, uint32_t idx)
{
    spod *p = &s->pods[idx];
    p->state = SP_ACTIVE;
    p->waits = 0;
    if (p->in_active)
        return;
    p->in_active = true;
    if (s->alen == s->acap) {
        if (s->ahead > 0) {
            memmove(s->active, s->active + s->ahead, (s->alen - s->ahead) * sizeof *s->active);
            s->alen -= s->ahead;
            s->ahead = 0;
        }
        if (s->alen == s->acap) {
            s->acap = s->acap ? s->acap * 2 : 256;
            s->active = de_xrealloc(s->active, s->acap * sizeof *s->active);
        }
    }
    s->active[s->alen++] = idx;
}

uint32_t sch_pop_active(sch_sched *s)
{
    while (s->ahead < s->alen) {
        uint32_t idx = s->active[s->ahead++];
        spod *p = &s->pods[idx];
        if (!p->in_active)
            continue;
        p->in_active = false;
        if (p->state != SP_ACTIVE)
            continue;
        return idx;
    }
    s->ahead = s->alen = 0;
    return UINT32_MAX;
}

static uint64_t backoff_for(sch_sched *s, uint32_t attempts)
{
    if (!attempts)
        return 0; /* never attempted (only gated): no backoff, as upstream */
    uint64_t d = s->o.backoff_initial_ns;
    for (uint32_t i = 1; i < attempts && d && d < s->o.backoff_max_ns; i++)
        d *= 2;
    return DE_MIN(d, s->o.backoff_max_ns);
}

void sch_to_backoff(sch_sched *s, uint32_t idx)
{
    spod *p = &s->pods[idx];
    p->state = SP_BACKOFF;
    p->backoff_until = de_now_ns() + backoff_for(s, p->attempts);
    hpush(&s->ebackoff, p->backoff_until, idx);
}

void sch_to_unschedulable(sch_sched *s, uint32_t idx, unsigned waits, const uint64_t *claim_keys,
                          uint32_t nkeys)
{
    spod *p = &s->pods[idx];
    p->state = SP_UNSCHED;
    p->waits = (uint8_t)waits;
    p->backoff_until = de_now_ns() + backoff_for(s, p->attempts);
    p->unsched_since = de_now_ns();
    hpush(&s->flush, p->unsched_since + s->o.unschedulable_max_ns, idx);
    for (unsigned b = 0; b < WAIT_NBITS; b++)
        if (waits & (1u << b) && (1u << b) != WAIT_CLAIM && (1u << b) != WAIT_POD)
            vpush(&s->bucket[b], idx);
    unindex_claims(s, idx);
    if (nkeys) {
        p->claims = de_xmalloc(nkeys * 2 * sizeof *p->claims);
        for (uint32_t i = 0; i < nkeys; i++) {
            p->claims[2 * i] = (uint32_t)(claim_keys[i] >> 32);
            p->claims[2 * i + 1] = (uint32_t)claim_keys[i];
            sch_key_retain(s, claim_keys[i]);
            /* the index exists only for SchedulerPreQueueingHints */
            if (s->o.pre_queueing_hints)
                index_pod(s, claim_keys[i], idx);
        }
        p->nclaims = nkeys;
    }
}

void sch_leave_waiting(sch_sched *s, uint32_t idx)
{
    spod *p = &s->pods[idx];
    if (p->state == SP_BACKOFF && de_now_ns() < p->backoff_until)
        return; /* waits out its backoff already, in the heap it was put in */
    if (p->state == SP_UNSCHED || p->state == SP_BACKOFF) {
        s->st.requeued_by_event++;
        if (de_now_ns() >= p->backoff_until) {
            sch_activate(s, idx);
        } else {
            p->state = SP_BACKOFF;
            p->waits = 0;
            hpush(&s->backoff, p->backoff_until, idx);
        }
    }
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* A flush-heap entry is live while its pod is still unschedulable since the
 * time it was pushed for: every unschedulable pod has one. */
static bool flush_live(const sch_sched *s, heapent h)
{
    const spod *p = &s->pods[h.pod];
    return p->state == SP_UNSCHED && p->unsched_since + s->o.unschedulable_max_ns == h.at;
}

static bool pod_refs_claim(const spod *p, uint64_t key)
{
    for (uint32_t i = 0; i < p->nclaims; i++)
        if (((uint64_t)p->claims[2 * i] << 32 | p->claims[2 * i + 1]) == key)
            return true;
    return false;
}

void sch_requeue_claim(sch_sched *s, uint64_t key)
{
    if (!s->o.pre_queueing_hints) {
        /* every pod in the unschedulable pool gets the queueing hint, in
         * index order as a scan of all pods would give them; the pool is
         * the flush heap's live entries (a scan of every pod serve knew,
         * for every claim event, grew with the cluster) */
        uint32_t k = 0, *v = s->flush.n ? de_xmalloc(s->flush.n * sizeof *v) : NULL;
        for (uint32_t i = 0; i < s->flush.n; i++)
            if (flush_live(s, s->flush.v[i]))
                v[k++] = s->flush.v[i].pod;
        if (k)
            qsort(v, k, sizeof *v, cmp_u32);
        for (uint32_t i = 0; i < k; i++) {
            if (i && v[i] == v[i - 1])
                continue; /* pushed twice within one clock tick */
            s->st.hint_pods_checked++;
            if (pod_refs_claim(&s->pods[v[i]], key))
                sch_leave_waiting(s, v[i]);
        }
        free(v);
        return;
    }
    uint64_t v;
    s->st.prehint_narrowed++;
    if (!de_map_get(&s->claim_pods, key, &v))
        return;
    /* the entry goes now; its pods are index entries no more */
    vec32 *vec = &s->vecs[v - 1];
    uint32_t n = vec->n, *pods = vec->v;
    vec->v = NULL;
    vec->n = vec->cap = 0;
    sch_key_retain(s, key); /* for the comparisons below */
    index_del(s, key, v);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t idx = pods[i];
        spod *p = &s->pods[idx];
        s->st.hint_pods_checked++;
        if (p->state == SP_UNSCHED && pod_refs_claim(p, key))
            sch_leave_waiting(s, idx);
    }
    sch_key_release(s, key);
    free(pods);
}

static const de_interner *g_key_in; /* for cmp_key (qsort has no context) */
static int cmp_key(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    int c = de_intern_cmp(g_key_in, (uint32_t)(x >> 32), (uint32_t)(y >> 32));
    return c ? c : de_intern_cmp(g_key_in, (uint32_t)x, (uint32_t)y);
}

/* Does the claim under this key (in the graph now) ask for the class? */
static bool claim_uses_class(sch_sched *s, uint64_t key, uint32_t class_name)
{
    uint32_t clid = dg_claim_find(s->g, (uint32_t)(key >> 32), (uint32_t)key);
    const dg_claim *c = clid == DG_NONE ? NULL : dg_claim_get(s->g, clid);
    for (uint32_t r = 0; c && r < c->spec.nrequests; r++) {
        const dg_request *rq = &c->spec.requests[r];
        if (rq->has_exactly && rq->exactly.class_name == class_name)
            return true;
        for (uint32_t k = 0; k < rq->nsubs; k++)
            if (rq->subs[k].class_name == class_name)
                return true;
    }
    return false;
}

/* A class event helps the pods waiting for a claim of that class.  The
 * claims looked at are those pods wait for (the claim index, or every
 * unschedulable pod's claims without SchedulerPreQueueingHints), never
 * every claim: a class -> claims index would have to follow every claim
 * of a busy cluster. */
void sch_requeue_class(sch_sched *s, uint32_t class_name)
{
    if (class_name == UINT32_MAX)
        return;
    if (!s->o.pre_queueing_hints) {
        for (uint32_t idx = 0; idx < s->npods; idx++) {
            spod *p = &s->pods[idx];
            if (p->state != SP_UNSCHED)
                continue;
            for (uint32_t i = 0; i < p->nclaims; i++)
                if (claim_uses_class(s, (uint64_t)p->claims[2 * i] << 32 | p->claims[2 * i + 1], class_name)) {
                    sch_leave_waiting(s, idx);
                    break;
                }
        }
        return;
    }
    uint64_t *keys = de_xmalloc((s->claim_pods.n + 1) * sizeof *keys), k, v;
    uint32_t n = 0;
    for (size_t it = 0; de_map_next(&s->claim_pods, &it, &k, &v);)
        if (claim_uses_class(s, k, class_name))
            keys[n++] = k;
    /* map order: sorted by namespace and name, so the pods are requeued in
     * an order that does not depend on the map's or the interner's history */
    g_key_in = s->in;
    qsort(keys, n, sizeof *keys, cmp_key);
    for (uint32_t i = 0; i < n; i++)
        sch_requeue_claim(s, keys[i]);
    free(keys);
}

void sch_requeue_bucket(sch_sched *s, unsigned bit)
{
    unsigned b = 0;
    while ((1u << b) != bit)
        b++;
    vec32 *vec = &s->bucket[b];
    uint32_t n = vec->n;
    vec->n = 0;
    for (uint32_t i = 0; i < n; i++) {
        spod *p = &s->pods[vec->v[i]];
        if (p->state == SP_UNSCHED && (p->waits & bit))
            sch_leave_waiting(s, vec->v[i]);
    }
}

/* Heap entries are dropped lazily: an entry is live while its pod still backs
 * off until that time (a pod that left and came back has a newer entry). */
static bool backing_off(const sch_sched *s, heapent h)
{
    const spod *p = &s->pods[h.pod];
    return p->state == SP_BACKOFF && p->backoff_until == h.at;
}

/* SchedulerPopFromBackoffQ: a backoff keeps a failing pod from crowding out
 * the others; with no other pod to decide it only delays this one, so an
 * idle scheduler takes the pod whose backoff ends first (upstream's
 * activeQ pops its backoffQ when it is empty).  Only pods that an event
 * moved are taken: a pod whose attempt or writes failed (ebackoff, upstream's
 * error backoff queue) waits its backoff out, or a persistent error would
 * be retried in a busy loop; unschedulable pods waiting for an event are in
 * neither heap and stay where they are. */
uint32_t sch_pop_backoff(sch_sched *s)
{
    while (s->backoff.n) {
        heapent h = hpop(&s->backoff);
        if (backing_off(s, h)) {
            s->st.popped_from_backoff++;
            sch_activate(s, h.pod);
            return sch_pop_active(s);
        }
    }
    return UINT32_MAX;
}

static void promote_heap(sch_sched *s, heap *hp, uint64_t now)
{
    while (hp->n && hp->v[0].at <= now) {
        heapent h = hpop(hp);
        if (backing_off(s, h))
            sch_activate(s, h.pod);
    }
}

void sch_promote_due(sch_sched *s)
{
    uint64_t now = de_now_ns();
    promote_heap(s, &s->backoff, now);
    promote_heap(s, &s->ebackoff, now);
    while (s->flush.n && s->flush.v[0].at <= now) {
        heapent h = hpop(&s->flush);
        if (flush_live(s, h)) {
            s->st.flushed++;
            sch_activate(s, h.pod);
        }
    }
}

uint64_t sch_next_due_ns(const sch_sched *s)
{
    uint64_t now = de_now_ns(), best = sch_wait_next_ns(s);
    if (s->ahead < s->alen && !sch_async_full(s)) /* full: a finished job wakes the loop */
        return 0;
    const heap *hs[3] = {&s->backoff, &s->ebackoff, &s->flush};
    for (unsigned i = 0; i < 3; i++)
        if (hs[i]->n)
            best = DE_MIN(best, hs[i]->v[0].at > now ? hs[i]->v[0].at - now : 0);
    return best;
}


void sch_queue_free(sch_sched *s)
{
    /* the names go back to the graph's interner, which outlives us */
    for (uint32_t i = 0; i < s->npods; i++)
        if (s->pods[i].ns || s->pods[i].name)
            sch_pod_forget(s, i);
    uint64_t k, v;
    for (size_t it = 0; de_map_next(&s->assumed_rv, &it, &k, &v);)
        sch_key_release(s, k);
    for (uint32_t i = 0; i < s->npods; i++) {
        free(s->pods[i].claims);
        free(s->pods[i].last_msg);
        free(s->pods[i].wait_keys);
    }
    free(s->free_vecs);
    free(s->pods);
    free(s->waiting.v);
    free(s->free_slots);
    free(s->active);
    free(s->backoff.v);
    free(s->ebackoff.v);
    free(s->flush.v);
    for (unsigned b = 0; b < WAIT_NBITS; b++)
        free(s->bucket[b].v);
    for (uint32_t i = 0; i < s->nvecs; i++)
        free(s->vecs[i].v);
    free(s->vecs);
    free(s->nodes);
    de_map_destroy(&s->pod_by_key);
    de_map_destroy(&s->claim_pods);
    de_map_destroy(&s->assumed_rv);
}
