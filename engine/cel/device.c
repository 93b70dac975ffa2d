/*
 * device.c - the `device` variable of DRA selectors as lazy views over a
 * de_devview (../shared/docs/cel.md §9, dra-model.md §3.1).
 *
 * Kubernetes builds nested Go maps per evaluation; we answer the same
 * questions from the device's flat attribute arrays by interned ids:
 *   device.attributes          MK_ATTRS    domain -> MK_ATTR_DOM
 *   device.attributes["d"]     MK_ATTR_DOM id -> value (derived attributes
 *                              shadow published ones, KEP-6080)
 *   device.capacity[...]       MK_CAPS / MK_CAP_DOM, values are quantities
 * An unknown domain is an empty map (Kubernetes' map-with-default), even
 * for a non-string key, and has() on the outer map is therefore always true
 * for a string key, while `"d" in device.attributes` is false: that is how
 * the upstream wrapper behaves (Find is overridden, Contains is not).
 * Iteration order is first appearance in the device's arrays, which is
 * deterministic (upstream's is Go map order).
 */
#include "cel_int.h"

#include "../base/intern.h"

#include <stdio.h>
#include <string.h>

static const char *istr(cel_ctx *c, uint32_t id, size_t *n)
{
    *n = de_intern_len(c->env->in, id);
    return de_intern_str(c->env->in, id);
}

int cel_device_field_id(const char *f, size_t n)
{
    if (n == 6 && !memcmp(f, "driver", 6))
        return CD_DRIVER;
    if (n == 10 && !memcmp(f, "attributes", 10))
        return CD_ATTRIBUTES;
    if (n == 8 && !memcmp(f, "capacity", 8))
        return CD_CAPACITY;
    if (n == 24 && !memcmp(f, "allowMultipleAllocations", 24))
        return CD_MULTI;
    return CD_UNKNOWN;
}

/* `at` is the selection node (its name is the field, for the error). */
cel_v cel_device_field_at(cel_ctx *c, const cel_node *at, cel_v dev, int field)
{
    const de_devview *d = dev.u.dev;
    switch (field) {
    case CD_DRIVER: {
        size_t len;
        const char *s = istr(c, d->driver, &len);
        return cv_str(s, len);
    }
    case CD_ATTRIBUTES: {
        cel_v v = {.t = CV_MAP, .sub = MK_ATTRS};
        v.u.dev = d;
        return v;
    }
    case CD_CAPACITY: {
        cel_v v = {.t = CV_MAP, .sub = MK_CAPS};
        v.u.dev = d;
        return v;
    }
    case CD_MULTI:
        return cv_bool(d->allow_multi == 1);
    default:
        return cel_err_kind(c, at, CE_NO_SUCH_KEY, "no such key: %.*s", (int)at->nlen, at->name);
    }
}

cel_v cel_device_field(cel_ctx *c, const cel_node *at, cel_v dev, const char *f, size_t n)
{
    int field = cel_device_field_id(f, n);
    if (field == CD_UNKNOWN)
        return cel_err_kind(c, at, CE_NO_SUCH_KEY, "no such key: %.*s", (int)n, f);
    return cel_device_field_at(c, at, dev, field);
}

static cel_v parse_version(cel_ctx *c, const cel_node *at, uint32_t id)
{
    size_t n;
    const char *s = istr(c, id, &n);
    de_semver *sv = cel_alloc(c, sizeof *sv);
    de_err e;
    de_err_clear(&e);
    if (de_semver_parse(s, n, sv, &e) != DE_OK)
        return cel_err(c, at, "parse semantic version: %s", e.msg);
    cel_v v = {.t = CV_SEMVER};
    v.u.sv = sv;
    return v;
}

cel_v cel_device_attr_value(cel_ctx *c, const cel_node *at, const de_attr *a)
{
    const de_attrval *v = &a->v;
    switch (v->kind) {
    case DE_V_INT: return cv_int(v->u.i);
    case DE_V_BOOL: return cv_bool(v->u.b);
    case DE_V_STRING: {
        size_t n;
        const char *s = istr(c, v->u.s, &n);
        return cv_str(s, n);
    }
    case DE_V_VERSION: return parse_version(c, at, v->u.s);
    case DE_V_INTS:
    case DE_V_BOOLS:
    case DE_V_STRINGS:
    case DE_V_VERSIONS: {
        cel_v *items = cel_alloc(c, (v->n ? v->n : 1) * sizeof *items);
        for (uint32_t i = 0; i < v->n; i++) {
            switch (v->kind) {
            case DE_V_INTS: items[i] = cv_int(v->u.ints[i]); break;
            case DE_V_BOOLS: items[i] = cv_bool(v->u.bools[i]); break;
            case DE_V_STRINGS: {
                size_t n;
                const char *s = istr(c, v->u.strs[i], &n);
                items[i] = cv_str(s, n);
                break;
            }
            default:
                items[i] = parse_version(c, at, v->u.strs[i]);
                if (items[i].t == CV_ERR)
                    return items[i];
                break;
            }
        }
        return cv_list(items, v->n);
    }
    default:
        return cel_err(c, at, "unsupported attribute value");
    }
}

static cel_v no_key(cel_ctx *c, const cel_node *at, const char *name, size_t n)
{
    return cel_err_kind(c, at, CE_NO_SUCH_KEY, "no such key: %.*s", (int)n, name);
}

cel_v cel_device_attr(cel_ctx *c, const cel_node *at, uint32_t domain, uint32_t name,
                      const char *nametext, size_t namelen)
{
    const de_attr *a = de_devview_attr(c->dev, domain, name);
    if (!a)
        return no_key(c, at, nametext, namelen);
    return cel_device_attr_value(c, at, a);
}

static cel_v qty_val(const de_cap *cap)
{
    cel_v v = {.t = CV_QTY};
    v.u.q = &cap->value;
    return v;
}

cel_v cel_device_cap(cel_ctx *c, const cel_node *at, uint32_t domain, uint32_t name,
                     const char *nametext, size_t namelen)
{
    const de_cap *cap = de_devview_cap(c->dev, domain, name);
    if (!cap)
        return no_key(c, at, nametext, namelen);
    return qty_val(cap);
}

/* ---- lazy maps ----------------------------------------------------------------------- */

/* The i-th attribute of the combined (derived first) sequence. */
static const de_attr *attr_at(const de_devview *d, uint32_t i)
{
    return i < d->nderived ? &d->derived[i] : &d->attrs[i - d->nderived];
}

static uint32_t attr_total(const de_devview *d) { return d->nderived + d->nattrs; }

/* Distinct domains (MK_ATTRS / MK_CAPS), in first-appearance order: returns
 * the count, and with want >= 0 stores the want-th domain id. */
static uint32_t domains(const de_devview *d, bool caps, int64_t want, uint32_t *out)
{
    uint32_t total = caps ? d->ncaps : attr_total(d), cnt = 0;
    for (uint32_t i = 0; i < total; i++) {
        uint32_t dom = caps ? d->caps[i].domain : attr_at(d, i)->domain;
        bool seen = false;
        for (uint32_t j = 0; j < i && !seen; j++)
            seen = (caps ? d->caps[j].domain : attr_at(d, j)->domain) == dom;
        if (seen)
            continue;
        if ((int64_t)cnt == want)
            *out = dom;
        cnt++;
    }
    return cnt;
}

/* Distinct names within a domain (derived shadow published). */
static uint32_t names(const de_devview *d, bool caps, uint32_t dom, int64_t want, uint32_t *idx)
{
    uint32_t total = caps ? d->ncaps : attr_total(d), cnt = 0;
    for (uint32_t i = 0; i < total; i++) {
        uint32_t di = caps ? d->caps[i].domain : attr_at(d, i)->domain;
        if (di != dom)
            continue;
        uint32_t ni = caps ? d->caps[i].name : attr_at(d, i)->name;
        bool seen = false;
        for (uint32_t j = 0; j < i && !seen; j++) {
            uint32_t dj = caps ? d->caps[j].domain : attr_at(d, j)->domain;
            uint32_t nj = caps ? d->caps[j].name : attr_at(d, j)->name;
            seen = dj == dom && nj == ni;
        }
        if (seen)
            continue;
        if ((int64_t)cnt == want)
            *idx = i;
        cnt++;
    }
    return cnt;
}

static bool is_caps(cel_v m) { return m.sub == MK_CAPS || m.sub == MK_CAP_DOM; }

uint32_t cel_devmap_size(cel_ctx *c, cel_v m)
{
    (void)c;
    const de_devview *d = m.u.dev;
    if (m.sub == MK_ATTRS || m.sub == MK_CAPS)
        return domains(d, is_caps(m), -1, NULL);
    return names(d, is_caps(m), m.n, -1, NULL);
}

static cel_v domain_map(cel_v outer, uint32_t dom)
{
    cel_v v = {.t = CV_MAP, .sub = outer.sub == MK_ATTRS ? MK_ATTR_DOM : MK_CAP_DOM, .n = dom};
    v.u.dev = outer.u.dev;
    return v;
}

static bool has_domain(const de_devview *d, bool caps, uint32_t dom)
{
    uint32_t total = caps ? d->ncaps : attr_total(d);
    for (uint32_t i = 0; i < total; i++)
        if ((caps ? d->caps[i].domain : attr_at(d, i)->domain) == dom)
            return true;
    return false;
}

bool cel_devmap_find(cel_ctx *c, cel_v m, cel_v key, cel_v *out)
{
    const de_devview *d = m.u.dev;
    uint32_t id = UINT32_MAX;
    if (key.t == CV_STRING)
        id = de_intern_find(c->env->in, key.u.s, key.n);
    if (m.sub == MK_ATTRS || m.sub == MK_CAPS) {
        /* any key finds something: the domain map or an empty one */
        *out = domain_map(m, id != UINT32_MAX && has_domain(d, is_caps(m), id) ? id : UINT32_MAX);
        return true;
    }
    if (id == UINT32_MAX)
        return false;
    if (m.sub == MK_CAP_DOM) {
        const de_cap *cap = de_devview_cap(d, m.n, id);
        if (!cap)
            return false;
        *out = qty_val(cap);
        return true;
    }
    const de_attr *a = de_devview_attr(d, m.n, id);
    if (!a)
        return false;
    *out = cel_device_attr_value(c, NULL, a);
    return true;
}

/* `k in device.attributes` (Contains is not overridden upstream). */
bool cel_devmap_contains(cel_ctx *c, cel_v m, cel_v key)
{
    if (m.sub == MK_ATTRS || m.sub == MK_CAPS) {
        if (key.t != CV_STRING)
            return false;
        uint32_t id = de_intern_find(c->env->in, key.u.s, key.n);
        return id != UINT32_MAX && has_domain(m.u.dev, is_caps(m), id);
    }
    cel_v out;
    return cel_devmap_find(c, m, key, &out);
}

cel_v cel_devmap_key_at(cel_ctx *c, cel_v m, uint32_t i)
{
    const de_devview *d = m.u.dev;
    size_t n;
    const char *s;
    if (m.sub == MK_ATTRS || m.sub == MK_CAPS) {
        uint32_t dom = 0;
        domains(d, is_caps(m), i, &dom);
        s = istr(c, dom, &n);
        return cv_str(s, n);
    }
    uint32_t idx = 0;
    names(d, is_caps(m), m.n, i, &idx);
    s = istr(c, is_caps(m) ? d->caps[idx].name : attr_at(d, idx)->name, &n);
    return cv_str(s, n);
}

cel_v cel_devmap_val_at(cel_ctx *c, cel_v m, uint32_t i)
{
    const de_devview *d = m.u.dev;
    if (m.sub == MK_ATTRS || m.sub == MK_CAPS) {
        uint32_t dom = 0;
        domains(d, is_caps(m), i, &dom);
        return domain_map(m, dom);
    }
    uint32_t idx = 0;
    names(d, is_caps(m), m.n, i, &idx);
    if (is_caps(m))
        return qty_val(&d->caps[idx]);
    return cel_device_attr_value(c, NULL, attr_at(d, idx));
}

/* What DeviceMatches converts before evaluating: an attribute without a
 * value or with a bad version fails every selector on the device. */
cel_v cel_device_precheck(cel_ctx *c)
{
    const de_devview *d = c->dev;
    uint32_t total = attr_total(d);
    for (uint32_t i = 0; i < total; i++) {
        const de_attr *a = attr_at(d, i);
        int k = a->v.kind;
        if (k != DE_V_NONE && k != DE_V_VERSION && k != DE_V_VERSIONS)
            continue;
        char name[300];
        size_t dl, nl;
        const char *ds = istr(c, a->domain, &dl), *ns = istr(c, a->name, &nl);
        if (a->bare)
            snprintf(name, sizeof name, "%.*s", (int)nl, ns);
        else
            snprintf(name, sizeof name, "%.*s/%.*s", (int)dl, ds, (int)nl, ns);
        if (k == DE_V_NONE)
            return cel_err(c, NULL, "attribute %s: unsupported attribute value", name);
        uint32_t cnt = k == DE_V_VERSION ? 1 : a->v.n;
        for (uint32_t j = 0; j < cnt; j++) {
            uint32_t sid = k == DE_V_VERSION ? a->v.u.s : a->v.u.strs[j];
            size_t sn;
            const char *s = istr(c, sid, &sn);
            de_semver sv;
            de_err e;
            de_err_clear(&e);
            if (de_semver_parse(s, sn, &sv, &e) != DE_OK)
                return cel_err(c, NULL, "attribute %s: parse semantic version: %s", name, e.msg);
        }
    }
    return cv_null();
}
