/*
 * graph_int.h - internal: the device graph's tables and indexes, shared by
 * graph.c (objects, loading), graph_slice.c (slices, pools, devices, taint
 * rules), graph_claim.c (claims, usage, allocation state, templates) and
 * graph_encode.c.  Not a public header.
 *
 * Layout: one table per kind, indexed by a dense id; a de_map from
 * (namespace id, name id) to the id; deleted entries keep their slot with a
 * NULL object.  Ids are never reused, except those of claims and pods,
 * which a busy cluster creates and deletes without end: a deleted one's id
 * (and its name's map entry) is freed after its DG_OP_DELETE and given to
 * the next new claim or pod, and the generation tells the two apart.  Every decoded object owns one arena.
 * Devices are a separate table (dev_ent) so a device id stays valid while
 * its slice is replaced, as long as the device keeps its name.
 */
#ifndef DG_GRAPH_INT_H
#define DG_GRAPH_INT_H

#include "../base/arena.h"
#include "../base/map.h"
#include "../base/slab.h"
#include "dec.h"
#include "dg.h"

typedef struct u32vec {
    uint32_t *v;
    uint32_t n, cap;
} u32vec;

void u32vec_push(u32vec *a, uint32_t x);
void u32vec_insert(u32vec *a, uint32_t pos, uint32_t x);
bool u32vec_remove(u32vec *a, uint32_t x); /* first occurrence */
void u32vec_free(u32vec *a);

typedef struct slice_ent {
    dg_slice *s; /* NULL when deleted */
    de_arena *a;
    json_t *json;
    uint32_t pool;
    uint32_t *devids; /* parallel to s->devices */
    uint64_t gen;
} slice_ent;

typedef struct dev_ent {
    uint32_t slice; /* DG_NONE when deleted */
    uint32_t index;
    uint32_t pool;
    uint32_t gen;
    uint32_t node;   /* node name when node-local, else 0 */
    dg_taint *eff;   /* published + rule taints (malloc) when a rule applies */
    uint32_t neff;
    de_attr *derived; /* one malloc block holding the attrs and their lists */
    uint32_t nderived;
} dev_ent;

typedef struct pool_ent {
    uint32_t driver, name;
    int64_t max_generation;
    uint32_t nslices_at_max;
    int64_t slice_count;
    uint64_t gen;
    bool live;     /* has slices (counted in live_pools) */
    u32vec slices; /* sorted by slice name */
} pool_ent;

/* Generic entry for classes, templates, rules, nodes, namespaces, pool
 * status requests. */
typedef struct obj_ent {
    void *o; /* NULL when deleted */
    de_arena *a;
    json_t *json;
    uint64_t gen;
} obj_ent;

/* One per claim id, tens of thousands of them: fields ordered to pack. */
/* One node's pin (matchFields metadata.name In [node]), shared by every
 * allocation record pinned to that node: most records are, and the copy
 * was a third of writing one (graph_rec.c).  A slab block, freed with its
 * last record. */
typedef struct dg_pin {
    dg_term term;
    dg_requirement req;
    uint32_t value;
    uint32_t refs;
} dg_pin;

typedef struct claim_ent {
    dg_claim *c;
    de_arena *a;
    uint32_t *refs;    /* counted names and UIDs the decoded claim holds (in a) */
    void *rec;         /* the allocation written through the graph: one slab block */
    dg_pin *pin;       /* its node selector, when shared */
    char *text;        /* the input object, compact JSON (malloc); parsed only when asked for */
    json_t *jcache;
    uint64_t jcache_gen;
    uint64_t gen;
    uint64_t usage_gen; /* usage generation when its contribution last changed */
    uint32_t nrefs;
    uint32_t rec_size;
    uint32_t text_len;
    uint32_t reserved_cap; /* > 0: reserved_for is a slab block of this many entries,
                            * or the room at the end of rec (res_in_rec) */
    bool res_in_rec;
    uint32_t rec_est, res_est; /* its allocation record's expected bytes and results */
    bool encoded;      /* no text: the struct encodes to the input (graph_claim_enc.c) */
} claim_ent;

typedef struct pod_ent {
    dg_pod *p;
    de_arena *a;
    uint32_t *refs; /* counted names and UIDs the decoded pod holds (in a) */
    char *text;     /* the input object, compact JSON (malloc); parsed only when asked for */
    json_t *jcache;
    uint64_t jcache_gen;
    uint64_t gen;
    uint32_t nrefs;
    uint32_t text_len;
    uint32_t status_cap; /* > 0: claim_statuses is a slab block (added by dg_claim_from_template) */
} pod_ent;

typedef struct obj_table {
    obj_ent *e;
    uint32_t n, cap;
    de_map names; /* pack(ns, name) -> id */
    uint32_t live;
} obj_table;

typedef struct usage_ent {
    uint32_t driver, pool, device;
    uint32_t exclusive, shared;
    dg_consumed *consumed; /* malloc */
    uint32_t nconsumed, cap;
} usage_ent;

typedef struct listener {
    dg_listener fn;
    void *ctx;
} listener;

typedef struct dev_listener {
    dg_device_listener fn;
    void *ctx;
} dev_listener;

#define DG_POOL_HINTS 16 /* a power of two */

struct dg_graph {
    de_interner *in;
    bool own_in;
    dg_opts opts;
    de_gates gates;
    uint64_t gen;
    uint32_t devgen;

    slice_ent *slices;
    uint32_t nslices, capslices, live_slices;
    de_map slice_names; /* name -> slice id */

    dev_ent *devs;
    uint32_t ndevs, capdevs, live_devs;

    pool_ent *pools;
    uint32_t npools, cappools, live_pools;
    de_map pool_names;   /* pack(driver, name) -> pool id */
    /* the pools dg_pool_get_or_add last returned, by a cheap hash of the
     * key: an allocation's results are looked up by pool name right after
     * usage_apply added them (allocator listener, usage reads), and a pool
     * id never changes meaning, so an entry is never stale */
    struct {
        uint64_t key;
        uint32_t id1;    /* pool id + 1, 0 = empty */
    } pool_hint[DG_POOL_HINTS];
    de_map pool_devices; /* pack(pool id, device name) -> device id (newest generation) */

    de_map node_idx;    /* node name -> index into node_lists */
    u32vec *node_lists; /* slice ids per node name, ascending */
    uint32_t *node_list_names;
    uint32_t nnode_lists, capnode_lists;
    u32vec shared; /* non-node-local slice ids, ascending */
    u32vec counter_slices; /* slices with sharedCounters, ascending */
    de_map driver_idx;
    u32vec *driver_lists;
    uint32_t ndriver_lists, capdriver_lists;

    obj_table classes, templates, rules, nodes, namespaces, psrs;
    de_map ext_best; /* extendedResourceName -> class id + 1 */
    u32vec rules_sorted; /* live rule ids, by name */

    claim_ent *claims;
    uint32_t nclaims, capclaims, live_claims;
    de_map claim_names;
    u32vec claim_free; /* ids of deleted claims, reused (graph_claim.c) */

    pod_ent *pods;
    uint32_t npods, cappods, live_pods;
    de_map pod_names;
    u32vec pod_free;

    usage_ent *usage;
    uint32_t nusage, capusage;
    de_map usage_idx; /* pack(pool id, device name) -> usage index */
    de_map pins;      /* node name -> dg_pin * */
    uint32_t npins;
    u32vec usage_free;
    uint64_t usage_gen;

    de_slab *slab;           /* decision records (graph_rec.c) */
    uint32_t pending_claims;  /* live, not allocated */
    uint64_t pending_bytes, pending_results; /* their records' estimates (graph_rec.c) */

    listener *listeners;
    uint32_t nlisteners;
    dev_listener *dev_listeners;
    uint32_t ndev_listeners;

    uint32_t id_admin_label, id_true, id_pod_claim_name_ann, id_metadata_name;
    uint32_t fast_path_slices, fast_path_nodes;
    cel_env *cel; /* validation of expressions in manifests (dg_cel) */
    de_arena *scratch; /* slices are decoded here, then copied (dg_scratch) */
    size_t size_guess[2]; /* the last claim's and pod's arena, to decode them once (graph_load.c) */
};

/* graph_load.c */
de_arena *dg_scratch(dg_graph *g); /* reset and return the scratch arena */
cel_env *dg_cel(dg_graph *g);      /* the NewExpressions CEL env, created on first use */
de_rc dg_commit_slice(dg_graph *g, const dg_slice *tmp, json_t *json, de_err *e);
/* The same for a Node decoded in scratch by the fast path. */
de_rc dg_commit_node(dg_graph *g, const dg_node *tmp, de_err *e);
void dg_object_label(json_t *obj, char *buf, size_t cap);
bool dg_is_list(json_t *obj);

/* graph.c */
uint32_t obj_table_find(const obj_table *t, uint32_t ns, uint32_t name);
uint32_t obj_table_put(dg_graph *g, obj_table *t, uint32_t ns, uint32_t name, void *o, de_arena *a, json_t *json,
                       bool *replaced);
void obj_table_del(dg_graph *g, obj_table *t, uint32_t id);
void dg_ext_recompute(dg_graph *g, uint32_t ern);
void dg_check_admin(const dg_graph *g, dec *d, const dg_claim_spec *s, uint32_t ns, const char *prefix);
void dg_notify(dg_graph *g, dg_kind kind, dg_op op, uint32_t id);
void dg_notify_device(dg_graph *g, uint32_t devid);
uint64_t dg_bump(dg_graph *g);
uint32_t obj_table_add(obj_table *t, uint32_t ns, uint32_t name);
const char *dg_s(const dg_graph *g, uint32_t id);

/* graph_slice.c */
de_rc dg_slice_upsert(dg_graph *g, dg_slice *s, de_arena *a, json_t *json, uint32_t *sid);
de_rc dg_slice_delete(dg_graph *g, uint32_t sid);
void dg_rule_upsert(dg_graph *g, dg_taint_rule *r, de_arena *a, json_t *json, uint32_t *rid);
void dg_rule_delete(dg_graph *g, uint32_t rid);
uint32_t dg_pool_get_or_add(dg_graph *g, uint32_t driver, uint32_t name);
void dg_slices_free(dg_graph *g);

/* graph_claim.c */
/* refs: the counted ids the decode took (dec.refs, copied into a), kept and
 * released with the object; json (borrowed) is kept as compact text */
void dg_claim_upsert(dg_graph *g, dg_claim *c, de_arena *a, json_t *json, const uint32_t *refs, uint32_t nrefs,
                     uint32_t *clid);
void dg_claim_delete(dg_graph *g, uint32_t clid);
void dg_claims_free(dg_graph *g);
void dg_pod_upsert(dg_graph *g, dg_pod *p, de_arena *a, json_t *json, const uint32_t *refs, uint32_t nrefs,
                   uint32_t *pid);
void dg_pod_delete(dg_graph *g, uint32_t pid);

/* graph_rec.c */
de_slab *dg_slab(dg_graph *g);
/* reservedFor entries an allocation record has room for (graph_rec.c) */
#define DG_REC_RESERVED 4
bool dg_rec_set_allocation(dg_graph *g, claim_ent *ce, const dg_allocation *src);
void dg_rec_release(dg_graph *g, claim_ent *ce); /* allocation block and reservedFor list */
/* a larger slab block with the first used_bytes of old (freed, old_bytes) */
void *dg_rec_grow(dg_graph *g, void *old, size_t old_bytes, size_t used_bytes, size_t new_bytes);
/* a claim becomes pending (+1: created unallocated, deallocated) or stops
 * being pending (-1); at +1 room for every pending claim's record is
 * reserved, off the decision path */
void dg_rec_pending(dg_graph *g, claim_ent *ce, int sign);

/* graph_claim_enc.c: the claim as a v1 object from its struct, and whether
 * that dumps byte for byte as the input tree would */
json_t *dg_encode_claim_object(const dg_graph *g, const dg_claim *c);
bool dg_claim_encodes_as(const dg_graph *g, const dg_claim *c, const json_t *input);

/* graph_encode.c */
json_t *dg_encode_claim_status(const dg_graph *g, const dg_claim *c, json_t *orig_status);

#endif
