/*
 * db: MariaDB access through prepared statements only.
 *
 * Theory of operation. A `struct db` is one connection owned by one process
 * (a FastCGI worker, the CLI, the runner); it is never shared across fork().
 * db_exec() takes an SQL text with `?` placeholders, typed arguments and
 * typed result columns; statements are prepared once per connection and kept
 * in a small cache keyed by the SQL text, so the steady state is
 * execute + fetch only. Values never enter SQL text.
 *
 * Connection loss (server restarted, killed connection, socket gone) closes
 * the connection and drops the statement cache; the next db_exec() connects
 * again. A failed connect is not retried for DB_RETRY_INTERVAL_MS, so a down
 * server costs one fast failure per request instead of a connect timeout.
 * A statement flagged DB_IDEMPOTENT whose execution hit a lost connection is
 * retried once on a fresh connection (the server restarted between two
 * requests of an idle worker is the common case); other statements report
 * DB_UNAVAILABLE, because they may or may not have run.
 *
 * The connection uses utf8mb4, time_zone '+00:00' and a strict sql_mode.
 */
#ifndef AGENTTEST_DB_H
#define AGENTTEST_DB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dburl.h"

#define DB_RETRY_INTERVAL_MS 1000
#define DB_STMT_CACHE 64

enum db_status {
	DB_OK,
	DB_UNAVAILABLE, /* cannot connect, or the connection was lost */
	DB_DUPLICATE,   /* a unique key was violated */
	DB_ERROR,       /* any other failure (message in db_error()) */
	DB_CONFLICT,    /* a deadlock or a lock wait timeout: the transaction may be run again */
	DB__MAX
};

enum db_type {
	DB_T_NULL,
	DB_T_INT,  /* long long */
	DB_T_TEXT, /* bytes (+ NUL added on results) */
	DB_T_BLOB, /* bytes */
};

/* One `?` argument. */
struct db_arg {
	enum db_type type;
	long long    i;
	const void  *p;
	size_t       len;
};

#define DB_ARG_INT(v)      ((struct db_arg){ .type = DB_T_INT, .i = (v) })
#define DB_ARG_TEXT(s)     ((struct db_arg){ .type = DB_T_TEXT, .p = (s), .len = strlen(s) })
#define DB_ARG_TEXTN(s, n) ((struct db_arg){ .type = DB_T_TEXT, .p = (s), .len = (n) })
#define DB_ARG_BLOB(b, n)  ((struct db_arg){ .type = DB_T_BLOB, .p = (b), .len = (n) })
#define DB_ARG_NULL        ((struct db_arg){ .type = DB_T_NULL })

/*
 * One result column. The caller sets type and, for TEXT/BLOB, buf and cap
 * (TEXT keeps one byte for the NUL). A value longer than its buffer is an
 * error (DB_ERROR), never silently truncated. After each row: is_null, i
 * (INT) or len (TEXT/BLOB).
 */
struct db_col {
	enum db_type  type;
	long long     i;
	char         *buf;
	size_t        cap;
	unsigned long len;
	bool          is_null;
	/* private */
	char          null_flag;
	char          err_flag;
};

#define DB_COL_INT            { .type = DB_T_INT }
#define DB_COL_TEXT(b)        { .type = DB_T_TEXT, .buf = (b), .cap = sizeof(b) }
#define DB_COL_BLOB(b)        { .type = DB_T_BLOB, .buf = (b), .cap = sizeof(b) }

/* Called for each row; return false to stop reading (remaining rows are discarded). */
typedef bool (*db_row_fn)(void *ctx, const struct db_col *cols, size_t ncols);

/* What a statement did. */
struct db_result {
	uint64_t affected;
	uint64_t insert_id;
	uint64_t rows;
};

enum db_flags {
	DB_IDEMPOTENT = 1, /* safe to run again after a lost connection */
};

struct db;

/* A connection object for url (copied); does not connect yet. */
struct db *db_new(const struct dburl *url);
/* Connect if not connected (subject to the retry interval). */
enum db_status db_connect(struct db *db);
/* Check the server is reachable: ping when connected, else connect. */
enum db_status db_ping(struct db *db);
/*
 * Run sql with args; for each result row fill cols and call row(ctx, ...)
 * (row may be NULL to ignore rows). res (optional) receives counts.
 */
enum db_status db_exec(struct db *db, const char *sql, const struct db_arg *args, size_t nargs,
                       struct db_col *cols, size_t ncols, db_row_fn row, void *ctx,
                       struct db_result *res, unsigned flags);
struct buf;
/*
 * db_exec() without flags for code that reports errors into a buffer (the
 * runner's job queue and kinds): 0, or -1 with "database: <message>"
 * appended to err (db_util.c).
 */
int db_run(struct db *db, const char *sql, const struct db_arg *args, size_t nargs, struct db_col *cols,
           size_t ncols, db_row_fn row, void *ctx, struct db_result *res, struct buf *err);
/* Row callback of a one-row read: sets *(bool *)ctx and stops (the row's
 * values stay in the columns). */
bool db_row_once(void *ctx, const struct db_col *cols, size_t ncols);
/* Run trusted SQL text that may hold several statements (migrations only). */
enum db_status db_exec_script(struct db *db, const char *sql, size_t len);
/*
 * Transactions. db_begin() connects if needed and starts one; while it is
 * open no statement is retried on a fresh connection (that would silently
 * run outside the transaction): a lost connection is DB_UNAVAILABLE and the
 * transaction is gone. db_commit()/db_rollback() end it.
 */
enum db_status db_begin(struct db *db);
enum db_status db_commit(struct db *db);
/* Roll back if a transaction is open (harmless otherwise). */
void db_rollback(struct db *db);
/* Last error message (never NULL). */
const char *db_error(const struct db *db);
/* How many changes took effect so far (commits, and autocommit statements
 * that changed rows): a caller that sees it unchanged across a failed piece
 * of work knows nothing of that work was kept and may run it again. */
unsigned long db_writes(const struct db *db);
/* MariaDB error number of the last failure (0 if none). */
unsigned db_errno(const struct db *db);
/* Name of a status ("ok", "unavailable", ...). */
const char *db_strerror(enum db_status st);
/* Called after each successful re-connection (not the first connection). */
void db_set_reconnect_hook(struct db *db, void (*hook)(void));
/*
 * Make every transaction of this handle READ COMMITTED, as the session's
 * default set when it connects (and again on every re-connection), so a
 * caller needs no SET TRANSACTION round trip before each transaction. Call
 * before the first statement (aborts on a connected handle).
 */
void db_set_read_committed(struct db *db);
/* True when db_set_read_committed was called on db. */
bool db_read_committed(const struct db *db);
/* Close and free. */
void db_free(struct db *db);

#endif
