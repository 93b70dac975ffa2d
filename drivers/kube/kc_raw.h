/*
 * kc_raw.h - an HTTP/1.1 exchange on a libcurl-opened connection, for
 * kc_http.c's requests (kc_raw.c says why and what it understands).
 */
#ifndef KC_RAW_H
#define KC_RAW_H

#include "kc_int.h"

typedef struct kc_raw kc_raw;

/* libcurl's write and header callback shape */
typedef size_t (*kc_raw_cb)(char *p, size_t sz, size_t n, void *ud);

/* Whether requests to this server URL may go this way. */
bool kc_raw_usable(const char *server_url, bool http2);

kc_raw *kc_raw_new(void);
void kc_raw_free(kc_raw *r);

/* One request to url (scheme://authority/path?query) with the header lines
 * hl (Host, User-Agent and Content-Length are added), on the kept
 * connection or a new one.  The answer's header lines and body go to the
 * callbacks; *status is its code.  Returns what libcurl returns for the
 * same outcome, with a message in errbuf (CURL_ERROR_SIZE bytes). */
CURLcode kc_raw_perform(kc_client *cl, kc_raw *r, const char *method, const char *url,
                        struct curl_slist *hl, const char *ua, const char *body, size_t blen,
                        long timeout_ms, kc_raw_cb on_header, kc_raw_cb on_body, void *ud,
                        long *status, char *errbuf);

#endif
