/*
 * job_status.h: the statuses of a queued job, shared by the API tier and the
 * runner (every job table's `status` column is an ENUM of exactly these
 * names, in this order).
 *
 *   queued ──claim──▶ running ──finish──▶ completed | failed | cancelled
 *     ▲                 │
 *     └──reap/requeue───┘   (lease expired with attempts left, retry of a
 *                            trusted-side failure, SIGTERM hand-back)
 *   queued ──cancel──▶ cancelled
 */
#ifndef AGENTTEST_JOB_STATUS_H
#define AGENTTEST_JOB_STATUS_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "db.h"

enum job_status {
	JOB_QUEUED,
	JOB_RUNNING,
	JOB_COMPLETED,
	JOB_FAILED,
	JOB_CANCELLED,
	JOB__NSTATUS
};

/* The SQL/JSON name of s ("queued", ...); "unknown" outside the enum. */
const char *job_status_name(enum job_status s);

/* Parse a status name; false (and *s untouched) if it is none of them. */
bool job_status_parse(const char *name, enum job_status *s);

/* True for completed, failed and cancelled (no further change). */
bool job_status_final(enum job_status s);

/* "queued, running, completed, failed, cancelled": for error messages. */
const char *job_status_list(void);

struct buf;
/* Set a job's error code (cut to cap) and printf message (replacing what
 * message held): what the runner's outcome and result failures share. */
void job_error_vset(char *code, size_t cap, struct buf *message, const char *ccode, const char *fmt, va_list ap)
	__attribute__((format(printf, 5, 0)));

/*
 * The API side of a cancel, for any job table (a constant of the caller,
 * never input): a queued row becomes cancelled at once, a running row gets
 * cancel_requested = 1 (its runner kills the job within a tick). *changed
 * receives the number of rows changed (0: already final, or no such row).
 */
enum db_status job_request_cancel(struct db *db, const char *table, const char *id, uint64_t *changed);

#endif
