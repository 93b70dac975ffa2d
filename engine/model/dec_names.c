/*
 * dec_names.c - the name formats of apimachinery's validation package (DNS
 * labels and subdomains, label keys and values, C identifiers) and the DRA
 * ones built on them (driver, pool, QualifiedName, FullyQualifiedName),
 * with the API server's messages.
 */
#include "dec.h"

#include <ctype.h>
#include <string.h>

#define DNS1123_LABEL_MSG                                                                         \
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and " \
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "   \
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
#define DNS1123_SUBDOMAIN_MSG                                                                     \
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "  \
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used " \
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
#define QUALIFIED_NAME_MSG                                                                        \
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end " \
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for " \
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
#define LABEL_VALUE_MSG                                                                           \
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "  \
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "            \
    "'my_value',  or '12345', regex used for validation is "                                      \
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
#define C_IDENT_MSG                                                                               \
    "a valid C identifier must start with alphabetic character or '_', followed by a string of " \
    "alphanumeric characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName', regex used "   \
    "for validation is '[A-Za-z_][A-Za-z0-9_]*')"

static bool lower_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
static bool alnum(char c) { return isalnum((unsigned char)c) != 0; }

static bool label_chars(const char *s, size_t n)
{
    if (n == 0 || !lower_alnum(s[0]) || !lower_alnum(s[n - 1]))
        return false;
    for (size_t i = 1; i + 1 < n; i++)
        if (!lower_alnum(s[i]) && s[i] != '-')
            return false;
    return true;
}

bool dg_is_dns_label(const char *s, size_t n)
{
    return n <= 63 && label_chars(s, n);
}

static bool subdomain_chars(const char *s, size_t n)
{
    if (n == 0)
        return false;
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i == n || s[i] == '.') {
            if (!label_chars(s + start, i - start))
                return false;
            start = i + 1;
        }
    }
    return true;
}

bool dg_is_dns_subdomain(const char *s, size_t n)
{
    return n <= 253 && subdomain_chars(s, n);
}

static bool name_part(const char *s, size_t n)
{
    if (n == 0 || n > 63 || !alnum(s[0]) || !alnum(s[n - 1]))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
            return false;
    return true;
}

bool dg_is_label_name(const char *s, size_t n)
{
    const char *slash = memchr(s, '/', n);
    if (!slash)
        return name_part(s, n);
    size_t pl = (size_t)(slash - s);
    if (memchr(slash + 1, '/', n - pl - 1))
        return false;
    return pl > 0 && dg_is_dns_subdomain(s, pl) && name_part(slash + 1, n - pl - 1);
}

bool dg_is_label_value(const char *s, size_t n)
{
    return n == 0 || name_part(s, n);
}

bool dg_is_c_ident(const char *s, size_t n)
{
    if (n == 0 || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
        return false;
    for (size_t i = 1; i < n; i++)
        if (!(isalnum((unsigned char)s[i]) || s[i] == '_'))
            return false;
    return true;
}

bool dec_dns_label(dec *d, const char *child, const char *s, size_t n)
{
    if (dg_is_dns_label(s, n))
        return true;
    if (n > 63)
        dec_invalid_strn(d, child, s, n, "must be no more than 63 characters");
    if (!label_chars(s, n))
        dec_invalid_strn(d, child, s, n, DNS1123_LABEL_MSG);
    return false;
}

uint32_t dec_label_field(dec *d, json_t *obj, const char *key, const char **s, size_t *len)
{
    *s = "";
    *len = 0;
    dec_get_str(d, obj, key, s, len);
    uint32_t id = dec_intern(d, *s, *len);
    if (d->validate) {
        if (!*len)
            dec_required(d, key, NULL);
        else
            dec_dns_label(d, key, *s, *len);
    }
    return id;
}

bool dec_dns_subdomain(dec *d, const char *child, const char *s, size_t n)
{
    if (dg_is_dns_subdomain(s, n))
        return true;
    if (n > 253)
        dec_invalid_strn(d, child, s, n, "must be no more than 253 characters");
    if (!subdomain_chars(s, n))
        dec_invalid_strn(d, child, s, n, DNS1123_SUBDOMAIN_MSG);
    return false;
}

/* ValidateCSIDriverName: required, <= 63, subdomain after lower-casing. */
bool dec_driver_name(dec *d, const char *child, const char *s, size_t n)
{
    if (n == 0) {
        dec_required(d, child, NULL);
        return false;
    }
    bool ok = true;
    if (n > 63) {
        dec_too_long(d, child, 63);
        ok = false;
    }
    char low[300];
    size_t m = n < sizeof low - 1 ? n : sizeof low - 1;
    for (size_t i = 0; i < m; i++)
        low[i] = (char)tolower((unsigned char)s[i]);
    low[m] = 0;
    if (!subdomain_chars(low, m) || m > 253) {
        dec_invalid_strn(d, child, s, n, DNS1123_SUBDOMAIN_MSG);
        ok = false;
    }
    return ok;
}

bool dec_pool_name(dec *d, const char *child, const char *s, size_t n)
{
    if (n == 0) {
        dec_required(d, child, NULL);
        return false;
    }
    bool ok = true;
    if (n > 253) {
        dec_too_long(d, child, 253);
        ok = false;
    }
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i == n || s[i] == '/') {
            if (!dec_dns_subdomain(d, child, s + start, i - start))
                ok = false;
            start = i + 1;
        }
    }
    return ok;
}

bool dec_label_name(dec *d, const char *child, const char *s, size_t n)
{
    if (dg_is_label_name(s, n))
        return true;
    const char *slash = memchr(s, '/', n);
    if (n == 0) {
        dec_invalid_strn(d, child, s, n, "name part must be non-empty");
    } else if (slash && memchr(slash + 1, '/', n - (size_t)(slash - s) - 1)) {
        dec_invalid_strn(d, child, s, n,
                        "a qualified name must consist of alphanumeric characters, '-', '_' or "
                        "'.', and must start and end with an alphanumeric character (e.g. "
                        "'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
                        "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS "
                        "subdomain prefix and '/' (e.g. 'example.com/MyName')");
    } else {
        const char *name = slash ? slash + 1 : s;
        size_t nl = slash ? n - (size_t)(slash - s) - 1 : n;
        if (slash) {
            size_t pl = (size_t)(slash - s);
            if (pl == 0)
                dec_invalid_strn(d, child, s, n, "prefix part must be non-empty");
            else if (!dg_is_dns_subdomain(s, pl))
                dec_invalid_strn(d, child, s, n, "prefix part " DNS1123_SUBDOMAIN_MSG);
        }
        if (nl == 0)
            dec_invalid_strn(d, child, s, n, "name part must be non-empty");
        else if (nl > 63)
            dec_invalid_strn(d, child, s, n, "name part must be no more than 63 characters");
        else if (!name_part(name, nl))
            dec_invalid_strn(d, child, s, n, QUALIFIED_NAME_MSG);
    }
    return false;
}

bool dec_label_value(dec *d, const char *child, const char *s, size_t n)
{
    if (dg_is_label_value(s, n))
        return true;
    if (n > 63)
        dec_invalid_strn(d, child, s, n, "must be no more than 63 characters");
    else
        dec_invalid_strn(d, child, s, n, LABEL_VALUE_MSG);
    return false;
}

bool dec_c_ident(dec *d, const char *child, const char *s, size_t n)
{
    bool ok = true;
    if (n > 32) {
        dec_too_long(d, child, 32);
        ok = false;
    }
    if (!dg_is_c_ident(s, n)) {
        dec_invalid_strn(d, child, s, n, C_IDENT_MSG);
        ok = false;
    }
    return ok;
}

bool dec_qualified_name(dec *d, const char *child, const char *s, size_t n)
{
    const char *slash = memchr(s, '/', n);
    if (!slash)
        return dec_c_ident(d, child, s, n);
    size_t pl = (size_t)(slash - s), il = n - pl - 1;
    if (memchr(slash + 1, '/', il)) {
        dec_invalid_strn(d, child, s, n, "must not contain more than one slash");
        return false;
    }
    bool ok = true;
    if (pl == 0) {
        dec_invalid_str(d, child, "", "the domain must not be empty");
        ok = false;
    } else if (!dec_driver_name(d, child, s, pl)) {
        ok = false;
    }
    if (il == 0) {
        dec_invalid_str(d, child, "", "the name must not be empty");
        ok = false;
    } else if (!dec_c_ident(d, child, slash + 1, il)) {
        ok = false;
    }
    return ok;
}

bool dec_fq_name(dec *d, const char *child, const char *s, size_t n, uint32_t *domain, uint32_t *id)
{
    bool ok = dec_qualified_name(d, child, s, n);
    const char *slash = memchr(s, '/', n);
    if (!slash) {
        dec_invalid_strn(d, child, s, n, "a fully qualified name must be a domain and a name separated by a slash");
        ok = false;
    }
    if (slash) {
        if (domain)
            *domain = de_intern(d->in, s, (size_t)(slash - s));
        if (id)
            *id = de_intern(d->in, slash + 1, n - (size_t)(slash - s) - 1);
    } else {
        if (domain)
            *domain = 0;
        if (id)
            *id = de_intern(d->in, s, n);
    }
    return ok;
}

/* v1helper.IsNativeResource: no domain, or a kubernetes.io one. */
bool dec_native_resource_name(const char *s, size_t n)
{
    if (!memchr(s, '/', n))
        return true;
    static const char kio[] = "kubernetes.io/";
    for (size_t i = 0; i + sizeof kio - 1 <= n; i++)
        if (!memcmp(s + i, kio, sizeof kio - 1))
            return true;
    return false;
}

/* v1helper.IsExtendedResourceName: not a native (kubernetes.io) name, not
 * "requests."-prefixed, and "requests.<name>" must be a qualified name. */
bool dec_extended_resource_name(const char *s, size_t n)
{
    if (dec_native_resource_name(s, n))
        return false;
    if (n >= 9 && !memcmp(s, "requests.", 9))
        return false;
    char buf[600];
    if (n + 9 >= sizeof buf)
        return false;
    memcpy(buf, "requests.", 9);
    memcpy(buf + 9, s, n);
    return dg_is_label_name(buf, n + 9);
}

static bool hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

bool dec_uuid(dec *d, const char *child, const char *s, size_t n)
{
    bool ok = n == 36;
    for (size_t i = 0; ok && i < 36; i++) {
        if (i == 8 || i == 13 || i == 18 || i == 23)
            ok = s[i] == '-';
        else
            ok = hex(s[i]);
    }
    if (!ok) {
        dec_invalid_strn(d, child, s, n,
                        "uid must be in RFC 4122 normalized form, `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` "
                        "with lowercase hexadecimal characters");
    }
    return ok;
}
