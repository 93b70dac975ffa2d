/*
 * pol.h - the Lua policy host: sandboxed VMs, budgets, hooks, revisions,
 * cached policy facts and hot reload.
 *
 * Units
 *  - A *policy* is a Lua file returning a table: name, version (semver),
 *    api = 1, domains (what it may write), optional drivers / failure /
 *    weight / description, and hooks (derive, groups, score, admit).
 *  - A *pack* is a folder with a pack.lua manifest (name, version, the
 *    policies it holds, the domains it owns) and its specs under spec/.
 *  - A *set* (pol_set) is everything loaded from one policy directory: one
 *    Lua VM per policy, their metadata, and the facts cache.  A set is
 *    immutable once loaded; a reload builds a new set and swaps it in whole
 *    (one pointer), so a cycle never sees half of a revision.
 *  - The *host* (pol_host) owns the active set, watches the directory and
 *    performs reloads at cycle boundaries.
 *
 * Facts (ARCHITECTURE principle 2): derive and groups run once per device
 * per revision (and again when the device changes); their results are
 * cached in the set, keyed by device id and the device's generation, and
 * published into the device graph with dg_device_set_derived, where CEL and
 * constraints read them like driver attributes.  score runs once per
 * candidate node, admit once per claim revision.  The allocator's inner
 * loop never enters Lua.
 *
 * Ownership of attribute names: `domains` lists either whole domains
 * ("tier.draengine.io": every attribute in it) or single qualified
 * attributes ("resource.kubernetes.io/numaNode").  The standard domains
 * (resource.kubernetes.io, k8s.io, kubernetes.io and their subdomains)
 * can only be owned attribute by attribute, so a bridging policy may own
 * resource.kubernetes.io/numaNode without claiming the whole standard.
 * Two policies (or packs) whose ownerships overlap are refused at load.
 *
 * Failure: a hook that errors or exceeds a budget is reported (policy name,
 * revision, file:line, reason) and the call fails *closed* by default
 * (derived facts of that device absent, groups: the device is reported
 * blocked to the allocator through al_groups.blocked, admit: claim refused,
 * score: node ranked last) or *open* when the policy
 * (or the host configuration) says `failure = "open"` (derive: the device
 * keeps the facts of the last successful call, groups: no constraint, admit:
 * claim admitted, score: 0).  Other policies and the allocation go on.
 *
 * Library code never prints: reports go to the pol_log_fn the caller
 * installs (the CLI and the scheduler route it to the engine log).
 */
#ifndef POL_H
#define POL_H

#include "../base/attr.h"
#include "../base/de.h"
#include "../base/intern.h"
#include "../base/log.h"

#define POL_API 1

typedef struct pol_set pol_set;
typedef struct pol_host pol_host;

typedef enum pol_failmode { POL_FAIL_CLOSED = 0, POL_FAIL_OPEN } pol_failmode;

/* Why a hook call failed. */
typedef enum pol_reason {
    POL_R_NONE = 0,
    POL_R_ERROR,        /* the policy raised an error */
    POL_R_INSTRUCTIONS, /* instruction budget exceeded */
    POL_R_TIMEOUT,      /* wall-clock deadline passed */
    POL_R_MEMORY,       /* the VM's memory cap was reached */
    POL_R_RESULT,       /* the hook returned something the engine refuses */
    POL_R_COUNT
} pol_reason;
const char *pol_reason_str(pol_reason r);

/* Hook bits. */
enum {
    POL_HOOK_DERIVE = 1u << 0,
    POL_HOOK_GROUPS = 1u << 1,
    POL_HOOK_SCORE = 1u << 2,
    POL_HOOK_ADMIT = 1u << 3,
};
#define POL_NHOOKS 4
/* Hook names by bit position (POL_HOOK_* = 1u << index). */
extern const char *const pol_hook_names[POL_NHOOKS];

typedef struct pol_limits {
    uint64_t instructions;      /* per hook call (default 1,000,000) */
    uint64_t deadline_ns;       /* per hook call, wall clock (default 100 ms) */
    uint64_t load_instructions; /* running a file's top level (default 10,000,000) */
    uint64_t load_deadline_ns;  /* (default 500 ms, as Redis FUNCTION LOAD) */
    size_t memory;              /* per VM (default 64 MiB) */
    size_t max_string;          /* longest string value a hook may return (64 bytes,
                                   the Kubernetes limit for attribute strings) */
    size_t max_subject;         /* longest subject for string patterns / rep results */
} pol_limits;

/* Where dra.log lines and failure reports go. file/line point into the
 * policy; kv is a NULL-terminated key/value list (policy, revision, ...). */
typedef void (*pol_log_fn)(void *ctx, de_log_level lvl, const char *file, int line,
                           const char *msg, const char *const *kv);

typedef struct pol_config {
    pol_limits limits;
    pol_failmode failure; /* for policies that do not set `failure` */
    bool run_specs;       /* a reload runs the packs' specs before activating */
    pol_log_fn log;       /* NULL: dropped */
    void *log_ctx;
    bool no_score_memo;   /* call every score hook instead of answering from what
                           * it read before (pol_set_score; for reference runs) */
} pol_config;

void pol_config_default(pol_config *c);

/* A pol_log_fn that writes to the engine log (engine/base/log.h). */
void pol_log_to_engine(void *ctx, de_log_level lvl, const char *file, int line, const char *msg,
                       const char *const *kv);

/* ---- sets ------------------------------------------------------------------ */

/* Load and validate every *.lua policy and every pack (a folder with
 * pack.lua) directly under dir, each policy in a fresh VM.  Files are read
 * in byte order; entries starting with '.' (ConfigMap ..data, ..2024_...)
 * are skipped, symlinks followed.  Any invalid policy fails the whole set
 * with a file:line error (a revision is all or nothing).  `in` is the
 * interner of the device graph the set will serve (derived names and values
 * are interned there).  An empty directory gives an empty set. */
de_rc pol_set_load(const char *dir, de_interner *in, const pol_config *cfg, pol_set **out,
                   de_err *e);
void pol_set_free(pol_set *s);

/* What `policy lint` needs from the loader: the same checks, but every
 * error reported (fn gets each, with file and line) instead of the first,
 * policies that load kept for the checks across them (ownership).  Returns
 * the number of errors (0: pol_set_load would accept dir) and, in
 * *npolicies, how many policies loaded. */
typedef void (*pol_load_report)(void *ctx, const de_err *e);
uint32_t pol_set_check(const char *dir, de_interner *in, const pol_config *cfg, pol_load_report fn, void *ctx,
                       uint32_t *npolicies);

/* Content revision of the whole set: SHA-256 over every policy's and pack
 * manifest's (name, revision), hex. */
const char *pol_set_revision(const pol_set *s);
const char *pol_set_dir(const pol_set *s);
uint32_t pol_set_count(const pol_set *s);
/* OR of the hook bits of every policy. */
unsigned pol_set_hooks(const pol_set *s);

typedef struct pol_info {
    const char *name, *version, *file, *pack; /* pack NULL for a loose policy */
    const char *revision;                     /* SHA-256 of the file, hex */
    unsigned hooks;
    const char *const *domains;
    uint32_t ndomains;
    pol_failmode failure;
    double weight; /* score weight */
    size_t memory; /* bytes held by its VM */
} pol_info;
void pol_set_info(const pol_set *s, uint32_t i, pol_info *out);
/* The policy that owns domain/name - the only one that may derive it: its
 * index, or -1. */
int pol_set_owner(const pol_set *s, const char *domain, const char *name);

/* ---- hook calls on single inputs (the cache-free primitives) ---------------- */

/* One compatibility scope a device belongs to (one per groups policy). */
typedef struct pol_scope {
    uint32_t key;    /* interned "<policy>:<scope>" */
    uint64_t groups; /* bit per group name (numbered per set); 0 = no groups */
} pol_scope;

/* One failed derive or groups call on a device: what the verdict on a
 * revision (verdict.c) and the explanations report. */
typedef struct pol_devfail {
    uint32_t policy; /* index in the set (pol_set_info) */
    uint8_t hook;    /* index into pol_hook_names */
    uint8_t reason;  /* pol_reason */
    int line;        /* in file; 0 when unknown */
    char *file;      /* where it failed: the policy's file, or an SDK module */
    char *msg;       /* what failed, without the file:line prefix (at most 256 bytes) */
} pol_devfail;

/* Facts about one device, the union over every policy of the set. */
typedef struct pol_devfacts {
    de_attr *derived; /* sorted by (domain, name) byte order */
    uint32_t nderived;
    pol_scope *scopes;
    uint32_t nscopes;
    bool blocked;       /* a groups hook failed closed: not allocatable */
    uint32_t nfailures; /* hook calls that failed for this device */
    pol_devfail *fails; /* the first POL_MAX_DEVFAILS of them, in policy order */
    uint32_t nfails;
    void *mem;          /* one block holding derived, scopes and list payloads */
} pol_devfacts;

#define POL_MAX_DEVFAILS 16

/* A per-call outcome: which policy failed and why (first failure). */
typedef struct pol_failure {
    pol_reason reason;
    de_err err; /* message with policy, revision, file, line filled */
} pol_failure;

/* Run derive and groups of every policy on one device view.  *out is owned
 * by the caller: free with pol_devfacts_free.  `prev` (may be NULL) holds
 * the facts of the last successful call, used by fail-open policies.
 * Returns the number of failed calls (also reported through the log). */
uint32_t pol_set_compute(pol_set *s, const de_devview *v, const pol_devfacts *prev,
                         pol_devfacts *out, pol_failure *first);
void pol_devfacts_free(pol_devfacts *f);
bool pol_devfacts_equal(const pol_devfacts *a, const pol_devfacts *b);

/* Group bits per set: the name of bit b (NULL when unused). */
const char *pol_set_group_name(const pol_set *s, unsigned bit);

/* KEP-5963 running intersection for one scope (generalised to policy
 * scopes): a candidate joins iff the scope has no members yet, or it has no
 * groups and no member had any, or it and every member have groups and the
 * intersection stays non-empty.  Copy the struct to roll back. */
typedef struct pol_compat {
    uint32_t members;
    uint64_t inter;
    bool nogroups; /* members so far had no groups */
} pol_compat;
bool pol_compat_admits(const pol_compat *c, uint64_t groups);
void pol_compat_add(pol_compat *c, uint64_t groups);

/* A candidate node as score hooks see it. */
typedef struct pol_nodeinfo {
    uint32_t name;
    const uint32_t *label_keys, *label_values; /* interned */
    uint32_t nlabels;
    uint32_t devices;      /* devices on the node */
    uint32_t free_devices; /* of which free before this placement */
} pol_nodeinfo;

/* Weighted sum of every score hook for one candidate node and the devices
 * the allocator placed there (views include derived attributes).  A failed
 * fail-closed score makes *feasible false.  Answers are memoized per policy
 * by what the hook read (memo.c): a score hook must be a pure function of
 * its node and placement views; one that uses math.random or dra.log is
 * called every time. */
de_rc pol_set_score(pol_set *s, const pol_nodeinfo *node, const de_devview *placement,
                    uint32_t n, double *score, bool *feasible, pol_failure *first);
/* The same score from the memos alone, for a caller that has not built the
 * placement's device views or the node's labels yet: true with *score (the
 * same sum pol_set_score gives, feasible) when every score hook is answered
 * by reads of the node's name and counts and the placement's size; false
 * (nothing counted) when some hook needs more - then call pol_set_score. */
bool pol_set_score_memo(pol_set *s, const pol_nodeinfo *node, uint32_t n, double *score);

/* A claim as admit hooks see it (built by the caller from the graph). */
typedef struct pol_claimreq {
    uint32_t name, class_name;
    int64_t count;
    bool all; /* allocationMode All */
    const uint32_t *selectors; /* CEL texts */
    uint32_t nselectors;
} pol_claimreq;
typedef struct pol_claiminfo {
    uint32_t ns, name, uid;
    const uint32_t *label_keys, *label_values;
    uint32_t nlabels;
    const uint32_t *annotation_keys, *annotation_values;
    uint32_t nannotations;
    const pol_claimreq *requests;
    uint32_t nrequests;
} pol_claiminfo;

/* Every admit hook in policy order; the first refusal wins.  *reason gets
 * "<policy>: <reason>" when refused. */
de_rc pol_set_admit(pol_set *s, const pol_claiminfo *claim, bool *admitted, char *reason,
                    size_t cap, pol_failure *first);

/* ---- statistics -------------------------------------------------------------- */

typedef struct pol_stats {
    uint64_t calls[POL_NHOOKS]; /* by hook: derive, groups, score, admit */
    uint64_t failures[POL_R_COUNT];
    uint64_t instructions;   /* counted at hook granularity */
    uint64_t ns;             /* time inside hooks */
    uint64_t score_memo_hits; /* score answers taken from the memo (not in calls[2]) */
    uint64_t derive_memo_hits; /* derive answers taken from the memo (not in calls[0]) */
} pol_stats;
void pol_set_stats(const pol_set *s, pol_stats *out);

/* ---- exact accounting for `policy bench` ------------------------------------ */

/* Count every instruction (slow; for measurements only). */
void pol_set_exact_counting(pol_set *s, bool on);
/* Call one hook (POL_HOOK_*) of policy pi alone: dev for derive/groups,
 * node+placement for score, claim for admit.  *instr gets the
 * instructions counted (exact with exact counting on). */
pol_reason pol_set_call_one(pol_set *s, uint32_t pi, unsigned hook, const de_devview *dev,
                            const pol_nodeinfo *node, const de_devview *placement, uint32_t nplace,
                            const pol_claiminfo *claim, uint64_t *instr);
/* Whether policy pi sees devices of this driver (its `drivers` filter). */
bool pol_set_sees(const pol_set *s, uint32_t pi, uint32_t driver);

#endif
