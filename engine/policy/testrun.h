/*
 * testrun.h - `draengine policy test`: run the packs' spec files inside the
 * real sandbox, one fresh VM per file, and report each test.
 */
#ifndef POL_TESTRUN_H
#define POL_TESTRUN_H

#include "pol.h"

struct pol_policy;

/* What dra.test needs while one spec file runs (testapi.c). */
typedef struct pol_testctx {
    const char *root;      /* the pack or policy directory under test */
    const char *spec_path; /* the spec file being run */
    const char *spec_text;
    size_t spec_len;
    de_interner *in;
    pol_config cfg;
    uint32_t next_device;
    void *snapshots; /* graphs loaded by dra.test.snapshot (testgraph.c) */
} pol_testctx;

typedef enum pol_test_status { POL_TEST_OK = 0, POL_TEST_FAIL, POL_TEST_PENDING } pol_test_status;

typedef struct pol_test_result {
    const char *file;    /* spec file */
    const char *name;    /* "describe ... it" */
    const char *where;   /* "file:line" of the test, or NULL */
    const char *message; /* failure message, or NULL */
    pol_test_status status;
} pol_test_result;

typedef void (*pol_test_cb)(void *ctx, const pol_test_result *r);

typedef struct pol_test_summary {
    uint32_t files, passed, failed, pending;
} pol_test_summary;

/* Validate the policy set under dir (refusing it is an error: DE_EINVAL &c),
 * then run every spec file: <root>/NAME_spec.lua and <root>/spec/NAME_spec.lua for
 * the directory and for each pack in it.  Results go to cb in file order. */
de_rc pol_test_run(const char *dir, const pol_config *cfg, pol_test_cb cb, void *cbctx,
                   pol_test_summary *sum, de_err *e);

/* A set holding one already-loaded policy (the test API). */
pol_set *pol_set_single(struct pol_policy *p, de_interner *in, const pol_config *cfg);

/* dra.test.snapshot (testgraph.c), and freeing what it loaded. */
struct lua_State;
int pol_test_snapshot(struct lua_State *L, pol_testctx *c, const char *path);
void pol_test_snapshots_free(pol_testctx *c);

#endif
