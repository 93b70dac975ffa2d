/*
 * sim_int.h - internals shared by the simulator's files: the per-node build
 * context, device and pool builders, and the shape table.
 *
 * Builders never fail half-way: jansson allocation failures abort through
 * de_xmalloc-style checks, and limit violations (which would be bugs in a
 * shape table) are recorded in the node context as DE_EINTERNAL and reported
 * when the pool is finished.
 */
#ifndef SIM_INT_H
#define SIM_INT_H

#include "sim.h"
#include "sim_rng.h"

/* API limits the builders respect (dra-model.md section 1.1). */
#define SIM_MAX_DEVICES 128
#define SIM_MAX_DEVICES_ADVANCED 64
#define SIM_MAX_ATTRS_CAPS 32
#define SIM_MAX_COUNTER_SETS 8
#define SIM_MAX_COUNTERS 32
#define SIM_MAX_CONSUMED_PER_SLICE 1024

/* Which DeviceClasses a shape needs. */
enum {
    SIM_CLS_NVIDIA = 1u << 0,    /* gpu.nvidia.com, mig.nvidia.com, vfio.gpu.nvidia.com */
    SIM_CLS_NVIDIA_CD = 1u << 1, /* compute-domain-*.nvidia.com */
    SIM_CLS_AMD = 1u << 2,       /* gpu.amd.com */
    SIM_CLS_DRANET = 1u << 3,    /* dranet.net */
    SIM_CLS_EFA = 1u << 4,       /* efa.networking.k8s.aws */
    SIM_CLS_CPU = 1u << 5,       /* dra.cpu */
};

typedef struct sim_node sim_node;

typedef struct sim_shape {
    sim_shape_info info;
    unsigned classes;
    const char *arch;         /* kubernetes.io/arch */
    const char *zone_prefix;  /* topology.kubernetes.io/zone prefix */
    uint32_t memory_gi;       /* node memory for Node.status */
    void (*build)(sim_node *n);
} sim_shape;

extern const sim_shape sim_shapes[];
extern const size_t sim_nshapes;

struct sim_node {
    const sim_cluster *c;
    const sim_shape *shape;
    uint32_t index;       /* in the cluster */
    uint32_t nth;         /* index among nodes of the same shape */
    const char *name;
    char uid[40];
    sim_rng rng;
    sim_emit_fn fn;
    void *ctx;
    de_err *e;
    de_rc rc;
};

/* ---- devices ------------------------------------------------------------- */

json_t *sim_dev(const char *name);
void sim_attr_str(json_t *dev, const char *key, const char *v);
void sim_attr_int(json_t *dev, const char *key, int64_t v);
void sim_attr_bool(json_t *dev, const char *key, bool v);
void sim_attr_ver(json_t *dev, const char *key, const char *v);
void sim_cap(json_t *dev, const char *key, const char *qty);
void sim_cap_int(json_t *dev, const char *key, int64_t v);
/* Add a consumesCounters entry; `counters` is stolen. */
void sim_consume(json_t *dev, const char *set, json_t *counters);

/* ---- pools --------------------------------------------------------------- */

typedef struct sim_pool {
    sim_node *n;
    const char *driver;
    json_t *sets;   /* counter sets */
    json_t *groups; /* array of arrays of devices; a group never straddles slices */
} sim_pool;

void sim_pool_init(sim_pool *p, sim_node *n, const char *driver);
/* Start a new group of devices that must stay in one slice. */
void sim_pool_group(sim_pool *p);
/* Add a device (stolen) to the current group. */
void sim_pool_add(sim_pool *p, json_t *dev);
/* Add a counter set (stolen). */
void sim_pool_counterset(sim_pool *p, json_t *set);
/* Split into slices, emit them, free the builder. */
void sim_pool_finish(sim_pool *p);

/* ---- helpers ------------------------------------------------------------- */

/* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" (prefix "GPU-", "MIG-" or ""). */
void sim_uuid(sim_rng *r, const char *prefix, char *out, size_t cap);
/* Lower-case hex digits from the stream. */
void sim_hex(sim_rng *r, char *out, size_t ndigits);
void sim_mac(sim_rng *r, const char *oui, char *out, size_t cap);
/* "0000:1b:00.0", "pci0000:15", "pci-0000-1b-00-0" */
void sim_bdf(char *out, size_t cap, unsigned dom, unsigned bus, unsigned dev, unsigned fn);
void sim_root(char *out, size_t cap, unsigned dom, unsigned bus);
void sim_pciname(char *out, size_t cap, unsigned dom, unsigned bus, unsigned dev, unsigned fn);
/* Pick index from weights (sum > 0). */
size_t sim_pick(sim_rng *r, const unsigned *weights, size_t n);
/* Record an internal error once. */
void sim_fail(sim_node *n, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- per-vendor builders (sim_nvidia.c, sim_shapes.c) --------------------- */

typedef struct sim_nv_gpu {   /* one physical NVIDIA GPU on a node */
    unsigned minor;
    unsigned dom, bus, dev, fn; /* its BDF */
    unsigned root_dom, root_bus;
    int numa;                 /* -1 = unknown */
} sim_nv_gpu;

typedef enum sim_nv_model {
    SIM_NV_H100_80 = 0,
    SIM_NV_H200_141,
    SIM_NV_A100_40,
    SIM_NV_GB200,
    SIM_NV_MODEL_COUNT
} sim_nv_model;

typedef enum sim_nv_mode {
    SIM_NV_FULL = 0,  /* whole GPUs only */
    SIM_NV_DYNMIG,    /* whole GPUs + every MIG placement, shared counters */
    SIM_NV_VFIO,      /* passthrough devices for VMs */
} sim_nv_mode;

typedef struct sim_nv_opts {
    sim_nv_model model;
    sim_nv_mode mode;
    bool numa_attr;           /* newest driver: resource.kubernetes.io/numaNode */
    const char *addressing;   /* "HMM", "ATS", or NULL */
    bool shuffle;             /* list devices out of index order (EKS dump) */
} sim_nv_opts;

void sim_nvidia_gpus(sim_node *n, const sim_nv_opts *o, const sim_nv_gpu *gpus, size_t ngpus);
void sim_nvidia_compute_domain(sim_node *n);
json_t *sim_nvidia_classes(void); /* array of DeviceClass objects */

#endif
