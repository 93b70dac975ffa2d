/*
 * bench_policy.c - policy host benchmarks (one core):
 *
 *   reload-100k      5,000 nodes x (10 GPUs + 10 NICs) = 100,000 devices with
 *                    the shipped fact policies active (numa-bridge, gpu-tiers,
 *                    mig-compat); pods are scheduled one per
 *                    cycle while a new revision (the shipped policies with an
 *                    edited gpu-tiers) is loaded, prepared in 20 ms slices
 *                    between cycles, and swapped in.  Every pod needs derived
 *                    facts (a gold GPU and a NIC on the same
 *                    resource.kubernetes.io/numaNode, both bridged from vendor
 *                    names), so a decision that ran on half-published facts
 *                    would fail.  Figures:
 *                      reload-100k-ms             the swap: pointer switch +
 *                                                 publishing every device's
 *                                                 facts into the graph
 *                      reload-100k-prepare-ms     computing the new revision's
 *                                                 facts for all devices (before
 *                                                 the swap, while scheduling goes on)
 *                      reload-100k-failed-decisions  pods that could not be
 *                                                 scheduled, before, during and
 *                                                 after the reload
 *   policy-overhead  gpu-nic-5000 (the allocator's scenario, bench_gen.c:
 *                    5,000 nodes x 8 GPUs + 8 NICs on 4 PCIe roots, GPU+NIC
 *                    claims with matchAttribute pcieRoot) with the shipped
 *                    policies on and off, the same pods timed in both runs:
 *                    by default as many pods as the cluster holds (8 per
 *                    node), so the stream fills every node, as the
 *                    allocator's gpu-nic-5000 does.  policy-overhead-ratio =
 *                    CPU per pod on / off (the policy host's cycle boundary
 *                    counted on the policy side).  The facts (derive/groups)
 *                    are computed before the clock starts and reported
 *                    separately.  With score hooks every feasible node is a
 *                    candidate; the allocator's choice cache (al_choose.c)
 *                    evaluates a node again only when its state changed,
 *                    which the nodes-evaluated figures show (Allocate calls
 *                    per pod, the cold first pod included).
 *
 * Scenario flags (after --): --policies DIR (default: the shipped policies),
 * --nodes N, --pods N (policy-overhead: default 8 x nodes), --rounds N
 * (policy-overhead: interleaved rounds, the fastest of each configuration
 * counts; default 5), --only off|on|facts (policy-overhead: that
 * configuration alone, for profilers), --phases (policy-overhead: also
 * split the pods by where they land, below).
 *
 * --phases.  The whole-run ratio mixes costs that behave differently: the
 * first pod of a claim shape (with a score hook: every node evaluated), a
 * pod that is the first on its node (without policies: that node's tables
 * are built now), the second on its node (with a score hook: the first
 * Allocate on tables built long before, by the first pod's scan) and later
 * pods.  The split needs a clock read per pod; it uses the monotonic clock
 * (a vDSO read, ~30 ns here, against the thread CPU clock's system call),
 * so it adds about 1 % to every pod and is off by default.  Its figures are
 * wall time of the same fastest round.
 */
#include "bench.h"
#include "bench_gen.h"
#include "../engine/alloc/al.h"
#include "../engine/cli/cli.h"
#include "../engine/cli/flags.h"
#include "../engine/policy/polgraph.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The shipped policies: --policies, $DRAENGINE_POLICIES, ./policies, or
 * next to the binary (../policies from build/draengine). */
static const char *shipped(int argc, char **argv, char *buf, size_t cap)
{
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--policies"))
            return argv[i + 1];
    const char *env = getenv("DRAENGINE_POLICIES");
    if (env && *env)
        return env;
    if (access("policies/numa-bridge.lua", R_OK) == 0)
        return "policies";
    char exe[512];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = 0;
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = 0;
            snprintf(buf, cap, "%s/../policies", exe);
            return buf;
        }
    }
    return "policies";
}

/* A scenario's number flag, through the command line's one parser (a bad
 * value is reported naming the flag; the scenario then exits 2). */
static bool opt_u32(int argc, char **argv, const char *flag, uint32_t dflt, uint32_t *out)
{
    *out = dflt;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], flag))
            continue;
        uint64_t v;
        if (!cli_flag_u64("bench", flag, i + 1 < argc ? argv[i + 1] : "", 1, 10000000, &v))
            return false;
        *out = (uint32_t)v;
    }
    return true;
}

static void quiet(void *ctx, de_log_level lvl, const char *file, int line, const char *msg, const char *const *kv)
{
    (void)ctx, (void)file, (void)line, (void)kv;
    if (lvl == DE_LOG_ERROR)
        fprintf(stderr, "bench: policy: %s\n", msg);
}

/* ---- reload-100k ------------------------------------------------------------------------ */

static int copy_file(const char *from, const char *to, const char *find, const char *repl)
{
    FILE *f = fopen(from, "rb");
    if (!f)
        return -1;
    char *buf = de_xmalloc(1 << 20);
    size_t n = fread(buf, 1, (1 << 20) - 1, f);
    fclose(f);
    buf[n] = 0;
    FILE *o = fopen(to, "wb");
    if (!o) {
        free(buf);
        return -1;
    }
    char *hit = find ? strstr(buf, find) : NULL;
    if (hit) {
        fwrite(buf, 1, (size_t)(hit - buf), o);
        fputs(repl, o);
        fputs(hit + strlen(find), o);
    } else {
        fwrite(buf, 1, n, o);
    }
    fclose(o);
    free(buf);
    return hit || !find ? 0 : -1;
}

/* The shipped policies whose facts decisions depend on (the score policies
 * are left out). */
static const char *const fact_files[] = {"numa-bridge.lua", "gpu-tiers.lua", "mig-compat.lua"};

/*
 * A benchmark stopped with ^C or SIGTERM removes its temp dir too.  The
 * handler may only make async-signal-safe calls, so the paths it unlinks are
 * written out when the dir is made; one dir exists at a time (the scenarios
 * run one after another).
 */
static char live_dir[64];
static char live_files[DE_ARRAY_LEN(fact_files)][128];
static volatile sig_atomic_t live;

static void live_unlink(void)
{
    for (size_t i = 0; i < DE_ARRAY_LEN(fact_files); i++)
        unlink(live_files[i]);
    rmdir(live_dir);
}

static void on_stop_signal(int sig)
{
    if (live)
        live_unlink();
    signal(sig, SIG_DFL);
    raise(sig);
}

static void fact_remove(void)
{
    if (!live)
        return;
    live = 0;
    live_unlink();
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
}

/* Make the temp dir `dir` (a mkdtemp template) and copy the fact policies
 * of `pol` into it: 0, or 3 with the reason printed and nothing left. */
static int fact_copy(const char *bench, const char *pol, char *dir)
{
    if (strlen(dir) >= sizeof live_dir || !mkdtemp(dir)) {
        fprintf(stderr, "bench %s: cannot create a temp dir\n", bench);
        return 3;
    }
    memcpy(live_dir, dir, strlen(dir) + 1);
    for (size_t i = 0; i < DE_ARRAY_LEN(fact_files); i++)
        snprintf(live_files[i], sizeof live_files[i], "%s/%s", dir, fact_files[i]);
    live = 1;
    signal(SIGINT, on_stop_signal);
    signal(SIGTERM, on_stop_signal);
    for (size_t i = 0; i < DE_ARRAY_LEN(fact_files); i++) {
        char from[800];
        snprintf(from, sizeof from, "%s/%s", pol, fact_files[i]);
        if (copy_file(from, live_files[i], NULL, NULL) != 0) {
            fprintf(stderr, "bench %s: cannot copy %s (give the shipped policies with -- --policies DIR)\n", bench,
                    from);
            fact_remove();
            return 3;
        }
    }
    return 0;
}

int bench_reload_100k(FILE *out, int argc, char **argv)
{
    char pbuf[600];
    const char *pol = shipped(argc, argv, pbuf, sizeof pbuf);
    const uint32_t per = 10;
    uint32_t nodes, npods;
    if (!opt_u32(argc, argv, "--nodes", 5000, &nodes) || !opt_u32(argc, argv, "--pods", 1500, &npods))
        return CLI_EXIT_INVALID;
    /* the host's directory: a copy of the shipped policies (revision 1);
     * at a third of the pods gpu-tiers.lua is edited in place (revision 2:
     * a different memoryGiB, so every GPU's facts change), as a ConfigMap
     * update would, and a reload is requested */
    /* the fact policies only: reloading the score policies has no facts to
     * prepare; what scoring costs per pod is policy-overhead's figure */
    char dir[] = "/tmp/draengine-reload-XXXXXX";
    if (fact_copy("reload-100k", pol, dir))
        return 3;
    int ret = 3;

    dg_graph *g = bench_graph();
    de_err e;
    de_err_clear(&e);
    /* gold GPUs (tier derived by gpu-tiers) with a NIC on the same NUMA node
     * (both bridged by numa-bridge from NVIDIA VFIO `numa` and dranet) */
    de_rc rc = bench_put(g, bench_class("gold-gpu", "device.driver == 'gpu.nvidia.com' && "
                                            "'tier.draengine.io' in device.attributes && "
                                            "device.attributes['tier.draengine.io'].tier == 'gold'"),
                   &e);
    if (rc == DE_OK)
        rc = bench_put(g, bench_class("rdma-nic", "device.driver == 'dra.net' && device.attributes['dra.net'].rdma"), &e);
    for (uint32_t n = 0; n < nodes && rc == DE_OK; n++) {
        char node[64], s1[80], s2[80];
        snprintf(node, sizeof node, "node-%04u", n);
        snprintf(s1, sizeof s1, "%s-gpus", node);
        snprintf(s2, sizeof s2, "%s-nics", node);
        rc = bench_put(g, bench_node(node, NULL, NULL), &e);
        json_t *gpus = json_array(), *nics = json_array();
        for (uint32_t d = 0; d < per; d++) {
            char dn[32], uuid[64];
            snprintf(dn, sizeof dn, "gpu-vfio-%u", d);
            snprintf(uuid, sizeof uuid, "GPU-%08x-0000-4000-8000-%012u", n, d);
            json_array_append_new(
                gpus, json_pack("{s:s, s:{s:{s:s}, s:{s:s}, s:{s:s}, s:{s:i}}, s:{s:{s:s}}}", "name", dn,
                                "attributes", "type", "string", "vfio", "productName", "string",
                                "NVIDIA H100 80GB HBM3", "uuid", "string", uuid, "numa", "int", (int)(d / 5),
                                "capacity", "addressableMemory", "value", "81559Mi"));
            snprintf(dn, sizeof dn, "pci-0000-%02x-00-0", d);
            json_array_append_new(nics, json_pack("{s:s, s:{s:{s:i}, s:{s:b}}}", "name", dn, "attributes",
                                                  "dra.net/numaNode", "int", (int)(d / 5), "dra.net/rdma", "bool", 1));
        }
        rc = bench_put_after(rc, g, bench_slice(s1, "gpu.nvidia.com", node, node, gpus), &e);
        rc = bench_put_after(rc, g, bench_slice(s2, "dra.net", node, node, nics), &e);
    }
    if (rc == DE_OK)
        rc = bench_pair_pods(g, npods, "gold-gpu", "rdma-nic", "resource.kubernetes.io/numaNode", &e);
    if (rc != DE_OK) {
        fprintf(stderr, "bench reload-100k: building the cluster: %s\n", e.msg);
        dg_free(g);
        goto cleanup_dir;
    }
    dg_stats st;
    dg_get_stats(g, &st);

    pol_host_opts ho;
    pol_host_opts_default(&ho);
    ho.watch = false;
    ho.rescan_ns = 0;
    ho.cfg.log = quiet;
    ho.prepare_slice_ns = 20ull * 1000000;
    pol_host *h;
    uint64_t t0 = de_now_ns();
    if (pol_host_new(dir, g, &ho, &h, &e) != DE_OK) {
        fprintf(stderr, "bench reload-100k: %s\n", e.msg);
        dg_free(g);
        goto cleanup_dir;
    }
    uint64_t initial_ns = de_now_ns() - t0;
    al_allocator *a = bench_allocator(g, NULL, &e);
    al_hooks hk;
    pol_host_al_hooks(h, &hk);
    al_set_hooks(a, &hk);

    uint32_t *pids = bench_pod_ids(g, npods);
    de_arena *ar = de_arena_new(0);
    uint32_t failed = 0, during = 0, after = 0, reload_at = npods / 3;
    bool swapped = false, refused = false;
    pol_cycle sw;
    memset(&sw, 0, sizeof sw);
    for (uint32_t i = 0; i < npods; i++) {
        if (i == reload_at) {
            char from[800], to[800];
            snprintf(from, sizeof from, "%s/gpu-tiers.lua", pol);
            snprintf(to, sizeof to, "%s/gpu-tiers.lua", dir);
            if (copy_file(from, to, "if gib then out[D .. \"memoryGiB\"] = math.tointeger(gib) end",
                          "if gib then out[D .. \"memoryGiB\"] = math.tointeger(gib) + 1 end") != 0) {
                fprintf(stderr, "bench reload-100k: cannot edit %s\n", to);
                break;
            }
            pol_host_request_reload(h);
        }
        pol_cycle c;
        pol_host_cycle(h, &c); /* the cycle boundary */
        if (c.failed) {
            fprintf(stderr, "bench reload-100k: reload refused: %s\n", c.err.msg);
            refused = true;
        }
        if (c.swapped) {
            swapped = true;
            sw = c;
            pol_host_al_hooks(h, &hk);
            al_set_hooks(a, &hk);
        }
        if (c.preparing)
            during++;
        else if (swapped)
            after++;
        de_arena_reset(ar);
        al_pod_outcome o;
        de_err pe;
        de_err_clear(&pe);
        de_rc r = al_schedule_pod(a, pids[i], ar, &o, &pe);
        if (r != DE_OK) {
            if (failed < 3)
                fprintf(stderr, "bench reload-100k: pod pod-%u: %s\n", i, r == DE_EUNSAT && o.why ? o.why : pe.msg);
            failed++;
        }
    }
    bench_print(out, "reload-100k-ms", (double)sw.swap_ns / 1e6, "ms");
    bench_print(out, "reload-100k-failed-decisions", failed, "count");
    bench_print(out, "reload-100k-prepare-ms", (double)sw.prepare_ns / 1e6, "ms");
    bench_print(out, "reload-100k-devices", st.devices, "devices");
    bench_print(out, "reload-100k-devices-changed-at-swap", sw.swap_changed, "devices");
    bench_print(out, "reload-100k-decisions-while-preparing", during, "count");
    bench_print(out, "reload-100k-decisions-after-swap", after, "count");
    bench_print(out, "reload-100k-initial-load-ms", (double)initial_ns / 1e6, "ms");
    free(pids);
    de_arena_free(ar);
    al_free(a);
    pol_host_free(h);
    dg_free(g);
    ret = swapped && !refused ? 0 : 1;
cleanup_dir:
    fact_remove();
    return ret;
}

/* ---- policy-overhead ------------------------------------------------------------------- */

enum { PH_NODE_FIRST, PH_NODE_SECOND, PH_NODE_LATER, PH_N };
static const char *const phase_names[PH_N] = {"node-first", "node-second", "node-later"};

typedef struct ovr {
    double cpu_s;          /* scheduling the timed pods */
    double phase_ns[PH_N]; /* --phases: wall time of the pods after the first, by class */
    uint32_t phase_pods[PH_N];
    double first_s;        /* of which the first pod (a score hook's full scan) */
    double facts_ms;       /* the policy host's initial facts (not timed above) */
    double allocs_per_pod; /* al_allocate calls per pod (nodes evaluated) */
    uint32_t ok, fail;
} ovr;

/* One pod's scheduling: the policy host's cycle boundary (part of the
 * policy cost) and the scheduling call.  Not inlined and not static, so
 * that `make bench-instructions` counts exactly this with callgrind's
 * --toggle-collect=bench_overhead_step. */
__attribute__((noinline)) de_rc bench_overhead_step(pol_host *h, al_allocator *a, uint32_t pod, de_arena *ar,
                                                    al_pod_outcome *o, de_err *e);
__attribute__((noinline)) de_rc bench_overhead_step(pol_host *h, al_allocator *a, uint32_t pod, de_arena *ar,
                                                    al_pod_outcome *o, de_err *e)
{
    if (h) {
        pol_cycle c;
        pol_host_cycle(h, &c);
    }
    return al_schedule_pod(a, pod, ar, o, e);
}

static int overhead_run(const char *dir, uint32_t nodes, uint32_t npods, bool phases, ovr *r)
{
    memset(r, 0, sizeof *r);
    dg_graph *g = bench_graph();
    de_err e;
    de_err_clear(&e);
    if (bench_gpu_nic(g, nodes, npods, &e) != DE_OK) {
        fprintf(stderr, "bench policy-overhead: building the cluster: %s\n", e.msg);
        dg_free(g);
        return 3;
    }
    al_allocator *a = bench_allocator(g, NULL, &e);
    pol_host *h = NULL;
    if (dir) {
        pol_host_opts ho;
        pol_host_opts_default(&ho);
        ho.watch = false;
        ho.rescan_ns = 0;
        ho.cfg.log = quiet;
        uint64_t t0 = bench_cpu_ns();
        if (pol_host_new(dir, g, &ho, &h, &e) != DE_OK) {
            fprintf(stderr, "bench policy-overhead: %s\n", e.msg);
            al_free(a);
            dg_free(g);
            return 3;
        }
        r->facts_ms = (double)(bench_cpu_ns() - t0) / 1e6;
        al_hooks hk;
        pol_host_al_hooks(h, &hk);
        al_set_hooks(a, &hk);
    }
    de_arena *ar = de_arena_new(0);
    al_stats s0, s1;
    al_get_stats(a, &s0);
    /* the clock reads the loop once (a per-pod read of the thread CPU
     * clock is a system call, ~1.6 us on some VMs) */
    uint32_t *pids = bench_pod_ids(g, npods);
    /* --phases: pods placed so far per node id */
    uint32_t nlimit = dg_node_id_limit(g);
    uint32_t *placed = phases ? de_xcalloc(nlimit ? nlimit : 1, sizeof *placed) : NULL;
    uint64_t t0 = bench_cpu_ns();
    for (uint32_t i = 0; i < npods; i++) {
        uint64_t m0 = phases ? de_now_ns() : 0;
        de_arena_reset(ar);
        al_pod_outcome o;
        de_err pe;
        de_err_clear(&pe);
        bool ok = bench_overhead_step(h, a, pids[i], ar, &o, &pe) == DE_OK;
        if (ok)
            r->ok++;
        else
            r->fail++;
        if (i == 0)
            r->first_s = (double)(bench_cpu_ns() - t0) / 1e9;
        if (phases && ok && o.node < nlimit) {
            uint64_t m1 = de_now_ns();
            uint32_t k = placed[o.node]++;
            int ph = k == 0 ? PH_NODE_FIRST : k == 1 ? PH_NODE_SECOND : PH_NODE_LATER;
            if (i > 0) {
                r->phase_ns[ph] += (double)(m1 - m0);
                r->phase_pods[ph]++;
            }
        }
    }
    uint64_t t = bench_cpu_ns() - t0;
    free(placed);
    free(pids);
    al_get_stats(a, &s1);
    r->cpu_s = (double)t / 1e9;
    r->allocs_per_pod = npods ? (double)(s1.allocate_calls - s0.allocate_calls) / npods : 0;
    de_arena_free(ar);
    al_free(a);
    pol_host_free(h);
    dg_free(g);
    return 0;
}

int bench_policy_overhead(FILE *out, int argc, char **argv)
{
    char pbuf[600];
    const char *pol = shipped(argc, argv, pbuf, sizeof pbuf);
    uint32_t nodes, npods, rounds;
    if (!opt_u32(argc, argv, "--nodes", 5000, &nodes) ||
        !opt_u32(argc, argv, "--pods", nodes * 8, &npods) || !opt_u32(argc, argv, "--rounds", 5, &rounds))
        return CLI_EXIT_INVALID;
    /* the shipped policies without their score hooks: facts only */
    char facts[] = "/tmp/draengine-overhead-XXXXXX";
    if (fact_copy("policy-overhead", pol, facts))
        return 3;
    int rc = 0;
    /* --only off|on|facts: one configuration (for profilers) */
    const char *only = NULL;
    bool phases = false;
    for (int i = 1; i < argc; i++) {
        if (i + 1 < argc && !strcmp(argv[i], "--only"))
            only = argv[i + 1];
        if (!strcmp(argv[i], "--phases"))
            phases = true;
    }
    ovr off, on, fo;
    memset(&off, 0, sizeof off);
    memset(&on, 0, sizeof on);
    memset(&fo, 0, sizeof fo);
    /* Rounds of the three configurations, each round starting with the
     * next one (so none always runs right after the same other); each
     * configuration's figure is its fastest round.  The CPU time of one run
     * moves by 20% and more with the state of the process's heap (a
     * process's first runs pay for fresh pages inside their timed regions,
     * later ones mostly do not), which the minimum over rotated rounds takes
     * out of the comparison. */
    static const char *const names[3] = {"off", "on", "facts"};
    const char *dirs[3] = {NULL, pol, facts};
    ovr *best[3] = {&off, &on, &fo};
    bool have[3] = {false, false, false};
    for (uint32_t k = 0; k < rounds && !rc; k++)
        for (int j = 0; j < 3 && !rc; j++) {
            int c = (k + j) % 3;
            if (only && strcmp(only, names[c]))
                continue;
            ovr x;
            rc = overhead_run(dirs[c], nodes, npods, phases, &x);
            if (!rc && (!have[c] || x.cpu_s < best[c]->cpu_s)) {
                *best[c] = x;
                have[c] = true;
            }
        }
    fact_remove();
    if (rc)
        return rc;
    if (off.fail || on.fail || fo.fail)
        fprintf(stderr, "bench policy-overhead: unscheduled pods: %u without policies, %u with, %u facts only\n",
                off.fail, on.fail, fo.fail);
    bench_print(out, "policy-overhead-ratio", off.cpu_s > 0 ? on.cpu_s / off.cpu_s : 0, "x");
    bench_print(out, "policy-overhead-off-pods-per-s", off.cpu_s > 0 ? npods / off.cpu_s : 0, "pods/s");
    bench_print(out, "policy-overhead-on-pods-per-s", on.cpu_s > 0 ? npods / on.cpu_s : 0, "pods/s");
    bench_print(out, "policy-overhead-off-us-per-pod", off.cpu_s * 1e6 / npods, "us");
    bench_print(out, "policy-overhead-on-us-per-pod", on.cpu_s * 1e6 / npods, "us");
    bench_print(out, "policy-overhead-nodes-evaluated-per-pod-off", off.allocs_per_pod, "nodes");
    bench_print(out, "policy-overhead-nodes-evaluated-per-pod-on", on.allocs_per_pod, "nodes");
    /* the first pod of a claim shape with a score hook evaluates every node
     * (later pods only the nodes that changed): its share, and the ratio
     * over the pods after it */
    bench_print(out, "policy-overhead-first-pod-ms-off", off.first_s * 1e3, "ms");
    bench_print(out, "policy-overhead-first-pod-ms-on", on.first_s * 1e3, "ms");
    if (npods > 1)
        bench_print(out, "policy-overhead-ratio-after-first-pod",
                    off.cpu_s > off.first_s ? (on.cpu_s - on.first_s) / (off.cpu_s - off.first_s) : 0, "x");
    /* derive + groups only (no score hook, so the allocator stops at the
     * first feasible node as without policies) */
    bench_print(out, "policy-overhead-ratio-facts-only", off.cpu_s > 0 ? fo.cpu_s / off.cpu_s : 0, "x");
    bench_print(out, "policy-overhead-facts-only-us-per-pod", fo.cpu_s * 1e6 / npods, "us");
    bench_print(out, "policy-overhead-facts-ms", on.facts_ms, "ms");
    bench_print(out, "policy-overhead-pods", npods, "pods");
    for (int c = 0; phases && c < 3; c++) {
        if (!have[c])
            continue;
        for (int ph = 0; ph < PH_N; ph++) {
            char name[96];
            const ovr *x = best[c];
            snprintf(name, sizeof name, "policy-overhead-phase-%s-%s-us-per-pod", names[c], phase_names[ph]);
            bench_print(out, name, x->phase_pods[ph] ? x->phase_ns[ph] / 1e3 / x->phase_pods[ph] : 0, "us");
            snprintf(name, sizeof name, "policy-overhead-phase-%s-%s-ms", names[c], phase_names[ph]);
            bench_print(out, name, x->phase_ns[ph] / 1e6, "ms");
            snprintf(name, sizeof name, "policy-overhead-phase-%s-%s-pods", names[c], phase_names[ph]);
            bench_print(out, name, x->phase_pods[ph], "pods");
        }
    }
    return 0;
}
