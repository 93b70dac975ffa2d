/*
 * regex.c - CEL regular expressions: RE2 syntax, executed by PCRE2.
 *
 * CEL (and Kubernetes) use RE2, whose syntax is a subset of PCRE's.  Every
 * pattern is first walked by an RE2 syntax checker that refuses what RE2
 * refuses - backreferences, lookaround, atomic groups, possessive or nested
 * quantifiers, recursion, conditionals, \C and other Perl-only escapes,
 * repeat counts above 1000, alone or multiplied by nested counts
 * (rep_product) - and rewrites the few constructs whose meaning
 * differs (octal escapes, \v, \s outside classes, a literal '{') into
 * their PCRE2 spelling ($ outside (?m) becomes \z: RE2's end of text).
 * PCRE2 then compiles it in UTF mode with LF as the only newline (and, as
 * in RE2, (?m)^ also matching after a newline that ends the text), and JIT
 * compiles it when it can.
 *
 * Backtracking cannot run away: every match runs under a match limit, a
 * depth limit and a heap limit (1,000,000 steps is about a millisecond
 * with the JIT).  A match that hits one of them is run again by our own
 * linear-time matcher (re_nfa.h: a Pike VM with RE2's leftmost-first
 * semantics), whose answer is what RE2 - and so Kubernetes - returns.
 * Only when that matcher cannot take the pattern (an unsupported construct,
 * a program over its size cap) or runs out of its own work budget is the
 * match an evaluation error.  Both engines' limits count steps, never time,
 * so which engine answers is deterministic.  PCRE2's DFA matcher is not
 * used: its state sets explode on nested quantifiers, and it returns the
 * longest match, not RE2's leftmost-first one.
 *
 * Compiled patterns are cached per thread by pattern text (256 entries,
 * direct-mapped on the hash; a colliding pattern replaces the old entry).
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "cel_int.h"
#include "re_nfa.h"
#include "../base/utf8.h"

#include <pcre2.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CACHE_SLOTS 256
#define MATCH_LIMIT 1000000u
#define DEPTH_LIMIT 10000u
#define HEAP_LIMIT_KIB 16384u
#define MAX_REPEAT 1000
#define JIT_STACK (1u << 20)

struct cel_re {
    char *pat;
    size_t n;
    uint64_t hash;
    pcre2_code *code;
    pcre2_match_data *md;
    cel_re_nfa *nfa;   /* the fallback program, compiled on first need */
    bool nfa_refused;  /* the fallback cannot take this pattern */
};

typedef struct re_cache {
    cel_re *slot[CACHE_SLOTS];
    pcre2_match_context *mctx;
    pcre2_compile_context *cctx;
    pcre2_jit_stack *jit;
} re_cache;

static pthread_key_t cache_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
/* Test knob and counter (cel_re_test_knob); they outlive cache clears. */
static _Thread_local bool force_fallback;
static _Thread_local uint64_t fallbacks;

static void re_free(cel_re *r)
{
    if (!r)
        return;
    pcre2_match_data_free(r->md);
    pcre2_code_free(r->code);
    cel_re_nfa_free(r->nfa);
    free(r->pat);
    free(r);
}

static void cache_free(void *p)
{
    re_cache *c = p;
    if (!c)
        return;
    for (int i = 0; i < CACHE_SLOTS; i++)
        re_free(c->slot[i]);
    pcre2_match_context_free(c->mctx);
    pcre2_compile_context_free(c->cctx);
    pcre2_jit_stack_free(c->jit);
    free(c);
}

static void make_key(void) { pthread_key_create(&cache_key, cache_free); }

static re_cache *cache(void)
{
    pthread_once(&key_once, make_key);
    re_cache *c = pthread_getspecific(cache_key);
    if (!c) {
        c = de_xcalloc(1, sizeof *c);
        c->mctx = pcre2_match_context_create(NULL);
        pcre2_set_match_limit(c->mctx, MATCH_LIMIT);
        pcre2_set_depth_limit(c->mctx, DEPTH_LIMIT);
        pcre2_set_heap_limit(c->mctx, HEAP_LIMIT_KIB);
        c->cctx = pcre2_compile_context_create(NULL);
        pcre2_set_newline(c->cctx, PCRE2_NEWLINE_LF);
        pcre2_set_max_pattern_length(c->cctx, 64 * 1024);
        c->jit = pcre2_jit_stack_create(32 * 1024, JIT_STACK, NULL);
        if (c->jit)
            pcre2_jit_stack_assign(c->mctx, NULL, c->jit);
        pthread_setspecific(cache_key, c);
    }
    return c;
}

void cel_re_cache_clear(void)
{
    pthread_once(&key_once, make_key);
    re_cache *c = pthread_getspecific(cache_key);
    if (c) {
        pthread_setspecific(cache_key, NULL);
        cache_free(c);
    }
}

/* ---- RE2 syntax check and translation -------------------------------------------------- */

typedef struct tr {
    const char *p;
    size_t n, i;
    de_buf out;
    char *why;
    size_t whycap;
    bool failed;
} tr;

static bool tfail(tr *t, const char *fmt, const char *what, size_t wn)
{
    if (!t->failed) {
        t->failed = true;
        char w[64];
        snprintf(w, sizeof w, "%.*s", (int)(wn < 40 ? wn : 40), what);
        char m[256];
        snprintf(m, sizeof m, fmt, w);
        snprintf(t->why, t->whycap, "error parsing regexp: %s", m);
    }
    return false;
}

static bool is_hex(int c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static bool is_alnum(int c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* Translate one escape at t->i (pointing at the backslash). */
static bool escape(tr *t, bool in_class)
{
    const char *p = t->p;
    size_t st = t->i;
    if (st + 1 >= t->n)
        return tfail(t, "trailing backslash at end of expression%s", "", 0);
    char c = p[st + 1];
    t->i = st + 2;
    if (c >= '1' && c <= '7' && !(st + 2 < t->n && p[st + 2] >= '0' && p[st + 2] <= '7'))
        return tfail(t, "invalid escape sequence: `%s`", p + st, 2);
    if (c >= '0' && c <= '7') {
        unsigned v = (unsigned)(c - '0');
        for (int k = 0; k < 2 && t->i < t->n && p[t->i] >= '0' && p[t->i] <= '7'; k++)
            v = v * 8 + (unsigned)(p[t->i++] - '0');
        de_buf_printf(&t->out, "\\x{%x}", v);
        return true;
    }
    switch (c) {
    case 'a': de_buf_puts(&t->out, "\\x{7}"); return true;
    case 'v': de_buf_puts(&t->out, "\\x{b}"); return true;
    case 'f': case 't': case 'n': case 'r': case 'd': case 'D': case 'w': case 'W':
        de_buf_putc(&t->out, '\\');
        de_buf_putc(&t->out, c);
        return true;
    case 's':
        de_buf_puts(&t->out, in_class ? "\\t\\n\\f\\r " : "[\\t\\n\\f\\r ]");
        return true;
    case 'S':
        de_buf_puts(&t->out, in_class ? "\\S" : "[^\\t\\n\\f\\r ]");
        return true;
    case 'b': case 'B': case 'A': case 'z':
        if (in_class)
            return tfail(t, "invalid escape sequence: `%s`", p + st, 2);
        de_buf_putc(&t->out, '\\');
        de_buf_putc(&t->out, c);
        return true;
    case 'x': {
        if (t->i < t->n && p[t->i] == '{') {
            size_t j = t->i + 1;
            unsigned long v = 0;
            size_t nd = 0;
            while (j < t->n && is_hex((unsigned char)p[j]) && nd < 9) {
                v = v * 16 + (unsigned long)(p[j] <= '9' ? p[j] - '0' : (p[j] | 0x20) - 'a' + 10);
                j++;
                nd++;
            }
            if (!nd || j >= t->n || p[j] != '}' || v > 0x10FFFF)
                return tfail(t, "invalid escape sequence: `%s`", p + st, j - st + 1);
            t->i = j + 1;
            de_buf_printf(&t->out, "\\x{%lx}", v);
            return true;
        }
        if (t->i + 1 < t->n && is_hex((unsigned char)p[t->i]) && is_hex((unsigned char)p[t->i + 1])) {
            de_buf_printf(&t->out, "\\x{%.2s}", p + t->i);
            t->i += 2;
            return true;
        }
        return tfail(t, "invalid escape sequence: `%s`", p + st, 2);
    }
    case 'p': case 'P': {
        size_t j = t->i;
        if (j < t->n && p[j] == '{') {
            while (j < t->n && p[j] != '}')
                j++;
            if (j >= t->n)
                return tfail(t, "invalid character class range: `%s`", p + st, j - st);
            j++;
        } else if (j < t->n && ((p[j] >= 'A' && p[j] <= 'Z') || (p[j] >= 'a' && p[j] <= 'z'))) {
            j++;
        } else {
            return tfail(t, "invalid character class range: `%s`", p + st, 2);
        }
        de_buf_add(&t->out, p + st, j - st);
        t->i = j;
        return true;
    }
    case 'Q': {
        size_t j = t->i;
        while (j + 1 < t->n && !(p[j] == '\\' && p[j + 1] == 'E'))
            j++;
        size_t end = (j + 1 < t->n) ? j : t->n;
        for (size_t k = t->i; k < end; k++) {
            if (!is_alnum((unsigned char)p[k]) && (unsigned char)p[k] < 0x80)
                de_buf_putc(&t->out, '\\');
            de_buf_putc(&t->out, p[k]);
        }
        t->i = (j + 1 < t->n) ? j + 2 : t->n;
        return true;
    }
    default:
        if ((unsigned char)c < 0x80 && !is_alnum((unsigned char)c)) {
            de_buf_putc(&t->out, '\\');
            de_buf_putc(&t->out, c);
            return true;
        }
        return tfail(t, "invalid escape sequence: `%s`", p + st, 2);
    }
}

static bool char_class(tr *t)
{
    const char *p = t->p;
    size_t st = t->i;
    t->i++;
    de_buf_putc(&t->out, '[');
    if (t->i < t->n && p[t->i] == '^') {
        de_buf_putc(&t->out, '^');
        t->i++;
    }
    bool first = true;
    for (;;) {
        if (t->i >= t->n)
            return tfail(t, "missing closing ]: `%s`", p + st, t->n - st);
        char c = p[t->i];
        if (c == ']' && !first) {
            t->i++;
            de_buf_putc(&t->out, ']');
            return true;
        }
        first = false;
        if (c == '[' && t->i + 1 < t->n && p[t->i + 1] == ':') {
            /* POSIX class [:name:] / [:^name:] */
            const char *e = NULL;
            for (size_t j = t->i + 2; j + 1 < t->n; j++)
                if (p[j] == ':' && p[j + 1] == ']') {
                    e = p + j;
                    break;
                }
            if (!e)
                return tfail(t, "invalid character class range: `%s`", p + t->i, 2);
            size_t len = (size_t)(e - (p + t->i)) + 2;
            de_buf_add(&t->out, p + t->i, len);
            t->i += len;
            continue;
        }
        if (c == '\\') {
            if (!escape(t, true))
                return false;
            continue;
        }
        if (c == '[') {
            de_buf_puts(&t->out, "\\[");
            t->i++;
            continue;
        }
        de_buf_putc(&t->out, c);
        t->i++;
    }
}

/* {n}, {n,}, {n,m} at t->i: 1 = repeat (*lo, *hi = n, m; m = -1 when open
 * ended), 0 = not a repeat (literal '{'). */
static int repeat(tr *t, size_t *len, long *lo, long *hi)
{
    const char *p = t->p;
    size_t j = t->i + 1;
    long a = -1, b = -1;
    size_t d = 0;
    long v = 0;
    while (j < t->n && p[j] >= '0' && p[j] <= '9') {
        if (v < 100000)
            v = v * 10 + (p[j] - '0');
        j++;
        d++;
    }
    if (!d)
        return 0;
    a = v;
    if (j < t->n && p[j] == ',') {
        j++;
        v = 0;
        d = 0;
        while (j < t->n && p[j] >= '0' && p[j] <= '9') {
            if (v < 100000)
                v = v * 10 + (p[j] - '0');
            j++;
            d++;
        }
        b = d ? v : -2; /* -2: open ended */
    } else {
        b = a;
    }
    if (j >= t->n || p[j] != '}')
        return 0;
    *len = j + 1 - t->i;
    if (a > MAX_REPEAT || b > MAX_REPEAT || (b >= 0 && b < a)) {
        tfail(t, "invalid repeat count: `%s`", p + t->i, *len);
        return -1;
    }
    *lo = a;
    *hi = b < 0 ? -1 : b;
    return 1;
}

/* Nested repetition: RE2 and Go refuse a counted repetition whose copies of
 * the innermost thing multiply past 1000 along any path of nested counted
 * repetitions, e.g. (a{1,1000}){20} (Go's repeatIsValid, RE2's
 * RepetitionWalker), with "invalid repeat count" naming the outer operator.
 * A count contributes its maximum (its minimum when open ended), {0} ends
 * the path, and * + ? contribute nothing.  As Go does, only a repetition
 * whose minimum or maximum is at least 2 is checked; any other multiplies
 * by at most 1.  The translator keeps, per open group, the largest product
 * of what the group holds so far (gw) and the product of the item a
 * repetition would apply to (last), saturated just past the limit. */
static uint32_t rep_product(uint32_t w, long lo, long hi)
{
    if (hi == 0)
        return 1;
    long m = hi < 0 ? lo : hi;
    uint64_t p = (uint64_t)w * (uint64_t)(m > 0 ? m : 1);
    return p > MAX_REPEAT ? MAX_REPEAT + 1 : (uint32_t)p;
}

#define MAX_GROUP_DEPTH 1000

/* A new item starts in the group at depth: the last one's product counts
 * for the group, and `next` becomes the last (0 when nothing can repeat). */
static void fold(uint32_t *gw, int depth, uint32_t *last, uint32_t next)
{
    if (*last > gw[depth])
        gw[depth] = *last;
    *last = next;
}

static bool translate(tr *t)
{
    const char *p = t->p;
    int depth = 0;
    /* (?m) per group level: decides what '$' means */
    static _Thread_local bool mflag[MAX_GROUP_DEPTH + 1];
    /* repetition products (rep_product): the group's largest so far, and
     * the last item's (0: none - nothing a repetition could apply to) */
    static _Thread_local uint32_t gw[MAX_GROUP_DEPTH + 1];
    uint32_t last = 0;
    mflag[0] = false;
    gw[0] = 1;
    bool can_repeat = false;  /* an atom precedes */
    bool after_repeat = false; /* the last item was a repetition */
    while (t->i < t->n && !t->failed) {
        char c = p[t->i];
        switch (c) {
        case '\\':
            if (!escape(t, false))
                return false;
            fold(gw, depth, &last, 1);
            can_repeat = true;
            after_repeat = false;
            break;
        case '[':
            if (!char_class(t))
                return false;
            fold(gw, depth, &last, 1);
            can_repeat = true;
            after_repeat = false;
            break;
        case '(': {
            size_t st = t->i;
            fold(gw, depth, &last, 0);
            if (t->i + 1 < t->n && p[t->i + 1] == '?') {
                size_t j = t->i + 2;
                if (j < t->n && (p[j] == '<' || (p[j] == 'P' && j + 1 < t->n && p[j + 1] == '<'))) {
                    j += p[j] == 'P' ? 2 : 1;
                    size_t ns = j;
                    while (j < t->n && (is_alnum((unsigned char)p[j]) || p[j] == '_'))
                        j++;
                    if (j == ns || j >= t->n || p[j] != '>')
                        return tfail(t, "invalid named capture: `%s`", p + st, j - st + 1);
                    de_buf_puts(&t->out, "(?<");
                    de_buf_add(&t->out, p + ns, j - ns);
                    de_buf_putc(&t->out, '>');
                    t->i = j + 1;
                } else {
                    /* flags: (?flags) or (?flags:re) */
                    size_t k = j;
                    bool neg = false, any = false, m = mflag[depth];
                    while (k < t->n && p[k] != ')' && p[k] != ':') {
                        if (p[k] == '-' && !neg) {
                            neg = true;
                        } else if (p[k] == 'i' || p[k] == 'm' || p[k] == 's' || p[k] == 'U') {
                            any = true;
                            if (p[k] == 'm')
                                m = !neg;
                        } else {
                            return tfail(t, "invalid or unsupported Perl syntax: `%s`", p + st,
                                         k - st + 1);
                        }
                        k++;
                    }
                    if (k >= t->n || (neg && p[k - 1] == '-') || (!any && p[k] == ')'))
                        return tfail(t, "invalid or unsupported Perl syntax: `%s`", p + st,
                                     (k < t->n ? k : t->n - 1) - st + 1);
                    de_buf_add(&t->out, p + st, k - st + 1);
                    t->i = k + 1;
                    if (p[k] == ')') {
                        mflag[depth] = m;
                        can_repeat = false;
                        after_repeat = false;
                        break;
                    }
                    if (depth >= MAX_GROUP_DEPTH)
                        return tfail(t, "expression nests too deeply%s", "", 0);
                    depth++;
                    mflag[depth] = m;
                    gw[depth] = 1;
                    can_repeat = false;
                    after_repeat = false;
                    break;
                }
            } else {
                de_buf_putc(&t->out, '(');
                t->i++;
            }
            if (depth >= MAX_GROUP_DEPTH)
                return tfail(t, "expression nests too deeply%s", "", 0);
            depth++;
            mflag[depth] = mflag[depth - 1];
            gw[depth] = 1;
            can_repeat = false;
            after_repeat = false;
            break;
        }
        case ')':
            if (depth == 0)
                return tfail(t, "unexpected ): `%s`", p, t->n);
            fold(gw, depth, &last, 0);
            last = gw[depth];
            depth--;
            de_buf_putc(&t->out, ')');
            t->i++;
            can_repeat = true;
            after_repeat = false;
            break;
        case '|':
            fold(gw, depth, &last, 0);
            de_buf_putc(&t->out, '|');
            t->i++;
            can_repeat = false;
            after_repeat = false;
            break;
        case '*':
        case '+':
        case '?':
        case '{': {
            size_t len = 1, st = t->i;
            long lo = 0, hi = 0;
            if (c == '{') {
                int r = repeat(t, &len, &lo, &hi);
                if (r < 0)
                    return false;
                if (r == 0) { /* literal brace */
                    fold(gw, depth, &last, 1);
                    de_buf_puts(&t->out, "\\{");
                    t->i++;
                    can_repeat = true;
                    after_repeat = false;
                    break;
                }
            }
            if (after_repeat)
                return tfail(t, "invalid nested repetition operator: `%s`", p + t->i - 1, len + 1);
            if (!can_repeat)
                return tfail(t, "missing argument to repetition operator: `%s`", p + t->i, len);
            de_buf_add(&t->out, p + t->i, len);
            t->i += len;
            if (t->i < t->n && p[t->i] == '?') { /* non-greedy */
                de_buf_putc(&t->out, '?');
                t->i++;
            }
            if (c == '{') {
                last = rep_product(last, lo, hi);
                if ((lo >= 2 || hi >= 2) && last > MAX_REPEAT)
                    return tfail(t, "invalid repeat count: `%s`", p + st, t->i - st);
            }
            after_repeat = true;
            break;
        }
        case '^':
        case '$':
            if (c == '$' && !mflag[depth])
                de_buf_puts(&t->out, "\\z");
            else
                de_buf_putc(&t->out, c);
            t->i++;
            fold(gw, depth, &last, 1);
            can_repeat = false;
            after_repeat = false;
            break;
        default:
            fold(gw, depth, &last, 1);
            de_buf_putc(&t->out, c);
            t->i++;
            while (t->i < t->n && ((unsigned char)p[t->i] & 0xC0) == 0x80)
                de_buf_putc(&t->out, p[t->i++]);
            can_repeat = true;
            after_repeat = false;
            break;
        }
    }
    if (t->failed)
        return false;
    if (depth)
        return tfail(t, "missing closing ): `%s`", p, t->n);
    if (t->out.overflow)
        return tfail(t, "expression too large%s", "", 0);
    return true;
}

/* ---- compile --------------------------------------------------------------------------- */

/* RE2 text -> PCRE2 code (UTF mode, LF newlines), or NULL with a message in whybuf. */
static pcre2_code *compile_re2(re_cache *c, const char *pat, size_t n, uint32_t opts,
                               char *whybuf, size_t whycap)
{
    if (!cel_utf8_valid(pat, n)) {
        snprintf(whybuf, whycap, "error parsing regexp: invalid UTF-8: `%.*s`", (int)(n < 40 ? n : 40), pat);
        return NULL;
    }
    tr t = {.p = pat, .n = n, .why = whybuf, .whycap = whycap};
    de_buf_init(&t.out, 256 * 1024);
    if (!translate(&t)) {
        de_buf_free(&t.out);
        return NULL;
    }
    int ec;
    PCRE2_SIZE eo;
    pcre2_code *code = pcre2_compile((PCRE2_SPTR)de_buf_str(&t.out), t.out.len,
                                     PCRE2_UTF | PCRE2_NEVER_BACKSLASH_C | PCRE2_ALT_CIRCUMFLEX | opts,
                                     &ec, &eo, c->cctx);
    de_buf_free(&t.out);
    if (!code) {
        PCRE2_UCHAR msg[160];
        pcre2_get_error_message(ec, msg, sizeof msg);
        snprintf(whybuf, whycap, "error parsing regexp: %s: `%.*s`", (const char *)msg,
                 (int)(n < 60 ? n : 60), pat);
    }
    return code;
}

const cel_re *cel_re_get(const char *pat, size_t n, const char **why, char *whybuf, size_t whycap)
{
    re_cache *c = cache();
    uint64_t h = de_hash_bytes(pat, n);
    cel_re **slot = &c->slot[h % CACHE_SLOTS];
    cel_re *r = *slot;
    if (r && r->hash == h && r->n == n && !memcmp(r->pat, pat, n))
        return r;
    pcre2_code *code = compile_re2(c, pat, n, 0, whybuf, whycap);
    if (!code) {
        *why = whybuf;
        return NULL;
    }
    r = de_xcalloc(1, sizeof *r);
    r->pat = de_xstrndup(pat, n);
    r->n = n;
    r->hash = h;
    r->code = code;
    r->md = pcre2_match_data_create_from_pattern(code, NULL);
    (void)pcre2_jit_compile(code, PCRE2_JIT_COMPLETE); /* interpreter if it fails */
    re_free(*slot);
    *slot = r;
    return r;
}

/* ---- single-character atoms for the fallback (re_nfa.h) -------------------------------- */

struct cel_re_atom {
    pcre2_code *code;
    pcre2_match_data *md;
};

cel_re_atom *cel_re_atom_new(const char *re2, size_t n)
{
    char why[256];
    pcre2_code *code = compile_re2(cache(), re2, n, PCRE2_ANCHORED, why, sizeof why);
    if (!code)
        return NULL;
    cel_re_atom *a = de_xcalloc(1, sizeof *a);
    a->code = code;
    a->md = pcre2_match_data_create(1, NULL);
    (void)pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
    return a;
}

bool cel_re_atom_test(cel_re_atom *a, uint32_t cp)
{
    char b[4];
    size_t w = de_utf8_put(b, cp);
    /* one character cannot backtrack: the default limits never bind */
    int rc = pcre2_match(a->code, (PCRE2_SPTR)b, w, 0, 0, a->md, NULL);
    return rc > 0 && pcre2_get_ovector_pointer(a->md)[1] == w;
}

void cel_re_atom_free(cel_re_atom *a)
{
    if (!a)
        return;
    pcre2_match_data_free(a->md);
    pcre2_code_free(a->code);
    free(a);
}

/* ---- matching ------------------------------------------------------------------------ */

static int run_match(re_cache *c, const cel_re *re, const char *s, size_t n, size_t start)
{
    int rc = pcre2_match(re->code, (PCRE2_SPTR)s, n, start, 0, re->md, c->mctx);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT)
        rc = pcre2_match(re->code, (PCRE2_SPTR)s, n, start, PCRE2_NO_JIT, re->md, c->mctx);
    return rc;
}

/* The fallback program of re, compiled on first need (NULL: unsupported).  The cache
 * entry belongs to this thread, so filling it in is safe. */
static cel_re_nfa *nfa_of(const cel_re *re)
{
    cel_re *r = (cel_re *)re;
    if (!r->nfa && !r->nfa_refused) {
        const char *why = NULL;
        r->nfa = cel_re_nfa_compile(r->pat, r->n, &why);
        r->nfa_refused = !r->nfa;
    }
    return r->nfa;
}

int cel_re_search_with(const cel_re *re, int engine, const char *s, size_t n, size_t start,
                       bool first, size_t *ms, size_t *me)
{
    re_cache *c = cache();
    if (start > n)
        return 0;
    if (engine != CEL_RE_NFA && !(engine == CEL_RE_AUTO && force_fallback)) {
        int rc = run_match(c, re, s, n, start);
        if (rc == PCRE2_ERROR_NOMATCH)
            return 0;
        if (rc >= 0) {
            PCRE2_SIZE *ov = pcre2_get_ovector_pointer(re->md);
            *ms = ov[0];
            *me = ov[1];
            return 1;
        }
        bool limit = rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT ||
                     rc == PCRE2_ERROR_HEAPLIMIT;
        if (!limit || engine == CEL_RE_PCRE2)
            return -1;
    }
    cel_re_nfa *nfa = nfa_of(re);
    if (!nfa)
        return -2;
    fallbacks++;
    return cel_re_nfa_search(nfa, s, n, start, first, ms, me);
}

int cel_re_search(const cel_re *re, const char *s, size_t n, size_t start, size_t *ms, size_t *me)
{
    int r = cel_re_search_with(re, CEL_RE_AUTO, s, n, start, false, ms, me);
    return r < 0 ? -1 : r;
}

int cel_re_matches(const cel_re *re, const char *s, size_t n)
{
    size_t ms, me;
    int r = cel_re_search_with(re, CEL_RE_AUTO, s, n, 0, true, &ms, &me);
    return r < 0 ? -1 : r;
}

uint64_t cel_re_test_knob(bool force)
{
    force_fallback = force;
    return fallbacks;
}
