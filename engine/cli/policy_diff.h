/*
 * policy_diff.h - what `draengine policy diff` found (cmd_policy_diff.c
 * computes it) and its three renderings (policy_diff_out.c): text, a
 * Markdown pull-request comment, JSON.
 *
 * Attribute changes are grouped by (driver, attribute, kind of change): one
 * broken or new line in a policy usually changes one attribute on every
 * device of a driver, and a reviewer reads "+ dra.net/pciBusID on 56
 * dra.net devices" before the 56 values.  Claims are grouped by what
 * happens to them.  Text lists the details under each group; Markdown
 * folds them (<details>); JSON gives both the groups and every device.
 */
#ifndef CLI_POLICY_DIFF_H
#define CLI_POLICY_DIFF_H

#include "../policy/polgraph.h"

#include <jansson.h>
#include <stdio.h>

/* A GitHub comment holds 65,536 characters; the Markdown stays below this. */
#define PD_MARKDOWN_MAX 60000
/* Detail lines per group in text and Markdown (JSON has all). */
#define PD_DETAILS_MAX 20

typedef struct pd_change {
    char kind;        /* '+' added, '-' removed, '~' changed */
    char *attr;       /* "domain/name" */
    char *from, *to;  /* as text (NULL when absent) */
    json_t *jfrom, *jto; /* typed values (NULL when absent) */
    const char *type; /* of the value it has now (of `from` when removed) */
} pd_change;

typedef struct pd_device {
    char *key;    /* driver/pool/name */
    char *driver;
    pd_change *ch;
    uint32_t nch;
} pd_device;

enum { PD_UNSCHEDULABLE = 0, PD_REALLOCATED, PD_SCHEDULABLE, PD_NKINDS };

typedef struct pd_claim {
    char *ns, *name;
    int kind; /* PD_* */
    const char *from_node, *from_devices; /* "driver/pool/device,..." */
    const char *to_node, *to_devices;
    const char *why; /* unschedulable: the reason */
} pd_claim;

typedef struct pd_result {
    const char *from_dir, *to_dir;
    const char *from_rev, *to_rev;
    const pol_verdict *from_v, *to_v; /* ndevices 0: no hook failed */
    pd_device *devs;
    uint32_t ndevs;
    pd_claim *claims; /* in input order */
    uint32_t nclaims;
    uint32_t npending;
    uint32_t count[PD_NKINDS];
} pd_result;

void pd_text(const pd_result *r, FILE *o);
void pd_markdown(const pd_result *r, FILE *o);
json_t *pd_json(const pd_result *r);

#endif
