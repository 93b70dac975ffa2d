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
 * Output is deterministic (device and claim order are input order; devices
 * sorted by driver/pool/name), text or JSON (-o json).
 */
#include "../alloc/al.h"
#include "../base/buf.h"
#include "../model/dg.h"
#include "../policy/polgraph.h"
#include "cli.h"

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
} side;

static void free_side(side *s)
{
    for (uint32_t i = 0; i < s->nclaims; i++) {
        free(s->claims[i].node);
        free(s->claims[i].devices);
        free(s->claims[i].why);
    }
    free(s->claims);
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

static void val_text(de_interner *in, const de_attrval *v, de_buf *b)
{
    switch (v->kind) {
    case DE_V_INT:
        de_buf_printf(b, "%lld", (long long)v->u.i);
        return;
    case DE_V_BOOL:
        de_buf_puts(b, v->u.b ? "true" : "false");
        return;
    case DE_V_STRING:
        de_buf_printf(b, "\"%s\"", de_intern_str(in, v->u.s));
        return;
    case DE_V_VERSION:
        de_buf_printf(b, "version %s", de_intern_str(in, v->u.s));
        return;
    default:
        de_buf_putc(b, '[');
        for (uint32_t i = 0; i < v->n; i++) {
            if (i)
                de_buf_putc(b, ',');
            if (v->kind == DE_V_INTS)
                de_buf_printf(b, "%lld", (long long)v->u.ints[i]);
            else if (v->kind == DE_V_BOOLS)
                de_buf_puts(b, v->u.bools[i] ? "true" : "false");
            else
                de_buf_printf(b, "\"%s\"", de_intern_str(in, v->u.strs[i]));
        }
        de_buf_putc(b, ']');
    }
}

static bool val_eq(de_interner *ia, const de_attrval *a, de_interner *ib, const de_attrval *b)
{
    de_buf x, y;
    de_buf_init(&x, 1 << 16);
    de_buf_init(&y, 1 << 16);
    val_text(ia, a, &x);
    val_text(ib, b, &y);
    bool eq = !strcmp(de_buf_str(&x), de_buf_str(&y));
    de_buf_free(&x);
    de_buf_free(&y);
    return eq;
}

typedef struct devline {
    char *key;  /* driver/pool/name */
    char *text; /* the change lines */
    json_t *json;
} devline;

static int cmp_devline(const void *a, const void *b)
{
    return strcmp(((const devline *)a)->key, ((const devline *)b)->key);
}

static const de_attr *find(const de_devview *v, de_interner *in, const char *dom, const char *name)
{
    for (uint32_t i = 0; i < v->nderived; i++)
        if (!strcmp(de_intern_str(in, v->derived[i].domain), dom) &&
            !strcmp(de_intern_str(in, v->derived[i].name), name))
            return &v->derived[i];
    return NULL;
}

static uint32_t diff_devices(side *A, side *B, devline **out)
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
        if (idb == DG_NONE)
            continue;
        dg_device_view(B->g, idb, &vb);
        de_buf t;
        de_buf_init(&t, 1 << 20);
        json_t *changes = json_array();
        /* removed or changed (A's order), then added (B's order) */
        for (uint32_t i = 0; i < va.nderived; i++) {
            const de_attr *a = &va.derived[i];
            const char *dom = de_intern_str(ia, a->domain), *an = de_intern_str(ia, a->name);
            const de_attr *b = find(&vb, ib, dom, an);
            de_buf x;
            de_buf_init(&x, 1 << 16);
            val_text(ia, &a->v, &x);
            if (!b) {
                de_buf_printf(&t, "    - %s/%s (was %s)\n", dom, an, de_buf_str(&x));
                json_array_append_new(changes, json_pack("{s:s, s:o, s:s}", "change", "removed", "attribute",
                                                         json_sprintf("%s/%s", dom, an), "from", de_buf_str(&x)));
            } else if (!val_eq(ia, &a->v, ib, &b->v)) {
                de_buf y;
                de_buf_init(&y, 1 << 16);
                val_text(ib, &b->v, &y);
                de_buf_printf(&t, "    ~ %s/%s: %s -> %s\n", dom, an, de_buf_str(&x), de_buf_str(&y));
                json_array_append_new(changes, json_pack("{s:s, s:o, s:s, s:s}", "change", "changed", "attribute",
                                                         json_sprintf("%s/%s", dom, an), "from", de_buf_str(&x),
                                                         "to", de_buf_str(&y)));
                de_buf_free(&y);
            }
            de_buf_free(&x);
        }
        for (uint32_t i = 0; i < vb.nderived; i++) {
            const de_attr *b = &vb.derived[i];
            const char *dom = de_intern_str(ib, b->domain), *bn = de_intern_str(ib, b->name);
            if (find(&va, ia, dom, bn))
                continue;
            de_buf y;
            de_buf_init(&y, 1 << 16);
            val_text(ib, &b->v, &y);
            de_buf_printf(&t, "    + %s/%s = %s\n", dom, bn, de_buf_str(&y));
            json_array_append_new(changes, json_pack("{s:s, s:o, s:s}", "change", "added", "attribute",
                                                     json_sprintf("%s/%s", dom, bn), "to", de_buf_str(&y)));
            de_buf_free(&y);
        }
        if (t.len) {
            if (n == cap) {
                cap = cap ? cap * 2 : 64;
                *out = de_xrealloc(*out, cap * sizeof **out);
            }
            char key[768];
            snprintf(key, sizeof key, "%s/%s/%s", drv, pool, name);
            (*out)[n].key = de_xstrdup(key);
            (*out)[n].text = de_buf_take(&t);
            (*out)[n].json = json_pack("{s:s, s:o}", "device", key, "changes", changes);
            n++;
        } else {
            json_decref(changes);
        }
        de_buf_free(&t);
    }
    if (n)
        qsort(*out, n, sizeof **out, cmp_devline);
    return n;
}

static bool str_eq(const char *a, const char *b)
{
    return (!a && !b) || (a && b && !strcmp(a, b));
}

int cli_policy_diff(int argc, char **argv);
int cli_policy_diff(int argc, char **argv)
{
    const char *from = NULL, *to = NULL, *node = NULL, *outfmt = "text", *gspec = NULL;
    const char *files[64];
    int nfiles = 0;
    bool exit_code = false;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        bool takes = !strcmp(a, "--from") || !strcmp(a, "--to") || !strcmp(a, "-f") || !strcmp(a, "--filename") ||
                     !strcmp(a, "--node") || !strcmp(a, "-o") || !strcmp(a, "--output") ||
                     !strcmp(a, "--feature-gates");
        if (takes && !v) {
            cli_errorf("policy", "diff: %s needs a value", a);
            return CLI_EXIT_INVALID;
        }
        if (!strcmp(a, "--from"))
            from = argv[++i];
        else if (!strcmp(a, "--to"))
            to = argv[++i];
        else if (!strcmp(a, "--node"))
            node = argv[++i];
        else if (!strcmp(a, "-o") || !strcmp(a, "--output"))
            outfmt = argv[++i];
        else if (!strcmp(a, "--feature-gates"))
            gspec = argv[++i];
        else if (!strncmp(a, "--feature-gates=", 16))
            gspec = a + 16;
        else if (!strcmp(a, "--exit-code"))
            exit_code = true;
        else if (!strcmp(a, "-f") || !strcmp(a, "--filename")) {
            if (nfiles >= 64) {
                cli_errorf("policy", "diff: too many -f");
                return CLI_EXIT_INVALID;
            }
            files[nfiles++] = argv[++i];
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            printf("usage: draengine policy diff --from DIR --to DIR -f SNAPSHOT... [--node NAME]\n"
                   "                             [--feature-gates SPEC] [-o text|json] [--exit-code]\n\n"
                   "Replay the snapshot's pending claims under both policy revisions and print what changes:\n"
                   "derived attributes per device, allocations per claim, claims that become (un)schedulable.\n"
                   "--exit-code: exit 1 when anything changes.\n");
            return CLI_EXIT_OK;
        } else {
            cli_errorf("policy", "diff: unknown argument %s", a);
            return CLI_EXIT_INVALID;
        }
    }
    if (!from || !to || !nfiles) {
        cli_errorf("policy", "diff needs --from DIR --to DIR -f SNAPSHOT");
        return CLI_EXIT_INVALID;
    }
    if (strcmp(outfmt, "text") && strcmp(outfmt, "json")) {
        cli_errorf("policy", "diff: -o: \"%s\" is not text or json", outfmt);
        return CLI_EXIT_INVALID;
    }
    de_gates gates;
    de_gates_default(&gates);
    de_err e;
    de_err_clear(&e);
    if (gspec && de_gates_parse(&gates, gspec, &e) != DE_OK) {
        cli_errorf("policy", "diff: --feature-gates: %s", e.msg);
        return CLI_EXIT_INVALID;
    }
    pol_config cfg;
    pol_config_default(&cfg);
    cfg.log = pol_log_to_engine;
    side A = {.dir = from}, B = {.dir = to};
    int ret = CLI_EXIT_INVALID;
    devline *dl = NULL;
    uint32_t ndl = 0;
    if (run_side(&A, files, nfiles, &gates, node, &cfg, &e) != DE_OK ||
        run_side(&B, files, nfiles, &gates, node, &cfg, &e) != DE_OK) {
        cli_errorf("policy", "diff: %s", e.msg);
        goto out;
    }
    ndl = diff_devices(&A, &B, &dl);
    uint32_t changed = 0, unsched = 0, sched = 0;
    de_buf ct;
    de_buf_init(&ct, 64 << 20);
    json_t *jclaims = json_array();
    de_interner *ia = dg_intern(A.g);
    for (uint32_t i = 0; i < A.nclaims && i < B.nclaims; i++) {
        claim_out *a = &A.claims[i], *b = &B.claims[i];
        const char *ns = de_intern_str(ia, a->ns), *nm = de_intern_str(ia, a->name);
        if (a->ok && b->ok) {
            if (str_eq(a->node, b->node) && str_eq(a->devices, b->devices))
                continue;
            changed++;
            de_buf_printf(&ct, "  claim %s/%s: %s [%s] -> %s [%s]\n", ns, nm, a->node, a->devices, b->node, b->devices);
            json_array_append_new(jclaims, json_pack("{s:s, s:s, s:s, s:{s:s, s:s}, s:{s:s, s:s}}", "claim", nm,
                                                     "namespace", ns, "change", "reallocated", "from", "node", a->node,
                                                     "devices", a->devices, "to", "node", b->node, "devices",
                                                     b->devices));
        } else if (a->ok && !b->ok) {
            unsched++;
            de_buf_printf(&ct, "  claim %s/%s: becomes unschedulable (was %s [%s]): %s\n", ns, nm, a->node, a->devices,
                          b->why ? b->why : "?");
            json_array_append_new(jclaims, json_pack("{s:s, s:s, s:s, s:{s:s, s:s}, s:s}", "claim", nm, "namespace",
                                                     ns, "change", "unschedulable", "from", "node", a->node,
                                                     "devices", a->devices, "reason", b->why ? b->why : ""));
        } else if (!a->ok && b->ok) {
            sched++;
            de_buf_printf(&ct, "  claim %s/%s: becomes schedulable: %s [%s]\n", ns, nm, b->node, b->devices);
            json_array_append_new(jclaims, json_pack("{s:s, s:s, s:s, s:{s:s, s:s}}", "claim", nm, "namespace", ns,
                                                     "change", "schedulable", "to", "node", b->node, "devices",
                                                     b->devices));
        }
    }
    const char *ra = pol_set_revision(pol_host_active(A.host)), *rb = pol_set_revision(pol_host_active(B.host));
    if (!strcmp(outfmt, "json")) {
        json_t *jd = json_array();
        for (uint32_t i = 0; i < ndl; i++)
            json_array_append(jd, dl[i].json);
        json_t *doc = json_pack("{s:{s:s, s:s}, s:{s:s, s:s}, s:o, s:o, s:{s:i, s:i, s:i, s:i, s:i}}", "from", "dir",
                                from, "revision", ra, "to", "dir", to, "revision", rb, "devices", jd, "claims", jclaims,
                                "summary", "devices_changed", (json_int_t)ndl, "claims_reallocated",
                                (json_int_t)changed, "claims_unschedulable", (json_int_t)unsched,
                                "claims_schedulable", (json_int_t)sched, "claims_pending", (json_int_t)A.nclaims);
        char *s = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        printf("%s\n", s);
        free(s);
        json_decref(doc);
    } else {
        json_decref(jclaims);
        printf("policy diff: %s (revision %.12s) -> %s (revision %.12s)\n", from, ra, to, rb);
        printf("derived attributes: %u device%s changed\n", ndl, ndl == 1 ? "" : "s");
        for (uint32_t i = 0; i < ndl; i++)
            printf("  %s\n%s", dl[i].key, dl[i].text);
        printf("allocations: %u pending claim%s replayed\n", A.nclaims, A.nclaims == 1 ? "" : "s");
        fputs(de_buf_str(&ct), stdout);
        printf("summary: %u devices with changed attributes, %u claims allocated differently, %u become "
               "unschedulable, %u become schedulable\n",
               ndl, changed, unsched, sched);
    }
    de_buf_free(&ct);
    ret = exit_code && (ndl || changed || unsched || sched) ? CLI_EXIT_UNSAT : CLI_EXIT_OK;
out:
    for (uint32_t i = 0; i < ndl; i++) {
        free(dl[i].key);
        free(dl[i].text);
        json_decref(dl[i].json);
    }
    free(dl);
    free_side(&A);
    free_side(&B);
    return ret;
}
