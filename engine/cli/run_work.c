/*
 * run_work.c - the workload mix of `draengine run`: what kinds of pods
 * arrive, how often, and the objects (Namespace, ResourceClaimTemplates,
 * Pods) that express them.
 *
 * The built-in mix is written in the same format a user gives with
 * --workload, so `draengine run --print-workload` is a working example.
 * Each workload is a claim (a ResourceClaimSpec, served through a
 * ResourceClaimTemplate the pod references, so every pod gets its own claim
 * as the claim controller would make it) or extended resources (container
 * limits such as nvidia.com/gpu: 1 that the scheduler serves through a
 * DeviceClass's extendedResourceName, KEP-5004), or both.
 */
#include "../base/doc.h"
#include "../base/quantity.h"
#include "run.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The default mix. Claims use the classes the simulated drivers' charts
 * ship; the tiered workload selects on the tier the shipped policies derive. */
static const char default_mix[] =
    "{\n"
    " \"patience\": 3,\n"
    " \"workloads\": [\n"
    "  {\"name\": \"single-gpu\", \"weight\": 30, \"summary\": \"one NVIDIA GPU\",\n"
    "   \"claim\": {\"devices\": {\"requests\": [\n"
    "    {\"name\": \"gpu\", \"exactly\": {\"deviceClassName\": \"gpu.nvidia.com\"}}]}}},\n"
    "  {\"name\": \"whole-node\", \"weight\": 5, \"summary\": \"8 GPUs of one node\",\n"
    "   \"claim\": {\"devices\": {\"requests\": [\n"
    "    {\"name\": \"gpus\", \"exactly\": {\"deviceClassName\": \"gpu.nvidia.com\", \"count\": 8}}]}}},\n"
    "  {\"name\": \"gpu-nic-pcie\", \"weight\": 12, \"summary\": \"GPU + RDMA NIC on one PCIe root\",\n"
    "   \"claim\": {\"devices\": {\"requests\": [\n"
    "    {\"name\": \"gpu\", \"exactly\": {\"deviceClassName\": \"gpu.nvidia.com\"}},\n"
    "    {\"name\": \"nic\", \"exactly\": {\"deviceClassName\": \"dranet.net\", \"selectors\": [\n"
    "     {\"cel\": {\"expression\": \"device.attributes['dra.net'].rdma == true\"}}]}}],\n"
    "    \"constraints\": [{\"requests\": [\"gpu\", \"nic\"],\n"
    "     \"matchAttribute\": \"resource.kubernetes.io/pcieRoot\"}]}}},\n"
    "  {\"name\": \"gpu-nic-any\", \"weight\": 6, \"summary\": \"GPU + RDMA NIC, no alignment asked\",\n"
    "   \"claim\": {\"devices\": {\"requests\": [\n"
    "    {\"name\": \"gpu\", \"exactly\": {\"deviceClassName\": \"gpu.nvidia.com\"}},\n"
    "    {\"name\": \"nic\", \"exactly\": {\"deviceClassName\": \"dranet.net\", \"selectors\": [\n"
    "     {\"cel\": {\"expression\": \"device.attributes['dra.net'].rdma == true\"}}]}}]}}},\n"
    "  {\"name\": \"gpu-cpu-numa\", \"weight\": 6, \"summary\": \"GPU + 16 CPUs on one NUMA node\",\n"
    "   \"claim\": {\"devices\": {\"requests\": [\n"
    "    {\"name\": \"gpu\", \"exactly\": {\"deviceClassName\": \"gpu.nvidia.com\"}},\n"
    "    {\"name\": \"cpu\", \"exactly\": {\"deviceClassName\": \"dra.cpu\",\n"
    "     \"capacity\": {\"requests\": {\"dra.cpu/cpu\": \"16\"}}}}],\n"
    "    \"constraints\": [{\"requests\": [\"gpu\", \"cpu\"],\n"
    "     \"matchAttribute\": \"resource.kubernetes.io/numaNode\"}]}}},\n"
    "  {\"name\": \"mig-1g\", \"weight\": 14, \"summary\": \"one 1g MIG slice\",\n"
    "   \"claim\": {\"devices\": {\"requests\": [\n"
    "    {\"name\": \"mig\", \"exactly\": {\"deviceClassName\": \"mig.nvidia.com\", \"selectors\": [\n"
    "     {\"cel\": {\"expression\": \"device.attributes['gpu.nvidia.com'].profile.startsWith('1g.')\"}}]}}]}}},\n"
    "  {\"name\": \"mig-3g\", \"weight\": 4, \"summary\": \"one 3g MIG slice\",\n"
    "   \"claim\": {\"devices\": {\"requests\": [\n"
    "    {\"name\": \"mig\", \"exactly\": {\"deviceClassName\": \"mig.nvidia.com\", \"selectors\": [\n"
    "     {\"cel\": {\"expression\": \"device.attributes['gpu.nvidia.com'].profile.startsWith('3g.')\"}}]}}]}}},\n"
    "  {\"name\": \"tiered\", \"weight\": 8, \"summary\": \"a GPU of tier gold or better (policy-derived)\",\n"
    "   \"claim\": {\"devices\": {\"requests\": [\n"
    "    {\"name\": \"gpu\", \"exactly\": {\"deviceClassName\": \"gpu.nvidia.com\", \"selectors\": [\n"
    "     {\"cel\": {\"expression\": \"'tier.draengine.io' in device.attributes && "
    "device.attributes['tier.draengine.io'].rank >= 3\"}}]}}]}}},\n"
    "  {\"name\": \"ext-gpu\", \"weight\": 8, \"summary\": \"nvidia.com/gpu: 1 (extended resource)\",\n"
    "   \"extendedResources\": {\"nvidia.com/gpu\": 1}},\n"
    "  {\"name\": \"amd-gpu\", \"weight\": 5, \"summary\": \"one AMD MI300X\",\n"
    "   \"claim\": {\"devices\": {\"requests\": [\n"
    "    {\"name\": \"gpu\", \"exactly\": {\"deviceClassName\": \"gpu.amd.com\", \"selectors\": [\n"
    "     {\"cel\": {\"expression\": \"device.attributes['gpu.amd.com'].type == 'amdgpu'\"}}]}}]}}},\n"
    "  {\"name\": \"amd-partition\", \"weight\": 4, \"summary\": \"two MI300X partitions of one GPU\",\n"
    "   \"claim\": {\"devices\": {\"requests\": [\n"
    "    {\"name\": \"parts\", \"exactly\": {\"deviceClassName\": \"gpu.amd.com\", \"count\": 2, \"selectors\": [\n"
    "     {\"cel\": {\"expression\": \"device.attributes['gpu.amd.com'].type == 'amdgpu-partition'\"}}]}}],\n"
    "    \"constraints\": [{\"matchAttribute\": \"gpu.amd.com/deviceID\"}]}}},\n"
    "  {\"name\": \"cpu-only\", \"weight\": 3, \"summary\": \"48 CPUs of one NUMA node\",\n"
    "   \"claim\": {\"devices\": {\"requests\": [\n"
    "    {\"name\": \"cpu\", \"exactly\": {\"deviceClassName\": \"dra.cpu\",\n"
    "     \"capacity\": {\"requests\": {\"dra.cpu/cpu\": \"48\"}}}}]}}}\n"
    " ]\n"
    "}\n";

const char *run_default_mix_text(void) { return default_mix; }

static bool dns_label(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 40) /* room for "-<pod number>" in a 63-char name */
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || (c == '-' && i > 0 && i + 1 < n)))
            return false;
    }
    return true;
}

void run_mix_free(run_mix *m)
{
    for (size_t i = 0; i < m->n; i++) {
        free(m->w[i].name);
        free(m->w[i].summary);
        json_decref(m->w[i].claim);
        json_decref(m->w[i].ext);
    }
    free(m->w);
    memset(m, 0, sizeof *m);
}

de_rc run_mix_from_json(const char *name, json_t *doc, run_mix *m, de_err *e)
{
    memset(m, 0, sizeof *m);
    m->patience = RUN_DEFAULT_PATIENCE;
    m->max_pods = RUN_DEFAULT_MAX_PODS;
    if (!json_is_object(doc))
        return de_errf(e, DE_EINVAL, "%s: a workload file is an object with a \"workloads\" list", name);
    static const char *const top_known[] = {"workloads", "patience", "maxPods", NULL};
    static const char *const w_known[] = {"name", "weight", "summary", "claim", "extendedResources", NULL};
    const char *k = de_json_unknown_key(doc, top_known);
    json_t *v;
    if (k)
        return de_errf(e, DE_EINVAL, "%s: unknown field \"%s\" (workloads, patience, maxPods)", name, k);
    json_t *p = json_object_get(doc, "patience");
    if (p) {
        if (!json_is_integer(p) || json_integer_value(p) < 1 || json_integer_value(p) > 1000000)
            return de_errf(e, DE_EINVAL, "%s: patience: must be an integer in 1..1000000", name);
        m->patience = (uint32_t)json_integer_value(p);
    }
    p = json_object_get(doc, "maxPods");
    if (p) {
        if (!json_is_integer(p) || json_integer_value(p) < 1 || json_integer_value(p) > 10000000)
            return de_errf(e, DE_EINVAL, "%s: maxPods: must be an integer in 1..10000000", name);
        m->max_pods = (uint32_t)json_integer_value(p);
    }
    json_t *ws = json_object_get(doc, "workloads");
    if (!json_is_array(ws) || json_array_size(ws) == 0)
        return de_errf(e, DE_EINVAL, "%s: workloads: must be a non-empty list", name);
    if (json_array_size(ws) > RUN_MAX_WORKLOADS)
        return de_errf(e, DE_EINVAL, "%s: workloads: at most %d", name, RUN_MAX_WORKLOADS);
    m->w = de_xcalloc(json_array_size(ws), sizeof *m->w);
    size_t i;
    json_t *w;
    json_array_foreach(ws, i, w) {
        run_workload *rw = &m->w[m->n];
        if (!json_is_object(w)) {
            de_errf(e, DE_EINVAL, "%s: workloads[%zu]: must be an object", name, i);
            goto fail;
        }
        if ((k = de_json_unknown_key(w, w_known))) {
            de_errf(e, DE_EINVAL,
                    "%s: workloads[%zu]: unknown field \"%s\" (name, weight, summary, claim, "
                    "extendedResources)", name, i, k);
            goto fail;
        }
        const char *wn = json_string_value(json_object_get(w, "name"));
        if (!wn || !dns_label(wn)) {
            de_errf(e, DE_EINVAL, "%s: workloads[%zu].name: must be a DNS label of at most 40 characters",
                    name, i);
            goto fail;
        }
        for (size_t j = 0; j < m->n; j++)
            if (!strcmp(m->w[j].name, wn)) {
                de_errf(e, DE_EINVAL, "%s: workloads[%zu].name: \"%s\" is used twice", name, i, wn);
                goto fail;
            }
        json_t *wt = json_object_get(w, "weight");
        double weight = wt ? json_number_value(wt) : 1.0;
        if ((wt && !json_is_number(wt)) || !(weight > 0) || weight > 1e9 || isnan(weight)) {
            de_errf(e, DE_EINVAL, "%s: workloads[%zu].weight: must be a positive number", name, i);
            goto fail;
        }
        json_t *claim = json_object_get(w, "claim"), *ext = json_object_get(w, "extendedResources");
        if (!claim && !ext) {
            de_errf(e, DE_EINVAL, "%s: workloads[%zu] (%s): needs a claim or extendedResources", name, i, wn);
            goto fail;
        }
        if (claim && (!json_is_object(claim) || !json_is_object(json_object_get(claim, "devices")))) {
            de_errf(e, DE_EINVAL, "%s: workloads[%zu].claim: must be a ResourceClaimSpec ({devices: ...})",
                    name, i);
            goto fail;
        }
        if (ext) {
            if (!json_is_object(ext) || json_object_size(ext) == 0) {
                de_errf(e, DE_EINVAL, "%s: workloads[%zu].extendedResources: must map names to counts", name, i);
                goto fail;
            }
            json_object_foreach(ext, k, v) {
                /* a count of devices: a whole number above 0, as the API
                 * server takes an extended resource (never a fraction) */
                de_qty q;
                de_err qe;
                de_err_clear(&qe);
                bool ok = json_is_integer(v) ? json_integer_value(v) > 0
                                             : json_is_string(v) && de_qty_parse_cstr(json_string_value(v), &q, &qe) == DE_OK &&
                                                   de_qty_sign(q) > 0 && de_qty_milli_value(q) % 1000 == 0;
                if (!ok) {
                    de_errf(e, DE_EINVAL, "%s: workloads[%zu].extendedResources[\"%s\"]: must be a whole count above 0 "
                            "(an integer or a quantity string such as \"2\")", name, i, k);
                    goto fail;
                }
            }
        }
        const char *sum = json_string_value(json_object_get(w, "summary"));
        rw->name = de_xstrdup(wn);
        rw->summary = de_xstrdup(sum ? sum : wn);
        rw->weight = weight;
        rw->claim = claim ? json_deep_copy(claim) : NULL;
        rw->ext = ext ? json_deep_copy(ext) : NULL;
        m->n++;
    }
    return DE_OK;
fail:
    run_mix_free(m);
    return e ? e->rc : DE_EINVAL;
}

void run_mix_default(run_mix *m)
{
    json_error_t je;
    json_t *doc = json_loads(default_mix, 0, &je);
    de_err e;
    if (!doc || run_mix_from_json("<built-in>", doc, m, &e) != DE_OK)
        abort(); /* the built-in text is a constant; a spec loads it */
    json_decref(doc);
}

de_rc run_mix_load(const char *path, run_mix *m, de_err *e)
{
    json_t *doc = de_doc_load_one(path, e);
    if (!doc)
        return e ? e->rc : DE_EINVAL;
    de_rc rc = run_mix_from_json(path, doc, m, e);
    json_decref(doc);
    return rc;
}

size_t run_mix_pick(const run_mix *m, const bool *stopped, sim_rng *r)
{
    double sum = 0;
    for (size_t i = 0; i < m->n; i++)
        if (!stopped[i])
            sum += m->w[i].weight;
    double x = sim_rng_unit(r) * sum;
    size_t last = m->n;
    for (size_t i = 0; i < m->n; i++) {
        if (stopped[i])
            continue;
        last = i;
        if (x < m->w[i].weight)
            return i;
        x -= m->w[i].weight;
    }
    return last; /* rounding at the top end */
}

json_t *run_mix_objects(const run_mix *m)
{
    json_t *a = json_array();
    json_array_append_new(a, json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "Namespace",
                                       "metadata", "name", RUN_NAMESPACE));
    for (size_t i = 0; i < m->n; i++) {
        if (!m->w[i].claim)
            continue;
        json_array_append_new(a, json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:O}}", "apiVersion",
                                           "resource.k8s.io/v1", "kind", "ResourceClaimTemplate", "metadata",
                                           "name", m->w[i].name, "namespace", RUN_NAMESPACE, "spec", "spec",
                                           m->w[i].claim));
    }
    return a;
}

json_t *run_mix_pod(const run_mix *m, size_t wi, uint64_t k, sim_rng *r)
{
    const run_workload *w = &m->w[wi];
    char name[80], uid[48];
    snprintf(name, sizeof name, "%s-%05llu", w->name, (unsigned long long)k);
    char h[33];
    static const char hx[] = "0123456789abcdef";
    for (int i = 0; i < 32; i += 16) {
        uint64_t v = sim_rng_next(r);
        for (int j = 0; j < 16; j++, v >>= 4)
            h[i + j] = hx[v & 15];
    }
    h[32] = 0;
    snprintf(uid, sizeof uid, "%.8s-%.4s-4%.3s-8%.3s-%.12s", h, h + 8, h + 12, h + 15, h + 18);
    json_t *res = json_object();
    if (w->claim)
        json_object_set_new(res, "claims", json_pack("[{s:s}]", "name", "devices"));
    if (w->ext) {
        json_object_set_new(res, "limits", json_deep_copy(w->ext));
        json_object_set_new(res, "requests", json_deep_copy(w->ext));
    }
    json_t *ctr = json_pack("{s:s, s:s, s:o}", "name", "main", "image", "registry.k8s.io/pause:3.10",
                            "resources", res);
    json_t *spec = json_pack("{s:[o]}", "containers", ctr);
    json_t *refs = json_array();
    if (w->claim)
        json_array_append_new(refs, json_pack("{s:s, s:s}", "name", "devices", "resourceClaimTemplateName", w->name));
    if (json_array_size(refs))
        json_object_set_new(spec, "resourceClaims", refs);
    else
        json_decref(refs);
    return json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:{s:s}}, s:o}", "apiVersion", "v1", "kind", "Pod",
                     "metadata", "name", name, "namespace", RUN_NAMESPACE, "uid", uid, "labels", "app",
                     w->name, "spec", spec);
}
