/*
 * fuzz_cel.c - libFuzzer target for the CEL parser, checker, cost
 * estimator and evaluator (`make fuzz-cel`, FUZZ_SECONDS=600).
 *
 * Input: one mode byte, then the expression text.  The mode chooses a plain
 * environment or a selector against a fixed device that has every
 * attribute kind, capacities and a derived attribute, and whether the
 * NewExpressions environment is used; bit 64 sends every regex match to the
 * linear-time fallback matcher (regex.c, re_nfa.h) instead of PCRE2.  Every result is printed in both
 * text forms and every compile error rendered with its caret, so the
 * printers are fuzzed too.  A failure is a crash or a sanitizer report;
 * CEL errors are normal outcomes.
 */
#include "../../engine/base/intern.h"
#include "../../engine/cel/cel.h"
#include "../../engine/cel/cel_int.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void make_device(de_interner *in, de_devview *d, de_attr *attrs, de_attr *derived,
                        de_cap *caps)
{
    static int64_t ints[] = {1, 2, 3};
    static bool bools[] = {true, false};
    static uint32_t strs[3], vers[2];
    uint32_t drv = de_intern_cstr(in, "gpu.example.com");
    uint32_t k8s = de_intern_cstr(in, "resource.kubernetes.io");
    strs[0] = de_intern_cstr(in, "fish");
    strs[1] = de_intern_cstr(in, "bird");
    strs[2] = de_intern_cstr(in, "");
    vers[0] = de_intern_cstr(in, "1.0.0");
    vers[1] = de_intern_cstr(in, "2.1.0-rc.1+b");
    memset(d, 0, sizeof *d);
    d->id = 1;
    d->gen = 1;
    d->driver = drv;
    d->allow_multi = 1;
    de_attr a[] = {
        {drv, de_intern_cstr(in, "model"), 1, {DE_V_STRING, 1, {.s = de_intern_cstr(in, "A100 80GB")}}},
        {drv, de_intern_cstr(in, "index"), 1, {DE_V_INT, 1, {.i = 3}}},
        {drv, de_intern_cstr(in, "healthy"), 1, {DE_V_BOOL, 1, {.b = true}}},
        {drv, de_intern_cstr(in, "driverVersion"), 1, {DE_V_VERSION, 1, {.s = vers[1]}}},
        {drv, de_intern_cstr(in, "ids"), 1, {DE_V_INTS, 3, {.ints = ints}}},
        {drv, de_intern_cstr(in, "flags"), 1, {DE_V_BOOLS, 2, {.bools = bools}}},
        {drv, de_intern_cstr(in, "names"), 1, {DE_V_STRINGS, 3, {.strs = strs}}},
        {drv, de_intern_cstr(in, "versions"), 1, {DE_V_VERSIONS, 2, {.strs = vers}}},
        {k8s, de_intern_cstr(in, "pcieRoot"), 0, {DE_V_STRING, 1, {.s = de_intern_cstr(in, "pci0000:00")}}},
    };
    memcpy(attrs, a, sizeof a);
    d->attrs = attrs;
    d->nattrs = DE_ARRAY_LEN(a);
    derived[0] = (de_attr){de_intern_cstr(in, "tier.example.com"), de_intern_cstr(in, "tier"), 0,
                           {DE_V_STRING, 1, {.s = de_intern_cstr(in, "gold")}}};
    d->derived = derived;
    d->nderived = 1;
    de_qty_parse_cstr("80Gi", &caps[0].value, NULL);
    de_qty_parse_cstr("1500m", &caps[1].value, NULL);
    caps[0].domain = drv;
    caps[0].name = de_intern_cstr(in, "memory");
    caps[1].domain = k8s;
    caps[1].name = de_intern_cstr(in, "cores");
    d->caps = caps;
    d->ncaps = 2;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 12000)
        return 0;
    uint8_t mode = data[0];
    size_t len = size - 1;
    char *expr = malloc(len + 1); /* cel_err_caret wants a C string */
    memcpy(expr, data + 1, len);
    expr[len] = 0;

    de_interner *in = de_intern_new();
    de_arena *a = de_arena_new((size_t)256 << 20);
    cel_env_opts o = {0};
    o.plain = !(mode & 1);
    o.new_expressions = mode & 2;
    o.consumable_capacity = mode & 4;
    o.list_attributes = mode & 8;
    o.any_result = mode & 16;
    (void)cel_re_test_knob(mode & 64);
    cel_env *env = cel_env_new(in, &o);
    if (o.plain && (mode & 32)) {
        cel_value *v = cel_value_new_int(a, 123);
        cel_env_declare(env, "x", v, NULL);
    }
    de_devview dev;
    de_attr attrs[16], derived[1];
    de_cap caps[2];
    make_device(in, &dev, attrs, derived, caps);

    de_err e;
    de_err_clear(&e);
    cel_prog *p;
    char caret[4096];
    de_buf b;
    de_buf_init(&b, 64u << 20);
    if (cel_compile(env, expr, len, &p, &e) != DE_OK) {
        cel_err_caret(expr, e.line, e.col, caret, sizeof caret);
    } else {
        (void)cel_prog_estimated_cost(p);
        if (!o.plain && !o.any_result) {
            bool r;
            cel_eval_selector(env, p, &dev, a, &r, NULL, &e);
        } else {
            const cel_value *v;
            if (cel_eval(env, p, o.plain ? NULL : &dev, a, &v, NULL, &e) == DE_OK) {
                cel_value_format(v, &b);
                de_buf_reset(&b);
                cel_value_typed_json(v, &b);
            } else {
                cel_err_caret(expr, e.line, e.col, caret, sizeof caret);
            }
        }
    }
    de_buf_free(&b);
    cel_env_free(env);
    de_arena_free(a);
    de_intern_free(in);
    free(expr);
    return 0;
}
