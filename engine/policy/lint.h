/*
 * lint.h - `draengine policy lint`: static checks of a policy directory.
 *
 * Per file: syntax (compiled in text mode), global accesses (found in the
 * compiled bytecode: every read or write of a name through _ENV, with its
 * line; reads of names the sandbox does not define and all writes are
 * errors, and fields of sandbox libraries that do not exist, such as
 * string.dump, are errors too), then the metadata, hooks and domains as the
 * loader checks them, and finally ownership across the whole directory.
 */
#ifndef POL_LINT_H
#define POL_LINT_H

#include "pol.h"

typedef struct pol_lint_problem {
    const char *file;
    int line;
    bool error; /* false: a warning */
    const char *message;
} pol_lint_problem;

typedef void (*pol_lint_cb)(void *ctx, const pol_lint_problem *p);

typedef struct pol_lint_summary {
    uint32_t files, errors, warnings;
} pol_lint_summary;

/* Lint every policy, pack manifest and spec file under dir. */
void pol_lint_dir(const char *dir, const pol_config *cfg, pol_lint_cb cb, void *ctx, pol_lint_summary *sum);

/* One global access found in a compiled chunk. */
typedef struct pol_global_use {
    char name[64];
    char field[64]; /* "dump" in string.dump, "" if none */
    int line;
    bool write;
} pol_global_use;

/* Compile text (text mode) and list its global accesses (up to cap).
 * Returns -1 with msg filled on a syntax error, else the count found. */
int pol_lint_globals(const char *chunkname, const char *text, size_t len, pol_global_use *out, int cap,
                     char *msg, size_t msgcap);

#endif
