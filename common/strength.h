/*
 * strength: the MANTIS rule for a configured shared secret
 * (MANTIS_AUTH_TOKEN, spec/mantis.md §5.1): at least 12 characters, at least
 * two of the classes {lowercase, uppercase, digit, other}, and an estimated
 * entropy len × log2(number of distinct characters) of at least 40 bits.
 */
#ifndef AGENTTEST_STRENGTH_H
#define AGENTTEST_STRENGTH_H

#include <stdbool.h>

#include "buf.h"

#define STRENGTH_MIN_LEN 12
#define STRENGTH_MIN_CLASSES 2
#define STRENGTH_MIN_BITS 40.0

/* True if s passes the rule; otherwise false and the reason in why. */
bool strength_check(const char *s, struct buf *why);

#endif
