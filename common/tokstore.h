/*
 * tokstore: users and API tokens in MariaDB (tables of sql/001_init.sql).
 * Shared by the CLI (create, list, revoke) and the FastCGI workers (lookup,
 * touch). Only token hashes are stored; see token.h.
 */
#ifndef AGENTTEST_TOKSTORE_H
#define AGENTTEST_TOKSTORE_H

#include <stdbool.h>
#include <stdint.h>

#include "buf.h"
#include "db.h"
#include "token.h"

#define TOKSTORE_NAME_MAX 64
#define TOKSTORE_TOUCH_INTERVAL_S 60 /* last_used_at is written at most this often */

enum tokstore_role {
	TOKSTORE_ROLE_USER,
	TOKSTORE_ROLE_ADMIN,
};

/* Who a valid token belongs to. */
struct tokstore_identity {
	long long          token_id;
	long long          user_id;
	char               name[TOKSTORE_NAME_MAX + 1];
	enum tokstore_role role;
	long long          last_used_age_s; /* seconds since last use; -1 never used */
};

/* "admin" / "user" -> role; false if neither. */
bool tokstore_role_parse(const char *s, enum tokstore_role *out);
/* Name of a role. */
const char *tokstore_role_name(enum tokstore_role r);
/* True for a valid user name: 1..64 of [A-Za-z0-9._@-]. */
bool tokstore_name_ok(const char *s);

/*
 * Create a token for user `name` (the user is created with `role` if new; an
 * existing user must already have that role, else DB_DUPLICATE with a message).
 * The token text goes to token (shown once), its row id to *id.
 */
enum db_status tokstore_create(struct db *db, const unsigned char key[SECRET_BYTES], const char *name,
                               enum tokstore_role role, char token[TOKEN_TEXT_LEN + 1], long long *id,
                               struct buf *err);

/*
 * Look up an unrevoked token by hash. DB_OK with *found set; the stored hash
 * is compared again in constant time.
 */
enum db_status tokstore_lookup(struct db *db, const unsigned char hash[TOKEN_HASH_BYTES],
                               struct tokstore_identity *who, bool *found);

/* Record a use of the token now (call when last_used_age_s is -1 or >= the interval). */
enum db_status tokstore_touch(struct db *db, long long token_id);

/* Revoke token id; *found false if no such unrevoked token. */
enum db_status tokstore_revoke(struct db *db, long long id, bool *found);

/* One row of tokstore_list. Times are "YYYY-MM-DD HH:MM:SS.mmm" UTC or "". */
struct tokstore_row {
	long long id;
	char      user[TOKSTORE_NAME_MAX + 1];
	char      role[8];
	char      prefix[17];
	char      created_at[32];
	char      last_used_at[32];
	char      revoked_at[32];
};

/* Call fn for each token, oldest first. */
enum db_status tokstore_list(struct db *db, void (*fn)(void *ctx, const struct tokstore_row *row), void *ctx);

#endif
