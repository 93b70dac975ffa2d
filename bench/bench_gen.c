/*
 * bench_gen.c - synthetic clusters for the benchmarks (bench_gen.h).
 */
#include "bench_gen.h"

#include <stdio.h>
#include <string.h>

dg_graph *bench_graph(void)
{
    dg_opts go = {0};
    go.skip_validation = true;
    return dg_new(NULL, &go);
}

al_allocator *bench_allocator(dg_graph *g, const char *gates, de_err *e)
{
    al_opts o;
    memset(&o, 0, sizeof o);
    de_gates_default(&o.gates);
    if (gates)
        de_gates_parse_library(&o.gates, gates, NULL, 0, e);
    return al_new(g, &o, e);
}

de_rc bench_put(dg_graph *g, json_t *obj, de_err *e)
{
    de_origin o = {"<bench>", 1, -1};
    dg_kind k;
    de_rc rc = dg_apply(g, obj, &o, &k, e);
    json_decref(obj);
    return rc;
}

de_rc bench_put_after(de_rc rc, dg_graph *g, json_t *obj, de_err *e)
{
    if (rc != DE_OK) {
        json_decref(obj);
        return rc;
    }
    return bench_put(g, obj, e);
}

json_t *bench_node(const char *name, const char *lk, const char *lv)
{
    json_t *node = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "Node", "metadata", "name", name);
    if (lk)
        json_object_set_new(json_object_get(node, "metadata"), "labels", json_pack("{s:s}", lk, lv));
    return node;
}

json_t *bench_class(const char *name, const char *expr)
{
    return json_pack("{s:s, s:s, s:{s:s}, s:{s:[{s:{s:s}}]}}", "apiVersion", "resource.k8s.io/v1", "kind",
                     "DeviceClass", "metadata", "name", name, "spec", "selectors", "cel", "expression", expr);
}

json_t *bench_slice(const char *name, const char *driver, const char *pool, const char *node, json_t *devices)
{
    return json_pack("{s:s, s:s, s:{s:s}, s:{s:s, s:{s:s, s:i, s:i}, s:s, s:o}}", "apiVersion",
                     "resource.k8s.io/v1", "kind", "ResourceSlice", "metadata", "name", name, "spec", "driver",
                     driver, "pool", "name", pool, "generation", 1, "resourceSliceCount", 1, "nodeName", node,
                     "devices", devices);
}

json_t *bench_exact(const char *name, const char *cls)
{
    return json_pack("{s:s, s:{s:s, s:i}}", "name", name, "exactly", "deviceClassName", cls, "count", 1);
}

json_t *bench_claim(const char *name, json_t *requests, json_t *constraints)
{
    json_t *devices = json_pack("{s:o}", "requests", requests);
    if (constraints)
        json_object_set_new(devices, "constraints", constraints);
    return json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:o}}", "apiVersion", "resource.k8s.io/v1", "kind",
                     "ResourceClaim", "metadata", "name", name, "namespace", "default", "spec", "devices",
                     devices);
}

json_t *bench_pod(const char *name, const char *claim, uint32_t i)
{
    char uid[64];
    snprintf(uid, sizeof uid, "00000000-0000-4000-8000-%012u", i);
    return json_pack("{s:s, s:s, s:{s:s, s:s, s:s}, s:{s:[{s:s, s:s}], s:[{s:s, s:s}]}}", "apiVersion", "v1",
                     "kind", "Pod", "metadata", "name", name, "namespace", "default", "uid", uid, "spec",
                     "containers", "name", "c", "image", "registry.k8s.io/pause", "resourceClaims", "name",
                     "dev", "resourceClaimName", claim);
}

de_rc bench_claim_pod(dg_graph *g, uint32_t i, json_t *requests, json_t *constraints, de_err *e)
{
    char claim[64], pod[64];
    snprintf(claim, sizeof claim, "claim-%u", i);
    snprintf(pod, sizeof pod, "pod-%u", i);
    de_rc rc = bench_put(g, bench_claim(claim, requests, constraints), e);
    if (rc == DE_OK)
        rc = bench_put(g, bench_pod(pod, claim, i), e);
    return rc;
}

uint32_t *bench_pod_ids(dg_graph *g, uint32_t n)
{
    de_interner *in = dg_intern(g);
    uint32_t ns = de_intern_cstr(in, "default");
    uint32_t *ids = de_xmalloc((n ? n : 1) * sizeof *ids);
    for (uint32_t i = 0; i < n; i++) {
        char name[64];
        snprintf(name, sizeof name, "pod-%u", i);
        ids[i] = dg_pod_find(g, ns, de_intern_cstr(in, name));
    }
    return ids;
}

static json_t *pci_dev(const char *name, const char *root)
{
    return json_pack("{s:s, s:{s:{s:s}}}", "name", name, "attributes", "resource.kubernetes.io/pcieRoot",
                     "string", root);
}

de_rc bench_gpu_nic(dg_graph *g, uint32_t nodes, uint32_t npods, de_err *e)
{
    const uint32_t per = 8;
    de_rc rc = bench_put(g, bench_class("gpu.example.com", "device.driver == \"gpu.example.com\""), e);
    if (rc == DE_OK)
        rc = bench_put(g, bench_class("nic.example.com",
                                      "device.driver == \"nic.example.com\" && device.attributes[\"nic.example.com\"].rdma"),
                       e);
    for (uint32_t n = 0; n < nodes && rc == DE_OK; n++) {
        char node[64], s1[80], s2[80];
        snprintf(node, sizeof node, "gpu-node-%04u", n);
        snprintf(s1, sizeof s1, "%s-gpus", node);
        snprintf(s2, sizeof s2, "%s-nics", node);
        rc = bench_put(g, bench_node(node, "nvidia.com/gpu.present", "true"), e);
        json_t *gpus = json_array(), *nics = json_array();
        for (uint32_t d = 0; d < per; d++) {
            char dn[32], root[32];
            snprintf(dn, sizeof dn, "gpu-%u", d);
            snprintf(root, sizeof root, "pci0000:%02x", 0x10 * (d / 2 + 1));
            json_array_append_new(gpus, pci_dev(dn, root));
            /* NICs listed in the opposite root order, so the first free NIC
             * rarely matches the GPU and the constraint has work to do */
            uint32_t nd = per - 1 - d;
            snprintf(dn, sizeof dn, "nic-%u", nd);
            snprintf(root, sizeof root, "pci0000:%02x", 0x10 * (nd / 2 + 1));
            json_t *nic = pci_dev(dn, root);
            json_object_set_new(json_object_get(nic, "attributes"), "rdma", json_pack("{s:b}", "bool", 1));
            json_array_append_new(nics, nic);
        }
        rc = bench_put_after(rc, g, bench_slice(s1, "gpu.example.com", node, node, gpus), e);
        rc = bench_put_after(rc, g, bench_slice(s2, "nic.example.com", node, node, nics), e);
    }
    if (rc == DE_OK)
        rc = bench_pair_pods(g, npods, "gpu.example.com", "nic.example.com", "resource.kubernetes.io/pcieRoot", e);
    return rc;
}

de_rc bench_pair_pods(dg_graph *g, uint32_t npods, const char *gpu_class, const char *nic_class,
                      const char *match, de_err *e)
{
    de_rc rc = DE_OK;
    for (uint32_t i = 0; i < npods && rc == DE_OK; i++) {
        json_t *reqs = json_pack("[o, o]", bench_exact("gpu", gpu_class), bench_exact("nic", nic_class));
        json_t *cons = json_pack("[{s:[s, s], s:s}]", "requests", "gpu", "nic", "matchAttribute", match);
        rc = bench_claim_pod(g, i, reqs, cons, e);
    }
    return rc;
}

de_rc bench_upstream_cluster(dg_graph *g, uint32_t nodes, uint32_t per, de_err *e)
{
    de_rc rc = bench_put(g, bench_class("test-class", "device.driver == \"test-driver.cdi.k8s.io\""), e);
    for (uint32_t n = 0; n < nodes && rc == DE_OK; n++) {
        char node[64], slice[96];
        snprintf(node, sizeof node, "node-%04u", n);
        snprintf(slice, sizeof slice, "%s-slice", node);
        rc = bench_put(g, bench_node(node, NULL, NULL), e);
        json_t *devs = json_array();
        for (uint32_t d = 0; d < per; d++) {
            char dn[32];
            snprintf(dn, sizeof dn, "device-%u", d);
            json_array_append_new(devs, json_pack("{s:s}", "name", dn));
        }
        rc = bench_put_after(rc, g, bench_slice(slice, "test-driver.cdi.k8s.io", node, node, devs), e);
    }
    return rc;
}
