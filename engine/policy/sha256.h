/*
 * sha256.h - SHA-256 (FIPS 180-4), small and self-contained.
 *
 * Policy revisions are the SHA-256 of a policy's content; they appear in
 * logs, metrics and decisions, so the hash must be the standard one (an
 * operator can check a revision with `sha256sum policy.lua`).  No external
 * crypto library is linked for this: the hash is ~120 lines and is checked
 * against the FIPS test vectors in spec/policy_load_spec.lua.
 */
#ifndef POL_SHA256_H
#define POL_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define POL_SHA256_LEN 32
#define POL_SHA256_HEX 65 /* 64 hex digits + NUL */

typedef struct pol_sha256 {
    uint32_t h[8];
    uint64_t nbytes;
    uint8_t buf[64];
    size_t nbuf;
} pol_sha256;

void pol_sha256_init(pol_sha256 *c);
void pol_sha256_update(pol_sha256 *c, const void *p, size_t n);
void pol_sha256_final(pol_sha256 *c, uint8_t out[POL_SHA256_LEN]);

/* One-shot helpers. hex gets 64 lower-case digits and a NUL. */
void pol_sha256_hex(const void *p, size_t n, char hex[POL_SHA256_HEX]);
void pol_sha256_tohex(const uint8_t d[POL_SHA256_LEN], char hex[POL_SHA256_HEX]);

#endif
