/*
 * doc.h - reading manifests: JSON or YAML files holding one object, several
 * YAML documents, several concatenated JSON values, or a `List`; directories
 * read recursively (*.yaml, *.yml, *.json) in sorted byte order.
 *
 * Objects are handed to a callback one at a time and freed after it returns,
 * so a 100,000-device snapshot never exists as one jansson tree: a JSON List
 * is split item by item while it is read, and YAML documents are converted
 * one document at a time.  YAML goes through libyaml's event parser into
 * jansson values, resolving scalars the way sigs.k8s.io/yaml does (YAML 1.1
 * core: null/~, true/false/yes/no/on/off, ints incl. 0x/0o, floats), with
 * anchors and aliases.
 *
 * Every object carries its origin (file, 1-based document index, and the
 * List item index), which error messages use:
 *   "x.yaml: document 2: ResourceSlice "gpu-node-1": spec.devices[3]: ..."
 */
#ifndef DE_DOC_H
#define DE_DOC_H

#include "buf.h"
#include "de.h"

#include <jansson.h>

typedef struct de_origin {
    const char *file; /* path as given (or "<stdin>", "<string>") */
    int doc;          /* 1-based document index in the file */
    int item;         /* index in a List's items, or -1 */
} de_origin;

/* Called once per object. Return DE_OK to continue; anything else stops the
 * walk and is returned by de_doc_each (the callback fills the de_err). The
 * callback may json_incref the object to keep it. */
typedef de_rc (*de_doc_cb)(void *ctx, json_t *obj, const de_origin *o, de_err *e);

/* Largest manifest file accepted (bytes). */
#define DE_DOC_MAX_FILE ((size_t)2 << 30)

/* Read a file or directory ("-" reads stdin). Empty documents are skipped;
 * a document that is not an object is an error naming the file and index. */
de_rc de_doc_each(const char *path, de_doc_cb cb, void *ctx, de_err *e);

/* One file: regular files only, unless `streams` (a path the user named:
 * pipes, FIFOs, /dev/stdin, "-"; see dir.h). */
de_rc de_doc_each_file(const char *file, bool streams, de_doc_cb cb, void *ctx, de_err *e);

/* Same for text already in memory; `name` is used in messages. */
de_rc de_doc_each_text(const char *name, const char *text, size_t len, de_doc_cb cb,
                       void *ctx, de_err *e);

/* Parse exactly one JSON or YAML value (used for config files, kubeconfig,
 * policy fixtures). Returns a new reference or NULL with e filled. */
json_t *de_doc_load_one(const char *path, de_err *e);
json_t *de_doc_parse_one(const char *name, const char *text, size_t len, de_err *e);

/* Sorted list of manifest files under a directory (recursively, each
 * directory once: de_walk in dir.h), or the path itself if it is not a
 * directory.  Caller frees each string and the array. */
de_rc de_doc_list_files(const char *path, char ***out, size_t *n, de_err *e);

/* Read a whole file with a size cap; the path may be a stream (the user
 * named it), text only (de_read_input in dir.h). */
de_rc de_read_file(const char *path, size_t max, char **out, size_t *len, de_err *e);

/* Every non-empty YAML document of a text, whatever its type (scalars and
 * lists included), handed to cb in order with o->item = -1; Lists are not
 * split.  (core.yaml_decode uses it.) */
de_rc de_yaml_each_doc(const char *name, const char *text, size_t len, de_doc_cb cb, void *ctx,
                       de_err *e);

/* Block YAML for a JSON value, the way kubectl -o yaml prints it: 2-space
 * indentation, sequences under a key not indented, object keys sorted by
 * bytes, "{}" / "[]" for empty collections, and strings quoted whenever a
 * plain scalar would read back as something else (true, 1, null, "",
 * leading or trailing spaces, ": ", " #", indicators) - single quotes, or
 * double quotes with escapes when the text has control characters or line
 * breaks.  Reals always carry a '.' or an exponent so they read back as
 * reals.  Appends to out (its cap bounds the size; DE_ENOMEM past it). */
de_rc de_yaml_emit(const json_t *v, de_buf *out, de_err *e);

/* Format the standard prefix "file: document N" (+ ": items[i]") into buf. */
void de_origin_format(const de_origin *o, char *buf, size_t cap);

/* The first key of obj that is not in known (NULL-terminated), or NULL: for
 * the hand-written formats that refuse a field they would otherwise ignore
 * (a workload file, a `cel --device` file).  Manifests go through the
 * decoder's dec_known instead, which names every unknown field. */
const char *de_json_unknown_key(const json_t *obj, const char *const *known);

#endif
