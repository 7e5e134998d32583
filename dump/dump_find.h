/*
 * dump_find.h — which segment orbit-dump reads (dump_find.c): a pid's, a
 * name in /dev/shm, or a path; the list of them; removing a dead one.
 */
#ifndef ORBIT_REPLAY_DUMP_FIND_H
#define ORBIT_REPLAY_DUMP_FIND_H

#include <stddef.h>
#include <stdio.h>

#include "segment.h"

/* The path of the segment target names: a pid (its segment in /dev/shm: the
 * live process's, else its newest), a file name in /dev/shm, or a path.
 * 0, or -1 after one line on err. */
int orbit__dump_resolve(const char *target, char *path, size_t len, FILE *err);
/* Opens it read-only (no symbolic link, a regular file, the caller's own
 * or the caller is root): the descriptor, or -1 after one line. */
int orbit__dump_open(const char *path, FILE *err);
/* orbit-dump --list: every segment of /dev/shm; 0 or 1. */
int orbit__dump_list(FILE *out, FILE *err);
/* orbit-dump --remove: the segment, if its process is proven dead; 0 or 1. */
int orbit__dump_remove(const char *target, FILE *out, FILE *err);

#endif
