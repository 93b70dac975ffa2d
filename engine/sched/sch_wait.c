/*
 * sch_wait.c - PreBind's wait for device binding conditions (KEP-5007,
 * gates DRADeviceBindingConditions and DRAResourceClaimDeviceStatus).
 *
 * A pod whose allocated devices carry bindingConditions is not bound when
 * its claims are written: kube-scheduler waits in PreBind until the driver
 * reports every condition True in the claim's status.devices, at most
 * bindingTimeout (600 s; --dra-binding-timeout).  draengine does the same
 * without holding its loop: the pod becomes SP_WAITING (its claims written
 * and reserved, the pod counted on the node, status.nominatedNodeName set
 * as kube-scheduler sets it for a pod whose PreBind has work), and is
 * looked at again on every event of one of its claims and when its
 * deadline passes, while other pods are scheduled.
 *
 *  - Ready (al_binding_state, claims in pod order, the first one not ready
 *    decides as upstream's isPodReadyForBinding): pods/binding, then the
 *    Scheduled Event.
 *  - A bindingFailureConditions condition True, the claim's
 *    allocationTimestamp older than the timeout, or the wait's own deadline:
 *    a FailedScheduling Event with upstream's error ("running PreBind
 *    plugin "DynamicResources": device binding failed: claim=..."), then
 *    Unreserve - the pod leaves each claim's reservedFor (a strategic merge
 *    patch deleting its entry), its nodeAllocatableResourceClaimStatuses
 *    are cleared - and the pod backs off.  Its next attempt finds the claim
 *    failed or timed out, not available on any node (al_node_matches_allocated),
 *    so PostFilter deallocates it (allocation, reservedFor and devices
 *    cleared, as upstream's deallocateOrDeletePodClaims) and the claim's
 *    update brings the pod back to allocate anew.
 */
#include "sch_int.h"

#include "../base/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

bool sch_wait_needed(sch_sched *s, const uint32_t *claims, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        const dg_claim *c = claims[i] == DG_NONE ? NULL : dg_claim_get(s->g, claims[i]);
        if (al_claim_has_binding_conditions(s->al, c))
            return true;
    }
    return false;
}

static void waiting_del(sch_sched *s, uint32_t idx)
{
    for (uint32_t i = 0; i < s->waiting.n; i++)
        if (s->waiting.v[i] == idx) {
            s->waiting.v[i] = s->waiting.v[--s->waiting.n];
            return;
        }
}

void sch_wait_drop(sch_sched *s, uint32_t idx)
{
    spod *sp = sch_pod(s, idx);
    waiting_del(s, idx);
    for (uint32_t i = 0; i < sp->nwait_keys; i++)
        sch_key_release(s, sp->wait_keys[i]);
    free(sp->wait_keys);
    sp->wait_keys = NULL;
    sp->nwait_keys = 0;
}

void sch_wait_begin(sch_sched *s, uint32_t idx, uint32_t node_name, const uint32_t *claims, uint32_t n,
                    bool nar_written)
{
    spod *sp = sch_pod(s, idx);
    sp->state = SP_WAITING;
    sp->node = node_name;
    sp->wait_until = de_now_ns() + s->o.binding_timeout_ns;
    sp->wait_nar = nar_written;
    for (uint32_t i = 0; i < sp->nwait_keys; i++)
        sch_key_release(s, sp->wait_keys[i]);
    free(sp->wait_keys);
    sp->wait_keys = de_xmalloc((n ? n : 1) * sizeof *sp->wait_keys);
    sp->nwait_keys = 0;
    for (uint32_t i = 0; i < n; i++) {
        const dg_claim *c = claims[i] == DG_NONE ? NULL : dg_claim_get(s->g, claims[i]);
        if (c) {
            sp->wait_keys[sp->nwait_keys++] = sch_key(c->meta.ns, c->meta.name);
            sch_key_retain(s, sch_key(c->meta.ns, c->meta.name));
        }
    }
    if (s->waiting.n == s->waiting.cap) {
        s->waiting.cap = s->waiting.cap ? s->waiting.cap * 2 : 16;
        s->waiting.v = de_xrealloc(s->waiting.v, s->waiting.cap * sizeof *s->waiting.v);
    }
    s->waiting.v[s->waiting.n++] = idx;
    s->st.waiting_started++;
}

/* Unreserve: the pod leaves the reservedFor of its claims; its node
 * allocatable statuses go. */
static void unreserve(sch_sched *s, spod *sp, const dg_pod *p)
{
    if (!s->cl)
        return;
    const char *ns = de_intern_str(s->in, sp->ns), *name = de_intern_str(s->in, sp->name);
    const char *uid = p ? de_intern_str(s->in, p->meta.uid) : "";
    for (uint32_t i = 0; i < sp->nwait_keys; i++) {
        uint32_t clid = dg_claim_find(s->g, (uint32_t)(sp->wait_keys[i] >> 32), (uint32_t)sp->wait_keys[i]);
        const dg_claim *c = clid == DG_NONE ? NULL : dg_claim_get(s->g, clid);
        if (!c || !c->allocated || !p)
            continue;
        bool mine = false;
        for (uint32_t k = 0; k < c->nreserved_for && !mine; k++)
            mine = c->reserved_for[k].uid == p->meta.uid;
        if (!mine)
            continue;
        de_err e;
        de_err_clear(&e);
        if (sch_claim_unreserve(s, clid, uid, &e) != DE_OK)
            DE_INFO(1, "unreserve: claim %s/%s, pod %s: %s", ns, de_intern_str(s->in, c->meta.name), name, e.msg);
    }
    if (sp->wait_nar) {
        de_err e;
        de_err_clear(&e);
        if (sch_pod_nar_clear(s, ns, name, uid, &e) != DE_OK)
            DE_INFO(1, "pod %s/%s: nodeAllocatableResourceClaimStatuses not cleared: %s", ns, name, e.msg);
    }
}

static void fail(sch_sched *s, uint32_t idx, const char *label, const char *err)
{
    spod *sp = sch_pod(s, idx);
    uint32_t pid = dg_pod_find(s->g, sp->ns, sp->name);
    const dg_pod *p = pid == DG_NONE ? NULL : dg_pod_get(s->g, pid);
    char msg[2600];
    snprintf(msg, sizeof msg, "running PreBind plugin \"DynamicResources\": %s", err);
    DE_INFO(1, "binding conditions %s: pod %s/%s: %s", label, de_intern_str(s->in, sp->ns),
            de_intern_str(s->in, sp->name), msg);
    if (p)
        sch_pod_event(s, pid, "Warning", "FailedScheduling", "Scheduling", msg);
    unreserve(s, sp, p);
    if (pid != DG_NONE)
        al_pod_forget(s->al, pid);
    sch_wait_drop(s, idx);
    sp->node = 0;
    if (!strcmp(label, "timeout"))
        s->st.waiting_timeout++;
    else
        s->st.waiting_failed++;
    s->st.bind_errors++;
    s->by_result[2]++;
    sch_to_backoff(s, idx);
}

static void done(sch_sched *s, uint32_t idx)
{
    spod *sp = sch_pod(s, idx);
    uint32_t pid = dg_pod_find(s->g, sp->ns, sp->name);
    const dg_pod *p = pid == DG_NONE ? NULL : dg_pod_get(s->g, pid);
    if (!p) {
        sch_wait_drop(s, idx);
        sch_pod_forget(s, idx);
        return;
    }
    de_err e;
    de_err_clear(&e);
    uint32_t node = sp->node;
    de_rc rc = sch_bind_pod(s, pid, node, &e);
    if (rc != DE_OK) {
        char err[DE_ERR_MSG_MAX + 64];
        snprintf(err, sizeof err, "binding: %s", e.msg);
        /* not a PreBind failure: upstream's Unreserve all the same */
        fail(s, idx, "bind", err);
        return;
    }
    sch_wait_drop(s, idx);
    sp->state = SP_ASSUMED;
    sp->node = node;
    s->st.scheduled++;
    s->st.waiting_ready++;
    s->by_result[0]++;
    char note[1200];
    snprintf(note, sizeof note, "Successfully assigned %s/%s to %s", de_intern_str(s->in, sp->ns),
             de_intern_str(s->in, sp->name), de_intern_str(s->in, node));
    DE_INFO(2, "%s", note);
    sch_pod_event(s, pid, "Normal", "Scheduled", "Binding", note);
}

/* isPodReadyForBinding over the pod's claims, in pod order. */
static void check(sch_sched *s, uint32_t idx, bool deadline)
{
    spod *sp = sch_pod(s, idx);
    int64_t now = (int64_t)time(NULL);
    for (uint32_t i = 0; i < sp->nwait_keys; i++) {
        uint32_t clid = dg_claim_find(s->g, (uint32_t)(sp->wait_keys[i] >> 32), (uint32_t)sp->wait_keys[i]);
        const dg_claim *c = clid == DG_NONE ? NULL : dg_claim_get(s->g, clid);
        char why[1500], err[1600];
        int st = c ? al_binding_state(s->al, c, now, why, sizeof why) : AL_BIND_PENDING;
        if (st == AL_BIND_FAILED) {
            snprintf(err, sizeof err, "device binding failed: %s", why);
            fail(s, idx, "failed", err);
            return;
        }
        if (st == AL_BIND_TIMEOUT) {
            snprintf(err, sizeof err, "device binding timeout: %s", why);
            fail(s, idx, "timeout", err);
            return;
        }
        if (st == AL_BIND_PENDING) {
            if (deadline)
                fail(s, idx, "timeout", "device binding timeout: context deadline exceeded");
            return;
        }
    }
    done(s, idx);
}

void sch_wait_claim(sch_sched *s, uint64_t key)
{
    /* a pod may leave the list while it is walked: walk a copy */
    uint32_t n = s->waiting.n;
    if (!n)
        return;
    uint32_t *v = de_xmalloc(n * sizeof *v);
    memcpy(v, s->waiting.v, n * sizeof *v);
    for (uint32_t i = 0; i < n; i++) {
        spod *sp = sch_pod(s, v[i]);
        if (sp->state != SP_WAITING)
            continue;
        for (uint32_t k = 0; k < sp->nwait_keys; k++)
            if (sp->wait_keys[k] == key) {
                check(s, v[i], false);
                break;
            }
    }
    free(v);
}

void sch_wait_due(sch_sched *s)
{
    uint32_t n = s->waiting.n;
    if (!n)
        return;
    uint64_t now = de_now_ns();
    uint32_t *v = de_xmalloc(n * sizeof *v);
    memcpy(v, s->waiting.v, n * sizeof *v);
    for (uint32_t i = 0; i < n; i++) {
        spod *sp = sch_pod(s, v[i]);
        if (sp->state == SP_WAITING && sp->wait_until <= now)
            check(s, v[i], true);
    }
    free(v);
}

uint64_t sch_wait_next_ns(const sch_sched *s)
{
    uint64_t now = de_now_ns(), best = UINT64_MAX;
    for (uint32_t i = 0; i < s->waiting.n; i++) {
        const spod *sp = &s->pods[s->waiting.v[i]];
        uint64_t d = sp->wait_until > now ? sp->wait_until - now : 0;
        best = DE_MIN(best, d);
    }
    return best;
}

void sch_wait_first_check(sch_sched *s, uint32_t idx)
{
    check(s, idx, false);
}
