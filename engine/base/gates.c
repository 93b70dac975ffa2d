/*
 * gates.c - feature gate table.
 */
#include "gates.h"

#include <string.h>
#include <strings.h>

static const struct {
    const char *name;
    bool dflt;
} table[DE_GATE_COUNT] = {
    [DE_GATE_DYNAMIC_RESOURCE_ALLOCATION] = {"DynamicResourceAllocation", true},
    [DE_GATE_ADMIN_ACCESS] = {"DRAAdminAccess", true},
    [DE_GATE_PRIORITIZED_LIST] = {"DRAPrioritizedList", true},
    [DE_GATE_PARTITIONABLE_DEVICES] = {"DRAPartitionableDevices", true},
    [DE_GATE_PARTITIONABLE_DEVICES_TYPE] = {"DRAPartitionableDevicesType", false},
    [DE_GATE_DEVICE_TAINTS] = {"DRADeviceTaints", true},
    [DE_GATE_DEVICE_TAINT_RULES] = {"DRADeviceTaintRules", true},
    [DE_GATE_CONSUMABLE_CAPACITY] = {"DRAConsumableCapacity", true},
    [DE_GATE_FRACTIONAL_CAPACITY_RANGE] = {"DRAFractionalCapacityRange", true},
    [DE_GATE_DEVICE_BINDING_CONDITIONS] = {"DRADeviceBindingConditions", true},
    [DE_GATE_RESOURCE_CLAIM_DEVICE_STATUS] = {"DRAResourceClaimDeviceStatus", true},
    [DE_GATE_EXTENDED_RESOURCE] = {"DRAExtendedResource", true},
    [DE_GATE_LIST_TYPE_ATTRIBUTES] = {"DRAListTypeAttributes", false},
    [DE_GATE_DERIVED_ATTRIBUTES] = {"DRADerivedAttributes", false},
    [DE_GATE_COMPATIBILITY_GROUPS] = {"DRADeviceCompatibilityGroups", false},
    [DE_GATE_OPTIONAL_NODE_OPERATIONS] = {"DRAOptionalNodeOperations", false},
    [DE_GATE_NODE_ALLOCATABLE_RESOURCES] = {"DRANodeAllocatableResources", false},
    [DE_GATE_RESOURCE_POOL_STATUS] = {"DRAResourcePoolStatus", false},
    [DE_GATE_WORKLOAD_RESOURCE_CLAIMS] = {"DRAWorkloadResourceClaims", false},
    [DE_GATE_GENERIC_WORKLOAD] = {"GenericWorkload", false},
    [DE_GATE_SCHEDULER_FILTER_TIMEOUT] = {"DRASchedulerFilterTimeout", true},
    [DE_GATE_PRE_QUEUEING_HINTS] = {"SchedulerPreQueueingHints", false},
};

void de_gates_default(de_gates *g)
{
    for (int i = 0; i < DE_GATE_COUNT; i++)
        g->on[i] = table[i].dflt;
}

const char *de_gate_name(de_gate gate)
{
    return (unsigned)gate < DE_GATE_COUNT ? table[gate].name : "?";
}

de_gate de_gate_lookup(const char *name, size_t len)
{
    for (int i = 0; i < DE_GATE_COUNT; i++)
        if (strlen(table[i].name) == len && memcmp(table[i].name, name, len) == 0)
            return (de_gate)i;
    return DE_GATE_COUNT;
}

static bool trim(const char **s, size_t *n)
{
    while (*n && (**s == ' ' || **s == '\t')) {
        (*s)++;
        (*n)--;
    }
    while (*n && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t'))
        (*n)--;
    return *n > 0;
}

de_rc de_gates_parse(de_gates *g, const char *spec, de_err *e)
{
    const char *p = spec;
    while (*p) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        const char *item = p;
        p = end ? end + 1 : p + n;
        if (!trim(&item, &n))
            continue;
        const char *eq = memchr(item, '=', n);
        if (!eq)
            return de_errf(e, DE_EINVAL, "missing bool value for %.*s", (int)n, item);
        const char *k = item, *v = eq + 1;
        size_t kn = (size_t)(eq - item), vn = n - kn - 1;
        trim(&k, &kn);
        trim(&v, &vn);
        de_gate gate = de_gate_lookup(k, kn);
        if (gate == DE_GATE_COUNT)
            return de_errf(e, DE_EINVAL, "unrecognized feature gate: %.*s", (int)kn, k);
        if (vn == 4 && strncasecmp(v, "true", 4) == 0)
            g->on[gate] = true;
        else if (vn == 5 && strncasecmp(v, "false", 5) == 0)
            g->on[gate] = false;
        else
            return de_errf(e, DE_EINVAL, "invalid value of %.*s=%.*s, err: invalid syntax",
                           (int)kn, k, (int)vn, v);
    }
    return DE_OK;
}
