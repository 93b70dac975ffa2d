/*
 * bench_churn.c - memory under churn (one core):
 *
 *   churn  500 nodes x 10 devices; every cycle creates claim-<i> and pod-<i>
 *          (one 1-device claim, a new name and UID each), schedules the pod,
 *          and, once --live pods (2,000) are up, deletes the oldest pod and
 *          its claim - what a busy cluster does to `serve` for ever
 *
 * After a warm-up (--warmup cycles, default 2 x live + 10,000) the heap the
 * process holds from malloc is read, --cycles more cycles run (1,000,000),
 * and it is read again: churn-bytes-per-cycle is the difference per cycle,
 * 0 when nothing grows (claim and pod ids reused, names and UIDs released,
 * records back on the slab's free lists).  The figures beside it say where
 * growth would come from.
 */
#include "bench.h"
#include "bench_gen.h"
#include "../engine/alloc/al.h"
#include "../engine/cli/flags.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool opt(int argc, char **argv, const char *flag, uint32_t dflt, uint32_t *out)
{
    *out = dflt;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], flag))
            continue;
        uint64_t v;
        if (!cli_flag_u64("bench", flag, i + 1 < argc ? argv[i + 1] : "", 1, 100000000, &v))
            return false;
        *out = (uint32_t)v;
    }
    return true;
}

/* create claim-<i> and pod-<i>, schedule the pod */
static int cycle_add(dg_graph *g, al_allocator *a, de_arena *ar, uint32_t i, de_err *e)
{
    de_rc rc = bench_claim_pod(g, i, json_pack("[o]", bench_exact("dev", "test-class")), NULL, e);
    if (rc != DE_OK) {
        fprintf(stderr, "bench churn: creating pod-%u: %s\n", i, e->msg);
        return 1;
    }
    char name[32];
    int n = snprintf(name, sizeof name, "pod-%u", i);
    de_interner *in = dg_intern(g);
    /* looked up, not interned: interning would pin the name */
    uint32_t pid = dg_pod_find(g, de_intern_find(in, "default", 7), de_intern_find(in, name, (size_t)n));
    de_arena_reset(ar);
    al_pod_outcome o;
    rc = al_schedule_pod(a, pid, ar, &o, e);
    if (rc != DE_OK) {
        fprintf(stderr, "bench churn: scheduling pod-%u: %s\n", i, rc == DE_EUNSAT ? "unschedulable" : e->msg);
        return 1;
    }
    return 0;
}

static int cycle_del(dg_graph *g, uint32_t i, de_err *e)
{
    char pod[32], claim[32];
    snprintf(pod, sizeof pod, "pod-%u", i);
    snprintf(claim, sizeof claim, "claim-%u", i);
    if (dg_remove(g, DG_KIND_POD, "default", pod, e) != DE_OK ||
        dg_remove(g, DG_KIND_RESOURCE_CLAIM, "default", claim, e) != DE_OK) {
        fprintf(stderr, "bench churn: deleting pod-%u: %s\n", i, e->msg);
        return 1;
    }
    return 0;
}

int bench_churn(FILE *out, int argc, char **argv)
{
    uint32_t live, cycles, warmup;
    if (!opt(argc, argv, "--live", 2000, &live) || !opt(argc, argv, "--cycles", 1000000, &cycles))
        return 2;
    if (!opt(argc, argv, "--warmup", 2 * live + 10000, &warmup))
        return 2;
    const uint32_t nodes = 500, per = 10;
    if (live >= nodes * per) {
        fprintf(stderr, "bench churn: --live must stay below the cluster's %u devices\n", nodes * per);
        return 2;
    }
    dg_graph *g = bench_graph();
    de_err e;
    de_err_clear(&e);
    de_rc rc = bench_upstream_cluster(g, nodes, per, &e);
    if (rc != DE_OK) {
        fprintf(stderr, "bench churn: building the cluster: %s\n", e.msg);
        dg_free(g);
        return 1;
    }
    al_allocator *a = bench_allocator(g, NULL, &e);
    de_arena *ar = de_arena_new(0);
    int ret = 0;
    double heap0 = 0;
    uint64_t t0 = 0, f0 = 0;
    uint32_t total = warmup + cycles;
    for (uint32_t i = 0; i < total && !ret; i++) {
        if (i == warmup) {
            heap0 = bench_heap_bytes();
            t0 = bench_cpu_ns();
            f0 = bench_minflt();
        }
        ret = cycle_add(g, a, ar, i, &e);
        if (!ret && i >= live)
            ret = cycle_del(g, i - live, &e);
    }
    if (!ret) {
        double heap1 = bench_heap_bytes(), s = (double)(bench_cpu_ns() - t0) / 1e9;
        uint64_t faults = bench_minflt() - f0;
        bench_print(out, "churn-bytes-per-cycle", cycles ? (heap1 - heap0) / cycles : 0, "bytes");
        bench_print(out, "churn-cycles-per-s", s > 0 ? cycles / s : 0, "cycles/s");
        bench_print(out, "churn-faults-per-cycle", cycles ? (double)faults / cycles : 0, "faults");
        bench_print(out, "churn-heap-mib", heap1 / (1 << 20), "MiB");
        bench_print(out, "churn-claim-id-limit", dg_claim_id_limit(g), "ids");
        bench_print(out, "churn-pod-id-limit", dg_pod_id_limit(g), "ids");
        bench_print(out, "churn-interned-strings", de_intern_live(dg_intern(g)), "strings");
    }
    de_arena_free(ar);
    al_free(a);
    dg_free(g);
    return ret;
}
