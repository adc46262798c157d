/*
 * uuid.h: the identifier syntax the API and the runner agree on for runs,
 * evaluations and every other UUID-keyed row.
 */
#ifndef AGENTTEST_COMMON_UUID_H
#define AGENTTEST_COMMON_UUID_H

#include <stdbool.h>

/* True if s is a canonical lower-case UUID (8-4-4-4-12 hex digits); false for NULL. */
bool uuid_is_canonical(const char *s);

#endif
