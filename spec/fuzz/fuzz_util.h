/*
 * fuzz_util.h - what the file-based fuzz targets share: one private
 * directory per process (under $TMPDIR), and writing an input into a file
 * there.  Header-only: each target is one translation unit.
 */
#ifndef FUZZ_UTIL_H
#define FUZZ_UTIL_H

#include "../../engine/base/de.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A directory of this process, made once, removed at exit. */
static char fuzz_dir_path[256];

static void fuzz_dir_rm(void)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", fuzz_dir_path);
    if (system(cmd) != 0)
        return;
}

static const char *fuzz_dir(void)
{
    if (!fuzz_dir_path[0]) {
        const char *t = getenv("TMPDIR");
        snprintf(fuzz_dir_path, sizeof fuzz_dir_path, "%s/draengine-fuzz-XXXXXX", t && *t ? t : "/tmp");
        if (!mkdtemp(fuzz_dir_path))
            abort();
        atexit(fuzz_dir_rm);
    }
    return fuzz_dir_path;
}

/* Write data to dir/name (replacing it); returns the path (static buffer). */
static const char *fuzz_write(const char *name, const void *data, size_t n)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", fuzz_dir(), name);
    FILE *f = fopen(path, "wb");
    if (!f)
        abort();
    if (n && fwrite(data, 1, n, f) != n)
        abort();
    fclose(f);
    return path;
}

/* The manifest targets' input: one mode byte, then the text (at most 1 MiB). */
typedef struct fuzz_in {
    uint8_t mode;
    const char *text;
    size_t len;
} fuzz_in;

/* False when there is no input to take. */
static inline int fuzz_mode_text(const uint8_t *data, size_t size, fuzz_in *in)
{
    if (size < 1 || size > (1u << 20))
        return 0;
    in->mode = data[0];
    in->text = (const char *)data + 1;
    in->len = size - 1;
    return 1;
}

/* A report sink that drops what it is given: invalid input is a normal
 * outcome for a target. */
static inline void fuzz_quiet(void *ctx, const de_err *e)
{
    (void)ctx, (void)e;
}

#endif
