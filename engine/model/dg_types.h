/*
 * dg_types.h - the decoded resource.k8s.io (and core v1) object model:
 * plain, read-only data types that the decoder fills and every other module
 * reads.  (HAProxy's "-t.h" split: types here, functions in dg.h.)
 *
 * Conventions
 *  - Every name is an interned id (de_intern); 0 means "not set / empty".
 *  - Optional scalars carry an explicit "has_" flag or a tri-state int8
 *    (-1 unset, 0 false, 1 true) so output can round-trip what was written.
 *  - Arrays are (pointer, count) pairs owned by the object's arena; nothing
 *    here is freed individually.  An object is replaced as a whole.
 *  - All input versions (v1beta1, v1beta2, v1) decode into these v1 shapes.
 *  - Opaque JSON (config parameters, device status data) is kept as compact
 *    serialized JSON text (interned), printed back verbatim.
 */
#ifndef DG_TYPES_H
#define DG_TYPES_H

#include "../base/attr.h"
#include "../base/de.h"
#include "../base/quantity.h"

typedef enum dg_kind {
    DG_KIND_NONE = 0,
    DG_KIND_RESOURCE_SLICE,
    DG_KIND_DEVICE_CLASS,
    DG_KIND_RESOURCE_CLAIM,
    DG_KIND_RESOURCE_CLAIM_TEMPLATE,
    DG_KIND_DEVICE_TAINT_RULE,
    DG_KIND_RESOURCE_POOL_STATUS_REQUEST,
    DG_KIND_NODE,
    DG_KIND_POD,
    DG_KIND_NAMESPACE,
    DG_KIND_OTHER, /* a kind draengine does not model (Deployment, ...): ignored */
    DG_KIND_COUNT
} dg_kind;

typedef struct dg_kv {
    uint32_t key, value;
} dg_kv;

typedef struct dg_ownerref {
    uint32_t api_version, kind, name, uid;
    bool controller;
} dg_ownerref;

typedef struct dg_meta {
    uint32_t name, ns, uid, generate_name;
    uint32_t resource_version; /* opaque text; compare for equality only */
    int64_t generation;
    int64_t creation;          /* creationTimestamp, unix seconds; 0 = unset */
    bool deleting;             /* deletionTimestamp set */
    dg_kv *labels;
    uint32_t nlabels;
    dg_kv *annotations;
    uint32_t nannotations;
    uint32_t *finalizers;
    uint32_t nfinalizers;
    dg_ownerref *owners;
    uint32_t nowners;
} dg_meta;

/* ---- core v1 node selection --------------------------------------------- */

typedef enum dg_selop {
    DG_OP_IN = 0,
    DG_OP_NOT_IN,
    DG_OP_EXISTS,
    DG_OP_DOES_NOT_EXIST,
    DG_OP_GT,
    DG_OP_LT,
} dg_selop;

typedef struct dg_requirement {
    uint32_t key;
    uint8_t op; /* dg_selop */
    uint32_t *values;
    uint32_t nvalues;
} dg_requirement;

typedef struct dg_term {
    dg_requirement *exprs; /* matchExpressions (labels) */
    uint32_t nexprs;
    dg_requirement *fields; /* matchFields (only metadata.name is meaningful) */
    uint32_t nfields;
} dg_term;

typedef struct dg_nodesel {
    dg_term *terms; /* ORed */
    uint32_t nterms;
} dg_nodesel;

/* ---- ResourceSlice ------------------------------------------------------- */

typedef enum dg_nsmode {
    DG_NS_NONE = 0,   /* none of the four set (unknown future mode: skipped) */
    DG_NS_NODE_NAME,
    DG_NS_NODE_SELECTOR,
    DG_NS_ALL_NODES,
    DG_NS_PER_DEVICE, /* slice-level perDeviceNodeSelection: true */
} dg_nsmode;

typedef enum dg_effect {
    DG_EFFECT_NONE = 0,
    DG_EFFECT_NO_SCHEDULE,
    DG_EFFECT_NO_EXECUTE,
    DG_EFFECT_UNKNOWN, /* kept from stored objects; consumers treat it like None */
} dg_effect;

typedef struct dg_taint {
    uint32_t key, value;
    uint8_t effect;      /* dg_effect */
    uint32_t effect_raw; /* effect text as written */
    int64_t time_added;  /* unix seconds; 0 unset */
    uint32_t rule;       /* name of the DeviceTaintRule it came from, 0 = the slice */
} dg_taint;

typedef struct dg_counter {
    uint32_t name;
    de_qty value;
} dg_counter;

typedef struct dg_counterset {
    uint32_t name;
    dg_counter *counters;
    uint32_t ncounters;
} dg_counterset;

typedef struct dg_consumption {
    uint32_t counterset;
    dg_counter *counters;
    uint32_t ncounters;
    uint32_t groups[2]; /* compatibilityGroups (KEP-5963) */
    uint8_t ngroups;
} dg_consumption;

typedef enum dg_rpkind {
    DG_RP_NONE = 0, /* only `default` (or nothing) */
    DG_RP_VALUES,   /* validValues */
    DG_RP_RANGE,    /* validRange */
} dg_rpkind;

typedef struct dg_reqpolicy {
    bool has_default;
    de_qty dflt;
    uint8_t kind; /* dg_rpkind */
    de_qty *values;
    uint32_t nvalues;
    de_qty min;
    bool has_max, has_step;
    de_qty max, step;
} dg_reqpolicy;

typedef struct dg_nar {  /* nodeAllocatableResources entry (KEP-5517) */
    uint32_t resource;   /* cpu, memory, ... */
    uint32_t capacity_key;
    bool has_mapping, has_overhead;
    bool has_cap_mult, has_dev_mult, has_per_pod, has_per_container;
    de_qty cap_mult, dev_mult, per_pod, per_container;
} dg_nar;

typedef struct dg_device {
    uint32_t name;
    de_attr *attrs;          /* in input order */
    uint32_t nattrs;
    de_cap *caps;            /* in input order */
    dg_reqpolicy **policies; /* parallel to caps; NULL entries = no policy */
    uint32_t ncaps;
    dg_consumption *consumes;
    uint32_t nconsumes;
    dg_taint *taints;        /* published by the driver */
    uint32_t ntaints;
    uint32_t *binding_conditions;
    uint32_t nbinding_conditions;
    uint32_t *binding_failure_conditions;
    uint32_t nbinding_failure_conditions;
    int8_t binds_to_node;    /* -1 unset */
    int8_t allow_multi;      /* -1 unset */
    /* per-device node selection (slice perDeviceNodeSelection: true) */
    uint8_t ns_mode;         /* dg_nsmode; DG_NS_NONE when not per-device */
    uint32_t node_name;
    dg_nodesel node_selector;
    dg_nar *nars;
    uint32_t nnars;
} dg_device;

/* The resource.k8s.io version an object was written in (converted to v1). */
typedef enum dg_input_version {
    DG_INPUT_V1BETA1 = 1,
    DG_INPUT_V1BETA2 = 2,
    DG_INPUT_V1 = 3,
    DG_INPUT_V1ALPHA3 = 4, /* same shapes as v1beta1 (1.31/1.32 era) */
} dg_input_version;

typedef struct dg_slice {
    dg_meta meta;
    uint32_t driver, pool;
    int64_t generation, slice_count;
    uint8_t ns_mode;        /* dg_nsmode */
    uint32_t node_name;
    dg_nodesel node_selector;
    dg_device *devices;
    uint32_t ndevices;
    dg_counterset *countersets;
    uint32_t ncountersets;
    uint32_t partition_type_attr; /* FullyQualifiedName, 0 = unset */
    uint32_t *skip_node_ops;      /* skipNodeOperations values as written */
    uint32_t nskip_node_ops;
    uint8_t input_version;        /* dg_input_version (for messages) */
} dg_slice;

/* ---- DeviceClass ------------------------------------------------------- */

typedef struct dg_selector {
    uint32_t expr; /* CEL text, interned; 0 with has_cel=false = a selector without cel */
    bool has_cel;
} dg_selector;

typedef struct dg_opaque {
    uint32_t driver;
    uint32_t params; /* compact JSON text of `parameters` */
} dg_opaque;

typedef struct dg_class_config {
    dg_opaque opaque;
    bool has_opaque;
} dg_class_config;

typedef struct dg_class {
    dg_meta meta;
    dg_selector *selectors;
    uint32_t nselectors;
    dg_class_config *config;
    uint32_t nconfig;
    uint32_t extended_resource_name; /* 0 = unset */
} dg_class;

/* ---- ResourceClaim ------------------------------------------------------ */

typedef enum dg_amode {
    DG_AMODE_EXACT_COUNT = 0,
    DG_AMODE_ALL,
    DG_AMODE_UNKNOWN, /* kept so the allocator can report "unsupported count mode" */
} dg_amode;

typedef enum dg_tolop {
    DG_TOLOP_EQUAL = 0,
    DG_TOLOP_EXISTS,
    DG_TOLOP_UNKNOWN,
} dg_tolop;

typedef struct dg_toleration {
    uint32_t key, value;
    uint8_t op;             /* dg_tolop */
    uint32_t op_raw;        /* operator text as written (0 = defaulted) */
    uint8_t effect;         /* dg_effect; DG_EFFECT_NONE with effect_raw 0 = all */
    uint32_t effect_raw;    /* effect text as written, 0 = empty (matches all) */
    bool has_seconds;
    int64_t seconds;
} dg_toleration;

typedef struct dg_capreq {
    uint32_t key;  /* capacity name exactly as written (QualifiedName) */
    uint32_t domain, name; /* split like attributes (bare -> the request's driver is unknown: domain 0) */
    de_qty value;
} dg_capreq;

typedef struct dg_derived_attr {
    uint32_t name; /* FullyQualifiedName */
    uint32_t domain, id;
    uint32_t expr;
} dg_derived_attr;

/* One `exactly` request or one firstAvailable subrequest. */
typedef struct dg_exact {
    uint32_t name;        /* subrequest name; 0 for `exactly` */
    uint32_t class_name;
    dg_selector *selectors;
    uint32_t nselectors;
    uint8_t mode;         /* dg_amode */
    uint32_t mode_raw;    /* allocationMode text as written, 0 = defaulted */
    int64_t count;        /* defaulted to 1 for ExactCount */
    bool count_set;
    int8_t admin_access;  /* -1 unset */
    dg_toleration *tolerations;
    uint32_t ntolerations;
    bool has_capacity;    /* capacity: {...} present (even if empty) */
    dg_capreq *capacity;
    uint32_t ncapacity;
    dg_derived_attr *derived;
    uint32_t nderived;
} dg_exact;

typedef struct dg_request {
    uint32_t name;
    bool has_exactly;
    dg_exact exactly;
    dg_exact *subs; /* firstAvailable */
    uint32_t nsubs;
} dg_request;

typedef struct dg_constraint {
    uint32_t *requests; /* "req" or "req/sub"; empty = all */
    uint32_t nrequests;
    uint32_t match_attribute;    /* FullyQualifiedName, 0 = unset */
    uint32_t distinct_attribute; /* 0 = unset */
    uint32_t ma_domain, ma_id, da_domain, da_id; /* split names */
} dg_constraint;

typedef struct dg_claim_config {
    uint32_t *requests;
    uint32_t nrequests;
    dg_opaque opaque;
    bool has_opaque;
} dg_claim_config;

typedef struct dg_consumed {
    uint32_t key; /* capacity name as written in the result */
    de_qty value;
} dg_consumed;

/* one per allocated device, kept for as long as the claim is allocated:
 * fields ordered to pack (88 bytes) */
typedef struct dg_result {
    uint32_t request, driver, pool, device;
    dg_toleration *tolerations;
    uint32_t *binding_conditions;
    uint32_t *binding_failure_conditions;
    dg_consumed *consumed;
    uint32_t *skip_node_ops;
    uint32_t ntolerations;
    uint32_t nbinding_conditions;
    uint32_t nbinding_failure_conditions;
    uint32_t share_id; /* 0 = none */
    uint32_t nconsumed;
    uint32_t nskip_node_ops;
    int8_t admin_access; /* -1 unset */
    bool has_consumed;
} dg_result;

typedef enum dg_cfgsource {
    DG_CFG_FROM_CLASS = 0,
    DG_CFG_FROM_CLAIM,
} dg_cfgsource;

typedef struct dg_alloc_config {
    uint8_t source; /* dg_cfgsource */
    uint32_t *requests;
    uint32_t nrequests;
    dg_opaque opaque;
} dg_alloc_config;

typedef struct dg_allocation {
    dg_result *results;
    uint32_t nresults;
    dg_alloc_config *config;
    uint32_t nconfig;
    bool has_node_selector;
    dg_nodesel node_selector;
    int64_t allocation_time; /* unix seconds; 0 unset */
} dg_allocation;

typedef struct dg_consumer {
    uint32_t api_group, resource, name, uid;
} dg_consumer;

typedef struct dg_condition {
    uint32_t type, status, reason, message;
} dg_condition;

typedef struct dg_device_status {
    uint32_t driver, pool, device, share_id;
    dg_condition *conditions;
    uint32_t nconditions;
    uint32_t data; /* compact JSON text, 0 = none */
} dg_device_status;

typedef struct dg_claim_spec {
    dg_request *requests;
    uint32_t nrequests;
    dg_constraint *constraints;
    uint32_t nconstraints;
    dg_claim_config *config;
    uint32_t nconfig;
    uint32_t ident; /* interned words the allocator's compilation reads (dec_claim.c), 0 = none */
} dg_claim_spec;

typedef struct dg_claim {
    dg_meta meta;
    dg_claim_spec spec;
    bool allocated;
    dg_allocation allocation;
    dg_consumer *reserved_for;
    uint32_t nreserved_for;
    dg_device_status *devices;
    uint32_t ndevices;
} dg_claim;

typedef struct dg_claim_template {
    dg_meta meta;
    dg_kv *labels, *annotations; /* spec.metadata */
    uint32_t nlabels, nannotations;
    dg_claim_spec spec;
} dg_claim_template;

/* ---- DeviceTaintRule ---------------------------------------------------- */

typedef struct dg_taint_rule {
    dg_meta meta;
    bool has_selector;
    uint32_t driver, pool, device; /* 0 = field not set */
    dg_taint taint;
} dg_taint_rule;

/* ---- ResourcePoolStatusRequest (v1alpha3) ------------------------------- */

typedef struct dg_pool_status_request {
    dg_meta meta;
    uint32_t driver;
    uint32_t pool_name; /* 0 = all pools of the driver */
    int32_t limit;      /* defaulted to 100 */
    uint32_t default_partition_type_attr;
    bool has_status;    /* the controller already wrote a status */
} dg_pool_status_request;

/* ---- core v1 Node, Pod, Namespace -------------------------------------- */

typedef struct dg_resource_amount {
    uint32_t name; /* cpu, memory, pods, nvidia.com/gpu, ... */
    de_qty value;
} dg_resource_amount;

typedef struct dg_node_taint {
    uint32_t key, value, effect; /* effect text: NoSchedule, PreferNoSchedule, NoExecute */
} dg_node_taint;

typedef struct dg_node {
    dg_meta meta;
    dg_resource_amount *allocatable;
    uint32_t nallocatable;
    dg_node_taint *taints;
    uint32_t ntaints;
    bool unschedulable;
    uint32_t *declared_features; /* status.declaredFeatures (KEP-5328) */
    uint32_t ndeclared_features;
} dg_node;

typedef struct dg_pod_claim_ref {
    uint32_t name;
    uint32_t claim_name;    /* resourceClaimName, 0 = unset */
    uint32_t template_name; /* resourceClaimTemplateName, 0 = unset */
} dg_pod_claim_ref;

typedef struct dg_container_claim {
    uint32_t name, request;
} dg_container_claim;

typedef struct dg_container {
    uint32_t name;
    bool init;          /* in initContainers */
    bool sidecar;       /* init container with restartPolicy: Always */
    dg_resource_amount *requests, *limits;
    uint32_t nrequests, nlimits;
    dg_container_claim *claims;
    uint32_t nclaims;
} dg_container;

typedef struct dg_pod_toleration {
    uint32_t key, value, op, effect; /* texts; op 0 = Equal */
    bool has_seconds;
    int64_t seconds;
} dg_pod_toleration;

typedef struct dg_pod_claim_status {
    uint32_t name, claim_name; /* claim_name 0 = no claim needed */
} dg_pod_claim_status;

typedef struct dg_nar_overhead {
    uint32_t name;
    bool has_pod, has_ctr;
    de_qty per_pod, per_ctr;
} dg_nar_overhead;

/* status.nodeAllocatableResourceClaimStatuses[] (KEP-5517) */
typedef struct dg_pod_nar_status {
    uint32_t claim_name;
    uint32_t ncontainers;
    dg_resource_amount *mapping;
    uint32_t nmapping;
    dg_nar_overhead *overhead;
    uint32_t noverhead;
} dg_pod_nar_status;

typedef struct dg_pod {
    dg_meta meta;
    uint32_t node_name, scheduler_name;
    dg_kv *node_selector;
    uint32_t nnode_selector;
    dg_nodesel required_affinity; /* requiredDuringSchedulingIgnoredDuringExecution */
    bool has_required_affinity;
    dg_pod_toleration *tolerations;
    uint32_t ntolerations;
    dg_pod_claim_ref *claims;
    uint32_t nclaims;
    dg_container *containers; /* initContainers first, then containers */
    uint32_t ncontainers;
    dg_pod_claim_status *claim_statuses;
    uint32_t nclaim_statuses;
    uint32_t phase;
    bool preempt_never;       /* spec.preemptionPolicy: Never */
    dg_pod_nar_status *nar_statuses;
    uint32_t nnar_statuses;
    uint32_t group;           /* KEP-5729 podGroupName (counted); 0 = none */
} dg_pod;

typedef struct dg_namespace {
    dg_meta meta;
} dg_namespace;

#endif
