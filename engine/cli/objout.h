/*
 * objout.h - writing a stream of Kubernetes objects to a FILE as YAML
 * documents or as one JSON `List`, one object at a time (the simulator and
 * sysfs discovery hand objects over as they make them).
 *
 * Keys are sorted, as `kubectl get -o yaml` prints them, so the output is
 * byte-for-byte stable.  YAML documents are block YAML (de_yaml_emit), each
 * after a `---` line.
 */
#ifndef CLI_OBJOUT_H
#define CLI_OBJOUT_H

#include "../base/de.h"

#include <jansson.h>
#include <stdio.h>

/* Largest single object written (bytes of YAML). */
#define CLI_OBJOUT_MAX ((size_t)256 << 20)

typedef enum cli_ofmt { CLI_OFMT_YAML = 0, CLI_OFMT_JSON } cli_ofmt;

typedef struct cli_objout {
    FILE *f;
    cli_ofmt fmt;
    size_t n;
} cli_objout;

/* "yaml"/"json" -> format; false for anything else. */
bool cli_ofmt_parse(const char *s, cli_ofmt *out);
void cli_objout_begin(cli_objout *o, FILE *f, cli_ofmt fmt);
/* sim_emit_fn-compatible: ctx is the cli_objout. */
de_rc cli_objout_write(void *ctx, json_t *obj, de_err *e);
/* Finish the stream; DE_EIO if any write failed. */
de_rc cli_objout_end(cli_objout *o, de_err *e);

/* One document as block YAML on f after `prefix` (e.g. "---\n"); nothing
 * is written when the YAML text would pass `cap` bytes or cannot be made. */
de_rc cli_yaml_write(FILE *f, const char *prefix, json_t *doc, size_t cap, de_err *e);

#endif
