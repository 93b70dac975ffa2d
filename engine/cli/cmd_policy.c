/*
 * cmd_policy.c - `draengine policy test|lint|diff|bench|list`: tooling for
 * policy authors and GitOps pipelines.
 *
 * Exit codes are strict (CI judges a tool by them):
 *   test   0 every test passed and there was at least one; 1 a test failed
 *          or no test was found; 2 the policies themselves are invalid
 *   lint   0 no error (warnings allowed); 1 errors; 2 usage or no directory
 *   diff   0 (or 1 with --exit-code when something changes); 2 invalid input
 *          or a `--to` revision refused (hook failures on current devices)
 *   bench  0; 2 invalid input
 * Output is deterministic: sorted, no clocks (bench prints timings, by
 * definition, and says so).
 */
#include "../base/dir.h"
#include "../base/log.h"
#include "../model/dg.h"
#include "../policy/lint.h"
#include "../policy/pol.h"
#include "../policy/polgraph.h"
#include "../policy/testrun.h"
#include "cli.h"
#include "cmd_policy.h"
#include "flags.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

int cli_policy_diff(int argc, char **argv);
int cli_policy_test(int argc, char **argv);

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
            "Run 'draengine policy <command> --help' for the flags of a command.\n");
}

const char policy_limit_help[] =
    "  --instructions N                  per hook call instruction budget (default 1000000)\n"
    "  --deadline-ms N                   per hook call deadline (default 100)\n"
    "  --memory-mb N                     per policy VM memory cap (default 64)\n"
    "  --failure open|closed             default failure mode (default closed)\n";

/* One policy subcommand's flags (cmd_policy.h): parsed into o, operands
 * into o->pos.  Returns 1 after --help was printed, -1 on a usage error. */
int policy_parse(int argc, char **argv, policy_opts *o, const char *sub, const cli_flag *flags,
                 void (*help)(FILE *))
{
    pol_config_default(&o->cfg);
    o->cfg.log = pol_log_to_engine;
    o->iterations = 5;
    o->out = "text";
    snprintf(o->who, sizeof o->who, "policy %s", sub);
    const char *who = o->who;
    cli_args a;
    cli_args_init(&a, who, argc, argv, 0);
    const char *v;
    int id;
    while ((id = cli_args_next(&a, flags, &v)) != CLI_ARGS_END) {
        const char *fl = cli_args_flag(&a);
        switch (id) {
        case CLI_ARGS_ERROR:
            help(stderr);
            return -1;
        case CLI_ARGS_OPERAND:
            if (o->npos >= (int)DE_ARRAY_LEN(o->pos)) {
                cli_errorf(who, "unexpected argument \"%s\"", v);
                return -1;
            }
            o->pos[o->npos++] = v;
            break;
        case PF_HELP:
            help(stdout);
            return 1;
        case PF_VERBOSE:
            if (!cli_flag_level(who, v, &o->verbose))
                return -1;
            de_log_set_verbosity(o->verbose);
            break;
        case PF_EXIT_CODE:
            o->exit_code = true;
            break;
        case PF_INSTR:
            if (!cli_flag_u64(who, fl, v, 1, UINT64_MAX, &o->cfg.limits.instructions))
                return -1;
            break;
        case PF_DEADLINE: {
            uint64_t ms;
            if (!cli_flag_u64(who, fl, v, 1, 86400000, &ms))
                return -1;
            o->cfg.limits.deadline_ns = ms * 1000000ull;
            break;
        }
        case PF_MEMORY: {
            uint64_t mb;
            if (!cli_flag_u64(who, fl, v, 1, 1u << 20, &mb))
                return -1;
            o->cfg.limits.memory = (size_t)mb << 20;
            break;
        }
        case PF_FAILURE:
            if (strcmp(v, "open") && strcmp(v, "closed")) {
                cli_errorf(who, "%s: \"%s\" is not open or closed", fl, v);
                return -1;
            }
            o->cfg.failure = !strcmp(v, "open") ? POL_FAIL_OPEN : POL_FAIL_CLOSED;
            break;
        case PF_FROM:
            o->from = v;
            break;
        case PF_TO:
            o->to = v;
            break;
        case PF_NODE:
            o->node = v;
            break;
        case PF_POLICIES:
            o->policies = v;
            break;
        case PF_OUTPUT:
            o->out = v;
            break;
        case PF_GATES:
            o->gates = v;
            break;
        case PF_ITER: {
            uint64_t it;
            if (!cli_flag_u64(who, fl, v, 1, 1000000, &it))
                return -1;
            o->iterations = (int)it;
            break;
        }
        case PF_FILE:
            if (o->nfiles >= (int)DE_ARRAY_LEN(o->files)) {
                cli_errorf(who, "%s: too many files (at most %zu)", fl, DE_ARRAY_LEN(o->files));
                return -1;
            }
            o->files[o->nfiles++] = v;
            break;
        }
    }
    return 0;
}

/* The policy directory of a subcommand: --policies DIR or the operand. */
const char *policy_dir_arg(policy_opts *o, const char *sub, const char *dflt)
{
    if (o->policies && o->npos) {
        cli_errorf(o->who, "give the directory once (--policies %s or %s)", o->policies, o->pos[0]);
        return NULL;
    }
    if (o->npos > 1) {
        cli_errorf(o->who, "unexpected argument \"%s\"", o->pos[1]);
        return NULL;
    }
    const char *dir = o->policies ? o->policies : o->npos ? o->pos[0] : dflt;
    if (!dir)
        cli_errorf(o->who, "%s needs a policy directory (draengine policy %s DIR)", sub, sub);
    return dir;
}

bool policy_want_format(policy_opts *o, const char *const *formats)
{
    for (const char *const *f = formats; *f; f++)
        if (!strcmp(o->out, *f))
            return true;
    char list[128] = "";
    for (const char *const *f = formats; *f; f++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", f == formats ? "" : ", ", *f);
    cli_errorf(o->who, "-o: unknown output format \"%s\" (want %s)", o->out, list);
    return false;
}

/* ---- lint ------------------------------------------------------------------------ */

static void lint_help(FILE *o)
{
    fprintf(o, "usage: draengine policy lint DIR [flags]\n\n"
               "Static checks of a policy directory: syntax, undeclared globals and global writes, missing\n"
               "library fields, metadata, hooks, domains and ownership - everything the loader refuses,\n"
               "with file:line.\n\nflags:\n"
               "  --policies DIR                    the directory (instead of the operand; --policy-dir too)\n"
               "  -o, --output text|json            problems as lines (default) or as one JSON document\n"
               "%s"
               "  -v                                log verbosity\n  -h, --help                        this help\n\n"
               "Exit status: 0 no error (warnings allowed), 1 errors, 2 usage or a missing directory.\n",
            policy_limit_help);
}

typedef struct lintout {
    bool json;
    json_t *problems;
} lintout;

static void print_lint(void *ctx, const pol_lint_problem *p)
{
    lintout *lo = ctx;
    if (lo->json) {
        json_array_append_new(lo->problems,
                              json_pack("{s:s, s:i, s:s, s:s}", "file", p->file, "line", (json_int_t)p->line,
                                        "severity", p->error ? "error" : "warning", "message", p->message));
        return;
    }
    if (p->line)
        printf("%s:%d: %s: %s\n", p->file, p->line, p->error ? "error" : "warning", p->message);
    else
        printf("%s: %s: %s\n", p->file, p->error ? "error" : "warning", p->message);
}

static int cmd_lint(int argc, char **argv)
{
    static const cli_flag flags[] = {
        PF_COMMON_FLAGS, PF_LIMIT_FLAGS,
        {"policies", 0, CLI_ARG_REQUIRED, PF_POLICIES, "policy-dir"},
        {"output", 'o', CLI_ARG_REQUIRED, PF_OUTPUT, NULL},
        {0},
    };
    policy_opts o = {0};
    int pr = policy_parse(argc, argv, &o, "lint", flags, lint_help);
    if (pr)
        return pr > 0 ? CLI_EXIT_OK : CLI_EXIT_INVALID;
    static const char *const formats[] = {"text", "json", NULL};
    const char *dir = policy_dir_arg(&o, "lint", NULL);
    if (!dir || !policy_want_format(&o, formats))
        return CLI_EXIT_INVALID;
    if (!de_is_dir(dir)) {
        /* nothing to lint is a usage error, not a lint finding: CI must not
         * pass a job whose checkout lost the directory */
        struct stat st;
        cli_errorf(o.who, "%s: %s", dir, stat(dir, &st) == 0 ? "not a directory" : "no such directory");
        return CLI_EXIT_INVALID;
    }
    pol_lint_summary sum;
    o.cfg.log = NULL;
    lintout lo = {!strcmp(o.out, "json"), json_array()};
    pol_lint_dir(dir, &o.cfg, print_lint, &lo, &sum);
    if (lo.json) {
        json_t *doc = json_pack("{s:s, s:{s:i, s:i, s:i}, s:O}", "directory", dir, "summary", "files",
                                (json_int_t)sum.files, "errors", (json_int_t)sum.errors, "warnings",
                                (json_int_t)sum.warnings, "problems", lo.problems);
        char *t = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        printf("%s\n", t);
        free(t);
        json_decref(doc);
    } else {
        printf("%u files, %u errors, %u warnings\n", sum.files, sum.errors, sum.warnings);
    }
    json_decref(lo.problems);
    return sum.errors ? CLI_EXIT_UNSAT : CLI_EXIT_OK;
}

/* ---- list ------------------------------------------------------------------------- */

static void list_help(FILE *o)
{
    fprintf(o, "usage: draengine policy list DIR [flags]\n\n"
               "The policies of a directory: name, version, revision, file, hooks, domains, pack; and the\n"
               "revision of the whole set.\n\nflags:\n"
               "  --policies DIR                    the directory (instead of the operand; --policy-dir too)\n"
               "%s"
               "  -v                                log verbosity\n  -h, --help                        this help\n",
            policy_limit_help);
}

static int cmd_list(int argc, char **argv)
{
    static const cli_flag flags[] = {
        PF_COMMON_FLAGS, PF_LIMIT_FLAGS, {"policies", 0, CLI_ARG_REQUIRED, PF_POLICIES, "policy-dir"}, {0},
    };
    policy_opts o = {0};
    int pr = policy_parse(argc, argv, &o, "list", flags, list_help);
    if (pr)
        return pr > 0 ? CLI_EXIT_OK : CLI_EXIT_INVALID;
    const char *dir = policy_dir_arg(&o, "list", NULL);
    if (!dir)
        return CLI_EXIT_INVALID;
    de_interner *in = de_intern_new();
    pol_set *s;
    de_err e;
    de_err_clear(&e);
    if (pol_set_load(dir, in, &o.cfg, &s, &e) != DE_OK) {
        cli_errorf(o.who, "%s", e.msg);
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

static de_rc load_snapshot(const policy_opts *o, dg_graph **out, de_err *e)
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

static void bench_help(FILE *o)
{
    fprintf(o, "usage: draengine policy bench DIR -f SNAPSHOT... [flags]\n\n"
               "Per policy and hook: calls, thread-CPU ns per call and exact instructions per call on the\n"
               "snapshot's devices, nodes and claims.\n\nflags:\n"
               "  -f, --filename PATH               snapshot manifests (repeatable)\n"
               "  --policies DIR                    the directory (instead of the operand; --policy-dir too)\n"
               "  --iterations N                    timed passes (default 5)\n"
               "  --feature-gates A=true,...        gates for decoding the snapshot\n"
               "%s"
               "  -v                                log verbosity\n  -h, --help                        this help\n",
            policy_limit_help);
}

static int cmd_bench(int argc, char **argv)
{
    static const cli_flag flags[] = {
        PF_COMMON_FLAGS,
        PF_LIMIT_FLAGS,
        {"policies", 0, CLI_ARG_REQUIRED, PF_POLICIES, "policy-dir"},
        {"filename", 'f', CLI_ARG_REQUIRED, PF_FILE, NULL},
        {"iterations", 0, CLI_ARG_REQUIRED, PF_ITER, NULL},
        {"feature-gates", 0, CLI_ARG_REQUIRED, PF_GATES, NULL},
        {0},
    };
    policy_opts o = {0};
    int pr = policy_parse(argc, argv, &o, "bench", flags, bench_help);
    if (pr)
        return pr > 0 ? CLI_EXIT_OK : CLI_EXIT_INVALID;
    const char *dir = policy_dir_arg(&o, "bench", NULL);
    if (!dir)
        return CLI_EXIT_INVALID;
    if (!o.nfiles) {
        cli_errorf(o.who, "bench needs a policy directory and -f SNAPSHOT");
        return CLI_EXIT_INVALID;
    }
    dg_graph *g = NULL;
    de_err e;
    de_err_clear(&e);
    if (load_snapshot(&o, &g, &e) != DE_OK) {
        cli_errorf(o.who, "%s", e.msg);
        return cli_exit_for(e.rc);
    }
    o.cfg.log = NULL;
    pol_set *s;
    if (pol_set_load(dir, dg_intern(g), &o.cfg, &s, &e) != DE_OK) {
        cli_errorf(o.who, "%s", e.msg);
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
        return cli_policy_test(argc - 2, argv + 2);
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
