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
 *
 * Threads: an env (with its programs) and a memo are used by one thread at
 * a time: compiling interns names and evaluation records which devices
 * passed the version check.  Compiled regular expressions are cached per
 * thread, so separate envs may run in separate threads.
 */
#ifndef CEL_H
#define CEL_H

#include "../base/arena.h"
#include "../base/buf.h"
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
    bool plain;                /* no `device` variable: a plain CEL environment
                                * (conformance vectors, tools); see cel_env_declare */
    bool any_result;           /* tools: skip the bool-result rule of selectors */
    uint32_t prog_cap;         /* compile cache size; 0 = CEL_PROG_CAP */
} cel_env_opts;

/* Programs an env keeps before cel_env_collect empties its cache. */
#define CEL_PROG_CAP 16384

cel_env *cel_env_new(de_interner *in, const cel_env_opts *opts);
void cel_env_free(cel_env *env);

/* Compile (or fetch from the cache). *out is owned by env. On a compile error
 * e->line/col hold the position and e->msg the cel-go style message. */
de_rc cel_compile(cel_env *env, const char *expr, size_t len, cel_prog **out, de_err *e);
/* Compile a derived-attribute expression (KEP-6080): the result must be
 * bool, int, string, semver, dyn or a list of those (cached separately from
 * selectors). */
de_rc cel_compile_derived(cel_env *env, const char *expr, size_t len, cel_prog **out, de_err *e);
/* What the API server checks when a selector is created or changed: the
 * 10 KiB length limit, compilation, and the estimated worst-case cost
 * ("too complex, exceeds cost limit" above the env's cost limit). */
de_rc cel_validate_selector(cel_env *env, const char *expr, size_t len, de_err *e);
/* The compile cache is emptied when it holds more than its cap: every
 * program is freed and the generation moves on.  A program pointer is valid
 * while the env's generation is the one it was compiled at, so collect only
 * where no caller is holding one (the allocator at the start of a call, the
 * decoder before it compiles); holders keep the generation and compile again
 * when it moved.  Returns true when it emptied the cache. */
bool cel_env_collect(cel_env *env);
uint64_t cel_env_generation(const cel_env *env);
/* Programs with a smaller id are gone (ids are never reused). */
uint32_t cel_env_first_id(const cel_env *env);
uint32_t cel_env_programs(const cel_env *env);
void cel_env_set_prog_cap(cel_env *env, uint32_t cap); /* 0 = CEL_PROG_CAP */
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

/* ---- plain expressions and values -------------------------------------------
 *
 * Besides selectors, the env evaluates any CEL expression to a value (the
 * `draengine cel` command, the Lua binding, the conformance vectors).  A
 * cel_value is read-only and lives in the arena it was made in. */

typedef struct cel_value cel_value;

typedef enum cel_kind {
    CEL_NULL = 0,
    CEL_BOOL,
    CEL_INT,
    CEL_UINT,
    CEL_DOUBLE,
    CEL_STRING,
    CEL_BYTES,
    CEL_LIST,
    CEL_MAP,
    CEL_TYPE,
    CEL_QUANTITY,
    CEL_SEMVER,
} cel_kind;

/* Declare a plain variable (before compiling anything that uses it).  Its
 * static type follows the value (lists and maps are list(dyn) / map(dyn,
 * dyn) unless all elements share one type); the value must outlive env. */
de_rc cel_env_declare(cel_env *env, const char *name, const cel_value *value, de_err *e);

/* Evaluate any expression; dev may be NULL when the program does not use
 * `device`.  *out lives in scratch (lazy device maps are materialised). */
de_rc cel_eval(cel_env *env, const cel_prog *p, const de_devview *dev, de_arena *scratch,
               const cel_value **out, uint64_t *cost, de_err *e);

/* Result type of a compiled program, as cel-go prints it ("bool", "dyn"). */
size_t cel_prog_type(const cel_prog *p, char *buf, size_t cap);

cel_kind cel_value_kind(const cel_value *v);
bool cel_value_bool(const cel_value *v);
int64_t cel_value_int(const cel_value *v);
uint64_t cel_value_uint(const cel_value *v);
double cel_value_double(const cel_value *v);
/* string / bytes content (not NUL-terminated), or the type name of a type */
const char *cel_value_str(const cel_value *v, size_t *len);
/* elements of a list, entries of a map */
size_t cel_value_len(const cel_value *v);
const cel_value *cel_value_list_at(const cel_value *v, size_t i);
const cel_value *cel_value_map_key(const cel_value *v, size_t i);
const cel_value *cel_value_map_val(const cel_value *v, size_t i);
de_qty cel_value_quantity(const cel_value *v);
/* canonical text of a quantity or semver value */
size_t cel_value_text(const cel_value *v, char *buf, size_t cap);

/* Constructors (all storage from arena a; strings are copied). NULL when
 * the arena is full, or (map) a key is not a valid map key. */
cel_value *cel_value_null(de_arena *a);
cel_value *cel_value_new_bool(de_arena *a, bool b);
cel_value *cel_value_new_int(de_arena *a, int64_t i);
cel_value *cel_value_new_uint(de_arena *a, uint64_t u);
cel_value *cel_value_new_double(de_arena *a, double d);
cel_value *cel_value_new_string(de_arena *a, const char *s, size_t n);
cel_value *cel_value_new_bytes(de_arena *a, const char *s, size_t n);
/* type values by name: int uint double bool string bytes list map null_type type */
cel_value *cel_value_new_type(de_arena *a, const char *name);
cel_value *cel_value_new_quantity(de_arena *a, de_qty q);
/* version text is parsed strictly; NULL on a bad version */
cel_value *cel_value_new_semver(de_arena *a, const char *s, size_t n);
cel_value *cel_value_new_list(de_arena *a, const cel_value *const *items, size_t n);
cel_value *cel_value_new_map(de_arena *a, const cel_value *const *keys,
                             const cel_value *const *vals, size_t n);

/* Print a value: the CEL-ish text form (`[1, "a", 2u]`) or the typed JSON of
 * the conformance vectors (`{"list":[{"int":1}]}`). */
de_rc cel_value_format(const cel_value *v, de_buf *out);
de_rc cel_value_typed_json(const cel_value *v, de_buf *out);

/* ---- JSON inputs (json.c) ---------------------------------------------------
 *
 * A device as the conformance vectors write it, which is also the shape of a
 * ResourceSlice `spec.devices[]` entry:
 *   {"driver"?: "...", "name"?: "...", "allowMultipleAllocations"?: bool,
 *    "attributes": {"<name>": {"int"|"bool"|"string"|"version"|
 *                              "ints"|"bools"|"strings"|"versions": ...}},
 *    "capacity": {"<name>": {"value": "80Gi"}}}
 * `driver` (when not NULL) overrides the object's driver.  Names without a
 * '/' go to the driver's domain.  Storage comes from a and the interner. */
struct json_t;
de_rc cel_device_from_json(const struct json_t *j, const char *driver, de_interner *in,
                           de_arena *a, de_devview *out, de_err *e);
/* A typed value of the vector encoding ({"int": 1}, {"list": [...]}, ...).
 * A uint or double may also be a JSON string of digits (see below). */
cel_value *cel_value_from_typed_json(de_arena *a, const struct json_t *j, de_err *e);
/* Copy of JSON text where integer tokens that do not fit int64 are quoted,
 * so jansson can parse uint64 values exactly; caller frees. */
char *cel_json_quote_big_ints(const char *s, size_t n);

/* Render "expr\n    ^" for an error position (1-based line/col) into buf. */
size_t cel_err_caret(const char *expr, int line, int col, char *buf, size_t cap);

/* ---- memo ------------------------------------------------------------------ */

/* Results of (program, device) with the device generation they were computed
 * at; a generation mismatch is a miss.  Errors are memoised too. */
cel_memo *cel_memo_new(void);
void cel_memo_free(cel_memo *m);
void cel_memo_clear(cel_memo *m);
/* Drop the memo of every program whose id is below `id` (collected). */
void cel_memo_forget_before(cel_memo *m, uint32_t id);
/* Returns 1 (true), 0 (false), or -1 if not cached. */
int cel_memo_get(cel_memo *m, uint32_t prog, uint32_t dev, uint32_t gen);
void cel_memo_put(cel_memo *m, uint32_t prog, uint32_t dev, uint32_t gen, bool val);
void cel_memo_stats(const cel_memo *m, uint64_t *hits, uint64_t *misses);
/* Room for device ids below ndev, touched now: the tables of the programs
 * evaluated so far grow to it, and `spare` tables (at most 4) wait for
 * programs evaluated later.  Called off the hot path (the allocator does
 * it when slices arrive), so that a decision's first evaluations do not
 * fault fresh pages. */
void cel_memo_reserve(cel_memo *m, uint32_t ndev, uint32_t spare);
/* The same for the env's per-device table of checked attribute values. */
void cel_env_reserve_devices(cel_env *env, uint32_t ndev);

/* Convenience: memoised selector evaluation (errors are not memoised). */
de_rc cel_eval_selector_memo(cel_env *env, cel_memo *m, const cel_prog *p, const de_devview *dev,
                             de_arena *scratch, bool *out, de_err *e);

#endif
