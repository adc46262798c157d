/*
 * secret: the server secret file (AGENTTEST_SECRET_FILE).
 *
 * 32 random bytes that key the BLAKE2b hash of API tokens, so that a copy of
 * the database alone is not enough to verify or brute-force tokens. Created
 * on first start (O_EXCL, mode 0600, fsync'd); afterwards it must be a
 * regular file of exactly 32 bytes that neither the group nor others can
 * read or write, else every program refuses to run.
 */
#ifndef AGENTTEST_SECRET_H
#define AGENTTEST_SECRET_H

#include <stdbool.h>

#include "buf.h"

#define SECRET_BYTES 32

/*
 * Read the key at path into key. When the file does not exist and create is
 * true, make it first. Returns false with a message in err on any problem
 * (missing file with create false, loose mode, wrong size, I/O error).
 */
bool secret_load(const char *path, bool create, unsigned char key[SECRET_BYTES], struct buf *err);

#endif
