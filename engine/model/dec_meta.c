/*
 * dec_meta.c - what every kind shares: apiVersion/kind classification,
 * ObjectMeta, core v1 NodeSelector, device taints and tolerations, CEL
 * selectors and opaque configuration.
 *
 * Versions: resource.k8s.io v1 and v1beta2 have the same shapes; v1beta1
 * (and v1alpha3, which had the v1beta1 shapes when it still served slices
 * and claims) wraps device fields in `basic` and puts the request fields on
 * the request itself.  Both are converted on input.  DeviceTaintRule exists
 * in v1, v1beta2 and v1alpha3; ResourcePoolStatusRequest only in v1alpha3.
 * Any other resource.k8s.io version or kind is refused with a message that
 * names it; kinds of other API groups are accepted and ignored.
 */
#include "dec.h"

#include <string.h>
#include <strings.h>

static const char *const group_prefix = "resource.k8s.io/";

static const char *find_caseless_key(json_t *obj, const char *want)
{
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v) {
        (void)v;
        if (!strcasecmp(key, want) && strcmp(key, want))
            return key;
    }
    return NULL;
}

static bool required_top(dec *d, json_t *obj, const char *key, const char **s)
{
    size_t n;
    if (dec_get_str(d, obj, key, s, &n) && n > 0)
        return true;
    if (json_object_get(obj, key) && !json_is_null(json_object_get(obj, key)) &&
        !json_is_string(json_object_get(obj, key)))
        return false; /* type error already recorded */
    const char *alt = find_caseless_key(obj, key);
    char q[DE_QUOTE_MAX + 1];
    if (alt)
        dec_errf(d, key, "Required value (found %s: field names are case-sensitive)", de_quote(q, alt, strlen(alt)));
    else
        dec_required(d, key, NULL);
    return false;
}

dg_kind dec_classify(dec *d, json_t *obj, int *version)
{
    const char *av = NULL, *kind = NULL;
    bool ok_av = required_top(d, obj, "apiVersion", &av);
    bool ok_kind = required_top(d, obj, "kind", &kind);
    if (!ok_av || !ok_kind)
        return DG_KIND_NONE;
    *version = DEC_V1;
    char qav[DE_QUOTE_MAX + 1], qkind[DE_QUOTE_MAX + 1];
    de_quote(qav, av, strlen(av));
    de_quote(qkind, kind, strlen(kind));
    if (!strncmp(av, group_prefix, strlen(group_prefix))) {
        const char *v = av + strlen(group_prefix);
        int ver;
        if (!strcmp(v, "v1"))
            ver = DEC_V1;
        else if (!strcmp(v, "v1beta2"))
            ver = DEC_V1BETA2;
        else if (!strcmp(v, "v1beta1"))
            ver = DEC_V1BETA1;
        else if (!strcmp(v, "v1alpha3"))
            ver = DEC_V1ALPHA3;
        else {
            dec_errf(d, "apiVersion",
                     "Unsupported value: %s: supported versions of resource.k8s.io: v1, "
                     "v1beta2, v1beta1 (converted), v1alpha3 (converted)",
                     qav);
            return DG_KIND_NONE;
        }
        *version = ver;
        static const struct {
            const char *name;
            dg_kind kind;
            unsigned versions; /* bit per DEC_V* */
        } kinds[] = {
            {"ResourceSlice", DG_KIND_RESOURCE_SLICE, 0x1e},
            {"DeviceClass", DG_KIND_DEVICE_CLASS, 0x1e},
            {"ResourceClaim", DG_KIND_RESOURCE_CLAIM, 0x1e},
            {"ResourceClaimTemplate", DG_KIND_RESOURCE_CLAIM_TEMPLATE, 0x1e},
            {"DeviceTaintRule", DG_KIND_DEVICE_TAINT_RULE,
             (1u << DEC_V1) | (1u << DEC_V1BETA2) | (1u << DEC_V1ALPHA3)},
            {"ResourcePoolStatusRequest", DG_KIND_RESOURCE_POOL_STATUS_REQUEST, 1u << DEC_V1ALPHA3},
        };
        for (size_t i = 0; i < DE_ARRAY_LEN(kinds); i++) {
            if (strcmp(kind, kinds[i].name))
                continue;
            if (!(kinds[i].versions & (1u << ver))) {
                dec_errf(d, "apiVersion", "Unsupported value: %s: kind %s is not served in %s%s",
                         qav, kind, av,
                         kinds[i].kind == DG_KIND_RESOURCE_POOL_STATUS_REQUEST
                             ? " (use resource.k8s.io/v1alpha3)"
                             : " (use resource.k8s.io/v1)");
                return DG_KIND_NONE;
            }
            return kinds[i].kind;
        }
        dec_errf(d, "kind", "Unsupported value: %s: not a kind of %s", qkind, av);
        return DG_KIND_NONE;
    }
    if (!strcmp(av, "v1")) {
        if (!strcmp(kind, "Node"))
            return DG_KIND_NODE;
        if (!strcmp(kind, "Pod"))
            return DG_KIND_POD;
        if (!strcmp(kind, "Namespace"))
            return DG_KIND_NAMESPACE;
    }
    return DG_KIND_OTHER;
}

/* ---- ObjectMeta --------------------------------------------------------------- */

static const char *const meta_fields[] = {
    "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
    "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels",
    "annotations", "ownerReferences", "finalizers", "managedFields", NULL};

static dg_kv *dec_kv_map(dec *d, json_t *m, uint32_t *n, bool labels)
{
    *n = 0;
    if (!m || !json_object_size(m))
        return NULL;
    dg_kv *out = DEC_NEW(d, dg_kv, json_object_size(m));
    if (!out)
        return NULL;
    const char *key;
    json_t *v;
    size_t total = 0;
    json_object_foreach(m, key, v) {
        size_t km = dec_key(d, key);
        size_t kl = strlen(key);
        if (d->validate)
            dec_label_name(d, NULL, key, kl);
        const char *s;
        size_t sl;
        if (dec_as_str(d, v, &s, &sl)) {
            if (labels && d->validate)
                dec_label_value(d, NULL, s, sl);
            out[*n].key = dec_intern(d, key, kl);
            out[*n].value = dec_intern(d, s, sl);
            (*n)++;
            total += kl + sl;
        }
        dec_pop(d, km);
    }
    if (!labels && total > 256 * 1024 && d->validate)
        dec_errf(d, NULL, "Too long: must have at most 262144 bytes");
    return out;
}

void dec_meta(dec *d, json_t *obj, dg_meta *m, unsigned flags)
{
    memset(m, 0, sizeof *m);
    json_t *md = json_object_get(obj, "metadata");
    size_t mark = dec_field(d, "metadata");
    if (!md || json_is_null(md)) {
        if (d->validate)
            dec_required(d, "name", "name or generateName is required");
        dec_pop(d, mark);
        return;
    }
    if (!dec_as_obj(d, md)) {
        dec_pop(d, mark);
        return;
    }
    dec_known(d, md, meta_fields, NULL);
    dec_get_cid(d, md, "name", &m->name);
    dec_get_cid(d, md, "generateName", &m->generate_name);
    if (flags & DEC_META_NAMESPACED) {
        if (dec_get_id(d, md, "namespace", &m->ns) && m->ns && d->validate) {
            const char *s = dec_str(d, m->ns);
            dec_dns_label(d, "namespace", s, strlen(s));
        }
        if (!m->ns)
            m->ns = dec_intern(d, "default", 7);
    }
    dec_get_cid(d, md, "uid", &m->uid);
    dec_get_cid(d, md, "resourceVersion", &m->resource_version);
    dec_get_int(d, md, "generation", &m->generation);
    dec_time(d, md, "creationTimestamp", &m->creation);
    int64_t del;
    if (dec_time(d, md, "deletionTimestamp", &del))
        m->deleting = true;
    size_t km = dec_field(d, "labels");
    json_t *labels = dec_get_obj(d, md, "labels");
    dec_pop(d, km);
    if (labels) {
        km = dec_field(d, "labels");
        m->labels = dec_kv_map(d, labels, &m->nlabels, true);
        dec_pop(d, km);
    }
    json_t *ann = dec_get_obj(d, md, "annotations");
    if (ann) {
        km = dec_field(d, "annotations");
        m->annotations = dec_kv_map(d, ann, &m->nannotations, false);
        dec_pop(d, km);
    }
    json_t *fin = dec_get_arr(d, md, "finalizers");
    if (fin) {
        km = dec_field(d, "finalizers");
        m->finalizers = dec_str_list(d, fin, &m->nfinalizers);
        dec_pop(d, km);
    }
    dec_items it;
    if (dec_items_begin(d, dec_get_arr(d, md, "ownerReferences"), "ownerReferences", 0, &it)) {
        m->owners = DEC_NEW(d, dg_ownerref, it.n);
        static const char *const of[] = {"apiVersion", "kind", "name", "uid", "controller",
                                         "blockOwnerDeletion", NULL};
        for (json_t *o; m->owners && (o = dec_items_next_obj(d, &it, of));) {
            dg_ownerref *r = &m->owners[m->nowners++];
            dec_get_id(d, o, "apiVersion", &r->api_version);
            dec_get_id(d, o, "kind", &r->kind);
            dec_get_cid(d, o, "name", &r->name);
            dec_get_cid(d, o, "uid", &r->uid);
            dec_get_bool(d, o, "controller", &r->controller);
        }
        dec_items_end(d, &it);
    }
    if (d->validate && !m->name && !m->generate_name)
        dec_required(d, "name", "name or generateName is required");
    if (d->validate && m->name && (flags & (DEC_META_SUBDOMAIN | DEC_META_LABEL))) {
        const char *s = dec_str(d, m->name);
        if (flags & DEC_META_LABEL)
            dec_dns_label(d, "name", s, strlen(s));
        else
            dec_dns_subdomain(d, "name", s, strlen(s));
    }
    dec_pop(d, mark);
}

/* ---- NodeSelector ------------------------------------------------------------- */

static const char *const op_names[] = {"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"};

static void dec_requirements(dec *d, json_t *arr, dg_requirement **out, uint32_t *n, bool fields)
{
    *n = 0;
    *out = NULL;
    if (!arr || !json_array_size(arr))
        return;
    *out = DEC_NEW(d, dg_requirement, json_array_size(arr));
    if (!*out)
        return;
    for (size_t i = 0; i < json_array_size(arr); i++) {
        json_t *r = json_array_get(arr, i);
        size_t m = dec_index(d, i);
        if (!dec_as_obj(d, r)) {
            dec_pop(d, m);
            continue;
        }
        static const char *const rf[] = {"key", "operator", "values", NULL};
        dec_known(d, r, rf, NULL);
        dg_requirement *q = &(*out)[(*n)++];
        const char *key = "", *op = "";
        size_t kl = 0, ol = 0;
        dec_get_str(d, r, "key", &key, &kl);
        q->key = dec_intern(d, key, kl);
        dec_get_str(d, r, "operator", &op, &ol);
        int opi = -1;
        for (int k = 0; k < 6; k++)
            if (!strcmp(op, op_names[k]))
                opi = k;
        json_t *vals = dec_get_arr(d, r, "values");
        size_t vm = dec_field(d, "values");
        q->values = dec_str_list(d, vals, &q->nvalues);
        dec_pop(d, vm);
        if (opi < 0) {
            /* also the decode-only path: an unknown operator cannot be stored */
            dec_invalid_str(d, "operator", op, "not a valid selector operator");
            q->op = DG_OP_IN;
            dec_pop(d, m);
            continue;
        }
        q->op = (uint8_t)opi;
        if (!d->validate) {
            dec_pop(d, m);
            continue;
        }
        if (fields) {
            if (opi != DG_OP_IN && opi != DG_OP_NOT_IN)
                dec_invalid_str(d, "operator", op, "not a valid selector operator");
            else if (q->nvalues != 1)
                dec_required(d, "values", "must be only one value when `operator` is 'In' or 'NotIn' for node field selector");
            if (strcmp(key, "metadata.name"))
                dec_invalid_str(d, "key", key, "not a valid field selector key");
            else
                for (uint32_t v = 0; v < q->nvalues; v++) {
                    size_t vm2 = dec_field(d, "values");
                    size_t im = dec_index(d, v);
                    const char *s = dec_str(d, q->values[v]);
                    dec_dns_subdomain(d, NULL, s, strlen(s));
                    dec_pop(d, im);
                    dec_pop(d, vm2);
                }
        } else {
            switch (opi) {
            case DG_OP_IN:
            case DG_OP_NOT_IN:
                if (!q->nvalues)
                    dec_required(d, "values", "must be specified when `operator` is 'In' or 'NotIn'");
                break;
            case DG_OP_EXISTS:
            case DG_OP_DOES_NOT_EXIST:
                if (q->nvalues)
                    dec_forbidden(d, "values", "may not be specified when `operator` is 'Exists' or 'DoesNotExist'");
                break;
            default:
                if (q->nvalues != 1)
                    dec_required(d, "values", "must be specified single value when `operator` is 'Lt' or 'Gt'");
            }
            dec_label_name(d, "key", key, kl);
            for (uint32_t v = 0; v < q->nvalues; v++) {
                size_t vm2 = dec_field(d, "values");
                size_t im = dec_index(d, v);
                const char *s = dec_str(d, q->values[v]);
                dec_label_value(d, NULL, s, strlen(s));
                dec_pop(d, im);
                dec_pop(d, vm2);
            }
        }
        dec_pop(d, m);
    }
}

void dec_nodesel(dec *d, json_t *v, dg_nodesel *out)
{
    memset(out, 0, sizeof *out);
    if (!dec_as_obj(d, v))
        return;
    static const char *const nf[] = {"nodeSelectorTerms", NULL};
    dec_known(d, v, nf, NULL);
    json_t *terms = dec_get_arr(d, v, "nodeSelectorTerms");
    size_t n = terms ? json_array_size(terms) : 0;
    size_t tm = dec_field(d, "nodeSelectorTerms");
    if (n == 0) {
        if (d->validate)
            dec_required(d, NULL, "must have at least one node selector term");
        dec_pop(d, tm);
        return;
    }
    out->terms = DEC_NEW(d, dg_term, n);
    for (size_t i = 0; out->terms && i < n; i++) {
        json_t *t = json_array_get(terms, i);
        size_t im = dec_index(d, i);
        dg_term *term = &out->terms[out->nterms++];
        if (json_is_null(t)) {
            dec_pop(d, im);
            continue;
        }
        if (dec_as_obj(d, t)) {
            static const char *const tf[] = {"matchExpressions", "matchFields", NULL};
            dec_known(d, t, tf, NULL);
            json_t *me = dec_get_arr(d, t, "matchExpressions");
            size_t fm = dec_field(d, "matchExpressions");
            dec_requirements(d, me, &term->exprs, &term->nexprs, false);
            dec_pop(d, fm);
            json_t *mf = dec_get_arr(d, t, "matchFields");
            fm = dec_field(d, "matchFields");
            dec_requirements(d, mf, &term->fields, &term->nfields, true);
            dec_pop(d, fm);
        }
        dec_pop(d, im);
    }
    dec_pop(d, tm);
}

/* ---- taints and tolerations ------------------------------------------------------ */

static const char effects_supported[] = "\"NoExecute\", \"NoSchedule\", \"None\"";

static int effect_of(const char *s)
{
    if (!strcmp(s, "None"))
        return DG_EFFECT_NONE;
    if (!strcmp(s, "NoSchedule"))
        return DG_EFFECT_NO_SCHEDULE;
    if (!strcmp(s, "NoExecute"))
        return DG_EFFECT_NO_EXECUTE;
    return DG_EFFECT_UNKNOWN;
}

void dec_taint(dec *d, json_t *v, dg_taint *out)
{
    memset(out, 0, sizeof *out);
    if (!dec_as_obj(d, v))
        return;
    static const char *const tf[] = {"key", "value", "effect", "timeAdded", NULL};
    dec_known(d, v, tf, NULL);
    const char *key = "", *val = "", *eff = "";
    size_t kl = 0, vl = 0, el = 0;
    dec_get_str(d, v, "key", &key, &kl);
    dec_get_str(d, v, "value", &val, &vl);
    dec_get_str(d, v, "effect", &eff, &el);
    out->key = dec_intern(d, key, kl);
    out->value = dec_intern(d, val, vl);
    out->effect_raw = dec_intern(d, eff, el);
    out->effect = (uint8_t)effect_of(eff);
    dec_time(d, v, "timeAdded", &out->time_added);
    if (!d->validate)
        return;
    dec_label_name(d, "key", key, kl);
    if (vl)
        dec_label_value(d, "value", val, vl);
    if (el == 0)
        dec_required(d, "effect", NULL);
    else if (out->effect == DG_EFFECT_UNKNOWN)
        dec_unsupported(d, "effect", eff, effects_supported);
}

void dec_toleration(dec *d, json_t *v, dg_toleration *out)
{
    memset(out, 0, sizeof *out);
    if (!dec_as_obj(d, v))
        return;
    static const char *const tf[] = {"key", "operator", "value", "effect", "tolerationSeconds", NULL};
    dec_known(d, v, tf, NULL);
    const char *key = "", *val = "", *eff = "", *op = "";
    size_t kl = 0, vl = 0, el = 0, ol = 0;
    dec_get_str(d, v, "key", &key, &kl);
    dec_get_str(d, v, "value", &val, &vl);
    dec_get_str(d, v, "effect", &eff, &el);
    dec_get_str(d, v, "operator", &op, &ol);
    out->key = dec_intern(d, key, kl);
    out->value = dec_intern(d, val, vl);
    out->effect_raw = el ? dec_intern(d, eff, el) : 0;
    out->effect = (uint8_t)(el ? effect_of(eff) : DG_EFFECT_NONE);
    out->op_raw = ol ? dec_intern(d, op, ol) : 0;
    if (ol == 0 || !strcmp(op, "Equal"))
        out->op = DG_TOLOP_EQUAL; /* defaulted */
    else if (!strcmp(op, "Exists"))
        out->op = DG_TOLOP_EXISTS;
    else
        out->op = DG_TOLOP_UNKNOWN;
    out->has_seconds = dec_get_int(d, v, "tolerationSeconds", &out->seconds);
    if (!d->validate)
        return;
    if (kl)
        dec_label_name(d, "key", key, kl);
    switch (out->op) {
    case DG_TOLOP_EXISTS:
        if (vl)
            dec_invalid_str(d, "value", val, "must be empty for operator `Exists`");
        break;
    case DG_TOLOP_EQUAL:
        dec_label_value(d, "value", val, vl);
        break;
    default:
        dec_unsupported(d, "operator", op, "\"Equal\", \"Exists\"");
    }
    if (el && out->effect == DG_EFFECT_UNKNOWN)
        dec_unsupported(d, "effect", eff, effects_supported);
}

/* ---- selectors, opaque config --------------------------------------------------- */

void dec_selectors(dec *d, json_t *obj, const char *key, dg_selector **out, uint32_t *n)
{
    *out = NULL;
    *n = 0;
    json_t *arr = dec_get_arr(d, obj, key);
    if (!arr || !json_array_size(arr))
        return;
    size_t m = dec_field(d, key);
    size_t cnt = json_array_size(arr);
    if (cnt > 32 && d->validate) {
        dec_too_many(d, NULL, cnt, 32);
        dec_pop(d, m);
        return;
    }
    *out = DEC_NEW(d, dg_selector, cnt);
    for (size_t i = 0; *out && i < cnt; i++) {
        json_t *s = json_array_get(arr, i);
        size_t im = dec_index(d, i);
        dg_selector *sel = &(*out)[(*n)++];
        if (dec_as_obj(d, s)) {
            static const char *const sf[] = {"cel", NULL};
            static const char *const hints[] = {"expression", "it belongs under \"cel\"", NULL};
            dec_known(d, s, sf, hints);
            json_t *cel = dec_get_obj(d, s, "cel");
            if (!cel) {
                if (d->validate && !(json_object_get(s, "cel") && !json_is_null(json_object_get(s, "cel"))))
                    dec_required(d, "cel", NULL);
            } else {
                size_t cm = dec_field(d, "cel");
                static const char *const cf[] = {"expression", NULL};
                dec_known(d, cel, cf, NULL);
                const char *e = "";
                size_t el = 0;
                dec_get_str(d, cel, "expression", &e, &el);
                sel->has_cel = true;
                sel->expr = dec_intern(d, e, el);
                dec_cel_expression(d, "expression", e, el, false);
                dec_pop(d, cm);
            }
        }
        dec_pop(d, im);
    }
    dec_pop(d, m);
}

void dec_opaque(dec *d, json_t *obj, dg_opaque *out, bool *has)
{
    memset(out, 0, sizeof *out);
    *has = false;
    json_t *op = dec_get_obj(d, obj, "opaque");
    if (!op) {
        if (d->validate && !json_object_get(obj, "opaque"))
            dec_required(d, "opaque", NULL);
        return;
    }
    *has = true;
    size_t m = dec_field(d, "opaque");
    static const char *const of[] = {"driver", "parameters", NULL};
    dec_known(d, op, of, NULL);
    const char *drv = "";
    size_t dl = 0;
    dec_get_str(d, op, "driver", &drv, &dl);
    out->driver = dec_intern(d, drv, dl);
    if (d->validate)
        dec_driver_name(d, "driver", drv, dl);
    json_t *params = json_object_get(op, "parameters");
    if (!params || json_is_null(params)) {
        if (d->validate)
            dec_required(d, "parameters", NULL);
    } else {
        size_t len = dec_json_text(d, params, &out->params);
        if (d->validate) {
            if (len > 10 * 1024)
                dec_too_long(d, "parameters", 10 * 1024);
            else if (!json_is_object(params))
                dec_invalid_str(d, "parameters", "<value omitted>", "must be a valid JSON object");
        }
    }
    dec_pop(d, m);
}
