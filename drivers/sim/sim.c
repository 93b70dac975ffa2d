/*
 * sim.c - the cluster plan (which node has which shape), the device and
 * pool builders that keep every slice inside the API limits, Node objects
 * and DeviceClasses.
 *
 * Slicing: a pool's devices are added in groups (one GPU with all its MIG
 * placements, say).  Groups are packed greedily into slices; a slice holds
 * at most 128 devices, or 64 once any device consumes counters, and at most
 * 1024 consumed counters.  Counter sets go into their own slices (at most 8
 * per slice), because since Kubernetes 1.35 a slice may carry sharedCounters
 * or devices but not both.  Every slice of the pool then gets the same
 * generation and the total resourceSliceCount.
 */
#include "sim_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const sim_default_mix =
    "dgx-h100:6,dgx-h100-mig:2,dgx-h200:3,aws-p5:4,aws-p4d:3,gb200-tray:4,"
    "mi300x:3,mi300x-dpx:1,hgx-h100-vfio:1,cpu-2socket:5";

#define PURPOSE_NODE 1
#define PURPOSE_CLUSTER 2

typedef struct sim_nodeent {
    const sim_shape *shape;
    uint32_t nth;
    uint32_t name_off;
} sim_nodeent;

struct sim_cluster {
    sim_opts o;
    sim_nodeent *nodes;
    uint32_t nnodes;
    char *names;
    unsigned classes;
};

/* ---- shapes ----------------------------------------------------------------- */

size_t sim_shape_count(void) { return sim_nshapes; }

const sim_shape_info *sim_shape_at(size_t i)
{
    return i < sim_nshapes ? &sim_shapes[i].info : NULL;
}

static const sim_shape *shape_find(const char *name, size_t len)
{
    for (size_t i = 0; i < sim_nshapes; i++)
        if (strlen(sim_shapes[i].info.name) == len && !memcmp(sim_shapes[i].info.name, name, len))
            return &sim_shapes[i];
    return NULL;
}

const sim_shape_info *sim_shape_find(const char *name)
{
    const sim_shape *s = shape_find(name, strlen(name));
    return s ? &s->info : NULL;
}

/* ---- plan ------------------------------------------------------------------- */

typedef struct mixent {
    const sim_shape *shape;
    uint64_t weight;
    uint64_t count;
} mixent;

static de_rc parse_mix(const char *text, mixent **out, size_t *n, de_err *e)
{
    mixent *v = NULL;
    size_t nv = 0;
    const char *p = text;
    while (*p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *colon = memchr(p, ':', len);
        size_t nlen = colon ? (size_t)(colon - p) : len;
        uint64_t w = 1;
        if (nlen == 0) {
            free(v);
            return de_errf(e, DE_EINVAL, "shape list \"%s\": empty shape name", text);
        }
        const sim_shape *s = shape_find(p, nlen);
        if (!s) {
            de_errf(e, DE_EINVAL, "unknown shape \"%.*s\" (see --list-shapes)", (int)nlen, p);
            free(v);
            return DE_EINVAL;
        }
        if (colon) {
            char num[24];
            size_t wl = len - nlen - 1;
            char *ep;
            if (wl == 0 || wl >= sizeof num) {
                free(v);
                return de_errf(e, DE_EINVAL, "shape \"%s\": bad weight", s->info.name);
            }
            memcpy(num, colon + 1, wl);
            num[wl] = 0;
            w = strtoull(num, &ep, 10);
            if (*ep || num[0] == '-' || w == 0 || w > SIM_MAX_NODES) {
                free(v);
                return de_errf(e, DE_EINVAL, "shape \"%s\": weight \"%s\" is not an integer in 1..%u",
                               s->info.name, num, SIM_MAX_NODES);
            }
        }
        for (size_t i = 0; i < nv; i++)
            if (v[i].shape == s) {
                free(v);
                return de_errf(e, DE_EINVAL, "shape \"%s\" is listed twice", s->info.name);
            }
        v = de_xrealloc(v, (nv + 1) * sizeof *v);
        v[nv++] = (mixent){s, w, 0};
        if (!end)
            break;
        p = end + 1;
        if (!*p) {
            free(v);
            return de_errf(e, DE_EINVAL, "shape list \"%s\": trailing comma", text);
        }
    }
    if (nv == 0)
        return de_errf(e, DE_EINVAL, "empty shape list");
    *out = v;
    *n = nv;
    return DE_OK;
}

sim_cluster *sim_new(const sim_opts *o, de_err *e)
{
    mixent *mix = NULL;
    size_t nmix = 0;
    if (parse_mix(o->mix ? o->mix : sim_default_mix, &mix, &nmix, e) != DE_OK)
        return NULL;
    uint64_t wsum = 0;
    for (size_t i = 0; i < nmix; i++)
        wsum += mix[i].weight;
    uint64_t total = o->nodes ? o->nodes : wsum;
    if (total > SIM_MAX_NODES) {
        free(mix);
        de_errf(e, DE_EINVAL, "%llu nodes is more than the simulator's limit of %u",
                (unsigned long long)total, SIM_MAX_NODES);
        return NULL;
    }
    /* Largest remainder: floor shares first, then one more node to the
     * entries with the largest remainders (earlier entry on a tie). */
    uint64_t given = 0;
    for (size_t i = 0; i < nmix; i++) {
        mix[i].count = total * mix[i].weight / wsum;
        given += mix[i].count;
    }
    while (given < total) {
        size_t best = 0;
        uint64_t bestrem = 0;
        bool found = false;
        for (size_t i = 0; i < nmix; i++) {
            uint64_t rem = total * mix[i].weight % wsum;
            if (!found || rem > bestrem) {
                best = i;
                bestrem = rem;
                found = true;
            }
        }
        mix[best].count++;
        mix[best].weight = 0; /* remainder used: rem becomes 0 for this round */
        given++;
    }

    sim_cluster *c = de_xcalloc(1, sizeof *c);
    c->o = *o;
    c->o.mix = NULL;
    c->nnodes = (uint32_t)total;
    c->nodes = de_xcalloc(total ? total : 1, sizeof *c->nodes);
    size_t namecap = total * 40 + 1, nameoff = 0;
    c->names = de_xmalloc(namecap);
    uint32_t k = 0;
    for (size_t i = 0; i < nmix; i++) {
        if (mix[i].count)
            c->classes |= mix[i].shape->classes;
        for (uint64_t j = 0; j < mix[i].count; j++) {
            sim_nodeent *ne = &c->nodes[k++];
            ne->shape = mix[i].shape;
            ne->nth = (uint32_t)j;
            ne->name_off = (uint32_t)nameoff;
            int w = snprintf(c->names + nameoff, namecap - nameoff, "%s-%03u", mix[i].shape->info.name,
                             (unsigned)j);
            nameoff += (size_t)w + 1;
        }
    }
    free(mix);
    return c;
}

void sim_free(sim_cluster *c)
{
    if (!c)
        return;
    free(c->nodes);
    free(c->names);
    free(c);
}

uint32_t sim_node_count(const sim_cluster *c) { return c->nnodes; }
uint64_t sim_seed(const sim_cluster *c) { return c->o.seed; }

const char *sim_node_name(const sim_cluster *c, uint32_t i)
{
    return i < c->nnodes ? c->names + c->nodes[i].name_off : NULL;
}

const sim_shape_info *sim_node_shape(const sim_cluster *c, uint32_t i)
{
    return i < c->nnodes ? &c->nodes[i].shape->info : NULL;
}

/* ---- helpers ------------------------------------------------------------------ */

void sim_fail(sim_node *n, const char *fmt, ...)
{
    if (n->rc != DE_OK)
        return;
    va_list ap;
    va_start(ap, fmt);
    n->rc = de_verrf(n->e, DE_EINTERNAL, fmt, ap);
    va_end(ap);
}

void sim_hex(sim_rng *r, char *out, size_t ndigits)
{
    static const char hx[] = "0123456789abcdef";
    uint64_t v = 0;
    for (size_t i = 0; i < ndigits; i++) {
        if (i % 16 == 0)
            v = sim_rng_next(r);
        out[i] = hx[v & 15];
        v >>= 4;
    }
    out[ndigits] = 0;
}

void sim_uuid(sim_rng *r, const char *prefix, char *out, size_t cap)
{
    char h[33];
    sim_hex(r, h, 32);
    snprintf(out, cap, "%s%.8s-%.4s-%.4s-%.4s-%.12s", prefix, h, h + 8, h + 12, h + 16, h + 20);
}

void sim_mac(sim_rng *r, const char *oui, char *out, size_t cap)
{
    uint64_t v = sim_rng_next(r);
    snprintf(out, cap, "%s:%02x:%02x:%02x", oui, (unsigned)(v & 0xff), (unsigned)((v >> 8) & 0xff),
             (unsigned)((v >> 16) & 0xff));
}

void sim_bdf(char *out, size_t cap, unsigned dom, unsigned bus, unsigned dev, unsigned fn)
{
    snprintf(out, cap, "%04x:%02x:%02x.%x", dom, bus, dev, fn);
}

void sim_root(char *out, size_t cap, unsigned dom, unsigned bus)
{
    snprintf(out, cap, "pci%04x:%02x", dom, bus);
}

void sim_pciname(char *out, size_t cap, unsigned dom, unsigned bus, unsigned dev, unsigned fn)
{
    snprintf(out, cap, "pci-%04x-%02x-%02x-%x", dom, bus, dev, fn);
}

size_t sim_pick(sim_rng *r, const unsigned *weights, size_t n)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += weights[i];
    uint64_t x = sim_rng_below(r, sum);
    for (size_t i = 0; i < n; i++) {
        if (x < weights[i])
            return i;
        x -= weights[i];
    }
    return n - 1;
}

/* ---- devices ------------------------------------------------------------------- */

static json_t *jobj(void)
{
    json_t *o = json_object();
    if (!o)
        abort();
    return o;
}

static void jset(json_t *o, const char *k, json_t *v)
{
    if (!v || json_object_set_new(o, k, v) != 0)
        abort();
}

json_t *sim_dev(const char *name)
{
    json_t *d = jobj();
    jset(d, "name", json_string(name));
    return d;
}

static json_t *sub(json_t *o, const char *k)
{
    json_t *s = json_object_get(o, k);
    if (!s) {
        s = jobj();
        jset(o, k, s);
    }
    return s;
}

static void attr(json_t *dev, const char *key, const char *type, json_t *v)
{
    json_t *a = jobj();
    jset(a, type, v);
    jset(sub(dev, "attributes"), key, a);
}

void sim_attr_str(json_t *dev, const char *key, const char *v) { attr(dev, key, "string", json_string(v)); }
void sim_attr_int(json_t *dev, const char *key, int64_t v) { attr(dev, key, "int", json_integer(v)); }
void sim_attr_bool(json_t *dev, const char *key, bool v) { attr(dev, key, "bool", json_boolean(v)); }
void sim_attr_ver(json_t *dev, const char *key, const char *v) { attr(dev, key, "version", json_string(v)); }

void sim_cap(json_t *dev, const char *key, const char *qty)
{
    json_t *c = jobj();
    jset(c, "value", json_string(qty));
    jset(sub(dev, "capacity"), key, c);
}

void sim_cap_int(json_t *dev, const char *key, int64_t v)
{
    char b[32];
    snprintf(b, sizeof b, "%lld", (long long)v);
    sim_cap(dev, key, b);
}

void sim_consume(json_t *dev, const char *set, json_t *counters)
{
    json_t *arr = json_object_get(dev, "consumesCounters");
    if (!arr) {
        arr = json_array();
        jset(dev, "consumesCounters", arr);
    }
    json_t *c = jobj();
    jset(c, "counterSet", json_string(set));
    jset(c, "counters", counters);
    json_array_append_new(arr, c);
}

/* ---- pools ----------------------------------------------------------------------- */

void sim_pool_init(sim_pool *p, sim_node *n, const char *driver)
{
    p->n = n;
    p->driver = driver;
    p->sets = json_array();
    p->groups = json_array();
}

void sim_pool_group(sim_pool *p)
{
    json_array_append_new(p->groups, json_array());
}

void sim_pool_add(sim_pool *p, json_t *dev)
{
    size_t ng = json_array_size(p->groups);
    if (ng == 0) {
        sim_pool_group(p);
        ng = 1;
    }
    json_t *g = json_array_get(p->groups, ng - 1);
    size_t nac = json_object_size(json_object_get(dev, "attributes")) +
                 json_object_size(json_object_get(dev, "capacity"));
    if (nac > SIM_MAX_ATTRS_CAPS)
        sim_fail(p->n, "device %s: %zu attributes and capacities (limit %d)",
                 json_string_value(json_object_get(dev, "name")), nac, SIM_MAX_ATTRS_CAPS);
    json_array_append_new(g, dev);
}

void sim_pool_counterset(sim_pool *p, json_t *set)
{
    if (json_object_size(json_object_get(set, "counters")) > SIM_MAX_COUNTERS)
        sim_fail(p->n, "counter set with more than %d counters", SIM_MAX_COUNTERS);
    json_array_append_new(p->sets, set);
}

static size_t consumed_entries(json_t *dev)
{
    size_t n = 0, i;
    json_t *c;
    json_array_foreach(json_object_get(dev, "consumesCounters"), i, c)
        n += json_object_size(json_object_get(c, "counters"));
    return n;
}

static void emit(sim_node *n, json_t *obj)
{
    if (n->rc == DE_OK)
        n->rc = n->fn(n->ctx, obj, n->e);
    json_decref(obj);
}

/* A slice name the way the kubelet plugin helper makes one: generateName
 * "<node>-<driver>-" plus five characters, here from the node's stream. */
static void slice_name(sim_node *n, const char *driver, char *out, size_t cap)
{
    static const char alpha[] = "bcdfghjklmnpqrstvwxz2456789";
    char sfx[6];
    for (int i = 0; i < 5; i++)
        sfx[i] = alpha[sim_rng_below(&n->rng, sizeof alpha - 1)];
    sfx[5] = 0;
    snprintf(out, cap, "%s-%s-%s", n->name, driver, sfx);
}

static json_t *slice_new(sim_node *n, const char *driver, size_t count)
{
    char name[300], gen[290];
    slice_name(n, driver, name, sizeof name);
    snprintf(gen, sizeof gen, "%s-%s-", n->name, driver);
    json_t *s = jobj();
    jset(s, "apiVersion", json_string("resource.k8s.io/v1"));
    jset(s, "kind", json_string("ResourceSlice"));
    json_t *md = jobj();
    jset(md, "name", json_string(name));
    jset(md, "generateName", json_string(gen));
    json_t *owner = jobj();
    jset(owner, "apiVersion", json_string("v1"));
    jset(owner, "kind", json_string("Node"));
    jset(owner, "name", json_string(n->name));
    jset(owner, "uid", json_string(n->uid));
    jset(owner, "controller", json_true());
    json_t *owners = json_array();
    json_array_append_new(owners, owner);
    jset(md, "ownerReferences", owners);
    jset(s, "metadata", md);
    json_t *spec = jobj();
    jset(spec, "driver", json_string(driver));
    jset(spec, "nodeName", json_string(n->name));
    json_t *pool = jobj();
    jset(pool, "name", json_string(n->name));
    jset(pool, "generation", json_integer(1));
    jset(pool, "resourceSliceCount", json_integer((json_int_t)count));
    jset(spec, "pool", pool);
    jset(s, "spec", spec);
    return s;
}

void sim_pool_finish(sim_pool *p)
{
    sim_node *n = p->n;
    size_t nsets = json_array_size(p->sets);
    size_t ngroups = json_array_size(p->groups);
    /* Plan the device slices: [start, end) ranges over groups. */
    size_t *cut = de_xcalloc(ngroups + 2, sizeof *cut);
    size_t ncut = 0, i;
    size_t devs = 0, consumed = 0;
    bool advanced = false;
    cut[ncut++] = 0;
    for (i = 0; i < ngroups; i++) {
        json_t *g = json_array_get(p->groups, i), *d;
        size_t gdevs = json_array_size(g), gcons = 0, k;
        bool gadv = false;
        json_array_foreach(g, k, d) {
            size_t ce = consumed_entries(d);
            gcons += ce;
            if (ce || json_object_get(d, "taints"))
                gadv = true;
        }
        size_t cap = (advanced || gadv) ? SIM_MAX_DEVICES_ADVANCED : SIM_MAX_DEVICES;
        if (gdevs > (gadv ? SIM_MAX_DEVICES_ADVANCED : SIM_MAX_DEVICES) ||
            gcons > SIM_MAX_CONSUMED_PER_SLICE) {
            sim_fail(n, "pool %s/%s: a device group does not fit in one slice", p->driver, n->name);
            break;
        }
        if (devs > 0 && (devs + gdevs > cap || consumed + gcons > SIM_MAX_CONSUMED_PER_SLICE)) {
            cut[ncut++] = i;
            devs = consumed = 0;
            advanced = false;
        }
        devs += gdevs;
        consumed += gcons;
        advanced = advanced || gadv;
    }
    size_t ndevslices = devs > 0 || ncut > 1 ? ncut : 0;
    cut[ncut] = ngroups;
    size_t nsetslices = (nsets + SIM_MAX_COUNTER_SETS - 1) / SIM_MAX_COUNTER_SETS;
    size_t total = ndevslices + nsetslices;

    for (size_t s = 0; s < nsetslices && n->rc == DE_OK; s++) {
        json_t *sl = slice_new(n, p->driver, total);
        json_t *arr = json_array();
        for (size_t k = s * SIM_MAX_COUNTER_SETS; k < nsets && k < (s + 1) * SIM_MAX_COUNTER_SETS; k++)
            json_array_append(arr, json_array_get(p->sets, k));
        jset(json_object_get(sl, "spec"), "sharedCounters", arr);
        emit(n, sl);
    }
    for (size_t s = 0; s < ndevslices && n->rc == DE_OK; s++) {
        json_t *sl = slice_new(n, p->driver, total);
        json_t *arr = json_array();
        for (size_t g = cut[s]; g < cut[s + 1]; g++)
            json_array_extend(arr, json_array_get(p->groups, g));
        jset(json_object_get(sl, "spec"), "devices", arr);
        emit(n, sl);
    }
    free(cut);
    json_decref(p->sets);
    json_decref(p->groups);
    p->sets = p->groups = NULL;
}

/* ---- Node objects and classes ------------------------------------------------------- */

static json_t *node_object(sim_node *n)
{
    const sim_shape *sh = n->shape;
    json_t *o = jobj();
    jset(o, "apiVersion", json_string("v1"));
    jset(o, "kind", json_string("Node"));
    json_t *md = jobj();
    jset(md, "name", json_string(n->name));
    jset(md, "uid", json_string(n->uid));
    json_t *lb = jobj();
    char zone[64];
    snprintf(zone, sizeof zone, "%s%c", sh->zone_prefix, 'a' + (int)(n->nth % 3));
    jset(lb, "kubernetes.io/arch", json_string(sh->arch));
    jset(lb, "kubernetes.io/hostname", json_string(n->name));
    jset(lb, "kubernetes.io/os", json_string("linux"));
    jset(lb, "node.kubernetes.io/instance-type", json_string(sh->info.instance_type));
    jset(lb, "topology.kubernetes.io/zone", json_string(zone));
    jset(lb, "draengine.dev/shape", json_string(sh->info.name));
    if (strstr(sh->info.name, "gb200")) {
        /* Multi-node NVLink: one IMEX clique per NVL72 rack of 18 trays. */
        sim_rng cr;
        char cu[48], clique[16];
        sim_rng_derive(&cr, n->c->o.seed, PURPOSE_CLUSTER, 0);
        sim_uuid(&cr, "", cu, sizeof cu);
        snprintf(clique, sizeof clique, "%u", n->nth / 18);
        jset(lb, "nvidia.com/gpu.clusteruuid", json_string(cu));
        jset(lb, "nvidia.com/gpu.cliqueid", json_string(clique));
    }
    jset(md, "labels", lb);
    jset(o, "metadata", md);
    json_t *st = jobj(), *cap = jobj();
    char b[32];
    snprintf(b, sizeof b, "%u", sh->info.cpus);
    jset(cap, "cpu", json_string(b));
    snprintf(b, sizeof b, "%uGi", sh->memory_gi);
    jset(cap, "memory", json_string(b));
    jset(cap, "pods", json_string("110"));
    jset(cap, "ephemeral-storage", json_string("1800Gi"));
    json_t *alloc = json_deep_copy(cap);
    /* kubelet reserves a little for the system */
    snprintf(b, sizeof b, "%um", sh->info.cpus * 1000 - 500);
    jset(alloc, "cpu", json_string(b));
    snprintf(b, sizeof b, "%uGi", sh->memory_gi - sh->memory_gi / 32);
    jset(alloc, "memory", json_string(b));
    jset(st, "capacity", cap);
    jset(st, "allocatable", alloc);
    jset(o, "status", st);
    return o;
}

static json_t *device_class(const char *name, const char *expr, const char *ext)
{
    json_t *o = jobj();
    jset(o, "apiVersion", json_string("resource.k8s.io/v1"));
    jset(o, "kind", json_string("DeviceClass"));
    json_t *md = jobj();
    jset(md, "name", json_string(name));
    jset(o, "metadata", md);
    json_t *spec = jobj(), *sels = json_array(), *sel = jobj(), *cel = jobj();
    jset(cel, "expression", json_string(expr));
    jset(sel, "cel", cel);
    json_array_append_new(sels, sel);
    jset(spec, "selectors", sels);
    if (ext)
        jset(spec, "extendedResourceName", json_string(ext));
    jset(o, "spec", spec);
    return o;
}

json_t *sim_nvidia_classes(void)
{
    json_t *a = json_array();
    /* The chart's templates (corpus nvidia-gpu/deviceclasses-all.rendered.yaml). */
    json_array_append_new(a, device_class("gpu.nvidia.com",
        "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'",
        "nvidia.com/gpu"));
    json_array_append_new(a, device_class("mig.nvidia.com",
        "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'", NULL));
    json_array_append_new(a, device_class("vfio.gpu.nvidia.com",
        "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'vfio'", NULL));
    return a;
}

de_rc sim_emit_classes(const sim_cluster *c, sim_emit_fn fn, void *ctx, de_err *e)
{
    json_t *a = json_array();
    if (c->classes & SIM_CLS_NVIDIA_CD) {
        json_array_append_new(a, device_class("compute-domain-daemon.nvidia.com",
            "device.driver == 'compute-domain.nvidia.com' && "
            "device.attributes['compute-domain.nvidia.com'].type == 'daemon'", NULL));
        json_array_append_new(a, device_class("compute-domain-default-channel.nvidia.com",
            "device.driver == 'compute-domain.nvidia.com' && "
            "device.attributes['compute-domain.nvidia.com'].type == 'channel' && "
            "device.attributes['compute-domain.nvidia.com'].id == 0", NULL));
    }
    if (c->classes & SIM_CLS_NVIDIA) {
        json_t *nv = sim_nvidia_classes();
        json_array_extend(a, nv);
        json_decref(nv);
    }
    if (c->classes & SIM_CLS_AMD)
        json_array_append_new(a, device_class("gpu.amd.com", "device.driver == 'gpu.amd.com'", NULL));
    if (c->classes & SIM_CLS_DRANET)
        json_array_append_new(a, device_class("dranet.net", "device.driver == \"dra.net\"", NULL));
    if (c->classes & SIM_CLS_EFA)
        json_array_append_new(a, device_class("efa.networking.k8s.aws",
            "device.driver == \"dra.net\" &&\n"
            "device.attributes[\"dra.net\"].pciDevice == 'Elastic Fabric Adapter (EFA)'\n", NULL));
    if (c->classes & SIM_CLS_CPU)
        json_array_append_new(a, device_class("dra.cpu", "device.driver == \"dra.cpu\"", NULL));
    de_rc rc = DE_OK;
    size_t i;
    json_t *o;
    json_array_foreach(a, i, o) {
        rc = fn(ctx, o, e);
        if (rc != DE_OK)
            break;
    }
    json_decref(a);
    return rc;
}

de_rc sim_emit_node(const sim_cluster *c, uint32_t i, sim_emit_fn fn, void *ctx, de_err *e)
{
    if (i >= c->nnodes)
        return de_errf(e, DE_ENOTFOUND, "node index %u out of range", i);
    sim_node n = {0};
    n.c = c;
    n.shape = c->nodes[i].shape;
    n.index = i;
    n.nth = c->nodes[i].nth;
    n.name = c->names + c->nodes[i].name_off;
    n.fn = fn;
    n.ctx = ctx;
    n.e = e;
    sim_rng_derive(&n.rng, c->o.seed, PURPOSE_NODE, i);
    sim_uuid(&n.rng, "", n.uid, sizeof n.uid);
    if (!c->o.no_nodes)
        emit(&n, node_object(&n));
    if (n.rc == DE_OK)
        n.shape->build(&n);
    if (n.rc != DE_OK)
        de_err_prefix(e, "node %s (%s)", n.name, n.shape->info.name);
    return n.rc;
}

de_rc sim_emit_all(const sim_cluster *c, sim_emit_fn fn, void *ctx, de_err *e)
{
    if (!c->o.no_classes)
        DE_TRY(sim_emit_classes(c, fn, ctx, e));
    for (uint32_t i = 0; i < c->nnodes; i++)
        DE_TRY(sim_emit_node(c, i, fn, ctx, e));
    return DE_OK;
}
