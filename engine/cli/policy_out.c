/*
 * policy_out.c - the verdict section and the policy statistics (policy_out.h).
 */
#include "policy_out.h"

#include "cli.h"

#include "../base/log.h"

#include <string.h>

void cli_attrval_text(de_interner *in, const de_attrval *v, de_buf *b)
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

json_t *cli_attrval_json(de_interner *in, const de_attrval *v)
{
    switch (v->kind) {
    case DE_V_INT:
        return json_integer(v->u.i);
    case DE_V_BOOL:
        return json_boolean(v->u.b);
    case DE_V_STRING:
    case DE_V_VERSION:
        return json_string(de_intern_str(in, v->u.s));
    case DE_V_INTS:
    case DE_V_BOOLS:
    case DE_V_STRINGS:
    case DE_V_VERSIONS: {
        json_t *a = json_array();
        for (uint32_t i = 0; i < v->n; i++)
            json_array_append_new(a, v->kind == DE_V_INTS    ? json_integer(v->u.ints[i])
                                     : v->kind == DE_V_BOOLS ? json_boolean(v->u.bools[i])
                                                             : json_string(de_intern_str(in, v->u.strs[i])));
        return a;
    }
    default:
        return json_null();
    }
}

const char *cli_attrval_type(const de_attrval *v)
{
    static const char *const names[] = {"none", "int", "bool", "string", "version", "list of int",
                                        "list of bool", "list of string", "list of version"};
    return v->kind < DE_ARRAY_LEN(names) ? names[v->kind] : "none";
}

void cli_verdict_text(FILE *o, const pol_verdict *v, const char *indent)
{
    fprintf(o, "%shook failures: revision %.12s fails on %u current device%s (%llu failed call%s)\n", indent,
            v->revision, v->ndevices, v->ndevices == 1 ? "" : "s", (unsigned long long)v->nfailures,
            v->nfailures == 1 ? "" : "s");
    for (uint32_t i = 0; i < v->ngroups; i++) {
        const pol_verdict_group *g = &v->groups[i];
        fprintf(o, "%s  policy %s, hook %s, %s", indent, g->policy, g->hook, g->file);
        if (g->line)
            fprintf(o, ":%d", g->line);
        fprintf(o, ": %s: %s\n", pol_reason_str(g->reason), g->message);
        fprintf(o, "%s    on %u device%s:", indent, g->ndevices, g->ndevices == 1 ? "" : "s");
        uint32_t shown = g->nnames < CLI_VERDICT_TEXT_NAMES ? g->nnames : CLI_VERDICT_TEXT_NAMES;
        for (uint32_t k = 0; k < shown; k++)
            fprintf(o, "%s%s", k ? ", " : " ", g->devices[k]);
        if (g->ndevices > shown)
            fprintf(o, ", and %u more", g->ndevices - shown);
        fputc('\n', o);
    }
}

json_t *cli_verdict_json(const pol_verdict *v)
{
    json_t *groups = json_array();
    for (uint32_t i = 0; i < v->ngroups; i++) {
        const pol_verdict_group *g = &v->groups[i];
        json_t *devs = json_array();
        for (uint32_t k = 0; k < g->nnames; k++)
            json_array_append_new(devs, json_string(g->devices[k]));
        json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:i, s:s, s:s, s:i, s:o}", "policy", g->policy, "policyFile",
                              g->policy_file, "hook", g->hook, "file", g->file, "line", (json_int_t)g->line,
                              "reason", pol_reason_str(g->reason), "message", g->message, "deviceCount",
                              (json_int_t)g->ndevices, "devices", devs);
        json_array_append_new(groups, o);
    }
    return json_pack("{s:s, s:i, s:I, s:o}", "revision", v->revision, "devices", (json_int_t)v->ndevices,
                     "failedCalls", (json_int_t)v->nfailures, "failures", groups);
}

void cli_verdict_log(const pol_verdict *v)
{
    for (uint32_t i = 0; i < v->ngroups; i++) {
        const pol_verdict_group *g = &v->groups[i];
        char line[16], count[16];
        snprintf(line, sizeof line, "%d", g->line);
        snprintf(count, sizeof count, "%u", g->ndevices);
        char rev[16];
        snprintf(rev, sizeof rev, "%.12s", v->revision);
        const char *kv[] = {"policy", g->policy, "hook", g->hook, "file", g->file, "line", line,
                            "reason", pol_reason_str(g->reason), "devices", count,
                            "device", g->nnames ? g->devices[0] : "", "revision", rev, NULL};
        de_log_kv(DE_LOG_ERROR, 0, __FILE__, __LINE__, g->message, kv);
    }
}

bool cli_policies_judge(const char *cmd, const char *dir, const pol_host *h)
{
    pol_verdict v;
    bool ok = pol_host_judge(h, &v);
    if (!ok) {
        char sum[2048];
        pol_verdict_summary(&v, sum, sizeof sum);
        cli_errorf(cmd, "--policies %s: %s", dir, sum);
        cli_verdict_text(stderr, &v, "");
    }
    pol_verdict_free(&v);
    return ok;
}

void cli_policy_stats(FILE *o, const char *cmd, const pol_set *s, bool always)
{
    if (!s)
        return;
    pol_stats st;
    pol_set_stats(s, &st);
    uint64_t failed = 0;
    for (int r = 1; r < POL_R_COUNT; r++)
        failed += st.failures[r];
    if (!failed && !always)
        return;
    fprintf(o, "draengine %s: policy statistics (revision %.12s): calls", cmd, pol_set_revision(s));
    for (int h = 0; h < POL_NHOOKS; h++)
        fprintf(o, " %s %llu", pol_hook_names[h], (unsigned long long)st.calls[h]);
    if (st.derive_memo_hits)
        fprintf(o, " (and %llu derive answers from the memo)", (unsigned long long)st.derive_memo_hits);
    if (st.score_memo_hits)
        fprintf(o, " (and %llu score answers from the memo)", (unsigned long long)st.score_memo_hits);
    fprintf(o, "; failed %llu", (unsigned long long)failed);
    if (failed) {
        const char *sep = " (";
        for (int r = 1; r < POL_R_COUNT; r++)
            if (st.failures[r]) {
                fprintf(o, "%s%s %llu", sep, pol_reason_str((pol_reason)r), (unsigned long long)st.failures[r]);
                sep = ", ";
            }
        fputc(')', o);
    }
    fputc('\n', o);
}
