/*
 * lb_policy.h - helpers shared by the policy binding files (lb_policy.c,
 * lb_policy_host.c).
 */
#ifndef LB_POLICY_H
#define LB_POLICY_H

#include "../engine/policy/pol.h"
#include "lb.h"

/* Log lines collected for set:logs() / host:logs(). */
typedef struct logline {
    char *text;
    struct logline *next;
} logline;

typedef struct logsink {
    logline *logs, **tail;
} logsink;

/* A pol_log_fn appending to a logsink (ctx). */
void lb_policy_collect_log(void *ctx, de_log_level lvl, const char *file, int line, const char *msg,
                           const char *const *kv);
void lb_policy_free_logs(logsink *s);
/* Budget and failure options from a Lua table (instructions, deadline_ms,
 * memory, max_string, failure). */
void lb_policy_read_opts(lua_State *L, int idx, pol_config *cfg);
/* Registers the PolicyHost class and core.policy_host & co. */
void lb_policy_open_host(lua_State *L);
/* The open policy host at idx (raises if it is not one or is closed). */
struct pol_host *lb_policy_host_arg(lua_State *L, int idx);

#endif
