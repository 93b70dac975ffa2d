/*
 * bench_alloc.c - allocator benchmarks (one core):
 *
 *   upstream-500x10  500 nodes x 10 devices, one 1-device claim per pod, the
 *                    engine chooses the node, until all 5,000 devices are used
 *   gpu-nic-5000     5,000 nodes x (8 GPUs + 8 NICs on 4 PCIe roots), one
 *                    GPU+NIC claim per pod with matchAttribute on
 *                    resource.kubernetes.io/pcieRoot, until every pair is used
 *   traps            the backtracking traps of the scheduler_perf corpus and
 *                    synthetic dead ends; worst case in ms
 *
 * The clusters are built into a dg_graph with dg_apply before the clock
 * starts; what is timed is al_schedule_pod (node choice, Allocate, commit)
 * per pod, cold caches included (per-node tables and CEL results are built on
 * first use, as in a fresh scheduler).
 *
 * Throughput is the thread's CPU time (CLOCK_THREAD_CPUTIME_ID) over the
 * whole loop, so other processes sharing the machine do not distort a
 * one-core figure; the wall-clock rate is printed as well
 * (<scenario>-wall-pods-per-s).  Per-pod latencies (p50, p99) come from the
 * monotonic clock, which the vDSO reads in ~30 ns: the thread CPU clock is a
 * system call, ~1.6 us on the VMs we measure on, which would swamp a 2 us
 * decision.
 */
#include "bench.h"
#include "bench_gen.h"
#include "../engine/alloc/al.h"
#include "../engine/base/doc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct run {
    bool prepare;    /* as serve runs: caches filled before the first pod (al_prepare) */
    double *us;
    uint32_t n, ok, fail;
    double total_s, wall_s;
    double prepare_s; /* CPU time of al_prepare */
    uint64_t faults; /* minor page faults while the timed pods were scheduled */
} run;

/* Schedules pod-0 .. pod-<npods-1>; the figures count the first `timed`
 * (the others only check the end state). */
static int schedule_all(dg_graph *g, al_allocator *a, uint32_t npods, uint32_t timed, run *r)
{
    /* zeroed now: written inside the timed loop, its pages must not fault there */
    r->us = de_xcalloc(npods ? npods : 1, sizeof *r->us);
    memset(r->us, 0, (npods ? npods : 1) * sizeof *r->us);
    de_arena *ar = de_arena_new(0);
    uint32_t *pids = bench_pod_ids(g, npods);
    if (r->prepare) {
        /* what serve has done before its first pod: node tables and class
         * candidate sets built while idle, and a cycle arena that earlier
         * cycles have touched (it is reset, never freed, between pods) */
        uint64_t p0 = bench_cpu_ns();
        al_prepare(a, 0);
        r->prepare_s = (double)(bench_cpu_ns() - p0) / 1e9;
        de_arena_zalloc(ar, 60u << 10);
        de_arena_reset(ar);
    }
    uint64_t f_start = bench_minflt();
    uint64_t w_all = 0, t_start = bench_cpu_ns(), t_all = 0;
    for (uint32_t i = 0; i < npods; i++) {
        de_arena_reset(ar);
        al_pod_outcome o;
        de_err e;
        de_err_clear(&e);
        uint64_t w0 = de_now_ns();
        de_rc rc = al_schedule_pod(a, pids[i], ar, &o, &e);
        uint64_t dt = de_now_ns() - w0;
        if (i < timed) {
            w_all += dt;
            r->us[r->n++] = (double)dt / 1e3;
            if (i + 1 == timed) {
                t_all = bench_cpu_ns() - t_start;
                r->faults = bench_minflt() - f_start;
            }
        }
        if (rc == DE_OK)
            r->ok++;
        else if (rc == DE_EUNSAT)
            r->fail++;
        else {
            fprintf(stderr, "bench: pod pod-%u: %s\n", i, e.msg);
            free(pids);
            de_arena_free(ar);
            return 1;
        }
    }
    free(pids);
    r->total_s = (double)t_all / 1e9;
    r->wall_s = (double)w_all / 1e9;
    de_arena_free(ar);
    return 0;
}

static void report(FILE *out, const char *prefix, run *r, uint32_t timed)
{
    char fig[128];
    if (!r->prepare) {
        snprintf(fig, sizeof fig, "%s-cold-pods-per-s", prefix);
        bench_print(out, fig, r->total_s > 0 ? (double)timed / r->total_s : 0, "pods/s");
        snprintf(fig, sizeof fig, "%s-cold-faults-per-pod", prefix);
        bench_print(out, fig, timed ? (double)r->faults / timed : 0, "faults");
        return;
    }
    snprintf(fig, sizeof fig, "%s-prepare-ms", prefix);
    bench_print(out, fig, r->prepare_s * 1e3, "ms");
    snprintf(fig, sizeof fig, "%s-pods-per-s", prefix);
    bench_print(out, fig, r->total_s > 0 ? (double)timed / r->total_s : 0, "pods/s");
    snprintf(fig, sizeof fig, "%s-wall-pods-per-s", prefix);
    bench_print(out, fig, r->wall_s > 0 ? (double)timed / r->wall_s : 0, "pods/s");
    snprintf(fig, sizeof fig, "%s-p50-us", prefix);
    bench_print(out, fig, bench_percentile(r->us, r->n, 50), "us");
    snprintf(fig, sizeof fig, "%s-p99-us", prefix);
    bench_print(out, fig, bench_percentile(r->us, r->n, 99), "us");
    snprintf(fig, sizeof fig, "%s-faults-per-pod", prefix);
    bench_print(out, fig, timed ? (double)r->faults / timed : 0, "faults");
}

/* ---- upstream-500x10 -------------------------------------------------------------------- */

/* One run on a fresh cluster: prepared as serve runs (the figures), or cold
 * (every cache built inside the decisions that need it: -cold- figures). */
static int upstream_once(FILE *out, bool prepare)
{
    const uint32_t nodes = 500, per = 10, npods = nodes * per;
    dg_graph *g = bench_graph();
    de_err e;
    de_err_clear(&e);
    de_rc rc = bench_upstream_cluster(g, nodes, per, &e);
    for (uint32_t i = 0; i < npods + 1 && rc == DE_OK; i++)
        rc = bench_claim_pod(g, i, json_pack("[o]", bench_exact("dev", "test-class")), NULL, &e);
    if (rc != DE_OK) {
        fprintf(stderr, "bench upstream-500x10: building the cluster: %s\n", e.msg);
        dg_free(g);
        return 1;
    }
    al_allocator *a = bench_allocator(g, NULL, &e);
    run r = {.prepare = prepare};
    int ret = schedule_all(g, a, npods + 1, npods, &r);
    if (!ret && (r.ok != npods || r.fail != 1)) {
        fprintf(stderr, "bench upstream-500x10: expected %u pods scheduled and 1 unschedulable, got %u and %u\n",
                npods, r.ok, r.fail);
        ret = 1;
    }
    if (!ret)
        report(out, "upstream-500x10", &r, npods); /* the last pod only checks that the cluster is full */
    free(r.us);
    al_free(a);
    dg_free(g);
    return ret;
}

int bench_upstream_500x10(FILE *out, int argc, char **argv)
{
    const char *only = NULL;
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--only"))
            only = argv[i + 1];
    if (only && strcmp(only, "prepared") && strcmp(only, "cold")) {
        fprintf(stderr, "bench upstream-500x10: --only: expected prepared or cold, got \"%s\"\n", only);
        return 2;
    }
    int ret = 0;
    if (!only || !strcmp(only, "prepared"))
        ret = upstream_once(out, true);
    if (!ret && (!only || !strcmp(only, "cold")))
        ret = upstream_once(out, false);
    return ret;
}

/* ---- gpu-nic-5000 --------------------------------------------------------------------------- */

int bench_gpu_nic_5000(FILE *out, int argc, char **argv)
{
    (void)argc;
    (void)argv;
    const uint32_t nodes = 5000, npods = nodes * 8;
    dg_graph *g = bench_graph();
    de_err e;
    de_err_clear(&e);
    /* the devices first, so the bytes the pods add can be told apart */
    de_rc rc = bench_gpu_nic(g, nodes, 0, &e);
    double heap0 = bench_heap_bytes();
    if (rc == DE_OK)
        rc = bench_pair_pods(g, npods, "gpu.example.com", "nic.example.com", "resource.kubernetes.io/pcieRoot", &e);
    if (rc != DE_OK) {
        fprintf(stderr, "bench gpu-nic-5000: building the cluster: %s\n", e.msg);
        dg_free(g);
        return 1;
    }
    double heap1 = bench_heap_bytes(); /* claims and pods in the graph, not scheduled */
    al_allocator *a = bench_allocator(g, NULL, &e);
    run r = {.prepare = true};
    int ret = schedule_all(g, a, npods, npods, &r);
    if (!ret && r.ok != npods) {
        fprintf(stderr, "bench gpu-nic-5000: expected %u pods scheduled, got %u\n", npods, r.ok);
        ret = 1;
    }
    if (!ret) {
        report(out, "gpu-nic-5000", &r, npods);
        /* claims, pods, their records and what the allocator keeps for them */
        bench_print(out, "gpu-nic-5000-bytes-per-pod", (bench_heap_bytes() - heap0) / npods, "bytes");
        /* of which the claim and pod as loaded, before any decision */
        bench_print(out, "gpu-nic-5000-bytes-per-pod-loaded", (heap1 - heap0) / npods, "bytes");
        bench_print(out, "gpu-nic-5000-peak-rss-mib", bench_peak_rss_mib(), "MiB");
    }
    free(r.us);
    double held = bench_heap_bytes();
    al_free(a);
    /* of bytes-per-pod, what the allocator held (node tables, usage records) */
    if (!ret)
        bench_print(out, "gpu-nic-5000-allocator-bytes-per-pod", (held - bench_heap_bytes()) / npods, "bytes");
    dg_free(g);
    return ret;
}

/* ---- traps ------------------------------------------------------------------------------------ */

static const char *corpus_dir(void)
{
    static const char *const dirs[] = {"../shared/corpus/manifests/k8s-scheduler-perf",
                                       "spec/fixtures/shared/corpus/manifests/k8s-scheduler-perf"};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        char p[512];
        snprintf(p, sizeof p, "%s/deviceclass-test-class-v1.yaml", dirs[i]);
        FILE *f = fopen(p, "r");
        if (f) {
            fclose(f);
            return dirs[i];
        }
    }
    return NULL;
}

typedef struct tctx {
    dg_graph *g;
} tctx;

/* turn a ResourceClaimTemplate into a ResourceClaim named "trap-claim"; a
 * slice written in the pre-v1 shape (sharedCounters and devices in one
 * slice, which v1 refuses) is split into a counter-set slice and a device
 * slice, as current scheduler_perf templates publish it */
static de_rc template_as_claim(void *ctx, json_t *obj, const de_origin *o, de_err *e)
{
    tctx *t = ctx;
    json_t *kind = json_object_get(obj, "kind");
    dg_kind k;
    json_t *spec = json_object_get(obj, "spec");
    if (json_is_string(kind) && !strcmp(json_string_value(kind), "ResourceSlice") &&
        json_object_get(spec, "sharedCounters") && json_object_get(spec, "devices")) {
        json_t *cnt = json_deep_copy(obj), *dev = json_deep_copy(obj);
        json_t *cs = json_object_get(cnt, "spec"), *ds = json_object_get(dev, "spec");
        json_object_del(cs, "devices");
        json_object_del(ds, "sharedCounters");
        json_t *pool = json_object_get(cs, "pool");
        json_int_t n = json_integer_value(json_object_get(pool, "resourceSliceCount"));
        json_object_set_new(pool, "resourceSliceCount", json_integer(n + 1));
        json_object_set_new(json_object_get(ds, "pool"), "resourceSliceCount", json_integer(n + 1));
        const char *name = json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
        char nn[300];
        snprintf(nn, sizeof nn, "%s-counters", name ? name : "slice");
        json_object_set_new(json_object_get(cnt, "metadata"), "name", json_string(nn));
        de_rc rc = dg_apply(t->g, cnt, o, &k, e);
        if (rc == DE_OK)
            rc = dg_apply(t->g, dev, o, &k, e);
        json_decref(cnt);
        json_decref(dev);
        return rc;
    }
    if (json_is_string(kind) && !strcmp(json_string_value(kind), "ResourceClaimTemplate")) {
        json_t *cspec = json_object_get(spec, "spec");
        json_t *c = json_pack("{s:s, s:s, s:{s:s, s:s}, s:O}", "apiVersion", "resource.k8s.io/v1", "kind",
                              "ResourceClaim", "metadata", "name", "trap-claim", "namespace", "default", "spec",
                              cspec);
        de_rc rc = dg_apply(t->g, c, o, &k, e);
        json_decref(c);
        return rc;
    }
    return dg_apply(t->g, obj, o, &k, e);
}

/* time Allocate of every pending claim on `node`; returns ms (best of 3 runs,
 * each on a fresh allocator so nothing is cached) and the outcome */
static double time_trap(dg_graph *g, const char *gates, const char *node, const uint32_t *claims,
                        uint32_t n, de_rc *rc_out, uint64_t *steps)
{
    double best = -1;
    for (int rep = 0; rep < 3; rep++) {
        de_err e;
        de_err_clear(&e);
        al_allocator *a = bench_allocator(g, gates, &e);
        de_arena *ar = de_arena_new(0);
        al_outcome out;
        uint64_t t0 = de_now_ns();
        *rc_out = al_allocate(a, de_intern_cstr(dg_intern(g), node), claims, n, ar, &out, &e);
        double ms = (double)(de_now_ns() - t0) / 1e6;
        *steps = out.steps;
        if (best < 0 || ms < best)
            best = ms;
        de_arena_free(ar);
        al_free(a);
    }
    return best;
}

static double corpus_trap(FILE *out, const char *dir, const char *name, const char *const *files,
                          const char *gates, de_rc want)
{
    dg_opts go = {0};
    dg_graph *g = dg_new(NULL, &go);
    de_err e;
    de_err_clear(&e);
    tctx t = {g};
    de_rc rc = bench_put(g, bench_node("scheduler-perf-dra-0", "node-with-dra", "true"), &e);
    for (int i = 0; files[i] && rc == DE_OK; i++) {
        char p[512];
        snprintf(p, sizeof p, "%s/%s", dir, files[i]);
        rc = de_doc_each(p, template_as_claim, &t, &e);
    }
    double ms = -1;
    if (rc == DE_OK) {
        uint32_t ids[4], n = 0;
        uint32_t ns = de_intern_cstr(dg_intern(g), "default");
        for (uint32_t c = 0; c < dg_claim_id_limit(g) && n < 4; c++) {
            const dg_claim *cl = dg_claim_get(g, c);
            if (cl && !cl->allocated && (cl->meta.ns == ns || !cl->meta.ns))
                ids[n++] = c;
        }
        uint64_t steps = 0;
        ms = time_trap(g, gates, "scheduler-perf-dra-0", ids, n, &rc, &steps);
        if (rc != want) {
            fprintf(stderr, "bench traps: %s: unexpected outcome %s\n", name, de_rc_str(rc));
            ms = -1;
        } else {
            char fig[128];
            snprintf(fig, sizeof fig, "traps-%s-ms", name);
            bench_print(out, fig, ms, "ms");
            snprintf(fig, sizeof fig, "traps-%s-steps", name);
            bench_print(out, fig, (double)steps, "steps");
        }
    } else {
        fprintf(stderr, "bench traps: %s: %s\n", name, e.msg);
    }
    dg_free(g);
    return ms;
}

/* Synthetic dead end: request a takes 4 of 64 devices, request b needs a
 * device with the same "numa" value as a's - none exists; without pruning
 * that is C(64,4) = 635,376 combinations. */
static double synthetic_trap(FILE *out)
{
    dg_graph *g = bench_graph();
    de_err e;
    de_err_clear(&e);
    de_rc rc = bench_put(g, bench_node("trap-node", NULL, NULL), &e);
    if (rc == DE_OK)
        rc = bench_put(g, bench_class("a", "device.attributes[\"d.example.com\"].kind == \"a\""), &e);
    if (rc == DE_OK)
        rc = bench_put(g, bench_class("b", "device.attributes[\"d.example.com\"].kind == \"b\""), &e);
    json_t *devs = json_array();
    for (uint32_t i = 0; i < 72; i++) {
        char dn[32];
        snprintf(dn, sizeof dn, "dev-%02u", i);
        json_array_append_new(devs, json_pack("{s:s, s:{s:{s:s}, s:{s:i}}}", "name", dn, "attributes", "kind",
                                              "string", i < 64 ? "a" : "b", "numa", "int", i < 64 ? 0 : 1));
    }
    rc = bench_put_after(rc, g, bench_slice("trap-slice", "d.example.com", "trap-pool", "trap-node", devs), &e);
    json_t *reqs = json_pack("[{s:s, s:{s:s, s:i}}, {s:s, s:{s:s, s:i}}]", "name", "a", "exactly",
                             "deviceClassName", "a", "count", 4, "name", "b", "exactly", "deviceClassName", "b",
                             "count", 1);
    json_t *cons = json_pack("[{s:s}]", "matchAttribute", "d.example.com/numa");
    rc = bench_put_after(rc, g, bench_claim("trap-claim", reqs, cons), &e);
    double ms = -1;
    if (rc == DE_OK) {
        uint32_t id = dg_claim_find(g, de_intern_cstr(dg_intern(g), "default"),
                                    de_intern_cstr(dg_intern(g), "trap-claim"));
        uint64_t steps = 0;
        ms = time_trap(g, NULL, "trap-node", &id, 1, &rc, &steps);
        if (rc != DE_EUNSAT) {
            fprintf(stderr, "bench traps: synthetic: unexpected outcome %s\n", de_rc_str(rc));
            ms = -1;
        } else {
            bench_print(out, "traps-synthetic-deadend-ms", ms, "ms");
            bench_print(out, "traps-synthetic-deadend-steps", (double)steps, "steps");
        }
    } else {
        fprintf(stderr, "bench traps: synthetic: %s\n", e.msg);
    }
    dg_free(g);
    return ms;
}

int bench_traps(FILE *out, int argc, char **argv)
{
    (void)argc;
    (void)argv;
    const char *dir = corpus_dir();
    if (!dir) {
        fprintf(stderr, "bench traps: corpus not found (../shared or spec/fixtures/shared)\n");
        return 1;
    }
    static const char *const counters[] = {"deviceclass-test-class-v1.yaml",
                                           "resourceslice-partitionable-backtracking-v1.yaml",
                                           "resourceclaim-count7-backtracking-v1.yaml", NULL};
    static const char *const lists[] = {"deviceclass-test-class-v1.yaml", "resourceslice-list-attributes-64dev-v1.yaml",
                                        "resourceclaimtemplate-32req-matchattribute-list-v1.yaml", NULL};
    static const char *const split[] = {"deviceclass-test-class-v1.yaml",
                                        "resourceslice-partitionable-split-pool-v1.yaml",
                                        "resourceclaimtemplate-two-devices-matchattribute-v1beta2.yaml", NULL};
    double worst = 0, ms;
    int bad = 0;
    ms = corpus_trap(out, dir, "counters-count7", counters, NULL, DE_OK);
    bad |= ms < 0;
    worst = ms > worst ? ms : worst;
    ms = corpus_trap(out, dir, "list-32req", lists, "DRAListTypeAttributes=true", DE_OK);
    bad |= ms < 0;
    worst = ms > worst ? ms : worst;
    ms = corpus_trap(out, dir, "split-pool", split, NULL, DE_OK);
    bad |= ms < 0;
    worst = ms > worst ? ms : worst;
    ms = synthetic_trap(out);
    bad |= ms < 0;
    worst = ms > worst ? ms : worst;
    if (bad)
        return 1;
    bench_print(out, "traps-max-ms", worst, "ms");
    return 0;
}
