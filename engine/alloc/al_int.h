/*
 * al_int.h - allocator internals shared by the engine/alloc/ files.
 *
 * Layout of the work (one file each):
 *   al_core.c       allocator object, graph listener, caches, statistics
 *   al_gather.c     per-node table: pool gathering and the canonical device array
 *   al_cset.c       candidate sets: (class, selectors) evaluated per device -> bitsets
 *   al_compile.c    per-call claim compilation and upstream's pre-checks (errors)
 *   al_search.c     the depth-first search (upstream's allocateOne/allocateDevice)
 *   al_constraint.c matchAttribute / distinctAttribute state, derived attributes
 *   al_counters.c   shared counters, KEP-5963 compatibility groups, policy groups
 *   al_capacity.c   consumable capacity arithmetic
 *   al_result.c     AllocationResult building (results, config, node selector, shareID)
 *   al_explain.c    failure explanations for people
 *   al_place.c      node choice and commit for pods
 *   al_choose.c     node choice with score hooks: cached per node state and
 *                   claim set signature, best node from a heap
 *   al_counts.c     devices and free devices per node (for score hooks)
 *   al_fit.c        node fit beyond devices (shared with engine/sched), node usage
 *   al_nar.c        node allocatable resources of devices (KEP-5517)
 *   al_bindcond.c   binding conditions of allocated claims (KEP-5007)
 *   al_podgroup.c   PodGroup claims (KEP-5729), shared with engine/sched
 *
 * Index spaces: a node table ("ntab") flattens the pools gathered for one
 * node into one array of devices in canonical order (pool order, slice name
 * order, device order); a device's position there is its "local index" and
 * the search's start locations are local indices.  Bitsets over local indices
 * therefore scan in upstream's candidate order.
 */
#ifndef AL_INT_H
#define AL_INT_H

#include "../base/bits.h"
#include "../base/map.h"
#include "al.h"

#include <string.h>

/* ---- node tables ----------------------------------------------------------- */

enum { AL_POOL_OK = 0, AL_POOL_INCOMPLETE, AL_POOL_INVALID };

typedef struct al_pool {
    uint32_t driver, name;   /* interned */
    uint8_t state;           /* AL_POOL_* */
    bool binding;            /* a targeting device has bindingConditions (sorts last) */
    const char *invalid_reason;
    uint32_t dev_first, ndev; /* range in ntab->devs (targeting-node device slices) */
    uint32_t *on_slices;     /* DeviceSlicesTargetingNode (sorted by name) */
    uint32_t non;
    uint32_t *off_slices;    /* DeviceSlicesNotTargetingNode (rescan case) */
    uint32_t noff;
    uint32_t *cnt_slices;    /* counter-set slices (sorted by name) */
    uint32_t ncnt;
} al_pool;

enum {
    AL_DF_COUNTERS = 1 << 0, /* consumesCounters non-empty */
    AL_DF_MULTI = 1 << 1,    /* allowMultipleAllocations true (and the gate on) */
    AL_DF_BINDING = 1 << 2,  /* bindingConditions non-empty */
    AL_DF_TAINTED = 1 << 3,  /* a NoSchedule/NoExecute taint (needs a toleration) */
    AL_DF_CGROUPS = 1 << 4,  /* declares KEP-5963 compatibility groups */
    AL_DF_PERDEV = 1 << 5,   /* slice has perDeviceNodeSelection */
    AL_DF_BLOCKED = 1 << 6,  /* a policy groups hook failed closed on it: never allocated */
    AL_DF_OWN = 1 << 7,      /* from a slice whose spec.nodeName is the table's node */
    AL_DF_NODEOPS = 1 << 8,  /* its slice skips node operations the gate or the node does not allow */
    /* what the decision would otherwise read from the dg_device, whose
     * lines are cold on most devices it places */
    AL_DF_CAPS = 1 << 9,     /* capacity non-empty */
    AL_DF_BINDLISTS = 1 << 10, /* bindingConditions or bindingFailureConditions non-empty */
};
/* Flags the search's static pass looks at (al_search.c: prepare); a device
 * with none of them is "plain" (al_ntab.plain) and passes it unseen. */
#define AL_DF_STATIC (AL_DF_COUNTERS | AL_DF_MULTI | AL_DF_BLOCKED | AL_DF_NODEOPS | AL_DF_TAINTED)

typedef struct al_dev {
    uint32_t devid;          /* graph device id */
    uint32_t slice;          /* slice id */
    uint32_t index;          /* index in the slice */
    uint32_t pool;           /* index into ntab->pools */
    uint32_t name;           /* interned device name */
    uint16_t flags;          /* AL_DF_* */
    int8_t node_ok;          /* per-device node selection: 1 match, 0 no, -1 error */
    const dg_device *d;
    const dg_slice *s;
    const dg_taint *taints;  /* published + DeviceTaintRule taints (gates applied) */
    uint32_t ntaints;
    /* policy groups (al_hooks.groups), read at table build */
    uint32_t pscope, npgroups;
    const uint32_t *pgroups;
    uint32_t gen;            /* device generation the entry was filled at */
    uint32_t gpool;          /* graph pool id (usage key with `name`) */
} al_dev;

/* A candidate set: which devices of one node table a (class, selectors)
 * combination selects.  `poison` marks devices whose evaluation failed: the
 * search raises the stored error when (and only when) it reaches one, as
 * upstream evaluates selectors lazily in candidate order. */
typedef struct al_cset {
    uint64_t key;            /* the selector set's key */
    struct al_selset *ss;    /* the selector set */
    uint64_t *cand;          /* selectable */
    uint64_t *poison;        /* evaluation error */
    char **poison_msg;       /* per local index (only for poison bits), "class X: selector #i ..." */
    uint8_t *poison_kind;    /* 0 = class selector (message final), 1 = claim selector (needs claim name) */
    uint64_t *clsok;         /* the class's selectors accept it (for explanations) */
    uint64_t *nofacts;       /* refused, and a policy failed on it (al_hooks.facts_failed) */
    uint32_t ncand;          /* popcount(cand) */
    uint64_t ss_gen;         /* al_selset.gen it was evaluated for */
} al_cset;

typedef struct al_ntab {
    uint32_t node_name;      /* interned */
    uint32_t node_id;        /* DG_NONE when the node is not in the graph */
    uint32_t self;           /* index in al_allocator.ntabs */
    uint64_t epoch;          /* allocator epoch it was built at */
    bool valid;              /* false: rebuilt on next use (al_core.c) */
    uint32_t *gpools;        /* graph pool ids the table depends on (registered
                              * in al_allocator.tabsets), in the table's block */
    uint32_t ngpools;
    /* storage (al_tmem.c): everything sized at build time is one exact-size
     * block of the allocator's table slab; candidate sets and aggregated
     * capacity are slab records of their own; `ar` holds only what is rare
     * (messages of invalid pools and CEL errors, filtered taints) and is
     * made when first needed */
    void *mem;
    size_t memsz;
    de_arena *ar;
    uint32_t *dhash;         /* open addressing over devs: local index + 1, 0 empty */
    uint32_t dmask;          /* slots - 1 */
    uint32_t npools;
    al_pool *pools;
    uint32_t ndev, nwords;
    al_dev *devs;
    bool any_invalid, any_incomplete, any_shared_dev, any_counters; /* own pools */
    /* of the allocator's foreign counter pool views (al_fpools.c), the
     * entries of this table's own pools: present, invalid */
    uint32_t fown_present, fown_invalid;
    /* usage (al_core.c), kept current by the graph listener */
    uint64_t *inuse;         /* exclusively allocated (AllocatedDevices) */
    uint64_t *allocated;     /* IsDeviceAllocated: exclusive or shared */
    uint64_t *plain;         /* no AL_DF_STATIC flag (kept with the flags: freeze,
                              * al_fill_device) */
    struct al_agg *agg;      /* aggregated consumed capacity per device, NULL
                              * while no device of the table has any (slab) */
    /* candidate sets */
    al_cset **csets;         /* slab record of capcsets pointers; each set is a
                              * slab record of its own, so a request's rq->cs
                              * stays valid while later requests add sets */
    uint32_t ncsets, capcsets;
    uint64_t gen;            /* hook revision the groups were read at */
    bool failed;             /* the last build failed (al_core.c: any slice event
                              * may fix it) */
    /* the node's own devices (AL_DF_OWN) and how many are free; own_exact:
     * they are every device of the node's slices (al_counts.c then reads
     * these instead of counting) */
    uint32_t own_total, own_free;
    bool own_known, own_exact;
} al_ntab;

/* Aggregated consumed capacity of one shared device (a copy of the graph's
 * dg_usage.consumed; v is a slab record of n entries). */
typedef struct al_agg {
    dg_consumed *v;
    uint32_t n;
} al_agg;

/* A selector set: class + request selectors, compiled once per allocator. */
typedef struct al_selset {
    uint64_t key;
    uint32_t class_name;     /* interned */
    const dg_class *cls;     /* may be NULL (class missing) */
    uint32_t nclass, nreq;
    uint32_t *rexpr;         /* request selectors: interned expressions */
    uint8_t *rhascel;
    cel_prog **progs;        /* class selectors then request selectors */
    uint32_t *driver_eq;     /* per selector: X when it is `device.driver == "X" [&& ...]`
                              * with only && at the top level (0 = not that shape) */
    char **compile_err;      /* per selector: compile error text, or NULL */
    /* node index (al_place.c): bit per node in canonical order, 1 = may have a
     * free candidate */
    uint64_t *maybe_free;
    uint64_t mf_order;       /* al_allocator.order_gen it was made for, UINT64_MAX: not made */
    uint32_t mf_cap;         /* words maybe_free has room for */
    uint32_t mf_low;         /* words below this index are all zero */
    uint64_t node_epoch;     /* allocator epoch it was compiled at */
    bool stale;              /* its class changed: recompile on next use */
    uint64_t gen;            /* bumped on every (re)compilation */
} al_selset;

/* Usage keys a claim's allocation contributed, as last seen (al_core.c).
 * Most claims have one result: its key is inline, which saves a slab
 * record and its release per allocation and deallocation. */
typedef struct al_crec {
    union {
        uint64_t one;        /* n == 1 */
        uint64_t *v;         /* n > 1: table slab record (al_tmem_alloc) */
    } keys;                  /* pack(graph pool id, device name) */
    uint32_t n;
    uint64_t ugen;           /* dg_claim_usage_generation they were read at */
} al_crec;

static inline const uint64_t *al_crec_keys(const al_crec *r)
{
    return r->n == 1 ? &r->keys.one : r->keys.v;
}

/* Tables (al_ntab.self) that depend on one graph pool (al_core.c). */
typedef struct al_tabs {
    uint32_t n, cap;         /* cap <= 1: the one entry is inline */
    union {
        uint32_t one;
        uint32_t *v;         /* malloc */
    } u;
} al_tabs;

static inline const uint32_t *al_tabs_v(const al_tabs *l)
{
    return l->cap > 1 ? l->u.v : &l->u.one;
}

/* ---- the allocator ---------------------------------------------------------- */

struct al_allocator {
    dg_graph *g;
    de_interner *in;
    uint32_t id_pods;        /* al_id_pods, 0 until first asked */
    al_opts opts;
    bool own_cel;
    cel_env *cel;
    cel_memo *memo;
    al_hooks hooks;
    bool has_hooks;
    uint64_t hook_rev;
    /* gates, flattened */
    bool f_admin, f_prio, f_part, f_taints, f_taint_rules, f_cc, f_bind, f_list, f_derived,
        f_cgroups, f_frac, f_skipops, f_declared;
    /* change tracking (al_core.c) */
    uint64_t epoch;          /* bumped when everything must be rebuilt (hooks) */
    uint32_t *dirty;         /* device ids changed in place since the last al_sync */
    uint32_t ndirty, capdirty;
    uint64_t *dirty_bits;    /* the same as a set */
    uint32_t ndirty_bits;    /* words */
    struct al_tabs *tabsets; /* per graph pool id: the tables that depend on it */
    uint32_t ntabsets;       /* pool ids covered */
    /* counter pools whose consumption check passed (al_gather.c:
     * pool_checked): per graph pool id, AL_PCHECK_SLOTS (pool generation,
     * relevant slices) pairs; without it every node table re-checked every
     * counter pool of the cluster, O(nodes x pools) */
    struct al_pcheck *pchecks;
    uint32_t npchecks;       /* graph pool ids covered */
    /* node table storage (al_tmem.c) */
    struct de_slab *tslab;   /* tables' blocks, candidate sets, usage copies */
    de_arena *bar;           /* al_ntab_build's scratch, reset per build */
    uint64_t *pbmark;        /* al_ntab_build: per graph pool id, build number << 32 | pool index */
    uint32_t npbmark, pbseq;
    uint32_t *slice_est;     /* per slice id: devices it adds to the estimate,
                              * bit 31 = visible from every node (not node-local) */
    uint32_t nslice_est;
    uint64_t est_local, est_shared; /* devices in node-local / other slices */
    /* counter pools as seen from nodes that see none of their devices
     * (al_fpools.c), per graph pool id */
    struct al_fpool *fpools;
    uint32_t nfpools;
    uint32_t *fdirty;        /* pools to recompute */
    uint32_t nfdirty, capfdirty;
    uint32_t *fprob;         /* present incomplete/invalid ones, by (driver, pool) */
    uint32_t nfprob, capfprob;
    uint32_t fpresent, finvalid;
    bool fready;             /* every counter pool has been computed once */
    al_ntab *fholder;        /* holds the reasons while a view is computed */
    uint32_t *slice_pool;    /* per slice id: graph pool id + 1 as last seen (0 = none) */
    uint32_t nslice_pool;
    al_crec *crec;           /* per claim id */
    uint32_t ncrec;
    uint32_t *node_name_of;  /* per node id: name as last seen (for deletes) */
    uint32_t nnode_name_of;
    uint32_t *class_name_of; /* per class id: name as last seen */
    uint32_t nclass_name_of;
    /* node tables by node name */
    de_map ntab_by_name;     /* node name -> index + 1 */
    de_map attr_split;       /* constraint attribute name -> domain << 32 | id (al_compile.c) */
    struct al_ccache *ccache; /* compiled claims by spec (al_ccache.c), made by al_prepare or the first store */
    uint64_t cc_gen;         /* bumped when compiled claims may be out of date: classes,
                              * selector sets dropped, CEL environment generation */
    al_ntab **ntabs;
    uint32_t nntabs, capntabs;
    al_ntab *last_ntab;      /* the table ntab_find found last (tables are never freed
                              * before the allocator: the pointer stays good) */
    /* selector sets */
    de_map selset_by_key;
    al_selset **selsets;
    uint32_t nselsets, capselsets;
    /* canonical node order (al_place.c) */
    bool order_dirty;        /* Nodes added/removed (or slices, for stand-ins) */
    uint64_t order_gen;      /* bumped whenever the order is recomputed */
    uint64_t order_epoch;
    de_map rank_by_name;     /* node name -> rank + 1 */
    uint32_t *node_order;    /* graph node ids sorted by name (DG_NONE: see below) */
    uint32_t *node_names;    /* their names; without Node objects in the graph, the
                              * node names the slices mention stand in for nodes */
    dg_node *node_stub;      /* label-less stand-ins for those */
    uint32_t nnodes;
    uint32_t capnames;       /* node_names / node_order capacity */
    de_map order_seen;       /* node_order's scratch, kept sized */
    de_map node_rank;        /* node id -> rank */
    bool no_explain;         /* al_place.c: skip al_explain (reasons computed later) */
    bool explain_marks;      /* al_explain writes claim names as marks (al_choose.c) */
    /* node state generations (al_choose.c): per rank, bumped by
     * al_node_changed whenever anything that can change the node's
     * feasibility or score changes; changed ranks are logged in order */
    bool choice_off;
    uint32_t selset_cap;     /* AL_SELSET_CAP unless lowered (specs) */
    uint64_t env_gen;        /* cel_env_generation the selector sets and memo follow */
    uint32_t depth;          /* inside al_schedule_pod: al_sync leaves the caches alone */
    struct al_chooser *chooser;
    uint64_t *ngen;          /* per rank */
    uint64_t *nlogged;       /* per rank: absolute log position of its last entry + 1 */
    uint32_t capngen;        /* ngen / nlogged capacity */
    uint32_t *clog;          /* ranks, from absolute position clog_base */
    uint64_t clog_base, clog_end;
    uint32_t clog_cap;
    uint64_t clog_mark;      /* clog_end at the last sync of any score table */
    uint64_t ngen_next;
    struct al_memo *fmemo;   /* serve's per node Filter outcomes (al_memo.c) */
    uint64_t choice_gen;     /* bumped by changes that affect every node (classes) */
    uint32_t nfailed_tabs;   /* tables whose last build failed */
    uint64_t prep_key;       /* what the last complete al_prepare saw (al_prepare.c) */
    /* devices per node (al_counts.c) */
    struct al_counts *counts;
    /* what pods take from their nodes (al_fit.c) */
    struct al_usage *usage;
    /* frequently used interned strings */
    uint32_t s_metadata_name, s_in;
    uint32_t s_pods, s_cpu, s_memory, s_unsched_taint, s_noschedule, s_noexecute, s_optional_ops, s_true;
    int64_t now;             /* al_set_now: wall clock for binding timeouts, 0 = none */
    json_t *podgroups;       /* al_set_podgroups: "ns/name" -> PodGroup (borrowed) */
    /* scratch */
    de_arena *scratch;       /* CEL evaluation scratch */
    al_stats stats;
};

/* al_core.c */
void al_sync(al_allocator *a);  /* notice changes no event reports (hooks, derived attributes) */
al_ntab *al_ntab_get(al_allocator *a, uint32_t node_name, de_err *e);
void al_ntab_usage(al_allocator *a, al_ntab *t);
void al_mf_set_node(al_allocator *a, uint32_t node_name); /* a node may have free devices again */
const char *al_str(const al_allocator *a, uint32_t id);
uint32_t al_intern(al_allocator *a, const char *s);
/* al_intern(a, "pods"), the resource of every pod reservation, kept. */
uint32_t al_id_pods(al_allocator *a);
uint32_t al_internf(al_allocator *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* al_choose.c */
void al_node_changed(al_allocator *a, uint32_t node_name);
void al_choice_order(al_allocator *a);  /* the node order was recomputed */
void al_choice_reserve(al_allocator *a, uint32_t nodes);
void al_choose_free(al_allocator *a);

/* One pod being placed (al_place.c builds it). */
/* The selector set's index of nodes that may have a free candidate, made
 * for the current node order when missing (al_place.c) */
uint64_t *al_maybe_free(al_allocator *a, al_selset *s);
/* Room for it, off the decision path, without making it (al_prepare) */
void al_maybe_free_reserve(al_allocator *a, al_selset *s);

/* What the pods of the graph take from their nodes, counted now (al_prepare)
 * rather than by the first decision that checks a node's resources */
void al_usage_prepare(al_allocator *a);

/* al_allocate on the node's table, which the caller got from al_ntab_get
 * with nothing changed since (no al_sync, no second lookup) */
de_rc al_allocate_tab(al_allocator *a, al_ntab *t, const uint32_t *claims, uint32_t nclaims, de_arena *arena,
                      al_outcome *out, de_err *e);

/* al_pod_assume for a pod whose requests (al_pod_requests) the caller has */
void al_pod_assume_req(al_allocator *a, uint32_t pid, uint32_t node_name, const struct al_nar *nar,
                       const al_amount *req, uint32_t nreq);
/* al_pod_requests into buf, without the heap: the same amounts in the same
 * order, or UINT32_MAX when the pod has init containers (their formula) or
 * more than cap resource names */
uint32_t al_pod_requests_buf(const dg_pod *p, al_amount *buf, uint32_t cap);

typedef struct al_podctx {
    const dg_pod *pod;
    uint32_t podid;
    const uint32_t *claims;  /* the pod's claims, pod order (DG_NONE: none needed) */
    uint32_t nclaims;
    const uint32_t *pending; /* the pending ones, pod order */
    uint32_t npending;
    al_selset **ss;          /* selector sets of the quick check */
    uint32_t nss;
    const al_amount *req;    /* the pod's requests (NodeResourcesFit) */
    uint32_t nreq;
} al_podctx;

typedef struct al_choice {
    uint32_t rank;           /* the chosen node (canonical rank) */
    al_outcome o;            /* its allocation for the pending claims */
    int64_t k8s;
    double policy;
    uint32_t feasible, checked;
    const char *why;         /* DE_EUNSAT */
    const char *k8s_why;     /* DE_EUNSAT: kube-scheduler's message */
} al_choice;

/* A pod's signature (al_sig.c): words in a growable buffer, reused. */
typedef struct al_sigbuf {
    uint32_t *w;
    uint32_t n, cap;
} al_sigbuf;

void al_sig_build(al_allocator *a, const al_podctx *p, al_sigbuf *b);
uint64_t al_sig_hash(const uint32_t *w, uint32_t n);

/* The pod's signature (al_sig.c: everything the filters and Allocate see
 * of it), in the chooser's scratch until the next call, and its hash.  Makes
 * the chooser, so node generations are kept from then on. */
uint64_t al_choice_sig(al_allocator *a, const al_podctx *p, const uint32_t **sig, uint32_t *nsig);

/* Every claim admitted by the policies (the host caches answers per claim
 * generation): the choice cache and the Filter memo assume admission is not
 * in question, since an admit hook may read a claim's name or labels, which
 * no signature holds. */
bool al_all_admitted(al_allocator *a, const uint32_t *claims, uint32_t n);

/* al_memo.c */
void al_memo_free(al_allocator *a);

/* Choose the node for a pod whose claims are all pending or allocated (no
 * extended resource claim) and admitted, with a score hook: DE_OK (ch
 * filled), DE_EUNSAT (ch->why) or a hard error, exactly as the uncached loop
 * of al_schedule_pod would. */
de_rc al_choose(al_allocator *a, const al_podctx *p, de_arena *ar, al_choice *ch, de_err *e);

/* al_saved.c: a node's allocation kept for a later pod of the same
 * signature.  al_saved_new: NULL when it cannot be kept (a shareID, a
 * pointer into the claim it cannot place) or needs more than `budget`
 * bytes; free() releases it.  al_saved_restore: the allocation for the
 * claims `pending` (the new pod's, same signature), in `ar`. */
typedef struct al_saved al_saved;
al_saved *al_saved_new(al_allocator *a, const uint32_t *pending, const al_outcome *o, size_t budget);
size_t al_saved_bytes(const al_saved *s);
void al_saved_restore(al_allocator *a, const al_saved *s, const uint32_t *pending, int64_t k8s, de_arena *ar,
                      al_outcome *o);

/* The score hook on one feasible placement (shared by both paths). */
de_rc al_score_node(al_allocator *a, uint32_t podid, uint32_t rank, const uint32_t *claims, uint32_t n,
                    const al_outcome *o, de_arena *ar, double *ps, de_err *e);

/* al_fit.c */
void al_usage_pod_event(al_allocator *a, dg_op op, uint32_t pod);
void al_amount_add(al_amount **a, uint32_t *n, uint32_t *cap, uint32_t name, int64_t v);
/* al_nar.c: what statuses add to a pod's demand, per resource */
void al_nar_demand(const al_nar_status *st, uint32_t n, al_amount **acc, uint32_t *na, uint32_t *cap);
/* The node declares the feature in status.declaredFeatures (read only with
 * the NodeDeclaredFeatures gate, as the API server drops the field without
 * it); a stand-in node (NULL) declares nothing. */
bool al_node_declares(const al_allocator *a, const dg_node *n, uint32_t feature);
void al_usage_free(al_allocator *a);
void al_usage_reserve(al_allocator *a, uint32_t npods, uint32_t nnodes);

/* al_counts.c */
void al_counts_slice(al_allocator *a, uint32_t sid); /* a slice changed or was removed */
void al_counts_usage(al_allocator *a, uint64_t key); /* usage of pack(pool, device) changed */
void al_counts_free(al_allocator *a);

/* al_place.c: pieces of the node filter shared with al_choose.c */
void al_node_order(al_allocator *a); /* the canonical order, current */
const dg_node *al_node_at(al_allocator *a, uint32_t rank);
void al_order_reserve(al_allocator *a, uint32_t nodes); /* before nodes arrive at the order */
/* The filters before DynamicResources and the allocated claims' nodes:
 * NULL when the node passes; else the reason for people (in buf or
 * static), with upstream's reasons in *f. */
const char *al_pod_filter(al_allocator *a, const al_podctx *p, const dg_node *node, al_fit *f, char *buf,
                          size_t cap);
const char *al_quick_check(al_allocator *a, al_ntab *t, al_selset **ss, uint32_t nss, uint32_t rank);
/* The same check without the words (the caller explains later, if at all). */
bool al_quick_fails(al_allocator *a, al_ntab *t, al_selset **ss, uint32_t nss, uint32_t rank);

/* KEP-5517 on one node after Allocate (al_nar_fit for the pod's claims,
 * `ext` a KEP-5004 claim or DG_NONE, the n pending ones allocated as in o) */
de_rc al_place_nar(al_allocator *a, const al_podctx *p, uint32_t ext, const uint32_t *pending,
                   const al_outcome *o, uint32_t n, const dg_node *node, de_arena *ar, al_nar *out, al_fit *f,
                   de_err *e);

/* Why no node fits, summed over nodes: "0/N nodes are available: ..." */
typedef struct al_reasons {
    de_map idx;   /* text hash -> index + 1 */
    char **text;
    uint32_t *count;
    uint32_t n, cap;
} al_reasons;
void al_reason_addn(al_reasons *r, const char *s, uint32_t n);
const char *al_reasons_summary(al_reasons *r, de_arena *ar, uint32_t nnodes);
void al_reasons_free(al_reasons *r);
/* kube-scheduler's view of the same failures: upstream's reasons per node
 * (al_fit.reasons, one per line), counted per reason; al_k8s_message makes
 * its FitError text, "0/N nodes are available: 2 Insufficient cpu, 1
 * node(s) had untolerated taint(s). preemption: ..." */
#define AL_K8S_CANNOT_ALLOCATE "cannot allocate all claims"
#define AL_K8S_INVALID_POOLS "invalid resource pools were encountered"
void al_kreason_add(al_reasons *k, const char *lines, uint32_t n);
const char *al_k8s_message(const al_reasons *k, de_arena *ar, uint32_t nnodes, uint32_t resolvable,
                           bool preempt_never);

/* al_tmem.c: node table storage.  Records come zeroed from the table slab
 * (exact sizes, 16-byte rounded, freed with the same size). */
void al_tmem_init(al_allocator *a);
void al_tmem_free(al_allocator *a);
void *al_tmem_alloc(al_allocator *a, size_t n);
void al_tmem_release(al_allocator *a, void *p, size_t n);
/* the table's arena for rare things (made on first use) */
de_arena *al_ntab_ar(al_ntab *t);
/* Drop what a table holds (blocks, candidate sets, usage copies), keep the
 * struct. */
void al_ntab_clear(al_allocator *a, al_ntab *t);
al_ntab *al_ntab_new(al_allocator *a, uint32_t node_name);
/* A slice was added, changed or removed (sid's contribution to the
 * estimate), or nodes came: keep pre-faulted room for the tables not yet
 * built.  Called from graph events and al_new, never inside a decision. */
void al_tmem_slice(al_allocator *a, uint32_t sid);
void al_tmem_reserve(al_allocator *a);
void al_tabs_reserve(al_allocator *a, uint32_t npools); /* al_core.c */
/* local index of device (graph pool, name), UINT32_MAX when not in the table */
static inline uint32_t al_ntab_find(const al_ntab *t, uint32_t gpool, uint32_t name)
{
    if (!t->dhash)
        return UINT32_MAX;
    for (uint32_t h = (uint32_t)de_hash_u64(de_pack2(gpool, name)) & t->dmask;; h = (h + 1) & t->dmask) {
        uint32_t v = t->dhash[h];
        if (!v)
            return UINT32_MAX;
        const al_dev *d = &t->devs[v - 1];
        if (d->name == name && d->gpool == gpool)
            return v - 1;
    }
}

/* al_fpools.c: foreign counter pools */
void al_fpools_free(al_allocator *a);
void al_fpools_dirty(al_allocator *a, uint32_t gpid);  /* a slice of the pool changed */
bool al_fpools_has(const al_allocator *a, uint32_t gpid); /* had counter slices */
void al_fpools_sync(al_allocator *a);                  /* recompute the dirty ones */
void al_ntab_foreign(al_allocator *a, al_ntab *t);     /* fown_* after a build */
bool al_ntab_any_invalid(const al_allocator *a, const al_ntab *t);
bool al_ntab_no_pools(const al_allocator *a, const al_ntab *t);
/* The next incomplete/invalid foreign pool (not one of t's own) that sorts
 * before `before` (NULL: any), in (driver, pool) order from *cursor. */
bool al_fprob_next(al_allocator *a, const al_ntab *t, uint32_t *cursor, const al_pool *before,
                   al_pool *out);

/* al_gather.c */
de_rc al_ntab_build(al_allocator *a, al_ntab *t, de_err *e);
/* The view of counter pool gpid from a node that sees none of its device
 * slices (reasons in holder's arena): 1 in *out, 0 obsolete, -1 the pool
 * has no counter slices (or the gate is off). */
int al_foreign_view(al_allocator *a, al_ntab *holder, uint32_t gpid, al_pool *out);
void al_pchecks_free(al_allocator *a);
void al_pbmark_reserve(al_allocator *a, uint32_t npools);
void al_pchecks_reserve(al_allocator *a, uint32_t npools);
void al_fill_device(al_allocator *a, al_ntab *t, al_dev *dv);  /* re-read flags, taints, groups */
/* Is slice `s` visible from `node_name` (upstream's GatherPools relevance)?
 * An error counts as visible (the rebuild reports it). */
bool al_slice_relevant(al_allocator *a, const dg_slice *s, uint32_t node_name);

/* al_cset.c */
/* Selector sets an allocator keeps; past it al_sync drops them all (and
 * with them every table's candidate sets: a new epoch). */
#define AL_SELSET_CAP 4096
void al_selsets_free(al_allocator *a);
al_selset *al_selset_get(al_allocator *a, uint32_t class_name, const dg_selector *sels,
                         uint32_t nsels);
/* The table's candidate set of ss, made or evaluated again when missing
 * or out of date (al_cset_make); the lookup inline: every decision asks. */
al_cset *al_cset_make(al_allocator *a, al_ntab *t, al_selset *ss);
static inline al_cset *al_cset_get(al_allocator *a, al_ntab *t, al_selset *ss)
{
    for (uint32_t i = 0; i < t->ncsets; i++)
        if (t->csets[i]->key == ss->key) {
            if (t->csets[i]->ss_gen == ss->gen)
                return t->csets[i];
            break;
        }
    return al_cset_make(a, t, ss);
}
void al_cset_refresh(al_allocator *a, al_ntab *t, uint32_t dev); /* one device, every set */

/* ---- one Allocate call ---------------------------------------------------------- */

typedef struct al_call al_call;

/* Compiled derived attribute (KEP-6080). */
typedef struct al_derived {
    uint32_t domain, id;
    cel_prog *prog;
    const char *compile_err;
    uint32_t expr;
} al_derived;

/* One request or firstAvailable subrequest. */
typedef struct al_rq {
    const dg_exact *x;
    uint32_t claim, req, sub; /* indices */
    bool is_sub;
    uint32_t full_name;      /* "req" or "req/sub" */
    uint32_t base_name;      /* request name (the parent's for a subrequest) */
    uint32_t sub_name;       /* 0 unless is_sub */
    const dg_class *cls;
    al_selset *ss;
    al_cset *cs;
    bool all;                /* allocationMode All */
    bool admin;
    int64_t need;            /* numDevices */
    uint32_t *all_devs;      /* All: fixed list (local indices) */
    uint32_t nall;
    uint64_t *iter;          /* candidates the loop visits: selectable or poison */
    uint64_t *stat;          /* pure calls: candidates that can pass the static checks */
    uint32_t *cons;          /* indices of the claim's constraints that apply */
    uint32_t ncons;
    bool has_capreq;
    al_derived *derived;
    uint32_t nderived;
    /* derived value memo: per local device index (lazy) */
    de_attrval *dval;        /* [ndev * nderived] */
    uint8_t *dstate;         /* [ndev * nderived] 0 unknown, 1 value, 2 absent */
} al_rq;

typedef struct al_req {
    uint32_t nrq;            /* 1 for exactly, else number of subrequests */
    al_rq *rq;
    bool has_subs;
    int32_t chosen;          /* chosen subrequest index */
} al_req;

enum { AL_CK_MATCH = 1, AL_CK_DISTINCT = 2 };

/* A set of attribute values (list semantics): kind + sorted unique keys. */
typedef struct al_vset {
    uint8_t kind;            /* scalar kind: DE_V_INT, BOOL, STRING, VERSION; 0 = nil */
    uint32_t n, cap;
    uint64_t *v;
} al_vset;

typedef struct al_dentry {
    de_attrval v;
    const al_vset *set;      /* list mode: v as a set */
} al_dentry;

typedef struct al_cons {
    uint8_t kind;
    uint32_t name, domain, id; /* FullyQualifiedName and its split */
    const uint32_t *reqs;
    uint32_t nreqs;
    uint32_t ndev;           /* numDevices */
    de_attrval first;        /* match, scalar mode */
    al_vset inter;           /* match, list mode: running intersection */
    al_dentry *held;         /* distinct: the value of each of the ndev devices
                              * it holds, newest last (a stack) */
    al_vset **dset;          /* list mode: per device, its value as a set (lazy) */
    uint8_t *ks;             /* pruning cache: per device 0 unknown, 1 value, 2 absent */
    de_attrval *kv;
    uint32_t capheld;
} al_cons;

typedef struct al_claimc {
    const dg_claim *c;
    uint32_t id;
    uint32_t nreq;
    al_req *req;
    uint32_t ncons;
    al_cons *cons;
    uint64_t *mine;          /* bitset: devices being allocated for this claim (exclusive) */
} al_claimc;

typedef struct al_resent {
    al_rq *rq;
    uint32_t dev;            /* local index */
    bool shared;             /* multi-allocatable: gets a shareID */
    bool admin;
    dg_consumed *consumed;   /* consumed capacity (shared devices with capacity) */
    uint32_t nconsumed;
} al_resent;

/* Counter bookkeeping, keyed by pool NAME (upstream quirk, kept). */
typedef struct al_cgroup {
    uint32_t pool_name;
    bool have_avail;
    bool broken;             /* some available counter < 0: nothing fits */
    de_map slot;             /* pack(set, counter) -> slot + 1 */
    uint32_t nslots, capslots;
    de_qty *avail;
    bool *has_avail;
    de_qty *cons;
} al_cgroup;

/* KEP-5963 / policy group running intersection. */
typedef struct al_gstate {
    bool has_members, all_empty;
    uint32_t n;
    uint32_t *g;             /* sorted */
} al_gstate;

struct al_call {
    al_allocator *a;
    al_ntab *t;
    de_arena *ar;
    uint32_t node_name;
    const dg_node *node;
    uint32_t nclaims;
    al_claimc *claims;
    uint32_t nwords;
    uint64_t *busy;          /* bitset: allocating for any claim (exclusive) */
    uint32_t *busy_cnt;      /* per device: number of claims */
    /* consumable capacity in flight: per local device, NULL = none */
    de_qty **acap;
    bool *acap_present;
    uint32_t **capkeys;      /* per local device: capacity keys as written (lazy) */
    /* results per claim */
    al_resent **res;
    uint32_t *nres;
    /* counters */
    al_cgroup *cg;
    uint32_t ncg, capcg;
    int32_t *dev_cg;         /* per local device: counter group, -1 unknown */
    uint32_t **dev_slots;    /* per local device: slot per consumed counter (or UINT32_MAX) */
    /* compatibility groups (KEP-5963): (pool name, counter set) -> state */
    de_map cgrp_idx;
    de_map cgskip;           /* gate off: pack(pool, counter set) -> 1 + "allocated members declare groups" */
    al_gstate *cgrp;
    uint32_t ncgrp, capcgrp;
    bool *cgrp_seeded;
    /* policy groups: scope -> state */
    de_map pgrp_idx;
    al_gstate *pgrp;
    uint32_t npgrp, cappgrp;
    /* undo log for group states */
    struct al_undo *undo;
    uint32_t nundo, capundo;
    /* search */
    uint64_t steps, max_steps;
    uint64_t deadline;       /* de_now_ns() limit of the search (filter timeout), 0 = none */
    bool pure;               /* no side effects on failure: pruning allowed */
    de_err *e;
    int64_t score;
    dg_term *pin;            /* matchFields metadata.name In [node], built once */
    /* diagnostics counters for explanations */
    uint64_t rej_constraint, rej_counters, rej_taint, rej_capacity, rej_groups;
};

typedef struct al_undo {
    uint8_t kind;            /* 1 compat, 2 policy */
    uint32_t idx;
    al_gstate prev;
} al_undo;

/* al_compile.c */
const char *al_kobj(al_call *c, const al_claimc *cc);
de_rc al_call_compile(al_call *c, const uint32_t *claims, uint32_t nclaims, de_err *e);
extern const dg_exact al_exact_none; /* a request without `exactly` or subrequests */

/* al_ccache.c: compiled claims by spec.  al_ccache_get: 1 cc (claim ci of
 * the call, cc->c set) filled from the cache, 0 a miss that al_ccache_put
 * may keep once compiled, -1 a spec that is not cached. */
typedef struct al_ccache al_ccache;
int al_ccache_get(al_call *c, al_claimc *cc, uint32_t ci);
void al_ccache_put(al_allocator *a, const al_claimc *cc);
void al_ccache_reserve(al_allocator *a);
/* The selector sets of a compiled spec's plain requests without
 * adminAccess, in request order (what al_place.c's node index uses), and
 * in *subs the requests with subrequests; UINT32_MAX: no valid entry. */
uint32_t al_ccache_selsets(al_allocator *a, uint32_t ident, al_selset **ss, int64_t *subs);
void al_ccache_free(al_allocator *a);

/* al_search.c */
enum { AL_S_OK = 0, AL_S_FAIL, AL_S_MAXSIZE, AL_S_ERR };
int al_search(al_call *c);
bool al_dev_in_use(const al_call *c, uint32_t dev);
bool al_taint_blocks(const al_dev *dv, const al_rq *rq);
de_rc al_selectable(al_call *c, al_rq *rq, uint32_t dev, bool *ok);

/* al_constraint.c */
de_rc al_cons_add(al_call *c, al_cons *k, al_rq *rq, uint32_t dev, bool *ok);
const de_attrval *al_cons_value(al_call *c, al_cons *k, uint32_t d, bool *found);
/* Two scalar attribute values of one kind and equal (upstream's scalar
 * match and distinct comparisons: versions as exact strings). */
static inline bool al_values_equal(const de_attrval *x, const de_attrval *y)
{
    if (x->kind != y->kind || de_vkind_is_list(x->kind) || x->kind == DE_V_NONE)
        return false;
    switch (x->kind) {
    case DE_V_INT: return x->u.i == y->u.i;
    case DE_V_BOOL: return x->u.b == y->u.b;
    default: return x->u.s == y->u.s;
    }
}
void al_cons_remove(al_call *c, al_cons *k, al_rq *rq, uint32_t dev);
bool al_cons_applies(const al_cons *k, const al_rq *rq);
const de_attr *al_lookup_attr(const al_call *c, uint32_t dev, uint32_t domain, uint32_t id,
                              const de_devview *view);

/* al_counters.c */
bool al_counters_take(al_call *c, uint32_t dev);
void al_counters_release(al_call *c, uint32_t dev);
bool al_cgroups_skip_disabled(al_call *c, uint32_t dev);
bool al_cgroups_take(al_call *c, uint32_t dev, uint32_t *undo_mark);
bool al_pgroups_take(al_call *c, uint32_t dev);
void al_undo_to(al_call *c, uint32_t mark);

/* al_capacity.c */
/* CmpRequestOverCapacity: 1 fits, 0 does not, -1 request names a capacity the device lacks */
int al_capacity_fits(al_call *c, const al_rq *rq, uint32_t dev);
/* consumption per device capacity (arena), keys as written */
void al_capacity_consumed(al_call *c, const al_rq *rq, uint32_t dev, dg_consumed **out,
                          uint32_t *n);
void al_acap_insert(al_call *c, uint32_t dev, const dg_consumed *v, uint32_t n);
void al_acap_remove(al_call *c, uint32_t dev, const dg_consumed *v, uint32_t n);
bool al_capacity_in_use(const al_call *c, uint32_t dev);
uint32_t al_cap_key(al_allocator *a, const de_cap *cap, uint32_t driver);

/* al_result.c */
de_rc al_build_results(al_call *c, al_outcome *out, de_err *e);
uint32_t al_share_id(al_allocator *a, const al_call *c, uint32_t claim, uint32_t idx, uint32_t dev);

/* al_extended.c: the claim for extended resources backed by DRA */
de_rc al_ext_claim(al_allocator *a, const dg_pod *pod, const al_ext_res *res, uint32_t n, uint64_t mask,
                   uint32_t *clid, de_err *e);

/* al_explain.c */
void al_explain(al_call *c, al_why *why);

/* helpers */

/* Arena allocation for bookkeeping.  The arenas have the default 1 GiB cap;
 * reaching it means a pathological input, treated like malloc failure of a
 * bookkeeping block elsewhere in the engine (de_xmalloc): fatal, with a
 * message. */
void al_oom(size_t n) __attribute__((noreturn));

/* Blocks of up to 128 bytes (most of a decision's: claims, requests,
 * results, bitsets of a node's devices) are zeroed with constant-size
 * stores: the arena hands out whole 16-byte units (de_arena_alloc rounds
 * up), so zeroing the unit that holds the last byte stays in the block, and
 * a call to memset cost more than the zeroing. */
static inline void *al_zalloc(de_arena *ar, size_t n)
{
    void *p = de_arena_alloc(ar, n ? n : 1);
    if (!p)
        al_oom(n);
    if (n > 128) {
        memset(p, 0, n);
        return p;
    }
    char *q = p;
    memset(q, 0, 16);
    for (size_t o = 16; o < n; o += 16)
        memset(q + o, 0, 16);
    return p;
}

#define AL_NEW(ar, T, n) ((T *)al_zalloc((ar), sizeof(T) * (size_t)(n)))
/* v, an arena array of n used elements out of *cap, with room for one more:
 * doubled (16 at first) when full; the old block stays until the arena's
 * reset. */
static inline void *al_grow(de_arena *ar, void *v, uint32_t n, uint32_t *cap, size_t elem)
{
    if (n < *cap)
        return v;
    uint32_t c = *cap ? *cap * 2 : 16;
    void *nv = al_zalloc(ar, elem * c);
    if (n)
        memcpy(nv, v, (size_t)n * elem);
    *cap = c;
    return nv;
}

/* A capacity of at least `need`, half again the current one when it grows:
 * arrays sized from graph events that come one object at a time. */
static inline uint32_t al_grow_cap(uint32_t cur, uint32_t need)
{
    uint32_t c = cur + cur / 2;
    return need > c ? need : c;
}

#endif
