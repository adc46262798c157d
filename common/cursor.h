/*
 * cursor: opaque, authenticated pagination cursors (issue 11 item 15).
 *
 * A list answers `next_cursor`, a string the client passes back unchanged
 * as `?cursor=`. The position inside it (a sequence number, an offset) is
 * the server's business: a raw global sequence number told a client how
 * many rows everyone had made and let it page from a position it chose.
 *
 * Theory of operation. The position is sealed with libsodium's
 * XChaCha20-Poly1305-IETF AEAD, so a client can neither read nor forge nor
 * alter one, and the list it belongs to is bound as associated data, so a
 * cursor of one list (or one user, or one run) does not open for another:
 *
 *   key   = crypto_kdf_derive_from_key(32, subkey 1, context "cursorv1",
 *                                      server secret of AGENTTEST_SECRET_FILE)
 *   nonce = 24 random bytes, fresh on every cursor
 *   ad    = "agenttest-cursor" || version (1 byte) || kind (1 byte) || scope
 *   token = version (1) || nonce (24) || sealed position (8, big-endian) || tag (16)
 *   text  = URL-safe base64 of token without padding (66 characters)
 *
 * The scope is what the caller's list is keyed by (e.g. "u:<user id>" for a
 * user's runs, the run id for its trades). The version byte lets a later
 * format or key be told apart; a cursor of an unknown version is malformed.
 * A new server secret invalidates every cursor (they are short-lived).
 */
#ifndef AGENTTEST_CURSOR_H
#define AGENTTEST_CURSOR_H

#include <stdbool.h>
#include <stdint.h>

#include "secret.h"

#define CURSOR_VERSION   1
#define CURSOR_TEXT_LEN  66                   /* characters, without the NUL */
#define CURSOR_SCOPE_MAX 128                  /* bytes of scope */

/* The list a cursor pages (bound into it; values are part of the format). */
enum cursor_kind {
	CURSOR_RUNS        = 1,  /* GET /runs: runs.seq */
	CURSOR_EVALUATIONS = 2,  /* GET /api/evaluations: evaluations.seq */
	CURSOR_TRADES      = 3,  /* GET /runs/{id}/trades: fill offset */
	CURSOR_AGENT_EVENTS = 4, /* GET /api/agents/{id}/events: agent_events.seq (SSE ids) */
	CURSOR__MAX
};

/* Why a cursor was refused. */
enum cursor_err {
	CURSOR_OK = 0,
	CURSOR_MALFORMED,   /* not base64url of a token of this version and length */
	CURSOR_UNVERIFIED,  /* altered, from another list or scope, or another server secret */
	CURSOR_ERR__MAX
};

/*
 * Seal position pos (>= 0) of list kind within scope (NUL-terminated, at
 * most CURSOR_SCOPE_MAX bytes) into out, NUL-terminated. Returns false only
 * for a bad argument (kind, scope length, negative pos), leaving out "".
 */
bool cursor_encode(const unsigned char key[SECRET_BYTES], enum cursor_kind kind, const char *scope, int64_t pos,
		   char out[CURSOR_TEXT_LEN + 1]);

/*
 * Open text as a cursor of list kind within scope: CURSOR_OK with the
 * position (>= 0) in *pos, else the reason (and *pos untouched).
 */
enum cursor_err cursor_decode(const unsigned char key[SECRET_BYTES], enum cursor_kind kind, const char *scope,
			      const char *text, int64_t *pos);

/* A sentence for err, for the 400 bad_cursor message. */
const char *cursor_strerror(enum cursor_err err);

#endif
