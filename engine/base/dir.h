/*
 * dir.h - reading the directory trees the engine loads (policy directories,
 * packs, their specs).  Listings come in strcmp order with hidden entries
 * left out, so every machine walks a tree the same way (and a revision hash
 * over it comes out the same).
 */
#ifndef DE_DIR_H
#define DE_DIR_H

#include "de.h"

bool de_is_dir(const char *path);
bool de_is_file(const char *path); /* a regular file */
bool de_ends_with(const char *s, const char *suffix);
/* "a/b" (malloc'd). */
char *de_path_join(const char *a, const char *b);

/* The names in `dir`, sorted, ".x" names left out (malloc'd; free with
 * de_names_free). false, with errno from opendir, when dir cannot be read. */
bool de_dir_names(const char *dir, char ***names, size_t *n);
void de_names_free(char **names, size_t n);

#endif
