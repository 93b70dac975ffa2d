/*
 * polgraph.h - the policy host and the device graph: preparing, publishing
 * and syncing policy facts, the allocator hooks, and the host that owns
 * the active set and reloads it.
 *
 * Order of destruction: free the host (which clears the derived attributes
 * it published) before the graph.
 */
#ifndef POL_GRAPH_H
#define POL_GRAPH_H

#include "../alloc/al.h"
#include "../model/dg.h"
#include "pol.h"

typedef struct pol_prepare_stats {
    uint64_t computed;  /* devices whose hooks ran */
    uint64_t failures;  /* failed hook calls */
    pol_failure first;  /* the first failure */
} pol_prepare_stats;

/* Compute facts for the graph's devices into the set's cache, at most
 * budget_ns of work (0 = all); *done when every device is current.  The
 * graph is not modified.  Restart from the first device with
 * pol_set_prepare_restart. */
de_rc pol_set_prepare(pol_set *s, const dg_graph *g, uint64_t budget_ns, bool *done, pol_prepare_stats *st);
void pol_set_prepare_restart(pol_set *s);
/* Write every cached fact into the graph (devices changed since preparing
 * are recomputed first).  Returns the number of devices whose derived
 * attributes changed. */
uint32_t pol_set_publish(pol_set *s, dg_graph *g, pol_prepare_stats *st);
/* After graph changes: recompute and publish the devices that changed
 * (O(1) when the graph did not change).  Returns devices updated. */
uint32_t pol_set_sync(pol_set *s, dg_graph *g, pol_prepare_stats *st);
/* The cached facts of one device (NULL if none). */
const pol_devfacts *pol_set_facts(const pol_set *s, uint32_t devid);
/* Remove every derived attribute from the graph. */
void pol_graph_clear(dg_graph *g);

/* ---- the verdict on a revision (verdict.c) ------------------------------------ */

/* Device names kept per group (the count is always exact). */
#define POL_VERDICT_MAX_NAMES 1000

/* Failed calls that share policy, hook, file:line, reason and message. */
typedef struct pol_verdict_group {
    char *policy, *policy_file;
    const char *hook;      /* pol_hook_names */
    pol_reason reason;
    char *file;            /* where it failed */
    int line;              /* 0 when unknown */
    char *message;         /* without the file:line prefix */
    uint32_t ndevices;     /* devices it failed on */
    const char **devices;  /* the first POL_VERDICT_MAX_NAMES, "driver/pool/name", sorted */
    uint32_t nnames;
} pol_verdict_group;

typedef struct pol_verdict {
    char revision[65];
    char dir[512];
    uint32_t ndevices;     /* current devices with a failed derive or groups call */
    uint64_t nfailures;    /* failed calls on them */
    pol_verdict_group *groups; /* by policy order, hook, file, line, reason, message */
    uint32_t ngroups;
    char **keys;           /* device names the groups point into */
    uint32_t nkeys;
} pol_verdict;

/* Judge set s on the devices of g it has computed facts for (call after
 * preparing or publishing): true when no derive or groups hook failed on
 * any of them.  Every command that activates a revision refuses it when
 * this is false (a reload keeps the last good one).  Free with
 * pol_verdict_free either way. */
bool pol_verdict_judge(const pol_set *s, const dg_graph *g, pol_verdict *out);
void pol_verdict_free(pol_verdict *v);
/* One line for logs and de_err messages. */
void pol_verdict_summary(const pol_verdict *v, char *buf, size_t cap);

/* ---- allocator hooks ---------------------------------------------------------- */

typedef struct pol_hookctx pol_hookctx;
/* Hooks for one set; `revision` must differ between sets given to one
 * allocator. */
pol_hookctx *pol_hookctx_new(pol_set *s, uint64_t revision);
void pol_hookctx_free(pol_hookctx *h);
void pol_hookctx_al(pol_hookctx *h, al_hooks *out);
/* The same decisions, callable directly (policy diff, specs). */
de_rc pol_hook_admit(pol_hookctx *h, const dg_graph *g, uint32_t clid, bool *admitted, const char **reason);
de_rc pol_hook_score(pol_hookctx *h, const dg_graph *g, uint32_t node_id, uint32_t node_name,
                     const dg_allocation *allocs, uint32_t nallocs, double *score);

/* A claim as admit sees it (arrays from the arena). */
void pol_claiminfo_from_graph(const dg_graph *g, const dg_claim *cl, de_arena *a, pol_claiminfo *ci);
/* Devices on a node and how many are free (not used by any claim). */
uint32_t pol_node_free_devices(const dg_graph *g, uint32_t node_name, uint32_t *total);

/* ---- the host ---------------------------------------------------------------- */

typedef struct pol_host pol_host;

typedef struct pol_host_opts {
    pol_config cfg;
    bool watch;                 /* inotify on the directory (and its packs) */
    uint64_t debounce_ns;       /* quiet time after the last event (default 300 ms) */
    uint64_t rescan_ns;         /* content-hash rescan period, 0 = off (default 30 s) */
    uint64_t prepare_slice_ns;  /* preparation work per cycle while reloading (default 20 ms) */
    bool strict_reload;         /* refuse a revision whose hooks fail on any device (default true) */
} pol_host_opts;

void pol_host_opts_default(pol_host_opts *o);

/* Load dir, compute facts for every device and publish them.  The first
 * revision must load; hook failures on devices are reported (through
 * cfg.log) and handled by each policy's failure mode. */
de_rc pol_host_new(const char *dir, dg_graph *g, const pol_host_opts *o, pol_host **out, de_err *e);
void pol_host_free(pol_host *h);

pol_set *pol_host_active(const pol_host *h);
/* Allocator hooks of the active set (they change with every swap: call
 * again after pol_host_cycle reports a swap). */
void pol_host_al_hooks(pol_host *h, al_hooks *out);

typedef struct pol_cycle {
    bool swapped;         /* a new revision became active in this call */
    bool failed;          /* a reload was refused in this call (err says why) */
    bool preparing;       /* a reload is being prepared */
    uint32_t devices_updated; /* facts recomputed for changed devices */
    uint64_t prepare_ns;  /* total preparation time of the swapped revision */
    uint64_t swap_ns;     /* the swap: pointer switch + publishing into the graph */
    uint32_t swap_changed; /* devices whose derived attributes changed at the swap */
    de_err err;
} pol_cycle;

/* Call at every cycle boundary: syncs facts of changed devices, notices
 * reload triggers (inotify events after the debounce, SIGHUP, an explicit
 * request, the periodic rescan), prepares a new revision in slices and
 * swaps it in when ready.  Never leaves the host without an active set. */
de_rc pol_host_cycle(pol_host *h, pol_cycle *out);

/* The verdict on the active revision over the host's graph now
 * (pol_verdict_judge): every command judges its first revision with it. */
bool pol_host_judge(const pol_host *h, pol_verdict *out);
/* The verdict of the last reload refused for hook failures, NULL when the
 * last reload was not refused for that. */
const pol_verdict *pol_host_refusal(const pol_host *h);

/* Ask for a reload at the next cycle (e.g. from an HTTP /reload). */
void pol_host_request_reload(pol_host *h);
/* Load, prepare and swap right now (the CLI, tests). */
de_rc pol_host_reload_now(pol_host *h, pol_cycle *out);

/* SIGHUP: install a handler that makes every host reload at its next cycle. */
void pol_host_install_sighup(void);

/* `draengine allocate --policies DIR`: a host without watching, reporting
 * to the engine log, and its allocator hooks. */
de_rc pol_host_for_allocate(dg_graph *g, const char *dir, const de_gates *gates, al_hooks *hooks, pol_host **out,
                            de_err *e);
void pol_host_free_for_allocate(pol_host *h);

/* Content hash of a policy directory (file names and contents). */
void pol_dir_hash(const char *dir, char hex[65]);
/* inotify on a policy directory, its folders (packs) and, for its own
 * name, its parent (dirwatch.c says why the set is kept in step rather
 * than re-armed).  NULL when inotify is not available. */
typedef struct pol_dirwatch pol_dirwatch;
pol_dirwatch *pol_dirwatch_open(const char *dir);
void pol_dirwatch_close(pol_dirwatch *w);
/* The descriptor to poll(2) for readability. */
int pol_dirwatch_fd(const pol_dirwatch *w);
/* Read every queued event; true when one may change the policies (the
 * watch set's own bookkeeping, IN_IGNORED, never does).  Never blocks. */
bool pol_dirwatch_drain(pol_dirwatch *w);
/* Watches held (the directory, its folders, the parent). */
size_t pol_dirwatch_count(const pol_dirwatch *w);

typedef struct pol_host_stats {
    uint64_t reloads_ok, reloads_failed, swaps;
    char revision[65];     /* active set */
    char last_error[512];
} pol_host_stats;
void pol_host_get_stats(const pol_host *h, pol_host_stats *out);

#endif
