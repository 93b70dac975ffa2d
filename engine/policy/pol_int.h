/*
 * pol_int.h - internals shared by the policy host's files (not for other
 * modules).
 *
 * Every lua_State carries a pointer to its pol_vm in the extra space
 * (lua_getextraspace), so the budget hook, the allocator and the C
 * functions of the sandbox reach the VM's state in O(1), also from
 * coroutines (new threads copy the main thread's extra space).  This is
 * Redis's scriptRunCtx idea without a registry lookup.
 */
#ifndef POL_INT_H
#define POL_INT_H

#include "../base/arena.h"
#include "../base/map.h"
#include "pol.h"
#include "sha256.h"

#include <lauxlib.h>
#include <lua.h>

/* Granularity of the count hook: the budget is checked every N VM
 * instructions (the clock is read at the same time). */
#define POL_HOOK_EVERY 1000

#define POL_MAX_DERIVED 32  /* attributes one policy may derive for one device */
#define POL_MAX_LIST 48     /* values in a list attribute (Kubernetes limit) */
#define POL_MAX_GROUPS 8    /* groups per device per scope */
#define POL_MAX_GROUP_BITS 64
#define POL_MAX_SCOPE 128   /* bytes in a scope name */
#define POL_MAX_LOG_LINES 16 /* dra.log lines per hook call */
#define POL_MAX_LOG_MSG 512
#define POL_MAX_FILE (1u << 20) /* policy source size */

typedef enum pol_vmstate {
    POL_VM_IDLE = 0, /* between calls: the hook still runs (finalizers) */
    POL_VM_CALL,
} pol_vmstate;

typedef struct pol_policy pol_policy;
typedef struct pol_trace pol_trace;
typedef struct pol_memo pol_memo;

typedef struct pol_vm {
    lua_State *L;
    /* memory */
    size_t mem_used, mem_limit, mem_peak;
    /* budget of the current call */
    pol_vmstate state;
    uint64_t instr, instr_limit, instr_total;
    uint64_t deadline; /* absolute, de_now_ns */
    uint64_t deadline_ns; /* the limit it was computed from */
    pol_reason tripped;
    char tripwhy[128]; /* what tripped it, when C code did ("table.move of 1e12 elements") */
    bool exact;        /* count every instruction */
    uint64_t unclocked;      /* work units charged since the clock was last read */
    size_t alloc_unclocked;  /* bytes allocated since the clock was last read */
    /* views created during a call are valid while call_gen is unchanged */
    uint64_t call_gen;
    /* where reports and dra.log go */
    const pol_config *cfg;
    de_interner *in;
    const char *name;     /* policy name (for messages) */
    const char *revision; /* hex */
    const char *file;     /* path of the policy file */
    const char *srcprefix; /* "@" chunk name prefix used for this VM's files */
    int log_lines;
    /* deterministic random (xoshiro256**), reseeded per call */
    uint64_t rng[4];
    uint64_t seed_base;
    /* test VMs: the test API is registered and devices may outlive calls */
    bool test;
    void *test_ctx;
    de_arena *scratch; /* VM-lifetime allocations (test devices) */
    bool result_err;   /* the failure is a refused hook result */
    /* metatables of the view classes, as registry refs (no name lookups
     * on the hot path: HAProxy's class_*_ref idea) */
    int mt[8];
    /* score memo (memo.c): the reads of the current score call, when traced */
    pol_trace *trace;
    pol_trace *trace_buf;
    struct pol_absent *absent; /* keys read that the interner did not know (memo.c) */
    /* failure detail of the last call */
    char errmsg[DE_ERR_MSG_MAX];
    char errfile[DE_ERR_FIELD_MAX];
    int errline;
} pol_vm;

static inline pol_vm *pol_vm_of(lua_State *L)
{
    return *(pol_vm **)lua_getextraspace(L);
}

/* ---- vm.c: states, allocator, budgets, protected calls --------------------- */

/* Create a VM with the sandbox installed (sandbox.c).  name/revision/file
 * are borrowed and must outlive the VM. */
de_rc pol_vm_open(pol_vm *vm, const pol_config *cfg, de_interner *in, const char *name,
                  const char *revision, const char *file, bool test, de_err *e);
void pol_vm_close(pol_vm *vm);

/* Begin/end a budgeted call.  `load` selects the top-level budget. */
void pol_vm_begin(pol_vm *vm, bool load, uint64_t seed);
void pol_vm_end(pol_vm *vm);

/* lua_pcall with the engine's message handler, under the budget of the
 * current call (pol_vm_begin must have been called).  On failure returns
 * the reason and fills vm->errmsg / errfile / errline; the stack is left as
 * lua_pcall leaves it minus the error object. */
pol_reason pol_vm_pcall(pol_vm *vm, int nargs, int nres);

/* Reseed the deterministic random generator. */
void pol_vm_seed(pol_vm *vm, uint64_t seed);

/* Fill a de_err from the VM's last failure. */
de_rc pol_vm_error(const pol_vm *vm, pol_reason r, const char *hook, de_err *e);

/* ---- vm.c: work done in C ------------------------------------------------
 *
 * Library functions that loop in C run no VM instructions, so the count
 * hook never sees them.  Every such function the sandbox exposes is
 * written or wrapped (bounded.c) to charge its work here: `units` go into
 * the call's instruction budget (one per element moved, compared or
 * returned, one per 64 bytes of string produced), and the clock is read
 * once every POL_HOOK_EVERY units, as the hook does for instructions, and
 * at once when `clock` is set (after a call that touched a lot of data).
 * Passing a limit trips the call exactly as the hook does, so pcall cannot
 * swallow it and a timeout is reported as a timeout.  Outside a call
 * nothing is charged. */
void pol_work(lua_State *L, uint64_t units, bool clock);
/* Refuse up front work that cannot fit in what is left of the budget (an
 * "instructions" trip naming `what`), so that a huge count is refused at
 * once instead of after a budget's worth of iterations. */
void pol_work_need(lua_State *L, uint64_t units, const char *what);
/* Trip the current call now (reason and what), raising at the caller. */
int pol_trip(lua_State *L, pol_reason r, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Bytes of string per work unit, and the size of data (in and out) after
 * which a library call reads the clock. */
#define POL_BYTES_PER_UNIT 64
#define POL_CLOCK_BYTES 4096
/* Longest string a policy can make: max_subject x this (1 MiB by default);
 * bounds the work of one VM instruction on strings (==, <, ..). */
#define POL_STRING_FACTOR 16

/* bounded.c, sb_table.c: the library functions of the sandbox, bounded
 * (replace or wrap the fields of the library table at tbl). */
void pol_bounded_string(lua_State *L, int tbl);
void pol_bounded_table(lua_State *L, int tbl);
void pol_bounded_utf8(lua_State *L, int tbl);
void pol_bounded_math(lua_State *L, int tbl);
void pol_bounded_base(lua_State *L, int tbl);

/* Raise a Lua error from C with the location of the innermost Lua frame
 * (used by view and API functions). */
int pol_raise(lua_State *L, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- sandbox.c: the environment ------------------------------------------- */

/* Install the sandbox into a fresh state: libraries opened one by one,
 * stripped to the allow lists, frozen; the globals table stored in the
 * registry.  Called by pol_vm_open. */
void pol_sandbox_install(lua_State *L, bool test);
/* The sandbox's require (SDK modules only). */
int pol_sandbox_require(lua_State *L);
/* Push the globals table (for lint: which names exist). */
void pol_sandbox_push_globals(lua_State *L);
/* Push a new read-only _ENV for one chunk (undeclared reads raise). */
void pol_sandbox_push_env(lua_State *L);
/* Load text (never binary) as a chunk with its own read-only _ENV. */
int pol_sandbox_load(lua_State *L, const char *text, size_t len, const char *chunkname);
/* Deterministic tostring (no addresses) and ordered pairs (pushes the
 * iterator triple for the table at idx). */
int pol_tostring(lua_State *L);
int pol_ordered_pairs(lua_State *L, int idx);
/* Return a read-only proxy of the table at idx (pushes it). */
void pol_sandbox_freeze(lua_State *L, int idx, const char *name);

/* ---- api.c: the `dra` table and value classes ------------------------------- */

void pol_api_open(lua_State *L, bool test); /* pushes the dra table */
/* Version and quantity objects. */
void pol_push_version(lua_State *L, const char *text, size_t len); /* raises if invalid */
bool pol_is_version(lua_State *L, int idx, const char **text, size_t *len);
void pol_push_quantity(lua_State *L, const de_qty *q);
const de_qty *pol_to_quantity(lua_State *L, int idx);

/* ---- view.c: read-only proxies ------------------------------------------ */

/* Push a device view valid for the current call (or, with persistent, for
 * the VM's life: test devices).  `derived` selects whether derived
 * attributes are visible (score/admit) or only published ones (derive,
 * groups: so a policy's facts never depend on another policy's). */
void pol_push_device(lua_State *L, const de_devview *v, bool derived, bool persistent);
void pol_push_node(lua_State *L, const pol_nodeinfo *n);
void pol_push_claim(lua_State *L, const pol_claiminfo *c);
void pol_view_open(lua_State *L); /* register metatables */
const de_devview *pol_check_device(lua_State *L, int idx);
void pol_push_attrval(lua_State *L, const de_attrval *a);

/* A device of a score hook's placement: index i is what the score memo
 * records its reads by. */
void pol_push_placement_device(lua_State *L, const de_devview *v, uint32_t i);
/* Mark the device view on top of the stack as placement[i] for tracing. */
void pol_set_device_index(lua_State *L, uint32_t i);

/* ---- memo.c: score answers remembered by what the hook read ---------------- */

enum {
    POL_READ_NPLACE = 1,  /* #placement */
    POL_READ_NODE_NAME,
    POL_READ_NODE_LABELS,
    POL_READ_NODE_DEVICES,
    POL_READ_NODE_FREE,
    POL_READ_DEV_DRIVER,  /* placement[dev].driver, ... */
    POL_READ_DEV_POOL,
    POL_READ_DEV_NAME,
    POL_READ_DEV_NODE,
    POL_READ_DEV_MULTI,
    POL_READ_DEV_ATTR,    /* attributes[a/b]; a = POL_READ_BARE: the device's driver */
    POL_READ_DEV_CAP,     /* capacity[a/b] */
    POL_READ_DEV_ATTRS,   /* pairs(attributes) */
    POL_READ_DEV_CAPS,    /* pairs(capacity) */
};
#define POL_READ_BARE UINT32_MAX
/* a = POL_READ_ABSENT: a key no device had when it was read (not interned);
 * b indexes the VM's table of such keys (memo.c).  No domain has this id, so
 * the read gives nil on every device, as it did when recorded. */
#define POL_READ_ABSENT (UINT32_MAX - 1)

pol_memo *pol_memo_new(void);
void pol_memo_free(pol_memo *m);
/* The filed answer for these inputs, if any; *counts (when not NULL) says
 * whether the answer was reached by reads of #placement, node.devices and
 * node.free_devices only (so it is the answer for every input with those
 * three values, as long as the memo lives and stays on). */
bool pol_memo_get(pol_memo *m, const pol_nodeinfo *node, const de_devview *pl, uint32_t n, double *out,
                  bool *counts);
/* Changes whenever some memo's answers stop counting (freed or off). */
uint64_t pol_memo_drops(void);
bool pol_memo_off(const pol_memo *m);
/* Which inputs beyond the node's counts and name the filed reads use: a
 * lookup in a memo without POL_MEMO_DEVICES never looks at the placement's
 * devices (only at their number), without POL_MEMO_LABELS never at the
 * node's labels. */
#define POL_MEMO_DEVICES 1u
#define POL_MEMO_LABELS 2u
unsigned pol_memo_inputs(const pol_memo *m);
uint32_t pol_memo_size(const pol_memo *m);
/* Trace one score call on vm: begin before, end after (ok = it succeeded,
 * result = the hook's answer, filed into m unless the call was impure). */
pol_trace *pol_trace_begin(pol_vm *vm, const pol_nodeinfo *node, const de_devview *pl, uint32_t n);
void pol_trace_end(pol_vm *vm, pol_memo *m, bool ok, double result);
void pol_trace_free(pol_vm *vm);
/* For the views and the sandbox: a read of an input (no-op unless traced),
 * and a use of something that is not an input (random, logging). */
bool pol_trace_on(const pol_vm *vm);
void pol_trace_read(pol_vm *vm, uint8_t op, uint32_t dev, uint32_t a, uint32_t b);
void pol_trace_impure(pol_vm *vm);
/* A traced read of a key the interner does not know: its index in the VM's
 * table (UINT32_MAX: the table is full, the call is impure). */
uint32_t pol_trace_absent(pol_vm *vm, const char *key, size_t n);
/* Before a memo lookup: when a key recorded as absent has been interned
 * since (a device with that name came), the VM's memos are dropped (*m and
 * *m2 = NULL; the absent keys' table starts over). */
void pol_memo_sync_absent(pol_vm *vm, pol_memo **m, pol_memo **m2);
/* ---- dres.c: the derive memo's stored results ---------------------------- */
/* One converted attribute; list payloads live in `vals`. */
typedef struct cattr {
    uint32_t domain, name;
    de_attrval v;
    uint64_t vals[POL_MAX_LIST];
} cattr;
void pol_dres_free(pol_policy *p);
/* The index of this answer in the policy's table (added if new);
 * UINT32_MAX when the table is full. */
uint32_t pol_dres_put(pol_policy *p, const cattr *a, uint32_t n);
uint32_t pol_dres_get(const pol_policy *p, uint32_t i, cattr *out);
/* Whether the current trace can still be filed (no impure read so far). */
bool pol_trace_pure(const pol_vm *vm);
/* Reads recorded by the current trace (#placement always counts one). */
uint32_t pol_trace_reads(const pol_vm *vm);

/* ---- devbuild.c: a device view from a Lua table (tests, bindings) -------- */
void pol_build_device(lua_State *L, int idx, de_interner *in, de_arena *a, uint32_t id, de_devview *out);

/* ---- testapi.c: dra.test (pushes the table) ---------------------------- */
void pol_testapi_open(lua_State *L);

/* ---- sdk.c: the embedded Lua SDK ------------------------------------------ */

typedef struct pol_sdk_module {
    const char *name; /* "draengine.policy" */
    const char *path; /* "lua/draengine/policy.lua" (for messages) */
    const char *text;
    size_t len;
    bool test_only;
} pol_sdk_module;
const pol_sdk_module *pol_sdk_find(const char *name);
const pol_sdk_module *pol_sdk_list(size_t *n);

/* ---- policies and sets ------------------------------------------------------- */

struct pol_policy {
    char *name, *version, *file, *pack, *description;
    char revision[POL_SHA256_HEX];
    unsigned hooks;
    char **domains; /* as declared */
    uint32_t ndomains;
    int *domain_lines; /* where each is written (the literal, else `domains =`) */
    int name_line;
    uint32_t *drivers; /* interned driver names this policy sees; NULL = all */
    uint32_t ndrivers;
    pol_failmode failure;
    double weight;
    int ref[POL_NHOOKS]; /* registry refs of derive, groups, score, admit */
    uint64_t seed;
    pol_vm vm;
    uint32_t index; /* position in the set */
    uint32_t reported; /* failures reported through the log */
    /* trip.c: budget failures in a row in the first pass, by hook, and the
     * last one's reason and line */
    uint8_t trip_n[POL_NHOOKS], trip_reason[POL_NHOOKS];
    int trip_line[POL_NHOOKS];
    pol_memo *memo; /* score memo (memo.c), NULL until the first score call */
    pol_memo *dmemo; /* derive memo: leaves index dres (hooks.c) */
    struct pol_dres *dres;
};

struct pol_set {
    char *dir;
    char revision[POL_SHA256_HEX];
    pol_config cfg;
    de_interner *in;
    pol_policy **pols; /* sorted by pack then file name */
    uint32_t npols;
    unsigned hooks;
    /* group names -> bits, shared by the set's groups policies */
    uint32_t group_names[POL_MAX_GROUP_BITS];
    unsigned ngroups;
    pol_stats stats;
    /* facts cache (facts.c) */
    void *facts;
    /* pol_set_score_memo's answers by (#placement, node.devices,
     * node.free_devices), when every score memo answered from those alone
     * (hooks.c) */
    de_map score_counts;
    uint64_t score_counts_drops;  /* pol_memo_drops() they were filed under */
    uint32_t score_counts_interned; /* de_intern_count at the last absent-key sync */
    uint32_t score_counts_hits;   /* memo answers one entry stands for */
    bool preparing;               /* in pol_set_prepare (trip.c) */
};

/* Domain ownership helpers (names.c).  An entry is "domain" (all of it) or
 * "domain/name" (one attribute). */
bool pol_owns(const pol_policy *p, const char *domain, size_t dlen, const char *name, size_t nlen);
void pol_split_entry(const char *e, const char **dom, size_t *dlen, const char **name, size_t *nlen);
bool pol_entry_covers(const char *entry, const char *dom, size_t dlen, const char *name, size_t nlen);
bool pol_entries_overlap(const char *a, const char *b);
bool pol_valid_domain(const char *s, size_t n);
bool pol_valid_identifier(const char *s, size_t n);
bool pol_is_standard_domain(const char *s, size_t n);

/* Load one policy file into p (fresh VM), validating metadata and hooks. */
de_rc pol_policy_load(pol_policy *p, const char *path, const char *pack, const pol_config *cfg,
                      de_interner *in, bool test, de_err *e);
void pol_policy_free(pol_policy *p);

/* Free the facts cache of a set (facts.c). */
void pol_facts_free(pol_set *s);

/* Report a failure through the configured log (with policy, revision, reason). */
void pol_report(const pol_config *cfg, de_log_level lvl, const pol_policy *p, const char *hook,
                pol_reason r, const de_err *err);

/* trip.c: whether a hook that failed its budget on its last calls of the
 * first pass is skipped, and what a call's outcome does to that. */
bool pol_trip_skips(const pol_set *s, const pol_policy *p, int hook);
void pol_trip_note(const pol_set *s, pol_policy *p, int hook, pol_reason r, int line);
void pol_trip_reset(pol_set *s);
/* A skipped call's failure: its reason, the message in msg, and *first
 * set when it is the first failure. */
pol_reason pol_trip_failure(const pol_policy *p, int hook, char *msg, size_t cap, pol_failure *first);

#endif
