/*
 * dec_net.c - a claim's status.devices[].networkData, checked as the API
 * server checks it (validateNetworkDeviceData and apimachinery's
 * IsValidInterfaceAddress, 1.37): interfaceName at most 256 bytes,
 * hardwareAddress at most 128, at most 16 `ips`, each unique and an
 * interface address in CIDR form (the address of the interface, not its
 * network: "10.9.8.7/24") written canonically, that is as Go prints the
 * parsed address and prefix ("010.1.2.3/24" parses, as netutils' sloppy
 * parser allows, but is not canonical: "10.1.2.3/24").
 */
#include "dec.h"

#include <stdio.h>
#include <string.h>

#define MAX_IPS 16
#define MAX_IFNAME 256
#define MAX_HWADDR 128

/* Go 1.16's parseIPv4 (leading zeros allowed): the whole of s[0..n). */
static bool parse_v4(const char *s, size_t n, uint8_t out[4])
{
    size_t p = 0;
    for (int i = 0; i < 4; i++) {
        if (i) {
            if (p >= n || s[p] != '.')
                return false;
            p++;
        }
        unsigned v = 0, digits = 0;
        while (p < n && s[p] >= '0' && s[p] <= '9') {
            v = v * 10 + (unsigned)(s[p++] - '0');
            if (v > 255)
                return false;
            digits++;
        }
        if (!digits)
            return false;
        out[i] = (uint8_t)v;
    }
    return p == n;
}

/* Go 1.16's parseIPv6 (no zone): 16 bytes. */
static bool parse_v6(const char *s, size_t n, uint8_t ip[16])
{
    memset(ip, 0, 16);
    int ellipsis = -1, i = 0;
    size_t p = 0;
    if (n >= 2 && s[0] == ':' && s[1] == ':') {
        ellipsis = 0;
        p = 2;
        if (p == n)
            return true;
    }
    while (i < 16) {
        unsigned v = 0, digits = 0;
        size_t q = p;
        while (q < n && de_hexval(s[q]) >= 0) {
            v = v * 16 + (unsigned)de_hexval(s[q++]);
            if (++digits > 6)
                return false;
        }
        if (!digits || v > 0xFFFF)
            return false;
        if (q < n && s[q] == '.') {
            /* an IPv4 tail: the last 4 bytes, or after an ellipsis */
            if ((ellipsis < 0 && i != 12) || i + 4 > 16)
                return false;
            if (!parse_v4(s + p, n - p, ip + i))
                return false;
            i += 4;
            p = n;
            break;
        }
        ip[i] = (uint8_t)(v >> 8);
        ip[i + 1] = (uint8_t)v;
        i += 2;
        p = q;
        if (p == n)
            break;
        if (s[p] != ':' || p + 1 == n)
            return false;
        p++;
        if (s[p] == ':') {
            if (ellipsis >= 0)
                return false;
            ellipsis = i;
            if (++p == n)
                break;
        }
    }
    if (p != n)
        return false;
    if (i < 16) {
        if (ellipsis < 0)
            return false;
        int k = 16 - i;
        memmove(ip + ellipsis + k, ip + ellipsis, (size_t)(i - ellipsis));
        memset(ip + ellipsis, 0, (size_t)k);
    } else if (ellipsis >= 0) {
        return false;
    }
    return true;
}

/* net.IP.String() of a 16-byte address. */
static void ip_string(const uint8_t ip[16], char *out, size_t cap)
{
    static const uint8_t v4prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (!memcmp(ip, v4prefix, 12)) {
        snprintf(out, cap, "%u.%u.%u.%u", ip[12], ip[13], ip[14], ip[15]);
        return;
    }
    int e0 = -1, e1 = -1;
    for (int i = 0; i < 16; i += 2) {
        int j = i;
        while (j < 16 && !ip[j] && !ip[j + 1])
            j += 2;
        if (j > i && j - i > e1 - e0) {
            e0 = i;
            e1 = j;
            i = j;
        }
    }
    if (e1 - e0 <= 2)
        e0 = e1 = -1;
    size_t n = 0;
    out[0] = 0;
    for (int i = 0; i < 16 && n < cap; i += 2) {
        if (i == e0) {
            n += (size_t)snprintf(out + n, cap - n, "::");
            i = e1;
            if (i >= 16)
                break;
        } else if (i > 0) {
            n += (size_t)snprintf(out + n, cap - n, ":");
        }
        if (n < cap)
            n += (size_t)snprintf(out + n, cap - n, "%x", (unsigned)(ip[i] << 8 | ip[i + 1]));
    }
}

/* 0: valid and canonical; 1: not an address in CIDR form; 2: not canonical
 * (canonical form written to canon). */
static int check_cidr(const char *s, size_t n, char *canon, size_t cap)
{
    const char *slash = memchr(s, '/', n);
    if (!slash)
        return 1;
    size_t an = (size_t)(slash - s), mn = n - an - 1;
    uint8_t ip[16] = {0};
    unsigned bits;
    uint8_t v4[4];
    if (parse_v4(s, an, v4)) {
        ip[10] = ip[11] = 0xff;
        memcpy(ip + 12, v4, 4);
        bits = 32;
    } else if (parse_v6(s, an, ip)) {
        bits = 128;
    } else {
        return 1;
    }
    unsigned mask = 0, digits = 0;
    for (size_t i = 0; i < mn; i++) {
        if (s[an + 1 + i] < '0' || s[an + 1 + i] > '9')
            return 1;
        mask = mask * 10 + (unsigned)(s[an + 1 + i] - '0');
        digits++;
        if (mask >= 0xFFFFFF) /* Go's dtoi gives up there */
            return 1;
    }
    if (!digits || mask > bits)
        return 1;
    /* an IPv4 address read from IPv6 text keeps the IPv6 prefix length,
     * which IsValidInterfaceAddress brings back to IPv4 */
    static const uint8_t v4prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (bits == 128 && !memcmp(ip, v4prefix, 12) && mask > 32)
        mask -= 96;
    char a[64];
    ip_string(ip, a, sizeof a);
    snprintf(canon, cap, "%s/%u", a, mask);
    return strlen(canon) == n && !memcmp(canon, s, n) ? 0 : 2;
}

void dec_network_data(dec *d, json_t *nd)
{
    static const char *const known[] = {"interfaceName", "ips", "hardwareAddress", NULL};
    if (!dec_as_obj(d, nd))
        return;
    dec_known(d, nd, known, NULL);
    const char *s;
    size_t n;
    if (dec_get_str(d, nd, "interfaceName", &s, &n) && n > MAX_IFNAME && d->validate)
        dec_too_long(d, "interfaceName", MAX_IFNAME);
    if (dec_get_str(d, nd, "hardwareAddress", &s, &n) && n > MAX_HWADDR && d->validate)
        dec_too_long(d, "hardwareAddress", MAX_HWADDR);
    json_t *ips = dec_get_arr(d, nd, "ips");
    dec_items it;
    if (!dec_items_begin(d, ips, "ips", d->validate ? MAX_IPS : 0, &it))
        return;
    for (json_t *v; (v = dec_items_next(d, &it));) {
        if (!dec_as_str(d, v, &s, &n) || !d->validate)
            continue;
        for (size_t j = 0; j + 1 < it.i; j++)
            if (json_equal(json_array_get(ips, j), v)) {
                dec_duplicate(d, NULL, s);
                break;
            }
        char canon[128], msg[200];
        int r = check_cidr(s, n, canon, sizeof canon);
        if (r == 1) {
            dec_invalid_str(d, NULL, s, "must be a valid address in CIDR form, (e.g. 10.9.8.7/24 or 2001:db8::1/64)");
        } else if (r == 2) {
            snprintf(msg, sizeof msg, "must be in canonical form (\"%s\")", canon);
            dec_invalid_str(d, NULL, s, msg);
        }
    }
    dec_items_end(d, &it);
}
