/*
 * dec.h - internal: the decoder/validator shared by the per-kind decoders
 * (dec_*.c).  Not a public header.
 *
 * One pass over the jansson tree both decodes into the dg_types.h shapes
 * and validates like the API server: every problem is recorded with its
 * JSON path and decoding continues, so one run reports all the defects of
 * an object (the API server does the same), up to DEC_MAX_ERRORS.  The
 * first error's path goes into de_err.path.
 *
 * Error texts follow apimachinery's field.Error ("Required value",
 * "Invalid value: \"x\": detail", "Unsupported value", "Too many",
 * "Duplicate value", "Forbidden", "Too long"); paths are written in the
 * shape of the input (a v1beta1 slice reports spec.devices[0].basic...), with
 * map keys quoted: spec.devices[3].attributes["memory"].
 *
 * Unknown fields are refused (kubectl's default strict field validation):
 * a typo silently dropped would change what gets allocated.  The message
 * suggests the right spelling when only the case differs, and says where a
 * v1beta1-style field belongs in v1.
 */
#ifndef DG_DEC_H
#define DG_DEC_H

#include "../base/arena.h"
#include "../base/buf.h"
#include "../base/gates.h"
#include "../base/intern.h"
#include "dg_types.h"

#include <jansson.h>

typedef struct cel_env cel_env;

#define DEC_MAX_ERRORS 10
#define DEC_PATH_MAX 1024

/* Versions of the input, for conversion and messages (dg_slice.input_version). */
enum {
    DEC_V1BETA1 = DG_INPUT_V1BETA1,
    DEC_V1BETA2 = DG_INPUT_V1BETA2,
    DEC_V1 = DG_INPUT_V1,
    DEC_V1ALPHA3 = DG_INPUT_V1ALPHA3,
};

typedef struct dec {
    de_interner *in;
    de_arena *a;
    de_gates gates;
    int version;        /* DEC_V* of the resource.k8s.io object */
    bool validate;      /* false: decode only (trusted input) */
    char path[DEC_PATH_MAX];
    size_t plen;
    /* errors */
    de_buf msgs;        /* "path: message; path: message" */
    uint32_t nerr;      /* errors found */
    uint32_t nmsgs;     /* messages kept in msgs (at most DEC_MAX_ERRORS, each whole) */
    size_t msg_end[DEC_MAX_ERRORS]; /* where each message in msgs ends */
    char first_path[DE_ERR_FIELD_MAX];
    bool oom;
    cel_env *cel;          /* NewExpressions environment; NULL = length checks only */
    uint64_t derived_cost; /* sum over the claim's derived attributes (KEP-6080) */
    /* counted: the object's own names and UIDs (claims and pods) are interned
     * with a reference each (de_intern_ref), listed in refs (malloc) for the
     * graph to keep and release with the object (dec_get_cid) */
    bool counted;
    uint32_t *refs;
    uint32_t nrefs, caprefs;
} dec;

void dec_init(dec *d, de_interner *in, de_arena *a, const de_gates *gates, bool validate);
void dec_fini(dec *d);

/* ---- paths ------------------------------------------------------------------ */
size_t dec_field(dec *d, const char *name); /* returns the mark to pop back to */
size_t dec_index(dec *d, size_t i);
size_t dec_key(dec *d, const char *key);
static inline void dec_pop(dec *d, size_t mark)
{
    d->plen = mark;
    d->path[mark] = 0;
}

/* ---- errors (at the current path, or at a child field when `child` != NULL) */
void dec_errf(dec *d, const char *child, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* How many of the recorded messages fit, whole, in `room` bytes, and the
 * length of that prefix of msgs: a report shows whole messages and counts
 * the others ("and N more errors"), it never cuts one short. */
uint32_t dec_fit_messages(const dec *d, size_t room, size_t *len);
/* Every error found, shown or not. */
uint32_t dec_error_count(const dec *d);
void dec_required(dec *d, const char *child, const char *detail);
void dec_invalid_str(dec *d, const char *child, const char *value, const char *detail);
/* The same for a value with its length (whole or described, see de_quote). */
void dec_invalid_strn(dec *d, const char *child, const char *value, size_t n, const char *detail);
void dec_invalid_int(dec *d, const char *child, long long value, const char *detail);
void dec_forbidden(dec *d, const char *child, const char *detail);
void dec_duplicate(dec *d, const char *child, const char *value);
void dec_too_many(dec *d, const char *child, size_t n, size_t max);
void dec_too_long(dec *d, const char *child, size_t max);
/* supported = "\"A\", \"B\"" */
void dec_unsupported(dec *d, const char *child, const char *value, const char *supported);

/* ---- JSON access ---------------------------------------------------------- */

/* Refuse keys of `obj` not in the NULL-terminated `known` list. `hints` is an
 * optional NULL-terminated list of "key", "where it belongs" pairs. */
void dec_known(dec *d, json_t *obj, const char *const *known, const char *const *hints);

/* Typed getters: return false when the key is absent or null (nothing
 * recorded) or has the wrong type (an error is recorded). */
bool dec_get_str(dec *d, json_t *obj, const char *key, const char **s, size_t *len);
bool dec_get_id(dec *d, json_t *obj, const char *key, uint32_t *id); /* interned */
/* the same for a name or UID unique to the object: counted when d->counted */
bool dec_get_cid(dec *d, json_t *obj, const char *key, uint32_t *id);
/* drop the references taken while decoding (the object was not kept) */
void dec_release_refs(dec *d);
bool dec_get_int(dec *d, json_t *obj, const char *key, int64_t *v);
bool dec_get_bool(dec *d, json_t *obj, const char *key, bool *v);
json_t *dec_get_obj(dec *d, json_t *obj, const char *key);
json_t *dec_get_arr(dec *d, json_t *obj, const char *key);
bool dec_get_qty(dec *d, json_t *obj, const char *key, de_qty *q);
/* Value checks for array items / map values. */
bool dec_as_str(dec *d, json_t *v, const char **s, size_t *len);
bool dec_as_qty(dec *d, json_t *v, de_qty *q);
bool dec_as_obj(dec *d, json_t *v);
/* String array -> interned ids (arena); items must be strings. */
uint32_t *dec_str_list(dec *d, json_t *arr, uint32_t *n);
/* Array fields, item by item, with the error path kept right
 * (spec.devices.config[3].opaque): the bookkeeping every item loop shares.
 *   dec_items it;
 *   if (dec_items_begin(d, arr, "config", 32, &it)) {
 *       out->config = DEC_NEW(d, T, it.n);
 *       for (json_t *c; out->config && (c = dec_items_next_obj(d, &it, known));) ...
 *       dec_items_end(d, &it);
 *   }
 * begin takes the array already fetched (dec_get_arr; NULL = absent) so that
 * errors keep the order in which the fields are read. It is false, with
 * nothing to end, when the array is absent or empty, or when it has more
 * than `max` items (0 = no limit) while validating: "Too many" is recorded
 * and the items are not decoded, the object being refused anyway. */
typedef struct dec_items {
    json_t *arr;
    size_t n;     /* items: what to allocate */
    size_t i;     /* index of the next item */
    size_t mark;  /* path before the field */
    size_t field; /* path at the field */
} dec_items;
bool dec_items_begin(dec *d, json_t *arr, const char *field, size_t max, dec_items *it);
/* The next item, the path at its index; NULL after the last. */
json_t *dec_items_next(dec *d, dec_items *it);
/* The next object item; other items are reported and skipped. Its keys are
 * checked against `known` unless that is NULL. */
json_t *dec_items_next_obj(dec *d, dec_items *it, const char *const *known);
void dec_items_end(dec *d, dec_items *it);
/* Compact JSON text of v (object order kept), interned. Returns the length. */
size_t dec_json_text(dec *d, json_t *v, uint32_t *id);
/* RFC 3339 timestamp -> unix seconds. */
bool dec_time(dec *d, json_t *obj, const char *key, int64_t *out);
bool dg_parse_time(const char *s, size_t n, int64_t *out);

const char *dec_json_type(const json_t *v);

/* ---- arena helpers -------------------------------------------------------- */
void *dec_alloc(dec *d, size_t n); /* zeroed; records OOM */
#define DEC_NEW(d, T, n) ((T *)dec_alloc((d), sizeof(T) * (size_t)(n)))

static inline uint32_t dec_intern(dec *d, const char *s, size_t n) { return de_intern(d->in, s, n); }
static inline const char *dec_str(dec *d, uint32_t id) { return de_intern_str(d->in, id); }

/* ---- name formats (return true when valid; errors recorded at child) ------ */
bool dec_dns_label(dec *d, const char *child, const char *s, size_t n);
bool dec_dns_subdomain(dec *d, const char *child, const char *s, size_t n);
bool dec_driver_name(dec *d, const char *child, const char *s, size_t n);
bool dec_pool_name(dec *d, const char *child, const char *s, size_t n);
bool dec_label_name(dec *d, const char *child, const char *s, size_t n);
bool dec_label_value(dec *d, const char *child, const char *s, size_t n);
bool dec_c_ident(dec *d, const char *child, const char *s, size_t n);
/* QualifiedName: "ID" or "domain/ID". */
bool dec_qualified_name(dec *d, const char *child, const char *s, size_t n);
/* FullyQualifiedName: domain required. Fills domain/id ids when valid. */
bool dec_fq_name(dec *d, const char *child, const char *s, size_t n, uint32_t *domain, uint32_t *id);
bool dec_native_resource_name(const char *s, size_t n);
bool dec_extended_resource_name(const char *s, size_t n);
bool dec_uuid(dec *d, const char *child, const char *s, size_t n);
/* A required string field that must be a DNS label (the names of requests,
 * subrequests, containers, devices, counter sets): its interned id (0 when
 * absent); *s and *len get its text ("" when absent). */
uint32_t dec_label_field(dec *d, json_t *obj, const char *key, const char **s, size_t *len);

/* Pure predicates (no error recording). */
bool dg_is_dns_label(const char *s, size_t n);
bool dg_is_dns_subdomain(const char *s, size_t n);
bool dg_is_label_name(const char *s, size_t n);
bool dg_is_label_value(const char *s, size_t n);
bool dg_is_c_ident(const char *s, size_t n);

/* ---- CEL hook --------------------------------------------------------------- */

/* Validation of a selector or derived-attribute expression in a manifest,
 * as validateCELExpression does: non-empty, <= 10 KiB, compiles in the
 * NewExpressions environment (d->cel), estimated cost <= 1,000,000; derived
 * attribute costs are also summed into d->derived_cost. */
void dec_cel_expression(dec *d, const char *child, const char *expr, size_t len, bool derived);

/* ---- shared sub-decoders ------------------------------------------------- */
/* ObjectMeta.  Flags: the object is namespaced (the namespace defaults to
 * "default"); its name must be a DNS subdomain (ValidateObjectMeta with
 * NameIsDNSSubdomain: every kind here but Namespace and
 * ResourcePoolStatusRequest) or a DNS label (Namespace). */
enum { DEC_META_NAMESPACED = 1, DEC_META_SUBDOMAIN = 2, DEC_META_LABEL = 4 };
void dec_meta(dec *d, json_t *obj, dg_meta *m, unsigned flags);
/* core v1 NodeSelector; `validate` applies ValidateNodeSelector */
void dec_nodesel(dec *d, json_t *v, dg_nodesel *out);
void dec_taint(dec *d, json_t *v, dg_taint *out);
void dec_toleration(dec *d, json_t *v, dg_toleration *out);
void dec_selectors(dec *d, json_t *obj, const char *key, dg_selector **out, uint32_t *n);
void dec_opaque(dec *d, json_t *obj, dg_opaque *out, bool *has);
void dec_claim_spec(dec *d, json_t *spec, dg_claim_spec *out);
void dec_claim_status(dec *d, json_t *status, dg_claim *c);
void dec_allocation(dec *d, json_t *v, dg_allocation *out);

typedef struct dec_dev_stats {
    bool taints, consumes, lists; /* any device has them: 64-device cap */
} dec_dev_stats;
void dec_device(dec *d, json_t *dv, dg_device *dev, uint32_t driver, bool per_device, dec_dev_stats *st);
/* `counters` map of a counter set or a consumption (1..32, DNS-label keys). */
dg_counter *dec_counters(dec *d, json_t *obj, uint32_t *n);

/* ---- per-kind decoders (dec_slice.c, dec_claim.c, dec_core.c) ------------- */
dg_slice *dec_slice(dec *d, json_t *obj);
dg_class *dec_class(dec *d, json_t *obj);
dg_claim *dec_claim(dec *d, json_t *obj);
dg_claim_template *dec_template(dec *d, json_t *obj);
dg_taint_rule *dec_taint_rule(dec *d, json_t *obj);
/* A claim's status.devices[].networkData (dec_net.c), the path at it. */
void dec_network_data(dec *d, json_t *nd);
dg_pool_status_request *dec_pool_status_request(dec *d, json_t *obj);
dg_node *dec_node(dec *d, json_t *obj);
dg_pod *dec_pod(dec *d, json_t *obj);
dg_namespace *dec_namespace(dec *d, json_t *obj);

/* Classify apiVersion/kind. Returns DG_KIND_NONE with an error recorded when
 * the object cannot be classified (missing fields, unsupported version). */
dg_kind dec_classify(dec *d, json_t *obj, int *version);

/* Fast path (dec_fast.c): decode a ResourceSlice straight from JSON text.
 * 1 = decoded and fully validated (*out in d->a, *used bytes consumed,
 * *hash = the structural hash of the object, not computed when hash is
 * NULL); 0 = not handled, decode the item with jansson and the full decoder
 * instead.  The memo carries what one slice teaches the next (names and
 * values already checked and interned); one per walk over a snapshot. */
typedef struct dec_fast_memo dec_fast_memo;
dec_fast_memo *dec_fast_memo_new(void);
void dec_fast_memo_free(dec_fast_memo *m);
int dec_fast_slice(dec *d, dec_fast_memo *m, const char *text, size_t len, dg_slice **out, size_t *used,
                   uint64_t *hash);
/* The same for a Node (dec_fast_node.c); *out in d->a. */
int dec_fast_node(dec *d, dec_fast_memo *m, const char *text, size_t len, dg_node **out, size_t *used,
                  uint64_t *hash);
/* Which fast decoder an item is for, from its first two members:
 * DG_KIND_RESOURCE_SLICE, DG_KIND_NODE, DG_KIND_OTHER (another kind), or
 * DG_KIND_NONE (they are not apiVersion and kind: try the decoders). */
dg_kind dec_fast_kind(const char *text, size_t len);
/* Deep copy into another arena (dec_copy.c); NULL when the arena is full. */
dg_slice *dg_slice_copy(const dg_slice *s, de_arena *a);
dg_node *dg_node_copy(const dg_node *n, de_arena *a);

/* Device equality (for "did this device change" generation bumps). */
bool dg_device_equal(const dg_device *a, const dg_device *b);
bool dg_attrval_equal(const de_attrval *a, const de_attrval *b);

#endif
