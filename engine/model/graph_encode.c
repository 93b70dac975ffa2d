/*
 * graph_encode.c - JSON output: AllocationResult (dra-model 1.5 and 7.H,
 * field order as in the Go types, empty fields omitted, quantities in
 * canonical form), NodeSelector, a claim's status; and node selector
 * matching with core v1 semantics.
 */
#include "graph_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static json_t *str(const dg_graph *g, uint32_t id)
{
    return json_stringn(dg_s(g, id), de_intern_len(g->in, id));
}

static json_t *ids_array(const dg_graph *g, const uint32_t *v, uint32_t n)
{
    json_t *a = json_array();
    for (uint32_t i = 0; i < n; i++)
        json_array_append_new(a, str(g, v[i]));
    return a;
}

static json_t *qty(de_qty q)
{
    char buf[DE_QTY_TEXT_MAX];
    size_t n = de_qty_format(q, buf, sizeof buf);
    return json_stringn(buf, n);
}

static const char *const op_text[] = {"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"};

static json_t *requirements(const dg_graph *g, const dg_requirement *r, uint32_t n)
{
    json_t *a = json_array();
    for (uint32_t i = 0; i < n; i++) {
        json_t *o = json_object();
        json_object_set_new(o, "key", str(g, r[i].key));
        json_object_set_new(o, "operator", json_string(r[i].op < 6 ? op_text[r[i].op] : "In"));
        if (r[i].nvalues)
            json_object_set_new(o, "values", ids_array(g, r[i].values, r[i].nvalues));
        json_array_append_new(a, o);
    }
    return a;
}

json_t *dg_encode_nodesel(const dg_graph *g, const dg_nodesel *s)
{
    json_t *terms = json_array();
    for (uint32_t i = 0; i < s->nterms; i++) {
        const dg_term *t = &s->terms[i];
        json_t *o = json_object();
        if (t->nexprs)
            json_object_set_new(o, "matchExpressions", requirements(g, t->exprs, t->nexprs));
        if (t->nfields)
            json_object_set_new(o, "matchFields", requirements(g, t->fields, t->nfields));
        json_array_append_new(terms, o);
    }
    json_t *o = json_object();
    json_object_set_new(o, "nodeSelectorTerms", terms);
    return o;
}

static json_t *tolerations(const dg_graph *g, const dg_toleration *t, uint32_t n)
{
    json_t *a = json_array();
    for (uint32_t i = 0; i < n; i++) {
        json_t *o = json_object();
        if (t[i].key)
            json_object_set_new(o, "key", str(g, t[i].key));
        json_object_set_new(o, "operator", t[i].op_raw ? str(g, t[i].op_raw)
                                                       : json_string(t[i].op == DG_TOLOP_EXISTS ? "Exists" : "Equal"));
        if (t[i].value)
            json_object_set_new(o, "value", str(g, t[i].value));
        if (t[i].effect_raw)
            json_object_set_new(o, "effect", str(g, t[i].effect_raw));
        if (t[i].has_seconds)
            json_object_set_new(o, "tolerationSeconds", json_integer(t[i].seconds));
        json_array_append_new(a, o);
    }
    return a;
}

static json_t *opaque(const dg_graph *g, const dg_opaque *op)
{
    json_t *o = json_object();
    json_object_set_new(o, "driver", str(g, op->driver));
    json_t *params = NULL;
    if (op->params) {
        json_error_t err;
        params = json_loadb(dg_s(g, op->params), de_intern_len(g->in, op->params), JSON_DECODE_ANY, &err);
    }
    json_object_set_new(o, "parameters", params ? params : json_object());
    return o;
}

static void time_text(int64_t t, char *buf, size_t cap)
{
    int64_t days = t / 86400, rem = t % 86400;
    if (rem < 0) {
        rem += 86400;
        days--;
    }
    /* civil from days (Howard Hinnant) */
    days += 719468;
    int64_t era = (days >= 0 ? days : days - 146096) / 146097;
    unsigned doe = (unsigned)(days - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t y = (int64_t)yoe + era * 400;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    unsigned d = doy - (153 * mp + 2) / 5 + 1;
    unsigned m = mp < 10 ? mp + 3 : mp - 9;
    y += m <= 2;
    snprintf(buf, cap, "%04lld-%02u-%02uT%02d:%02d:%02dZ", (long long)y, m, d, (int)(rem / 3600),
             (int)(rem / 60 % 60), (int)(rem % 60));
}

json_t *dg_encode_allocation(const dg_graph *g, const dg_allocation *a)
{
    json_t *res = json_array();
    for (uint32_t i = 0; i < a->nresults; i++) {
        const dg_result *r = &a->results[i];
        json_t *o = json_object();
        json_object_set_new(o, "request", str(g, r->request));
        json_object_set_new(o, "driver", str(g, r->driver));
        json_object_set_new(o, "pool", str(g, r->pool));
        json_object_set_new(o, "device", str(g, r->device));
        if (r->admin_access >= 0)
            json_object_set_new(o, "adminAccess", json_boolean(r->admin_access == 1));
        if (r->ntolerations)
            json_object_set_new(o, "tolerations", tolerations(g, r->tolerations, r->ntolerations));
        if (r->nbinding_conditions)
            json_object_set_new(o, "bindingConditions", ids_array(g, r->binding_conditions, r->nbinding_conditions));
        if (r->nbinding_failure_conditions)
            json_object_set_new(o, "bindingFailureConditions",
                                ids_array(g, r->binding_failure_conditions, r->nbinding_failure_conditions));
        if (r->share_id)
            json_object_set_new(o, "shareID", str(g, r->share_id));
        if (r->nconsumed) {
            json_t *cc = json_object();
            for (uint32_t k = 0; k < r->nconsumed; k++)
                json_object_set_new(cc, dg_s(g, r->consumed[k].key), qty(r->consumed[k].value));
            json_object_set_new(o, "consumedCapacity", cc);
        }
        if (r->nskip_node_ops)
            json_object_set_new(o, "skipNodeOperations", ids_array(g, r->skip_node_ops, r->nskip_node_ops));
        json_array_append_new(res, o);
    }
    json_t *devs = json_object();
    json_object_set_new(devs, "results", res);
    if (a->nconfig) {
        json_t *cfg = json_array();
        for (uint32_t i = 0; i < a->nconfig; i++) {
            const dg_alloc_config *c = &a->config[i];
            json_t *o = json_object();
            json_object_set_new(o, "source", json_string(c->source == DG_CFG_FROM_CLAIM ? "FromClaim" : "FromClass"));
            if (c->nrequests)
                json_object_set_new(o, "requests", ids_array(g, c->requests, c->nrequests));
            json_object_set_new(o, "opaque", opaque(g, &c->opaque));
            json_array_append_new(cfg, o);
        }
        json_object_set_new(devs, "config", cfg);
    }
    json_t *out = json_object();
    json_object_set_new(out, "devices", devs);
    if (a->has_node_selector)
        json_object_set_new(out, "nodeSelector", dg_encode_nodesel(g, &a->node_selector));
    if (a->allocation_time) {
        char buf[40];
        time_text(a->allocation_time, buf, sizeof buf);
        json_object_set_new(out, "allocationTimestamp", json_string(buf));
    }
    return out;
}

json_t *dg_encode_claim_status(const dg_graph *g, const dg_claim *c, json_t *orig_status)
{
    json_t *st = json_object();
    if (c->allocated)
        json_object_set_new(st, "allocation", dg_encode_allocation(g, &c->allocation));
    if (c->nreserved_for) {
        json_t *a = json_array();
        for (uint32_t i = 0; i < c->nreserved_for; i++) {
            const dg_consumer *r = &c->reserved_for[i];
            json_t *o = json_object();
            if (r->api_group)
                json_object_set_new(o, "apiGroup", str(g, r->api_group));
            json_object_set_new(o, "resource", str(g, r->resource));
            json_object_set_new(o, "name", str(g, r->name));
            json_object_set_new(o, "uid", str(g, r->uid));
            json_array_append_new(a, o);
        }
        json_object_set_new(st, "reservedFor", a);
    }
    json_t *devs = json_is_object(orig_status) ? json_object_get(orig_status, "devices") : NULL;
    if (c->allocated && c->ndevices && devs)
        json_object_set_new(st, "devices", json_deep_copy(devs));
    return st;
}

/* ---- node selector matching --------------------------------------------------------- */

static bool parse_i64(const char *s, int64_t *out)
{
    if (!*s)
        return false;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end)
        return false;
    *out = v;
    return true;
}

static de_rc match_req(const dg_graph *g, const dg_requirement *r, const dg_kv *labels, uint32_t nlabels,
                       bool *ok, de_err *e)
{
    uint32_t val = 0;
    bool has = false;
    for (uint32_t i = 0; i < nlabels; i++)
        if (labels[i].key == r->key) {
            has = true;
            val = labels[i].value;
            break;
        }
    switch (r->op) {
    case DG_OP_IN:
    case DG_OP_NOT_IN: {
        if (!r->nvalues)
            return de_errf(e, DE_EINVAL, "for 'in', 'notin' operators, values set can't be empty");
        bool in = false;
        for (uint32_t i = 0; has && i < r->nvalues; i++)
            if (r->values[i] == val)
                in = true;
        *ok = r->op == DG_OP_IN ? in : !in;
        return DE_OK;
    }
    case DG_OP_EXISTS:
        *ok = has;
        return DE_OK;
    case DG_OP_DOES_NOT_EXIST:
        *ok = !has;
        return DE_OK;
    case DG_OP_GT:
    case DG_OP_LT: {
        int64_t want, got;
        if (r->nvalues != 1 || !parse_i64(dg_s(g, r->values[0]), &want))
            return de_errf(e, DE_EINVAL, "for 'Gt', 'Lt' operators, the value must be an integer (key \"%s\")",
                           dg_s(g, r->key));
        if (!has || !parse_i64(dg_s(g, val), &got)) {
            *ok = false;
            return DE_OK;
        }
        *ok = r->op == DG_OP_GT ? got > want : got < want;
        return DE_OK;
    }
    default:
        return de_errf(e, DE_EINVAL, "unknown node selector operator %u", r->op);
    }
}

de_rc dg_nodesel_match(const dg_graph *g, const dg_nodesel *sel, uint32_t node_name, const dg_kv *labels,
                       uint32_t nlabels, bool *match, de_err *e)
{
    /* every term is checked, as NewNodeSelector parses all of them first */
    *match = false;
    for (uint32_t t = 0; t < sel->nterms; t++) {
        const dg_term *term = &sel->terms[t];
        if (!term->nexprs && !term->nfields)
            continue; /* an empty term matches nothing */
        bool ok = true;
        for (uint32_t i = 0; i < term->nexprs; i++) {
            bool m = false;
            DE_TRY(match_req(g, &term->exprs[i], labels, nlabels, &m, e));
            ok = ok && m;
        }
        for (uint32_t i = 0; i < term->nfields; i++) {
            const dg_requirement *r = &term->fields[i];
            if ((r->op != DG_OP_IN && r->op != DG_OP_NOT_IN) || r->nvalues != 1)
                return de_errf(e, DE_EINVAL, "%s: field selector requirements need operator In or NotIn and exactly one value",
                               dg_s(g, r->key));
            /* only metadata.name exists as a node field; others read as "" */
            uint32_t have = r->key == g->id_metadata_name ? node_name : 0;
            bool eq = r->values[0] == have;
            ok = ok && (r->op == DG_OP_IN ? eq : !eq);
        }
        if (ok)
            *match = true;
    }
    return DE_OK;
}
