/*
 * flags.h - the one parser of flag values (numbers, durations, booleans)
 * that every draengine command uses.
 *
 * Why one parser: each command used to convert its own values (strtoull,
 * atoi, strtod), so `--max-search-steps -5` wrapped to 2^64-5 and disabled
 * the limit, `--iterations abc` became 1, `--memory-mb` could shift past 64
 * bits and a NaN QPS passed a `> 0` test.  Here a value is accepted only if
 * the whole text is a number of the flag's kind inside the flag's range;
 * anything else is refused with a message that names the flag, the text
 * and the range, and the command exits 2 (CLI_EXIT_INVALID).
 *
 * Numbers: decimal digits, or 0x and hex digits; no sign, no spaces, no
 * octal (a leading 0 is still decimal: `--seed 010` is ten).  Reals: what
 * strtod reads, finite only.  Durations: Go's time.ParseDuration syntax
 * (`0`, `500ms`, `1m30s`, `1.5h`; units ns, us, µs, ms, s, m, h), computed
 * in integers so `0.1s` is exactly 100,000,000 ns; negative durations and
 * anything past 2^63-1 ns are refused.
 */
#ifndef CLI_FLAGS_H
#define CLI_FLAGS_H

#include "../base/de.h"

/* The parsers proper: true on success; on failure *why (if given) says what
 * is wrong ("is negative", "is not a number", ...) and *out is untouched. */
bool cli_parse_u64(const char *s, uint64_t *out, const char **why);
bool cli_parse_real(const char *s, double *out, const char **why);
bool cli_parse_duration(const char *s, uint64_t *ns, const char **why);
bool cli_parse_bool(const char *s, bool *out); /* true/false/1/0; NULL is true */

/* One flag value of command cmd: parsed and range-checked (inclusive), or
 * refused on stderr as "draengine CMD: FLAG: TEXT WHY (want ...)".  Return
 * true when *out was set. */
bool cli_flag_u64(const char *cmd, const char *flag, const char *val, uint64_t min, uint64_t max,
                  uint64_t *out);
/* min_open: the minimum itself is refused (a rate must be > 0). */
bool cli_flag_real(const char *cmd, const char *flag, const char *val, double min, bool min_open,
                   double max, double *out);
bool cli_flag_duration(const char *cmd, const char *flag, const char *val, uint64_t min_ns,
                       uint64_t max_ns, uint64_t *out);
bool cli_flag_bool(const char *cmd, const char *flag, const char *val, bool *out);

/* A duration as Go prints it ("1m30s", "500ms", "0s"), for messages. */
void cli_format_duration(uint64_t ns, char *buf, size_t cap);

#define CLI_DURATION_MAX ((uint64_t)INT64_MAX)

/* ---- the flags themselves ----------------------------------------------------
 *
 * Every command reads its arguments with one scanner, so each takes flags
 * the way kubectl (pflag) does: `--name value`, `--name=value`, a shorthand
 * as `-f value`, `-fvalue` or `-f=value`, boolean shorthands combined
 * (`-wv`), `--` ending the flags, `-` an operand (stdin).  A flag a command
 * does not know is an error naming it, never ignored; so is a flag without
 * its value.  `-v` (`--v`, `--verbose`) is on every command: alone it is
 * level 1; a level is attached (`-v2`, `-v=2`, `--v=2`) or the next
 * argument when that is a number (`-v 2`, klog's form). */

enum {
    CLI_ARG_NONE = 0, /* a switch */
    CLI_ARG_REQUIRED, /* a value */
    CLI_ARG_LEVEL,    /* -v: an optional number */
    CLI_ARG_BOOL,     /* a switch that takes =true/=false attached */
};

/* What cli_args_next returns besides a flag's id (ids are > 0). */
#define CLI_ARGS_END 0
#define CLI_ARGS_OPERAND (-1)
#define CLI_ARGS_ERROR (-2)

typedef struct cli_flag {
    const char *name;  /* long name without dashes ("filename") */
    char shorthand;    /* 'f', or 0 */
    int arg;           /* CLI_ARG_* */
    int id;            /* > 0 */
    const char *alias; /* a second long name ("policy-dir" for "policies"), or NULL */
} cli_flag;

typedef struct cli_args {
    const char *cmd; /* for messages: "allocate", "policy test" */
    int argc, i;
    char **argv;
    const char *rest;  /* inside combined shorthands */
    bool operands_only; /* after "--" */
    const char *flag;  /* the flag as written, for messages about its value */
} cli_args;

/* Scan argv[first..argc).  The table ends with a zeroed entry. */
void cli_args_init(cli_args *a, const char *cmd, int argc, char **argv, int first);
/* The next flag (its id; *val its value, NULL for a switch, "true"/"false"
 * for CLI_ARG_BOOL, the level's text or NULL for CLI_ARG_LEVEL), an operand
 * (CLI_ARGS_OPERAND, *val the text), CLI_ARGS_END, or CLI_ARGS_ERROR after
 * printing what is wrong. */
int cli_args_next(cli_args *a, const cli_flag *flags, const char **val);
/* The flag as the user wrote it, for value messages ("-o", "--output"). */
const char *cli_args_flag(const cli_args *a);
/* -v's level from its value (NULL: 1); false after printing an error. */
bool cli_flag_level(const char *cmd, const char *val, int *level);

#endif
