/*
 * fuzz_allocate.c - libFuzzer target for offline allocation (`make
 * fuzz-allocate`): manifests through al_input, as `allocate` reads them
 * (the kind/namespace/name dedup, validation warnings on a checker graph),
 * then every pod through al_schedule_pod, or every pending claim through
 * al_allocate on the first node, explanations of failures included.
 *
 * A CLI-level campaign (2026-12-05) found an explanation reading a
 * message out of scope, a key buffer overflowed by long names, and the
 * matchAttribute explanation running a call's arena dry - all on this
 * path, which fuzz-manifest (the graph alone) does not reach.
 *
 * Input: one mode byte, then the text.  Bit 0: the text is JSON (else
 * YAML); bit 1: warn mode (a checker graph; else validation off, which
 * keeps duplicates too); bit 2: claims on the first node (`allocate
 * --node`) instead of pods.  The search is capped low so that an input
 * that makes it exhaustive costs milliseconds, not the default budget.
 */
#include "../../engine/alloc/al.h"
#include "../../engine/base/arena.h"
#include "../../engine/model/dg.h"
#include "fuzz_util.h"

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_in fi;
    if (!fuzz_mode_text(data, size, &fi))
        return 0;
    al_opts opts = {0};
    de_gates_default(&opts.gates);
    opts.max_steps = 20000;
    opts.filter_timeout_set = true; /* no wall clock: the step cap bounds the search */
    dg_opts go = {0};
    go.gates = &opts.gates;
    go.skip_validation = true;
    dg_graph *g = dg_new(NULL, &go), *checker = NULL;
    al_input in;
    al_input_init(&in);
    in.keep_duplicates = true;
    if (fi.mode & 2) {
        dg_opts co = {0};
        co.gates = &opts.gates;
        checker = dg_new(dg_intern(g), &co);
        in.checker = checker;
        in.warn = fuzz_quiet;
    }
    de_err e;
    de_err_clear(&e);
    al_allocator *a = NULL;
    de_arena *ar = de_arena_new(0);
    if (al_input_load_text(g, &in, (fi.mode & 1) ? "x.json" : "x.yaml", fi.text, fi.len, &e) != DE_OK)
        goto out;
    a = al_new(g, &opts, &e);
    if (!a)
        goto out;
    if (fi.mode & 4) {
        const dg_node *node = NULL;
        for (uint32_t i = 0; i < dg_node_id_limit(g) && !node; i++)
            node = dg_node_get(g, i);
        uint32_t *ids = malloc((in.npending ? in.npending : 1) * sizeof *ids);
        for (uint32_t i = 0; i < in.npending; i++)
            ids[i] = al_input_claim(g, &in, i);
        al_outcome o;
        de_err_clear(&e);
        if (node)
            (void)al_allocate(a, node->meta.name, ids, in.npending, ar, &o, &e);
        free(ids);
    } else {
        for (uint32_t i = 0; i < in.npods; i++) {
            uint32_t pid = al_input_pod(g, &in, i);
            if (pid == DG_NONE || !al_pod_uses_dra(a, pid))
                continue;
            de_arena_reset(ar);
            al_pod_outcome po;
            de_err_clear(&e);
            (void)al_schedule_pod(a, pid, ar, &po, &e);
        }
    }
out:
    de_arena_free(ar);
    al_free(a);
    al_input_free(&in);
    dg_free(checker);
    dg_free(g);
    return 0;
}
