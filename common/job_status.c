/*
 * job_status: the one string table of enum job_status (job_status.h).
 */
#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "job_status.h"

static const char *const names[JOB__NSTATUS] = {
	[JOB_QUEUED] = "queued",       [JOB_RUNNING] = "running", [JOB_COMPLETED] = "completed",
	[JOB_FAILED] = "failed",       [JOB_CANCELLED] = "cancelled",
};

const char *job_status_name(enum job_status s)
{
	return (unsigned)s < JOB__NSTATUS ? names[s] : "unknown";
}

bool job_status_parse(const char *name, enum job_status *s)
{
	for (unsigned i = 0; name && i < JOB__NSTATUS; i++)
		if (strcmp(name, names[i]) == 0) {
			*s = (enum job_status)i;
			return true;
		}
	return false;
}

bool job_status_final(enum job_status s)
{
	return s == JOB_COMPLETED || s == JOB_FAILED || s == JOB_CANCELLED;
}

const char *job_status_list(void)
{
	return "queued, running, completed, failed, cancelled";
}

enum db_status job_request_cancel(struct db *db, const char *table, const char *id, uint64_t *changed)
{
	char sql[256];
	struct db_arg arg = DB_ARG_TEXT(id);
	struct db_result res = { 0 };
	*changed = 0;
	snprintf(sql, sizeof sql, "UPDATE %s SET status = 'cancelled', completed_at = NOW(6), error_code = 'cancelled', "
		 "error_message = 'cancelled before it started', lease_owner = NULL, lease_expires_at = NULL "
		 "WHERE id = ? AND status = 'queued'", table);
	enum db_status st = db_exec(db, sql, &arg, 1, NULL, 0, NULL, NULL, &res, 0);
	if (st == DB_OK && res.affected == 0) {
		snprintf(sql, sizeof sql, "UPDATE %s SET cancel_requested = 1 WHERE id = ? AND status = 'running'", table);
		st = db_exec(db, sql, &arg, 1, NULL, 0, NULL, NULL, &res, 0);
	}
	if (st == DB_OK)
		*changed = res.affected;
	return st;
}

/* Set code and message (see job_status.h). */
void job_error_vset(char *code, size_t cap, struct buf *message, const char *ccode, const char *fmt, va_list ap)
{
	snprintf(code, cap, "%s", ccode);
	buf_reset(message);
	buf_vprintf(message, fmt, ap);
}
