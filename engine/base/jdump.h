/*
 * jdump.h - JSON text from a jansson tree, byte for byte what json_dumps
 * writes, and a deep copy as json_deep_copy makes it, at a fraction of
 * their cost.
 *
 * json_dumps (and json_deep_copy) guards every object and array against cycles: it formats the
 * container's address with snprintf("%p") and enters it in a hash table,
 * then takes it out again.  For the small, deep objects of Kubernetes
 * (a pod is a few hundred containers and keys) that guard was most of the
 * work, and json_dumps was a sixth of `serve`'s instructions per pod: pod
 * and claim texts kept by the graph, and every request body.  Trees built
 * by jansson's parser and by draengine cannot have cycles; a depth cap
 * stands in for the guard, refusing what jansson would loop on.
 *
 * The text is jansson 2.14's for the flags it supports here: JSON_COMPACT
 * or not (no indentation), JSON_ENCODE_ANY, JSON_ENSURE_ASCII,
 * JSON_ESCAPE_SLASH, JSON_REAL_PRECISION.  Any other flag (indentation,
 * JSON_SORT_KEYS, JSON_EMBED) is handed to json_dumps whole; reals, rare in
 * Kubernetes objects, are formatted by jansson itself.  A string that is not
 * valid UTF-8 fails the dump, as there.  spec/jdump_spec.lua compares the
 * two on every object of the corpus and on hostile trees.
 */
#ifndef DE_JDUMP_H
#define DE_JDUMP_H

#include "buf.h"

#include <jansson.h>

/* The text appended to out; DE_EINVAL for what json_dumps would refuse
 * (invalid UTF-8, a scalar without JSON_ENCODE_ANY, nesting past the cap),
 * DE_ENOMEM past out's cap.  out is left as it was on failure. */
de_rc de_json_dump(const json_t *j, size_t flags, de_buf *out);
/* json_dumps's contract: a malloc'd string, NULL on failure. */
char *de_json_dumps(const json_t *j, size_t flags);
/* json_deep_copy's: a new tree (keys in order), NULL for NULL or nesting
 * past the cap. */
json_t *de_json_copy(const json_t *j);

#endif
