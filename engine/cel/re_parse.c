/*
 * re_parse.c - RE2 syntax to a small tree for the fallback matcher
 * (re_nfa.h).
 *
 * It reads what regex.c's RE2 checker accepts: literals and escapes, '.',
 * classes with ranges, negation, escapes and POSIX names, Perl classes,
 * anchors, \b \B, groups of every kind, alternation, all repetitions with
 * their lazy forms, and the flags i m s U, set for the rest of a group or
 * scoped with (?flags:...).  Flags persist across '|' inside their group,
 * as in RE2.  Since the checker and PCRE2 have already accepted the
 * pattern, anything unexpected is simply "unsupported".
 *
 * Classes that ASCII folding cannot decide - \p{..} and \P{..}, and classes
 * or literals under (?i) that reach beyond ASCII - become PCRE2 atoms built
 * from their own source text, so they match exactly what the primary engine
 * matches.
 */
#include "re_nfa.h"

#include "../base/de.h"

#include <stdlib.h>
#include <string.h>

#define MAX_NODES 200000u
#define MAX_CLASSES 20000u
#define MAX_DEPTH 200
#define MAX_REPEAT 1000
#define NONE (-2) /* parse_atom produced nothing (a flag group, an empty \Q\E) */

enum { F_I = 1, F_M = 2, F_S = 4, F_U = 8 };

typedef struct P {
    const char *s;
    size_t n, i;
    cel_re_ast *a;
    const char *why;
    int depth;
} P;

static int32_t fail(P *p, const char *why)
{
    if (!p->why)
        p->why = why;
    return -1;
}

static int32_t node(P *p, int op)
{
    cel_re_ast *a = p->a;
    if (a->nnode >= MAX_NODES)
        return fail(p, "pattern too large for the fallback matcher");
    if (a->nnode == a->capnode) {
        a->capnode = a->capnode ? a->capnode * 2 : 64;
        a->node = de_xrealloc(a->node, a->capnode * sizeof *a->node);
    }
    cel_re_node *x = &a->node[a->nnode];
    memset(x, 0, sizeof *x);
    x->op = (uint8_t)op;
    x->kid = x->last = x->next = -1;
    return (int32_t)a->nnode++;
}

static void append(P *p, int32_t parent, int32_t child)
{
    cel_re_node *par = &p->a->node[parent];
    if (par->last < 0)
        par->kid = child;
    else
        p->a->node[par->last].next = child;
    par->last = child;
}

static int32_t leaf(P *p, int op, uint32_t arg)
{
    int32_t x = node(p, op);
    if (x >= 0)
        p->a->node[x].arg = arg;
    return x;
}

/* A class node owning *b (native) or atom (when non-NULL; b is then ignored). */
static int32_t class_node(P *p, cel_re_cb *b, bool negate, cel_re_atom *atom)
{
    cel_re_ast *a = p->a;
    if (a->ncls >= MAX_CLASSES) {
        cel_re_cb_free(b);
        cel_re_atom_free(atom);
        return fail(p, "pattern too large for the fallback matcher");
    }
    if (a->ncls == a->capcls) {
        a->capcls = a->capcls ? a->capcls * 2 : 8;
        a->cls = de_xrealloc(a->cls, a->capcls * sizeof *a->cls);
    }
    cel_re_class *c = &a->cls[a->ncls];
    if (atom) {
        cel_re_cb_free(b);
        memset(c, 0, sizeof *c);
        c->atom = atom;
        for (uint32_t ch = 0; ch < 0x80; ch++)
            if (cel_re_atom_test(atom, ch))
                c->ascii[ch >> 6] |= (uint64_t)1 << (ch & 63);
    } else {
        cel_re_class_make(c, b, negate);
    }
    return leaf(p, CEL_RN_CLASS, a->ncls++);
}

/* A class decided by PCRE2: the RE2 source text src[0..len), under (?i) when fold. */
static int32_t atom_node(P *p, const char *src, size_t len, bool fold)
{
    char *t = de_xmalloc(len + 4);
    size_t k = 0;
    if (fold) {
        memcpy(t, "(?i)", 4);
        k = 4;
    }
    memcpy(t + k, src, len);
    cel_re_atom *atom = cel_re_atom_new(t, k + len);
    free(t);
    if (!atom)
        return fail(p, "character class not supported by the fallback matcher");
    cel_re_cb none = {0};
    return class_node(p, &none, false, atom);
}

/* A literal character whose source text is src[0..len). */
static int32_t literal(P *p, uint32_t cp, int flags, const char *src, size_t len)
{
    if (!(flags & F_I))
        return leaf(p, CEL_RN_CHAR, cp);
    if (cp >= 0x80)
        return atom_node(p, src, len, true);
    if (!((cp | 0x20) >= 'a' && (cp | 0x20) <= 'z'))
        return leaf(p, CEL_RN_CHAR, cp);
    cel_re_cb b = {0};
    cel_re_cb_add_folded(&b, cp, cp);
    return class_node(p, &b, false, NULL);
}

/* A character escape at p->i (the backslash): octal, control letters, \x, escaped
 * punctuation.  Returns the code point, or -1 when it is not a character escape. */
static int32_t char_escape(P *p)
{
    const char *s = p->s;
    size_t i = p->i;
    if (i + 1 >= p->n)
        return -1;
    char c = s[i + 1];
    if (c >= '0' && c <= '7') {
        if (c != '0' && !(i + 2 < p->n && s[i + 2] >= '0' && s[i + 2] <= '7'))
            return -1; /* a backreference, refused by the checker */
        uint32_t v = (uint32_t)(c - '0');
        size_t j = i + 2;
        for (int k = 0; k < 2 && j < p->n && s[j] >= '0' && s[j] <= '7'; k++)
            v = v * 8 + (uint32_t)(s[j++] - '0');
        p->i = j;
        return (int32_t)v;
    }
    static const char ctl[] = "a\007f\014t\011n\012r\015v\013";
    for (const char *q = ctl; *q; q += 2)
        if (c == q[0]) {
            p->i = i + 2;
            return (unsigned char)q[1];
        }
    if (c == 'x') {
        size_t j = i + 2;
        uint32_t v = 0;
        if (j < p->n && s[j] == '{') {
            size_t nd = 0;
            for (j++; j < p->n && de_hexval(s[j]) >= 0 && nd < 9; j++, nd++)
                v = v * 16 + (uint32_t)de_hexval(s[j]);
            if (!nd || j >= p->n || s[j] != '}' || v > 0x10FFFF)
                return -1;
            p->i = j + 1;
            return (int32_t)v;
        }
        if (j + 1 < p->n && de_hexval(s[j]) >= 0 && de_hexval(s[j + 1]) >= 0) {
            p->i = j + 2;
            return de_hexval(s[j]) * 16 + de_hexval(s[j + 1]);
        }
        return -1;
    }
    if ((unsigned char)c < 0x80 && !((c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z'))) {
        p->i = i + 2;
        return (unsigned char)c;
    }
    return -1;
}

/* End of a \p / \P escape starting at i (the backslash), or 0 when malformed. */
static size_t uprop_end(P *p, size_t i)
{
    size_t j = i + 2;
    if (j < p->n && p->s[j] == '{') {
        while (j < p->n && p->s[j] != '}')
            j++;
        return j < p->n ? j + 1 : 0;
    }
    return j < p->n ? j + 1 : 0;
}

static int32_t parse_class(P *p, int flags)
{
    const char *s = p->s;
    size_t st = p->i;
    bool fold = flags & F_I, neg = false, need_atom = false, first = true;
    p->i++;
    if (p->i < p->n && s[p->i] == '^') {
        neg = true;
        p->i++;
    }
    cel_re_cb b = {0};
    for (;;) {
        if (p->i >= p->n)
            goto bad;
        char c = s[p->i];
        if (c == ']' && !first) {
            p->i++;
            break;
        }
        first = false;
        if (c == '[' && p->i + 1 < p->n && s[p->i + 1] == ':') {
            size_t j = p->i + 2, e = 0;
            for (; j + 1 < p->n; j++)
                if (s[j] == ':' && s[j + 1] == ']') {
                    e = j;
                    break;
                }
            if (!e)
                goto bad;
            size_t ns = p->i + 2;
            bool pneg = ns < e && s[ns] == '^';
            if (pneg)
                ns++;
            if (!cel_re_cb_posix(&b, s + ns, e - ns, pneg, fold))
                goto bad;
            p->i = e + 2;
            continue;
        }
        uint32_t lo, hi;
        if (c == '\\') {
            char e = p->i + 1 < p->n ? s[p->i + 1] : 0;
            if (e && strchr("dDwWsS", e)) {
                cel_re_cb_perl(&b, e, fold);
                p->i += 2;
                continue;
            }
            if (e == 'p' || e == 'P') {
                size_t end = uprop_end(p, p->i);
                if (!end)
                    goto bad;
                need_atom = true;
                p->i = end;
                continue;
            }
            int32_t v = char_escape(p);
            if (v < 0)
                goto bad;
            lo = (uint32_t)v;
        } else {
            p->i += cel_re_utf8_dec(s, p->n, p->i, &lo);
        }
        hi = lo;
        if (p->i + 1 < p->n && s[p->i] == '-' && s[p->i + 1] != ']') {
            p->i++;
            if (s[p->i] == '\\') {
                int32_t v = char_escape(p);
                if (v < 0)
                    goto bad;
                hi = (uint32_t)v;
            } else {
                p->i += cel_re_utf8_dec(s, p->n, p->i, &hi);
            }
            if (hi < lo)
                goto bad;
        }
        if (fold && hi >= 0x80)
            need_atom = true;
        else if (fold)
            cel_re_cb_add_folded(&b, lo, hi);
        else
            cel_re_cb_add(&b, lo, hi);
    }
    if (need_atom) {
        cel_re_cb_free(&b);
        return atom_node(p, s + st, p->i - st, fold);
    }
    return class_node(p, &b, neg, NULL);
bad:
    cel_re_cb_free(&b);
    return fail(p, "character class not supported by the fallback matcher");
}

/* An escape outside a class; \Q..\E appends all but its last character to cat. */
static int32_t parse_escape(P *p, int flags, int32_t cat)
{
    const char *s = p->s;
    size_t st = p->i;
    if (st + 1 >= p->n)
        return fail(p, "trailing backslash");
    char c = s[st + 1];
    switch (c) {
    case 'd': case 'D': case 'w': case 'W': case 's': case 'S': {
        cel_re_cb b = {0};
        cel_re_cb_perl(&b, c, flags & F_I);
        p->i += 2;
        return class_node(p, &b, false, NULL);
    }
    case 'b': p->i += 2; return leaf(p, CEL_RN_ASSERT, CEL_RA_WORD);
    case 'B': p->i += 2; return leaf(p, CEL_RN_ASSERT, CEL_RA_NOT_WORD);
    case 'A': p->i += 2; return leaf(p, CEL_RN_ASSERT, CEL_RA_BEGIN_TEXT);
    case 'z': p->i += 2; return leaf(p, CEL_RN_ASSERT, CEL_RA_END_TEXT);
    case 'p': case 'P': {
        size_t end = uprop_end(p, st);
        if (!end)
            return fail(p, "malformed \\p escape");
        p->i = end;
        return atom_node(p, s + st, end - st, flags & F_I);
    }
    case 'Q': {
        size_t j = st + 2, end = j;
        while (end + 1 < p->n && !(s[end] == '\\' && s[end + 1] == 'E'))
            end++;
        if (end + 1 >= p->n)
            end = p->n;
        int32_t last = NONE;
        while (j < end) {
            if (last >= 0)
                append(p, cat, last);
            uint32_t cp;
            size_t w = cel_re_utf8_dec(s, p->n, j, &cp);
            last = literal(p, cp, flags, s + j, w);
            if (last < 0)
                return -1;
            j += w;
        }
        p->i = end < p->n ? end + 2 : p->n;
        return last;
    }
    default: {
        int32_t v = char_escape(p);
        if (v < 0)
            return fail(p, "escape not supported by the fallback matcher");
        return literal(p, (uint32_t)v, flags, s + st, p->i - st);
    }
    }
}

static int32_t parse_alt(P *p, int flags);

static int32_t parse_group(P *p, int *flags)
{
    const char *s = p->s;
    int gf = *flags;
    if (p->i + 1 < p->n && s[p->i + 1] == '?') {
        size_t j = p->i + 2;
        if (j < p->n && (s[j] == '<' || (s[j] == 'P' && j + 1 < p->n && s[j + 1] == '<'))) {
            while (j < p->n && s[j] != '>')
                j++;
            if (j >= p->n)
                return fail(p, "malformed named group");
            p->i = j + 1;
        } else {
            bool neg = false;
            for (; j < p->n && s[j] != ')' && s[j] != ':'; j++) {
                int bit = s[j] == 'i' ? F_I : s[j] == 'm' ? F_M : s[j] == 's' ? F_S : s[j] == 'U' ? F_U : 0;
                if (s[j] == '-' && !neg)
                    neg = true;
                else if (!bit)
                    return fail(p, "group syntax not supported by the fallback matcher");
                else if (neg)
                    gf &= ~bit;
                else
                    gf |= bit;
            }
            if (j >= p->n)
                return fail(p, "malformed group");
            p->i = j + 1;
            if (s[j] == ')') {
                *flags = gf;
                return NONE;
            }
        }
    } else {
        p->i++;
    }
    int32_t g = parse_alt(p, gf);
    if (g < 0)
        return -1;
    if (p->i >= p->n || s[p->i] != ')')
        return fail(p, "missing )");
    p->i++;
    return g;
}

static int32_t parse_atom(P *p, int *flags, int32_t cat)
{
    const char *s = p->s;
    char c = s[p->i];
    switch (c) {
    case '(': return parse_group(p, flags);
    case '[': return parse_class(p, *flags);
    case '\\': return parse_escape(p, *flags, cat);
    case '.':
        p->i++;
        return leaf(p, (*flags & F_S) ? CEL_RN_ANY : CEL_RN_ANYNL, 0);
    case '^':
        p->i++;
        return leaf(p, CEL_RN_ASSERT, (*flags & F_M) ? CEL_RA_BEGIN_LINE : CEL_RA_BEGIN_TEXT);
    case '$':
        p->i++;
        return leaf(p, CEL_RN_ASSERT, (*flags & F_M) ? CEL_RA_END_LINE : CEL_RA_END_TEXT);
    case '*': case '+': case '?':
        return fail(p, "missing argument to repetition operator");
    default: {
        uint32_t cp;
        size_t st = p->i, w = cel_re_utf8_dec(s, p->n, p->i, &cp);
        p->i += w;
        return literal(p, cp, *flags, s + st, w);
    }
    }
}

/* {n}, {n,}, {n,m} at p->i: its length, or 0 when the brace is a literal. */
static size_t brace(P *p, int32_t *min, int32_t *max)
{
    const char *s = p->s;
    size_t j = p->i + 1;
    long a = 0, b;
    size_t d = 0;
    for (; j < p->n && s[j] >= '0' && s[j] <= '9'; j++, d++)
        if (a < 100000)
            a = a * 10 + (s[j] - '0');
    if (!d)
        return 0;
    b = a;
    if (j < p->n && s[j] == ',') {
        j++;
        long v = 0;
        d = 0;
        for (; j < p->n && s[j] >= '0' && s[j] <= '9'; j++, d++)
            if (v < 100000)
                v = v * 10 + (s[j] - '0');
        b = d ? v : -1;
    }
    if (j >= p->n || s[j] != '}')
        return 0;
    *min = (int32_t)a;
    *max = (int32_t)b;
    return j + 1 - p->i;
}

static bool is_repeat(P *p)
{
    if (p->i >= p->n)
        return false;
    char c = p->s[p->i];
    int32_t lo, hi;
    return c == '*' || c == '+' || c == '?' || (c == '{' && brace(p, &lo, &hi));
}

static int32_t parse_repeat(P *p, int flags, int32_t atom)
{
    if (!is_repeat(p))
        return atom;
    int32_t min = 0, max = -1;
    char c = p->s[p->i];
    size_t len = 1;
    if (c == '+')
        min = 1;
    else if (c == '?')
        max = 1;
    else if (c == '{')
        len = brace(p, &min, &max);
    if (min > MAX_REPEAT || max > MAX_REPEAT || (max >= 0 && max < min))
        return fail(p, "invalid repeat count");
    p->i += len;
    bool greedy = true;
    if (p->i < p->n && p->s[p->i] == '?') {
        greedy = false;
        p->i++;
    }
    if (flags & F_U)
        greedy = !greedy;
    if (is_repeat(p))
        return fail(p, "nested repetition operator");
    int32_t r = node(p, CEL_RN_REP);
    if (r < 0)
        return -1;
    cel_re_node *x = &p->a->node[r];
    x->min = min;
    x->max = max;
    x->greedy = greedy;
    append(p, r, atom);
    return r;
}

static int32_t parse_cat(P *p, int *flags)
{
    int32_t cat = node(p, CEL_RN_CAT);
    if (cat < 0)
        return -1;
    while (p->i < p->n && p->s[p->i] != '|' && p->s[p->i] != ')') {
        int32_t atom = parse_atom(p, flags, cat);
        if (atom == NONE) {
            if (is_repeat(p))
                return fail(p, "missing argument to repetition operator");
            continue;
        }
        if (atom < 0)
            return -1;
        atom = parse_repeat(p, *flags, atom);
        if (atom < 0)
            return -1;
        append(p, cat, atom);
    }
    return cat;
}

static int32_t parse_alt(P *p, int flags)
{
    if (++p->depth > MAX_DEPTH)
        return fail(p, "pattern nests too deeply for the fallback matcher");
    int32_t first = parse_cat(p, &flags), alt = -1;
    if (first < 0)
        return -1;
    while (p->i < p->n && p->s[p->i] == '|') {
        p->i++;
        if (alt < 0) {
            alt = node(p, CEL_RN_ALT);
            if (alt < 0)
                return -1;
            append(p, alt, first);
        }
        int32_t b = parse_cat(p, &flags);
        if (b < 0)
            return -1;
        append(p, alt, b);
    }
    p->depth--;
    return alt < 0 ? first : alt;
}

bool cel_re_nfa_parse(const char *pat, size_t n, cel_re_ast *ast, const char **why)
{
    P p = {.s = pat, .n = n, .a = ast};
    ast->root = parse_alt(&p, 0);
    if (ast->root >= 0 && p.i != n)
        fail(&p, "unexpected )");
    if (p.why) {
        *why = p.why;
        return false;
    }
    return true;
}

void cel_re_ast_free(cel_re_ast *ast, bool keep_classes)
{
    if (!keep_classes) {
        for (uint32_t i = 0; i < ast->ncls; i++)
            cel_re_class_free(&ast->cls[i]);
        free(ast->cls);
    }
    free(ast->node);
    memset(ast, 0, sizeof *ast);
}
