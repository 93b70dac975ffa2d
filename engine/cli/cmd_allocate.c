/*
 * cmd_allocate.c - `draengine allocate`: offline allocation from manifests.
 *
 *   draengine allocate -f PATH... [--node NAME] [--feature-gates A=true,...]
 *                      [--policies DIR] [--max-search-steps N] [--seed N]
 *                      [-o json|yaml|table] [--watch]
 *
 * With --node: upstream's Allocate for one pod on that node - every pending
 * claim of the input (claims without status.allocation, input order)
 * together, all-or-nothing.  Exit 0 and a List of those claims with
 * status.allocation; exit 1 when they cannot be satisfied there (the reason on
 * stderr); exit 2 for invalid input or a hard allocation error (upstream's
 * message on stderr).
 *
 * Without --node: every Pod of the input that references claims, in input
 * order, is scheduled like kube-scheduler would (al_schedule_pod): a node is
 * chosen among the input's Nodes and the pod's claims are allocated there;
 * each allocation is visible to the next pod.  Exit 0 when every pod found a
 * node, 1 when some did not (each reason on stderr), 2 for invalid input.
 *
 * With --policies the output says which policy revision decided: a header
 * line over the table, and the annotation draengine.dev/policy-revision on
 * every allocated claim of the List.  Without --policies the output is
 * exactly the upstream-shaped one the conformance vectors check.
 *
 * --watch (alloc_watch.c) runs cli_allocate_run again on every change.
 */
#include "alloc_plan.h"
#include "cli.h"
#include "flags.h"
#include "objout.h"
#include "policy_out.h"
#include "../alloc/al.h"
#include "../base/buf.h"
#include "../base/doc.h"
#include "../base/gates.h"
#include "../base/log.h"
#include "../base/map.h"
#include "../base/quantity.h"
#include "../model/dg.h"
#include "../policy/polgraph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { OUT_JSON = CLI_OUT_JSON, OUT_YAML = CLI_OUT_YAML, OUT_TABLE = CLI_OUT_TABLE };

/* How a run reports: the format, the policy revision that decided (NULL
 * without --policies: then the output is exactly the upstream-shaped one),
 * whether to print, and where to record the plan (--watch). */
typedef struct runctx {
    int fmt;
    const char *revision;
    const char *policies;
    uint32_t npolicies;
    bool print;
    cli_plan *rec;
} runctx;

static void usage(FILE *o)
{
    fprintf(o,
            "usage: draengine allocate -f PATH... [--node NAME] [--feature-gates A=true,...]\n"
            "                          [--policies DIR] [--max-search-steps N] [--seed N]\n"
            "                          [--dra-filter-timeout D] [-o json|yaml|table] [--watch]\n\n"
            "Allocate pending ResourceClaims offline, with kube-scheduler 1.37 semantics.\n\n"
            "  -f, --filename PATH   manifests (file, directory, or - for stdin); repeatable\n"
            "  --node NAME           allocate every pending claim together for one pod on NAME\n"
            "                        (exit 0 allocated, 1 cannot be satisfied, 2 invalid input)\n"
            "                        without --node: schedule every Pod that references claims,\n"
            "                        in input order, choosing a node among the input's Nodes\n"
            "  --feature-gates SPEC  Kubernetes feature gates (1.37 defaults), e.g.\n"
            "                        DRAListTypeAttributes=true,DRAConsumableCapacity=false\n"
            "  --policies DIR        load Lua policies (derived attributes, groups, scores);\n"
            "                        --policy-dir is the same flag.  A revision whose hooks fail\n"
            "                        on the input's devices is refused (exit 2, the failures on\n"
            "                        stderr); with --watch the last good revision stays\n"
            "  --validate MODE       warn (default): report objects the API server would refuse\n"
            "                        and allocate anyway, as the scheduler works on what it gets;\n"
            "                        strict: refuse them (exit 2); none: no checks\n"
            "  --max-search-steps N  per-node search budget (default %u)\n"
            "  --dra-filter-timeout D  wall-clock limit of one node's search, kube-scheduler's\n"
            "                        filterTimeout (default 10s, 0s: none; DRASchedulerFilterTimeout)\n"
            "  --seed N              seed for generated shareIDs (default 0)\n"
            "  -o, --output FORMAT   json (default), yaml, or table; without --node the List\n"
            "                        holds the claims and the pods (bound, or PodScheduled=False)\n"
            "  -w, --watch           keep running: print the plan, then re-plan from scratch on\n"
            "                        every change of the manifests (and of --policies DIR) and\n"
            "                        print what changed in the decisions; -o json prints one\n"
            "                        JSON document per plan (JSON lines), -o yaml one YAML\n"
            "                        document. SIGINT/SIGTERM end it with exit 0.\n"
            "  -v                    log verbosity (-v 2, -v=2); policy statistics at the end\n"
            "  -h, --help            this help\n"
            "With --policies, each allocated claim is annotated " CLI_POLICY_REVISION_ANNOTATION "\n"
            "(the policy set's SHA-256) and the table starts with the revision.\n",
            AL_DEFAULT_MAX_STEPS);
}

/* ---- output ---------------------------------------------------------------------- */

static int print_doc(json_t *doc, int fmt)
{
    if (fmt == OUT_YAML) {
        de_err e;
        de_err_clear(&e);
        if (cli_yaml_write(stdout, "", doc, CLI_PLAN_YAML_MAX, &e) != DE_OK) {
            cli_errorf("allocate", "%s", e.msg);
            return CLI_EXIT_INTERNAL;
        }
        return 0;
    }
    char *s = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    if (!s)
        return CLI_EXIT_INTERNAL;
    puts(s);
    free(s);
    return 0;
}

/* Attribute names a CEL selector reads: device.attributes["dom"].id or
 * device.attributes["dom"]["id"]. */
static void selector_attrs(de_interner *in, const char *s, uint32_t *out, uint32_t *n, uint32_t cap)
{
    const char *p = s;
    while ((p = strstr(p, "attributes[")) && *n < cap) {
        p += strlen("attributes[");
        char q = *p;
        if (q != '"' && q != '\'')
            continue;
        const char *d0 = ++p;
        while (*p && *p != q)
            p++;
        if (!*p)
            break;
        size_t dl = (size_t)(p - d0);
        p++;
        if (*p != ']')
            continue;
        p++;
        const char *i0, *i1;
        if (*p == '.') {
            i0 = ++p;
            if (*p == '?')
                i0 = ++p;
            while (*p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9'))
                p++;
            i1 = p;
        } else if (*p == '[' && (p[1] == '"' || p[1] == '\'')) {
            char q2 = p[1];
            i0 = p + 2;
            p = i0;
            while (*p && *p != q2)
                p++;
            i1 = p;
        } else {
            continue;
        }
        if (i1 == i0)
            continue;
        char buf[256];
        int m = snprintf(buf, sizeof buf, "%.*s/%.*s", (int)dl, d0, (int)(i1 - i0), i0);
        if (m > 0 && (size_t)m < sizeof buf) {
            uint32_t id = de_intern(in, buf, (size_t)m);
            bool dup = false;
            for (uint32_t k = 0; k < *n; k++)
                dup |= out[k] == id;
            if (!dup)
                out[(*n)++] = id;
        }
    }
}

static void fmt_attr(de_interner *in, const de_attrval *v, de_buf *b)
{
    switch (v->kind) {
    case DE_V_INT: de_buf_printf(b, "%lld", (long long)v->u.i); break;
    case DE_V_BOOL: de_buf_puts(b, v->u.b ? "true" : "false"); break;
    case DE_V_STRING:
    case DE_V_VERSION: de_buf_puts(b, de_intern_str(in, v->u.s)); break;
    default:
        de_buf_puts(b, "[");
        for (uint32_t i = 0; i < v->n; i++) {
            if (i)
                de_buf_puts(b, ",");
            if (v->kind == DE_V_INTS)
                de_buf_printf(b, "%lld", (long long)v->u.ints[i]);
            else if (v->kind == DE_V_BOOLS)
                de_buf_puts(b, v->u.bools[i] ? "true" : "false");
            else
                de_buf_puts(b, de_intern_str(in, v->u.strs[i]));
        }
        de_buf_puts(b, "]");
    }
}

typedef struct table {
    char **cells; /* rows x 8 */
    uint32_t rows, cap;
} table;

static void table_add(table *t, const char *const *cols)
{
    if (t->rows == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 32;
        t->cells = de_xrealloc(t->cells, t->cap * 8 * sizeof *t->cells);
    }
    for (int i = 0; i < 8; i++)
        t->cells[t->rows * 8 + i] = de_xstrdup(cols[i] ? cols[i] : "");
    t->rows++;
}

static void table_print(table *t)
{
    static const char *const hdr[8] = {"POD", "CLAIM", "REQUEST", "NODE", "DRIVER", "POOL", "DEVICE", "ATTRIBUTES"};
    size_t w[8];
    for (int i = 0; i < 8; i++)
        w[i] = strlen(hdr[i]);
    for (uint32_t r = 0; r < t->rows; r++)
        for (int i = 0; i < 8; i++)
            if (strlen(t->cells[r * 8 + i]) > w[i])
                w[i] = strlen(t->cells[r * 8 + i]);
    for (int i = 0; i < 8; i++)
        printf(i < 7 ? "%-*s  " : "%-*s\n", i < 7 ? (int)w[i] : 0, hdr[i]);
    for (uint32_t r = 0; r < t->rows; r++)
        for (int i = 0; i < 8; i++)
            printf(i < 7 ? "%-*s  " : "%-*s\n", i < 7 ? (int)w[i] : 0, t->cells[r * 8 + i]);
    for (uint32_t i = 0; i < t->rows * 8; i++)
        free(t->cells[i]);
    free(t->cells);
}

/* KEP-5007: the binding conditions of a result not True yet in the
 * claim's status.devices, as "awaiting=A,B". */
static void awaiting_conditions(de_interner *in, const dg_claim *cl, const dg_result *x, de_buf *b)
{
    const dg_device_status *d = NULL;
    for (uint32_t i = 0; i < cl->ndevices && !d; i++)
        if (cl->devices[i].driver == x->driver && cl->devices[i].pool == x->pool && cl->devices[i].device == x->device)
            d = &cl->devices[i];
    uint32_t t = de_intern_cstr(in, "True"), n = 0;
    for (uint32_t k = 0; k < x->nbinding_conditions; k++) {
        bool ok = false;
        for (uint32_t j = 0; d && j < d->nconditions && !ok; j++)
            ok = d->conditions[j].type == x->binding_conditions[k] && d->conditions[j].status == t;
        if (!ok)
            de_buf_printf(b, "%s%s", n++ ? "," : (b->len ? " awaiting=" : "awaiting="),
                          de_intern_str(in, x->binding_conditions[k]));
    }
}

/* one row per allocated device */
static void table_rows(table *t, dg_graph *g, const char *pod, uint32_t clid, const dg_allocation *al,
                       const char *node)
{
    de_interner *in = dg_intern(g);
    const dg_claim *cl = dg_claim_get(g, clid);
    char cname[512];
    snprintf(cname, sizeof cname, "%s%s%s", cl->meta.ns ? de_intern_str(in, cl->meta.ns) : "",
             cl->meta.ns ? "/" : "", de_intern_str(in, cl->meta.name));
    for (uint32_t i = 0; i < al->nresults; i++) {
        const dg_result *x = &al->results[i];
        /* attributes that decided it: the selectors' and the constraints' */
        uint32_t names[64], nn = 0;
        const char *req = de_intern_str(in, x->request);
        for (uint32_t r = 0; r < cl->spec.nrequests; r++) {
            const dg_request *rq = &cl->spec.requests[r];
            const dg_exact *ex = rq->has_exactly ? &rq->exactly : NULL;
            for (uint32_t s = 0; s < rq->nsubs; s++) {
                char full[512];
                snprintf(full, sizeof full, "%s/%s", de_intern_str(in, rq->name), de_intern_str(in, rq->subs[s].name));
                if (!strcmp(full, req))
                    ex = &rq->subs[s];
            }
            if (!ex || (rq->nsubs == 0 && rq->name != x->request) ||
                (rq->nsubs && ex == &rq->exactly))
                continue;
            for (uint32_t k = 0; k < ex->nselectors; k++)
                if (ex->selectors[k].has_cel)
                    selector_attrs(in, de_intern_str(in, ex->selectors[k].expr), names, &nn, 64);
            uint32_t cid = dg_class_find(g, ex->class_name);
            const dg_class *cls = cid == DG_NONE ? NULL : dg_class_get(g, cid);
            for (uint32_t k = 0; cls && k < cls->nselectors; k++)
                if (cls->selectors[k].has_cel)
                    selector_attrs(in, de_intern_str(in, cls->selectors[k].expr), names, &nn, 64);
        }
        for (uint32_t k = 0; k < cl->spec.nconstraints && nn < 64; k++) {
            uint32_t a = cl->spec.constraints[k].match_attribute ? cl->spec.constraints[k].match_attribute
                                                                  : cl->spec.constraints[k].distinct_attribute;
            bool dup = false;
            for (uint32_t m = 0; m < nn; m++)
                dup |= names[m] == a;
            if (a && !dup)
                names[nn++] = a;
        }
        de_buf b;
        de_buf_init(&b, 4096);
        uint32_t devid = dg_device_find(g, x->driver, x->pool, x->device);
        if (devid != DG_NONE) {
            de_devview v;
            dg_device_view(g, devid, &v);
            for (uint32_t k = 0; k < nn; k++) {
                const char *full = de_intern_str(in, names[k]);
                const char *slash = strchr(full, '/');
                if (!slash)
                    continue;
                uint32_t dom = de_intern(in, full, (size_t)(slash - full));
                uint32_t id = de_intern_cstr(in, slash + 1);
                const de_attr *at = NULL;
                for (uint32_t m = 0; m < v.nderived && !at; m++)
                    if (v.derived[m].domain == dom && v.derived[m].name == id)
                        at = &v.derived[m];
                for (uint32_t m = 0; m < v.nattrs && !at; m++)
                    if (v.attrs[m].domain == dom && v.attrs[m].name == id)
                        at = &v.attrs[m];
                if (!at)
                    continue;
                de_buf_printf(&b, "%s%s=", b.len ? " " : "", at->bare ? de_intern_str(in, id) : full);
                fmt_attr(in, &at->v, &b);
            }
        }
        for (uint32_t k = 0; k < x->nconsumed; k++) {
            char q[DE_QTY_TEXT_MAX];
            de_qty_format(x->consumed[k].value, q, sizeof q);
            de_buf_printf(&b, "%sconsumed:%s=%s", b.len ? " " : "", de_intern_str(in, x->consumed[k].key), q);
        }
        if (x->share_id)
            de_buf_printf(&b, "%sshareID=%s", b.len ? " " : "", de_intern_str(in, x->share_id));
        awaiting_conditions(in, cl, x, &b);
        const char *cols[8] = {pod, cname, req, node, de_intern_str(in, x->driver), de_intern_str(in, x->pool),
                               de_intern_str(in, x->device), de_buf_str(&b)};
        table_add(t, cols);
        de_buf_free(&b);
    }
}

static void warn_object(void *ctx, const de_err *e)
{
    (void)ctx;
    fprintf(stderr, "draengine allocate: warning: %s (an API server would refuse this object; allocating anyway)\n",
            e->msg);
}

/* ---- modes ---------------------------------------------------------------------- */

static int report_unsat(const char *node, const al_outcome *o)
{
    fprintf(stderr, "draengine allocate: cannot allocate all claims on node %s: %s\n", node,
            o->why.summary ? o->why.summary : "no solution");
    if (o->why.detail)
        fprintf(stderr, "%s", o->why.detail);
    return CLI_EXIT_UNSAT;
}

/* The table's first line when policies took part. */
static void revision_header(const runctx *rc)
{
    if (rc->revision)
        printf("policy revision %.12s (%u polic%s in %s)\n", rc->revision, rc->npolicies,
               rc->npolicies == 1 ? "y" : "ies", rc->policies);
}

/* Into the plan: every device of a claim, "request=driver/pool/device". */
static void record_claim(cli_plan *rec, dg_graph *g, uint32_t clid, const dg_allocation *al, uint32_t pod)
{
    de_interner *in = dg_intern(g);
    const dg_claim *cl = dg_claim_get(g, clid);
    if (!cl)
        return;
    char cname[512], dev[1024];
    snprintf(cname, sizeof cname, "%s%s%s", cl->meta.ns ? de_intern_str(in, cl->meta.ns) : "",
             cl->meta.ns ? "/" : "", de_intern_str(in, cl->meta.name));
    cli_plan_device(rec, cname, pod, NULL);
    for (uint32_t i = 0; al && i < al->nresults; i++) {
        const dg_result *x = &al->results[i];
        snprintf(dev, sizeof dev, "%s=%s/%s/%s%s", de_intern_str(in, x->request), de_intern_str(in, x->driver),
                 de_intern_str(in, x->pool), de_intern_str(in, x->device), x->admin_access == 1 ? " (admin)" : "");
        cli_plan_device(rec, cname, pod, dev);
    }
}

static int run_node(al_allocator *al, dg_graph *g, al_input *lc, const char *node, const runctx *rx)
{
    de_interner *in = dg_intern(g);
    uint32_t *ids = de_xmalloc((lc->npending ? lc->npending : 1) * sizeof *ids);
    for (uint32_t i = 0; i < lc->npending; i++)
        ids[i] = al_input_claim(g, lc, i);
    de_arena *ar = de_arena_new(0);
    al_outcome o;
    de_err e;
    de_err_clear(&e);
    de_rc rc = al_allocate(al, de_intern_cstr(in, node), ids, lc->npending, ar, &o, &e);
    int ret;
    if (rc == DE_EUNSAT) {
        ret = rx->print ? report_unsat(node, &o) : CLI_EXIT_UNSAT;
        if (rx->rec)
            cli_plan_set(&rx->rec->why, o.why.summary ? o.why.summary : "no solution");
    } else if (rc != DE_OK) {
        cli_errorf("allocate", "%s", e.msg);
        if (rx->rec)
            cli_plan_set(&rx->rec->error, e.msg);
        ret = rc == DE_EINTERNAL || rc == DE_ENOMEM ? CLI_EXIT_INTERNAL : CLI_EXIT_INVALID;
    } else {
        ret = 0;
        for (uint32_t i = 0; rx->rec && i < o.nclaims; i++)
            record_claim(rx->rec, g, ids[i], &o.claims[i].alloc, CLI_PLAN_NONE);
        if (rx->fmt == OUT_TABLE) {
            if (rx->print) {
                table t = {0};
                for (uint32_t i = 0; i < o.nclaims; i++)
                    table_rows(&t, g, "-", ids[i], &o.claims[i].alloc, node);
                revision_header(rx);
                table_print(&t);
            }
        } else {
            json_t *items = json_array();
            for (uint32_t i = 0; i < o.nclaims; i++)
                json_array_append_new(items, cli_claim_with_allocation(g, ids[i], &o.claims[i].alloc, rx->revision));
            json_t *doc = json_pack("{s:s, s:s, s:o}", "apiVersion", "v1", "kind", "List", "items", items);
            if (rx->print)
                ret = print_doc(doc, rx->fmt);
            if (rx->rec)
                rx->rec->list = json_incref(doc);
            json_decref(doc);
        }
    }
    de_arena_free(ar);
    free(ids);
    return ret;
}

static int run_pods(al_allocator *al, dg_graph *g, al_input *lc, const runctx *rx)
{
    de_interner *in = dg_intern(g);
    de_arena *ar = de_arena_new(0);
    json_t *items = json_array();
    table t = {0};
    int ret = 0, fmt = rx->fmt;
    uint32_t scheduled = 0, unsched = 0, considered = 0, waiting = 0;
    for (uint32_t i = 0; i < lc->npods; i++) {
        uint32_t pid = al_input_pod(g, lc, i);
        const dg_pod *pod = pid == DG_NONE ? NULL : dg_pod_get(g, pid);
        if (!pod || !al_pod_uses_dra(al, pid))
            continue;
        considered++;
        char pname[512];
        snprintf(pname, sizeof pname, "%s%s%s", pod->meta.ns ? de_intern_str(in, pod->meta.ns) : "",
                 pod->meta.ns ? "/" : "", de_intern_str(in, pod->meta.name));
        de_arena_reset(ar);
        al_pod_outcome po;
        de_err e;
        de_err_clear(&e);
        de_rc rc = al_schedule_pod(al, pid, ar, &po, &e);
        if (rc == DE_EUNSAT) {
            if (rx->print)
                fprintf(stderr, "draengine allocate: pod %s: unschedulable: %s\n", pname, po.why ? po.why : "?");
            if (rx->rec)
                cli_plan_pod_add(rx->rec, pname, NULL, po.why ? po.why : "?");
            if (fmt != OUT_TABLE)
                json_array_append_new(items, cli_pod_unschedulable(g, pid, po.k8s_why ? po.k8s_why : po.why));
            unsched++;
            if (!ret)
                ret = CLI_EXIT_UNSAT;
            continue;
        }
        if (rc != DE_OK) {
            cli_errorf("allocate", "pod %s: %s", pname, e.msg);
            if (rx->rec) {
                char msg[DE_ERR_MSG_MAX + 600];
                snprintf(msg, sizeof msg, "pod %s: %s", pname, e.msg);
                cli_plan_set(&rx->rec->error, msg);
            }
            ret = CLI_EXIT_INVALID;
            break;
        }
        scheduled++;
        const char *node = po.node_name ? de_intern_str(in, po.node_name) : "-";
        /* KEP-5007: allocated, but kube-scheduler holds the pod in PreBind
         * until the devices' binding conditions are True */
        de_buf pend;
        de_buf_init(&pend, 16384);
        for (uint32_t k = 0; k < po.nclaims; k++) {
            const dg_claim *cl = po.claims[k] == DG_NONE ? NULL : dg_claim_get(g, po.claims[k]);
            if (al_claim_has_binding_conditions(al, cl) && al_binding_state(al, cl, 0, NULL, 0) == AL_BIND_PENDING)
                al_binding_pending(al, cl, &pend);
        }
        bool awaiting = pend.len > 0;
        if (awaiting) {
            waiting++;
            if (rx->print)
                fprintf(stderr, "draengine allocate: pod %s: allocated on node %s, awaiting binding conditions (%s)\n",
                        pname, node, de_buf_str(&pend));
        }
        de_buf_free(&pend);
        if (rx->rec)
            cli_plan_pod_add(rx->rec, pname, node, NULL);
        for (uint32_t k = 0; k < po.nclaims; k++) {
            if (po.claims[k] == DG_NONE)
                continue;
            const dg_claim *cl = dg_claim_get(g, po.claims[k]);
            if (rx->rec && cl && cl->allocated)
                record_claim(rx->rec, g, po.claims[k], &cl->allocation, rx->rec->npods - 1);
            if (fmt == OUT_TABLE) {
                if (cl && cl->allocated && rx->print)
                    table_rows(&t, g, pname, po.claims[k], &cl->allocation, node);
            } else if (po.allocated_now[k]) {
                json_array_append_new(items, cli_claim_with_allocation(g, po.claims[k], NULL, rx->revision));
            }
        }
        if (fmt != OUT_TABLE)
            json_array_append_new(items, cli_pod_scheduled(al, g, &po, awaiting));
    }
    if (fmt == OUT_TABLE) {
        if (rx->print) {
            revision_header(rx);
            table_print(&t);
            if (considered && waiting)
                printf("\n%u pod(s) scheduled (%u awaiting binding conditions), %u unschedulable\n", scheduled,
                       waiting, unsched);
            else if (considered)
                printf("\n%u pod(s) scheduled, %u unschedulable\n", scheduled, unsched);
            else
                printf("no pods reference resource claims; use --node NAME to allocate the pending claims\n");
        }
    } else if (ret != CLI_EXIT_INVALID) {
        json_t *doc = json_pack("{s:s, s:s, s:o}", "apiVersion", "v1", "kind", "List", "items", items);
        if (rx->print) {
            int r = print_doc(doc, fmt);
            if (r)
                ret = r;
        }
        if (rx->rec)
            rx->rec->list = json_incref(doc);
        json_decref(doc);
        items = NULL;
    }
    if (items)
        json_decref(items);
    de_arena_free(ar);
    return ret;
}

/* One run: the graph, the input, the allocator and the policies, built
 * from nothing every time (see alloc_plan.h). */
int cli_allocate_run(const cli_alloc_cfg *cfg, cli_alloc_load_fn load, void *ctx, cli_plan *rec, bool print)
{
    al_opts opts = cfg->opts;
    de_err e;
    de_err_clear(&e);
    int ret = CLI_EXIT_INVALID;
    dg_opts gopts = {0};
    gopts.gates = &opts.gates;
    gopts.skip_validation = strcmp(cfg->validate, "strict") != 0;
    dg_graph *g = dg_new(NULL, &gopts);
    dg_graph *checker = NULL;
    al_input lc;
    al_input_init(&lc);
    if (!strcmp(cfg->validate, "none"))
        lc.keep_duplicates = true;
    if (!strcmp(cfg->validate, "warn")) {
        dg_opts copts = {0};
        copts.gates = &opts.gates;
        checker = dg_new(dg_intern(g), &copts);
        lc.checker = checker;
        lc.warn = warn_object;
        lc.keep_duplicates = true;
    }
    pol_host *host = NULL;
    pol_verdict verdict = {0};
    al_allocator *alc = NULL;
    if (load(ctx, g, &lc, &e) != DE_OK) {
        cli_errorf("allocate", "%s", e.msg);
        if (rec)
            cli_plan_set(&rec->error, e.msg);
        goto out;
    }
    opts.cel = NULL;
    alc = al_new(g, &opts, &e);
    if (!alc) {
        cli_errorf("allocate", "%s", e.msg);
        if (rec)
            cli_plan_set(&rec->error, e.msg);
        ret = CLI_EXIT_INTERNAL;
        goto out;
    }
    al_set_podgroups(alc, lc.podgroups);
    runctx rx = {cfg->fmt, NULL, cfg->policies, 0, print, rec};
    if (cfg->policies) {
        /* the policy host publishes derived attributes into the graph and
         * answers the allocator's hooks (admit, groups, score) */
        al_hooks hooks;
        memset(&hooks, 0, sizeof hooks);
        de_rc prc = pol_host_for_allocate(g, cfg->policies, &opts.gates, &hooks, &host, &e);
        if (prc == DE_OK && !pol_host_judge(host, &verdict)) {
            /* hook failures on current devices: the revision is refused
             * (the same verdict as serve's reload and policy diff) */
            pol_verdict_summary(&verdict, e.msg, sizeof e.msg);
            e.rc = prc = DE_EPOLICY;
            pol_host_free_for_allocate(host);
            host = NULL;
        }
        if (prc != DE_OK) {
            char msg[DE_ERR_MSG_MAX + 600];
            snprintf(msg, sizeof msg, "--policies %s: %s", cfg->policies, e.msg);
            cli_errorf("allocate", "%s", msg);
            if (verdict.ndevices)
                cli_verdict_text(stderr, &verdict, "");
            if (rec)
                cli_plan_set(cfg->policies_good ? &rec->refused : &rec->error, msg);
            if (!cfg->policies_good)
                goto out;
            /* --watch: the last good revision stays, as in serve */
            de_err_clear(&e);
            if (pol_host_for_allocate(g, cfg->policies_good, &opts.gates, &hooks, &host, &e) != DE_OK) {
                cli_errorf("allocate", "the last good policy revision: %s", e.msg);
                if (rec)
                    cli_plan_set(&rec->error, e.msg);
                goto out;
            }
        }
        al_set_hooks(alc, &hooks);
        const pol_set *set = pol_host_active(host);
        rx.revision = pol_set_revision(set);
        rx.npolicies = pol_set_count(set);
        if (rec) {
            snprintf(rec->revision, sizeof rec->revision, "%s", rx.revision);
            rec->npolicies = rx.npolicies;
        }
    }
    ret = cfg->node ? run_node(alc, g, &lc, cfg->node, &rx) : run_pods(alc, g, &lc, &rx);
    if (host && print)
        cli_policy_stats(stderr, "allocate", pol_host_active(host), cfg->verbose);
out:
    pol_verdict_free(&verdict);
    al_free(alc);
    pol_host_free_for_allocate(host); /* before the graph: it clears what it published */
    dg_free(g);
    al_input_free(&lc);
    dg_free(checker);
    if (rec) {
        rec->rc = ret;
        rec->node = cfg->node;
    }
    return ret;
}

typedef struct files_src {
    const char *const *files;
    int nfiles;
} files_src;

static de_rc load_files(void *ctx, dg_graph *g, al_input *lc, de_err *e)
{
    const files_src *src = ctx;
    for (int i = 0; i < src->nfiles; i++)
        DE_TRY(al_input_load(g, lc, src->files[i], e));
    return DE_OK;
}

int cli_cmd_allocate(int argc, char **argv)
{
    const char **files = de_xcalloc((size_t)argc + 1, sizeof *files);
    int nfiles = 0, fmt = OUT_JSON;
    const char *node = NULL, *policies = NULL, *validate = "warn";
    bool watch = false;
    al_opts opts;
    memset(&opts, 0, sizeof opts);
    de_gates_default(&opts.gates);
    de_err e;
    de_err_clear(&e);
    int ret = CLI_EXIT_INVALID;
    enum { F_HELP = 1, F_WATCH, F_FILE, F_NODE, F_GATES, F_VALIDATE, F_POLICIES, F_STEPS, F_TIMEOUT, F_SEED,
           F_OUTPUT, F_VERBOSE };
    static const cli_flag flags[] = {
        {"help", 'h', CLI_ARG_NONE, F_HELP, NULL},
        {"watch", 'w', CLI_ARG_NONE, F_WATCH, NULL},
        {"filename", 'f', CLI_ARG_REQUIRED, F_FILE, NULL},
        {"node", 0, CLI_ARG_REQUIRED, F_NODE, NULL},
        {"feature-gates", 0, CLI_ARG_REQUIRED, F_GATES, NULL},
        {"validate", 0, CLI_ARG_REQUIRED, F_VALIDATE, NULL},
        {"policies", 0, CLI_ARG_REQUIRED, F_POLICIES, "policy-dir"},
        {"max-search-steps", 0, CLI_ARG_REQUIRED, F_STEPS, NULL},
        {"dra-filter-timeout", 0, CLI_ARG_REQUIRED, F_TIMEOUT, NULL},
        {"seed", 0, CLI_ARG_REQUIRED, F_SEED, NULL},
        {"output", 'o', CLI_ARG_REQUIRED, F_OUTPUT, NULL},
        {"v", 'v', CLI_ARG_LEVEL, F_VERBOSE, "verbose"},
        {0},
    };
    int verbose = 0;
    cli_args args;
    cli_args_init(&args, "allocate", argc, argv, 1);
    const char *val;
    int id;
    while ((id = cli_args_next(&args, flags, &val)) != CLI_ARGS_END) {
        const char *fl = cli_args_flag(&args);
        switch (id) {
        case CLI_ARGS_ERROR:
            usage(stderr);
            goto done;
        case CLI_ARGS_OPERAND:
            cli_errorf("allocate", "unexpected argument \"%s\" (manifests are given with -f PATH)", val);
            goto done;
        case F_HELP:
            usage(stdout);
            ret = 0;
            goto done;
        case F_WATCH:
            watch = true;
            break;
        case F_FILE:
            files[nfiles++] = val;
            break;
        case F_NODE:
            node = val;
            break;
        case F_GATES: {
            /* library mode: the allocator's unit tests and the conformance
             * vectors switch off gates that 1.37 locks (see gates.h) */
            char warn[DE_ERR_MSG_MAX];
            if (de_gates_parse_library(&opts.gates, val, warn, sizeof warn, &e) != DE_OK) {
                cli_errorf("allocate", "--feature-gates: %s", e.msg);
                goto done;
            }
            if (warn[0])
                fprintf(stderr, "draengine allocate: warning: --feature-gates: %s (kube-scheduler 1.37 "
                                "refuses this; the allocator runs with these features as given)\n", warn);
            break;
        }
        case F_VALIDATE:
            if (strcmp(val, "warn") && strcmp(val, "strict") && strcmp(val, "none")) {
                cli_errorf("allocate", "--validate: want warn, strict or none, got \"%s\"", val);
                goto done;
            }
            validate = val;
            break;
        case F_POLICIES:
            policies = val;
            break;
        case F_STEPS:
            if (!cli_flag_u64("allocate", fl, val, 1, UINT64_MAX, &opts.max_steps))
                goto done;
            break;
        case F_TIMEOUT:
            if (!cli_flag_duration("allocate", fl, val, 0, CLI_DURATION_MAX, &opts.filter_timeout_ns))
                goto done;
            opts.filter_timeout_set = true;
            break;
        case F_SEED:
            if (!cli_flag_u64("allocate", fl, val, 0, UINT64_MAX, &opts.seed))
                goto done;
            break;
        case F_OUTPUT:
            if (!strcmp(val, "json"))
                fmt = OUT_JSON;
            else if (!strcmp(val, "yaml"))
                fmt = OUT_YAML;
            else if (!strcmp(val, "table"))
                fmt = OUT_TABLE;
            else {
                cli_errorf("allocate", "-o: unknown output format \"%s\" (json, yaml, table)", val);
                goto done;
            }
            break;
        case F_VERBOSE:
            if (!cli_flag_level("allocate", val, &verbose))
                goto done;
            de_log_set_verbosity(verbose);
            break;
        }
    }
    if (opts.filter_timeout_set && !opts.gates.on[DE_GATE_SCHEDULER_FILTER_TIMEOUT]) {
        /* kube-scheduler refuses filterTimeout with the gate off (its typo kept) */
        cli_errorf("allocate", "--dra-filter-timeout: Forbidden: DRASchedulingFilterTimeout feature gate is disabled");
        goto done;
    }
    if (!nfiles) {
        cli_errorf("allocate", "no input: give manifests with -f PATH");
        usage(stderr);
        goto done;
    }
    cli_alloc_cfg cfg = {.opts = opts, .node = node, .policies = policies, .validate = validate, .fmt = fmt,
                         .verbose = verbose > 0};
    if (watch) {
        ret = cli_allocate_watch(&cfg, files, nfiles);
        goto done;
    }
    files_src src = {files, nfiles};
    ret = cli_allocate_run(&cfg, load_files, &src, NULL, true);
done:
    free(files);
    return ret;
}
