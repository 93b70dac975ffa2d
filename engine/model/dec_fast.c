/*
 * dec_fast.c - the fast path for large JSON snapshots: a ResourceSlice
 * decoded straight from JSON text into dg_slice, without building a jansson
 * tree (jansson alone needs ~2 s for a 100,000-device List; this path does
 * the whole load in a fraction of that).
 *
 * It handles the common shape only - resource.k8s.io/v1 or v1beta2, metadata
 * name/generateName/uid/resourceVersion/generation/creationTimestamp/labels/
 * ownerReferences, spec driver/pool/nodeName/allNodes/devices/
 * sharedCounters, devices with attributes (scalars and lists), capacity
 * values, consumesCounters (without compatibilityGroups) and
 * allowMultipleAllocations; ASCII strings without escapes - and it only accepts what it has fully validated with the
 * same rules as dec_slice.c/dec_device.c.  Anything else (another field, a
 * list attribute, a request policy, a value that fails a check, a duplicate
 * key, a JSON number with a fraction...) returns "not handled" and the
 * caller decodes the item with jansson and the full decoder, which also
 * produces every error message.  So the fast path can only ever be faster,
 * never different; a spec decodes the corpus both ways and compares.
 *
 * While parsing it computes the same structural hash as graph_files.c's
 * json_hash, so duplicate detection sees no difference between the paths
 * (only dg_load_path asks for it: allocate compares content only when names
 * collide).  Names and values already checked and interned for the same
 * position of an earlier device are not checked again (dec_fast_memo).
 */
#include "dec_fast.h"
#include "../base/semver.h"

#include <stdlib.h>
#include <string.h>

dec_fast_memo *dec_fast_memo_new(void) { return de_xcalloc(1, sizeof(dec_fast_memo)); }

void dec_fast_memo_free(dec_fast_memo *m) { free(m); }

static bool driver_ok(const char *s, size_t n)
{
    char low[64];
    if (n == 0 || n > 63)
        return false;
    for (size_t i = 0; i < n; i++)
        low[i] = (char)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] + 32 : s[i]);
    return dg_is_dns_subdomain(low, n);
}

static bool qname_ok(const char *s, size_t n)
{
    const char *slash = memchr(s, '/', n);
    if (!slash)
        return n <= 32 && dg_is_c_ident(s, n);
    size_t dl = (size_t)(slash - s), il = n - dl - 1;
    if (memchr(slash + 1, '/', il))
        return false;
    return driver_ok(s, dl) && il <= 32 && dg_is_c_ident(slash + 1, il);
}

static bool pool_ok(const char *s, size_t n)
{
    if (n == 0 || n > 253)
        return false;
    size_t start = 0;
    for (size_t i = 0; i <= n; i++)
        if (i == n || s[i] == '/') {
            if (!dg_is_dns_subdomain(s + start, i - start))
                return false;
            start = i + 1;
        }
    return true;
}

/* ---- pieces -------------------------------------------------------------------------- */

static uint64_t kv_map(fx *f, dg_kv **out, uint32_t *n, bool labels)
{
    objit it;
    if (!obj_begin(f, &it))
        return 0;
    dg_kv tmp[40];
    const char *k;
    size_t kn;
    while (next_key(f, &it, &k, &kn)) {
        const char *s;
        size_t sn;
        if (!str(f, &s, &sn))
            return 0;
        if (!dg_is_label_name(k, kn) || (labels && !dg_is_label_value(s, sn)) || !labels)
            BAIL(f); /* annotations (size rules) and odd labels: full decoder */
        tmp[it.nkeys - 1] = (dg_kv){dec_intern(f->d, k, kn), dec_intern(f->d, s, sn)};
        member(&it, k, kn, hstr(f, s, sn));
    }
    if (f->bail)
        return 0;
    *n = (uint32_t)it.nkeys;
    if (it.nkeys && !(*out = keep(f, tmp, it.nkeys, sizeof *tmp)))
        BAIL(f);
    return obj_hash(&it);
}

static uint64_t owners(fx *f, dg_meta *m)
{
    arrit ai;
    if (!arr_begin(f, &ai))
        return 0;
    dg_ownerref tmp[8];
    uint32_t n = 0;
    while (arr_next(f, &ai)) {
        if (n == 8)
            BAIL(f);
        dg_ownerref *r = &tmp[n];
        memset(r, 0, sizeof *r);
        objit it;
        if (!obj_begin(f, &it))
            return 0;
        const char *k, *s;
        size_t kn, sn;
        uint64_t vh;
        while (next_key(f, &it, &k, &kn)) {
            if (KEY("apiVersion") || KEY("kind") || KEY("name") || KEY("uid")) {
                uint32_t *dst = KEY("apiVersion") ? &r->api_version : KEY("kind") ? &r->kind
                                : KEY("name") ? &r->name : &r->uid;
                if (!str_id(f, dst, &vh, &s, &sn))
                    return 0;
            } else if (KEY("controller") || KEY("blockOwnerDeletion")) {
                bool b;
                if (!boolean(f, &b, &vh))
                    return 0;
                if (KEY("controller"))
                    r->controller = b;
            } else {
                BAIL(f);
            }
            member(&it, k, kn, vh);
        }
        if (f->bail)
            return 0;
        elem(&ai, obj_hash(&it));
        n++;
    }
    if (f->bail)
        return 0;
    if (n && !(m->owners = keep(f, tmp, n, sizeof *tmp)))
        BAIL(f);
    m->nowners = n;
    return arr_hash(&ai);
}

uint64_t dec_fx_meta(fx *f, dg_meta *m)
{
    objit it;
    if (!obj_begin(f, &it))
        return 0;
    const char *k, *s;
    size_t kn, sn;
    uint64_t h;
    while (next_key(f, &it, &k, &kn)) {
        if (KEY("name")) {
            if (!str_id(f, &m->name, &h, &s, &sn) || !dg_is_dns_subdomain(s, sn))
                BAIL(f);
        } else if (KEY("uid")) {
            if (!str_id(f, &m->uid, &h, &s, &sn))
                return 0;
        } else if (KEY("resourceVersion")) {
            if (!str_id(f, &m->resource_version, &h, &s, &sn))
                return 0;
        } else if (KEY("generation")) {
            if (!integer(f, &m->generation, &h))
                return 0;
        } else if (KEY("creationTimestamp")) {
            if (!str(f, &s, &sn) || !dg_parse_time(s, sn, &m->creation))
                BAIL(f);
            h = hstr(f, s, sn);
        } else if (KEY("labels")) {
            h = kv_map(f, &m->labels, &m->nlabels, true);
        } else if (KEY("generateName")) {
            if (!str_id(f, &m->generate_name, &h, &s, &sn))
                return 0;
        } else if (KEY("ownerReferences")) {
            h = owners(f, m);
        } else {
            BAIL(f);
        }
        if (f->bail)
            return 0;
        member(&it, k, kn, h);
    }
    if (f->bail || !m->name)
        BAIL(f);
    return obj_hash(&it);
}

static uint64_t pool(fx *f, dg_slice *s)
{
    objit it;
    if (!obj_begin(f, &it))
        return 0;
    const char *k, *v;
    size_t kn, vn;
    uint64_t h;
    bool name = false, gen = false, cnt = false;
    while (next_key(f, &it, &k, &kn)) {
        if (KEY("name")) {
            if (!str_id(f, &s->pool, &h, &v, &vn) || !pool_ok(v, vn))
                BAIL(f);
            name = true;
        } else if (KEY("generation")) {
            if (!integer(f, &s->generation, &h) || s->generation < 0)
                BAIL(f);
            gen = true;
        } else if (KEY("resourceSliceCount")) {
            if (!integer(f, &s->slice_count, &h) || s->slice_count <= 0)
                BAIL(f);
            cnt = true;
        } else {
            BAIL(f);
        }
        member(&it, k, kn, h);
    }
    if (f->bail || !name || !cnt)
        BAIL(f);
    (void)gen;
    return obj_hash(&it);
}

/* A non-empty list attribute of at most 48 values (the per-device total is
 * checked by the caller). */
static uint64_t attr_list(fx *f, de_attrval *v, int kind)
{
    arrit ai;
    if (!arr_begin(f, &ai))
        return 0;
    int64_t ints[48];
    bool bools[48];
    uint32_t strs[48];
    uint32_t n = 0;
    while (arr_next(f, &ai)) {
        if (n == 48)
            BAIL(f);
        uint64_t eh;
        if (kind == DE_V_INTS) {
            if (!integer(f, &ints[n], &eh))
                return 0;
        } else if (kind == DE_V_BOOLS) {
            if (!boolean(f, &bools[n], &eh))
                return 0;
        } else {
            const char *s;
            size_t sn;
            if (!str(f, &s, &sn) || sn > 64)
                BAIL(f);
            if (kind == DE_V_VERSIONS && de_semver_parse(s, sn, &(de_semver){0}, NULL) != DE_OK)
                BAIL(f);
            strs[n] = dec_intern(f->d, s, sn);
            eh = hstr(f, s, sn);
        }
        elem(&ai, eh);
        n++;
    }
    if (f->bail || !n)
        BAIL(f); /* empty lists are invalid: the full decoder says so */
    v->kind = (uint8_t)kind;
    v->n = n;
    size_t eb = kind == DE_V_INTS ? sizeof(int64_t) : kind == DE_V_BOOLS ? sizeof(bool) : sizeof(uint32_t);
    void *arr = dec_alloc(f->d, eb * n);
    if (!arr)
        BAIL(f);
    memcpy(arr, kind == DE_V_INTS ? (void *)ints : kind == DE_V_BOOLS ? (void *)bools : (void *)strs, eb * n);
    v->u.ints = arr;
    return arr_hash(&ai);
}

/* A string or version value, remembered per position (c may be NULL). */
static bool attr_str(fx *f, de_attrval *v, keycache *c, const char **s, size_t *sn)
{
    if (!str(f, s, sn) || *sn > 64)
        BAIL(f);
    if (c && c->vkind == v->kind && c->vn == *sn && !memcmp(c->v, *s, *sn)) {
        v->u.s = c->vid; /* valid already */
        return true;
    }
    if (v->kind == DE_V_VERSION && de_semver_parse(*s, *sn, &(de_semver){0}, NULL) != DE_OK)
        BAIL(f);
    v->u.s = dec_intern(f->d, *s, *sn);
    if (c && *sn < MEMO_TEXT) {
        memcpy(c->v, *s, *sn);
        c->vn = (uint8_t)*sn;
        c->vkind = v->kind;
        c->vid = v->u.s;
    }
    return true;
}

/* {"int": 1} and friends: exactly one member.  The usual spelling (no
 * whitespace, a scalar) is matched as text first. */
static uint64_t attr_value(fx *f, de_attrval *v, keycache *c)
{
    static const struct {
        const char *text; /* `{"kind":` */
        uint8_t len, klen, kind;
    } forms[] = {
        {"{\"string\":", 10, 6, DE_V_STRING},
        {"{\"version\":", 11, 7, DE_V_VERSION},
        {"{\"int\":", 7, 3, DE_V_INT},
        {"{\"bool\":", 8, 4, DE_V_BOOL},
    };
    const char *k, *s;
    size_t kn, sn;
    uint64_t h = 0;
    objit it;
    if (f->end - f->p > 12 && f->p[0] == '{' && f->p[1] == '"') {
        for (size_t i = 0; i < DE_ARRAY_LEN(forms); i++) {
            if (memcmp(f->p, forms[i].text, forms[i].len))
                continue;
            it.h = 0x9e3779b97f4a7c15ULL; /* as obj_begin */
            it.hash = f->hash;
            k = f->p + 2;
            kn = forms[i].klen;
            f->p += forms[i].len;
            v->kind = forms[i].kind;
            v->n = 1;
            if (v->kind == DE_V_INT) {
                if (!integer(f, &v->u.i, &h))
                    return 0;
            } else if (v->kind == DE_V_BOOL) {
                if (!boolean(f, &v->u.b, &h))
                    return 0;
            } else {
                if (!attr_str(f, v, c, &s, &sn))
                    return 0;
                h = hstr(f, s, sn);
            }
            if (!eat(f, '}'))
                BAIL(f); /* another member: the full decoder's error */
            member(&it, k, kn, h);
            return obj_hash(&it);
        }
    }
    if (!obj_begin(f, &it))
        return 0;
    while (next_key(f, &it, &k, &kn)) {
        if (it.nkeys > 1)
            BAIL(f);
        if (KEY("int")) {
            v->kind = DE_V_INT;
            if (!integer(f, &v->u.i, &h))
                return 0;
        } else if (KEY("bool")) {
            v->kind = DE_V_BOOL;
            if (!boolean(f, &v->u.b, &h))
                return 0;
        } else if (KEY("string") || KEY("version")) {
            v->kind = KEY("version") ? DE_V_VERSION : DE_V_STRING;
            if (!attr_str(f, v, c, &s, &sn))
                return 0;
            h = hstr(f, s, sn);
        } else if (KEY("ints") || KEY("bools") || KEY("strings") || KEY("versions")) {
            h = attr_list(f, v, KEY("ints") ? DE_V_INTS : KEY("bools") ? DE_V_BOOLS
                                : KEY("strings") ? DE_V_STRINGS : DE_V_VERSIONS);
            if (f->bail)
                return 0;
            it.nkeys = 1;
            member(&it, k, kn, h);
            continue;
        } else {
            BAIL(f);
        }
        v->n = 1;
        member(&it, k, kn, h);
    }
    if (f->bail || it.nkeys != 1)
        BAIL(f);
    return obj_hash(&it);
}

/* An attribute or capacity name: checked and split into (domain, ID), or
 * taken from the cache of its position; false (bail) when it is invalid. */
static bool split_key(fx *f, keycache *c, const char *k, size_t kn, uint32_t driver, uint32_t *domain,
                      uint32_t *name, uint8_t *bare)
{
    if (c->kn && c->kn == kn && !memcmp(c->k, k, kn)) {
        *domain = c->domain;
        *name = c->name;
        *bare = c->bare;
        return true;
    }
    if (!qname_ok(k, kn))
        BAIL(f);
    const char *slash = memchr(k, '/', kn);
    if (slash) {
        *domain = dec_intern(f->d, k, (size_t)(slash - k));
        *name = dec_intern(f->d, slash + 1, kn - (size_t)(slash - k) - 1);
        *bare = 0;
    } else {
        *domain = driver; /* bare names: the driver's, set in spec() */
        *name = dec_intern(f->d, k, kn);
        *bare = 1;
    }
    if (kn < MEMO_TEXT) {
        memcpy(c->k, k, kn);
        c->kn = (uint8_t)kn;
        c->domain = *domain;
        c->name = *name;
        c->bare = *bare;
        c->vkind = 0;
        c->q.qn = 0;
    } else {
        c->kn = 0;
    }
    return true;
}

static bool qty_hit(const qtycache *c, const char *s, size_t n) { return c->qn && c->qn == n && !memcmp(c->q, s, n); }

static void qty_keep(qtycache *c, const char *s, size_t n, de_qty v)
{
    if (n && n < sizeof c->q) {
        memcpy(c->q, s, n);
        c->qn = (uint8_t)n;
        c->qv = v;
    }
}

bool dec_fx_qty(fx *f, qtycache *c, const char *s, size_t n, de_qty *out)
{
    if (c && qty_hit(c, s, n)) {
        *out = c->qv;
        return true;
    }
    /* the slot: length and the first and last two bytes */
    uint32_t h = (uint32_t)n;
    if (n)
        h = h * 31u + ((uint32_t)(unsigned char)s[0] << 8 | (unsigned char)s[n - 1]) * 0x9e3779b1u +
            (n > 1 ? (uint32_t)(unsigned char)s[1] * 131u + (unsigned char)s[n - 2] : 0u);
    qtycache *g = &f->m->qty[(h ^ (h >> 15)) % MEMO_QTYS];
    if (qty_hit(g, s, n)) {
        *out = g->qv;
    } else {
        if (de_qty_parse(s, n, out, NULL) != DE_OK)
            BAIL(f);
        qty_keep(g, s, n, *out);
    }
    if (c)
        qty_keep(c, s, n, *out);
    return true;
}

static uint64_t attributes(fx *f, dg_device *dev, uint32_t driver)
{
    objit it;
    if (!obj_begin(f, &it))
        return 0;
    de_attr tmp[40];
    const char *k;
    size_t kn;
    bool hit;
    while (next_key_at(f, &it, f->ks->ak[it.nkeys % 40].k, it.nkeys < 40 ? f->ks->ak[it.nkeys].kn : 0, &k, &kn,
                       &hit)) {
        de_attr *a = &tmp[it.nkeys - 1];
        memset(a, 0, sizeof *a);
        keycache *c = &f->ks->ak[it.nkeys - 1];
        if (hit) {
            a->domain = c->domain;
            a->name = c->name;
            a->bare = c->bare;
        } else if (!split_key(f, c, k, kn, driver, &a->domain, &a->name, &a->bare)) {
            return 0;
        }
        uint64_t h = attr_value(f, &a->v, c->kn ? c : NULL);
        if (f->bail)
            return 0;
        member(&it, k, kn, h);
    }
    if (f->bail)
        return 0;
    if (it.nkeys && !(dev->attrs = keep(f, tmp, it.nkeys, sizeof *tmp)))
        BAIL(f);
    dev->nattrs = (uint32_t)it.nkeys;
    return obj_hash(&it);
}

static uint64_t capacity(fx *f, dg_device *dev, uint32_t driver)
{
    objit it;
    if (!obj_begin(f, &it))
        return 0;
    de_cap tmp[40];
    const char *k;
    size_t kn;
    bool hit;
    while (next_key_at(f, &it, f->ks->ck[it.nkeys % 40].k, it.nkeys < 40 ? f->ks->ck[it.nkeys].kn : 0, &k, &kn,
                       &hit)) {
        de_cap *c = &tmp[it.nkeys - 1];
        memset(c, 0, sizeof *c);
        keycache *kc = &f->ks->ck[it.nkeys - 1];
        if (hit) {
            c->domain = kc->domain;
            c->name = kc->name;
            c->bare = kc->bare;
        } else if (!split_key(f, kc, k, kn, driver, &c->domain, &c->name, &c->bare)) {
            return 0;
        }
        uint64_t vh;
        if (!qty_value(f, kc->kn ? &kc->q : NULL, &c->value, &vh))
            return 0;
        member(&it, k, kn, vh);
    }
    if (f->bail)
        return 0;
    if (it.nkeys) {
        dev->caps = DEC_NEW(f->d, de_cap, it.nkeys);
        dev->policies = DEC_NEW(f->d, dg_reqpolicy *, it.nkeys);
        if (!dev->caps || !dev->policies)
            BAIL(f);
        memcpy(dev->caps, tmp, it.nkeys * sizeof *tmp);
    }
    dev->ncaps = (uint32_t)it.nkeys;
    return obj_hash(&it);
}

/* "counters": {"<dns label>": {"value": "<quantity>"}, ...}, 1 to 32 of
 * them (dec_counters); `cc` remembers each position's name and value (NULL:
 * nothing remembered). */
static uint64_t counters(fx *f, dg_counter **out, uint32_t *n, ctrcache *cc)
{
    objit it;
    if (!obj_begin(f, &it))
        return 0;
    dg_counter tmp[32];
    const char *k;
    size_t kn;
    bool hit;
    while (next_key_at(f, &it, cc ? cc[it.nkeys % 32].k : NULL, cc && it.nkeys < 32 ? cc[it.nkeys].kn : 0, &k, &kn,
                       &hit)) {
        if (it.nkeys > 32)
            BAIL(f);
        dg_counter *c = &tmp[it.nkeys - 1];
        ctrcache *m = cc ? &cc[it.nkeys - 1] : NULL;
        if (hit || (m && m->kn && m->kn == kn && !memcmp(m->k, k, kn))) {
            c->name = m->name;
        } else {
            if (!dg_is_dns_label(k, kn))
                BAIL(f);
            c->name = dec_intern(f->d, k, kn);
            if (m && kn < MEMO_TEXT) {
                memcpy(m->k, k, kn);
                m->kn = (uint8_t)kn;
                m->name = c->name;
                m->q.qn = 0;
            } else if (m) {
                m->kn = 0;
            }
        }
        uint64_t vh;
        if (!qty_value(f, m && m->kn ? &m->q : NULL, &c->value, &vh))
            return 0;
        member(&it, k, kn, vh);
    }
    if (f->bail || !it.nkeys || !(*out = keep(f, tmp, (size_t)it.nkeys, sizeof *tmp)))
        BAIL(f);
    *n = (uint32_t)it.nkeys;
    return obj_hash(&it);
}

/* One {"<namekey>": "<dns label>", "counters": {...}} entry of
 * consumesCounters (namekey "counterSet") or sharedCounters ("name"); any
 * other member goes the full decoder's way.  Returns the entry's hash. */
static uint64_t counter_entry(fx *f, const char *namekey, uint32_t *name, dg_counter **ctrs, uint32_t *nctrs,
                              ctrcache *cc)
{
    objit it;
    if (!obj_begin(f, &it))
        return 0;
    const char *k, *v;
    size_t kn, vn, nk = strlen(namekey);
    uint64_t h;
    bool named = false, counted = false;
    while (next_key(f, &it, &k, &kn)) {
        if (kn == nk && !memcmp(k, namekey, nk)) {
            if (!str_id(f, name, &h, &v, &vn) || !dg_is_dns_label(v, vn))
                BAIL(f);
            named = true;
        } else if (KEY("counters")) {
            h = counters(f, ctrs, nctrs, cc);
            counted = true;
        } else {
            BAIL(f);
        }
        if (f->bail)
            return 0;
        member(&it, k, kn, h);
    }
    if (f->bail || !named || !counted)
        BAIL(f);
    return obj_hash(&it);
}

/* "consumesCounters": 1 or 2 of {"counterSet": "<dns label>", "counters":
 * {...}}, distinct sets; compatibilityGroups and anything else go the
 * full decoder's way. */
static uint64_t consumes(fx *f, dg_device *dev)
{
    arrit ai;
    if (!arr_begin(f, &ai))
        return 0;
    dg_consumption tmp[2];
    uint32_t n = 0;
    while (arr_next(f, &ai)) {
        if (n == 2)
            BAIL(f);
        dg_consumption *c = &tmp[n];
        memset(c, 0, sizeof *c);
        uint64_t h = counter_entry(f, "counterSet", &c->counterset, &c->counters, &c->ncounters, f->ks->cc[n]);
        if (f->bail)
            return 0;
        for (uint32_t j = 0; j < n; j++)
            if (tmp[j].counterset == c->counterset)
                BAIL(f);
        elem(&ai, h);
        n++;
    }
    if (f->bail || !n || !(dev->consumes = keep(f, tmp, n, sizeof *tmp)))
        BAIL(f);
    dev->nconsumes = n;
    return arr_hash(&ai);
}

static uint64_t device(fx *f, dg_device *dev, uint32_t driver, bool *lists)
{
    memset(dev, 0, sizeof *dev);
    dev->binds_to_node = -1;
    dev->allow_multi = -1;
    objit it;
    if (!obj_begin(f, &it))
        return 0;
    const char *k, *s;
    size_t kn, sn;
    uint64_t h;
    bool named = false;
    while (next_key(f, &it, &k, &kn)) {
        if (KEY("name")) {
            if (!str_id(f, &dev->name, &h, &s, &sn) || !dg_is_dns_label(s, sn))
                BAIL(f);
            named = true;
        } else if (KEY("attributes")) {
            h = attributes(f, dev, driver);
        } else if (KEY("capacity")) {
            h = capacity(f, dev, driver);
        } else if (KEY("allowMultipleAllocations")) {
            bool b;
            if (!boolean(f, &b, &h))
                return 0;
            dev->allow_multi = b;
        } else if (KEY("consumesCounters")) {
            h = consumes(f, dev);
            *lists = true; /* consuming devices lower the cap to 64 too */
        } else {
            BAIL(f);
        }
        if (f->bail)
            return 0;
        member(&it, k, kn, h);
    }
    uint32_t values = 0;
    for (uint32_t i = 0; i < dev->nattrs; i++) {
        values += dev->attrs[i].v.n;
        if (de_vkind_is_list(dev->attrs[i].v.kind))
            *lists = true;
    }
    if (f->bail || !named || dev->nattrs + dev->ncaps > 32 || values > 48)
        BAIL(f);
    return obj_hash(&it);
}

/* "sharedCounters": 1 to 8 counter sets, {"name": "<dns label>",
 * "counters": {...}}, distinct names (dec_slice). */
static uint64_t shared(fx *f, dg_slice *s)
{
    arrit ai;
    if (!arr_begin(f, &ai))
        return 0;
    dg_counterset tmp[8];
    uint32_t n = 0;
    while (arr_next(f, &ai)) {
        if (n == 8)
            BAIL(f);
        dg_counterset *cs = &tmp[n];
        memset(cs, 0, sizeof *cs);
        uint64_t h = counter_entry(f, "name", &cs->name, &cs->counters, &cs->ncounters, NULL);
        if (f->bail)
            return 0;
        for (uint32_t j = 0; j < n; j++)
            if (tmp[j].name == cs->name)
                BAIL(f);
        elem(&ai, h);
        n++;
    }
    if (f->bail || !n || !(s->countersets = keep(f, tmp, n, sizeof *tmp)))
        BAIL(f);
    s->ncountersets = n;
    return arr_hash(&ai);
}

/* "devices" and "driver" may come in any order (kubectl -o json sorts keys
 * in YAML but not in JSON): bare names get their domain in spec(). */
/* The memo's positions for this driver's devices. */
static keyset *keyset_for(dec_fast_memo *m, uint32_t driver)
{
    keyset *old = &m->set[0];
    m->clock++;
    for (int i = 0; i < MEMO_SETS; i++) {
        keyset *k = &m->set[i];
        if (k->used && k->driver == driver) {
            k->used = m->clock;
            return k;
        }
        if (k->used < old->used)
            old = k;
    }
    memset(old, 0, sizeof *old);
    old->driver = driver;
    old->used = m->clock;
    return old;
}

static uint64_t devices(fx *f, dg_slice *s, uint32_t driver)
{
    arrit ai;
    if (!arr_begin(f, &ai))
        return 0;
    f->ks = keyset_for(f->m, driver);
    dg_device tmp[128];
    uint32_t n = 0;
    bool lists = false;
    while (arr_next(f, &ai)) {
        if (n == 128)
            BAIL(f);
        uint64_t dh = device(f, &tmp[n], driver, &lists);
        if (f->bail)
            return 0;
        for (uint32_t j = 0; j < n; j++)
            if (tmp[j].name == tmp[n].name)
                BAIL(f);
        elem(&ai, dh);
        n++;
    }
    if (f->bail)
        return 0;
    if (lists && n > 64)
        BAIL(f); /* list attributes lower the cap to 64 devices */
    if (n && !(s->devices = keep(f, tmp, n, sizeof *tmp)))
        BAIL(f);
    s->ndevices = n;
    return arr_hash(&ai);
}

static uint64_t spec(fx *f, dg_slice *s)
{
    objit it;
    if (!obj_begin(f, &it))
        return 0;
    const char *k, *v;
    size_t kn, vn;
    uint64_t h;
    int nsel = 0;
    bool have_driver = false, have_devices = false, have_shared = false;
    while (next_key(f, &it, &k, &kn)) {
        if (KEY("driver")) {
            if (!str_id(f, &s->driver, &h, &v, &vn) || !driver_ok(v, vn))
                BAIL(f);
            have_driver = true;
        } else if (KEY("pool")) {
            h = pool(f, s);
        } else if (KEY("nodeName")) {
            if (!str_id(f, &s->node_name, &h, &v, &vn) || !dg_is_dns_subdomain(v, vn))
                BAIL(f);
            s->ns_mode = DG_NS_NODE_NAME;
            nsel++;
        } else if (KEY("allNodes")) {
            bool b;
            if (!boolean(f, &b, &h) || !b)
                BAIL(f);
            s->ns_mode = DG_NS_ALL_NODES;
            nsel++;
        } else if (KEY("devices")) {
            h = devices(f, s, s->driver); /* bare names fixed up below if driver comes later */
            have_devices = true;
        } else if (KEY("sharedCounters")) {
            h = shared(f, s);
            have_shared = true;
        } else {
            BAIL(f);
        }
        if (f->bail)
            return 0;
        member(&it, k, kn, h);
    }
    if (f->bail || nsel != 1 || !have_driver || !s->pool || (have_devices && have_shared))
        BAIL(f);
    /* attribute and capacity names without a domain belong to the driver */
    for (uint32_t i = 0; i < s->ndevices; i++) {
        for (uint32_t j = 0; j < s->devices[i].nattrs; j++)
            if (s->devices[i].attrs[j].bare)
                s->devices[i].attrs[j].domain = s->driver;
        for (uint32_t j = 0; j < s->devices[i].ncaps; j++)
            if (s->devices[i].caps[j].bare)
                s->devices[i].caps[j].domain = s->driver;
    }
    return obj_hash(&it);
}

int dec_fast_slice(dec *d, dec_fast_memo *m, const char *text, size_t len, dg_slice **out, size_t *used,
                   uint64_t *hash)
{
    fx f;
    fx_init(&f, text, len, d, m, hash != NULL);
    dg_slice *s = DEC_NEW(d, dg_slice, 1);
    if (!s)
        return 0;
    objit it;
    if (!obj_begin(&f, &it))
        return 0;
    const char *k, *v;
    size_t kn, vn;
    uint64_t h;
    bool api = false, kind = false, sp = false, md = false;
    while (next_key(&f, &it, &k, &kn)) {
        if (KEY("apiVersion")) {
            if (!str(&f, &v, &vn))
                return 0;
            if (vn == 18 && !memcmp(v, "resource.k8s.io/v1", 18))
                s->input_version = DG_INPUT_V1;
            else if (vn == 23 && !memcmp(v, "resource.k8s.io/v1beta2", 23))
                s->input_version = DG_INPUT_V1BETA2;
            else
                return 0;
            api = true;
            h = hstr(&f, v, vn);
        } else if (KEY("kind")) {
            if (!str(&f, &v, &vn) || vn != 13 || memcmp(v, "ResourceSlice", 13))
                return 0;
            kind = true;
            h = hstr(&f, v, vn);
        } else if (KEY("metadata")) {
            h = dec_fx_meta(&f, &s->meta);
            md = true;
        } else if (KEY("spec")) {
            h = spec(&f, s);
            sp = true;
        } else {
            return 0;
        }
        if (f.bail)
            return 0;
        member(&it, k, kn, h);
    }
    if (f.bail || !api || !kind || !sp || !md)
        return 0;
    *out = s;
    *used = (size_t)(f.p - text);
    if (hash)
        *hash = obj_hash(&it);
    return 1;
}
