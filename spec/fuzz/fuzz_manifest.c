/*
 * fuzz_manifest.c - libFuzzer target for the manifest decoder, YAML and
 * JSON, through to the device graph (`make fuzz-manifest`).
 *
 * Input: one mode byte, then the text.  Bits 0-1 choose the name the text
 * is read under (which decides JSON or YAML the way a file's suffix does):
 * "<string>", "x.json", "x.yaml", or a real file x.json read with
 * dg_load_path, which takes the fast path for JSON List snapshots
 * (graph_files.c, dec_fast.c) before falling back to jansson.  Bit 2 keeps
 * going past invalid objects; bit 3 turns validation off (trusted input).
 * Every object that loads is then checked again against the graph
 * (dg_check), so the validator sees the decoded state too.  A failure is a
 * crash or a sanitizer report; invalid input is a normal outcome.
 */
#include "../../engine/base/doc.h"
#include "../../engine/model/dg.h"
#include "fuzz_util.h"

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void quiet(void *ctx, const de_err *e)
{
    (void)ctx, (void)e;
}

static de_rc recheck(void *ctx, json_t *obj, const de_origin *o, de_err *e)
{
    dg_kind k;
    (void)dg_check(ctx, obj, o, &k, e);
    return DE_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > (1u << 20))
        return 0;
    uint8_t mode = data[0];
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    dg_opts o = {0};
    if (mode & 4) {
        o.keep_going = true;
        o.on_error = quiet;
    }
    o.skip_validation = (mode & 8) != 0;
    dg_graph *g = dg_new(NULL, &o);
    de_err e;
    de_err_clear(&e);
    static const char *const names[] = {"<string>", "x.json", "x.yaml"};
    de_rc rc;
    const char *name = (mode & 3) == 3 ? "x.json" : names[mode & 3];
    if ((mode & 3) == 3)
        rc = dg_load_path(g, fuzz_write(name, text, len), &e);
    else
        rc = dg_load_text(g, name, text, len, &e);
    if (rc == DE_OK)
        (void)de_doc_each_text(name, text, len, recheck, g, &e);
    dg_free(g);
    return 0;
}
