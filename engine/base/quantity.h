/*
 * quantity.h - Kubernetes resource.Quantity: exact parse, canonical print,
 * compare, add, subtract, and the integer / milli rounding rules that
 * consumable capacity uses.
 *
 * Representation: an exact signed count of nano-units (10^-9) in a 128-bit
 * integer plus the format the text was written in.  Kubernetes rounds any
 * precision finer than 1n up (away from zero for positive values, as
 * apimachinery does), so every accepted quantity is exactly representable.
 * 128 bits hold +-1.7e29 whole units, far beyond anything a device publishes;
 * larger values are refused with DE_ERANGE rather than silently capped.
 * Comparison and arithmetic are exact; only asApproximateFloat rounds.
 */
#ifndef DE_QUANTITY_H
#define DE_QUANTITY_H

#include "de.h"

typedef enum de_qfmt {
    DE_QFMT_DECIMAL_SI = 0,  /* "", k, M, G, ..., m, u, n */
    DE_QFMT_BINARY_SI,       /* Ki, Mi, Gi, Ti, Pi, Ei */
    DE_QFMT_DECIMAL_EXP,     /* 1e3, 5E-2 */
} de_qfmt;

typedef struct de_qty {
    __int128 nano; /* value * 10^9, exact */
    uint8_t fmt;   /* de_qfmt */
} de_qty;

/* Longest canonical text de_qty_format can produce, NUL included. */
#define DE_QTY_TEXT_MAX 64

/* Parse Kubernetes quantity text ("80Gi", "1.5", "500m", "1e3").  Errors use
 * apimachinery's wording ("quantities must match the regular expression
 * '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'", "unable to parse
 * quantity's suffix"). */
de_rc de_qty_parse(const char *s, size_t len, de_qty *out, de_err *e);
de_rc de_qty_parse_cstr(const char *s, de_qty *out, de_err *e);

/* Canonical text, as Quantity.String() prints it: largest suffix of the
 * value's format that keeps it integral ("1536Mi" -> "1536Mi", "1024Mi" ->
 * "1Gi", "0.5" -> "500m").  Returns the length written. */
size_t de_qty_format(de_qty q, char *buf, size_t cap);

de_qty de_qty_from_int(int64_t v, de_qfmt fmt);
de_qty de_qty_from_milli(int64_t milli, de_qfmt fmt);

int de_qty_cmp(de_qty a, de_qty b); /* -1, 0, 1 */
int de_qty_sign(de_qty q);
bool de_qty_is_zero(de_qty q);

/* Exact add/sub; DE_ERANGE on overflow of the 128-bit range.  The result
 * takes a's format (apimachinery keeps the receiver's format). */
de_rc de_qty_add(de_qty a, de_qty b, de_qty *out);
de_rc de_qty_sub(de_qty a, de_qty b, de_qty *out);

/* Value(): the value rounded up to an integer (ceiling), saturated to int64.
 * MilliValue(): the same in milli-units. */
int64_t de_qty_value(de_qty q);
int64_t de_qty_milli_value(de_qty q);

/* true when the value is an integer that fits int64 (CEL isInteger). */
bool de_qty_is_integer(de_qty q);
/* Exact int64 (CEL asInteger); DE_ERANGE "cannot convert value to integer". */
de_rc de_qty_as_int64(de_qty q, int64_t *out);
double de_qty_approx_double(de_qty q);
/* true when the value is a whole number of milli-units (no finer part). */
bool de_qty_is_milli_exact(de_qty q);

#endif
