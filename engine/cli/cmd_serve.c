/*
 * cmd_serve.c - `draengine serve`: the scheduler against a Kubernetes API
 * server.
 *
 * One thread runs everything: the informer's watches (curl multi), the
 * probe/metrics responder (its sockets join the same poll), leader election
 * ticks, and scheduling cycles.  Scheduling starts only when this replica
 * leads (with --leader-elect) and every watched resource has delivered its
 * first list.  SIGTERM/SIGINT stop at a cycle boundary and release the
 * lease; a lost lease stops the process with exit code 1, as kube-scheduler
 * does, so two replicas never schedule at once.
 */
#define _POSIX_C_SOURCE 200809L
#include "../../drivers/kube/kc.h"
#include "../alloc/al.h"
#include "../base/dir.h"
#include "../base/log.h"
#include "../ctrl/ctl_serve.h"
#include "../model/dg.h"
#include "../policy/polgraph.h"
#include "../sched/sch.h"
#include "../sched/sch_http.h"
#include "../sched/sch_shadow.h"
#include "cli.h"
#include "policy_out.h"
#include "flags.h"
#include "objout.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop_requested;
static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

static void usage(FILE *f)
{
    fprintf(f,
        "usage: draengine serve [flags]\n"
        "\n"
        "Run as a Kubernetes scheduler for pods with spec.schedulerName = --scheduler-name:\n"
        "watch ResourceSlices, DeviceClasses, ResourceClaims, ResourceClaimTemplates,\n"
        "DeviceTaintRules, Nodes, Pods and Namespaces; allocate devices exactly as\n"
        "kube-scheduler's DynamicResources plugin does; write claim status and pod bindings.\n"
        "\n"
        "Connection (client-go rules: --kubeconfig alone, else $KUBECONFIG merged, else\n"
        "~/.kube/config, else the in-cluster service account):\n"
        "  --kubeconfig PATH                     kubeconfig file\n"
        "  --context NAME                        kubeconfig context (default: current-context)\n"
        "  --master URL                          API server URL (overrides the kubeconfig)\n"
        "  --kube-api-qps QPS                    write requests per second (default 50)\n"
        "  --kube-api-burst N                    write burst (default 100)\n"
        "  --field-validation Strict|Warn|Ignore fieldValidation of every write (default: the\n"
        "                                        server's, Warn); server warnings are logged\n"
        "  --kube-api-http2[=true|false]         HTTP/2 to the API server instead of HTTP/1.1\n"
        "                                        (default false)\n"
        "\n"
        "Scheduling:\n"
        "  --scheduler-name NAME                 pods to schedule (default draengine)\n"
        "  --feature-gates A=true,B=false        Kubernetes 1.37 feature gates\n"
        "  --pod-initial-backoff DURATION        first retry delay of a failed pod (default 1s, 0s: none)\n"
        "  --pod-max-backoff DURATION            longest retry delay, >= the first (default 10s)\n"
        "  --no-events                           do not write events.k8s.io Events\n"
        "  --parallel-binds N                    pods whose writes (claim status, binding) run at once\n"
        "                                        on worker threads, 1-64 (default 8; 1: one after the\n"
        "                                        other on the scheduler's thread, Events included)\n"
        "  --event-backlog N                     Events left queued while serve binds (an Event waits\n"
        "                                        until no binding has started for 100 ms), 1-1048576\n"
        "                                        (default 4096); past it one Event is written before\n"
        "                                        each binding (1: Events first)\n"
        "  --filter-memo[=true|false]            remember each node's Filter outcome for pods whose\n"
        "                                        claims have one spec (one template) until the node\n"
        "                                        changes (default true; false: every node evaluated\n"
        "                                        for every pod, as kube-scheduler does)\n"
        "  --dra-filter-timeout DURATION         limit of one node's device search (filterTimeout;\n"
        "                                        default 10s, 0s: none; DRASchedulerFilterTimeout)\n"
        "  --dra-binding-timeout DURATION        longest wait in PreBind for device binding conditions\n"
        "                                        (bindingTimeout; default 10m, at least 1s;\n"
        "                                        DRADeviceBindingConditions)\n"
        "\n"
        "Shadow mode (try draengine or a policy revision beside the scheduler you run):\n"
        "  --shadow[=true|false]                 schedule nothing and write nothing: for every pod\n"
        "                                        another scheduler binds, compute what draengine would\n"
        "                                        have decided on the same state; no leader election\n"
        "  --shadow-scheduler NAME               only pods of this schedulerName (default: every\n"
        "                                        scheduler but --scheduler-name)\n"
        "  --shadow-log FILE                     the decision log, JSON lines (default -: stdout)\n"
        "  /metrics: draengine_shadow_decisions_total{outcome=same|same_node|other_node|\n"
        "  infeasible|error|unobserved}, draengine_shadow_agreement_ratio, draengine_shadow_waiting\n"
        "\n"
        "Controllers of kube-controller-manager:\n"
        "  --pool-status-controller[=true|false] answer ResourcePoolStatusRequests (default false;\n"
        "                                        needs DRAResourcePoolStatus)\n"
        "  Pods that the device taint eviction controller deletes for untolerated NoExecute\n"
        "  device taints are reported as Events (DeviceTaintNoExecute) and in /metrics.\n"
        "\n"
        "Policies (Lua, hot-reloaded at cycle boundaries; the last good revision stays\n"
        "active when a reload fails):\n"
        "  --policies DIR, --policy-dir DIR      policies and packs (e.g. a mounted ConfigMap); a revision\n"
        "                                        whose hooks fail on the devices is refused (at start: exit 2)\n"
        "  --policy-watch[=true|false]           reload on inotify events (default true)\n"
        "  --policy-rescan DURATION              content-hash rescan period (default 30s, 0s: off)\n"
        "                                        SIGHUP also reloads\n"
        "\n"
        "Leader election (coordination.k8s.io/v1 Lease):\n"
        "  --leader-elect[=true|false]           elect a leader before scheduling (default true)\n"
        "  --leader-elect-lease-duration D       default 15s\n"
        "  --leader-elect-renew-deadline D       default 10s\n"
        "  --leader-elect-retry-period D         default 2s\n"
        "  --leader-elect-resource-name NAME     default draengine\n"
        "  --leader-elect-resource-namespace NS  default kube-system\n"
        "  --leader-elect-identity ID            default <hostname>_<random>\n"
        "\n"
        "Health and metrics (plain HTTP: /livez, /readyz[?verbose], /readyz/<check>,\n"
        "/healthz, /metrics in the Prometheus text format):\n"
        "  --bind-address IP                     default 0.0.0.0\n"
        "  --port PORT                           default 10251 (0 = any free port)\n"
        "\n"
        "Logging (klog conventions, to stderr):\n"
        "  -v, --v N                             verbosity (default 0; 2 logs every decision)\n"
        "  --logging-format text|json            default text\n"
        "\n"
        "Testing:\n"
        "  --watch-backoff DURATION              first list/watch retry delay (default 800ms, doubling to 30s)\n"
        "  --jitter-seed N                       seed of the backoff jitter (default: from the pid)\n"
        "\n"
        "Durations are Go durations: 500ms, 2s, 1m30s; numbers are decimal or 0x-hex, never\n"
        "negative; a value out of range is refused, naming the flag.  Exit: 0 after SIGTERM/SIGINT,\n"
        "1 when leadership was lost, 2 for bad flags or configuration.\n");
}

typedef struct serve {
    kc_config *cfg;
    kc_client *cl;
    kc_informer *inf;
    kc_lease *lease;
    dg_graph *g;
    al_allocator *al;
    sch_sched *s;
    sch_http *http;
    pol_host *pol;
    ctl_serve *ctl;
    sch_shadow *shadow; /* --shadow: compare, never schedule */
    bool leader_elect;
    uint64_t started;
} serve;

static void on_event(void *ctx, kc_res res, kc_evtype type, json_t *obj)
{
    serve *sv = ctx;
    if (res == KC_RES_POOL_STATUS_REQUESTS) {
        ctl_serve_observe(sv->ctl, type, obj);
        return;
    }
    /* a binding by the shadowed scheduler is evaluated on the state before it */
    if (sv->shadow && res == KC_RES_PODS)
        sch_shadow_pod_event(sv->shadow, type, obj);
    sch_observe(sv->s, res, type, obj);
}

/* API failures become log lines (the kube driver rate-limits them and counts
 * every one for /metrics).  404 and 409 are part of normal operation
 * (deleted objects, optimistic concurrency): info at -v 2; the rest warn. */
static void on_kube_failure(void *ctx, const kc_failure *f)
{
    (void)ctx;
    bool expected = f->code == 404 || f->code == 409;
    if (expected && de_log_verbosity() < 2)
        return;
    char code[24], held[24];
    if (f->code > 0)
        snprintf(code, sizeof code, "%ld", f->code);
    else
        snprintf(code, sizeof code, "<error>");
    snprintf(held, sizeof held, "%llu", (unsigned long long)f->suppressed);
    const char *kv[] = {"resource", f->resource, "verb", f->verb, "code", code,
                        "reason", f->reason, "message", f->message,
                        f->suppressed ? "suppressed" : NULL, held, NULL};
    de_log_kv(expected ? DE_LOG_INFO : DE_LOG_WARN, expected ? 2 : 0, __FILE__, __LINE__,
              "kube API request failed", kv);
}

static void kube_failure_metrics(serve *sv, de_buf *body)
{
    sch_prom_head(body, "draengine_kube_api_failures_total", "counter",
                  "Failed API requests, list pages and watches by resource, verb, status code "
                  "(<error> = no answer) and reason.");
    kc_fail_count f;
    for (size_t i = 0; kc_client_failure(sv->cl, i, &f); i++) {
        char l[256];
        snprintf(l, sizeof l, "resource=\"%s\",verb=\"%s\",code=\"%s\",reason=\"%s\"",
                 f.resource, f.verb, f.code, f.reason);
        sch_prom_sample(body, "draengine_kube_api_failures_total", l, (double)f.count);
    }
    sch_prom_head(body, "draengine_kube_api_failure_logs_suppressed_total", "counter",
                  "API failure log lines held back by the rate limit.");
    sch_prom_sample(body, "draengine_kube_api_failure_logs_suppressed_total", "",
                    (double)kc_client_failures_suppressed(sv->cl));
}

/* ---- /livez /readyz /metrics ------------------------------------------------ */

static bool check(serve *sv, const char *name, const char **why)
{
    if (!strcmp(name, "informer-synced")) {
        *why = "not every watched resource has been listed yet";
        return kc_informer_synced(sv->inf);
    }
    if (!strcmp(name, "policies-loaded")) {
        /* no --policy-dir, or an active revision (the last good one stays
         * active when a reload fails) */
        *why = "policies not loaded";
        return !sv->pol || pol_host_active(sv->pol) != NULL;
    }
    *why = "unknown check";
    return false;
}

static int on_http(void *ctx, const char *method, const char *path, const char *query,
                   de_buf *body, const char **ctype)
{
    serve *sv = ctx;
    (void)method;
    bool verbose = strstr(query, "verbose") != NULL;
    if (!strcmp(path, "/livez") || !strcmp(path, "/healthz")) {
        de_buf_puts(body, verbose ? "[+]ping ok\nlivez check passed\n" : "ok");
        return 200;
    }
    static const char *const checks[] = {"informer-synced", "policies-loaded"};
    if (!strncmp(path, "/readyz/", 8)) {
        const char *why;
        for (size_t i = 0; i < DE_ARRAY_LEN(checks); i++)
            if (!strcmp(path + 8, checks[i])) {
                bool ok = check(sv, checks[i], &why);
                de_buf_printf(body, ok ? "ok" : "[-]%s failed: %s\n", checks[i], why);
                return ok ? 200 : 500;
            }
        de_buf_puts(body, "no such check\n");
        return 404;
    }
    if (!strcmp(path, "/readyz")) {
        bool all = true;
        for (size_t i = 0; i < DE_ARRAY_LEN(checks); i++) {
            const char *why;
            bool ok = check(sv, checks[i], &why);
            all &= ok;
            if (verbose) {
                if (ok)
                    de_buf_printf(body, "[+]%s ok\n", checks[i]);
                else
                    de_buf_printf(body, "[-]%s failed: %s\n", checks[i], why);
            }
        }
        if (verbose) {
            /* informational: a follower is ready, it just does not schedule */
            de_buf_printf(body, "[+]leader %s\n",
                          !sv->leader_elect ? "ok (leader election disabled)"
                          : kc_lease_is_leader(sv->lease) ? "ok (leading)"
                                                          : "ok (following)");
            de_buf_printf(body, "readyz check %s\n", all ? "passed" : "failed");
        } else {
            de_buf_puts(body, all ? "ok" : "not ready");
        }
        return all ? 200 : 500;
    }
    if (!strcmp(path, "/metrics")) {
        *ctype = "text/plain; version=0.0.4; charset=utf-8";
        sch_metrics(sv->s, body);
        ctl_serve_metrics(sv->ctl, body);
        if (sv->shadow)
            sch_shadow_metrics(sv->shadow, body);
        kc_stats ks;
        kc_client_stats(sv->cl, &ks);
        static const char *const cls[] = {"error", "1xx", "2xx", "3xx", "4xx", "5xx"};
        sch_prom_head(body, "draengine_kube_api_requests_total", "counter",
                      "Requests to the API server by status class (error = transport failure).");
        for (int i = 0; i < 6; i++) {
            char l[32];
            snprintf(l, sizeof l, "code=\"%s\"", cls[i]);
            sch_prom_sample(body, "draengine_kube_api_requests_total", l, (double)ks.by_code[i]);
        }
        sch_prom_head(body, "draengine_kube_api_errors_total", "counter",
                      "API answers draengine had to handle, by kind.");
        sch_prom_sample(body, "draengine_kube_api_errors_total", "kind=\"conflict\"", (double)ks.conflicts);
        sch_prom_sample(body, "draengine_kube_api_errors_total", "kind=\"throttled\"", (double)ks.throttled);
        sch_prom_sample(body, "draengine_kube_api_errors_total", "kind=\"unauthorized\"", (double)ks.unauthorized);
        sch_prom_sample(body, "draengine_kube_api_errors_total", "kind=\"transport\"", (double)ks.by_code[0]);
        sch_prom_head(body, "draengine_kube_api_warnings_total", "counter",
                      "Warning headers from the API server (each is logged).");
        sch_prom_sample(body, "draengine_kube_api_warnings_total", "", (double)ks.warnings);
        sch_prom_head(body, "draengine_kube_api_retries_total", "counter", "Requests retried.");
        sch_prom_sample(body, "draengine_kube_api_retries_total", "", (double)ks.retries);
        sch_prom_head(body, "draengine_kube_watch_restarts_total", "counter",
                      "Watches re-established after an end, a drop or an error.");
        sch_prom_sample(body, "draengine_kube_watch_restarts_total", "", (double)ks.watch_restarts);
        sch_prom_head(body, "draengine_kube_relists_total", "counter", "Relists after 410 Gone.");
        sch_prom_sample(body, "draengine_kube_relists_total", "", (double)ks.relists);
        sch_prom_head(body, "draengine_kube_rate_limited_seconds_total", "counter",
                      "Time writes waited for the client-side rate limiter.");
        sch_prom_sample(body, "draengine_kube_rate_limited_seconds_total", "",
                        (double)ks.rate_limited_ns / 1e9);
        kube_failure_metrics(sv, body);
        if (sv->pol) {
            pol_host_stats ps;
            pol_host_get_stats(sv->pol, &ps);
            sch_prom_head(body, "draengine_policy_reloads_total", "counter",
                          "Policy reloads by result (failed = the previous revision stayed active).");
            sch_prom_sample(body, "draengine_policy_reloads_total", "result=\"ok\"", (double)ps.reloads_ok);
            sch_prom_sample(body, "draengine_policy_reloads_total", "result=\"failed\"", (double)ps.reloads_failed);
            sch_prom_head(body, "draengine_policy_active_revision", "gauge",
                          "The active policy revision (SHA-256 of the set).");
            char l[128];
            snprintf(l, sizeof l, "revision=\"%.64s\"", ps.revision);
            sch_prom_sample(body, "draengine_policy_active_revision", l, 1);
        }
        sch_prom_head(body, "draengine_leader", "gauge", "1 while this replica leads.");
        sch_prom_sample(body, "draengine_leader", "",
                        (!sv->leader_elect || kc_lease_is_leader(sv->lease)) ? 1 : 0);
        return 200;
    }
    de_buf_puts(body, "404 page not found\n");
    return 404;
}

/* ---- main -------------------------------------------------------------------- */

static void default_identity(char *buf, size_t cap)
{
    char host[256] = "draengine";
    gethostname(host, sizeof host - 1);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t r = (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 20) ^ (uint64_t)ts.tv_sec;
    r = de_hash_u64(r);
    snprintf(buf, cap, "%s_%016llx", host, (unsigned long long)r);
}

enum {
    O_KUBECONFIG = 256, O_CONTEXT, O_MASTER, O_QPS, O_BURST, O_SCHEDNAME, O_GATES, O_IBACKOFF,
    O_MBACKOFF, O_NOEVENTS, O_LE, O_LE_LEASE, O_LE_RENEW, O_LE_RETRY, O_LE_NAME, O_LE_NS,
    O_LE_ID, O_BIND, O_PORT, O_LOGFMT, O_WBACKOFF, O_JITTER, O_POLDIR, O_POLWATCH, O_POLRESCAN,
    O_FIELDVAL, O_POOLSTATUS, O_FILTERTIMEOUT, O_BINDTIMEOUT, O_PARBINDS, O_EVBACKLOG, O_SHADOW, O_SHADOW_OF, O_SHADOW_LOG,
    O_HTTP2, O_FILTERMEMO,
};

/* What a walk of the policy directory skipped, as a log line. */
static void notice_to_log(void *ctx, const char *path, const char *what)
{
    (void)ctx;
    const char *kv[] = {"path", path, NULL};
    de_log_kv(DE_LOG_WARN, 0, __FILE__, __LINE__, what, kv);
}

/* "--name" of a long option, for messages. */
static const char *flag_name(const struct option *opts, int val)
{
    static char buf[64];
    for (const struct option *o = opts; o->name; o++)
        if (o->val == val) {
            snprintf(buf, sizeof buf, "--%s", o->name);
            return buf;
        }
    return "flag";
}

/* Relations between durations, checked with the defaults filled in (so
 * `--pod-initial-backoff 20s` alone is refused against the 10s maximum):
 * kube-scheduler's podMaxBackoff >= podInitialBackoff, and client-go's
 * leaseDuration > renewDeadline > retryPeriod x 1.2 (its jitter factor). */
static bool check_periods(sch_opts *so, const kc_lease_opts *lo, bool ibackoff_set, bool mbackoff_set)
{
    if (ibackoff_set || mbackoff_set) {
        if (!ibackoff_set)
            so->backoff_initial_ns = SCH_BACKOFF_INITIAL_NS;
        if (!mbackoff_set)
            so->backoff_max_ns = SCH_BACKOFF_MAX_NS;
        so->backoff_explicit = true;
    }
    if (so->backoff_explicit && so->backoff_initial_ns > so->backoff_max_ns) {
        char a[48], b[48];
        cli_format_duration(so->backoff_initial_ns, a, sizeof a);
        cli_format_duration(so->backoff_max_ns, b, sizeof b);
        cli_errorf("serve", "--pod-initial-backoff (%s%s) is longer than --pod-max-backoff (%s%s)", a,
                   ibackoff_set ? "" : ", the default", b, mbackoff_set ? "" : ", the default");
        return false;
    }
    uint64_t lease = lo->lease_ns ? lo->lease_ns : 15000000000ull;
    uint64_t renew = lo->renew_deadline_ns ? lo->renew_deadline_ns : 10000000000ull;
    uint64_t retry = lo->retry_ns ? lo->retry_ns : 2000000000ull;
    if (renew >= lease) {
        cli_errorf("serve", "--leader-elect-renew-deadline must be shorter than --leader-elect-lease-duration");
        return false;
    }
    if ((double)renew <= (double)retry * 1.2) {
        cli_errorf("serve", "--leader-elect-renew-deadline must be longer than 1.2 x "
                            "--leader-elect-retry-period (the retry jitter)");
        return false;
    }
    return true;
}

/* The verdict on the first revision (policy_out.h); refused, serve stops:
 * there is no earlier revision to keep. */
static bool serve_judge_policies(const pol_host *h, const char *dir)
{
    pol_verdict v;
    bool ok = pol_host_judge(h, &v);
    if (!ok) {
        char sum[2048];
        pol_verdict_summary(&v, sum, sizeof sum);
        DE_ERROR("--policy-dir %s: %s; no earlier revision to keep, stopping", dir, sum);
        cli_verdict_log(&v);
    }
    pol_verdict_free(&v);
    return ok;
}

int cli_cmd_serve(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"kubeconfig", required_argument, NULL, O_KUBECONFIG},
        {"context", required_argument, NULL, O_CONTEXT},
        {"master", required_argument, NULL, O_MASTER},
        {"kube-api-qps", required_argument, NULL, O_QPS},
        {"kube-api-burst", required_argument, NULL, O_BURST},
        {"field-validation", required_argument, NULL, O_FIELDVAL},
        {"scheduler-name", required_argument, NULL, O_SCHEDNAME},
        {"feature-gates", required_argument, NULL, O_GATES},
        {"pod-initial-backoff", required_argument, NULL, O_IBACKOFF},
        {"pod-max-backoff", required_argument, NULL, O_MBACKOFF},
        {"no-events", no_argument, NULL, O_NOEVENTS},
        {"filter-memo", optional_argument, NULL, O_FILTERMEMO},
        {"kube-api-http2", optional_argument, NULL, O_HTTP2},
        {"leader-elect", optional_argument, NULL, O_LE},
        {"leader-elect-lease-duration", required_argument, NULL, O_LE_LEASE},
        {"leader-elect-renew-deadline", required_argument, NULL, O_LE_RENEW},
        {"leader-elect-retry-period", required_argument, NULL, O_LE_RETRY},
        {"leader-elect-resource-name", required_argument, NULL, O_LE_NAME},
        {"leader-elect-resource-namespace", required_argument, NULL, O_LE_NS},
        {"leader-elect-identity", required_argument, NULL, O_LE_ID},
        {"bind-address", required_argument, NULL, O_BIND},
        {"port", required_argument, NULL, O_PORT},
        {"v", required_argument, NULL, 'v'},
        {"logging-format", required_argument, NULL, O_LOGFMT},
        {"watch-backoff", required_argument, NULL, O_WBACKOFF},
        {"jitter-seed", required_argument, NULL, O_JITTER},
        {"policy-dir", required_argument, NULL, O_POLDIR},
        {"policies", required_argument, NULL, O_POLDIR},
        {"policy-watch", optional_argument, NULL, O_POLWATCH},
        {"policy-rescan", required_argument, NULL, O_POLRESCAN},
        {"pool-status-controller", optional_argument, NULL, O_POOLSTATUS},
        {"dra-filter-timeout", required_argument, NULL, O_FILTERTIMEOUT},
        {"shadow", optional_argument, NULL, O_SHADOW},
        {"shadow-scheduler", required_argument, NULL, O_SHADOW_OF},
        {"shadow-log", required_argument, NULL, O_SHADOW_LOG},
        {"dra-binding-timeout", required_argument, NULL, O_BINDTIMEOUT},
        {"parallel-binds", required_argument, NULL, O_PARBINDS},
        {"event-backlog", required_argument, NULL, O_EVBACKLOG},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    kc_config_opts co = {0};
    kc_client_opts clo = {.qps = 50, .burst = 100};
    kc_lease_opts lo = {.ns = "kube-system", .name = "draengine"};
    sch_opts so = {.parallel_binds = 8};
    de_gates gates;
    de_gates_default(&gates);
    bool leader_elect = true, shadow = false;
    const char *shadow_of = NULL, *shadow_log = "-";
    const char *bind = "0.0.0.0";
    long port = 10251;
    uint64_t wbackoff = 0, jitter = 0, rescan = 30000000000ull;
    const char *policy_dir = NULL;
    bool policy_watch = true, ibackoff_set = false, mbackoff_set = false;
    bool pool_status = false, filter_timeout_set = false;
    uint64_t filter_timeout = 0;
    char ident[320] = "";
    de_err e;
    de_err_clear(&e);
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "v:h", longopts, NULL)) != -1) {
        uint64_t d, n;
        switch (c) {
        case O_KUBECONFIG: co.kubeconfig = optarg; break;
        case O_CONTEXT: co.context = optarg; break;
        case O_MASTER: co.master = optarg; break;
        case O_QPS:
            if (!cli_flag_real("serve", "--kube-api-qps", optarg, 0, true, 1e6, &clo.qps))
                return CLI_EXIT_INVALID;
            break;
        case O_BURST:
            if (!cli_flag_u64("serve", "--kube-api-burst", optarg, 1, 1000000, &n))
                return CLI_EXIT_INVALID;
            clo.burst = (int)n;
            break;
        case O_FIELDVAL:
            if (strcmp(optarg, "Strict") && strcmp(optarg, "Warn") && strcmp(optarg, "Ignore")) {
                cli_errorf("serve", "--field-validation: \"%s\" is not Strict, Warn or Ignore", optarg);
                return CLI_EXIT_INVALID;
            }
            clo.field_validation = optarg;
            break;
        case O_SCHEDNAME: so.scheduler_name = optarg; break;
        case O_GATES:
            if (de_gates_parse(&gates, optarg, &e) != DE_OK) {
                cli_errorf("serve", "--feature-gates: %s", e.msg);
                return CLI_EXIT_INVALID;
            }
            break;
        case O_IBACKOFF:
        case O_MBACKOFF:
        case O_LE_LEASE:
        case O_LE_RENEW:
        case O_LE_RETRY:
        case O_WBACKOFF: {
            /* a pod backoff of 0s means none (kube-scheduler's podMaxBackoff 0);
             * the others are periods and must be positive */
            bool backoff = c == O_IBACKOFF || c == O_MBACKOFF;
            if (!cli_flag_duration("serve", flag_name(longopts, c), optarg, backoff ? 0 : 1,
                                   CLI_DURATION_MAX, &d))
                return CLI_EXIT_INVALID;
            if (c == O_IBACKOFF) so.backoff_initial_ns = d, ibackoff_set = true;
            else if (c == O_MBACKOFF) so.backoff_max_ns = d, mbackoff_set = true;
            else if (c == O_LE_LEASE) lo.lease_ns = d;
            else if (c == O_LE_RENEW) lo.renew_deadline_ns = d;
            else if (c == O_LE_RETRY) lo.retry_ns = d;
            else wbackoff = d;
            break;
        }
        case O_NOEVENTS: so.no_events = true; break;
        case O_FILTERMEMO: {
            bool on = true;
            if (!cli_flag_bool("serve", "--filter-memo", optarg, &on))
                return CLI_EXIT_INVALID;
            so.no_filter_memo = !on;
            break;
        }
        case O_HTTP2:
            if (!cli_flag_bool("serve", "--kube-api-http2", optarg, &clo.http2))
                return CLI_EXIT_INVALID;
            break;
        case O_POOLSTATUS:
            if (!cli_flag_bool("serve", "--pool-status-controller", optarg, &pool_status))
                return CLI_EXIT_INVALID;
            break;
        case O_BINDTIMEOUT:
            if (!cli_flag_duration("serve", "--dra-binding-timeout", optarg, 1000000000ull, CLI_DURATION_MAX,
                                   &so.binding_timeout_ns))
                return CLI_EXIT_INVALID;
            break;
        case O_PARBINDS:
            if (!cli_flag_u64("serve", "--parallel-binds", optarg, 1, 64, &n))
                return CLI_EXIT_INVALID;
            so.parallel_binds = (unsigned)n;
            break;
        case O_EVBACKLOG:
            if (!cli_flag_u64("serve", "--event-backlog", optarg, 1, 1048576, &n))
                return CLI_EXIT_INVALID;
            so.event_backlog = (uint32_t)n;
            break;
        case O_FILTERTIMEOUT:
            if (!cli_flag_duration("serve", "--dra-filter-timeout", optarg, 0, CLI_DURATION_MAX, &filter_timeout))
                return CLI_EXIT_INVALID;
            filter_timeout_set = true;
            break;
        case O_POLDIR: policy_dir = optarg; break;
        case O_SHADOW:
            if (!cli_flag_bool("serve", "--shadow", optarg, &shadow))
                return CLI_EXIT_INVALID;
            break;
        case O_SHADOW_OF: shadow_of = optarg; break;
        case O_SHADOW_LOG: shadow_log = optarg; break;
        case O_POLWATCH:
            if (!cli_flag_bool("serve", "--policy-watch", optarg, &policy_watch))
                return CLI_EXIT_INVALID;
            break;
        case O_POLRESCAN: /* 0 turns the rescan off */
            if (!cli_flag_duration("serve", "--policy-rescan", optarg, 0, CLI_DURATION_MAX, &rescan))
                return CLI_EXIT_INVALID;
            break;
        case O_LE:
            if (!cli_flag_bool("serve", "--leader-elect", optarg, &leader_elect))
                return CLI_EXIT_INVALID;
            break;
        case O_LE_NAME: lo.name = optarg; break;
        case O_LE_NS: lo.ns = optarg; break;
        case O_LE_ID: snprintf(ident, sizeof ident, "%s", optarg); break;
        case O_BIND: bind = optarg; break;
        case O_PORT:
            if (!cli_flag_u64("serve", "--port", optarg, 0, 65535, &n))
                return CLI_EXIT_INVALID;
            port = (long)n;
            break;
        case 'v':
            /* -v alone is level 1, as on every command: a flag taken as
             * its value goes back to be read as a flag */
            if (optarg[0] == '-' && optarg[1] && optind > 1 && argv[optind - 1] == optarg) {
                optind--;
                de_log_set_verbosity(1);
                break;
            }
            if (!cli_flag_u64("serve", "-v", optarg, 0, 10, &n))
                return CLI_EXIT_INVALID;
            de_log_set_verbosity((int)n);
            break;
        case O_LOGFMT:
            if (strcmp(optarg, "text") && strcmp(optarg, "json")) {
                cli_errorf("serve", "--logging-format: \"%s\" (want text or json)", optarg);
                return CLI_EXIT_INVALID;
            }
            de_log_set_format_json(!strcmp(optarg, "json"));
            break;
        case O_JITTER:
            if (!cli_flag_u64("serve", "--jitter-seed", optarg, 0, UINT64_MAX, &jitter))
                return CLI_EXIT_INVALID;
            break;
        case 'h':
            usage(stdout);
            return CLI_EXIT_OK;
        default:
            return cli_unknown_flag("serve", argv, usage);
        }
    }
    if (cli_operands_left("serve", argc, argv))
        return CLI_EXIT_INVALID;
    if (!check_periods(&so, &lo, ibackoff_set, mbackoff_set))
        return CLI_EXIT_INVALID;
    if (filter_timeout_set && !gates.on[DE_GATE_SCHEDULER_FILTER_TIMEOUT]) {
        /* kube-scheduler refuses filterTimeout with the gate off (its typo kept) */
        cli_errorf("serve", "--dra-filter-timeout: Forbidden: DRASchedulingFilterTimeout feature gate is disabled");
        return CLI_EXIT_INVALID;
    }
    if (so.binding_timeout_ns &&
        !(gates.on[DE_GATE_DEVICE_BINDING_CONDITIONS] && gates.on[DE_GATE_RESOURCE_CLAIM_DEVICE_STATUS])) {
        /* kube-scheduler's validation of bindingTimeout */
        cli_errorf("serve", "--dra-binding-timeout: Forbidden: DRADeviceBindingConditions or "
                            "DRAResourceClaimDeviceStatus feature gate is disabled");
        return CLI_EXIT_INVALID;
    }
    if (pool_status && !gates.on[DE_GATE_RESOURCE_POOL_STATUS]) {
        cli_errorf("serve", "--pool-status-controller needs the DRAResourcePoolStatus feature gate "
                            "(kube-controller-manager runs that controller only with it)");
        return CLI_EXIT_INVALID;
    }
    if (!ident[0])
        default_identity(ident, sizeof ident);
    lo.identity = ident;
    so.identity = ident;
    char ua[400];
    snprintf(ua, sizeof ua, "draengine/0.1.0 (%s)", ident);
    clo.user_agent = ua;

    if (shadow)
        leader_elect = false; /* a shadow takes no lease: it must not stand in the way of the scheduler */
    de_notice_sink(notice_to_log, NULL);
    serve sv = {0};
    FILE *shadow_file = NULL;
    sv.leader_elect = leader_elect;
    sv.started = de_now_ns();
    if (kc_config_load(&co, &sv.cfg, &e) != DE_OK) {
        cli_errorf("serve", "%s", e.msg);
        return CLI_EXIT_INVALID;
    }
    de_buf desc;
    de_buf_init(&desc, 16384);
    kc_config_describe(sv.cfg, &desc);
    DE_INFO(0, "draengine serve starting: %s identity=%s scheduler-name=%s", de_buf_str(&desc),
            ident, so.scheduler_name ? so.scheduler_name : "draengine");
    de_buf_free(&desc);

    int rc = CLI_EXIT_OK;
    sv.cl = kc_client_new(sv.cfg, &clo);
    kc_client_set_failure_fn(sv.cl, on_kube_failure, &sv);
    dg_opts gopts = {0};
    gopts.gates = &gates;
    gopts.no_pod_text = true; /* nothing in serve reads a pod's text */
    sv.g = dg_new(NULL, &gopts);
    al_opts ao = {0};
    ao.gates = gates;
    ao.filter_timeout_ns = filter_timeout;
    ao.filter_timeout_set = filter_timeout_set;
    ao.binding_timeout_ns = so.binding_timeout_ns;
    sv.al = al_new(sv.g, &ao, &e);
    if (!sv.al) {
        cli_errorf("serve", "allocator: %s", e.msg);
        rc = CLI_EXIT_INTERNAL;
        goto out;
    }
    so.workload_claims = gates.on[DE_GATE_WORKLOAD_RESOURCE_CLAIMS];
    so.generic_workload = gates.on[DE_GATE_GENERIC_WORKLOAD];
    so.pre_queueing_hints = gates.on[DE_GATE_PRE_QUEUEING_HINTS];
    so.pop_from_backoff = gates.on[DE_GATE_POP_FROM_BACKOFF_Q];
    /* in shadow mode the scheduler has no client: nothing it could decide
     * would ever be written (and it is never run: sch_shadow decides) */
    sv.s = sch_new(sv.g, sv.al, shadow ? NULL : sv.cl, &so);
    if (shadow) {
        FILE *lf = stdout;
        if (strcmp(shadow_log, "-") && !(lf = fopen(shadow_log, "a"))) {
            cli_errorf("serve", "--shadow-log %s: %s", shadow_log, strerror(errno));
            rc = CLI_EXIT_INVALID;
            goto out;
        }
        sch_shadow_opts sho = {.own_name = so.scheduler_name ? so.scheduler_name : "draengine", .of = shadow_of,
                               .log = lf};
        sv.shadow = sch_shadow_new(sv.g, sv.al, &sho);
        shadow_file = lf != stdout ? lf : NULL;
        DE_INFO(0, "shadow mode: comparing the bindings of %s; nothing is written to the cluster",
                shadow_of && *shadow_of ? shadow_of : "every other scheduler");
    }
    ctl_serve_opts cso = {.pool_status = pool_status, .no_events = so.no_events, .identity = ident};
    sv.ctl = ctl_serve_new(sv.g, sv.cl, &gates, &cso);
    if (policy_dir) {
        pol_host_opts po;
        pol_host_opts_default(&po);
        po.cfg.log = pol_log_to_engine;
        po.watch = policy_watch;
        po.rescan_ns = rescan;
        if (pol_host_new(policy_dir, sv.g, &po, &sv.pol, &e) != DE_OK) {
            cli_errorf("serve", "--policy-dir: %s", e.msg);
            rc = CLI_EXIT_INVALID;
            goto out;
        }
        pol_host_install_sighup();
        al_hooks h;
        pol_host_al_hooks(sv.pol, &h);
        al_set_hooks(sv.al, &h);
        sch_set_hooks(sv.s, &h);
        pol_host_stats ps;
        pol_host_get_stats(sv.pol, &ps);
        DE_INFO(0, "policies loaded from %s: revision %.16s", policy_dir, ps.revision);
        if (sv.shadow)
            sch_shadow_set_revision(sv.shadow, ps.revision);
    }
    sv.http = sch_http_new(bind, (int)port, on_http, &sv, &e);
    if (!sv.http) {
        cli_errorf("serve", "%s", e.msg);
        rc = CLI_EXIT_INVALID;
        goto out;
    }
    DE_INFO(0, "serving /livez /readyz /metrics on %s:%d", bind, sch_http_port(sv.http));
    {
        /* The port actually bound, for tools that asked for port 0. */
        char pbuf[32];
        snprintf(pbuf, sizeof pbuf, "%d", sch_http_port(sv.http));
        const char *kv[] = {"port", pbuf, NULL};
        de_log_kv(DE_LOG_INFO, 0, __FILE__, __LINE__, "listening", kv);
    }
    kc_informer_opts io = {0};
    for (int i = 0; i < KC_RES_COUNT; i++)
        io.want[i] = true;
    /* PodGroups (KEP-5729) exist only where the workload APIs are served. */
    io.want[KC_RES_PODGROUPS] = gates.on[DE_GATE_GENERIC_WORKLOAD];
    /* the v1alpha3 API is served only where the alpha is switched on */
    io.want[KC_RES_POOL_STATUS_REQUESTS] = pool_status;
    io.backoff_initial_ns = wbackoff;
    io.jitter_seed = jitter;
    sv.inf = kc_informer_new(sv.cl, &io, on_event, &sv);
    kc_informer_set_skip(sv.inf, KC_RES_CLAIMS, sch_skip_event, sv.s);
    if (leader_elect)
        sv.lease = kc_lease_new(sv.cl, &lo);

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    bool was_synced = false, was_leader = false, policy_judged = false;
    while (!stop_requested) {
        struct pollfd pfd[40];
        kc_waitfd wf[40];
        unsigned n = sch_http_fds(sv.http, pfd, DE_ARRAY_LEN(pfd) - 1); /* one left for sch_bind_fd */
        for (unsigned i = 0; i < n; i++)
            wf[i] = (kc_waitfd){pfd[i].fd, pfd[i].events, 0};
        if (sch_bind_fd(sv.s) >= 0) /* a binding job ended */
            wf[n++] = (kc_waitfd){sch_bind_fd(sv.s), POLLIN, 0};
        uint64_t due = sch_next_due_ns(sv.s);
        if (was_synced && (!sv.lease || was_leader)) /* only the leader's controllers act */
            due = DE_MIN(due, ctl_serve_next_due_ns(sv.ctl));
        if (sv.lease)
            due = DE_MIN(due, kc_lease_next_due_ns(sv.lease));
        int timeout = due == UINT64_MAX ? 200 : (int)DE_MIN(due / 1000000ull, 200);
        kc_informer_poll(sv.inf, timeout, wf, n);
        sch_http_process(sv.http);
        bool leader = true, may_write = true;
        if (sv.lease) {
            bool lost = false;
            leader = kc_lease_tick(sv.lease, &lost);
            if (lost) {
                DE_ERROR("leader election lost: could not renew the lease within the renew deadline");
                rc = 1;
                break;
            }
            if (leader != was_leader)
                DE_INFO(0, "%s", leader ? "became leader" : "waiting to become leader");
            was_leader = leader;
            /* past the renew deadline of the last renewal nothing is
             * written, even before the loss is declared (binding workers
             * check it themselves: this loop may be stuck in a renewal) */
            uint64_t until = kc_lease_valid_until(sv.lease);
            sch_set_write_deadline(sv.s, until);
            may_write = de_now_ns() < until;
        }
        if (sv.pol) {
            /* cycle boundary: facts of changed devices, and reloads */
            pol_cycle pc;
            memset(&pc, 0, sizeof pc);
            pol_host_cycle(sv.pol, &pc);
            if (pc.swapped) {
                al_hooks h;
                pol_host_al_hooks(sv.pol, &h);
                al_set_hooks(sv.al, &h);
                sch_set_hooks(sv.s, &h);
                pol_host_stats ps;
                pol_host_get_stats(sv.pol, &ps);
                DE_INFO(0, "policies reloaded: revision %.16s (%u devices changed)", ps.revision,
                        pc.swap_changed);
                if (sv.shadow)
                    sch_shadow_set_revision(sv.shadow, ps.revision);
            }
            if (pc.failed)
                DE_ERROR("policy reload refused, previous revision stays active: %s", pc.err.msg);
        }
        bool synced = kc_informer_synced(sv.inf);
        if (synced && !was_synced) {
            dg_stats gs;
            dg_get_stats(sv.g, &gs);
            DE_INFO(0, "informers synced: %u nodes, %u slices, %u devices, %u classes, %u claims, %u pods",
                    gs.nodes, gs.slices, gs.devices, gs.classes, gs.claims, gs.pods);
        }
        if (synced && sv.pol && !policy_judged) {
            /* the first revision is judged on the cluster's devices, as
             * every reload and every other command judges one */
            policy_judged = true;
            if (!serve_judge_policies(sv.pol, policy_dir)) {
                rc = CLI_EXIT_INVALID;
                break;
            }
        }
        was_synced = synced;
        if (sv.shadow) {
            if (synced)
                sch_shadow_cycle(sv.shadow);
        } else if (leader && may_write && synced) {
            sch_run(sv.s, 50000000ull);
            ctl_serve_run(sv.ctl);
        }
    }
    if (stop_requested)
        DE_INFO(0, "shutting down");
    /* the binding jobs in flight end before the lease goes; after a lost
     * lease their requests not started yet are not sent */
    sch_bind_finish(sv.s, rc != CLI_EXIT_OK);
    if (sv.lease && rc == CLI_EXIT_OK)
        kc_lease_release(sv.lease);
out:
    kc_lease_free(sv.lease);
    kc_informer_free(sv.inf);
    sch_http_free(sv.http);
    ctl_serve_free(sv.ctl);
    sch_free(sv.s);
    al_free(sv.al);
    sch_shadow_free(sv.shadow);
    if (shadow_file)
        fclose(shadow_file);
    pol_host_free(sv.pol); /* before the graph: it clears what it published */
    dg_free(sv.g);
    kc_client_free(sv.cl);
    kc_config_free(sv.cfg);
    return rc;
}
