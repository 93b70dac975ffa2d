/*
 * kc_lean.c - objects from the API server decoded without
 * metadata.managedFields.
 *
 * Every object the server sends carries managedFields: one entry per field
 * manager, with the set of fields it owns.  A claim that the controller
 * created, that we finalized and allocated, and that the controller then
 * released has four, often half of its text.  Nothing in draengine reads
 * them, and nothing sends them back: writes are encoded from the decoded
 * structs, and a PUT without managedFields keeps the server's (the field
 * manager takes the live object's when an update brings none, so that
 * clients that do not know the field cannot erase it).  Decoding them was
 * the largest single cost of `serve` per pod on a busy cluster: every pod
 * brings about ten watch events and three write answers.
 *
 * So the text is scanned for the member's span first: a byte loop that only
 * follows strings and nesting, and stops once it is past metadata.  The
 * text around the span is copied together (a memcpy, far below the parse)
 * and read by de_json_parse (engine/base/jload.h), or by jansson where that
 * does not answer.  Only a member of the object's own metadata is left out,
 * and only when its value is an array (an annotation or label of that name is a
 * string; deeper "metadata", such as a template's, is not looked at).  If
 * the short parse fails, the whole text is parsed again, so an error quotes
 * the real text and its positions, exactly as before.
 */
#include "kc_int.h"
#include "../../engine/base/jload.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define LEAN_MAX_DEPTH 64

/* Past the string whose opening quote is at s[i]: the index after its
 * closing quote, or n if it does not end. */
static size_t skip_string(const char *s, size_t n, size_t i)
{
    for (i++; i < n; i++) {
        if (s[i] == '\\')
            i++;
        else if (s[i] == '"')
            return i + 1;
    }
    return n;
}

static size_t skip_ws(const char *s, size_t n, size_t i)
{
    while (i < n && kc_ws(s[i]))
        i++;
    return i;
}

/* Past the array that opens at s[i]: the index after its ']', or n. */
static size_t skip_array(const char *s, size_t n, size_t i)
{
    int depth = 0;
    for (; i < n; i++) {
        char c = s[i];
        if (c == '"') {
            i = skip_string(s, n, i) - 1;
        } else if (c == '[' || c == '{') {
            depth++;
        } else if (c == ']' || c == '}') {
            if (--depth == 0)
                return i + 1;
        }
    }
    return n;
}

static bool key_is(const char *s, size_t from, size_t to, const char *name)
{
    size_t k = strlen(name);
    return to - from == k + 2 && !memcmp(s + from + 1, name, k);
}

/* ---- the walk to metadata ---------------------------------------------------- */

/* The plain string value at s[v] into buf: false when it is not a string,
 * has an escape or does not fit. */
static bool copy_plain(const char *s, size_t n, size_t v, char *buf, size_t cap)
{
    if (v >= n || s[v] != '"')
        return false;
    size_t k = 0;
    for (size_t i = v + 1; i < n; i++) {
        if (s[i] == '"') {
            buf[k] = 0;
            return true;
        }
        if (s[i] == '\\' || k + 1 >= cap)
            return false;
        buf[k++] = s[i];
    }
    return false;
}

/* What a visit of one metadata member tells the walk. */
enum { WALK_ON, WALK_DONE, WALK_FAIL };
/* One member of metadata: its key's span [key, key_end) and its value's
 * first byte. */
typedef int (*member_fn)(void *ctx, const char *s, size_t n, size_t key, size_t key_end, size_t value);

/* The one byte walk of this file: it follows only strings and nesting, to
 * the metadata of the object at depth od (1: the text is the object; 2: a
 * watch line, whose "object" member it is, and whose top-level "type" goes
 * to type when asked), and hands each of metadata's members to fn.  It
 * stops where metadata closes, so it costs the bytes before that (kind,
 * apiVersion, metadata), not the object's.  WALK_DONE: fn said so; WALK_ON:
 * metadata ended; WALK_FAIL: fn failed, or there is no such metadata (the
 * object ended without one, the text ended first, nesting past the cap). */
static int walk_meta(const char *s, size_t n, int od, char *type, size_t type_cap, member_fn fn, void *ctx)
{
    bool in_obj = od == 1, in_meta = false;
    size_t obj_at = SIZE_MAX, meta_at = SIZE_MAX;
    int depth = 0;
    for (size_t i = 0; i < n;) {
        char c = s[i];
        if (c == '"') {
            size_t end = skip_string(s, n, i);
            size_t j = skip_ws(s, n, end);
            if (j >= n || s[j] != ':') { /* a string value */
                i = end;
                continue;
            }
            size_t v = skip_ws(s, n, j + 1);
            if (od == 2 && depth == 1 && type && key_is(s, i, end, "type")) {
                if (!copy_plain(s, n, v, type, type_cap))
                    return WALK_FAIL;
            } else if (od == 2 && depth == 1 && key_is(s, i, end, "object")) {
                obj_at = v;
            } else if (in_obj && !in_meta && depth == od && key_is(s, i, end, "metadata")) {
                meta_at = v;
            } else if (in_meta && depth == od + 1) {
                int r = fn(ctx, s, n, i, end, v);
                if (r != WALK_ON)
                    return r;
            }
            i = j + 1;
            continue;
        }
        if (c == '{' || c == '[') {
            if (++depth > LEAN_MAX_DEPTH)
                return WALK_FAIL;
            if (i == obj_at && c == '{' && depth == 2)
                in_obj = true;
            else if (i == meta_at && c == '{' && depth == od + 1)
                in_meta = true;
        } else if (c == '}' || c == ']') {
            if (in_meta && depth == od + 1)
                return WALK_ON; /* metadata ends */
            if ((in_obj && depth == od) || --depth < 1)
                return WALK_FAIL; /* the object (or the text) ends without metadata */
        }
        i++;
    }
    return WALK_FAIL;
}

typedef struct span {
    size_t from, to;
} span;

/* metadata.managedFields, an array, with one comma: the one before, or
 * else the one after */
static int managed_member(void *ctx, const char *s, size_t n, size_t key, size_t key_end, size_t v)
{
    span *sp = ctx;
    if (!key_is(s, key, key_end, "managedFields"))
        return WALK_ON;
    if (v >= n || s[v] != '[')
        return WALK_FAIL;
    size_t ve = skip_array(s, n, v);
    if (ve >= n)
        return WALK_FAIL;
    size_t b = key;
    while (b > 0 && kc_ws(s[b - 1]))
        b--;
    if (b > 0 && s[b - 1] == ',') {
        sp->from = b - 1;
        sp->to = ve;
        return WALK_DONE;
    }
    size_t a = skip_ws(s, n, ve);
    if (a >= n || (s[a] != ',' && s[a] != '}'))
        return WALK_FAIL;
    sp->from = key;
    sp->to = s[a] == ',' ? a + 1 : ve;
    return WALK_DONE;
}

bool kc_managed_span(const char *s, size_t n, int level, size_t *from, size_t *to)
{
    span sp;
    if (walk_meta(s, n, level, NULL, 0, managed_member, &sp) != WALK_DONE)
        return false;
    *from = sp.from;
    *to = sp.to;
    return true;
}

json_t *kc_loadb_lean(const char *s, size_t n, int level, size_t flags, json_error_t *je)
{
    size_t from, to;
    if (!kc_managed_span(s, n, level, &from, &to))
        return de_json_loadb(s, n, flags, je);
    size_t m = n - (to - from);
    char *t = malloc(m + 1);
    json_t *j = NULL;
    if (t) {
        memcpy(t, s, from);
        memcpy(t + from, s + to, n - to);
        j = de_json_parse(t, m, flags);
        if (!j)
            j = json_loadb(t, m, flags, je);
        free(t);
    }
    /* neither reader took the shorter text: jansson reads the whole one,
     * so that an error quotes the real text and its positions */
    return j ? j : json_loadb(s, n, flags, je);
}

/* ---- the identity of a watch event, without decoding it --------------------------------- */

/* the names of kc_peek, plain strings */
static int peek_member(void *ctx, const char *s, size_t n, size_t key, size_t key_end, size_t v)
{
    kc_peek *pk = ctx;
    bool ok = true;
    if (key_is(s, key, key_end, "namespace"))
        ok = copy_plain(s, n, v, pk->ns, sizeof pk->ns);
    else if (key_is(s, key, key_end, "name"))
        ok = copy_plain(s, n, v, pk->name, sizeof pk->name);
    else if (key_is(s, key, key_end, "resourceVersion"))
        ok = copy_plain(s, n, v, pk->rv, sizeof pk->rv);
    return ok ? WALK_ON : WALK_FAIL;
}

static bool peek_meta(const char *s, size_t n, int od, char *type, size_t type_cap, kc_peek *pk)
{
    pk->ns[0] = pk->name[0] = pk->rv[0] = 0;
    return walk_meta(s, n, od, type, type_cap, peek_member, pk) == WALK_ON && pk->name[0] && pk->rv[0];
}

bool kc_watch_peek(const char *s, size_t n, kc_peek *pk)
{
    char type[16] = "";
    if (!peek_meta(s, n, 2, type, sizeof type, pk) || !type[0])
        return false;
    pk->type = kc_wtype_parse(type);
    return true;
}

bool kc_object_peek(const char *s, size_t n, kc_peek *pk)
{
    pk->type = KC_W_OTHER;
    return peek_meta(s, n, 1, NULL, 0, pk);
}
