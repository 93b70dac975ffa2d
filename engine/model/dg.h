/*
 * dg.h - the device graph: every object draengine knows about, decoded and
 * validated, with the indexes the allocator and the scheduler need.
 *
 * Ownership and identity
 *  - The graph owns an interner (or shares the one passed in) and every
 *    decoded object.  Each object lives in its own small arena and is
 *    replaced as a whole; pointers returned by accessors stay valid until
 *    that object is replaced or deleted (or the graph is freed).
 *  - Objects are keyed by (kind, namespace, name).  Slices, devices, pools
 *    and claims also get dense numeric ids.  Those of slices, devices and
 *    pools are never reused while the graph lives, so caches keyed by id
 *    cannot confuse an old device with a new one; iterating ids in
 *    increasing order is input order.  A deleted claim's or pod's id is
 *    given to the next new claim or pod after its DG_OP_DELETE (a busy
 *    cluster must not grow its tables forever): caches keyed by claim or pod
 *    id drop the entry on DG_OP_DELETE or compare generations.  Without
 *    deletions, claim and pod ids are input order too.
 *  - Generations: the graph, every device, pool, class and claim carry a
 *    generation that is bumped when they change.  Caches (CEL memo, policy
 *    facts, candidate bitsets) compare generations instead of being flushed.
 *
 * Incremental updates: dg_apply() decodes, validates and upserts one object;
 * dg_remove() deletes one.  Only what changed is touched: replacing one
 * slice re-indexes that slice's devices and its pool; DeviceTaintRules are
 * re-applied only to the devices they select.  Nothing is rebuilt.
 *
 * Validation follows the API server (dra-model.md section 1.1, validation.go),
 * with apimachinery's wording; every problem of an object is reported.  An
 * invalid object is refused with an error naming the origin, the object and
 * the JSON path, e.g.
 *   x.yaml: document 2: ResourceSlice "gpu-node-1": spec.devices[3].attributes["memory"]:
 *   Invalid value: "": exactly one value must be specified: must set exactly one of
 *   int, bool, string, version (or ints, bools, strings, versions)
 * and the graph is left unchanged.  Decoding is strict (unknown fields are
 * errors, with a hint for case typos and v1beta1/v1 layout mix-ups); gated
 * fields are always decoded; claim status is read as the system wrote it
 * (only its shape and names are checked).  Implementation: dec*.c (decoders),
 * graph*.c (tables and indexes); JSON List snapshots take a fast path
 * (dec_fast.c) that falls back to the full decoder for anything unusual.
 *
 * Choices where upstream is ambiguous: a DeviceTaintRule without a
 * deviceSelector taints every device (the scheduler's tracker code; the API
 * doc says "matches nothing"); rule taints are appended in rule-name order;
 * adminAccess needs the namespace label only when the Namespace is known;
 * v1alpha3 slices/claims/templates are read with the v1beta1 shapes.
 */
#ifndef DG_H
#define DG_H

#include "../base/arena.h"
#include "../base/attr.h"
#include "../base/de.h"
#include "../base/doc.h"
#include "../base/gates.h"
#include "../base/intern.h"
#include "dg_types.h"

#include <jansson.h>

typedef struct dg_graph dg_graph;

#define DG_NONE UINT32_MAX

/* Validation / decoding options. */
typedef struct dg_opts {
    bool keep_slice_json; /* keep the raw JSON of slices (off for big snapshots) */
    bool skip_validation; /* decode only (trusted input, e.g. our own simulator) */
    bool keep_going;      /* dg_load_path/dg_load_text: try every object, report all errors */
    bool no_fast_path;    /* JSON List snapshots: always use jansson + the full decoder (specs) */
    /* Keep no pod's input text (dg_pod_json then gives NULL): for `serve`,
     * which reads pods only through their structs.  Dumping each pod event's
     * tree to text was about 5 % of serve's instructions a pod, and the text
     * about 1.6 KB a pod held for nothing.  allocate's output needs it. */
    bool no_pod_text;
    /* Called for each invalid object while loading (implies keep_going);
     * the load then ends with DE_EINVAL "N invalid objects". */
    void (*on_error)(void *ctx, const de_err *e);
    void *on_error_ctx;
    uint32_t cel_program_cap; /* validation's CEL compile cache; 0 = CEL_PROG_CAP */
    const de_gates *gates; /* validation rules that depend on gates; NULL = 1.37 defaults.
                            * Gated fields are always decoded (never dropped); the allocator
                            * decides what a disabled gate means. */
} dg_opts;

dg_graph *dg_new(de_interner *in, const dg_opts *opts); /* in may be NULL: own interner */
void dg_free(dg_graph *g);
de_interner *dg_intern(const dg_graph *g);
/* The gates the graph validates with (dg_opts.gates, else the 1.37 defaults). */
const de_gates *dg_gates(const dg_graph *g);
uint64_t dg_generation(const dg_graph *g);
/* Bumped whenever any device changes (its slice, its taints, its derived
 * attributes); unchanged while only claims, pods or classes change.  The
 * policy host uses it to skip re-checking devices after claim updates. */
uint64_t dg_devices_generation(const dg_graph *g);

/* ---- loading -------------------------------------------------------------- */

/* Decode, validate and upsert one object. Kinds draengine does not model are
 * accepted and ignored (*kind_out = DG_KIND_OTHER). */
de_rc dg_apply(dg_graph *g, json_t *obj, const de_origin *o, dg_kind *kind_out, de_err *e);
de_rc dg_remove(dg_graph *g, dg_kind kind, const char *ns, const char *name, de_err *e);

/* Load every object from a file or directory (de_doc_each + dg_apply). Stops
 * at the first invalid object (dg_opts.keep_going: loads the valid ones and
 * reports every invalid one, one per line).  An object defined twice in one
 * load (same kind, namespace, name) is refused like the API server's
 * AlreadyExists, naming where it was first defined; the same object written
 * again identically is accepted. */
de_rc dg_load_path(dg_graph *g, const char *path, de_err *e);
/* Same for manifest text in memory (JSON or YAML, multi-document, List). */
de_rc dg_load_text(dg_graph *g, const char *name, const char *text, size_t len, de_err *e);

/* A JSON List file (a cluster snapshot) walked as dg_load_path walks it, for
 * loaders with their own bookkeeping (al_input.c): each ResourceSlice and
 * Node of the common shape is decoded straight from the text, validated
 * whatever dg_opts.skip_validation says, and offered to `fast` by kind and
 * name - return 1 to put it into the graph (`committed` hears of it), 0 to
 * drop it (an identical copy), -1 to have it handed to `item` as JSON like
 * every other item.  *handled is false when the file is not such a List:
 * nothing was read, the caller reads it with de_doc_each. */
typedef struct dg_list_fns {
    int (*fast)(void *ctx, dg_kind kind, uint32_t name, const de_origin *o);
    void (*committed)(void *ctx, dg_kind kind, uint32_t name, const de_origin *o);
    de_doc_cb item;
} dg_list_fns;
de_rc dg_list_each(dg_graph *g, const char *path, const dg_list_fns *fn, void *ctx, bool *handled, de_err *e);

/* Decode and validate without touching the graph (for `validate`-style use
 * and for specs): returns the kind. */
de_rc dg_check(dg_graph *g, json_t *obj, const de_origin *o, dg_kind *kind_out, de_err *e);

const char *dg_kind_name(dg_kind k);

/* ---- objects -------------------------------------------------------------- */

/* Counts are of live objects; ids range over [0, dg_X_id_limit) with NULL
 * for deleted ones. */
uint32_t dg_slice_id_limit(const dg_graph *g);
const dg_slice *dg_slice_get(const dg_graph *g, uint32_t sid);
uint32_t dg_slice_find(const dg_graph *g, const char *name);
/* The raw object when dg_opts.keep_slice_json is set, else NULL. */
json_t *dg_slice_json(const dg_graph *g, uint32_t sid);
uint32_t dg_slice_pool(const dg_graph *g, uint32_t sid);

uint32_t dg_class_id_limit(const dg_graph *g);
const dg_class *dg_class_get(const dg_graph *g, uint32_t cid);
uint32_t dg_class_find(const dg_graph *g, uint32_t name);
uint64_t dg_class_generation(const dg_graph *g, uint32_t cid);
/* The class serving an extended resource name (explicit extendedResourceName,
 * newest creation wins, ties by name; or the implicit
 * deviceclass.resource.kubernetes.io/<class>), DG_NONE if none. */
uint32_t dg_class_for_extended_resource(const dg_graph *g, uint32_t resource_name);

uint32_t dg_claim_id_limit(const dg_graph *g);
const dg_claim *dg_claim_get(const dg_graph *g, uint32_t clid);
uint32_t dg_claim_find(const dg_graph *g, uint32_t ns, uint32_t name);
/* The claim as JSON (original object with status as the graph knows it);
 * borrowed reference. */
json_t *dg_claim_json(const dg_graph *g, uint32_t clid);
uint64_t dg_claim_generation(const dg_graph *g, uint32_t clid);
/* The usage generation (dg_usage_generation) at which this claim's
 * contribution to the allocated state last changed; reservations and other
 * status updates leave it.  0 = never contributed. */
uint64_t dg_claim_usage_generation(const dg_graph *g, uint32_t clid);

uint32_t dg_template_id_limit(const dg_graph *g);
const dg_claim_template *dg_template_get(const dg_graph *g, uint32_t tid);
uint32_t dg_template_find(const dg_graph *g, uint32_t ns, uint32_t name);
json_t *dg_template_json(const dg_graph *g, uint32_t tid);

uint32_t dg_taint_rule_id_limit(const dg_graph *g);
const dg_taint_rule *dg_taint_rule_get(const dg_graph *g, uint32_t rid);

uint32_t dg_node_id_limit(const dg_graph *g);
const dg_node *dg_node_get(const dg_graph *g, uint32_t nid);
uint32_t dg_node_find(const dg_graph *g, uint32_t name);

uint32_t dg_pod_id_limit(const dg_graph *g);
const dg_pod *dg_pod_get(const dg_graph *g, uint32_t pid);
uint32_t dg_pod_find(const dg_graph *g, uint32_t ns, uint32_t name);
/* The pod as its input gave it (borrowed, cached until the pod changes),
 * with the status's resourceClaimStatuses the graph holds; NULL for no
 * such pod, or when dg_opts.no_pod_text keeps no text. */
json_t *dg_pod_json(const dg_graph *g, uint32_t pid);
/* A new reference to the pod (apiVersion, kind, metadata name, namespace,
 * uid, resourceVersion), as an Event's regarding, or NULL. */
json_t *dg_pod_ref_json(const dg_graph *g, uint32_t pid);

uint32_t dg_namespace_find(const dg_graph *g, uint32_t name);
/* adminAccess admission: true when the namespace carries
 * resource.kubernetes.io/admin-access: "true", or is not known to the graph
 * (offline manifests often omit Namespace objects). */
bool dg_namespace_allows_admin(const dg_graph *g, uint32_t ns);
const dg_namespace *dg_namespace_get(const dg_graph *g, uint32_t nsid);

uint32_t dg_pool_status_request_id_limit(const dg_graph *g);
const dg_pool_status_request *dg_pool_status_request_get(const dg_graph *g, uint32_t id);

/* ---- devices ---------------------------------------------------------------- */

typedef struct dg_devref {
    uint32_t slice;  /* slice id */
    uint32_t index;  /* index in slice->devices */
    uint32_t pool;   /* pool id */
    uint32_t gen;    /* device generation */
} dg_devref;

uint32_t dg_device_id_limit(const dg_graph *g);
uint32_t dg_device_count(const dg_graph *g);
/* false for a deleted id */
bool dg_device_ref(const dg_graph *g, uint32_t devid, dg_devref *out);
uint32_t dg_device_id(const dg_graph *g, uint32_t sid, uint32_t index);
const dg_device *dg_device_get(const dg_graph *g, uint32_t devid);
/* Node name of a node-local device (slice or per-device nodeName), else 0. */
uint32_t dg_device_node(const dg_graph *g, uint32_t devid);
/* Find by (driver, pool, device name) among the newest generation's slices. */
uint32_t dg_device_find(const dg_graph *g, uint32_t driver, uint32_t pool, uint32_t name);
/* The view CEL and policies see (derived attributes included). */
void dg_device_view(const dg_graph *g, uint32_t devid, de_devview *out);
/* resourceclaim.ToleratesTaint: the toleration's effect (when set), key
 * (when set) and operator/value match the taint. */
bool dg_tolerates(const dg_toleration *t, const dg_taint *x);
/* Published taints followed by DeviceTaintRule taints (dra-model 1.7). */
void dg_device_taints(const dg_graph *g, uint32_t devid, const dg_taint **out, uint32_t *n);

/* Derived attributes written by the policy host (the graph stores them so
 * the view includes them).  The array is copied; the device's generation is
 * bumped only when the set actually changes. */
void dg_device_set_derived(dg_graph *g, uint32_t devid, const de_attr *attrs, uint32_t n);

/* ---- pools and indexes --------------------------------------------------- */

typedef struct dg_pool {
    uint32_t driver, name;
    int64_t max_generation;  /* highest generation among its slices */
    uint32_t nslices_at_max; /* slices present at max_generation */
    int64_t slice_count;     /* resourceSliceCount declared at max_generation */
    uint64_t gen;            /* bumped when any slice of the pool changes */
    const uint32_t *slices;  /* slice ids of every generation, sorted by slice name */
    uint32_t nslices;
} dg_pool;

uint32_t dg_pool_id_limit(const dg_graph *g);
bool dg_pool_get(const dg_graph *g, uint32_t pid, dg_pool *out);
uint32_t dg_pool_find(const dg_graph *g, uint32_t driver, uint32_t name);
/* complete = every slice of the newest generation is present */
bool dg_pool_complete(const dg_graph *g, uint32_t pid);

/* Slices whose spec.nodeName is `node` (any generation), and the slices that
 * are not node-local (nodeSelector, allNodes, perDeviceNodeSelection, none).
 * Arrays are owned by the graph, valid until the next change. */
void dg_slices_on_node(const dg_graph *g, uint32_t node, const uint32_t **sids, uint32_t *n);
void dg_slices_shared(const dg_graph *g, const uint32_t **sids, uint32_t *n);
/* Slices that carry sharedCounters, node-local or not (ascending ids): with
 * the shared ones, what upstream's allocator treats as visible from every
 * node. */
void dg_slices_with_counters(const dg_graph *g, const uint32_t **sids, uint32_t *n);
/* Slices of one driver (any generation). */
void dg_slices_of_driver(const dg_graph *g, uint32_t driver, const uint32_t **sids, uint32_t *n);
/* Node names that have (or had) node-local slices, in first-seen order;
 * dg_slices_on_node may return an empty list for some of them. */
void dg_slice_nodes(const dg_graph *g, const uint32_t **names, uint32_t *n);

/* Node matching (core v1 NodeSelector semantics, dra-model section 9): terms
 * ORed, requirements ANDed, empty term matches nothing. An unparsable
 * requirement (bad Gt/Lt value, unknown operator) is an error. */
de_rc dg_nodesel_match(const dg_graph *g, const dg_nodesel *sel, uint32_t node_name,
                       const dg_kv *labels, uint32_t nlabels, bool *match, de_err *e);

/* ---- allocated state -------------------------------------------------------- */

/* Usage of one device derived from every allocated claim in the graph:
 * results with adminAccess do not count; a result with a shareID is shared
 * use adding its consumedCapacity; any other result is exclusive use. */
typedef struct dg_usage {
    uint32_t exclusive;  /* number of claims holding it exclusively */
    uint32_t shared;     /* number of shared allocations */
    const dg_consumed *consumed; /* summed consumedCapacity, by key */
    uint32_t nconsumed;
} dg_usage;

/* Usage by (driver, pool, device) names, also for devices not (or no longer)
 * published. Returns false when the device is not in use at all. */
bool dg_usage_get(const dg_graph *g, uint32_t driver, uint32_t pool, uint32_t device, dg_usage *out);
/* The same by graph pool id (dg_pool_find), for callers that keep it: the
 * commit path re-reads a device's usage per claim change, and the pool
 * lookup by names was half of that. */
bool dg_usage_get_pid(const dg_graph *g, uint32_t pid, uint32_t device, dg_usage *out);
/* Iterate all used devices deterministically (sorted by driver, pool, device). */
typedef void (*dg_usage_cb)(void *ctx, uint32_t driver, uint32_t pool, uint32_t device,
                            const dg_usage *u);
void dg_usage_each(const dg_graph *g, dg_usage_cb cb, void *ctx);
uint64_t dg_usage_generation(const dg_graph *g);

/* Record an allocation made by draengine (the "assume" step): deep-copies
 * `a` into the claim and updates usage.  Fails if the claim is already
 * allocated. dg_claim_deallocate clears it. */
de_rc dg_claim_set_allocation(dg_graph *g, uint32_t clid, const dg_allocation *a, de_err *e);
/* Decode (and validate the shape of) an AllocationResult JSON object into
 * `out`, allocating from `a` (used by specs and tools that feed allocations
 * from JSON). */
de_rc dg_decode_allocation(dg_graph *g, json_t *v, de_arena *a, dg_allocation *out, de_err *e);
de_rc dg_claim_deallocate(dg_graph *g, uint32_t clid, de_err *e);
de_rc dg_claim_add_reservation(dg_graph *g, uint32_t clid, const dg_consumer *c, de_err *e);

/* Create a claim in the graph from a template for a pod, named the way the
 * claim controller names it (<pod>-<claim ref name>-<5 char suffix>; the
 * suffix is derived from the pod UID so the result is deterministic). */
de_rc dg_claim_from_template(dg_graph *g, uint32_t podid, uint32_t ref_index, uint32_t *clid,
                             de_err *e);
/* The same for a PodGroup's entry (KEP-5729) that the pod's entry
 * ref_index matches: <group>-<claim ref name>-<suffix from the group's
 * UID>, controlled by the PodGroup; recorded in the pod's status as the
 * controller records it for every member. */
de_rc dg_claim_from_template_for_group(dg_graph *g, uint32_t podid, uint32_t ref_index, const char *api_version,
                                       const char *group, const char *group_uid, uint32_t *clid, de_err *e);

/* ---- encoding ----------------------------------------------------------- */

json_t *dg_encode_allocation(const dg_graph *g, const dg_allocation *a);
json_t *dg_encode_nodesel(const dg_graph *g, const dg_nodesel *s);

/* ---- change notification ------------------------------------------------ */

typedef enum dg_op { DG_OP_ADD, DG_OP_UPDATE, DG_OP_DELETE } dg_op;

/* Called after every change, with the object's id in its kind's id space. */
typedef void (*dg_listener)(void *ctx, dg_kind kind, dg_op op, uint32_t id);
void dg_add_listener(dg_graph *g, dg_listener fn, void *ctx);
/* Unregister (fn, ctx); a listener must be removed before its ctx dies.  Not
 * to be called from inside a listener. */
void dg_remove_listener(dg_graph *g, dg_listener fn, void *ctx);

/* Called when one device's generation moves without an object event of its
 * own: its taints changed (a DeviceTaintRule came, went or changed; also
 * while its slice is being replaced) or its derived attributes changed
 * (dg_device_set_derived).  The device's slice is unchanged unless a slice
 * event follows.  Listeners must not change the graph. */
typedef void (*dg_device_listener)(void *ctx, uint32_t devid);
void dg_add_device_listener(dg_graph *g, dg_device_listener fn, void *ctx);
void dg_remove_device_listener(dg_graph *g, dg_device_listener fn, void *ctx);

/* ---- statistics ------------------------------------------------------------ */

typedef struct dg_stats {
    uint32_t slices, devices, pools, classes, claims, templates, taint_rules, nodes, pods;
    size_t bytes; /* memory held by decoded objects and indexes */
    uint32_t fast_path_slices; /* slices loaded by the JSON snapshot fast path */
    uint32_t fast_path_nodes;  /* Nodes loaded by it */
    uint32_t cel_programs; /* validation's compiled selectors held now (capped) */
    uint32_t strings;      /* interned strings held now (released names not counted) */
    uint32_t claim_ids, pod_ids; /* id limits: deleted claims' and pods' ids are reused */
} dg_stats;

void dg_get_stats(const dg_graph *g, dg_stats *out);

#endif
