/*
 * dec_claim.c - DeviceClass, ResourceClaim (spec and status) and
 * ResourceClaimTemplate: decode (v1/v1beta2 `exactly`/`firstAvailable`,
 * v1beta1/v1alpha3 flat requests) and validate as the API server does
 * (validateDeviceClaim, validateDeviceRequest, validateDeviceConstraint,
 * validateDeviceClaimConfiguration, validateDeviceClassSpec,
 * validateAllocationResult).
 */
#include "dec.h"
#include "../cel/cel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const exact_fields[] = {
    "deviceClassName", "selectors", "allocationMode", "count", "adminAccess", "tolerations",
    "capacity", "derivedAttributes", NULL};
static const char *const sub_fields[] = {
    "name", "deviceClassName", "selectors", "allocationMode", "count", "tolerations",
    "capacity", "derivedAttributes", NULL};
static const char *const request_fields_v1[] = {"name", "exactly", "firstAvailable", NULL};
static const char *const request_hints_v1[] = {
    "deviceClassName", "in resource.k8s.io/v1 and v1beta2 it belongs under \"exactly\"",
    "selectors", "in resource.k8s.io/v1 and v1beta2 it belongs under \"exactly\"",
    "allocationMode", "in resource.k8s.io/v1 and v1beta2 it belongs under \"exactly\"",
    "count", "in resource.k8s.io/v1 and v1beta2 it belongs under \"exactly\"",
    "adminAccess", "in resource.k8s.io/v1 and v1beta2 it belongs under \"exactly\"",
    "tolerations", "in resource.k8s.io/v1 and v1beta2 it belongs under \"exactly\"",
    "capacity", "in resource.k8s.io/v1 and v1beta2 it belongs under \"exactly\"",
    "derivedAttributes", "in resource.k8s.io/v1 and v1beta2 it belongs under \"exactly\"",
    NULL};
static const char *const request_fields_beta1[] = {
    "name", "deviceClassName", "selectors", "allocationMode", "count", "adminAccess",
    "firstAvailable", "tolerations", "capacity", "derivedAttributes", NULL};
static const char *const request_hints_beta1[] = {
    "exactly", "resource.k8s.io/v1beta1 has no \"exactly\"; its fields sit directly on the request", NULL};

/* Constraint attribute names per target ("" = all requests), gathered
 * before the requests so derived attributes can be checked (KEP-6080). */
typedef struct cattrs {
    struct {
        const char *target; /* "" for all */
        const char *attr;
    } e[32 * 33];
    size_t n;
} cattrs;

static void gather_cattrs(json_t *constraints, cattrs *ca)
{
    ca->n = 0;
    size_t n = json_is_array(constraints) ? json_array_size(constraints) : 0;
    for (size_t i = 0; i < n && i < 32; i++) {
        json_t *c = json_array_get(constraints, i);
        if (!json_is_object(c))
            continue;
        json_t *ma = json_object_get(c, "matchAttribute"), *da = json_object_get(c, "distinctAttribute");
        const char *attr = json_is_string(ma) ? json_string_value(ma)
                           : json_is_string(da) ? json_string_value(da) : NULL;
        if (!attr)
            continue;
        json_t *reqs = json_object_get(c, "requests");
        size_t nr = json_is_array(reqs) ? json_array_size(reqs) : 0;
        if (nr == 0) {
            ca->e[ca->n].target = "";
            ca->e[ca->n++].attr = attr;
        }
        for (size_t j = 0; j < nr && j < 32; j++) {
            json_t *r = json_array_get(reqs, j);
            if (!json_is_string(r))
                continue;
            ca->e[ca->n].target = json_string_value(r);
            ca->e[ca->n++].attr = attr;
        }
    }
}

static bool cattr_used(const cattrs *ca, const char *attr, const char *req, const char *parent)
{
    for (size_t i = 0; i < ca->n; i++) {
        if (strcmp(ca->e[i].attr, attr))
            continue;
        if (!ca->e[i].target[0] || !strcmp(ca->e[i].target, req) || (parent && !strcmp(ca->e[i].target, parent)))
            return true;
    }
    return false;
}

/* ---- one exact request / subrequest ------------------------------------------ */

static void dec_exact(dec *d, json_t *o, dg_exact *x, bool sub, const cattrs *ca, const char *reqname,
                      const char *parent)
{
    x->admin_access = -1;
    const char *cls = "";
    size_t cl = 0;
    dec_get_str(d, o, "deviceClassName", &cls, &cl);
    x->class_name = dec_intern(d, cls, cl);
    if (d->validate) {
        if (!cl)
            dec_required(d, "deviceClassName", NULL);
        else
            dec_dns_subdomain(d, "deviceClassName", cls, cl);
    }
    dec_selectors(d, o, "selectors", &x->selectors, &x->nselectors);
    const char *mode = "";
    size_t ml = 0;
    dec_get_str(d, o, "allocationMode", &mode, &ml);
    x->mode_raw = ml ? dec_intern(d, mode, ml) : 0;
    if (!ml || !strcmp(mode, "ExactCount"))
        x->mode = DG_AMODE_EXACT_COUNT;
    else if (!strcmp(mode, "All"))
        x->mode = DG_AMODE_ALL;
    else
        x->mode = DG_AMODE_UNKNOWN;
    x->count_set = dec_get_int(d, o, "count", &x->count);
    if (x->mode == DG_AMODE_EXACT_COUNT && !x->count_set)
        x->count = 1;
    if (d->validate) {
        if (x->mode == DG_AMODE_ALL && x->count != 0)
            dec_invalid_int(d, "count", x->count, "must not be specified when allocationMode is 'All'");
        else if (x->mode == DG_AMODE_EXACT_COUNT && x->count <= 0)
            dec_invalid_int(d, "count", x->count, "must be greater than zero");
        else if (x->mode == DG_AMODE_UNKNOWN)
            dec_unsupported(d, "allocationMode", mode, "\"All\", \"ExactCount\"");
    }
    if (!sub) {
        bool b;
        if (dec_get_bool(d, o, "adminAccess", &b))
            x->admin_access = b;
    }
    dec_items it;
    if (dec_items_begin(d, dec_get_arr(d, o, "tolerations"), "tolerations", 16, &it)) {
        x->tolerations = DEC_NEW(d, dg_toleration, it.n);
        for (json_t *t; x->tolerations && (t = dec_items_next(d, &it));)
            dec_toleration(d, t, &x->tolerations[x->ntolerations++]);
        dec_items_end(d, &it);
    }
    json_t *cap = json_object_get(o, "capacity");
    if (cap && !json_is_null(cap)) {
        size_t m = dec_field(d, "capacity");
        if (dec_as_obj(d, cap)) {
            x->has_capacity = true;
            static const char *const cf[] = {"requests", NULL};
            dec_known(d, cap, cf, NULL);
            json_t *reqs = dec_get_obj(d, cap, "requests");
            size_t n = reqs ? json_object_size(reqs) : 0;
            if (n) {
                size_t rm = dec_field(d, "requests");
                x->capacity = DEC_NEW(d, dg_capreq, n);
                const char *key;
                json_t *v;
                json_object_foreach(reqs, key, v) {
                    if (!x->capacity)
                        break;
                    size_t kl = strlen(key);
                    size_t km = dec_key(d, key);
                    if (d->validate)
                        dec_qualified_name(d, NULL, key, kl);
                    dg_capreq *c = &x->capacity[x->ncapacity];
                    c->key = dec_intern(d, key, kl);
                    const char *slash = memchr(key, '/', kl);
                    if (slash) {
                        c->domain = dec_intern(d, key, (size_t)(slash - key));
                        c->name = dec_intern(d, slash + 1, kl - (size_t)(slash - key) - 1);
                    } else {
                        c->name = c->key;
                    }
                    if (dec_as_qty(d, v, &c->value))
                        x->ncapacity++;
                    dec_pop(d, km);
                }
                dec_pop(d, rm);
            }
        }
        dec_pop(d, m);
    }
    if (dec_items_begin(d, dec_get_arr(d, o, "derivedAttributes"), "derivedAttributes", 32, &it)) {
        x->derived = DEC_NEW(d, dg_derived_attr, it.n);
        static const char *const af[] = {"name", "expression", NULL};
        for (json_t *a; x->derived && (a = dec_items_next_obj(d, &it, af));) {
            dg_derived_attr *da = &x->derived[x->nderived++];
            const char *nm = "", *ex = "";
            size_t nml = 0, exl = 0;
            dec_get_str(d, a, "name", &nm, &nml);
            dec_get_str(d, a, "expression", &ex, &exl);
            da->name = dec_intern(d, nm, nml);
            da->expr = dec_intern(d, ex, exl);
            if (d->validate) {
                if (!nml) {
                    dec_required(d, "name", NULL);
                } else {
                    dec_fq_name(d, "name", nm, nml, &da->domain, &da->id);
                    if (!cattr_used(ca, nm, reqname, parent))
                        dec_invalid_str(d, "name", nm, "must be referenced by at least one matchAttribute or distinctAttribute constraint targeting this request");
                    for (uint32_t j = 0; j + 1 < x->nderived; j++)
                        if (x->derived[j].name == da->name) {
                            dec_duplicate(d, NULL, nm);
                            break;
                        }
                }
                if (!exl)
                    dec_required(d, "expression", NULL);
                else
                    dec_cel_expression(d, "expression", ex, exl, true);
            } else if (nml) {
                const char *slash = memchr(nm, '/', nml);
                if (slash) {
                    da->domain = dec_intern(d, nm, (size_t)(slash - nm));
                    da->id = dec_intern(d, slash + 1, nml - (size_t)(slash - nm) - 1);
                }
            }
        }
        dec_items_end(d, &it);
    }
}

static bool any_flat_field(json_t *r)
{
    static const char *const flat[] = {"deviceClassName", "selectors", "allocationMode", "count",
                                       "adminAccess", "tolerations", "capacity", "derivedAttributes"};
    for (size_t i = 0; i < DE_ARRAY_LEN(flat); i++) {
        json_t *v = json_object_get(r, flat[i]);
        if (v && !json_is_null(v))
            return true;
    }
    return false;
}

static void dec_request(dec *d, json_t *r, dg_request *q, const cattrs *ca)
{
    if (!dec_as_obj(d, r))
        return;
    bool beta = d->version == DEC_V1BETA1 || d->version == DEC_V1ALPHA3;
    if (beta)
        dec_known(d, r, request_fields_beta1, request_hints_beta1);
    else
        dec_known(d, r, request_fields_v1, request_hints_v1);
    const char *name;
    size_t nl;
    q->name = dec_label_field(d, r, "name", &name, &nl);
    json_t *fa = dec_get_arr(d, r, "firstAvailable");
    bool has_fa = fa && json_array_size(fa);
    if (beta) {
        bool flat = any_flat_field(r);
        if (has_fa && flat && d->validate)
            dec_invalid_str(d, NULL, "", "exactly one of `deviceClassName` or `firstAvailable` must be specified, but both are set");
        if (!has_fa) {
            q->has_exactly = true;
            dec_exact(d, r, &q->exactly, false, ca, name, NULL);
        }
    } else {
        json_t *ex = json_object_get(r, "exactly");
        bool has_ex = ex && !json_is_null(ex);
        if (d->validate) {
            if (!has_ex && !has_fa)
                dec_required(d, NULL, "exactly one of `exactly` or `firstAvailable` is required");
            else if (has_ex && has_fa)
                dec_errf(d, NULL, "Invalid value: null: exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set");
        }
        if (has_ex && !has_fa) {
            size_t m = dec_field(d, "exactly");
            if (dec_as_obj(d, ex)) {
                dec_known(d, ex, exact_fields, NULL);
                q->has_exactly = true;
                dec_exact(d, ex, &q->exactly, false, ca, name, NULL);
            }
            dec_pop(d, m);
        }
    }
    dec_items it;
    if (!(beta && q->has_exactly) && dec_items_begin(d, fa, "firstAvailable", 8, &it)) {
        q->subs = DEC_NEW(d, dg_exact, it.n);
        for (json_t *s; q->subs && (s = dec_items_next_obj(d, &it, sub_fields));) {
            dg_exact *x = &q->subs[q->nsubs++];
            const char *sn;
            size_t snl;
            x->name = dec_label_field(d, s, "name", &sn, &snl);
            if (d->validate) {
                for (uint32_t j = 0; j + 1 < q->nsubs; j++)
                    if (q->subs[j].name == x->name) {
                        dec_duplicate(d, NULL, sn);
                        break;
                    }
            }
            char full[200];
            snprintf(full, sizeof full, "%s/%s", name, sn);
            dec_exact(d, s, x, true, ca, full, name);
        }
        dec_items_end(d, &it);
    }
}

/* "req" or "req/sub" naming a request (and subrequest) of the claim. */
static void check_request_ref(dec *d, const dg_claim_spec *spec, uint32_t ref)
{
    const char *s = dec_str(d, ref);
    size_t n = strlen(s);
    const char *slash = memchr(s, '/', n);
    if (slash && memchr(slash + 1, '/', n - (size_t)(slash - s) - 1)) {
        dec_invalid_str(d, NULL, s, "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'");
        return;
    }
    size_t rl = slash ? (size_t)(slash - s) : n;
    dec_dns_label(d, NULL, s, rl);
    if (slash)
        dec_dns_label(d, NULL, slash + 1, n - rl - 1);
    bool found = false;
    for (uint32_t i = 0; i < spec->nrequests && !found; i++) {
        const dg_request *q = &spec->requests[i];
        const char *qn = dec_str(d, q->name);
        if (strlen(qn) != rl || memcmp(qn, s, rl))
            continue;
        if (!slash) {
            found = true;
        } else {
            for (uint32_t j = 0; j < q->nsubs; j++)
                if (!strcmp(dec_str(d, q->subs[j].name), slash + 1))
                    found = true;
        }
    }
    if (!found)
        dec_invalid_str(d, NULL, s, "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'");
}

static void check_refs(dec *d, const dg_claim_spec *spec, const uint32_t *refs, uint32_t n)
{
    if (!d->validate)
        return;
    if (n > 32) {
        dec_too_many(d, NULL, n, 32);
        return;
    }
    for (uint32_t i = 0; i < n; i++) {
        size_t im = dec_index(d, i);
        check_request_ref(d, spec, refs[i]);
        for (uint32_t j = 0; j < i; j++)
            if (refs[j] == refs[i]) {
                dec_duplicate(d, NULL, dec_str(d, refs[i]));
                break;
            }
        dec_pop(d, im);
    }
}

/* The `requests` of a constraint or a config: requests of this claim. */
static uint32_t *request_refs(dec *d, json_t *obj, const dg_claim_spec *spec, uint32_t *n)
{
    json_t *rl = dec_get_arr(d, obj, "requests");
    size_t rm = dec_field(d, "requests");
    uint32_t *refs = dec_str_list(d, rl, n);
    check_refs(d, spec, refs, *n);
    dec_pop(d, rm);
    return refs;
}

/*
 * A claim spec's identity for the allocator's compiled-claim cache
 * (engine/alloc/al_ccache.c): the words its compilation reads - request and
 * subrequest names, class names, selectors, mode, count, adminAccess,
 * whether capacity requests and derived attributes are present, constraint
 * attributes and their request lists - interned as one byte string, so
 * equal identities mean equal words (never a bare hash).  Interned for good,
 * like the selector texts it is made of: pods from one template add nothing.
 * Tolerations, capacity amounts and config are read from the claim itself
 * on every call and are not part of it.  0: none (longer than the buffer).
 */
#define SPEC_IDENT_MAX 1024
static uint32_t spec_ident(dec *d, const dg_claim_spec *sp)
{
    uint32_t w[SPEC_IDENT_MAX], n = 0;
#define W(v)                          \
    do {                              \
        if (n == SPEC_IDENT_MAX)      \
            return 0;                 \
        w[n++] = (uint32_t)(v);       \
    } while (0)
    W(sp->nrequests);
    W(sp->nconstraints);
    for (uint32_t r = 0; r < sp->nrequests; r++) {
        const dg_request *q = &sp->requests[r];
        W(q->name);
        W((uint32_t)q->has_exactly | q->nsubs << 1);
        for (uint32_t s = 0; s <= q->nsubs; s++) {
            const dg_exact *x = s < q->nsubs ? &q->subs[s] : q->has_exactly ? &q->exactly : NULL;
            if (!x)
                continue;
            W(x->name);
            W(x->class_name);
            W(x->nselectors);
            for (uint32_t i = 0; i < x->nselectors; i++) {
                W(x->selectors[i].expr);
                W(x->selectors[i].has_cel);
            }
            W(x->mode);
            W((uint64_t)x->count);
            W((uint64_t)x->count >> 32);
            W((int32_t)x->admin_access);
            W((uint32_t)x->has_capacity | (uint32_t)(x->ncapacity > 0) << 1 | (uint32_t)(x->nderived > 0) << 2);
        }
    }
    for (uint32_t i = 0; i < sp->nconstraints; i++) {
        const dg_constraint *k = &sp->constraints[i];
        W(k->match_attribute);
        W(k->distinct_attribute);
        W(k->nrequests);
        for (uint32_t j = 0; j < k->nrequests; j++)
            W(k->requests[j]);
    }
#undef W
    return de_intern(d->in, (const char *)w, n * sizeof *w);
}

void dec_claim_spec(dec *d, json_t *spec, dg_claim_spec *out)
{
    memset(out, 0, sizeof *out);
    static const char *const sf[] = {"devices", NULL};
    static const char *const sh[] = {"requests", "it belongs under \"devices\"", "constraints",
                                     "it belongs under \"devices\"", "config", "it belongs under \"devices\"", NULL};
    dec_known(d, spec, sf, sh);
    json_t *dev = dec_get_obj(d, spec, "devices");
    if (!dev) {
        /* an empty claim is valid: nothing to allocate */
        return;
    }
    size_t dm = dec_field(d, "devices");
    static const char *const df[] = {"requests", "constraints", "config", NULL};
    dec_known(d, dev, df, NULL);
    json_t *reqs = dec_get_arr(d, dev, "requests");
    json_t *cons = dec_get_arr(d, dev, "constraints");
    json_t *cfg = dec_get_arr(d, dev, "config");
    cattrs *ca = de_xmalloc(sizeof *ca);
    gather_cattrs(cons, ca);
    dec_items it;
    if (dec_items_begin(d, reqs, "requests", 32, &it)) {
        out->requests = DEC_NEW(d, dg_request, it.n);
        for (json_t *r; out->requests && (r = dec_items_next(d, &it));) {
            dg_request *q = &out->requests[out->nrequests++];
            dec_request(d, r, q, ca);
            for (uint32_t j = 0; d->validate && j + 1 < out->nrequests; j++)
                if (out->requests[j].name == q->name && q->name) {
                    dec_duplicate(d, NULL, dec_str(d, q->name));
                    break;
                }
        }
        dec_items_end(d, &it);
    }
    free(ca);
    if (dec_items_begin(d, cons, "constraints", 32, &it)) {
        out->constraints = DEC_NEW(d, dg_constraint, it.n);
        static const char *const kf[] = {"requests", "matchAttribute", "distinctAttribute", NULL};
        for (json_t *c; out->constraints && (c = dec_items_next_obj(d, &it, kf));) {
            dg_constraint *k = &out->constraints[out->nconstraints++];
            k->requests = request_refs(d, c, out, &k->nrequests);
            const char *ma, *da;
            size_t mal, dal;
            bool has_ma = dec_get_str(d, c, "matchAttribute", &ma, &mal);
            bool has_da = dec_get_str(d, c, "distinctAttribute", &da, &dal);
            if (has_ma) {
                k->match_attribute = dec_intern(d, ma, mal);
                if (d->validate)
                    dec_fq_name(d, "matchAttribute", ma, mal, &k->ma_domain, &k->ma_id);
                else
                    dec_fq_name(d, NULL, ma, mal, &k->ma_domain, &k->ma_id);
            }
            if (has_da) {
                k->distinct_attribute = dec_intern(d, da, dal);
                if (d->validate)
                    dec_fq_name(d, "distinctAttribute", da, dal, &k->da_domain, &k->da_id);
            }
            bool present_ma = json_object_get(c, "matchAttribute") && !json_is_null(json_object_get(c, "matchAttribute"));
            bool present_da = json_object_get(c, "distinctAttribute") && !json_is_null(json_object_get(c, "distinctAttribute"));
            if (d->validate && !present_ma && !present_da)
                dec_required(d, NULL, "exactly one of \"matchAttribute\" or \"distinctAttribute\" is required");
            else if (d->validate && present_ma && present_da)
                dec_errf(d, NULL, "Invalid value: exactly one of \"matchAttribute\" or \"distinctAttribute\" is required, but multiple fields are set");
        }
        dec_items_end(d, &it);
    }
    if (dec_items_begin(d, cfg, "config", 32, &it)) {
        out->config = DEC_NEW(d, dg_claim_config, it.n);
        static const char *const cf[] = {"requests", "opaque", NULL};
        for (json_t *c; out->config && (c = dec_items_next_obj(d, &it, cf));) {
            dg_claim_config *k = &out->config[out->nconfig++];
            k->requests = request_refs(d, c, out, &k->nrequests);
            dec_opaque(d, c, &k->opaque, &k->has_opaque);
        }
        dec_items_end(d, &it);
    }
    if (d->validate && d->derived_cost > CEL_COST_LIMIT)
        dec_forbidden(d, NULL, "too complex, total cost of derived attribute CEL expressions in the claim exceeds cost limit");
    d->derived_cost = 0;
    out->ident = spec_ident(d, out);
    dec_pop(d, dm);
}

/* ---- allocation result (claim status) ---------------------------------------- */

void dec_allocation(dec *d, json_t *v, dg_allocation *out)
{
    memset(out, 0, sizeof *out);
    if (!dec_as_obj(d, v))
        return;
    static const char *const af[] = {"devices", "nodeSelector", "allocationTimestamp", NULL};
    dec_known(d, v, af, NULL);
    json_t *devs = dec_get_obj(d, v, "devices");
    if (devs) {
        size_t dm = dec_field(d, "devices");
        static const char *const df[] = {"results", "config", NULL};
        dec_known(d, devs, df, NULL);
        dec_items it;
        if (dec_items_begin(d, dec_get_arr(d, devs, "results"), "results", 0, &it)) {
            if (it.n > 32 && d->validate)
                dec_too_many(d, NULL, it.n, 32);
            out->results = DEC_NEW(d, dg_result, it.n);
            static const char *const rf[] = {"request", "driver", "pool", "device", "adminAccess",
                                             "tolerations", "bindingConditions", "bindingFailureConditions",
                                             "shareID", "consumedCapacity", "skipNodeOperations", NULL};
            for (json_t *r; out->results && (r = dec_items_next_obj(d, &it, rf));) {
                dg_result *x = &out->results[out->nresults++];
                x->admin_access = -1;
                const char *s;
                size_t sl;
                if (dec_get_str(d, r, "request", &s, &sl))
                    x->request = dec_intern(d, s, sl);
                if (dec_get_str(d, r, "driver", &s, &sl)) {
                    x->driver = dec_intern(d, s, sl);
                    if (d->validate)
                        dec_driver_name(d, "driver", s, sl);
                } else if (d->validate) {
                    dec_required(d, "driver", NULL);
                }
                if (dec_get_str(d, r, "pool", &s, &sl)) {
                    x->pool = dec_intern(d, s, sl);
                    if (d->validate)
                        dec_pool_name(d, "pool", s, sl);
                } else if (d->validate) {
                    dec_required(d, "pool", NULL);
                }
                if (dec_get_str(d, r, "device", &s, &sl)) {
                    x->device = dec_intern(d, s, sl);
                    if (d->validate)
                        dec_dns_label(d, "device", s, sl);
                } else if (d->validate) {
                    dec_required(d, "device", NULL);
                }
                bool b;
                if (dec_get_bool(d, r, "adminAccess", &b))
                    x->admin_access = b;
                if (dec_get_str(d, r, "shareID", &s, &sl)) {
                    x->share_id = dec_intern(d, s, sl);
                    if (d->validate)
                        dec_uuid(d, "shareID", s, sl);
                }
                dec_items tt;
                if (dec_items_begin(d, dec_get_arr(d, r, "tolerations"), "tolerations", 0, &tt)) {
                    x->tolerations = DEC_NEW(d, dg_toleration, tt.n);
                    for (json_t *t; x->tolerations && (t = dec_items_next(d, &tt));)
                        dec_toleration(d, t, &x->tolerations[x->ntolerations++]);
                    dec_items_end(d, &tt);
                }
                size_t lm = dec_field(d, "bindingConditions");
                x->binding_conditions = dec_str_list(d, dec_get_arr(d, r, "bindingConditions"), &x->nbinding_conditions);
                dec_pop(d, lm);
                lm = dec_field(d, "bindingFailureConditions");
                x->binding_failure_conditions = dec_str_list(d, dec_get_arr(d, r, "bindingFailureConditions"),
                                                             &x->nbinding_failure_conditions);
                dec_pop(d, lm);
                lm = dec_field(d, "skipNodeOperations");
                x->skip_node_ops = dec_str_list(d, dec_get_arr(d, r, "skipNodeOperations"), &x->nskip_node_ops);
                dec_pop(d, lm);
                json_t *cc = dec_get_obj(d, r, "consumedCapacity");
                if (cc) {
                    x->has_consumed = true;
                    size_t cm = dec_field(d, "consumedCapacity");
                    x->consumed = DEC_NEW(d, dg_consumed, json_object_size(cc));
                    const char *key;
                    json_t *q;
                    json_object_foreach(cc, key, q) {
                        if (!x->consumed)
                            break;
                        size_t km = dec_key(d, key);
                        dg_consumed *c = &x->consumed[x->nconsumed];
                        c->key = dec_intern(d, key, strlen(key));
                        if (dec_as_qty(d, q, &c->value))
                            x->nconsumed++;
                        dec_pop(d, km);
                    }
                    dec_pop(d, cm);
                }
            }
            dec_items_end(d, &it);
        }
        if (dec_items_begin(d, dec_get_arr(d, devs, "config"), "config", 0, &it)) {
            if (it.n > 64 && d->validate)
                dec_too_many(d, NULL, it.n, 64);
            out->config = DEC_NEW(d, dg_alloc_config, it.n);
            static const char *const cf[] = {"source", "requests", "opaque", NULL};
            for (json_t *c; out->config && (c = dec_items_next_obj(d, &it, cf));) {
                dg_alloc_config *k = &out->config[out->nconfig++];
                const char *src = "";
                size_t srl = 0;
                dec_get_str(d, c, "source", &src, &srl);
                if (!strcmp(src, "FromClaim"))
                    k->source = DG_CFG_FROM_CLAIM;
                else if (!strcmp(src, "FromClass"))
                    k->source = DG_CFG_FROM_CLASS;
                else if (d->validate && !srl)
                    dec_required(d, "source", NULL);
                else if (d->validate)
                    dec_unsupported(d, "source", src, "\"FromClaim\", \"FromClass\"");
                size_t rm = dec_field(d, "requests");
                k->requests = dec_str_list(d, dec_get_arr(d, c, "requests"), &k->nrequests);
                dec_pop(d, rm);
                bool has;
                dec_opaque(d, c, &k->opaque, &has);
            }
            dec_items_end(d, &it);
        }
        dec_pop(d, dm);
    }
    json_t *ns = json_object_get(v, "nodeSelector");
    if (ns && !json_is_null(ns)) {
        size_t m = dec_field(d, "nodeSelector");
        out->has_node_selector = true;
        dec_nodesel(d, ns, &out->node_selector);
        dec_pop(d, m);
    }
    dec_time(d, v, "allocationTimestamp", &out->allocation_time);
}

void dec_claim_status(dec *d, json_t *st, dg_claim *c)
{
    static const char *const sf[] = {"allocation", "reservedFor", "devices", NULL};
    dec_known(d, st, sf, NULL);
    json_t *al = json_object_get(st, "allocation");
    if (al && !json_is_null(al)) {
        size_t m = dec_field(d, "allocation");
        c->allocated = true;
        dec_allocation(d, al, &c->allocation);
        dec_pop(d, m);
    }
    dec_items it;
    if (dec_items_begin(d, dec_get_arr(d, st, "reservedFor"), "reservedFor", 0, &it)) {
        if (it.n > 256 && d->validate)
            dec_too_many(d, NULL, it.n, 256);
        if (!c->allocated && d->validate)
            dec_forbidden(d, NULL, "may not be specified when `allocated` is not set");
        c->reserved_for = DEC_NEW(d, dg_consumer, it.n);
        static const char *const rff[] = {"apiGroup", "resource", "name", "uid", NULL};
        for (json_t *r; c->reserved_for && (r = dec_items_next_obj(d, &it, rff));) {
            dg_consumer *x = &c->reserved_for[c->nreserved_for++];
            dec_get_id(d, r, "apiGroup", &x->api_group);
            dec_get_id(d, r, "resource", &x->resource);
            dec_get_cid(d, r, "name", &x->name);
            dec_get_cid(d, r, "uid", &x->uid);
            /* status is written by the system (the API server ignores it
             * on create); only a duplicate uid would corrupt our state */
            if (d->validate) {
                for (uint32_t j = 0; x->uid && j + 1 < c->nreserved_for; j++)
                    if (c->reserved_for[j].uid == x->uid) {
                        dec_duplicate(d, NULL, dec_str(d, x->uid));
                        break;
                    }
            }
        }
        dec_items_end(d, &it);
    }
    if (dec_items_begin(d, dec_get_arr(d, st, "devices"), "devices", 0, &it)) {
        c->devices = DEC_NEW(d, dg_device_status, it.n);
        static const char *const df[] = {"driver", "pool", "device", "shareID", "conditions",
                                         "data", "networkData", NULL};
        for (json_t *r; c->devices && (r = dec_items_next_obj(d, &it, df));) {
            dg_device_status *x = &c->devices[c->ndevices++];
            dec_get_id(d, r, "driver", &x->driver);
            dec_get_id(d, r, "pool", &x->pool);
            dec_get_id(d, r, "device", &x->device);
            dec_get_id(d, r, "shareID", &x->share_id);
            json_t *data = json_object_get(r, "data");
            if (data && !json_is_null(data))
                dec_json_text(d, data, &x->data);
            json_t *net = json_object_get(r, "networkData");
            if (net && !json_is_null(net)) {
                size_t nm = dec_field(d, "networkData");
                dec_network_data(d, net);
                dec_pop(d, nm);
            }
            json_t *conds = dec_get_arr(d, r, "conditions");
            if (conds && json_array_size(conds)) {
                size_t cn = json_array_size(conds);
                size_t cm = dec_field(d, "conditions");
                if (cn > 8 && d->validate)
                    dec_too_many(d, NULL, cn, 8);
                x->conditions = DEC_NEW(d, dg_condition, cn);
                for (size_t k = 0; x->conditions && k < cn; k++) {
                    json_t *co = json_array_get(conds, k);
                    if (!json_is_object(co))
                        continue;
                    dg_condition *y = &x->conditions[x->nconditions++];
                    size_t km = dec_index(d, k);
                    dec_get_id(d, co, "type", &y->type);
                    dec_get_id(d, co, "status", &y->status);
                    dec_get_id(d, co, "reason", &y->reason);
                    dec_get_id(d, co, "message", &y->message);
                    dec_pop(d, km);
                }
                dec_pop(d, cm);
            }
            bool found = false;
            for (uint32_t k = 0; c->allocated && k < c->allocation.nresults; k++) {
                const dg_result *res = &c->allocation.results[k];
                if (res->driver == x->driver && res->pool == x->pool && res->device == x->device &&
                    res->share_id == x->share_id)
                    found = true;
            }
            if (!found && d->validate)
                dec_errf(d, NULL, "Invalid value: \"%s/%s/%s\": must be an allocated device in the claim",
                         dec_str(d, x->driver), dec_str(d, x->pool), dec_str(d, x->device));
        }
        dec_items_end(d, &it);
    }
    /* result request references must name requests of this claim */
    if (c->allocated && d->validate) {
        size_t m = dec_field(d, "allocation");
        size_t dm = dec_field(d, "devices");
        size_t rm = dec_field(d, "results");
        for (uint32_t i = 0; i < c->allocation.nresults; i++) {
            size_t im = dec_index(d, i);
            size_t qm = dec_field(d, "request");
            if (!c->allocation.results[i].request)
                dec_required(d, NULL, NULL);
            else
                check_request_ref(d, &c->spec, c->allocation.results[i].request);
            dec_pop(d, qm);
            dec_pop(d, im);
        }
        dec_pop(d, rm);
        dec_pop(d, dm);
        dec_pop(d, m);
    }
}

/* ---- the kinds ------------------------------------------------------------------ */

dg_class *dec_class(dec *d, json_t *obj)
{
    static const char *const top[] = {"apiVersion", "kind", "metadata", "spec", NULL};
    dec_known(d, obj, top, NULL);
    dg_class *c = DEC_NEW(d, dg_class, 1);
    if (!c)
        return NULL;
    dec_meta(d, obj, &c->meta, DEC_META_SUBDOMAIN);
    json_t *spec = dec_get_obj(d, obj, "spec");
    if (!spec)
        return c;
    size_t sm = dec_field(d, "spec");
    static const char *const sf[] = {"selectors", "config", "extendedResourceName", NULL};
    dec_known(d, spec, sf, NULL);
    dec_selectors(d, spec, "selectors", &c->selectors, &c->nselectors);
    dec_items it;
    if (dec_items_begin(d, dec_get_arr(d, spec, "config"), "config", 32, &it)) {
        c->config = DEC_NEW(d, dg_class_config, it.n);
        static const char *const cf[] = {"opaque", NULL};
        for (json_t *x; c->config && (x = dec_items_next_obj(d, &it, cf));) {
            dg_class_config *k = &c->config[c->nconfig++];
            dec_opaque(d, x, &k->opaque, &k->has_opaque);
        }
        dec_items_end(d, &it);
    }
    const char *ern;
    size_t el;
    if (dec_get_str(d, spec, "extendedResourceName", &ern, &el)) {
        c->extended_resource_name = dec_intern(d, ern, el);
        if (d->validate && !dec_extended_resource_name(ern, el))
            dec_invalid_str(d, "extendedResourceName", ern, "must be a valid extended resource name");
    }
    dec_pop(d, sm);
    return c;
}

dg_claim *dec_claim(dec *d, json_t *obj)
{
    static const char *const top[] = {"apiVersion", "kind", "metadata", "spec", "status", NULL};
    static const char *const hints[] = {"devices", "it belongs under \"spec\"", NULL};
    dec_known(d, obj, top, hints);
    dg_claim *c = DEC_NEW(d, dg_claim, 1);
    if (!c)
        return NULL;
    dec_meta(d, obj, &c->meta, DEC_META_NAMESPACED | DEC_META_SUBDOMAIN);
    json_t *spec = dec_get_obj(d, obj, "spec");
    if (spec) {
        size_t sm = dec_field(d, "spec");
        dec_claim_spec(d, spec, &c->spec);
        dec_pop(d, sm);
    } else if (d->validate && !json_object_get(obj, "spec")) {
        dec_required(d, "spec", NULL);
    }
    json_t *st = dec_get_obj(d, obj, "status");
    if (st) {
        size_t m = dec_field(d, "status");
        dec_claim_status(d, st, c);
        dec_pop(d, m);
    }
    return c;
}

dg_claim_template *dec_template(dec *d, json_t *obj)
{
    static const char *const top[] = {"apiVersion", "kind", "metadata", "spec", NULL};
    dec_known(d, obj, top, NULL);
    dg_claim_template *t = DEC_NEW(d, dg_claim_template, 1);
    if (!t)
        return NULL;
    dec_meta(d, obj, &t->meta, DEC_META_NAMESPACED | DEC_META_SUBDOMAIN);
    json_t *spec = dec_get_obj(d, obj, "spec");
    if (!spec) {
        if (d->validate && !json_object_get(obj, "spec"))
            dec_required(d, "spec", NULL);
        return t;
    }
    size_t sm = dec_field(d, "spec");
    static const char *const sf[] = {"metadata", "spec", NULL};
    static const char *const sh[] = {"devices", "a ResourceClaimTemplate nests the claim spec: spec.spec.devices", NULL};
    dec_known(d, spec, sf, sh);
    json_t *md = dec_get_obj(d, spec, "metadata");
    if (md) {
        size_t mm = dec_field(d, "metadata");
        static const char *const mf[] = {"name", "generateName", "namespace", "labels", "annotations",
                                         "finalizers", "ownerReferences", "uid", "resourceVersion",
                                         "generation", "creationTimestamp", "deletionTimestamp",
                                         "deletionGracePeriodSeconds", "selfLink", "managedFields", NULL};
        dec_known(d, md, mf, NULL);
        json_t *l = dec_get_obj(d, md, "labels");
        const char *key;
        json_t *v;
        if (l && json_object_size(l)) {
            t->labels = DEC_NEW(d, dg_kv, json_object_size(l));
            json_object_foreach(l, key, v) {
                if (t->labels && json_is_string(v)) {
                    t->labels[t->nlabels].key = dec_intern(d, key, strlen(key));
                    t->labels[t->nlabels++].value = dec_intern(d, json_string_value(v), json_string_length(v));
                }
            }
        }
        json_t *an = dec_get_obj(d, md, "annotations");
        if (an && json_object_size(an)) {
            t->annotations = DEC_NEW(d, dg_kv, json_object_size(an));
            json_object_foreach(an, key, v) {
                if (t->annotations && json_is_string(v)) {
                    t->annotations[t->nannotations].key = dec_intern(d, key, strlen(key));
                    t->annotations[t->nannotations++].value = dec_intern(d, json_string_value(v), json_string_length(v));
                }
            }
        }
        dec_pop(d, mm);
    }
    json_t *inner = dec_get_obj(d, spec, "spec");
    if (inner) {
        size_t im = dec_field(d, "spec");
        dec_claim_spec(d, inner, &t->spec);
        dec_pop(d, im);
    } else if (d->validate && !json_object_get(spec, "spec")) {
        dec_required(d, "spec", NULL);
    }
    dec_pop(d, sm);
    return t;
}
