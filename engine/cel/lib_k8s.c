/*
 * lib_k8s.c - the Kubernetes CEL libraries a selector can reach: quantity
 * and semver (../shared/docs/cel.md §10, on engine/base/quantity.h and
 * semver.h), the regex library's find/findAll, and DRA's includes().
 *
 * findAll follows Go's FindAllString: successive non-overlapping matches,
 * an empty match right after the previous match is skipped, n < 0 means
 * all and n == 0 none.  includes() refuses lists longer than 48 values the
 * way the DRA implementation does: only when it gets that far without a
 * match.
 */
#include "cel_int.h"

#include <string.h>

#define INCLUDES_MAX 48

static cel_v qty(cel_ctx *c, de_qty q)
{
    de_qty *p = cel_alloc(c, sizeof *p);
    *p = q;
    cel_v v = {.t = CV_QTY};
    v.u.q = p;
    return v;
}

static cel_v semver_of(cel_ctx *c, const cel_node *n, cel_v s, bool normalize, bool want_bool)
{
    de_semver *sv = cel_alloc(c, sizeof *sv);
    de_err e;
    de_err_clear(&e);
    de_rc rc;
    if (normalize) {
        size_t cap = (size_t)s.n + 16;
        char *buf = cel_alloc(c, cap);
        rc = de_semver_parse_normalized(s.u.s, s.n, buf, cap, sv, &e);
    } else {
        rc = de_semver_parse(s.u.s, s.n, sv, &e);
    }
    if (rc != DE_OK) {
        if (want_bool)
            return cv_bool(false);
        return cel_err(c, n, "%s", e.msg);
    }
    if (want_bool)
        return cv_bool(true);
    cel_v v = {.t = CV_SEMVER};
    v.u.sv = sv;
    return v;
}

static cel_v find_all(cel_ctx *c, const cel_node *n, cel_v s, const cel_re *re, int64_t lim)
{
    uint32_t cap = 0, cnt = 0;
    cel_v *items = NULL;
    if (lim == 0)
        return cv_list(NULL, 0);
    size_t pos = 0, prev_end = SIZE_MAX;
    while (pos <= s.n && (lim < 0 || (int64_t)cnt < lim)) {
        size_t ms, me;
        int r = cel_re_search(re, s.u.s, s.n, pos, &ms, &me);
        if (r < 0)
            return cel_err(c, n, "regex match exceeded its limits");
        if (r == 0)
            break;
        bool accept = true;
        if (me == ms) {
            if (ms == prev_end)
                accept = false;
            /* advance one code point */
            size_t w = 1;
            while (ms + w < s.n && ((unsigned char)s.u.s[ms + w] & 0xC0) == 0x80)
                w++;
            pos = ms + w;
            if (ms >= s.n)
                pos = s.n + 1;
        } else {
            pos = me;
        }
        prev_end = me;
        if (accept) {
            if (cnt == cap) {
                uint32_t nc = cap ? cap * 2 : 8;
                cel_v *ni = cel_alloc(c, nc * sizeof *ni);
                if (cnt)
                    memcpy(ni, items, cnt * sizeof *ni);
                items = ni;
                cap = nc;
            }
            items[cnt++] = cv_str(s.u.s + ms, me - ms);
        }
    }
    return cv_list(items, cnt);
}

cel_v cel_call_k8s(cel_ctx *c, const cel_node *n, int impl, cel_v *a, int na)
{
    de_err e;
    switch (impl) {
    case IM_FIND:
    case IM_FIND_ALL: {
        char why[256];
        const char *w = NULL;
        const cel_re *re = cel_re_get(a[1].u.s, a[1].n, &w, why, sizeof why);
        if (!re)
            return cel_err(c, n, "%s", w ? w : "invalid regex");
        if (impl == IM_FIND_ALL)
            return find_all(c, n, a[0], re, na > 2 ? a[2].u.i : -1);
        size_t ms, me;
        int r = cel_re_search(re, a[0].u.s, a[0].n, 0, &ms, &me);
        if (r < 0)
            return cel_err(c, n, "regex match exceeded its limits");
        if (r == 0)
            return cv_str("", 0);
        return cv_str(a[0].u.s + ms, me - ms);
    }
    case IM_QUANTITY:
    case IM_IS_QUANTITY: {
        de_qty q;
        de_err_clear(&e);
        if (de_qty_parse(a[0].u.s, a[0].n, &q, &e) != DE_OK)
            return impl == IM_IS_QUANTITY ? cv_bool(false) : cel_err(c, n, "%s", e.msg);
        return impl == IM_IS_QUANTITY ? cv_bool(true) : qty(c, q);
    }
    case IM_Q_SIGN: return cv_int(de_qty_sign(*a[0].u.q));
    case IM_Q_GT: return cv_bool(de_qty_cmp(*a[0].u.q, *a[1].u.q) > 0);
    case IM_Q_LT: return cv_bool(de_qty_cmp(*a[0].u.q, *a[1].u.q) < 0);
    case IM_Q_CMP: return cv_int(de_qty_cmp(*a[0].u.q, *a[1].u.q));
    case IM_Q_FLOAT: return cv_double(de_qty_approx_double(*a[0].u.q));
    case IM_Q_INT: {
        int64_t v;
        if (de_qty_as_int64(*a[0].u.q, &v) != DE_OK)
            return cel_err(c, n, "cannot convert value to integer");
        return cv_int(v);
    }
    case IM_Q_IS_INT: return cv_bool(de_qty_is_integer(*a[0].u.q));
    case IM_Q_ADD:
    case IM_Q_SUB:
    case IM_Q_ADD_INT:
    case IM_Q_SUB_INT: {
        de_qty b = (impl == IM_Q_ADD || impl == IM_Q_SUB) ? *a[1].u.q
                                                          : de_qty_from_int(a[1].u.i, DE_QFMT_DECIMAL_EXP);
        de_qty r;
        de_rc rc = (impl == IM_Q_ADD || impl == IM_Q_ADD_INT) ? de_qty_add(*a[0].u.q, b, &r)
                                                              : de_qty_sub(*a[0].u.q, b, &r);
        if (rc != DE_OK)
            return cel_err(c, n, "quantity out of range");
        return qty(c, r);
    }
    case IM_SEMVER:
        return semver_of(c, n, a[0], na > 1 && a[1].u.b, false);
    case IM_IS_SEMVER:
        return semver_of(c, n, a[0], na > 1 && a[1].u.b, true);
    case IM_S_GT: return cv_bool(de_semver_cmp(a[0].u.sv, a[1].u.sv) > 0);
    case IM_S_LT: return cv_bool(de_semver_cmp(a[0].u.sv, a[1].u.sv) < 0);
    case IM_S_CMP: return cv_int(de_semver_cmp(a[0].u.sv, a[1].u.sv));
    case IM_S_MAJOR: return cv_int((int64_t)a[0].u.sv->major);
    case IM_S_MINOR: return cv_int((int64_t)a[0].u.sv->minor);
    case IM_S_PATCH: return cv_int((int64_t)a[0].u.sv->patch);
    case IM_INCLUDES: {
        cel_v t = a[0], err;
        if (t.t == CV_LIST) {
            for (uint32_t i = 0; i < t.n; i++) {
                if (i >= INCLUDES_MAX)
                    return cel_err(c, n, "'includes' function cannot be applied to lists longer than %d values",
                                   INCLUDES_MAX);
                if (cel_equal(c, n, t.u.items[i], a[1], &err) == 1)
                    return cv_bool(true);
            }
            return cv_bool(false);
        }
        return cv_bool(cel_equal(c, n, t, a[1], &err) == 1);
    }
    default:
        return cel_err(c, n, "internal error: unknown function");
    }
}
