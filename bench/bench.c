/*
 * bench.c - the `draengine bench` harness and its registry of scenarios
 * (bench/bench_<area>.c).
 */
#include "bench.h"
#include "../engine/cli/cli.h"

#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

static const struct {
    const char *name;
    const char *what;
    bench_fn fn;
} registry[] = {
    {"load-100k", "load a 100,000-device snapshot (5,000 nodes x 20 devices)", bench_load_100k},
    {"cel", "real selectors over 100,000 devices: cached, uncached, memo hit rate", bench_cel},
    {"upstream-500x10", "upstream's shape: 500 nodes x 10 devices, 1-device claims", bench_upstream_500x10},
    {"gpu-nic-5000", "5,000 nodes x (8 GPUs + 8 NICs), pcieRoot-aligned GPU+NIC claims", bench_gpu_nic_5000},
    {"traps", "pathological backtracking inputs, worst case in ms", bench_traps},
    {"reload-100k", "policy hot reload at 100,000 devices", bench_reload_100k},
    {"policy-overhead", "gpu-nic-5000 with shipped policies on vs off", bench_policy_overhead},
    {"allocate-scale", "draengine allocate on 500- and 5,000-node sim snapshots, 300 pods", bench_allocate_scale},
    {"churn", "create, schedule, delete with 2,000 pods live: heap bytes per cycle", bench_churn},
    {"json-read", "serve's most read JSON texts: jansson's json_loadb beside draengine's reader", bench_json_read},
};

static bench_fn lookup(const char *name)
{
    for (size_t i = 0; i < DE_ARRAY_LEN(registry); i++)
        if (!strcmp(registry[i].name, name))
            return registry[i].fn;
    return NULL;
}

void bench_print(FILE *out, const char *figure, double value, const char *unit)
{
    fprintf(out, "BENCH %s %.6g %s\n", figure, value, unit);
    fflush(out);
}

static double status_mib(const char *field)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return -1;
    char line[256];
    double v = -1;
    size_t fl = strlen(field);
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, field, fl) && line[fl] == ':') {
            v = strtod(line + fl + 1, NULL) / 1024.0;
            break;
        }
    fclose(f);
    return v;
}

double bench_peak_rss_mib(void) { return status_mib("VmHWM"); }

uint64_t bench_minflt(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (uint64_t)ru.ru_minflt;
}

double bench_heap_bytes(void)
{
    struct mallinfo2 mi = mallinfo2();
    return (double)mi.uordblks + (double)mi.hblkhd;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double bench_percentile(double *v, size_t n, double p)
{
    if (!n)
        return 0;
    qsort(v, n, sizeof *v, cmp_double);
    size_t i = (size_t)((p / 100.0) * (double)(n - 1) + 0.5);
    return v[i < n ? i : n - 1];
}

int cli_cmd_bench(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        FILE *o = argc < 2 ? stderr : stdout;
        fprintf(o, "usage: draengine bench NAME... [-- scenario flags]\n\n"
                   "Runs benchmark scenarios; each prints lines \"BENCH <figure> <value> <unit>\".\n\n"
                   "scenarios:\n");
        for (size_t i = 0; i < DE_ARRAY_LEN(registry); i++)
            fprintf(o, "  %-16s %s\n", registry[i].name, registry[i].what);
        fprintf(o, "\nscenario flags (after --):\n"
                   "  --nodes N            load-100k, reload-100k, policy-overhead, allocate-scale: cluster size\n"
                   "                       (allocate-scale: the large snapshot; the small one has N/10)\n"
                   "  --keep               load-100k, allocate-scale: keep the generated snapshot files\n"
                   "  --pods N             reload-100k, policy-overhead, allocate-scale: pods in the stream\n"
                   "  --instructions       allocate-scale: also count instructions (callgrind; minutes)\n"
                   "  --policies DIR       reload-100k, policy-overhead: the policies (default: shipped)\n"
                   "  --rounds N           policy-overhead: rotated rounds, the fastest counts (5)\n"
                   "  --only off|on|facts  policy-overhead: one configuration, for profilers\n"
                   "  --only prepared|cold upstream-500x10: one of its two runs, for profilers\n"
                   "  --phases             policy-overhead: split the pods by where they land\n"
                   "  --live N             churn: pods alive at once (2000)\n"
                   "  --cycles N           churn: measured cycles after the warm-up (1000000)\n"
                   "  --warmup N           churn: cycles before measuring (2 x live + 10000)\n");
        return argc < 2 ? CLI_EXIT_INVALID : 0;
    }
    int names_end = argc;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--")) {
            names_end = i;
            break;
        }
    int rc = 0;
    for (int i = 1; i < names_end; i++) {
        bench_fn fn = lookup(argv[i]);
        if (!fn) {
            cli_errorf("bench", "unknown benchmark \"%s\" (see draengine bench --help)", argv[i]);
            return CLI_EXIT_INVALID;
        }
        int r = fn(stdout, argc - names_end, argv + names_end);
        if (r)
            rc = r;
    }
    return rc;
}
