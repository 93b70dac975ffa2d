/*
 * dir.c - directory listings and path tests (dir.h).
 */
#include "dir.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

bool de_is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

bool de_is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

bool de_ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

char *de_path_join(const char *a, const char *b)
{
    size_t n = strlen(a) + strlen(b) + 2;
    char *s = de_xmalloc(n);
    snprintf(s, n, "%s/%s", a, b);
    return s;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

bool de_dir_names(const char *dir, char ***names, size_t *n)
{
    *names = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d)
        return false;
    struct dirent *de;
    size_t cap = 0;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            *names = de_xrealloc(*names, cap * sizeof **names);
        }
        (*names)[(*n)++] = de_xstrdup(de->d_name);
    }
    closedir(d);
    if (*n)
        qsort(*names, *n, sizeof **names, cmp_str);
    return true;
}

void de_names_free(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}
