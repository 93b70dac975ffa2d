/*
 * gates.h - Kubernetes feature gates as kube-scheduler and
 * kube-controller-manager 1.37 define them (pkg/features/kube_features.go at
 * v1.37.2): every DRA-related gate with its 1.37 default, stage, lock and
 * dependencies, parsed from the kube-style flag value "Name=true,Other=false"
 * the way component-base's featuregate does it:
 *   - values as strconv.ParseBool reads them (1, t, T, TRUE, true, True, 0, f, ...);
 *   - an unknown name is refused ("unrecognized feature gate: X");
 *   - a gate locked to its default refuses the other value ("cannot set
 *     feature gate X to false, feature is locked to true");
 *   - after the values are applied, an enabled gate whose dependencies are
 *     disabled is refused ("X is enabled, but depends on features that are
 *     disabled: [A B]").
 * Several refusals of one kind are joined as "[first, second]", in the
 * order of the flag value (component-base's order is its map's).
 *
 * Library mode (de_gates_parse_library): the allocator's own unit tests, and
 * the conformance vectors translated from them, set the allocator's feature
 * struct directly, bypassing locks and dependencies (e.g. AdminAccess off,
 * which no 1.37 component can do).  `draengine allocate` and the Lua module
 * keep that contract: locks and dependencies become warnings there.
 */
#ifndef DE_GATES_H
#define DE_GATES_H

#include "de.h"

typedef enum de_gate {
    DE_GATE_DYNAMIC_RESOURCE_ALLOCATION = 0, /* GA, locked */
    DE_GATE_ADMIN_ACCESS,             /* DRAAdminAccess, GA, locked */
    DE_GATE_PRIORITIZED_LIST,         /* DRAPrioritizedList, GA, locked */
    DE_GATE_PARTITIONABLE_DEVICES,    /* DRAPartitionableDevices, beta on */
    DE_GATE_PARTITIONABLE_DEVICES_TYPE, /* DRAPartitionableDevicesType, alpha off */
    DE_GATE_DEVICE_TAINTS,            /* DRADeviceTaints, GA (not locked in 1.37) */
    DE_GATE_DEVICE_TAINT_RULES,       /* DRADeviceTaintRules, GA (not locked in 1.37) */
    DE_GATE_CONSUMABLE_CAPACITY,      /* DRAConsumableCapacity, beta on */
    DE_GATE_FRACTIONAL_CAPACITY_RANGE,/* DRAFractionalCapacityRange, beta on */
    DE_GATE_DEVICE_BINDING_CONDITIONS,/* DRADeviceBindingConditions, beta on */
    DE_GATE_RESOURCE_CLAIM_DEVICE_STATUS, /* DRAResourceClaimDeviceStatus, GA, locked */
    DE_GATE_EXTENDED_RESOURCE,        /* DRAExtendedResource, GA, locked */
    DE_GATE_LIST_TYPE_ATTRIBUTES,     /* DRAListTypeAttributes, alpha off */
    DE_GATE_DERIVED_ATTRIBUTES,       /* DRADerivedAttributes, alpha off */
    DE_GATE_COMPATIBILITY_GROUPS,     /* DRADeviceCompatibilityGroups, alpha off */
    DE_GATE_OPTIONAL_NODE_OPERATIONS, /* DRAOptionalNodeOperations, alpha off */
    DE_GATE_NODE_ALLOCATABLE_RESOURCES, /* DRANodeAllocatableResources, alpha off */
    DE_GATE_RESOURCE_POOL_STATUS,     /* DRAResourcePoolStatus, alpha off */
    DE_GATE_WORKLOAD_RESOURCE_CLAIMS, /* DRAWorkloadResourceClaims, beta off */
    DE_GATE_GENERIC_WORKLOAD,         /* GenericWorkload, beta off */
    DE_GATE_SCHEDULER_FILTER_TIMEOUT, /* DRASchedulerFilterTimeout, beta on */
    DE_GATE_PRE_QUEUEING_HINTS,       /* SchedulerPreQueueingHints, alpha off */
    DE_GATE_POP_FROM_BACKOFF_Q,       /* SchedulerPopFromBackoffQ, beta on */
    DE_GATE_NODE_DECLARED_FEATURES,   /* NodeDeclaredFeatures, GA, locked */
    DE_GATE_COUNT
} de_gate;

typedef enum de_gate_stage {
    DE_STAGE_ALPHA = 0,
    DE_STAGE_BETA,
    DE_STAGE_GA,
} de_gate_stage;

typedef struct de_gates {
    bool on[DE_GATE_COUNT];
} de_gates;

/* The 1.37 defaults. */
void de_gates_default(de_gates *g);
/* Apply "A=true,B=false" on top of *g as component-base does; on any
 * refusal *g is left unchanged and e says why (DE_EINVAL). */
de_rc de_gates_parse(de_gates *g, const char *spec, de_err *e);
/* The same, but a locked gate set to its other value, or an enabled gate
 * whose dependencies are off, is applied; what component-base would refuse
 * is written to warn (cap bytes, "" when nothing) instead.  Syntax errors
 * and unknown names are still refused. */
de_rc de_gates_parse_library(de_gates *g, const char *spec, char *warn, size_t cap, de_err *e);

const char *de_gate_name(de_gate gate);
de_gate_stage de_gate_stage_of(de_gate gate);
const char *de_gate_stage_name(de_gate gate); /* "Alpha", "Beta", "GA" */
bool de_gate_default(de_gate gate);
bool de_gate_locked(de_gate gate);
/* The gates `gate` depends on: up to DE_GATE_MAX_DEPS, returns the count. */
#define DE_GATE_MAX_DEPS 3
uint32_t de_gate_deps(de_gate gate, de_gate out[DE_GATE_MAX_DEPS]);
/* DE_GATE_COUNT when unknown */
de_gate de_gate_lookup(const char *name, size_t len);

#endif
