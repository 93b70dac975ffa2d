/*
 * dec_core.c - DeviceTaintRule, ResourcePoolStatusRequest, and the core v1
 * kinds scheduling needs: Node, Pod, Namespace.
 *
 * Pods are decoded strictly where scheduling reads them (spec, containers,
 * resources, resourceClaims, tolerations, affinity.nodeAffinity) so that a
 * mistyped field such as `resourceclaims` is reported instead of silently
 * dropping the claim; the rest of a Pod (volumes, probes, ...) and the whole
 * of Node/Pod status, written by the system, are read leniently.
 */
#include "dec.h"
#include "../base/map.h"

#include <stdio.h>
#include <string.h>

/* ---- DeviceTaintRule ------------------------------------------------------------ */

dg_taint_rule *dec_taint_rule(dec *d, json_t *obj)
{
    static const char *const top[] = {"apiVersion", "kind", "metadata", "spec", "status", NULL};
    dec_known(d, obj, top, NULL);
    dg_taint_rule *r = DEC_NEW(d, dg_taint_rule, 1);
    if (!r)
        return NULL;
    dec_meta(d, obj, &r->meta, DEC_META_SUBDOMAIN);
    json_t *spec = dec_get_obj(d, obj, "spec");
    size_t sm = dec_field(d, "spec");
    if (!spec) {
        if (d->validate)
            dec_required(d, "taint", NULL);
        dec_pop(d, sm);
        return r;
    }
    static const char *const sf[] = {"deviceSelector", "taint", NULL};
    static const char *const sh[] = {"selector", "pre-release drafts called it \"selector\"; the released API calls it \"deviceSelector\"", NULL};
    dec_known(d, spec, sf, sh);
    json_t *sel = dec_get_obj(d, spec, "deviceSelector");
    if (sel) {
        size_t m = dec_field(d, "deviceSelector");
        r->has_selector = true;
        static const char *const self[] = {"driver", "pool", "device", NULL};
        static const char *const selh[] = {
            "deviceClassName", "removed in Kubernetes 1.35 (tombstoned): select by driver, pool and device",
            "selectors", "removed in Kubernetes 1.35 (tombstoned): select by driver, pool and device", NULL};
        dec_known(d, sel, self, selh);
        const char *s;
        size_t sl;
        if (dec_get_str(d, sel, "driver", &s, &sl)) {
            r->driver = dec_intern(d, s, sl);
            if (d->validate)
                dec_driver_name(d, "driver", s, sl);
        }
        if (dec_get_str(d, sel, "pool", &s, &sl)) {
            r->pool = dec_intern(d, s, sl);
            if (d->validate)
                dec_pool_name(d, "pool", s, sl);
        }
        if (dec_get_str(d, sel, "device", &s, &sl)) {
            r->device = dec_intern(d, s, sl);
            if (d->validate) {
                if (!sl)
                    dec_required(d, "device", NULL);
                else
                    dec_dns_label(d, "device", s, sl);
            }
        }
        dec_pop(d, m);
    }
    json_t *taint = json_object_get(spec, "taint");
    if (!taint || json_is_null(taint)) {
        if (d->validate)
            dec_required(d, "taint", NULL);
    } else {
        size_t m = dec_field(d, "taint");
        dec_taint(d, taint, &r->taint);
        r->taint.rule = r->meta.name;
        dec_pop(d, m);
    }
    dec_pop(d, sm);
    return r;
}

/* ---- ResourcePoolStatusRequest (v1alpha3) ---------------------------------------- */

dg_pool_status_request *dec_pool_status_request(dec *d, json_t *obj)
{
    static const char *const top[] = {"apiVersion", "kind", "metadata", "spec", "status", NULL};
    dec_known(d, obj, top, NULL);
    dg_pool_status_request *r = DEC_NEW(d, dg_pool_status_request, 1);
    if (!r)
        return NULL;
    dec_meta(d, obj, &r->meta, 0);
    r->limit = 100;
    json_t *st = json_object_get(obj, "status");
    r->has_status = st && !json_is_null(st);
    json_t *spec = dec_get_obj(d, obj, "spec");
    size_t sm = dec_field(d, "spec");
    if (!spec) {
        if (d->validate)
            dec_required(d, "driver", NULL);
        dec_pop(d, sm);
        return r;
    }
    static const char *const sf[] = {"driver", "poolName", "limit", "defaultPartitionTypeAttribute", NULL};
    dec_known(d, spec, sf, NULL);
    const char *s = "";
    size_t sl = 0;
    dec_get_str(d, spec, "driver", &s, &sl);
    r->driver = dec_intern(d, s, sl);
    if (d->validate)
        dec_driver_name(d, "driver", s, sl);
    if (dec_get_str(d, spec, "poolName", &s, &sl)) {
        r->pool_name = dec_intern(d, s, sl);
        if (d->validate)
            dec_pool_name(d, "poolName", s, sl);
    }
    int64_t lim;
    if (dec_get_int(d, spec, "limit", &lim)) {
        if (d->validate && (lim < 1 || lim > 1000))
            dec_invalid_int(d, "limit", lim, "must be between 1 and 1000, inclusive");
        r->limit = (int32_t)(lim < 1 ? 1 : lim > 1000 ? 1000 : lim);
    }
    if (dec_get_str(d, spec, "defaultPartitionTypeAttribute", &s, &sl)) {
        r->default_partition_type_attr = dec_intern(d, s, sl);
        if (d->validate && d->gates.on[DE_GATE_PARTITIONABLE_DEVICES_TYPE])
            dec_fq_name(d, "defaultPartitionTypeAttribute", s, sl, NULL, NULL);
    }
    dec_pop(d, sm);
    return r;
}

/* ---- Namespace, Node ------------------------------------------------------------------- */

dg_namespace *dec_namespace(dec *d, json_t *obj)
{
    static const char *const top[] = {"apiVersion", "kind", "metadata", "spec", "status", NULL};
    dec_known(d, obj, top, NULL);
    dg_namespace *n = DEC_NEW(d, dg_namespace, 1);
    if (!n)
        return NULL;
    dec_meta(d, obj, &n->meta, DEC_META_LABEL);
    return n;
}

static dg_resource_amount *dec_amounts(dec *d, json_t *m, uint32_t *n)
{
    *n = 0;
    if (!m || !json_object_size(m))
        return NULL;
    dg_resource_amount *out = DEC_NEW(d, dg_resource_amount, json_object_size(m));
    const char *key;
    json_t *v;
    json_object_foreach(m, key, v) {
        if (!out)
            break;
        size_t km = dec_key(d, key);
        out[*n].name = dec_intern(d, key, strlen(key));
        if (dec_as_qty(d, v, &out[*n].value))
            (*n)++;
        dec_pop(d, km);
    }
    return out;
}

dg_node *dec_node(dec *d, json_t *obj)
{
    static const char *const top[] = {"apiVersion", "kind", "metadata", "spec", "status", NULL};
    dec_known(d, obj, top, NULL);
    dg_node *n = DEC_NEW(d, dg_node, 1);
    if (!n)
        return NULL;
    dec_meta(d, obj, &n->meta, DEC_META_SUBDOMAIN);
    json_t *spec = dec_get_obj(d, obj, "spec");
    if (spec) {
        size_t sm = dec_field(d, "spec");
        bool b;
        if (dec_get_bool(d, spec, "unschedulable", &b))
            n->unschedulable = b;
        dec_items it;
        if (dec_items_begin(d, dec_get_arr(d, spec, "taints"), "taints", 0, &it)) {
            n->taints = DEC_NEW(d, dg_node_taint, it.n);
            for (json_t *t; n->taints && (t = dec_items_next_obj(d, &it, NULL));) {
                dg_node_taint *x = &n->taints[n->ntaints++];
                dec_get_id(d, t, "key", &x->key);
                dec_get_id(d, t, "value", &x->value);
                dec_get_id(d, t, "effect", &x->effect);
            }
            dec_items_end(d, &it);
        }
        dec_pop(d, sm);
    }
    json_t *st = dec_get_obj(d, obj, "status");
    if (st) {
        size_t m = dec_field(d, "status");
        json_t *alloc = dec_get_obj(d, st, "allocatable");
        if (!alloc)
            alloc = dec_get_obj(d, st, "capacity");
        if (alloc) {
            size_t am = dec_field(d, "allocatable");
            n->allocatable = dec_amounts(d, alloc, &n->nallocatable);
            dec_pop(d, am);
        }
        /* KEP-5328: the features the kubelet declares (DRAOptionalNodeOperations) */
        json_t *df = dec_get_arr(d, st, "declaredFeatures");
        if (df) {
            size_t fm = dec_field(d, "declaredFeatures");
            n->declared_features = dec_str_list(d, df, &n->ndeclared_features);
            dec_pop(d, fm);
        }
        dec_pop(d, m);
    }
    return n;
}

/* ---- Pod -------------------------------------------------------------------------------- */

static const char *const pod_spec_fields[] = {
    "volumes", "initContainers", "containers", "ephemeralContainers", "restartPolicy",
    "terminationGracePeriodSeconds", "activeDeadlineSeconds", "dnsPolicy", "nodeSelector",
    "serviceAccountName", "serviceAccount", "automountServiceAccountToken", "nodeName",
    "hostNetwork", "hostPID", "hostIPC", "shareProcessNamespace", "securityContext",
    "imagePullSecrets", "hostname", "subdomain", "affinity", "schedulerName", "tolerations",
    "hostAliases", "priorityClassName", "priority", "dnsConfig", "readinessGates",
    "runtimeClassName", "enableServiceLinks", "preemptionPolicy", "overhead",
    "topologySpreadConstraints", "setHostnameAsFQDN", "os", "hostUsers", "schedulingGates",
    "resourceClaims", "resources", "hostnameOverride", "workloadRef", "schedulingGroup",
    "evictionResponders", NULL};

static const char *const container_fields[] = {
    "name", "image", "command", "args", "workingDir", "ports", "envFrom", "env", "resources",
    "resizePolicy", "restartPolicy", "restartPolicyRules", "volumeMounts", "volumeDevices",
    "livenessProbe", "readinessProbe", "startupProbe", "lifecycle", "terminationMessagePath",
    "terminationMessagePolicy", "imagePullPolicy", "securityContext", "stdin", "stdinOnce", "tty",
    NULL};

/* v1helper.IsOvercommitAllowed: native but not hugepages may have requests
 * below limits; every other resource needs request == limit. */
static bool overcommit_allowed(const char *s)
{
    return dec_native_resource_name(s, strlen(s)) && strncmp(s, "hugepages-", 10);
}

/* ValidateResourceRequirements' rules on the quantities, at the container's
 * resources: none negative, extended resources whole, a request of a
 * resource that cannot be overcommitted equal to its limit (which must be
 * set), any other request at most its limit. */
static void check_amounts(dec *d, const dg_container *c)
{
    char q[64], lq[64], msg[192];
    for (int pass = 0; pass < 2; pass++) {
        const dg_resource_amount *v = pass ? c->requests : c->limits;
        uint32_t n = pass ? c->nrequests : c->nlimits;
        size_t m = dec_field(d, pass ? "requests" : "limits");
        for (uint32_t i = 0; i < n; i++) {
            const char *name = dec_str(d, v[i].name);
            bool neg = de_qty_sign(v[i].value) < 0;
            bool frac = dec_extended_resource_name(name, strlen(name)) && de_qty_milli_value(v[i].value) % 1000;
            if (!neg && !frac)
                continue; /* the common case: nothing formatted, no path pushed */
            size_t km = dec_key(d, name);
            de_qty_format(v[i].value, q, sizeof q);
            if (neg)
                dec_invalid_str(d, NULL, q, "must be greater than or equal to 0");
            if (frac)
                dec_invalid_str(d, NULL, q, "must be an integer");
            dec_pop(d, km);
        }
        dec_pop(d, m);
    }
    bool unlimited = false, big = c->nlimits > 64; /* a hostile pod's thousands: no pairwise scan */
    de_map lim;
    if (big) {
        de_map_init(&lim);
        for (uint32_t j = 0; j < c->nlimits; j++)
            de_map_put(&lim, c->limits[j].name, j);
    }
    for (uint32_t i = 0; i < c->nrequests; i++) {
        const dg_resource_amount *r = &c->requests[i], *l = NULL;
        uint64_t at;
        if (big)
            l = de_map_get(&lim, r->name, &at) ? &c->limits[at] : NULL;
        for (uint32_t j = 0; !big && j < c->nlimits && !l; j++)
            if (c->limits[j].name == r->name)
                l = &c->limits[j];
        const char *name = dec_str(d, r->name);
        if (!l) {
            unlimited |= !overcommit_allowed(name);
            continue;
        }
        int cmp = de_qty_cmp(r->value, l->value);
        if (!cmp)
            continue;
        bool over = overcommit_allowed(name);
        if (!over || cmp > 0) {
            de_qty_format(r->value, q, sizeof q);
            de_qty_format(l->value, lq, sizeof lq);
            snprintf(msg, sizeof msg, "must be %s to %.64s limit of %s", over ? "less than or equal" : "equal", name, lq);
            size_t m = dec_field(d, "requests");
            dec_invalid_str(d, NULL, q, msg);
            dec_pop(d, m);
        }
    }
    if (big)
        de_map_destroy(&lim);
    if (unlimited)
        dec_required(d, "limits", "Limit must be set for non overcommitable resources");
}

static void dec_container(dec *d, json_t *c, dg_container *out, bool init)
{
    out->init = init;
    if (!dec_as_obj(d, c))
        return;
    dec_known(d, c, container_fields, NULL);
    const char *s;
    size_t sl;
    out->name = dec_label_field(d, c, "name", &s, &sl);
    const char *rp;
    if (init && dec_get_str(d, c, "restartPolicy", &rp, NULL) && !strcmp(rp, "Always"))
        out->sidecar = true;
    json_t *res = dec_get_obj(d, c, "resources");
    if (!res)
        return;
    size_t rm = dec_field(d, "resources");
    static const char *const rf[] = {"limits", "requests", "claims", NULL};
    dec_known(d, res, rf, NULL);
    json_t *lim = dec_get_obj(d, res, "limits"), *req = dec_get_obj(d, res, "requests");
    size_t m = dec_field(d, "limits");
    out->limits = dec_amounts(d, lim, &out->nlimits);
    dec_pop(d, m);
    m = dec_field(d, "requests");
    out->requests = dec_amounts(d, req, &out->nrequests);
    dec_pop(d, m);
    if (d->validate)
        check_amounts(d, out);
    dec_items it;
    if (dec_items_begin(d, dec_get_arr(d, res, "claims"), "claims", 0, &it)) {
        out->claims = DEC_NEW(d, dg_container_claim, it.n);
        static const char *const cf[] = {"name", "request", NULL};
        for (json_t *x; out->claims && (x = dec_items_next_obj(d, &it, cf));) {
            dg_container_claim *k = &out->claims[out->nclaims++];
            dec_get_id(d, x, "name", &k->name);
            dec_get_id(d, x, "request", &k->request);
            if (d->validate && !k->name)
                dec_required(d, "name", NULL);
        }
        dec_items_end(d, &it);
    }
    dec_pop(d, rm);
}

static void check_container_claims(dec *d, dg_pod *p)
{
    for (uint32_t i = 0; i < p->ncontainers; i++) {
        const dg_container *c = &p->containers[i];
        for (uint32_t j = 0; j < c->nclaims; j++) {
            bool found = false;
            for (uint32_t k = 0; k < p->nclaims; k++)
                if (p->claims[k].name == c->claims[j].name)
                    found = true;
            if (found || !c->claims[j].name)
                continue;
            char path[160];
            uint32_t idx = 0;
            for (uint32_t k = 0; k < i; k++)
                if (p->containers[k].init == c->init)
                    idx++;
            snprintf(path, sizeof path, "%s[%u].resources.claims[%u]", c->init ? "initContainers" : "containers",
                     idx, j);
            size_t m = dec_field(d, path);
            char q[DE_QUOTE_MAX + 1];
            const char *cn = dec_str(d, c->claims[j].name);
            de_quote(q, cn, strlen(cn));
            if (p->nclaims)
                dec_errf(d, NULL, "Not found: %s: must be the name of an entry in spec.resourceClaims", q);
            else
                dec_errf(d, NULL, "Not found: %s: no claims defined in spec.resourceClaims", q);
            dec_pop(d, m);
        }
    }
}

/* status.nodeAllocatableResourceClaimStatuses, written by the scheduler
 * (KEP-5517): what the pod's devices take from its node. */
static void dec_pod_nar(dec *d, json_t *st, dg_pod *p)
{
    dec_items it;
    if (!dec_items_begin(d, dec_get_arr(d, st, "nodeAllocatableResourceClaimStatuses"),
                         "nodeAllocatableResourceClaimStatuses", 0, &it))
        return;
    p->nar_statuses = DEC_NEW(d, dg_pod_nar_status, it.n);
    for (json_t *x; p->nar_statuses && (x = dec_items_next_obj(d, &it, NULL));) {
        dg_pod_nar_status *k = &p->nar_statuses[p->nnar_statuses++];
        dec_get_cid(d, x, "resourceClaimName", &k->claim_name);
        json_t *c = dec_get_arr(d, x, "containers");
        k->ncontainers = (uint32_t)json_array_size(c);
        json_t *mp = dec_get_arr(d, x, "mapping"), *ov = dec_get_arr(d, x, "overhead");
        size_t i;
        json_t *e;
        k->mapping = DEC_NEW(d, dg_resource_amount, json_array_size(mp) + 1);
        json_array_foreach(mp, i, e) {
            if (!k->mapping || !json_is_object(e))
                continue;
            dg_resource_amount *r = &k->mapping[k->nmapping];
            dec_get_id(d, e, "name", &r->name);
            if (dec_get_qty(d, e, "quantity", &r->value))
                k->nmapping++;
        }
        k->overhead = DEC_NEW(d, dg_nar_overhead, json_array_size(ov) + 1);
        json_array_foreach(ov, i, e) {
            if (!k->overhead || !json_is_object(e))
                continue;
            dg_nar_overhead *r = &k->overhead[k->noverhead++];
            dec_get_id(d, e, "name", &r->name);
            r->has_pod = dec_get_qty(d, e, "perPod", &r->per_pod);
            r->has_ctr = dec_get_qty(d, e, "perContainer", &r->per_ctr);
        }
    }
    dec_items_end(d, &it);
}

dg_pod *dec_pod(dec *d, json_t *obj)
{
    static const char *const top[] = {"apiVersion", "kind", "metadata", "spec", "status", NULL};
    dec_known(d, obj, top, NULL);
    dg_pod *p = DEC_NEW(d, dg_pod, 1);
    if (!p)
        return NULL;
    dec_meta(d, obj, &p->meta, DEC_META_NAMESPACED | DEC_META_SUBDOMAIN);
    json_t *spec = dec_get_obj(d, obj, "spec");
    size_t sm = dec_field(d, "spec");
    if (!spec) {
        if (d->validate)
            dec_required(d, "containers", NULL);
        dec_pop(d, sm);
        return p;
    }
    dec_known(d, spec, pod_spec_fields, NULL);
    /* KEP-5729: the pod's PodGroup (schedulingGroup, or the alpha workloadRef
     * some 1.35-era manifests still carry), asked for on every scheduling
     * attempt under GenericWorkload: kept here, so that no attempt parses
     * the pod's text for it. */
    json_t *grp = json_object_get(spec, "schedulingGroup");
    if (!json_is_string(json_object_get(grp, "podGroupName")))
        grp = json_object_get(spec, "workloadRef");
    if (json_string_length(json_object_get(grp, "podGroupName")))
        dec_get_cid(d, grp, "podGroupName", &p->group);
    dec_get_id(d, spec, "nodeName", &p->node_name);
    dec_get_id(d, spec, "schedulerName", &p->scheduler_name);
    uint32_t policy = 0;
    dec_get_id(d, spec, "preemptionPolicy", &policy);
    p->preempt_never = policy && !strcmp(dec_str(d, policy), "Never");
    json_t *ns = dec_get_obj(d, spec, "nodeSelector");
    if (ns && json_object_size(ns)) {
        p->node_selector = DEC_NEW(d, dg_kv, json_object_size(ns));
        const char *key;
        json_t *v;
        size_t m = dec_field(d, "nodeSelector");
        json_object_foreach(ns, key, v) {
            size_t km = dec_key(d, key);
            const char *s;
            size_t sl;
            if (p->node_selector && dec_as_str(d, v, &s, &sl)) {
                p->node_selector[p->nnode_selector].key = dec_intern(d, key, strlen(key));
                p->node_selector[p->nnode_selector++].value = dec_intern(d, s, sl);
            }
            dec_pop(d, km);
        }
        dec_pop(d, m);
    }
    json_t *aff = dec_get_obj(d, spec, "affinity");
    if (aff) {
        size_t am = dec_field(d, "affinity");
        static const char *const af[] = {"nodeAffinity", "podAffinity", "podAntiAffinity", NULL};
        dec_known(d, aff, af, NULL);
        json_t *na = dec_get_obj(d, aff, "nodeAffinity");
        if (na) {
            size_t nm = dec_field(d, "nodeAffinity");
            static const char *const nf[] = {"requiredDuringSchedulingIgnoredDuringExecution",
                                             "preferredDuringSchedulingIgnoredDuringExecution",
                                             "requiredDuringSchedulingRequiredDuringExecution", NULL};
            dec_known(d, na, nf, NULL);
            json_t *req = json_object_get(na, "requiredDuringSchedulingIgnoredDuringExecution");
            if (req && !json_is_null(req)) {
                size_t rm = dec_field(d, "requiredDuringSchedulingIgnoredDuringExecution");
                p->has_required_affinity = true;
                dec_nodesel(d, req, &p->required_affinity);
                dec_pop(d, rm);
            }
            dec_pop(d, nm);
        }
        dec_pop(d, am);
    }
    dec_items it;
    if (dec_items_begin(d, dec_get_arr(d, spec, "tolerations"), "tolerations", 0, &it)) {
        p->tolerations = DEC_NEW(d, dg_pod_toleration, it.n);
        static const char *const tf[] = {"key", "operator", "value", "effect", "tolerationSeconds", NULL};
        for (json_t *t; p->tolerations && (t = dec_items_next_obj(d, &it, tf));) {
            dg_pod_toleration *x = &p->tolerations[p->ntolerations++];
            dec_get_id(d, t, "key", &x->key);
            dec_get_id(d, t, "operator", &x->op);
            dec_get_id(d, t, "value", &x->value);
            dec_get_id(d, t, "effect", &x->effect);
            x->has_seconds = dec_get_int(d, t, "tolerationSeconds", &x->seconds);
        }
        dec_items_end(d, &it);
    }
    if (dec_items_begin(d, dec_get_arr(d, spec, "resourceClaims"), "resourceClaims", 0, &it)) {
        p->claims = DEC_NEW(d, dg_pod_claim_ref, it.n);
        static const char *const cf[] = {"name", "resourceClaimName", "resourceClaimTemplateName", NULL};
        for (json_t *x; p->claims && (x = dec_items_next_obj(d, &it, cf));) {
            dg_pod_claim_ref *k = &p->claims[p->nclaims++];
            const char *s = "";
            size_t sl = 0;
            dec_get_str(d, x, "name", &s, &sl);
            k->name = dec_intern(d, s, sl);
            dec_get_cid(d, x, "resourceClaimName", &k->claim_name);
            dec_get_id(d, x, "resourceClaimTemplateName", &k->template_name);
            if (d->validate) {
                if (!sl)
                    dec_required(d, "name", NULL);
                else
                    dec_dns_label(d, "name", s, sl);
                for (uint32_t j = 0; j + 1 < p->nclaims; j++)
                    if (p->claims[j].name == k->name) {
                        dec_duplicate(d, NULL, s);
                        break;
                    }
                if (!k->claim_name && !k->template_name)
                    dec_required(d, NULL, "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`");
                else if (k->claim_name && k->template_name)
                    dec_errf(d, NULL, "Invalid value: at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified");
            }
        }
        dec_items_end(d, &it);
    }
    json_t *ic = dec_get_arr(d, spec, "initContainers"), *cc = dec_get_arr(d, spec, "containers");
    size_t nic = ic ? json_array_size(ic) : 0, ncc = cc ? json_array_size(cc) : 0;
    if (ncc == 0 && d->validate)
        dec_required(d, "containers", NULL);
    if (nic + ncc) {
        p->containers = DEC_NEW(d, dg_container, nic + ncc);
        for (size_t k = 0; p->containers && k < 2; k++) {
            json_t *arr = k == 0 ? ic : cc;
            size_t n = k == 0 ? nic : ncc;
            size_t m = dec_field(d, k == 0 ? "initContainers" : "containers");
            for (size_t i = 0; i < n; i++) {
                size_t im = dec_index(d, i);
                dec_container(d, json_array_get(arr, i), &p->containers[p->ncontainers++], k == 0);
                for (uint32_t j = 0; d->validate && j + 1 < p->ncontainers; j++)
                    if (p->containers[j].name == p->containers[p->ncontainers - 1].name &&
                        p->containers[j].name) {
                        dec_duplicate(d, "name", dec_str(d, p->containers[j].name));
                        break;
                    }
                dec_pop(d, im);
            }
            dec_pop(d, m);
        }
    }
    if (d->validate)
        check_container_claims(d, p);
    dec_pop(d, sm);

    json_t *st = dec_get_obj(d, obj, "status");
    if (st) {
        size_t m = dec_field(d, "status");
        dec_get_id(d, st, "phase", &p->phase);
        if (dec_items_begin(d, dec_get_arr(d, st, "resourceClaimStatuses"), "resourceClaimStatuses", 0, &it)) {
            p->claim_statuses = DEC_NEW(d, dg_pod_claim_status, it.n);
            for (json_t *x; p->claim_statuses && (x = dec_items_next_obj(d, &it, NULL));) {
                dg_pod_claim_status *k = &p->claim_statuses[p->nclaim_statuses++];
                dec_get_id(d, x, "name", &k->name);
                dec_get_cid(d, x, "resourceClaimName", &k->claim_name);
            }
            dec_items_end(d, &it);
        }
        dec_pod_nar(d, st, p);
        dec_pop(d, m);
    }
    return p;
}
