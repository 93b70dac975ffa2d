/*
 * kc.h - the Kubernetes API client: configuration (kubeconfig, in-cluster),
 * an HTTP client with authentication, QPS/burst limits and retries, list+
 * watch reflectors sharing one thread, typed writes, and leader election.
 *
 * Threading: none.  Everything runs on the caller's thread; watches are
 * transfers in one curl multi handle that kc_informer_poll() drives, and
 * writes are synchronous requests on a separate easy handle that keep the
 * watches flowing while they wait (for a rate-limit token or a Retry-After)
 * by polling the informer they were given.
 *
 * Secrets: bearer tokens and private keys never reach a de_err message, a
 * log line or kc_config_describe().  Every message built from a server
 * answer passes through kc_redact() before it is stored.
 */
#ifndef KC_H
#define KC_H

#include "../../engine/base/buf.h"
#include "../../engine/base/de.h"

#include <jansson.h>

/* ---- configuration ------------------------------------------------------ */

typedef struct kc_config kc_config;

typedef struct kc_config_opts {
    const char *kubeconfig; /* --kubeconfig: this file only, no merging */
    const char *context;    /* --context: overrides current-context */
    const char *master;     /* --master: overrides the server URL */
    /* Test seams; NULL means the real value. */
    const char *env_kubeconfig; /* $KUBECONFIG ("" = unset) */
    const char *home;           /* $HOME for ~/.kube/config */
    const char *sa_dir;         /* /var/run/secrets/kubernetes.io/serviceaccount */
    const char *env_host;       /* $KUBERNETES_SERVICE_HOST */
    const char *env_port;       /* $KUBERNETES_SERVICE_PORT_HTTPS or _PORT */
    bool no_in_cluster;         /* never fall back to the service account */
} kc_config_opts;

/*
 * Resolve the connection like client-go: --kubeconfig alone if given;
 * otherwise the files of $KUBECONFIG merged (first file that sets a value
 * wins, current-context included), otherwise ~/.kube/config; if none of
 * those exists, the in-cluster service account.  --master replaces the
 * server.  Relative paths inside a kubeconfig are relative to its file.
 * Refused as client-go refuses them: a token together with username/
 * password, insecure-skip-tls-verify together with a CA.  Refused because
 * they would corrupt a header: a control character in a token, token file,
 * username or password.  A token file must be a regular file; a pipe given
 * as the kubeconfig or a PEM file must deliver within 2 s.
 */
de_rc kc_config_load(const kc_config_opts *o, kc_config **out, de_err *e);
void kc_config_free(kc_config *c);

/* The server URL for messages: userinfo (https://user:pass@host) shows as
 * [REDACTED]. */
const char *kc_config_server(const kc_config *c);
/* "kubeconfig", "in-cluster" or "master" */
const char *kc_config_source(const kc_config *c);
const char *kc_config_context(const kc_config *c);   /* "" when in-cluster */
const char *kc_config_namespace(const kc_config *c); /* default "default" */
/* A one-line description safe to log: server, source, auth kinds, never a
 * secret ("token=<redacted, 812 bytes>"). */
void kc_config_describe(const kc_config *c, de_buf *out);

/* The bearer token to send now ("" when none).  A token from a file is
 * re-read when `force` is set (after a 401) or when it is older than the
 * re-read period (default 60 s).  The pointer stays valid until the next
 * call. */
const char *kc_config_token(kc_config *c, bool force);
void kc_config_set_token_period(kc_config *c, uint64_t ns);
/* Why the last re-read of the token file was refused ("" when it was not):
 * a refused re-read keeps the last good token.  *seq (may be NULL) counts
 * refusals so a caller can report each one once. */
const char *kc_config_token_problem(const kc_config *c, unsigned *seq);

/* Replace every occurrence of the current (and previous) token in s, in
 * place, with "[REDACTED]" (s must have room: the marker is shorter than any
 * token we accept).  Also masks any "Bearer <x>" header value. */
void kc_redact(const kc_config *c, char *s);

/* ---- HTTP client ------------------------------------------------------- */

typedef struct kc_client kc_client;
typedef struct kc_informer kc_informer;

typedef struct kc_client_opts {
    double qps;        /* --kube-api-qps, default 50 (writes only) */
    int burst;         /* --kube-api-burst, default 100 */
    int max_retries;   /* retries after 429/5xx/transport errors, default 5 */
    long timeout_ms;   /* per request, default 30000 */
    long report_interval_ms; /* failure reports of one kind, default 10000 */
    const char *user_agent; /* default "draengine/<version>" */
    /* fieldValidation sent with every write ("Strict", "Warn", "Ignore");
     * NULL or "" sends none, so the server's default (Warn) applies. */
    const char *field_validation;
    /* HTTP/2 (negotiated over TLS) instead of HTTP/1.1 for every request and
     * watch; default false.  See kc_client_setup_easy for why. */
    bool http2;
} kc_client_opts;

/* The client borrows cfg (which must outlive it). */
kc_client *kc_client_new(kc_config *cfg, const kc_client_opts *o);
void kc_client_free(kc_client *cl);
/* A client for another thread: its own connection, the parent's
 * configuration, and the root client's rate limiter, counters, failure
 * table and failure callback (shared, thread-safe).  It never pumps an
 * informer: its waits sleep.  Free clones before their root. */
kc_client *kc_client_clone(kc_client *parent);
/* No write (any method but GET) of this client object - not its clones or
 * root - starts at or after until_ns (de_now_ns clock; UINT64_MAX, the
 * default: none): kc_request then fails with DE_EAPI without sending, also
 * between retries.  For binding workers past the lease's renew deadline. */
void kc_client_set_write_deadline(kc_client *cl, uint64_t until_ns);
kc_config *kc_client_config(kc_client *cl);
/* While a request waits (rate limit, Retry-After, backoff) it keeps this
 * informer's watches flowing. */
void kc_client_set_pump(kc_client *cl, kc_informer *inf);

/* One extra request header on every request ("Name: value"), e.g. for a
 * proxy; the specs use it to mark their own set-up traffic. NULL clears. */
void kc_client_set_header(kc_client *cl, const char *header);

/* Counters for /metrics, by verb and status code class. */
typedef struct kc_stats {
    uint64_t requests;        /* every HTTP request made, watches included */
    uint64_t by_code[6];      /* 0: transport error, 1..5: 1xx..5xx */
    uint64_t conflicts;       /* 409 */
    uint64_t throttled;       /* 429 */
    uint64_t unauthorized;    /* 401 */
    uint64_t retries;
    uint64_t rate_limited_ns; /* time spent waiting for a QPS token */
    uint64_t watch_restarts;  /* watches re-established after a drop or EOF */
    uint64_t relists;         /* relists after 410 Gone */
    uint64_t warnings;        /* Warning headers the server sent (each one is logged) */
} kc_stats;
void kc_client_stats(const kc_client *cl, kc_stats *out);

/* ---- failures ------------------------------------------------------------ */

/* One failed request, list page or watch.  Every failure is counted (see
 * kc_client_failures); reports reach the callback rate-limited: per
 * (resource, verb, code, reason) the first at once, later ones at most once
 * per kc_client_opts.report_interval_ms with the number held back. */
typedef struct kc_failure {
    const char *resource; /* "pods", "pods/binding", "resourceclaims/status", ... */
    const char *verb;     /* list, watch, get, create, update, patch, delete */
    long code;            /* HTTP status; 0 when there was no usable answer */
    const char *reason;   /* Status reason ("Forbidden"), else the code's default
                           * reason, else the transport's ("ConnectionRefused",
                           * "TLSVerifyFailed", "Timeout", ...) or the client's
                           * ("UndecodableBody", "ShortWatch", "ListNoProgress") */
    const char *message;  /* one line, redacted */
    uint64_t suppressed;  /* failures of this kind held back since its last report */
} kc_failure;
typedef void (*kc_failure_fn)(void *ctx, const kc_failure *f);
void kc_client_set_failure_fn(kc_client *cl, kc_failure_fn fn, void *ctx);

/* The counters behind draengine_kube_api_failures_total. */
typedef struct kc_fail_count {
    char resource[48], verb[12], code[12], reason[48]; /* code "<error>" = no answer */
    uint64_t count;
} kc_fail_count;
/* A copy of the i-th counter (in order of first occurrence) into *out;
 * false past the end.  Copied under the root client's lock: binding workers
 * (clones) count failures while /metrics reads them. */
bool kc_client_failure(const kc_client *cl, size_t i, kc_fail_count *out);
/* Reports held back by the rate limit, in total (read under the lock). */
uint64_t kc_client_failures_suppressed(const kc_client *cl);

/*
 * One request.  `body` (may be NULL) is serialised compactly; the answer is
 * parsed into *out (NULL when the body is empty or not JSON).  Returns DE_OK
 * for 2xx, DE_ECONFLICT for 409, DE_ENOTFOUND for 404, DE_EAPI for other
 * statuses (message = the Status message, redacted), DE_EIO for transport
 * errors after retries.  *status gets the HTTP status (0 on transport error).
 * 429 waits for Retry-After (capped at 60 s) and retries; 5xx and transport
 * errors retry with backoff for idempotent verbs and for POSTs of bindings
 * and events (the server answers a duplicate with 409); 401 re-reads the
 * token once.  `content_type` NULL means application/json.
 *
 * Writes (POST/PUT/PATCH/DELETE) go through the QPS limiter.  A PUT whose
 * body lacks metadata.resourceVersion is refused with DE_EINVAL before it is
 * sent: draengine never writes without a current resourceVersion.
 */
de_rc kc_request(kc_client *cl, const char *method, const char *path, json_t *body,
                 const char *content_type, long *status, json_t **out, de_err *e);
/* The same, when only the identity of the answer's object is wanted (its
 * new resourceVersion): the answer is not decoded.  DE_EAPI when it has no
 * metadata.name and resourceVersion. */
struct kc_peek;
de_rc kc_request_peek(kc_client *cl, const char *method, const char *path, json_t *body,
                      const char *content_type, struct kc_peek *pk, de_err *e);

/* ---- paths --------------------------------------------------------------- */

typedef enum kc_res {
    KC_RES_SLICES = 0,
    KC_RES_CLASSES,
    KC_RES_CLAIMS,
    KC_RES_TEMPLATES,
    KC_RES_TAINT_RULES,
    KC_RES_NODES,
    KC_RES_PODS,
    KC_RES_NAMESPACES,
    KC_RES_PODGROUPS, /* scheduling.k8s.io/v1beta1, only with DRAWorkloadResourceClaims */
    KC_RES_POOL_STATUS_REQUESTS, /* resource.k8s.io/v1alpha3, only with the pool status controller */
    KC_RES_COUNT
} kc_res;

const char *kc_res_name(kc_res r);      /* "resourceslices", ... */
const char *kc_res_kind(kc_res r);      /* "ResourceSlice", ... */
/* Collection path for all namespaces, e.g. /apis/resource.k8s.io/v1/resourceclaims */
const char *kc_res_path(kc_res r);
/* Object path into buf: namespaced kinds need ns. sub = NULL or "status". */
void kc_object_path(kc_res r, const char *ns, const char *name, const char *sub, char *buf,
                    size_t cap);

/* ---- list + watch -------------------------------------------------------- */

typedef enum kc_evtype { KC_EV_ADDED = 0, KC_EV_MODIFIED, KC_EV_DELETED } kc_evtype;

/* Called for every object change, in the order the server sent them.  `obj`
 * is borrowed (incref to keep).  During a relist, objects that disappeared
 * are delivered as DELETED (sorted by namespace/name) after the new list. */
typedef void (*kc_event_fn)(void *ctx, kc_res res, kc_evtype type, json_t *obj);

/*
 * Failures and backoff, per resource, as client-go's reflector does it: every
 * failure waits a backoff delay before the next request (800 ms doubling to
 * 30 s, times a jitter factor in [1, 2)), and the delay starts over only when
 * the previous backoff is more than 2 minutes old, i.e. after a healthy
 * stretch; a successful list does not reset it, so a server that answers
 * each watch with 410 slows to one relist per 30-60 s instead of looping.
 * Failures: an error status or transport error on a list or watch; a watch
 * that the server ends within 1 s (whatever it carried: a healthy server
 * ends watches only at timeoutSeconds); a 410 or other ERROR event, an
 * undecodable or oversized event; a list that does not progress (more than
 * max_empty_pages pages in a row bringing nothing new), repeats a continue
 * token, or runs past max_pages pages.  In-band watch failures (410, ERROR,
 * undecodable) relist; the others resume the watch from the last version.
 */
typedef struct kc_informer_opts {
    bool want[KC_RES_COUNT];   /* which resources to list+watch */
    int page_limit;            /* list page size, default 500 */
    uint64_t backoff_initial_ns; /* default 800 ms (client-go reflector) */
    uint64_t backoff_max_ns;     /* default 30 s */
    uint64_t backoff_reset_ns;   /* default 2 min */
    uint64_t min_watch_ns;       /* shorter watches are failures, default 1 s */
    int max_pages;               /* pages of one list, default 10000 */
    int max_empty_pages;         /* pages in a row bringing nothing new, default 16 */
    uint64_t jitter_seed;        /* deterministic jitter source; 0 = from the pid */
    int watch_timeout_s;         /* timeoutSeconds base, default 300 (x [1,2)) */
    size_t max_line;             /* one watch event, default 16 MiB */
    size_t max_item;             /* one list item, default 16 MiB */
    size_t max_body;             /* list page bytes (streamed, not held), default 256 MiB */
} kc_informer_opts;

kc_informer *kc_informer_new(kc_client *cl, const kc_informer_opts *o, kc_event_fn fn,
                             void *ctx);
void kc_informer_free(kc_informer *inf);

/* Extra descriptors the poll should wake for (the HTTP responder's). */
typedef struct kc_waitfd {
    int fd;
    short events;  /* POLLIN | POLLOUT */
    short revents; /* filled by kc_informer_poll */
} kc_waitfd;

/* Wait up to timeout_ms for network activity (or an extra fd), then process
 * whatever arrived: events are delivered through the callback.  Returns the
 * number of events delivered. */
int kc_informer_poll(kc_informer *inf, int timeout_ms, kc_waitfd *extra, unsigned nextra);
/* Every wanted resource has delivered its first complete list. */
bool kc_informer_synced(const kc_informer *inf);
bool kc_informer_res_synced(const kc_informer *inf, kc_res r);
/* Last resourceVersion seen for a resource ("" before the first list). */
const char *kc_informer_rv(const kc_informer *inf, kc_res r);
/* A short status line per resource, for /readyz?verbose and logs. */
void kc_informer_describe(const kc_informer *inf, de_buf *out);
/* The last transport or API error a watch saw (redacted), "" if none. */
const char *kc_informer_last_error(const kc_informer *inf);
/* The most bytes list parsing held at once, all resources together: list
 * pages are parsed as they stream (one item's text at a time), so this
 * stays near the largest single object, whatever the lists weigh. */
size_t kc_informer_list_peak(const kc_informer *inf);
/* An optional filter for one resource, asked about each of its MODIFIED
 * watch events before it is decoded, with what kc_watch_peek read from the
 * line (and the line, to keep): true drops the event undecoded.  Its
 * resourceVersion still counts (the watch resumes after it, a relist
 * compares against it), so only an event whose object the caller holds
 * already, or keeps to decode later, may be dropped: a scheduler's echo of
 * its own write.  ADDED, DELETED and lines that do not peek are always
 * decoded and delivered. */
struct kc_peek;
typedef bool (*kc_skip_fn)(void *ctx, kc_res res, const struct kc_peek *pk, const char *line, size_t len);
void kc_informer_set_skip(kc_informer *inf, kc_res res, kc_skip_fn fn, void *ctx);

/* Backoff with jitter, shared by watches and writes: initial * 2^attempt,
 * capped, times a factor in [1, 2) drawn from a seeded xorshift.  With
 * reset_ns set, a step taken more than reset_ns after the previous one
 * starts over from initial (client-go's exponential backoff manager). */
typedef struct kc_backoff {
    uint64_t initial_ns, max_ns, cur_ns;
    uint64_t rng;
    uint64_t reset_ns, last_ns;
} kc_backoff;
void kc_backoff_init(kc_backoff *b, uint64_t initial_ns, uint64_t max_ns, uint64_t seed);
uint64_t kc_backoff_next(kc_backoff *b); /* the next delay */
void kc_backoff_reset(kc_backoff *b);

/* ---- streamed answers (kc_stream.c) ----------------------------------------- */

/* One line of a watch stream, decoded (the informer's decoder; callable
 * alone for specs and fuzzing). */
typedef enum kc_wtype {
    KC_W_ADDED = 0, KC_W_MODIFIED, KC_W_DELETED, KC_W_BOOKMARK, KC_W_ERROR,
    KC_W_OTHER /* a type client-go ignores, as draengine does */
} kc_wtype;
/* A watch event's type from its name (KC_W_OTHER for any other), and back. */
kc_wtype kc_wtype_parse(const char *s);
const char *kc_wtype_name(kc_wtype t);
typedef struct kc_wevent {
    kc_wtype type;
    json_t *obj;     /* the caller's reference: the object, or ERROR's Status */
    long code;       /* ERROR: its Status code (200 when absent or out of range) */
    char reason[64]; /* ERROR: its Status reason; when decoding failed, why */
    char msg[400];
} kc_wevent;
/* false (reason and msg set, obj NULL) when the line is not a watch event:
 * not one JSON object, a duplicate key, no type or no object. */
bool kc_watch_decode(const char *line, size_t len, kc_wevent *ev);

/* A watch event's type and the identity of its object, read from the line
 * without decoding it (kc_lean.c): the members "type" and object.metadata's
 * namespace (empty when absent), name and resourceVersion, as NUL-terminated
 * copies.  false when the line does not show them plainly: a value with an
 * escape or too long, a member missing, nesting past 64 levels.  A true
 * answer says nothing about the rest of the line, which may still fail to
 * decode. */
typedef struct kc_peek {
    kc_wtype type;
    char ns[256], name[256], rv[64];
} kc_peek;
bool kc_watch_peek(const char *line, size_t len, kc_peek *pk);
/* The same for one object's text (type KC_W_OTHER). */
bool kc_object_peek(const char *obj, size_t len, kc_peek *pk);


/* A list answer cut while it arrives: each element of "items" is decoded
 * and handed over as soon as its last byte is in, so a list is never held
 * whole (the informer's design; callable alone for specs and fuzzing). */
typedef struct kc_listsplit kc_listsplit;
/* Called for each element of "items" (borrowed; incref to keep). */
typedef void (*kc_item_fn)(void *ctx, json_t *item);
kc_listsplit *kc_listsplit_new(size_t max_item, kc_item_fn fn, void *ctx);
void kc_listsplit_free(kc_listsplit *s);
void kc_listsplit_reset(kc_listsplit *s);
/* Feed bytes as they arrive; false on an error (the answer is abandoned). */
bool kc_listsplit_feed(kc_listsplit *s, const char *p, size_t n);
/* At the end: every member but "items" as an object, or NULL with *err set
 * when the answer was not one complete list. */
json_t *kc_listsplit_finish(kc_listsplit *s, const char **err);
/* Bytes its buffers hold now. */
size_t kc_listsplit_held(const kc_listsplit *s);

/* ---- typed writes --------------------------------------------------------- */

/* Full status update of a claim (PUT .../status); `claim` carries the
 * metadata.resourceVersion the decision was made on.  *out = new object. */
de_rc kc_claim_update_status(kc_client *cl, json_t *claim, json_t **out, de_err *e);
/* Plain update of the claim object (to add the delete-protection
 * finalizer); only the answer's identity is read (kc_request_peek). */
de_rc kc_claim_update_peek(kc_client *cl, json_t *claim, struct kc_peek *pk, de_err *e);
de_rc kc_get(kc_client *cl, kc_res r, const char *ns, const char *name, json_t **out,
             de_err *e);
/* POST pods/<name>/binding. */
de_rc kc_pod_bind(kc_client *cl, const char *ns, const char *pod, const char *uid,
                  const char *node, de_err *e);

/* events.k8s.io/v1 Event, best effort. regarding = the object (its kind,
 * apiVersion, namespace, name, uid, resourceVersion are copied). */
typedef struct kc_event {
    json_t *regarding;
    const char *type;   /* Normal | Warning */
    const char *reason; /* <= 128 */
    const char *action; /* <= 128 */
    const char *note;   /* <= 1 kB, cut at a UTF-8 boundary */
    const char *reporting_controller;
    const char *reporting_instance;
    int64_t when_ns; /* eventTime, Unix ns (0: now); a queued Event keeps its decision's */
} kc_event;
de_rc kc_event_create(kc_client *cl, const kc_event *ev, de_err *e);

/* RFC 3339 with microseconds (metav1.MicroTime) of a wall-clock time. */
void kc_format_microtime(int64_t unix_ns, char *buf, size_t cap);
/* Parse RFC 3339 (with or without fraction); false when malformed. */
bool kc_parse_time(const char *s, int64_t *unix_ns);

/* ---- leader election ----------------------------------------------------- */

typedef struct kc_lease kc_lease;

typedef struct kc_lease_opts {
    const char *ns;       /* --leader-elect-resource-namespace, default kube-system */
    const char *name;     /* --leader-elect-resource-name, default draengine */
    const char *identity; /* unique per candidate */
    uint64_t lease_ns, renew_deadline_ns, retry_ns; /* 15 s, 10 s, 2 s */
} kc_lease_opts;

kc_lease *kc_lease_new(kc_client *cl, const kc_lease_opts *o);
void kc_lease_free(kc_lease *l);
/* Call often: tries to acquire or renew when due (every retry period).
 * Returns true while this candidate leads.  Once leadership was held and a
 * renewal could not succeed within the renew deadline, *lost is set and the
 * caller must stop scheduling (kube-scheduler exits). */
bool kc_lease_tick(kc_lease *l, bool *lost);
bool kc_lease_is_leader(const kc_lease *l);
/* Until when (de_now_ns clock) this replica is sure to lead: the start of
 * its last successful renewal + the renew deadline, 0 when not leading.
 * Others take over only leaseDuration after they saw that renewal, so
 * writes that start before this instant cannot meet a new leader's - also
 * while a slow renewal blocks the caller's loop past it. */
uint64_t kc_lease_valid_until(const kc_lease *l);
const char *kc_lease_holder(const kc_lease *l); /* last observed holder */
/* Graceful shutdown: give the lease up (holder "", duration 1 s). */
void kc_lease_release(kc_lease *l);
/* Nanoseconds until the next tick is due (for the poll timeout). */
uint64_t kc_lease_next_due_ns(const kc_lease *l);

#endif
