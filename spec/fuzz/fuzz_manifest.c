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

static de_rc recheck(void *ctx, json_t *obj, const de_origin *o, de_err *e)
{
    dg_kind k;
    (void)dg_check(ctx, obj, o, &k, e);
    return DE_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_in fi;
    if (!fuzz_mode_text(data, size, &fi))
        return 0;
    dg_opts o = {0};
    if (fi.mode & 4) {
        o.keep_going = true;
        o.on_error = fuzz_quiet;
    }
    o.skip_validation = (fi.mode & 8) != 0;
    dg_graph *g = dg_new(NULL, &o);
    de_err e;
    de_err_clear(&e);
    static const char *const names[] = {"<string>", "x.json", "x.yaml"};
    de_rc rc;
    const char *name = (fi.mode & 3) == 3 ? "x.json" : names[fi.mode & 3];
    if ((fi.mode & 3) == 3)
        rc = dg_load_path(g, fuzz_write(name, fi.text, fi.len), &e);
    else
        rc = dg_load_text(g, name, fi.text, fi.len, &e);
    if (rc == DE_OK)
        (void)de_doc_each_text(name, fi.text, fi.len, recheck, g, &e);
    dg_free(g);
    return 0;
}
