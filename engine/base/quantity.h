/*
 * quantity.h - Kubernetes resource.Quantity: exact parse, canonical print,
 * compare, add, subtract, and the integer / milli rounding rules that
 * consumable capacity uses.
 *
 * Representation: value = mant * 10^exp, exact.  Kubernetes rounds any
 * precision finer than 1n up (away from zero), so exp >= -9 always; a value
 * is kept at exp == -9 (a count of nano-units) whenever that fits the 128-bit
 * mantissa (|value| < 1.7e29), which is every value a device publishes, and
 * otherwise at the smallest exponent that fits.  That normal form makes
 * compare and add one integer operation in the common case, while still
 * accepting the huge values Kubernetes' own CEL tests use
 * ("9999999999999999999999999999999999999G").  The limit is 38 significant
 * digits: a value needing more is refused (DE_ERANGE) where apimachinery's
 * big decimals would carry on.  A zero-initialised de_qty is a valid zero
 * (DecimalSI), like NewQuantity(0, DecimalSI).
 *
 * apimachinery's observable behaviour depends on how it holds a value: an
 * int64 scaled by 10^scale ("fast path") or an arbitrary-precision decimal.
 * CEL's isInteger()/asInteger() succeed only for the first form at scale
 * >= 0 (so quantity("1000m").isInteger() and quantity("1.5Ki").isInteger()
 * are false, quantity("1k").isInteger() is true), and asApproximateFloat
 * multiplies in that scale.  `gscale`/`gdec` record that form through
 * parse, add and sub so those functions answer exactly as Kubernetes does;
 * comparison, printing and Value() depend only on the value.
 *
 * Known differences from apimachinery (deliberate, for values nobody uses):
 *  - apimachinery's String() echoes some non-canonical inputs verbatim
 *    ("+1k", "01Ki", "1.500k"); we always print the canonical form.
 *  - DecimalSI values >= 1000E print as "<n>E" ("1000E"), or in exponent
 *    form ("1e70") when that text would pass DE_QTY_TEXT_MAX; Go drops the
 *    exponent there and prints "1".  BinarySI multiples of 1024Ei print as
 *    "<n>Ei".
 *  - Value()/MilliValue() round negative fractions away from zero (Go's
 *    int64 form) and saturate at the int64 limits instead of wrapping.
 *  - exponents outside int32 ("1e9999999999") are refused, not wrapped.
 */
#ifndef DE_QUANTITY_H
#define DE_QUANTITY_H

#include "de.h"

struct json_t;

typedef enum de_qfmt {
    DE_QFMT_DECIMAL_SI = 0,  /* "", k, M, G, ..., m, u, n */
    DE_QFMT_BINARY_SI,       /* Ki, Mi, Gi, Ti, Pi, Ei */
    DE_QFMT_DECIMAL_EXP,     /* 1e3, 5E-2 */
} de_qfmt;

typedef struct de_qty {
    __int128 mant; /* value = mant * 10^exp, exact; |mant| <= 2^127-1 */
    int32_t exp;   /* >= -9; -9 whenever the value fits as nano-units */
    int32_t gscale; /* apimachinery's internal scale (see above) */
    uint8_t gdec;  /* apimachinery would hold an inf.Dec */
    uint8_t fmt;   /* de_qfmt */
} de_qty;

/* Longest canonical text de_qty_format can produce, NUL included. */
#define DE_QTY_TEXT_MAX 64

/* Parse Kubernetes quantity text ("80Gi", "1.5", "500m", "1e3").  Errors use
 * apimachinery's wording ("quantities must match the regular expression
 * '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'", "unable to parse
 * quantity's suffix", "unable to parse numeric part of quantity"), rc
 * DE_EINVAL; DE_ERANGE past 38 significant digits.  Like apimachinery, a
 * text without digits before its suffix is zero ("Mi", "k", "+", "."). */
de_rc de_qty_parse(const char *s, size_t len, de_qty *out, de_err *e);
de_rc de_qty_parse_cstr(const char *s, de_qty *out, de_err *e);

/* A Quantity field as JSON holds it: a string (surrounding ASCII white space
 * trimmed, as Quantity.UnmarshalJSON does) or a number (`value: 8` in YAML).
 * Integers parse exactly; reals parse from the text Go's encoding/json
 * writes for them (shortest digits, fixed notation between 1e-6 and 1e21),
 * which is what sigs.k8s.io/yaml hands Kubernetes for `value: 1.5` or
 * `value: 1e3` ("1000", DecimalSI).  A JSON file's own number text is no
 * longer known, so a bare JSON 1e3 also becomes "1000".  Anything else is DE_EINVAL "quantity must be a
 * string or a number". */
de_rc de_qty_from_json(const struct json_t *v, de_qty *out, de_err *e);

/* A float number field (see de_qty_from_json). */
de_rc de_qty_from_double(double d, de_qty *out, de_err *e);

/* Canonical text, as Quantity.String() prints it: largest suffix of the
 * value's format that keeps it integral ("1536Mi" -> "1536Mi", "1024Mi" ->
 * "1Gi", "0.5" -> "500m", "1.5Ki" -> "1536", "0.5Gi" -> "512Mi").  Returns the
 * length written (truncated to cap-1 if cap is short). */
size_t de_qty_format(de_qty q, char *buf, size_t cap);

/* "DecimalSI", "BinarySI", "DecimalExponent". */
const char *de_qfmt_name(de_qfmt f);

/* NewQuantity(v, fmt) / NewMilliQuantity(milli, fmt). */
de_qty de_qty_from_int(int64_t v, de_qfmt fmt);
de_qty de_qty_from_milli(int64_t milli, de_qfmt fmt);

int de_qty_cmp(de_qty a, de_qty b); /* -1, 0, 1; exact */
int de_qty_sign(de_qty q);
bool de_qty_is_zero(de_qty q);

/* Exact add/sub; DE_ERANGE when the result needs more than 38 significant
 * digits.  The result takes a's format, or b's when a is zero (apimachinery
 * keeps the receiver's format unless the receiver was zero). */
de_rc de_qty_add(de_qty a, de_qty b, de_qty *out);
de_rc de_qty_sub(de_qty a, de_qty b, de_qty *out);

/* Value(): the value rounded up to an integer (away from zero), saturated
 * to int64.  MilliValue(): the same in milli-units. */
int64_t de_qty_value(de_qty q);
int64_t de_qty_milli_value(de_qty q);

/* CEL isInteger(): apimachinery's AsInt64 succeeds (see the header
 * comment: it depends on how the value was written, not only on it). */
bool de_qty_is_integer(de_qty q);
/* CEL asInteger(); DE_ERANGE "cannot convert value to integer". */
de_rc de_qty_as_int64(de_qty q, int64_t *out);
/* CEL asApproximateFloat() (AsApproximateFloat64), same rounding as Go. */
double de_qty_approx_double(de_qty q);

/* Value-based exactness for arithmetic (the allocator's integer and milli
 * paths): true and *out set when the value is an integer (resp. a whole
 * number of milli-units) that fits int64. */
bool de_qty_int64_exact(de_qty q, int64_t *out);
bool de_qty_milli_exact(de_qty q, int64_t *out);
/* true when the value is a whole number of milli-units (no finer part). */
bool de_qty_is_milli_exact(de_qty q);

#endif
