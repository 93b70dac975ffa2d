/*
 * bench_scale.c - allocate-scale: `draengine allocate` on generated
 * snapshots of N/10 and N nodes (default 500 and 5,000), the same shapes and
 * the same pod mix, loading included.
 *
 * Each snapshot is one JSON List written before any clock starts: the
 * simulated cluster of `draengine sim --nodes N` (seed 1; 5,000 nodes hold
 * 152,430 devices), the Namespace and ResourceClaimTemplates of the run
 * command's built-in workload mix, and --pods pods (default 300) drawn from
 * that mix with a fixed seed, so both sizes schedule the same pods.  The
 * command runs as a child process (this binary, `allocate -f FILE -o json`,
 * output discarded), as a user runs it.  Figures: the child's CPU time
 * (user + system, from wait4: stable while other processes share the
 * machine), its wall time and peak RSS per size, allocate-scale-ratio (CPU
 * time, large over small; linear scaling is 10) and the large snapshot's
 * CPU time as allocate-scale-seconds.
 *
 * --instructions also runs each size under `valgrind --tool=callgrind` and
 * prints the instruction counts (slow: minutes per size; valgrind must be
 * installed).  --keep keeps the snapshot files.
 */
#include "bench.h"
#include "../drivers/sim/sim.h"
#include "../engine/base/de.h"
#include "../engine/cli/cli.h"
#include "../engine/cli/run.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct wctx {
    FILE *f;
    bool first;
} wctx;

static de_rc put(void *vctx, json_t *obj, de_err *e)
{
    wctx *w = vctx;
    if (!w->first)
        fputc(',', w->f);
    w->first = false;
    if (json_dumpf(obj, w->f, JSON_COMPACT) != 0)
        return de_errf(e, DE_EIO, "writing the snapshot: %s", strerror(errno));
    fputc('\n', w->f);
    return DE_OK;
}

static de_rc put_new(wctx *w, json_t *obj, de_err *e)
{
    de_rc rc = put(w, obj, e);
    json_decref(obj);
    return rc;
}

/* The snapshot of `nodes` nodes and `npods` pods of the built-in mix. */
static de_rc write_snapshot(const char *path, uint32_t nodes, uint32_t npods, de_err *e)
{
    sim_opts so = {.seed = 1, .nodes = nodes};
    sim_cluster *cl = sim_new(&so, e);
    if (!cl)
        return DE_EINVAL;
    FILE *f = fopen(path, "w");
    if (!f) {
        sim_free(cl);
        return de_errf(e, DE_EIO, "%s: %s", path, strerror(errno));
    }
    wctx w = {f, true};
    fputs("{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[\n", f);
    de_rc rc = sim_emit_all(cl, put, &w, e);
    sim_free(cl);
    run_mix m;
    run_mix_default(&m);
    json_t *objs = run_mix_objects(&m);
    size_t i;
    json_t *o;
    json_array_foreach(objs, i, o) if (rc == DE_OK) rc = put(&w, o, e);
    json_decref(objs);
    bool *stopped = de_xcalloc(m.n, sizeof *stopped);
    sim_rng r;
    sim_rng_seed(&r, 19);
    for (uint32_t k = 0; k < npods && rc == DE_OK; k++) {
        size_t wi = run_mix_pick(&m, stopped, &r);
        rc = put_new(&w, run_mix_pod(&m, wi, k, &r), e);
    }
    free(stopped);
    run_mix_free(&m);
    fputs("]}\n", f);
    if (fclose(f) != 0 && rc == DE_OK)
        rc = de_errf(e, DE_EIO, "%s: %s", path, strerror(errno));
    return rc;
}

typedef struct run_res {
    double cpu_s, wall_s, rss_mib;
    int status;
    double instr; /* callgrind's total, 0 when not measured */
} run_res;

/* Run `draengine allocate -f path -o json` (under callgrind when instr). */
static int run_allocate(const char *path, bool instr, run_res *r)
{
    memset(r, 0, sizeof *r);
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return -1;
    self[n] = 0;
    char log[] = "/tmp/draengine-scale-cg-XXXXXX";
    int logfd = -1;
    if (instr && (logfd = mkstemp(log)) < 0)
        return -1;
    uint64_t t0 = de_now_ns();
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1);
        dup2(instr ? logfd : null, 2);
        if (instr) {
            execlp("valgrind", "valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", self, "allocate",
                   "-f", path, "-o", "json", (char *)NULL);
        } else {
            execl(self, self, "allocate", "-f", path, "-o", "json", (char *)NULL);
        }
        _exit(127);
    }
    int st;
    struct rusage ru;
    if (wait4(pid, &st, 0, &ru) != pid)
        return -1;
    r->wall_s = (double)(de_now_ns() - t0) / 1e9;
    r->cpu_s = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
               (double)ru.ru_stime.tv_usec / 1e6;
    r->rss_mib = (double)ru.ru_maxrss / 1024.0;
    r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    if (instr) {
        /* "==PID== Collected : N" */
        FILE *f = fdopen(logfd, "r");
        char line[512];
        if (f) {
            rewind(f);
            while (fgets(line, sizeof line, f)) {
                char *c = strstr(line, "Collected : ");
                if (c)
                    r->instr = strtod(c + 12, NULL);
            }
            fclose(f);
        } else {
            close(logfd);
        }
        unlink(log);
    }
    return 0;
}

static bool opt_u32(int argc, char **argv, const char *name, uint32_t dflt, uint32_t *out)
{
    *out = dflt;
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], name)) {
            char *end;
            unsigned long v = strtoul(argv[i + 1], &end, 10);
            if (*end || !v || v > SIM_MAX_NODES) {
                cli_errorf("bench", "%s: expected a positive number, got \"%s\"", name, argv[i + 1]);
                return false;
            }
            *out = (uint32_t)v;
        }
    return true;
}

int bench_allocate_scale(FILE *out, int argc, char **argv)
{
    uint32_t nodes, npods;
    if (!opt_u32(argc, argv, "--nodes", 5000, &nodes) || !opt_u32(argc, argv, "--pods", 300, &npods))
        return CLI_EXIT_INVALID;
    bool instr = false, keep = false;
    for (int i = 1; i < argc; i++) {
        instr |= !strcmp(argv[i], "--instructions");
        keep |= !strcmp(argv[i], "--keep");
    }
    uint32_t sizes[2] = {nodes / 10 ? nodes / 10 : 1, nodes};
    run_res res[2];
    for (int s = 0; s < 2; s++) {
        char path[128];
        snprintf(path, sizeof path, "/tmp/draengine-scale-%u-%ld.json", sizes[s], (long)getpid());
        de_err e;
        de_err_clear(&e);
        if (write_snapshot(path, sizes[s], npods, &e) != DE_OK) {
            cli_errorf("bench", "allocate-scale: %s", e.msg);
            unlink(path);
            return 3;
        }
        int rc = run_allocate(path, false, &res[s]);
        if (!rc && instr) {
            run_res ir;
            rc = run_allocate(path, true, &ir);
            res[s].instr = ir.instr;
        }
        if (keep)
            fprintf(stderr, "bench allocate-scale: kept %s\n", path);
        else
            unlink(path);
        /* 1: some pods stayed pending, which the mix is made for */
        if (rc || res[s].status > 1) {
            cli_errorf("bench", "allocate-scale: allocate on %u nodes failed (exit status %d)", sizes[s],
                       rc ? -1 : res[s].status);
            return 3;
        }
        char name[96];
        snprintf(name, sizeof name, "allocate-scale-%u-seconds", sizes[s]);
        bench_print(out, name, res[s].cpu_s, "s");
        snprintf(name, sizeof name, "allocate-scale-%u-wall-seconds", sizes[s]);
        bench_print(out, name, res[s].wall_s, "s");
        snprintf(name, sizeof name, "allocate-scale-%u-rss-mib", sizes[s]);
        bench_print(out, name, res[s].rss_mib, "MiB");
        if (instr) {
            snprintf(name, sizeof name, "allocate-scale-%u-instructions", sizes[s]);
            bench_print(out, name, res[s].instr, "instructions");
        }
    }
    bench_print(out, "allocate-scale-ratio", res[0].cpu_s > 0 ? res[1].cpu_s / res[0].cpu_s : 0, "x");
    if (instr)
        bench_print(out, "allocate-scale-instr-ratio", res[0].instr > 0 ? res[1].instr / res[0].instr : 0, "x");
    bench_print(out, "allocate-scale-seconds", res[1].cpu_s, "s");
    return 0;
}
