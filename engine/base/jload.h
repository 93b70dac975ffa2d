/*
 * jload.h - a jansson tree from JSON text: the tree json_loadb builds, at a
 * fraction of its cost.
 *
 * json_loadb reads its input through a callback, one byte at a time: each
 * byte is checked as UTF-8 and appended to a growing buffer, and each string
 * is then decoded a second time from that buffer into a third copy.  On
 * `serve`'s busy path (some eight watch events and a write answer a pod, a
 * few kilobytes each) that was a third of serve's instructions per pod.
 * This reader walks the text in place and builds the tree with jansson's
 * own constructors, so everything after it (decoders, json_delete) is as
 * before.
 *
 * It answers only where it is sure: the text must be JSON that jansson
 * accepts, with no \u0000, no duplicate key, no integer of more than 18
 * digits, no real that overflows, no real in a locale whose decimal point
 * is not '.', and nesting of at most 256 levels.  For anything else
 * de_json_parse returns NULL, and de_json_loadb hands the whole text to
 * json_loadb, whose tree or error (message, line, column, position) stands.
 * So every error a user sees is jansson's, word for word, and hostile text
 * costs at most one cut-short pass more.  spec/jload_spec.lua compares the
 * two on every object of the corpus and the conformance vectors and on
 * hostile and mutated texts.
 */
#ifndef DE_JLOAD_H
#define DE_JLOAD_H

#include <jansson.h>
#include <stddef.h>

/* The tree json_loadb(s, n, flags) returns, or NULL where this reader does
 * not answer (see above; no error detail).  Flags: JSON_REJECT_DUPLICATES,
 * JSON_DECODE_ANY, JSON_ALLOW_NUL; with any other, NULL. */
json_t *de_json_parse(const char *s, size_t n, size_t flags);
/* json_loadb's contract: de_json_parse's tree, else json_loadb's answer. */
json_t *de_json_loadb(const char *s, size_t n, size_t flags, json_error_t *je);

#endif
