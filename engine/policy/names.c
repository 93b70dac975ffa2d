/*
 * names.c - attribute domains and their ownership: which names a policy may
 * own (DNS subdomains, C identifiers, the standard domains only attribute
 * by attribute), whether an ownership entry covers a name, whether two
 * entries overlap, and which policy of a set owns a name.
 */
#include "pol_int.h"

#include <string.h>

/* ---- names ----------------------------------------------------------------- */

static bool is_lower_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

/* DNS subdomain as Kubernetes uses for attribute domains (at most 63 bytes
 * in a QualifiedName). */
bool pol_valid_domain(const char *s, size_t n)
{
    if (n == 0 || n > 63)
        return false;
    size_t label = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '.') {
            if (label == 0 || s[i - 1] == '-')
                return false;
            label = 0;
            continue;
        }
        if (!is_lower_alnum(c) && c != '-')
            return false;
        if (label == 0 && c == '-')
            return false;
        if (++label > 63)
            return false;
    }
    return label > 0 && s[n - 1] != '-';
}

/* C identifier of at most 32 bytes (Kubernetes attribute IDs). */
bool pol_valid_identifier(const char *s, size_t n)
{
    if (n == 0 || n > 32)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
        if (!alpha && !(i > 0 && c >= '0' && c <= '9'))
            return false;
    }
    return true;
}

static bool suffix_domain(const char *s, size_t n, const char *d)
{
    size_t m = strlen(d);
    if (n == m)
        return memcmp(s, d, n) == 0;
    return n > m && s[n - m - 1] == '.' && memcmp(s + n - m, d, m) == 0;
}

bool pol_is_standard_domain(const char *s, size_t n)
{
    return suffix_domain(s, n, "k8s.io") || suffix_domain(s, n, "kubernetes.io");
}

/* An ownership entry: a whole domain, or one qualified attribute. */
void pol_split_entry(const char *e, const char **dom, size_t *dlen, const char **name, size_t *nlen)
{
    const char *slash = strchr(e, '/');
    *dom = e;
    *dlen = slash ? (size_t)(slash - e) : strlen(e);
    *name = slash ? slash + 1 : NULL;
    *nlen = slash ? strlen(slash + 1) : 0;
}

bool pol_entry_covers(const char *entry, const char *dom, size_t dlen, const char *name, size_t nlen)
{
    const char *ed, *en;
    size_t edl, enl;
    pol_split_entry(entry, &ed, &edl, &en, &enl);
    if (edl != dlen || memcmp(ed, dom, dlen))
        return false;
    if (!en)
        return true;
    return name && enl == nlen && !memcmp(en, name, nlen);
}

bool pol_owns(const pol_policy *p, const char *dom, size_t dlen, const char *name, size_t nlen)
{
    for (uint32_t i = 0; i < p->ndomains; i++)
        if (pol_entry_covers(p->domains[i], dom, dlen, name, nlen))
            return true;
    return false;
}

bool pol_entries_overlap(const char *a, const char *b)
{
    const char *ad, *an, *bd, *bn;
    size_t adl, anl, bdl, bnl;
    pol_split_entry(a, &ad, &adl, &an, &anl);
    pol_split_entry(b, &bd, &bdl, &bn, &bnl);
    if (adl != bdl || memcmp(ad, bd, adl))
        return false;
    if (!an || !bn)
        return true;
    return anl == bnl && !memcmp(an, bn, anl);
}

int pol_set_owner(const pol_set *s, const char *domain, const char *name)
{
    for (uint32_t i = 0; i < s->npols; i++)
        if (pol_owns(s->pols[i], domain, strlen(domain), name, strlen(name)))
            return (int)i;
    return -1;
}
