/*
 * ctl_serve.c - the pool status controller and the NoExecute reports of
 * `draengine serve` (ctl_serve.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "ctl_serve.h"

#include "../base/log.h"
#include "../sched/sch_http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Upstream's constants (resourcepoolstatusrequest/controller.go and
 * client-go's default per-item rate limiter). */
#define MAX_RETRIES 5
#define RETRY_BASE_NS 5000000ull
#define CLEANUP_EVERY_NS (600ull * 1000000000ull)
#define COMPLETED_TTL_S 3600
#define PENDING_TTL_S (24 * 3600)
/* Re-reading the graph for evictions at most this often. */
#define EVICT_SCAN_NS 500000000ull

typedef struct qitem {
    char *name;
    uint32_t requeues;
    uint64_t due;
} qitem;

typedef struct drv_stat {
    char *driver;
    uint64_t processed, errors;
} drv_stat;

struct ctl_serve {
    dg_graph *g;
    kc_client *cl;
    de_gates gates;
    bool pool_status, no_events;
    char *identity;
    /* pool status */
    json_t *reqs; /* name -> the request as last seen */
    qitem *q;
    uint32_t nq, capq;
    uint64_t next_cleanup;
    drv_stat *ds;
    uint32_t nds;
    sch_hist dur;
    uint64_t deleted;
    /* evictions */
    uint64_t seen_gen, last_scan;
    bool scanned;
    json_t *reported; /* "ns/name/uid" -> what was reported */
    uint64_t due_events, cleared_events;
    uint32_t pending;
};

static const double DUR_BOUNDS[15] = {0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.064, 0.128,
                                      0.256, 0.512, 1.024, 2.048, 4.096, 8.192, 16.384};

ctl_serve *ctl_serve_new(dg_graph *g, kc_client *cl, const de_gates *gates, const ctl_serve_opts *o)
{
    ctl_serve *c = de_xcalloc(1, sizeof *c);
    c->g = g;
    c->cl = cl;
    c->gates = *gates;
    c->pool_status = o->pool_status;
    c->no_events = o->no_events;
    c->identity = de_xstrdup(o->identity ? o->identity : "draengine");
    c->reqs = json_object();
    c->reported = json_object();
    sch_hist_init(&c->dur, DUR_BOUNDS, DE_ARRAY_LEN(DUR_BOUNDS));
    return c;
}

void ctl_serve_free(ctl_serve *c)
{
    if (!c)
        return;
    for (uint32_t i = 0; i < c->nq; i++)
        free(c->q[i].name);
    free(c->q);
    for (uint32_t i = 0; i < c->nds; i++)
        free(c->ds[i].driver);
    free(c->ds);
    json_decref(c->reqs);
    json_decref(c->reported);
    free(c->identity);
    free(c);
}

static const char *md(json_t *o, const char *k)
{
    const char *v = json_string_value(json_object_get(json_object_get(o, "metadata"), k));
    return v ? v : "";
}

static bool has_status(json_t *o)
{
    json_t *st = json_object_get(o, "status");
    return st && !json_is_null(st);
}

/* ---- the queue ---------------------------------------------------------------- */

static qitem *find_item(ctl_serve *c, const char *name)
{
    for (uint32_t i = 0; i < c->nq; i++)
        if (!strcmp(c->q[i].name, name))
            return &c->q[i];
    return NULL;
}

static void forget(ctl_serve *c, const char *name)
{
    qitem *it = find_item(c, name);
    if (!it)
        return;
    free(it->name);
    *it = c->q[--c->nq];
}

static void enqueue(ctl_serve *c, const char *name)
{
    if (find_item(c, name))
        return;
    if (c->nq == c->capq) {
        c->capq = c->capq ? c->capq * 2 : 8;
        c->q = de_xrealloc(c->q, c->capq * sizeof *c->q);
    }
    c->q[c->nq++] = (qitem){de_xstrdup(name), 0, de_now_ns()};
}

void ctl_serve_observe(ctl_serve *c, kc_evtype t, json_t *obj)
{
    const char *name = md(obj, "name");
    de_err e;
    de_err_clear(&e);
    if (t == KC_EV_DELETED) {
        json_object_del(c->reqs, name);
        forget(c, name);
        dg_remove(c->g, DG_KIND_RESOURCE_POOL_STATUS_REQUEST, NULL, name, &e);
        return;
    }
    json_object_set(c->reqs, name, obj);
    static const de_origin origin = {"<api>", 0, -1};
    if (dg_apply(c->g, obj, &origin, NULL, &e) != DE_OK) {
        DE_WARN("ResourcePoolStatusRequest %s: %s", name, e.msg);
        forget(c, name);
        return;
    }
    if (c->pool_status && !has_status(obj))
        enqueue(c, name);
}

static drv_stat *driver_stat(ctl_serve *c, const char *driver)
{
    for (uint32_t i = 0; i < c->nds; i++)
        if (!strcmp(c->ds[i].driver, driver))
            return &c->ds[i];
    c->ds = de_xrealloc(c->ds, (c->nds + 1) * sizeof *c->ds);
    c->ds[c->nds] = (drv_stat){de_xstrdup(driver), 0, 0};
    return &c->ds[c->nds++];
}

static const dg_pool_status_request *find_request(const ctl_serve *c, const char *name)
{
    for (uint32_t i = 0; i < dg_pool_status_request_id_limit(c->g); i++) {
        const dg_pool_status_request *r = dg_pool_status_request_get(c->g, i);
        if (r && !strcmp(de_intern_str(dg_intern(c->g), r->meta.name), name))
            return r;
    }
    return NULL;
}

static void now_rfc3339(char *buf, size_t cap)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* After a failure: requeue with backoff, or drop after MAX_RETRIES. */
static void retry(ctl_serve *c, qitem *it, const char *why)
{
    if (it->requeues < MAX_RETRIES) {
        DE_INFO(2, "ResourcePoolStatusRequest %s: %s, requeueing", it->name, why);
        it->due = de_now_ns() + (RETRY_BASE_NS << it->requeues);
        it->requeues++;
        return;
    }
    DE_WARN("ResourcePoolStatusRequest %s: dropped after %d retries: %s", it->name, MAX_RETRIES, why);
    forget(c, it->name);
}

/* One due request; may remove it from the queue. */
static void process(ctl_serve *c, qitem *it)
{
    json_t *obj = json_object_get(c->reqs, it->name);
    const dg_pool_status_request *r = obj ? find_request(c, it->name) : NULL;
    if (!r || has_status(obj)) {
        forget(c, it->name);
        return;
    }
    uint64_t t0 = de_now_ns();
    char now[64];
    now_rfc3339(now, sizeof now);
    ctl_psr_result res;
    ctl_pool_status(c->g, r, &c->gates, now, &res);
    if (res.incomplete) {
        json_decref(res.status);
        retry(c, it, "incomplete pools detected");
        return;
    }
    json_t *body = json_deep_copy(obj);
    json_object_set_new(body, "status", res.status);
    char path[1024];
    kc_object_path(KC_RES_POOL_STATUS_REQUESTS, NULL, it->name, "status", path, sizeof path);
    de_err e;
    de_err_clear(&e);
    json_t *out = NULL;
    de_rc rc = kc_request(c->cl, "PUT", path, body, NULL, NULL, &out, &e);
    json_decref(body);
    const char *driver = json_string_value(json_object_get(json_object_get(obj, "spec"), "driver"));
    drv_stat *ds = driver_stat(c, driver ? driver : "");
    sch_hist_observe(&c->dur, (double)(de_now_ns() - t0) / 1e9);
    ds->processed++;
    if (rc == DE_OK) {
        DE_INFO(2, "ResourcePoolStatusRequest %s: status written (%u pools, %u shown)", it->name, res.pools, res.shown);
        if (out)
            json_object_set(c->reqs, it->name, out);
        json_decref(out);
        forget(c, it->name);
        return;
    }
    json_decref(out);
    ds->errors++;
    if (rc == DE_ENOTFOUND) {
        forget(c, it->name);
        return;
    }
    retry(c, it, e.msg);
}

/* ---- TTL cleanup -------------------------------------------------------------------- */

static bool older_than(const char *ts, int64_t ttl_s, int64_t now_s)
{
    int64_t ns;
    return ts && kc_parse_time(ts, &ns) && now_s - ns / 1000000000 > ttl_s;
}

static bool expired(json_t *o, int64_t now_s)
{
    if (has_status(o)) {
        size_t i;
        json_t *cond;
        json_array_foreach(json_object_get(json_object_get(o, "status"), "conditions"), i, cond) {
            const char *type = json_string_value(json_object_get(cond, "type"));
            if (type && (!strcmp(type, "Complete") || !strcmp(type, "Failed")))
                return older_than(json_string_value(json_object_get(cond, "lastTransitionTime")), COMPLETED_TTL_S,
                                  now_s);
        }
        return older_than(md(o, "creationTimestamp"), COMPLETED_TTL_S, now_s);
    }
    return older_than(md(o, "creationTimestamp"), PENDING_TTL_S, now_s);
}

static void cleanup(ctl_serve *c)
{
    int64_t now_s = (int64_t)time(NULL);
    json_t *doomed = json_array();
    const char *name;
    json_t *o;
    json_object_foreach(c->reqs, name, o) {
        if (expired(o, now_s))
            json_array_append_new(doomed, json_pack("{s:s, s:s}", "name", name, "uid", md(o, "uid")));
    }
    size_t i;
    json_t *d;
    json_array_foreach(doomed, i, d) {
        const char *n = json_string_value(json_object_get(d, "name"));
        char path[1024];
        kc_object_path(KC_RES_POOL_STATUS_REQUESTS, NULL, n, NULL, path, sizeof path);
        json_t *body = json_pack("{s:s, s:s, s:{s:O}}", "apiVersion", "v1", "kind", "DeleteOptions", "preconditions",
                                 "uid", json_object_get(d, "uid"));
        de_err e;
        de_err_clear(&e);
        de_rc rc = kc_request(c->cl, "DELETE", path, body, NULL, NULL, NULL, &e);
        json_decref(body);
        if (rc == DE_OK) {
            c->deleted++;
            DE_INFO(2, "deleted expired ResourcePoolStatusRequest %s", n);
        } else if (rc != DE_ENOTFOUND) {
            DE_WARN("deleting expired ResourcePoolStatusRequest %s: %s", n, e.msg);
        }
    }
    json_decref(doomed);
}

/* ---- NoExecute reports --------------------------------------------------------------- */

static void pod_event(ctl_serve *c, uint32_t pid, const char *type, const char *reason, const char *action,
                      const char *note)
{
    json_t *pod = c->no_events ? NULL : dg_pod_ref_json(c->g, pid);
    if (!pod)
        return;
    kc_event ev = {pod, type, reason, action, note, "draengine", c->identity};
    de_err e;
    de_err_clear(&e);
    if (kc_event_create(c->cl, &ev, &e) != DE_OK)
        DE_INFO(2, "event not written: %s", e.msg);
    json_decref(pod);
}

static void rfc3339(int64_t t, char *buf, size_t cap)
{
    time_t tt = (time_t)t;
    struct tm tm;
    gmtime_r(&tt, &tm);
    strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* The note of a due eviction: when, then every reason. */
static void eviction_note(const ctl_serve *c, const ctl_eviction *ev, de_buf *b)
{
    de_interner *in = dg_intern(c->g);
    char when[64];
    if (ev->evict_at)
        rfc3339(ev->evict_at, when, sizeof when);
    de_buf_printf(b, "kube-controller-manager's device taint eviction controller deletes this pod %s%s: ",
                  ev->evict_at ? "at or after " : "now", ev->evict_at ? when : "");
    for (uint32_t k = 0; k < ev->nreasons; k++) {
        const ctl_evict_reason *r = &ev->reasons[k];
        char src[700];
        ctl_evict_reason_text(c->g, r, src, sizeof src);
        de_buf_printf(b, "%sclaim %s device %s/%s/%s has taint %s%s%s:NoExecute (%s), ", k ? "; " : "",
                      de_intern_str(in, r->claim), de_intern_str(in, r->driver), de_intern_str(in, r->pool),
                      de_intern_str(in, r->device), de_intern_str(in, r->key), r->value ? "=" : "",
                      r->value ? de_intern_str(in, r->value) : "", src);
        if (r->tolerated_for)
            de_buf_printf(b, "tolerated for %llds", (long long)r->seconds);
        else
            de_buf_puts(b, "not tolerated");
    }
}

static void scan_evictions(ctl_serve *c)
{
    de_interner *in = dg_intern(c->g);
    de_arena *a = de_arena_new(0);
    ctl_eviction *ev;
    uint32_t n;
    ctl_evictions(c->g, &c->gates, a, &ev, &n);
    json_t *now = json_object();
    for (uint32_t i = 0; i < n; i++) {
        const dg_pod *p = dg_pod_get(c->g, ev[i].pod);
        char key[1024];
        snprintf(key, sizeof key, "%s/%s/%s", de_intern_str(in, ev[i].ns), de_intern_str(in, ev[i].name),
                 p && p->meta.uid ? de_intern_str(in, p->meta.uid) : "");
        de_buf note;
        de_buf_init(&note, 64 * 1024);
        eviction_note(c, &ev[i], &note);
        const char *before = json_string_value(json_object_get(c->reported, key));
        if (!before || strcmp(before, de_buf_str(&note))) {
            c->due_events++;
            pod_event(c, ev[i].pod, "Warning", "DeviceTaintNoExecute", "Evict", de_buf_str(&note));
        }
        json_object_set_new(now, key, json_string(de_buf_str(&note)));
        de_buf_free(&note);
    }
    /* pods no longer due: say so while they still run here */
    const char *key;
    json_t *v;
    json_object_foreach(c->reported, key, v) {
        if (json_object_get(now, key))
            continue;
        char ns[256], name[256];
        if (sscanf(key, "%255[^/]/%255[^/]", ns, name) != 2)
            continue;
        uint32_t pid = dg_pod_find(c->g, de_intern_find(in, ns, strlen(ns)), de_intern_find(in, name, strlen(name)));
        const dg_pod *p = pid == DG_NONE ? NULL : dg_pod_get(c->g, pid);
        if (p && p->node_name && !p->meta.deleting) {
            c->cleared_events++;
            pod_event(c, pid, "Normal", "DeviceTaintNoExecuteCleared", "Evict",
                      "no device of this pod has an untolerated NoExecute taint any more");
        }
    }
    json_decref(c->reported);
    c->reported = now;
    c->pending = n;
    de_arena_free(a);
}

/* ---- the loop ------------------------------------------------------------------------- */

void ctl_serve_run(ctl_serve *c)
{
    uint64_t now = de_now_ns();
    if (c->pool_status) {
        for (uint32_t i = 0; i < c->nq;) {
            qitem *it = &c->q[i];
            uint32_t before = c->nq;
            if (it->due <= now)
                process(c, it);
            if (c->nq == before)
                i++; /* still there; otherwise a later item moved into i */
        }
        if (now >= c->next_cleanup) {
            cleanup(c);
            c->next_cleanup = now + CLEANUP_EVERY_NS;
        }
    }
    if (c->gates.on[DE_GATE_DEVICE_TAINTS] && dg_generation(c->g) != c->seen_gen &&
        (!c->scanned || now - c->last_scan >= EVICT_SCAN_NS)) {
        c->seen_gen = dg_generation(c->g);
        c->last_scan = now;
        c->scanned = true;
        scan_evictions(c);
    }
}

uint64_t ctl_serve_next_due_ns(const ctl_serve *c)
{
    uint64_t now = de_now_ns(), due = UINT64_MAX;
    for (uint32_t i = 0; i < c->nq; i++)
        due = DE_MIN(due, c->q[i].due);
    if (c->pool_status)
        due = DE_MIN(due, c->next_cleanup);
    if (c->gates.on[DE_GATE_DEVICE_TAINTS] && dg_generation(c->g) != c->seen_gen)
        due = DE_MIN(due, c->last_scan + EVICT_SCAN_NS);
    return due == UINT64_MAX ? UINT64_MAX : due > now ? due - now : 0;
}

void ctl_serve_metrics(const ctl_serve *c, de_buf *out)
{
    if (c->pool_status) {
        static const char *const P = "draengine_resourcepoolstatusrequest_controller_";
        char name[200];
        snprintf(name, sizeof name, "%srequests_processed_total", P);
        sch_prom_head(out, name, "counter", "Total number of ResourcePoolStatusRequests processed");
        for (uint32_t i = 0; i < c->nds; i++) {
            char l[300];
            snprintf(l, sizeof l, "driver=\"%s\"", c->ds[i].driver);
            sch_prom_sample(out, name, l, (double)c->ds[i].processed);
        }
        snprintf(name, sizeof name, "%srequest_processing_errors_total", P);
        sch_prom_head(out, name, "counter",
                      "Total number of errors encountered while processing ResourcePoolStatusRequests");
        for (uint32_t i = 0; i < c->nds; i++) {
            char l[300];
            snprintf(l, sizeof l, "driver=\"%s\"", c->ds[i].driver);
            sch_prom_sample(out, name, l, (double)c->ds[i].errors);
        }
        snprintf(name, sizeof name, "%srequest_processing_duration_seconds", P);
        sch_prom_head(out, name, "histogram", "Time taken to process a ResourcePoolStatusRequest");
        sch_prom_hist(out, name, "", &c->dur);
        snprintf(name, sizeof name, "%srequests_deleted_total", P);
        sch_prom_head(out, name, "counter", "ResourcePoolStatusRequests deleted after their time to live");
        sch_prom_sample(out, name, "", (double)c->deleted);
    }
    if (c->gates.on[DE_GATE_DEVICE_TAINTS]) {
        sch_prom_head(out, "draengine_device_taint_pods_pending_eviction", "gauge",
                      "Scheduled pods that kube-controller-manager's device taint eviction controller deletes "
                      "(untolerated NoExecute taints on their devices), as of the last check.");
        sch_prom_sample(out, "draengine_device_taint_pods_pending_eviction", "", (double)c->pending);
        sch_prom_head(out, "draengine_device_taint_eviction_events_total", "counter",
                      "Pods reported as due for eviction (due) or no longer due (cleared).");
        sch_prom_sample(out, "draengine_device_taint_eviction_events_total", "type=\"due\"", (double)c->due_events);
        sch_prom_sample(out, "draengine_device_taint_eviction_events_total", "type=\"cleared\"",
                        (double)c->cleared_events);
    }
}
