/*
 * fuzz_watch.c - libFuzzer target for the watch-stream decoder
 * (drivers/kube/kc_watch.c: the line cutting of a 200 watch answer and the
 * decoding of each event line, through kc_watch_feed; `make fuzz-watch`).
 *
 * Input: two mode bytes, then the body.  Byte 0 picks the resource (mod
 * the number of resources); byte 1 the size of the pieces the body arrives
 * in, as curl hands them over (0: at once, else 1..255 bytes), with bit 7
 * of byte 0 setting a 64-byte line cap (the oversized-line path).  The
 * informer and its client are made once, against an address nothing
 * listens on; no transfer is ever started.  Events queued by one input are
 * dropped with the informer, which is made anew for each input.
 */
#include "../../drivers/kube/kc_int.h"
#include "fuzz_util.h"

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void on_event(void *ctx, kc_res res, kc_evtype t, json_t *obj)
{
    (void)ctx, (void)res, (void)t, (void)obj;
}

static kc_client *client(void)
{
    static kc_client *cl;
    if (cl)
        return cl;
    static const char cfg[] = "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
                              "clusters:\n- name: k\n  cluster: {server: \"https://127.0.0.1:9\"}\n"
                              "users:\n- name: u\n  user: {token: abc}\n"
                              "contexts:\n- name: c\n  context: {cluster: k, user: u}\n";
    kc_config_opts o = {0};
    o.kubeconfig = fuzz_write("config.yaml", cfg, sizeof cfg - 1);
    o.no_in_cluster = true;
    kc_config *c;
    de_err e;
    de_err_clear(&e);
    if (kc_config_load(&o, &c, &e) != DE_OK) {
        fprintf(stderr, "fuzz_watch: %s\n", e.msg);
        abort();
    }
    kc_client_opts co = {0};
    cl = kc_client_new(c, &co);
    return cl;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2 || size > (1u << 20))
        return 0;
    kc_informer_opts o = {0};
    kc_res res = (kc_res)((data[0] & 0x7f) % KC_RES_COUNT);
    o.jitter_seed = 1;
    if (data[0] & 0x80)
        o.max_line = 64;
    kc_informer *inf = kc_informer_new(client(), &o, on_event, NULL);
    bool cut;
    (void)kc_watch_feed(inf, res, (const char *)data + 2, size - 2, data[1], &cut);
    kc_informer_free(inf);
    return 0;
}
