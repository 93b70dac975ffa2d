/*
 * alloc_plan.h - `draengine allocate` split for --watch: one run over
 * objects from any source (cmd_allocate.c), its decisions as data (which
 * node each pod got or why none, which devices each claim got), the
 * difference between two plans (alloc_plan.c) and the watch loop
 * (alloc_watch.c).
 *
 * A plan is recorded while the run prints (or instead of printing), from
 * the same values the table and the List are made of, so the plan, the
 * one-shot output and the diff cannot disagree.
 */
#ifndef CLI_ALLOC_PLAN_H
#define CLI_ALLOC_PLAN_H

#include "../alloc/al.h"

#include <jansson.h>
#include <stdio.h>

enum { CLI_OUT_JSON, CLI_OUT_YAML, CLI_OUT_TABLE };

#define CLI_PLAN_NONE UINT32_MAX

/* Largest YAML text of one `allocate -o yaml` document (a whole plan). */
#define CLI_PLAN_YAML_MAX ((size_t)1 << 31)

/* The annotation an allocated claim gets when policies took part: the
 * active policy set's revision (pol_set_revision: SHA-256, hex). */
#define CLI_POLICY_REVISION_ANNOTATION "draengine.dev/policy-revision"

typedef struct cli_alloc_cfg {
    al_opts opts;
    const char *node;     /* --node, or NULL: schedule the pods */
    const char *policies; /* --policies, or NULL */
    const char *policies_good; /* --watch: a copy of the last good revision, used
                                * when the revision in `policies` is refused */
    bool verbose;         /* -v: policy statistics even without failures */
    const char *validate; /* warn, strict, none */
    int fmt;              /* CLI_OUT_* */
} cli_alloc_cfg;

typedef struct cli_plan_pod {
    char *key;  /* "ns/name" */
    char *node; /* NULL: unschedulable */
    char *why;  /* why not */
} cli_plan_pod;

typedef struct cli_plan_claim {
    char *key;     /* "ns/name" */
    uint32_t pod;  /* index in pods; CLI_PLAN_NONE with --node */
    char **devices; /* "request=driver/pool/device", in allocation order */
    uint32_t ndevices;
} cli_plan_claim;

typedef struct cli_plan {
    const char *node;   /* --node NAME, or NULL */
    int rc;             /* the run's exit code (CLI_EXIT_*) */
    char *why;          /* --node: why the claims cannot be satisfied there */
    char *error;        /* rc 2 or 3: what failed */
    char *refused;      /* --watch: the policy revision refused (the last good one decided) */
    char revision[65];  /* the active policy revision; "" without --policies */
    uint32_t npolicies;
    cli_plan_pod *pods;
    uint32_t npods, cappods;
    cli_plan_claim *claims;
    uint32_t nclaims, capclaims;
    json_t *list;       /* the List `-o json` prints (-o json|yaml only) */
} cli_plan;

void cli_plan_init(cli_plan *p);
void cli_plan_free(cli_plan *p);
/* Record a pod's decision (node NULL: unschedulable, with why). */
void cli_plan_pod_add(cli_plan *p, const char *pod, const char *node, const char *why);
/* Record one device of a claim (the claim entry is created on first use;
 * pod is the index of the pod recorded last, or CLI_PLAN_NONE; device
 * NULL records the claim alone). */
void cli_plan_device(cli_plan *p, const char *claim, uint32_t pod, const char *device);
void cli_plan_set(char **field, const char *text);

/* The decisions that changed from `was` to `now`: one line each to out
 * (if not NULL) and one object each into changes (if not NULL), in the
 * order of `now`'s pods, then what was removed.  Returns how many. */
uint32_t cli_plan_diff(const cli_plan *was, const cli_plan *now, FILE *out, json_t *changes);
/* The JSON form of the unschedulable pods (or of --node's failure). */
json_t *cli_plan_unschedulable(const cli_plan *p);
/* "N pod(s) scheduled, M unschedulable" or the --node outcome. */
void cli_plan_summary(const cli_plan *p, char *buf, size_t cap);

/* One run of allocate over the objects `load` puts into the graph: the
 * same graph, validation, policies and output as the command without
 * --watch.  Prints when `print`; records into rec when not NULL.  Returns
 * the exit code. */
typedef de_rc (*cli_alloc_load_fn)(void *ctx, dg_graph *g, al_input *lc, de_err *e);
int cli_allocate_run(const cli_alloc_cfg *cfg, cli_alloc_load_fn load, void *ctx, cli_plan *rec, bool print);

/* The objects of the List (alloc_objs.c): a claim with its allocation (NULL:
 * as the graph holds it) and the policy revision annotation when given; a
 * pod as the API shows it once scheduled (awaiting: allocated, waiting for
 * binding conditions, not bound) or after a failed attempt. */
json_t *cli_claim_with_allocation(dg_graph *g, uint32_t clid, const dg_allocation *al, const char *revision);
json_t *cli_pod_scheduled(al_allocator *al, dg_graph *g, const al_pod_outcome *po, bool awaiting);
json_t *cli_pod_unschedulable(dg_graph *g, uint32_t pid, const char *message);

/* `allocate --watch` (alloc_watch.c); returns the exit code. */
int cli_allocate_watch(const cli_alloc_cfg *cfg, const char *const *files, int nfiles);

#endif
