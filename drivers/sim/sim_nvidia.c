/*
 * sim_nvidia.c - what the NVIDIA DRA driver (gpu.nvidia.com) and its
 * compute-domain plugin publish: full GPUs, DynamicMIG partitionable
 * devices with one counter set per GPU, and VFIO passthrough devices.
 *
 * Numbers come from corpus/hardware-topologies.md sections 1.2 and 3:
 * verified ones (H100 81559Mi, A100 40Gi, GB200 189471Mi, A100 1g.5gb 4864Mi
 * and 2g.10gb 9856Mi, H100 3g/4g.40gb 40448Mi with 60/64 SMs, 98 MIG SMs on
 * A100) are used as is; the rest of each MIG table is interpolated from them
 * and marked [I] below.  Placements follow NVIDIA's figures: 1g at 0-6, the
 * two-slice 1g at 0/2/4/6, 2g at 0/2/4, 3g at 0/4, 4g and 7g at 0.
 *
 * DynamicMIG model (KEP-4815, the driver's partitions.go): counter set
 * gpu-<minor>-counter-set holds the GPU's engines, SMs, memory and one
 * memory-slice-<i> counter per memory slice; the full GPU consumes all of
 * it, each MIG placement its own share and its slices.  Devices are sorted
 * by canonical name (small profiles first), as the driver does, because the
 * scheduler takes the first fit.
 */
#include "sim_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct mig_profile {
    const char *name;   /* "1g.10gb" */
    unsigned gi;        /* GPU-instance profile id (NVML) */
    unsigned slices;    /* memory slices */
    unsigned mem_mi;    /* usable memory, MiB */
    unsigned sm, ce, dec, jpg, ofa;
    unsigned starts;    /* bitmask of allowed first memory slice */
} mig_profile;

typedef struct nv_model {
    const char *product, *arch, *cc;
    unsigned mem_mi;       /* full-GPU memory capacity, MiB */
    const char *pci_device;
    unsigned sm_full;      /* SMs of the whole GPU */
    unsigned sm_mig, ce, dec, jpg, ofa; /* counter-set totals */
    const char *addressable; /* VFIO addressableMemory (BAR) */
    const mig_profile *mig;
    size_t nmig;
} nv_model;

/* A100-SXM4-40GB: 4864/9856/98 SMs verified (KEP-4815, NVIDIA doc); the
 * 4- and 8-slice sizes as NVML reports them [I]. */
static const mig_profile mig_a100_40[] = {
    {"1g.5gb", 19, 1, 4864, 14, 1, 0, 0, 0, 0x7f},
    {"1g.10gb", 15, 2, 9856, 14, 1, 1, 0, 0, 0x55},
    {"2g.10gb", 14, 2, 9856, 28, 2, 1, 0, 0, 0x15},
    {"3g.20gb", 9, 4, 19968, 42, 3, 2, 0, 0, 0x11},
    {"4g.20gb", 5, 4, 19968, 56, 4, 2, 0, 0, 0x01},
    {"7g.40gb", 0, 8, 40192, 98, 7, 5, 1, 1, 0x01},
};

/* H100 80GB HBM3: 3g/4g.40gb 40448Mi and 60/64 SMs verified (live dump),
 * 1g 16 SMs (lgip); other sizes scaled from them [I]. */
static const mig_profile mig_h100_80[] = {
    {"1g.10gb", 19, 1, 9984, 16, 1, 1, 1, 0, 0x7f},
    {"1g.20gb", 15, 2, 20096, 16, 1, 1, 1, 0, 0x55},
    {"2g.20gb", 14, 2, 20096, 32, 2, 2, 2, 0, 0x15},
    {"3g.40gb", 9, 4, 40448, 60, 3, 3, 3, 0, 0x11},
    {"4g.40gb", 5, 4, 40448, 64, 4, 4, 4, 0, 0x01},
    {"7g.80gb", 0, 8, 80896, 132, 7, 7, 7, 1, 0x01},
};

/* H200 141GB (mig-parted names; sizes [I]). */
static const mig_profile mig_h200_141[] = {
    {"1g.18gb", 19, 1, 17792, 16, 1, 1, 1, 0, 0x7f},
    {"1g.35gb", 15, 2, 35840, 16, 1, 1, 1, 0, 0x55},
    {"2g.35gb", 14, 2, 35840, 32, 2, 2, 2, 0, 0x15},
    {"3g.71gb", 9, 4, 71680, 60, 3, 3, 3, 0, 0x11},
    {"4g.71gb", 5, 4, 71680, 64, 4, 4, 4, 0, 0x01},
    {"7g.141gb", 0, 8, 143360, 132, 7, 7, 7, 1, 0x01},
};

static const nv_model models[SIM_NV_MODEL_COUNT] = {
    [SIM_NV_H100_80] = {"NVIDIA H100 80GB HBM3", "Hopper", "9.0.0", 81559, "0x2330", 132, 132, 7, 7, 7, 1,
                        "128Gi", mig_h100_80, DE_ARRAY_LEN(mig_h100_80)},
    [SIM_NV_H200_141] = {"NVIDIA H200", "Hopper", "9.0.0", 143771, "0x2335", 132, 132, 7, 7, 7, 1, "256Gi",
                         mig_h200_141, DE_ARRAY_LEN(mig_h200_141)},
    [SIM_NV_A100_40] = {"NVIDIA A100-SXM4-40GB", "Ampere", "8.0.0", 40960, "0x20b0", 108, 98, 7, 5, 1, 1,
                        "64Gi", mig_a100_40, DE_ARRAY_LEN(mig_a100_40)},
    [SIM_NV_GB200] = {"NVIDIA GB200", "Blackwell", "10.0.0", 189471, "0x2941", 152, 0, 0, 0, 0, 0, "256Gi",
                      NULL, 0},
};

typedef struct nv_driver {
    const char *version, *cuda;
} nv_driver;

/* NVIDIA's "580.105.08" becomes semver "580.105.8". */
static const nv_driver newest = {"595.58.3", "13.2.0"};
static const nv_driver fleet[] = {{"580.105.8", "13.0.0"}, {"580.126.9", "13.0.0"}, {"580.126.20", "13.0.0"}};
static const unsigned fleet_w[] = {6, 3, 1};

static void mem_qty(char *b, size_t cap, unsigned mi)
{
    if (mi % 1024 == 0)
        snprintf(b, cap, "%uGi", mi / 1024);
    else
        snprintf(b, cap, "%uMi", mi);
}

typedef struct gpu_ctx {
    const sim_nv_opts *o;
    const nv_model *m;
    const nv_driver *drv;
    const sim_nv_gpu *g;
    char uuid[48];
    char bdf[16], root[16];
} gpu_ctx;

static void common_attrs(json_t *d, const gpu_ctx *g, bool numa)
{
    if (g->o->addressing)
        sim_attr_str(d, "addressingMode", g->o->addressing);
    sim_attr_str(d, "architecture", g->m->arch);
    sim_attr_str(d, "brand", "Nvidia");
    sim_attr_ver(d, "cudaComputeCapability", g->m->cc);
    sim_attr_ver(d, "cudaDriverVersion", g->drv->cuda);
    sim_attr_ver(d, "driverVersion", g->drv->version);
    sim_attr_str(d, "productName", g->m->product);
    sim_attr_str(d, "resource.kubernetes.io/pciBusID", g->bdf);
    sim_attr_str(d, "resource.kubernetes.io/pcieRoot", g->root);
    if (numa && g->o->numa_attr && g->g->numa >= 0)
        sim_attr_int(d, "resource.kubernetes.io/numaNode", g->g->numa);
}

static json_t *counter(json_t *set, const char *name, const char *qty)
{
    json_t *c = json_object();
    json_object_set_new(c, "value", json_string(qty));
    json_object_set_new(set, name, c);
    return set;
}

static void counter_int(json_t *set, const char *name, unsigned v)
{
    char b[24];
    snprintf(b, sizeof b, "%u", v);
    counter(set, name, b);
}

static void engine_counters(json_t *c, unsigned sm, unsigned ce, unsigned dec, unsigned jpg, unsigned ofa,
                            unsigned mem_mi, unsigned first, unsigned nslices, bool keep_zero)
{
    char b[32];
    if (ce || keep_zero)
        counter_int(c, "copy-engines", ce);
    if (dec || keep_zero)
        counter_int(c, "decoders", dec);
    if (jpg || keep_zero)
        counter_int(c, "jpeg-engines", jpg);
    mem_qty(b, sizeof b, mem_mi);
    counter(c, "memory", b);
    for (unsigned s = first; s < first + nslices; s++) {
        char k[24];
        snprintf(k, sizeof k, "memory-slice-%u", s);
        counter_int(c, k, 1);
    }
    counter_int(c, "multiprocessors", sm);
    if (ofa || keep_zero)
        counter_int(c, "ofa-engines", ofa);
}

static int cmp_devname(const void *a, const void *b)
{
    const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
    return strcmp(json_string_value(json_object_get(x, "name")), json_string_value(json_object_get(y, "name")));
}

static void full_gpu(sim_pool *p, const gpu_ctx *g, json_t **devs, size_t *ndev, char *setname)
{
    char name[32], b[32];
    snprintf(name, sizeof name, "gpu-%u", g->g->minor);
    json_t *d = sim_dev(name);
    common_attrs(d, g, true);
    sim_attr_str(d, "type", "gpu");
    sim_attr_str(d, "uuid", g->uuid);
    mem_qty(b, sizeof b, g->m->mem_mi);
    sim_cap(d, "memory", b);
    if (setname) {
        /* MIG-capable GPU: partition metadata on the full device too. */
        sim_cap_int(d, "copyEngines", g->m->ce);
        sim_cap_int(d, "decoders", g->m->dec);
        sim_cap_int(d, "jpegEngines", g->m->jpg);
        sim_cap_int(d, "multiprocessors", g->m->sm_full);
        sim_cap_int(d, "ofaEngines", g->m->ofa);
        json_t *c = json_object();
        engine_counters(c, g->m->sm_mig, g->m->ce, g->m->dec, g->m->jpg, g->m->ofa, g->m->mem_mi, 0, 8, false);
        sim_consume(d, setname, c);
    }
    if (devs)
        devs[(*ndev)++] = d;
    else
        sim_pool_add(p, d);
}

static void dynmig_gpu(sim_pool *p, const gpu_ctx *g)
{
    const nv_model *m = g->m;
    char setname[40];
    snprintf(setname, sizeof setname, "gpu-%u-counter-set", g->g->minor);
    json_t *set = json_object(), *ctrs = json_object();
    json_object_set_new(set, "name", json_string(setname));
    engine_counters(ctrs, m->sm_mig, m->ce, m->dec, m->jpg, m->ofa, m->mem_mi, 0, 8, true);
    json_object_set_new(set, "counters", ctrs);
    sim_pool_counterset(p, set);

    json_t *devs[64];
    size_t nd = 0;
    full_gpu(p, g, devs, &nd, setname);
    for (size_t k = 0; k < m->nmig; k++) {
        const mig_profile *mp = &m->mig[k];
        char prof[16];
        size_t pl = 0;
        for (const char *s = mp->name; *s && pl + 1 < sizeof prof; s++)
            if (*s != '.')
                prof[pl++] = *s;
        prof[pl] = 0;
        for (unsigned start = 0; start < 8; start++) {
            if (!(mp->starts & (1u << start)))
                continue;
            if (nd >= DE_ARRAY_LEN(devs)) {
                sim_fail(p->n, "too many MIG placements");
                break;
            }
            char name[64], b[32];
            snprintf(name, sizeof name, "gpu-%u-mig-%s-%u-%u", g->g->minor, prof, mp->gi, start);
            json_t *d = sim_dev(name);
            common_attrs(d, g, true);
            sim_attr_str(d, "parentUUID", g->uuid);
            sim_attr_str(d, "profile", mp->name);
            sim_attr_str(d, "type", "mig");
            sim_cap_int(d, "copyEngines", mp->ce);
            sim_cap_int(d, "decoders", mp->dec);
            sim_cap_int(d, "encoders", 0);
            sim_cap_int(d, "jpegEngines", mp->jpg);
            mem_qty(b, sizeof b, mp->mem_mi);
            sim_cap(d, "memory", b);
            for (unsigned s = start; s < start + mp->slices; s++) {
                char k2[24];
                snprintf(k2, sizeof k2, "memorySlice%u", s);
                sim_cap_int(d, k2, 1);
            }
            sim_cap_int(d, "multiprocessors", mp->sm);
            sim_cap_int(d, "ofaEngines", mp->ofa);
            json_t *c = json_object();
            engine_counters(c, mp->sm, mp->ce, mp->dec, mp->jpg, mp->ofa, mp->mem_mi, start, mp->slices, false);
            sim_consume(d, setname, c);
            devs[nd++] = d;
        }
    }
    qsort(devs, nd, sizeof devs[0], cmp_devname);
    sim_pool_group(p);
    for (size_t k = 0; k < nd; k++)
        sim_pool_add(p, devs[k]);
}

static void vfio_gpu(sim_pool *p, const gpu_ctx *g, unsigned index)
{
    char name[32];
    snprintf(name, sizeof name, "gpu-vfio-%u", index);
    json_t *d = sim_dev(name);
    sim_attr_str(d, "deviceID", g->m->pci_device);
    sim_attr_bool(d, "iommuFDEnabled", false);
    if (g->g->numa >= 0)
        sim_attr_int(d, "numa", g->g->numa);
    sim_attr_str(d, "productName", g->m->product);
    sim_attr_str(d, "resource.kubernetes.io/pciBusID", g->bdf);
    sim_attr_str(d, "resource.kubernetes.io/pcieRoot", g->root);
    sim_attr_str(d, "type", "vfio");
    sim_attr_str(d, "uuid", g->uuid);
    sim_attr_str(d, "vendorID", "0x10de");
    sim_cap(d, "addressableMemory", g->m->addressable);
    sim_pool_add(p, d);
}

void sim_nvidia_gpus(sim_node *n, const sim_nv_opts *o, const sim_nv_gpu *gpus, size_t ngpus)
{
    const nv_model *m = &models[o->model];
    const nv_driver *drv = o->numa_attr ? &newest : &fleet[sim_pick(&n->rng, fleet_w, DE_ARRAY_LEN(fleet))];
    if (o->mode == SIM_NV_DYNMIG && !m->nmig) {
        sim_fail(n, "%s has no MIG profiles", m->product);
        return;
    }
    if (ngpus > 16) {
        sim_fail(n, "too many GPUs");
        return;
    }
    gpu_ctx g[16];
    size_t order[16];
    for (size_t i = 0; i < ngpus; i++) {
        g[i] = (gpu_ctx){o, m, drv, &gpus[i], "", "", ""};
        sim_uuid(&n->rng, "GPU-", g[i].uuid, sizeof g[i].uuid);
        sim_bdf(g[i].bdf, sizeof g[i].bdf, gpus[i].dom, gpus[i].bus, gpus[i].dev, gpus[i].fn);
        sim_root(g[i].root, sizeof g[i].root, gpus[i].root_dom, gpus[i].root_bus);
        order[i] = i;
    }
    if (o->shuffle && ngpus > 1) {
        /* The EKS dump lists gpu-3..7 before gpu-0..2: a rotation. */
        size_t rot = 1 + (size_t)sim_rng_below(&n->rng, ngpus - 1);
        for (size_t i = 0; i < ngpus; i++)
            order[i] = (i + rot) % ngpus;
    }
    sim_pool p;
    sim_pool_init(&p, n, "gpu.nvidia.com");
    for (size_t k = 0; k < ngpus; k++) {
        const gpu_ctx *gc = &g[order[k]];
        switch (o->mode) {
        case SIM_NV_FULL:
            full_gpu(&p, gc, NULL, NULL, NULL);
            break;
        case SIM_NV_DYNMIG:
            dynmig_gpu(&p, gc);
            break;
        case SIM_NV_VFIO:
            vfio_gpu(&p, gc, (unsigned)order[k]);
            break;
        }
    }
    sim_pool_finish(&p);
}

void sim_nvidia_compute_domain(sim_node *n)
{
    sim_pool p;
    sim_pool_init(&p, n, "compute-domain.nvidia.com");
    json_t *d = sim_dev("daemon-0");
    sim_attr_int(d, "id", 0);
    sim_attr_str(d, "type", "daemon");
    sim_pool_add(&p, d);
    d = sim_dev("channel-0");
    sim_attr_int(d, "id", 0);
    sim_attr_str(d, "type", "channel");
    sim_pool_add(&p, d);
    sim_pool_finish(&p);
}
