/*
 * cmd_policy_test.c - `draengine policy test [DIR] [-o text|junit|tap|json]`:
 * the packs' specs, run inside the sandbox (engine/policy/testrun.c), and
 * their results in the form a CI system reads.
 *
 *   text   one line per failing (with -v every) test, then the counts
 *   junit  JUnit XML as Jenkins, GitLab and GitHub test reporters read it:
 *          <testsuites> with one <testsuite> per spec file, a <testcase> per
 *          test (classname = the spec file, file and line attributes),
 *          <failure message=...> and <skipped/> for pending tests
 *   tap    TAP version 13: the plan, "ok N - name", "not ok N - name" with
 *          a YAML block (message, at), "# SKIP" for pending tests
 *   json   {summary, tests: [{file, name, where, status, message}]}
 *
 * Results are collected and printed at the end (JUnit and TAP state counts
 * before the tests).  No clock goes into the output: the same specs print
 * the same bytes.  Policies that do not load are exit 2 and, in the
 * machine formats, one error entry, so a CI report shows why.
 */
#include "../policy/testrun.h"
#include "cli.h"
#include "cmd_policy.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

enum { FMT_TEXT, FMT_JUNIT, FMT_TAP, FMT_JSON };

typedef struct result {
    char *file, *name, *where, *message;
    pol_test_status status;
} result;

typedef struct collect {
    int fmt;
    int verbose;
    result *r;
    size_t n, cap;
} collect;

static void on_result(void *ctx, const pol_test_result *r)
{
    collect *c = ctx;
    if (c->fmt == FMT_TEXT) {
        if (r->status == POL_TEST_OK && !c->verbose)
            return;
        const char *tag = r->status == POL_TEST_OK ? "ok" : r->status == POL_TEST_PENDING ? "pending" : "FAIL";
        printf("%-7s %s  %s\n", tag, r->where ? r->where : r->file, r->name);
        if (r->status == POL_TEST_FAIL && r->message) {
            for (const char *m = r->message; *m;) {
                const char *nl = strchr(m, '\n');
                size_t n = nl ? (size_t)(nl - m) : strlen(m);
                printf("        %.*s\n", (int)n, m);
                m += n + (nl ? 1 : 0);
            }
        }
        fflush(stdout);
        return;
    }
    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 64;
        c->r = de_xrealloc(c->r, c->cap * sizeof *c->r);
    }
    result *x = &c->r[c->n++];
    x->file = de_xstrdup(r->file);
    x->name = de_xstrdup(r->name);
    x->where = r->where ? de_xstrdup(r->where) : NULL;
    x->message = r->message ? de_xstrdup(r->message) : NULL;
    x->status = r->status;
}

static void collect_free(collect *c)
{
    for (size_t i = 0; i < c->n; i++) {
        free(c->r[i].file);
        free(c->r[i].name);
        free(c->r[i].where);
        free(c->r[i].message);
    }
    free(c->r);
}

/* XML text or attribute value: the five entities, and characters XML 1.0
 * cannot carry (control characters but tab and newline) as U+FFFD. */
static void xml(FILE *o, const char *s, bool attr)
{
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        switch (*p) {
        case '&': fputs("&amp;", o); break;
        case '<': fputs("&lt;", o); break;
        case '>': fputs("&gt;", o); break;
        case '"': fputs(attr ? "&quot;" : "\"", o); break;
        case '\n': fputs(attr ? "&#10;" : "\n", o); break;
        case '\t': fputs(attr ? "&#9;" : "\t", o); break;
        default:
            if (*p < 0x20)
                fputs("\xef\xbf\xbd", o);
            else
                fputc(*p, o);
        }
    }
}

static int where_line(const result *r)
{
    const char *c = r->where ? strrchr(r->where, ':') : NULL;
    return c ? atoi(c + 1) : 0;
}

/* The first line of a message, for attributes and TAP descriptions. */
static char *first_line(const char *m)
{
    if (!m)
        return de_xstrdup("");
    size_t n = strcspn(m, "\n");
    return de_xstrndup(m, n);
}

static void print_junit(const collect *c, const pol_test_summary *sum, const char *dir, const char *error)
{
    printf("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    uint32_t tests = sum->passed + sum->failed + sum->pending;
    printf("<testsuites name=\"draengine policy test ");
    xml(stdout, dir, true);
    printf("\" tests=\"%u\" failures=\"%u\" errors=\"%u\" skipped=\"%u\">\n", tests + (error ? 1 : 0), sum->failed,
           error ? 1 : 0, sum->pending);
    if (error) {
        printf("  <testsuite name=\"");
        xml(stdout, dir, true);
        printf("\" tests=\"1\" failures=\"0\" errors=\"1\" skipped=\"0\">\n    <testcase classname=\"");
        xml(stdout, dir, true);
        printf("\" name=\"loading the policies\">\n      <error message=\"");
        char *fl = first_line(error);
        xml(stdout, fl, true);
        free(fl);
        printf("\">");
        xml(stdout, error, false);
        printf("</error>\n    </testcase>\n  </testsuite>\n");
    }
    for (size_t i = 0; i < c->n;) {
        size_t j = i;
        uint32_t f = 0, p = 0;
        while (j < c->n && !strcmp(c->r[j].file, c->r[i].file)) {
            f += c->r[j].status == POL_TEST_FAIL;
            p += c->r[j].status == POL_TEST_PENDING;
            j++;
        }
        printf("  <testsuite name=\"");
        xml(stdout, c->r[i].file, true);
        printf("\" tests=\"%zu\" failures=\"%u\" errors=\"0\" skipped=\"%u\">\n", j - i, f, p);
        for (size_t k = i; k < j; k++) {
            const result *r = &c->r[k];
            printf("    <testcase classname=\"");
            xml(stdout, r->file, true);
            printf("\" name=\"");
            xml(stdout, r->name, true);
            printf("\" file=\"");
            xml(stdout, r->file, true);
            printf("\"");
            if (where_line(r))
                printf(" line=\"%d\"", where_line(r));
            if (r->status == POL_TEST_OK) {
                printf("/>\n");
                continue;
            }
            printf(">\n");
            if (r->status == POL_TEST_PENDING) {
                printf("      <skipped message=\"pending\"/>\n");
            } else {
                char *fl = first_line(r->message);
                printf("      <failure message=\"");
                xml(stdout, fl, true);
                printf("\" type=\"failure\">");
                if (r->where) {
                    xml(stdout, r->where, false);
                    printf("\n");
                }
                xml(stdout, r->message, false);
                printf("</failure>\n");
                free(fl);
            }
            printf("    </testcase>\n");
        }
        printf("  </testsuite>\n");
        i = j;
    }
    printf("</testsuites>\n");
}

static void tap_yaml_block(const char *key, const char *text)
{
    printf("    %s: |-\n", key);
    for (const char *m = text; *m;) {
        size_t n = strcspn(m, "\n");
        printf("      %.*s\n", (int)n, m);
        m += n + (m[n] ? 1 : 0);
    }
}

/* A TAP description may not contain '#' (it starts a directive) or a newline. */
static void tap_desc(const char *s)
{
    for (; *s; s++)
        putchar(*s == '#' ? '_' : *s == '\n' ? ' ' : *s);
}

static void print_tap(const collect *c, const char *error)
{
    printf("TAP version 13\n1..%zu\n", c->n + (error ? 1 : 0));
    size_t k = 0;
    if (error) {
        printf("not ok %zu - loading the policies\n  ---\n", ++k);
        tap_yaml_block("message", error);
        printf("  ...\n");
    }
    for (size_t i = 0; i < c->n; i++) {
        const result *r = &c->r[i];
        printf("%s %zu - ", r->status == POL_TEST_FAIL ? "not ok" : "ok", ++k);
        tap_desc(r->name);
        if (r->status == POL_TEST_PENDING)
            printf(" # SKIP pending");
        printf("\n");
        if (r->status == POL_TEST_FAIL) {
            printf("  ---\n");
            tap_yaml_block("message", r->message ? r->message : "failed");
            printf("    at: \"%s\"\n  ...\n", r->where ? r->where : r->file);
        }
    }
}

static void print_json(const collect *c, const pol_test_summary *sum, const char *dir, const char *error)
{
    json_t *tests = json_array();
    for (size_t i = 0; i < c->n; i++) {
        const result *r = &c->r[i];
        const char *st = r->status == POL_TEST_OK ? "passed" : r->status == POL_TEST_PENDING ? "pending" : "failed";
        json_t *t = json_pack("{s:s, s:s, s:s}", "file", r->file, "name", r->name, "status", st);
        json_object_set_new(t, "where", r->where ? json_string(r->where) : json_null());
        json_object_set_new(t, "message", r->message ? json_string(r->message) : json_null());
        json_array_append_new(tests, t);
    }
    json_t *doc = json_pack("{s:s, s:{s:i, s:i, s:i, s:i, s:i}, s:o}", "directory", dir, "summary", "files",
                            (json_int_t)sum->files, "tests", (json_int_t)(sum->passed + sum->failed),
                            "passed", (json_int_t)sum->passed, "failed", (json_int_t)sum->failed, "pending",
                            (json_int_t)sum->pending, "tests", tests);
    json_object_set_new(doc, "error", error ? json_string(error) : json_null());
    char *s = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    printf("%s\n", s);
    free(s);
    json_decref(doc);
}

static void test_help(FILE *o)
{
    fprintf(o,
            "usage: draengine policy test [DIR] [flags]\n\n"
            "Run the specs of DIR (DIR/spec/*_spec.lua, DIR/*_spec.lua) and of every pack in it, inside the\n"
            "real sandbox, one fresh VM per file.  DIR defaults to policies.\n\nflags:\n"
            "  -o, --output text|junit|tap|json  text (default), JUnit XML, TAP 13 or JSON\n"
            "  --policies DIR                    the directory (instead of the operand; --policy-dir too)\n"
            "%s"
            "  -v                                text: list passing tests too\n"
            "  -h, --help                        this help\n\n"
            "Exit status: 0 every test passed (and there was one), 1 a test failed or none was found,\n"
            "2 the policies do not load or a usage error.\n",
            policy_limit_help);
}

int cli_policy_test(int argc, char **argv)
{
    static const cli_flag flags[] = {
        PF_COMMON_FLAGS,
        PF_LIMIT_FLAGS,
        {"policies", 0, CLI_ARG_REQUIRED, PF_POLICIES, "policy-dir"},
        {"output", 'o', CLI_ARG_REQUIRED, PF_OUTPUT, NULL},
        {0},
    };
    policy_opts o = {0};
    int pr = policy_parse(argc, argv, &o, "test", flags, test_help);
    if (pr)
        return pr > 0 ? CLI_EXIT_OK : CLI_EXIT_INVALID;
    static const char *const formats[] = {"text", "junit", "tap", "json", NULL};
    const char *dir = policy_dir_arg(&o, "test", "policies");
    if (!dir || !policy_want_format(&o, formats))
        return CLI_EXIT_INVALID;
    int fmt = !strcmp(o.out, "junit") ? FMT_JUNIT : !strcmp(o.out, "tap") ? FMT_TAP
              : !strcmp(o.out, "json") ? FMT_JSON : FMT_TEXT;
    collect c = {.fmt = fmt, .verbose = o.verbose};
    pol_test_summary sum;
    de_err e;
    de_err_clear(&e);
    int ret;
    bool none = false;
    const char *error = NULL;
    if (pol_test_run(dir, &o.cfg, on_result, &c, &sum, &e) != DE_OK) {
        cli_errorf(o.who, "%s", e.msg);
        memset(&sum, 0, sizeof sum);
        error = e.msg;
        ret = CLI_EXIT_INVALID;
    } else {
        uint32_t total = sum.passed + sum.failed;
        ret = sum.failed || !total ? CLI_EXIT_UNSAT : CLI_EXIT_OK;
        none = !total;
    }
    switch (fmt) {
    case FMT_TEXT:
        if (!error) {
            printf("%u spec files, %u tests, %u pending\n", sum.files, sum.passed + sum.failed, sum.pending);
            printf("%u passed, %u failed\n", sum.passed, sum.failed);
        }
        break;
    case FMT_JUNIT:
        print_junit(&c, &sum, dir, error);
        break;
    case FMT_TAP:
        print_tap(&c, error);
        break;
    default:
        print_json(&c, &sum, dir, error);
    }
    fflush(stdout);
    if (none)
        cli_errorf(o.who, "no tests found under %s (spec files are <dir>/spec/*_spec.lua and "
                          "<pack>/spec/*_spec.lua)", dir);
    collect_free(&c);
    return ret;
}
