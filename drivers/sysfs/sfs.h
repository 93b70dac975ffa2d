/*
 * sfs.h - discovery of this machine's PCI devices from sysfs into the
 * ResourceSlices a DRA driver for them would publish.
 *
 * For every /sys/bus/pci/devices/<BDF> entry: vendor, device, class,
 * numa_node, the bound kernel driver, and the PCIe root complex, which is
 * the "pci<domain>:<bus>" component of the entry's resolved path under
 * /sys/devices (the same derivation as the upstream deviceattribute helper).
 * Devices become DRA devices named "pci-<domain>-<bus>-<dev>-<fn>" with the
 * standard attributes resource.kubernetes.io/pciBusID, .../pcieRoot and
 * .../numaNode (left out when the kernel reports -1 or no NUMA file), plus
 * vendorID, deviceID, class and kernelDriver in the driver's own domain.
 *
 * The sysfs root is configurable so specs can run against fake trees.
 * Entries whose name is not a PCI address are skipped; bridges (class 0x06)
 * are skipped unless a class prefix asks for them.
 */
#ifndef SFS_H
#define SFS_H

#include "../../engine/base/de.h"

#include <jansson.h>

#define SFS_MAX_CLASS_PREFIXES 16
#define SFS_MAX_DEVICES 8192
#define SFS_SLICE_DEVICES 128

typedef struct sfs_pci {
    unsigned dom, bus, dev, fn;
    char bdf[24];        /* "0000:1b:00.0" */
    unsigned vendor, device;
    unsigned class_code; /* 24-bit class code */
    int numa;            /* -1 when unknown */
    bool has_root;
    char root[32];       /* "pci0000:15" */
    char kdriver[64];    /* bound kernel driver, "" when unbound */
} sfs_pci;

/* Scan <root>/bus/pci/devices (root NULL = "/sys"). The array is sorted by
 * address; the caller frees it. */
de_rc sfs_scan(const char *root, sfs_pci **out, size_t *n, de_err *e);

typedef struct sfs_opts {
    const char *driver;  /* DRA driver name (DNS subdomain), required */
    const char *node;    /* node name; NULL = this host's name, lower-cased */
    const char *root;    /* sysfs root; NULL = "/sys" */
    const char *const *class_prefixes; /* "0x03", "0x0302", ...; none = all but bridges */
    size_t nclass_prefixes;
} sfs_opts;

typedef de_rc (*sfs_emit_fn)(void *ctx, json_t *obj, de_err *e);

/* Scan, filter and emit the pool's ResourceSlices (at most 128 devices each,
 * one pool named after the node, resourceSliceCount set).  Objects are
 * borrowed by the callback. */
de_rc sfs_discover(const sfs_opts *o, sfs_emit_fn fn, void *ctx, de_err *e);

/* "0x" followed by 1..6 hex digits. */
bool sfs_class_prefix_valid(const char *p);

#endif
