/*
 * lex.c - CEL tokenizer and literal decoding (../shared/docs/cel.md §2).
 *
 * The token rules are those of cel-go's ANTLR grammar, applied longest
 * match first: "1." is the int 1 followed by a dot, ".5" is a double, "0x"
 * without a hex digit is the int 0 followed by the identifier x.  String
 * tokens are only delimited here; escapes are decoded (and refused) by
 * cel_unescape, which also normalises CR LF and lone CR to LF the way
 * cel-go does before unescaping.
 */
#include "lex.h"
#include "../base/utf8.h"

#include <string.h>

void cel_lex_init(cel_lexer *lx, const char *s, size_t n)
{
    lx->s = s;
    lx->n = n;
    lx->i = 0;
}

static bool is_digit(int c) { return c >= '0' && c <= '9'; }
static bool is_hex(int c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
static bool is_ident_start(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool is_ident(int c) { return is_ident_start(c) || is_digit(c); }

static cel_token tok(cel_tok t, size_t pos, size_t end)
{
    cel_token k = {t, (uint32_t)pos, (uint32_t)(end - pos), NULL};
    return k;
}

static cel_token tok_err(size_t pos, size_t end, const char *why)
{
    cel_token k = {TOK_ERROR, (uint32_t)pos, (uint32_t)(end - pos), why};
    return k;
}

/* Scan a quoted body starting at the opening quote s[i]; returns the index
 * just past the closing quote, or 0 when unterminated. */
static size_t scan_quoted(const char *s, size_t n, size_t i, bool raw)
{
    char q = s[i];
    bool triple = i + 2 < n && s[i + 1] == q && s[i + 2] == q;
    if (triple) {
        i += 3;
        while (i < n) {
            if (!raw && s[i] == '\\') {
                i += 2;
                continue;
            }
            if (s[i] == q && i + 2 < n && s[i + 1] == q && s[i + 2] == q)
                return i + 3;
            i++;
        }
        return 0;
    }
    i++;
    while (i < n) {
        char c = s[i];
        if (c == '\n' || c == '\r')
            return 0;
        if (!raw && c == '\\') {
            if (i + 1 < n && (s[i + 1] == '\n' || s[i + 1] == '\r'))
                return 0;
            i += 2;
            continue;
        }
        if (c == q)
            return i + 1;
        i++;
    }
    return 0;
}

static cel_token lex_number(cel_lexer *lx, size_t st)
{
    const char *s = lx->s;
    size_t n = lx->n, i = st;
    if (s[i] == '0' && i + 2 < n && s[i + 1] == 'x' && is_hex((unsigned char)s[i + 2])) {
        i += 2;
        while (i < n && is_hex((unsigned char)s[i]))
            i++;
        if (i < n && (s[i] == 'u' || s[i] == 'U')) {
            lx->i = i + 1;
            return tok(TOK_UINT, st, i + 1);
        }
        lx->i = i;
        return tok(TOK_INT, st, i);
    }
    bool is_float = false;
    if (s[i] == '.') {
        is_float = true; /* caller checked a digit follows */
        i++;
        while (i < n && is_digit((unsigned char)s[i]))
            i++;
    } else {
        while (i < n && is_digit((unsigned char)s[i]))
            i++;
        if (i + 1 < n && s[i] == '.' && is_digit((unsigned char)s[i + 1])) {
            is_float = true;
            i++;
            while (i < n && is_digit((unsigned char)s[i]))
                i++;
        }
    }
    /* exponent: [eE][+-]?DIGIT+ */
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        size_t j = i + 1;
        if (j < n && (s[j] == '+' || s[j] == '-'))
            j++;
        if (j < n && is_digit((unsigned char)s[j])) {
            while (j < n && is_digit((unsigned char)s[j]))
                j++;
            i = j;
            is_float = true;
        }
    }
    if (!is_float && i < n && (s[i] == 'u' || s[i] == 'U')) {
        lx->i = i + 1;
        return tok(TOK_UINT, st, i + 1);
    }
    lx->i = i;
    return tok(is_float ? TOK_DOUBLE : TOK_INT, st, i);
}

cel_token cel_lex_next(cel_lexer *lx)
{
    const char *s = lx->s;
    size_t n = lx->n;
    for (;;) {
        while (lx->i < n) {
            char c = s[lx->i];
            if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f')
                lx->i++;
            else
                break;
        }
        if (lx->i + 1 < n && s[lx->i] == '/' && s[lx->i + 1] == '/') {
            while (lx->i < n && s[lx->i] != '\n')
                lx->i++;
            continue;
        }
        break;
    }
    size_t st = lx->i;
    if (st >= n)
        return tok(TOK_EOF, n, n);
    unsigned char c = (unsigned char)s[st];

    if (is_ident_start(c)) {
        size_t i = st;
        /* string prefixes: r, R, b, B, br, bR, Br, BR */
        bool bytes = false, raw = false;
        size_t j = i;
        if (s[j] == 'b' || s[j] == 'B') {
            bytes = true;
            j++;
        }
        if (j < n && (s[j] == 'r' || s[j] == 'R')) {
            raw = true;
            j++;
        }
        if ((bytes || raw) && j < n && (s[j] == '"' || s[j] == '\'')) {
            size_t end = scan_quoted(s, n, j, raw);
            if (!end) {
                lx->i = n;
                return tok_err(st, n, "unterminated string literal");
            }
            lx->i = end;
            return tok(bytes ? TOK_BYTES : TOK_STRING, st, end);
        }
        while (i < n && is_ident((unsigned char)s[i]))
            i++;
        lx->i = i;
        size_t len = i - st;
        const char *w = s + st;
        if (len == 4 && !memcmp(w, "true", 4))
            return tok(TOK_TRUE, st, i);
        if (len == 5 && !memcmp(w, "false", 5))
            return tok(TOK_FALSE, st, i);
        if (len == 4 && !memcmp(w, "null", 4))
            return tok(TOK_NULL, st, i);
        if (len == 2 && !memcmp(w, "in", 2))
            return tok(TOK_IN, st, i);
        return tok(TOK_IDENT, st, i);
    }
    if (is_digit(c) || (c == '.' && st + 1 < n && is_digit((unsigned char)s[st + 1])))
        return lex_number(lx, st);
    if (c == '"' || c == '\'') {
        size_t end = scan_quoted(s, n, st, false);
        if (!end) {
            lx->i = n;
            return tok_err(st, n, "unterminated string literal");
        }
        lx->i = end;
        return tok(TOK_STRING, st, end);
    }
    if (c == '`') {
        size_t i = st + 1;
        while (i < n && (is_ident((unsigned char)s[i]) || s[i] == '.' || s[i] == '-' ||
                         s[i] == '/' || s[i] == ' '))
            i++;
        if (i < n && s[i] == '`' && i > st + 1) {
            lx->i = i + 1;
            return tok(TOK_ESC_IDENT, st, i + 1);
        }
        lx->i = st + 1;
        return tok_err(st, st + 1, "token recognition error at: '`'");
    }
    lx->i = st + 1;
    char d = st + 1 < n ? s[st + 1] : 0;
    switch (c) {
    case '(': return tok(TOK_LPAREN, st, st + 1);
    case ')': return tok(TOK_RPAREN, st, st + 1);
    case '[': return tok(TOK_LBRACKET, st, st + 1);
    case ']': return tok(TOK_RBRACKET, st, st + 1);
    case '{': return tok(TOK_LBRACE, st, st + 1);
    case '}': return tok(TOK_RBRACE, st, st + 1);
    case '.': return tok(TOK_DOT, st, st + 1);
    case ',': return tok(TOK_COMMA, st, st + 1);
    case ':': return tok(TOK_COLON, st, st + 1);
    case '?': return tok(TOK_QUESTION, st, st + 1);
    case '+': return tok(TOK_PLUS, st, st + 1);
    case '-': return tok(TOK_MINUS, st, st + 1);
    case '*': return tok(TOK_STAR, st, st + 1);
    case '/': return tok(TOK_SLASH, st, st + 1);
    case '%': return tok(TOK_PERCENT, st, st + 1);
    case '!':
        if (d == '=') {
            lx->i = st + 2;
            return tok(TOK_NE, st, st + 2);
        }
        return tok(TOK_NOT, st, st + 1);
    case '=':
        if (d == '=') {
            lx->i = st + 2;
            return tok(TOK_EQ, st, st + 2);
        }
        return tok_err(st, st + 1, "token recognition error at: '='");
    case '<':
        if (d == '=') {
            lx->i = st + 2;
            return tok(TOK_LE, st, st + 2);
        }
        return tok(TOK_LT, st, st + 1);
    case '>':
        if (d == '=') {
            lx->i = st + 2;
            return tok(TOK_GE, st, st + 2);
        }
        return tok(TOK_GT, st, st + 1);
    case '&':
        if (d == '&') {
            lx->i = st + 2;
            return tok(TOK_AND, st, st + 2);
        }
        return tok_err(st, st + 1, "token recognition error at: '&'");
    case '|':
        if (d == '|') {
            lx->i = st + 2;
            return tok(TOK_OR, st, st + 2);
        }
        return tok_err(st, st + 1, "token recognition error at: '|'");
    default:
        break;
    }
    /* skip a whole UTF-8 sequence so the message names the character */
    size_t e = st + 1;
    while (e < n && ((unsigned char)s[e] & 0xC0) == 0x80)
        e++;
    lx->i = e;
    return tok_err(st, e, "token recognition error");
}

/* ---- literal decoding ---------------------------------------------------- */

static bool valid_rune(uint32_t cp)
{
    return cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
}

bool cel_unescape(const char *tok, size_t n, bool bytes, de_arena *a, const char **out,
                  size_t *outn, const char **why)
{
    size_t i = 0;
    if (bytes && i < n && (tok[i] == 'b' || tok[i] == 'B'))
        i++;
    bool raw = false;
    if (i < n && (tok[i] == 'r' || tok[i] == 'R')) {
        raw = true;
        i++;
    }
    if (n - i < 2) {
        *why = "unable to unescape string";
        return false;
    }
    char q = tok[i];
    size_t qn = (n - i >= 6 && tok[i + 1] == q && tok[i + 2] == q) ? 3 : 1;
    const char *body = tok + i + qn;
    size_t bn = n - i - 2 * qn;
    /* output is never longer than the input (\xHH of a string may grow to
     * 2 bytes from 4, \U to 4 from 10) */
    char *o = de_arena_alloc(a, bn + 1);
    if (!o) {
        *why = "expression too large";
        return false;
    }
    size_t k = 0;
    for (size_t j = 0; j < bn;) {
        char c = body[j];
        if (c == '\r') { /* newline normalisation, as cel-go */
            o[k++] = '\n';
            j += (j + 1 < bn && body[j + 1] == '\n') ? 2 : 1;
            continue;
        }
        if (raw || c != '\\') {
            o[k++] = c;
            j++;
            continue;
        }
        if (j + 1 >= bn) {
            *why = "unable to unescape string, found '\\' as last character";
            return false;
        }
        char e = body[j + 1];
        j += 2;
        switch (e) {
        case 'a': o[k++] = '\a'; break;
        case 'b': o[k++] = '\b'; break;
        case 'f': o[k++] = '\f'; break;
        case 'n': o[k++] = '\n'; break;
        case 'r': o[k++] = '\r'; break;
        case 't': o[k++] = '\t'; break;
        case 'v': o[k++] = '\v'; break;
        case '\\': case '\'': case '"': case '`': case '?': o[k++] = e; break;
        case 'x': case 'X': case 'u': case 'U': {
            size_t nd = (e == 'x' || e == 'X') ? 2 : e == 'u' ? 4 : 8;
            if (bytes && nd > 2) {
                *why = "unable to unescape string";
                return false;
            }
            if (bn - j < nd) {
                *why = "unable to unescape string";
                return false;
            }
            uint32_t v = 0;
            for (size_t d = 0; d < nd; d++) {
                int h = de_hexval((unsigned char)body[j + d]);
                if (h < 0) {
                    *why = "unable to unescape string";
                    return false;
                }
                v = v << 4 | (uint32_t)h;
            }
            j += nd;
            if (bytes) {
                o[k++] = (char)v;
            } else {
                if (!valid_rune(v)) {
                    *why = "invalid unicode code point";
                    return false;
                }
                k += de_utf8_put(o + k, v);
            }
            break;
        }
        case '0': case '1': case '2': case '3': {
            if (bn - j < 2 || body[j] < '0' || body[j] > '7' || body[j + 1] < '0' ||
                body[j + 1] > '7') {
                *why = "unable to unescape octal sequence in string";
                return false;
            }
            uint32_t v = (uint32_t)(e - '0') * 64 + (uint32_t)(body[j] - '0') * 8 +
                         (uint32_t)(body[j + 1] - '0');
            j += 2;
            if (bytes)
                o[k++] = (char)v;
            else
                k += de_utf8_put(o + k, v);
            break;
        }
        default:
            *why = "unable to unescape string";
            return false;
        }
    }
    o[k] = 0;
    *out = o;
    *outn = k;
    return true;
}

void cel_pos_linecol(const char *text, size_t len, uint32_t pos, int *line, int *col)
{
    int l = 1, c = 1;
    for (size_t i = 0; i < pos && i < len; i++) {
        unsigned char ch = (unsigned char)text[i];
        if (ch == '\n') {
            l++;
            c = 1;
        } else if ((ch & 0xC0) != 0x80) {
            c++;
        }
    }
    *line = l;
    *col = c;
}
