/*
 * parse.c - recursive-descent CEL parser (../shared/docs/cel.md §3) with
 * macro expansion.
 *
 * Operators become N_CALL nodes named the way cel-go names them ("_+_",
 * "_[_]", "@in", "!_", "-_"), except &&, || and ?: which get their own nodes
 * because they are not strict.  Chains of && and || are built as balanced
 * trees, like cel-go, so a long disjunction does not make a deep tree.
 * Macros are recognised by shape while parsing and become dedicated nodes
 * (N_HAS, N_ALL, ..., N_BIND); a call that does not have a macro's shape
 * stays an ordinary call and the checker reports it.
 *
 * Two limits keep hostile input from exhausting the C stack: nesting of
 * parenthesised / bracketed / call-argument expressions (250, cel-go's
 * default recursion limit) and the height of the finished tree (1000).
 * Node positions are byte offsets of the token cel-go reports errors at
 * (the operator, the '(' of a call, the '.' of a selection).
 */
#include "lex.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 250
#define MAX_HEIGHT 1000

typedef struct P {
    const char *s;
    size_t n;
    cel_lexer lx;
    cel_token t;   /* current token */
    cel_token la;  /* lookahead */
    bool has_la;
    de_arena *a;
    de_err *e;
    int depth;
    bool failed;
} P;

static void next(P *p)
{
    if (p->has_la) {
        p->t = p->la;
        p->has_la = false;
    } else {
        p->t = cel_lex_next(&p->lx);
    }
}

static cel_token peek(P *p)
{
    if (!p->has_la) {
        p->la = cel_lex_next(&p->lx);
        p->has_la = true;
    }
    return p->la;
}

static void fail_at(P *p, uint32_t pos, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fail_at(P *p, uint32_t pos, const char *fmt, ...)
{
    if (p->failed)
        return;
    p->failed = true;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    int line, col;
    cel_pos_linecol(p->s, p->n, pos, &line, &col);
    if (p->e) {
        de_errf(p->e, DE_EPARSE, "ERROR: <input>:%d:%d: %s", line, col, msg);
        p->e->line = line;
        p->e->col = col;
    }
}

static void tok_text(P *p, cel_token t, char *buf, size_t cap)
{
    if (t.t == TOK_EOF) {
        snprintf(buf, cap, "<EOF>");
        return;
    }
    size_t n = t.len < 40 ? t.len : 40;
    snprintf(buf, cap, "'%.*s'", (int)n, p->s + t.pos);
}

static void syntax_error(P *p, const char *expecting)
{
    if (p->t.t == TOK_ERROR) {
        char tb[64];
        tok_text(p, p->t, tb, sizeof tb);
        if (!strcmp(p->t.why, "token recognition error"))
            fail_at(p, p->t.pos, "Syntax error: token recognition error at: %s", tb);
        else
            fail_at(p, p->t.pos, "Syntax error: %s", p->t.why);
        return;
    }
    char tb[64];
    tok_text(p, p->t, tb, sizeof tb);
    if (expecting)
        fail_at(p, p->t.pos, "Syntax error: mismatched input %s expecting %s", tb, expecting);
    else
        fail_at(p, p->t.pos, "Syntax error: extraneous input %s", tb);
}

static bool expect(P *p, cel_tok t, const char *what)
{
    if (p->t.t != t) {
        syntax_error(p, what);
        return false;
    }
    next(p);
    return true;
}

static cel_node *mk(P *p, int k, uint32_t pos)
{
    cel_node *n = de_arena_zalloc(p->a, sizeof *n);
    if (!n) {
        fail_at(p, pos, "expression too large");
        return NULL;
    }
    n->k = (uint8_t)k;
    n->pos = pos;
    n->h = 1;
    return n;
}

static bool grow(P *p, cel_node *n, const cel_node *child)
{
    if (child && child->h + 1 > n->h)
        n->h = child->h + 1;
    if (n->h > MAX_HEIGHT) {
        fail_at(p, n->pos, "expression recursion limit exceeded: %d", MAX_HEIGHT);
        return false;
    }
    return true;
}

static cel_node *mkcall(P *p, uint32_t pos, const char *fn, cel_node *target, cel_node **args,
                        uint32_t nargs)
{
    cel_node *n = mk(p, N_CALL, pos);
    if (!n)
        return NULL;
    n->name = fn;
    n->nlen = (uint32_t)strlen(fn);
    n->a = target;
    n->args = args;
    n->nargs = nargs;
    grow(p, n, target);
    for (uint32_t i = 0; i < nargs; i++)
        grow(p, n, args[i]);
    return p->failed ? NULL : n;
}

static cel_node *mkbin(P *p, uint32_t pos, const char *fn, cel_node *l, cel_node *r)
{
    cel_node **args = de_arena_alloc(p->a, 2 * sizeof *args);
    if (!args) {
        fail_at(p, pos, "expression too large");
        return NULL;
    }
    args[0] = l;
    args[1] = r;
    return mkcall(p, pos, fn, NULL, args, 2);
}

static cel_node *parse_expr(P *p);

/* ---- literals ---------------------------------------------------------------- */

static cel_node *lit_int(P *p, cel_token t, bool neg, uint32_t pos)
{
    const char *s = p->s + t.pos;
    size_t n = t.len;
    uint64_t v = 0;
    bool hex = n > 2 && s[0] == '0' && s[1] == 'x';
    size_t i = hex ? 2 : 0;
    bool over = false;
    for (; i < n; i++) {
        int d = s[i] >= 'a' ? s[i] - 'a' + 10 : s[i] >= 'A' ? s[i] - 'A' + 10 : s[i] - '0';
        uint64_t base = hex ? 16 : 10;
        if (v > (UINT64_MAX - (uint64_t)d) / base)
            over = true;
        v = v * base + (uint64_t)d;
    }
    cel_node *nd = mk(p, N_LIT, pos);
    if (!nd)
        return NULL;
    if (over || (!neg && v > (uint64_t)INT64_MAX) || (neg && v > (uint64_t)INT64_MAX + 1)) {
        fail_at(p, pos, "invalid int literal");
        return NULL;
    }
    nd->val = cv_int(neg ? (int64_t)(0 - v) : (int64_t)v);
    return nd;
}

static cel_node *lit_uint(P *p, cel_token t)
{
    const char *s = p->s + t.pos;
    size_t n = t.len - 1; /* drop the u */
    uint64_t v = 0;
    bool hex = n > 2 && s[0] == '0' && s[1] == 'x';
    bool over = false;
    for (size_t i = hex ? 2 : 0; i < n; i++) {
        int d = s[i] >= 'a' ? s[i] - 'a' + 10 : s[i] >= 'A' ? s[i] - 'A' + 10 : s[i] - '0';
        uint64_t base = hex ? 16 : 10;
        if (v > (UINT64_MAX - (uint64_t)d) / base)
            over = true;
        v = v * base + (uint64_t)d;
    }
    if (over) {
        fail_at(p, t.pos, "invalid uint literal");
        return NULL;
    }
    cel_node *nd = mk(p, N_LIT, t.pos);
    if (nd)
        nd->val = cv_uint(v);
    return nd;
}

static cel_node *lit_double(P *p, cel_token t, bool neg, uint32_t pos)
{
    char buf[128], *txt = buf;
    if (t.len + 2 > sizeof buf) {
        /* absurdly long: let strtod see the real text */
        txt = de_arena_alloc(p->a, t.len + 2);
        if (!txt) {
            fail_at(p, pos, "expression too large");
            return NULL;
        }
    }
    txt[0] = '-';
    memcpy(txt + 1, p->s + t.pos, t.len);
    txt[t.len + 1] = 0;
    double d = strtod(neg ? txt : txt + 1, NULL);
    if (isinf(d)) {
        fail_at(p, pos, "invalid double literal");
        return NULL;
    }
    cel_node *nd = mk(p, N_LIT, pos);
    if (nd)
        nd->val = cv_double(d);
    return nd;
}

static cel_node *lit_string(P *p, cel_token t, bool bytes)
{
    const char *out, *why = NULL;
    size_t on;
    if (!cel_unescape(p->s + t.pos, t.len, bytes, p->a, &out, &on, &why)) {
        fail_at(p, t.pos, "Syntax error: %s", why);
        return NULL;
    }
    if (!bytes && !cel_utf8_valid(out, on)) {
        fail_at(p, t.pos, "Syntax error: invalid UTF-8 in string literal");
        return NULL;
    }
    cel_node *nd = mk(p, N_LIT, t.pos);
    if (nd)
        nd->val = bytes ? cv_bytes(out, on) : cv_str(out, on);
    return nd;
}

/* ---- identifiers, macros --------------------------------------------------------- */

static const char *const reserved[] = {
    "as", "break", "const", "continue", "else", "for", "function", "if", "import",
    "let", "loop", "package", "namespace", "return", "var", "void", "while",
};

static bool is_reserved(const char *s, size_t n)
{
    for (size_t i = 0; i < DE_ARRAY_LEN(reserved); i++)
        if (strlen(reserved[i]) == n && !memcmp(reserved[i], s, n))
            return true;
    return false;
}

static bool name_is(const cel_node *n, const char *s)
{
    return n->nlen == strlen(s) && !memcmp(n->name, s, n->nlen);
}

/* A growing list of nodes (call arguments, list elements, map keys and
 * values): 64 on the stack, then doubled in the arena; nl_finish copies it
 * into the arena at its size.  A failure is "expression too large" at pos. */
typedef struct nlist {
    cel_node *tmp[64];
    cel_node **v;
    uint32_t n, cap;
} nlist;

static void nl_init(nlist *l)
{
    l->v = l->tmp;
    l->n = 0;
    l->cap = 64;
}

static bool nl_push(P *p, nlist *l, cel_node *e, uint32_t pos)
{
    if (l->n == l->cap) {
        cel_node **na = de_arena_alloc(p->a, 2 * l->cap * sizeof *na);
        if (!na) {
            fail_at(p, pos, "expression too large");
            return false;
        }
        memcpy(na, l->v, l->n * sizeof *na);
        l->v = na;
        l->cap *= 2;
    }
    l->v[l->n++] = e;
    return true;
}

static cel_node **nl_finish(P *p, const nlist *l, uint32_t pos)
{
    cel_node **fin = de_arena_alloc(p->a, (l->n ? l->n : 1) * sizeof *fin);
    if (!fin) {
        fail_at(p, pos, "expression too large");
        return NULL;
    }
    memcpy(fin, l->v, l->n * sizeof *fin);
    return fin;
}

/* Parse "(args)" after the '(' token (current token is '('). */
static bool parse_args(P *p, cel_node ***out, uint32_t *nout)
{
    next(p); /* ( */
    nlist args;
    nl_init(&args);
    if (p->t.t != TOK_RPAREN) {
        for (;;) {
            cel_node *e = parse_expr(p);
            if (!e || !nl_push(p, &args, e, p->t.pos))
                return false;
            if (p->t.t == TOK_COMMA) {
                next(p);
                continue;
            }
            break;
        }
    }
    if (!expect(p, TOK_RPAREN, "{')', ','}"))
        return false;
    *out = nl_finish(p, &args, p->t.pos);
    *nout = args.n;
    return *out != NULL;
}

static cel_node *macro_or_call(P *p, uint32_t pos, const char *name, uint32_t nlen,
                               cel_node *target, cel_node **args, uint32_t nargs)
{
    char fn[64];
    if (nlen >= sizeof fn)
        nlen = sizeof fn - 1;
    memcpy(fn, name, nlen);
    fn[nlen] = 0;
    if (!target && !strcmp(fn, "has") && nargs == 1) {
        if (args[0]->k != N_SELECT) {
            fail_at(p, args[0]->pos, "invalid argument to has() macro");
            return NULL;
        }
        cel_node *h = mk(p, N_HAS, pos);
        if (!h)
            return NULL;
        h->a = args[0]->a;
        h->name = args[0]->name;
        h->nlen = args[0]->nlen;
        grow(p, h, args[0]);
        return h;
    }
    if (target && target->k == N_IDENT && !(target->flags & NF_LEADING_DOT) &&
        name_is(target, "cel") && !strcmp(fn, "bind") && nargs == 3) {
        if (args[0]->k != N_IDENT || (args[0]->flags & NF_LEADING_DOT)) {
            fail_at(p, args[0]->pos, "cel.bind() variable names must be simple identifiers");
            return NULL;
        }
        cel_node *b = mk(p, N_BIND, pos);
        if (!b)
            return NULL;
        b->name = args[0]->name;
        b->nlen = args[0]->nlen;
        b->a = args[1];
        b->b = args[2];
        grow(p, b, args[1]);
        grow(p, b, args[2]);
        return p->failed ? NULL : b;
    }
    int k = -1;
    if (target) {
        if (nargs == 2 && !strcmp(fn, "all"))
            k = N_ALL;
        else if (nargs == 2 && !strcmp(fn, "exists"))
            k = N_EXISTS;
        else if (nargs == 2 && !strcmp(fn, "exists_one"))
            k = N_EXISTS_ONE;
        else if (nargs == 2 && !strcmp(fn, "map"))
            k = N_MAP_M;
        else if (nargs == 3 && !strcmp(fn, "map"))
            k = N_MAP_FILTER;
        else if (nargs == 2 && !strcmp(fn, "filter"))
            k = N_FILTER;
    }
    if (k >= 0) {
        if (args[0]->k != N_IDENT || (args[0]->flags & NF_LEADING_DOT)) {
            fail_at(p, args[0]->pos, "argument must be a simple name");
            return NULL;
        }
        cel_node *m = mk(p, k, pos);
        if (!m)
            return NULL;
        m->name = args[0]->name;
        m->nlen = args[0]->nlen;
        m->a = target;
        m->b = args[1];
        m->c = nargs == 3 ? args[2] : NULL;
        grow(p, m, target);
        grow(p, m, m->b);
        grow(p, m, m->c);
        return p->failed ? NULL : m;
    }
    char *fname = de_arena_strndup(p->a, name, nlen);
    if (!fname) {
        fail_at(p, pos, "expression too large");
        return NULL;
    }
    return mkcall(p, pos, fname, target, args, nargs);
}

/* ---- grammar ------------------------------------------------------------------ */

/* [e, ...] and {k: v, ...}: a map's keys and values alternate in args. */
static cel_node *parse_elements(P *p, bool map)
{
    cel_tok close = map ? TOK_RBRACE : TOK_RBRACKET;
    uint32_t pos = p->t.pos;
    next(p); /* [ or { */
    cel_node *n = mk(p, map ? N_MAP : N_LIST, pos);
    if (!n)
        return NULL;
    nlist el;
    nl_init(&el);
    while (p->t.t != close) {
        if (p->t.t == TOK_QUESTION) {
            fail_at(p, p->t.pos, map ? "optional syntax ({?k: v}) is not supported by draengine"
                                     : "optional syntax ([?e]) is not supported by draengine");
            return NULL;
        }
        cel_node *e = parse_expr(p), *v = NULL;
        if (!e)
            return NULL;
        if (map && (!expect(p, TOK_COLON, "':'") || !(v = parse_expr(p))))
            return NULL;
        if (!nl_push(p, &el, e, pos) || (v && !nl_push(p, &el, v, pos)))
            return NULL;
        grow(p, n, e);
        if (v)
            grow(p, n, v);
        if (p->t.t == TOK_COMMA) {
            next(p);
            continue;
        }
        if (p->t.t != close) {
            syntax_error(p, map ? "{'}', ','}" : "{']', ','}");
            return NULL;
        }
    }
    next(p);
    n->args = nl_finish(p, &el, pos);
    n->nargs = el.n;
    return p->failed || !n->args ? NULL : n;
}

static cel_node *parse_primary(P *p)
{
    cel_token t = p->t;
    switch (t.t) {
    case TOK_INT: next(p); return lit_int(p, t, false, t.pos);
    case TOK_UINT: next(p); return lit_uint(p, t);
    case TOK_DOUBLE: next(p); return lit_double(p, t, false, t.pos);
    case TOK_STRING: next(p); return lit_string(p, t, false);
    case TOK_BYTES: next(p); return lit_string(p, t, true);
    case TOK_TRUE:
    case TOK_FALSE: {
        next(p);
        cel_node *n = mk(p, N_LIT, t.pos);
        if (n)
            n->val = cv_bool(t.t == TOK_TRUE);
        return n;
    }
    case TOK_NULL: {
        next(p);
        cel_node *n = mk(p, N_LIT, t.pos);
        if (n)
            n->val = cv_null();
        return n;
    }
    case TOK_LPAREN: {
        next(p);
        cel_node *e = parse_expr(p);
        if (!e)
            return NULL;
        if (!expect(p, TOK_RPAREN, "')'"))
            return NULL;
        return e;
    }
    case TOK_LBRACKET: return parse_elements(p, false);
    case TOK_LBRACE: return parse_elements(p, true);
    case TOK_DOT:
    case TOK_IDENT: {
        bool dot = t.t == TOK_DOT;
        if (dot) {
            next(p);
            if (p->t.t != TOK_IDENT) {
                syntax_error(p, "IDENTIFIER");
                return NULL;
            }
        }
        cel_token id = p->t;
        next(p);
        const char *name = p->s + id.pos;
        if (is_reserved(name, id.len)) {
            fail_at(p, id.pos, "reserved identifier: %.*s", (int)id.len, name);
            return NULL;
        }
        if (p->t.t == TOK_LPAREN) {
            uint32_t pos = p->t.pos;
            cel_node **args;
            uint32_t nargs;
            if (!parse_args(p, &args, &nargs))
                return NULL;
            return macro_or_call(p, pos, name, id.len, NULL, args, nargs);
        }
        if (p->t.t == TOK_LBRACE) {
            fail_at(p, p->t.pos, "message construction is not supported by draengine");
            return NULL;
        }
        cel_node *n = mk(p, N_IDENT, id.pos);
        if (!n)
            return NULL;
        n->name = name;
        n->nlen = id.len;
        if (dot)
            n->flags |= NF_LEADING_DOT;
        return n;
    }
    default:
        syntax_error(p, NULL);
        return NULL;
    }
}

static cel_node *parse_member_tail(P *p, cel_node *n)
{
    while (n && !p->failed) {
        if (p->t.t == TOK_DOT) {
            uint32_t dotpos = p->t.pos;
            next(p);
            if (p->t.t == TOK_QUESTION) {
                fail_at(p, p->t.pos, "optional syntax (.?field) is not supported by draengine");
                return NULL;
            }
            if (p->t.t != TOK_IDENT && p->t.t != TOK_ESC_IDENT) {
                syntax_error(p, "IDENTIFIER");
                return NULL;
            }
            cel_token id = p->t;
            next(p);
            if (id.t == TOK_IDENT && p->t.t == TOK_LPAREN) {
                uint32_t pos = p->t.pos;
                cel_node **args;
                uint32_t nargs;
                if (!parse_args(p, &args, &nargs))
                    return NULL;
                n = macro_or_call(p, pos, p->s + id.pos, id.len, n, args, nargs);
                continue;
            }
            cel_node *s = mk(p, N_SELECT, dotpos);
            if (!s)
                return NULL;
            s->a = n;
            if (id.t == TOK_ESC_IDENT) {
                s->name = p->s + id.pos + 1;
                s->nlen = id.len - 2;
            } else {
                s->name = p->s + id.pos;
                s->nlen = id.len;
            }
            if (!grow(p, s, n))
                return NULL;
            n = s;
        } else if (p->t.t == TOK_LBRACKET) {
            uint32_t pos = p->t.pos;
            next(p);
            if (p->t.t == TOK_QUESTION) {
                fail_at(p, p->t.pos, "optional syntax ([?k]) is not supported by draengine");
                return NULL;
            }
            cel_node *idx = parse_expr(p);
            if (!idx)
                return NULL;
            if (!expect(p, TOK_RBRACKET, "']'"))
                return NULL;
            n = mkbin(p, pos, "_[_]", n, idx);
        } else {
            break;
        }
    }
    return p->failed ? NULL : n;
}

static cel_node *parse_member(P *p)
{
    return parse_member_tail(p, parse_primary(p));
}

/* The operand of '!' or '-': a member, which may start with a signed
 * numeric literal (`!-1`). */
static cel_node *parse_unary_member(P *p)
{
    if (p->t.t == TOK_MINUS) {
        cel_token nx = peek(p);
        if (nx.t == TOK_INT || nx.t == TOK_DOUBLE) {
            uint32_t sp = p->t.pos;
            next(p);
            cel_token t = p->t;
            next(p);
            cel_node *lit = t.t == TOK_INT ? lit_int(p, t, true, sp) : lit_double(p, t, true, sp);
            return parse_member_tail(p, lit);
        }
    }
    return parse_member(p);
}

/* Positions of a run of prefix operators, kept in the arena so a long run
 * costs no stack. */
typedef struct oprun {
    uint32_t *pos;
    int n, cap;
} oprun;

static bool oprun_push(P *p, oprun *r, uint32_t pos)
{
    if (r->n == MAX_HEIGHT) {
        fail_at(p, pos, "expression recursion limit exceeded: %d", MAX_HEIGHT);
        return false;
    }
    if (r->n == r->cap) {
        int nc = r->cap ? r->cap * 2 : 8;
        uint32_t *np = de_arena_alloc(p->a, (size_t)nc * sizeof *np);
        if (!np) {
            fail_at(p, pos, "expression too large");
            return false;
        }
        if (r->n)
            memcpy(np, r->pos, (size_t)r->n * sizeof *np);
        r->pos = np;
        r->cap = nc;
    }
    r->pos[r->n++] = pos;
    return true;
}

static cel_node *apply_prefix(P *p, oprun *r, const char *fn, cel_node *m)
{
    while (m && r->n > 0) {
        cel_node **args = de_arena_alloc(p->a, sizeof *args);
        if (!args) {
            fail_at(p, m->pos, "expression too large");
            return NULL;
        }
        args[0] = m;
        m = mkcall(p, r->pos[--r->n], fn, NULL, args, 1);
    }
    return m;
}

static cel_node *parse_unary(P *p)
{
    oprun r = {0};
    if (p->t.t == TOK_NOT) {
        while (p->t.t == TOK_NOT) {
            if (!oprun_push(p, &r, p->t.pos))
                return NULL;
            next(p);
        }
        return apply_prefix(p, &r, "!_", parse_unary_member(p));
    }
    if (p->t.t == TOK_MINUS) {
        while (p->t.t == TOK_MINUS) {
            cel_token nx = peek(p);
            if (nx.t == TOK_INT || nx.t == TOK_DOUBLE)
                return apply_prefix(p, &r, "-_", parse_unary_member(p));
            if (!oprun_push(p, &r, p->t.pos))
                return NULL;
            next(p);
        }
        return apply_prefix(p, &r, "-_", parse_unary_member(p));
    }
    return parse_member(p);
}

static cel_node *parse_mul(P *p)
{
    cel_node *l = parse_unary(p);
    while (l && (p->t.t == TOK_STAR || p->t.t == TOK_SLASH || p->t.t == TOK_PERCENT)) {
        cel_token op = p->t;
        next(p);
        cel_node *r = parse_unary(p);
        if (!r)
            return NULL;
        l = mkbin(p, op.pos, op.t == TOK_STAR ? "_*_" : op.t == TOK_SLASH ? "_/_" : "_%_", l, r);
    }
    return l;
}

static cel_node *parse_add(P *p)
{
    cel_node *l = parse_mul(p);
    while (l && (p->t.t == TOK_PLUS || p->t.t == TOK_MINUS)) {
        cel_token op = p->t;
        next(p);
        cel_node *r = parse_mul(p);
        if (!r)
            return NULL;
        l = mkbin(p, op.pos, op.t == TOK_PLUS ? "_+_" : "_-_", l, r);
    }
    return l;
}

static const char *rel_name(cel_tok t)
{
    switch (t) {
    case TOK_LT: return "_<_";
    case TOK_LE: return "_<=_";
    case TOK_GT: return "_>_";
    case TOK_GE: return "_>=_";
    case TOK_EQ: return "_==_";
    case TOK_NE: return "_!=_";
    case TOK_IN: return "@in";
    default: return NULL;
    }
}

static cel_node *parse_rel(P *p)
{
    cel_node *l = parse_add(p);
    const char *fn;
    while (l && (fn = rel_name(p->t.t)) != NULL) {
        cel_token op = p->t;
        next(p);
        cel_node *r = parse_add(p);
        if (!r)
            return NULL;
        l = mkbin(p, op.pos, fn, l, r);
    }
    return l;
}

/* Balanced tree over terms[lo, hi) joined by ops[lo .. hi-2] positions. */
static cel_node *balance(P *p, int kind, cel_node **terms, uint32_t *ops, size_t lo, size_t hi)
{
    if (hi - lo == 1)
        return terms[lo];
    size_t mid = (lo + hi + 1) / 2;
    cel_node *l = balance(p, kind, terms, ops, lo, mid);
    cel_node *r = balance(p, kind, terms, ops, mid, hi);
    if (!l || !r)
        return NULL;
    cel_node *n = mk(p, kind, ops[mid - 1]);
    if (!n)
        return NULL;
    n->a = l;
    n->b = r;
    grow(p, n, l);
    grow(p, n, r);
    return p->failed ? NULL : n;
}

static cel_node *parse_logic(P *p, int kind)
{
    cel_tok optok = kind == N_AND ? TOK_AND : TOK_OR;
    cel_node *first = kind == N_AND ? parse_rel(p) : parse_logic(p, N_AND);
    if (!first || p->t.t != optok)
        return first;
    size_t cap = 16, n = 0;
    cel_node **terms = de_arena_alloc(p->a, cap * sizeof *terms);
    uint32_t *ops = de_arena_alloc(p->a, cap * sizeof *ops);
    if (!terms || !ops) {
        fail_at(p, p->t.pos, "expression too large");
        return NULL;
    }
    terms[n++] = first;
    while (p->t.t == optok) {
        if (n == cap) {
            cel_node **nt = de_arena_alloc(p->a, 2 * cap * sizeof *nt);
            uint32_t *no = de_arena_alloc(p->a, 2 * cap * sizeof *no);
            if (!nt || !no) {
                fail_at(p, p->t.pos, "expression too large");
                return NULL;
            }
            memcpy(nt, terms, n * sizeof *nt);
            memcpy(no, ops, n * sizeof *no);
            terms = nt;
            ops = no;
            cap *= 2;
        }
        ops[n - 1] = p->t.pos;
        next(p);
        cel_node *t = kind == N_AND ? parse_rel(p) : parse_logic(p, N_AND);
        if (!t)
            return NULL;
        terms[n++] = t;
    }
    return balance(p, kind, terms, ops, 0, n);
}

static cel_node *parse_expr(P *p)
{
    if (++p->depth > MAX_DEPTH) {
        fail_at(p, p->t.pos, "expression recursion limit exceeded: %d", MAX_DEPTH);
        return NULL;
    }
    cel_node *c = parse_logic(p, N_OR);
    if (c && p->t.t == TOK_QUESTION) {
        uint32_t pos = p->t.pos;
        next(p);
        cel_node *t = parse_logic(p, N_OR);
        if (!t || !expect(p, TOK_COLON, "':'")) {
            p->depth--;
            return NULL;
        }
        cel_node *f = parse_expr(p);
        if (!f) {
            p->depth--;
            return NULL;
        }
        cel_node *n = mk(p, N_COND, pos);
        if (n) {
            n->a = c;
            n->b = t;
            n->c = f;
            grow(p, n, c);
            grow(p, n, t);
            grow(p, n, f);
        }
        c = p->failed ? NULL : n;
    }
    p->depth--;
    return p->failed ? NULL : c;
}

de_rc cel_parse(const char *text, size_t len, de_arena *a, cel_node **out, de_err *e)
{
    P p = {.s = text, .n = len, .a = a, .e = e};
    cel_lex_init(&p.lx, text, len);
    next(&p);
    cel_node *root = parse_expr(&p);
    if (root && !p.failed && p.t.t != TOK_EOF)
        syntax_error(&p, "<EOF>");
    if (p.failed || !root) {
        if (!p.failed)
            fail_at(&p, p.t.pos, "Syntax error");
        return DE_EPARSE;
    }
    *out = root;
    return DE_OK;
}
