/*
 * cmd_snapshot.c - `draengine snapshot [--kubeconfig K] [-o FILE]`: one file
 * holding what draengine decides from - ResourceSlices, DeviceClasses,
 * ResourceClaims and their templates, DeviceTaintRules, Nodes, Pods,
 * Namespaces and PodGroups - read from a live cluster, for `policy diff`,
 * `allocate` and `inspect` (-f FILE).
 *
 * It reads with the client `serve` uses (drivers/kube): the same kubeconfig
 * rules (client-go's: --kubeconfig, $KUBECONFIG merged, ~/.kube/config, the
 * in-cluster service account), TLS, token refresh, paged lists, retries and
 * backoff.  The informer lists every kind (its first list is one consistent
 * page walk per kind, as a reflector's); the snapshot is taken the moment
 * every kind has synced, with the changes that arrived meanwhile applied.
 *
 * A kind the cluster does not serve (PodGroups without the workload APIs,
 * DeviceTaintRules on a cluster without them) is left out with a note; a
 * kind the credentials may not list is an error naming it (a snapshot
 * missing the claims would make every diff wrong).  Output is sorted by
 * kind, namespace and name, without metadata.managedFields, as YAML
 * documents or one JSON List; the file is written whole (a temporary file
 * renamed), so a failed run never leaves half a snapshot.
 */
#include "../../drivers/kube/kc.h"
#include "../base/log.h"
#include "../base/map.h"
#include "cli.h"
#include "flags.h"
#include "objout.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* What a snapshot holds, in the order it is written; optional kinds may be
 * missing on a cluster. */
static const struct {
    kc_res res;
    bool optional;
} KINDS[] = {
    {KC_RES_NAMESPACES, false},   {KC_RES_NODES, false},      {KC_RES_CLASSES, false},
    {KC_RES_SLICES, false},       {KC_RES_TAINT_RULES, true}, {KC_RES_TEMPLATES, false},
    {KC_RES_CLAIMS, false},       {KC_RES_PODGROUPS, true},   {KC_RES_PODS, false},
};

typedef struct snapobj {
    kc_res res;
    char *key; /* namespace/name */
    json_t *obj;
} snapobj;

typedef struct snap {
    snapobj *objs;
    size_t n, cap;
    de_map index; /* hash(res, key) -> position + 1 */
    uint64_t events;
} snap;

static uint64_t obj_hash(kc_res res, const char *key)
{
    return de_hash_u64(de_hash_bytes(key, strlen(key)) + (uint64_t)res);
}

static char *obj_key(json_t *obj)
{
    json_t *md = json_object_get(obj, "metadata");
    const char *ns = json_string_value(json_object_get(md, "namespace"));
    const char *name = json_string_value(json_object_get(md, "name"));
    size_t n = (ns ? strlen(ns) : 0) + (name ? strlen(name) : 0) + 2;
    char *k = de_xmalloc(n);
    snprintf(k, n, "%s/%s", ns ? ns : "", name ? name : "");
    return k;
}

/* Find (res, key): its index, or -1; hash collisions are resolved by
 * comparing (the map holds the last position with that hash). */
static long find(snap *s, kc_res res, const char *key)
{
    uint64_t pos;
    if (!de_map_get(&s->index, obj_hash(res, key), &pos) || !pos)
        return -1;
    if (s->objs[pos - 1].res == res && s->objs[pos - 1].obj && !strcmp(s->objs[pos - 1].key, key))
        return (long)pos - 1;
    for (size_t i = 0; i < s->n; i++)
        if (s->objs[i].obj && s->objs[i].res == res && !strcmp(s->objs[i].key, key))
            return (long)i;
    return -1;
}

/* Keep the newest version of every object; a deletion while the other
 * kinds still list removes it. */
static void on_event(void *ctx, kc_res res, kc_evtype type, json_t *obj)
{
    snap *s = ctx;
    s->events++;
    char *key = obj_key(obj);
    long at = find(s, res, key);
    if (type == KC_EV_DELETED) {
        if (at >= 0) {
            json_decref(s->objs[at].obj);
            s->objs[at].obj = NULL;
        }
        free(key);
        return;
    }
    json_t *copy = json_deep_copy(obj);
    json_object_del(json_object_get(copy, "metadata"), "managedFields");
    if (at >= 0) {
        json_decref(s->objs[at].obj);
        s->objs[at].obj = copy;
        free(key);
        return;
    }
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 256;
        s->objs = de_xrealloc(s->objs, s->cap * sizeof *s->objs);
    }
    s->objs[s->n] = (snapobj){res, key, copy};
    s->n++;
    de_map_put(&s->index, obj_hash(res, key), s->n);
}

static int kind_rank(kc_res r)
{
    for (size_t i = 0; i < DE_ARRAY_LEN(KINDS); i++)
        if (KINDS[i].res == r)
            return (int)i;
    return (int)DE_ARRAY_LEN(KINDS);
}

static int cmp_obj(const void *a, const void *b)
{
    const snapobj *x = a, *y = b;
    int c = kind_rank(x->res) - kind_rank(y->res);
    return c ? c : strcmp(x->key, y->key);
}

static void usage(FILE *o)
{
    fprintf(o,
            "usage: draengine snapshot [--kubeconfig FILE] [--context NAME] [-o FILE] [flags]\n\n"
            "Read what draengine decides from out of a live cluster - ResourceSlices, DeviceClasses,\n"
            "ResourceClaims, ResourceClaimTemplates, DeviceTaintRules, Nodes, Pods, Namespaces and\n"
            "PodGroups - into one file that `policy diff`, `allocate` and `inspect` take with -f.\n"
            "The connection is serve's: --kubeconfig alone, else $KUBECONFIG merged, else\n"
            "~/.kube/config, else the in-cluster service account.\n\nflags:\n"
            "  --kubeconfig FILE       kubeconfig to use (no merging)\n"
            "  --context NAME          context of the kubeconfig (default: its current-context)\n"
            "  --master URL            API server URL, overriding the kubeconfig's\n"
            "  -o, --output FILE       where to write (default -, stdout); written whole or not at all\n"
            "  --format yaml|json      YAML documents (default; json for a .json FILE) or one JSON List\n"
            "  --timeout D             give up when the lists have not completed (default 2m)\n"
            "  -v                      log verbosity (-v 2: every request)\n"
            "  -h, --help              this help\n\n"
            "Kinds the cluster does not serve (PodGroups without the workload APIs) are left out with a\n"
            "note; kinds the credentials may not list are an error.\n\n"
            "Exit status: 0 written, 2 usage, connection or permission error.\n");
}

/* Which kinds the cluster serves: one small list request each.  A 404 on an
 * optional kind leaves it out; any other failure ends the snapshot. */
static int probe(kc_client *cl, bool *want)
{
    for (size_t i = 0; i < DE_ARRAY_LEN(KINDS); i++) {
        kc_res r = KINDS[i].res;
        char path[512];
        snprintf(path, sizeof path, "%s?limit=1", kc_res_path(r));
        long status = 0;
        json_t *out = NULL;
        de_err e;
        de_err_clear(&e);
        de_rc rc = kc_request(cl, "GET", path, NULL, NULL, &status, &out, &e);
        json_decref(out);
        if (rc == DE_OK) {
            want[r] = true;
            continue;
        }
        if (status == 404 && KINDS[i].optional) {
            fprintf(stderr, "draengine snapshot: note: the cluster does not serve %s (%s); left out\n",
                    kc_res_name(r), kc_res_path(r));
            continue;
        }
        if (status == 403)
            cli_errorf("snapshot", "may not list %s (%s): %s; the credentials need list on it (the RBAC of "
                                   "examples/deploy covers every kind a snapshot holds)",
                       kc_res_name(r), kc_res_path(r), e.msg);
        else
            cli_errorf("snapshot", "listing %s (%s): %s", kc_res_name(r), kc_res_path(r), e.msg);
        return CLI_EXIT_INVALID;
    }
    return CLI_EXIT_OK;
}

static int write_out(snap *s, const char *path, cli_ofmt fmt)
{
    qsort(s->objs, s->n, sizeof *s->objs, cmp_obj);
    bool to_stdout = !strcmp(path, "-");
    char tmp[4096] = "";
    FILE *f = stdout;
    if (!to_stdout) {
        int n = snprintf(tmp, sizeof tmp, "%s.tmpXXXXXX", path);
        int fd = n > 0 && (size_t)n < sizeof tmp ? mkstemp(tmp) : -1;
        f = fd >= 0 ? fdopen(fd, "w") : NULL;
        if (!f) {
            cli_errorf("snapshot", "%s: cannot write", path);
            if (fd >= 0)
                close(fd), unlink(tmp);
            return CLI_EXIT_INVALID;
        }
    }
    cli_objout o;
    cli_objout_begin(&o, f, fmt);
    de_err e;
    de_err_clear(&e);
    de_rc rc = DE_OK;
    for (size_t i = 0; i < s->n && rc == DE_OK; i++)
        if (s->objs[i].obj)
            rc = cli_objout_write(&o, s->objs[i].obj, &e);
    if (rc == DE_OK)
        rc = cli_objout_end(&o, &e);
    if (!to_stdout) {
        if (fclose(f) != 0 && rc == DE_OK)
            rc = de_errf(&e, DE_EIO, "%s: write failed", path);
        if (rc == DE_OK && rename(tmp, path) != 0)
            rc = de_errf(&e, DE_EIO, "%s: cannot rename the finished snapshot into place", path);
        if (rc != DE_OK)
            unlink(tmp);
    } else {
        fflush(stdout);
    }
    if (rc != DE_OK) {
        cli_errorf("snapshot", "%s", e.msg);
        return CLI_EXIT_INVALID;
    }
    return CLI_EXIT_OK;
}

int cli_cmd_snapshot(int argc, char **argv)
{
    enum { F_HELP = 1, F_KUBECONFIG, F_CONTEXT, F_MASTER, F_OUTPUT, F_FORMAT, F_TIMEOUT, F_VERBOSE };
    static const cli_flag flags[] = {
        {"help", 'h', CLI_ARG_NONE, F_HELP, NULL},
        {"kubeconfig", 0, CLI_ARG_REQUIRED, F_KUBECONFIG, NULL},
        {"context", 0, CLI_ARG_REQUIRED, F_CONTEXT, NULL},
        {"master", 0, CLI_ARG_REQUIRED, F_MASTER, NULL},
        {"output", 'o', CLI_ARG_REQUIRED, F_OUTPUT, NULL},
        {"format", 0, CLI_ARG_REQUIRED, F_FORMAT, NULL},
        {"timeout", 0, CLI_ARG_REQUIRED, F_TIMEOUT, NULL},
        {"v", 'v', CLI_ARG_LEVEL, F_VERBOSE, "verbose"},
        {0},
    };
    kc_config_opts co = {0};
    const char *out = "-", *format = NULL;
    uint64_t timeout_ns = 120ull * 1000000000ull;
    int verbose = 0;
    cli_args a;
    cli_args_init(&a, "snapshot", argc, argv, 1);
    const char *v;
    int id;
    while ((id = cli_args_next(&a, flags, &v)) != CLI_ARGS_END) {
        switch (id) {
        case CLI_ARGS_ERROR:
            usage(stderr);
            return CLI_EXIT_INVALID;
        case CLI_ARGS_OPERAND:
            cli_errorf("snapshot", "unexpected argument \"%s\" (the file is given with -o FILE)", v);
            return CLI_EXIT_INVALID;
        case F_HELP:
            usage(stdout);
            return CLI_EXIT_OK;
        case F_KUBECONFIG: co.kubeconfig = v; break;
        case F_CONTEXT: co.context = v; break;
        case F_MASTER: co.master = v; break;
        case F_OUTPUT: out = v; break;
        case F_FORMAT: format = v; break;
        case F_TIMEOUT:
            if (!cli_flag_duration("snapshot", cli_args_flag(&a), v, 1000000, CLI_DURATION_MAX, &timeout_ns))
                return CLI_EXIT_INVALID;
            break;
        case F_VERBOSE:
            if (!cli_flag_level("snapshot", v, &verbose))
                return CLI_EXIT_INVALID;
            de_log_set_verbosity(verbose);
            break;
        }
    }
    cli_ofmt fmt = CLI_OFMT_YAML;
    if (format ? !cli_ofmt_parse(format, &fmt) : false) {
        cli_errorf("snapshot", "--format: \"%s\" is not yaml or json", format);
        return CLI_EXIT_INVALID;
    }
    if (!format && strcmp(out, "-") && strlen(out) > 5 && !strcmp(out + strlen(out) - 5, ".json"))
        fmt = CLI_OFMT_JSON;
    kc_config *cfg = NULL;
    de_err e;
    de_err_clear(&e);
    if (kc_config_load(&co, &cfg, &e) != DE_OK) {
        cli_errorf("snapshot", "%s", e.msg);
        return CLI_EXIT_INVALID;
    }
    de_buf desc;
    de_buf_init(&desc, 16384);
    kc_config_describe(cfg, &desc);
    DE_INFO(1, "snapshot of %s", de_buf_str(&desc));
    de_buf_free(&desc);
    kc_client_opts clo = {.qps = 50, .burst = 100};
    kc_client *cl = kc_client_new(cfg, &clo);
    kc_informer_opts io = {0};
    int rc = probe(cl, io.want);
    snap s = {0};
    de_map_init(&s.index);
    if (rc == CLI_EXIT_OK) {
        kc_informer *inf = kc_informer_new(cl, &io, on_event, &s);
        uint64_t deadline = de_now_ns() + timeout_ns;
        while (!kc_informer_synced(inf) && de_now_ns() < deadline)
            kc_informer_poll(inf, 100, NULL, 0);
        if (!kc_informer_synced(inf)) {
            de_buf st;
            de_buf_init(&st, 1 << 16);
            kc_informer_describe(inf, &st);
            const char *last = kc_informer_last_error(inf);
            cli_errorf("snapshot", "the lists did not complete in time (%s)%s%s", de_buf_str(&st),
                       last[0] ? ": " : "", last);
            de_buf_free(&st);
            rc = CLI_EXIT_INVALID;
        }
        kc_informer_free(inf);
    }
    if (rc == CLI_EXIT_OK) {
        rc = write_out(&s, out, fmt);
        if (rc == CLI_EXIT_OK && strcmp(out, "-")) {
            size_t kept = 0;
            for (size_t i = 0; i < s.n; i++)
                kept += s.objs[i].obj != NULL;
            fprintf(stderr, "draengine snapshot: %zu objects from %s written to %s\n", kept, kc_config_server(cfg),
                    out);
        }
    }
    for (size_t i = 0; i < s.n; i++) {
        free(s.objs[i].key);
        json_decref(s.objs[i].obj);
    }
    free(s.objs);
    de_map_destroy(&s.index);
    kc_client_free(cl);
    kc_config_free(cfg);
    return rc;
}
