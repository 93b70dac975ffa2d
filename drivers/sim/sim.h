/*
 * sim.h - synthetic clusters modelled on real hardware.
 *
 * A cluster is a list of nodes, each of one "shape" (dgx-h100, aws-p5,
 * mi300x-dpx, gb200-tray, cpu-2socket, ...).  Each shape publishes what the
 * real DRA drivers publish on that hardware (corpus/hardware-topologies.md):
 * the same driver names, device names, attribute keys and value types
 * (including their inconsistencies: `numa` vs `numaNode`, bare vs qualified
 * keys), capacities, shared counters for partitionable MIG devices, and the
 * DeviceClasses their Helm charts ship.  Every object respects the API
 * limits (devices per slice, attributes per device, counters), splitting a
 * pool into several slices with a correct resourceSliceCount when needed.
 *
 * Determinism: the output is a pure function of (shape mix, node count,
 * seed).  Each node draws from its own PRNG stream derived from (seed, node
 * index), so a node's UUIDs do not depend on how many nodes precede it.
 *
 * Objects are handed to a callback one at a time (json_t, borrowed for the
 * duration of the call), so a 10,000-node cluster never exists as one tree:
 * the CLI prints them, the run loop feeds them to dg_apply.
 */
#ifndef SIM_H
#define SIM_H

#include "../../engine/base/de.h"

#include <jansson.h>

typedef struct sim_cluster sim_cluster;

/* What a shape is, for listings, reports and workload generation. */
typedef struct sim_shape_info {
    const char *name;          /* "dgx-h100" */
    const char *summary;       /* one line for --list-shapes */
    const char *instance_type; /* node.kubernetes.io/instance-type label */
    const char *vendor;        /* accelerator vendor: "nvidia", "amd" or "none" */
    const char *accelerator;   /* product name as published, "" for none */
    uint32_t gpus;             /* physical accelerators */
    uint32_t nics;             /* RDMA-capable NIC ports published by dra.net */
    uint32_t numa_nodes;
    uint32_t cpus;             /* logical CPUs */
    bool mig;                  /* publishes partitionable MIG devices */
} sim_shape_info;

size_t sim_shape_count(void);
const sim_shape_info *sim_shape_at(size_t i);
const sim_shape_info *sim_shape_find(const char *name);

/* The mix used when none is given: a few of every shape, in realistic
 * proportions (weights sum to SIM_DEFAULT_MIX_NODES). */
extern const char *const sim_default_mix;
#define SIM_DEFAULT_MIX_NODES 32

typedef struct sim_opts {
    uint64_t seed;
    /* "NAME[:WEIGHT],..." (several may be joined with ','); NULL = default mix. */
    const char *mix;
    /* Total nodes, spread over the mix in proportion to the weights (largest
     * remainder, ties to the earlier entry); 0 = the sum of the weights. */
    uint32_t nodes;
    bool no_classes; /* do not emit DeviceClasses */
    bool no_nodes;   /* do not emit core v1 Node objects */
} sim_opts;

/* Upper bound on nodes in one cluster (keeps a typo from eating the disk). */
#define SIM_MAX_NODES 100000u

sim_cluster *sim_new(const sim_opts *o, de_err *e);
void sim_free(sim_cluster *c);

uint32_t sim_node_count(const sim_cluster *c);
const char *sim_node_name(const sim_cluster *c, uint32_t i);
const sim_shape_info *sim_node_shape(const sim_cluster *c, uint32_t i);
uint64_t sim_seed(const sim_cluster *c);

/* Receives each object; the object is borrowed (json_incref to keep it).
 * A non-OK return stops the generation and is passed back. */
typedef de_rc (*sim_emit_fn)(void *ctx, json_t *obj, de_err *e);

/* The DeviceClasses for the drivers present in the cluster, in a fixed order. */
de_rc sim_emit_classes(const sim_cluster *c, sim_emit_fn fn, void *ctx, de_err *e);
/* One node: its Node object (unless no_nodes) and all its ResourceSlices. */
de_rc sim_emit_node(const sim_cluster *c, uint32_t i, sim_emit_fn fn, void *ctx, de_err *e);
/* Classes, then every node in order. */
de_rc sim_emit_all(const sim_cluster *c, sim_emit_fn fn, void *ctx, de_err *e);

#endif
