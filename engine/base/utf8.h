/*
 * utf8.h - UTF-8 in one place: a sequence judged as jansson 2.14 judges it,
 * for the JSON reader and writer that stand in for jansson's (jload.c,
 * jdump.c; both must refuse exactly the bytes jansson refuses), and a code
 * point written out (those, and CEL's string literals and regex atoms).
 */
#ifndef DE_UTF8_H
#define DE_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* The sequence at s (n bytes left): its length, and its code point in cp;
 * 0 when invalid (a stray continuation byte, overlong, a surrogate, past
 * U+10FFFF, cut short). */
static inline size_t de_utf8_seq(const unsigned char *s, size_t n, uint32_t *cp)
{
    unsigned char c = s[0];
    size_t len;
    uint32_t v;
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    if (c < 0xC2)
        return 0;
    if (c < 0xE0)
        len = 2, v = c & 0x1F;
    else if (c < 0xF0)
        len = 3, v = c & 0x0F;
    else if (c < 0xF5)
        len = 4, v = c & 0x07;
    else
        return 0;
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        v = (v << 6) | (s[i] & 0x3F);
    }
    if (v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF) || (len == 3 && v < 0x800) || (len == 4 && v < 0x10000))
        return 0;
    *cp = v;
    return len;
}

/* The code point cp (at most U+10FFFF; the caller has refused the rest)
 * written to o: its length, 1 to 4 bytes. */
static inline size_t de_utf8_put(char *o, uint32_t cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* What keeps the n bytes at s from being a string every output can carry
 * (JSON takes no invalid UTF-8; the engine's strings end at a NUL), with
 * the offending byte's offset in *at; NULL when nothing does. */
static inline const char *de_utf8_problem(const char *s, size_t n, size_t *at)
{
    for (size_t i = 0, k; i < n; i += k) {
        uint32_t cp;
        k = de_utf8_seq((const unsigned char *)s + i, n - i, &cp);
        if (!k || !cp) {
            *at = i;
            return k ? "a NUL" : "not valid UTF-8";
        }
    }
    return NULL;
}

/* One code point or stray byte of s shown as text that means the same on
 * every terminal and log line: a control character (C0, DEL, C1) and a
 * byte that is not UTF-8 as an escape (\n \r \t, \xNN, \u0085), the rest
 * as it is.  Writes it to o (room for 6 bytes) and returns its length;
 * *used gets the input bytes it stands for. */
static inline size_t de_utf8_shown(char *o, const char *s, size_t n, size_t *used)
{
    static const char hex[] = "0123456789abcdef";
    uint32_t cp;
    size_t k = de_utf8_seq((const unsigned char *)s, n, &cp);
    unsigned char b = (unsigned char)s[0];
    *used = k ? k : 1;
    if (k && (cp == '\n' || cp == '\r' || cp == '\t')) {
        o[0] = '\\', o[1] = cp == '\n' ? 'n' : cp == '\r' ? 'r' : 't';
        return 2;
    }
    if (!k || cp < 0x20 || cp == 0x7f) {
        o[0] = '\\', o[1] = 'x', o[2] = hex[b >> 4], o[3] = hex[b & 15];
        return 4;
    }
    if (cp >= 0x80 && cp <= 0x9f) {
        o[0] = '\\', o[1] = 'u', o[2] = '0', o[3] = '0', o[4] = hex[cp >> 4], o[5] = hex[cp & 15];
        return 6;
    }
    for (size_t i = 0; i < k; i++)
        o[i] = s[i];
    return k;
}

/* The n bytes at s, each shown as de_utf8_shown shows it, into o: at most
 * cap-1 bytes and a NUL, never part of a sequence or an escape.  For text
 * a policy or a manifest supplies (an admit reason, a Lua error) that ends
 * up on a terminal: an escape sequence in it must not drive the terminal,
 * a carriage return not overwrite the line, a cut not break the UTF-8 a
 * JSON writer needs.  Returns the bytes written. */
static inline size_t de_utf8_printable(char *o, size_t cap, const char *s, size_t n)
{
    size_t w = 0;
    if (!cap)
        return 0;
    for (size_t i = 0, used; i < n; i += used) {
        char one[6];
        size_t m = de_utf8_shown(one, s + i, n - i, &used);
        if (w + m > cap - 1)
            break;
        for (size_t j = 0; j < m; j++)
            o[w++] = one[j];
    }
    o[w] = 0;
    return w;
}

#endif
