/*
 * bench_cel.c - `draengine bench cel`: real DRA selectors (docs/cel.md §11,
 * dra-model.md §3.5) over 100,000 synthetic devices built directly as
 * de_devview arrays: NVIDIA GPUs (productName, type, architecture,
 * driverVersion, uuid, index; memory capacity), Intel GPUs (family, model,
 * driver, sriov), dranet NICs (ifName, rdma, pciBusID, pcieRoot) and CPUs
 * (coreType, numaNode).  Vendor selectors are guarded by a driver check,
 * as classes guard them, so no selector fails on a foreign device.
 *
 * Figures (per evaluation, averaged over every selector x device):
 *   cel-uncached-ns   a full evaluation of an already compiled program:
 *                     cel_eval_selector with a fresh scratch arena state
 *                     (the memo is not consulted).
 *   cel-cached-ns     cel_eval_selector_memo for a (program, device,
 *                     generation) that was evaluated before: a memo hit.
 *   cel-memo-hit-rate hits / lookups over 10 allocation rounds in which 2 %
 *                     of the devices change generation before each round
 *                     after the first (the first round is all misses).
 * Also printed: the uncached figure of each selector, and the compile time.
 * Times are this thread's CPU time (CLOCK_THREAD_CPUTIME_ID), so other
 * processes on a busy machine do not inflate them; memory stalls count.
 */
#include "../engine/base/arena.h"
#include "../engine/base/intern.h"
#include "../engine/cel/cel.h"
#include "bench.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NDEV 100000
#define MAXA 8
#define ROUNDS 10

static const char *const selectors[] = {
    "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'",
    "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].productName.lowerAscii().matches('^.*a100.*$')",
    "device.driver == 'gpu.nvidia.com' && device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0",
    "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].driverVersion.compareTo(semver('535.0.0')) >= 0",
    "has(device.attributes['dra.net'].ifName) && device.attributes['dra.net'].ifName == 'eth1'",
    "device.driver == 'dra.net' && device.attributes['resource.kubernetes.io']['pciBusID'] in ['0001:00:00.0', '0002:00:00.0']",
    "'dra.net' in device.attributes && device.attributes['dra.net']['rdma'] == true",
    "device.driver == 'gpu.intel.com' && device.attributes['gpu.intel.com'].family.startsWith('Arc')",
    "device.driver == 'dra.net' && int(device.attributes['dra.net'].ifName.substring(3, 4)) < 4",
    "device.driver == 'dra.cpu' && device.attributes['dra.cpu'].coreType == 'p-core'",
    "device.driver == 'gpu.intel.com' && (device.attributes['gpu.intel.com'].driver == 'vfio-pci' || device.attributes['gpu.intel.com'].driver == 'xe-vfio-pci')",
    "has(device.attributes['resource.kubernetes.io'].numaNode) && device.attributes['resource.kubernetes.io'].numaNode == 0",
};

typedef struct world {
    de_interner *in;
    de_devview *dev;
    de_attr *attrs;
    de_cap *caps;
} world;

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;
static uint32_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)rng_state;
}

static de_attr sattr(de_interner *in, uint32_t dom, const char *name, bool bare, const char *v)
{
    de_attr a = {dom, de_intern_cstr(in, name), bare, {DE_V_STRING, 1, {.s = de_intern_cstr(in, v)}}};
    return a;
}

static de_attr iattr(de_interner *in, uint32_t dom, const char *name, bool bare, int64_t v)
{
    de_attr a = {dom, de_intern_cstr(in, name), bare, {DE_V_INT, 1, {.i = v}}};
    return a;
}

static void build(world *w)
{
    de_interner *in = w->in;
    w->dev = de_xcalloc(NDEV, sizeof *w->dev);
    w->attrs = de_xcalloc((size_t)NDEV * MAXA, sizeof *w->attrs);
    w->caps = de_xcalloc(NDEV, sizeof *w->caps);
    uint32_t nv = de_intern_cstr(in, "gpu.nvidia.com"), intel = de_intern_cstr(in, "gpu.intel.com");
    uint32_t net = de_intern_cstr(in, "dra.net"), cpu = de_intern_cstr(in, "dra.cpu");
    uint32_t k8s = de_intern_cstr(in, "resource.kubernetes.io");
    static const char *const products[] = {"NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3",
                                           "NVIDIA L40S", "NVIDIA A100-PCIE-40GB"};
    static const char *const versions[] = {"550.54.15", "535.161.8", "525.147.5", "560.35.3"};
    static const char *const families[] = {"Arc", "Flex", "Max"};
    char buf[64];
    for (uint32_t i = 0; i < NDEV; i++) {
        de_devview *d = &w->dev[i];
        de_attr *a = &w->attrs[(size_t)i * MAXA];
        uint32_t n = 0;
        d->id = i + 1;
        d->gen = 1;
        d->allow_multi = -1;
        d->attrs = a;
        switch (i % 8) {
        case 0: case 1: case 2: case 3: { /* NVIDIA GPU */
            d->driver = nv;
            uint32_t p = rnd() % 4;
            a[n++] = sattr(in, nv, "productName", true, products[p]);
            a[n++] = sattr(in, nv, "type", true, rnd() % 4 ? "gpu" : "mig");
            a[n++] = sattr(in, nv, "architecture", true, p == 1 ? "Hopper" : "Ampere");
            a[n] = sattr(in, nv, "driverVersion", true, versions[rnd() % 4]);
            a[n++].v.kind = DE_V_VERSION;
            snprintf(buf, sizeof buf, "GPU-%08x-%04x", rnd(), i & 0xffff);
            a[n++] = sattr(in, nv, "uuid", true, buf);
            a[n++] = iattr(in, nv, "index", true, i % 8);
            a[n++] = iattr(in, k8s, "numaNode", false, (i / 4) % 2);
            w->caps[i].domain = nv;
            w->caps[i].name = de_intern_cstr(in, "memory");
            de_qty_parse_cstr(p == 2 ? "48Gi" : p == 3 ? "40Gi" : "80Gi", &w->caps[i].value, NULL);
            d->caps = &w->caps[i];
            d->ncaps = 1;
            break;
        }
        case 4: /* Intel GPU */
            d->driver = intel;
            a[n++] = sattr(in, intel, "family", true, families[rnd() % 3]);
            a[n++] = sattr(in, intel, "model", true, "0x56a0");
            a[n++] = sattr(in, intel, "driver", true, rnd() % 2 ? "i915" : "xe-vfio-pci");
            a[n] = sattr(in, intel, "sriov", true, "");
            a[n].v.kind = DE_V_BOOL;
            a[n++].v.u.b = rnd() % 2;
            break;
        case 5: case 6: { /* NIC */
            d->driver = net;
            snprintf(buf, sizeof buf, "eth%u", rnd() % 8);
            a[n++] = sattr(in, net, "ifName", true, buf);
            a[n] = sattr(in, net, "rdma", true, "");
            a[n].v.kind = DE_V_BOOL;
            a[n++].v.u.b = rnd() % 2;
            snprintf(buf, sizeof buf, "%04x:%02x:00.0", rnd() % 3, rnd() % 256);
            a[n++] = sattr(in, k8s, "pciBusID", false, buf);
            snprintf(buf, sizeof buf, "pci%04x:00", rnd() % 4);
            a[n++] = sattr(in, k8s, "pcieRoot", false, buf);
            a[n++] = iattr(in, k8s, "numaNode", false, rnd() % 2);
            break;
        }
        default: /* CPU */
            d->driver = cpu;
            a[n++] = sattr(in, cpu, "coreType", true, rnd() % 2 ? "p-core" : "e-core");
            a[n++] = iattr(in, k8s, "numaNode", false, rnd() % 2);
            break;
        }
        d->nattrs = n;
    }
}

int bench_cel(FILE *out, int argc, char **argv)
{
    (void)argc;
    (void)argv;
    world w;
    w.in = de_intern_new();
    build(&w);
    cel_env *env = cel_env_new(w.in, NULL);
    de_arena *scratch = de_arena_new((size_t)64 << 20);
    size_t nsel = DE_ARRAY_LEN(selectors);
    cel_prog *progs[DE_ARRAY_LEN(selectors)];
    de_err e;
    de_err_clear(&e);
    uint64_t t0 = bench_cpu_ns();
    for (size_t s = 0; s < nsel; s++) {
        if (cel_compile(env, selectors[s], strlen(selectors[s]), &progs[s], &e) != DE_OK) {
            fprintf(stderr, "bench cel: selector %zu: %s\n", s, e.msg);
            return 3;
        }
    }
    uint64_t tcompile = bench_cpu_ns() - t0;
    bench_print(out, "cel-compile-us", (double)tcompile / 1e3 / (double)nsel, "us");

    /* uncached: full evaluations */
    uint64_t total = 0, matches = 0;
    for (size_t s = 0; s < nsel; s++) {
        uint64_t ts = bench_cpu_ns();
        for (uint32_t i = 0; i < NDEV; i++) {
            bool r;
            if (cel_eval_selector(env, progs[s], &w.dev[i], scratch, &r, NULL, &e) != DE_OK) {
                fprintf(stderr, "bench cel: selector %zu on device %u: %s\n", s, i, e.msg);
                return 3;
            }
            matches += r;
            de_arena_reset(scratch);
        }
        uint64_t dt = bench_cpu_ns() - ts;
        total += dt;
        char fig[64];
        snprintf(fig, sizeof fig, "cel-uncached-ns-sel%02zu", s + 1);
        bench_print(out, fig, (double)dt / NDEV, "ns");
    }
    bench_print(out, "cel-uncached-ns", (double)total / ((double)NDEV * (double)nsel), "ns");

    /* memo: ROUNDS allocation rounds, 2 % of the devices change before each */
    cel_memo *memo = cel_memo_new();
    for (int round = 0; round < ROUNDS; round++) {
        if (round)
            for (uint32_t k = 0; k < NDEV / 50; k++)
                w.dev[rnd() % NDEV].gen++;
        for (size_t s = 0; s < nsel; s++)
            for (uint32_t i = 0; i < NDEV; i++) {
                bool r;
                if (cel_eval_selector_memo(env, memo, progs[s], &w.dev[i], scratch, &r, &e) != DE_OK)
                    return 3;
                de_arena_reset(scratch);
            }
    }
    uint64_t hits, misses;
    cel_memo_stats(memo, &hits, &misses);
    bench_print(out, "cel-memo-hit-rate", (double)hits / (double)(hits + misses), "ratio");

    /* cached: every lookup is a hit now */
    uint64_t tc = bench_cpu_ns();
    for (size_t s = 0; s < nsel; s++)
        for (uint32_t i = 0; i < NDEV; i++) {
            bool r;
            if (cel_eval_selector_memo(env, memo, progs[s], &w.dev[i], scratch, &r, &e) != DE_OK)
                return 3;
            matches += r;
        }
    uint64_t dtc = bench_cpu_ns() - tc;
    bench_print(out, "cel-cached-ns", (double)dtc / ((double)NDEV * (double)nsel), "ns");
    bench_print(out, "cel-matches", (double)matches, "devices");

    cel_memo_free(memo);
    de_arena_free(scratch);
    cel_env_free(env);
    free(w.dev);
    free(w.attrs);
    free(w.caps);
    de_intern_free(w.in);
    return 0;
}
