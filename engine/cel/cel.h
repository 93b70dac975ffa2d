/*
 * cel.h - CEL for DRA device selectors, evaluated as Kubernetes does
 * (../shared/docs/cel.md tiers A and B).
 *
 * Lifecycle
 *  - A cel_env holds the declarations (the `device` variable, optional plain
 *    variables), feature options and the compile cache.  It shares the
 *    engine's interner, so attribute names in expressions resolve to the
 *    same ids the device graph uses.
 *  - cel_compile() parses and checks an expression once; the program is
 *    cached by its text and owned by the env (callers never free it).
 *  - Evaluation works from a caller-supplied arena (reset per evaluation or
 *    per cycle) - no malloc per AST node or per value.
 *  - Errors are values inside the evaluator; at this API they become a
 *    de_err with phase "compile" (DE_EPARSE / DE_EINVAL) or "runtime"
 *    (DE_EINVAL, or DE_EBUDGET for "operation cancelled: actual cost limit
 *    exceeded").  A parse error names line:column; cel_err_caret() renders
 *    the caret line for humans.
 *
 * Memo: selectors are memoised per (program, device id, device generation)
 * in a cel_memo, so the allocator evaluates each selector once per device.
 */
#ifndef CEL_H
#define CEL_H

#include "../base/arena.h"
#include "../base/attr.h"
#include "../base/de.h"
#include "../base/intern.h"

typedef struct cel_env cel_env;
typedef struct cel_prog cel_prog;
typedef struct cel_memo cel_memo;

/* Kubernetes limits (CELSelectorExpressionMaxLength / MaxCost). */
#define CEL_MAX_EXPR_LEN 10240
#define CEL_COST_LIMIT 1000000

typedef struct cel_env_opts {
    bool consumable_capacity;  /* declare device.allowMultipleAllocations */
    bool list_attributes;      /* list-typed attributes are accepted as values */
    bool new_expressions;      /* NewExpressions env: gate-dependent compile errors */
    uint64_t cost_limit;       /* 0 = CEL_COST_LIMIT */
} cel_env_opts;

cel_env *cel_env_new(de_interner *in, const cel_env_opts *opts);
void cel_env_free(cel_env *env);

/* Compile (or fetch from the cache). *out is owned by env. On a compile error
 * e->line/col hold the position and e->msg the cel-go style message. */
de_rc cel_compile(cel_env *env, const char *expr, size_t len, cel_prog **out, de_err *e);
/* Stable small integer identifying a compiled program (memo key). */
uint32_t cel_prog_id(const cel_prog *p);
const char *cel_prog_text(const cel_prog *p);
/* Static worst-case cost estimate (API-server style), for validation. */
uint64_t cel_prog_estimated_cost(const cel_prog *p);

/* Evaluate a selector against a device: must produce a bool
 * ("CEL result of type X could not be converted to bool" otherwise).
 * *cost receives the runtime cost (may be NULL). */
de_rc cel_eval_selector(cel_env *env, const cel_prog *p, const de_devview *dev, de_arena *scratch,
                        bool *out, uint64_t *cost, de_err *e);

/* Evaluate a derived-attribute expression (KEP-6080): bool, int, string,
 * semver, or a list of one of those, converted into an attribute value whose
 * storage (lists, strings) comes from `scratch` / the interner. */
de_rc cel_eval_attr(cel_env *env, const cel_prog *p, const de_devview *dev, de_arena *scratch,
                    de_attrval *out, de_err *e);

/* Render "expr\n    ^" for an error position (1-based line/col) into buf. */
size_t cel_err_caret(const char *expr, int line, int col, char *buf, size_t cap);

/* ---- memo ------------------------------------------------------------------ */

/* Results of (program, device) with the device generation they were computed
 * at; a generation mismatch is a miss.  Errors are memoised too. */
cel_memo *cel_memo_new(void);
void cel_memo_free(cel_memo *m);
void cel_memo_clear(cel_memo *m);
/* Returns 1 (true), 0 (false), or -1 if not cached. */
int cel_memo_get(cel_memo *m, uint32_t prog, uint32_t dev, uint32_t gen);
void cel_memo_put(cel_memo *m, uint32_t prog, uint32_t dev, uint32_t gen, bool val);
void cel_memo_stats(const cel_memo *m, uint64_t *hits, uint64_t *misses);

/* Convenience: memoised selector evaluation (errors are not memoised). */
de_rc cel_eval_selector_memo(cel_env *env, cel_memo *m, const cel_prog *p, const de_devview *dev,
                             de_arena *scratch, bool *out, de_err *e);

#endif
