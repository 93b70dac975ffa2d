/*
 * gates.h - Kubernetes feature gates with their 1.37 defaults (GA and
 * default-on beta gates on, alpha gates off), parsed from the kube-style
 * flag value "Name=true,Other=false".  Unknown names are refused, as
 * component-base does ("unrecognized feature gate: X").
 */
#ifndef DE_GATES_H
#define DE_GATES_H

#include "de.h"

typedef enum de_gate {
    DE_GATE_DYNAMIC_RESOURCE_ALLOCATION = 0,
    DE_GATE_ADMIN_ACCESS,             /* DRAAdminAccess, GA */
    DE_GATE_PRIORITIZED_LIST,         /* DRAPrioritizedList, GA */
    DE_GATE_PARTITIONABLE_DEVICES,    /* DRAPartitionableDevices, beta on */
    DE_GATE_PARTITIONABLE_DEVICES_TYPE, /* DRAPartitionableDevicesType, alpha off */
    DE_GATE_DEVICE_TAINTS,            /* DRADeviceTaints, GA */
    DE_GATE_DEVICE_TAINT_RULES,       /* DRADeviceTaintRules, GA */
    DE_GATE_CONSUMABLE_CAPACITY,      /* DRAConsumableCapacity, beta on */
    DE_GATE_FRACTIONAL_CAPACITY_RANGE,/* DRAFractionalCapacityRange, beta on */
    DE_GATE_DEVICE_BINDING_CONDITIONS,/* DRADeviceBindingConditions, beta on */
    DE_GATE_RESOURCE_CLAIM_DEVICE_STATUS, /* DRAResourceClaimDeviceStatus, GA */
    DE_GATE_EXTENDED_RESOURCE,        /* DRAExtendedResource, GA */
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
    DE_GATE_COUNT
} de_gate;

typedef struct de_gates {
    bool on[DE_GATE_COUNT];
} de_gates;

/* The 1.37 defaults. */
void de_gates_default(de_gates *g);
/* Apply "A=true,B=false" on top of *g. */
de_rc de_gates_parse(de_gates *g, const char *spec, de_err *e);
const char *de_gate_name(de_gate gate);
/* DE_GATE_COUNT when unknown */
de_gate de_gate_lookup(const char *name, size_t len);

#endif
