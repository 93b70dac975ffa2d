/*
 * kc_watch.c - list+watch reflectors for every resource draengine reads,
 * all driven by one curl multi handle on the caller's thread.
 *
 * Per resource: list (paged with limit/continue) -> remember the list's
 * resourceVersion -> watch from it with bookmarks -> on a clean end rewatch
 * from the last version seen; on a dropped connection or a server error
 * back off (exponential, jittered from a seeded generator) and rewatch; on
 * 410 Gone (HTTP status or an ERROR event) relist, and deliver DELETED for
 * every object the new list no longer has.
 *
 * Delivery is decoupled from transfer: curl callbacks only cut the stream
 * into events and queue them; events reach the caller from
 * kc_informer_poll() alone.  So a write that waits (and pumps the watches
 * meanwhile) never sees the graph change under its feet, and callbacks may
 * themselves make requests.
 *
 * The store is a map "namespace/name" -> resourceVersion: just enough to
 * compute deletions after a relist; the objects themselves live in the
 * caller's graph.
 */
#define _POSIX_C_SOURCE 200809L
#include "kc_int.h"

#include "../../engine/base/map.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct resinfo {
    const char *name, *kind, *api_version, *path;
    bool namespaced;
} resinfo;

static const resinfo RES[KC_RES_COUNT] = {
    {"resourceslices", "ResourceSlice", "resource.k8s.io/v1", "/apis/resource.k8s.io/v1/resourceslices", false},
    {"deviceclasses", "DeviceClass", "resource.k8s.io/v1", "/apis/resource.k8s.io/v1/deviceclasses", false},
    {"resourceclaims", "ResourceClaim", "resource.k8s.io/v1", "/apis/resource.k8s.io/v1/resourceclaims", true},
    {"resourceclaimtemplates", "ResourceClaimTemplate", "resource.k8s.io/v1", "/apis/resource.k8s.io/v1/resourceclaimtemplates", true},
    {"devicetaintrules", "DeviceTaintRule", "resource.k8s.io/v1", "/apis/resource.k8s.io/v1/devicetaintrules", false},
    {"nodes", "Node", "v1", "/api/v1/nodes", false},
    {"pods", "Pod", "v1", "/api/v1/pods", true},
    {"namespaces", "Namespace", "v1", "/api/v1/namespaces", false},
    {"podgroups", "PodGroup", "scheduling.k8s.io/v1beta1", "/apis/scheduling.k8s.io/v1beta1/podgroups", true},
    {"resourcepoolstatusrequests", "ResourcePoolStatusRequest", "resource.k8s.io/v1alpha3",
     "/apis/resource.k8s.io/v1alpha3/resourcepoolstatusrequests", false},
};

const char *kc_res_name(kc_res r) { return r < KC_RES_COUNT ? RES[r].name : "?"; }
const char *kc_res_kind(kc_res r) { return r < KC_RES_COUNT ? RES[r].kind : "?"; }
const char *kc_res_path(kc_res r) { return r < KC_RES_COUNT ? RES[r].path : "/"; }

void kc_object_path(kc_res r, const char *ns, const char *name, const char *sub, char *buf,
                    size_t cap)
{
    const resinfo *ri = &RES[r];
    const char *base = ri->path;
    if (ri->namespaced) {
        /* /apis/g/v/plural -> /apis/g/v/namespaces/<ns>/plural */
        const char *pl = strrchr(base, '/');
        snprintf(buf, cap, "%.*s/namespaces/%s%s/%s%s%s", (int)(pl - base), base, ns ? ns : "",
                 pl, name, sub ? "/" : "", sub ? sub : "");
    } else {
        snprintf(buf, cap, "%s/%s%s%s", base, name, sub ? "/" : "", sub ? sub : "");
    }
}

typedef enum rstate { RS_IDLE = 0, RS_LIST, RS_WATCH, RS_WAIT } rstate;

typedef struct refl {
    kc_informer *inf;
    kc_res res;
    rstate state;
    CURL *h;
    struct curl_slist *hl;
    de_buf body; /* a list's or watch's error answer (its first 4 KiB) */
    de_buf line; /* partial watch line */
    kc_listsplit *ls; /* the list page being streamed (kc_stream.c) */
    size_t page_bytes; /* bytes of that page so far */
    size_t page_fresh; /* objects it brought new to this list */
    bool page_bad;     /* the page did not parse as a list */
    char rv[256];
    char *cont;
    json_t *store;  /* "ns/name" -> rv */
    json_t *listed; /* keys the current list brought (its progress; a relist's survivors) */
    de_map tokens;  /* hashes of the continue tokens of the current list */
    int pages, empty_pages;
    bool relisting, synced, overflow, auth_failed;
    /* why a watch stream was cut short in-band (410, ERROR, undecodable): a
     * failure that relists; reported when the transfer ends */
    bool gone;
    long gone_code;
    char gone_reason[64];
    bool list_next; /* after the wait: list (true) or resume the watch */
    uint64_t wait_until;
    unsigned watch_events;
    kc_backoff bo;
    unsigned failures;
    char err[600];
    char errbuf[CURL_ERROR_SIZE];
} refl;

typedef struct qev {
    kc_res res;
    kc_evtype type;
    json_t *obj;
} qev;

struct kc_informer {
    kc_client *cl;
    kc_informer_opts o;
    kc_event_fn fn;
    void *ctx;
    CURLM *m;
    refl r[KC_RES_COUNT];
    qev *q;
    size_t qhead, qlen, qcap;
    bool delivering;
    char last_err[700];
    size_t list_peak; /* most bytes list parsing held at once, all resources */
    kc_skip_fn skip[KC_RES_COUNT];
    void *skip_ctx[KC_RES_COUNT];
};

/* ---- queue ----------------------------------------------------------------- */

static void enqueue(kc_informer *inf, kc_res res, kc_evtype t, json_t *obj)
{
    if (inf->qlen == inf->qcap) {
        if (inf->qhead > 0 && !inf->delivering) {
            memmove(inf->q, inf->q + inf->qhead, (inf->qlen - inf->qhead) * sizeof *inf->q);
            inf->qlen -= inf->qhead;
            inf->qhead = 0;
        }
        if (inf->qlen == inf->qcap) {
            inf->qcap = inf->qcap ? inf->qcap * 2 : 256;
            inf->q = de_xrealloc(inf->q, inf->qcap * sizeof *inf->q);
        }
    }
    json_incref(obj);
    inf->q[inf->qlen++] = (qev){res, t, obj};
}

/* ---- object helpers ---------------------------------------------------------- */

static void obj_key(json_t *obj, char *buf, size_t cap)
{
    json_t *md = json_object_get(obj, "metadata");
    const char *ns = json_string_value(json_object_get(md, "namespace"));
    const char *name = json_string_value(json_object_get(md, "name"));
    snprintf(buf, cap, "%s/%s", ns ? ns : "", name ? name : "");
}

static const char *obj_rv(json_t *obj)
{
    const char *v =
        json_string_value(json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));
    return v ? v : "";
}

/* List items carry no kind/apiVersion; the graph's decoder needs them. */
static void set_kind(kc_res res, json_t *obj)
{
    if (!json_object_get(obj, "kind"))
        json_object_set_new(obj, "kind", json_string(RES[res].kind));
    if (!json_object_get(obj, "apiVersion"))
        json_object_set_new(obj, "apiVersion", json_string(RES[res].api_version));
}

static void set_err(refl *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_err(refl *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char m[512];
    vsnprintf(m, sizeof m, fmt, ap);
    va_end(ap);
    kc_client_redact(r->inf->cl, m);
    snprintf(r->err, sizeof r->err, "%s: %s", RES[r->res].name, m);
    snprintf(r->inf->last_err, sizeof r->inf->last_err, "%s", r->err);
}

/* ---- transfers ----------------------------------------------------------------- */

static void stop_transfer(refl *r)
{
    if (r->h) {
        curl_multi_remove_handle(r->inf->m, r->h);
        curl_easy_cleanup(r->h);
        r->h = NULL;
    }
    if (r->hl) {
        for (struct curl_slist *s = r->hl; s; s = s->next)
            if (!strncmp(s->data, "Authorization:", 14))
                memset(s->data, 0, strlen(s->data));
        curl_slist_free_all(r->hl);
        r->hl = NULL;
    }
    de_buf_reset(&r->body);
    kc_buf_trim(&r->line);
}

/* A failure: counted and reported (kc_fail.c), remembered for describe(),
 * then a backoff wait before the next list (relist) or watch. */
static void fail(refl *r, const char *verb, long code, const char *reason, bool relist,
                 const char *fmt, ...) __attribute__((format(printf, 6, 7)));

static void begin_list(refl *r, bool relist);

static void fail(refl *r, const char *verb, long code, const char *reason, bool relist,
                 const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char m[512];
    vsnprintf(m, sizeof m, fmt, ap);
    va_end(ap);
    kc_client_fail(r->inf->cl, RES[r->res].name, verb, code, reason, m);
    set_err(r, "%s: %s", verb, m);
    stop_transfer(r);
    bool list = relist || r->state == RS_LIST; /* a failed page restarts its list */
    if (list)
        begin_list(r, relist);
    r->list_next = list;
    r->auth_failed = code == 401;
    r->failures++;
    r->state = RS_WAIT;
    r->wait_until = de_now_ns() + kc_backoff_next(&r->bo);
}

/* Keep the first 4 KiB of an error answer for its message. */
static void keep_error_body(refl *r, const char *p, size_t len)
{
    de_buf_add(&r->body, p, DE_MIN(len, 4096 - DE_MIN(r->body.len, 4096)));
}

static size_t on_list_body(char *p, size_t sz, size_t n, void *ud)
{
    refl *r = ud;
    size_t len = sz * n;
    long status = 0;
    curl_easy_getinfo(r->h, CURLINFO_RESPONSE_CODE, &status);
    if (status != 200) {
        keep_error_body(r, p, len);
        return len;
    }
    r->page_bytes += len;
    if (r->page_bytes > r->inf->o.max_body) {
        r->overflow = true;
        return 0;
    }
    if (!kc_listsplit_feed(r->ls, p, len)) {
        r->page_bad = true;
        return 0;
    }
    kc_informer *inf = r->inf;
    size_t held = 0;
    for (int i = 0; i < KC_RES_COUNT; i++)
        if (inf->r[i].ls)
            held += kc_listsplit_held(inf->r[i].ls);
    inf->list_peak = DE_MAX(inf->list_peak, held);
    return len;
}

static void handle_line(refl *r, const char *s, size_t len);
static size_t watch_bytes(refl *r, const char *p, size_t len);

static size_t on_watch_body(char *p, size_t sz, size_t n, void *ud)
{
    refl *r = ud;
    size_t len = sz * n;
    long status = 0;
    curl_easy_getinfo(r->h, CURLINFO_RESPONSE_CODE, &status);
    if (status != 200) { /* keep the error answer for the message */
        keep_error_body(r, p, len);
        return len;
    }
    return watch_bytes(r, p, len);
}

/* The bytes of a 200 watch answer: cut into lines, each decoded. */
static size_t watch_bytes(refl *r, const char *p, size_t len)
{
    size_t start = 0;
    for (size_t i = 0; i < len; i++) {
        const char *nl = memchr(p + i, '\n', len - i);
        if (!nl)
            break;
        i = (size_t)(nl - p);
        if (r->line.len + (i - start) > r->inf->o.max_line) {
            r->overflow = true;
            return 0;
        }
        if (r->line.len) {
            if (de_buf_add(&r->line, p + start, i - start) != DE_OK) {
                r->overflow = true;
                return 0;
            }
            handle_line(r, r->line.p, r->line.len);
            de_buf_reset(&r->line);
        } else if (i > start) {
            handle_line(r, p + start, i - start);
        }
        start = i + 1;
        if (r->gone)
            return 0; /* stop reading: a relist follows */
    }
    if (start < len && de_buf_add(&r->line, p + start, len - start) != DE_OK) {
        r->overflow = true;
        return 0;
    }
    return len;
}

static void start(refl *r)
{
    kc_informer *inf = r->inf;
    kc_config *cfg = kc_client_config(inf->cl);
    char url[8192];
    r->h = curl_easy_init();
    kc_client_setup_easy(inf->cl, r->h);
    r->hl = kc_client_headers(inf->cl, r->auth_failed, NULL);
    r->auth_failed = false;
    r->overflow = r->gone = false;
    r->gone_code = 0;
    r->gone_reason[0] = 0;
    r->errbuf[0] = 0;
    if (r->state == RS_LIST) {
        int n = snprintf(url, sizeof url, "%s%s?limit=%d", kc_config_url(cfg), RES[r->res].path,
                         inf->o.page_limit);
        if (r->cont && n > 0 && (size_t)n < sizeof url) {
            char *esc = curl_easy_escape(r->h, r->cont, 0);
            snprintf(url + n, sizeof url - (size_t)n, "&continue=%s", esc);
            curl_free(esc);
        }
        curl_easy_setopt(r->h, CURLOPT_WRITEFUNCTION, on_list_body);
        kc_listsplit_reset(r->ls);
        r->page_bytes = r->page_fresh = 0;
        r->page_bad = false;
        curl_easy_setopt(r->h, CURLOPT_TIMEOUT_MS, 120000L);
    } else {
        uint64_t rnd = kc_rand_next(&r->bo.rng);
        int to = inf->o.watch_timeout_s + (int)(rnd % (uint64_t)(inf->o.watch_timeout_s + 1));
        char *esc = curl_easy_escape(r->h, r->rv, 0);
        snprintf(url, sizeof url,
                 "%s%s?watch=1&resourceVersion=%s&allowWatchBookmarks=true&timeoutSeconds=%d",
                 kc_config_url(cfg), RES[r->res].path, esc, to);
        curl_free(esc);
        curl_easy_setopt(r->h, CURLOPT_WRITEFUNCTION, on_watch_body);
        /* A silent server past timeoutSeconds + slack means a dead stream. */
        curl_easy_setopt(r->h, CURLOPT_TIMEOUT_MS, (long)(to + 30) * 1000L);
        r->watch_events = 0;
    }
    curl_easy_setopt(r->h, CURLOPT_URL, url);
    curl_easy_setopt(r->h, CURLOPT_HTTPHEADER, r->hl);
    curl_easy_setopt(r->h, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(r->h, CURLOPT_PRIVATE, r);
    curl_easy_setopt(r->h, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(r->h, CURLOPT_ERRORBUFFER, r->errbuf);
    curl_multi_add_handle(inf->m, r->h);
}

static void begin_list(refl *r, bool relist)
{
    free(r->cont);
    r->cont = NULL;
    r->state = RS_LIST;
    r->pages = r->empty_pages = 0;
    de_map_clear(&r->tokens);
    json_decref(r->listed);
    r->listed = json_object();
    /* Anything already delivered (a synced store, or pages of a list that
     * failed half-way) must be checked against the new list for deletions. */
    r->relisting = relist || r->synced || json_object_size(r->store) > 0;
}

/* Stop the watch stream: it said something that calls for a relist. */
static void cut(refl *r, long code, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void cut(refl *r, long code, const char *reason, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->err, sizeof r->err, fmt, ap);
    va_end(ap);
    r->gone = true;
    r->gone_code = code;
    snprintf(r->gone_reason, sizeof r->gone_reason, "%s", reason);
}

/* A MODIFIED event the skip filter drops: only its bookkeeping is kept. */
static bool skipped(refl *r, const char *s, size_t len)
{
    kc_informer *inf = r->inf;
    kc_peek pk;
    kc_skip_fn fn = inf->skip[r->res];
    if (!fn || !kc_watch_peek(s, len, &pk) || pk.type != KC_W_MODIFIED || !pk.rv[0] ||
        !fn(inf->skip_ctx[r->res], r->res, &pk, s, len))
        return false;
    r->watch_events++;
    char key[600];
    snprintf(key, sizeof key, "%s/%s", pk.ns, pk.name);
    json_object_set_new(r->store, key, json_string(pk.rv));
    snprintf(r->rv, sizeof r->rv, "%s", pk.rv);
    return true;
}

static void handle_line(refl *r, const char *s, size_t len)
{
    if (skipped(r, s, len))
        return;
    kc_wevent ev;
    if (!kc_watch_decode(s, len, &ev)) {
        cut(r, 200, ev.reason, "%s", ev.msg); /* we may have lost an event: relist */
        return;
    }
    if (ev.type == KC_W_ERROR) {
        /* 410 Expired/Gone, or anything else: the stream's state is unknown,
         * relisting is the safe choice. */
        cut(r, ev.code, ev.reason, "%s", ev.msg);
        json_decref(ev.obj);
        return;
    }
    r->watch_events++;
    json_t *obj = ev.obj;
    const char *rv = obj_rv(obj);
    if (ev.type == KC_W_BOOKMARK && *rv)
        snprintf(r->rv, sizeof r->rv, "%s", rv);
    if (ev.type != KC_W_ADDED && ev.type != KC_W_MODIFIED && ev.type != KC_W_DELETED) {
        json_decref(obj); /* bookmarks; unknown types are ignored, as client-go does */
        return;
    }
    kc_evtype t = ev.type == KC_W_ADDED      ? KC_EV_ADDED
                  : ev.type == KC_W_MODIFIED ? KC_EV_MODIFIED
                                             : KC_EV_DELETED;
    set_kind(r->res, obj);
    char key[600];
    obj_key(obj, key, sizeof key);
    if (t == KC_EV_DELETED)
        json_object_del(r->store, key);
    else
        json_object_set_new(r->store, key, json_string(rv));
    if (*rv)
        snprintf(r->rv, sizeof r->rv, "%s", rv);
    enqueue(r->inf, r->res, t, obj);
    json_decref(obj);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* After the last page of a relist: objects we had that the list lacks. */
static void finish_relist(refl *r)
{
    size_t n = 0, cap = json_object_size(r->store);
    const char **gone = de_xmalloc((cap + 1) * sizeof *gone);
    const char *k;
    json_t *v;
    json_object_foreach(r->store, k, v) {
        if (!json_object_get(r->listed, k))
            gone[n++] = k;
    }
    qsort(gone, n, sizeof *gone, cmp_str);
    for (size_t i = 0; i < n; i++) {
        const char *slash = strchr(gone[i], '/');
        json_t *md = json_object();
        if (slash && slash > gone[i])
            json_object_set_new(md, "namespace", json_stringn(gone[i], (size_t)(slash - gone[i])));
        json_object_set_new(md, "name", json_string(slash ? slash + 1 : gone[i]));
        json_t *o = json_object();
        json_object_set_new(o, "apiVersion", json_string(RES[r->res].api_version));
        json_object_set_new(o, "kind", json_string(RES[r->res].kind));
        json_object_set_new(o, "metadata", md);
        enqueue(r->inf, r->res, KC_EV_DELETED, o);
        json_decref(o);
    }
    for (size_t i = 0; i < n; i++)
        json_object_del(r->store, gone[i]); /* keys freed here: after their last use */
    free(gone);
    r->relisting = false;
}

/* The message of a failed transfer: curl's detail when it has one. */
static const char *transport_msg(refl *r, CURLcode cc)
{
    return r->errbuf[0] ? r->errbuf : curl_easy_strerror(cc);
}

/* An error status answer: its Status reason and message. */
static void fail_status(refl *r, const char *verb, long status, bool relist)
{
    char reason[128], msg[512];
    kc_status_reason(status, r->body.p, r->body.len, reason, sizeof reason, msg, sizeof msg);
    fail(r, verb, status, reason, relist, "HTTP %ld: %s%s%s", status, reason, *msg ? ": " : "",
         msg);
}

/* One item of a list page, as the page streams in: deliver it if it
 * changed, and count whether it is new to this list (the list's progress). */
static void take_item(void *ctx, json_t *it)
{
    refl *r = ctx;
    if (!json_is_object(it))
        return;
    set_kind(r->res, it);
    char key[600];
    obj_key(it, key, sizeof key);
    const char *old = json_string_value(json_object_get(r->store, key));
    const char *rv = obj_rv(it);
    kc_evtype t = old ? KC_EV_MODIFIED : KC_EV_ADDED;
    bool same = old && *rv && !strcmp(old, rv);
    json_object_set_new(r->store, key, json_string(rv));
    if (!json_object_get(r->listed, key)) {
        json_object_set_new(r->listed, key, json_true());
        r->page_fresh++;
    }
    if (!same)
        enqueue(r->inf, r->res, t, it);
}

static void list_done(refl *r, CURLcode cc, long status)
{
    kc_stats *st = kc_client_stats_mut(r->inf->cl);
    const char *why = NULL;
    if (r->page_bad) {
        kc_listsplit_finish(r->ls, &why); /* the splitter's reason */
        fail(r, "list", 200, "UndecodableBody", true, "undecodable answer: %s", why);
        return;
    }
    if (r->overflow) {
        fail(r, "list", 200, "ResponseTooLarge", false, "page larger than %zu bytes",
             r->inf->o.max_body);
        return;
    }
    if (status != 200 && status != 0) {
        /* 410 on a continue token: the snapshot expired, start over. */
        fail_status(r, "list", status, false);
        return;
    }
    if (cc != CURLE_OK) {
        fail(r, "list", 0, kc_curl_reason(cc), false, "%s", transport_msg(r, cc));
        return;
    }
    json_t *doc = kc_listsplit_finish(r->ls, &why);
    if (!doc) {
        fail(r, "list", 200, "UndecodableBody", true, "undecodable answer: %s", why);
        return;
    }
    stop_transfer(r);
    json_t *md = json_object_get(doc, "metadata");
    size_t fresh = r->page_fresh;
    const char *cont = json_string_value(json_object_get(md, "continue"));
    const char *lrv = json_string_value(json_object_get(md, "resourceVersion"));
    free(r->cont);
    r->cont = cont && *cont ? de_xstrdup(cont) : NULL;
    if (!r->cont && lrv)
        snprintf(r->rv, sizeof r->rv, "%s", lrv);
    json_decref(doc);
    if (r->cont) {
        /* Paging must make progress: a server (or proxy) that keeps handing
         * out continue tokens would otherwise be followed forever. */
        r->pages++;
        r->empty_pages = fresh ? 0 : r->empty_pages + 1;
        uint64_t *seen = de_map_slot(&r->tokens, de_hash_bytes(r->cont, strlen(r->cont)), 0);
        if ((*seen)++)
            fail(r, "list", 200, "ListRepeatedToken", false,
                 "page %d repeats an earlier continue token", r->pages + 1);
        else if (r->empty_pages > r->inf->o.max_empty_pages)
            fail(r, "list", 200, "ListNoProgress", false,
                 "%d pages in a row brought no new object", r->empty_pages);
        else if (r->pages >= r->inf->o.max_pages)
            fail(r, "list", 200, "ListTooManyPages", false, "more than %d pages",
                 r->inf->o.max_pages);
        else
            start(r);
        return;
    }
    if (r->relisting) {
        finish_relist(r);
        st->relists++;
    }
    json_decref(r->listed);
    r->listed = NULL;
    r->synced = true;
    r->failures = 0;
    r->state = RS_WATCH;
    start(r);
}

static void watch_done(refl *r, CURLcode cc, long status)
{
    kc_stats *st = kc_client_stats_mut(r->inf->cl);
    st->watch_restarts++;
    /* How long the server streamed: from its answer's first byte, so a slow
     * connect or TLS handshake does not make a watch that ended at once look
     * healthy. */
    curl_off_t total = 0, first = 0;
    curl_easy_getinfo(r->h, CURLINFO_TOTAL_TIME_T, &total);
    curl_easy_getinfo(r->h, CURLINFO_STARTTRANSFER_TIME_T, &first);
    uint64_t lasted = total > first ? (uint64_t)(total - first) * 1000ull : 0;
    if (r->gone) {
        char m[600];
        snprintf(m, sizeof m, "%s", r->err);
        fail(r, "watch", r->gone_code, r->gone_reason, true, "%s", m);
    } else if (r->overflow) {
        fail(r, "watch", 200, "EventTooLarge", true, "event larger than %zu bytes",
             r->inf->o.max_line);
    } else if (status != 200 && status != 0) {
        fail_status(r, "watch", status, status == 410);
    } else if (status == 0) {
        fail(r, "watch", 0, kc_curl_reason(cc), false, "%s", transport_msg(r, cc));
    } else if (lasted < r->inf->o.min_watch_ns) {
        /* client-go counts a watch closed within a second with no event as a
         * failure; draengine counts any: a healthy server ends watches only
         * at timeoutSeconds, and a rewatch per event is a request storm. */
        fail(r, "watch", cc == CURLE_OK ? 200 : 0,
             cc == CURLE_OK ? "ShortWatch" : kc_curl_reason(cc), false,
             "the watch ended after %llu ms with %u events%s%s",
             (unsigned long long)(lasted / 1000000ull), r->watch_events,
             cc == CURLE_OK ? "" : ": ", cc == CURLE_OK ? "" : transport_msg(r, cc));
    } else {
        /* A watch that ran: resume from the last version at once, as
         * client-go does; a dropped stream is still worth counting. */
        if (cc != CURLE_OK)
            kc_client_fail(r->inf->cl, RES[r->res].name, "watch", 0, kc_curl_reason(cc),
                           transport_msg(r, cc));
        stop_transfer(r);
        r->failures = 0;
        r->state = RS_WATCH;
        start(r);
    }
}

/* ---- driving ------------------------------------------------------------------- */

kc_informer *kc_informer_new(kc_client *cl, const kc_informer_opts *o, kc_event_fn fn, void *ctx)
{
    kc_informer *inf = de_xcalloc(1, sizeof *inf);
    inf->cl = cl;
    inf->o = *o;
    if (inf->o.page_limit <= 0)
        inf->o.page_limit = 500;
    if (!inf->o.backoff_initial_ns)
        inf->o.backoff_initial_ns = 800000000ull;
    if (!inf->o.backoff_max_ns)
        inf->o.backoff_max_ns = 30000000000ull;
    if (!inf->o.backoff_reset_ns)
        inf->o.backoff_reset_ns = 120000000000ull;
    if (!inf->o.min_watch_ns)
        inf->o.min_watch_ns = 1000000000ull;
    if (inf->o.max_pages <= 0)
        inf->o.max_pages = 10000;
    if (inf->o.max_empty_pages <= 0)
        inf->o.max_empty_pages = 16;
    if (!inf->o.jitter_seed)
        inf->o.jitter_seed = (uint64_t)getpid() * 0x9e3779b97f4a7c15ull + 1;
    if (inf->o.watch_timeout_s <= 0)
        inf->o.watch_timeout_s = 300;
    if (!inf->o.max_line)
        inf->o.max_line = (size_t)16 << 20;
    if (!inf->o.max_item)
        inf->o.max_item = (size_t)16 << 20;
    if (!inf->o.max_body)
        inf->o.max_body = (size_t)256 << 20;
    inf->fn = fn;
    inf->ctx = ctx;
    inf->m = curl_multi_init();
    for (int i = 0; i < KC_RES_COUNT; i++) {
        refl *r = &inf->r[i];
        r->inf = inf;
        r->res = (kc_res)i;
        r->store = json_object();
        de_buf_init(&r->body, 8192);
        de_buf_init(&r->line, inf->o.max_line);
        r->ls = kc_listsplit_new(inf->o.max_item, take_item, r);
        kc_backoff_init(&r->bo, inf->o.backoff_initial_ns, inf->o.backoff_max_ns,
                        inf->o.jitter_seed + (uint64_t)i * 0x100000001b3ull);
        r->bo.reset_ns = inf->o.backoff_reset_ns;
        de_map_init(&r->tokens);
        if (inf->o.want[i])
            begin_list(r, false);
    }
    kc_client_set_pump(cl, inf);
    return inf;
}

void kc_informer_free(kc_informer *inf)
{
    if (!inf)
        return;
    kc_client_set_pump(inf->cl, NULL);
    for (int i = 0; i < KC_RES_COUNT; i++) {
        refl *r = &inf->r[i];
        stop_transfer(r);
        de_buf_free(&r->body);
        de_buf_free(&r->line);
        kc_listsplit_free(r->ls);
        json_decref(r->store);
        json_decref(r->listed);
        de_map_destroy(&r->tokens);
        free(r->cont);
    }
    for (size_t i = inf->qhead; i < inf->qlen; i++)
        json_decref(inf->q[i].obj);
    free(inf->q);
    curl_multi_cleanup(inf->m);
    free(inf);
}

static void start_due(kc_informer *inf, uint64_t now, uint64_t *next_due)
{
    for (int i = 0; i < KC_RES_COUNT; i++) {
        refl *r = &inf->r[i];
        if (!inf->o.want[i] || r->h)
            continue;
        if (r->state == RS_WAIT) {
            if (now < r->wait_until) {
                *next_due = DE_MIN(*next_due, r->wait_until);
                continue;
            }
            r->state = r->list_next ? RS_LIST : RS_WATCH;
        }
        if (r->state == RS_LIST || r->state == RS_WATCH)
            start(r);
    }
}

static void reap(kc_informer *inf)
{
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(inf->m, &left)) != NULL) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        refl *r = NULL;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&r);
        if (!r)
            continue;
        CURLcode cc = msg->data.result;
        long status = 0;
        curl_easy_getinfo(r->h, CURLINFO_RESPONSE_CODE, &status);
        kc_client_count(inf->cl, status);
        /* A write callback that stopped on purpose (410 event) reports
         * CURLE_WRITE_ERROR; the flags say why. */
        if (r->state == RS_LIST)
            list_done(r, cc, status);
        else
            watch_done(r, cc, status);
    }
}

static void drive(kc_informer *inf, int timeout_ms, kc_waitfd *extra, unsigned nextra)
{
    uint64_t now = de_now_ns(), next_due = UINT64_MAX;
    start_due(inf, now, &next_due);
    if (next_due != UINT64_MAX) {
        uint64_t d = (next_due - now) / 1000000ull + 1;
        if ((uint64_t)timeout_ms > d)
            timeout_ms = (int)d;
    }
    struct curl_waitfd wf[16];
    unsigned nw = DE_MIN(nextra, (unsigned)DE_ARRAY_LEN(wf));
    for (unsigned i = 0; i < nw; i++) {
        wf[i].fd = extra[i].fd;
        wf[i].events = (short)((extra[i].events & POLLIN ? CURL_WAIT_POLLIN : 0) |
                               (extra[i].events & POLLOUT ? CURL_WAIT_POLLOUT : 0));
        wf[i].revents = 0;
    }
    int numfds = 0;
    if (timeout_ms > 0)
        curl_multi_poll(inf->m, wf, nw, timeout_ms, &numfds);
    for (unsigned i = 0; i < nw; i++)
        extra[i].revents = (short)((wf[i].revents & CURL_WAIT_POLLIN ? POLLIN : 0) |
                                   (wf[i].revents & CURL_WAIT_POLLOUT ? POLLOUT : 0));
    int running = 0;
    curl_multi_perform(inf->m, &running);
    reap(inf);
}

void kc_informer_pump_for(kc_informer *inf, uint64_t ns)
{
    uint64_t end = de_now_ns() + ns;
    for (;;) {
        uint64_t now = de_now_ns();
        if (now >= end)
            break;
        uint64_t ms = (end - now) / 1000000ull;
        drive(inf, (int)DE_MIN(ms + 1, 1000), NULL, 0);
    }
}

int kc_informer_poll(kc_informer *inf, int timeout_ms, kc_waitfd *extra, unsigned nextra)
{
    drive(inf, inf->qhead < inf->qlen ? 0 : timeout_ms, extra, nextra);
    int n = 0;
    inf->delivering = true;
    while (inf->qhead < inf->qlen) {
        qev ev = inf->q[inf->qhead++];
        inf->fn(inf->ctx, ev.res, ev.type, ev.obj);
        json_decref(ev.obj);
        n++;
    }
    inf->delivering = false;
    inf->qhead = inf->qlen = 0;
    return n;
}

bool kc_informer_res_synced(const kc_informer *inf, kc_res r)
{
    return !inf->o.want[r] || inf->r[r].synced;
}

bool kc_informer_synced(const kc_informer *inf)
{
    if (inf->qhead < inf->qlen)
        return false; /* listed but not yet delivered */
    for (int i = 0; i < KC_RES_COUNT; i++)
        if (!kc_informer_res_synced(inf, (kc_res)i))
            return false;
    return true;
}

const char *kc_informer_rv(const kc_informer *inf, kc_res r) { return inf->r[r].rv; }
const char *kc_informer_last_error(const kc_informer *inf) { return inf->last_err; }
void kc_informer_set_skip(kc_informer *inf, kc_res res, kc_skip_fn fn, void *ctx)
{
    inf->skip[res] = fn;
    inf->skip_ctx[res] = ctx;
}

size_t kc_informer_list_peak(const kc_informer *inf) { return inf->list_peak; }

void kc_informer_describe(const kc_informer *inf, de_buf *out)
{
    static const char *const names[] = {"idle", "listing", "watching", "backing off"};
    uint64_t now = de_now_ns();
    for (int i = 0; i < KC_RES_COUNT; i++) {
        const refl *r = &inf->r[i];
        if (!inf->o.want[i])
            continue;
        de_buf_printf(out, "%s: %s, %s", RES[i].name, r->synced ? "synced" : "not synced",
                      names[r->state]);
        if (r->state == RS_WAIT)
            de_buf_printf(out, " (%s in %llu ms, %u failures in a row)",
                          r->list_next ? "list" : "watch",
                          (unsigned long long)(r->wait_until > now
                                                   ? (r->wait_until - now) / 1000000ull
                                                   : 0),
                          r->failures);
        de_buf_printf(out, ", resourceVersion=%s, objects=%zu%s%s\n", r->rv,
                      json_object_size(r->store), r->err[0] ? ", last error: " : "", r->err);
    }
}

size_t kc_watch_feed(kc_informer *inf, kc_res res, const char *body, size_t len, size_t chunk, bool *was_cut)
{
    refl *r = &inf->r[res];
    r->state = RS_WATCH;
    r->gone = false;
    size_t before = inf->qlen - inf->qhead;
    for (size_t at = 0; at < len && !r->gone;) {
        size_t n = chunk && len - at > chunk ? chunk : len - at;
        if (watch_bytes(r, body + at, n) != n)
            break;
        at += n;
    }
    *was_cut = r->gone || r->overflow;
    return inf->qlen - inf->qhead - before;
}
