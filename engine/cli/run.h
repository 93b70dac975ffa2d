/*
 * run.h - the pieces of `draengine run` (cmd_run.c): the workload mix and
 * its pods (run_work.c), what happened to every pod and the summary
 * (run_stats.c), the HTML report (run_report.c) and the progress bar
 * (run_progress.c).  Internal to the CLI.
 */
#ifndef CLI_RUN_H
#define CLI_RUN_H

#include "../../drivers/sim/sim_rng.h"
#include "../base/buf.h"
#include "../base/de.h"

#include <jansson.h>
#include <stdio.h>

#define RUN_NAMESPACE "workloads"
#define RUN_MAX_WORKLOADS 64
#define RUN_DEFAULT_PATIENCE 3
#define RUN_DEFAULT_MAX_PODS 100000u

/* ---- workloads (run_work.c) --------------------------------------------- */

typedef struct run_workload {
    char *name;        /* DNS label; also the ResourceClaimTemplate's name */
    char *summary;     /* one line for the summary and the report */
    double weight;     /* relative arrival rate */
    json_t *claim;     /* ResourceClaimSpec, or NULL */
    json_t *ext;       /* container limits served by extended resources, or NULL */
} run_workload;

typedef struct run_mix {
    run_workload *w;
    size_t n;
    uint32_t patience; /* consecutive pending pods before a workload stops arriving */
    uint32_t max_pods;
} run_mix;

/* The built-in mix: single GPU, whole 8-GPU node, GPU+NIC on one PCIe root,
 * GPU+CPU on one NUMA node, MIG slices, tiered GPUs, extended-resource
 * pods, AMD GPUs and partitions, CPU-only pods. */
void run_mix_default(run_mix *m);
/* A user's mix from a YAML or JSON file (format in the README and in
 * `draengine run --help`). */
de_rc run_mix_load(const char *path, run_mix *m, de_err *e);
de_rc run_mix_from_json(const char *name, json_t *doc, run_mix *m, de_err *e);
void run_mix_free(run_mix *m);
/* The built-in mix as text (the --workload format). */
const char *run_default_mix_text(void);

/* Pick the next workload among those still arriving (weights). */
size_t run_mix_pick(const run_mix *m, const bool *stopped, sim_rng *r);

/* The Namespace and one ResourceClaimTemplate per claim workload (new refs). */
json_t *run_mix_objects(const run_mix *m);
/* Pod number k of workload wi (new ref), named "<workload>-<k>". */
json_t *run_mix_pod(const run_mix *m, size_t wi, uint64_t k, sim_rng *r);

/* ---- what happened (run_stats.c) ---------------------------------------- */

typedef enum run_kind {
    RUN_KIND_GPU = 0,  /* a whole accelerator */
    RUN_KIND_PART,     /* a MIG placement or an AMD partition */
    RUN_KIND_NIC,
    RUN_KIND_CPU,
    RUN_KIND_OTHER,
    RUN_KIND_COUNT
} run_kind;

#define RUN_SHARE_W 6     /* workloads named per shared device */
#define RUN_MAX_FACETS 16 /* derived attributes the report can colour by */
#define RUN_MAX_FACET_VALUES 48

/* A derived attribute the report can colour the cluster by: its values
 * (text, sorted when the table is complete) and each device's value. */
typedef struct run_facet {
    char *name;         /* "tier.draengine.io/tier" */
    char **values;
    uint32_t nvalues;
    bool overflow;      /* more values than RUN_MAX_FACET_VALUES: the rest are "other" */
} run_facet;

/* One device of the cluster, as the summary and the picture see it. */
typedef struct run_dev {
    uint32_t node;      /* node index */
    char *name;
    char *driver;
    uint8_t kind;       /* run_kind */
    int32_t phys;       /* physical accelerator index (run_stats.phys*), -1 = none */
    int32_t tier;       /* index into tiers, -1 = no tier */
    int32_t numa;       /* -1 unknown */
    char *root;         /* PCIe root or NULL */
    int32_t owner;      /* workload index holding it, -1 free */
    uint32_t shares;    /* allocations of a shareable device */
    /* who holds the shares: the first RUN_SHARE_W workloads, with counts */
    uint16_t share_w[RUN_SHARE_W], share_n[RUN_SHARE_W];
    uint8_t nshare_w;
} run_dev;

typedef struct run_node {
    char *name;
    char *shape;
    uint32_t first_dev, ndev;
} run_node;

/* One pod's fate. */
typedef struct run_pod {
    uint32_t workload;
    bool placed;
    int32_t node;        /* node index, -1 pending */
    uint64_t ns;         /* decision time */
    char *reason;        /* pending: why (first line) */
    uint32_t ndev;       /* devices allocated */
    int8_t pcie_aligned; /* -1: not applicable (< 2 devices with a root) */
    int8_t numa_aligned; /* -1: not applicable */
} run_pod;

typedef struct run_sample {  /* utilisation after a pod */
    uint32_t pods;
    float gpu_busy;      /* fraction of physical accelerators in use */
    float dev_busy;      /* fraction of devices allocated */
} run_sample;

/* Free whole GPUs and where they are. */
typedef struct run_frag {
    uint32_t free_gpus;    /* free whole GPUs (no part of the accelerator in use) */
    uint32_t stranded;     /* of which on nodes where some accelerator is busy */
    uint32_t full, partly, idle; /* GPU nodes */
} run_frag;

typedef struct run_stats {
    run_node *nodes;
    uint32_t nnodes;
    run_dev *devs;
    uint32_t ndevs, devcap;
    char **tiers;        /* tier names, in first-seen order, then sorted for output */
    uint32_t ntiers;
    uint32_t nphys;      /* physical accelerators */
    uint32_t *phys_busy; /* per physical accelerator: devices of it in use */
    run_pod *pods;
    uint32_t npods, podcap;
    run_sample *samples;
    uint32_t nsamples, samplecap;
    uint32_t nbusy;      /* physical accelerators in use */
    uint32_t nused;      /* devices allocated (exclusively or shared) */
    bool have_miss;      /* a workload that had fitted stopped fitting */
    uint32_t miss_pods;  /* pods arrived at that moment */
    uint32_t miss_workload;
    run_frag miss_frag;  /* fragmentation at that moment */
    uint64_t wall_ns;    /* whole stream, from the first pod to the last */
    uint64_t setup_ns;   /* building the cluster and loading policies */
    char *policy_revision;
    uint32_t npolicies;
    char *policy_dir;
    run_facet facets[RUN_MAX_FACETS];
    uint32_t nfacets;
    int16_t *facet_of;   /* ndevs x RUN_MAX_FACETS: value index, -1 none */
    uint32_t facetcap;
} run_stats;

void run_stats_init(run_stats *s);
void run_stats_free(run_stats *s);

uint32_t run_stats_add_node(run_stats *s, const char *name, const char *shape);
uint32_t run_stats_add_dev(run_stats *s, const run_dev *d); /* strings copied */
int32_t run_stats_tier(run_stats *s, const char *name);     /* index, added if new */
void run_stats_add_pod(run_stats *s, const run_pod *p);     /* reason copied */
/* Device `dev` was allocated to workload w (shared: one more share of a
 * device that allows multiple allocations). */
void run_stats_use(run_stats *s, uint32_t dev, uint32_t w, bool shared);
/* Device `dev` has derived attribute `name` = `value` (text). */
void run_stats_facet(run_stats *s, uint32_t dev, const char *name, const char *value);
/* Sort each facet's values (device indexes follow): call once, after the
 * device table is complete. */
void run_stats_facets_done(run_stats *s);
/* Device dev's value index in facet f, -1 when it has none. */
int32_t run_stats_facet_value(const run_stats *s, uint32_t dev, uint32_t f);
void run_stats_sample(run_stats *s);
void run_stats_frag(const run_stats *s, run_frag *out);

/* The summary: placed, pending with reasons, devices per tier and vendor,
 * alignment, fragmentation, then the timing lines (the only lines that
 * differ between runs with the same seed), which all start with "  latency"
 * or "  throughput" or "  setup". */
void run_stats_summary(const run_stats *s, const run_mix *m, FILE *out);

/* Vendor of a driver name, for the summary ("nvidia", "amd", "network", "cpu", ...). */
const char *run_vendor(const char *driver);

/* ---- report (run_report.c) ----------------------------------------------- */

de_rc run_report_write(const run_stats *s, const run_mix *m, const char *title, const char *path,
                       de_err *e);

/* ---- progress (run_progress.c) -------------------------------------------- */

typedef struct run_progress {
    bool on;             /* stderr is a terminal */
    uint64_t last_ns;
    int width;
} run_progress;

void run_progress_init(run_progress *p);
/* Redraw at most every 100 ms; `total` 0 = unknown (a spinner-like bar). */
void run_progress_update(run_progress *p, uint32_t pods, uint32_t placed, uint32_t pending, double fill,
                         bool force);
void run_progress_done(run_progress *p);

#endif
