/*
 * kc_objs.c - the writes the scheduler makes: claim updates (finalizer),
 * claim status updates (allocation + reservedFor), pod bindings and Events,
 * plus the time formats the API uses.
 */
#define _POSIX_C_SOURCE 200809L
#include "kc_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *md_str(json_t *obj, const char *k)
{
    const char *v = json_string_value(json_object_get(json_object_get(obj, "metadata"), k));
    return v ? v : "";
}

de_rc kc_get(kc_client *cl, kc_res r, const char *ns, const char *name, json_t **out, de_err *e)
{
    char path[1024];
    kc_object_path(r, ns, name, NULL, path, sizeof path);
    return kc_request(cl, "GET", path, NULL, NULL, NULL, out, e);
}

de_rc kc_claim_update_status(kc_client *cl, json_t *claim, json_t **out, de_err *e)
{
    char path[1024];
    kc_object_path(KC_RES_CLAIMS, md_str(claim, "namespace"), md_str(claim, "name"), "status",
                   path, sizeof path);
    return kc_request(cl, "PUT", path, claim, NULL, NULL, out, e);
}

de_rc kc_claim_update_peek(kc_client *cl, json_t *claim, kc_peek *pk, de_err *e)
{
    char path[1024];
    kc_object_path(KC_RES_CLAIMS, md_str(claim, "namespace"), md_str(claim, "name"), NULL, path,
                   sizeof path);
    return kc_request_peek(cl, "PUT", path, claim, NULL, pk, e);
}

de_rc kc_pod_bind(kc_client *cl, const char *ns, const char *pod, const char *uid,
                  const char *node, de_err *e)
{
    char path[1024];
    kc_object_path(KC_RES_PODS, ns, pod, "binding", path, sizeof path);
    json_t *md = json_pack("{s:s, s:s}", "name", pod, "namespace", ns);
    if (uid && *uid)
        json_object_set_new(md, "uid", json_string(uid));
    json_t *b = json_pack("{s:s, s:s, s:o, s:{s:s, s:s, s:s}}", "apiVersion", "v1", "kind",
                          "Binding", "metadata", md, "target", "apiVersion", "v1", "kind", "Node",
                          "name", node);
    de_rc rc = kc_request(cl, "POST", path, b, NULL, NULL, NULL, e);
    json_decref(b);
    return rc;
}

void kc_format_microtime(int64_t unix_ns, char *buf, size_t cap)
{
    time_t s = (time_t)(unix_ns / 1000000000);
    long us = (long)((unix_ns % 1000000000) / 1000);
    struct tm tm;
    gmtime_r(&s, &tm);
    snprintf(buf, cap, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, us);
}

bool kc_parse_time(const char *s, int64_t *unix_ns)
{
    int Y, M, D, h, m, sec, n = 0;
    if (!s || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &Y, &M, &D, &h, &m, &sec, &n) != 6)
        return false;
    const char *p = s + n;
    int64_t frac = 0;
    if (*p == '.') {
        int64_t scale = 100000000;
        p++;
        if (*p < '0' || *p > '9')
            return false;
        while (*p >= '0' && *p <= '9') {
            frac += (*p - '0') * scale;
            scale /= 10;
            p++;
        }
    }
    int off = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int oh, om;
        if (sscanf(p + 1, "%2d:%2d", &oh, &om) != 2)
            return false;
        off = (oh * 60 + om) * 60 * (*p == '-' ? -1 : 1);
        p += 6;
    } else {
        return false;
    }
    if (*p)
        return false;
    struct tm tm = {0};
    tm.tm_year = Y - 1900;
    tm.tm_mon = M - 1;
    tm.tm_mday = D;
    tm.tm_hour = h;
    tm.tm_min = m;
    tm.tm_sec = sec;
    time_t t = timegm(&tm);
    *unix_ns = ((int64_t)t - off) * 1000000000 + frac;
    return true;
}

/* Copy at most max bytes of s without cutting a UTF-8 sequence. */
static json_t *utf8_cut(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n <= max)
        return json_string(s);
    while (max > 0 && ((unsigned char)s[max] & 0xC0) == 0x80)
        max--;
    return json_stringn(s, max);
}

de_rc kc_event_create(kc_client *cl, const kc_event *ev, de_err *e)
{
    json_t *reg = ev->regarding;
    const char *ns = md_str(reg, "namespace");
    if (!*ns)
        ns = "default";
    int64_t now = ev->when_ns ? ev->when_ns : de_wall_ns();
    char when[64];
    kc_format_microtime(now, when, sizeof when);
    /* Named as client-go's event recorder names them, <object>.<hex ns>: a
     * generateName of "<object>." is refused by the API server (a name prefix
     * must itself be a valid name, and it may not end in a dot). */
    char name[300];
    snprintf(name, sizeof name, "%.230s.%llx", md_str(reg, "name"), (unsigned long long)now);
    json_t *ref = json_object();
    json_t *kind = json_object_get(reg, "kind"), *av = json_object_get(reg, "apiVersion");
    if (kind)
        json_object_set(ref, "kind", kind);
    if (av)
        json_object_set(ref, "apiVersion", av);
    json_object_set_new(ref, "name", json_string(md_str(reg, "name")));
    if (*md_str(reg, "namespace"))
        json_object_set_new(ref, "namespace", json_string(md_str(reg, "namespace")));
    if (*md_str(reg, "uid"))
        json_object_set_new(ref, "uid", json_string(md_str(reg, "uid")));
    if (*md_str(reg, "resourceVersion"))
        json_object_set_new(ref, "resourceVersion", json_string(md_str(reg, "resourceVersion")));
    json_t *body = json_pack("{s:s, s:s, s:{s:s, s:s}, s:s, s:o, s:o, s:o, s:o, s:s, s:s}",
                             "apiVersion", "events.k8s.io/v1", "kind", "Event", "metadata",
                             "name", name, "namespace", ns, "eventTime", when, "regarding",
                             ref, "reason", utf8_cut(ev->reason ? ev->reason : "", 128), "action",
                             utf8_cut(ev->action ? ev->action : "", 128), "note",
                             utf8_cut(ev->note ? ev->note : "", 1024), "type",
                             ev->type ? ev->type : "Normal", "reportingController",
                             ev->reporting_controller ? ev->reporting_controller : "draengine");
    json_object_set_new(body, "reportingInstance",
                        json_string(ev->reporting_instance ? ev->reporting_instance : "draengine"));
    char path[512];
    snprintf(path, sizeof path, "/apis/events.k8s.io/v1/namespaces/%s/events", ns);
    de_rc rc = kc_request(cl, "POST", path, body, NULL, NULL, NULL, e);
    json_decref(body);
    return rc;
}
