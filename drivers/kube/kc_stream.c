/*
 * kc_stream.c - decoding what the API server streams: list answers cut and
 * parsed while they arrive, and watch events (one JSON object per line).
 *
 * Memory: a list page used to be buffered whole (up to its 256 MiB cap, for
 * every resource at once: 2 GiB seen) and then parsed into a second, larger
 * copy.  Here the body is cut as it arrives: each element of the top-level
 * "items" array is parsed on its own as soon as its last byte is in, and
 * handed over; what a list holds at once is one item's text (capped like a
 * watch event) plus the objects parsed and queued for delivery.  The other
 * top-level members (kind, apiVersion, metadata with continue and
 * resourceVersion) are kept as text, capped at 1 MiB, and parsed at the end.
 * This fits the driver better than a byte budget shared by the resources:
 * watch events are already cut the same way, a budget would still keep the
 * double copy, and one large resource would stall the others behind it.
 *
 * The splitter only finds where values end (strings with their escapes,
 * nesting of {} and []); each piece is then decoded by jansson, which does
 * the real validation.  Anything the splitter cannot follow, a body that
 * ends early, a second "items" or "items" that is not a list is an error.
 */
#define _POSIX_C_SOURCE 200809L
#include "kc_int.h"

#include <stdio.h>
#include <string.h>

#define MAX_REST ((size_t)1 << 20) /* everything but the items */
#define MAX_KEY 256
#define MAX_DEPTH 512

typedef enum lstate {
    L_START,      /* before the opening '{' */
    L_KEY_OR_END, /* after '{': a key or '}' */
    L_KEY_START,  /* after ',': a key */
    L_KEY,        /* inside a key */
    L_COLON,
    L_VALUE,      /* before a member's value */
    L_ITEMS_FIRST,/* after "items": [ */
    L_ITEM_START, /* after ',' in items */
    L_ITEMS_NEXT, /* after an item: ',' or ']' */
    L_AFTER,      /* after a member: ',' or '}' */
    L_DONE,       /* after the closing '}' */
    L_ERROR
} lstate;

struct kc_listsplit {
    lstate st;
    /* the value being captured */
    bool capturing, into_item, in_str, esc, scalar;
    int depth;
    de_buf item, rest;
    char key[MAX_KEY];
    size_t keylen;
    bool key_esc, seen_items;
    kc_item_fn fn;
    void *ctx;
    size_t items;
    char err[256];
};

void kc_buf_trim(de_buf *b)
{
    if (b->cap > ((size_t)1 << 20)) {
        size_t max = b->max;
        de_buf_free(b);
        de_buf_init(b, max);
    } else {
        de_buf_reset(b);
    }
}

kc_listsplit *kc_listsplit_new(size_t max_item, kc_item_fn fn, void *ctx)
{
    kc_listsplit *s = de_xcalloc(1, sizeof *s);
    de_buf_init(&s->item, max_item);
    de_buf_init(&s->rest, MAX_REST);
    s->fn = fn;
    s->ctx = ctx;
    kc_listsplit_reset(s);
    return s;
}

void kc_listsplit_reset(kc_listsplit *s)
{
    s->st = L_START;
    s->capturing = s->into_item = s->in_str = s->esc = s->scalar = false;
    s->depth = 0;
    s->keylen = 0;
    s->key_esc = s->seen_items = false;
    s->items = 0;
    s->err[0] = 0;
    kc_buf_trim(&s->item);
    kc_buf_trim(&s->rest);
    de_buf_putc(&s->rest, '{');
}

void kc_listsplit_free(kc_listsplit *s)
{
    if (!s)
        return;
    de_buf_free(&s->item);
    de_buf_free(&s->rest);
    free(s);
}

size_t kc_listsplit_held(const kc_listsplit *s) { return s->item.cap + s->rest.cap; }

static bool fail(kc_listsplit *s, const char *fmt, const char *arg)
{
    if (s->st != L_ERROR)
        snprintf(s->err, sizeof s->err, fmt, arg);
    s->st = L_ERROR;
    return false;
}

static void begin_value(kc_listsplit *s, bool into_item)
{
    s->capturing = true;
    s->into_item = into_item;
    s->in_str = s->esc = s->scalar = false;
    s->depth = 0;
}

/* A captured value is complete. */
static bool end_value(kc_listsplit *s)
{
    s->capturing = false;
    if (!s->into_item) {
        s->st = L_AFTER;
        return de_buf_putc(&s->rest, ',') == DE_OK || fail(s, "%s", "list metadata too large");
    }
    json_error_t je;
    json_t *it = kc_loadb_lean(s->item.p, s->item.len, 1, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je);
    de_buf_reset(&s->item);
    if (!it)
        return fail(s, "items: %s", je.text);
    s->items++;
    s->fn(s->ctx, it);
    json_decref(it);
    s->st = L_ITEMS_NEXT;
    return true;
}

/* Feed one byte of the value being captured; *consumed is false when the
 * byte ended a scalar and belongs to what follows. */
static bool capture(kc_listsplit *s, char c, bool *consumed)
{
    de_buf *b = s->into_item ? &s->item : &s->rest;
    *consumed = true;
    if (s->scalar && (c == ',' || c == '}' || c == ']' || kc_ws(c))) {
        *consumed = false;
        return end_value(s);
    }
    if (de_buf_putc(b, c) != DE_OK)
        return fail(s, "%s", s->into_item ? "an item is larger than the cap"
                                          : "list metadata larger than 1 MiB");
    if (s->in_str) {
        if (s->esc)
            s->esc = false;
        else if (c == '\\')
            s->esc = true;
        else if (c == '"') {
            s->in_str = false;
            if (s->depth == 0)
                return end_value(s);
        }
        return true;
    }
    switch (c) {
    case '"':
        s->in_str = true;
        break;
    case '{':
    case '[':
        if (++s->depth > MAX_DEPTH)
            return fail(s, "%s", "nested too deeply");
        break;
    case '}':
    case ']':
        if (--s->depth < 0)
            return fail(s, "%s", "unbalanced brackets");
        if (s->depth == 0)
            return end_value(s);
        break;
    default:
        break;
    }
    return true;
}

static bool start_scalar_or_nested(kc_listsplit *s, char c, bool into_item)
{
    if (c == '}' || c == ']' || c == ',' || c == ':')
        return fail(s, "%s", into_item ? "items: expected a value" : "expected a value");
    begin_value(s, into_item);
    if (c != '{' && c != '[' && c != '"')
        s->scalar = true;
    bool consumed;
    return capture(s, c, &consumed);
}

/* Whitespace, or exactly `want`, which leads to `next`. */
static bool expect(kc_listsplit *s, char c, char want, lstate next, const char *what)
{
    if (kc_ws(c))
        return true;
    if (c != want)
        return fail(s, "%s", what);
    s->st = next;
    return true;
}

/* After an element: ',' leads to `more`, `close` to `closed`. */
static bool separator(kc_listsplit *s, char c, char close, lstate more, lstate closed,
                      const char *what)
{
    if (kc_ws(c))
        return true;
    if (c == ',' || c == close) {
        s->st = c == ',' ? more : closed;
        return true;
    }
    return fail(s, "%s", what);
}

static bool step(kc_listsplit *s, char c)
{
    if (s->capturing) {
        bool consumed;
        if (!capture(s, c, &consumed))
            return false;
        if (consumed)
            return true;
        /* the byte that ended a scalar: fall through to the new state */
    }
    switch (s->st) {
    case L_START:
        return expect(s, c, '{', L_KEY_OR_END, "the answer is not a JSON object");
    case L_KEY_OR_END:
    case L_KEY_START:
        if (kc_ws(c))
            return true;
        if (c == '}' && s->st == L_KEY_OR_END) {
            s->st = L_DONE;
            return true;
        }
        if (c != '"')
            return fail(s, "%s", "expected a member name");
        s->keylen = 0;
        s->key_esc = false;
        s->st = L_KEY;
        return true;
    case L_KEY:
        if (!s->key_esc && c == '"') {
            s->key[s->keylen] = 0;
            s->st = L_COLON;
            return true;
        }
        s->key_esc = !s->key_esc && c == '\\';
        if (s->keylen + 1 >= MAX_KEY)
            return fail(s, "%s", "member name too long");
        s->key[s->keylen++] = c;
        return true;
    case L_COLON:
        return expect(s, c, ':', L_VALUE, "expected ':'");
    case L_VALUE:
        if (kc_ws(c))
            return true;
        if (!strcmp(s->key, "items")) {
            if (s->seen_items)
                return fail(s, "%s", "duplicate key \"items\"");
            s->seen_items = true;
            if (c == '[') {
                s->st = L_ITEMS_FIRST;
                return true;
            }
            if (c != 'n') /* null is an empty list */
                return fail(s, "%s", "items is not a list");
        }
        if (de_buf_printf(&s->rest, "\"%s\":", s->key) != DE_OK)
            return fail(s, "%s", "list metadata larger than 1 MiB");
        return start_scalar_or_nested(s, c, false);
    case L_ITEMS_FIRST:
    case L_ITEM_START:
        if (kc_ws(c))
            return true;
        if (c == ']' && s->st == L_ITEMS_FIRST) {
            s->st = L_AFTER;
            return true;
        }
        return start_scalar_or_nested(s, c, true);
    case L_ITEMS_NEXT:
        return separator(s, c, ']', L_ITEM_START, L_AFTER, "items: expected ',' or ']'");
    case L_AFTER:
        return separator(s, c, '}', L_KEY_START, L_DONE, "expected ',' or '}'");
    case L_DONE:
        if (kc_ws(c))
            return true;
        return fail(s, "%s", "data after the end of the answer");
    case L_ERROR:
        return false;
    }
    return false;
}

/* Inside a value, the bytes that need a look: quotes and backslashes in a
 * string, quotes and brackets outside; runs of other bytes are copied whole
 * (objects are mostly long strings, and this keeps parsing near memcpy speed). */
static size_t plain_run(const kc_listsplit *s, const char *p, size_t n)
{
    size_t j = 0;
    if (s->in_str) {
        while (j < n && p[j] != '"' && p[j] != '\\')
            j++;
    } else {
        while (j < n && p[j] != '"' && p[j] != '{' && p[j] != '}' && p[j] != '[' && p[j] != ']')
            j++;
    }
    return j;
}

bool kc_listsplit_feed(kc_listsplit *s, const char *p, size_t n)
{
    for (size_t i = 0; i < n;) {
        if (s->capturing && !s->scalar && !s->esc && (s->in_str || s->depth > 0)) {
            size_t run = plain_run(s, p + i, n - i);
            if (run) {
                if (de_buf_add(s->into_item ? &s->item : &s->rest, p + i, run) != DE_OK)
                    return fail(s, "%s", s->into_item ? "an item is larger than the cap"
                                                      : "list metadata larger than 1 MiB");
                i += run;
                continue;
            }
        }
        if (!step(s, p[i++]))
            return false;
    }
    return true;
}

json_t *kc_listsplit_finish(kc_listsplit *s, const char **err)
{
    if (s->capturing && s->scalar) {
        bool consumed; /* a scalar at the very end, e.g. {"a":1 */
        capture(s, ' ', &consumed);
    }
    if (s->st != L_DONE) {
        if (s->st != L_ERROR)
            snprintf(s->err, sizeof s->err, "the answer ends early");
        *err = s->err;
        return NULL;
    }
    /* the rest members, each followed by ',': close the object */
    if (s->rest.len > 1)
        s->rest.p[s->rest.len - 1] = '}';
    else
        de_buf_putc(&s->rest, '}');
    json_error_t je;
    json_t *doc = json_loadb(s->rest.p, s->rest.len, JSON_REJECT_DUPLICATES, &je);
    if (!doc) {
        snprintf(s->err, sizeof s->err, "%s", je.text);
        *err = s->err;
        return NULL;
    }
    json_t *hidden = json_object_get(doc, "items");
    if (hidden && !json_is_null(hidden)) { /* "items" spelt with escapes */
        json_decref(doc);
        snprintf(s->err, sizeof s->err, "items: member name spelt with escapes");
        *err = s->err;
        return NULL;
    }
    return doc;
}

/* ---- watch events ------------------------------------------------------------ */

static const char *const WTYPES[] = {"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR", "OTHER"};

kc_wtype kc_wtype_parse(const char *s)
{
    for (size_t i = 0; i < KC_W_OTHER; i++)
        if (!strcmp(s, WTYPES[i]))
            return (kc_wtype)i;
    return KC_W_OTHER;
}

const char *kc_wtype_name(kc_wtype t)
{
    return WTYPES[t <= KC_W_OTHER ? t : KC_W_OTHER];
}

bool kc_watch_decode(const char *line, size_t len, kc_wevent *ev)
{
    memset(ev, 0, sizeof *ev);
    json_error_t je;
    json_t *doc = kc_loadb_lean(line, len, 2, JSON_REJECT_DUPLICATES, &je);
    if (!json_is_object(doc)) {
        json_decref(doc);
        snprintf(ev->reason, sizeof ev->reason, "UndecodableEvent");
        snprintf(ev->msg, sizeof ev->msg, "undecodable event: %s",
                 doc ? "not a JSON object" : je.text);
        return false;
    }
    const char *type = json_string_value(json_object_get(doc, "type"));
    json_t *obj = json_object_get(doc, "object");
    if (!type || !json_is_object(obj)) {
        json_decref(doc);
        snprintf(ev->reason, sizeof ev->reason, "MalformedEvent");
        snprintf(ev->msg, sizeof ev->msg, "event without type or object");
        return false;
    }
    ev->type = kc_wtype_parse(type);
    if (ev->type == KC_W_ERROR) {
        json_int_t code = json_integer_value(json_object_get(obj, "code"));
        const char *msg = json_string_value(json_object_get(obj, "message"));
        const char *reason = json_string_value(json_object_get(obj, "reason"));
        ev->code = code > 0 && code < 1000 ? (long)code : 200;
        snprintf(ev->reason, sizeof ev->reason, "%s",
                 reason && *reason ? reason : code == 410 ? "Gone" : "ErrorEvent");
        snprintf(ev->msg, sizeof ev->msg, "ERROR event %lld: %s", (long long)code,
                 msg ? msg : "");
    }
    ev->obj = json_incref(obj);
    json_decref(doc);
    return true;
}
