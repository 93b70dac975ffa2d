/*
 * cmd_policy.c - `draengine policy test|lint|diff|bench|list`: tooling for
 * policy authors and GitOps pipelines.
 *
 * Exit codes are strict (CI judges a tool by them):
 *   test   0 every test passed and there was at least one; 1 a test failed
 *          or no test was found; 2 the policies themselves are invalid
 *   lint   0 no error (warnings allowed); 1 errors; 2 usage
 *   diff   0 (or 1 with --exit-code when something changes); 2 invalid input
 *   bench  0; 2 invalid input
 * Output is deterministic: sorted, no clocks (bench prints timings, by
 * definition, and says so).
 */
#include "../base/log.h"
#include "../model/dg.h"
#include "../policy/lint.h"
#include "../policy/pol.h"
#include "../policy/polgraph.h"
#include "../policy/testrun.h"
#include "cli.h"
#include "flags.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int cli_policy_diff(int argc, char **argv);

static void usage(FILE *o)
{
    fprintf(o,
            "usage: draengine policy <command> [flags]\n\n"
            "commands:\n"
            "  test [DIR]                        run the packs' specs inside the sandbox (DIR defaults to policies)\n"
            "  lint DIR                          static checks: syntax, globals, metadata, hooks, domains\n"
            "  diff --from DIR --to DIR -f SNAPSHOT...\n"
            "                                    replay the snapshot's pending claims under both revisions\n"
            "  bench DIR -f SNAPSHOT...          ns and instructions per hook call on the snapshot's devices\n"
            "  list DIR                          the policies of a directory with their revisions\n\n"
            "common flags:\n"
            "  --instructions N                  per hook call instruction budget (default 1000000)\n"
            "  --deadline-ms N                   per hook call deadline (default 100)\n"
            "  --memory-mb N                     per policy VM memory cap (default 64)\n"
            "  --failure open|closed             default failure mode (default closed)\n"
            "  -v                                print every test, not only failures\n");
}

/* Parse the shared flags; returns the index of the first unparsed argument
 * or -1 on a usage error.  Positional arguments are collected into pos. */
typedef struct popts {
    pol_config cfg;
    bool verbose, exit_code;
    const char *from, *to, *out;
    const char *files[64];
    int nfiles;
    const char *pos[8];
    int npos;
    const char *gates;
    int iterations;
} popts;

static int parse(int argc, char **argv, popts *o, const char *cmd)
{
    pol_config_default(&o->cfg);
    o->cfg.log = pol_log_to_engine;
    o->iterations = 5;
    char who[32];
    snprintf(who, sizeof who, "policy %s", cmd);
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define NEED()                                                              \
    do {                                                                    \
        if (!v) {                                                           \
            cli_errorf(who, "%s needs a value", a);                         \
            return -1;                                                      \
        }                                                                   \
        i++;                                                                \
    } while (0)
        if (!strcmp(a, "-v") || !strcmp(a, "--verbose"))
            o->verbose = true;
        else if (!strcmp(a, "--exit-code"))
            o->exit_code = true;
        else if (!strcmp(a, "--instructions")) {
            NEED();
            if (!cli_flag_u64(who, a, v, 1, UINT64_MAX, &o->cfg.limits.instructions))
                return -1;
        } else if (!strcmp(a, "--deadline-ms")) {
            NEED();
            uint64_t ms;
            if (!cli_flag_u64(who, a, v, 1, 86400000, &ms))
                return -1;
            o->cfg.limits.deadline_ns = ms * 1000000ull;
        } else if (!strcmp(a, "--memory-mb")) {
            NEED();
            uint64_t mb;
            if (!cli_flag_u64(who, a, v, 1, 1u << 20, &mb))
                return -1;
            o->cfg.limits.memory = (size_t)mb << 20;
        } else if (!strcmp(a, "--failure")) {
            NEED();
            if (strcmp(v, "open") && strcmp(v, "closed")) {
                cli_errorf(who, "--failure: \"%s\" is not open or closed", v);
                return -1;
            }
            o->cfg.failure = !strcmp(v, "open") ? POL_FAIL_OPEN : POL_FAIL_CLOSED;
        } else if (!strcmp(a, "--from")) {
            NEED();
            o->from = v;
        } else if (!strcmp(a, "--to")) {
            NEED();
            o->to = v;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            NEED();
            o->out = v;
        } else if (!strcmp(a, "--feature-gates")) {
            NEED();
            o->gates = v;
        } else if (!strncmp(a, "--feature-gates=", 16)) {
            o->gates = a + 16;
        } else if (!strcmp(a, "--iterations")) {
            NEED();
            uint64_t it;
            if (!cli_flag_u64(who, a, v, 1, 1000000, &it))
                return -1;
            o->iterations = (int)it;
        } else if (!strcmp(a, "-f") || !strcmp(a, "--filename")) {
            NEED();
            if (o->nfiles >= (int)DE_ARRAY_LEN(o->files)) {
                cli_errorf(who, "%s: too many files (at most %zu)", a, DE_ARRAY_LEN(o->files));
                return -1;
            }
            o->files[o->nfiles++] = v;
        } else if (a[0] == '-' && a[1]) {
            cli_errorf("policy", "%s: unknown flag %s", cmd, a);
            return -1;
        } else {
            if (o->npos >= (int)DE_ARRAY_LEN(o->pos)) {
                cli_errorf("policy", "%s: too many arguments", cmd);
                return -1;
            }
            o->pos[o->npos++] = a;
        }
#undef NEED
    }
    return 0;
}

/* ---- test ------------------------------------------------------------------------ */

typedef struct testprint {
    bool verbose;
    const char *last_file;
} testprint;

static void print_test(void *ctx, const pol_test_result *r)
{
    testprint *p = ctx;
    if (r->status == POL_TEST_OK && !p->verbose)
        return;
    const char *tag = r->status == POL_TEST_OK ? "ok" : r->status == POL_TEST_PENDING ? "pending" : "FAIL";
    printf("%-7s %s  %s\n", tag, r->where ? r->where : r->file, r->name);
    if (r->status == POL_TEST_FAIL && r->message) {
        /* indent the message */
        const char *m = r->message;
        while (*m) {
            const char *nl = strchr(m, '\n');
            size_t n = nl ? (size_t)(nl - m) : strlen(m);
            printf("        %.*s\n", (int)n, m);
            m += n + (nl ? 1 : 0);
        }
    }
    fflush(stdout);
}

static int cmd_test(int argc, char **argv)
{
    popts o = {0};
    if (parse(argc, argv, &o, "test") < 0)
        return CLI_EXIT_INVALID;
    const char *dir = o.npos ? o.pos[0] : "policies";
    testprint tp = {o.verbose, NULL};
    pol_test_summary sum;
    de_err e;
    de_err_clear(&e);
    if (pol_test_run(dir, &o.cfg, print_test, &tp, &sum, &e) != DE_OK) {
        cli_errorf("policy", "test: %s", e.msg);
        return CLI_EXIT_INVALID;
    }
    uint32_t total = sum.passed + sum.failed;
    printf("%u spec files, %u tests, %u pending\n", sum.files, total, sum.pending);
    printf("%u passed, %u failed\n", sum.passed, sum.failed);
    if (total == 0) {
        cli_errorf("policy", "test: no tests found under %s (spec files are <dir>/spec/*_spec.lua and "
                             "<pack>/spec/*_spec.lua)", dir);
        return CLI_EXIT_UNSAT;
    }
    return sum.failed ? CLI_EXIT_UNSAT : CLI_EXIT_OK;
}

/* ---- lint ------------------------------------------------------------------------ */

static void print_lint(void *ctx, const pol_lint_problem *p)
{
    (void)ctx;
    if (p->line)
        printf("%s:%d: %s: %s\n", p->file, p->line, p->error ? "error" : "warning", p->message);
    else
        printf("%s: %s: %s\n", p->file, p->error ? "error" : "warning", p->message);
}

static int cmd_lint(int argc, char **argv)
{
    popts o = {0};
    if (parse(argc, argv, &o, "lint") < 0)
        return CLI_EXIT_INVALID;
    if (o.npos != 1) {
        cli_errorf("policy", "lint needs exactly one directory");
        return CLI_EXIT_INVALID;
    }
    pol_lint_summary sum;
    o.cfg.log = NULL;
    pol_lint_dir(o.pos[0], &o.cfg, print_lint, NULL, &sum);
    printf("%u files, %u errors, %u warnings\n", sum.files, sum.errors, sum.warnings);
    return sum.errors ? CLI_EXIT_UNSAT : CLI_EXIT_OK;
}

/* ---- list ------------------------------------------------------------------------- */

static int cmd_list(int argc, char **argv)
{
    popts o = {0};
    if (parse(argc, argv, &o, "list") < 0)
        return CLI_EXIT_INVALID;
    if (o.npos != 1) {
        cli_errorf("policy", "list needs exactly one directory");
        return CLI_EXIT_INVALID;
    }
    de_interner *in = de_intern_new();
    pol_set *s;
    de_err e;
    de_err_clear(&e);
    if (pol_set_load(o.pos[0], in, &o.cfg, &s, &e) != DE_OK) {
        cli_errorf("policy", "list: %s", e.msg);
        de_intern_free(in);
        return CLI_EXIT_INVALID;
    }
    printf("revision %s\n", pol_set_revision(s));
    for (uint32_t i = 0; i < pol_set_count(s); i++) {
        pol_info info;
        pol_set_info(s, i, &info);
        printf("%s %s  %.12s  %s  hooks:", info.name, info.version, info.revision, info.file);
        for (int h = 0; h < POL_NHOOKS; h++)
            if (info.hooks & (1u << h))
                printf(" %s", pol_hook_names[h]);
        printf("  domains:");
        for (uint32_t d = 0; d < info.ndomains; d++)
            printf(" %s", info.domains[d]);
        if (info.pack)
            printf("  pack: %s", info.pack);
        printf("\n");
    }
    pol_set_free(s);
    de_intern_free(in);
    return CLI_EXIT_OK;
}

/* ---- bench ----------------------------------------------------------------------- */

static de_interner *sort_in;
static int cmp_interned(const void *a, const void *b)
{
    return de_intern_cmp(sort_in, *(const uint32_t *)a, *(const uint32_t *)b);
}

/* Thread CPU time: a busy machine does not inflate the figures. */
static uint64_t cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static de_rc load_snapshot(const popts *o, dg_graph **out, de_err *e)
{
    dg_opts gopts = {0};
    de_gates gates;
    de_gates_default(&gates);
    if (o->gates && de_gates_parse(&gates, o->gates, e) != DE_OK)
        return e->rc;
    gopts.gates = &gates;
    dg_graph *g = dg_new(NULL, &gopts);
    for (int i = 0; i < o->nfiles; i++) {
        de_rc rc = dg_load_path(g, o->files[i], e);
        if (rc != DE_OK) {
            dg_free(g);
            return rc;
        }
    }
    *out = g;
    return DE_OK;
}

static int cmd_bench(int argc, char **argv)
{
    popts o = {0};
    if (parse(argc, argv, &o, "bench") < 0)
        return CLI_EXIT_INVALID;
    if (o.npos != 1 || !o.nfiles) {
        cli_errorf("policy", "bench needs a policy directory and -f SNAPSHOT");
        return CLI_EXIT_INVALID;
    }
    dg_graph *g = NULL;
    de_err e;
    de_err_clear(&e);
    if (load_snapshot(&o, &g, &e) != DE_OK) {
        cli_errorf("policy", "bench: %s", e.msg);
        return cli_exit_for(e.rc);
    }
    o.cfg.log = NULL;
    pol_set *s;
    if (pol_set_load(o.pos[0], dg_intern(g), &o.cfg, &s, &e) != DE_OK) {
        cli_errorf("policy", "bench: %s", e.msg);
        dg_free(g);
        return CLI_EXIT_INVALID;
    }
    uint32_t ndev = 0;
    for (uint32_t id = 0; id < dg_device_id_limit(g); id++)
        if (dg_device_get(g, id))
            ndev++;
    printf("# %u policies, %u devices, %d iterations; ns = thread CPU time per call (it varies between runs;\n"
           "# instruction counts do not)\n",
           pol_set_count(s), ndev, o.iterations);
    printf("%-24s %-7s %10s %12s %14s %10s\n", "policy", "hook", "calls", "ns/call", "instructions", "failures");
    de_arena *ar = de_arena_new(0);
    /* node names that have devices (Node objects may be absent), sorted */
    uint32_t *nodes = de_xcalloc(dg_device_id_limit(g) + 1, sizeof *nodes), nnodes = 0;
    for (uint32_t id = 0; id < dg_device_id_limit(g); id++) {
        if (!dg_device_get(g, id))
            continue;
        de_devview v;
        dg_device_view(g, id, &v);
        bool seen = !v.node;
        for (uint32_t k = 0; k < nnodes && !seen; k++)
            seen = nodes[k] == v.node;
        if (!seen)
            nodes[nnodes++] = v.node;
    }
    sort_in = dg_intern(g);
    if (nnodes)
        qsort(nodes, nnodes, sizeof *nodes, cmp_interned);
    for (uint32_t i = 0; i < pol_set_count(s); i++) {
        pol_info info;
        pol_set_info(s, i, &info);
        for (int h = 0; h < POL_NHOOKS; h++) {
            unsigned bit = 1u << h;
            if (!(info.hooks & bit))
                continue;
            uint64_t calls = 0, fails = 0, instr = 0, ns = 0;
            /* pass 0: exact instruction counts; passes 1..n: timing */
            for (int pass = 0; pass <= o.iterations; pass++) {
                pol_set_exact_counting(s, pass == 0);
                uint64_t t0 = cpu_ns();
                if (bit == POL_HOOK_DERIVE || bit == POL_HOOK_GROUPS) {
                    for (uint32_t id = 0; id < dg_device_id_limit(g); id++) {
                        if (!dg_device_get(g, id))
                            continue;
                        de_devview v;
                        dg_device_view(g, id, &v);
                        if (!pol_set_sees(s, i, v.driver))
                            continue;
                        uint64_t n = 0;
                        pol_reason r = pol_set_call_one(s, i, bit, &v, NULL, NULL, 0, NULL, &n);
                        if (pass == 0) {
                            instr += n;
                            calls++;
                            fails += r != POL_R_NONE;
                        }
                    }
                } else if (bit == POL_HOOK_SCORE) {
                    /* every node that has devices, its first device as the placement */
                    for (uint32_t k = 0; k < nnodes; k++) {
                        const uint32_t *sids;
                        uint32_t nsl;
                        dg_slices_on_node(g, nodes[k], &sids, &nsl);
                        de_devview v[1];
                        uint32_t nv = 0;
                        for (uint32_t q = 0; q < nsl && !nv; q++) {
                            const dg_slice *sl = dg_slice_get(g, sids[q]);
                            if (sl && sl->ndevices) {
                                dg_device_view(g, dg_device_id(g, sids[q], 0), &v[0]);
                                nv = 1;
                            }
                        }
                        pol_nodeinfo ni = {.name = nodes[k]};
                        uint32_t nid = dg_node_find(g, nodes[k]);
                        const dg_node *node = nid == DG_NONE ? NULL : dg_node_get(g, nid);
                        uint32_t lk[64], lv[64];
                        if (node) {
                            for (uint32_t q = 0; q < node->meta.nlabels && q < 64; q++) {
                                lk[q] = node->meta.labels[q].key;
                                lv[q] = node->meta.labels[q].value;
                            }
                            ni.label_keys = lk;
                            ni.label_values = lv;
                            ni.nlabels = node->meta.nlabels < 64 ? node->meta.nlabels : 64;
                        }
                        ni.free_devices = pol_node_free_devices(g, nodes[k], &ni.devices);
                        uint64_t n = 0;
                        pol_reason r = pol_set_call_one(s, i, bit, NULL, &ni, v, nv, NULL, &n);
                        if (pass == 0) {
                            instr += n;
                            calls++;
                            fails += r != POL_R_NONE;
                        }
                    }
                } else {
                    for (uint32_t c = 0; c < dg_claim_id_limit(g); c++) {
                        const dg_claim *cl = dg_claim_get(g, c);
                        if (!cl)
                            continue;
                        de_arena_reset(ar);
                        pol_claiminfo ci;
                        pol_claiminfo_from_graph(g, cl, ar, &ci);
                        uint64_t n = 0;
                        pol_reason r = pol_set_call_one(s, i, bit, NULL, NULL, NULL, 0, &ci, &n);
                        if (pass == 0) {
                            instr += n;
                            calls++;
                            fails += r != POL_R_NONE;
                        }
                    }
                }
                if (pass > 0)
                    ns += cpu_ns() - t0;
            }
            double per = calls ? (double)ns / (double)(calls * (uint64_t)o.iterations) : 0;
            double ipc = calls ? (double)instr / (double)calls : 0;
            printf("%-24s %-7s %10llu %12.0f %14.1f %10llu\n", info.name, pol_hook_names[h], (unsigned long long)calls, per, ipc,
                   (unsigned long long)fails);
        }
    }
    de_arena_free(ar);
    free(nodes);
    pol_set_free(s);
    dg_free(g);
    return CLI_EXIT_OK;
}

int cli_cmd_policy(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? CLI_EXIT_INVALID : CLI_EXIT_OK;
    }
    const char *sub = argv[1];
    if (!strcmp(sub, "test"))
        return cmd_test(argc - 2, argv + 2);
    if (!strcmp(sub, "lint"))
        return cmd_lint(argc - 2, argv + 2);
    if (!strcmp(sub, "bench"))
        return cmd_bench(argc - 2, argv + 2);
    if (!strcmp(sub, "list"))
        return cmd_list(argc - 2, argv + 2);
    if (!strcmp(sub, "diff"))
        return cli_policy_diff(argc - 2, argv + 2);
    cli_errorf("policy", "unknown command \"%s\"", sub);
    usage(stderr);
    return CLI_EXIT_INVALID;
}
