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
 * follows strings and nesting, and stops once it is past metadata.  jansson
 * then parses the text around the span through a two-piece reader, without
 * a copy.  Only a member of the object's own metadata is left out, and only
 * when its value is an array (an annotation or label of that name is a
 * string; deeper "metadata", such as a template's, is not looked at).  If
 * the short parse fails, the whole text is parsed again, so an error quotes
 * the real text and its positions, exactly as before.
 */
#include "kc_int.h"

#include <stdint.h>
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

bool kc_managed_span(const char *s, size_t n, int level, size_t *from, size_t *to)
{
    /* depth: containers open at i; meta: inside the object that opened at
     * meta_at, the value of "metadata" of the object at depth level */
    int depth = 0;
    bool meta = false;
    size_t meta_at = SIZE_MAX;
    size_t i = 0;
    while (i < n) {
        char c = s[i];
        if (c == '"') {
            size_t end = skip_string(s, n, i);
            size_t j = skip_ws(s, n, end);
            if (j >= n || s[j] != ':') { /* a string value */
                i = end;
                continue;
            }
            if (depth == level && key_is(s, i, end, "metadata")) {
                meta_at = skip_ws(s, n, j + 1);
            } else if (meta && depth == level + 1 && key_is(s, i, end, "managedFields")) {
                size_t v = skip_ws(s, n, j + 1);
                if (v >= n || s[v] != '[')
                    return false;
                size_t ve = skip_array(s, n, v);
                if (ve >= n)
                    return false;
                /* one comma goes with it: the one before, or else the one after */
                size_t b = i;
                while (b > 0 && kc_ws(s[b - 1]))
                    b--;
                if (b > 0 && s[b - 1] == ',') {
                    *from = b - 1;
                    *to = ve;
                } else {
                    size_t a = skip_ws(s, n, ve);
                    if (a >= n || (s[a] != ',' && s[a] != '}'))
                        return false;
                    *from = i;
                    *to = s[a] == ',' ? a + 1 : ve;
                }
                return true;
            }
            i = j + 1;
            continue;
        }
        if (c == '{' || c == '[') {
            if (++depth > LEAN_MAX_DEPTH)
                return false;
            if (i == meta_at && c == '{')
                meta = true;
        } else if (c == '}' || c == ']') {
            if (meta && depth == level + 1)
                return false; /* past metadata: it has none */
            depth--;
        }
        i++;
    }
    return false;
}

typedef struct two_piece {
    const char *s;
    size_t pos, from, to, n;
} two_piece;

static size_t read_piece(void *buf, size_t len, void *data)
{
    two_piece *p = data;
    if (p->pos == p->from)
        p->pos = p->to;
    size_t end = p->pos < p->from ? p->from : p->n;
    size_t k = DE_MIN(len, end - p->pos);
    memcpy(buf, p->s + p->pos, k);
    p->pos += k;
    return k;
}

json_t *kc_loadb_lean(const char *s, size_t n, int level, size_t flags, json_error_t *je)
{
    size_t from, to;
    if (kc_managed_span(s, n, level, &from, &to)) {
        two_piece p = {s, 0, from, to, n};
        json_t *j = json_load_callback(read_piece, &p, flags, je);
        if (j)
            return j;
    }
    return json_loadb(s, n, flags, je);
}

/* ---- the identity of a watch event, without decoding it --------------------------------- */

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

/* The same walk as kc_managed_span: in a watch line (od 2) the top-level
 * "type" and the "object" member's metadata; in an object (od 1) its own
 * metadata.  It stops when metadata closes, so the cost is the bytes before
 * it (kind, apiVersion, metadata), not the object's. */
static bool peek_meta(const char *s, size_t n, int od, char *type, size_t type_cap, kc_peek *pk)
{
    bool has_name = false, has_rv = false, in_obj = od == 1, in_meta = false, closed = false;
    size_t obj_at = SIZE_MAX, meta_at = SIZE_MAX;
    int depth = 0;
    pk->ns[0] = pk->name[0] = pk->rv[0] = 0;
    for (size_t i = 0; i < n;) {
        char c = s[i];
        if (c == '"') {
            size_t end = skip_string(s, n, i);
            size_t j = skip_ws(s, n, end);
            if (j >= n || s[j] != ':') {
                i = end;
                continue;
            }
            size_t v = skip_ws(s, n, j + 1);
            if (od == 2 && depth == 1 && key_is(s, i, end, "type")) {
                if (!copy_plain(s, n, v, type, type_cap))
                    return false;
            } else if (od == 2 && depth == 1 && key_is(s, i, end, "object")) {
                obj_at = v;
            } else if (in_obj && !in_meta && depth == od && key_is(s, i, end, "metadata")) {
                meta_at = v;
            } else if (in_meta && depth == od + 1) {
                bool ok = true;
                if (key_is(s, i, end, "namespace"))
                    ok = copy_plain(s, n, v, pk->ns, sizeof pk->ns);
                else if (key_is(s, i, end, "name"))
                    ok = has_name = copy_plain(s, n, v, pk->name, sizeof pk->name);
                else if (key_is(s, i, end, "resourceVersion"))
                    ok = has_rv = copy_plain(s, n, v, pk->rv, sizeof pk->rv);
                if (!ok)
                    return false;
            }
            i = j + 1;
            continue;
        }
        if (c == '{' || c == '[') {
            if (++depth > LEAN_MAX_DEPTH)
                return false;
            if (i == obj_at && c == '{' && depth == 2)
                in_obj = true;
            else if (i == meta_at && c == '{' && depth == od + 1)
                in_meta = true;
        } else if (c == '}' || c == ']') {
            if (in_meta && depth == od + 1) {
                closed = true; /* metadata ends */
                break;
            }
            if (in_obj && depth == od)
                break; /* the object ends without metadata */
            if (--depth < 1)
                break;
        }
        i++;
    }
    return closed && has_name && has_rv;
}

bool kc_watch_peek(const char *s, size_t n, kc_peek *pk)
{
    static const char *const types[] = {"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"};
    char type[16] = "";
    if (!peek_meta(s, n, 2, type, sizeof type, pk) || !type[0])
        return false;
    pk->type = KC_W_OTHER;
    for (size_t t = 0; t < DE_ARRAY_LEN(types); t++)
        if (!strcmp(type, types[t]))
            pk->type = (kc_wtype)t;
    return true;
}

bool kc_object_peek(const char *s, size_t n, kc_peek *pk)
{
    pk->type = KC_W_OTHER;
    return peek_meta(s, n, 1, NULL, 0, pk);
}
