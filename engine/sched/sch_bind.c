/*
 * sch_bind.c - Reserve, PreBind and Bind: assume the allocation in the
 * graph, write the claim finalizer and status (each with the
 * resourceVersion it was decided on), bind the pod, and undo the in-memory
 * assumption when a write fails.  Also the stale-event guard and Events.
 */
#include "sch_int.h"

#include "../base/jdump.h"
#include "../base/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FINALIZER "resource.kubernetes.io/delete-protection"

static const de_origin API_ORIGIN = {"kube-api", 1, -1};

uint64_t sch_parse_rv(const char *rv, bool *ok)
{
    char *end = NULL;
    *ok = rv && *rv;
    if (!*ok)
        return 0;
    unsigned long long v = strtoull(rv, &end, 10);
    *ok = end && !*end;
    return v;
}

static const char *md_str(json_t *o, const char *k)
{
    const char *v = json_string_value(json_object_get(json_object_get(o, "metadata"), k));
    return v ? v : "";
}

/* An event older than the version draengine itself wrote would undo an
 * allocation the graph already holds: ignore it until the watch catches up.
 * (An entry holds its key by reference; a key never interned has none.) */
bool sch_claim_event_is_stale(sch_sched *s, json_t *obj)
{
    uint64_t key = sch_key_find(s, md_str(obj, "namespace"), md_str(obj, "name")), mine;
    if (!de_map_get(&s->assumed_rv, key, &mine))
        return false;
    bool ok;
    uint64_t rv = sch_parse_rv(md_str(obj, "resourceVersion"), &ok);
    if (ok && rv < mine)
        return true;
    sch_forget_written(s, key);
    return false;
}

/* An echo of a write whose answer is in the graph already, dropped before
 * it is decoded: decoding and re-applying it was a tenth of serve's work per
 * pod.  At or below the version draengine wrote last, a claim's MODIFIED
 * event is either older (the guard above would ignore it) or the very object
 * the write answered with; of the latter only the requeue is kept.  The
 * remembered version is not forgotten as the guard does: older events may
 * still wait in the informer's queue behind this line, and they must still
 * be found stale (the next newer event forgets it).  While a binding job
 * writes the claim, its events wait for the job: the newest is kept as text
 * (sch_async_drop), and the job's end decodes it only if it is newer than
 * what the job wrote. */
bool sch_skip_event(void *sched, kc_res res, const kc_peek *pk, const char *line, size_t len)
{
    sch_sched *s = sched;
    if (res != KC_RES_CLAIMS || pk->type != KC_W_MODIFIED)
        return false;
    uint64_t key = sch_key_find(s, pk->ns, pk->name), mine;
    bool ok;
    uint64_t rv = sch_parse_rv(pk->rv, &ok);
    if (key == SCH_NO_KEY || !ok)
        return false;
    if (sch_async_drop(s, key, rv, line, len))
        return true;
    if (!de_map_get(&s->assumed_rv, key, &mine) || rv > mine)
        return false;
    if (rv < mine) {
        s->st.stale_events_ignored++;
        return true;
    }
    sch_claim_echoed(s, key, 1);
    return true;
}

/* n echoes of the claim's last write were dropped: what observing them
 * would still have done beyond applying an object the graph holds. */
void sch_claim_echoed(sch_sched *s, uint64_t key, uint32_t n)
{
    s->st.echoes_skipped += n;
    sch_requeue_claim(s, key);
    sch_wait_claim(s, key);
}

void sch_remember_written(sch_sched *s, json_t *obj)
{
    bool ok;
    uint64_t rv = sch_parse_rv(md_str(obj, "resourceVersion"), &ok), old;
    if (!ok)
        return;
    uint64_t key = sch_key_ref(s, md_str(obj, "namespace"), md_str(obj, "name"));
    if (de_map_get(&s->assumed_rv, key, &old))
        sch_key_release(s, key); /* the entry holds it already */
    de_map_put(&s->assumed_rv, key, rv);
}

void sch_forget_written(sch_sched *s, uint64_t key)
{
    if (de_map_del(&s->assumed_rv, key))
        sch_key_release(s, key);
}

void sch_pod_event(sch_sched *s, uint32_t pid, const char *type, const char *reason, const char *action,
                   const char *note)
{
    if (!s->cl || s->o.no_events)
        return;
    json_t *reg = dg_pod_ref_json(s->g, pid);
    sch_event(s, reg, type, reason, action, note);
    json_decref(reg);
}

void sch_event(sch_sched *s, json_t *regarding, const char *type, const char *reason,
               const char *action, const char *note)
{
    if (!s->cl || s->o.no_events || !regarding)
        return;
    if (sch_async_event(s, regarding, type, reason, action, note))
        return;
    kc_event ev = {regarding, type, reason, action, note, "draengine", s->o.identity};
    de_err e;
    de_err_clear(&e);
    if (kc_event_create(s->cl, &ev, &e) != DE_OK)
        DE_INFO(2, "event not written: %s", e.msg);
}

/* Re-read a claim from the API into the graph (after a failed write).  Its
 * version is remembered like a written one: a watch event older than it,
 * delivered afterwards, must not undo it. */
void sch_refresh_claim(sch_sched *s, uint32_t clid)
{
    const dg_claim *c = dg_claim_get(s->g, clid);
    if (!c || !s->cl)
        return;
    char ns[256], name[256];
    snprintf(ns, sizeof ns, "%s", de_intern_str(s->in, c->meta.ns));
    snprintf(name, sizeof name, "%s", de_intern_str(s->in, c->meta.name));
    json_t *fresh = NULL;
    de_err e;
    de_err_clear(&e);
    de_rc rc = kc_get(s->cl, KC_RES_CLAIMS, ns, name, &fresh, &e);
    if (rc == DE_OK && fresh) {
        sch_forget_written(s, sch_key(c->meta.ns, c->meta.name));
        sch_remember_written(s, fresh);
        if (dg_apply(s->g, fresh, &API_ORIGIN, NULL, &e) != DE_OK)
            DE_WARN("claim %s/%s: %s", ns, name, e.msg);
    } else if (rc == DE_ENOTFOUND) {
        dg_remove(s->g, DG_KIND_RESOURCE_CLAIM, ns, name, &e);
    }
    json_decref(fresh);
}

bool sch_has_finalizer(json_t *claim)
{
    json_t *f = json_object_get(json_object_get(claim, "metadata"), "finalizers");
    size_t i;
    json_t *v;
    json_array_foreach(f, i, v) {
        if (json_is_string(v) && !strcmp(json_string_value(v), FINALIZER))
            return true;
    }
    return false;
}

bool sch_reserved_for(json_t *claim, const char *uid)
{
    json_t *rf = json_object_get(json_object_get(claim, "status"), "reservedFor");
    size_t i;
    json_t *v;
    json_array_foreach(rf, i, v) {
        const char *u = json_string_value(json_object_get(v, "uid"));
        if (u && !strcmp(u, uid))
            return true;
    }
    return false;
}

typedef struct consumer {
    const char *api_group, *resource, *name, *uid;
} consumer;

/* status.reservedFor entry of a consumer. */
static json_t *reserve_entry(const consumer *who)
{
    json_t *ent = json_pack("{s:s, s:s, s:s}", "resource", who->resource, "name", who->name, "uid", who->uid);
    if (who->api_group && *who->api_group)
        json_object_set_new(ent, "apiGroup", json_string(who->api_group));
    return ent;
}

/* KEP-5007: allocationTimestamp and the PreBind wait need both gates. */
bool sch_binding_gates(sch_sched *s)
{
    const de_gates *g = al_gates(s->al);
    return g->on[DE_GATE_DEVICE_BINDING_CONDITIONS] && g->on[DE_GATE_RESOURCE_CLAIM_DEVICE_STATUS];
}

json_t *sch_alloc_json(sch_sched *s, const dg_allocation *a)
{
    dg_allocation stamped = *a;
    if (sch_binding_gates(s) && !stamped.allocation_time)
        stamped.allocation_time = (int64_t)time(NULL);
    return dg_encode_allocation(s->g, &stamped);
}

/* The writes of one claim, on any thread (no graph, only the JSON given):
 * the finalizer when asked (plain update), then the status update with
 * `alloc` (or, with `stamp`, a timestamp on an allocation that has none:
 * upstream's bindClaim stamps it whenever it reserves) and the reservation
 * `entry` unless the claim already has it.  `obj` is consumed. */
de_rc sch_claim_put(kc_client *cl, json_t *obj, bool add_finalizer, json_t *alloc, bool stamp, json_t *entry,
                    json_t **resp, de_err *e)
{
    *resp = NULL;
    if (add_finalizer) {
        json_t *md = json_object_get(obj, "metadata");
        json_t *fin = json_object_get(md, "finalizers");
        if (!json_is_array(fin)) {
            fin = json_array();
            json_object_set_new(md, "finalizers", fin);
        }
        json_array_append_new(fin, json_string(FINALIZER));
        /* The status write needs only the version this one made: the
         * status subresource takes nothing else from the body but status
         * (metadata and spec stay the server's), and the status cannot have
         * changed in between, or this write would have met a 409. */
        kc_peek pk;
        de_rc rc = kc_claim_update_peek(cl, obj, &pk, e);
        if (rc != DE_OK) {
            json_decref(obj);
            return rc;
        }
        json_object_set_new(md, "resourceVersion", json_string(pk.rv));
    }
    json_t *st = json_object_get(obj, "status");
    if (!json_is_object(st)) {
        st = json_object();
        json_object_set_new(obj, "status", st);
    }
    if (alloc) {
        json_object_set_new(st, "allocation", de_json_copy(alloc));
    } else if (stamp) {
        json_t *al = json_object_get(st, "allocation");
        if (json_is_object(al) && !json_object_get(al, "allocationTimestamp")) {
            char ts[40];
            time_t now = time(NULL);
            struct tm tmv;
            gmtime_r(&now, &tmv);
            strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", &tmv);
            json_object_set_new(al, "allocationTimestamp", json_string(ts));
        }
    }
    const char *uid = json_string_value(json_object_get(entry, "uid"));
    if (!sch_reserved_for(obj, uid ? uid : "")) {
        json_t *rf = json_object_get(st, "reservedFor");
        if (!json_is_array(rf)) {
            rf = json_array();
            json_object_set_new(st, "reservedFor", rf);
        }
        json_array_append_new(rf, de_json_copy(entry));
    }
    de_rc rc = kc_claim_update_status(cl, obj, resp, e);
    json_decref(obj);
    return rc;
}

/* Write one claim on the scheduler's thread; the answer goes into the graph. */
static de_rc write_status(sch_sched *s, json_t *obj, bool add_finalizer, const dg_allocation *a,
                          const consumer *who, de_err *e)
{
    json_t *alloc = a ? sch_alloc_json(s, a) : NULL, *entry = reserve_entry(who), *resp = NULL;
    de_rc rc = sch_claim_put(s->cl, obj, add_finalizer, alloc, sch_binding_gates(s), entry, &resp, e);
    json_decref(alloc);
    json_decref(entry);
    if (rc != DE_OK)
        return rc;
    if (resp) {
        de_err ae;
        de_err_clear(&ae);
        sch_remember_written(s, resp);
        if (dg_apply(s->g, resp, &API_ORIGIN, NULL, &ae) != DE_OK)
            DE_WARN("claim written but not re-read: %s", ae.msg);
        json_decref(resp);
    }
    return DE_OK;
}

static de_rc write_claim(sch_sched *s, uint32_t clid, const dg_allocation *a, const consumer *who,
                         de_err *e)
{
    json_t *cur = dg_claim_json(s->g, clid);
    if (!cur)
        return de_errf(e, DE_EINTERNAL, "claim %u has no JSON", clid);
    json_t *obj = json_deep_copy(cur);
    return write_status(s, obj, !sch_has_finalizer(obj), a, who, e);
}

/* KEP-5004: create the extended-resource claim for real, write its status,
 * then publish the request mappings in the pod's status. */
static de_rc write_ext_claim(sch_sched *s, const dg_pod *p, const sch_choice *c,
                             const dg_allocation *a, const char *pod, const char *uid, de_err *e)
{
    consumer who = {"", "pods", pod, uid};
    const char *ns = de_intern_str(s->in, p->meta.ns);
    json_t *body = json_deep_copy(c->ext_obj);
    json_object_set_new(json_object_get(body, "metadata"), "finalizers",
                        json_pack("[s]", FINALIZER));
    char path[512];
    snprintf(path, sizeof path, "/apis/resource.k8s.io/v1/namespaces/%s/resourceclaims", ns);
    json_t *created = NULL;
    de_rc rc = kc_request(s->cl, "POST", path, body, NULL, NULL, &created, e);
    json_decref(body);
    if (rc != DE_OK)
        return rc;
    if (!created)
        return de_errf(e, DE_EAPI, "creating the extended resource claim: empty answer");
    const char *cname = json_string_value(json_object_get(json_object_get(created, "metadata"), "name"));
    char claim_name[300];
    snprintf(claim_name, sizeof claim_name, "%s", cname ? cname : "");
    rc = write_status(s, created, false, a, &who, e);
    if (rc != DE_OK)
        return rc;
    /* pods/status, merge patch guarded by the pod's resourceVersion; the
     * content does not depend on the pod, so a conflict just re-reads it. */
    for (int attempt = 0; attempt < 3; attempt++) {
        json_t *cur = NULL;
        de_err ge;
        de_err_clear(&ge);
        rc = kc_get(s->cl, KC_RES_PODS, ns, pod, &cur, &ge);
        if (rc != DE_OK) {
            *e = ge;
            return rc;
        }
        const char *rv = json_string_value(json_object_get(json_object_get(cur, "metadata"), "resourceVersion"));
        json_t *patch = json_pack("{s:{s:s}, s:{s:{s:s, s:O}}}", "metadata", "resourceVersion",
                                  rv ? rv : "", "status", "extendedResourceClaimStatus",
                                  "resourceClaimName", claim_name, "requestMappings", c->ext_maps);
        json_decref(cur);
        char ppath[512];
        kc_object_path(KC_RES_PODS, ns, pod, "status", ppath, sizeof ppath);
        rc = kc_request(s->cl, "PATCH", ppath, patch, "application/merge-patch+json", NULL, NULL, e);
        json_decref(patch);
        if (rc != DE_ECONFLICT)
            break;
    }
    return rc;
}

/* PostFilter: a claim allocated for a node this pod cannot use, reserved
 * by nobody else, is deallocated so the next attempt can allocate it
 * anew (upstream picks one such claim; draengine takes the first in pod
 * order, for reproducibility). */
de_rc sch_deallocate(sch_sched *s, uint32_t clid, uint32_t pod_uid, de_err *e)
{
    const dg_claim *c = dg_claim_get(s->g, clid);
    if (!c || !c->allocated || !s->cl)
        return DE_ENOTFOUND;
    for (uint32_t i = 0; i < c->nreserved_for; i++)
        if (c->reserved_for[i].uid != pod_uid)
            return DE_ENOTFOUND;
    json_t *cur = dg_claim_json(s->g, clid);
    if (!cur)
        return DE_ENOTFOUND;
    json_t *obj = json_deep_copy(cur);
    json_t *st = json_object_get(obj, "status");
    if (json_is_object(st)) {
        json_object_del(st, "allocation");
        json_object_del(st, "reservedFor");
        json_object_del(st, "devices");
    }
    json_t *resp = NULL;
    de_rc rc = kc_claim_update_status(s->cl, obj, &resp, e);
    json_decref(obj);
    if (rc == DE_OK && resp) {
        de_err ae;
        de_err_clear(&ae);
        sch_remember_written(s, resp);
        if (dg_apply(s->g, resp, &API_ORIGIN, NULL, &ae) != DE_OK)
            DE_WARN("claim deallocated but not re-read: %s", ae.msg);
    } else if (rc != DE_OK) {
        sch_refresh_claim(s, clid);
    }
    json_decref(resp);
    return rc;
}

/* KEP-5517: pods/status nodeAllocatableResourceClaimStatuses, a merge
 * patch with the pod's UID as precondition (statuses NULL clears them:
 * upstream's Unreserve writes an explicit empty list). */
de_rc sch_write_pod_nar(kc_client *cl, const char *ns, const char *pod, const char *uid, json_t *statuses,
                        de_err *e)
{
    json_t *patch = json_pack("{s:{s:s}, s:{s:o}}", "metadata", "uid", uid, "status",
                              "nodeAllocatableResourceClaimStatuses", statuses ? statuses : json_array());
    char path[512];
    kc_object_path(KC_RES_PODS, ns, pod, "status", path, sizeof path);
    de_rc rc = kc_request(cl, "PATCH", path, patch, "application/merge-patch+json", NULL, NULL, e);
    json_decref(patch);
    return rc;
}

/* status.nominatedNodeName, which kube-scheduler publishes for a pod whose
 * PreBind has work before it runs it (NominatedNodeNameForExpectation). */
static de_rc patch_nominated(sch_sched *s, const char *ns, const char *pod, const char *uid, const char *node,
                             de_err *e)
{
    json_t *patch = json_pack("{s:{s:s}, s:{s:s}}", "metadata", "uid", uid, "status", "nominatedNodeName", node);
    char path[512];
    kc_object_path(KC_RES_PODS, ns, pod, "status", path, sizeof path);
    de_rc rc = kc_request(s->cl, "PATCH", path, patch, "application/merge-patch+json", NULL, NULL, e);
    json_decref(patch);
    return rc;
}

de_rc sch_pod_nar_clear(sch_sched *s, const char *ns, const char *pod, const char *uid, de_err *e)
{
    return sch_write_pod_nar(s->cl, ns, pod, uid, NULL, e);
}

/* Unreserve: remove one pod from a claim's reservedFor without reading the
 * claim first (upstream's strategic merge patch, guarded by the claim's
 * UID); the answer goes into the graph. */
de_rc sch_claim_unreserve(sch_sched *s, uint32_t clid, const char *pod_uid, de_err *e)
{
    const dg_claim *c = dg_claim_get(s->g, clid);
    if (!c)
        return DE_ENOTFOUND;
    char ns[256], name[256];
    snprintf(ns, sizeof ns, "%s", de_intern_str(s->in, c->meta.ns));
    snprintf(name, sizeof name, "%s", de_intern_str(s->in, c->meta.name));
    json_t *patch = json_pack("{s:{s:s}, s:{s:[{s:s, s:s}]}}", "metadata", "uid", de_intern_str(s->in, c->meta.uid),
                              "status", "reservedFor", "$patch", "delete", "uid", pod_uid);
    char path[600];
    kc_object_path(KC_RES_CLAIMS, ns, name, "status", path, sizeof path);
    json_t *resp = NULL;
    de_rc rc = kc_request(s->cl, "PATCH", path, patch, "application/strategic-merge-patch+json", NULL, &resp, e);
    json_decref(patch);
    if (rc == DE_OK && resp) {
        de_err ae;
        de_err_clear(&ae);
        sch_remember_written(s, resp);
        if (dg_apply(s->g, resp, &API_ORIGIN, NULL, &ae) != DE_OK)
            DE_WARN("claim unreserved but not re-read: %s", ae.msg);
    }
    json_decref(resp);
    return rc;
}

/* Bind: pods/binding; a 409 whose pod already names this node is our own
 * earlier binding.  The pod is then assumed on the node. */
de_rc sch_bind_pod(sch_sched *s, uint32_t pid, uint32_t node_name, de_err *e)
{
    const dg_pod *p = dg_pod_get(s->g, pid);
    if (!p)
        return de_errf(e, DE_ENOTFOUND, "pod #%u is gone", pid);
    char ns[256], name[256], uid[128], node[256];
    snprintf(ns, sizeof ns, "%s", de_intern_str(s->in, p->meta.ns));
    snprintf(name, sizeof name, "%s", de_intern_str(s->in, p->meta.name));
    snprintf(uid, sizeof uid, "%s", de_intern_str(s->in, p->meta.uid));
    snprintf(node, sizeof node, "%s", de_intern_str(s->in, node_name));
    return sch_pod_bind_http(s->cl, ns, name, uid, node, e);
}

de_rc sch_pod_bind_http(kc_client *cl, const char *ns, const char *name, const char *uid, const char *node,
                        de_err *e)
{
    de_rc rc = kc_pod_bind(cl, ns, name, uid, node, e);
    if (rc == DE_ECONFLICT) {
        json_t *cur = NULL;
        de_err ge;
        de_err_clear(&ge);
        if (kc_get(cl, KC_RES_PODS, ns, name, &cur, &ge) == DE_OK) {
            const char *nn =
                json_string_value(json_object_get(json_object_get(cur, "spec"), "nodeName"));
            if (nn && !strcmp(nn, node))
                rc = DE_OK; /* our earlier bind went through */
            else if (nn && *nn)
                rc = de_errf(e, DE_ECONFLICT, "pod %s/%s was bound to %s by someone else", ns,
                             name, nn);
        }
        json_decref(cur);
    }
    return rc;
}

de_rc sch_bind(sch_sched *s, uint32_t idx, uint32_t pid, const sch_choice *c, bool *waiting, bool *in_flight,
               de_err *e)
{
    *waiting = false;
    *in_flight = false;
    spod *sp = sch_pod(s, idx);
    const dg_pod *p = dg_pod_get(s->g, pid);
    char ns[256], name[256], uid[128], node[256];
    snprintf(ns, sizeof ns, "%s", de_intern_str(s->in, p->meta.ns));
    snprintf(name, sizeof name, "%s", de_intern_str(s->in, p->meta.name));
    snprintf(uid, sizeof uid, "%s", de_intern_str(s->in, p->meta.uid));
    snprintf(node, sizeof node, "%s", de_intern_str(s->in, c->node_name));
    dg_consumer me = {0, de_intern_cstr(s->in, "pods"), p->meta.name, p->meta.uid};

    /* Reserve: assume in memory first. */
    bool *assumed = de_xcalloc(c->npending + 1, sizeof *assumed);
    de_rc rc = DE_OK;
    for (uint32_t i = 0; i < c->npending && rc == DE_OK; i++) {
        rc = dg_claim_set_allocation(s->g, c->pending[i], &c->out.claims[i].alloc, e);
        if (rc == DE_OK) {
            assumed[i] = true;
            dg_consumer who = me;
            bool group = false;
            for (uint32_t k = 0; c->group && k < c->nclaims; k++)
                if (c->claims[k] == c->pending[i] && c->group[k])
                    group = true;
            if (group) /* the group's name and UID by reference: the graph takes its own */
                who = (dg_consumer){de_intern_cstr(s->in, "scheduling.k8s.io"), de_intern_cstr(s->in, "podgroups"),
                                    de_intern_ref(s->in, c->group_name, strlen(c->group_name)),
                                    de_intern_ref(s->in, c->group_uid, strlen(c->group_uid))};
            dg_claim_add_reservation(s->g, c->pending[i], &who, e);
            if (group) {
                de_intern_release(s->in, who.name);
                de_intern_release(s->in, who.uid);
            }
        }
    }
    if (rc != DE_OK) {
        for (uint32_t i = 0; i < c->npending; i++)
            if (assumed[i])
                dg_claim_deallocate(s->g, c->pending[i], NULL);
        free(assumed);
        return rc;
    }
    if (!s->cl) { /* dry run: the assumption is the result */
        free(assumed);
        goto bound;
    }
    /* PreBind and Bind on a worker (sch_async.c), except the rare writes
     * that need the graph between requests: an extended-resource claim to
     * create, binding conditions to wait for. */
    if (sch_async_on(s) && c->ext_clid == DG_NONE && !sch_wait_needed(s, c->claims, c->nclaims)) {
        rc = sch_async_submit(s, idx, pid, c, e);
        if (rc != DE_OK)
            for (uint32_t i = 0; i < c->npending; i++)
                dg_claim_deallocate(s->g, c->pending[i], NULL);
        free(assumed);
        *in_flight = rc == DE_OK;
        return rc;
    }
    /* PreBind: every claim of the pod that is not yet reserved for it. */
    for (uint32_t i = 0; i < c->nclaims && rc == DE_OK; i++) {
        uint32_t clid = c->claims[i];
        if (clid == DG_NONE)
            continue;
        const dg_allocation *a = NULL;
        for (uint32_t k = 0; k < c->npending; k++)
            if (c->pending[k] == clid)
                a = &c->out.claims[k].alloc;
        consumer who = {"", "pods", name, uid};
        if (c->group && c->group[i])
            who = (consumer){"scheduling.k8s.io", "podgroups", c->group_name, c->group_uid};
        json_t *cj = dg_claim_json(s->g, clid);
        if (!a && cj && sch_reserved_for(cj, who.uid))
            continue;
        if (clid == c->ext_clid)
            rc = write_ext_claim(s, p, c, a, name, uid, e);
        else
            rc = write_claim(s, clid, a, &who, e);
        if (rc != DE_OK) {
            de_err_prefix(e, "claim %s/%s", ns,
                          de_intern_str(s->in, dg_claim_get(s->g, clid)->meta.name));
            /* Unreserve: whatever was not written goes back to the server's
             * version; claims already written stay allocated and reserved
             * for this pod, and the next attempt binds to their node.  The
             * in-memory assumption is undone first: when the server cannot
             * be read either (it is restarting), a claim left assumed would
             * look allocated and reserved to the next attempt, which would
             * then bind the pod without ever writing the claim. */
            for (uint32_t j = i; j < c->nclaims; j++) {
                if (c->claims[j] == DG_NONE)
                    continue;
                for (uint32_t k = 0; k < c->npending; k++)
                    if (c->pending[k] == c->claims[j])
                        dg_claim_deallocate(s->g, c->claims[j], NULL);
                sch_refresh_claim(s, c->claims[j]);
            }
        }
    }
    free(assumed);
    if (rc != DE_OK)
        return rc;
    bool nar_written = false;
    if (c->nar && c->nar->n) {
        rc = sch_write_pod_nar(s->cl, ns, name, uid, al_nar_json(s->g, c->nar), e);
        if (rc != DE_OK) {
            de_err_prefix(e, "pod %s/%s: nodeAllocatableResourceClaimStatuses", ns, name);
            return rc;
        }
        nar_written = true;
    }
    if (sch_wait_needed(s, c->claims, c->nclaims)) {
        /* KEP-5007: PreBind waits for the devices' binding conditions; the
         * pod holds its node meanwhile (sch_wait.c) */
        de_err ne;
        de_err_clear(&ne);
        if (patch_nominated(s, ns, name, uid, node, &ne) != DE_OK)
            DE_INFO(1, "pod %s/%s: nominatedNodeName not set: %s", ns, name, ne.msg);
        al_pod_assume(s->al, pid, c->node_name, c->nar);
        sch_wait_begin(s, idx, c->node_name, c->claims, c->nclaims, nar_written);
        *waiting = true;
        return DE_OK;
    }
    rc = sch_bind_pod(s, pid, c->node_name, e);
    if (rc != DE_OK) {
        if (nar_written) {
            de_err ce;
            de_err_clear(&ce);
            if (sch_write_pod_nar(s->cl, ns, name, uid, NULL, &ce) != DE_OK)
                DE_INFO(1, "pod %s/%s: nodeAllocatableResourceClaimStatuses not cleared: %s", ns, name, ce.msg);
        }
        return rc;
    }
bound:
    sp->state = SP_ASSUMED;
    sp->node = c->node_name;
    al_pod_assume(s->al, pid, c->node_name, c->nar);
    return DE_OK;
}
