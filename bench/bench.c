/*
 * bench.c - the `draengine bench` harness and its registry.
 *
 * Scenarios are linked in from the bench/ sources as their modules land; a scenario
 * whose code is not in this build is a NULL weak reference and reported as
 * unavailable rather than silently skipped.
 */
#include "bench.h"
#include "../engine/cli/cli.h"

#include <stdlib.h>
#include <string.h>

#pragma weak bench_load_100k
#pragma weak bench_cel
#pragma weak bench_upstream_500x10
#pragma weak bench_gpu_nic_5000
#pragma weak bench_traps
#pragma weak bench_reload_100k
#pragma weak bench_policy_overhead

static const struct {
    const char *name;
    const char *what;
} registry[] = {
    {"load-100k", "load a 100,000-device snapshot (5,000 nodes x 20 devices)"},
    {"cel", "real selectors over 100,000 devices: cached, uncached, memo hit rate"},
    {"upstream-500x10", "upstream's shape: 500 nodes x 10 devices, 1-device claims"},
    {"gpu-nic-5000", "5,000 nodes x (8 GPUs + 8 NICs), pcieRoot-aligned GPU+NIC claims"},
    {"traps", "pathological backtracking inputs, worst case in ms"},
    {"reload-100k", "policy hot reload at 100,000 devices"},
    {"policy-overhead", "gpu-nic-5000 with shipped policies on vs off"},
};

static bench_fn lookup(const char *name)
{
    if (!strcmp(name, "load-100k")) return bench_load_100k;
    if (!strcmp(name, "cel")) return bench_cel;
    if (!strcmp(name, "upstream-500x10")) return bench_upstream_500x10;
    if (!strcmp(name, "gpu-nic-5000")) return bench_gpu_nic_5000;
    if (!strcmp(name, "traps")) return bench_traps;
    if (!strcmp(name, "reload-100k")) return bench_reload_100k;
    if (!strcmp(name, "policy-overhead")) return bench_policy_overhead;
    return NULL;
}

static bool known(const char *name)
{
    for (size_t i = 0; i < sizeof registry / sizeof registry[0]; i++)
        if (!strcmp(registry[i].name, name))
            return true;
    return false;
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
        for (size_t i = 0; i < sizeof registry / sizeof registry[0]; i++)
            fprintf(o, "  %-16s %s%s\n", registry[i].name, registry[i].what,
                    lookup(registry[i].name) ? "" : " (not in this build)");
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
        if (!known(argv[i])) {
            cli_errorf("bench", "unknown benchmark \"%s\" (see draengine bench --help)", argv[i]);
            return CLI_EXIT_INVALID;
        }
        bench_fn fn = lookup(argv[i]);
        if (!fn) {
            cli_errorf("bench", "benchmark \"%s\" is not in this build", argv[i]);
            rc = CLI_EXIT_INTERNAL;
            continue;
        }
        int r = fn(stdout, argc - names_end, argv + names_end);
        if (r)
            rc = r;
    }
    return rc;
}
