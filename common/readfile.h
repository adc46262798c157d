/*
 * readfile: read a whole regular file with a size cap.
 */
#ifndef AGENTTEST_READFILE_H
#define AGENTTEST_READFILE_H

#include <stddef.h>

/*
 * Read the regular file at `path` (at most `max` bytes) into a fresh
 * NUL-terminated allocation in *out, its length in *len. Returns 0, or -1
 * with errno set: EISDIR or EINVAL (not a regular file; a FIFO never
 * blocks), EFBIG (larger than max), EIO (the file shrank while being read),
 * or the error of open/fstat/read. With nofollow, a symbolic link as the
 * last component is refused (ELOOP).
 */
int read_file_max(const char *path, size_t max, int nofollow, char **out, size_t *len);

#endif
