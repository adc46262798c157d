#include "db.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mysql.h>
#include <errmsg.h>
#include <mysqld_error.h>

#include "xalloc.h"

#define DB_MAX_ARGS 64

struct db_slot {
	char       *sql;  /* own copy: callers may free or reuse their SQL buffer */
	MYSQL_STMT *stmt;
};

struct db {
	struct dburl   url;
	MYSQL         *my;              /* NULL while disconnected */
	bool           ever_connected;
	long long      next_attempt_ms; /* after a failed connect */
	char           err[512];
	unsigned       err_no;
	struct db_slot cache[DB_STMT_CACHE];
	size_t         ncache;
	void         (*hook)(void);
	bool           in_tx;
	bool           read_committed;  /* every session READ COMMITTED (db_set_read_committed) */
	unsigned long  writes;          /* commits and autocommit changes that took effect */
};

static const char *const db_status_names[DB__MAX] = { "ok", "unavailable", "duplicate", "error", "conflict" };

const char *db_strerror(enum db_status st)
{
	return st < DB__MAX ? db_status_names[st] : "unknown";
}

/* Monotonic milliseconds. */
static long long db_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Duplicate s or NULL. */
static char *db_dup(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

struct db *db_new(const struct dburl *url)
{
	struct db *db = xcalloc(1, sizeof *db);
	db->url.user = db_dup(url->user);
	db->url.password = db_dup(url->password);
	db->url.host = db_dup(url->host);
	db->url.port = url->port;
	db->url.database = db_dup(url->database);
	db->url.socket = db_dup(url->socket);
	snprintf(db->err, sizeof db->err, "not connected");
	return db;
}

void db_set_reconnect_hook(struct db *db, void (*hook)(void))
{
	db->hook = hook;
}

void db_set_read_committed(struct db *db)
{
	if (db->my != NULL)
		abort();   /* a contract violation: the setting is part of the connection's start */
	db->read_committed = true;
}

bool db_read_committed(const struct db *db)
{
	return db->read_committed;
}

/* True for MariaDB errors that mean the connection is gone. */
static bool db_errno_lost(unsigned e)
{
	switch (e) {
	case CR_SERVER_GONE_ERROR:
	case CR_SERVER_LOST:
	case CR_CONNECTION_ERROR:
	case CR_CONN_HOST_ERROR:
	case CR_SERVER_LOST_EXTENDED:
	case CR_COMMANDS_OUT_OF_SYNC:
	case ER_CONNECTION_KILLED:
	case ER_SERVER_SHUTDOWN:
	case ER_UNKNOWN_STMT_HANDLER:
	case 4031: /* ER_CLIENT_INTERACTION_TIMEOUT */
		return true;
	default:
		return false;
	}
}

/* Close the connection and forget every prepared statement. */
static void db_disconnect(struct db *db)
{
	for (size_t i = 0; i < db->ncache; i++) {
		mysql_stmt_close(db->cache[i].stmt);
		free(db->cache[i].sql);
	}
	db->ncache = 0;
	db->in_tx = false;
	if (db->my != NULL)
		mysql_close(db->my);
	db->my = NULL;
}

/* Record an error message and number. */
static void db_seterr(struct db *db, unsigned no, const char *msg)
{
	db->err_no = no;
	snprintf(db->err, sizeof db->err, "%s", msg);
}

/* Map the error (no, msg) to a status; a lost connection disconnects. */
static enum db_status db_fail(struct db *db, unsigned no, const char *msg)
{
	db_seterr(db, no, msg);
	if (db_errno_lost(no)) {
		db_disconnect(db);
		return DB_UNAVAILABLE;
	}
	if (no == ER_LOCK_DEADLOCK || no == ER_LOCK_WAIT_TIMEOUT)
		return DB_CONFLICT;
	return no == ER_DUP_ENTRY ? DB_DUPLICATE : DB_ERROR;
}

enum db_status db_connect(struct db *db)
{
	unsigned int timeout = 3, io_timeout = 30;
	my_bool off = 0;
	if (db->my != NULL)
		return DB_OK;
	long long now = db_now_ms();
	if (now < db->next_attempt_ms)
		return DB_UNAVAILABLE;
	MYSQL *m = mysql_init(NULL);
	if (m == NULL) {
		db_seterr(db, 0, "mysql_init failed");
		return DB_ERROR;
	}
	mysql_optionsv(m, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
	mysql_optionsv(m, MYSQL_OPT_READ_TIMEOUT, &io_timeout);
	mysql_optionsv(m, MYSQL_OPT_WRITE_TIMEOUT, &io_timeout);
	mysql_optionsv(m, MYSQL_OPT_RECONNECT, &off);
	mysql_optionsv(m, MYSQL_SET_CHARSET_NAME, "utf8mb4");
	/* the init command runs again on every (re)connection, so the session
	 * settings hold for every statement the handle ever sends */
	mysql_optionsv(m, MYSQL_INIT_COMMAND,
	               db->read_committed ?
	               "SET time_zone='+00:00', sql_mode='STRICT_ALL_TABLES,NO_ZERO_DATE,NO_ZERO_IN_DATE,"
	               "ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION', tx_isolation='READ-COMMITTED'" :
	               "SET time_zone='+00:00', sql_mode='STRICT_ALL_TABLES,NO_ZERO_DATE,NO_ZERO_IN_DATE,"
	               "ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION'");
	if (mysql_real_connect(m, db->url.host, db->url.user, db->url.password, db->url.database,
	                       db->url.port, db->url.socket, CLIENT_MULTI_RESULTS) == NULL) {
		db_seterr(db, mysql_errno(m), mysql_error(m));
		mysql_close(m);
		db->next_attempt_ms = now + DB_RETRY_INTERVAL_MS;
		return DB_UNAVAILABLE;
	}
	db->my = m;
	db->next_attempt_ms = 0;
	if (db->ever_connected && db->hook != NULL)
		db->hook();
	db->ever_connected = true;
	return DB_OK;
}

enum db_status db_ping(struct db *db)
{
	if (db->my != NULL && mysql_ping(db->my) != 0) {
		db_seterr(db, mysql_errno(db->my), mysql_error(db->my));
		db_disconnect(db);
	}
	return db_connect(db);
}

/* The cached statement for sql, preparing it if needed; NULL on error. */
static MYSQL_STMT *db_prepare(struct db *db, const char *sql, enum db_status *st)
{
	for (size_t i = 0; i < db->ncache; i++)
		if (strcmp(db->cache[i].sql, sql) == 0)
			return db->cache[i].stmt;
	MYSQL_STMT *s = mysql_stmt_init(db->my);
	if (s == NULL) {
		*st = db_fail(db, mysql_errno(db->my), mysql_error(db->my));
		return NULL;
	}
	if (mysql_stmt_prepare(s, sql, (unsigned long)strlen(sql)) != 0) {
		unsigned no = mysql_stmt_errno(s);
		char msg[512];
		snprintf(msg, sizeof msg, "%s", mysql_stmt_error(s));
		mysql_stmt_close(s);
		*st = db_fail(db, no, msg);
		return NULL;
	}
	if (db->ncache == DB_STMT_CACHE) {
		/* Full: evict the oldest entry. */
		mysql_stmt_close(db->cache[0].stmt);
		free(db->cache[0].sql);
		memmove(db->cache, db->cache + 1, (DB_STMT_CACHE - 1) * sizeof db->cache[0]);
		db->ncache--;
	}
	db->cache[db->ncache].sql = xstrdup(sql);
	db->cache[db->ncache].stmt = s;
	db->ncache++;
	return s;
}

/* Fill the MYSQL_BIND array for the arguments. */
static void db_bind_args(MYSQL_BIND *b, const struct db_arg *args, size_t nargs, long long *ints)
{
	memset(b, 0, nargs * sizeof *b);
	for (size_t i = 0; i < nargs; i++) {
		switch (args[i].type) {
		case DB_T_NULL:
			b[i].buffer_type = MYSQL_TYPE_NULL;
			break;
		case DB_T_INT:
			ints[i] = args[i].i;
			b[i].buffer_type = MYSQL_TYPE_LONGLONG;
			b[i].buffer = &ints[i];
			break;
		case DB_T_TEXT:
		case DB_T_BLOB:
			b[i].buffer_type = args[i].type == DB_T_TEXT ? MYSQL_TYPE_STRING : MYSQL_TYPE_BLOB;
			b[i].buffer = (void *)(uintptr_t)args[i].p;
			b[i].buffer_length = (unsigned long)args[i].len;
			break;
		}
	}
}

/* Fill the MYSQL_BIND array for the result columns. */
static void db_bind_cols(MYSQL_BIND *b, struct db_col *cols, size_t ncols)
{
	memset(b, 0, ncols * sizeof *b);
	for (size_t i = 0; i < ncols; i++) {
		b[i].is_null = (my_bool *)&cols[i].null_flag;
		b[i].error = (my_bool *)&cols[i].err_flag;
		b[i].length = &cols[i].len;
		switch (cols[i].type) {
		case DB_T_NULL:
		case DB_T_INT:
			b[i].buffer_type = MYSQL_TYPE_LONGLONG;
			b[i].buffer = &cols[i].i;
			break;
		case DB_T_TEXT:
			b[i].buffer_type = MYSQL_TYPE_STRING;
			b[i].buffer = cols[i].buf;
			b[i].buffer_length = cols[i].cap > 0 ? (unsigned long)(cols[i].cap - 1) : 0;
			break;
		case DB_T_BLOB:
			b[i].buffer_type = MYSQL_TYPE_BLOB;
			b[i].buffer = cols[i].buf;
			b[i].buffer_length = (unsigned long)cols[i].cap;
			break;
		}
	}
}

/* Fetch every row of an executed statement into cols, calling row. */
static enum db_status db_fetch(struct db *db, MYSQL_STMT *s, struct db_col *cols, size_t ncols,
                               db_row_fn row, void *ctx, struct db_result *res)
{
	MYSQL_BIND rb[DB_MAX_ARGS];
	bool more = true;
	if (mysql_stmt_field_count(s) != ncols) {
		db_seterr(db, 0, "result column count does not match the query");
		mysql_stmt_free_result(s);
		return DB_ERROR;
	}
	db_bind_cols(rb, cols, ncols);
	if (mysql_stmt_bind_result(s, rb) != 0 || mysql_stmt_store_result(s) != 0)
		return db_fail(db, mysql_stmt_errno(s), mysql_stmt_error(s));
	for (;;) {
		int rc = mysql_stmt_fetch(s);
		if (rc == MYSQL_NO_DATA)
			break;
		if (rc == MYSQL_DATA_TRUNCATED) {
			db_seterr(db, 0, "a result value is larger than its buffer");
			mysql_stmt_free_result(s);
			return DB_ERROR;
		}
		if (rc != 0) {
			enum db_status st = db_fail(db, mysql_stmt_errno(s), mysql_stmt_error(s));
			if (db->my != NULL)
				mysql_stmt_free_result(s);
			return st;
		}
		for (size_t i = 0; i < ncols; i++) {
			cols[i].is_null = cols[i].null_flag != 0;
			if (cols[i].type == DB_T_TEXT)
				cols[i].buf[cols[i].is_null ? 0 : cols[i].len] = '\0';
		}
		if (res)
			res->rows++;
		if (more && row != NULL)
			more = row(ctx, cols, ncols);
	}
	mysql_stmt_free_result(s);
	return DB_OK;
}

/* One attempt of db_exec; *retry tells whether a retry is safe. */
static enum db_status db_exec_once(struct db *db, const char *sql, const struct db_arg *args, size_t nargs,
                                   struct db_col *cols, size_t ncols, db_row_fn row, void *ctx,
                                   struct db_result *res, unsigned flags, bool *retry)
{
	MYSQL_BIND ab[DB_MAX_ARGS];
	long long ints[DB_MAX_ARGS];
	enum db_status st = db_connect(db);
	*retry = false;
	if (st != DB_OK)
		return st;
	MYSQL_STMT *s = db_prepare(db, sql, &st);
	if (s == NULL) {
		*retry = st == DB_UNAVAILABLE;
		return st;
	}
	if (mysql_stmt_param_count(s) != nargs) {
		db_seterr(db, 0, "argument count does not match the query");
		return DB_ERROR;
	}
	db_bind_args(ab, args, nargs, ints);
	if ((nargs > 0 && mysql_stmt_bind_param(s, ab) != 0) || mysql_stmt_execute(s) != 0) {
		unsigned no = mysql_stmt_errno(s);
		st = db_fail(db, no, mysql_stmt_error(s));
		*retry = st == DB_UNAVAILABLE && ((flags & DB_IDEMPOTENT) || no == CR_SERVER_GONE_ERROR);
		return st;
	}
	if (res) {
		res->affected = mysql_stmt_affected_rows(s);
		res->insert_id = mysql_stmt_insert_id(s);
	}
	if (!db->in_tx && mysql_stmt_field_count(s) == 0 && mysql_stmt_affected_rows(s) > 0)
		db->writes++;
	if (mysql_stmt_field_count(s) == 0 && ncols == 0)
		return DB_OK;
	return db_fetch(db, s, cols, ncols, row, ctx, res);
}

enum db_status db_exec(struct db *db, const char *sql, const struct db_arg *args, size_t nargs,
                       struct db_col *cols, size_t ncols, db_row_fn row, void *ctx,
                       struct db_result *res, unsigned flags)
{
	bool retry;
	if (nargs > DB_MAX_ARGS || ncols > DB_MAX_ARGS) {
		db_seterr(db, 0, "too many arguments or columns");
		return DB_ERROR;
	}
	bool in_tx = db->in_tx;
	if (res)
		memset(res, 0, sizeof *res);
	enum db_status st = db_exec_once(db, sql, args, nargs, cols, ncols, row, ctx, res, flags, &retry);
	/* Outside a transaction a lost connection (for an idempotent statement)
	 * and a deadlock (the server rolled the one statement back) are retried once. */
	if ((st == DB_UNAVAILABLE && retry && !in_tx) || (st == DB_CONFLICT && !in_tx)) {
		if (res)
			memset(res, 0, sizeof *res);
		st = db_exec_once(db, sql, args, nargs, cols, ncols, row, ctx, res, flags, &retry);
	}
	return st;
}

enum db_status db_exec_script(struct db *db, const char *sql, size_t len)
{
	enum db_status st = db_connect(db);
	if (st != DB_OK)
		return st;
	if (mysql_set_server_option(db->my, MYSQL_OPTION_MULTI_STATEMENTS_ON) != 0)
		return db_fail(db, mysql_errno(db->my), mysql_error(db->my));
	st = DB_OK;
	if (mysql_real_query(db->my, sql, (unsigned long)len) != 0) {
		st = db_fail(db, mysql_errno(db->my), mysql_error(db->my));
		goto out;
	}
	for (;;) {
		MYSQL_RES *r = mysql_store_result(db->my);
		if (r != NULL)
			mysql_free_result(r);
		int rc = mysql_next_result(db->my);
		if (rc == -1)
			break;
		if (rc > 0) {
			st = db_fail(db, mysql_errno(db->my), mysql_error(db->my));
			goto out;
		}
	}
out:
	if (db->my != NULL)
		mysql_set_server_option(db->my, MYSQL_OPTION_MULTI_STATEMENTS_OFF);
	return st;
}

enum db_status db_begin(struct db *db)
{
	enum db_status st = db_connect(db);
	if (st != DB_OK)
		return st;
	if (mysql_real_query(db->my, "START TRANSACTION", 17) != 0)
		return db_fail(db, mysql_errno(db->my), mysql_error(db->my));
	db->in_tx = true;
	return DB_OK;
}

enum db_status db_commit(struct db *db)
{
	if (db->my == NULL || !db->in_tx) {
		db_seterr(db, 0, "commit without an open transaction");
		return db->my == NULL ? DB_UNAVAILABLE : DB_ERROR;
	}
	db->in_tx = false;
	if (mysql_commit(db->my) != 0)
		return db_fail(db, mysql_errno(db->my), mysql_error(db->my));
	db->writes++;
	return DB_OK;
}

void db_rollback(struct db *db)
{
	if (db->my == NULL || !db->in_tx)
		return;
	db->in_tx = false;
	if (mysql_rollback(db->my) != 0)
		db_fail(db, mysql_errno(db->my), mysql_error(db->my));
}

unsigned long db_writes(const struct db *db)
{
	return db->writes;
}

const char *db_error(const struct db *db)
{
	return db->err;
}

unsigned db_errno(const struct db *db)
{
	return db->err_no;
}

void db_free(struct db *db)
{
	if (db == NULL)
		return;
	db_disconnect(db);
	dburl_free(&db->url);
	free(db);
}
