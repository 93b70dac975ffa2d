/*
 * flags.c - flag values: numbers, reals, Go durations, booleans (flags.h).
 */
#include "flags.h"

#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool refuse(const char **why, const char *text)
{
    if (why)
        *why = text;
    return false;
}

bool cli_parse_u64(const char *s, uint64_t *out, const char **why)
{
    if (!s || !*s)
        return refuse(why, "is empty");
    if (*s == '-')
        return refuse(why, "is negative");
    unsigned base = 10;
    const char *p = s;
    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
        base = 16;
        p += 2;
    }
    if (!*p)
        return refuse(why, "is not a number");
    uint64_t v = 0;
    for (; *p; p++) {
        unsigned d;
        if (*p >= '0' && *p <= '9')
            d = (unsigned)(*p - '0');
        else if (base == 16 && *p >= 'a' && *p <= 'f')
            d = (unsigned)(*p - 'a' + 10);
        else if (base == 16 && *p >= 'A' && *p <= 'F')
            d = (unsigned)(*p - 'A' + 10);
        else
            return refuse(why, "is not a number");
        if (v > (UINT64_MAX - d) / base)
            return refuse(why, "is too large");
        v = v * base + d;
    }
    *out = v;
    return true;
}

bool cli_parse_real(const char *s, double *out, const char **why)
{
    if (!s || !*s)
        return refuse(why, "is empty");
    /* strtod skips leading blanks; a flag value with them is a mistake */
    if (*s == ' ' || *s == '\t' || *s == '\n')
        return refuse(why, "is not a number");
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end)
        return refuse(why, "is not a number");
    if (isnan(v))
        return refuse(why, "is not a number (NaN)");
    if (isinf(v) || errno == ERANGE)
        return refuse(why, "is out of range");
    *out = v;
    return true;
}

typedef struct unit {
    const char *name;
    uint64_t ns;
} unit;

/* Longest names first, so "ms" is not read as "m" followed by "s". */
static const unit units[] = {
    {"ns", 1},           {"us", 1000},      {"\xc2\xb5s", 1000}, /* µs, U+00B5 */
    {"\xce\xbcs", 1000}, /* μs, U+03BC */   {"ms", 1000000},     {"s", 1000000000ull},
    {"m", 60000000000ull}, {"h", 3600000000000ull},
};

bool cli_parse_duration(const char *s, uint64_t *ns, const char **why)
{
    if (!s || !*s)
        return refuse(why, "is empty");
    const char *p = s;
    bool neg = *p == '-';
    if (*p == '-' || *p == '+')
        p++;
    if (!strcmp(p, "0")) {
        *ns = 0;
        return true;
    }
    if (!*p)
        return refuse(why, "is not a duration");
    unsigned __int128 total = 0;
    while (*p) {
        /* integer part */
        unsigned __int128 whole = 0;
        bool digits = false;
        while (*p >= '0' && *p <= '9') {
            whole = whole * 10 + (unsigned)(*p++ - '0');
            digits = true;
            if (whole > CLI_DURATION_MAX)
                return refuse(why, "is out of range (more than 292 years)");
        }
        /* fraction: up to 19 digits count, the rest cannot change a result in ns */
        uint64_t frac = 0, scale = 1;
        if (*p == '.') {
            p++;
            while (*p >= '0' && *p <= '9') {
                if (scale < 10000000000000000000ull) {
                    frac = frac * 10 + (uint64_t)(*p - '0');
                    scale *= 10;
                }
                p++;
                digits = true;
            }
        }
        if (!digits)
            return refuse(why, "is not a duration");
        const unit *u = NULL;
        for (size_t i = 0; i < DE_ARRAY_LEN(units); i++) {
            size_t n = strlen(units[i].name);
            if (!strncmp(p, units[i].name, n) && (!u || n > strlen(u->name)))
                u = &units[i];
        }
        if (!u)
            return refuse(why, *p ? "has an unknown unit (want ns, us, ms, s, m or h)"
                                  : "has no unit (want e.g. 500ms, 2s, 1m30s)");
        p += strlen(u->name);
        total += whole * u->ns + (unsigned __int128)frac * u->ns / scale;
        if (total > CLI_DURATION_MAX)
            return refuse(why, "is out of range (more than 292 years)");
    }
    if (neg && total)
        return refuse(why, "is negative"); /* Go's "-0s" is zero */
    *ns = (uint64_t)total;
    return true;
}

bool cli_parse_bool(const char *s, bool *out)
{
    if (!s || !strcmp(s, "true") || !strcmp(s, "1")) {
        *out = true;
        return true;
    }
    if (!strcmp(s, "false") || !strcmp(s, "0")) {
        *out = false;
        return true;
    }
    return false;
}

void cli_format_duration(uint64_t ns, char *buf, size_t cap)
{
    if (ns == 0) {
        snprintf(buf, cap, "0s");
    } else if (ns < 1000) {
        snprintf(buf, cap, "%lluns", (unsigned long long)ns);
    } else if (ns < 1000000) {
        snprintf(buf, cap, "%gus", (double)ns / 1e3);
    } else if (ns < 1000000000ull) {
        snprintf(buf, cap, "%gms", (double)ns / 1e6);
    } else {
        uint64_t h = ns / 3600000000000ull, m = ns / 60000000000ull % 60;
        double sec = (double)(ns % 60000000000ull) / 1e9;
        if (h)
            snprintf(buf, cap, "%lluh%llum%gs", (unsigned long long)h, (unsigned long long)m, sec);
        else if (m)
            snprintf(buf, cap, "%llum%gs", (unsigned long long)m, sec);
        else
            snprintf(buf, cap, "%gs", sec);
    }
}

bool cli_flag_u64(const char *cmd, const char *flag, const char *val, uint64_t min, uint64_t max,
                  uint64_t *out)
{
    const char *why = NULL;
    uint64_t v = 0;
    if (cli_parse_u64(val, &v, &why) && v >= min && v <= max) {
        *out = v;
        return true;
    }
    if (!why)
        why = v < min ? "is too small" : "is too large";
    cli_errorf(cmd, "%s: \"%s\" %s (want an integer in %llu..%llu)", flag, val ? val : "", why,
               (unsigned long long)min, (unsigned long long)max);
    return false;
}

bool cli_flag_real(const char *cmd, const char *flag, const char *val, double min, bool min_open,
                   double max, double *out)
{
    const char *why = NULL;
    double v = 0;
    if (cli_parse_real(val, &v, &why) && (min_open ? v > min : v >= min) && v <= max) {
        *out = v;
        return true;
    }
    if (!why)
        why = v > max ? "is too large" : "is too small";
    cli_errorf(cmd, "%s: \"%s\" %s (want a number %s %g and at most %g)", flag, val ? val : "", why,
               min_open ? "above" : "of at least", min, max);
    return false;
}

bool cli_flag_duration(const char *cmd, const char *flag, const char *val, uint64_t min_ns,
                       uint64_t max_ns, uint64_t *out)
{
    const char *why = NULL;
    uint64_t v = 0;
    if (cli_parse_duration(val, &v, &why) && v >= min_ns && v <= max_ns) {
        *out = v;
        return true;
    }
    char lo[48], hi[48];
    cli_format_duration(min_ns, lo, sizeof lo);
    cli_format_duration(max_ns, hi, sizeof hi);
    if (!why)
        why = v < min_ns ? "is too short" : "is too long";
    cli_errorf(cmd, "%s: \"%s\" %s (want a duration from %s to %s, e.g. 500ms, 2s, 1m30s)", flag,
               val ? val : "", why, lo, max_ns == CLI_DURATION_MAX ? "292 years" : hi);
    return false;
}

bool cli_flag_bool(const char *cmd, const char *flag, const char *val, bool *out)
{
    if (cli_parse_bool(val, out))
        return true;
    cli_errorf(cmd, "%s: \"%s\" is not a boolean (want true or false)", flag, val);
    return false;
}

/* ---- the scanner ------------------------------------------------------------------ */

void cli_args_init(cli_args *a, const char *cmd, int argc, char **argv, int first)
{
    memset(a, 0, sizeof *a);
    a->cmd = cmd;
    a->argc = argc;
    a->argv = argv;
    a->i = first;
}

const char *cli_args_flag(const cli_args *a) { return a->flag ? a->flag : ""; }

static bool all_digits(const char *s)
{
    if (!s || !*s)
        return false;
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return false;
    return true;
}

static const cli_flag *find_long(const cli_flag *flags, const char *name, size_t n)
{
    for (const cli_flag *f = flags; f->id; f++) {
        if (f->name && strlen(f->name) == n && !strncmp(f->name, name, n))
            return f;
        if (f->alias && strlen(f->alias) == n && !strncmp(f->alias, name, n))
            return f;
    }
    return NULL;
}

static const cli_flag *find_short(const cli_flag *flags, char c)
{
    for (const cli_flag *f = flags; f->id; f++)
        if (f->shorthand && f->shorthand == c)
            return f;
    return NULL;
}

/* The value of flag f whose attached text is `att` (NULL: none). */
static int take_value(cli_args *a, const cli_flag *f, const char *att, const char **val)
{
    *val = NULL;
    switch (f->arg) {
    case CLI_ARG_NONE:
        if (att) {
            cli_errorf(a->cmd, "flag %s takes no value (got \"%s\")", a->flag, att);
            return CLI_ARGS_ERROR;
        }
        return f->id;
    case CLI_ARG_BOOL:
        if (att) {
            bool b;
            if (!cli_parse_bool(att, &b)) {
                cli_errorf(a->cmd, "%s: \"%s\" is not a boolean (want true or false)", a->flag, att);
                return CLI_ARGS_ERROR;
            }
            *val = b ? "true" : "false";
        } else {
            *val = "true";
        }
        return f->id;
    case CLI_ARG_LEVEL:
        if (att)
            *val = att;
        else if (a->i < a->argc && all_digits(a->argv[a->i]))
            *val = a->argv[a->i++];
        return f->id;
    default:
        if (att) {
            *val = att;
            return f->id;
        }
        if (a->i >= a->argc) {
            cli_errorf(a->cmd, "flag %s needs a value", a->flag);
            return CLI_ARGS_ERROR;
        }
        *val = a->argv[a->i++];
        return f->id;
    }
}

int cli_args_next(cli_args *a, const cli_flag *flags, const char **val)
{
    static char shortname[3];
    *val = NULL;
    if (a->rest && *a->rest) {
        /* combined shorthands: -wv, or -fVALUE after a value-taking one */
        char c = *a->rest++;
        const cli_flag *f = find_short(flags, c);
        snprintf(shortname, sizeof shortname, "-%c", c);
        a->flag = shortname;
        if (!f) {
            cli_errorf(a->cmd, "unknown shorthand flag '%c' in \"%s\"", c, a->argv[a->i - 1]);
            return CLI_ARGS_ERROR;
        }
        const char *att = NULL;
        if (f->arg != CLI_ARG_NONE && *a->rest) {
            att = a->rest + (*a->rest == '=');
            a->rest = NULL;
        } else if (f->arg == CLI_ARG_NONE && *a->rest == '=') {
            att = a->rest + 1;
            a->rest = NULL;
        }
        return take_value(a, f, att, val);
    }
    a->rest = NULL;
    if (a->i >= a->argc)
        return CLI_ARGS_END;
    const char *s = a->argv[a->i++];
    if (a->operands_only || s[0] != '-' || !s[1]) {
        *val = s;
        return CLI_ARGS_OPERAND;
    }
    if (!strcmp(s, "--")) {
        a->operands_only = true;
        return cli_args_next(a, flags, val);
    }
    if (s[1] == '-') {
        const char *name = s + 2, *eq = strchr(name, '=');
        size_t n = eq ? (size_t)(eq - name) : strlen(name);
        const cli_flag *f = find_long(flags, name, n);
        a->flag = s;
        if (!f) {
            cli_errorf(a->cmd, "unknown flag \"%.*s\" (see draengine %s --help)", (int)(n + 2), s, a->cmd);
            return CLI_ARGS_ERROR;
        }
        static char longname[80];
        snprintf(longname, sizeof longname, "--%.*s", (int)(n < 70 ? n : 70), name);
        a->flag = longname;
        return take_value(a, f, eq ? eq + 1 : NULL, val);
    }
    a->rest = s + 1;
    return cli_args_next(a, flags, val);
}

bool cli_flag_level(const char *cmd, const char *val, int *level)
{
    if (!val) {
        *level = 1;
        return true;
    }
    uint64_t v;
    if (!cli_flag_u64(cmd, "-v", val, 0, 10, &v))
        return false;
    *level = (int)v;
    return true;
}
