/*
 * bench_gen.h - the synthetic clusters the allocator and policy benchmarks
 * build (bench_gen.c), so that policy-overhead times the very cluster
 * gpu-nic-5000 does.  Objects go into a dg_graph with dg_apply before any
 * clock starts.
 */
#ifndef BENCH_GEN_H
#define BENCH_GEN_H

#include "../engine/alloc/al.h"
#include "../engine/model/dg.h"

#include <jansson.h>

/* An empty graph that skips validation (the generators write valid objects). */
dg_graph *bench_graph(void);
/* An allocator on g: default gates, with `gates` (when not NULL) over them. */
al_allocator *bench_allocator(dg_graph *g, const char *gates, de_err *e);

/* Apply obj to g (consumes the reference). */
de_rc bench_put(dg_graph *g, json_t *obj, de_err *e);
/* bench_put when rc is DE_OK, else only drop obj: a builder chains its
 * puts through rc and checks it once. */
de_rc bench_put_after(de_rc rc, dg_graph *g, json_t *obj, de_err *e);

/* upstream scheduler_perf's DRA cluster: DeviceClass test-class and `nodes`
 * nodes node-NNNN, each with one slice of `per` devices device-N of
 * test-driver.cdi.k8s.io. */
de_rc bench_upstream_cluster(dg_graph *g, uint32_t nodes, uint32_t per, de_err *e);

json_t *bench_node(const char *name, const char *label_key, const char *label_value); /* label optional */
json_t *bench_class(const char *name, const char *expr);
json_t *bench_slice(const char *name, const char *driver, const char *pool, const char *node, json_t *devices);
/* {name, exactly: {deviceClassName: cls, count: 1}} */
json_t *bench_exact(const char *name, const char *cls);
/* ResourceClaim default/<name> (consumes requests and constraints, which may
 * be NULL); Pod default/<name> with claim reference "dev" to `claim`, uid
 * numbered i. */
json_t *bench_claim(const char *name, json_t *requests, json_t *constraints);
json_t *bench_pod(const char *name, const char *claim, uint32_t i);
/* claim-<i> and pod-<i> using it. */
de_rc bench_claim_pod(dg_graph *g, uint32_t i, json_t *requests, json_t *constraints, de_err *e);
/* pod-<i> for i < npods, each with one claim of a GPU (class gpu_class) and
 * a NIC (nic_class) that share the attribute `match`. */
de_rc bench_pair_pods(dg_graph *g, uint32_t npods, const char *gpu_class, const char *nic_class,
                      const char *match, de_err *e);
/* The graph ids of pod-0 .. pod-<n-1> (malloc'd), looked up before a clock
 * starts. */
uint32_t *bench_pod_ids(dg_graph *g, uint32_t n);

/* gpu-nic: `nodes` nodes x (8 GPUs + 8 RDMA NICs on 4 PCIe roots), classes
 * gpu.example.com and nic.example.com, and `npods` pods with one GPU+NIC
 * claim each (matchAttribute resource.kubernetes.io/pcieRoot). */
de_rc bench_gpu_nic(dg_graph *g, uint32_t nodes, uint32_t npods, de_err *e);

#endif
