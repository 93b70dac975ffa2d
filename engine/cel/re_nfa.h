/*
 * re_nfa.h - the linear-time RE2 matcher that regex.c falls back to when a
 * PCRE2 match hits its limits (private to engine/cel/regex.c and re_*.c).
 *
 * re_parse.c parses the RE2 syntax subset into a small tree, re_class.c
 * builds character classes, re_pike.c compiles the tree into an NFA program
 * and runs it as a Pike VM (Thompson simulation with thread priority), which
 * gives RE2's leftmost-first match boundaries in O(subject x program) time.
 *
 * The fallback only ever sees patterns that regex.c's RE2 checker and PCRE2
 * have accepted, so its parser reports anything unexpected as unsupported
 * instead of explaining syntax errors.  Character classes it cannot decide
 * by itself (Unicode properties such as \pL, and case folding of non-ASCII
 * characters) are decided per code point by PCRE2 ("atoms", regex.c), so
 * they mean exactly what they mean to the primary engine.
 */
#ifndef CEL_RE_NFA_H
#define CEL_RE_NFA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- the matcher (re_pike.c) ----------------------------------------------------------- */

typedef struct cel_re_nfa cel_re_nfa;

/* Compile RE2 pattern text.  NULL with *why when the pattern uses a construct the
 * fallback does not support or the program would exceed its size cap. */
cel_re_nfa *cel_re_nfa_compile(const char *pat, size_t n, const char **why);
void cel_re_nfa_free(cel_re_nfa *p);
/* Leftmost-first search of s[0..n) from byte offset start (the text before start is
 * context for ^, \b).  first: any match will do (matches()).  1 match with *ms and *me,
 * 0 no match, -1 the work budget ran out. */
int cel_re_nfa_search(cel_re_nfa *p, const char *s, size_t n, size_t start, bool first,
                      size_t *ms, size_t *me);

/* ---- single-character PCRE2 atoms (regex.c) -------------------------------------------- */

typedef struct cel_re_atom cel_re_atom;
/* An RE2 pattern that matches exactly one character (a class, \p{..}, a literal under
 * (?i)); NULL if PCRE2 refuses it. */
cel_re_atom *cel_re_atom_new(const char *re2, size_t n);
bool cel_re_atom_test(cel_re_atom *a, uint32_t cp);
void cel_re_atom_free(cel_re_atom *a);

/* ---- character classes (re_class.c) ---------------------------------------------------- */

typedef struct cel_re_range {
    uint32_t lo, hi;
} cel_re_range;

/* A growing set of code point ranges (unsorted until cel_re_cb_norm). */
typedef struct cel_re_cb {
    cel_re_range *r;
    uint32_t n, cap;
} cel_re_cb;

#define CEL_RE_MEMO 64

typedef struct cel_re_class {
    uint64_t ascii[2];    /* members below 0x80 */
    cel_re_range *r;      /* members from 0x80, sorted and disjoint */
    uint32_t nr;
    cel_re_atom *atom;    /* when set, membership comes from PCRE2 */
    uint32_t memo_key[CEL_RE_MEMO]; /* atom answers: code point + 1, 0 = empty */
    uint8_t memo_val[CEL_RE_MEMO];
} cel_re_class;

void cel_re_cb_add(cel_re_cb *b, uint32_t lo, uint32_t hi);
void cel_re_cb_free(cel_re_cb *b);
/* Perl class \d \w \s (upper case: negated).  false for an unknown letter. */
bool cel_re_cb_perl(cel_re_cb *b, char which, bool fold);
/* POSIX [:name:] (neg: [:^name:]).  false for an unknown name. */
bool cel_re_cb_posix(cel_re_cb *b, const char *name, size_t len, bool neg, bool fold);
/* Add lo..hi, closed under RE2's simple case folding restricted to ASCII (plus the two
 * non-ASCII characters that fold to ASCII letters: U+017F and U+212A).  The caller
 * sends ranges above 0x7F under (?i) to an atom instead. */
void cel_re_cb_add_folded(cel_re_cb *b, uint32_t lo, uint32_t hi);
/* Turn the builder into a class (optionally negated); frees the builder. */
void cel_re_class_make(cel_re_class *c, cel_re_cb *b, bool negate);
bool cel_re_class_has(cel_re_class *c, uint32_t cp);
void cel_re_class_free(cel_re_class *c);

/* One code point from s[i..n): its width (invalid UTF-8: U+FFFD, width 1). */
size_t cel_re_utf8_dec(const char *s, size_t n, size_t i, uint32_t *cp);

/* ---- the syntax tree (re_parse.c) ------------------------------------------------------ */

enum {
    CEL_RN_EMPTY,  /* matches the empty string */
    CEL_RN_CHAR,   /* arg: code point */
    CEL_RN_CLASS,  /* arg: class index */
    CEL_RN_ANY,    /* any character */
    CEL_RN_ANYNL,  /* any character but \n */
    CEL_RN_ASSERT, /* arg: CEL_RA_* */
    CEL_RN_CAT,
    CEL_RN_ALT,
    CEL_RN_REP,    /* min, max (-1: unbounded), greedy */
};

enum {
    CEL_RA_BEGIN_TEXT,
    CEL_RA_END_TEXT,
    CEL_RA_BEGIN_LINE,
    CEL_RA_END_LINE,
    CEL_RA_WORD,
    CEL_RA_NOT_WORD,
};

typedef struct cel_re_node {
    uint8_t op;
    uint8_t greedy;
    int32_t min, max;
    uint32_t arg;
    int32_t kid, last, next; /* first child, last child, next sibling; -1: none */
} cel_re_node;

typedef struct cel_re_ast {
    cel_re_node *node;
    uint32_t nnode, capnode;
    cel_re_class *cls;
    uint32_t ncls, capcls;
    int32_t root;
} cel_re_ast;

/* Parse pat into *ast (zeroed by the caller).  false with *why when unsupported; the
 * caller frees *ast either way. */
bool cel_re_nfa_parse(const char *pat, size_t n, cel_re_ast *ast, const char **why);
/* Free the nodes and, unless keep_classes, the classes. */
void cel_re_ast_free(cel_re_ast *ast, bool keep_classes);

#endif
