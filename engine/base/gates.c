/*
 * gates.c - the feature gate table and component-base's parsing rules
 * (see gates.h).
 */
#include "buf.h"
#include "gates.h"

#include <stdio.h>
#include <string.h>

#define G(x) DE_GATE_##x
#define NO_DEP DE_GATE_COUNT

/* Name, 1.37 default, stage, locked, dependencies (kube_features.go's
 * defaultKubernetesFeatureGateDependencies, sorted by name). */
static const struct {
    const char *name;
    bool dflt;
    uint8_t stage;
    bool locked;
    de_gate deps[DE_GATE_MAX_DEPS];
} table[DE_GATE_COUNT] = {
    [G(DYNAMIC_RESOURCE_ALLOCATION)] = {"DynamicResourceAllocation", true, DE_STAGE_GA, true, {NO_DEP, NO_DEP, NO_DEP}},
    [G(ADMIN_ACCESS)] = {"DRAAdminAccess", true, DE_STAGE_GA, true, {G(DYNAMIC_RESOURCE_ALLOCATION), NO_DEP, NO_DEP}},
    [G(PRIORITIZED_LIST)] = {"DRAPrioritizedList", true, DE_STAGE_GA, true, {G(DYNAMIC_RESOURCE_ALLOCATION), NO_DEP, NO_DEP}},
    [G(PARTITIONABLE_DEVICES)] = {"DRAPartitionableDevices", true, DE_STAGE_BETA, false, {G(DYNAMIC_RESOURCE_ALLOCATION), NO_DEP, NO_DEP}},
    [G(PARTITIONABLE_DEVICES_TYPE)] = {"DRAPartitionableDevicesType", false, DE_STAGE_ALPHA, false,
                                       {G(PARTITIONABLE_DEVICES), G(RESOURCE_POOL_STATUS), G(DYNAMIC_RESOURCE_ALLOCATION)}},
    [G(DEVICE_TAINTS)] = {"DRADeviceTaints", true, DE_STAGE_GA, false, {G(DYNAMIC_RESOURCE_ALLOCATION), NO_DEP, NO_DEP}},
    [G(DEVICE_TAINT_RULES)] = {"DRADeviceTaintRules", true, DE_STAGE_GA, false, {G(DEVICE_TAINTS), NO_DEP, NO_DEP}},
    [G(CONSUMABLE_CAPACITY)] = {"DRAConsumableCapacity", true, DE_STAGE_BETA, false, {G(DYNAMIC_RESOURCE_ALLOCATION), NO_DEP, NO_DEP}},
    [G(FRACTIONAL_CAPACITY_RANGE)] = {"DRAFractionalCapacityRange", true, DE_STAGE_BETA, false, {G(CONSUMABLE_CAPACITY), NO_DEP, NO_DEP}},
    [G(DEVICE_BINDING_CONDITIONS)] = {"DRADeviceBindingConditions", true, DE_STAGE_BETA, false,
                                      {G(RESOURCE_CLAIM_DEVICE_STATUS), G(DYNAMIC_RESOURCE_ALLOCATION), NO_DEP}},
    [G(RESOURCE_CLAIM_DEVICE_STATUS)] = {"DRAResourceClaimDeviceStatus", true, DE_STAGE_GA, true, {NO_DEP, NO_DEP, NO_DEP}},
    [G(EXTENDED_RESOURCE)] = {"DRAExtendedResource", true, DE_STAGE_GA, true, {G(DYNAMIC_RESOURCE_ALLOCATION), NO_DEP, NO_DEP}},
    [G(LIST_TYPE_ATTRIBUTES)] = {"DRAListTypeAttributes", false, DE_STAGE_ALPHA, false, {G(DYNAMIC_RESOURCE_ALLOCATION), NO_DEP, NO_DEP}},
    [G(DERIVED_ATTRIBUTES)] = {"DRADerivedAttributes", false, DE_STAGE_ALPHA, false, {G(DYNAMIC_RESOURCE_ALLOCATION), NO_DEP, NO_DEP}},
    [G(COMPATIBILITY_GROUPS)] = {"DRADeviceCompatibilityGroups", false, DE_STAGE_ALPHA, false,
                                 {G(PARTITIONABLE_DEVICES), G(DYNAMIC_RESOURCE_ALLOCATION), NO_DEP}},
    [G(OPTIONAL_NODE_OPERATIONS)] = {"DRAOptionalNodeOperations", false, DE_STAGE_ALPHA, false,
                                     {G(DYNAMIC_RESOURCE_ALLOCATION), G(NODE_DECLARED_FEATURES), NO_DEP}},
    [G(NODE_ALLOCATABLE_RESOURCES)] = {"DRANodeAllocatableResources", false, DE_STAGE_ALPHA, false,
                                       {G(DYNAMIC_RESOURCE_ALLOCATION), NO_DEP, NO_DEP}},
    [G(RESOURCE_POOL_STATUS)] = {"DRAResourcePoolStatus", false, DE_STAGE_ALPHA, false, {G(DYNAMIC_RESOURCE_ALLOCATION), NO_DEP, NO_DEP}},
    [G(WORKLOAD_RESOURCE_CLAIMS)] = {"DRAWorkloadResourceClaims", false, DE_STAGE_BETA, false,
                                     {G(DYNAMIC_RESOURCE_ALLOCATION), G(GENERIC_WORKLOAD), NO_DEP}},
    [G(GENERIC_WORKLOAD)] = {"GenericWorkload", false, DE_STAGE_BETA, false, {NO_DEP, NO_DEP, NO_DEP}},
    [G(SCHEDULER_FILTER_TIMEOUT)] = {"DRASchedulerFilterTimeout", true, DE_STAGE_BETA, false,
                                     {G(DYNAMIC_RESOURCE_ALLOCATION), NO_DEP, NO_DEP}},
    [G(PRE_QUEUEING_HINTS)] = {"SchedulerPreQueueingHints", false, DE_STAGE_ALPHA, false, {NO_DEP, NO_DEP, NO_DEP}},
    [G(POP_FROM_BACKOFF_Q)] = {"SchedulerPopFromBackoffQ", true, DE_STAGE_BETA, false, {NO_DEP, NO_DEP, NO_DEP}},
    [G(NODE_DECLARED_FEATURES)] = {"NodeDeclaredFeatures", true, DE_STAGE_GA, true, {NO_DEP, NO_DEP, NO_DEP}},
};

void de_gates_default(de_gates *g)
{
    for (int i = 0; i < DE_GATE_COUNT; i++)
        g->on[i] = table[i].dflt;
}

const char *de_gate_name(de_gate gate) { return (unsigned)gate < DE_GATE_COUNT ? table[gate].name : "?"; }
de_gate_stage de_gate_stage_of(de_gate gate) { return (unsigned)gate < DE_GATE_COUNT ? table[gate].stage : DE_STAGE_ALPHA; }
bool de_gate_default(de_gate gate) { return (unsigned)gate < DE_GATE_COUNT && table[gate].dflt; }
bool de_gate_locked(de_gate gate) { return (unsigned)gate < DE_GATE_COUNT && table[gate].locked; }

const char *de_gate_stage_name(de_gate gate)
{
    static const char *const names[] = {"Alpha", "Beta", "GA"};
    return names[de_gate_stage_of(gate)];
}

uint32_t de_gate_deps(de_gate gate, de_gate out[DE_GATE_MAX_DEPS])
{
    uint32_t n = 0;
    for (int i = 0; (unsigned)gate < DE_GATE_COUNT && i < DE_GATE_MAX_DEPS; i++)
        if (table[gate].deps[i] != NO_DEP)
            out[n++] = table[gate].deps[i];
    return n;
}

de_gate de_gate_lookup(const char *name, size_t len)
{
    for (int i = 0; i < DE_GATE_COUNT; i++)
        if (strlen(table[i].name) == len && memcmp(table[i].name, name, len) == 0)
            return (de_gate)i;
    return DE_GATE_COUNT;
}

/* strings.TrimSpace for ASCII */
static void trim(const char **s, size_t *n)
{
    static const char ws[] = " \t\n\r\v\f";
    while (*n && strchr(ws, **s)) {
        (*s)++;
        (*n)--;
    }
    while (*n && strchr(ws, (*s)[*n - 1]))
        (*n)--;
}

/* strconv.ParseBool */
static int parse_bool(const char *v, size_t n)
{
    static const char *const yes[] = {"1", "t", "T", "TRUE", "true", "True"};
    static const char *const no[] = {"0", "f", "F", "FALSE", "false", "False"};
    for (size_t i = 0; i < DE_ARRAY_LEN(yes); i++) {
        if (strlen(yes[i]) == n && !memcmp(yes[i], v, n))
            return 1;
        if (strlen(no[i]) == n && !memcmp(no[i], v, n))
            return 0;
    }
    return -1;
}

/* Several errors read as utilerrors' aggregate: one alone, or "[a, b]". */
static void join_add(de_buf *b, uint32_t *count, const char *msg)
{
    de_buf_printf(b, "%s%s", (*count)++ ? ", " : "", msg);
}

static const char *join_text(de_buf *b, uint32_t count, de_buf *out)
{
    de_buf_reset(out);
    de_buf_printf(out, count > 1 ? "[%s]" : "%s", de_buf_str(b));
    return de_buf_str(out);
}

/* The shared parser: library mode turns lock and dependency refusals into
 * warnings (warn may be NULL in strict mode). */
static de_rc parse(de_gates *g, const char *spec, bool library, char *warn, size_t cap, de_err *e)
{
    if (warn && cap)
        warn[0] = 0;
    int8_t val[DE_GATE_COUNT];
    uint32_t order[DE_GATE_COUNT], norder = 0;
    memset(val, -1, sizeof val);
    /* 1. syntax, item by item (Set) */
    for (const char *p = spec; p && *p;) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        const char *item = p;
        p = end ? end + 1 : p + n;
        if (!n)
            continue;
        const char *eq = memchr(item, '=', n);
        const char *k = item;
        size_t kn = eq ? (size_t)(eq - item) : n;
        trim(&k, &kn);
        if (!eq)
            return de_errf(e, DE_EINVAL, "missing bool value for %.*s", (int)kn, k);
        const char *v = eq + 1;
        size_t vn = n - (size_t)(eq - item) - 1;
        trim(&v, &vn);
        int b = parse_bool(v, vn);
        if (b < 0)
            return de_errf(e, DE_EINVAL, "invalid value of %.*s=%.*s, err: strconv.ParseBool: parsing \"%.*s\": invalid syntax",
                           (int)kn, k, (int)vn, v, (int)vn, v);
        /* 2. known names (SetFromMap: the first unknown one ends it) */
        de_gate gate = de_gate_lookup(k, kn);
        if (gate == DE_GATE_COUNT)
            return de_errf(e, DE_EINVAL, "unrecognized feature gate: %.*s", (int)kn, k);
        if (val[gate] < 0)
            order[norder++] = gate;
        val[gate] = (int8_t)b;
    }
    de_buf errs, msg, warns;
    de_buf_init(&errs, 1024);
    de_buf_init(&msg, 1024);
    de_buf_init(&warns, 1024);
    uint32_t nerr = 0, nwarn = 0;
    /* 3. locks */
    for (uint32_t i = 0; i < norder; i++) {
        de_gate gate = (de_gate)order[i];
        if (!table[gate].locked || (bool)val[gate] == table[gate].dflt)
            continue;
        de_buf_reset(&msg);
        de_buf_printf(&msg, "cannot set feature gate %s to %s, feature is locked to %s", table[gate].name,
                      val[gate] ? "true" : "false", table[gate].dflt ? "true" : "false");
        if (library)
            join_add(&warns, &nwarn, de_buf_str(&msg));
        else
            join_add(&errs, &nerr, de_buf_str(&msg));
    }
    de_rc rc = DE_OK;
    if (nerr) {
        rc = de_errf(e, DE_EINVAL, "%s", join_text(&errs, nerr, &msg));
        goto out;
    }
    de_gates next = *g;
    for (uint32_t i = 0; i < norder; i++)
        next.on[order[i]] = val[order[i]];
    /* 4. dependencies of every enabled gate, in table order */
    for (int f = 0; f < DE_GATE_COUNT; f++) {
        if (!next.on[f])
            continue;
        de_buf off;
        de_buf_init(&off, 256);
        for (int d = 0; d < DE_GATE_MAX_DEPS; d++) {
            de_gate dep = table[f].deps[d];
            if (dep != NO_DEP && !next.on[dep])
                de_buf_printf(&off, "%s%s", off.len ? " " : "", table[dep].name);
        }
        if (off.len) {
            de_buf_reset(&msg);
            de_buf_printf(&msg, "%s is enabled, but depends on features that are disabled: [%s]", table[f].name,
                          de_buf_str(&off));
            if (library)
                join_add(&warns, &nwarn, de_buf_str(&msg));
            else
                join_add(&errs, &nerr, de_buf_str(&msg));
        }
        de_buf_free(&off);
    }
    if (nerr) {
        rc = de_errf(e, DE_EINVAL, "%s", join_text(&errs, nerr, &msg));
        goto out;
    }
    *g = next;
    if (nwarn && warn && cap)
        snprintf(warn, cap, "%s", join_text(&warns, nwarn, &msg));
out:
    de_buf_free(&errs);
    de_buf_free(&msg);
    de_buf_free(&warns);
    return rc;
}

de_rc de_gates_parse(de_gates *g, const char *spec, de_err *e) { return parse(g, spec, false, NULL, 0, e); }

de_rc de_gates_parse_library(de_gates *g, const char *spec, char *warn, size_t cap, de_err *e)
{
    return parse(g, spec, true, warn, cap, e);
}
