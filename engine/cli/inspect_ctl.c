/*
 * inspect_ctl.c - the part of `draengine inspect` that shows what
 * kube-controller-manager's DRA controllers would do with the input
 * (engine/ctrl): the status of each ResourcePoolStatusRequest, and the pods
 * the device taint eviction controller would delete for NoExecute taints.
 * Times are absolute (RFC 3339), never relative to now, so the same input
 * prints the same bytes; the Complete condition's lastTransitionTime, which
 * the controller sets to the time it writes, is left out.
 */
#include "../ctrl/ctl.h"
#include "cli.h"
#include "inspect.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *S(const cli_inspect *c, uint32_t id) { return de_intern_str(c->in, id); }

static void rfc3339(int64_t t, char *buf, size_t cap)
{
    time_t tt = (time_t)t;
    struct tm tm;
    gmtime_r(&tt, &tm);
    strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* ---- ResourcePoolStatusRequests ---------------------------------------------------- */

static const de_interner *sort_in;
static const dg_graph *sort_g;
static int cmp_psr(const void *a, const void *b)
{
    return de_intern_cmp(sort_in, dg_pool_status_request_get(sort_g, *(const uint32_t *)a)->meta.name,
                         dg_pool_status_request_get(sort_g, *(const uint32_t *)b)->meta.name);
}

static const char *jstr(json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "-";
}

static void jint(json_t *o, const char *k, char *buf, size_t cap)
{
    json_t *v = json_object_get(o, k);
    if (json_is_integer(v))
        snprintf(buf, cap, "%lld", (long long)json_integer_value(v));
    else
        snprintf(buf, cap, "-");
}

static void pool_rows(json_t *pools, FILE *out)
{
    fprintf(out, "    %-24s %-16s %4s %6s %6s %9s %9s %11s\n", "POOL", "NODE", "GEN", "SLICES", "TOTAL", "ALLOCATED",
            "AVAILABLE", "UNAVAILABLE");
    size_t i;
    json_t *p;
    json_array_foreach(pools, i, p) {
        char gen[32], sl[32], tot[32], al[32], av[32], un[32];
        jint(p, "generation", gen, sizeof gen);
        jint(p, "resourceSliceCount", sl, sizeof sl);
        jint(p, "totalDevices", tot, sizeof tot);
        jint(p, "allocatedDevices", al, sizeof al);
        jint(p, "availableDevices", av, sizeof av);
        jint(p, "unavailableDevices", un, sizeof un);
        fprintf(out, "    %-24s %-16s %4s %6s %6s %9s %9s %11s\n", jstr(p, "poolName"), jstr(p, "nodeName"), gen, sl,
                tot, al, av, un);
        if (json_object_get(p, "validationError"))
            fprintf(out, "      validationError: %s\n", jstr(p, "validationError"));
        json_t *ps = json_object_get(p, "partitionSummary");
        size_t k;
        json_t *e;
        json_array_foreach(ps, k, e) {
            fprintf(out, "      partition %s=%s: %lld total, %lld allocatable\n", jstr(e, "attribute"), jstr(e, "type"),
                    (long long)json_integer_value(json_object_get(e, "total")),
                    (long long)json_integer_value(json_object_get(e, "allocatable")));
        }
        json_t *sh = json_object_get(p, "shareableSummary");
        if (sh) {
            fprintf(out, "      shareable: %lld fully, %lld partially available",
                    (long long)json_integer_value(json_object_get(sh, "fullyAvailableDevices")),
                    (long long)json_integer_value(json_object_get(sh, "partiallyAvailableDevices")));
            json_array_foreach(json_object_get(sh, "capacity"), k, e) {
                fprintf(out, "%s %s %s total, %s consumed, %s available", k ? ";" : ":", jstr(e, "name"),
                        jstr(e, "total"), jstr(e, "consumed"), jstr(e, "available"));
            }
            fputc('\n', out);
        }
    }
}

void cli_inspect_pool_status(const cli_inspect *c, json_t *root, FILE *out)
{
    uint32_t n = 0, lim = dg_pool_status_request_id_limit(c->g);
    uint32_t *ids = de_xmalloc((lim + 1) * sizeof *ids);
    for (uint32_t i = 0; i < lim; i++)
        if (dg_pool_status_request_get(c->g, i))
            ids[n++] = i;
    if (!n) {
        free(ids);
        if (root)
            json_object_set_new(root, "poolStatusRequests", json_array());
        return;
    }
    sort_in = c->in;
    sort_g = c->g;
    qsort(ids, n, sizeof *ids, cmp_psr);
    const de_gates *gates = dg_gates(c->g);
    bool on = gates->on[DE_GATE_RESOURCE_POOL_STATUS];
    json_t *arr = root ? json_array() : NULL;
    if (!root)
        fprintf(out, "\nresource pool status requests%s\n",
                on ? "" : " (not computed: DRAResourcePoolStatus is off; kube-controller-manager runs this controller only with it)");
    for (uint32_t i = 0; i < n; i++) {
        const dg_pool_status_request *r = dg_pool_status_request_get(c->g, ids[i]);
        ctl_psr_result res = {0};
        if (on)
            ctl_pool_status(c->g, r, gates, NULL, &res);
        const char *note = !on ? NULL
                           : r->has_status ? "its status is already set; the controller leaves it"
                           : res.incomplete ? "a pool is still being published; the controller retries instead of writing this"
                                            : NULL;
        if (root) {
            json_t *o = json_object();
            json_object_set_new(o, "name", json_string(S(c, r->meta.name)));
            json_object_set_new(o, "driver", json_string(S(c, r->driver)));
            if (r->pool_name)
                json_object_set_new(o, "poolName", json_string(S(c, r->pool_name)));
            json_object_set_new(o, "limit", json_integer(r->limit));
            json_object_set_new(o, "computed", json_boolean(on));
            if (on) {
                json_object_set_new(o, "written", json_boolean(!r->has_status && !res.incomplete));
                if (note)
                    json_object_set_new(o, "note", json_string(note));
                json_object_set_new(o, "status", res.status);
            } else {
                json_object_set_new(o, "reason", json_string("DRAResourcePoolStatus is off"));
            }
            json_array_append_new(arr, o);
            continue;
        }
        fprintf(out, "  %s: driver %s%s%s, limit %d", S(c, r->meta.name), S(c, r->driver),
                r->pool_name ? ", pool " : "", r->pool_name ? S(c, r->pool_name) : "", r->limit);
        if (!on) {
            fputc('\n', out);
            continue;
        }
        json_t *cond = json_array_get(json_object_get(res.status, "conditions"), 0);
        fprintf(out, ": %u pool%s; %s/%s %s: %s\n", res.pools, res.pools == 1 ? "" : "s", jstr(cond, "type"),
                jstr(cond, "status"), jstr(cond, "reason"), jstr(cond, "message"));
        if (note)
            fprintf(out, "    (%s)\n", note);
        if (res.shown)
            pool_rows(json_object_get(res.status, "pools"), out);
        json_decref(res.status);
    }
    if (root)
        json_object_set_new(root, "poolStatusRequests", arr);
    free(ids);
}

/* ---- NoExecute evictions ------------------------------------------------------------ */

static void taint_text(const cli_inspect *c, const ctl_evict_reason *r, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s%s%s:NoExecute", S(c, r->key), r->value ? "=" : "", r->value ? S(c, r->value) : "");
}

void cli_inspect_evictions(const cli_inspect *c, json_t *root, FILE *out)
{
    de_arena *a = de_arena_new(0);
    ctl_eviction *ev;
    uint32_t n;
    ctl_evictions(c->g, dg_gates(c->g), a, &ev, &n);
    json_t *arr = root ? json_array() : NULL;
    if (!root && n)
        fprintf(out, "\nNoExecute evictions (kube-controller-manager's device taint eviction controller deletes these pods)\n");
    for (uint32_t i = 0; i < n; i++) {
        const ctl_eviction *e = &ev[i];
        char when[64] = "at once (the taint has no timeAdded)";
        if (e->evict_at)
            rfc3339(e->evict_at, when, sizeof when);
        json_t *o = NULL, *ra = NULL;
        if (root) {
            o = json_object();
            json_object_set_new(o, "namespace", json_string(S(c, e->ns)));
            json_object_set_new(o, "name", json_string(S(c, e->name)));
            json_object_set_new(o, "node", json_string(S(c, e->node)));
            if (e->evict_at)
                json_object_set_new(o, "evictionTime", json_string(when));
            ra = json_array();
        } else {
            fprintf(out, "  %s/%s on node %s: %s%s\n", S(c, e->ns), S(c, e->name), S(c, e->node),
                    e->evict_at ? "evicted at or after " : "evicted ", when);
        }
        for (uint32_t k = 0; k < e->nreasons; k++) {
            const ctl_evict_reason *r = &e->reasons[k];
            char src[700], taint[600], added[64] = "";
            ctl_evict_reason_text(c->g, r, src, sizeof src);
            taint_text(c, r, taint, sizeof taint);
            if (r->time_added)
                rfc3339(r->time_added, added, sizeof added);
            if (root) {
                json_t *x = json_object();
                json_object_set_new(x, "claim", json_string(S(c, r->claim)));
                json_object_set_new(x, "device", json_sprintf("%s/%s/%s", S(c, r->driver), S(c, r->pool), S(c, r->device)));
                json_t *t = json_object();
                json_object_set_new(t, "key", json_string(S(c, r->key)));
                if (r->value)
                    json_object_set_new(t, "value", json_string(S(c, r->value)));
                json_object_set_new(t, "effect", json_string("NoExecute"));
                if (r->time_added)
                    json_object_set_new(t, "timeAdded", json_string(added));
                json_object_set_new(x, "taint", t);
                json_object_set_new(x, "source", json_string(src));
                if (r->tolerated_for)
                    json_object_set_new(x, "tolerationSeconds", json_integer(r->seconds));
                json_array_append_new(ra, x);
            } else {
                fprintf(out, "    claim %s, device %s/%s/%s: taint %s from %s", S(c, r->claim), S(c, r->driver),
                        S(c, r->pool), S(c, r->device), taint, src);
                if (r->tolerated_for)
                    fprintf(out, ", tolerated for %llds", (long long)r->seconds);
                else
                    fprintf(out, ", not tolerated");
                fputc('\n', out);
            }
        }
        if (root) {
            json_object_set_new(o, "reasons", ra);
            json_array_append_new(arr, o);
        }
    }
    if (root)
        json_object_set_new(root, "evictions", arr);
    de_arena_free(a);
}
