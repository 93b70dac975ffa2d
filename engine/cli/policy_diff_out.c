/*
 * policy_diff_out.c - `policy diff` as text, Markdown and JSON
 * (policy_diff.h).  All three are made from the same groups, in the same
 * order, so they cannot disagree.
 */
#include "policy_diff.h"

#include "../base/buf.h"
#include "policy_out.h"

#include <stdlib.h>
#include <string.h>

/* ---- groups --------------------------------------------------------------------- */

typedef struct member {
    const pd_device *d;
    const pd_change *c;
} member;

typedef struct group {
    const char *driver, *attr;
    char kind;
    const member *m; /* members, sorted by device */
    uint32_t n;
    bool same_from, same_to; /* every member has the same value */
} group;

static int kind_rank(char k) { return k == '+' ? 0 : k == '~' ? 1 : 2; }

static bool same_text(const char *a, const char *b) { return (!a && !b) || (a && b && !strcmp(a, b)); }

static int cmp_member(const void *x, const void *y)
{
    const member *a = x, *b = y;
    int c = strcmp(a->d->driver, b->d->driver);
    if (!c)
        c = strcmp(a->c->attr, b->c->attr);
    if (!c)
        c = kind_rank(a->c->kind) - kind_rank(b->c->kind);
    if (!c)
        c = strcmp(a->d->key, b->d->key);
    return c;
}

typedef struct grouping {
    member *m;
    group *g;
    uint32_t ng;
} grouping;

static void make_groups(const pd_result *r, grouping *out)
{
    size_t n = 0;
    for (uint32_t i = 0; i < r->ndevs; i++)
        n += r->devs[i].nch;
    out->m = de_xcalloc(n ? n : 1, sizeof *out->m);
    out->g = de_xcalloc(n ? n : 1, sizeof *out->g);
    out->ng = 0;
    size_t k = 0;
    for (uint32_t i = 0; i < r->ndevs; i++)
        for (uint32_t j = 0; j < r->devs[i].nch; j++)
            out->m[k++] = (member){&r->devs[i], &r->devs[i].ch[j]};
    if (n)
        qsort(out->m, n, sizeof *out->m, cmp_member);
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && !strcmp(out->m[j].d->driver, out->m[i].d->driver) &&
               !strcmp(out->m[j].c->attr, out->m[i].c->attr) && out->m[j].c->kind == out->m[i].c->kind)
            j++;
        group *g = &out->g[out->ng++];
        g->driver = out->m[i].d->driver;
        g->attr = out->m[i].c->attr;
        g->kind = out->m[i].c->kind;
        g->m = &out->m[i];
        g->n = (uint32_t)(j - i);
        g->same_from = g->same_to = true;
        for (size_t q = i + 1; q < j; q++) {
            g->same_from &= same_text(out->m[q].c->from, out->m[i].c->from);
            g->same_to &= same_text(out->m[q].c->to, out->m[i].c->to);
        }
        i = j;
    }
}

static void free_groups(grouping *gr)
{
    free(gr->m);
    free(gr->g);
}

/* A name or value: in Markdown a code span, whose text may not hold a
 * backtick (it would end the span) or a newline. */
static void val(de_buf *b, const char *s, bool md)
{
    if (!md) {
        de_buf_puts(b, s ? s : "");
        return;
    }
    de_buf_putc(b, '`');
    for (; s && *s; s++)
        de_buf_putc(b, *s == '`' ? '\'' : *s == '\n' ? ' ' : *s);
    de_buf_putc(b, '`');
}

/* "+ dra.net/pciBusID on 56 dra.net devices", values when they agree. */
static void group_line(const group *g, de_buf *b, bool md)
{
    const pd_change *c = g->m[0].c;
    de_buf_printf(b, "%s%c%s ", md ? "**" : "", g->kind, md ? "**" : "");
    val(b, g->attr, md);
    if (g->kind == '+' && g->same_to) {
        de_buf_puts(b, " = ");
        val(b, c->to, md);
    } else if (g->kind == '-' && g->same_from) {
        de_buf_puts(b, " (was ");
        val(b, c->from, md);
        de_buf_putc(b, ')');
    } else if (g->kind == '~' && g->same_from) {
        de_buf_puts(b, ": ");
        val(b, c->from, md);
        de_buf_puts(b, " -> ");
        if (g->same_to)
            val(b, c->to, md);
        else
            de_buf_puts(b, "(per device)");
    }
    de_buf_printf(b, " on %u ", g->n);
    val(b, g->driver, md);
    de_buf_printf(b, " device%s", g->n == 1 ? "" : "s");
}

/* One device of a group: its name and, where the group line has no value, its value. */
static void member_line(const group *g, const member *m, de_buf *b, bool md)
{
    val(b, m->d->key, md);
    if (g->kind == '+' && !g->same_to) {
        de_buf_puts(b, " = ");
        val(b, m->c->to, md);
    } else if (g->kind == '-' && !g->same_from) {
        de_buf_puts(b, " (was ");
        val(b, m->c->from, md);
        de_buf_putc(b, ')');
    } else if (g->kind == '~' && !(g->same_from && g->same_to)) {
        de_buf_puts(b, ": ");
        val(b, m->c->from, md);
        de_buf_puts(b, " -> ");
        val(b, m->c->to, md);
    }
}

static const char *const kind_title[PD_NKINDS] = {"become unschedulable", "allocated differently",
                                                  "become schedulable"};
static const char *const kind_title1[PD_NKINDS] = {"becomes unschedulable", "allocated differently",
                                                   "becomes schedulable"};

static void claim_detail(const pd_claim *c, de_buf *b)
{
    de_buf_printf(b, "%s/%s", c->ns, c->name);
    switch (c->kind) {
    case PD_UNSCHEDULABLE:
        de_buf_printf(b, " (was %s [%s]): %s", c->from_node, c->from_devices, c->why ? c->why : "?");
        break;
    case PD_REALLOCATED:
        de_buf_printf(b, ": %s [%s] -> %s [%s]", c->from_node, c->from_devices, c->to_node, c->to_devices);
        break;
    default:
        de_buf_printf(b, ": %s [%s]", c->to_node, c->to_devices);
    }
}

static uint32_t changed_devices(const pd_result *r) { return r->ndevs; }

/* "3 claims become unschedulable: a/x, b/y, c/z" (Markdown: bold, names as code). */
static void claims_line(const pd_result *r, int k, de_buf *b, bool md)
{
    de_buf_printf(b, "%s%u claim%s %s%s:", md ? "**" : "", r->count[k], r->count[k] == 1 ? "" : "s",
                  r->count[k] == 1 ? kind_title1[k] : kind_title[k], md ? "**" : "");
    uint32_t named = 0;
    for (uint32_t i = 0; i < r->nclaims; i++)
        if (r->claims[i].kind == k && named++ < PD_DETAILS_MAX)
            de_buf_printf(b, "%s%s%s/%s%s", named > 1 ? ", " : " ", md ? "`" : "", r->claims[i].ns, r->claims[i].name,
                          md ? "`" : "");
    if (named > PD_DETAILS_MAX)
        de_buf_printf(b, ", and %u more", named - PD_DETAILS_MAX);
}

/* ---- text ---------------------------------------------------------------------- */

void pd_text(const pd_result *r, FILE *o)
{
    fprintf(o, "policy diff: %s (revision %.12s) -> %s (revision %.12s)\n", r->from_dir, r->from_rev, r->to_dir,
            r->to_rev);
    if (r->to_v->ndevices) {
        fprintf(o, "REFUSED: the --to revision fails on current devices; every command refuses it\n");
        cli_verdict_text(o, r->to_v, "");
    }
    if (r->from_v->ndevices) {
        fprintf(o, "the --from revision fails too:\n");
        cli_verdict_text(o, r->from_v, "  ");
    }
    grouping gr;
    make_groups(r, &gr);
    uint32_t nd = changed_devices(r);
    fprintf(o, "derived attributes: %u device%s changed%s\n", nd, nd == 1 ? "" : "s",
            r->to_v->ndevices ? " (devices with hook failures are in the failures section)" : "");
    de_buf b;
    de_buf_init(&b, 1 << 20);
    for (uint32_t i = 0; i < gr.ng; i++) {
        const group *g = &gr.g[i];
        de_buf_reset(&b);
        group_line(g, &b, false);
        fprintf(o, "  %s\n", de_buf_str(&b));
        uint32_t shown = g->n < PD_DETAILS_MAX ? g->n : PD_DETAILS_MAX;
        for (uint32_t k = 0; k < shown; k++) {
            de_buf_reset(&b);
            member_line(g, &g->m[k], &b, false);
            fprintf(o, "      %s\n", de_buf_str(&b));
        }
        if (g->n > shown)
            fprintf(o, "      ... and %u more (-o json lists every device)\n", g->n - shown);
    }
    fprintf(o, "allocations: %u pending claim%s replayed\n", r->npending, r->npending == 1 ? "" : "s");
    for (int k = 0; k < PD_NKINDS; k++) {
        if (!r->count[k])
            continue;
        de_buf_reset(&b);
        claims_line(r, k, &b, false);
        fprintf(o, "  %s\n", de_buf_str(&b));
        for (uint32_t i = 0; i < r->nclaims; i++) {
            if (r->claims[i].kind != k)
                continue;
            de_buf_reset(&b);
            claim_detail(&r->claims[i], &b);
            fprintf(o, "    %s\n", de_buf_str(&b));
        }
    }
    fprintf(o,
            "summary: %u devices with changed attributes, %u claims allocated differently, %u become "
            "unschedulable, %u become schedulable",
            nd, r->count[PD_REALLOCATED], r->count[PD_UNSCHEDULABLE], r->count[PD_SCHEDULABLE]);
    if (r->to_v->ndevices)
        fprintf(o, "; refused: hook failures on %u device%s", r->to_v->ndevices, r->to_v->ndevices == 1 ? "" : "s");
    fputc('\n', o);
    de_buf_free(&b);
    free_groups(&gr);
}

/* ---- Markdown ------------------------------------------------------------------- */

/* Free text in Markdown: HTML and Markdown punctuation escaped, so a
 * reason or a message renders as written and cannot open a tag. */
static void md_text(de_buf *b, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '<': de_buf_puts(b, "&lt;"); break;
        case '>': de_buf_puts(b, "&gt;"); break;
        case '&': de_buf_puts(b, "&amp;"); break;
        case '\n': de_buf_putc(b, ' '); break;
        case '\\': case '`': case '*': case '_': case '[': case ']': case '|': case '#': case '~':
            de_buf_putc(b, '\\');
            de_buf_putc(b, *s);
            break;
        default:
            de_buf_putc(b, *s);
        }
    }
}

/* A line made of code spans (val) and plain words: only newlines go. */
static void md_code_line(de_buf *b, const char *s)
{
    for (; *s; s++)
        de_buf_putc(b, *s == '\n' ? ' ' : *s);
}

typedef struct mdout {
    de_buf b;
    bool cut; /* details left out to stay under PD_MARKDOWN_MAX */
} mdout;

/* A <details> block with one bullet per line, dropped whole when it would
 * not fit under the size limit. */
static void md_details(mdout *m, const char *summary, const de_buf *items, uint32_t nitems)
{
    if (!nitems)
        return;
    size_t need = items->len + strlen(summary) + 64;
    if (m->b.len + need > PD_MARKDOWN_MAX - 400) {
        m->cut = true;
        return;
    }
    de_buf_printf(&m->b, "<details><summary>%s</summary>\n\n%s\n</details>\n\n", summary, de_buf_str(items));
}

void pd_markdown(const pd_result *r, FILE *o)
{
    mdout m = {.cut = false};
    de_buf_init(&m.b, 1 << 24);
    de_buf *b = &m.b;
    de_buf_puts(b, "### draengine policy diff\n\n");
    de_buf_printf(b, "`%s` (`%.12s`) &rarr; `%s` (`%.12s`)\n\n", r->from_dir, r->from_rev, r->to_dir, r->to_rev);
    if (r->to_v->ndevices)
        de_buf_printf(b, ":x: **Refused**: %llu hook call%s of the new revision failed on %u current device%s; "
                         "`serve`, `allocate` and `run` refuse it too.\n\n",
                      (unsigned long long)r->to_v->nfailures, r->to_v->nfailures == 1 ? "" : "s",
                      r->to_v->ndevices, r->to_v->ndevices == 1 ? "" : "s");
    else
        de_buf_puts(b, ":white_check_mark: No hook of the new revision failed on the snapshot's devices.\n\n");
    uint32_t nd = changed_devices(r);
    de_buf_printf(b, "| | |\n|---|---:|\n| devices with changed derived attributes | %u |\n"
                     "| claims that become unschedulable | %u |\n| claims allocated differently | %u |\n"
                     "| claims that become schedulable | %u |\n| pending claims replayed | %u |\n",
                  nd, r->count[PD_UNSCHEDULABLE], r->count[PD_REALLOCATED], r->count[PD_SCHEDULABLE], r->npending);
    if (r->to_v->ndevices)
        de_buf_printf(b, "| devices with hook failures | %u |\n", r->to_v->ndevices);
    de_buf_putc(b, '\n');
    de_buf items;
    de_buf_init(&items, 1 << 22);
    const pol_verdict *vs[2] = {r->to_v, r->from_v};
    for (int side = 0; side < 2; side++) {
        const pol_verdict *v = vs[side];
        if (!v->ndevices)
            continue;
        de_buf_printf(b, "#### Hook failures%s\n\n", side ? " of the current (`--from`) revision" : "");
        for (uint32_t i = 0; i < v->ngroups; i++) {
            const pol_verdict_group *g = &v->groups[i];
            de_buf_printf(b, "- **%s** `%s` at `%s", g->policy, g->hook, g->file);
            if (g->line)
                de_buf_printf(b, ":%d", g->line);
            de_buf_printf(b, "`: %s: ", pol_reason_str(g->reason));
            md_text(b, g->message);
            de_buf_printf(b, " (%u device%s)\n", g->ndevices, g->ndevices == 1 ? "" : "s");
        }
        de_buf_putc(b, '\n');
        for (uint32_t i = 0; i < v->ngroups; i++) {
            const pol_verdict_group *g = &v->groups[i];
            de_buf_reset(&items);
            uint32_t shown = g->nnames < PD_DETAILS_MAX ? g->nnames : PD_DETAILS_MAX;
            for (uint32_t k = 0; k < shown; k++)
                de_buf_printf(&items, "- `%s`\n", g->devices[k]);
            if (g->ndevices > shown)
                de_buf_printf(&items, "- and %u more\n", g->ndevices - shown);
            char sum[256];
            snprintf(sum, sizeof sum, "%s %s: the %u device%s", g->policy, g->hook, g->ndevices,
                     g->ndevices == 1 ? "" : "s");
            md_details(&m, sum, &items, shown);
        }
    }
    grouping gr;
    make_groups(r, &gr);
    if (gr.ng) {
        de_buf_printf(b, "#### Derived attributes (%u device%s)\n\n", nd, nd == 1 ? "" : "s");
        de_buf line;
        de_buf_init(&line, 1 << 20);
        for (uint32_t i = 0; i < gr.ng; i++) {
            de_buf_reset(&line);
            group_line(&gr.g[i], &line, true);
            de_buf_puts(b, "- ");
            md_code_line(b, de_buf_str(&line));
            de_buf_putc(b, '\n');
        }
        de_buf_putc(b, '\n');
        for (uint32_t i = 0; i < gr.ng; i++) {
            const group *g = &gr.g[i];
            de_buf_reset(&items);
            uint32_t shown = g->n < PD_DETAILS_MAX ? g->n : PD_DETAILS_MAX;
            for (uint32_t k = 0; k < shown; k++) {
                de_buf_reset(&line);
                member_line(g, &g->m[k], &line, true);
                de_buf_puts(&items, "- ");
                md_code_line(&items, de_buf_str(&line));
                de_buf_putc(&items, '\n');
            }
            if (g->n > shown)
                de_buf_printf(&items, "- and %u more\n", g->n - shown);
            char sum[400];
            snprintf(sum, sizeof sum, "%c %s on %u %s device%s", g->kind, g->attr, g->n, g->driver,
                     g->n == 1 ? "" : "s");
            de_buf esc;
            de_buf_init(&esc, 4096);
            md_text(&esc, sum);
            md_details(&m, de_buf_str(&esc), &items, shown);
            de_buf_free(&esc);
        }
        de_buf_free(&line);
    }
    free_groups(&gr);
    if (r->count[PD_UNSCHEDULABLE] + r->count[PD_REALLOCATED] + r->count[PD_SCHEDULABLE]) {
        de_buf_printf(b, "#### Allocations (%u pending claim%s replayed)\n\n", r->npending,
                      r->npending == 1 ? "" : "s");
        for (int k = 0; k < PD_NKINDS; k++) {
            if (!r->count[k])
                continue;
            de_buf_puts(b, "- ");
            claims_line(r, k, b, true);
            de_buf_putc(b, '\n');
        }
        de_buf_putc(b, '\n');
        for (int k = 0; k < PD_NKINDS; k++) {
            if (!r->count[k])
                continue;
            de_buf_reset(&items);
            uint32_t shown = 0;
            for (uint32_t i = 0; i < r->nclaims && shown < PD_DETAILS_MAX; i++) {
                if (r->claims[i].kind != k)
                    continue;
                shown++;
                de_buf d;
                de_buf_init(&d, 1 << 20);
                claim_detail(&r->claims[i], &d);
                de_buf_puts(&items, "- ");
                md_text(&items, de_buf_str(&d));
                de_buf_putc(&items, '\n');
                de_buf_free(&d);
            }
            if (r->count[k] > shown)
                de_buf_printf(&items, "- and %u more\n", r->count[k] - shown);
            char sum[128];
            snprintf(sum, sizeof sum, "%u claim%s %s", r->count[k], r->count[k] == 1 ? "" : "s",
                     r->count[k] == 1 ? kind_title1[k] : kind_title[k]);
            md_details(&m, sum, &items, shown);
        }
    }
    if (m.cut)
        de_buf_puts(b, "_Some details were left out to keep this comment under GitHub's size limit; "
                       "`draengine policy diff -o json` has all of them._\n");
    fputs(de_buf_str(b), o);
    de_buf_free(&items);
    de_buf_free(b);
}

/* ---- JSON ---------------------------------------------------------------------- */

static const char *change_name(char k) { return k == '+' ? "added" : k == '-' ? "removed" : "changed"; }
static const char *const kind_name[PD_NKINDS] = {"unschedulable", "reallocated", "schedulable"};

static json_t *device_list(const char *s)
{
    json_t *a = json_array();
    while (s && *s) {
        size_t n = strcspn(s, ",");
        json_array_append_new(a, json_stringn(s, n));
        s += n + (s[n] ? 1 : 0);
    }
    return a;
}

static json_t *placement(const char *node, const char *devices)
{
    return json_pack("{s:s, s:o}", "node", node ? node : "", "devices", device_list(devices));
}

json_t *pd_json(const pd_result *r)
{
    grouping gr;
    make_groups(r, &gr);
    json_t *groups = json_array();
    for (uint32_t i = 0; i < gr.ng; i++) {
        const group *g = &gr.g[i];
        json_t *o = json_pack("{s:s, s:s, s:s, s:i}", "change", change_name(g->kind), "attribute", g->attr,
                              "driver", g->driver, "deviceCount", (json_int_t)g->n);
        if (g->kind != '+' && g->same_from)
            json_object_set(o, "from", g->m[0].c->jfrom);
        if (g->kind != '-' && g->same_to)
            json_object_set(o, "to", g->m[0].c->jto);
        json_array_append_new(groups, o);
    }
    free_groups(&gr);
    json_t *devs = json_array();
    for (uint32_t i = 0; i < r->ndevs; i++) {
        const pd_device *d = &r->devs[i];
        json_t *ch = json_array();
        for (uint32_t k = 0; k < d->nch; k++) {
            const pd_change *c = &d->ch[k];
            json_t *o = json_pack("{s:s, s:s, s:s}", "change", change_name(c->kind), "attribute", c->attr, "type",
                                  c->type);
            if (c->jfrom)
                json_object_set(o, "from", c->jfrom);
            if (c->jto)
                json_object_set(o, "to", c->jto);
            json_array_append_new(ch, o);
        }
        json_array_append_new(devs, json_pack("{s:s, s:s, s:o}", "device", d->key, "driver", d->driver, "changes", ch));
    }
    json_t *claims = json_array();
    for (uint32_t i = 0; i < r->nclaims; i++) {
        const pd_claim *c = &r->claims[i];
        json_t *o = json_pack("{s:s, s:s, s:s}", "claim", c->name, "namespace", c->ns, "change", kind_name[c->kind]);
        if (c->kind != PD_SCHEDULABLE)
            json_object_set_new(o, "from", placement(c->from_node, c->from_devices));
        if (c->kind != PD_UNSCHEDULABLE)
            json_object_set_new(o, "to", placement(c->to_node, c->to_devices));
        if (c->kind == PD_UNSCHEDULABLE)
            json_object_set_new(o, "reason", json_string(c->why ? c->why : ""));
        json_array_append_new(claims, o);
    }
    json_t *from = json_pack("{s:s, s:s}", "dir", r->from_dir, "revision", r->from_rev);
    json_object_set_new(from, "failures", r->from_v->ndevices ? cli_verdict_json(r->from_v) : json_null());
    json_t *doc = json_pack("{s:o, s:{s:s, s:s}, s:b}", "from", from, "to", "dir", r->to_dir, "revision", r->to_rev,
                            "refused", r->to_v->ndevices > 0);
    json_object_set_new(doc, "failures", r->to_v->ndevices ? cli_verdict_json(r->to_v) : json_null());
    json_object_set_new(doc, "attributes", groups);
    json_object_set_new(doc, "devices", devs);
    json_object_set_new(doc, "claims", claims);
    json_object_set_new(doc, "summary",
                        json_pack("{s:i, s:i, s:i, s:i, s:i, s:i}", "devicesChanged", (json_int_t)r->ndevs,
                                  "claimsReallocated", (json_int_t)r->count[PD_REALLOCATED], "claimsUnschedulable",
                                  (json_int_t)r->count[PD_UNSCHEDULABLE], "claimsSchedulable",
                                  (json_int_t)r->count[PD_SCHEDULABLE], "claimsPending", (json_int_t)r->npending,
                                  "devicesWithHookFailures", (json_int_t)r->to_v->ndevices));
    return doc;
}
