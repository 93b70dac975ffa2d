/*
 * json.c - CEL inputs from JSON: a device (the conformance vectors' form,
 * which is also a ResourceSlice device entry) and typed values (the vector
 * encoding of bindings and expected results).
 *
 * jansson holds integers as int64, so callers that may see larger numbers
 * (uint64 values in typed JSON) rewrite those tokens as strings of digits
 * before parsing (cel_json_quote_big_ints); a string where a number is
 * expected is read back exactly here.
 */
#include "cel_int.h"

#include "../base/doc.h"
#include "../base/intern.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- device -------------------------------------------------------------------- */

static de_rc attr_value(const json_t *v, de_interner *in, de_arena *a, de_attrval *out,
                        const char *name, de_err *e)
{
    memset(out, 0, sizeof *out);
    out->n = 1;
    if (!json_is_object(v))
        return de_errf(e, DE_EINVAL, "attributes.%s: must be an object", name);
    static const struct {
        const char *key;
        int kind;
    } order[] = {
        {"ints", DE_V_INTS}, {"bools", DE_V_BOOLS}, {"strings", DE_V_STRINGS},
        {"versions", DE_V_VERSIONS}, {"int", DE_V_INT}, {"bool", DE_V_BOOL},
        {"string", DE_V_STRING}, {"version", DE_V_VERSION},
    };
    /* At most one value, as the API server's validation asks (two would make
     * the order above decide), and no key but these: a typo'd type would
     * otherwise make a device on which every selector fails.  An attribute
     * with no value at all ({}) stays expressible: it stands for a type this
     * engine does not know (dec_device.c), on which every selector fails. */
    const char *key;
    json_t *val;
    size_t given = 0;
    json_object_foreach((json_t *)v, key, val)
    {
        size_t k = 0;
        while (k < DE_ARRAY_LEN(order) && strcmp(order[k].key, key))
            k++;
        if (k == DE_ARRAY_LEN(order))
            return de_errf(e, DE_EINVAL, "attributes.%s: unknown field \"%s\" (int, bool, string, version, "
                           "ints, bools, strings, versions)", name, key);
        given += !json_is_null(val);
    }
    if (given > 1)
        return de_errf(e, DE_EINVAL, "attributes.%s: must have one of int, bool, string, version, ints, "
                       "bools, strings, versions (has %zu)", name, given);
    for (size_t k = 0; k < DE_ARRAY_LEN(order); k++) {
        const json_t *x = json_object_get(v, order[k].key);
        if (!x || json_is_null(x))
            continue;
        int kind = order[k].kind;
        out->kind = (uint8_t)kind;
        if (de_vkind_is_list(kind)) {
            if (!json_is_array(x))
                return de_errf(e, DE_EINVAL, "attributes.%s.%s: must be an array", name, order[k].key);
            size_t n = json_array_size(x);
            out->n = (uint32_t)n;
            if (kind == DE_V_INTS) {
                int64_t *arr = de_arena_alloc(a, (n ? n : 1) * sizeof *arr);
                if (!arr)
                    return de_errf(e, DE_ENOMEM, "out of memory");
                for (size_t i = 0; i < n; i++) {
                    if (!json_is_integer(json_array_get(x, i)))
                        return de_errf(e, DE_EINVAL, "attributes.%s.ints[%zu]: must be an integer", name, i);
                    arr[i] = json_integer_value(json_array_get(x, i));
                }
                out->u.ints = arr;
            } else if (kind == DE_V_BOOLS) {
                bool *arr = de_arena_alloc(a, (n ? n : 1) * sizeof *arr);
                if (!arr)
                    return de_errf(e, DE_ENOMEM, "out of memory");
                for (size_t i = 0; i < n; i++) {
                    if (!json_is_boolean(json_array_get(x, i)))
                        return de_errf(e, DE_EINVAL, "attributes.%s.bools[%zu]: must be a boolean", name, i);
                    arr[i] = json_is_true(json_array_get(x, i));
                }
                out->u.bools = arr;
            } else {
                uint32_t *arr = de_arena_alloc(a, (n ? n : 1) * sizeof *arr);
                if (!arr)
                    return de_errf(e, DE_ENOMEM, "out of memory");
                for (size_t i = 0; i < n; i++) {
                    const json_t *s = json_array_get(x, i);
                    if (!json_is_string(s))
                        return de_errf(e, DE_EINVAL, "attributes.%s.%s[%zu]: must be a string", name,
                                       order[k].key, i);
                    arr[i] = de_intern(in, json_string_value(s), json_string_length(s));
                }
                out->u.strs = arr;
            }
            return DE_OK;
        }
        switch (kind) {
        case DE_V_INT:
            if (!json_is_integer(x))
                return de_errf(e, DE_EINVAL, "attributes.%s.int: must be an integer", name);
            out->u.i = json_integer_value(x);
            break;
        case DE_V_BOOL:
            if (!json_is_boolean(x))
                return de_errf(e, DE_EINVAL, "attributes.%s.bool: must be a boolean", name);
            out->u.b = json_is_true(x);
            break;
        default:
            if (!json_is_string(x))
                return de_errf(e, DE_EINVAL, "attributes.%s.%s: must be a string", name, order[k].key);
            out->u.s = de_intern(in, json_string_value(x), json_string_length(x));
            break;
        }
        return DE_OK;
    }
    out->kind = DE_V_NONE; /* no value: every selector on this device fails */
    return DE_OK;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void split_name(const char *name, uint32_t driver, de_interner *in, uint32_t *dom,
                       uint32_t *id, uint8_t *bare)
{
    const char *slash = strchr(name, '/');
    if (slash) {
        *dom = de_intern(in, name, (size_t)(slash - name));
        *id = de_intern_cstr(in, slash + 1);
        *bare = 0;
    } else {
        *dom = driver;
        *id = de_intern_cstr(in, name);
        *bare = 1;
    }
}

de_rc cel_device_from_json(const struct json_t *j, const char *driver, de_interner *in,
                           de_arena *a, de_devview *out, de_err *e)
{
    memset(out, 0, sizeof *out);
    out->allow_multi = -1;
    if (!json_is_object(j))
        return de_errf(e, DE_EINVAL, "device: must be an object");
    /* The vector form's driver and a resource.k8s.io/v1 Device's fields (those
     * a selector does not see included): anything else is a typo that would
     * silently leave the device without what the user meant to give it. */
    static const char *const known[] = {
        "driver", "name", "attributes", "capacity", "allowMultipleAllocations", "consumesCounters",
        "nodeName", "nodeSelector", "allNodes", "taints", "bindsToNode", "bindingConditions",
        "bindingFailureConditions", "nodeAllocatableResourceMappings", "nodeAllocatableResources", NULL,
    };
    const char *field = de_json_unknown_key(j, known);
    if (field)
        return de_errf(e, DE_EINVAL, "device: unknown field \"%s\"", field);
    const json_t *drv = json_object_get(j, "driver");
    if (driver)
        out->driver = de_intern_cstr(in, driver);
    else if (json_is_string(drv))
        out->driver = de_intern(in, json_string_value(drv), json_string_length(drv));
    else if (drv && !json_is_null(drv))
        return de_errf(e, DE_EINVAL, "device.driver: must be a string");
    const json_t *nm = json_object_get(j, "name");
    if (json_is_string(nm))
        out->name = de_intern(in, json_string_value(nm), json_string_length(nm));
    const json_t *am = json_object_get(j, "allowMultipleAllocations");
    if (json_is_boolean(am))
        out->allow_multi = json_is_true(am) ? 1 : 0;
    else if (am && !json_is_null(am))
        return de_errf(e, DE_EINVAL, "device.allowMultipleAllocations: must be a boolean");

    const json_t *attrs = json_object_get(j, "attributes");
    if (attrs && !json_is_null(attrs)) {
        if (!json_is_object(attrs))
            return de_errf(e, DE_EINVAL, "device.attributes: must be an object");
        size_t n = json_object_size(attrs);
        de_attr *arr = de_arena_zalloc(a, (n ? n : 1) * sizeof *arr);
        if (!arr)
            return de_errf(e, DE_ENOMEM, "out of memory");
        /* sorted keys: deterministic order whatever the JSON object order */
        const char **keys = de_arena_alloc(a, (n ? n : 1) * sizeof *keys);
        if (!keys)
            return de_errf(e, DE_ENOMEM, "out of memory");
        size_t k = 0;
        const char *key;
        json_t *val;
        json_object_foreach((json_t *)attrs, key, val) keys[k++] = key;
        (void)val;
        qsort(keys, n, sizeof *keys, cmp_str);
        for (size_t i = 0; i < n; i++) {
            split_name(keys[i], out->driver, in, &arr[i].domain, &arr[i].name, &arr[i].bare);
            DE_TRY(attr_value(json_object_get(attrs, keys[i]), in, a, &arr[i].v, keys[i], e));
        }
        out->attrs = arr;
        out->nattrs = (uint32_t)n;
    }
    const json_t *caps = json_object_get(j, "capacity");
    if (caps && !json_is_null(caps)) {
        if (!json_is_object(caps))
            return de_errf(e, DE_EINVAL, "device.capacity: must be an object");
        size_t n = json_object_size(caps), k = 0;
        de_cap *arr = de_arena_zalloc(a, (n ? n : 1) * sizeof *arr);
        const char **keys = de_arena_alloc(a, (n ? n : 1) * sizeof *keys);
        if (!arr || !keys)
            return de_errf(e, DE_ENOMEM, "out of memory");
        const char *key;
        json_t *val;
        json_object_foreach((json_t *)caps, key, val) keys[k++] = key;
        qsort(keys, n, sizeof *keys, cmp_str);
        for (size_t i = 0; i < n; i++) {
            key = keys[i];
            val = json_object_get(caps, key);
            split_name(key, out->driver, in, &arr[i].domain, &arr[i].name, &arr[i].bare);
            const json_t *qv = json_is_object(val) ? json_object_get(val, "value") : NULL;
            static const char *const cap_known[] = {"value", "requestPolicy", NULL};
            const char *ck = json_is_object(val) ? de_json_unknown_key(val, cap_known) : NULL;
            if (ck)
                return de_errf(e, DE_EINVAL, "device.capacity.%s: unknown field \"%s\" (value, requestPolicy)",
                               key, ck);
            if (!qv)
                return de_errf(e, DE_EINVAL, "device.capacity.%s.value: required", key);
            if (de_qty_from_json(qv, &arr[i].value, e) != DE_OK) {
                de_err_prefix(e, "device.capacity.%s.value", key);
                return e ? e->rc : DE_EINVAL;
            }
        }
        out->caps = arr;
        out->ncaps = (uint32_t)n;
    }
    return DE_OK;
}

/* ---- typed values ---------------------------------------------------------------- */

static bool digits_only(const char *s, bool allow_minus)
{
    if (allow_minus && *s == '-')
        s++;
    if (!*s)
        return false;
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return false;
    return true;
}

static cel_value *typed(de_arena *a, const json_t *j, de_err *e, int depth)
{
    if (depth > 100) {
        de_errf(e, DE_EINVAL, "typed value nests too deeply");
        return NULL;
    }
    if (!json_is_object(j) || json_object_size(j) != 1) {
        de_errf(e, DE_EINVAL, "typed value must be an object with one key");
        return NULL;
    }
    const char *k = NULL;
    json_t *v = NULL;
    const char *kk;
    json_t *vv;
    json_object_foreach((json_t *)j, kk, vv)
    {
        k = kk;
        v = vv;
    }
    cel_value *r = NULL;
    if (!strcmp(k, "null")) {
        r = cel_value_null(a);
    } else if (!strcmp(k, "bool")) {
        if (!json_is_boolean(v))
            goto bad;
        r = cel_value_new_bool(a, json_is_true(v));
    } else if (!strcmp(k, "int")) {
        if (json_is_integer(v))
            r = cel_value_new_int(a, json_integer_value(v));
        else
            goto bad;
    } else if (!strcmp(k, "uint")) {
        if (json_is_integer(v) && json_integer_value(v) >= 0) {
            r = cel_value_new_uint(a, (uint64_t)json_integer_value(v));
        } else if (json_is_string(v) && digits_only(json_string_value(v), false)) {
            errno = 0;
            unsigned long long u = strtoull(json_string_value(v), NULL, 10);
            if (errno)
                goto bad;
            r = cel_value_new_uint(a, u);
        } else {
            goto bad;
        }
    } else if (!strcmp(k, "double")) {
        if (json_is_number(v)) {
            r = cel_value_new_double(a, json_number_value(v));
        } else if (json_is_string(v)) {
            const char *s = json_string_value(v);
            if (!strcmp(s, "NaN"))
                r = cel_value_new_double(a, NAN);
            else if (!strcmp(s, "Infinity"))
                r = cel_value_new_double(a, INFINITY);
            else if (!strcmp(s, "-Infinity"))
                r = cel_value_new_double(a, -INFINITY);
            else if (digits_only(s, true))
                r = cel_value_new_double(a, strtod(s, NULL));
            else
                goto bad;
        } else {
            goto bad;
        }
    } else if (!strcmp(k, "string") || !strcmp(k, "bytes")) {
        if (!json_is_string(v))
            goto bad;
        const char *s = json_string_value(v);
        size_t n = json_string_length(v);
        if (!strcmp(k, "string")) {
            r = cel_value_new_string(a, s, n);
        } else {
            /* base64 */
            static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
            char *out = de_arena_alloc(a, n + 1);
            if (!out)
                goto oom;
            size_t o = 0;
            uint32_t acc = 0;
            int bits = 0;
            for (size_t i = 0; i < n; i++) {
                if (s[i] == '=')
                    break;
                const char *p = strchr(tab, s[i]);
                if (!p || !s[i])
                    goto bad;
                acc = acc << 6 | (uint32_t)(p - tab);
                bits += 6;
                if (bits >= 8) {
                    bits -= 8;
                    out[o++] = (char)((acc >> bits) & 0xFF);
                }
            }
            r = cel_value_new_bytes(a, out, o);
        }
    } else if (!strcmp(k, "list")) {
        if (!json_is_array(v))
            goto bad;
        size_t n = json_array_size(v);
        const cel_value **items = de_arena_alloc(a, (n ? n : 1) * sizeof *items);
        if (!items)
            goto oom;
        for (size_t i = 0; i < n; i++)
            if (!(items[i] = typed(a, json_array_get(v, i), e, depth + 1)))
                return NULL;
        r = cel_value_new_list(a, items, n);
    } else if (!strcmp(k, "map")) {
        if (!json_is_array(v))
            goto bad;
        size_t n = json_array_size(v);
        const cel_value **keys = de_arena_alloc(a, (n ? n : 1) * sizeof *keys);
        const cel_value **vals = de_arena_alloc(a, (n ? n : 1) * sizeof *vals);
        if (!keys || !vals)
            goto oom;
        for (size_t i = 0; i < n; i++) {
            const json_t *pair = json_array_get(v, i);
            if (!json_is_array(pair) || json_array_size(pair) != 2)
                goto bad;
            if (!(keys[i] = typed(a, json_array_get(pair, 0), e, depth + 1)) ||
                !(vals[i] = typed(a, json_array_get(pair, 1), e, depth + 1)))
                return NULL;
        }
        r = cel_value_new_map(a, keys, vals, n);
    } else if (!strcmp(k, "type")) {
        if (!json_is_string(v) || !(r = cel_value_new_type(a, json_string_value(v))))
            goto bad;
    } else if (!strcmp(k, "quantity")) {
        de_qty q;
        if (de_qty_from_json(v, &q, e) != DE_OK)
            return NULL;
        r = cel_value_new_quantity(a, q);
    } else if (!strcmp(k, "semver")) {
        if (!json_is_string(v) ||
            !(r = cel_value_new_semver(a, json_string_value(v), json_string_length(v))))
            goto bad;
    } else {
        de_errf(e, DE_EINVAL, "unknown typed value kind \"%s\"", k);
        return NULL;
    }
    if (!r)
        goto oom;
    return r;
bad:
    de_errf(e, DE_EINVAL, "invalid typed value for \"%s\"", k);
    return NULL;
oom:
    de_errf(e, DE_ENOMEM, "out of memory");
    return NULL;
}

cel_value *cel_value_from_typed_json(de_arena *a, const struct json_t *j, de_err *e)
{
    return typed(a, j, e, 0);
}

/* Rewrite integer tokens outside strings that do not fit int64 as JSON
 * strings of digits.  Returns a malloc'd NUL-terminated copy. */
char *cel_json_quote_big_ints(const char *s, size_t n)
{
    de_buf b;
    de_buf_init(&b, 4 * n + 64);
    bool in_str = false;
    for (size_t i = 0; i < n;) {
        char c = s[i];
        if (in_str) {
            de_buf_putc(&b, c);
            if (c == '\\' && i + 1 < n) {
                de_buf_putc(&b, s[i + 1]);
                i += 2;
                continue;
            }
            if (c == '"')
                in_str = false;
            i++;
            continue;
        }
        if (c == '"') {
            in_str = true;
            de_buf_putc(&b, c);
            i++;
            continue;
        }
        if (c == '-' || (c >= '0' && c <= '9')) {
            size_t j = i + (c == '-');
            while (j < n && ((s[j] >= '0' && s[j] <= '9') || s[j] == '.' || s[j] == 'e' ||
                             s[j] == 'E' || s[j] == '+' || s[j] == '-'))
                j++;
            bool integral = true;
            for (size_t k = i; k < j; k++)
                if (s[k] == '.' || s[k] == 'e' || s[k] == 'E')
                    integral = false;
            bool big = false;
            if (integral) {
                size_t nd = j - i - (c == '-');
                const char *d = s + i + (c == '-');
                const char *lim = c == '-' ? "9223372036854775808" : "9223372036854775807";
                big = nd > 19 || (nd == 19 && memcmp(d, lim, 19) > 0);
            }
            if (big) {
                de_buf_putc(&b, '"');
                de_buf_add(&b, s + i, j - i);
                de_buf_putc(&b, '"');
            } else {
                de_buf_add(&b, s + i, j - i);
            }
            i = j;
            continue;
        }
        de_buf_putc(&b, c);
        i++;
    }
    return de_buf_take(&b);
}
