/*
 * sim_shapes.c - the node shapes: PCIe layout, NUMA split, which drivers
 * run and what the NIC (dra.net), AMD GPU (gpu.amd.com) and CPU (dra.cpu)
 * drivers publish on them.
 *
 * Layouts (corpus/hardware-topologies.md section 2 and 4):
 *  - dgx-*: 8 GPUs, each sharing a PCIe root with its rail NIC (CX-7, the
 *    user guide's netdev/RDMA names), GPUs 0-3 on NUMA 0, 4-7 on NUMA 1,
 *    plus 4 storage ports and a management NIC.  Root numbers are not in
 *    any public dump [I]; GPU bus numbers are DGX H100's.
 *  - aws-p5: the live EKS dump's BDFs and roots, 4 EFAs per GPU root [I].
 *  - aws-p4d: the live dump exactly (2 GPUs + 1 EFA per root).
 *  - gb200-tray: the OCI live dump (GPU roots apart from the NIC roots, so
 *    only NUMA alignment is possible), OKE fabric attributes.
 *  - mi300x*: Azure ND96isr MI300X v5, one root per GPU, VFs without a
 *    pcieRoot; SPX, DPX (2 partitions) and CPX (8 partitions) modes.
 * Attribute names differ per driver on purpose: dra.net/numaNode on NICs,
 * resource.kubernetes.io/numaNode only from the newest NVIDIA driver and the
 * CPU driver, bare `numaNode` on AMD partitions, `numa` on VFIO devices.
 */
#include "sim_int.h"

#include <stdio.h>
#include <string.h>

#define PURPOSE_FABRIC 3

/* ---- dra.net ----------------------------------------------------------- */

typedef struct nic {
    unsigned dom, bus, dev, fn;
    int root_bus;          /* -1: the host hides it (Azure VFs) */
    unsigned root_dom;
    int numa;
    const char *vendor, *device, *subsystem;
    const char *ifname;    /* NULL: no netdev attributes (EFA) */
    const char *rdmadev;   /* NULL: not RDMA */
    const char *encap;
    int mtu;
    bool sriov;
    const char *mac_oui;
} nic;

static void nic_add(sim_pool *p, const nic *c, void (*extra)(sim_node *, json_t *, const void *),
                    const void *xctx)
{
    char name[40], b[32], mac[32];
    sim_pciname(name, sizeof name, c->dom, c->bus, c->dev, c->fn);
    json_t *d = sim_dev(name);
    if (c->ifname) {
        sim_attr_str(d, "dra.net/encapsulation", c->encap ? c->encap : "ether");
        sim_attr_str(d, "dra.net/ifName", c->ifname);
        if (c->mac_oui) {
            sim_mac(&p->n->rng, c->mac_oui, mac, sizeof mac);
            sim_attr_str(d, "dra.net/mac", mac);
        }
        sim_attr_int(d, "dra.net/mtu", c->mtu);
        sim_attr_str(d, "dra.net/state", "up");
        sim_attr_str(d, "dra.net/type", "device");
        sim_attr_bool(d, "dra.net/virtual", false);
        sim_attr_bool(d, "dra.net/sriov", c->sriov);
        if (c->sriov)
            sim_attr_int(d, "dra.net/sriovVfs", 0);
    }
    if (c->numa >= 0)
        sim_attr_int(d, "dra.net/numaNode", c->numa);
    sim_bdf(b, sizeof b, c->dom, c->bus, c->dev, c->fn);
    sim_attr_str(d, "dra.net/pciAddress", b);
    sim_attr_str(d, "dra.net/pciDevice", c->device);
    if (c->subsystem)
        sim_attr_str(d, "dra.net/pciSubsystem", c->subsystem);
    sim_attr_str(d, "dra.net/pciVendor", c->vendor);
    sim_attr_bool(d, "dra.net/rdma", c->rdmadev != NULL);
    if (c->rdmadev)
        sim_attr_str(d, "dra.net/rdmaDevice", c->rdmadev);
    if (c->root_bus >= 0) {
        sim_root(b, sizeof b, c->root_dom, (unsigned)c->root_bus);
        sim_attr_str(d, "resource.kubernetes.io/pcieRoot", b);
    }
    if (extra)
        extra(p->n, d, xctx);
    sim_pool_add(p, d);
}

/* ---- dra.cpu (grouped mode: one device per NUMA node) ------------------ */

static void cpu_pool(sim_node *n, unsigned numa_nodes, unsigned cpus, bool smt, bool socket_per_numa)
{
    sim_pool p;
    sim_pool_init(&p, n, "dra.cpu");
    for (unsigned i = 0; i < numa_nodes; i++) {
        char name[32];
        snprintf(name, sizeof name, "cpudevnuma%03u", i);
        json_t *d = sim_dev(name);
        json_object_set_new(d, "allowMultipleAllocations", json_true());
        sim_attr_int(d, "dra.cpu/numCPUs", cpus / numa_nodes);
        sim_attr_int(d, "dra.cpu/numaNodeID", i);
        sim_attr_bool(d, "dra.cpu/smtEnabled", smt);
        sim_attr_int(d, "dra.cpu/socketID", socket_per_numa ? i : 0);
        sim_attr_int(d, "dra.net/numaNode", i);
        sim_attr_int(d, "resource.kubernetes.io/numaNode", i);
        sim_cap_int(d, "dra.cpu/cpu", cpus / numa_nodes);
        sim_pool_add(&p, d);
    }
    sim_pool_finish(&p);
}

/* ---- DGX / HGX H100 and H200 --------------------------------------------- */

static const unsigned dgx_gpu_bus[8] = {0x1b, 0x43, 0x52, 0x61, 0x9d, 0xc3, 0xd1, 0xdf};
static const unsigned dgx_nic_bus[8] = {0x18, 0x40, 0x4f, 0x5e, 0x9a, 0xc0, 0xce, 0xdc};
static const unsigned dgx_mlx5[8] = {0, 3, 4, 5, 6, 9, 10, 11};

static void dgx_common(sim_node *n, sim_nv_model model, sim_nv_mode mode)
{
    sim_nv_gpu g[8];
    for (unsigned i = 0; i < 8; i++)
        g[i] = (sim_nv_gpu){i, 0, dgx_gpu_bus[i], 0, 0, 0, dgx_nic_bus[i] - 3, i < 4 ? 0 : 1};
    sim_nv_opts o = {model, mode, true, "HMM", false};
    sim_nvidia_gpus(n, &o, g, 8);
    if (mode != SIM_NV_VFIO)
        sim_nvidia_compute_domain(n);

    sim_pool p;
    sim_pool_init(&p, n, "dra.net");
    for (unsigned i = 0; i < 8; i++) {
        char ifn[24], rd[16];
        snprintf(ifn, sizeof ifn, "ibp%us0", dgx_nic_bus[i]);
        snprintf(rd, sizeof rd, "mlx5_%u", dgx_mlx5[i]);
        nic c = {0, dgx_nic_bus[i], 0, 0, (int)dgx_nic_bus[i] - 3, 0, i < 4 ? 0 : 1, "Mellanox Technologies",
                 "MT2910 Family [ConnectX-7]", "0073", ifn, rd, "infiniband", 4092, true, NULL};
        nic_add(&p, &c, NULL, NULL);
    }
    /* storage: two dual-port CX-7, one per CPU (mlx5_1/2 and mlx5_7/8) */
    static const unsigned sbus[2] = {0x29, 0xaa};
    for (unsigned s = 0; s < 2; s++)
        for (unsigned f = 0; f < 2; f++) {
            char ifn[24], rd[16];
            snprintf(ifn, sizeof ifn, "enp%us0f%unp%u", sbus[s], f, f);
            snprintf(rd, sizeof rd, "mlx5_%u", s ? 7 + f : 1 + f);
            nic c = {0, sbus[s], 0, f, (int)sbus[s] - 4, 0, (int)s, "Mellanox Technologies",
                     "MT2910 Family [ConnectX-7]", "0083", ifn, rd, "ether", 9000, true, "b8:3f:d2"};
            nic_add(&p, &c, NULL, NULL);
        }
    nic mg = {0, 0x05, 0, 0, 0x00, 0, 0, "Intel Corporation", "Ethernet Controller X550", "0001", "eno3",
              NULL, "ether", 1500, false, "3c:ec:ef"};
    nic_add(&p, &mg, NULL, NULL);
    sim_pool_finish(&p);
    cpu_pool(n, 2, 224, true, true);
}

static void build_dgx_h100(sim_node *n) { dgx_common(n, SIM_NV_H100_80, SIM_NV_FULL); }
static void build_dgx_h100_mig(sim_node *n) { dgx_common(n, SIM_NV_H100_80, SIM_NV_DYNMIG); }
static void build_dgx_h200(sim_node *n) { dgx_common(n, SIM_NV_H200_141, SIM_NV_FULL); }
static void build_hgx_vfio(sim_node *n) { dgx_common(n, SIM_NV_H100_80, SIM_NV_VFIO); }

/* ---- AWS p5.48xlarge ------------------------------------------------------- */

static void build_aws_p5(sim_node *n)
{
    sim_nv_gpu g[8];
    for (unsigned i = 0; i < 8; i++) {
        unsigned root = 0x44 + 0x11 * i;
        g[i] = (sim_nv_gpu){i, 0, root + 0x0f, 0, 0, 0, root, i < 4 ? 0 : 1};
    }
    sim_nv_opts o = {SIM_NV_H100_80, SIM_NV_FULL, false, "HMM", true};
    sim_nvidia_gpus(n, &o, g, 8);
    sim_nvidia_compute_domain(n);
    sim_pool p;
    sim_pool_init(&p, n, "dra.net");
    nic ena = {0, 0x05, 0, 0, 0x00, 0, 0, "Amazon.com, Inc.", "Elastic Network Adapter (ENA)", "ec20", "ens5",
               NULL, "ether", 9001, false, "0e:52:7c"};
    nic_add(&p, &ena, NULL, NULL);
    for (unsigned i = 0; i < 8; i++) {
        unsigned root = 0x44 + 0x11 * i;
        for (unsigned k = 0; k < 4; k++) {
            char rd[24];
            snprintf(rd, sizeof rd, "rdmap%us0", root + 1 + k);
            nic efa = {0, root + 1 + k, 0, 0, (int)root, 0, i < 4 ? 0 : 1, "Amazon.com, Inc.",
                       "Elastic Fabric Adapter (EFA)", "efa0", NULL, rd, NULL, 0, false, NULL};
            nic_add(&p, &efa, NULL, NULL);
        }
    }
    sim_pool_finish(&p);
    cpu_pool(n, 2, 192, true, true);
}

/* ---- AWS p4d.24xlarge (live dump layout) ---------------------------------- */

static void p4d_common(sim_node *n, sim_nv_mode mode)
{
    static const unsigned roots[4] = {0x10, 0x20, 0x90, 0xa0};
    sim_nv_gpu g[8];
    for (unsigned i = 0; i < 8; i++)
        g[i] = (sim_nv_gpu){i, 0, roots[i / 2], 0x1c + (i % 2), 0, 0, roots[i / 2], i < 4 ? 0 : 1};
    sim_nv_opts o = {SIM_NV_A100_40, mode, false, "HMM", false};
    sim_nvidia_gpus(n, &o, g, 8);
    sim_pool p;
    sim_pool_init(&p, n, "dra.net");
    static const char *const ena_if[4] = {NULL, "ens65", "ens97", "ens129"};
    for (unsigned r = 0; r < 4; r++) {
        char rd[24];
        snprintf(rd, sizeof rd, "rdmap%us27", roots[r]);
        nic efa = {0, roots[r], 0x1b, 0, (int)roots[r], 0, r < 2 ? 0 : 1, "Amazon.com, Inc.",
                   "Elastic Fabric Adapter (EFA)", "efa0", NULL, rd, NULL, 0, false, NULL};
        nic_add(&p, &efa, NULL, NULL);
        if (r == 0)
            continue;
        nic ena = {0, roots[r], 0x01, 0, (int)roots[r], 0, r < 2 ? 0 : 1, "Amazon.com, Inc.",
                   "Elastic Network Adapter (ENA)", "ec20", ena_if[r], NULL, "ether", 9001, false, "0e:96:fe"};
        nic_add(&p, &ena, NULL, NULL);
    }
    sim_pool_finish(&p);
    cpu_pool(n, 2, 96, true, true);
}

static void build_aws_p4d(sim_node *n) { p4d_common(n, SIM_NV_FULL); }
static void build_aws_p4d_mig(sim_node *n) { p4d_common(n, SIM_NV_DYNMIG); }

/* ---- OCI GB200 compute tray ------------------------------------------------ */

static void fabric_id(sim_node *n, const char *kind, unsigned num, char *out, size_t cap)
{
    sim_rng r;
    char h[13];
    sim_rng_derive(&r, sim_seed(n->c), PURPOSE_FABRIC, ((uint64_t)(unsigned char)kind[0] << 32) | num);
    sim_hex(&r, h, 12);
    snprintf(out, cap, "%s-%s", kind, h);
}

static void oke_attrs(sim_node *n, json_t *d, const void *x)
{
    (void)x;
    char b[48];
    unsigned rack = n->nth / 18;
    fabric_id(n, "gpumemoryfabric", rack, b, sizeof b);
    sim_attr_str(d, "oke.dra.net/gpuMemoryFabricId", b);
    fabric_id(n, "hpcisland", n->nth / 512, b, sizeof b);
    sim_attr_str(d, "oke.dra.net/hpcIslandId", b);
    fabric_id(n, "localblock", n->nth / 16, b, sizeof b);
    sim_attr_str(d, "oke.dra.net/localBlockId", b);
    fabric_id(n, "networkblock", n->nth / 96, b, sizeof b);
    sim_attr_str(d, "oke.dra.net/networkBlockId", b);
    fabric_id(n, "rack", rack, b, sizeof b);
    sim_attr_str(d, "oke.dra.net/rackId", b);
}

static void build_gb200(sim_node *n)
{
    static const unsigned gdom[4] = {0x0008, 0x0009, 0x0018, 0x0019};
    static const unsigned ndom[4] = {0x0000, 0x0002, 0x0010, 0x0012};
    sim_nv_gpu g[4];
    for (unsigned i = 0; i < 4; i++)
        g[i] = (sim_nv_gpu){i, gdom[i], 0x06, 0, 0, gdom[i], 0x00, i < 2 ? 0 : 1};
    /* this driver build does not publish NUMA on GB200 */
    sim_nv_opts o = {SIM_NV_GB200, SIM_NV_FULL, false, "ATS", false};
    sim_nvidia_gpus(n, &o, g, 4);
    sim_nvidia_compute_domain(n);
    sim_pool p;
    sim_pool_init(&p, n, "dra.net");
    for (unsigned k = 0; k < 8; k++) {
        char ifn[16];
        snprintf(ifn, sizeof ifn, "rdma%u", k);
        char rd[16];
        snprintf(rd, sizeof rd, "mlx5_%u", k);
        nic c = {ndom[k / 2], 0x03, 0, k % 2, 0x00, ndom[k / 2], k < 4 ? 0 : 1, "Mellanox Technologies",
                 "CX8 Family [ConnectX-8]", NULL, ifn, rd, "ether", 9000, true, "60:5e:65"};
        nic_add(&p, &c, oke_attrs, NULL);
    }
    sim_pool_finish(&p);
    cpu_pool(n, 2, 144, false, true);
}

/* ---- AMD MI300X on Azure ND96isr MI300X v5 ---------------------------------- */

typedef enum amd_mode { AMD_SPX, AMD_DPX, AMD_CPX } amd_mode;

static void azure_attrs(sim_node *n, json_t *d, const void *x)
{
    (void)x;
    char b[48];
    sim_rng r;
    sim_rng_derive(&r, sim_seed(n->c), PURPOSE_FABRIC, 0x7a7a0000u + n->nth / 32);
    sim_uuid(&r, "", b, sizeof b);
    sim_attr_str(d, "azure.dra.net/placementGroupId", b);
    sim_attr_str(d, "azure.dra.net/vmSize", n->shape->info.instance_type);
}

static void mi300x_common(sim_node *n, amd_mode mode)
{
    static const char *const versions[] = {"6.12.12", "6.16.6"};
    static const unsigned vw[] = {1, 3};
    const char *ver = versions[sim_pick(&n->rng, vw, 2)];
    char srcver[24];
    sim_hex(&n->rng, srcver, 23);
    for (char *s = srcver; *s; s++)
        if (*s >= 'a' && *s <= 'f')
            *s = (char)(*s - 'a' + 'A');
    static const char *const profiles[] = {"spx_nps1", "dpx_nps1", "cpx_nps4"};
    static const unsigned parts[] = {1, 2, 8};
    unsigned np = parts[mode];

    sim_pool p;
    sim_pool_init(&p, n, "gpu.amd.com");
    for (unsigned i = 0; i < 8; i++) {
        unsigned dom = 0x0002 + i;
        int numa = i < 4 ? 0 : 1;
        char addr[16], root[16], devid[24], parent[20];
        sim_bdf(addr, sizeof addr, dom, 0, 0, 0);
        sim_root(root, sizeof root, dom, 0);
        snprintf(devid, sizeof devid, "%llu", (unsigned long long)(sim_rng_next(&n->rng) >> 1));
        snprintf(parent, sizeof parent, "%04x:00:00:0", dom);
        sim_pool_group(&p);
        for (unsigned k = 0; k < np; k++) {
            unsigned card = i * 8 + k;
            char name[32];
            snprintf(name, sizeof name, "gpu-%u-%u", card, 128 + card);
            json_t *d = sim_dev(name);
            sim_attr_int(d, "cardIndex", card);
            sim_attr_str(d, "deviceID", devid);
            sim_attr_str(d, "driverSrcVersion", srcver);
            sim_attr_ver(d, "driverVersion", ver);
            sim_attr_str(d, "family", "AI");
            sim_attr_str(d, "partitionProfile", profiles[mode]);
            sim_attr_str(d, "productName", "AMD_Instinct_MI300X_OAM");
            sim_attr_int(d, "renderIndex", 128 + card);
            sim_attr_str(d, "resource.kubernetes.io/pcieRoot", root);
            if (mode == AMD_SPX) {
                sim_attr_str(d, "pciAddr", addr);
                sim_attr_str(d, "type", "amdgpu");
            } else {
                sim_attr_int(d, "numaNode", numa);
                sim_attr_str(d, "parentDeviceID", parent);
                sim_attr_str(d, "parentPciAddr", addr);
                sim_attr_str(d, "type", "amdgpu-partition");
            }
            sim_cap_int(d, "computeUnits", 304 / np);
            char mem[24];
            snprintf(mem, sizeof mem, "%uMi", 196592 / np);
            sim_cap(d, "memory", mem);
            sim_cap_int(d, "simdUnits", 1216 / np);
            sim_pool_add(&p, d);
        }
    }
    sim_pool_finish(&p);

    sim_pool_init(&p, n, "dra.net");
    for (unsigned k = 0; k < 8; k++) {
        char rd[16];
        snprintf(rd, sizeof rd, "mlx5_%u", k);
        nic c = {0x0101 + k, 0, 0, 0, -1, 0, k < 4 ? 0 : 1, "Mellanox Technologies",
                 "ConnectX Family mlx5Gen Virtual Function", "0101", NULL, rd, NULL, 0, false, NULL};
        nic_add(&p, &c, azure_attrs, NULL);
    }
    sim_pool_finish(&p);
    cpu_pool(n, 2, 96, false, true);
}

static void build_mi300x(sim_node *n) { mi300x_common(n, AMD_SPX); }
static void build_mi300x_dpx(sim_node *n) { mi300x_common(n, AMD_DPX); }
static void build_mi300x_cpx(sim_node *n) { mi300x_common(n, AMD_CPX); }

/* ---- CPU-only node ---------------------------------------------------------- */

static void build_cpu(sim_node *n)
{
    sim_pool p;
    sim_pool_init(&p, n, "dra.net");
    nic c = {0, 0x41, 0, 0, 0x40, 0, 1, "Intel Corporation", "Ethernet Controller E810-C for QSFP", "0002",
             "ens1f0", NULL, "ether", 9000, true, "b4:96:91"};
    nic_add(&p, &c, NULL, NULL);
    sim_pool_finish(&p);
    cpu_pool(n, 2, 128, true, true);
}

/* ---- the table ---------------------------------------------------------------- */

#define NV_CLASSES (SIM_CLS_NVIDIA | SIM_CLS_NVIDIA_CD | SIM_CLS_DRANET | SIM_CLS_CPU)

const sim_shape sim_shapes[] = {
    {{"dgx-h100", "NVIDIA DGX H100: 8 x H100 80GB, 8 rail CX-7 sharing PCIe roots with the GPUs, 2 NUMA",
      "dgx-h100", "nvidia", "NVIDIA H100 80GB HBM3", 8, 12, 2, 224, false},
     NV_CLASSES, "amd64", "dc1-", 2048, build_dgx_h100},
    {{"dgx-h100-mig", "DGX H100 with DynamicMIG: every MIG placement as a counter-consuming device",
      "dgx-h100", "nvidia", "NVIDIA H100 80GB HBM3", 8, 12, 2, 224, true},
     NV_CLASSES, "amd64", "dc1-", 2048, build_dgx_h100_mig},
    {{"dgx-h200", "NVIDIA DGX H200: 8 x H200 141GB, same layout as DGX H100", "dgx-h200", "nvidia",
      "NVIDIA H200", 8, 12, 2, 224, false},
     NV_CLASSES, "amd64", "dc1-", 2048, build_dgx_h200},
    {{"hgx-h100-vfio", "HGX H100 host for VMs: GPUs published as VFIO passthrough devices", "hgx-h100",
      "nvidia", "NVIDIA H100 80GB HBM3", 8, 12, 2, 224, false},
     SIM_CLS_NVIDIA | SIM_CLS_DRANET | SIM_CLS_CPU, "amd64", "dc1-", 2048, build_hgx_vfio},
    {{"aws-p5", "AWS p5.48xlarge: 8 x H100 each on its own root, 32 EFA (4 per GPU root)", "p5.48xlarge",
      "nvidia", "NVIDIA H100 80GB HBM3", 8, 32, 2, 192, false},
     NV_CLASSES | SIM_CLS_EFA, "amd64", "us-east-2", 2048, build_aws_p5},
    {{"aws-p4d", "AWS p4d.24xlarge: 8 x A100-SXM4-40GB, 2 GPUs + 1 EFA per PCIe root", "p4d.24xlarge",
      "nvidia", "NVIDIA A100-SXM4-40GB", 8, 4, 2, 96, false},
     SIM_CLS_NVIDIA | SIM_CLS_DRANET | SIM_CLS_EFA | SIM_CLS_CPU, "amd64", "us-east-1", 1152, build_aws_p4d},
    {{"aws-p4d-mig", "AWS p4d.24xlarge with DynamicMIG A100 partitions", "p4d.24xlarge", "nvidia",
      "NVIDIA A100-SXM4-40GB", 8, 4, 2, 96, true},
     SIM_CLS_NVIDIA | SIM_CLS_DRANET | SIM_CLS_EFA | SIM_CLS_CPU, "amd64", "us-east-1", 1152,
     build_aws_p4d_mig},
    {{"gb200-tray", "OCI BM.GPU.GB200: one NVL72 compute tray, 4 x GB200, 8 CX-8 ports, 18 trays per rack",
      "BM.GPU.GB200-v3.4", "nvidia", "NVIDIA GB200", 4, 8, 2, 144, false},
     NV_CLASSES, "arm64", "ap-osaka-1-ad-", 960, build_gb200},
    {{"mi300x", "Azure ND96isr MI300X v5: 8 x MI300X in SPX mode, 8 CX VFs", "Standard_ND96isr_MI300X_v5",
      "amd", "AMD_Instinct_MI300X_OAM", 8, 8, 2, 96, false},
     SIM_CLS_AMD | SIM_CLS_DRANET | SIM_CLS_CPU, "amd64", "eastus-", 1850, build_mi300x},
    {{"mi300x-dpx", "MI300X in DPX mode: 16 partitions of 152 CU sharing a deviceID per GPU",
      "Standard_ND96isr_MI300X_v5", "amd", "AMD_Instinct_MI300X_OAM", 8, 8, 2, 96, false},
     SIM_CLS_AMD | SIM_CLS_DRANET | SIM_CLS_CPU, "amd64", "eastus-", 1850, build_mi300x_dpx},
    {{"mi300x-cpx", "MI300X in CPX/NPS4 mode: 64 partitions of 38 CU", "Standard_ND96isr_MI300X_v5", "amd",
      "AMD_Instinct_MI300X_OAM", 8, 8, 2, 96, false},
     SIM_CLS_AMD | SIM_CLS_DRANET | SIM_CLS_CPU, "amd64", "eastus-", 1850, build_mi300x_cpx},
    {{"cpu-2socket", "CPU node: dra.cpu grouped mode, 2 NUMA nodes x 64 CPUs, one E810 NIC", "c6i.32xlarge",
      "none", "", 0, 0, 2, 128, false},
     SIM_CLS_DRANET | SIM_CLS_CPU, "amd64", "us-east-1", 256, build_cpu},
};

const size_t sim_nshapes = DE_ARRAY_LEN(sim_shapes);
