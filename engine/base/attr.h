/*
 * attr.h - the typed device view shared by the device graph, CEL, the
 * allocator and the policy host.
 *
 * A device's attributes and capacities are stored by the graph in exactly
 * these layouts, so handing a device to CEL or to a Lua policy is handing it
 * pointers, never a copy.  Names are interned (see intern.h):
 *   - `domain` is the attribute domain; a name written without a domain
 *     ("model") is filed under the driver's name, as Kubernetes does, and
 *     `bare` remembers how it was written;
 *   - `name` is the ID part after the '/'.
 * String and version values are interned text ids.  Versions are validated
 * when a slice is decoded; consumers parse them with de_semver_parse on use.
 *
 * Derived attributes (from Lua policies) live in a second array so the
 * driver-published ones are never rewritten; lookups consult the derived
 * array first, exactly like KEP-6080's shadowing rule.
 */
#ifndef DE_ATTR_H
#define DE_ATTR_H

#include "de.h"
#include "quantity.h"

typedef enum de_vkind {
    DE_V_NONE = 0, /* no value set (invalid in the API; kept so errors can name it) */
    DE_V_INT,
    DE_V_BOOL,
    DE_V_STRING,
    DE_V_VERSION,
    DE_V_INTS,
    DE_V_BOOLS,
    DE_V_STRINGS,
    DE_V_VERSIONS,
} de_vkind;

static inline bool de_vkind_is_list(int k) { return k >= DE_V_INTS; }
/* The scalar kind of a list kind (DE_V_INTS -> DE_V_INT), or k itself. */
static inline int de_vkind_scalar(int k) { return k >= DE_V_INTS ? k - 4 : k; }

typedef struct de_attrval {
    uint8_t kind; /* de_vkind */
    uint32_t n;   /* list length; 1 for a scalar */
    union {
        int64_t i;
        bool b;
        uint32_t s;            /* string / version: interned text */
        const int64_t *ints;
        const bool *bools;
        const uint32_t *strs;  /* strings / versions: interned texts */
    } u;
} de_attrval;

/* Bytes of a list value's payload (0 for a scalar). */
static inline size_t de_attrval_list_bytes(const de_attrval *v)
{
    switch (v->kind) {
    case DE_V_INTS: return v->n * sizeof(int64_t);
    case DE_V_BOOLS: return v->n * sizeof(bool);
    case DE_V_STRINGS:
    case DE_V_VERSIONS: return v->n * sizeof(uint32_t);
    default: return 0;
    }
}

typedef struct de_attr {
    uint32_t domain; /* interned domain (driver name for bare names) */
    uint32_t name;   /* interned ID */
    uint8_t bare;    /* written without a domain */
    de_attrval v;
} de_attr;

typedef struct de_cap {
    uint32_t domain;
    uint32_t name;
    uint8_t bare;
    de_qty value;
} de_cap;

/* What CEL and policies see of one device. */
typedef struct de_devview {
    uint32_t id;        /* graph-wide device id (memo key) */
    uint32_t gen;       /* bumped whenever the device or its derived facts change */
    uint32_t driver;    /* interned driver name */
    uint32_t pool;      /* interned pool name */
    uint32_t name;      /* interned device name */
    uint32_t node;      /* interned node name when node-local, else 0 */
    const de_attr *attrs;
    uint32_t nattrs;
    const de_attr *derived; /* policy-derived attributes (may be NULL) */
    uint32_t nderived;
    const de_cap *caps;
    uint32_t ncaps;
    int8_t allow_multi; /* -1 unset, 0 false, 1 true */
} de_devview;

/* Look up an attribute the way constraints do: exact (domain, name); derived
 * attributes first.  Returns NULL when absent. */
const de_attr *de_devview_attr(const de_devview *d, uint32_t domain, uint32_t name);
const de_cap *de_devview_cap(const de_devview *d, uint32_t domain, uint32_t name);

#endif
