/*
 * bench_model.c - `draengine bench load-100k`: a 100,000-device snapshot
 * (5,000 nodes x (8 GPUs + 12 NICs), attributes modelled on the corpus'
 * live NVIDIA H100 and dranet slices) written as one JSON List to a temp
 * file, then loaded through the real path: manifest reader, decode,
 * validation, device graph.  Figures: wall time and CPU time of the load, and
 * the peak resident set size of the process.
 *
 * Scenario flags (after --): --nodes N (default 5000), --keep (leave the
 * generated file and print its path).
 */
#include "../engine/cli/cli.h"
#include "../engine/cli/flags.h"
#include "../engine/model/dg.h"
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static double cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           (double)ru.ru_stime.tv_usec / 1e6;
}

/* Deterministic pseudo-random hex for UUIDs and MACs. */
static uint64_t next(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return de_hash_u64(*s);
}

static void write_gpu_slice(FILE *f, int node, uint64_t *rng)
{
    fprintf(f,
            "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceSlice\","
            "\"metadata\":{\"name\":\"node-%05d-gpu.nvidia.com-%08x\"},"
            "\"spec\":{\"driver\":\"gpu.nvidia.com\",\"nodeName\":\"node-%05d\","
            "\"pool\":{\"name\":\"node-%05d\",\"generation\":1,\"resourceSliceCount\":1},\"devices\":[",
            node, (unsigned)next(rng), node, node);
    for (int i = 0; i < 8; i++) {
        uint64_t a = next(rng), b = next(rng);
        fprintf(f,
                "%s{\"name\":\"gpu-%d\",\"attributes\":{"
                "\"type\":{\"string\":\"gpu\"},"
                "\"productName\":{\"string\":\"NVIDIA H100 80GB HBM3\"},"
                "\"architecture\":{\"string\":\"Hopper\"},"
                "\"brand\":{\"string\":\"Nvidia\"},"
                "\"uuid\":{\"string\":\"GPU-%08x-%04x-%04x-%04x-%012llx\"},"
                "\"driverVersion\":{\"version\":\"580.95.5\"},"
                "\"cudaComputeCapability\":{\"version\":\"9.0.0\"},"
                "\"cudaDriverVersion\":{\"version\":\"13.0.0\"},"
                "\"index\":{\"int\":%d},"
                "\"minor\":{\"int\":%d},"
                "\"resource.kubernetes.io/pcieRoot\":{\"string\":\"pci0000:%02x\"},"
                "\"resource.kubernetes.io/pciBusID\":{\"string\":\"0000:%02x:00.0\"},"
                "\"resource.kubernetes.io/numaNode\":{\"int\":%d}},"
                "\"capacity\":{\"memory\":{\"value\":\"81559Mi\"}}}",
                i ? "," : "", i, (unsigned)a, (unsigned)(a >> 32) & 0xffff, (unsigned)(a >> 48),
                (unsigned)b & 0xffff, (unsigned long long)(b >> 16), i, i, 0x44 + 0x11 * i,
                0x18 + 0x11 * i, i / 4);
    }
    fputs("]}}", f);
}

static void write_nic_slice(FILE *f, int node, uint64_t *rng)
{
    fprintf(f,
            "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceSlice\","
            "\"metadata\":{\"name\":\"node-%05d-dra.net-%08x\"},"
            "\"spec\":{\"driver\":\"dra.net\",\"nodeName\":\"node-%05d\","
            "\"pool\":{\"name\":\"node-%05d\",\"generation\":1,\"resourceSliceCount\":1},\"devices\":[",
            node, (unsigned)next(rng), node, node);
    for (int i = 0; i < 12; i++) {
        bool rdma = i < 8;
        uint64_t mac = next(rng);
        int bus = rdma ? 0x19 + 0x11 * i : 0x90 + i;
        fprintf(f,
                "%s{\"name\":\"pci-0000-%02x-00-0\",\"attributes\":{"
                "\"dra.net/kind\":{\"string\":\"network\"},"
                "\"dra.net/ifName\":{\"string\":\"%s%d\"},"
                "\"dra.net/mac\":{\"string\":\"%02x:%02x:%02x:%02x:%02x:%02x\"},"
                "\"dra.net/pciVendor\":{\"string\":\"%s\"},"
                "\"dra.net/rdma\":{\"bool\":%s},"
                "\"dra.net/sriov\":{\"bool\":false},"
                "\"dra.net/virtual\":{\"bool\":false},"
                "\"dra.net/mtu\":{\"int\":%d},"
                "\"dra.net/numaNode\":{\"int\":%d},"
                "\"resource.kubernetes.io/pcieRoot\":{\"string\":\"pci0000:%02x\"},"
                "\"resource.kubernetes.io/pciBusID\":{\"string\":\"0000:%02x:00.0\"}}}",
                i ? "," : "", bus, rdma ? "ibp" : "eth", i, (unsigned)(mac & 0xff), (unsigned)((mac >> 8) & 0xff),
                (unsigned)((mac >> 16) & 0xff), (unsigned)((mac >> 24) & 0xff), (unsigned)((mac >> 32) & 0xff),
                (unsigned)((mac >> 40) & 0xff), rdma ? "Mellanox Technologies" : "Amazon.com, Inc.",
                rdma ? "true" : "false", rdma ? 4096 : 9001, rdma ? i / 4 : (i - 8) / 2,
                rdma ? 0x44 + 0x11 * i : 0x90, bus);
    }
    fputs("]}}", f);
}

static int generate(const char *path, int nodes)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    static char iobuf[1 << 20];
    setvbuf(f, iobuf, _IOFBF, sizeof iobuf);
    uint64_t rng = 42;
    fputs("{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[", f);
    for (int n = 0; n < nodes; n++) {
        if (n)
            fputc(',', f);
        write_gpu_slice(f, n, &rng);
        fputc(',', f);
        write_nic_slice(f, n, &rng);
    }
    fputs("]}\n", f);
    return fclose(f) ? -1 : 0;
}

int bench_load_100k(FILE *out, int argc, char **argv)
{
    int nodes = 5000;
    bool keep = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--nodes")) {
            uint64_t v;
            if (!cli_flag_u64("bench", "--nodes", i + 1 < argc ? argv[i + 1] : "", 1, 1000000, &v))
                return CLI_EXIT_INVALID;
            nodes = (int)v;
            i++;
        } else if (!strcmp(argv[i], "--keep")) {
            keep = true;
        }
    }
    const char *tmpdir = getenv("TMPDIR");
    char path[512];
    snprintf(path, sizeof path, "%s/draengine-load-100k-XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
    int fd = mkstemp(path);
    if (fd < 0) {
        fprintf(stderr, "draengine bench load-100k: cannot create a temp file in %s\n", path);
        return 3;
    }
    close(fd);
    if (generate(path, nodes) != 0) {
        fprintf(stderr, "draengine bench load-100k: cannot write %s\n", path);
        unlink(path);
        return 3;
    }
    double rss_before = bench_peak_rss_mib();
    double c0 = cpu_seconds();
    uint64_t t0 = de_now_ns();
    dg_graph *g = dg_new(NULL, NULL);
    de_err e;
    de_err_clear(&e);
    de_rc rc = dg_load_path(g, path, &e);
    uint64_t t1 = de_now_ns();
    double c1 = cpu_seconds();
    double rss = bench_peak_rss_mib();
    if (rc != DE_OK) {
        fprintf(stderr, "draengine bench load-100k: %s\n", e.msg);
        dg_free(g);
        if (!keep)
            unlink(path);
        return 3;
    }
    dg_stats st;
    dg_get_stats(g, &st);
    bench_print(out, "load-100k-seconds", (double)(t1 - t0) / 1e9, "s");
    bench_print(out, "load-100k-rss-mib", rss, "MiB");
    /* CPU time of the load: the wall time above also counts waiting for a
     * busy machine */
    bench_print(out, "load-100k-cpu-seconds", c1 - c0, "s");
    bench_print(out, "load-100k-devices", st.devices, "devices");
    bench_print(out, "load-100k-graph-mib", (double)st.bytes / (1024.0 * 1024.0), "MiB");
    bench_print(out, "load-100k-rss-before-load-mib", rss_before, "MiB");
    if (keep)
        fprintf(out, "snapshot: %s\n", path);
    else
        unlink(path);
    dg_free(g);
    return 0;
}
