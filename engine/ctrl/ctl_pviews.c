/*
 * ctl_pviews.c - the 1.37 "advanced views" of a complete pool in a
 * ResourcePoolStatusRequest's status (the controller's views.go):
 *
 *  - grouping: a device's grouping attribute is its slice's
 *    partitionTypeAttribute; only when no slice of the pool declares one, the
 *    request's defaultPartitionTypeAttribute.  Its partition type is that
 *    attribute's string value (a name in the driver's domain may be written
 *    bare; the qualified spelling wins).
 *  - partitionSummary, for pools that group devices and publish
 *    sharedCounters: per (attribute, type) over the devices that consume
 *    counters, `total` and `allocatable` = how many of the group's devices
 *    not in use still fit, greedily, into the counters left after every
 *    in-use device's consumption (each group measured on its own).  A device
 *    without the type, a group whose devices cost different counters, or
 *    more than 32 groups is a validationError instead.
 *  - shareableSummary, for pools with allowMultipleAllocations devices:
 *    fully / partially available devices (not in use / in use), and per
 *    capacity key the total over those devices, the consumedCapacity of the
 *    results, and max(0, total - consumed); more than 32 keys is an error.
 * The first error wins and removes partitionSummary; shareableSummary stays
 * unless its own computation failed.
 */
#include "../base/buf.h"
#include "ctl_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *S(const ctl_pool_in *in, uint32_t id) { return de_intern_str(in->in, id); }

/* The string value of attribute `fqn` on d (see the header). */
static bool partition_type(const ctl_pool_in *in, const dg_device *d, uint32_t fqn, uint32_t *type)
{
    const char *f = S(in, fqn), *slash = strchr(f, '/');
    if (!slash)
        return false;
    uint32_t dom = de_intern(in->in, f, (size_t)(slash - f)), id = de_intern_cstr(in->in, slash + 1);
    const de_attr *hit = NULL;
    for (uint32_t i = 0; i < d->nattrs && !hit; i++)
        if (!d->attrs[i].bare && d->attrs[i].domain == dom && d->attrs[i].name == id)
            hit = &d->attrs[i];
    for (uint32_t i = 0; i < d->nattrs && !hit && dom == in->driver; i++)
        if (d->attrs[i].bare && d->attrs[i].name == id)
            hit = &d->attrs[i];
    if (!hit || hit->v.kind != DE_V_STRING)
        return false;
    *type = hit->v.u.s;
    return true;
}

static void resolve_partitions(ctl_pool_in *in, uint32_t request_attr)
{
    bool declares = false;
    for (uint32_t i = 0; i < in->ndevs; i++)
        declares |= in->devs[i].part_attr != 0;
    for (uint32_t i = 0; i < in->ndevs; i++) {
        ctl_pdev *p = &in->devs[i];
        if (!p->part_attr) {
            if (declares || !request_attr)
                continue;
            p->part_attr = request_attr;
        }
        p->has_type = partition_type(in, p->d, p->part_attr, &p->type);
    }
}

/* ---- counters ------------------------------------------------------------------ */

typedef struct cset {
    uint32_t name;
    ctl_amount *c;
    uint32_t n;
} cset;

typedef struct counters {
    cset *s;
    uint32_t n;
} counters;

static cset *find_set(counters *a, uint32_t name)
{
    for (uint32_t i = 0; i < a->n; i++)
        if (a->s[i].name == name)
            return &a->s[i];
    return NULL;
}

static ctl_amount *find_counter(cset *s, uint32_t name)
{
    for (uint32_t i = 0; s && i < s->n; i++)
        if (s->c[i].key == name)
            return &s->c[i];
    return NULL;
}

static void counters_free(counters *a)
{
    for (uint32_t i = 0; i < a->n; i++)
        free(a->s[i].c);
    free(a->s);
    a->s = NULL;
    a->n = 0;
}

static void counters_clone(const counters *src, counters *dst)
{
    dst->n = src->n;
    dst->s = de_xcalloc(src->n + 1, sizeof *dst->s);
    for (uint32_t i = 0; i < src->n; i++) {
        dst->s[i] = src->s[i];
        dst->s[i].c = de_xmalloc((src->s[i].n + 1) * sizeof *dst->s[i].c);
        memcpy(dst->s[i].c, src->s[i].c, src->s[i].n * sizeof *dst->s[i].c);
    }
}

static bool fits(const dg_device *d, counters *a)
{
    for (uint32_t i = 0; i < d->nconsumes; i++) {
        cset *s = find_set(a, d->consumes[i].counterset);
        for (uint32_t k = 0; k < d->consumes[i].ncounters; k++) {
            ctl_amount *have = find_counter(s, d->consumes[i].counters[k].name);
            if (!have || de_qty_cmp(have->value, d->consumes[i].counters[k].value) < 0)
                return false;
        }
    }
    return true;
}

static void deduct(const dg_device *d, counters *a)
{
    for (uint32_t i = 0; i < d->nconsumes; i++) {
        cset *s = find_set(a, d->consumes[i].counterset);
        for (uint32_t k = 0; s && k < d->consumes[i].ncounters; k++) {
            ctl_amount *have = find_counter(s, d->consumes[i].counters[k].name);
            de_qty left;
            if (have && de_qty_sub(have->value, d->consumes[i].counters[k].value, &left) == DE_OK)
                have->value = left;
        }
    }
}

static bool in_use(const ctl_pool_in *in, const dg_device *d) { return de_map_get(in->inuse, d->name, NULL); }

/* sharedCounters of the pool (a later slice's counter overwrites an earlier
 * one of the same name), minus the consumption of every in-use device. */
static void baseline(const ctl_pool_in *in, counters *a)
{
    a->s = NULL;
    a->n = 0;
    uint32_t cap = 0;
    for (uint32_t i = 0; i < in->nslices; i++)
        for (uint32_t k = 0; k < in->slices[i]->ncountersets; k++) {
            const dg_counterset *cs = &in->slices[i]->countersets[k];
            cset *s = find_set(a, cs->name);
            if (!s) {
                if (a->n == cap) {
                    cap = cap ? cap * 2 : 4;
                    a->s = de_xrealloc(a->s, cap * sizeof *a->s);
                }
                s = &a->s[a->n++];
                *s = (cset){cs->name, NULL, 0};
            }
            for (uint32_t j = 0; j < cs->ncounters; j++) {
                ctl_amount *c = find_counter(s, cs->counters[j].name);
                if (!c) {
                    s->c = de_xrealloc(s->c, (s->n + 1) * sizeof *s->c);
                    c = &s->c[s->n++];
                    c->key = cs->counters[j].name;
                }
                c->value = cs->counters[j].value;
            }
        }
    for (uint32_t i = 0; i < in->ndevs; i++)
        if (in_use(in, in->devs[i].d))
            deduct(in->devs[i].d, a);
}

/* A device's counter cost as one comparable text (sorted "set/counter=qty"). */
static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static char *cost_key(const ctl_pool_in *in, const dg_device *d)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < d->nconsumes; i++)
        n += d->consumes[i].ncounters;
    char **parts = de_xcalloc(n + 1, sizeof *parts);
    uint32_t k = 0;
    for (uint32_t i = 0; i < d->nconsumes; i++)
        for (uint32_t j = 0; j < d->consumes[i].ncounters; j++) {
            char q[DE_QTY_TEXT_MAX];
            de_qty_format(d->consumes[i].counters[j].value, q, sizeof q);
            de_buf b;
            de_buf_init(&b, 1024);
            de_buf_printf(&b, "%s/%s=%s", S(in, d->consumes[i].counterset), S(in, d->consumes[i].counters[j].name), q);
            parts[k++] = de_buf_take(&b);
        }
    qsort(parts, k, sizeof *parts, cmp_str);
    de_buf out;
    de_buf_init(&out, 64 * 1024);
    for (uint32_t i = 0; i < k; i++) {
        de_buf_printf(&out, "%s%s", i ? "," : "", parts[i]);
        free(parts[i]);
    }
    free(parts);
    return de_buf_take(&out);
}

/* ---- partitionSummary ------------------------------------------------------------ */

typedef struct group {
    uint32_t attr, type;
    uint32_t total;
    char *cost;
    uint32_t *fresh; /* indices into in->devs */
    uint32_t nfresh;
    uint32_t allocatable;
} group;

static const ctl_pool_in *gsort_in;
static int cmp_group(const void *a, const void *b)
{
    const group *x = a, *y = b;
    int r = strcmp(S(gsort_in, x->attr), S(gsort_in, y->attr));
    return r ? r : strcmp(S(gsort_in, x->type), S(gsort_in, y->type));
}

static void groups_free(group *g, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        free(g[i].cost);
        free(g[i].fresh);
    }
    free(g);
}

static json_t *partition_summary(const ctl_pool_in *in, char *err, size_t cap)
{
    group *gs = NULL;
    uint32_t ng = 0;
    for (uint32_t i = 0; i < in->ndevs; i++) {
        const ctl_pdev *p = &in->devs[i];
        if (!p->d->nconsumes || !p->part_attr)
            continue;
        if (!p->has_type) {
            snprintf(err, cap, "PartitionTypeMissing: device \"%s\" in pool %s/%s does not carry partition type attribute \"%s\"",
                     S(in, p->d->name), S(in, in->driver), S(in, in->pool), S(in, p->part_attr));
            groups_free(gs, ng);
            return NULL;
        }
        group *g = NULL;
        for (uint32_t k = 0; k < ng && !g; k++)
            if (gs[k].attr == p->part_attr && gs[k].type == p->type)
                g = &gs[k];
        if (!g) {
            gs = de_xrealloc(gs, (ng + 1) * sizeof *gs);
            g = &gs[ng++];
            memset(g, 0, sizeof *g);
            g->attr = p->part_attr;
            g->type = p->type;
        }
        char *key = cost_key(in, p->d);
        if (!g->total) {
            g->cost = key;
        } else {
            bool same = !strcmp(key, g->cost);
            free(key);
            if (!same) {
                snprintf(err, cap, "PartitionCostMismatch: devices of partition type \"%s\" in pool %s/%s consume different counters",
                         S(in, p->type), S(in, in->driver), S(in, in->pool));
                groups_free(gs, ng);
                return NULL;
            }
        }
        g->total++;
        if (!in_use(in, p->d)) {
            g->fresh = de_xrealloc(g->fresh, (g->nfresh + 1) * sizeof *g->fresh);
            g->fresh[g->nfresh++] = i;
        }
    }
    counters base;
    baseline(in, &base);
    for (uint32_t k = 0; k < ng; k++) {
        counters avail;
        counters_clone(&base, &avail);
        for (uint32_t j = 0; j < gs[k].nfresh; j++) {
            const dg_device *d = in->devs[gs[k].fresh[j]].d;
            if (fits(d, &avail)) {
                gs[k].allocatable++;
                deduct(d, &avail);
            }
        }
        counters_free(&avail);
    }
    counters_free(&base);
    gsort_in = in;
    if (ng)
        qsort(gs, ng, sizeof *gs, cmp_group);
    if (ng > CTL_PSR_MAX_LIST) {
        snprintf(err, cap, "PartitionSummaryOverCap: pool %s/%s has %u partition types, exceeding the maximum of %d",
                 S(in, in->driver), S(in, in->pool), ng, CTL_PSR_MAX_LIST);
        groups_free(gs, ng);
        return NULL;
    }
    json_t *arr = json_array();
    for (uint32_t k = 0; k < ng; k++)
        json_array_append_new(arr, json_pack("{s:s, s:s, s:I, s:I}", "attribute", S(in, gs[k].attr), "type",
                                             S(in, gs[k].type), "total", (json_int_t)gs[k].total, "allocatable",
                                             (json_int_t)gs[k].allocatable));
    groups_free(gs, ng);
    return arr;
}

/* ---- shareableSummary -------------------------------------------------------------- */

static const ctl_pool_in *asort_in;
static int cmp_amount(const void *a, const void *b)
{
    return strcmp(S(asort_in, ((const ctl_amount *)a)->key), S(asort_in, ((const ctl_amount *)b)->key));
}

static json_t *qty_json(de_qty q)
{
    char t[DE_QTY_TEXT_MAX];
    de_qty_format(q, t, sizeof t);
    return json_string(t);
}

static json_t *shareable_summary(const ctl_pool_in *in, char *err, size_t cap)
{
    uint32_t full = 0, partial = 0, nt = 0;
    bool any = false;
    ctl_amount *total = NULL;
    for (uint32_t i = 0; i < in->ndevs; i++) {
        const dg_device *d = in->devs[i].d;
        if (d->allow_multi != 1)
            continue;
        any = true;
        if (in_use(in, d))
            partial++;
        else
            full++;
        for (uint32_t k = 0; k < d->ncaps; k++) {
            uint32_t key = ctl_cap_key(in->in, &d->caps[k]);
            ctl_amount *t = NULL;
            for (uint32_t j = 0; j < nt && !t; j++)
                if (total[j].key == key)
                    t = &total[j];
            if (!t) {
                total = de_xrealloc(total, (nt + 1) * sizeof *total);
                t = &total[nt++];
                *t = (ctl_amount){key, {0}};
            }
            de_qty sum;
            if (de_qty_add(t->value, d->caps[k].value, &sum) == DE_OK)
                t->value = sum;
        }
    }
    if (!any) {
        free(total);
        return NULL;
    }
    asort_in = in;
    if (nt)
        qsort(total, nt, sizeof *total, cmp_amount);
    if (nt > CTL_PSR_MAX_LIST) {
        snprintf(err, cap, "ShareableSummaryOverCap: pool %s/%s has %u shareable capacity keys, exceeding the maximum of %d",
                 S(in, in->driver), S(in, in->pool), nt, CTL_PSR_MAX_LIST);
        free(total);
        return NULL;
    }
    json_t *caps = json_array();
    for (uint32_t j = 0; j < nt; j++) {
        de_qty cons = {0}, avail;
        for (uint32_t k = 0; k < in->nconsumed; k++)
            if (in->consumed[k].key == total[j].key)
                cons = in->consumed[k].value;
        if (de_qty_sub(total[j].value, cons, &avail) != DE_OK || de_qty_sign(avail) < 0)
            avail = de_qty_from_int(0, (de_qfmt)total[j].value.fmt);
        json_array_append_new(caps, json_pack("{s:s, s:o, s:o, s:o}", "name", S(in, total[j].key), "total",
                                              qty_json(total[j].value), "consumed", qty_json(cons), "available",
                                              qty_json(avail)));
    }
    free(total);
    json_t *o = json_pack("{s:I, s:I}", "fullyAvailableDevices", (json_int_t)full, "partiallyAvailableDevices",
                          (json_int_t)partial);
    if (json_array_size(caps))
        json_object_set_new(o, "capacity", caps);
    else
        json_decref(caps);
    return o;
}

void ctl_pool_views(ctl_pool_in *in, uint32_t request_attr, json_t *pool, char *err, size_t cap)
{
    err[0] = 0;
    resolve_partitions(in, request_attr);
    bool counters_published = false, grouped = false;
    for (uint32_t i = 0; i < in->nslices; i++)
        counters_published |= in->slices[i]->ncountersets > 0;
    for (uint32_t i = 0; i < in->ndevs; i++)
        grouped |= in->devs[i].part_attr != 0;
    json_t *ps = NULL;
    if (grouped && !counters_published)
        snprintf(err, cap, "PartitionTypeMissing: pool %s/%s declares partitionTypeAttribute but publishes no sharedCounters",
                 S(in, in->driver), S(in, in->pool));
    else if (grouped)
        ps = partition_summary(in, err, cap);
    char sherr[CTL_PSR_MAX_MESSAGE + 1] = "";
    json_t *sh = shareable_summary(in, sherr, sizeof sherr);
    if (!err[0] && sherr[0])
        snprintf(err, cap, "%s", sherr);
    if (err[0] && ps) {
        json_decref(ps);
        ps = NULL;
    }
    if (ps && json_array_size(ps))
        json_object_set_new(pool, "partitionSummary", ps);
    else if (ps)
        json_decref(ps);
    if (sh)
        json_object_set_new(pool, "shareableSummary", sh);
}
