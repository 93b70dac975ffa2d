/*
 * sch_int.h - the scheduler's internals shared by its files.
 */
#ifndef SCH_INT_H
#define SCH_INT_H

#include "../base/arena.h"
#include "../base/map.h"
#include "sch.h"
#include "sch_http.h"

typedef enum spstate {
    SP_NONE = 0,      /* not ours, or finished */
    SP_ACTIVE,        /* in the active queue */
    SP_BACKOFF,       /* waiting for its backoff to expire */
    SP_UNSCHED,       /* waiting for an event that could help */
    SP_ASSUMED,       /* bound by us; the watch has not shown it yet */
    SP_WAITING,       /* PreBind: claims written, waiting for binding conditions (sch_wait.c) */
    SP_BOUND,         /* the graph shows spec.nodeName */
    SP_BINDING,       /* assumed; its PreBind/Bind job runs on a worker (sch_async.c) */
    SP_HELD,          /* a claim of it is being written by a job: waits for its end */
} spstate;

/* Reasons a pod waits: which events may help it. */
enum {
    WAIT_NODE = 1u << 0,      /* node fit: a node add/update may help */
    WAIT_RESOURCES = 1u << 1, /* cpu/memory/pods: a pod leaving a node may help */
    WAIT_DEVICES = 1u << 2,   /* devices: a slice, a deallocation may help */
    WAIT_CLAIM = 1u << 3,     /* a named claim: its events help (claim index) */
    WAIT_POD = 1u << 4,       /* its own update (claim statuses) helps */
    WAIT_NBITS = 5
};

typedef struct spod {
    uint32_t ns, name; /* interned */
    uint8_t state;
    uint8_t waits;     /* WAIT_* */
    bool in_active;
    uint32_t attempts;
    uint64_t backoff_until;
    uint64_t first_seen;  /* for the end-to-end latency */
    uint64_t unsched_since;
    uint32_t node;        /* interned node name when assumed/bound */
    uint32_t *claims;     /* claim keys indexed for this pod (packed ns/name, low/high) */
    uint32_t nclaims;
    char *last_msg;       /* last FailedScheduling note (to aggregate Events) */
    /* SP_WAITING (sch_wait.c) */
    uint64_t wait_until;  /* monotonic deadline (bindingTimeout from PreBind) */
    uint64_t *wait_keys;  /* the pod's claims, pod order */
    uint32_t nwait_keys;
    bool wait_nar;        /* nodeAllocatableResourceClaimStatuses were written */
} spod;

typedef struct vec32 {
    uint32_t *v;
    uint32_t n, cap;
} vec32;

typedef struct heapent {
    uint64_t at;
    uint32_t pod;
} heapent;

typedef struct heap {
    heapent *v;
    uint32_t n, cap;
} heap;

struct sch_sched {
    dg_graph *g;
    de_interner *in;
    al_allocator *al;
    kc_client *cl;
    sch_opts o;
    uint32_t sched_name; /* interned */

    spod *pods;
    uint32_t npods, podcap;
    de_map pod_by_key;   /* pack(ns, name) -> index */
    uint32_t *free_slots;
    uint32_t nfree, freecap;

    /* queues */
    uint32_t *active;
    uint32_t ahead, alen, acap;
    heap backoff;   /* by backoff_until: pods an event moved while backing off */
    heap ebackoff;  /* by backoff_until: pods whose attempt or writes failed (sch_to_backoff) */
    heap flush;     /* unschedulable pods by unsched_since + max */
    vec32 bucket[WAIT_NBITS];
    vec32 waiting;  /* SP_WAITING pods */

    /* indexes */
    de_map claim_pods;  /* claim key -> vec32 index + 1 into vecs (SchedulerPreQueueingHints) */
    vec32 *vecs;
    uint32_t nvecs, veccap;
    uint32_t *free_vecs; /* vecs indexes (+ 1) dropped, reused first */
    uint32_t nfree_vecs, free_veccap;
    de_map assumed_rv;   /* claim key -> resourceVersion we wrote */
    de_map ext_owned;    /* pack(ns, controller uid) -> vecs index + 1: extended-resource claim ids */
    de_map ext_owner;    /* claim id -> its key in ext_owned, for the claims indexed there */
    json_t *podgroups;   /* "ns/name" -> PodGroup (KEP-5729), when enabled */
    al_hooks hooks;      /* policy score hook (zeroed = none) */

    /* nodes sorted by name, rebuilt when the node set changes */
    uint32_t *nodes;
    uint32_t nnodes, nodecap;
    bool nodes_dirty;
    uint32_t next_start;

    de_arena *cycle;
    sch_stats st;
    sch_hist attempt_lat, e2e_lat, alloc_lat;
    uint64_t by_result[4];
    struct sch_pool *pool; /* binding workers (sch_async.c), NULL: synchronous */
    uint64_t write_until;  /* sch_set_write_deadline */
};

static inline uint64_t sch_key(uint32_t ns, uint32_t name) { return de_pack2(ns, name); }

/* Names held by reference.  Pods and claims come and go without end, so
 * their names are counted interned strings (base/intern.h): every key
 * (namespace, name) or id the scheduler keeps past the call that gave it -
 * the pod table, a pod's claim keys and binding-condition wait, the
 * claim -> pods index, the resourceVersions it wrote, a binding job, a
 * busy claim - holds a reference to both halves and releases it with the
 * entry; a name looked up only is found, never interned.  An id whose last
 * holder lets go is reused for another string, so a key kept without a
 * reference could name a different object later. */
uint64_t sch_key_ref(sch_sched *s, const char *ns, const char *name); /* interns, +1 each */
uint64_t sch_key_find(const sch_sched *s, const char *ns, const char *name); /* SCH_NO_KEY: absent */
void sch_key_retain(sch_sched *s, uint64_t key);
void sch_key_release(sch_sched *s, uint64_t key);
#define SCH_NO_KEY UINT64_MAX /* matches no key: UINT32_MAX is never an id */

/* sch_queue.c */
spod *sch_pod(sch_sched *s, uint32_t idx);
uint32_t sch_pod_lookup(sch_sched *s, uint32_t ns, uint32_t name);
uint32_t sch_pod_ensure(sch_sched *s, uint32_t ns, uint32_t name);
void sch_pod_forget(sch_sched *s, uint32_t idx);
void sch_activate(sch_sched *s, uint32_t idx);
void sch_to_backoff(sch_sched *s, uint32_t idx);
void sch_to_unschedulable(sch_sched *s, uint32_t idx, unsigned waits, const uint64_t *claim_keys,
                          uint32_t nkeys);
void sch_leave_waiting(sch_sched *s, uint32_t idx);
void sch_requeue_claim(sch_sched *s, uint64_t claim_key);
void sch_requeue_class(sch_sched *s, uint32_t class_name);
void sch_requeue_bucket(sch_sched *s, unsigned wait_bit);
uint32_t sch_pop_active(sch_sched *s);
void sch_promote_due(sch_sched *s);
uint32_t sch_pop_backoff(sch_sched *s);
/* The vec32 behind a map slot of an index (0 = none yet: a new, empty one). */
vec32 *sch_vec(sch_sched *s, uint64_t *slot);
/* Free the vec32 behind a map value (its index is reused). */
void sch_vec_drop(sch_sched *s, uint64_t v);
void sch_queue_free(sch_sched *s);

/* sch_fit.c: the allocator's node fit (al_node_fit) as SCH_FIT_* bits */
unsigned sch_fit(sch_sched *s, const dg_pod *p, const al_amount *req, uint32_t nreq,
                 const dg_node *n, char *why, size_t cap, double *score);
unsigned sch_nar(sch_sched *s, const dg_pod *p, const uint32_t *claims, uint32_t nall, uint32_t ext,
                 const uint32_t *pend, const al_outcome *o, uint32_t nuse, const al_amount *req, uint32_t nreq,
                 const dg_node *n, al_nar *out, char *why, size_t cap, de_rc *rc, de_err *e);

/* sch_ext.c */
uint32_t sch_ext_resources(sch_sched *s, const dg_pod *p, al_ext_res *res);
uint64_t sch_ext_mask(sch_sched *s, const dg_node *n, const al_ext_res *res, uint32_t nres);
void sch_ext_build(sch_sched *s, const dg_pod *p, const al_ext_res *res, uint32_t nres, uint64_t mask,
                   json_t **requests, json_t **mappings);
json_t *sch_ext_claim_object(sch_sched *s, const dg_pod *p, json_t *requests);
uint32_t sch_ext_temp_claim(sch_sched *s, const dg_pod *p, json_t *obj, uint64_t mask);
void sch_ext_drop_temp(sch_sched *s, uint32_t clid);
uint32_t sch_ext_existing(sch_sched *s, const dg_pod *p);
/* The owner index behind sch_ext_existing: built from the graph, then kept
 * by a graph listener (sch_new/sch_free). */
void sch_ext_index_open(sch_sched *s);
void sch_ext_index_close(sch_sched *s);

/* sch_bind.c */
typedef struct sch_choice {
    uint32_t node;        /* node id */
    uint32_t node_name;   /* interned */
    uint32_t *claims;     /* all claim ids of the pod (resolved) */
    uint32_t nclaims;
    al_outcome out;       /* the allocator's result for the pending claims */
    uint32_t *pending;    /* claim ids allocated now */
    uint32_t npending;
    uint32_t ext_clid;    /* temporary extended-resource claim among pending, or DG_NONE */
    json_t *ext_obj;      /* the claim to create for it (generateName) */
    json_t *ext_maps;     /* pod.status.extendedResourceClaimStatus.requestMappings */
    const al_nar *nar;    /* pod.status.nodeAllocatableResourceClaimStatuses (KEP-5517), or NULL */
    const bool *group;    /* per claim: shared through the pod's PodGroup */
    const char *group_name, *group_uid;
} sch_choice;
/* DE_OK bound, or *waiting: PreBind waits for binding conditions
 * (sch_wait.c); DE_ECONFLICT retry at once; other: back off. */
de_rc sch_bind(sch_sched *s, uint32_t idx, uint32_t pod, const sch_choice *c, bool *waiting, bool *in_flight,
               de_err *e);
de_rc sch_bind_pod(sch_sched *s, uint32_t pod, uint32_t node_name, de_err *e);
de_rc sch_claim_unreserve(sch_sched *s, uint32_t clid, const char *pod_uid, de_err *e);
/* Pieces shared with the binding workers (any thread: no graph). */
de_rc sch_claim_put(kc_client *cl, json_t *obj, bool add_finalizer, json_t *alloc, bool stamp, json_t *entry,
                    json_t **resp, de_err *e);
de_rc sch_pod_bind_http(kc_client *cl, const char *ns, const char *name, const char *uid, const char *node,
                        de_err *e);
de_rc sch_write_pod_nar(kc_client *cl, const char *ns, const char *pod, const char *uid, json_t *statuses,
                        de_err *e);
/* The scheduler's thread. */
json_t *sch_alloc_json(sch_sched *s, const dg_allocation *a);
void sch_remember_written(sch_sched *s, json_t *obj);
void sch_forget_written(sch_sched *s, uint64_t claim_key);
void sch_refresh_claim(sch_sched *s, uint32_t clid);
bool sch_has_finalizer(json_t *claim);
bool sch_reserved_for(json_t *claim, const char *uid);
bool sch_binding_gates(sch_sched *s);

/* sch_async.c: PreBind/Bind jobs on worker threads */
void sch_async_start(sch_sched *s, unsigned workers);
static inline bool sch_async_on(const sch_sched *s) { return s->pool != NULL; }
de_rc sch_async_submit(sch_sched *s, uint32_t idx, uint32_t pid, const sch_choice *c, de_err *e);
/* A job is writing this claim: events for it wait, pods using it wait. */
bool sch_async_claim_busy(const sch_sched *s, uint64_t claim_key);
/* true: the event was kept for when the job ends (the claim is busy). */
bool sch_async_defer(sch_sched *s, kc_evtype t, json_t *obj, uint64_t claim_key);
/* A MODIFIED event of a claim a job is writing, kept undecoded: true when
 * the claim is busy (the newest line is kept for the job's end). */
bool sch_async_drop(sch_sched *s, uint64_t claim_key, uint64_t rv, const char *line, size_t len);
uint64_t sch_parse_rv(const char *rv, bool *ok);
void sch_async_hold(sch_sched *s, uint32_t idx);
void sch_async_drain(sch_sched *s);
uint32_t sch_async_in_flight(const sch_sched *s);
bool sch_async_full(const sch_sched *s); /* no new job until one ends */
void sch_async_set_deadline(sch_sched *s, uint64_t until_ns);
void sch_async_free(sch_sched *s);
/* Queue an Event for the workers (sch_evq.h); false: no pool, write it here. */
bool sch_async_event(sch_sched *s, json_t *regarding, const char *type, const char *reason, const char *action,
                     const char *note);
de_rc sch_pod_nar_clear(sch_sched *s, const char *ns, const char *pod, const char *uid, de_err *e);

/* sch_wait.c: PreBind's wait for binding conditions (KEP-5007) */
bool sch_wait_needed(sch_sched *s, const uint32_t *claims, uint32_t n);
void sch_wait_begin(sch_sched *s, uint32_t idx, uint32_t node_name, const uint32_t *claims, uint32_t n,
                    bool nar_written);
void sch_wait_first_check(sch_sched *s, uint32_t idx); /* the conditions may hold already */
void sch_wait_claim(sch_sched *s, uint64_t claim_key); /* a claim changed */
void sch_wait_due(sch_sched *s);                        /* deadlines passed */
uint64_t sch_wait_next_ns(const sch_sched *s);
void sch_wait_drop(sch_sched *s, uint32_t idx);         /* forget the wait (no writes) */
de_rc sch_deallocate(sch_sched *s, uint32_t clid, uint32_t pod_uid, de_err *e);
void sch_pod_event(sch_sched *s, uint32_t pid, const char *type, const char *reason, const char *action,
                   const char *note);
void sch_event(sch_sched *s, json_t *regarding, const char *type, const char *reason,
               const char *action, const char *note);
bool sch_claim_event_is_stale(sch_sched *s, json_t *obj);
void sch_claim_echoed(sch_sched *s, uint64_t claim_key, uint32_t n);

#endif
