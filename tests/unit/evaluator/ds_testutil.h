/*
 * ds_testutil: file helpers for the dataset, importer and synth unit tests
 * (temporary directories, byte flips, in-place edits, fixtures).
 */
#ifndef AGENTTEST_TESTS_DS_TESTUTIL_H
#define AGENTTEST_TESTS_DS_TESTUTIL_H

#include <stddef.h>

/* Create a fresh temporary directory; its path goes into buf. Aborts on error. */
void ds_tmpdir(char *buf, size_t len);
/* rm -rf path (files and directories below it). */
void ds_rmtree(const char *path);
/* Number of entries in a directory (without . and ..). */
int ds_count_entries(const char *dir);
/* XOR byte `off` of file `path` with 0x01. */
void ds_flip_byte(const char *path, long off);
/* Replace the first occurrence of `from` with `to` in file `path`; aborts if absent. */
void ds_replace_in_file(const char *path, const char *from, const char *to);
/* Write `text` to dir/name (created or truncated). */
void ds_write_text(const char *dir, const char *name, const char *text);

#endif
