/*
 * fuzz_kubeconfig.c - libFuzzer target for the kubeconfig loader
 * (drivers/kube/kc_config.c: kc_config_load and what reads the result;
 * `make fuzz-kubeconfig`).
 *
 * Input: one mode byte, then the file.  Bit 0 clear: the file alone, as
 * --kubeconfig gives it.  Bit 0 set: the text is cut at its first 0xff byte
 * into two files merged as $KUBECONFIG="a:b" (the first that sets a value
 * wins).  Bit 1 sets --context "fuzz", bit 2 --master.  Relative paths
 * inside (tokenFile, certificate-authority, ...) resolve next to the files,
 * in the target's private directory, where a file "token" and a file
 * "ca.crt" exist.  After a load that succeeds, the server, the description
 * (which must redact secrets) and the token are read.
 */
#include "../../drivers/kube/kc.h"
#include "../../engine/base/buf.h"
#include "fuzz_util.h"

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 65536)
        return 0;
    static bool ready;
    if (!ready) {
        fuzz_write("token", "abc.def\n", 8);
        fuzz_write("ca.crt", "not a certificate\n", 18);
        ready = true;
    }
    uint8_t mode = data[0];
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    kc_config_opts o = {0};
    o.no_in_cluster = true;
    o.home = fuzz_dir();
    o.env_host = "";
    o.env_port = "";
    char list[1200];
    if (mode & 1) {
        const char *cut = memchr(text, 0xff, len);
        size_t a = cut ? (size_t)(cut - text) : len / 2;
        char pa[512];
        snprintf(pa, sizeof pa, "%s", fuzz_write("a.yaml", text, a));
        const char *pb = fuzz_write("b.yaml", text + a + (cut ? 1 : 0), len - a - (cut ? 1 : 0));
        snprintf(list, sizeof list, "%s:%s", pa, pb);
        o.env_kubeconfig = list;
    } else {
        o.env_kubeconfig = "";
        o.kubeconfig = fuzz_write("config.yaml", text, len);
    }
    if (mode & 2)
        o.context = "fuzz";
    if (mode & 4)
        o.master = "https://user:secret@127.0.0.1:6443";
    kc_config *c = NULL;
    de_err e;
    de_err_clear(&e);
    if (kc_config_load(&o, &c, &e) == DE_OK) {
        (void)kc_config_server(c);
        (void)kc_config_source(c);
        (void)kc_config_context(c);
        (void)kc_config_namespace(c);
        de_buf b;
        de_buf_init(&b, 1 << 20);
        kc_config_describe(c, &b);
        de_buf_free(&b);
        (void)kc_config_token(c, false);
        kc_config_free(c);
    }
    return 0;
}
