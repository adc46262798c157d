/*
 * db_util: small conveniences over db_exec() shared by the components that
 * report database errors into a struct buf (see db.h).
 */
#include "buf.h"
#include "db.h"

/* db_exec() reporting into err (see db.h). */
int db_run(struct db *db, const char *sql, const struct db_arg *args, size_t nargs, struct db_col *cols,
           size_t ncols, db_row_fn row, void *ctx, struct db_result *res, struct buf *err)
{
	if (db_exec(db, sql, args, nargs, cols, ncols, row, ctx, res, 0) != DB_OK) {
		buf_printf(err, "database: %s", db_error(db));
		return -1;
	}
	return 0;
}

/* Note the row and stop (see db.h). */
bool db_row_once(void *ctx, const struct db_col *cols, size_t ncols)
{
	(void)cols;
	(void)ncols;
	*(bool *)ctx = true;
	return false;
}
