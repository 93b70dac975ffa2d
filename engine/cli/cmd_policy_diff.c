/*
 * cmd_policy_diff.c - `draengine policy diff --from DIR --to DIR -f SNAPSHOT`:
 * what a policy change would do to a cluster, before it rolls out.
 *
 * The snapshot is loaded twice, once per revision (identical inputs give
 * identical graphs, device ids included).  Each side gets its own policy
 * host (facts computed for every device and published) and its own
 * allocator with that host's hooks.  Then:
 *   1. derived attributes are compared device by device;
 *   2. the pending claims are replayed: with --node, all of them together on
 *      that node (al_allocate); otherwise every Pod of the snapshot that
 *      references claims is scheduled in input order (al_schedule_pod), and
 *      a pending claim no Pod references gets a one-claim Pod of its own, so
 *      node choice and scores take part exactly as when scheduling;
 *   3. per claim: allocated differently, becomes unschedulable, becomes
 *      schedulable.
 * Each revision is judged as every command judges one (pol_verdict_judge):
 * hook failures of the --to revision on the snapshot's devices are listed in
 * a section of their own, the devices they hit are left out of the
 * attribute changes (their facts are missing, not changed), and the command
 * exits 2 - a CI gate refuses what serve would refuse.
 * Output is deterministic (device and claim order are input order; devices
 * sorted by driver/pool/name), as text, Markdown or JSON (policy_diff_out.c).
 */
#include "../alloc/al.h"
#include "../base/buf.h"
#include "../model/dg.h"
#include "../policy/polgraph.h"
#include "cli.h"
#include "cmd_policy.h"
#include "policy_diff.h"
#include "policy_out.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct claim_out {
    uint32_t ns, name;  /* interned (same interner for both sides: text compared) */
    bool ok;
    char *node;         /* chosen node, NULL if none */
    char *devices;      /* "driver/pool/device,..." */
    char *why;          /* unschedulable reason */
} claim_out;

typedef struct side {
    const char *dir;
    dg_graph *g;
    al_input in;
    al_allocator *a;
    pol_host *host;
    claim_out *claims; /* pending claims, input order */
    uint32_t nclaims;
    pol_verdict verdict;
} side;

static void free_side(side *s)
{
    for (uint32_t i = 0; i < s->nclaims; i++) {
        free(s->claims[i].node);
        free(s->claims[i].devices);
        free(s->claims[i].why);
    }
    free(s->claims);
    pol_verdict_free(&s->verdict);
    al_free(s->a);
    pol_host_free(s->host);
    if (s->g)
        dg_free(s->g);
    al_input_free(&s->in);
}

static char *devices_text(const dg_graph *g, const dg_allocation *al)
{
    de_buf b;
    de_buf_init(&b, 1 << 20);
    de_interner *in = dg_intern((dg_graph *)g);
    for (uint32_t k = 0; k < al->nresults; k++) {
        const dg_result *r = &al->results[k];
        de_buf_printf(&b, "%s%s/%s/%s", k ? "," : "", de_intern_str(in, r->driver), de_intern_str(in, r->pool),
                      de_intern_str(in, r->device));
    }
    return de_buf_take(&b);
}

static int claim_index(side *s, uint32_t clid)
{
    const dg_claim *cl = dg_claim_get(s->g, clid);
    if (!cl)
        return -1;
    for (uint32_t i = 0; i < s->nclaims; i++)
        if (s->claims[i].ns == cl->meta.ns && s->claims[i].name == cl->meta.name)
            return (int)i;
    return -1;
}

/* A Pod for a pending claim that no Pod of the snapshot references. */
static de_rc add_pod_for(side *s, uint32_t clid, de_err *e)
{
    const dg_claim *cl = dg_claim_get(s->g, clid);
    de_interner *in = dg_intern(s->g);
    char name[300];
    snprintf(name, sizeof name, "policy-diff-%s", de_intern_str(in, cl->meta.name));
    json_t *pod = json_pack("{s:s, s:s, s:{s:s, s:s, s:s}, s:{s:[{s:s, s:s}], s:[{s:s}]}}", "apiVersion", "v1",
                            "kind", "Pod", "metadata", "name", name, "namespace", de_intern_str(in, cl->meta.ns),
                            "uid", name, "spec", "resourceClaims", "name", "claim", "resourceClaimName",
                            de_intern_str(in, cl->meta.name), "containers", "name", "main");
    de_origin o = {"<policy diff>", 1, -1};
    dg_kind k;
    de_rc rc = dg_apply(s->g, pod, &o, &k, e);
    json_decref(pod);
    return rc;
}

static bool pod_references(const dg_graph *g, const dg_pod *p, const dg_claim *cl)
{
    if (p->meta.ns != cl->meta.ns)
        return false;
    for (uint32_t i = 0; i < p->nclaims; i++)
        if (p->claims[i].claim_name == cl->meta.name)
            return true;
    (void)g;
    return false;
}

static de_rc run_side(side *s, const char **files, int nfiles, const de_gates *gates, const char *node,
                      const pol_config *cfg, de_err *e)
{
    dg_opts gopts = {0};
    gopts.gates = gates;
    gopts.skip_validation = true;
    s->g = dg_new(NULL, &gopts);
    al_input_init(&s->in);
    for (int i = 0; i < nfiles; i++)
        DE_TRY(al_input_load(s->g, &s->in, files[i], e));
    pol_host_opts ho;
    pol_host_opts_default(&ho);
    ho.cfg = *cfg;
    ho.watch = false;
    ho.rescan_ns = 0;
    de_rc rc = pol_host_new(s->dir, s->g, &ho, &s->host, e);
    if (rc != DE_OK)
        return rc;
    pol_host_judge(s->host, &s->verdict);
    al_opts ao;
    memset(&ao, 0, sizeof ao);
    ao.gates = *gates;
    s->a = al_new(s->g, &ao, e);
    if (!s->a)
        return e->rc ? e->rc : DE_EINTERNAL;
    al_hooks hooks;
    pol_host_al_hooks(s->host, &hooks);
    al_set_hooks(s->a, &hooks);

    de_interner *in = dg_intern(s->g);
    s->nclaims = s->in.npending;
    s->claims = de_xcalloc(s->nclaims ? s->nclaims : 1, sizeof *s->claims);
    for (uint32_t i = 0; i < s->in.npending; i++) {
        uint32_t clid = al_input_claim(s->g, &s->in, i);
        const dg_claim *cl = clid == DG_NONE ? NULL : dg_claim_get(s->g, clid);
        s->claims[i].ns = cl ? cl->meta.ns : 0;
        s->claims[i].name = cl ? cl->meta.name : 0;
    }
    de_arena *ar = de_arena_new(0);
    if (node) {
        uint32_t *ids = de_xcalloc(s->nclaims ? s->nclaims : 1, sizeof *ids);
        for (uint32_t i = 0; i < s->nclaims; i++)
            ids[i] = al_input_claim(s->g, &s->in, i);
        al_outcome o;
        de_err ae;
        de_err_clear(&ae);
        rc = al_allocate(s->a, de_intern_cstr(in, node), ids, s->nclaims, ar, &o, &ae);
        for (uint32_t i = 0; i < s->nclaims; i++) {
            if (rc == DE_OK) {
                s->claims[i].ok = true;
                s->claims[i].node = de_xstrdup(node);
                s->claims[i].devices = devices_text(s->g, &o.claims[i].alloc);
            } else {
                s->claims[i].why = de_xstrdup(rc == DE_EUNSAT && o.why.summary ? o.why.summary : ae.msg);
            }
        }
        free(ids);
        de_arena_free(ar);
        return DE_OK;
    }
    /* one Pod per pending claim that no Pod references */
    uint32_t npods0 = dg_pod_id_limit(s->g);
    for (uint32_t i = 0; i < s->nclaims; i++) {
        uint32_t clid = al_input_claim(s->g, &s->in, i);
        const dg_claim *cl = clid == DG_NONE ? NULL : dg_claim_get(s->g, clid);
        if (!cl)
            continue;
        bool referenced = false;
        for (uint32_t p = 0; p < npods0 && !referenced; p++) {
            const dg_pod *pod = dg_pod_get(s->g, p);
            referenced = pod && pod_references(s->g, pod, cl);
        }
        if (!referenced)
            DE_TRY(add_pod_for(s, clid, e));
    }
    /* pods: the snapshot's in input order, then the synthetic ones */
    uint32_t npods = s->in.npods, limit = dg_pod_id_limit(s->g);
    uint32_t *order = de_xcalloc((size_t)npods + limit + 1, sizeof *order), n = 0;
    for (uint32_t i = 0; i < npods; i++) {
        uint32_t pid = al_input_pod(s->g, &s->in, i);
        if (pid != DG_NONE)
            order[n++] = pid;
    }
    for (uint32_t pid = npods0; pid < limit; pid++)
        if (dg_pod_get(s->g, pid))
            order[n++] = pid;
    for (uint32_t i = 0; i < n; i++) {
        de_arena_reset(ar);
        al_pod_outcome po;
        de_err pe;
        de_err_clear(&pe);
        rc = al_schedule_pod(s->a, order[i], ar, &po, &pe);
        for (uint32_t k = 0; k < po.nclaims; k++) {
            if (po.claims == NULL || po.claims[k] == DG_NONE)
                continue;
            int ci = claim_index(s, po.claims[k]);
            if (ci < 0)
                continue;
            claim_out *co = &s->claims[ci];
            if (rc == DE_OK && po.allocated_now && po.allocated_now[k]) {
                co->ok = true;
                co->node = de_xstrdup(po.node_name ? de_intern_str(in, po.node_name) : "-");
                co->devices = devices_text(s->g, &po.allocs[k].alloc);
            } else if (rc != DE_OK && !co->why) {
                co->why = de_xstrdup(rc == DE_EUNSAT && po.why ? po.why : pe.msg);
            }
        }
        if (rc != DE_OK && rc != DE_EUNSAT) {
            /* a hard error for this pod: its claims stay unallocated */
        }
    }
    free(order);
    de_arena_free(ar);
    return DE_OK;
}

/* ---- derived attribute differences ----------------------------------------------- */

static const de_attr *find(const de_devview *v, de_interner *in, const char *dom, const char *name)
{
    for (uint32_t i = 0; i < v->nderived; i++)
        if (!strcmp(de_intern_str(in, v->derived[i].domain), dom) &&
            !strcmp(de_intern_str(in, v->derived[i].name), name))
            return &v->derived[i];
    return NULL;
}

static char *text_of(de_interner *in, const de_attrval *v)
{
    de_buf b;
    de_buf_init(&b, 1 << 16);
    cli_attrval_text(in, v, &b);
    return de_buf_take(&b);
}

static void add_change(pd_device *d, char kind, const char *dom, const char *name, de_interner *ia,
                       const de_attrval *a, de_interner *ib, const de_attrval *b)
{
    d->ch = de_xrealloc(d->ch, (d->nch + 1) * sizeof *d->ch);
    pd_change *c = &d->ch[d->nch++];
    memset(c, 0, sizeof *c);
    c->kind = kind;
    size_t n = strlen(dom) + strlen(name) + 2;
    c->attr = de_xmalloc(n);
    snprintf(c->attr, n, "%s/%s", dom, name);
    if (a) {
        c->from = text_of(ia, a);
        c->jfrom = cli_attrval_json(ia, a);
    }
    if (b) {
        c->to = text_of(ib, b);
        c->jto = cli_attrval_json(ib, b);
    }
    c->type = cli_attrval_type(b ? b : a);
}

static bool failed_on(const side *s, uint32_t devid)
{
    const pol_devfacts *f = pol_set_facts(pol_host_active(s->host), devid);
    return f && f->nfailures;
}

static int cmp_dev(const void *a, const void *b)
{
    return strcmp(((const pd_device *)a)->key, ((const pd_device *)b)->key);
}

/* Devices whose derived attributes differ, sorted by driver/pool/name.
 * A device on which a --to hook failed is not among them: it is in the
 * failures section, and its missing facts are not a change anyone made. */
static uint32_t diff_devices(side *A, side *B, pd_device **out)
{
    de_interner *ia = dg_intern(A->g), *ib = dg_intern(B->g);
    uint32_t limit = dg_device_id_limit(A->g), n = 0, cap = 0;
    *out = NULL;
    for (uint32_t id = 0; id < limit; id++) {
        if (!dg_device_get(A->g, id))
            continue;
        de_devview va, vb;
        dg_device_view(A->g, id, &va);
        const char *drv = de_intern_str(ia, va.driver), *pool = de_intern_str(ia, va.pool),
                   *name = de_intern_str(ia, va.name);
        uint32_t idb = dg_device_find(B->g, de_intern_cstr(ib, drv), de_intern_cstr(ib, pool), de_intern_cstr(ib, name));
        if (idb == DG_NONE || failed_on(B, idb))
            continue;
        dg_device_view(B->g, idb, &vb);
        pd_device d = {0};
        /* removed or changed (A's order), then added (B's order) */
        for (uint32_t i = 0; i < va.nderived; i++) {
            const de_attr *a = &va.derived[i];
            const char *dom = de_intern_str(ia, a->domain), *an = de_intern_str(ia, a->name);
            const de_attr *b = find(&vb, ib, dom, an);
            if (!b) {
                add_change(&d, '-', dom, an, ia, &a->v, ib, NULL);
            } else {
                char *x = text_of(ia, &a->v), *y = text_of(ib, &b->v);
                if (strcmp(x, y))
                    add_change(&d, '~', dom, an, ia, &a->v, ib, &b->v);
                free(x);
                free(y);
            }
        }
        for (uint32_t i = 0; i < vb.nderived; i++) {
            const de_attr *b = &vb.derived[i];
            const char *dom = de_intern_str(ib, b->domain), *bn = de_intern_str(ib, b->name);
            if (!find(&va, ia, dom, bn))
                add_change(&d, '+', dom, bn, ia, NULL, ib, &b->v);
        }
        if (!d.nch)
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            *out = de_xrealloc(*out, cap * sizeof **out);
        }
        size_t kl = strlen(drv) + strlen(pool) + strlen(name) + 3;
        d.key = de_xmalloc(kl);
        snprintf(d.key, kl, "%s/%s/%s", drv, pool, name);
        d.driver = de_xstrdup(drv);
        (*out)[n++] = d;
    }
    if (n)
        qsort(*out, n, sizeof **out, cmp_dev);
    return n;
}

static void free_devices(pd_device *d, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        for (uint32_t k = 0; k < d[i].nch; k++) {
            pd_change *c = &d[i].ch[k];
            free(c->attr);
            free(c->from);
            free(c->to);
            json_decref(c->jfrom);
            json_decref(c->jto);
        }
        free(d[i].ch);
        free(d[i].key);
        free(d[i].driver);
    }
    free(d);
}

static bool str_eq(const char *a, const char *b)
{
    return (!a && !b) || (a && b && !strcmp(a, b));
}

static void diff_help(FILE *o)
{
    fprintf(o, "usage: draengine policy diff --from DIR --to DIR -f SNAPSHOT... [flags]\n\n"
               "Judge the --to revision on the snapshot's devices, replay the snapshot's pending claims under\n"
               "both revisions and print what changes: hook failures (the revision is refused: exit 2),\n"
               "derived attributes grouped by attribute and driver, claims that become unschedulable,\n"
               "are allocated differently or become schedulable.\n\nflags:\n"
               "  --from DIR                        the current policy directory\n"
               "  --to DIR                          the proposed one\n"
               "  -f, --filename PATH               snapshot manifests, e.g. from draengine snapshot (repeatable)\n"
               "  --node NAME                       allocate every pending claim together on this node\n"
               "  --feature-gates A=true,...        Kubernetes 1.37 feature gates\n"
               "  -o, --output text|markdown|json   text (default), a pull-request comment, or JSON\n"
               "  --exit-code                       exit 1 when anything changes\n"
               "%s"
               "  -v                                log verbosity; policy statistics at the end\n"
               "  -h, --help                        this help\n\n"
               "Exit status: 0 (1 with --exit-code when something changes); 2 invalid input or the --to\n"
               "revision refused.\n",
            policy_limit_help);
}

int cli_policy_diff(int argc, char **argv);
int cli_policy_diff(int argc, char **argv)
{
    static const cli_flag flags[] = {
        PF_COMMON_FLAGS,
        PF_LIMIT_FLAGS,
        {"from", 0, CLI_ARG_REQUIRED, PF_FROM, NULL},
        {"to", 0, CLI_ARG_REQUIRED, PF_TO, NULL},
        {"filename", 'f', CLI_ARG_REQUIRED, PF_FILE, NULL},
        {"node", 0, CLI_ARG_REQUIRED, PF_NODE, NULL},
        {"output", 'o', CLI_ARG_REQUIRED, PF_OUTPUT, NULL},
        {"feature-gates", 0, CLI_ARG_REQUIRED, PF_GATES, NULL},
        {"exit-code", 0, CLI_ARG_NONE, PF_EXIT_CODE, NULL},
        {0},
    };
    policy_opts o = {0};
    int pr = policy_parse(argc, argv, &o, "diff", flags, diff_help);
    if (pr)
        return pr > 0 ? CLI_EXIT_OK : CLI_EXIT_INVALID;
    if (o.npos) {
        cli_errorf(o.who, "unexpected argument \"%s\"", o.pos[0]);
        return CLI_EXIT_INVALID;
    }
    if (!o.from || !o.to || !o.nfiles) {
        cli_errorf(o.who, "needs --from DIR --to DIR -f SNAPSHOT");
        return CLI_EXIT_INVALID;
    }
    static const char *const formats[] = {"text", "markdown", "json", NULL};
    if (!policy_want_format(&o, formats))
        return CLI_EXIT_INVALID;
    de_gates gates;
    de_gates_default(&gates);
    de_err e;
    de_err_clear(&e);
    if (o.gates && de_gates_parse(&gates, o.gates, &e) != DE_OK) {
        cli_errorf(o.who, "--feature-gates: %s", e.msg);
        return CLI_EXIT_INVALID;
    }
    side A = {.dir = o.from}, B = {.dir = o.to};
    int ret = CLI_EXIT_INVALID;
    pd_device *devs = NULL;
    uint32_t ndevs = 0;
    pd_claim *claims = NULL;
    if (run_side(&A, o.files, o.nfiles, &gates, o.node, &o.cfg, &e) != DE_OK ||
        run_side(&B, o.files, o.nfiles, &gates, o.node, &o.cfg, &e) != DE_OK) {
        cli_errorf(o.who, "%s", e.msg);
        goto out;
    }
    ndevs = diff_devices(&A, &B, &devs);
    de_interner *ia = dg_intern(A.g);
    pd_result r = {.from_dir = o.from, .to_dir = o.to, .from_v = &A.verdict, .to_v = &B.verdict,
                   .devs = devs, .ndevs = ndevs, .npending = A.nclaims};
    r.from_rev = pol_set_revision(pol_host_active(A.host));
    r.to_rev = pol_set_revision(pol_host_active(B.host));
    claims = de_xcalloc(A.nclaims ? A.nclaims : 1, sizeof *claims);
    for (uint32_t i = 0; i < A.nclaims && i < B.nclaims; i++) {
        claim_out *a = &A.claims[i], *b = &B.claims[i];
        pd_claim c = {.ns = (char *)de_intern_str(ia, a->ns), .name = (char *)de_intern_str(ia, a->name),
                      .from_node = a->node, .from_devices = a->devices, .to_node = b->node,
                      .to_devices = b->devices, .why = b->why};
        if (a->ok && b->ok) {
            if (str_eq(a->node, b->node) && str_eq(a->devices, b->devices))
                continue;
            c.kind = PD_REALLOCATED;
        } else if (a->ok && !b->ok) {
            c.kind = PD_UNSCHEDULABLE;
        } else if (!a->ok && b->ok) {
            c.kind = PD_SCHEDULABLE;
        } else {
            continue;
        }
        r.count[c.kind]++;
        claims[r.nclaims++] = c;
    }
    r.claims = claims;
    if (!strcmp(o.out, "json")) {
        json_t *doc = pd_json(&r);
        char *t = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        printf("%s\n", t);
        free(t);
        json_decref(doc);
    } else if (!strcmp(o.out, "markdown")) {
        pd_markdown(&r, stdout);
    } else {
        pd_text(&r, stdout);
    }
    fflush(stdout);
    bool changed = ndevs || r.nclaims;
    if (B.verdict.ndevices) {
        char sum[2048];
        pol_verdict_summary(&B.verdict, sum, sizeof sum);
        cli_errorf(o.who, "--to %s: %s", o.to, sum);
        ret = CLI_EXIT_INVALID;
    } else {
        ret = o.exit_code && changed ? CLI_EXIT_UNSAT : CLI_EXIT_OK;
    }
    cli_policy_stats(stderr, "policy diff", pol_host_active(B.host), o.verbose > 0);
out:
    free(claims);
    free_devices(devs, ndevs);
    free_side(&A);
    free_side(&B);
    return ret;
}
