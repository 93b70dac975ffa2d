/*
 * dec_device.c - one ResourceSlice device: attributes (scalars and lists),
 * capacities with request policies (consumable capacity), counter
 * consumption and compatibility groups, taints, binding conditions,
 * per-device node selection and node-allocatable resources; validated as
 * validateDevice and its helpers do.  v1beta1/v1alpha3 devices carry these
 * fields under `basic`.
 */
#include "dec.h"
#include "../base/semver.h"

#include <stdio.h>
#include <string.h>

#define MAX_ATTRS_CAPS 32
#define MAX_ATTR_VALUES 48
#define MAX_VALUE_LEN 64

static const char *const device_fields_v1[] = {
    "name", "attributes", "capacity", "consumesCounters", "nodeName", "nodeSelector", "allNodes",
    "taints", "bindsToNode", "bindingConditions", "bindingFailureConditions",
    "allowMultipleAllocations", "nodeAllocatableResources", NULL};

static const char *const device_hints_v1[] = {
    "basic", "v1beta1 wrapped device fields in \"basic\"; in resource.k8s.io/v1 and v1beta2 they sit directly on the device",
    NULL};

static const char *const device_fields_beta1[] = {"name", "basic", NULL};
static const char *const device_hints_beta1[] = {
    "attributes", "in resource.k8s.io/v1beta1 device fields belong under \"basic\"",
    "capacity", "in resource.k8s.io/v1beta1 device fields belong under \"basic\"",
    "consumesCounters", "in resource.k8s.io/v1beta1 device fields belong under \"basic\"",
    "taints", "in resource.k8s.io/v1beta1 device fields belong under \"basic\"",
    NULL};

/* ---- attributes ----------------------------------------------------------------- */

static void split_qname(dec *d, const char *key, size_t kl, uint32_t driver, uint32_t *domain,
                        uint32_t *id, uint8_t *bare)
{
    const char *slash = memchr(key, '/', kl);
    if (slash) {
        *domain = dec_intern(d, key, (size_t)(slash - key));
        *id = dec_intern(d, slash + 1, kl - (size_t)(slash - key) - 1);
        *bare = 0;
    } else {
        *domain = driver;
        *id = dec_intern(d, key, kl);
        *bare = 1;
    }
}

static void check_version(dec *d, const char *child, const char *s, size_t n)
{
    de_semver v;
    if (de_semver_parse(s, n, &v, NULL) != DE_OK)
        dec_invalid_str(d, child, s, "must be a string compatible with semver.org spec 2.0.0");
    if (n > MAX_VALUE_LEN)
        dec_too_long(d, child, MAX_VALUE_LEN);
}

/* Decode one DeviceAttribute; returns its number of values (list items
 * count individually) and sets *is_list. */
static uint32_t dec_attr_value(dec *d, json_t *v, de_attrval *out, bool *is_list)
{
    memset(out, 0, sizeof *out);
    *is_list = false;
    if (!dec_as_obj(d, v))
        return 1;
    static const char *const af[] = {"int", "bool", "string", "version", "ints", "bools", "strings", "versions", NULL};
    dec_known(d, v, af, NULL);
    int nset = 0;
    uint32_t values = 0;
    json_t *x;
    int64_t iv;
    bool bv;
    const char *s;
    size_t sl;
    if (dec_get_int(d, v, "int", &iv)) {
        nset++;
        out->kind = DE_V_INT;
        out->n = 1;
        out->u.i = iv;
    }
    if (dec_get_bool(d, v, "bool", &bv)) {
        nset++;
        out->kind = DE_V_BOOL;
        out->n = 1;
        out->u.b = bv;
    }
    if (dec_get_str(d, v, "string", &s, &sl)) {
        nset++;
        out->kind = DE_V_STRING;
        out->n = 1;
        out->u.s = dec_intern(d, s, sl);
        if (d->validate && sl > MAX_VALUE_LEN)
            dec_too_long(d, "string", MAX_VALUE_LEN);
    }
    if (dec_get_str(d, v, "version", &s, &sl)) {
        nset++;
        out->kind = DE_V_VERSION;
        out->n = 1;
        out->u.s = dec_intern(d, s, sl);
        if (d->validate)
            check_version(d, "version", s, sl);
    }
    static const char *const lists[] = {"ints", "bools", "strings", "versions"};
    for (int k = 0; k < 4; k++) {
        x = dec_get_arr(d, v, lists[k]);
        if (!x)
            continue;
        nset++;
        *is_list = true;
        size_t n = json_array_size(x);
        size_t lm = dec_field(d, lists[k]);
        if (n == 0 && d->validate)
            dec_invalid_str(d, NULL, "[]", "must not be empty if specified");
        out->kind = (uint8_t)(DE_V_INTS + k);
        out->n = (uint32_t)n;
        values += (uint32_t)n;
        if (k == 0) {
            int64_t *arr = DEC_NEW(d, int64_t, n);
            for (size_t i = 0; arr && i < n; i++) {
                json_t *e = json_array_get(x, i);
                if (json_is_integer(e)) {
                    arr[i] = (int64_t)json_integer_value(e);
                } else {
                    size_t im = dec_index(d, i);
                    dec_errf(d, NULL, "Invalid value: %s: must be an integer", dec_json_type(e));
                    dec_pop(d, im);
                }
            }
            out->u.ints = arr;
        } else if (k == 1) {
            bool *arr = DEC_NEW(d, bool, n);
            for (size_t i = 0; arr && i < n; i++) {
                json_t *e = json_array_get(x, i);
                if (json_is_boolean(e)) {
                    arr[i] = json_is_true(e);
                } else {
                    size_t im = dec_index(d, i);
                    dec_errf(d, NULL, "Invalid value: %s: must be a boolean", dec_json_type(e));
                    dec_pop(d, im);
                }
            }
            out->u.bools = arr;
        } else {
            uint32_t cnt;
            uint32_t *arr = dec_str_list(d, x, &cnt);
            out->u.strs = arr;
            for (uint32_t i = 0; d->validate && i < cnt; i++) {
                size_t im = dec_index(d, i);
                const char *t = dec_str(d, arr[i]);
                size_t tl = de_intern_len(d->in, arr[i]);
                if (k == 2 && tl > MAX_VALUE_LEN)
                    dec_too_long(d, NULL, MAX_VALUE_LEN);
                if (k == 3)
                    check_version(d, NULL, t, tl);
                dec_pop(d, im);
            }
        }
        dec_pop(d, lm);
    }
    if (nset != 1 && d->validate)
        dec_errf(d, NULL, "Invalid value: %s: exactly one value must be specified: must set exactly "
                 "one of int, bool, string, version (or ints, bools, strings, versions)",
                 nset ? "<several>" : "\"\"");
    if (nset == 0)
        out->kind = DE_V_NONE;
    return values ? values : 1;
}

/* ---- capacity and request policies ---------------------------------------------- */

static void check_policy(dec *d, const de_qty *cap, dg_reqpolicy *p)
{
    char cb[DE_QTY_TEXT_MAX], b1[DE_QTY_TEXT_MAX], b2[DE_QTY_TEXT_MAX], msg[256];
    de_qty_format(*cap, cb, sizeof cb);
    if (p->kind == DG_RP_VALUES) {
        if (!p->has_default) {
            dec_required(d, "default", "required when validValues is defined");
            return;
        }
        size_t vm = dec_field(d, "validValues");
        bool found = false;
        for (uint32_t i = 0; i < p->nvalues; i++) {
            if (i + 1 < p->nvalues && de_qty_cmp(p->values[i], p->values[i + 1]) > 0) {
                size_t im = dec_index(d, i + 1);
                de_qty_format(p->values[i + 1], b1, sizeof b1);
                dec_invalid_str(d, NULL, b1, "values must be sorted in ascending order");
                dec_pop(d, im);
            }
        }
        if (p->nvalues > 10) {
            dec_too_many(d, NULL, p->nvalues, 10);
        } else {
            for (uint32_t i = 0; i < p->nvalues; i++) {
                size_t im = dec_index(d, i);
                if (de_qty_cmp(p->values[i], *cap) > 0) {
                    de_qty_format(p->values[i], b1, sizeof b1);
                    snprintf(msg, sizeof msg, "option is larger than capacity value: %s", cb);
                    dec_invalid_str(d, NULL, b1, msg);
                }
                if (de_qty_cmp(p->values[i], p->dflt) == 0)
                    found = true;
                for (uint32_t j = 0; j < i; j++)
                    if (de_qty_cmp(p->values[i], p->values[j]) == 0) {
                        de_qty_format(p->values[i], b1, sizeof b1);
                        dec_duplicate(d, NULL, b1);
                        break;
                    }
                dec_pop(d, im);
            }
            if (!found) {
                de_qty_format(p->dflt, b1, sizeof b1);
                dec_invalid_str(d, NULL, b1, "default value is not valid according to the requestPolicy");
            }
        }
        dec_pop(d, vm);
        return;
    }
    if (p->kind != DG_RP_RANGE)
        return;
    if (!p->has_default) {
        dec_required(d, "default", "required when validRange is defined");
        return;
    }
    size_t rm = dec_field(d, "validRange");
    if (de_qty_cmp(p->min, *cap) > 0) {
        de_qty_format(p->min, b1, sizeof b1);
        snprintf(msg, sizeof msg, "min is larger than capacity value: %s", cb);
        dec_invalid_str(d, "min", b1, msg);
    }
    de_qty_format(p->min, b2, sizeof b2);
    if (de_qty_cmp(p->dflt, p->min) < 0) {
        de_qty_format(p->dflt, b1, sizeof b1);
        snprintf(msg, sizeof msg, "default is less than min: %s", b2);
        dec_invalid_str(d, "default", b1, msg);
    }
    if (p->has_max) {
        char mb[DE_QTY_TEXT_MAX];
        de_qty_format(p->max, mb, sizeof mb);
        if (de_qty_cmp(p->min, p->max) > 0) {
            snprintf(msg, sizeof msg, "min is larger than max: %s", mb);
            dec_invalid_str(d, "max", b2, msg);
        }
        if (de_qty_cmp(p->max, *cap) > 0) {
            snprintf(msg, sizeof msg, "max is larger than capacity value: %s", cb);
            dec_invalid_str(d, "max", mb, msg);
        }
        if (de_qty_cmp(p->dflt, p->max) > 0) {
            de_qty_format(p->dflt, b1, sizeof b1);
            snprintf(msg, sizeof msg, "default is more than max: %s", mb);
            dec_invalid_str(d, "default", b1, msg);
        }
    }
    /* DRAFractionalCapacityRange: any fractional bound (or default) switches
     * the step arithmetic to milli-units, which must then be exact. */
    bool milli = false;
    const de_qty *qs[4] = {&p->dflt, &p->min, p->has_max ? &p->max : NULL, p->has_step ? &p->step : NULL};
    static const char *const qn[4] = {"default", "min", "max", "step"};
    if (d->gates.on[DE_GATE_FRACTIONAL_CAPACITY_RANGE]) {
        for (int i = 0; i < 4; i++)
            if (qs[i] && !de_qty_is_integer(*qs[i]))
                milli = true;
        if (milli) {
            bool unsafe = false;
            for (int i = 0; i < 4; i++)
                if (qs[i] && !de_qty_is_milli_exact(*qs[i])) {
                    de_qty_format(*qs[i], b1, sizeof b1);
                    dec_invalid_str(d, qn[i], b1, "value cannot be represented as a milli value");
                    unsafe = true;
                }
            if (unsafe) {
                dec_pop(d, rm);
                return;
            }
        }
    }
    if (p->has_step) {
        char sb[DE_QTY_TEXT_MAX];
        de_qty_format(p->step, sb, sizeof sb);
        if (de_qty_sign(p->step) <= 0) {
            dec_invalid_str(d, "step", sb, "must be greater than zero");
        } else {
            de_qty added;
            if (de_qty_add(p->min, p->step, &added) == DE_OK && de_qty_cmp(added, *cap) > 0) {
                de_qty_format(added, b1, sizeof b1);
                snprintf(msg, sizeof msg, "one step %s is larger than capacity value: %s", b1, cb);
                dec_invalid_str(d, "step", sb, msg);
            }
            bool unsafe = false;
            if (!milli) {
                de_qty maxi = de_qty_from_int(INT64_MAX, DE_QFMT_DECIMAL_SI);
                for (int i = 0; i < 4; i++) {
                    if (!qs[i])
                        continue;
                    de_qty_format(*qs[i], b1, sizeof b1);
                    if (de_qty_sign(*qs[i]) < 0) {
                        dec_invalid_str(d, qn[i], b1, "must be greater than or equal to 0");
                        unsafe = true;
                    } else if (de_qty_cmp(*qs[i], maxi) > 0) {
                        dec_invalid_str(d, qn[i], b1, "must not be larger than 9223372036854775807");
                        unsafe = true;
                    }
                }
            }
            if (!unsafe) {
                const de_qty *vals[2] = {&p->dflt, p->has_max ? &p->max : NULL};
                for (int i = 0; i < 2; i++) {
                    if (!vals[i])
                        continue;
                    int64_t st = milli ? de_qty_milli_value(p->step) : de_qty_value(p->step);
                    int64_t mn = milli ? de_qty_milli_value(p->min) : de_qty_value(p->min);
                    int64_t vv = milli ? de_qty_milli_value(*vals[i]) : de_qty_value(*vals[i]);
                    if (st > 0 && (vv - mn) % st != 0) {
                        de_qty_format(*vals[i], b1, sizeof b1);
                        snprintf(msg, sizeof msg, "value is not a multiple of a given step (%s) from (%s)", sb, b2);
                        dec_invalid_str(d, "step", b1, msg);
                    }
                }
            }
        }
    }
    dec_pop(d, rm);
}

static dg_reqpolicy *dec_policy(dec *d, json_t *v)
{
    if (!dec_as_obj(d, v))
        return NULL;
    static const char *const pf[] = {"default", "validValues", "validRange", NULL};
    dec_known(d, v, pf, NULL);
    dg_reqpolicy *p = DEC_NEW(d, dg_reqpolicy, 1);
    if (!p)
        return NULL;
    p->has_default = dec_get_qty(d, v, "default", &p->dflt);
    json_t *vals = dec_get_arr(d, v, "validValues");
    json_t *range = dec_get_obj(d, v, "validRange");
    if (vals && json_array_size(vals) && range && d->validate)
        dec_forbidden(d, NULL, "exactly one policy can be specified, cannot specify \"validValues\" and \"validRange\" at the same time");
    if (vals && json_array_size(vals)) {
        p->kind = DG_RP_VALUES;
        size_t n = json_array_size(vals);
        p->values = DEC_NEW(d, de_qty, n);
        size_t vm = dec_field(d, "validValues");
        for (size_t i = 0; p->values && i < n; i++) {
            size_t im = dec_index(d, i);
            if (dec_as_qty(d, json_array_get(vals, i), &p->values[p->nvalues]))
                p->nvalues++;
            dec_pop(d, im);
        }
        dec_pop(d, vm);
    } else if (range) {
        p->kind = DG_RP_RANGE;
        size_t rm = dec_field(d, "validRange");
        static const char *const rf[] = {"min", "max", "step", NULL};
        dec_known(d, range, rf, NULL);
        bool has_min = dec_get_qty(d, range, "min", &p->min);
        p->has_max = dec_get_qty(d, range, "max", &p->max);
        p->has_step = dec_get_qty(d, range, "step", &p->step);
        if (!has_min && d->validate) {
            dec_required(d, "min", "required when validRange is defined");
            p->kind = DG_RP_NONE;
        }
        dec_pop(d, rm);
    }
    return p;
}

/* ---- counters --------------------------------------------------------------------- */

dg_counter *dec_counters(dec *d, json_t *obj, uint32_t *n)
{
    *n = 0;
    json_t *m = dec_get_obj(d, obj, "counters");
    size_t cm = dec_field(d, "counters");
    size_t cnt = m ? json_object_size(m) : 0;
    if (cnt == 0) {
        if (d->validate)
            dec_required(d, NULL, NULL);
        dec_pop(d, cm);
        return NULL;
    }
    if (cnt > 32 && d->validate) {
        dec_too_many(d, NULL, cnt, 32);
        dec_pop(d, cm);
        return NULL;
    }
    dg_counter *out = DEC_NEW(d, dg_counter, cnt);
    const char *key;
    json_t *v;
    json_object_foreach(m, key, v) {
        if (!out)
            break;
        size_t km = dec_key(d, key);
        if (d->validate)
            dec_dns_label(d, NULL, key, strlen(key));
        if (dec_as_obj(d, v)) {
            static const char *const vf[] = {"value", NULL};
            dec_known(d, v, vf, NULL);
            dg_counter *c = &out[*n];
            c->name = dec_intern(d, key, strlen(key));
            if (dec_get_qty(d, v, "value", &c->value))
                (*n)++;
            else if (d->validate && !json_object_get(v, "value"))
                dec_required(d, "value", NULL);
        }
        dec_pop(d, km);
    }
    dec_pop(d, cm);
    return out;
}

/* ---- one device ---------------------------------------------------------------- */

static bool is_node_allocatable(const char *s)
{
    return !strcmp(s, "cpu") || !strcmp(s, "memory") || !strcmp(s, "ephemeral-storage") ||
           !strncmp(s, "hugepages-", 10);
}

static void dec_nars(dec *d, json_t *m, dg_device *dev)
{
    size_t n = json_object_size(m);
    if (!n)
        return;
    dev->nars = DEC_NEW(d, dg_nar, n);
    const char *key;
    json_t *v;
    json_object_foreach(m, key, v) {
        if (!dev->nars)
            break;
        size_t km = dec_key(d, key);
        dg_nar *r = &dev->nars[dev->nnars++];
        r->resource = dec_intern(d, key, strlen(key));
        if (d->validate && !is_node_allocatable(key))
            dec_invalid_str(d, NULL, key, "must be a node allocatable resource name");
        if (!dec_as_obj(d, v)) {
            dec_pop(d, km);
            continue;
        }
        static const char *const nf[] = {"mapping", "overhead", NULL};
        dec_known(d, v, nf, NULL);
        json_t *mp = dec_get_obj(d, v, "mapping"), *ov = dec_get_obj(d, v, "overhead");
        if (!mp && !ov && d->validate)
            dec_required(d, NULL, "at least one of mapping or overhead must be set");
        r->has_mapping = mp != NULL;
        r->has_overhead = ov != NULL;
        if (mp) {
            size_t mm = dec_field(d, "mapping");
            static const char *const mf[] = {"capacityKey", "capacityMultiplier", "deviceMultiplier", NULL};
            dec_known(d, mp, mf, NULL);
            const char *ck;
            size_t ckl;
            bool has_key = dec_get_str(d, mp, "capacityKey", &ck, &ckl);
            r->has_cap_mult = dec_get_qty(d, mp, "capacityMultiplier", &r->cap_mult);
            r->has_dev_mult = dec_get_qty(d, mp, "deviceMultiplier", &r->dev_mult);
            if (has_key) {
                r->capacity_key = dec_intern(d, ck, ckl);
                if (d->validate) {
                    if (!ckl)
                        dec_invalid_str(d, "capacityKey", "", "capacityKey must not be an empty string");
                    else {
                        bool exists = false;
                        for (uint32_t i = 0; i < dev->ncaps; i++) {
                            char kb[200];
                            const de_cap *c = &dev->caps[i];
                            if (c->bare)
                                snprintf(kb, sizeof kb, "%s", dec_str(d, c->name));
                            else
                                snprintf(kb, sizeof kb, "%s/%s", dec_str(d, c->domain), dec_str(d, c->name));
                            if (strlen(kb) == ckl && !memcmp(kb, ck, ckl))
                                exists = true;
                        }
                        if (!exists) {
                            char q[DE_QUOTE_MAX + 1];
                            dec_errf(d, "capacityKey", "Not found: %s", de_quote(q, ck, ckl));
                        }
                    }
                    if (!r->has_cap_mult)
                        dec_required(d, "capacityMultiplier", "capacityMultiplier is required when capacityKey is set");
                }
            } else if (r->has_cap_mult && d->validate) {
                dec_required(d, "capacityKey", "capacityKey is required when capacityMultiplier is set");
            }
            if (d->validate && r->has_cap_mult && de_qty_sign(r->cap_mult) <= 0)
                dec_errf(d, "capacityMultiplier", "Invalid value: must be positive");
            if (d->validate && r->has_dev_mult && de_qty_sign(r->dev_mult) <= 0)
                dec_errf(d, "deviceMultiplier", "Invalid value: must be positive");
            dec_pop(d, mm);
        }
        if (ov) {
            size_t om = dec_field(d, "overhead");
            static const char *const of[] = {"perPod", "perContainer", NULL};
            dec_known(d, ov, of, NULL);
            r->has_per_pod = dec_get_qty(d, ov, "perPod", &r->per_pod);
            r->has_per_container = dec_get_qty(d, ov, "perContainer", &r->per_container);
            if (d->validate) {
                if (!r->has_per_pod && !r->has_per_container)
                    dec_invalid_str(d, NULL, "", "at least one of perPod or perContainer must be set");
                if (r->has_per_pod && de_qty_sign(r->per_pod) < 0)
                    dec_errf(d, "perPod", "Invalid value: must be non-negative");
                if (r->has_per_container && de_qty_sign(r->per_container) < 0)
                    dec_errf(d, "perContainer", "Invalid value: must be non-negative");
            }
            dec_pop(d, om);
        }
        dec_pop(d, km);
    }
}

static void dec_binding(dec *d, json_t *obj, dg_device *dev)
{
    json_t *bc = dec_get_arr(d, obj, "bindingConditions");
    json_t *bf = dec_get_arr(d, obj, "bindingFailureConditions");
    size_t m = dec_field(d, "bindingConditions");
    dev->binding_conditions = dec_str_list(d, bc, &dev->nbinding_conditions);
    dec_pop(d, m);
    m = dec_field(d, "bindingFailureConditions");
    dev->binding_failure_conditions = dec_str_list(d, bf, &dev->nbinding_failure_conditions);
    dec_pop(d, m);
    if (!d->validate)
        return;
    const char *names[2] = {"bindingConditions", "bindingFailureConditions"};
    uint32_t *lists[2] = {dev->binding_conditions, dev->binding_failure_conditions};
    uint32_t ns[2] = {dev->nbinding_conditions, dev->nbinding_failure_conditions};
    for (int k = 0; k < 2; k++) {
        m = dec_field(d, names[k]);
        if (ns[k] > 4) {
            dec_too_many(d, NULL, ns[k], 4);
        } else {
            for (uint32_t i = 0; i < ns[k]; i++) {
                size_t im = dec_index(d, i);
                const char *s = dec_str(d, lists[k][i]);
                dec_label_name(d, NULL, s, strlen(s));
                for (uint32_t j = 0; j < i; j++)
                    if (lists[k][j] == lists[k][i]) {
                        dec_duplicate(d, NULL, s);
                        break;
                    }
                if (k == 1)
                    for (uint32_t j = 0; j < ns[0]; j++)
                        if (lists[0][j] == lists[1][i]) {
                            dec_invalid_str(d, NULL, s, "bindingFailureConditions must not overlap with bindingConditions");
                            break;
                        }
                dec_pop(d, im);
            }
        }
        dec_pop(d, m);
    }
    if (!ns[0] && ns[1])
        dec_errf(d, "bindingConditions", "Invalid value: []: bindingConditions are required to use bindingFailureConditions");
    if (!ns[1] && ns[0])
        dec_errf(d, "bindingFailureConditions", "Invalid value: []: bindingFailureConditions are required to use bindingConditions");
}

void dec_device(dec *d, json_t *dv, dg_device *dev, uint32_t driver, bool per_device, dec_dev_stats *st)
{
    memset(dev, 0, sizeof *dev);
    dev->binds_to_node = -1;
    dev->allow_multi = -1;
    if (!dec_as_obj(d, dv))
        return;
    bool beta = d->version == DEC_V1BETA1 || d->version == DEC_V1ALPHA3;
    const char *name;
    size_t nl;
    dev->name = dec_label_field(d, dv, "name", &name, &nl);
    json_t *body = dv;
    size_t bm = d->plen;
    if (beta) {
        dec_known(d, dv, device_fields_beta1, device_hints_beta1);
        body = dec_get_obj(d, dv, "basic");
        bm = dec_field(d, "basic");
    } else {
        dec_known(d, dv, device_fields_v1, device_hints_v1);
    }
    if (!body) {
        if (beta)
            dec_pop(d, bm);
        return;
    }
    if (beta) {
        static const char *const basic_fields[] = {
            "attributes", "capacity", "consumesCounters", "nodeName", "nodeSelector", "allNodes",
            "taints", "bindsToNode", "bindingConditions", "bindingFailureConditions",
            "allowMultipleAllocations", "nodeAllocatableResources", NULL};
        dec_known(d, body, basic_fields, NULL);
    }
    bool b;
    if (dec_get_bool(d, body, "allowMultipleAllocations", &b))
        dev->allow_multi = b;
    if (dec_get_bool(d, body, "bindsToNode", &b))
        dev->binds_to_node = b;

    /* attributes */
    uint32_t nvalues = 0;
    json_t *attrs = dec_get_obj(d, body, "attributes");
    json_t *caps = dec_get_obj(d, body, "capacity");
    size_t na = attrs ? json_object_size(attrs) : 0, nc = caps ? json_object_size(caps) : 0;
    if (d->validate && na + nc > MAX_ATTRS_CAPS)
        dec_errf(d, NULL, "Invalid value: %zu: the total number of attributes and capacities must not exceed %d",
                 na + nc, MAX_ATTRS_CAPS);
    if (na) {
        size_t am = dec_field(d, "attributes");
        dev->attrs = DEC_NEW(d, de_attr, na);
        const char *key;
        json_t *v;
        json_object_foreach(attrs, key, v) {
            if (!dev->attrs)
                break;
            size_t kl = strlen(key);
            size_t km = dec_key(d, key);
            if (d->validate)
                dec_qualified_name(d, NULL, key, kl);
            de_attr *a = &dev->attrs[dev->nattrs++];
            split_qname(d, key, kl, driver, &a->domain, &a->name, &a->bare);
            bool is_list;
            nvalues += dec_attr_value(d, v, &a->v, &is_list);
            if (is_list)
                st->lists = true;
            dec_pop(d, km);
        }
        dec_pop(d, am);
    }
    if (d->validate && nvalues > MAX_ATTR_VALUES)
        dec_errf(d, NULL, "Invalid value: %u: the total number of attribute values must not exceed %d",
                 nvalues, MAX_ATTR_VALUES);

    /* capacity */
    if (nc) {
        size_t cm = dec_field(d, "capacity");
        dev->caps = DEC_NEW(d, de_cap, nc);
        dev->policies = DEC_NEW(d, dg_reqpolicy *, nc);
        const char *key;
        json_t *v;
        json_object_foreach(caps, key, v) {
            if (!dev->caps || !dev->policies)
                break;
            size_t kl = strlen(key);
            size_t km = dec_key(d, key);
            if (d->validate)
                dec_qualified_name(d, NULL, key, kl);
            de_cap *c = &dev->caps[dev->ncaps];
            split_qname(d, key, kl, driver, &c->domain, &c->name, &c->bare);
            if (!json_is_object(v) && d->version == DEC_V1ALPHA3) {
                /* 1.31 v1alpha3: capacity was a plain quantity */
                if (dec_as_qty(d, v, &c->value))
                    dev->ncaps++;
            } else if (json_is_object(v)) {
                static const char *const cf[] = {"value", "requestPolicy", NULL};
                dec_known(d, v, cf, NULL);
                if (!dec_get_qty(d, v, "value", &c->value) && d->validate && !json_object_get(v, "value"))
                    dec_required(d, "value", NULL);
                json_t *rp = json_object_get(v, "requestPolicy");
                if (rp && !json_is_null(rp)) {
                    size_t pm = dec_field(d, "requestPolicy");
                    dev->policies[dev->ncaps] = dec_policy(d, rp);
                    if (d->validate && dev->policies[dev->ncaps]) {
                        if (dev->allow_multi != 1)
                            dec_forbidden(d, NULL, "allowMultipleAllocations must be true");
                        else
                            check_policy(d, &c->value, dev->policies[dev->ncaps]);
                    }
                    dec_pop(d, pm);
                }
                dev->ncaps++;
            } else {
                dec_errf(d, NULL, "Invalid value: %s: must be an object with a \"value\" quantity "
                         "(e.g. {value: \"16\"})", dec_json_type(v));
            }
            dec_pop(d, km);
        }
        dec_pop(d, cm);
    }

    /* consumesCounters */
    json_t *cc = dec_get_arr(d, body, "consumesCounters");
    if (cc && json_array_size(cc))
        st->consumes = true;
    dec_items it;
    if (dec_items_begin(d, cc, "consumesCounters", 2, &it)) {
        dev->consumes = DEC_NEW(d, dg_consumption, it.n);
        static const char *const cf[] = {"counterSet", "counters", "compatibilityGroups", NULL};
        for (json_t *c; dev->consumes && (c = dec_items_next_obj(d, &it, cf));) {
            dg_consumption *k = &dev->consumes[dev->nconsumes++];
            const char *cs;
            size_t csl;
            k->counterset = dec_label_field(d, c, "counterSet", &cs, &csl);
            if (d->validate) {
                for (uint32_t j = 0; j + 1 < dev->nconsumes; j++)
                    if (dev->consumes[j].counterset == k->counterset)
                        dec_duplicate(d, NULL, cs);
            }
            k->counters = dec_counters(d, c, &k->ncounters);
            json_t *groups = dec_get_arr(d, c, "compatibilityGroups");
            if (groups) {
                size_t gm = dec_field(d, "compatibilityGroups");
                uint32_t ng;
                uint32_t *g = dec_str_list(d, groups, &ng);
                if (ng > 2 && d->validate)
                    dec_too_many(d, NULL, ng, 2);
                for (uint32_t j = 0; j < ng && j < 2; j++) {
                    k->groups[j] = g[j];
                    size_t jm = dec_index(d, j);
                    if (d->validate) {
                        const char *gs = dec_str(d, g[j]);
                        dec_dns_label(d, NULL, gs, strlen(gs));
                        if (j == 1 && g[0] == g[1])
                            dec_duplicate(d, NULL, gs);
                    }
                    dec_pop(d, jm);
                }
                k->ngroups = (uint8_t)(ng < 2 ? ng : 2);
                dec_pop(d, gm);
            }
        }
        dec_items_end(d, &it);
    }

    /* taints */
    json_t *taints = dec_get_arr(d, body, "taints");
    if (taints && json_array_size(taints))
        st->taints = true;
    if (dec_items_begin(d, taints, "taints", 16, &it)) {
        dev->taints = DEC_NEW(d, dg_taint, it.n);
        for (json_t *t; dev->taints && (t = dec_items_next(d, &it));)
            dec_taint(d, t, &dev->taints[dev->ntaints++]);
        dec_items_end(d, &it);
    }

    dec_binding(d, body, dev);

    /* per-device node selection */
    json_t *nn = json_object_get(body, "nodeName"), *nsel = json_object_get(body, "nodeSelector"),
           *alln = json_object_get(body, "allNodes");
    bool has_nn = nn && !json_is_null(nn), has_ns = nsel && !json_is_null(nsel),
         has_all = alln && !json_is_null(alln);
    if (per_device) {
        int set = 0;
        if (has_nn) {
            const char *s = "";
            size_t sl = 0;
            if (dec_get_str(d, body, "nodeName", &s, &sl)) {
                if (sl) {
                    set++;
                    dev->ns_mode = DG_NS_NODE_NAME;
                    dev->node_name = dec_intern(d, s, sl);
                    if (d->validate)
                        dec_dns_subdomain(d, "nodeName", s, sl);
                } else if (d->validate) {
                    dec_invalid_str(d, "nodeName", "", "must not be empty");
                }
            }
        }
        if (has_ns) {
            set++;
            dev->ns_mode = DG_NS_NODE_SELECTOR;
            size_t sm = dec_field(d, "nodeSelector");
            dec_nodesel(d, nsel, &dev->node_selector);
            dec_pop(d, sm);
        }
        if (has_all) {
            if (dec_get_bool(d, body, "allNodes", &b)) {
                if (b) {
                    set++;
                    dev->ns_mode = DG_NS_ALL_NODES;
                } else if (d->validate) {
                    dec_errf(d, "allNodes", "Invalid value: false: must be either unset or set to true");
                }
            }
        }
        if (set != 1 && d->validate) {
            if (set == 0)
                dec_required(d, NULL, "exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when `perDeviceNodeSelection` is set to true in the ResourceSlice spec");
            else
                dec_errf(d, NULL, "Invalid value: exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when `perDeviceNodeSelection` is set to true in the ResourceSlice spec");
        }
    } else if ((has_nn || has_ns || has_all) && d->validate) {
        dec_errf(d, NULL, "Invalid value: null: `nodeName`, `nodeSelector` and `allNodes` can only be set if `perDeviceNodeSelection` is set to true in the ResourceSlice spec");
    }

    json_t *nar = dec_get_obj(d, body, "nodeAllocatableResources");
    if (nar) {
        size_t m = dec_field(d, "nodeAllocatableResources");
        dec_nars(d, nar, dev);
        dec_pop(d, m);
    }
    if (beta)
        dec_pop(d, bm);
}

