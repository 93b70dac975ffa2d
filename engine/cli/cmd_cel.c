/*
 * cmd_cel.c - `draengine cel`: evaluate a CEL expression or device
 * selector, for people (text) and for the conformance harness (--batch,
 * JSON lines; contract in ../shared/conformance/README.md).
 *
 *   draengine cel EXPR                       plain CEL: prints the value
 *   draengine cel EXPR --device FILE [--driver NAME]
 *                                            a selector against one device:
 *                                            prints true or false
 *   draengine cel --batch                    JSON lines in, JSON lines out
 *
 * Exit codes: 0 evaluated, 1 runtime error, 2 compile error or bad input.
 */
#include "../base/doc.h"
#include "../base/gates.h"
#include "../base/intern.h"
#include "../cel/cel.h"
#include "../base/log.h"
#include "cli.h"
#include "flags.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LINE_MAX_BYTES (16u << 20)
#define SCRATCH_CAP ((size_t)512 << 20)

static void usage(FILE *o)
{
    fprintf(o,
            "usage: draengine cel EXPR [--device FILE] [--driver NAME] [flags]\n"
            "       draengine cel --batch\n"
            "\n"
            "Evaluate a CEL expression the way Kubernetes evaluates DRA device selectors.\n"
            "\n"
            "Without --device the expression is plain CEL and its value is printed\n"
            "(`draengine cel '[1, 2].exists(x, x > 1)'` prints true).  With --device it\n"
            "is a selector: it must be a bool and sees the variable `device`.\n"
            "\n"
            "flags:\n"
            "  --device FILE          a device as JSON or YAML: either the vector form\n"
            "                         {driver, attributes, capacity, allowMultipleAllocations}\n"
            "                         or a ResourceSlice spec.devices[] entry (give --driver)\n"
            "  --driver NAME          the device's driver (its default attribute domain)\n"
            "  --feature-gates LIST   e.g. DRAListTypeAttributes=true (1.37 defaults)\n"
            "  --new-expressions      compile as the API server does for new expressions\n"
            "                         (feature-gated fields); default: stored expressions\n"
            "  --value                with --device: print the expression's value, any type\n"
            "  --cost                 also print the runtime and estimated cost\n"
            "  --batch                read JSON lines {expr, device?, bindings?, features?,\n"
            "                         envType?} on stdin and answer one JSON line each\n"
            "\n"
            "exit status: 0 evaluated, 1 runtime error, 2 compile error or invalid input\n");
}

/* ---- batch -------------------------------------------------------------------- */

static void put_error(FILE *out, const char *msg, const char *phase)
{
    json_t *o = json_pack("{s:s, s:s}", "error", msg, "phase", phase);
    char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
    fprintf(out, "%s\n", s ? s : "{\"error\":\"internal error\",\"phase\":\"runtime\"}");
    free(s);
    json_decref(o);
}

/* A line's "features" and "envType" (the conformance contract): a typo in
 * either must not silently evaluate under the defaults, which would make a
 * vector about feature gating pass or fail for the wrong reason.  NULL when
 * both are absent or valid; otherwise what is wrong. */
static const char *batch_features(const json_t *jfeat, const json_t *jenv, cel_env_opts *opts, char *why,
                                  size_t cap)
{
    if (jfeat && !json_is_null(jfeat)) {
        if (!json_is_object(jfeat))
            return "\"features\" must be an object {\"ConsumableCapacity\": bool, \"ListTypeAttributes\": bool}";
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)jfeat, k, v)
        {
            bool *slot = !strcmp(k, "ConsumableCapacity")   ? &opts->consumable_capacity
                         : !strcmp(k, "ListTypeAttributes") ? &opts->list_attributes
                                                            : NULL;
            if (!slot) {
                snprintf(why, cap, "\"features\": unknown feature \"%.60s\" (ConsumableCapacity, "
                         "ListTypeAttributes)", k);
                return why;
            }
            if (!json_is_boolean(v)) {
                snprintf(why, cap, "\"features.%s\" must be a bool", k);
                return why;
            }
            *slot = json_is_true(v);
        }
    }
    if (jenv && !json_is_null(jenv)) {
        const char *s = json_is_string(jenv) ? json_string_value(jenv) : NULL;
        if (!s || (strcmp(s, "NewExpressions") && strcmp(s, "StoredExpressions")))
            return "\"envType\" must be \"NewExpressions\" or \"StoredExpressions\"";
        opts->new_expressions = !strcmp(s, "NewExpressions");
    }
    return NULL;
}

static void batch_line(FILE *out, const char *line, size_t len, de_interner *in,
                       const de_gates *gates, de_arena *a)
{
    char *quoted = cel_json_quote_big_ints(line, len);
    json_error_t je;
    json_t *j = quoted ? json_loads(quoted, JSON_ALLOW_NUL, &je) : NULL;
    free(quoted);
    de_err e;
    de_err_clear(&e);
    if (!j || !json_is_object(j)) {
        char msg[300];
        snprintf(msg, sizeof msg, "invalid input line: %s", j ? "not an object" : je.text);
        put_error(out, msg, "compile");
        json_decref(j);
        return;
    }
    const json_t *jexpr = json_object_get(j, "expr");
    const json_t *jdev = json_object_get(j, "device");
    const json_t *jbind = json_object_get(j, "bindings");
    const json_t *jfeat = json_object_get(j, "features");
    const json_t *jenv = json_object_get(j, "envType");
    if (!json_is_string(jexpr)) {
        put_error(out, "invalid input line: \"expr\" must be a string", "compile");
        json_decref(j);
        return;
    }
    cel_env_opts opts = {0};
    opts.consumable_capacity = gates->on[DE_GATE_CONSUMABLE_CAPACITY];
    opts.list_attributes = gates->on[DE_GATE_LIST_TYPE_ATTRIBUTES];
    char why[200];
    const char *bad = batch_features(jfeat, jenv, &opts, why, sizeof why);
    if (bad) {
        char msg[300];
        snprintf(msg, sizeof msg, "invalid input line: %s", bad);
        put_error(out, msg, "compile");
        json_decref(j);
        return;
    }
    bool selector = jdev && !json_is_null(jdev);
    opts.plain = !selector;
    cel_env *env = cel_env_new(in, &opts);

    de_devview dev;
    if (selector && cel_device_from_json(jdev, NULL, in, a, &dev, &e) != DE_OK) {
        put_error(out, e.msg, "runtime");
        goto done;
    }
    if (json_is_object(jbind)) {
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)jbind, k, v)
        {
            cel_value *cv = cel_value_from_typed_json(a, v, &e);
            if (!cv || cel_env_declare(env, k, cv, &e) != DE_OK) {
                de_err_prefix(&e, "bindings.%s", k);
                put_error(out, e.msg, "compile");
                goto done;
            }
        }
    }
    cel_prog *p;
    const char *expr = json_string_value(jexpr);
    if (cel_compile(env, expr, json_string_length(jexpr), &p, &e) != DE_OK) {
        put_error(out, e.msg, "compile");
        goto done;
    }
    if (selector) {
        bool r;
        if (cel_eval_selector(env, p, &dev, a, &r, NULL, &e) != DE_OK) {
            put_error(out, e.msg, "runtime");
            goto done;
        }
        fprintf(out, "{\"bool\":%s}\n", r ? "true" : "false");
    } else {
        const cel_value *v;
        if (cel_eval(env, p, NULL, a, &v, NULL, &e) != DE_OK) {
            put_error(out, e.msg, "runtime");
            goto done;
        }
        de_buf b;
        de_buf_init(&b, 256u << 20);
        de_buf_puts(&b, "{\"value\":");
        cel_value_typed_json(v, &b);
        de_buf_puts(&b, "}");
        if (b.overflow)
            put_error(out, "result too large to print", "runtime");
        else
            fprintf(out, "%s\n", de_buf_str(&b));
        de_buf_free(&b);
    }
done:
    cel_env_free(env);
    json_decref(j);
}

static int run_batch(const de_gates *gates)
{
    de_interner *in = de_intern_new();
    de_arena *a = de_arena_new(SCRATCH_CAP);
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, stdin)) >= 0) {
        size_t len = (size_t)n;
        while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            len--;
        if (len > LINE_MAX_BYTES)
            put_error(stdout, "input line too long", "compile");
        else
            batch_line(stdout, line, len, in, gates, a);
        fflush(stdout);
        de_arena_reset(a);
    }
    free(line);
    de_arena_free(a);
    de_intern_free(in);
    return 0;
}

/* ---- one expression ------------------------------------------------------------ */

static void print_error(const char *expr, const de_err *e)
{
    fprintf(stderr, "draengine cel: %s\n", e->msg);
    if (e->line > 0 && e->col > 0) {
        char caret[4096];
        cel_err_caret(expr, e->line, e->col, caret, sizeof caret);
        if (caret[0])
            fprintf(stderr, "%s\n", caret);
    }
}

int cli_cmd_cel(int argc, char **argv)
{
    const char *expr = NULL, *devfile = NULL, *driver = NULL, *fg = NULL;
    bool batch = false, newx = false, show_cost = false, value = false;
    enum { F_HELP = 1, F_BATCH, F_NEWX, F_COST, F_VALUE, F_DEVICE, F_DRIVER, F_GATES, F_VERBOSE };
    static const cli_flag flags[] = {
        {"help", 'h', CLI_ARG_NONE, F_HELP, NULL},
        {"batch", 0, CLI_ARG_NONE, F_BATCH, NULL},
        {"new-expressions", 0, CLI_ARG_NONE, F_NEWX, NULL},
        {"cost", 0, CLI_ARG_NONE, F_COST, NULL},
        {"value", 0, CLI_ARG_NONE, F_VALUE, NULL},
        {"device", 0, CLI_ARG_REQUIRED, F_DEVICE, NULL},
        {"driver", 0, CLI_ARG_REQUIRED, F_DRIVER, NULL},
        {"feature-gates", 0, CLI_ARG_REQUIRED, F_GATES, NULL},
        {"v", 'v', CLI_ARG_LEVEL, F_VERBOSE, "verbose"},
        {0},
    };
    cli_args args;
    cli_args_init(&args, "cel", argc, argv, 1);
    const char *fv;
    int id, verbose = 0;
    while ((id = cli_args_next(&args, flags, &fv)) != CLI_ARGS_END) {
        switch (id) {
        case CLI_ARGS_ERROR:
            cli_errorf("cel", "(an expression that starts with '-' goes after --: draengine cel -- '-1 < 0')");
            return CLI_EXIT_INVALID;
        case CLI_ARGS_OPERAND:
            if (expr) {
                cli_errorf("cel", "only one expression may be given (quote it)");
                return CLI_EXIT_INVALID;
            }
            expr = fv;
            break;
        case F_HELP:
            usage(stdout);
            return 0;
        case F_BATCH: batch = true; break;
        case F_NEWX: newx = true; break;
        case F_COST: show_cost = true; break;
        case F_VALUE: value = true; break;
        case F_DEVICE: devfile = fv; break;
        case F_DRIVER: driver = fv; break;
        case F_GATES: fg = fv; break;
        case F_VERBOSE:
            if (!cli_flag_level("cel", fv, &verbose))
                return CLI_EXIT_INVALID;
            de_log_set_verbosity(verbose);
            break;
        }
    }
    de_gates gates;
    de_gates_default(&gates);
    de_err e;
    de_err_clear(&e);
    if (fg && de_gates_parse(&gates, fg, &e) != DE_OK) {
        cli_errorf("cel", "--feature-gates: %s", e.msg);
        return CLI_EXIT_INVALID;
    }
    if (batch) {
        if (expr || devfile) {
            cli_errorf("cel", "--batch reads its expressions from stdin");
            return CLI_EXIT_INVALID;
        }
        return run_batch(&gates);
    }
    if (!expr) {
        usage(stderr);
        return CLI_EXIT_INVALID;
    }

    int rc = CLI_EXIT_OK;
    de_interner *in = de_intern_new();
    de_arena *a = de_arena_new(SCRATCH_CAP);
    cel_env_opts opts = {0};
    opts.consumable_capacity = gates.on[DE_GATE_CONSUMABLE_CAPACITY];
    opts.list_attributes = gates.on[DE_GATE_LIST_TYPE_ATTRIBUTES];
    opts.new_expressions = newx;
    opts.plain = devfile == NULL;
    opts.any_result = value;
    cel_env *env = cel_env_new(in, &opts);
    de_devview dev;
    json_t *jd = NULL;
    if (devfile) {
        jd = de_doc_load_one(devfile, &e);
        if (!jd || cel_device_from_json(jd, driver, in, a, &dev, &e) != DE_OK) {
            cli_errorf("cel", "%s: %s", devfile, e.msg);
            rc = CLI_EXIT_INVALID;
            goto out;
        }
    }
    cel_prog *p;
    if (cel_compile(env, expr, strlen(expr), &p, &e) != DE_OK) {
        print_error(expr, &e);
        rc = CLI_EXIT_INVALID;
        goto out;
    }
    uint64_t cost = 0;
    if (devfile && !value) {
        bool r;
        if (cel_eval_selector(env, p, &dev, a, &r, &cost, &e) != DE_OK) {
            print_error(expr, &e);
            rc = CLI_EXIT_UNSAT;
            goto out;
        }
        printf("%s\n", r ? "true" : "false");
    } else {
        const cel_value *v;
        if (cel_eval(env, p, devfile ? &dev : NULL, a, &v, &cost, &e) != DE_OK) {
            print_error(expr, &e);
            rc = CLI_EXIT_UNSAT;
            goto out;
        }
        de_buf b;
        de_buf_init(&b, 256u << 20);
        cel_value_format(v, &b);
        printf("%s\n", de_buf_str(&b));
        de_buf_free(&b);
    }
    if (show_cost)
        printf("cost: %llu (estimated worst case %llu)\n", (unsigned long long)cost,
               (unsigned long long)cel_prog_estimated_cost(p));
out:
    json_decref(jd);
    cel_env_free(env);
    de_arena_free(a);
    de_intern_free(in);
    return rc;
}
