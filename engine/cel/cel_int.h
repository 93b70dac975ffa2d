/*
 * cel_int.h - internals shared by the CEL module's files (never included
 * outside engine/cel/).
 *
 * Pipeline: lex.c tokens -> parse.c AST (macros expanded into dedicated
 * nodes) -> check.c static types, name resolution, overload candidates,
 * constant folding -> eval.c tree-walking evaluation over 16-byte values
 * allocated from the caller's arena.  Functions are described once, in the
 * overload table of funcs.c: the checker reads their signatures, the
 * evaluator dispatches on the implementation id (lib_*.c).
 *
 * Values.  A cel_v is 16 bytes: a tag, a sub-tag, a 32-bit length and an
 * 8-byte payload.  Strings point at UTF-8 bytes (literals in the program
 * arena, device strings in the interner, results in the scratch arena).
 * Maps are either plain (key/value arrays with an optional hash index) or
 * lazy views of a device (device.attributes, device.attributes[d], ...),
 * so a selector never copies the device.  Errors are values (CV_ERR); only
 * the cost limit and memory exhaustion abort an evaluation (longjmp), since
 * nothing in CEL may absorb them.
 */
#ifndef CEL_INT_H
#define CEL_INT_H

#include "cel.h"

#include "../base/buf.h"
#include "../base/map.h"
#include "../base/quantity.h"
#include "../base/semver.h"

#include <setjmp.h>

/* ---- values ---------------------------------------------------------------- */

/* Runtime tags; the first twelve equal the public cel_kind values. */
enum {
    CV_NULL = CEL_NULL,
    CV_BOOL = CEL_BOOL,
    CV_INT = CEL_INT,
    CV_UINT = CEL_UINT,
    CV_DOUBLE = CEL_DOUBLE,
    CV_STRING = CEL_STRING,
    CV_BYTES = CEL_BYTES,
    CV_LIST = CEL_LIST,
    CV_MAP = CEL_MAP,
    CV_TYPE = CEL_TYPE,
    CV_QTY = CEL_QUANTITY,
    CV_SEMVER = CEL_SEMVER,
    CV_DEVICE, /* the `device` variable (a map of four fields at runtime) */
    CV_ERR,
    CV_COUNT
};

/* Map representations (cel_v.sub for CV_MAP). */
enum {
    MK_PLAIN = 0,
    MK_ATTRS,    /* device.attributes: domain -> MK_ATTR_DOM */
    MK_ATTR_DOM, /* device.attributes[d]: id -> value; n = interned domain */
    MK_CAPS,     /* device.capacity */
    MK_CAP_DOM,  /* device.capacity[d]; n = interned domain */
};

/* Error kinds (cel_errv.kind). */
enum { CE_GENERIC = 0, CE_NO_SUCH_KEY, CE_NO_OVERLOAD };

typedef struct cel_map cel_map;
typedef struct cel_errv cel_errv;

typedef struct cel_v {
    uint8_t t;   /* CV_* */
    uint8_t sub; /* map representation, or the type named by a CV_TYPE */
    uint16_t pad;
    uint32_t n;  /* string/bytes byte length, list length, lazy-map domain */
    union {
        bool b;
        int64_t i;
        uint64_t u;
        double d;
        const char *s;
        const struct cel_v *items;
        const cel_map *m;
        const de_qty *q;
        const de_semver *sv;
        const cel_errv *err;
        const de_devview *dev;
    } u;
} cel_v;

struct cel_value { /* the public handle is a cel_v */
    cel_v v;
};

struct cel_map {
    const cel_v *keys;
    const cel_v *vals;
    uint32_t n;
    uint32_t icap;        /* hash index size (power of two), 0 = scan */
    const uint32_t *index; /* slot -> entry + 1, 0 = empty */
};

struct cel_errv {
    const char *msg;
    uint32_t pos; /* byte offset of the failing node in the expression */
    uint8_t kind;
};

static inline cel_v cv_bool(bool b) { cel_v v = {.t = CV_BOOL}; v.u.b = b; return v; }
static inline cel_v cv_int(int64_t i) { cel_v v = {.t = CV_INT}; v.u.i = i; return v; }
static inline cel_v cv_uint(uint64_t u) { cel_v v = {.t = CV_UINT}; v.u.u = u; return v; }
static inline cel_v cv_double(double d) { cel_v v = {.t = CV_DOUBLE}; v.u.d = d; return v; }
static inline cel_v cv_null(void) { cel_v v = {.t = CV_NULL}; return v; }
static inline cel_v cv_type(int t) { cel_v v = {.t = CV_TYPE, .sub = (uint8_t)t}; return v; }
static inline cel_v cv_str(const char *s, size_t n)
{
    cel_v v = {.t = CV_STRING, .n = (uint32_t)n};
    v.u.s = s;
    return v;
}
static inline cel_v cv_bytes(const char *s, size_t n)
{
    cel_v v = {.t = CV_BYTES, .n = (uint32_t)n};
    v.u.s = s;
    return v;
}
static inline cel_v cv_list(const cel_v *items, uint32_t n)
{
    cel_v v = {.t = CV_LIST, .n = n};
    v.u.items = items;
    return v;
}
static inline bool cv_is_err(cel_v v) { return v.t == CV_ERR; }

/* ---- static types (checker) ---------------------------------------------- */

typedef enum cel_tk {
    TK_DYN = 0,
    TK_ANY,   /* google.protobuf.Any: dyn-like, but not iterable (1.31 attrs) */
    TK_ERROR,
    TK_NULL,
    TK_BOOL,
    TK_INT,
    TK_UINT,
    TK_DOUBLE,
    TK_STRING,
    TK_BYTES,
    TK_LIST,
    TK_MAP,
    TK_TYPE,
    TK_QTY,
    TK_SEMVER,
    TK_DEVICE,
    TK_PARAM,
} cel_tk;

typedef struct cel_type cel_type;
struct cel_type {
    uint8_t k;   /* cel_tk */
    uint32_t id; /* TK_PARAM: variable number */
    const cel_type *p0, *p1; /* list elem; map key, value; type(p0) */
};

extern const cel_type cel_t_dyn, cel_t_any, cel_t_error, cel_t_null, cel_t_bool, cel_t_int,
    cel_t_uint, cel_t_double, cel_t_string, cel_t_bytes, cel_t_qty, cel_t_semver, cel_t_device,
    cel_t_type;

/* Type unification (types.c). */
typedef struct cel_undo {
    uint32_t id;
    const cel_type *old;
} cel_undo;

typedef struct cel_unify {
    de_arena *a;           /* where new type terms go */
    const cel_type **sub;  /* type variable -> bound type, or NULL */
    uint32_t nvars, capvars;
    cel_undo *undo;
    uint32_t nundo, capundo;
    bool oom;
} cel_unify;

const cel_type *cel_u_mktype(cel_unify *u, int k, const cel_type *p0, const cel_type *p1);
const cel_type *cel_u_fresh(cel_unify *u);
/* t1 assignable to t2; the raw form leaves partial bindings for the caller
 * to roll back (cel_u_rollback to a saved u->nundo). */
bool cel_u_assignable(cel_unify *u, const cel_type *t1, const cel_type *t2);
bool cel_u_assignable_raw(cel_unify *u, const cel_type *t1, const cel_type *t2);
void cel_u_rollback(cel_unify *u, uint32_t mark);
/* Apply the substitution (unbound variables become dyn when to_dyn). */
const cel_type *cel_u_subst(cel_unify *u, const cel_type *t, bool to_dyn);
/* An overload's table type with its parameters A, B renamed to vars. */
const cel_type *cel_u_inst(cel_unify *u, const cel_type *t, const cel_type **vars);
void cel_u_free(cel_unify *u);
bool cel_t_exact(const cel_type *a, const cel_type *b);
bool cel_t_is_dyn(const cel_type *t);
bool cel_t_is_dyn_or_err(const cel_type *t);
const cel_type *cel_t_most_general(const cel_type *t1, const cel_type *t2);

/* Format a type the way cel-go prints it ("list(int)", "map(string, dyn)"). */
void cel_type_format(const cel_type *t, de_buf *b);

/* ---- functions and overloads ----------------------------------------------- */

/* Implementation ids (evaluator dispatch); grouped by library file. */
typedef enum cel_impl {
    IM_NONE = 0,
    /* lib_std.c */
    IM_NOT, IM_NEG, IM_EQ, IM_NE, IM_ADD, IM_SUB, IM_MUL, IM_DIV, IM_MOD,
    IM_LT, IM_LE, IM_GT, IM_GE, IM_INDEX, IM_IN,
    IM_SIZE, IM_TYPE, IM_DYN,
    IM_TO_BOOL, IM_TO_BYTES, IM_TO_DOUBLE, IM_TO_INT, IM_TO_STRING, IM_TO_UINT,
    IM_CONTAINS, IM_STARTS, IM_ENDS, IM_MATCHES,
    /* lib_str.c */
    IM_CHAR_AT, IM_INDEX_OF, IM_LAST_INDEX_OF, IM_LOWER, IM_UPPER, IM_REPLACE, IM_SPLIT,
    IM_SUBSTRING, IM_TRIM, IM_JOIN,
    /* lib_k8s.c */
    IM_FIND, IM_FIND_ALL,
    IM_QUANTITY, IM_IS_QUANTITY, IM_Q_SIGN, IM_Q_GT, IM_Q_LT, IM_Q_CMP, IM_Q_FLOAT, IM_Q_INT,
    IM_Q_IS_INT, IM_Q_ADD, IM_Q_ADD_INT, IM_Q_SUB, IM_Q_SUB_INT,
    IM_SEMVER, IM_IS_SEMVER, IM_S_GT, IM_S_LT, IM_S_CMP, IM_S_MAJOR, IM_S_MINOR, IM_S_PATCH,
    IM_INCLUDES,
    IM_COUNT
} cel_impl;

/* Where a function is available (environment gating). */
enum { AV_ALL = 0, AV_INCLUDES = 1 };

typedef struct cel_overload {
    const char *id;       /* cel-go overload id, for messages and cost rules */
    uint16_t fn;          /* function index */
    uint8_t member;       /* receiver-style call */
    uint8_t nparams;      /* including the receiver */
    const cel_type *params[4];
    const cel_type *result;
    uint16_t impl;        /* cel_impl */
    uint8_t nparamvars;   /* type parameters used (A, B) */
    uint8_t k8s_cost;     /* CK_*: Kubernetes CostEstimator rule, by function name */
    uint8_t go_cost;      /* CK_*: cel-go default rule, by overload id */
    uint8_t lib;          /* CL_*: the library file implementing `impl` */
} cel_overload;

enum { CL_STD = 0, CL_STR, CL_K8S };

/* Runtime cost rules (cel_call_cost); resolved once per overload. */
enum {
    CK_NONE = 0,      /* no rule: fall through (K8s) / 1 (cel-go) */
    CK_ONE,           /* 1 */
    CK_TRAVERSE0,     /* Kubernetes traversalCost(arg0) (includes) */
    CK_SIZE0_01,      /* ceil(0.1 * size(arg0)) */
    CK_SIZE0_02,      /* ceil(0.2 * size(arg0)) */
    CK_RESULT_02,     /* ceil(0.2 * size(result)) (join) */
    CK_REGEX,         /* ceil(0.1 * (1 + size(s))) * ceil(0.25 * size(re)) */
    CK_EQ_K8S,        /* 1 when arg0 is a Quantity or Semver, else no rule */
    CK_TRAVERSE_MIN,  /* ceil(0.1 * min(size(a), size(b))) */
    CK_IN_LIST,       /* size(list) */
    CK_ADD_STR,       /* ceil(0.1 * (size(a) + size(b))) */
    CK_CONTAINS,      /* ceil(0.1 * size(s)) * ceil(0.1 * size(sub)) */
};

typedef struct cel_func {
    const char *name;
    uint16_t first, count; /* overload range */
    uint8_t avail;
    uint8_t singleton;     /* one implementation for all overloads */
} cel_func;

/* The table (funcs.c), built once. */
const cel_func *cel_funcs(size_t *n);
const cel_overload *cel_overloads(size_t *n);
/* Function index by name, or -1. */
int cel_func_find(const char *name, size_t len);
/* Names that belong to the Kubernetes environment but to tier C of
 * ../shared/docs/cel.md, for a clear "not supported" message. */
bool cel_func_unsupported(const char *name, size_t len);

/* ---- AST ------------------------------------------------------------------- */

typedef enum cel_nk {
    N_LIT = 0,   /* constant: val */
    N_IDENT,     /* name (parser); checker rewrites it */
    N_LOCAL,     /* comprehension / bind variable: slot */
    N_GLOBAL,    /* declared plain variable: slot = index */
    N_DEVICE,    /* the device variable */
    N_SELECT,    /* a.name (id1 = interned field name when known) */
    N_HAS,       /* has(a.name) */
    N_CALL,      /* function call: fn, target a (member) + args */
    N_LIST,      /* [args...] */
    N_MAP,       /* {args[2i]: args[2i+1]} */
    N_AND, N_OR, /* a && b, a || b */
    N_COND,      /* a ? b : c */
    N_ALL, N_EXISTS, N_EXISTS_ONE, N_MAP_M, N_MAP_FILTER, N_FILTER, /* a = range, slot, b = pred/xform, c = xform */
    N_BIND,      /* cel.bind: slot, a = init, b = body */
    N_ATTR,      /* fused device.attributes[d].x: id1 = domain, id2 = name */
    N_CAP,       /* fused device.capacity[d].x */
    N_DEVMAP,    /* fused device.attributes[d] / device.capacity[d]: sub = MK_*, id1 = domain */
} cel_nk;

typedef struct cel_node cel_node;
struct cel_node {
    uint8_t k;       /* cel_nk */
    uint8_t flags;   /* NF_* */
    uint16_t fn;     /* N_CALL: function index */
    uint32_t pos;    /* byte offset of the node's token */
    uint32_t h;      /* height of the subtree (parser limit) */
    uint32_t slot;   /* N_LOCAL/N_GLOBAL slot, macro iteration slot, N_BIND slot */
    uint32_t id1, id2;
    const char *name; /* identifier, field or function name */
    uint32_t nlen;
    uint32_t nargs;
    cel_node *a, *b, *c;
    cel_node **args;
    const cel_type *ty;     /* checked type */
    const uint16_t *ovl;    /* N_CALL: statically matching overloads */
    uint16_t novl;
    /* N_CALL, resolved after checking (check.c: resolve) so the evaluator
     * looks nothing up: the overload when the checker left one candidate or
     * the function has one implementation (else NULL: chosen on the
     * runtime types among ovl), and the call's cost rule (CK_*; crule_alt
     * when crule is CK_EQ_K8S and the argument is no Quantity/Semver). */
    const cel_overload *o1;
    uint8_t crule, crule_alt;
    uint8_t dfield;         /* N_SELECT/N_HAS on the device: CD_* field, 0 = other */
    cel_v val;              /* N_LIT value */
};

/* Fields of the `device` variable (device.c). */
enum { CD_NONE = 0, CD_DRIVER, CD_ATTRIBUTES, CD_CAPACITY, CD_MULTI, CD_UNKNOWN };

enum {
    NF_LEADING_DOT = 1, /* `.name`: resolve in the root scope only */
    NF_CONST_SET = 2,   /* `x in [constants]`: cel-go's set membership (no call cost) */
    NF_RE_CONST = 4,    /* regex argument is a constant (validated at compile time) */
    NF_FOLDED = 8,      /* N_LIT computed from a conversion of a constant */
};

/* ---- programs, environment ---------------------------------------------------- */

typedef struct cel_global {
    const char *name;
    const cel_type *type;
    cel_v val;
} cel_global;

struct cel_prog {
    uint32_t id;
    char *text;
    size_t len;
    de_arena *arena;
    cel_node *root;
    const cel_type *type;
    uint64_t est_cost;
    uint32_t nslots;
    bool ok;
    de_err err; /* compile error when !ok */
    uint64_t hash;
};

struct cel_env {
    de_interner *in;
    cel_env_opts opts;
    bool plain;          /* no device variable */
    bool attr_any;       /* attribute values typed google.protobuf.Any (1.31 env) */
    bool has_multi;      /* device.allowMultipleAllocations declared */
    bool has_includes;   /* includes() declared */
    uint64_t limit;
    cel_global *globals;
    uint32_t nglobals, capglobals;
    de_arena *arena;     /* env-lifetime data (globals) */
    cel_prog **progs;    /* compile cache, open addressing on hash */
    uint32_t nprogs, capprogs;
    uint32_t *checked;   /* by device id: generation + 1 whose attributes passed
                          * cel_device_precheck (versions parse); 0 = not yet */
    uint32_t ncheck;
    cel_prog **byid;     /* programs in creation order */
    uint32_t nbyid, capbyid;
    uint32_t next_id;
    uint32_t first_id;   /* the oldest live program's id (cel_env_collect) */
    uint64_t gen;        /* bumped when the cache is emptied */
};

/* ---- lexer / parser ---------------------------------------------------------- */

/* Parse text into an AST in `a`. On a syntax error returns DE_EPARSE with the
 * message and 1-based line/col in e. */
de_rc cel_parse(const char *text, size_t len, de_arena *a, cel_node **out, de_err *e);
/* Decode a quoted string or bytes literal token (prefixes included).
 * Returns false with *why set on an invalid escape. */
bool cel_unescape(const char *tok, size_t n, bool bytes, de_arena *a, const char **out,
                  size_t *outn, const char **why);
/* 1-based line and column (in code points) of byte offset pos. */
void cel_pos_linecol(const char *text, size_t len, uint32_t pos, int *line, int *col);

/* ---- checker ----------------------------------------------------------------- */

/* Type-check and resolve p->root against env; rewrites the AST in place. */
de_rc cel_check(cel_env *env, cel_prog *p, de_err *e);
/* Static cost estimate (cost.c). */
uint64_t cel_estimate(cel_env *env, const cel_prog *p);

/* ---- evaluation ---------------------------------------------------------------- */

typedef struct cel_ctx {
    cel_env *env;
    const cel_prog *prog;
    de_arena *a;
    const de_devview *dev;
    cel_v *slots;
    uint64_t cost, limit;
    jmp_buf abort;
    const char *abort_msg;
    de_rc abort_rc;
} cel_ctx;

cel_v cel_eval_node(cel_ctx *c, const cel_node *n);
/* Evaluate p's root; on an abort (cost limit, memory) returns false with *msg. */
bool cel_run(cel_ctx *c, cel_v *out);

/* Abort the evaluation (cost limit, memory). Never returns. */
_Noreturn void cel_abort(cel_ctx *c, de_rc rc, const char *msg);
static inline void cel_charge(cel_ctx *c, uint64_t n)
{
    c->cost += n;
    if (c->cost > c->limit)
        cel_abort(c, DE_EBUDGET, "operation cancelled: actual cost limit exceeded");
}
/* Arena allocation that aborts the evaluation when the arena is full. */
void *cel_alloc(cel_ctx *c, size_t n);

/* Error values. */
cel_v cel_err(cel_ctx *c, const cel_node *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
cel_v cel_err_kind(cel_ctx *c, const cel_node *at, int kind, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
cel_v cel_no_overload(cel_ctx *c, const cel_node *at);
/* cel-go's MaybeNoSuchOverloadErr: an error argument passes through. */
cel_v cel_maybe_no_overload(cel_ctx *c, const cel_node *at, cel_v arg);

/* Call an overload implementation with evaluated, non-error arguments. */
cel_v cel_call_std(cel_ctx *c, const cel_node *n, int impl, cel_v *args, int nargs);
cel_v cel_call_str(cel_ctx *c, const cel_node *n, int impl, cel_v *args, int nargs);
cel_v cel_call_k8s(cel_ctx *c, const cel_node *n, int impl, cel_v *args, int nargs);
/* Size as cel-go's actualSize: code points, bytes, elements; 1 otherwise. */
uint64_t cel_actual_size(cel_v v);

/* ---- value helpers (value.c) ------------------------------------------------- */

/* Heterogeneous equality: 1 true, 0 false, -1 error (*err filled). */
int cel_equal(cel_ctx *c, const cel_node *at, cel_v a, cel_v b, cel_v *err);
/* Ordering: -1, 0, 1, or 2 with *err filled. */
int cel_compare(cel_ctx *c, const cel_node *at, cel_v a, cel_v b, cel_v *err);
/* Runtime type of a value (CV_* to name with cel_type_name). */
int cel_type_of(cel_v v);
const char *cel_type_name(int t);
/* cel-go's Go type name of a value ("types.Int"), for iteration errors. */
const char *cel_go_type_name(cel_v v);
size_t cel_utf8_count(const char *s, size_t n);
bool cel_utf8_valid(const char *s, size_t n);

/* Maps: size, lookup (numeric keys across int/uint/double), iteration. */
uint32_t cel_map_size(cel_ctx *c, cel_v m);
bool cel_map_find(cel_ctx *c, cel_v m, cel_v key, cel_v *out);
/* Key and value of entry i (0 <= i < size), in a deterministic order. */
cel_v cel_map_key_at(cel_ctx *c, cel_v m, uint32_t i);
cel_v cel_map_val_at(cel_ctx *c, cel_v m, uint32_t i);
/* Build a plain map (last duplicate wins, as cel-go). */
cel_v cel_map_build(de_arena *a, const cel_v *keys, const cel_v *vals, uint32_t n, bool *oom);
/* Fully materialise a value (lazy device maps -> plain maps). */
cel_v cel_materialize(cel_ctx *c, cel_v v);

/* Key text as Go's %v prints it ("no such key: x"). */
void cel_key_text(cel_v k, char *buf, size_t cap);
/* Double formatting as Go's %g (string(double)) and as cel-go prints it. */
size_t cel_fmt_double_g(double d, char *buf, size_t cap);

/* Device views (device.c). */
cel_v cel_device_field(cel_ctx *c, const cel_node *at, cel_v dev, const char *f, size_t n);
int cel_device_field_id(const char *f, size_t n); /* CD_* (CD_UNKNOWN: not a field) */
cel_v cel_device_field_at(cel_ctx *c, const cel_node *at, cel_v dev, int field);
cel_v cel_device_attr(cel_ctx *c, const cel_node *at, uint32_t domain, uint32_t name,
                      const char *nametext, size_t namelen);
cel_v cel_device_cap(cel_ctx *c, const cel_node *at, uint32_t domain, uint32_t name,
                     const char *nametext, size_t namelen);
cel_v cel_device_attr_value(cel_ctx *c, const cel_node *at, const de_attr *attr);
uint32_t cel_devmap_size(cel_ctx *c, cel_v m);
bool cel_devmap_find(cel_ctx *c, cel_v m, cel_v key, cel_v *out);
bool cel_devmap_contains(cel_ctx *c, cel_v m, cel_v key);
cel_v cel_devmap_key_at(cel_ctx *c, cel_v m, uint32_t i);
cel_v cel_devmap_val_at(cel_ctx *c, cel_v m, uint32_t i);
/* Validate what Kubernetes converts up front (versions, value presence). */
cel_v cel_device_precheck(cel_ctx *c);

/* Regex (regex.c): RE2 syntax checked, PCRE2 underneath, cached. */
typedef struct cel_re cel_re;
/* Compile (cached). NULL with *why on an invalid / unsupported pattern. */
const cel_re *cel_re_get(const char *pat, size_t n, const char **why, char *whybuf, size_t whycap);
/* 1 match, 0 no match, -1 error (match limit).  PCRE2 first; a match that hits its
 * limits is answered by the linear-time fallback (re_nfa.h). */
int cel_re_search(const cel_re *re, const char *s, size_t n, size_t start, size_t *mstart,
                  size_t *mend);
int cel_re_matches(const cel_re *re, const char *s, size_t n);
/* One engine on purpose (tests): CEL_RE_AUTO as above, CEL_RE_PCRE2 alone, CEL_RE_NFA the
 * fallback alone.  first: any match will do.  1 match, 0 none, -1 limits/budget,
 * -2 the fallback cannot take the pattern. */
enum { CEL_RE_AUTO, CEL_RE_PCRE2, CEL_RE_NFA };
int cel_re_search_with(const cel_re *re, int engine, const char *s, size_t n, size_t start,
                       bool first, size_t *mstart, size_t *mend);
/* Test knob: force makes this thread's matches take the fallback path as if PCRE2 had
 * hit its limits every time.  Returns how many matches the fallback has answered on
 * this thread so far. */
uint64_t cel_re_test_knob(bool force);
/* Drop this thread's compiled patterns. */
void cel_re_cache_clear(void);

#endif
