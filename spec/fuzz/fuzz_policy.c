/*
 * fuzz_policy.c - libFuzzer target for the policy loader and the hooks it
 * accepts (engine/policy/load.c, the sandbox, hooks.c; `make fuzz-policy`).
 *
 * Input: one mode byte, then Lua text.  Bit 0 clear: the text is a policy
 * file p.lua of the directory.  Bit 0 set: the text is cut at its first
 * 0xff byte into a pack manifest pack/pack.lua and the pack's policy
 * pack/p.lua.  The directory is loaded with small budgets (so a slow input
 * costs milliseconds, not seconds); when it loads, its derive and groups
 * hooks run on every device of a small fixed graph, the facts are
 * published, and its admit hooks see one claim.  Budget failures, refused
 * results and Lua errors are normal outcomes; a crash, a sanitizer report
 * or a hang (libFuzzer's -timeout) is a finding.
 */
#include "../../engine/base/intern.h"
#include "../../engine/model/dg.h"
#include "../../engine/policy/pol.h"
#include "../../engine/policy/polgraph.h"
#include "fuzz_util.h"

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char graph_yaml[] =
    "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: s}\nspec:\n"
    "  driver: gpu.example.com\n  nodeName: node-1\n"
    "  pool: {name: node-1, generation: 1, resourceSliceCount: 1}\n  devices:\n"
    "  - name: gpu-0\n    attributes:\n      model: {string: H100}\n      index: {int: 0}\n"
    "      driverVersion: {version: 1.2.3}\n      numa: {int: 1}\n    capacity:\n      memory: {value: 80Gi}\n"
    "  - name: gpu-1\n    attributes:\n      model: {string: A100}\n      index: {int: 1}\n"
    "      flags: {bools: [true, false]}\n      names: {strings: [a, b]}\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 65536)
        return 0;
    static char dir[300];
    static dg_graph *g;
    if (!g) {
        snprintf(dir, sizeof dir, "%s/policies", fuzz_dir());
        char cmd[400];
        snprintf(cmd, sizeof cmd, "mkdir -p '%s/pack'", dir);
        if (system(cmd) != 0)
            abort();
        g = dg_new(NULL, NULL);
        de_err e;
        de_err_clear(&e);
        if (dg_load_text(g, "graph.yaml", graph_yaml, sizeof graph_yaml - 1, &e) != DE_OK) {
            fprintf(stderr, "fuzz_policy: %s\n", e.msg);
            abort();
        }
    }
    uint8_t mode = data[0];
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    /* the files of the previous input go (unlink, not rm -rf: one exec per
     * input would cost more than the input) */
    static const char *const files[] = {"p.lua", "pack/pack.lua", "pack/p.lua"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char f[400];
        snprintf(f, sizeof f, "%s/%s", dir, files[i]);
        unlink(f);
    }
    char path[400];
    if (mode & 1) {
        const char *cut = memchr(text, 0xff, len);
        size_t a = cut ? (size_t)(cut - text) : len;
        snprintf(path, sizeof path, "policies/pack/pack.lua");
        fuzz_write(path, text, a);
        snprintf(path, sizeof path, "policies/pack/p.lua");
        fuzz_write(path, cut ? cut + 1 : "", cut ? len - a - 1 : 0);
    } else {
        fuzz_write("policies/p.lua", text, len);
    }
    pol_config cfg;
    pol_config_default(&cfg);
    cfg.limits.instructions = 20000;
    cfg.limits.deadline_ns = 20ull * 1000000;
    cfg.limits.load_instructions = 100000;
    cfg.limits.load_deadline_ns = 50ull * 1000000;
    cfg.limits.memory = (size_t)16 << 20;
    pol_set *s;
    de_err e;
    de_err_clear(&e);
    if (pol_set_load(dir, dg_intern(g), &cfg, &s, &e) == DE_OK) {
        bool done;
        pol_prepare_stats st = {0};
        pol_set_prepare(s, g, 0, &done, &st);
        pol_set_publish(s, g, &st);
        de_interner *in = dg_intern(g);
        uint32_t lk[1] = {de_intern_cstr(in, "app")}, lv[1] = {de_intern_cstr(in, "x")};
        uint32_t sel[1] = {de_intern_cstr(in, "device.driver == \"gpu.example.com\"")};
        pol_claimreq req = {0};
        req.name = de_intern_cstr(in, "gpu");
        req.class_name = de_intern_cstr(in, "gpu.example.com");
        req.count = 1;
        req.selectors = sel;
        req.nselectors = 1;
        pol_claiminfo ci = {0};
        ci.ns = de_intern_cstr(in, "default");
        ci.name = de_intern_cstr(in, "c");
        ci.uid = de_intern_cstr(in, "");
        ci.label_keys = lk;
        ci.label_values = lv;
        ci.nlabels = 1;
        ci.requests = &req;
        ci.nrequests = 1;
        bool ok;
        char reason[256];
        pol_failure f = {0};
        pol_set_admit(s, &ci, &ok, reason, sizeof reason, &f);
        pol_graph_clear(g);
        pol_set_free(s);
    }
    return 0;
}
