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

#endif
