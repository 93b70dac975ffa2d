/*
 * kc_lease.c - leader election through a coordination.k8s.io/v1 Lease,
 * the client-go way.
 *
 * Clock skew: a candidate never compares the holder's renewTime with its own
 * wall clock.  It remembers when (on its own monotonic clock) it last saw the
 * lease record change, and takes over only once leaseDuration has passed
 * since then without a change.  Conflicting takeovers are settled by the
 * resourceVersion: exactly one PUT wins, the other gets 409.
 *
 * A leader renews every retry period; if no renewal succeeds within the
 * renew deadline it reports the loss and must stop (kube-scheduler exits),
 * which keeps "two leaders at once" impossible as long as
 * renewDeadline < leaseDuration.
 */
#define _POSIX_C_SOURCE 200809L
#include "kc_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct kc_lease {
    kc_client *cl;
    char *ns, *name, *identity;
    uint64_t lease_ns, renew_ns, retry_ns;
    bool leader;
    uint64_t next_try, last_renew;
    uint64_t renew_start; /* when the last successful attempt began (before its GET) */
    char observed[1024]; /* holder|renewTime|acquireTime|transitions of the last record seen */
    uint64_t observed_at;
    char holder[256];
};

kc_lease *kc_lease_new(kc_client *cl, const kc_lease_opts *o)
{
    kc_lease *l = de_xcalloc(1, sizeof *l);
    l->cl = cl;
    l->ns = de_xstrdup(o->ns && *o->ns ? o->ns : "kube-system");
    l->name = de_xstrdup(o->name && *o->name ? o->name : "draengine");
    l->identity = de_xstrdup(o->identity && *o->identity ? o->identity : "draengine");
    l->lease_ns = o->lease_ns ? o->lease_ns : 15000000000ull;
    l->renew_ns = o->renew_deadline_ns ? o->renew_deadline_ns : 10000000000ull;
    l->retry_ns = o->retry_ns ? o->retry_ns : 2000000000ull;
    return l;
}

void kc_lease_free(kc_lease *l)
{
    if (!l)
        return;
    free(l->ns);
    free(l->name);
    free(l->identity);
    free(l);
}

bool kc_lease_is_leader(const kc_lease *l) { return l->leader; }

uint64_t kc_lease_valid_until(const kc_lease *l)
{
    return l->leader ? l->renew_start + l->renew_ns : 0;
}
const char *kc_lease_holder(const kc_lease *l) { return l->holder; }

uint64_t kc_lease_next_due_ns(const kc_lease *l)
{
    uint64_t now = de_now_ns();
    return l->next_try > now ? l->next_try - now : 0;
}

static void wall_now(char *buf, size_t cap)
{
    kc_format_microtime(de_wall_ns(), buf, cap);
}

static json_t *spec_for(const char *holder, int dur_s, const char *acquire,
                        json_int_t transitions)
{
    char now[64];
    wall_now(now, sizeof now);
    return json_pack("{s:s, s:i, s:s, s:s, s:I}", "holderIdentity", holder,
                     "leaseDurationSeconds", dur_s, "acquireTime", acquire ? acquire : now,
                     "renewTime", now, "leaseTransitions", transitions);
}

static void lease_path(kc_lease *l, char *buf, size_t cap, bool collection)
{
    if (collection)
        snprintf(buf, cap, "/apis/coordination.k8s.io/v1/namespaces/%s/leases", l->ns);
    else
        snprintf(buf, cap, "/apis/coordination.k8s.io/v1/namespaces/%s/leases/%s", l->ns, l->name);
}

/* One attempt; true when we hold the lease afterwards. */
static bool try_acquire_or_renew(kc_lease *l)
{
    char path[512];
    json_t *cur = NULL;
    de_err e;
    de_err_clear(&e);
    uint64_t now = de_now_ns();
    lease_path(l, path, sizeof path, false);
    de_rc rc = kc_request(l->cl, "GET", path, NULL, NULL, NULL, &cur, &e);
    int dur_s = (int)(l->lease_ns / 1000000000ull);
    if (rc == DE_ENOTFOUND) {
        json_t *obj = json_pack("{s:s, s:s, s:{s:s, s:s}, s:o}", "apiVersion",
                                "coordination.k8s.io/v1", "kind", "Lease", "metadata", "name",
                                l->name, "namespace", l->ns, "spec",
                                spec_for(l->identity, dur_s, NULL, 0));
        lease_path(l, path, sizeof path, true);
        rc = kc_request(l->cl, "POST", path, obj, NULL, NULL, NULL, &e);
        json_decref(obj);
        if (rc == DE_OK) {
            snprintf(l->holder, sizeof l->holder, "%s", l->identity);
            l->observed[0] = 0;
            l->observed_at = now;
            return true;
        }
        return false;
    }
    if (rc != DE_OK || !json_is_object(cur)) {
        json_decref(cur);
        return false;
    }
    json_t *spec = json_object_get(cur, "spec");
    const char *holder = json_string_value(json_object_get(spec, "holderIdentity"));
    const char *renew = json_string_value(json_object_get(spec, "renewTime"));
    const char *acq = json_string_value(json_object_get(spec, "acquireTime"));
    json_int_t trans = json_integer_value(json_object_get(spec, "leaseTransitions"));
    json_int_t their_dur = json_integer_value(json_object_get(spec, "leaseDurationSeconds"));
    char rec[1024];
    snprintf(rec, sizeof rec, "%s|%s|%s|%lld|%lld", holder ? holder : "", renew ? renew : "",
             acq ? acq : "", (long long)trans, (long long)their_dur);
    if (strcmp(rec, l->observed)) {
        snprintf(l->observed, sizeof l->observed, "%s", rec);
        l->observed_at = now;
    }
    snprintf(l->holder, sizeof l->holder, "%s", holder ? holder : "");
    bool mine = holder && !strcmp(holder, l->identity);
    uint64_t their_ns = their_dur > 0 ? (uint64_t)their_dur * 1000000000ull : l->lease_ns;
    if (holder && *holder && !mine && now < l->observed_at + their_ns) {
        json_decref(cur);
        return false; /* held by someone else and not expired */
    }
    json_t *upd = json_deep_copy(cur);
    json_object_set_new(upd, "spec", spec_for(l->identity, dur_s, mine ? acq : NULL,
                                              mine ? trans : trans + 1));
    json_decref(cur); /* acq pointed into it */
    rc = kc_request(l->cl, "PUT", path, upd, NULL, NULL, NULL, &e);
    json_decref(upd);
    if (rc != DE_OK)
        return false;
    snprintf(l->holder, sizeof l->holder, "%s", l->identity);
    l->observed_at = now;
    return true;
}

bool kc_lease_tick(kc_lease *l, bool *lost)
{
    if (lost)
        *lost = false;
    uint64_t now = de_now_ns();
    if (now < l->next_try)
        return l->leader;
    uint64_t start = now;
    bool ok = try_acquire_or_renew(l);
    now = de_now_ns();
    l->next_try = now + l->retry_ns;
    if (ok) {
        l->leader = true;
        l->last_renew = now;
        l->renew_start = start;
    } else if (l->leader && now - l->last_renew > l->renew_ns) {
        l->leader = false;
        if (lost)
            *lost = true;
    }
    return l->leader;
}

void kc_lease_release(kc_lease *l)
{
    if (!l->leader)
        return;
    char path[512];
    json_t *cur = NULL;
    de_err e;
    de_err_clear(&e);
    lease_path(l, path, sizeof path, false);
    if (kc_request(l->cl, "GET", path, NULL, NULL, NULL, &cur, &e) == DE_OK &&
        json_is_object(cur)) {
        json_t *spec = json_object_get(cur, "spec");
        const char *holder = json_string_value(json_object_get(spec, "holderIdentity"));
        if (holder && !strcmp(holder, l->identity)) {
            json_int_t trans = json_integer_value(json_object_get(spec, "leaseTransitions"));
            json_object_set_new(cur, "spec", spec_for("", 1, NULL, trans));
            kc_request(l->cl, "PUT", path, cur, NULL, NULL, NULL, &e);
        }
    }
    json_decref(cur);
    l->leader = false;
}
