/*
 * cmd_run.c - `draengine run`: the main job.  A simulated cluster of real
 * hardware shapes is loaded into the device graph, the shipped policies
 * derive their facts, and a stream of pods with realistic claims arrives
 * until every kind of pod stops fitting; each pod is scheduled the way
 * kube-scheduler's DynamicResources plugin would (al_schedule_pod), then a
 * summary (and optionally an HTML report) says what happened.
 *
 * Determinism: the cluster, the arrival order and every decision follow
 * from the seed; only the timing lines of the summary measure the machine.
 * A workload stops arriving after `patience` consecutive pods of it stayed
 * pending (the cluster no longer has room for it); the run ends when every
 * workload has stopped or maxPods pods arrived.
 */
#include "../../drivers/sim/sim.h"
#include "../alloc/al.h"
#include "../base/intern.h"
#include "../base/log.h"
#include "../model/dg.h"
#include "cli.h"
#include "flags.h"
#include "objout.h"
#include "run.h"
#include "run_policy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define RUN_DEFAULT_NODES 256
#define PURPOSE_WORKLOAD 101
#define RUN_BATCH 64

static void usage(FILE *f)
{
    fprintf(f,
            "usage: draengine run [--nodes N] [--shapes NAME[:WEIGHT],...] [--workload FILE]\n"
            "                     [--policies DIR | --no-policies] [--seed S] [--report FILE]\n"
            "                     [--max-pods N] [--feature-gates A=true,...] [--print-workload]\n"
            "\n"
            "The main job: build a simulated cluster of real hardware shapes, load the\n"
            "policies, and let pods with realistic claims arrive until the cluster is full;\n"
            "then print what was placed, what stayed pending and why, devices per tier and\n"
            "vendor, NUMA/PCIe alignment, fragmentation, and decision latency (p50, p99).\n"
            "\n"
            "  --nodes N          cluster size (default %d)\n"
            "  --shapes LIST      node shapes and weights (default: a mix of every shape;\n"
            "                     see `draengine sim --list-shapes`)\n"
            "  --workload FILE    the pod mix, YAML or JSON (see --print-workload for the format)\n"
            "  --policies DIR     policy directory (default: ./policies when it exists; --policy-dir\n"
            "                     too); a revision whose hooks fail on the cluster's devices is refused\n"
            "  --no-policies      Kubernetes allocation only\n"
            "  --seed S           seed of the cluster and of the arrivals (default 1)\n"
            "  --report FILE      also write a self-contained HTML report\n"
            "  --max-pods N       stop after N pods (default: the workload's maxPods, 100000)\n"
            "  --feature-gates L  Kubernetes 1.37 feature gates, as kube-scheduler takes them\n"
            "  --print-workload   print the built-in workload mix and exit\n"
            "  -v                 log verbosity (-v 2); policy statistics at the end\n"
            "  -h, --help         this help\n",
            RUN_DEFAULT_NODES);
}

typedef struct runner {
    dg_graph *g;
    de_interner *in;
    sim_cluster *cl;
    run_stats st;
    run_mix mix;
    uint32_t *devmap; /* graph device id -> stats device index (UINT32_MAX none) */
    uint32_t ndevmap;
    uint64_t seed;
    uint32_t nobjs;
} runner;

static de_rc apply_cb(void *ctx, json_t *obj, de_err *e)
{
    runner *r = ctx;
    de_origin o = {"<sim>", (int)++r->nobjs, -1};
    dg_kind k;
    return dg_apply(r->g, obj, &o, &k, e);
}

/* ---- device table for the summary and the picture ----------------------- */

static const char *sv(const runner *r, uint32_t id) { return de_intern_str(r->in, id); }

static const de_attr *find_attr(const runner *r, const de_devview *v, const char *domain, const char *name)
{
    uint32_t d = de_intern_find(r->in, domain, strlen(domain)), n = de_intern_find(r->in, name, strlen(name));
    if (d == UINT32_MAX || n == UINT32_MAX)
        return NULL;
    return de_devview_attr(v, d, n);
}

static const char *attr_str(const runner *r, const de_devview *v, const char *domain, const char *name)
{
    const de_attr *a = find_attr(r, v, domain, name);
    return a && a->v.kind == DE_V_STRING ? sv(r, a->v.u.s) : NULL;
}

static int32_t attr_int(const runner *r, const de_devview *v, const char *domain, const char *name)
{
    const de_attr *a = find_attr(r, v, domain, name);
    if (!a)
        return -1;
    if (a->v.kind == DE_V_INT)
        return (int32_t)a->v.u.i;
    if (a->v.kind == DE_V_INTS && a->v.n > 0)
        return (int32_t)a->v.u.ints[0];
    return -1;
}

/* Physical accelerator of a device: (node, the GPU's identity). */
typedef struct physkey {
    uint32_t node;
    char key[72];
} physkey;

static int32_t phys_index(physkey **keys, uint32_t *n, uint32_t node, const char *key)
{
    for (uint32_t i = *n; i > 0; i--) { /* devices of one GPU are adjacent: search backwards */
        if ((*keys)[i - 1].node != node)
            break;
        if (!strcmp((*keys)[i - 1].key, key))
            return (int32_t)(i - 1);
    }
    *keys = de_xrealloc(*keys, (*n + 1) * sizeof **keys);
    (*keys)[*n].node = node;
    snprintf((*keys)[*n].key, sizeof (*keys)[*n].key, "%s", key);
    return (int32_t)(*n)++;
}

static const char *tier_of(const runner *r, const de_devview *v)
{
    uint32_t tier = de_intern_find(r->in, "tier", 4);
    for (uint32_t i = 0; i < v->nderived; i++)
        if (v->derived[i].name == tier && v->derived[i].v.kind == DE_V_STRING)
            return sv(r, v->derived[i].v.u.s);
    return NULL;
}

/* Every derived attribute of a device, for the report's colouring. */
static void add_facets(runner *r, uint32_t di, const de_devview *v)
{
    for (uint32_t i = 0; i < v->nderived; i++) {
        const de_attr *a = &v->derived[i];
        char name[200], val[256];
        snprintf(name, sizeof name, "%s/%s", sv(r, a->domain), sv(r, a->name));
        switch (a->v.kind) {
        case DE_V_INT: snprintf(val, sizeof val, "%lld", (long long)a->v.u.i); break;
        case DE_V_BOOL: snprintf(val, sizeof val, "%s", a->v.u.b ? "true" : "false"); break;
        case DE_V_STRING:
        case DE_V_VERSION: snprintf(val, sizeof val, "%s", sv(r, a->v.u.s)); break;
        default: snprintf(val, sizeof val, "(a list of %u)", a->v.n);
        }
        run_stats_facet(&r->st, di, name, val);
    }
}

typedef struct slref {
    uint32_t sid;
    const char *driver, *name;
} slref;

/* Accelerators first, then NICs, CPUs, the rest; by name within a rank. */
static int driver_rank(const char *d)
{
    const char *v = run_vendor(d);
    if (!strcmp(v, "network"))
        return 1;
    if (!strcmp(v, "cpu"))
        return 2;
    return !strncmp(d, "gpu.", 4) || !strncmp(d, "tpu.", 4) || !strncmp(d, "gaudi.", 6) ? 0 : 3;
}

static int cmp_slref(const void *a, const void *b)
{
    const slref *x = a, *y = b;
    int rx = driver_rank(x->driver), ry = driver_rank(y->driver);
    if (rx != ry)
        return rx < ry ? -1 : 1;
    int c = strcmp(x->driver, y->driver);
    return c ? c : strcmp(x->name, y->name);
}

static void build_device_table(runner *r)
{
    physkey *keys = NULL;
    uint32_t nkeys = 0;
    r->ndevmap = dg_device_id_limit(r->g);
    r->devmap = de_xmalloc((r->ndevmap ? r->ndevmap : 1) * sizeof *r->devmap);
    for (uint32_t i = 0; i < r->ndevmap; i++)
        r->devmap[i] = UINT32_MAX;
    for (uint32_t n = 0; n < sim_node_count(r->cl); n++) {
        const char *nodename = sim_node_name(r->cl, n);
        uint32_t ni = run_stats_add_node(&r->st, nodename, sim_node_shape(r->cl, n)->name);
        const uint32_t *sids;
        uint32_t ns;
        dg_slices_on_node(r->g, de_intern_cstr(r->in, nodename), &sids, &ns);
        slref *sl = de_xcalloc(ns ? ns : 1, sizeof *sl);
        for (uint32_t k = 0; k < ns; k++) {
            const dg_slice *s = dg_slice_get(r->g, sids[k]);
            sl[k] = (slref){sids[k], s ? sv(r, s->driver) : "", s ? sv(r, s->meta.name) : ""};
        }
        qsort(sl, ns, sizeof *sl, cmp_slref);
        for (uint32_t k = 0; k < ns; k++) {
            const dg_slice *s = dg_slice_get(r->g, sl[k].sid);
            if (!s)
                continue;
            for (uint32_t di = 0; di < s->ndevices; di++) {
                uint32_t devid = dg_device_id(r->g, sl[k].sid, di);
                if (devid == DG_NONE)
                    continue;
                de_devview v;
                dg_device_view(r->g, devid, &v);
                const char *drv = sv(r, v.driver);
                run_dev d = {.node = ni, .name = (char *)sv(r, v.name), .driver = (char *)drv,
                             .kind = RUN_KIND_OTHER, .phys = -1, .tier = -1, .numa = -1, .owner = -1};
                const char *type = attr_str(r, &v, drv, "type");
                const char *phys = NULL;
                if (!strcmp(drv, "gpu.nvidia.com")) {
                    if (type && !strcmp(type, "mig")) {
                        d.kind = RUN_KIND_PART;
                        phys = attr_str(r, &v, drv, "parentUUID");
                    } else if (type && !strcmp(type, "vfio")) {
                        d.kind = RUN_KIND_OTHER; /* passthrough for VMs: not a container GPU */
                        phys = attr_str(r, &v, drv, "uuid");
                    } else {
                        d.kind = RUN_KIND_GPU;
                        phys = attr_str(r, &v, drv, "uuid");
                    }
                } else if (!strcmp(drv, "gpu.amd.com")) {
                    d.kind = type && !strcmp(type, "amdgpu-partition") ? RUN_KIND_PART : RUN_KIND_GPU;
                    phys = attr_str(r, &v, drv, "deviceID");
                } else if (!strcmp(drv, "dra.net")) {
                    d.kind = RUN_KIND_NIC;
                } else if (!strcmp(drv, "dra.cpu")) {
                    d.kind = RUN_KIND_CPU;
                }
                if (phys)
                    d.phys = phys_index(&keys, &nkeys, ni, phys);
                const char *tier = tier_of(r, &v);
                if (tier)
                    d.tier = run_stats_tier(&r->st, tier);
                static const char *const numa_keys[][2] = {
                    {"resource.kubernetes.io", "numaNode"}, {"dra.net", "numaNode"}, {"", "numaNode"},
                    {"", "numa"}, {"dra.cpu", "numaNodeID"},
                };
                for (size_t q = 0; q < DE_ARRAY_LEN(numa_keys) && d.numa < 0; q++)
                    d.numa = attr_int(r, &v, numa_keys[q][0][0] ? numa_keys[q][0] : drv, numa_keys[q][1]);
                d.root = (char *)attr_str(r, &v, "resource.kubernetes.io", "pcieRoot");
                r->devmap[devid] = run_stats_add_dev(&r->st, &d);
                add_facets(r, r->devmap[devid], &v);
            }
        }
        free(sl);
    }
    free(keys);
    run_stats_facets_done(&r->st);
}

/* ---- one pod ------------------------------------------------------------------ */

#define POD_MAX_DEVS 64

static void record_alloc(runner *r, uint32_t w, const dg_allocation *a, run_pod *p, uint32_t *devs, uint32_t *ndevs)
{
    for (uint32_t i = 0; i < a->nresults; i++) {
        const dg_result *res = &a->results[i];
        uint32_t devid = dg_device_find(r->g, res->driver, res->pool, res->device);
        if (devid == DG_NONE || devid >= r->ndevmap || r->devmap[devid] == UINT32_MAX)
            continue;
        uint32_t di = r->devmap[devid];
        run_stats_use(&r->st, di, w, res->share_id != 0);
        p->ndev++;
        if (*ndevs < POD_MAX_DEVS)
            devs[(*ndevs)++] = di;
    }
}

/* Alignment matters where an accelerator works with a NIC or with CPUs:
 * only such pods count.  Aligned = every device that publishes a PCIe
 * root (a NUMA node) has the same one; needs two devices that publish it. */
static void alignment(const runner *r, run_pod *p, const uint32_t *devs, uint32_t n)
{
    unsigned kinds = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint8_t k = r->st.devs[devs[i]].kind;
        kinds |= k == RUN_KIND_GPU || k == RUN_KIND_PART ? 1u : k == RUN_KIND_NIC ? 2u : k == RUN_KIND_CPU ? 4u : 0u;
    }
    if (!(kinds & 1u) || !(kinds & 6u))
        return;
    const char *root = NULL;
    int32_t numa = -1;
    uint32_t nroot = 0, nnuma = 0;
    bool rm = false, nm = false;
    for (uint32_t i = 0; i < n; i++) {
        const run_dev *d = &r->st.devs[devs[i]];
        if (d->root) {
            if (nroot++ && strcmp(root, d->root))
                rm = true;
            root = d->root;
        }
        if (d->numa >= 0) {
            if (nnuma++ && numa != d->numa)
                nm = true;
            numa = d->numa;
        }
    }
    if (nroot >= 2)
        p->pcie_aligned = !rm;
    if (nnuma >= 2)
        p->numa_aligned = !nm;
}

/* A pod arrives: its object goes into the graph. */
static de_rc arrive(runner *r, size_t wi, uint64_t k, sim_rng *rng, uint32_t *pid, de_err *e)
{
    const run_workload *w = &r->mix.w[wi];
    char podname[96];
    snprintf(podname, sizeof podname, "%s-%05llu", w->name, (unsigned long long)k);
    json_t *pod = run_mix_pod(&r->mix, wi, k, rng);
    de_origin o = {"<workload>", (int)k + 1, -1};
    dg_kind kind;
    de_rc rc = dg_apply(r->g, pod, &o, &kind, e);
    *pid = rc == DE_OK ? dg_pod_find(r->g, de_intern_cstr(r->in, RUN_NAMESPACE), de_intern_cstr(r->in, podname))
                       : DG_NONE;
    json_decref(pod);
    return rc; /* an error: our own pod was refused, a bad workload claim */
}

/* The extended resources of a workload, for messages: "a, b". */
static void ext_names(const run_workload *w, char *buf, size_t cap)
{
    const char *k;
    json_t *v;
    size_t o = 0;
    buf[0] = 0;
    json_object_foreach(w->ext, k, v) {
        int n = snprintf(buf + o, cap - o, "%s%s", o ? ", " : "", k);
        if (n < 0 || (size_t)n >= cap - o)
            break;
        o += (size_t)n;
    }
    (void)v;
}

/* Schedule one arrived pod and record what happened. */
static void decide(runner *r, al_allocator *al, de_arena *arena, size_t wi, uint32_t pid, bool *hard_error)
{
    de_rc rc;
    *hard_error = false;
    run_pod p = {.workload = (uint32_t)wi, .node = -1, .pcie_aligned = -1, .numa_aligned = -1};
    al_pod_outcome out;
    memset(&out, 0, sizeof out);
    de_err pe;
    de_err_clear(&pe);
    const run_workload *w = &r->mix.w[wi];
    if (w->ext && !w->claim && !al_pod_uses_dra(al, pid)) {
        /* KEP-5004 needs a DeviceClass that names the resource */
        char names[200], why[256];
        ext_names(w, names, sizeof names);
        snprintf(why, sizeof why, "no DeviceClass serves extended resource %s", names);
        p.reason = why;
        run_stats_add_pod(&r->st, &p);
        *hard_error = true; /* no pod of this workload can ever fit */
        return;
    }
    uint64_t t0 = de_now_ns();
    rc = al_schedule_pod(al, pid, arena, &out, &pe);
    p.ns = de_now_ns() - t0;
    if (rc == DE_OK && out.node_name != 0) {
        p.placed = true;
        const char *node = sv(r, out.node_name);
        for (uint32_t n = 0; n < r->st.nnodes; n++)
            if (!strcmp(r->st.nodes[n].name, node)) {
                p.node = (int32_t)n;
                break;
            }
        uint32_t devs[POD_MAX_DEVS], ndevs = 0;
        for (uint32_t c = 0; c < out.nclaims; c++)
            if (out.allocated_now && out.allocated_now[c])
                record_alloc(r, (uint32_t)wi, &out.allocs[c].alloc, &p, devs, &ndevs);
        alignment(r, &p, devs, ndevs);
    } else if (rc == DE_OK || rc == DE_EUNSAT) {
        /* the whole first line: a reason cut mid-word reads as a different one */
        const char *why = rc == DE_EUNSAT && out.why ? out.why : "no node fits";
        char *line = de_xstrndup(why, strcspn(why, "\n"));
        p.reason = line;
        run_stats_add_pod(&r->st, &p);
        free(line);
        de_arena_reset(arena);
        return;
    }
    /* out here: p.reason points into it when run_stats_add_pod copies it
     * (declared in the branch, it was read after its scope ended) */
    char line[DE_ERR_MSG_MAX + 16];
    if (rc != DE_OK) {
        /* a hard error for this pod (bad selector, budget): pending, and the
         * workload stops, since every pod of it would fail the same way */
        *hard_error = true;
        snprintf(line, sizeof line, "error: %s", pe.msg);
        line[strcspn(line, "\n")] = 0;
        p.reason = line;
    }
    run_stats_add_pod(&r->st, &p);
    de_arena_reset(arena);
}

/* ---- the command ---------------------------------------------------------------- */

int cli_cmd_run(int argc, char **argv)
{
    enum { F_NODES = 1, F_SHAPES, F_WORKLOAD, F_POLICIES, F_NOPOL, F_SEED, F_REPORT, F_MAXPODS, F_PRINT, F_GATES,
           F_HELP, F_VERBOSE };
    static const cli_flag flags[] = {
        {"nodes", 0, CLI_ARG_REQUIRED, F_NODES, NULL},
        {"shapes", 0, CLI_ARG_REQUIRED, F_SHAPES, "shape"},
        {"workload", 0, CLI_ARG_REQUIRED, F_WORKLOAD, NULL},
        {"policies", 0, CLI_ARG_REQUIRED, F_POLICIES, "policy-dir"},
        {"no-policies", 0, CLI_ARG_NONE, F_NOPOL, NULL},
        {"seed", 0, CLI_ARG_REQUIRED, F_SEED, NULL},
        {"report", 0, CLI_ARG_REQUIRED, F_REPORT, NULL},
        {"max-pods", 0, CLI_ARG_REQUIRED, F_MAXPODS, NULL},
        {"print-workload", 0, CLI_ARG_NONE, F_PRINT, NULL},
        {"feature-gates", 0, CLI_ARG_REQUIRED, F_GATES, NULL},
        {"help", 'h', CLI_ARG_NONE, F_HELP, NULL},
        {"v", 'v', CLI_ARG_LEVEL, F_VERBOSE, "verbose"},
        {0},
    };
    uint64_t v, seed = 1, max_pods = 0;
    uint32_t nodes = RUN_DEFAULT_NODES;
    const char *shapes = NULL, *workload = NULL, *policies = NULL, *report = NULL;
    bool no_policies = false;
    int verbose = 0;
    de_gates gates;
    de_gates_default(&gates);
    cli_args args;
    cli_args_init(&args, "run", argc, argv, 1);
    const char *val;
    int id;
    while ((id = cli_args_next(&args, flags, &val)) != CLI_ARGS_END) {
        const char *fl = cli_args_flag(&args);
        switch (id) {
        case CLI_ARGS_ERROR:
            usage(stderr);
            return CLI_EXIT_INVALID;
        case CLI_ARGS_OPERAND:
            cli_errorf("run", "unexpected argument \"%s\"", val);
            return CLI_EXIT_INVALID;
        case F_NODES:
            if (!cli_flag_u64("run", fl, val, 1, SIM_MAX_NODES, &v))
                return CLI_EXIT_INVALID;
            nodes = (uint32_t)v;
            break;
        case F_SHAPES:
            shapes = val;
            break;
        case F_WORKLOAD:
            workload = val;
            break;
        case F_POLICIES:
            policies = val;
            break;
        case F_NOPOL:
            no_policies = true;
            break;
        case F_SEED:
            if (!cli_flag_u64("run", fl, val, 0, UINT64_MAX, &seed))
                return CLI_EXIT_INVALID;
            break;
        case F_REPORT:
            report = val;
            break;
        case F_MAXPODS:
            if (!cli_flag_u64("run", fl, val, 1, 10000000, &max_pods))
                return CLI_EXIT_INVALID;
            break;
        case F_GATES: {
            de_err ge;
            de_err_clear(&ge);
            if (de_gates_parse(&gates, val, &ge) != DE_OK) {
                cli_errorf("run", "--feature-gates: %s", ge.msg);
                return CLI_EXIT_INVALID;
            }
            break;
        }
        case F_PRINT:
            fputs(run_default_mix_text(), stdout);
            return CLI_EXIT_OK;
        case F_HELP:
            usage(stdout);
            return CLI_EXIT_OK;
        case F_VERBOSE:
            if (!cli_flag_level("run", val, &verbose))
                return CLI_EXIT_INVALID;
            de_log_set_verbosity(verbose);
            break;
        }
    }
    bool default_policies = false;
    if (!policies && !no_policies) {
        struct stat st;
        if (stat("policies", &st) == 0 && S_ISDIR(st.st_mode)) {
            policies = "policies";
            default_policies = true;
        }
    }
    if (no_policies)
        policies = NULL;

    de_err e;
    de_err_clear(&e);
    runner r;
    memset(&r, 0, sizeof r);
    run_stats_init(&r.st);
    r.seed = seed;
    int exit_code = CLI_EXIT_OK;
    al_allocator *al = NULL;
    run_policy *rp = NULL;
    de_arena *arena = NULL;
    bool *stopped = NULL, *fitted = NULL;
    uint32_t *misses = NULL;

    if (workload) {
        if (run_mix_load(workload, &r.mix, &e) != DE_OK) {
            cli_errorf("run", "%s", e.msg);
            run_stats_free(&r.st);
            return CLI_EXIT_INVALID;
        }
    } else {
        run_mix_default(&r.mix);
    }
    if (max_pods)
        r.mix.max_pods = (uint32_t)max_pods;

    uint64_t t_setup = de_now_ns();
    sim_opts so = {.seed = seed, .mix = shapes, .nodes = nodes};
    r.cl = sim_new(&so, &e);
    if (!r.cl) {
        cli_errorf("run", "%s", e.msg);
        exit_code = CLI_EXIT_INVALID;
        goto out;
    }
    r.in = de_intern_new();
    dg_opts gopts = {.gates = &gates};
    r.g = dg_new(r.in, &gopts);
    if (sim_emit_all(r.cl, apply_cb, &r, &e) != DE_OK) {
        cli_errorf("run", "building the cluster: %s", e.msg);
        exit_code = CLI_EXIT_INTERNAL;
        goto out;
    }
    al_opts ao = {.seed = seed, .gates = gates};
    al = al_new(r.g, &ao, &e);
    if (!al) {
        cli_errorf("run", "%s", e.msg);
        exit_code = CLI_EXIT_INTERNAL;
        goto out;
    }
    if (policies) {
        rp = run_policy_load(policies, r.g, al, &e);
        if (!rp && default_policies && e.rc == DE_ENOTFOUND) {
            cli_errorf("run", "%s; running without policies", e.msg);
            policies = NULL;
        } else if (!rp) {
            cli_errorf("run", "loading policies from %s: %s", policies, e.msg);
            exit_code = CLI_EXIT_INVALID;
            goto out;
        } else if (!run_policy_judge(rp, policies)) {
            exit_code = CLI_EXIT_INVALID;
            goto out;
        } else {
            r.st.npolicies = run_policy_count(rp);
            r.st.policy_dir = de_xstrdup(policies);
            r.st.policy_revision = de_xstrdup(run_policy_revision(rp));
        }
    }
    json_t *objs = run_mix_objects(&r.mix);
    size_t i;
    json_t *obj;
    json_array_foreach(objs, i, obj) {
        de_origin o = {workload ? workload : "<built-in workload>", (int)i + 1, -1};
        dg_kind k;
        if (dg_apply(r.g, obj, &o, &k, &e) != DE_OK) {
            json_decref(objs);
            cli_errorf("run", "workload: %s", e.msg);
            exit_code = CLI_EXIT_INVALID;
            goto out;
        }
    }
    json_decref(objs);
    build_device_table(&r);
    r.st.setup_ns = de_now_ns() - t_setup;

    arena = de_arena_new(256u << 20);
    stopped = de_xcalloc(r.mix.n, sizeof *stopped);
    misses = de_xcalloc(r.mix.n, sizeof *misses);
    fitted = de_xcalloc(r.mix.n, sizeof *fitted);
    sim_rng rng;
    sim_rng_derive(&rng, seed, PURPOSE_WORKLOAD, 0);
    run_progress prog;
    run_progress_init(&prog);
    uint32_t placed = 0, pending = 0, active = (uint32_t)r.mix.n;
    uint64_t t_run = de_now_ns();
    /* Pods arrive in batches: the objects of a batch go into the graph
     * together, then each is scheduled in arrival order.  (The allocator
     * follows graph events incrementally, so this is no longer for speed;
     * the batch size is kept because which pods arrive depends on it.)  A
     * pod whose workload stopped while its batch was being scheduled never
     * arrives. */
    uint64_t k = 0;
    size_t bwi[RUN_BATCH];
    uint32_t bpid[RUN_BATCH];
    while (k < r.mix.max_pods && active > 0) {
        size_t nb = 0;
        for (; nb < RUN_BATCH && k < r.mix.max_pods; nb++, k++) {
            bwi[nb] = run_mix_pick(&r.mix, stopped, &rng);
            if (arrive(&r, bwi[nb], k, &rng, &bpid[nb], &e) != DE_OK) {
                run_progress_done(&prog);
                cli_errorf("run", "workload %s: %s", r.mix.w[bwi[nb]].name, e.msg);
                exit_code = CLI_EXIT_INVALID;
                goto out;
            }
        }
        for (size_t b = 0; b < nb; b++) {
            size_t wi = bwi[b];
            if (stopped[wi])
                continue;
            bool hard = false;
            decide(&r, al, arena, wi, bpid[b], &hard);
            const run_pod *p = &r.st.pods[r.st.npods - 1];
            if (p->placed) {
                placed++;
                misses[wi] = 0;
                fitted[wi] = true;
            } else {
                pending++;
                if (fitted[wi] && !r.st.have_miss) {
                    /* the cluster ran out of room for something that fitted before */
                    r.st.have_miss = true;
                    r.st.miss_pods = r.st.npods;
                    r.st.miss_workload = (uint32_t)wi;
                    run_stats_frag(&r.st, &r.st.miss_frag);
                }
                if (hard || ++misses[wi] >= r.mix.patience) {
                    stopped[wi] = true;
                    active--;
                }
            }
            run_stats_sample(&r.st);
            run_progress_update(&prog, r.st.npods, placed, pending,
                                r.st.nphys ? (double)r.st.nbusy / r.st.nphys : 0.0, false);
        }
    }
    r.st.wall_ns = de_now_ns() - t_run;
    run_progress_done(&prog);

    {
        uint32_t nshapes = 0;
        for (uint32_t n = 0; n < r.st.nnodes; n++) {
            uint32_t q = 0;
            while (q < n && strcmp(r.st.nodes[q].shape, r.st.nodes[n].shape))
                q++;
            nshapes += q == n;
        }
        printf("draengine run: seed %llu, %u nodes of %u shapes, %zu workloads%s%s\n\n",
               (unsigned long long)seed, r.st.nnodes, nshapes, r.mix.n, policies ? ", policies from " : "",
               policies ? policies : "");
    }
    run_stats_summary(&r.st, &r.mix, stdout);
    if (report) {
        char title[256];
        snprintf(title, sizeof title, "seed %llu, %u nodes, %u devices, %u pods", (unsigned long long)seed,
                 r.st.nnodes, r.st.ndevs, r.st.npods);
        if (run_report_write(&r.st, &r.mix, title, report, &e) != DE_OK) {
            cli_errorf("run", "report: %s", e.msg);
            exit_code = CLI_EXIT_INTERNAL;
        } else {
            printf("\nReport: %s\n", report);
        }
    }
    fflush(stdout);
    if (rp)
        run_policy_stats(rp);

out:
    free(stopped);
    free(fitted);
    free(misses);
    if (arena)
        de_arena_free(arena);
    run_policy_free(rp);
    al_free(al);
    dg_free(r.g);
    if (r.in)
        de_intern_free(r.in);
    sim_free(r.cl);
    free(r.devmap);
    run_mix_free(&r.mix);
    run_stats_free(&r.st);
    return exit_code;
}
