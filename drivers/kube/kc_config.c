/*
 * kc_config.c - where the API server is and how to authenticate to it:
 * kubeconfig files (merged the way client-go merges them), the in-cluster
 * service account, and --master.
 *
 * Token rotation: projected service-account tokens expire (1 h by default)
 * and the kubelet rewrites the file at 80 % of their life, so a token that
 * came from a file is re-read every minute and after every 401, never kept
 * from start-up.  The previous token is remembered only so that kc_redact()
 * can still mask it in a message that quotes it.
 *
 * Credentials go into an HTTP header verbatim, so a token, username or
 * password holding a control character (CR, LF, TAB, ...) is refused rather
 * than sent: CR LF would end the Authorization header and inject another.
 * A token file that later turns bad (rotated to garbage, replaced by a FIFO)
 * keeps the last good token and records the problem for the client to
 * report.  Files are opened without blocking: a token file must be a regular
 * file (it is re-read every minute on the serve loop's thread), while the
 * kubeconfig and the CA/certificate/key files, read once, may be pipes
 * (kubectl's `--kubeconfig <(...)`) that must deliver within a deadline.
 * A server URL may carry userinfo (https://user:pass@host): curl sends it
 * as basic auth like Go's HTTP client does, and kc_config_server() and every
 * message show it as [REDACTED].
 */
#define _POSIX_C_SOURCE 200809L
#include "kc.h"
#include "kc_int.h"

#include "../../engine/base/doc.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"
#define MAX_KUBECONFIG (4u << 20)
#define MAX_SECRET_FILE (1u << 20)
#define PIPE_DEADLINE_MS 2000 /* a pipe named as a kubeconfig or PEM file */

struct kc_config {
    char *server;  /* as given: may carry userinfo, used for requests */
    char *shown;   /* server with userinfo replaced by [REDACTED] */
    char *userinfo; /* the raw userinfo of the server URL, for redaction */
    char *userinfo_pw; /* its password part */
    char *source;  /* kubeconfig | in-cluster | master */
    char *context;
    char *ns;
    char *files;   /* kubeconfig files that contributed, for describe() */
    char *tls_server_name;
    bool insecure;
    kc_blob ca, cert, key;           /* -data or file contents */
    char *ca_file, *cert_file, *key_file; /* paths, for describe() */
    char *token;      /* current token (static or last read) */
    char *prev_token; /* the one before a rotation, for redaction */
    char *token_file;
    uint64_t token_read_ns;
    uint64_t token_period_ns;
    char *username, *password; /* basic auth (kubeconfig username/password) */
    char *basic;               /* base64(username:password) */
    char token_problem[512];   /* why the last re-read of token_file was refused */
    unsigned token_problem_seq;
};

/* ---- small helpers ------------------------------------------------------- */

static char *join_dir(const char *base_dir, const char *p)
{
    if (!p || !*p)
        return NULL;
    if (p[0] == '/' || !base_dir || !*base_dir)
        return de_xstrdup(p);
    size_t n = strlen(base_dir) + strlen(p) + 2;
    char *r = de_xmalloc(n);
    snprintf(r, n, "%s/%s", base_dir, p);
    return r;
}

static char *dir_of(const char *path)
{
    const char *s = strrchr(path, '/');
    if (!s)
        return de_xstrdup(".");
    if (s == path)
        return de_xstrdup("/");
    return de_xstrndup(path, (size_t)(s - path));
}

static void blob_free(kc_blob *b)
{
    free(b->p);
    b->p = NULL;
    b->len = 0;
}

static int b64val(int c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+' || c == '-')
        return 62;
    if (c == '/' || c == '_')
        return 63;
    return -1;
}

/* Standard or URL alphabet, padding optional, whitespace ignored. */
de_rc kc_base64_decode(const char *s, kc_blob *out)
{
    size_t n = strlen(s);
    unsigned char *p = de_xmalloc(n / 4 * 3 + 4);
    size_t len = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < n; i++) {
        int c = (unsigned char)s[i];
        if (c == '=' || isspace(c))
            continue;
        int v = b64val(c);
        if (v < 0) {
            free(p);
            return DE_EINVAL;
        }
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            p[len++] = (unsigned char)(acc >> bits);
        }
    }
    p[len] = 0;
    out->p = p;
    out->len = len;
    return DE_OK;
}

static char *b64_encode(const unsigned char *p, size_t n)
{
    static const char A[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *o = de_xmalloc((n + 2) / 3 * 4 + 1), *q = o;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) |
                     (i + 2 < n ? p[i + 2] : 0);
        *q++ = A[v >> 18 & 63];
        *q++ = A[v >> 12 & 63];
        *q++ = i + 1 < n ? A[v >> 6 & 63] : '=';
        *q++ = i + 2 < n ? A[v & 63] : '=';
    }
    *q = 0;
    return o;
}

/* Read a whole file, capped, never blocking: open with O_NONBLOCK (opening
 * a FIFO without a writer would block), then a regular file is read
 * straight; anything else is refused when `regular_only`, else read as a
 * stream that must deliver within PIPE_DEADLINE_MS.  "-" is the file of
 * that name (never stdin).  *out is NUL-terminated. */
static de_rc read_nb(const char *path, size_t max, bool regular_only, char **out, size_t *len,
                     de_err *e)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return de_errf(e, errno == ENOENT ? DE_ENOTFOUND : DE_EIO, "%s: %s", path,
                       strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int er = errno;
        close(fd);
        return de_errf(e, DE_EIO, "%s: %s", path, strerror(er));
    }
    bool reg = S_ISREG(st.st_mode);
    if (S_ISDIR(st.st_mode) || (!reg && regular_only)) {
        close(fd);
        return de_errf(e, DE_EINVAL, "%s: not a regular file (%s)", path,
                       S_ISDIR(st.st_mode)    ? "a directory"
                       : S_ISFIFO(st.st_mode) ? "a FIFO"
                       : S_ISCHR(st.st_mode)  ? "a character device"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                                              : "a special file");
    }
    if (reg && (uint64_t)st.st_size > max) {
        close(fd);
        return de_errf(e, DE_ENOMEM, "%s: larger than the %zu-byte limit", path, max);
    }
    size_t cap = reg ? (size_t)st.st_size + 1 : 4096, n = 0;
    char *p = de_xmalloc(cap + 1);
    uint64_t deadline = de_now_ns() + (uint64_t)PIPE_DEADLINE_MS * 1000000ull;
    de_rc rc = DE_OK;
    for (;;) {
        if (n == cap) {
            if (cap >= max + 1) {
                rc = de_errf(e, DE_ENOMEM, "%s: larger than the %zu-byte limit", path, max);
                break;
            }
            cap = DE_MIN(cap * 2, max + 1);
            p = de_xrealloc(p, cap + 1);
        }
        if (!reg) {
            /* Wait for data or a hang-up first: a FIFO whose writer has not
             * opened it yet reads as EOF, but polls as not ready. */
            uint64_t now = de_now_ns();
            struct pollfd pf = {fd, POLLIN, 0};
            if (now >= deadline ||
                poll(&pf, 1, (int)((deadline - now) / 1000000ull) + 1) == 0) {
                rc = de_errf(e, DE_ETIMEOUT,
                             "%s: no data within %d ms (a pipe nobody writes?)", path,
                             PIPE_DEADLINE_MS);
                break;
            }
        }
        ssize_t r = read(fd, p + n, cap - n);
        if (r > 0) {
            n += (size_t)r;
            continue;
        }
        if (r == 0)
            break;
        if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK) {
            rc = de_errf(e, DE_EIO, "%s: read error: %s", path, strerror(errno));
            break;
        }
    }
    close(fd);
    if (rc != DE_OK) {
        memset(p, 0, n);
        free(p);
        return rc;
    }
    p[n] = 0;
    *out = p;
    *len = n;
    return DE_OK;
}

static de_rc read_secret(const char *path, kc_blob *out, const char *what, de_err *e)
{
    char *buf = NULL;
    size_t len = 0;
    de_err sub;
    de_err_clear(&sub);
    if (read_nb(path, MAX_SECRET_FILE, false, &buf, &len, &sub) != DE_OK)
        return de_errf(e, sub.rc == DE_OK ? DE_EIO : sub.rc, "%s: %s", what, sub.msg);
    out->p = (unsigned char *)buf;
    out->len = len;
    return DE_OK;
}

/* The first control character (or DEL) in s: its offset, or -1. */
static long ctl_at(const char *s)
{
    for (const char *p = s; *p; p++)
        if ((unsigned char)*p < 0x20 || (unsigned char)*p == 0x7f)
            return (long)(p - s);
    return -1;
}

static de_rc check_header_safe(const char *v, const char *what, de_err *e)
{
    long at = ctl_at(v);
    if (at >= 0)
        return de_errf(e, DE_EINVAL,
                       "%s: contains a control character (byte 0x%02x at offset %ld); refusing "
                       "to send it in an HTTP header",
                       what, (unsigned char)v[at], at);
    return DE_OK;
}

static char *trim_dup(const char *p, size_t n)
{
    while (n && isspace((unsigned char)*p))
        p++, n--;
    while (n && isspace((unsigned char)p[n - 1]))
        n--;
    return de_xstrndup(p, n);
}

static void wipe_free(char *s)
{
    if (s) {
        memset(s, 0, strlen(s));
        free(s);
    }
}

/* Read a token file: a regular file, trimmed, without control characters.
 * *tok is NULL on error. */
static de_rc read_token_file(const char *path, char **tok, de_err *e)
{
    *tok = NULL;
    char *buf = NULL;
    size_t len = 0;
    de_err sub;
    de_err_clear(&sub);
    if (read_nb(path, MAX_SECRET_FILE, true, &buf, &len, &sub) != DE_OK)
        return de_errf(e, sub.rc, "token file %s", sub.msg);
    if (memchr(buf, 0, len)) {
        memset(buf, 0, len);
        free(buf);
        return de_errf(e, DE_EINVAL,
                       "token file %s: contains a NUL byte; refusing to send it in an HTTP header",
                       path);
    }
    char *t = trim_dup(buf, len);
    memset(buf, 0, len);
    free(buf);
    char what[600];
    snprintf(what, sizeof what, "token file %s", path);
    de_rc rc = check_header_safe(t, what, e);
    if (rc != DE_OK) {
        wipe_free(t);
        return rc;
    }
    *tok = t;
    return DE_OK;
}

/* ---- kubeconfig parsing ---------------------------------------------------- */

/* One kubeconfig file, parsed; named entries remember their file's dir. */
typedef struct kcfile {
    char *path, *dir;
    json_t *doc;
} kcfile;

/* YAML (as kubectl writes it) or JSON. */
static json_t *parse_text(const char *name, const char *text, size_t len, de_err *e)
{
    return de_doc_parse_one(name, text, len, e);
}

static de_rc load_file(const char *path, kcfile *f, bool *missing, de_err *e)
{
    struct stat st;
    *missing = false;
    if (stat(path, &st) != 0) {
        *missing = true;
        return DE_OK;
    }
    char *text = NULL;
    size_t len = 0;
    DE_TRY(read_nb(path, MAX_KUBECONFIG, false, &text, &len, e));
    json_t *doc = parse_text(path, text, len, e);
    free(text);
    if (!doc)
        return e ? e->rc : DE_EPARSE;
    if (!json_is_object(doc)) {
        json_decref(doc);
        return de_errf(e, DE_EINVAL, "%s: kubeconfig must be a mapping", path);
    }
    f->path = de_xstrdup(path);
    f->dir = dir_of(path);
    f->doc = doc;
    return DE_OK;
}

/* Find the named entry (clusters/users/contexts) in the first file that has
 * it; returns its inner object (cluster/user/context) and the file. */
static json_t *find_named(kcfile *files, size_t nf, const char *list, const char *inner,
                          const char *name, const kcfile **from, de_err *e, de_rc *rc)
{
    *rc = DE_OK;
    for (size_t i = 0; i < nf; i++) {
        json_t *arr = json_object_get(files[i].doc, list);
        if (!arr || json_is_null(arr))
            continue;
        if (!json_is_array(arr)) {
            *rc = de_errf(e, DE_EINVAL, "%s: %s: must be a list", files[i].path, list);
            return NULL;
        }
        size_t k;
        json_t *it;
        json_array_foreach(arr, k, it) {
            const char *n = json_string_value(json_object_get(it, "name"));
            if (n && !strcmp(n, name)) {
                json_t *in = json_object_get(it, inner);
                if (!json_is_object(in)) {
                    *rc = de_errf(e, DE_EINVAL, "%s: %s[%zu] (\"%s\"): %s: must be a mapping",
                                  files[i].path, list, k, name, inner);
                    return NULL;
                }
                *from = &files[i];
                return in;
            }
        }
    }
    return NULL;
}

static const char *str_field(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static de_rc apply_cluster(kc_config *c, json_t *cl, const kcfile *f, const char *name,
                           de_err *e)
{
    const char *server = str_field(cl, "server");
    if (server && *server)
        c->server = de_xstrdup(server);
    json_t *ins = json_object_get(cl, "insecure-skip-tls-verify");
    c->insecure = json_is_true(ins);
    const char *tsn = str_field(cl, "tls-server-name");
    if (tsn && *tsn)
        c->tls_server_name = de_xstrdup(tsn);
    const char *cad = str_field(cl, "certificate-authority-data");
    const char *caf = str_field(cl, "certificate-authority");
    if (cad && *cad) {
        if (kc_base64_decode(cad, &c->ca) != DE_OK)
            return de_errf(e, DE_EINVAL,
                           "%s: cluster \"%s\": certificate-authority-data: not valid base64",
                           f->path, name);
    } else if (caf && *caf) {
        c->ca_file = join_dir(f->dir, caf);
        char what[512];
        snprintf(what, sizeof what, "%s: cluster \"%s\": certificate-authority", f->path, name);
        DE_TRY(read_secret(c->ca_file, &c->ca, what, e));
    }
    /* client-go refuses this pair ("specifying a root certificates file with
     * the insecure flag is not allowed"): one of the two is a mistake, and
     * silently dropping verification would be the dangerous guess. */
    if (c->insecure && ((cad && *cad) || (caf && *caf)))
        return de_errf(e, DE_EINVAL,
                       "%s: cluster \"%s\": insecure-skip-tls-verify is true and a certificate "
                       "authority is set (%s): specifying a root certificate with the insecure "
                       "flag is not allowed; remove one of them",
                       f->path, name,
                       cad && *cad ? "certificate-authority-data" : "certificate-authority");
    return DE_OK;
}

static de_rc apply_user(kc_config *c, json_t *u, const kcfile *f, const char *name, de_err *e)
{
    char what[512];
    if (json_object_get(u, "exec"))
        return de_errf(e, DE_EINVAL,
                       "%s: user \"%s\": exec credential plugins are not supported; use a "
                       "token, tokenFile or client certificate",
                       f->path, name);
    if (json_object_get(u, "auth-provider"))
        return de_errf(e, DE_EINVAL, "%s: user \"%s\": auth-provider is not supported", f->path,
                       name);
    const char *tok = str_field(u, "token");
    const char *tokf = str_field(u, "tokenFile");
    if (tok && *tok) {
        c->token = trim_dup(tok, strlen(tok));
        snprintf(what, sizeof what, "%s: user \"%s\": token", f->path, name);
        DE_TRY(check_header_safe(c->token, what, e));
    } else if (tokf && *tokf) {
        c->token_file = join_dir(f->dir, tokf);
    }
    const char *un = str_field(u, "username");
    const char *pw = str_field(u, "password");
    if ((un && *un) || (pw && *pw)) {
        /* client-go: "username/password or bearer token may be set, but not both" */
        if (c->token || c->token_file)
            return de_errf(e, DE_EINVAL,
                           "%s: user \"%s\": more than one authentication method: %s and "
                           "username/password; only one is allowed",
                           f->path, name, c->token ? "token" : "tokenFile");
        if (!un || !*un)
            return de_errf(e, DE_EINVAL,
                           "%s: user \"%s\": password without username (basic auth needs both)",
                           f->path, name);
        snprintf(what, sizeof what, "%s: user \"%s\": username", f->path, name);
        DE_TRY(check_header_safe(un, what, e));
        if (strchr(un, ':'))
            return de_errf(e, DE_EINVAL,
                           "%s: user \"%s\": username: contains ':', which basic auth cannot "
                           "carry",
                           f->path, name);
        snprintf(what, sizeof what, "%s: user \"%s\": password", f->path, name);
        DE_TRY(check_header_safe(pw ? pw : "", what, e));
        c->username = de_xstrdup(un);
        c->password = de_xstrdup(pw ? pw : "");
        size_t n = strlen(un) + strlen(c->password) + 2;
        char *up = de_xmalloc(n);
        snprintf(up, n, "%s:%s", un, c->password);
        c->basic = b64_encode((const unsigned char *)up, n - 1);
        wipe_free(up);
    }
    const char *ccd = str_field(u, "client-certificate-data");
    const char *ccf = str_field(u, "client-certificate");
    const char *ckd = str_field(u, "client-key-data");
    const char *ckf = str_field(u, "client-key");
    if (ccd && *ccd) {
        if (kc_base64_decode(ccd, &c->cert) != DE_OK)
            return de_errf(e, DE_EINVAL,
                           "%s: user \"%s\": client-certificate-data: not valid base64", f->path,
                           name);
    } else if (ccf && *ccf) {
        c->cert_file = join_dir(f->dir, ccf);
        snprintf(what, sizeof what, "%s: user \"%s\": client-certificate", f->path, name);
        DE_TRY(read_secret(c->cert_file, &c->cert, what, e));
    }
    if (ckd && *ckd) {
        if (kc_base64_decode(ckd, &c->key) != DE_OK)
            return de_errf(e, DE_EINVAL, "%s: user \"%s\": client-key-data: not valid base64",
                           f->path, name);
    } else if (ckf && *ckf) {
        c->key_file = join_dir(f->dir, ckf);
        snprintf(what, sizeof what, "%s: user \"%s\": client-key", f->path, name);
        DE_TRY(read_secret(c->key_file, &c->key, what, e));
    }
    if ((c->cert.len != 0) != (c->key.len != 0))
        return de_errf(e, DE_EINVAL,
                       "%s: user \"%s\": client-certificate and client-key must be given together",
                       f->path, name);
    return DE_OK;
}

static de_rc from_kubeconfig(kc_config *c, kcfile *files, size_t nf, const char *ctx_flag,
                             de_err *e)
{
    const char *ctx = ctx_flag && *ctx_flag ? ctx_flag : NULL;
    for (size_t i = 0; !ctx && i < nf; i++) {
        const char *cc = str_field(files[i].doc, "current-context");
        if (cc && *cc)
            ctx = cc;
    }
    const char *first = nf ? files[0].path : "kubeconfig";
    if (!ctx)
        return de_errf(e, DE_EINVAL, "%s: no current-context is set and --context was not given",
                       first);
    de_rc rc;
    const kcfile *cf = NULL, *clf = NULL, *uf = NULL;
    json_t *cx = find_named(files, nf, "contexts", "context", ctx, &cf, e, &rc);
    if (rc)
        return rc;
    if (!cx)
        return de_errf(e, DE_ENOTFOUND, "%s: context \"%s\" is not defined", first, ctx);
    c->context = de_xstrdup(ctx);
    const char *cluster = str_field(cx, "cluster");
    const char *user = str_field(cx, "user");
    const char *ns = str_field(cx, "namespace");
    if (ns && *ns)
        c->ns = de_xstrdup(ns);
    if (!cluster || !*cluster)
        return de_errf(e, DE_EINVAL, "%s: context \"%s\": cluster: required", cf->path, ctx);
    json_t *cl = find_named(files, nf, "clusters", "cluster", cluster, &clf, e, &rc);
    if (rc)
        return rc;
    if (!cl)
        return de_errf(e, DE_ENOTFOUND, "%s: context \"%s\": cluster \"%s\" is not defined",
                       cf->path, ctx, cluster);
    DE_TRY(apply_cluster(c, cl, clf, cluster, e));
    if (user && *user) {
        json_t *u = find_named(files, nf, "users", "user", user, &uf, e, &rc);
        if (rc)
            return rc;
        if (!u)
            return de_errf(e, DE_ENOTFOUND, "%s: context \"%s\": user \"%s\" is not defined",
                           cf->path, ctx, user);
        DE_TRY(apply_user(c, u, uf, user, e));
    }
    return DE_OK;
}

static de_rc from_in_cluster(kc_config *c, const kc_config_opts *o, const char *host,
                             const char *port, de_err *e)
{
    const char *dir = o->sa_dir ? o->sa_dir : SA_DIR;
    char p[1024];
    size_t n = strlen(host) + 32;
    c->server = de_xmalloc(n);
    if (strchr(host, ':'))
        snprintf(c->server, n, "https://[%s]:%s", host, port);
    else
        snprintf(c->server, n, "https://%s:%s", host, port);
    snprintf(p, sizeof p, "%s/token", dir);
    c->token_file = de_xstrdup(p);
    snprintf(p, sizeof p, "%s/ca.crt", dir);
    c->ca_file = de_xstrdup(p);
    DE_TRY(read_secret(c->ca_file, &c->ca, "in-cluster CA", e));
    snprintf(p, sizeof p, "%s/namespace", dir);
    kc_blob nsb = {0};
    de_err ign;
    de_err_clear(&ign);
    if (read_secret(p, &nsb, "namespace", &ign) == DE_OK) {
        c->ns = trim_dup((const char *)nsb.p, nsb.len);
        blob_free(&nsb);
    }
    c->source = de_xstrdup("in-cluster");
    return DE_OK;
}

/* The request and watch URLs are built in fixed buffers (kc_http.c,
 * kc_watch.c, kc_raw.c) that a path of bounded names always fits after a
 * server URL of at most this many bytes; real ones, path prefix included,
 * are a few dozen. */
#define KC_SERVER_MAX 512

/* Validate the server URL and split off its userinfo for redaction. */
static de_rc check_server(kc_config *c, de_err *e)
{
    /* Strip a trailing '/' so paths join cleanly. */
    size_t sl = strlen(c->server);
    if (sl > KC_SERVER_MAX)
        return de_errf(e, DE_EINVAL, "server URL: %zu bytes long, more than the %d allowed", sl,
                       KC_SERVER_MAX);
    while (sl > 0 && c->server[sl - 1] == '/')
        c->server[--sl] = 0;
    const char *auth = strstr(c->server, "://");
    auth = auth ? auth + 3 : c->server;
    size_t alen = strcspn(auth, "/?#");
    const char *at = NULL;
    for (const char *q = auth; q < auth + alen; q++)
        if (*q == '@')
            at = q;
    de_buf b;
    de_buf_init(&b, 16384);
    if (at) {
        c->userinfo = de_xstrndup(auth, (size_t)(at - auth));
        const char *colon = strchr(c->userinfo, ':');
        if (colon)
            c->userinfo_pw = de_xstrdup(colon + 1);
        de_buf_printf(&b, "%.*s[REDACTED]%s", (int)(auth - c->server), c->server, at);
    } else {
        de_buf_puts(&b, c->server);
    }
    c->shown = de_buf_take(&b);
    de_buf_free(&b);
    long ctl = ctl_at(c->server);
    if (ctl >= 0 || strchr(c->server, ' '))
        return de_errf(e, DE_EINVAL, "server URL: contains a %s at offset %ld",
                       ctl >= 0 ? "control character" : "space",
                       ctl >= 0 ? ctl : (long)(strchr(c->server, ' ') - c->server));
    if (strncmp(c->server, "https://", 8) && strncmp(c->server, "http://", 7))
        return de_errf(e, DE_EINVAL, "server \"%s\": must start with https:// or http://",
                       c->shown);
    return DE_OK;
}

de_rc kc_config_load(const kc_config_opts *o, kc_config **out, de_err *e)
{
    *out = NULL;
    kc_config *c = de_xcalloc(1, sizeof *c);
    c->token_period_ns = 60ull * 1000000000ull;
    kcfile files[16];
    size_t nf = 0;
    de_rc rc = DE_OK;
    bool missing;
    de_buf fl;
    de_buf_init(&fl, 8192);

    const char *envk = o->env_kubeconfig ? o->env_kubeconfig : getenv("KUBECONFIG");
    const char *home = o->home ? o->home : getenv("HOME");
    const char *host = o->env_host ? o->env_host : getenv("KUBERNETES_SERVICE_HOST");
    const char *port = o->env_port ? o->env_port : getenv("KUBERNETES_SERVICE_PORT_HTTPS");
    if (!o->env_port && (!port || !*port))
        port = getenv("KUBERNETES_SERVICE_PORT");

    if (o->kubeconfig && *o->kubeconfig) {
        rc = load_file(o->kubeconfig, &files[0], &missing, e);
        if (rc == DE_OK && missing)
            rc = de_errf(e, DE_ENOTFOUND, "%s: kubeconfig file does not exist", o->kubeconfig);
        if (rc == DE_OK)
            nf = 1;
    } else if (envk && *envk) {
        /* ':'-separated; missing files are skipped, as client-go does. */
        char *list = de_xstrdup(envk), *save = NULL;
        for (char *tok = strtok_r(list, ":", &save); tok && rc == DE_OK;
             tok = strtok_r(NULL, ":", &save)) {
            if (nf == DE_ARRAY_LEN(files)) {
                rc = de_errf(e, DE_EINVAL, "KUBECONFIG: more than %zu files",
                             DE_ARRAY_LEN(files));
                break;
            }
            bool dup = false;
            for (size_t i = 0; i < nf; i++)
                dup |= !strcmp(files[i].path, tok);
            if (dup)
                continue;
            rc = load_file(tok, &files[nf], &missing, e);
            if (rc == DE_OK && !missing)
                nf++;
        }
        free(list);
    } else if (home && *home) {
        char p[4096];
        snprintf(p, sizeof p, "%s/.kube/config", home);
        rc = load_file(p, &files[0], &missing, e);
        if (rc == DE_OK && !missing)
            nf = 1;
    }
    if (rc != DE_OK)
        goto done;

    for (size_t i = 0; i < nf; i++)
        de_buf_printf(&fl, "%s%s", i ? ":" : "", files[i].path);
    c->files = de_buf_take(&fl);

    if (nf > 0) {
        rc = from_kubeconfig(c, files, nf, o->context, e);
        if (rc == DE_OK)
            c->source = de_xstrdup("kubeconfig");
    } else if (o->master && *o->master) {
        c->source = de_xstrdup("master");
    } else if (!o->no_in_cluster && host && *host && port && *port) {
        rc = from_in_cluster(c, o, host, port, e);
    } else {
        rc = de_errf(e, DE_ENOTFOUND,
                     "no configuration: give --kubeconfig or --master, set KUBECONFIG, create "
                     "~/.kube/config, or run in a pod (KUBERNETES_SERVICE_HOST)");
    }
    if (rc == DE_OK && o->master && *o->master) {
        free(c->server);
        c->server = de_xstrdup(o->master);
    }
    if (rc == DE_OK && (!c->server || !*c->server))
        rc = de_errf(e, DE_EINVAL, "%s: cluster has no server URL",
                     c->files && *c->files ? c->files : "configuration");
    if (rc == DE_OK)
        rc = check_server(c, e);
    if (rc == DE_OK && c->token_file) {
        rc = read_token_file(c->token_file, &c->token, e);
        c->token_read_ns = de_now_ns();
    }
    if (!c->ns)
        c->ns = de_xstrdup("default");
    if (!c->context)
        c->context = de_xstrdup("");
    if (!c->files)
        c->files = de_xstrdup("");
done:
    for (size_t i = 0; i < nf; i++) {
        free(files[i].path);
        free(files[i].dir);
        json_decref(files[i].doc);
    }
    de_buf_free(&fl);
    if (rc != DE_OK) {
        kc_config_free(c);
        return rc;
    }
    *out = c;
    return DE_OK;
}

void kc_config_free(kc_config *c)
{
    if (!c)
        return;
    free(c->server);
    free(c->shown);
    wipe_free(c->userinfo);
    wipe_free(c->userinfo_pw);
    wipe_free(c->username);
    wipe_free(c->password);
    wipe_free(c->basic);
    free(c->source);
    free(c->context);
    free(c->ns);
    free(c->files);
    free(c->tls_server_name);
    blob_free(&c->ca);
    blob_free(&c->cert);
    if (c->key.p)
        memset(c->key.p, 0, c->key.len);
    blob_free(&c->key);
    free(c->ca_file);
    free(c->cert_file);
    free(c->key_file);
    wipe_free(c->token);
    wipe_free(c->prev_token);
    free(c->token_file);
    free(c);
}

const char *kc_config_server(const kc_config *c) { return c->shown; }
const char *kc_config_url(const kc_config *c) { return c->server; }
const char *kc_config_basic(const kc_config *c) { return c->basic; }
const char *kc_config_source(const kc_config *c) { return c->source; }
const char *kc_config_context(const kc_config *c) { return c->context; }
const char *kc_config_namespace(const kc_config *c) { return c->ns; }
void kc_config_set_token_period(kc_config *c, uint64_t ns) { c->token_period_ns = ns; }

const kc_blob *kc_config_ca(const kc_config *c) { return c->ca.len ? &c->ca : NULL; }
const kc_blob *kc_config_cert(const kc_config *c) { return c->cert.len ? &c->cert : NULL; }
const kc_blob *kc_config_key(const kc_config *c) { return c->key.len ? &c->key : NULL; }
bool kc_config_insecure(const kc_config *c) { return c->insecure; }

void kc_config_describe(const kc_config *c, de_buf *out)
{
    de_buf_printf(out, "server=%s source=%s", c->shown, c->source);
    if (*c->context)
        de_buf_printf(out, " context=%s", c->context);
    if (*c->files)
        de_buf_printf(out, " files=%s", c->files);
    de_buf_printf(out, " namespace=%s", c->ns);
    if (c->token_file)
        de_buf_printf(out, " tokenFile=%s", c->token_file);
    if (c->token && *c->token)
        de_buf_printf(out, " token=<redacted, %zu bytes>", strlen(c->token));
    if (c->basic)
        de_buf_printf(out, " username=%s password=<redacted>", c->username);
    if (c->cert.len)
        de_buf_printf(out, " client-certificate=%s", c->cert_file ? c->cert_file : "<data>");
    if (c->key.len)
        de_buf_puts(out, " client-key=<redacted>");
    if (c->ca.len)
        de_buf_printf(out, " certificate-authority=%s", c->ca_file ? c->ca_file : "<data>");
    if (c->insecure)
        de_buf_puts(out, " insecure-skip-tls-verify=true");
}

const char *kc_config_token(kc_config *c, bool force)
{
    if (c->token_file) {
        uint64_t now = de_now_ns();
        if (force || now - c->token_read_ns >= c->token_period_ns) {
            char *t = NULL;
            de_err er;
            de_err_clear(&er);
            if (read_token_file(c->token_file, &t, &er) == DE_OK) {
                if (c->token && strcmp(t, c->token)) {
                    wipe_free(c->prev_token);
                    c->prev_token = c->token;
                    c->token = t;
                } else if (!c->token) {
                    c->token = t;
                } else {
                    wipe_free(t);
                }
                c->token_problem[0] = 0;
            } else {
                /* Keep the last good token (the kubelet may be in the middle
                 * of its atomic swap) and say why the new one was refused. */
                snprintf(c->token_problem, sizeof c->token_problem, "%.500s", er.msg);
                c->token_problem_seq++;
            }
            c->token_read_ns = now;
        }
    }
    return c->token ? c->token : "";
}

const char *kc_config_token_problem(const kc_config *c, unsigned *seq)
{
    if (seq)
        *seq = c->token_problem_seq;
    return c->token_problem;
}

/* Replace [from, to) with "[REDACTED]", in place: the marker is cut to the
 * length it replaces, so the string never grows. */
static char *mask_range(char *from, char *to)
{
    static const char marker[] = "[REDACTED]";
    size_t ml = DE_MIN(sizeof marker - 1, (size_t)(to - from));
    memcpy(from, marker, ml);
    memmove(from + ml, to, strlen(to) + 1);
    return from + ml;
}

static void mask_all(char *s, const char *secret)
{
    size_t sl = secret ? strlen(secret) : 0;
    if (sl < 4) /* too short to be a real token; masking would mangle text */
        return;
    char *p = s;
    while ((p = strstr(p, secret)) != NULL)
        p = mask_range(p, p + sl);
}

/* Mask the value after each `kw` (up to whitespace or a quote) when it is
 * at least `min` characters long (and base64 for min > 1). */
static void mask_after(char *s, const char *kw, size_t min)
{
    char *p = s;
    while ((p = strstr(p, kw)) != NULL) {
        char *v = p + strlen(kw), *end = v;
        bool b64 = true;
        while (*end && !isspace((unsigned char)*end) && *end != '"' && *end != '\'') {
            b64 &= isalnum((unsigned char)*end) || *end == '+' || *end == '/' || *end == '=';
            end++;
        }
        p = (size_t)(end - v) >= min && (min == 1 || b64) ? mask_range(v, end) : v;
    }
}

void kc_redact(const kc_config *c, char *s)
{
    if (!s)
        return;
    if (c) {
        mask_all(s, c->token);
        mask_all(s, c->prev_token);
        mask_all(s, c->basic);
        mask_all(s, c->password);
        mask_all(s, c->userinfo);
        mask_all(s, c->userinfo_pw);
    }
    /* userinfo of any URL: scheme://user:pass@host -> scheme://[REDACTED]@host */
    for (char *p = s; (p = strstr(p, "://")) != NULL;) {
        char *auth = p + 3;
        size_t alen = strcspn(auth, "/?#\"' \t\r\n");
        char *at = NULL;
        for (char *q = auth; q < auth + alen; q++)
            if (*q == '@')
                at = q;
        if (at && at > auth && strncmp(auth, "[REDACTED]@", 11))
            mask_range(auth, at);
        p = auth;
    }
    /* Any "Bearer xyz" a server might echo back, and "Basic xyz" when xyz
     * looks like base64 credentials (not the words "Basic auth"). */
    mask_after(s, "Bearer ", 1);
    mask_after(s, "Basic ", 8);
}
