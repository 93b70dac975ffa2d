/*
 * doc_int.h - internals shared by doc.c (files, JSON, dispatch),
 * doc_yaml.c (YAML to jansson) and yaml_emit.c.  Not a public header.
 */
#ifndef DE_DOC_INT_H
#define DE_DOC_INT_H

#include "doc.h"

/* Called per non-empty YAML document with a borrowed value (the caller
 * frees it after the call; json_incref to keep it).  `line` is the 1-based
 * line where the document's content starts. */
typedef de_rc (*de_yaml_doc_fn)(void *ctx, json_t *v, int doc, int line, de_err *e);

/* Parse YAML text document by document.  Errors are prefixed with
 * "<name>: document N" and carry line:column in the message and in e. */
de_rc de_yaml_docs(const char *name, const char *text, size_t len, de_yaml_doc_fn fn,
                   void *ctx, de_err *e);

/* Would this text, written as a plain (unquoted) YAML scalar, read back as
 * the same string?  (It must not resolve to null, bool, int or float.) */
bool de_yaml_plain_is_string(const char *s, size_t n);

/* 1-based line and column (in bytes) of a byte offset into text. */
void de_text_linecol(const char *text, size_t len, size_t off, int *line, int *col);

#endif
