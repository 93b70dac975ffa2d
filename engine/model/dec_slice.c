/*
 * dec_slice.c - ResourceSlice: decode and validate the slice level as the
 * API server does (validateResourceSliceSpec: driver, pool, the four node
 * selection modes, device count limits, shared counter sets,
 * partitionTypeAttribute, skipNodeOperations).  Devices: dec_device.c.
 */
#include "dec.h"
#include "../base/map.h"

#include <stdio.h>
#include <string.h>

#define MAX_DEVICES 128
#define MAX_DEVICES_ADVANCED 64

static const char *const spec_fields[] = {
    "driver", "pool", "nodeName", "nodeSelector", "allNodes", "devices", "perDeviceNodeSelection",
    "sharedCounters", "partitionTypeAttribute", "skipNodeOperations", NULL};

/* ---- the slice ---------------------------------------------------------------------- */

static void check_partition_type(dec *d, dg_slice *s, const char *name, size_t nl, bool consumes)
{
    if (!consumes) {
        dec_invalid_str(d, "partitionTypeAttribute", name,
                        "may only be set on a slice which declares devices that consume counters");
        return;
    }
    uint32_t dom, id;
    if (!dec_fq_name(d, "partitionTypeAttribute", name, nl, &dom, &id))
        return;
    for (uint32_t i = 0; i < s->ndevices; i++) {
        const dg_device *dev = &s->devices[i];
        if (!dev->nconsumes)
            continue;
        const de_attr *found = NULL;
        for (uint32_t j = 0; j < dev->nattrs && !found; j++)
            if (dev->attrs[j].domain == dom && dev->attrs[j].name == id && !dev->attrs[j].bare)
                found = &dev->attrs[j];
        for (uint32_t j = 0; j < dev->nattrs && !found; j++)
            if (dev->attrs[j].domain == dom && dev->attrs[j].name == id)
                found = &dev->attrs[j];
        size_t m = dec_field(d, "devices");
        size_t im = dec_index(d, i);
        size_t am = dec_field(d, "attributes");
        size_t km = dec_key(d, name);
        if (!found)
            dec_required(d, NULL, "device consumes counters and `partitionTypeAttribute` names this attribute, so it must be set");
        else if (found->v.kind != DE_V_STRING)
            dec_errf(d, NULL, "Invalid value: must be a string value because `partitionTypeAttribute` names this attribute");
        dec_pop(d, km);
        dec_pop(d, am);
        dec_pop(d, im);
        dec_pop(d, m);
    }
}

/* Each device whose name an earlier device of the slice has, through a map
 * of the names seen: pairwise, a hostile slice of 200,000 devices took 32 s. */
static void dup_names(dec *d, const dg_slice *s)
{
    de_map seen;
    de_map_init(&seen);
    de_map_reserve(&seen, s->ndevices);
    for (uint32_t i = 0; i < s->ndevices; i++) {
        uint32_t nm = s->devices[i].name;
        uint64_t v;
        if (!nm)
            continue;
        if (!de_map_get(&seen, nm, &v)) {
            de_map_put(&seen, nm, i);
            continue;
        }
        size_t im = dec_index(d, i);
        dec_duplicate(d, NULL, dec_str(d, nm));
        dec_pop(d, im);
    }
    de_map_destroy(&seen);
}

dg_slice *dec_slice(dec *d, json_t *obj)
{
    static const char *const top[] = {"apiVersion", "kind", "metadata", "spec", NULL};
    dec_known(d, obj, top, NULL);
    dg_slice *s = DEC_NEW(d, dg_slice, 1);
    if (!s)
        return NULL;
    s->input_version = (uint8_t)d->version;
    dec_meta(d, obj, &s->meta, DEC_META_SUBDOMAIN);
    json_t *spec = dec_get_obj(d, obj, "spec");
    size_t sm = dec_field(d, "spec");
    if (!spec) {
        if (d->validate && !json_object_get(obj, "spec"))
            dec_required(d, NULL, NULL);
        dec_pop(d, sm);
        return s;
    }
    dec_known(d, spec, spec_fields, NULL);

    const char *drv = "";
    size_t dl = 0;
    dec_get_str(d, spec, "driver", &drv, &dl);
    s->driver = dec_intern(d, drv, dl);
    if (d->validate)
        dec_driver_name(d, "driver", drv, dl);

    json_t *pool = dec_get_obj(d, spec, "pool");
    size_t pm = dec_field(d, "pool");
    const char *pn = "";
    size_t pl = 0;
    if (pool) {
        static const char *const pf[] = {"name", "generation", "resourceSliceCount", NULL};
        dec_known(d, pool, pf, NULL);
        dec_get_str(d, pool, "name", &pn, &pl);
        dec_get_int(d, pool, "generation", &s->generation);
        dec_get_int(d, pool, "resourceSliceCount", &s->slice_count);
    }
    s->pool = dec_intern(d, pn, pl);
    if (d->validate) {
        dec_pool_name(d, "name", pn, pl);
        if (s->slice_count <= 0)
            dec_invalid_int(d, "resourceSliceCount", s->slice_count, "must be greater than zero");
        if (s->generation < 0)
            dec_invalid_int(d, "generation", s->generation, "must be greater than or equal to zero");
    }
    dec_pop(d, pm);

    /* node selection: exactly one of four */
    const char *set_fields[4];
    int nset = 0;
    json_t *v = json_object_get(spec, "nodeName");
    if (v && !json_is_null(v)) {
        const char *nn = "";
        size_t nnl = 0;
        if (dec_get_str(d, spec, "nodeName", &nn, &nnl)) {
            if (nnl) {
                set_fields[nset++] = "`nodeName`";
                s->ns_mode = DG_NS_NODE_NAME;
                s->node_name = dec_intern(d, nn, nnl);
                if (d->validate)
                    dec_dns_subdomain(d, "nodeName", nn, nnl);
            } else if (d->validate) {
                dec_invalid_str(d, "nodeName", "", "must be either unset or set to a non-empty string");
            }
        }
    }
    v = json_object_get(spec, "nodeSelector");
    if (v && !json_is_null(v)) {
        set_fields[nset++] = "`nodeSelector`";
        s->ns_mode = DG_NS_NODE_SELECTOR;
        size_t m = dec_field(d, "nodeSelector");
        dec_nodesel(d, v, &s->node_selector);
        if (d->validate && s->node_selector.nterms > 1) {
            size_t tm = dec_field(d, "nodeSelectorTerms");
            dec_errf(d, NULL, "Invalid value: %u terms: must have exactly one node selector term",
                     s->node_selector.nterms);
            dec_pop(d, tm);
        }
        dec_pop(d, m);
    }
    bool b;
    if (dec_get_bool(d, spec, "allNodes", &b)) {
        if (b) {
            set_fields[nset++] = "`allNodes`";
            s->ns_mode = DG_NS_ALL_NODES;
        } else if (d->validate) {
            dec_errf(d, "allNodes", "Invalid value: false: must be either unset or set to true");
        }
    }
    bool per_device = false;
    if (dec_get_bool(d, spec, "perDeviceNodeSelection", &b)) {
        if (b) {
            set_fields[nset++] = "`perDeviceNodeSelection`";
            s->ns_mode = DG_NS_PER_DEVICE;
            per_device = true;
        } else if (d->validate) {
            dec_errf(d, "perDeviceNodeSelection", "Invalid value: false: must be either unset or set to true");
        }
    }
    if (d->validate) {
        if (nset == 0) {
            dec_required(d, NULL, "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required");
        } else if (nset > 1) {
            char buf[128] = "{";
            for (int i = 0; i < nset; i++) {
                strcat(buf, set_fields[i]);
                strcat(buf, i + 1 < nset ? ", " : "}");
            }
            dec_errf(d, NULL, "Invalid value: \"%s\": exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required, but multiple fields are set", buf);
        }
    }
    if (nset > 1)
        s->ns_mode = DG_NS_NONE;

    json_t *devs = json_object_get(spec, "devices"), *ctrs = json_object_get(spec, "sharedCounters");
    bool has_devs = devs && !json_is_null(devs), has_ctrs = ctrs && !json_is_null(ctrs);
    if (has_devs && has_ctrs && d->validate)
        dec_invalid_str(d, NULL, "", "only one of `sharedCounters` or `devices` is allowed");

    dec_dev_stats st = {false, false, false};
    dec_items it;
    if (dec_items_begin(d, dec_get_arr(d, spec, "devices"), "devices", 0, &it)) {
        s->devices = DEC_NEW(d, dg_device, it.n);
        for (json_t *dv; s->devices && (dv = dec_items_next(d, &it));)
            dec_device(d, dv, &s->devices[s->ndevices++], s->driver, per_device, &st);
        if (d->validate) {
            size_t max = (st.taints || st.consumes || st.lists) ? MAX_DEVICES_ADVANCED : MAX_DEVICES;
            if (it.n > max)
                dec_too_many(d, NULL, it.n, max);
            dup_names(d, s);
        }
        dec_items_end(d, &it);
    }

    if (dec_items_begin(d, dec_get_arr(d, spec, "sharedCounters"), "sharedCounters", 8, &it)) {
        s->countersets = DEC_NEW(d, dg_counterset, it.n);
        static const char *const cf[] = {"name", "counters", NULL};
        for (json_t *c; s->countersets && (c = dec_items_next_obj(d, &it, cf));) {
            dg_counterset *cs = &s->countersets[s->ncountersets++];
            const char *cn;
            size_t cnl;
            cs->name = dec_label_field(d, c, "name", &cn, &cnl);
            if (d->validate) {
                for (uint32_t j = 0; j + 1 < s->ncountersets; j++)
                    if (s->countersets[j].name == cs->name)
                        dec_duplicate(d, NULL, cn);
            }
            cs->counters = dec_counters(d, c, &cs->ncounters);
        }
        dec_items_end(d, &it);
    }

    const char *pta;
    size_t ptl;
    if (dec_get_str(d, spec, "partitionTypeAttribute", &pta, &ptl)) {
        s->partition_type_attr = dec_intern(d, pta, ptl);
        /* without DRAPartitionableDevicesType the API server drops the field
         * before validating; the pool status controller then ignores it too */
        if (d->validate && d->gates.on[DE_GATE_PARTITIONABLE_DEVICES_TYPE])
            check_partition_type(d, s, pta, ptl, st.consumes);
    }

    json_t *skip = dec_get_arr(d, spec, "skipNodeOperations");
    if (skip) {
        size_t m = dec_field(d, "skipNodeOperations");
        s->skip_node_ops = dec_str_list(d, skip, &s->nskip_node_ops);
        bool prep = false, unprep = false, all = false;
        for (uint32_t i = 0; i < s->nskip_node_ops; i++) {
            const char *op = dec_str(d, s->skip_node_ops[i]);
            size_t im = dec_index(d, i);
            if (!strcmp(op, "NodePrepareResources"))
                prep = true;
            else if (!strcmp(op, "NodeUnprepareResources"))
                unprep = true;
            else if (!strcmp(op, "*"))
                all = true;
            else if (d->validate)
                dec_unsupported(d, NULL, op, "\"*\", \"NodePrepareResources\", \"NodeUnprepareResources\"");
            for (uint32_t j = 0; d->validate && j < i; j++)
                if (s->skip_node_ops[j] == s->skip_node_ops[i]) {
                    dec_duplicate(d, NULL, op);
                    break;
                }
            dec_pop(d, im);
        }
        if (prep && !unprep && !all && d->validate)
            dec_errf(d, NULL, "Invalid value: NodePrepareResources cannot be skipped unless NodeUnprepareResources is also skipped");
        dec_pop(d, m);
    }
    dec_pop(d, sm);
    return s;
}
