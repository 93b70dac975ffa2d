/*
 * policy_out.h - how every command shows what a policy revision did: the
 * verdict on a revision (its hook failures, in a section of their own) and
 * the policy statistics at the end of a command.  One printer, so `policy
 * diff`, `allocate`, `run` and `inspect` word a refused revision the same
 * way.
 */
#ifndef CLI_POLICY_OUT_H
#define CLI_POLICY_OUT_H

#include "../base/buf.h"
#include "../policy/polgraph.h"

#include <jansson.h>
#include <stdio.h>

/* An attribute value as text ("gold" quoted, 1, true, version 1.2.3, [a,b]),
 * as typed JSON (a string is a string, an int a number; versions are
 * strings, told apart by the type), and the name of its type ("int",
 * "bool", "string", "version", and "list of ..."). */
void cli_attrval_text(de_interner *in, const de_attrval *v, de_buf *b);
json_t *cli_attrval_json(de_interner *in, const de_attrval *v);
const char *cli_attrval_type(const de_attrval *v);

/* Device names printed per failure group in text (JSON lists them all). */
#define CLI_VERDICT_TEXT_NAMES 10

/* The failures section: a heading line, then per group "policy P, hook H,
 * FILE:LINE: REASON: MESSAGE" and its devices, each line prefixed with
 * indent. */
void cli_verdict_text(FILE *o, const pol_verdict *v, const char *indent);
/* The same as data (camelCase keys): {revision, devices, failedCalls,
 * failures: [{policy, policyFile, hook, file, line, reason, message,
 * deviceCount, devices}]}. */
json_t *cli_verdict_json(const pol_verdict *v);

/* Judge the host's active revision on its graph; when it fails, print
 * "draengine CMD: --policies DIR: <summary>" and the section on stderr and
 * return false (the command then exits CLI_EXIT_INVALID). */
bool cli_policies_judge(const char *cmd, const char *dir, const pol_host *h);

/* The same section as log lines (serve): one error line per group. */
void cli_verdict_log(const pol_verdict *v);

/* "policy statistics: ..." - hook calls and failures by reason - to o, when
 * a hook failed (the log promised it then) or when always is set. */
void cli_policy_stats(FILE *o, const char *cmd, const pol_set *s, bool always);

#endif
