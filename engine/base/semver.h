/*
 * semver.h - semantic versions 2.0.0 as Kubernetes uses them: strict parsing
 * for `version` attributes and CEL semver(), an optional normalising parse
 * (CEL semver(s, true): strip a leading "v", pad "1" / "1.2" to three parts,
 * drop leading zeros), and precedence comparison (build metadata ignored).
 *
 * Errors are DE_EINVAL with blang/semver v4's texts, quoting with Go's %q
 * rules, including the strconv ones it passes through for empty or too
 * large numbers ("strconv.ParseUint: parsing \"\": invalid syntax").
 *
 * A de_semver does not own text: pre and build point into the string that
 * was parsed (or into the caller's buffer for a normalised string), which
 * must outlive it.  In the device graph that string is interned.
 */
#ifndef DE_SEMVER_H
#define DE_SEMVER_H

#include "de.h"

typedef struct de_semver {
    uint64_t major, minor, patch;
    const char *pre;   /* prerelease identifiers, dot-separated; NULL if none */
    uint32_t pre_len;
    const char *build; /* build metadata; NULL if none */
    uint32_t build_len;
} de_semver;

/* Strict semver 2.0.0 (blang/semver Parse).  Error texts follow blang's
 * ("No Major.Minor.Patch elements found", "Invalid character(s) found in
 * major number \"01\"", ...). */
de_rc de_semver_parse(const char *s, size_t len, de_semver *out, de_err *e);

/* Normalise the way Kubernetes' semver(s, true) does, writing the normalised
 * text into buf (cap bytes; len + 8 always suffices).  Returns the length,
 * or SIZE_MAX when the text cannot be normalised (the caller then reports
 * the strict parse error). Parse the result with de_semver_parse. */
size_t de_semver_normalize(const char *s, size_t len, char *buf, size_t cap);

/* semver(s, true): normalise into buf (cap >= len + 8) and parse the result
 * strictly; pre/build then point into buf.  A short version carrying a
 * prerelease or build ("1.2-rc") fails with "short version cannot contain
 * PreRelease/Build meta data"; other failures carry blang's message for
 * the normalised text. */
de_rc de_semver_parse_normalized(const char *s, size_t len, char *buf, size_t cap,
                                 de_semver *out, de_err *e);

/* Precedence: -1, 0, 1.  Build metadata is ignored (1.0.0+a == 1.0.0+b). */
int de_semver_cmp(const de_semver *a, const de_semver *b);

/* Text form MAJOR.MINOR.PATCH[-pre][+build]; returns length written. */
size_t de_semver_format(const de_semver *v, char *buf, size_t cap);

#endif
