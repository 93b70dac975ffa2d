/*
 * funcs.c - static types and the one table of CEL functions: the standard
 * library, ext.Strings v2, the Kubernetes regex, quantity and semver
 * libraries, and DRA's includes().
 *
 * Each overload carries cel-go's overload id (cost rules key on it), its
 * signature (read by the checker, with type parameters A and B instantiated
 * fresh per call), and the implementation id the evaluator dispatches on.
 * Overloads of one function are consecutive; the function index is built
 * once.  Functions cel-go binds with a single implementation (operators,
 * size, type, dyn) are "singletons": the evaluator calls them without a
 * runtime signature check and the implementation decides (so `[7][dyn(0.0)]`
 * indexes like cel-go does); all others are dispatched on the runtime types.
 */
#include "cel_int.h"

#include <pthread.h>
#include <string.h>

const cel_type cel_t_dyn = {TK_DYN, 0, NULL, NULL};
const cel_type cel_t_any = {TK_ANY, 0, NULL, NULL};
const cel_type cel_t_error = {TK_ERROR, 0, NULL, NULL};
const cel_type cel_t_null = {TK_NULL, 0, NULL, NULL};
const cel_type cel_t_bool = {TK_BOOL, 0, NULL, NULL};
const cel_type cel_t_int = {TK_INT, 0, NULL, NULL};
const cel_type cel_t_uint = {TK_UINT, 0, NULL, NULL};
const cel_type cel_t_double = {TK_DOUBLE, 0, NULL, NULL};
const cel_type cel_t_string = {TK_STRING, 0, NULL, NULL};
const cel_type cel_t_bytes = {TK_BYTES, 0, NULL, NULL};
const cel_type cel_t_qty = {TK_QTY, 0, NULL, NULL};
const cel_type cel_t_semver = {TK_SEMVER, 0, NULL, NULL};
const cel_type cel_t_device = {TK_DEVICE, 0, NULL, NULL};
const cel_type cel_t_type = {TK_TYPE, 0, NULL, NULL};

/* type parameters of the table (ids 0 and 1, renamed per call site) */
static const cel_type T_A = {TK_PARAM, 0, NULL, NULL};
static const cel_type T_B = {TK_PARAM, 1, NULL, NULL};
static const cel_type T_LIST_A = {TK_LIST, 0, &T_A, NULL};
static const cel_type T_MAP_AB = {TK_MAP, 0, &T_A, &T_B};
static const cel_type T_TYPE_A = {TK_TYPE, 0, &T_A, NULL};
static const cel_type T_LIST_STR = {TK_LIST, 0, &cel_t_string, NULL};

#define D (&cel_t_dyn)
#define BO (&cel_t_bool)
#define I (&cel_t_int)
#define U (&cel_t_uint)
#define F (&cel_t_double)
#define S (&cel_t_string)
#define BY (&cel_t_bytes)
#define Q (&cel_t_qty)
#define SV (&cel_t_semver)
#define A (&T_A)
#define B (&T_B)
#define LA (&T_LIST_A)
#define MAB (&T_MAP_AB)
#define TA (&T_TYPE_A)
#define LS (&T_LIST_STR)

/* name, overload id, member, result, impl, params... */
#define G1(n, id, r, im, a1) {n, {id, 0, 0, 1, {a1}, r, im, 0}}
#define G2(n, id, r, im, a1, a2) {n, {id, 0, 0, 2, {a1, a2}, r, im, 0}}
#define G3(n, id, r, im, a1, a2, a3) {n, {id, 0, 0, 3, {a1, a2, a3}, r, im, 0}}
#define M1(n, id, r, im, a1) {n, {id, 0, 1, 1, {a1}, r, im, 0}}
#define M2(n, id, r, im, a1, a2) {n, {id, 0, 1, 2, {a1, a2}, r, im, 0}}
#define M3(n, id, r, im, a1, a2, a3) {n, {id, 0, 1, 3, {a1, a2, a3}, r, im, 0}}
#define M4(n, id, r, im, a1, a2, a3, a4) {n, {id, 0, 1, 4, {a1, a2, a3, a4}, r, im, 0}}

typedef struct row {
    const char *name;
    cel_overload o;
} row;

#define CMP(op, pfx, im)                                                                  \
    G2(op, pfx "_bool", BO, im, BO, BO), G2(op, pfx "_int64", BO, im, I, I),             \
        G2(op, pfx "_int64_double", BO, im, I, F), G2(op, pfx "_int64_uint64", BO, im, I, U), \
        G2(op, pfx "_uint64", BO, im, U, U), G2(op, pfx "_uint64_double", BO, im, U, F),  \
        G2(op, pfx "_uint64_int64", BO, im, U, I), G2(op, pfx "_double", BO, im, F, F),   \
        G2(op, pfx "_double_int64", BO, im, F, I), G2(op, pfx "_double_uint64", BO, im, F, U), \
        G2(op, pfx "_string", BO, im, S, S), G2(op, pfx "_bytes", BO, im, BY, BY)

static const row rows[] = {
    G1("!_", "logical_not", BO, IM_NOT, BO),
    G1("-_", "negate_int64", I, IM_NEG, I),
    G1("-_", "negate_double", F, IM_NEG, F),
    G2("_==_", "equals", BO, IM_EQ, A, A),
    G2("_!=_", "not_equals", BO, IM_NE, A, A),
    G2("_+_", "add_bytes", BY, IM_ADD, BY, BY),
    G2("_+_", "add_double", F, IM_ADD, F, F),
    G2("_+_", "add_int64", I, IM_ADD, I, I),
    G2("_+_", "add_list", LA, IM_ADD, LA, LA),
    G2("_+_", "add_string", S, IM_ADD, S, S),
    G2("_+_", "add_uint64", U, IM_ADD, U, U),
    G2("_-_", "subtract_double", F, IM_SUB, F, F),
    G2("_-_", "subtract_int64", I, IM_SUB, I, I),
    G2("_-_", "subtract_uint64", U, IM_SUB, U, U),
    G2("_*_", "multiply_double", F, IM_MUL, F, F),
    G2("_*_", "multiply_int64", I, IM_MUL, I, I),
    G2("_*_", "multiply_uint64", U, IM_MUL, U, U),
    G2("_/_", "divide_double", F, IM_DIV, F, F),
    G2("_/_", "divide_int64", I, IM_DIV, I, I),
    G2("_/_", "divide_uint64", U, IM_DIV, U, U),
    G2("_%_", "modulo_int64", I, IM_MOD, I, I),
    G2("_%_", "modulo_uint64", U, IM_MOD, U, U),
    CMP("_<_", "less", IM_LT),
    CMP("_<=_", "less_equals", IM_LE),
    CMP("_>_", "greater", IM_GT),
    CMP("_>=_", "greater_equals", IM_GE),
    G2("_[_]", "index_list", A, IM_INDEX, LA, I),
    G2("_[_]", "index_map", B, IM_INDEX, MAB, A),
    G2("@in", "in_list", BO, IM_IN, A, LA),
    G2("@in", "in_map", BO, IM_IN, A, MAB),
    G1("size", "size_bytes", I, IM_SIZE, BY),
    M1("size", "bytes_size", I, IM_SIZE, BY),
    G1("size", "size_list", I, IM_SIZE, LA),
    M1("size", "list_size", I, IM_SIZE, LA),
    G1("size", "size_map", I, IM_SIZE, MAB),
    M1("size", "map_size", I, IM_SIZE, MAB),
    G1("size", "size_string", I, IM_SIZE, S),
    M1("size", "string_size", I, IM_SIZE, S),
    G1("type", "type", TA, IM_TYPE, A),
    G1("bool", "bool_to_bool", BO, IM_TO_BOOL, BO),
    G1("bool", "string_to_bool", BO, IM_TO_BOOL, S),
    G1("bytes", "bytes_to_bytes", BY, IM_TO_BYTES, BY),
    G1("bytes", "string_to_bytes", BY, IM_TO_BYTES, S),
    G1("double", "double_to_double", F, IM_TO_DOUBLE, F),
    G1("double", "int64_to_double", F, IM_TO_DOUBLE, I),
    G1("double", "string_to_double", F, IM_TO_DOUBLE, S),
    G1("double", "uint64_to_double", F, IM_TO_DOUBLE, U),
    G1("dyn", "to_dyn", D, IM_DYN, A),
    G1("int", "int64_to_int64", I, IM_TO_INT, I),
    G1("int", "double_to_int64", I, IM_TO_INT, F),
    G1("int", "string_to_int64", I, IM_TO_INT, S),
    G1("int", "uint64_to_int64", I, IM_TO_INT, U),
    G1("string", "string_to_string", S, IM_TO_STRING, S),
    G1("string", "bool_to_string", S, IM_TO_STRING, BO),
    G1("string", "bytes_to_string", S, IM_TO_STRING, BY),
    G1("string", "double_to_string", S, IM_TO_STRING, F),
    G1("string", "int64_to_string", S, IM_TO_STRING, I),
    G1("string", "uint64_to_string", S, IM_TO_STRING, U),
    G1("uint", "uint64_to_uint64", U, IM_TO_UINT, U),
    G1("uint", "double_to_uint64", U, IM_TO_UINT, F),
    G1("uint", "int64_to_uint64", U, IM_TO_UINT, I),
    G1("uint", "string_to_uint64", U, IM_TO_UINT, S),
    M2("contains", "contains_string", BO, IM_CONTAINS, S, S),
    M2("endsWith", "ends_with_string", BO, IM_ENDS, S, S),
    M2("startsWith", "starts_with_string", BO, IM_STARTS, S, S),
    G2("matches", "matches", BO, IM_MATCHES, S, S),
    M2("matches", "matches_string", BO, IM_MATCHES, S, S),
    /* ext.Strings v2 */
    M2("charAt", "string_char_at_int", S, IM_CHAR_AT, S, I),
    M2("indexOf", "string_index_of_string", I, IM_INDEX_OF, S, S),
    M3("indexOf", "string_index_of_string_int", I, IM_INDEX_OF, S, S, I),
    M2("lastIndexOf", "string_last_index_of_string", I, IM_LAST_INDEX_OF, S, S),
    M3("lastIndexOf", "string_last_index_of_string_int", I, IM_LAST_INDEX_OF, S, S, I),
    M1("lowerAscii", "string_lower_ascii", S, IM_LOWER, S),
    M1("upperAscii", "string_upper_ascii", S, IM_UPPER, S),
    M3("replace", "string_replace_string_string", S, IM_REPLACE, S, S, S),
    M4("replace", "string_replace_string_string_int", S, IM_REPLACE, S, S, S, I),
    M2("split", "string_split_string", LS, IM_SPLIT, S, S),
    M3("split", "string_split_string_int", LS, IM_SPLIT, S, S, I),
    M2("substring", "string_substring_int", S, IM_SUBSTRING, S, I),
    M3("substring", "string_substring_int_int", S, IM_SUBSTRING, S, I, I),
    M1("trim", "string_trim", S, IM_TRIM, S),
    M1("join", "list_join", S, IM_JOIN, LS),
    M2("join", "list_join_string", S, IM_JOIN, LS, S),
    /* Kubernetes regex */
    M2("find", "find", S, IM_FIND, S, S),
    M2("findAll", "find_all", LS, IM_FIND_ALL, S, S),
    M3("findAll", "find_all_n", LS, IM_FIND_ALL, S, S, I),
    /* Kubernetes quantity */
    G1("quantity", "string_to_quantity", Q, IM_QUANTITY, S),
    G1("isQuantity", "is_quantity_string", BO, IM_IS_QUANTITY, S),
    G1("sign", "quantity_sign", I, IM_Q_SIGN, Q),
    M2("isGreaterThan", "quantity_is_greater_than", BO, IM_Q_GT, Q, Q),
    M2("isGreaterThan", "semver_is_greater_than", BO, IM_S_GT, SV, SV),
    M2("isLessThan", "quantity_is_less_than", BO, IM_Q_LT, Q, Q),
    M2("isLessThan", "semver_is_less_than", BO, IM_S_LT, SV, SV),
    M2("compareTo", "quantity_compare_to", I, IM_Q_CMP, Q, Q),
    M2("compareTo", "semver_compare_to", I, IM_S_CMP, SV, SV),
    M1("asApproximateFloat", "quantity_get_float", F, IM_Q_FLOAT, Q),
    M1("asInteger", "quantity_get_int", I, IM_Q_INT, Q),
    M1("isInteger", "quantity_is_integer", BO, IM_Q_IS_INT, Q),
    M2("add", "quantity_add", Q, IM_Q_ADD, Q, Q),
    M2("add", "quantity_add_int", Q, IM_Q_ADD_INT, Q, I),
    M2("sub", "quantity_sub", Q, IM_Q_SUB, Q, Q),
    M2("sub", "quantity_sub_int", Q, IM_Q_SUB_INT, Q, I),
    /* Kubernetes semver (library version 1: the normalize argument) */
    G1("semver", "string_to_semver", SV, IM_SEMVER, S),
    G2("semver", "string_bool_to_semver_normalize", SV, IM_SEMVER, S, BO),
    G1("isSemver", "is_semver_string", BO, IM_IS_SEMVER, S),
    G2("isSemver", "is_semver_string_bool_normalize", BO, IM_IS_SEMVER, S, BO),
    M1("major", "semver_major", I, IM_S_MAJOR, SV),
    M1("minor", "semver_minor", I, IM_S_MINOR, SV),
    M1("patch", "semver_patch", I, IM_S_PATCH, SV),
    /* DRA */
    M2("includes", "dra_includes_dyn_dyn", BO, IM_INCLUDES, D, D),
};

/* singleton functions (see the header comment) */
static const char *const singletons[] = {
    "!_", "-_", "_==_", "_!=_", "_+_", "_-_", "_*_", "_/_", "_%_", "_<_", "_<=_",
    "_>_", "_>=_", "_[_]", "@in", "size", "type", "dyn",
};

static bool in_set(const char *s, const char *const *set)
{
    for (; *set; set++)
        if (!strcmp(s, *set))
            return true;
    return false;
}

/* Kubernetes library.CostEstimator.CallCost, keyed by function name. */
static uint8_t k8s_cost_rule(const char *fn)
{
    static const char *const size01[] = {"lowerAscii", "upperAscii", "substring", "trim", "quantity",
                                         "isQuantity", "semver", "isSemver", NULL};
    static const char *const one[] = {"sign", "asInteger", "isInteger", "asApproximateFloat",
                                      "isGreaterThan", "isLessThan", "compareTo", "add", "sub",
                                      "major", "minor", "patch", NULL};
    static const char *const size02[] = {"replace", "split", NULL};
    static const char *const regex[] = {"find", "findAll", NULL};
    if (!strcmp(fn, "includes"))
        return CK_TRAVERSE0;
    if (in_set(fn, size01))
        return CK_SIZE0_01;
    if (in_set(fn, size02))
        return CK_SIZE0_02;
    if (!strcmp(fn, "join"))
        return CK_RESULT_02;
    if (in_set(fn, regex))
        return CK_REGEX;
    if (in_set(fn, one))
        return CK_ONE;
    if (!strcmp(fn, "_==_"))
        return CK_EQ_K8S;
    return CK_NONE;
}

/* cel-go runtimecost.go costCall, keyed by overload id. */
static uint8_t go_cost_rule(const char *id)
{
    static const char *const size01[] = {"starts_with_string", "ends_with_string", "string_to_bytes",
                                         "bytes_to_string", NULL};
    static const char *const trav[] = {"equals", "not_equals", "less_string", "greater_string",
                                       "less_equals_string", "greater_equals_string", "less_bytes",
                                       "greater_bytes", "less_equals_bytes", "greater_equals_bytes",
                                       NULL};
    if (in_set(id, size01))
        return CK_SIZE0_01;
    if (!strcmp(id, "in_list"))
        return CK_IN_LIST;
    if (in_set(id, trav))
        return CK_TRAVERSE_MIN;
    if (!strcmp(id, "add_string") || !strcmp(id, "add_bytes"))
        return CK_ADD_STR;
    if (!strcmp(id, "matches_string"))
        return CK_REGEX;
    if (!strcmp(id, "contains_string"))
        return CK_CONTAINS;
    return CK_ONE;
}

static cel_overload ovl[DE_ARRAY_LEN(rows)];
static cel_func fns[DE_ARRAY_LEN(rows)];
static size_t nfns;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static bool uses_param(const cel_type *t, uint32_t id)
{
    if (!t)
        return false;
    if (t->k == TK_PARAM)
        return t->id == id;
    return uses_param(t->p0, id) || uses_param(t->p1, id);
}

static void build(void)
{
    for (size_t i = 0; i < DE_ARRAY_LEN(rows); i++) {
        ovl[i] = rows[i].o;
        if (!nfns || strcmp(fns[nfns - 1].name, rows[i].name)) {
            fns[nfns].name = rows[i].name;
            fns[nfns].first = (uint16_t)i;
            fns[nfns].count = 0;
            fns[nfns].avail = !strcmp(rows[i].name, "includes") ? AV_INCLUDES : AV_ALL;
            fns[nfns].singleton = 0;
            for (size_t k = 0; k < DE_ARRAY_LEN(singletons); k++)
                if (!strcmp(singletons[k], rows[i].name))
                    fns[nfns].singleton = 1;
            nfns++;
        }
        ovl[i].fn = (uint16_t)(nfns - 1);
        fns[nfns - 1].count++;
        uint8_t np = 0;
        for (uint32_t id = 0; id < 2; id++) {
            bool used = uses_param(ovl[i].result, id);
            for (int a = 0; a < ovl[i].nparams; a++)
                used = used || uses_param(ovl[i].params[a], id);
            if (used)
                np = (uint8_t)(id + 1);
        }
        ovl[i].nparamvars = np;
        ovl[i].k8s_cost = k8s_cost_rule(rows[i].name);
        ovl[i].go_cost = go_cost_rule(ovl[i].id);
        ovl[i].lib = ovl[i].impl < IM_CHAR_AT ? CL_STD : ovl[i].impl < IM_FIND ? CL_STR : CL_K8S;
    }
}

const cel_func *cel_funcs(size_t *n)
{
    pthread_once(&once, build);
    if (n)
        *n = nfns;
    return fns;
}

const cel_overload *cel_overloads(size_t *n)
{
    pthread_once(&once, build);
    if (n)
        *n = DE_ARRAY_LEN(rows);
    return ovl;
}

int cel_func_find(const char *name, size_t len)
{
    pthread_once(&once, build);
    for (size_t i = 0; i < nfns; i++)
        if (strlen(fns[i].name) == len && !memcmp(fns[i].name, name, len))
            return (int)i;
    return -1;
}

static const char *const unsupported[] = {
    /* optional types */
    "optional.of", "optional.ofNonZeroValue", "optional.none", "orValue", "hasValue", "value",
    "or", "optMap", "optFlatMap", "unwrapOpt",
    /* two-variable comprehensions */
    "transformList", "transformMap", "transformMapEntry", "existsOne",
    /* Kubernetes lists, ext.Lists, ext.Sets */
    "isSorted", "sum", "min", "max", "slice", "flatten", "distinct", "sort", "sortBy",
    "lists.range", "sets.contains", "sets.equivalent", "sets.intersects", "reverse",
    /* strings */
    "strings.quote", "format", "quote",
    /* time */
    "timestamp", "duration", "getFullYear", "getMonth", "getDate", "getDayOfMonth",
    "getDayOfWeek", "getDayOfYear", "getHours", "getMinutes", "getSeconds", "getMilliseconds",
    /* url, ip, cidr, format, authz */
    "url", "isURL", "getScheme", "getHost", "getHostname", "getPort", "getEscapedPath",
    "getQuery", "ip", "isIP", "ip.isCanonical", "cidr", "isCIDR", "containsIP", "containsCIDR",
    "family", "isUnspecified", "isLoopback", "isLinkLocalMulticast", "isLinkLocalUnicast",
    "isGlobalUnicast", "masked", "prefixLength", "format.named", "validate", "authorizer",
    "serviceAccount", "path", "group", "resource", "subresource", "namespace", "check",
    "allowed", "reason", "errored", "fieldSelector", "labelSelector", "jsonpatch.escapeKey",
};

bool cel_func_unsupported(const char *name, size_t len)
{
    for (size_t i = 0; i < DE_ARRAY_LEN(unsupported); i++)
        if (strlen(unsupported[i]) == len && !memcmp(unsupported[i], name, len))
            return true;
    return false;
}

/* ---- type formatting ------------------------------------------------------- */

void cel_type_format(const cel_type *t, de_buf *b)
{
    if (!t) {
        de_buf_puts(b, "dyn");
        return;
    }
    switch (t->k) {
    case TK_DYN: de_buf_puts(b, "dyn"); break;
    case TK_ANY: de_buf_puts(b, "google.protobuf.Any"); break;
    case TK_ERROR: de_buf_puts(b, "*error*"); break;
    case TK_NULL: de_buf_puts(b, "null_type"); break;
    case TK_BOOL: de_buf_puts(b, "bool"); break;
    case TK_INT: de_buf_puts(b, "int"); break;
    case TK_UINT: de_buf_puts(b, "uint"); break;
    case TK_DOUBLE: de_buf_puts(b, "double"); break;
    case TK_STRING: de_buf_puts(b, "string"); break;
    case TK_BYTES: de_buf_puts(b, "bytes"); break;
    case TK_QTY: de_buf_puts(b, "kubernetes.Quantity"); break;
    case TK_SEMVER: de_buf_puts(b, "kubernetes.Semver"); break;
    case TK_DEVICE: de_buf_puts(b, "kubernetes.DRADevice"); break;
    case TK_PARAM: de_buf_printf(b, "_var%u", t->id); break;
    case TK_LIST:
        de_buf_puts(b, "list(");
        cel_type_format(t->p0, b);
        de_buf_putc(b, ')');
        break;
    case TK_MAP:
        de_buf_puts(b, "map(");
        cel_type_format(t->p0, b);
        de_buf_puts(b, ", ");
        cel_type_format(t->p1, b);
        de_buf_putc(b, ')');
        break;
    case TK_TYPE:
        if (t->p0) {
            de_buf_puts(b, "type(");
            cel_type_format(t->p0, b);
            de_buf_putc(b, ')');
        } else {
            de_buf_puts(b, "type");
        }
        break;
    }
}
