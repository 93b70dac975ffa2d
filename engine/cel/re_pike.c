/*
 * re_pike.c - the fallback matcher's NFA program and Pike VM (re_nfa.h).
 *
 * The tree from re_parse.c is compiled the way RE2 compiles it: x{n,m}
 * becomes n copies of x followed by m-n nested optional copies
 * (x{2,4} = xx(x(x)?)?), x{n,} becomes n-1 copies and x+, and x* whose x can
 * match the empty string is compiled as (x+)? so that an iteration that
 * prefers the empty string ends the loop, as in Perl (RE2 and Go fixed this
 * in 2021: (|a)* matches "" at 0, not "aa").  Every alternative of a SPLIT
 * is ordered by priority: greedy operators prefer to go on, lazy ones to
 * stop.
 *
 * The VM keeps one thread per program counter in priority order (a sparse
 * set), each remembering where its match started.  Epsilon moves are
 * followed depth first at insertion, so the order of a list is the order a
 * backtracker would try the threads.  A new thread starts at every position
 * with the lowest priority until a match is found; a thread that reaches
 * MATCH records it and cuts every lower-priority thread, and the scan goes
 * on while higher-priority threads live.  That is leftmost-first: the
 * leftmost start, and among matches from it the one a backtracker finds
 * first.  Only the whole match is tracked; CEL never returns groups.
 *
 * Bounds: at most MAX_INST instructions (compile stops as soon as it would
 * need more, or after MAX_VISITS tree nodes when copies emit nothing, so
 * compile time is bounded too), and a search does at most
 * WORK_BUDGET thread steps before it reports -1; both are counts, never
 * clocks, so results are deterministic.  Scratch space for the thread lists
 * is allocated once per program.
 */
#include "re_nfa.h"

#include "../base/de.h"

#include <stdlib.h>
#include <string.h>

#define MAX_INST 20000u
#define MAX_VISITS (16u * MAX_INST)
#define WORK_BUDGET 100000000ull

enum { OP_CHAR, OP_CLASS, OP_ANY, OP_ANYNL, OP_SPLIT, OP_JMP, OP_ASSERT, OP_MATCH };

typedef struct inst {
    uint8_t op;
    uint32_t x, y; /* CHAR code point, CLASS index, ASSERT kind, SPLIT/JMP targets (x first) */
} inst;

typedef struct tlist {
    uint32_t *dense; /* program counters in priority order */
    uint32_t *sparse;
    size_t *start;   /* where each thread's match started */
    uint32_t n;
} tlist;

struct cel_re_nfa {
    inst *code;
    uint32_t len, cap;
    cel_re_class *cls;
    uint32_t ncls;
    bool anchored; /* starts with \A: only a thread at offset 0 can match */
    tlist list[2];
    uint32_t *stack;
};

/* ---- compile --------------------------------------------------------------------------- */

typedef struct G {
    cel_re_nfa *p;
    const cel_re_ast *ast;
    int8_t *nullable; /* per node: -1 not known yet, else 0/1 */
    uint64_t visits;  /* emit() calls: (((?:){1000}){1000}){1000} emits nothing */
    bool full;
} G;

static uint32_t add(G *g, int op, uint32_t x, uint32_t y)
{
    cel_re_nfa *p = g->p;
    if (p->len >= MAX_INST) {
        g->full = true;
        return 0;
    }
    if (p->len == p->cap) {
        p->cap = p->cap ? p->cap * 2 : 64;
        p->code = de_xrealloc(p->code, p->cap * sizeof *p->code);
    }
    p->code[p->len] = (inst){(uint8_t)op, x, y};
    return p->len++;
}

/* Point the preferred (or the other) branch of SPLIT at pc to target. */
static void patch(G *g, uint32_t at, bool preferred, uint32_t target)
{
    if (g->full)
        return;
    if (preferred)
        g->p->code[at].x = target;
    else
        g->p->code[at].y = target;
}

/* Can node x match the empty string?  Memoised, so the repeated copies of
 * x{n,m} cost nothing. */
static bool nullable(G *g, int32_t x)
{
    if (g->nullable[x] >= 0)
        return g->nullable[x];
    const cel_re_ast *a = g->ast;
    const cel_re_node *nd = &a->node[x];
    bool r = false;
    switch (nd->op) {
    case CEL_RN_EMPTY:
    case CEL_RN_ASSERT: r = true; break;
    case CEL_RN_CAT:
        r = true;
        for (int32_t k = nd->kid; k >= 0 && r; k = a->node[k].next)
            r = nullable(g, k);
        break;
    case CEL_RN_ALT:
        for (int32_t k = nd->kid; k >= 0 && !r; k = a->node[k].next)
            r = nullable(g, k);
        break;
    case CEL_RN_REP: r = nd->min == 0 || nullable(g, nd->kid); break;
    default: break;
    }
    g->nullable[x] = r;
    return r;
}

static void emit(G *g, int32_t x);

/* SPLIT whose continuing branch is the next instruction and whose exit is patched
 * later: greedy prefers to continue. */
static uint32_t split_fwd(G *g, bool greedy)
{
    uint32_t s = add(g, OP_SPLIT, 0, 0);
    patch(g, s, greedy, s + 1);
    return s;
}

/* body+ : body, then a SPLIT back to its start or on. */
static void emit_plus(G *g, int32_t kid, bool greedy)
{
    uint32_t top = g->p->len;
    emit(g, kid);
    uint32_t s = add(g, OP_SPLIT, 0, 0);
    patch(g, s, greedy, top);
    patch(g, s, !greedy, s + 1);
}

static void emit_star(G *g, int32_t kid, bool greedy)
{
    if (nullable(g, kid)) { /* (kid+)? */
        uint32_t s = split_fwd(g, greedy);
        emit_plus(g, kid, greedy);
        patch(g, s, !greedy, g->p->len);
        return;
    }
    uint32_t s = split_fwd(g, greedy);
    emit(g, kid);
    add(g, OP_JMP, s, 0);
    patch(g, s, !greedy, g->p->len);
}

static void emit_rep(G *g, const cel_re_node *nd)
{
    int32_t kid = nd->kid, min = nd->min, max = nd->max;
    bool greedy = nd->greedy;
    if (max < 0) {
        if (min == 0) {
            emit_star(g, kid, greedy);
            return;
        }
        for (int32_t i = 0; i < min - 1 && !g->full; i++)
            emit(g, kid);
        emit_plus(g, kid, greedy);
        return;
    }
    for (int32_t i = 0; i < min && !g->full; i++)
        emit(g, kid);
    if (max <= min)
        return;
    /* (x(x(x)?)?)?: every optional copy skips to the same end */
    uint32_t nsplit = (uint32_t)(max - min);
    uint32_t *splits = de_xmalloc(nsplit * sizeof *splits);
    for (uint32_t i = 0; i < nsplit && !g->full; i++) {
        splits[i] = split_fwd(g, greedy);
        emit(g, kid);
    }
    for (uint32_t i = 0; i < nsplit && !g->full; i++)
        patch(g, splits[i], !greedy, g->p->len);
    free(splits);
}

static void emit(G *g, int32_t x)
{
    if (g->full || ++g->visits > MAX_VISITS) {
        g->full = true;
        return;
    }
    const cel_re_ast *a = g->ast;
    const cel_re_node *nd = &a->node[x];
    switch (nd->op) {
    case CEL_RN_EMPTY: return;
    case CEL_RN_CHAR: add(g, OP_CHAR, nd->arg, 0); return;
    case CEL_RN_CLASS: add(g, OP_CLASS, nd->arg, 0); return;
    case CEL_RN_ANY: add(g, OP_ANY, 0, 0); return;
    case CEL_RN_ANYNL: add(g, OP_ANYNL, 0, 0); return;
    case CEL_RN_ASSERT: add(g, OP_ASSERT, nd->arg, 0); return;
    case CEL_RN_CAT:
        for (int32_t k = nd->kid; k >= 0 && !g->full; k = a->node[k].next)
            emit(g, k);
        return;
    case CEL_RN_ALT: {
        /* SPLIT to this branch or the next; each branch but the last jumps to the
         * end.  The jumps are chained through their x field until patched. */
        uint32_t chain = UINT32_MAX;
        for (int32_t k = nd->kid; k >= 0 && !g->full; k = a->node[k].next) {
            if (a->node[k].next < 0) {
                emit(g, k);
                break;
            }
            uint32_t s = split_fwd(g, true);
            emit(g, k);
            uint32_t j = add(g, OP_JMP, chain, 0);
            chain = j;
            patch(g, s, false, g->p->len);
        }
        uint32_t end = g->p->len;
        while (!g->full && chain != UINT32_MAX) {
            uint32_t nx = g->p->code[chain].x;
            g->p->code[chain].x = end;
            chain = nx;
        }
        return;
    }
    case CEL_RN_REP: emit_rep(g, nd); return;
    default: g->full = true; return;
    }
}

static bool starts_anchored(const cel_re_ast *a, int32_t x)
{
    const cel_re_node *nd = &a->node[x];
    if (nd->op == CEL_RN_ASSERT)
        return nd->arg == CEL_RA_BEGIN_TEXT;
    if (nd->op == CEL_RN_CAT && nd->kid >= 0)
        return starts_anchored(a, nd->kid);
    return false;
}

cel_re_nfa *cel_re_nfa_compile(const char *pat, size_t n, const char **why)
{
    cel_re_ast ast = {0};
    if (!cel_re_nfa_parse(pat, n, &ast, why)) {
        cel_re_ast_free(&ast, false);
        return NULL;
    }
    cel_re_nfa *p = de_xcalloc(1, sizeof *p);
    G g = {.p = p, .ast = &ast};
    g.nullable = de_xmalloc(ast.nnode);
    memset(g.nullable, -1, ast.nnode);
    emit(&g, ast.root);
    add(&g, OP_MATCH, 0, 0);
    free(g.nullable);
    if (g.full) {
        *why = "pattern too large for the fallback matcher";
        cel_re_ast_free(&ast, false);
        free(p->code);
        free(p);
        return NULL;
    }
    p->anchored = starts_anchored(&ast, ast.root);
    p->cls = ast.cls;
    p->ncls = ast.ncls;
    cel_re_ast_free(&ast, true);
    for (int k = 0; k < 2; k++) {
        p->list[k].dense = de_xmalloc(p->len * sizeof(uint32_t));
        p->list[k].sparse = de_xcalloc(p->len, sizeof(uint32_t));
        p->list[k].start = de_xmalloc(p->len * sizeof(size_t));
    }
    p->stack = de_xmalloc((2 * (size_t)p->len + 2) * sizeof *p->stack);
    return p;
}

void cel_re_nfa_free(cel_re_nfa *p)
{
    if (!p)
        return;
    for (uint32_t i = 0; i < p->ncls; i++)
        cel_re_class_free(&p->cls[i]);
    free(p->cls);
    for (int k = 0; k < 2; k++) {
        free(p->list[k].dense);
        free(p->list[k].sparse);
        free(p->list[k].start);
    }
    free(p->stack);
    free(p->code);
    free(p);
}

/* ---- run ------------------------------------------------------------------------------- */

static bool is_word(const char *s, size_t n, size_t i, bool before)
{
    if (before ? i == 0 : i >= n)
        return false;
    unsigned char c = (unsigned char)s[before ? i - 1 : i];
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool assert_ok(uint32_t kind, const char *s, size_t n, size_t i)
{
    switch (kind) {
    case CEL_RA_BEGIN_TEXT: return i == 0;
    case CEL_RA_END_TEXT: return i == n;
    case CEL_RA_BEGIN_LINE: return i == 0 || s[i - 1] == '\n';
    case CEL_RA_END_LINE: return i == n || s[i] == '\n';
    case CEL_RA_WORD: return is_word(s, n, i, true) != is_word(s, n, i, false);
    case CEL_RA_NOT_WORD: return is_word(s, n, i, true) == is_word(s, n, i, false);
    default: return false;
    }
}

static bool on_list(const tlist *l, uint32_t pc)
{
    uint32_t k = l->sparse[pc];
    return k < l->n && l->dense[k] == pc;
}

/* Add the thread (pc, start) at offset i and everything its epsilon moves reach, in
 * priority order.  Epsilon instructions stay on the list as visited marks. */
static void add_thread(cel_re_nfa *p, tlist *l, uint32_t pc0, size_t start, const char *s,
                       size_t n, size_t i, uint64_t *work)
{
    uint32_t *stk = p->stack;
    size_t sp = 0;
    stk[sp++] = pc0;
    while (sp) {
        uint32_t pc = stk[--sp];
        if (on_list(l, pc))
            continue;
        l->sparse[pc] = l->n;
        l->dense[l->n] = pc;
        l->start[l->n++] = start;
        (*work)++;
        const inst *in = &p->code[pc];
        switch (in->op) {
        case OP_JMP: stk[sp++] = in->x; break;
        case OP_SPLIT:
            stk[sp++] = in->y;
            stk[sp++] = in->x;
            break;
        case OP_ASSERT:
            if (assert_ok(in->x, s, n, i))
                stk[sp++] = pc + 1;
            break;
        default: break;
        }
    }
}

int cel_re_nfa_search(cel_re_nfa *p, const char *s, size_t n, size_t start, bool first,
                      size_t *ms, size_t *me)
{
    tlist *cl = &p->list[0], *nl = &p->list[1];
    cl->n = 0;
    bool matched = false;
    uint64_t work = 0;
    size_t i = start;
    for (;;) {
        if (!matched && (!p->anchored || i == 0))
            add_thread(p, cl, 0, i, s, n, i, &work);
        uint32_t cp = 0;
        size_t w = i < n ? cel_re_utf8_dec(s, n, i, &cp) : 0;
        nl->n = 0;
        bool cut = false;
        for (uint32_t k = 0; k < cl->n && !cut; k++) {
            const inst *in = &p->code[cl->dense[k]];
            bool step = false;
            switch (in->op) {
            case OP_MATCH:
                matched = true;
                *ms = cl->start[k];
                *me = i;
                if (first)
                    return 1;
                cut = true; /* drop every lower-priority thread */
                break;
            case OP_CHAR: step = w && cp == in->x; break;
            case OP_CLASS: step = w && cel_re_class_has(&p->cls[in->x], cp); break;
            case OP_ANY: step = w; break;
            case OP_ANYNL: step = w && cp != '\n'; break;
            default: break;
            }
            work++;
            if (step)
                add_thread(p, nl, cl->dense[k] + 1, cl->start[k], s, n, i + w, &work);
        }
        tlist *t = cl;
        cl = nl;
        nl = t;
        if (i >= n || (cl->n == 0 && (matched || p->anchored)))
            break;
        if (work > WORK_BUDGET)
            return -1;
        i += w;
    }
    return matched;
}
