/*
 * kc_int.h - internals shared by the kube driver's files (not for callers).
 */
#ifndef KC_INT_H
#define KC_INT_H

#include "kc.h"

#include <curl/curl.h>

typedef struct kc_blob {
    unsigned char *p;
    size_t len;
} kc_blob;

de_rc kc_base64_decode(const char *s, kc_blob *out);

const kc_blob *kc_config_ca(const kc_config *c);
const kc_blob *kc_config_cert(const kc_config *c);
const kc_blob *kc_config_key(const kc_config *c);
bool kc_config_insecure(const kc_config *c);
/* The server URL to send requests to (kc_config_server() is the redacted
 * form for messages). */
const char *kc_config_url(const kc_config *c);
/* base64(username:password) for basic auth, NULL when not configured. */
const char *kc_config_basic(const kc_config *c);

/* Configure an easy handle for this server: TLS material, user agent,
 * timeouts. Authentication headers are added per request by the caller. */
void kc_client_setup_easy(kc_client *cl, CURL *h);
/* A fresh header list with Authorization (and Accept / Content-Type). */
struct curl_slist *kc_client_headers(kc_client *cl, bool force_token_reread,
                                     const char *content_type);
void kc_client_count(kc_client *cl, long status);
kc_stats *kc_client_stats_mut(kc_client *cl);

/* Run the informer for up to `ns` nanoseconds (used while writes wait). */
void kc_informer_pump_for(kc_informer *inf, uint64_t ns);

/* Build a redacted message from a Status body (or raw text) into e. */
de_rc kc_status_error(kc_client *cl, de_err *e, const char *method, const char *path,
                      long status, const char *body, size_t len);

/* Deterministic xorshift64*. */
uint64_t kc_rand_next(uint64_t *state);

#endif
