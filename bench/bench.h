/*
 * bench.h - benchmark scenarios run by `draengine bench NAME...`.
 *
 * Each scenario prints its figures as lines "BENCH <figure> <value> <unit>"
 * and returns 0 on success (non-zero when a scenario could not run, never
 * because a target was missed: targets are for people reading the figures).
 * Benchmarks are never timed unit tests.
 */
#ifndef BENCH_H
#define BENCH_H

#include <stdint.h>
#include <stdio.h>
#include <time.h>

typedef int (*bench_fn)(FILE *out, int argc, char **argv);

int bench_load_100k(FILE *out, int argc, char **argv);
int bench_cel(FILE *out, int argc, char **argv);
int bench_upstream_500x10(FILE *out, int argc, char **argv);
int bench_gpu_nic_5000(FILE *out, int argc, char **argv);
int bench_traps(FILE *out, int argc, char **argv);
int bench_reload_100k(FILE *out, int argc, char **argv);
int bench_policy_overhead(FILE *out, int argc, char **argv);
int bench_allocate_scale(FILE *out, int argc, char **argv);
int bench_churn(FILE *out, int argc, char **argv);
int bench_json_read(FILE *out, int argc, char **argv);

/* Shared helpers. */
/* This thread's CPU time: other processes sharing the machine do not
 * distort a one-core figure. */
static inline uint64_t bench_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
void bench_print(FILE *out, const char *figure, double value, const char *unit);
/* Peak resident set size of this process, MiB (VmHWM). */
double bench_peak_rss_mib(void);
/* Minor page faults of this process so far (getrusage): stable on a shared
 * machine where time is not. */
uint64_t bench_minflt(void);
/* Bytes the process holds from malloc (in use, mmapped blocks included). */
double bench_heap_bytes(void);
/* p-th percentile (0..100) of n values (sorts the array in place). */
double bench_percentile(double *v, size_t n, double p);

#endif
