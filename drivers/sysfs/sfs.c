/*
 * sfs.c - see sfs.h.
 */
#include "sfs.h"

#include "../../engine/base/dir.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Read exactly n hex digits; returns the end or NULL. */
static const char *hexn(const char *s, size_t min, size_t max, unsigned *out)
{
    unsigned v = 0;
    size_t k = 0;
    while (k < max && de_hexval((unsigned char)s[k]) >= 0) {
        v = v * 16 + (unsigned)de_hexval((unsigned char)s[k]);
        k++;
    }
    if (k < min)
        return NULL;
    *out = v;
    return s + k;
}

/* DDDD[D]:BB:DD.F, the form sysfs names devices with. */
static bool parse_bdf(const char *name, sfs_pci *p)
{
    const char *s = hexn(name, 4, 8, &p->dom);
    if (!s || *s++ != ':')
        return false;
    if (!(s = hexn(s, 2, 2, &p->bus)) || *s++ != ':')
        return false;
    if (!(s = hexn(s, 2, 2, &p->dev)) || *s++ != '.' || p->dev > 0x1f)
        return false;
    if (!(s = hexn(s, 1, 1, &p->fn)) || *s || p->fn > 7)
        return false;
    snprintf(p->bdf, sizeof p->bdf, "%04x:%02x:%02x.%x", p->dom, p->bus, p->dev, p->fn);
    return true;
}

/* Read a small sysfs file, trimmed. Returns 1 ok, 0 absent, -1 error. */
static int read_attr(const char *dir, const char *file, char *buf, size_t cap, de_err *e)
{
    char path[PATH_MAX];
    int w = snprintf(path, sizeof path, "%s/%s", dir, file);
    if (w < 0 || (size_t)w >= sizeof path) {
        de_errf(e, DE_EINVAL, "%s: path too long", dir);
        return -1;
    }
    /* a regular file, opened without blocking: a FIFO planted under
     * --root would hang a plain fopen (sysfs attributes are regular files) */
    struct stat lst;
    if (lstat(path, &lst) != 0 && errno == ENOENT)
        return 0;
    int fd;
    if (de_open_input(path, false, &fd, NULL, e) != DE_OK)
        return -1;
    size_t n = 0;
    while (n < cap - 1) {
        ssize_t r = read(fd, buf + n, cap - 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            de_errf(e, DE_EIO, "%s: read failed: %s", path, strerror(errno));
            close(fd);
            return -1;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    buf[n] = 0;
    while (n > 0 && isspace((unsigned char)buf[n - 1]))
        buf[--n] = 0;
    return 1;
}

static de_rc read_hex(const char *dir, const char *file, unsigned max, unsigned *out, de_err *e)
{
    char b[64];
    int r = read_attr(dir, file, b, sizeof b, e);
    if (r < 0)
        return DE_EIO;
    if (r == 0)
        return de_errf(e, DE_EINVAL, "%s/%s: missing", dir, file);
    const char *s = b;
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
        s += 2;
    unsigned v;
    const char *end = hexn(s, 1, 8, &v);
    if (!end || *end || v > max)
        return de_errf(e, DE_EINVAL, "%s/%s: \"%s\" is not a hex number", dir, file, b);
    *out = v;
    return DE_OK;
}

static bool is_root_component(const char *c, size_t len)
{
    /* pci<hex domain>:<2 hex bus> */
    if (len < 7 || memcmp(c, "pci", 3) != 0)
        return false;
    size_t i = 3, d = 0;
    while (i < len && de_hexval((unsigned char)c[i]) >= 0)
        i++, d++;
    if (d < 4 || i >= len || c[i] != ':')
        return false;
    i++;
    return len - i == 2 && de_hexval((unsigned char)c[i]) >= 0 && de_hexval((unsigned char)c[i + 1]) >= 0;
}

static void find_root(const char *devices_real, const char *path, sfs_pci *p)
{
    char real[PATH_MAX];
    if (!realpath(path, real))
        return;
    const char *s = real;
    size_t dl = devices_real ? strlen(devices_real) : 0;
    if (dl && !strncmp(real, devices_real, dl) && real[dl] == '/')
        s = real + dl;
    while (*s) {
        while (*s == '/')
            s++;
        const char *end = strchr(s, '/');
        size_t len = end ? (size_t)(end - s) : strlen(s);
        if (is_root_component(s, len)) {
            if (len < sizeof p->root) {
                for (size_t i = 0; i < len; i++)
                    p->root[i] = (char)tolower((unsigned char)s[i]);
                p->root[len] = 0;
                p->has_root = true;
            }
            return;
        }
        s += len;
    }
}

static int cmp_pci(const void *a, const void *b)
{
    const sfs_pci *x = a, *y = b;
    if (x->dom != y->dom)
        return x->dom < y->dom ? -1 : 1;
    if (x->bus != y->bus)
        return x->bus < y->bus ? -1 : 1;
    if (x->dev != y->dev)
        return x->dev < y->dev ? -1 : 1;
    return x->fn < y->fn ? -1 : x->fn > y->fn;
}

static de_rc scan_one(const char *devdir, const char *devices_real, sfs_pci *p, de_err *e)
{
    DE_TRY(read_hex(devdir, "vendor", 0xffff, &p->vendor, e));
    DE_TRY(read_hex(devdir, "device", 0xffff, &p->device, e));
    DE_TRY(read_hex(devdir, "class", 0xffffff, &p->class_code, e));
    char b[64];
    int r = read_attr(devdir, "numa_node", b, sizeof b, e);
    if (r < 0)
        return DE_EIO;
    p->numa = -1;
    if (r > 0) {
        char *end;
        errno = 0;
        long v = strtol(b, &end, 10);
        if (errno || end == b || *end || v < -1 || v > 65535)
            return de_errf(e, DE_EINVAL, "%s/numa_node: \"%s\" is not a NUMA node number", devdir, b);
        p->numa = (int)v;
    }
    char link[PATH_MAX], lp[PATH_MAX];
    int w = snprintf(lp, sizeof lp, "%s/driver", devdir);
    ssize_t n = w > 0 && (size_t)w < sizeof lp ? readlink(lp, link, sizeof link - 1) : -1;
    if (n > 0) {
        link[n] = 0;
        const char *base = strrchr(link, '/');
        base = base ? base + 1 : link;
        size_t bl = strlen(base);
        if (bl < sizeof p->kdriver)
            memcpy(p->kdriver, base, bl + 1);
    }
    find_root(devices_real, devdir, p);
    return DE_OK;
}

de_rc sfs_scan(const char *root, sfs_pci **out, size_t *nout, de_err *e)
{
    char dir[PATH_MAX], devices[PATH_MAX], devices_real[PATH_MAX];
    if (!root)
        root = "/sys";
    if (strlen(root) > PATH_MAX - 64)
        return de_errf(e, DE_EINVAL, "sysfs root path too long");
    snprintf(dir, sizeof dir, "%s/bus/pci/devices", root);
    snprintf(devices, sizeof devices, "%s/devices", root);
    bool have_dr = realpath(devices, devices_real) != NULL;
    DIR *d = opendir(dir);
    if (!d)
        return de_errf(e, DE_EIO, "cannot read %s: %s", dir, strerror(errno));
    sfs_pci *v = NULL;
    size_t n = 0, cap = 0;
    de_rc rc = DE_OK;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        sfs_pci p;
        memset(&p, 0, sizeof p);
        if (!parse_bdf(de->d_name, &p))
            continue; /* ".", "..", and anything that is not a PCI address */
        if (n == SFS_MAX_DEVICES) {
            rc = de_errf(e, DE_ENOMEM, "%s: more than %d PCI devices", dir, SFS_MAX_DEVICES);
            break;
        }
        char devdir[PATH_MAX];
        int w = snprintf(devdir, sizeof devdir, "%s/%s", dir, de->d_name);
        if (w < 0 || (size_t)w >= sizeof devdir) {
            rc = de_errf(e, DE_EINVAL, "%s: path too long", dir);
            break;
        }
        rc = scan_one(devdir, have_dr ? devices_real : NULL, &p, e);
        if (rc != DE_OK)
            break;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            v = de_xrealloc(v, cap * sizeof *v);
        }
        v[n++] = p;
    }
    closedir(d);
    if (rc != DE_OK) {
        free(v);
        return rc;
    }
    if (n)
        qsort(v, n, sizeof *v, cmp_pci);
    *out = v;
    *nout = n;
    return DE_OK;
}

bool sfs_class_prefix_valid(const char *p)
{
    if (p[0] != '0' || (p[1] != 'x' && p[1] != 'X'))
        return false;
    size_t n = strlen(p + 2);
    if (n < 1 || n > 6)
        return false;
    for (size_t i = 0; i < n; i++)
        if (de_hexval((unsigned char)p[2 + i]) < 0)
            return false;
    return true;
}

static bool class_matches(const sfs_opts *o, unsigned code)
{
    char text[8];
    snprintf(text, sizeof text, "%06x", code);
    if (o->nclass_prefixes == 0)
        return (code >> 16) != 0x06; /* bridges are plumbing, not devices */
    for (size_t i = 0; i < o->nclass_prefixes; i++) {
        const char *p = o->class_prefixes[i] + 2;
        size_t k = 0;
        while (p[k] && tolower((unsigned char)p[k]) == text[k])
            k++;
        if (!p[k])
            return true;
    }
    return false;
}

/* DNS subdomain, at most `max` characters, lower case. */
static bool dns_subdomain(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n == 0 || n > max)
        return false;
    bool start = true;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        if (c == '.') {
            if (start || s[i - 1] == '-')
                return false;
            start = true;
            continue;
        }
        if (c == '-') {
            if (start)
                return false;
        } else if (!alnum) {
            return false;
        }
        start = false;
    }
    return !start && s[n - 1] != '-';
}

static json_t *str_attr(const char *v)
{
    return json_pack("{s:s}", "string", v);
}

static json_t *device_json(const sfs_pci *p)
{
    char name[48], b[16];
    snprintf(name, sizeof name, "pci-%04x-%02x-%02x-%x", p->dom, p->bus, p->dev, p->fn);
    json_t *attrs = json_object();
    snprintf(b, sizeof b, "0x%06x", p->class_code);
    json_object_set_new(attrs, "class", str_attr(b));
    snprintf(b, sizeof b, "0x%04x", p->device);
    json_object_set_new(attrs, "deviceID", str_attr(b));
    if (p->kdriver[0])
        json_object_set_new(attrs, "kernelDriver", str_attr(p->kdriver));
    snprintf(b, sizeof b, "0x%04x", p->vendor);
    json_object_set_new(attrs, "vendorID", str_attr(b));
    json_object_set_new(attrs, "resource.kubernetes.io/pciBusID", str_attr(p->bdf));
    if (p->has_root)
        json_object_set_new(attrs, "resource.kubernetes.io/pcieRoot", str_attr(p->root));
    if (p->numa >= 0)
        json_object_set_new(attrs, "resource.kubernetes.io/numaNode", json_pack("{s:i}", "int", p->numa));
    return json_pack("{s:s, s:o}", "name", name, "attributes", attrs);
}

de_rc sfs_discover(const sfs_opts *o, sfs_emit_fn fn, void *ctx, de_err *e)
{
    if (!o->driver || !dns_subdomain(o->driver, 63))
        return de_errf(e, DE_EINVAL, "driver name \"%s\" must be a lower-case DNS subdomain of at most 63 characters",
                       o->driver ? o->driver : "");
    for (size_t i = 0; i < o->nclass_prefixes; i++)
        if (!sfs_class_prefix_valid(o->class_prefixes[i]))
            return de_errf(e, DE_EINVAL, "class prefix \"%s\" must be 0x followed by 1 to 6 hex digits",
                           o->class_prefixes[i]);
    char node[256];
    if (o->node) {
        if (strlen(o->node) >= sizeof node)
            return de_errf(e, DE_EINVAL, "node name is longer than 253 characters");
        snprintf(node, sizeof node, "%s", o->node);
    } else {
        if (gethostname(node, sizeof node) != 0)
            return de_errf(e, DE_EIO, "gethostname: %s", strerror(errno));
        node[sizeof node - 1] = 0;
        for (char *s = node; *s; s++)
            *s = (char)tolower((unsigned char)*s);
    }
    if (!dns_subdomain(node, 253))
        return de_errf(e, DE_EINVAL, "node name \"%s\" is not a DNS subdomain (give one with --node)", node);

    sfs_pci *devs = NULL;
    size_t n = 0;
    DE_TRY(sfs_scan(o->root, &devs, &n, e));
    size_t keep = 0;
    for (size_t i = 0; i < n; i++)
        if (class_matches(o, devs[i].class_code))
            devs[keep++] = devs[i];
    size_t nslices = keep ? (keep + SFS_SLICE_DEVICES - 1) / SFS_SLICE_DEVICES : 1;
    de_rc rc = DE_OK;
    for (size_t s = 0; s < nslices && rc == DE_OK; s++) {
        json_t *arr = json_array();
        for (size_t i = s * SFS_SLICE_DEVICES; i < keep && i < (s + 1) * SFS_SLICE_DEVICES; i++)
            json_array_append_new(arr, device_json(&devs[i]));
        char name[512];
        snprintf(name, sizeof name, "%s-%s-%zu", node, o->driver, s);
        json_t *slice = json_pack("{s:s, s:s, s:{s:s}, s:{s:s, s:s, s:{s:s, s:i, s:I}, s:o}}",
                                  "apiVersion", "resource.k8s.io/v1", "kind", "ResourceSlice",
                                  "metadata", "name", name,
                                  "spec", "driver", o->driver, "nodeName", node,
                                  "pool", "name", node, "generation", 1, "resourceSliceCount",
                                  (json_int_t)nslices, "devices", arr);
        if (!slice) {
            rc = de_errf(e, DE_ENOMEM, "cannot build slice");
            break;
        }
        rc = fn(ctx, slice, e);
        json_decref(slice);
    }
    free(devs);
    return rc;
}
