/*
 * cmd_inspect.c - `draengine inspect -f PATH... [-o table|json]`: load
 * manifests into the device graph and print what it holds, per node: the
 * pools, their devices with key attributes, capacity, free/allocated state
 * and taints; then the pools that are not node-local (nodeSelector,
 * allNodes, per-device node selection), the classes and the claims.
 *
 * Every invalid object is reported (file, document, object, field path)
 * and the exit code is 2; nothing is printed on stdout then.  Output is
 * sorted by names, so it is the same for the same input.
 *
 * --watch lives in inspect_watch.c; it prints this report again, or the
 * node blocks a change touched (cli_inspect_changes).
 */
#include "../base/log.h"
#include "../base/quantity.h"
#include "../model/dg.h"
#include "../policy/polgraph.h"
#include "cli.h"
#include "flags.h"
#include "inspect.h"
#include "policy_out.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *S(const cli_inspect *c, uint32_t id) { return de_intern_str(c->in, id); }

static de_interner *sort_in;
static int cmp_name(const void *a, const void *b)
{
    return de_intern_cmp(sort_in, *(const uint32_t *)a, *(const uint32_t *)b);
}

static const dg_graph *sort_g;
static int cmp_pool(const void *a, const void *b)
{
    dg_pool x, y;
    dg_pool_get(sort_g, *(const uint32_t *)a, &x);
    dg_pool_get(sort_g, *(const uint32_t *)b, &y);
    de_interner *in = dg_intern(sort_g);
    int r = de_intern_cmp(in, x.driver, y.driver);
    return r ? r : de_intern_cmp(in, x.name, y.name);
}

static int cmp_class(const void *a, const void *b)
{
    return de_intern_cmp(dg_intern(sort_g), dg_class_get(sort_g, *(const uint32_t *)a)->meta.name,
                         dg_class_get(sort_g, *(const uint32_t *)b)->meta.name);
}

static int cmp_claim(const void *a, const void *b)
{
    const dg_claim *x = dg_claim_get(sort_g, *(const uint32_t *)a), *y = dg_claim_get(sort_g, *(const uint32_t *)b);
    int r = de_intern_cmp(dg_intern(sort_g), x->meta.ns, y->meta.ns);
    return r ? r : de_intern_cmp(dg_intern(sort_g), x->meta.name, y->meta.name);
}

static int cmp_holder(const void *a, const void *b)
{
    const cli_holder *x = a, *y = b;
    if (x->pool != y->pool)
        return x->pool < y->pool ? -1 : 1;
    if (x->device != y->device)
        return x->device < y->device ? -1 : 1;
    return x->claim < y->claim ? -1 : x->claim > y->claim;
}

void cli_inspect_init(cli_inspect *c, dg_graph *g)
{
    *c = (cli_inspect){g, dg_intern(g), NULL, 0};
    uint32_t cap = 0;
    for (uint32_t i = 0; i < dg_claim_id_limit(c->g); i++) {
        const dg_claim *cl = dg_claim_get(c->g, i);
        if (!cl || !cl->allocated)
            continue;
        for (uint32_t k = 0; k < cl->allocation.nresults; k++) {
            const dg_result *r = &cl->allocation.results[k];
            uint32_t pid = dg_pool_find(c->g, r->driver, r->pool);
            if (pid == DG_NONE)
                continue;
            if (c->nholders == cap) {
                cap = cap ? cap * 2 : 64;
                c->holders = de_xrealloc(c->holders, cap * sizeof *c->holders);
            }
            c->holders[c->nholders++] = (cli_holder){pid, r->device, i, r->admin_access == 1, r->share_id != 0};
        }
    }
    if (c->nholders)
        qsort(c->holders, c->nholders, sizeof *c->holders, cmp_holder);
}

void cli_inspect_fini(cli_inspect *c)
{
    free(c->holders);
    c->holders = NULL;
    c->nholders = 0;
}

/* ---- text helpers -------------------------------------------------------------------- */

static void attr_text(const cli_inspect *c, const de_attrval *v, char *buf, size_t cap)
{
    switch (v->kind) {
    case DE_V_INT: snprintf(buf, cap, "%lld", (long long)v->u.i); return;
    case DE_V_BOOL: snprintf(buf, cap, "%s", v->u.b ? "true" : "false"); return;
    case DE_V_STRING:
    case DE_V_VERSION: snprintf(buf, cap, "%s", S(c, v->u.s)); return;
    default: break;
    }
    size_t n = 0;
    buf[0] = 0;
    for (uint32_t i = 0; i < v->n && n + 2 < cap; i++) {
        if (i)
            buf[n++] = ',';
        if (v->kind == DE_V_INTS)
            n += (size_t)snprintf(buf + n, cap - n, "%lld", (long long)v->u.ints[i]);
        else if (v->kind == DE_V_BOOLS)
            n += (size_t)snprintf(buf + n, cap - n, "%s", v->u.bools[i] ? "true" : "false");
        else
            n += (size_t)snprintf(buf + n, cap - n, "%s", S(c, v->u.strs[i]));
        if (n >= cap)
            n = cap - 1;
    }
}

/* An attribute's name as the table shows it: bare in the driver's own
 * domain (how slices usually write it), else qualified, so the driver's
 * numaNode and resource.kubernetes.io/numaNode never print alike. */
static void attr_name(const cli_inspect *c, const de_devview *v, const de_attr *a, char *out, size_t cap)
{
    if (a->domain == v->driver)
        snprintf(out, cap, "%s", S(c, a->name));
    else
        snprintf(out, cap, "%s/%s", S(c, a->domain), S(c, a->name));
}

/* Under a device row: per policy, the attributes it derived there, and its
 * failures on the device. */
static void derived_rows(const cli_inspect *c, const de_devview *v, FILE *out)
{
    if (!c->pol)
        return;
    uint32_t np = pol_set_count(c->pol);
    for (uint32_t p = 0; p < np; p++) {
        pol_info info;
        pol_set_info(c->pol, p, &info);
        bool any = false;
        for (uint32_t i = 0; i < v->nderived; i++) {
            const de_attr *a = &v->derived[i];
            if (pol_set_owner(c->pol, S(c, a->domain), S(c, a->name)) != (int)p)
                continue;
            char val[200];
            attr_text(c, &a->v, val, sizeof val);
            if (!any)
                fprintf(out, "      derived by %s:", info.name);
            fprintf(out, " %s/%s=%s", S(c, a->domain), S(c, a->name), val);
            any = true;
        }
        if (any)
            fputc('\n', out);
    }
    const pol_devfacts *f = pol_set_facts(c->pol, v->id);
    for (uint32_t k = 0; f && k < f->nfails; k++) {
        const pol_devfail *x = &f->fails[k];
        pol_info info;
        pol_set_info(c->pol, x->policy, &info);
        fprintf(out, "      FAILED %s %s at %s:%d: %s: %s\n", info.name, pol_hook_names[x->hook], x->file, x->line,
                pol_reason_str((pol_reason)x->reason), x->msg);
    }
}

/* The attributes worth a column: well-known identity/topology ones first,
 * then the rest in published order; short values only. */
static const char *const key_attrs[] = {"type", "productName", "model", "pciDevice", "profile",
                                        "partitionProfile", "numaNode", "pcieRoot", "family", "architecture",
                                        "pciBusID", "driverVersion", "index", NULL};

static void key_attributes(const cli_inspect *c, const de_devview *v, char *out, size_t cap)
{
    bool used[64] = {false};
    size_t n = 0;
    int shown = 0, total = 0;
    out[0] = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (size_t k = 0; pass == 1 || key_attrs[k]; k++) {
            if (pass == 1 && k >= v->nattrs)
                break;
            for (uint32_t i = 0; i < v->nattrs && i < 64; i++) {
                if (used[i])
                    continue;
                if (pass == 0 && strcmp(S(c, v->attrs[i].name), key_attrs[k]))
                    continue;
                if (pass == 1 && i != k)
                    continue;
                used[i] = true;
                char val[160], name[200];
                attr_text(c, &v->attrs[i].v, val, sizeof val);
                if (strlen(val) > 40 || shown >= 4)
                    continue;
                attr_name(c, v, &v->attrs[i], name, sizeof name);
                n += (size_t)snprintf(out + n, n < cap ? cap - n : 0, "%s%s=%s", shown ? " " : "", name, val);
                shown++;
            }
        }
    }
    for (uint32_t i = 0; i < v->nattrs; i++)
        total++;
    if (total > shown && n < cap)
        snprintf(out + n, cap - n, "%s(+%d)", shown ? " " : "", total - shown);
}

static void capacity_text(const cli_inspect *c, const de_devview *v, char *out, size_t cap)
{
    size_t n = 0;
    out[0] = 0;
    for (uint32_t i = 0; i < v->ncaps && i < 4 && n < cap; i++) {
        char q[DE_QTY_TEXT_MAX];
        de_qty_format(v->caps[i].value, q, sizeof q);
        n += (size_t)snprintf(out + n, cap - n, "%s%s=%s", i ? " " : "", S(c, v->caps[i].name), q);
    }
    if (v->ncaps > 4 && n < cap)
        snprintf(out + n, cap - n, " (+%u)", v->ncaps - 4);
}

static void taints_text(const cli_inspect *c, uint32_t devid, char *out, size_t cap)
{
    const dg_taint *t;
    uint32_t nt;
    dg_device_taints(c->g, devid, &t, &nt);
    size_t n = 0;
    out[0] = 0;
    for (uint32_t i = 0; i < nt && n < cap; i++)
        n += (size_t)snprintf(out + n, cap - n, "%s%s%s%s:%s", i ? " " : "", S(c, t[i].key), t[i].value ? "=" : "",
                              S(c, t[i].value), S(c, t[i].effect_raw));
}

static void state_text(const cli_inspect *c, uint32_t pool, uint32_t device, char *out, size_t cap)
{
    size_t n = 0;
    int cnt = 0;
    out[0] = 0;
    for (uint32_t i = 0; i < c->nholders; i++) {
        const cli_holder *h = &c->holders[i];
        if (h->pool != pool || h->device != device)
            continue;
        const dg_claim *cl = dg_claim_get(c->g, h->claim);
        if (n < cap)
            n += (size_t)snprintf(out + n, cap - n, "%s%s/%s%s", cnt ? "," : "", S(c, cl->meta.ns),
                                  S(c, cl->meta.name), h->admin ? "(admin)" : h->shared ? "(shared)" : "");
        cnt++;
    }
    if (!cnt)
        snprintf(out, cap, "free");
}

static void nodesel_text(const cli_inspect *c, const dg_nodesel *s, char *out, size_t cap)
{
    static const char *const ops[] = {"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"};
    size_t n = 0;
    out[0] = 0;
    for (uint32_t t = 0; t < s->nterms && n < cap; t++) {
        const dg_term *term = &s->terms[t];
        if (t)
            n += (size_t)snprintf(out + n, cap - n, " OR ");
        for (int k = 0; k < 2; k++) {
            const dg_requirement *r = k ? term->fields : term->exprs;
            uint32_t nr = k ? term->nfields : term->nexprs;
            for (uint32_t i = 0; i < nr && n < cap; i++) {
                n += (size_t)snprintf(out + n, cap - n, "%s%s %s", (i || k) && n ? ", " : "", S(c, r[i].key),
                                      ops[r[i].op < 6 ? r[i].op : 0]);
                for (uint32_t j = 0; j < r[i].nvalues && n < cap; j++)
                    n += (size_t)snprintf(out + n, cap - n, "%s%s", j ? "," : " [", S(c, r[i].values[j]));
                if (r[i].nvalues && n < cap)
                    n += (size_t)snprintf(out + n, cap - n, "]");
            }
        }
    }
}

static void slice_selection(const cli_inspect *c, const dg_slice *s, char *out, size_t cap)
{
    switch (s->ns_mode) {
    case DG_NS_ALL_NODES: snprintf(out, cap, "allNodes"); break;
    case DG_NS_PER_DEVICE: snprintf(out, cap, "perDeviceNodeSelection"); break;
    case DG_NS_NODE_SELECTOR: {
        char b[600];
        nodesel_text(c, &s->node_selector, b, sizeof b);
        snprintf(out, cap, "nodeSelector: %s", b);
        break;
    }
    case DG_NS_NODE_NAME: snprintf(out, cap, "nodeName: %s", S(c, s->node_name)); break;
    default: snprintf(out, cap, "no node selection");
    }
}

/* ---- JSON -------------------------------------------------------------------------------- */

static json_t *attr_json(const cli_inspect *c, const de_attrval *v)
{
    switch (v->kind) {
    case DE_V_INT: return json_integer(v->u.i);
    case DE_V_BOOL: return json_boolean(v->u.b);
    case DE_V_STRING:
    case DE_V_VERSION: return json_string(S(c, v->u.s));
    default: break;
    }
    json_t *a = json_array();
    for (uint32_t i = 0; i < v->n; i++) {
        if (v->kind == DE_V_INTS)
            json_array_append_new(a, json_integer(v->u.ints[i]));
        else if (v->kind == DE_V_BOOLS)
            json_array_append_new(a, json_boolean(v->u.bools[i]));
        else
            json_array_append_new(a, json_string(S(c, v->u.strs[i])));
    }
    return a;
}

static json_t *device_json(const cli_inspect *c, uint32_t devid)
{
    de_devview v;
    dg_device_view(c->g, devid, &v);
    dg_devref ref;
    dg_device_ref(c->g, devid, &ref);
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(S(c, v.name)));
    json_t *attrs = json_object();
    for (uint32_t i = 0; i < v.nattrs; i++) {
        char key[200];
        snprintf(key, sizeof key, "%s/%s", S(c, v.attrs[i].domain), S(c, v.attrs[i].name));
        json_object_set_new(attrs, key, attr_json(c, &v.attrs[i].v));
    }
    json_object_set_new(o, "attributes", attrs);
    if (c->pol) {
        /* derived attributes, each with the policy that derived it */
        json_t *der = json_object();
        for (uint32_t i = 0; i < v.nderived; i++) {
            char key[200];
            snprintf(key, sizeof key, "%s/%s", S(c, v.derived[i].domain), S(c, v.derived[i].name));
            int p = pol_set_owner(c->pol, S(c, v.derived[i].domain), S(c, v.derived[i].name));
            pol_info info = {0};
            if (p >= 0)
                pol_set_info(c->pol, (uint32_t)p, &info);
            json_object_set_new(der, key, json_pack("{s:o, s:s}", "value", attr_json(c, &v.derived[i].v), "policy",
                                                    info.name ? info.name : ""));
        }
        json_object_set_new(o, "derivedAttributes", der);
        json_t *fails = json_array();
        const pol_devfacts *f = pol_set_facts(c->pol, devid);
        for (uint32_t k = 0; f && k < f->nfails; k++) {
            const pol_devfail *x = &f->fails[k];
            pol_info info;
            pol_set_info(c->pol, x->policy, &info);
            json_array_append_new(fails, json_pack("{s:s, s:s, s:s, s:i, s:s, s:s}", "policy", info.name, "hook",
                                                   pol_hook_names[x->hook], "file", x->file, "line",
                                                   (json_int_t)x->line, "reason",
                                                   pol_reason_str((pol_reason)x->reason), "message", x->msg));
        }
        json_object_set_new(o, "policyFailures", fails);
    }
    json_t *caps = json_object();
    for (uint32_t i = 0; i < v.ncaps; i++) {
        char key[200], q[DE_QTY_TEXT_MAX];
        snprintf(key, sizeof key, "%s/%s", S(c, v.caps[i].domain), S(c, v.caps[i].name));
        de_qty_format(v.caps[i].value, q, sizeof q);
        json_object_set_new(caps, key, json_string(q));
    }
    json_object_set_new(o, "capacity", caps);
    json_t *holders = json_array();
    for (uint32_t i = 0; i < c->nholders; i++) {
        const cli_holder *h = &c->holders[i];
        if (h->pool != ref.pool || h->device != v.name)
            continue;
        const dg_claim *cl = dg_claim_get(c->g, h->claim);
        json_t *x = json_object();
        json_object_set_new(x, "claim", json_sprintf("%s/%s", S(c, cl->meta.ns), S(c, cl->meta.name)));
        if (h->admin)
            json_object_set_new(x, "adminAccess", json_true());
        if (h->shared)
            json_object_set_new(x, "shared", json_true());
        json_array_append_new(holders, x);
    }
    json_object_set_new(o, "state", json_string(json_array_size(holders) ? "allocated" : "free"));
    json_object_set_new(o, "allocatedTo", holders);
    const dg_taint *t;
    uint32_t nt;
    dg_device_taints(c->g, devid, &t, &nt);
    json_t *ta = json_array();
    for (uint32_t i = 0; i < nt; i++) {
        json_t *x = json_object();
        json_object_set_new(x, "key", json_string(S(c, t[i].key)));
        if (t[i].value)
            json_object_set_new(x, "value", json_string(S(c, t[i].value)));
        json_object_set_new(x, "effect", json_string(S(c, t[i].effect_raw)));
        if (t[i].rule)
            json_object_set_new(x, "deviceTaintRule", json_string(S(c, t[i].rule)));
        json_array_append_new(ta, x);
    }
    json_object_set_new(o, "taints", ta);
    return o;
}

/* ---- one pool block ------------------------------------------------------------------------ */

/* Slices of pool `pid` selected by `want(slice)`; devices in slice-name
 * order then array order. */
typedef bool (*slice_filter)(const dg_slice *s, uint32_t node);

static bool on_node(const dg_slice *s, uint32_t node) { return s->ns_mode == DG_NS_NODE_NAME && s->node_name == node; }
static bool not_local(const dg_slice *s, uint32_t node)
{
    (void)node;
    return s->ns_mode != DG_NS_NODE_NAME;
}

static void pool_table(const cli_inspect *c, uint32_t pid, slice_filter want, uint32_t node, FILE *out)
{
    dg_pool p;
    dg_pool_get(c->g, pid, &p);
    fprintf(out, "  pool %s/%s  generation %lld, %u/%lld slices%s\n", S(c, p.driver), S(c, p.name),
            (long long)p.max_generation, p.nslices_at_max, (long long)p.slice_count,
            dg_pool_complete(c->g, pid) ? "" : " (incomplete)");
    /* column widths over the pool's rows */
    int wname = 6, wstate = 5;
    for (uint32_t i = 0; i < p.nslices; i++) {
        const dg_slice *s = dg_slice_get(c->g, p.slices[i]);
        if (!want(s, node))
            continue;
        for (uint32_t j = 0; j < s->ndevices; j++) {
            char state[300];
            state_text(c, pid, s->devices[j].name, state, sizeof state);
            int ln = (int)strlen(S(c, s->devices[j].name)), ls = (int)strlen(state);
            wname = ln > wname ? ln : wname;
            wstate = ls > wstate ? (ls > 48 ? 48 : ls) : wstate;
        }
    }
    int rows = 0;
    for (uint32_t i = 0; i < p.nslices; i++) {
        const dg_slice *s = dg_slice_get(c->g, p.slices[i]);
        if (!want(s, node))
            continue;
        if (want == not_local) {
            char sel[700];
            slice_selection(c, s, sel, sizeof sel);
            fprintf(out, "    slice %s: %s\n", S(c, s->meta.name), sel);
        }
        if (s->ncountersets)
            for (uint32_t k = 0; k < s->ncountersets; k++) {
                fprintf(out, "    counters %s:", S(c, s->countersets[k].name));
                for (uint32_t j = 0; j < s->countersets[k].ncounters; j++) {
                    char q[DE_QTY_TEXT_MAX];
                    de_qty_format(s->countersets[k].counters[j].value, q, sizeof q);
                    fprintf(out, " %s=%s", S(c, s->countersets[k].counters[j].name), q);
                }
                fputc('\n', out);
            }
        for (uint32_t j = 0; j < s->ndevices; j++) {
            uint32_t devid = dg_device_id(c->g, p.slices[i], j);
            de_devview v;
            dg_device_view(c->g, devid, &v);
            char attrs[400], caps[300], taints[300], state[300];
            key_attributes(c, &v, attrs, sizeof attrs);
            capacity_text(c, &v, caps, sizeof caps);
            taints_text(c, devid, taints, sizeof taints);
            state_text(c, pid, v.name, state, sizeof state);
            if (rows++ == 0)
                fprintf(out, "    %-*s  %-*s  %s\n", wname, "DEVICE", wstate, "STATE", "ATTRIBUTES | CAPACITY | TAINTS");
            fprintf(out, "    %-*s  %-*s  %s", wname, S(c, v.name), wstate, state, attrs);
            if (caps[0])
                fprintf(out, "%s%s", attrs[0] ? " | " : "", caps);
            if (taints[0])
                fprintf(out, " | taints: %s", taints);
            if (s->ns_mode == DG_NS_PER_DEVICE) {
                const dg_device *d = dg_device_get(c->g, devid);
                char sel[600] = "";
                if (d->ns_mode == DG_NS_NODE_NAME)
                    snprintf(sel, sizeof sel, "nodeName %s", S(c, d->node_name));
                else if (d->ns_mode == DG_NS_ALL_NODES)
                    snprintf(sel, sizeof sel, "allNodes");
                else
                    nodesel_text(c, &d->node_selector, sel, sizeof sel);
                fprintf(out, " | on: %s", sel);
            }
            fputc('\n', out);
            derived_rows(c, &v, out);
        }
    }
    if (!rows)
        fprintf(out, "    (no devices)\n");
}

static json_t *pool_json(const cli_inspect *c, uint32_t pid, slice_filter want, uint32_t node)
{
    dg_pool p;
    dg_pool_get(c->g, pid, &p);
    json_t *o = json_object();
    json_object_set_new(o, "driver", json_string(S(c, p.driver)));
    json_object_set_new(o, "pool", json_string(S(c, p.name)));
    json_object_set_new(o, "generation", json_integer(p.max_generation));
    json_object_set_new(o, "resourceSliceCount", json_integer(p.slice_count));
    json_object_set_new(o, "complete", json_boolean(dg_pool_complete(c->g, pid)));
    json_t *slices = json_array(), *devs = json_array();
    for (uint32_t i = 0; i < p.nslices; i++) {
        const dg_slice *s = dg_slice_get(c->g, p.slices[i]);
        if (!want(s, node))
            continue;
        json_t *so = json_object();
        char sel[700];
        slice_selection(c, s, sel, sizeof sel);
        json_object_set_new(so, "name", json_string(S(c, s->meta.name)));
        json_object_set_new(so, "nodeSelection", json_string(sel));
        json_array_append_new(slices, so);
        for (uint32_t j = 0; j < s->ndevices; j++)
            json_array_append_new(devs, device_json(c, dg_device_id(c->g, p.slices[i], j)));
    }
    json_object_set_new(o, "slices", slices);
    json_object_set_new(o, "devices", devs);
    return o;
}

/* ---- the report ------------------------------------------------------------------------------ */

static uint32_t *sorted_nodes(const cli_inspect *c, uint32_t *count)
{
    const uint32_t *names;
    uint32_t n;
    dg_slice_nodes(c->g, &names, &n);
    uint32_t *all = de_xmalloc((n + dg_node_id_limit(c->g) + 1) * sizeof *all), k = 0;
    for (uint32_t i = 0; i < n; i++) {
        const uint32_t *s;
        uint32_t ns;
        dg_slices_on_node(c->g, names[i], &s, &ns);
        if (ns)
            all[k++] = names[i];
    }
    for (uint32_t i = 0; i < dg_node_id_limit(c->g); i++)
        if (dg_node_get(c->g, i))
            all[k++] = dg_node_get(c->g, i)->meta.name;
    sort_in = c->in;
    qsort(all, k, sizeof *all, cmp_name);
    uint32_t m = 0;
    for (uint32_t i = 0; i < k; i++)
        if (!m || all[m - 1] != all[i])
            all[m++] = all[i];
    *count = m;
    return all;
}

/* Distinct pool ids of a slice list, sorted by (driver, pool). */
static uint32_t *pools_of(const cli_inspect *c, const uint32_t *sids, uint32_t n, uint32_t *count)
{
    uint32_t *p = de_xmalloc((n + 1) * sizeof *p), k = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t pid = dg_slice_pool(c->g, sids[i]);
        bool dup = false;
        for (uint32_t j = 0; j < k && !dup; j++)
            dup = p[j] == pid;
        if (!dup)
            p[k++] = pid;
    }
    sort_g = c->g;
    qsort(p, k, sizeof *p, cmp_pool);
    *count = k;
    return p;
}

static void node_block(const cli_inspect *c, uint32_t node, uint32_t nid, const uint32_t *pools, uint32_t np, FILE *out)
{
    fprintf(out, "\nnode %s%s\n", S(c, node), nid == DG_NONE ? "" : " (Node object)");
    if (!np)
        fprintf(out, "  (no node-local pools)\n");
    for (uint32_t k = 0; k < np; k++)
        pool_table(c, pools[k], on_node, node, out);
}

static void summary_line(const cli_inspect *c, uint32_t nnodes, FILE *out)
{
    dg_stats st;
    dg_get_stats(c->g, &st);
    uint32_t nallocated = 0;
    for (uint32_t i = 0; i < dg_claim_id_limit(c->g); i++)
        if (dg_claim_get(c->g, i) && dg_claim_get(c->g, i)->allocated)
            nallocated++;
    fprintf(out, "%u nodes, %u pools, %u slices, %u devices, %u classes, %u claims (%u allocated), %u taint rules\n",
            nnodes, st.pools, st.slices, st.devices, st.classes, st.claims, nallocated, st.taint_rules);
}

json_t *cli_inspect_report(const cli_inspect *c, bool json, FILE *out)
{
    dg_stats st;
    dg_get_stats(c->g, &st);
    uint32_t nnodes, nallocated = 0;
    uint32_t *nodes = sorted_nodes(c, &nnodes);
    for (uint32_t i = 0; i < dg_claim_id_limit(c->g); i++)
        if (dg_claim_get(c->g, i) && dg_claim_get(c->g, i)->allocated)
            nallocated++;
    const uint32_t *shared;
    uint32_t nshared, nsp;
    dg_slices_shared(c->g, &shared, &nshared);
    uint32_t *spools = pools_of(c, shared, nshared, &nsp);
    uint32_t *classes = de_xmalloc((dg_class_id_limit(c->g) + 1) * sizeof *classes), ncl = 0;
    for (uint32_t i = 0; i < dg_class_id_limit(c->g); i++)
        if (dg_class_get(c->g, i))
            classes[ncl++] = i;
    sort_g = c->g;
    qsort(classes, ncl, sizeof *classes, cmp_class);
    uint32_t *claims = de_xmalloc((dg_claim_id_limit(c->g) + 1) * sizeof *claims), nclaims = 0;
    for (uint32_t i = 0; i < dg_claim_id_limit(c->g); i++)
        if (dg_claim_get(c->g, i))
            claims[nclaims++] = i;
    qsort(claims, nclaims, sizeof *claims, cmp_claim);
    json_t *root = json ? json_object() : NULL;
    if (json) {
        json_t *sum = json_object();
        json_object_set_new(sum, "nodes", json_integer(nnodes));
        json_object_set_new(sum, "pools", json_integer(st.pools));
        json_object_set_new(sum, "slices", json_integer(st.slices));
        json_object_set_new(sum, "devices", json_integer(st.devices));
        json_object_set_new(sum, "classes", json_integer(st.classes));
        json_object_set_new(sum, "claims", json_integer(st.claims));
        json_object_set_new(sum, "allocatedClaims", json_integer(nallocated));
        json_object_set_new(sum, "deviceTaintRules", json_integer(st.taint_rules));
        json_object_set_new(root, "summary", sum);
        if (c->pol) {
            json_t *po = json_pack("{s:s, s:s, s:i}", "dir", pol_set_dir(c->pol), "revision",
                                   pol_set_revision(c->pol), "count", (json_int_t)pol_set_count(c->pol));
            json_object_set_new(po, "failures", c->verdict && c->verdict->ndevices ? cli_verdict_json(c->verdict)
                                                                                     : json_null());
            json_object_set_new(root, "policies", po);
        }
    } else {
        summary_line(c, nnodes, out);
        if (c->pol) {
            fprintf(out, "policies: %u in %s, revision %.12s\n", pol_set_count(c->pol), pol_set_dir(c->pol),
                    pol_set_revision(c->pol));
            if (c->verdict && c->verdict->ndevices)
                cli_verdict_text(out, c->verdict, "");
        }
    }
    json_t *jn = json ? json_array() : NULL;
    for (uint32_t i = 0; i < nnodes; i++) {
        const uint32_t *sids;
        uint32_t ns, np;
        dg_slices_on_node(c->g, nodes[i], &sids, &ns);
        uint32_t *pools = pools_of(c, sids, ns, &np);
        uint32_t nid = dg_node_find(c->g, nodes[i]);
        if (json) {
            json_t *o = json_object(), *pa = json_array();
            json_object_set_new(o, "name", json_string(S(c, nodes[i])));
            if (nid != DG_NONE) {
                const dg_node *n = dg_node_get(c->g, nid);
                json_t *l = json_object();
                for (uint32_t k = 0; k < n->meta.nlabels; k++)
                    json_object_set_new(l, S(c, n->meta.labels[k].key), json_string(S(c, n->meta.labels[k].value)));
                json_object_set_new(o, "labels", l);
            }
            for (uint32_t k = 0; k < np; k++)
                json_array_append_new(pa, pool_json(c, pools[k], on_node, nodes[i]));
            json_object_set_new(o, "pools", pa);
            json_array_append_new(jn, o);
        } else {
            node_block(c, nodes[i], nid, pools, np, out);
        }
        free(pools);
    }
    if (json) {
        json_object_set_new(root, "nodes", jn);
        json_t *pa = json_array();
        for (uint32_t k = 0; k < nsp; k++)
            json_array_append_new(pa, pool_json(c, spools[k], not_local, 0));
        json_object_set_new(root, "networkPools", pa);
    } else if (nsp) {
        fprintf(out, "\nnetwork-attached pools (not node-local)\n");
        for (uint32_t k = 0; k < nsp; k++)
            pool_table(c, spools[k], not_local, 0, out);
    }
    /* classes */
    json_t *jc = json ? json_array() : NULL;
    if (!json && ncl)
        fprintf(out, "\nclasses\n");
    sort_in = c->in;
    for (uint32_t i = 0; i < ncl; i++) {
        const dg_class *cl = dg_class_get(c->g, classes[i]);
        if (json) {
            json_t *o = json_object(), *sa = json_array();
            json_object_set_new(o, "name", json_string(S(c, cl->meta.name)));
            for (uint32_t k = 0; k < cl->nselectors; k++)
                json_array_append_new(sa, json_string(S(c, cl->selectors[k].expr)));
            json_object_set_new(o, "selectors", sa);
            if (cl->extended_resource_name)
                json_object_set_new(o, "extendedResourceName", json_string(S(c, cl->extended_resource_name)));
            json_array_append_new(jc, o);
        } else {
            fprintf(out, "  %s: %u selector%s%s%s\n", S(c, cl->meta.name), cl->nselectors,
                    cl->nselectors == 1 ? "" : "s", cl->extended_resource_name ? ", extendedResourceName " : "",
                    cl->extended_resource_name ? S(c, cl->extended_resource_name) : "");
            for (uint32_t k = 0; k < cl->nselectors; k++)
                fprintf(out, "    %s\n", S(c, cl->selectors[k].expr));
        }
    }
    if (json)
        json_object_set_new(root, "classes", jc);
    /* claims */
    json_t *jcl = json ? json_array() : NULL;
    bool header = false;
    for (uint32_t i = 0; i < nclaims; i++) {
        const dg_claim *cl = dg_claim_get(c->g, claims[i]);
        if (json) {
            json_t *o = json_object();
            json_object_set_new(o, "namespace", json_string(S(c, cl->meta.ns)));
            json_object_set_new(o, "name", json_string(S(c, cl->meta.name)));
            json_object_set_new(o, "requests", json_integer(cl->spec.nrequests));
            if (cl->allocated)
                json_object_set_new(o, "allocation", dg_encode_allocation(c->g, &cl->allocation));
            json_array_append_new(jcl, o);
            continue;
        }
        if (!header) {
            fprintf(out, "\nclaims\n");
            header = true;
        }
        fprintf(out, "  %s/%s: %u request%s, %s\n", S(c, cl->meta.ns), S(c, cl->meta.name), cl->spec.nrequests,
                cl->spec.nrequests == 1 ? "" : "s", cl->allocated ? "allocated" : "pending");
        for (uint32_t k = 0; cl->allocated && k < cl->allocation.nresults; k++) {
            const dg_result *r = &cl->allocation.results[k];
            fprintf(out, "    %s -> %s/%s/%s%s\n", S(c, r->request), S(c, r->driver), S(c, r->pool), S(c, r->device),
                    r->admin_access == 1 ? " (admin)" : "");
        }
    }
    if (json)
        json_object_set_new(root, "claims", jcl);
    cli_inspect_pool_status(c, root, out);
    cli_inspect_evictions(c, root, out);
    free(nodes);
    free(spools);
    free(classes);
    free(claims);
    return root;
}

void cli_inspect_changes(const cli_inspect *c, uint32_t *wnodes, uint32_t nwnodes, bool network, FILE *out)
{
    uint32_t nnodes;
    uint32_t *nodes = sorted_nodes(c, &nnodes);
    summary_line(c, nnodes, out);
    sort_in = c->in;
    if (nwnodes > 1)
        qsort(wnodes, nwnodes, sizeof *wnodes, cmp_name);
    for (uint32_t i = 0; i < nwnodes; i++) {
        bool present = false;
        for (uint32_t k = 0; k < nnodes && !present; k++)
            present = nodes[k] == wnodes[i];
        if (!present) {
            fprintf(out, "\nnode %s: no longer present\n", S(c, wnodes[i]));
            continue;
        }
        const uint32_t *sids;
        uint32_t ns, np;
        dg_slices_on_node(c->g, wnodes[i], &sids, &ns);
        uint32_t *pools = pools_of(c, sids, ns, &np);
        node_block(c, wnodes[i], dg_node_find(c->g, wnodes[i]), pools, np, out);
        free(pools);
    }
    if (network) {
        const uint32_t *shared;
        uint32_t nshared, nsp;
        dg_slices_shared(c->g, &shared, &nshared);
        uint32_t *spools = pools_of(c, shared, nshared, &nsp);
        fprintf(out, "\nnetwork-attached pools (not node-local)\n");
        if (!nsp)
            fprintf(out, "  (none)\n");
        for (uint32_t k = 0; k < nsp; k++)
            pool_table(c, spools[k], not_local, 0, out);
        free(spools);
    }
    cli_inspect_pool_status(c, NULL, out);
    cli_inspect_evictions(c, NULL, out);
    free(nodes);
}

static void print_error(void *ctx, const de_err *e)
{
    (void)ctx;
    cli_errorf("inspect", "%s", e->msg);
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: draengine inspect -f PATH... [-o table|json] [--policies DIR] [--feature-gates A=true,...]\n"
            "                         [--watch]\n\n"
            "Load Kubernetes manifests (YAML or JSON; one object, several documents, a List, or a\n"
            "directory read recursively) into the device graph and print, per node, the pools and\n"
            "devices with key attributes, capacity, taints and whether they are free or allocated;\n"
            "then the pools that are not node-local, the device classes and the claims.\n\n"
            "Kinds: resource.k8s.io ResourceSlice, DeviceClass, ResourceClaim, ResourceClaimTemplate,\n"
            "DeviceTaintRule (v1 and v1beta2; v1beta1 and v1alpha3 converted), ResourcePoolStatusRequest\n"
            "(v1alpha3); core v1 Node, Pod, Namespace. Other kinds are accepted and ignored.\n\n"
            "flags:\n"
            "  -f, --filename PATH   manifest file or directory (repeatable; '-' reads stdin)\n"
            "  -o, --output FORMAT   table (default) or json\n"
            "  --feature-gates LIST  Kubernetes 1.37 feature gates (validation of gated fields,\n"
            "                        ResourcePoolStatusRequest status, NoExecute evictions)\n"
            "  -w, --watch           keep running: after the report, print a line per changed\n"
            "                        object (ADDED/MODIFIED/DELETED kind ns/name (file)), the new\n"
            "                        summary and the blocks of the nodes the change touched; with\n"
            "                        -o json one compact JSON document per change (JSON lines).\n"
            "                        A broken file is reported once and keeps its last good\n"
            "                        objects. SIGINT/SIGTERM end it with exit 0.\n"
            "  --policies DIR        run the policies of DIR (--policy-dir too) and show each\n"
            "                        device's derived attributes under it, with the policy that\n"
            "                        derived them, and the hook failures (the revision is then\n"
            "                        refused: exit 2, as every command refuses it)\n"
            "  -v                    log verbosity; policy statistics at the end\n"
            "  -h, --help            this help\n\n"
            "Attributes are shown by name when in the driver's own domain, else qualified\n"
            "(resource.kubernetes.io/numaNode is not the driver's numaNode).\n\n"
            "Exit status: 0 success, 2 invalid input (every invalid object is reported with its\n"
            "file, document, object and field path) or a refused policy revision.\n");
}

int cli_cmd_inspect(int argc, char **argv)
{
    const char **paths = de_xcalloc((size_t)argc + 1, sizeof *paths);
    int npaths = 0, verbose = 0;
    bool json = false, watch = false;
    const char *policies = NULL;
    de_gates gates;
    de_gates_default(&gates);
    enum { F_HELP = 1, F_WATCH, F_FILE, F_GATES, F_OUTPUT, F_POLICIES, F_VERBOSE };
    static const cli_flag flags[] = {
        {"help", 'h', CLI_ARG_NONE, F_HELP, NULL},
        {"watch", 'w', CLI_ARG_NONE, F_WATCH, NULL},
        {"filename", 'f', CLI_ARG_REQUIRED, F_FILE, NULL},
        {"feature-gates", 0, CLI_ARG_REQUIRED, F_GATES, NULL},
        {"output", 'o', CLI_ARG_REQUIRED, F_OUTPUT, NULL},
        {"policies", 0, CLI_ARG_REQUIRED, F_POLICIES, "policy-dir"},
        {"v", 'v', CLI_ARG_LEVEL, F_VERBOSE, "verbose"},
        {0},
    };
    cli_args args;
    cli_args_init(&args, "inspect", argc, argv, 1);
    const char *v;
    int id;
    while ((id = cli_args_next(&args, flags, &v)) != CLI_ARGS_END) {
        de_err ge;
        de_err_clear(&ge);
        switch (id) {
        case CLI_ARGS_ERROR:
            usage(stderr);
            free(paths);
            return CLI_EXIT_INVALID;
        case CLI_ARGS_OPERAND:
            cli_errorf("inspect", "unexpected argument \"%s\" (see draengine inspect --help)", v);
            free(paths);
            return CLI_EXIT_INVALID;
        case F_HELP:
            usage(stdout);
            free(paths);
            return CLI_EXIT_OK;
        case F_WATCH:
            watch = true;
            break;
        case F_FILE:
            paths[npaths++] = v;
            break;
        case F_GATES:
            if (de_gates_parse(&gates, v, &ge) != DE_OK) {
                cli_errorf("inspect", "--feature-gates: %s", ge.msg);
                free(paths);
                return CLI_EXIT_INVALID;
            }
            break;
        case F_OUTPUT:
            if (!strcmp(v, "json"))
                json = true;
            else if (!strcmp(v, "table"))
                json = false;
            else {
                cli_errorf("inspect", "-o: unknown output format \"%s\" (table or json)", v);
                free(paths);
                return CLI_EXIT_INVALID;
            }
            break;
        case F_POLICIES:
            policies = v;
            break;
        case F_VERBOSE:
            if (!cli_flag_level("inspect", v, &verbose)) {
                free(paths);
                return CLI_EXIT_INVALID;
            }
            de_log_set_verbosity(verbose);
            break;
        }
    }
    if (watch && policies) {
        cli_errorf("inspect", "--policies cannot be combined with --watch (allocate --watch --policies "
                              "re-plans on every change of the manifests and of the policies)");
        free(paths);
        return CLI_EXIT_INVALID;
    }
    if (!npaths) {
        cli_errorf("inspect", "no manifests given: use -f PATH");
        usage(stderr);
        free(paths);
        return CLI_EXIT_INVALID;
    }
    if (watch) {
        int wrc = cli_inspect_watch(paths, npaths, json, &gates);
        free(paths);
        return wrc;
    }
    dg_opts opts = {.on_error = print_error, .gates = &gates};
    dg_graph *g = dg_new(NULL, &opts);
    int rc = CLI_EXIT_OK;
    for (int i = 0; i < npaths; i++) {
        de_err e;
        de_err_clear(&e);
        if (dg_load_path(g, paths[i], &e) != DE_OK) {
            if (strstr(e.msg, "invalid object") == NULL || !strchr(e.msg, ' ') || e.msg[0] < '0' || e.msg[0] > '9')
                cli_errorf("inspect", "%s", e.msg);
            rc = cli_exit_for(e.rc);
            if (rc == CLI_EXIT_OK)
                rc = CLI_EXIT_INVALID;
        }
    }
    pol_host *host = NULL;
    pol_verdict verdict = {0};
    if (rc == CLI_EXIT_OK && policies) {
        /* the facts are computed and published as allocate does; a revision
         * whose hooks fail is shown with its failures, and refused (exit 2)
         * as every command refuses it */
        al_hooks hooks;
        de_err pe;
        de_err_clear(&pe);
        if (pol_host_for_allocate(g, policies, &gates, &hooks, &host, &pe) != DE_OK) {
            cli_errorf("inspect", "--policies %s: %s", policies, pe.msg);
            rc = CLI_EXIT_INVALID;
        } else if (!pol_host_judge(host, &verdict)) {
            char sum[2048];
            pol_verdict_summary(&verdict, sum, sizeof sum);
            cli_errorf("inspect", "--policies %s: %s", policies, sum);
        }
    }
    if (rc == CLI_EXIT_OK) {
        cli_inspect c;
        cli_inspect_init(&c, g);
        c.pol = host ? pol_host_active(host) : NULL;
        c.verdict = host ? &verdict : NULL;
        json_t *root = cli_inspect_report(&c, json, stdout);
        if (root) {
            char *text = json_dumps(root, JSON_INDENT(2));
            fprintf(stdout, "%s\n", text);
            free(text);
            json_decref(root);
        }
        cli_inspect_fini(&c);
        if (verdict.ndevices)
            rc = CLI_EXIT_INVALID;
        if (host)
            cli_policy_stats(stderr, "inspect", pol_host_active(host), verbose > 0);
    }
    pol_verdict_free(&verdict);
    pol_host_free_for_allocate(host); /* before the graph: it clears what it published */
    dg_free(g);
    free(paths);
    return rc;
}
