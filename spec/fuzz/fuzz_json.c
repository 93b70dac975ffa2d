/*
 * fuzz_json.c - engine/base/jload.c against jansson, differentially: the
 * first byte picks the flags, the rest is the text.  Wherever de_json_parse
 * answers, json_loadb must give an equal tree (json_equal, and the same
 * compact text: types and key order); wherever json_loadb refuses,
 * de_json_parse must give nothing, and de_json_loadb's error must be
 * json_loadb's.  A broken promise aborts, which libFuzzer reports.
 */
#include "../../engine/base/jload.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void same_error(const json_error_t *a, const json_error_t *b)
{
    if (a->line != b->line || a->column != b->column || a->position != b->position || strcmp(a->text, b->text))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    static const size_t FLAGS[] = {0, JSON_DECODE_ANY, JSON_REJECT_DUPLICATES,
                                   JSON_DECODE_ANY | JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL};
    size_t flags = FLAGS[data[0] % 4];
    const char *s = (const char *)data + 1;
    size_t n = size - 1;
    json_error_t je, de;
    json_t *ours = de_json_parse(s, n, flags);
    json_t *theirs = json_loadb(s, n, flags, &je);
    if (ours) {
        if (!theirs || !json_equal(ours, theirs))
            abort();
        char *a = json_dumps(ours, JSON_COMPACT | JSON_ENCODE_ANY);
        char *b = json_dumps(theirs, JSON_COMPACT | JSON_ENCODE_ANY);
        if (!a || !b || strcmp(a, b))
            abort();
        free(a);
        free(b);
    }
    if (!theirs) {
        if (ours)
            abort();
        json_t *v = de_json_loadb(s, n, flags, &de);
        if (v)
            abort();
        same_error(&je, &de);
    }
    json_decref(ours);
    json_decref(theirs);
    return 0;
}
