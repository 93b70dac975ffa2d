/*
 * al.h - the allocator: Kubernetes-exact structured DRA allocation (the
 * kube-scheduler 1.37 "incubating"/"experimental" allocator, with the
 * observable behaviour of k8s.io/dynamic-resource-allocation v0.36.2 that the
 * conformance vectors pin), plus node choice for pods and the policy hooks.
 *
 * Two entry points:
 *  - al_allocate(): upstream's Allocate(node, claims) - all claims together,
 *    all-or-nothing, for one pod on one node.  Same devices, same order, same
 *    errors as upstream: first-fit depth-first search in canonical order
 *    (pools by driver/pool name with binding-condition pools last, slices by
 *    name, devices in slice order), combinations within a request,
 *    backtracking across requests, claims and firstAvailable subrequests.
 *  - al_schedule_pod(): what kube-scheduler's DynamicResources plugin does
 *    for one pod: resolve its claims (instantiating templates), filter the
 *    nodes, score the feasible ones (firstAvailable: 8 - index per request,
 *    plus policy scores), pick the best (ties: node name order), and commit
 *    the allocation into the graph so the next pod sees it.
 *
 * Speed: per node, the gathered pools are flattened into one canonical device
 * array; candidates per (class, selectors) are bitsets over it, evaluated once
 * per device generation; free/used bits follow the graph's usage
 * incrementally.  The search prunes only subtrees that provably cannot
 * succeed AND whose exploration would leave no trace upstream (see
 * al_search.c), so the first solution found is always upstream's.  Every
 * search has a step budget (al_opts.max_steps).
 *
 * Thread-safety: an al_allocator is used by one thread at a time.
 */
#ifndef AL_H
#define AL_H

#include "../base/arena.h"
#include "../base/buf.h"
#include "../base/de.h"
#include "../base/gates.h"
#include "../base/map.h"
#include "../cel/cel.h"
#include "../model/dg.h"

typedef struct al_allocator al_allocator;

/* Default per-node search budget: number of search steps (one step = one
 * attempt to fill one device slot, upstream's allocateOne invocation). */
#define AL_DEFAULT_MAX_STEPS 1000000u

/* kube-scheduler's DynamicResourcesArgs.filterTimeout default (10 s), used
 * while DRASchedulerFilterTimeout is on. */
#define AL_DEFAULT_FILTER_TIMEOUT_NS 10000000000ull

/* Upstream's per-claim result limit (AllocationResultsMaxSize). */
#define AL_MAX_RESULTS 32

typedef struct al_opts {
    de_gates gates;     /* feature gates; use de_gates_default() for 1.37 */
    uint64_t max_steps; /* per node and Allocate call; 0 = AL_DEFAULT_MAX_STEPS */
    uint64_t seed;      /* seed of the shareID generator (byte-stable output) */
    cel_env *cel;       /* optional shared CEL env (must match the gates); NULL = own */
    /* DRASchedulerFilterTimeout: wall-clock limit of one node's search, after
     * which Allocate fails with DE_ETIMEOUT "node N: timed out trying to
     * allocate devices" (a transient error upstream: the pod backs off).
     * Unset = the 10 s default; set to 0 = none; no limit with the gate off. */
    uint64_t filter_timeout_ns;
    bool filter_timeout_set;
    uint64_t binding_timeout_ns; /* KEP-5007 bindingTimeout; 0 = kube-scheduler's 600 s */
} al_opts;

/* ---- policy hooks ---------------------------------------------------------
 *
 * The policy host plugs into the allocator through these callbacks.  With no
 * hooks set (or every pointer NULL) results are exactly Kubernetes'.
 *
 * admit   once per claim before any search: DE_OK admits; DE_EPOLICY refuses
 *         the claim with why->msg as the user-facing reason (the claim is then
 *         unsatisfiable, not an error); any other code is a hard error.
 * groups  a policy-defined generalisation of KEP-5963 compatibility groups:
 *         the device's compatibility scope (interned id, 0 = none) and its
 *         groups.  Devices of one scope allocated at the same time - already
 *         allocated ones included - must share at least one group (running
 *         intersection); a device with no groups only coexists with other
 *         no-group devices of its scope.  The host caches answers per device
 *         generation and revision; the arrays must stay valid until
 *         `revision` changes.  The allocator calls it when it (re)builds its
 *         per-node device table, never in the search loop.
 * score   when choosing a node for a pod: a number for one feasible
 *         placement, added to the Kubernetes score (firstAvailable 8 - index);
 *         the best total wins, ties go to node name order.  The allocator
 *         caches the answer per (node state, pending claim set signature,
 *         revision) (al_choose.c), so a score must be a function of the node
 *         (its object and its devices' state, as al_placement shows them) and
 *         of the placement's devices only - not of the claims' or the pod's
 *         identity.  A NaN counts as -infinity.
 * revision the policy revision; a change invalidates everything cached from
 *         `groups`.  NULL = constant.
 */
typedef struct al_groups {
    uint32_t scope;         /* interned scope id; 0 = the device is in no scope */
    uint32_t ngroups;       /* 0 = "no groups" */
    const uint32_t *groups; /* interned group ids (owned by the hook provider) */
    bool blocked;           /* a groups policy failed closed on this device: it must not be
                             * allocated (its compatibility is unknown) */
} al_groups;

/* What `score` sees: one feasible placement of a pod's pending claims. */
typedef struct al_placement {
    uint32_t node;           /* node id in the graph, DG_NONE if not a graph node */
    uint32_t node_name;      /* interned */
    uint32_t pod;            /* pod id, DG_NONE for al_allocate callers */
    uint32_t nclaims;
    const uint32_t *claims;  /* claim ids (pending claims only) */
    const dg_allocation *allocs; /* one per claim */
    int64_t k8s_score;       /* sum over firstAvailable requests of 8 - chosen index */
    /* the devices of the node's own slices (spec.nodeName = the node, every
     * generation) and how many of them are free before this placement, kept
     * by the allocator incrementally (valid when has_node_counts) */
    bool has_node_counts;
    uint32_t node_devices, node_free_devices;
    const uint32_t *devids;  /* graph device id of every result, claims in order (NULL:
                              * look them up by name) */
} al_placement;

typedef struct al_hooks {
    void *ctx;
    de_rc (*admit)(void *ctx, const dg_graph *g, uint32_t claim, de_err *why);
    void (*groups)(void *ctx, const dg_graph *g, uint32_t devid, al_groups *out);
    de_rc (*score)(void *ctx, const dg_graph *g, const al_placement *p, double *score, de_err *e);
    uint64_t (*revision)(void *ctx);
    /* For explanations only (never a decision): the name of a policy whose
     * derive or groups hook failed on the device - its derived attributes
     * may be missing - or NULL. */
    const char *(*facts_failed)(void *ctx, const dg_graph *g, uint32_t devid);
} al_hooks;

/* ---- lifecycle ------------------------------------------------------------ */

/* The allocator keeps caches (per-node device tables, candidate bitsets,
 * usage) keyed by graph generations; it registers a dg listener to learn
 * about changes.  `g` must outlive the allocator. */
al_allocator *al_new(dg_graph *g, const al_opts *opts, de_err *e);
void al_free(al_allocator *a);

/* Install (or clear with NULL) the policy hooks; copies the struct. */
void al_set_hooks(al_allocator *a, const al_hooks *h);

const de_gates *al_gates(const al_allocator *a);

/* The node choice cache for score hooks (al_choose.c), on by default.  Off,
 * every pod evaluates every node (Allocate + score) - the reference the
 * cache must agree with, for specs. */
void al_set_choice_cache(al_allocator *a, bool on);

/* Whether a failed al_allocate explains itself (out->why), on by default.
 * A caller that reads the words of one failed node only (serve's Filter
 * loop) turns it off for the others: the words are most of a failed call's
 * cost, and the answer is the same either way. */
void al_set_explain(al_allocator *a, bool on);

/* Devices on the node's own slices (spec.nodeName, every generation) and
 * how many are free (used by no claim), maintained incrementally. */
uint32_t al_node_free_devices(al_allocator *a, uint32_t node_name, uint32_t *total);

/* ---- Allocate ---------------------------------------------------------------- */

typedef struct al_claim_alloc {
    uint32_t claim;        /* claim id */
    dg_allocation alloc;   /* owned by the arena given to al_allocate */
    int32_t *chosen_sub;   /* per request: chosen firstAvailable index, -1 = `exactly` */
    uint32_t nrequests;
    uint32_t *devids;      /* per result: the graph device id */
} al_claim_alloc;

/* Why a claim set could not be allocated on one node, for people. */
typedef struct al_why {
    const char *summary;   /* one line, e.g. "claim default/c1, request gpu: 0 of 8 devices free" */
    const char *detail;    /* several lines, or NULL */
} al_why;

typedef struct al_outcome {
    uint32_t nclaims;
    al_claim_alloc *claims; /* DE_OK: one per claim, input order */
    int64_t k8s_score;      /* firstAvailable score on this node */
    uint64_t steps;         /* search steps used */
    al_why why;             /* DE_EUNSAT: the reason */
    bool invalid_pools;     /* the error is upstream's "invalid resource pools were
                             * encountered": fatal for this node only */
} al_outcome;

/*
 * Allocate all `claims` (pending claim ids, pod order) together on the node
 * named `node_name` (interned; the Node object supplies labels when present in
 * the graph).  Nothing is committed to the graph.
 *  - DE_OK: out->claims filled (arena memory).
 *  - DE_EUNSAT: cannot be satisfied on this node; out->why says why.
 *  - DE_EBUDGET: the search exceeded max_steps (e->msg says so).
 *  - other: a hard error as upstream reports it (bad claim/class, CEL error,
 *    too many devices, All mode on an incomplete pool, ...); e->msg carries
 *    upstream's wording.
 */
de_rc al_allocate(al_allocator *a, uint32_t node_name, const uint32_t *claims, uint32_t nclaims,
                  de_arena *arena, al_outcome *out, de_err *e);

/* Off the decision path: build the node tables that are missing or stale,
 * and on each the candidate sets of every DeviceClass's own selectors, in
 * canonical node order, until done or budget_ns (0: no limit) has passed.
 * Decisions then find them ready (al_prepare.c).  Returns the tables built. */
uint32_t al_prepare(al_allocator *a, uint64_t budget_ns);

/* ---- scheduling pods ---------------------------------------------------------- */

typedef struct al_node_why {
    uint32_t node_name;
    al_why why;
} al_node_why;

typedef struct al_pod_outcome {
    uint32_t pod;
    uint32_t node;           /* chosen node id, DG_NONE when unschedulable */
    uint32_t node_name;      /* interned, 0 when unschedulable */
    uint32_t nclaims;        /* the pod's claims in pod.spec.resourceClaims order */
    uint32_t *claims;        /* claim ids (DG_NONE for "no claim needed") */
    bool *allocated_now;     /* per claim: allocated by this call */
    al_claim_alloc *allocs;  /* per claim allocated now (nclaims entries, unused ones zeroed) */
    int64_t k8s_score;
    double policy_score;
    uint32_t nodes_feasible; /* feasible nodes seen (with a score hook: all of them) */
    uint32_t nodes_checked;  /* nodes past the pod filters that this call evaluated */
    const char *why;         /* unschedulable: summary over nodes (top reasons) */
    const char *k8s_why;     /* unschedulable: the message kube-scheduler gives (its FitError
                              * and DefaultPreemption's PostFilter), for PodScheduled=False */
    struct al_nar *nar;      /* scheduled: what its devices take from the node (KEP-5517),
                              * NULL when nothing */
    bool *group;             /* per claim: shared through the pod's PodGroup (KEP-5729) */
    const char *group_name, *group_uid; /* that PodGroup, when it has one */
} al_pod_outcome;

/*
 * Schedule one pod: resolve its claims (resourceClaimName, or
 * resourceClaimTemplateName instantiated with dg_claim_from_template), choose
 * a node among the graph's Nodes and allocate there, then commit
 * (dg_claim_set_allocation + reservation for the pod) so later pods see it.
 * DE_OK: scheduled; DE_EUNSAT: no node fits (out->why); other: hard error.
 * Pods without claims are DE_OK with node DG_NONE and nclaims 0.
 * Extended resources backed by DRA (container requests such as
 * example.com/gpu that a DeviceClass serves, KEP-5004) get a claim made by
 * the scheduler, <pod>-extended-resources-<suffix>, allocated with the pod's
 * own claims and listed last in out->claims.
 */
de_rc al_schedule_pod(al_allocator *a, uint32_t pod, de_arena *arena, al_pod_outcome *out,
                      de_err *e);

/* ---- node fit beyond devices (al_fit.c) ----------------------------------------------
 *
 * The filters kube-scheduler runs before DynamicResources, in its order
 * (NodeName, NodeUnschedulable, TaintToleration, NodeAffinity,
 * NodeResourcesFit) with its reasons, shared by al_schedule_pod and the
 * scheduler of `draengine serve`.  Node usage is kept by the allocator: the
 * pods the graph shows on a node plus the pods placed by the scheduler
 * (al_pod_assume) until the graph shows them bound. */

typedef struct al_amount {
    uint32_t name;  /* interned resource name */
    int64_t milli;  /* milli-units */
} al_amount;

/* Serve's Filter memo (al_memo.c).  kube-scheduler's Filter runs every
 * plugin on every node it looks at, for every pod; pods made from one
 * template ask the same of a node that has not changed since the last such
 * pod, and get the same answer.  A table per pod signature (al_choose.c:
 * everything the filters and Allocate see of a pod, not claim names) keeps,
 * per node, the node generation it was evaluated at and the outcome: the
 * Filter's reason bits (0: feasible), the least-allocated score and the
 * Allocate score.  An entry is used only while the node's generation, the
 * allocator epoch (policies), the node order and the class generation are
 * those it was made under (al_node_changed moves a node's generation on
 * every change of its devices' usage, slices, taints, Node object and
 * pods).  The caller runs Allocate again on the node it picks, for this
 * pod's claims, so results and shareIDs are this pod's own.  NULL from
 * al_memo_open: no memo for this pod (off, no nodes, a claim the admit hook
 * refuses). */
typedef struct al_memo_tab al_memo_tab;
typedef struct al_memo_ent {
    unsigned bits;  /* the caller's reason bits, 0 = feasible */
    double rscore;  /* least-allocated */
    int64_t k8s;    /* Allocate's score (al_outcome.k8s_score) */
} al_memo_ent;
al_memo_tab *al_memo_open(al_allocator *a, const dg_pod *pod, uint32_t podid, const uint32_t *claims,
                          uint32_t nclaims, const al_amount *req, uint32_t nreq);
bool al_memo_get(al_allocator *a, al_memo_tab *t, uint32_t node_name, al_memo_ent *out);
void al_memo_put(al_allocator *a, al_memo_tab *t, uint32_t node_name, const al_memo_ent *in);
/* Forget every entry of t (the caller found one wrong). */
void al_memo_reset(al_allocator *a, al_memo_tab *t);
/* Off: al_memo_open gives NULL (serve --filter-memo=false). */
void al_set_memo(al_allocator *a, bool on);

enum {
    AL_FIT_UNSCHEDULABLE = 1u << 0, /* node.spec.unschedulable */
    AL_FIT_SELECTOR = 1u << 1,      /* nodeSelector / required node affinity */
    AL_FIT_TAINT = 1u << 2,         /* untolerated NoSchedule/NoExecute taint */
    AL_FIT_RESOURCES = 1u << 3,     /* cpu, memory, pods, extended resources */
    AL_FIT_CLAIM_NODE = 1u << 4,    /* an allocated claim is not available on the node */
    AL_FIT_NODE_NAME = 1u << 6,     /* pod.spec.nodeName names another node */
};

typedef struct al_fit {
    unsigned bit;        /* AL_FIT_* of the filter that failed, 0 = fits */
    bool unresolvable;   /* kube-scheduler's UnschedulableAndUnresolvable */
    char reasons[512];   /* upstream's reasons, one per line ("Insufficient cpu"); a
                          * string: the bytes past its end are not cleared */
} al_fit;

/* An al_fit that fits, with no reasons (zeroing all 512 bytes of reasons
 * was most of a node's fit check) */
static inline void al_fit_clear(al_fit *f)
{
    f->bit = 0;
    f->unresolvable = false;
    f->reasons[0] = 0;
}

/* The pod's requests (malloc'd, free()): regular and sidecar containers
 * add up, an init container needs its own plus the sidecars before it. */
uint32_t al_pod_requests(const dg_pod *pod, al_amount **out);
/* What a bound pod counts on its node (malloc'd). */
uint32_t al_pod_usage(al_allocator *a, const dg_pod *pod, al_amount **out);
int64_t al_amount_get(const al_amount *a, uint32_t n, uint32_t name);
/* 0 = fits; else the AL_FIT_* bit with the reasons in *f. */
unsigned al_node_fit(al_allocator *a, const dg_pod *pod, const al_amount *req, uint32_t nreq,
                     const dg_node *node, al_fit *f);
/* The reasons on one line, ", "-separated. */
void al_fit_text(const al_fit *f, char *buf, size_t cap);
/* NodeResourcesFit's least-allocated score over cpu and memory (0-100). */
double al_least_allocated(al_allocator *a, const al_amount *req, uint32_t nreq, const dg_node *node);
/* Count the pod on node_name (with what its devices take there, nar may be
 * NULL) until the graph shows it elsewhere or it ends; al_pod_forget undoes
 * an assumption the graph has not confirmed. */
struct al_nar;
void al_pod_assume(al_allocator *a, uint32_t pod, uint32_t node_name, const struct al_nar *nar);
void al_pod_forget(al_allocator *a, uint32_t pod);
uint32_t al_node_pods(al_allocator *a, uint32_t node_name);
/* DynamicResources' Filter on the pod's allocated claims (DG_NONE entries
 * skipped): each is available on the node - its allocation's node selector
 * matches, and devices allocated with skipNodeOperations find the node
 * declaring DRAOptionalNodeOperations.  Else kube-scheduler says
 * "resourceclaim not available on the node". */
bool al_node_matches_allocated(al_allocator *a, const uint32_t *claims, uint32_t n, const dg_node *node);
int64_t al_node_requested(al_allocator *a, uint32_t node_name, uint32_t resource);

/* ---- node allocatable resources (KEP-5517, al_nar.c) ----------------------------------
 *
 * With DRANodeAllocatableResources, devices whose slice maps them to node
 * resources (nodeAllocatableResources) take those from the node with the
 * pod's own requests; the result is what `serve` writes into
 * pod.status.nodeAllocatableResourceClaimStatuses. */

typedef struct al_nar_res {
    uint32_t name;           /* resource */
    de_qty qty;
} al_nar_res;

typedef struct al_nar_over {
    uint32_t name;
    bool has_pod, has_ctr;
    de_qty per_pod, per_ctr;
} al_nar_over;

typedef struct al_nar_status {  /* one NodeAllocatableResourceClaimStatus */
    uint32_t claim;          /* claim name */
    uint32_t *containers;    /* container names, once per reference */
    uint32_t ncontainers;
    al_nar_res *mapping;     /* by name */
    uint32_t nmapping;
    al_nar_over *overhead;   /* by name */
    uint32_t noverhead;
} al_nar_status;

typedef struct al_nar {
    al_nar_status *st;       /* by claim name; n == 0: nothing to write */
    uint32_t n;
    al_amount *demand;       /* the pod's requests with the devices' share */
    uint32_t ndemand;
} al_nar;

typedef struct al_nar_pod {
    const dg_pod *pod;
    uint32_t podid;
    const uint32_t *claims;  /* pod.spec.resourceClaims order, then a KEP-5004 claim (DG_NONE: none) */
    uint32_t nclaims;
    const uint32_t *pending; /* the claims allocated now ... */
    const al_claim_alloc *allocs; /* ... and their allocations on this node */
    uint32_t npending;
    const al_amount *req;    /* al_pod_requests */
    uint32_t nreq;
} al_nar_pod;

/* After Allocate on `node`: DE_OK with f->bit 0 (fits; out filled, arena
 * memory) or f->bit set (AL_FIT_RESOURCES: "Insufficient cpu", ...;
 * AL_FIT_CLAIM_NODE: a claim with a mapped device reserved for another
 * consumer); another code is upstream's hard error (a capacityKey mapping
 * on a result without consumedCapacity).  Nothing when the gate is off. */
de_rc al_nar_fit(al_allocator *a, const al_nar_pod *p, const dg_node *node, de_arena *ar, al_nar *out, al_fit *f,
                 de_err *e);
/* pod.status.nodeAllocatableResourceClaimStatuses */
json_t *al_nar_json(const dg_graph *g, const al_nar *n);

/* ---- binding conditions (KEP-5007, al_bindcond.c) ---------------------------------------
 *
 * Where an allocated claim stands against the conditions its devices must
 * reach before its pod is bound (upstream's isClaimReadyForBinding and
 * isClaimTimeout).  `now` is the wall clock in unix seconds; 0 never times
 * out (offline runs have no "now": decisions do not read the clock). */
enum { AL_BIND_READY = 0, AL_BIND_PENDING, AL_BIND_FAILED, AL_BIND_TIMEOUT };
/* Gates on, allocated, and some result carries bindingConditions. */
bool al_claim_has_binding_conditions(const al_allocator *a, const dg_claim *c);
/* AL_BIND_*; FAILED and TIMEOUT say which claim (and the condition's
 * reason and message) in why, as upstream's errors do. */
int al_binding_state(const al_allocator *a, const dg_claim *c, int64_t now, char *why, size_t cap);
/* "driver/pool/device:condition ..." for the binding conditions not True yet. */
void al_binding_pending(const al_allocator *a, const dg_claim *c, de_buf *b);
/* The wall clock the Filter compares allocationTimestamps with (al_binding_state). */
void al_set_now(al_allocator *a, int64_t unix_seconds);

/* ---- PodGroup claims (KEP-5729, al_podgroup.c) ----------------------------------------
 *
 * One reading of PodGroups for `allocate` and `serve`: they are kept as
 * JSON in a map "namespace/name" -> object. */
void al_podgroups_put(json_t *map, json_t *obj);
void al_podgroups_del(json_t *map, const char *ns, const char *name);
/* spec.schedulingGroup.podGroupName (or the alpha workloadRef's), as decoded
 * with the pod (dg_pod.group), or NULL */
const char *al_pod_group_name(const dg_graph *g, uint32_t pod);
/* The pod's PodGroup in the map, or NULL (none named, or not there) */
json_t *al_podgroup_find(const dg_graph *g, json_t *map, uint32_t pod);
const char *al_podgroup_uid(json_t *pg);
/* upstream's BindTo: the pod's entry i is one of the group's entries */
bool al_podgroup_shares(const dg_graph *g, json_t *pg, const dg_pod *pod, uint32_t i);
/* The claim the claim controller made for the group's entry (its
 * status.resourceClaimStatuses), 0 = not yet */
uint32_t al_podgroup_claim_name(dg_graph *g, json_t *pg, uint32_t ref_name);
/* The claim names `uid` as its controller owner. */
bool al_claim_owned_by(const dg_claim *c, uint32_t uid);
/* The PodGroups al_schedule_pod uses (borrowed; NULL: none).  With
 * DRAWorkloadResourceClaims, a pod's entries that match its group's share
 * one claim, reserved for the PodGroup; template entries get the claim
 * the controller would make for the group. */
void al_set_podgroups(al_allocator *a, json_t *map);

/* ---- offline input ------------------------------------------------------------------ */

/* Manifests loaded for offline allocation: every object goes into the graph;
 * pending claims (no status.allocation) and pods are remembered in input
 * order.  An object given twice must be identical both times. */
typedef struct al_input_ref {
    uint32_t ns, name;
} al_input_ref;

typedef struct al_input {
    /* validation: when `checker` is set (a validating graph), every object is
     * checked there first and a problem goes to `warn` instead of stopping
     * the load (the graph being loaded is then decode-only) */
    dg_graph *checker;
    void (*warn)(void *ctx, const de_err *e);
    void *warn_ctx;
    bool keep_duplicates;   /* same kind/ns/name twice with different content:
                             * keep both (the second renamed "name~2") instead of
                             * refusing the input */
    al_input_ref *pending;
    uint32_t npending, cappending;
    al_input_ref *pods;
    uint32_t npods, cappods;
    de_map seen;            /* kind/ns/name key -> index + 1 into the dedup records */
    struct al_dedup *dedup; /* al_input.c */
    json_t *podgroups;      /* PodGroups of the input (al_podgroups_put), for al_set_podgroups */
} al_input;

void al_input_init(al_input *in);
de_rc al_input_load(dg_graph *g, al_input *in, const char *path, de_err *e);
de_rc al_input_load_text(dg_graph *g, al_input *in, const char *name, const char *text, size_t len,
                         de_err *e);
/* One object, as the loaders hand them over (objects read elsewhere, e.g. by
 * the file watcher).  The object may be modified (a kept duplicate is
 * renamed): pass a copy of an object you share. */
de_rc al_input_add(dg_graph *g, al_input *in, json_t *obj, const de_origin *o, de_err *e);
void al_input_free(al_input *in);
/* claim / pod id of the i-th pending claim / pod (DG_NONE if gone) */
uint32_t al_input_claim(const dg_graph *g, const al_input *in, uint32_t i);
uint32_t al_input_pod(const dg_graph *g, const al_input *in, uint32_t i);

/* Does the pod need the allocator at all: claims, or extended resources a
 * DeviceClass serves (KEP-5004)? */
bool al_pod_uses_dra(al_allocator *a, uint32_t pod);

/* ---- extended resources backed by DRA (KEP-5004, dra-model.md 4.3) ----------------
 *
 * The one implementation of the special claim, shared by al_schedule_pod and
 * the scheduler of `draengine serve` (see al_extended.c for the rules). */

#define AL_EXT_MAX 64

typedef struct al_ext_res {
    uint32_t resource;       /* extended resource name (interned) */
    uint32_t class_name;     /* the DeviceClass serving it */
} al_ext_res;

typedef struct al_ext_request {
    uint32_t name;           /* container-<i>-request-<j> */
    uint32_t class_name;
    int64_t count;           /* ExactCount */
} al_ext_request;

/* pod.status.extendedResourceClaimStatus.requestMappings[] */
typedef struct al_ext_mapping {
    uint32_t container, resource, request; /* names (interned) */
} al_ext_mapping;

typedef struct al_ext_spec {
    al_ext_request *requests; /* sorted by name */
    uint32_t nrequests;
    al_ext_mapping *mappings;
    uint32_t nmappings;
} al_ext_spec;

/* The pod's extended resources a DeviceClass serves (non-zero integer
 * requests; limits stand in for missing requests), sorted by name, at most
 * `cap` (AL_EXT_MAX for a mask).  0 when DRAExtendedResource is off. */
uint32_t al_ext_resources(const dg_graph *g, const de_gates *gates, const dg_pod *pod, al_ext_res *out,
                          uint32_t cap);
/* Bit i set: `node` leaves res[i] to DRA (its allocatable has none of it). */
uint64_t al_ext_node_mask(const dg_node *node, const al_ext_res *res, uint32_t n);
/* The claim's requests and the request mappings for the resources of `mask`
 * (arena memory). */
void al_ext_build(dg_graph *g, const dg_pod *pod, const al_ext_res *res, uint32_t n, uint64_t mask,
                  de_arena *ar, al_ext_spec *out);
json_t *al_ext_requests_json(const dg_graph *g, const al_ext_spec *s);
json_t *al_ext_mappings_json(const dg_graph *g, const al_ext_spec *s);

/* ---- statistics ------------------------------------------------------------------ */

typedef struct al_stats {
    uint64_t allocate_calls, steps, node_tables_built, candidate_sets_built;
    uint64_t cel_evals, pruned;
    uint64_t counter_checks;     /* counter pools whose consumption was checked (al_gather.c) */
    /* node choice with score hooks (al_choose.c) */
    uint64_t choice_pods;        /* pods placed through the choice cache */
    uint64_t choice_evals;       /* nodes (re)evaluated: Allocate + score */
    uint64_t choice_reused;      /* winners whose evaluation was this pod's own */
    uint64_t choice_tables;      /* score tables (re)built from scratch */
    uint64_t choice_saved;       /* winners whose allocation an earlier pod saved */
    /* serve's Filter memo (al_memo.c) */
    uint64_t memo_hits;          /* nodes answered from the memo */
    uint64_t memo_puts;          /* nodes evaluated and remembered */
    uint64_t memo_tables;        /* memo tables (re)started */
    /* capped caches (al_sync): what they hold now, and how often they were emptied */
    uint64_t selector_sets, cel_programs, cache_flushes;
    /* compiled claims by spec (al_ccache.c): reused, and compiled and kept */
    uint64_t compile_cache_hits, compile_cache_stores;
} al_stats;

void al_get_stats(const al_allocator *a, al_stats *out);

/* Lower the caps of the caches that grow with distinct selector texts (0 =
 * the default: AL_SELSET_CAP selector sets, CEL_PROG_CAP programs).  For
 * tests: the defaults are what a scheduler should run with. */
void al_set_cache_caps(al_allocator *a, uint32_t selector_sets, uint32_t programs);

#endif
