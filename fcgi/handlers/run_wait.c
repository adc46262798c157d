/*
 * run_wait: bounded waits for a run to finish (see run_wait.h and, for the
 * registry and the wake-ups, common/jobwait.h).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "job_status.h"
#include "fcgi/app.h"
#include "fcgi/handlers/run_wait.h"

#define RW_BACKSTOP_MS 250       /* re-read at least this often (runners elsewhere) */
#define RW_DEFAULT_PER_USER 1
#define RW_MAX_CAP 4096

/* Monotonic milliseconds. */
static long long rw_now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* A cap from the configuration: a whole number 0..RW_MAX_CAP, else def. */
static long rw_cap(struct fcgi_ctx *c, const char *key, long def)
{
	const char *v = fcgi_config(c, key);
	char *end = NULL;
	long n;

	if (v == NULL || v[0] == '\0')
		return def;
	n = strtol(v, &end, 10);
	return end != v && *end == '\0' && n >= 0 && n <= RW_MAX_CAP ? n : def;
}

/* The caps (see run_wait.h). */
static void rw_caps(struct fcgi_ctx *c, long *max_total, long *max_user)
{
	long workers = fcgi_ctx_app(c)->cfg->workers;
	*max_total = rw_cap(c, "RUNS_MAX_WAITS", workers / 2);
	*max_user = rw_cap(c, "RUNS_MAX_WAITS_PER_USER", RW_DEFAULT_PER_USER);
}

/* Register under the caps, without replying (see run_wait.h). */
bool run_wait_admit(struct fcgi_ctx *c, double seconds, struct run_wait *w)
{
	long max_total, max_user;
	long long uid = 0;

	rw_caps(c, &max_total, &max_user);
	w->jw.fd = -1;
	w->jw.path[0] = '\0';
	w->seconds = seconds;
	if (seconds <= 0)
		return true;
	if (!fcgi_user_id(c, &uid))
		uid = 0;
	switch (jobwait_enter(&w->jw, fcgi_config(c, "RUNNER_NOTIFY_DIR"), uid, max_total, max_user)) {
	case JOBWAIT_OK:
		return true;
	case JOBWAIT_NONE:
		w->seconds = 0;
		return true;
	case JOBWAIT_BUSY:
		break;
	}
	w->seconds = 0;
	return false;
}

/* Register the wait (see run_wait.h). */
bool run_wait_begin(struct fcgi_ctx *c, double seconds, struct run_wait *w)
{
	long max_total, max_user;

	if (run_wait_admit(c, seconds, w))
		return true;
	rw_caps(c, &max_total, &max_user);
	fcgi_add_header(c, "Retry-After", "1");
	fcgi_reply_error(c, 429, "rate_limited", "too many requests are waiting (at most %ld in all, %ld per "
			 "user); retry, or send no wait and poll GET /runs/{id}", max_total, max_user);
	return false;
}

/* Read the status (see run_wait.h). */
bool run_wait_status(struct fcgi_ctx *c, const char *id, char out[16])
{
	struct db_col col = { .type = DB_T_TEXT, .buf = out, .cap = 16 };
	struct db_arg arg = DB_ARG_TEXT(id);
	out[0] = '\0';
	enum db_status st = db_exec(fcgi_db(c), "SELECT status FROM runs WHERE id = ?", &arg, 1, &col, 1, NULL,
				    NULL, NULL, DB_IDEMPOTENT);
	if (st != DB_OK) {
		fcgi_reply_db_error(c, st);
		return false;
	}
	return true;
}

/* Wait (see run_wait.h). */
int run_wait_for(struct fcgi_ctx *c, struct run_wait *w, const char *id, bool queued_now)
{
	long long deadline = rw_now_ms() + (long long)(w->seconds * 1000.0), last_read = rw_now_ms();
	bool read = !queued_now;   /* a run queued after the wait was registered is not final yet */
	enum job_status s;
	char status[16];
	int rc = 0;

	while (w->seconds > 0) {
		if (read) {
			if (!run_wait_status(c, id, status)) {
				rc = -1;
				break;
			}
			last_read = rw_now_ms();
			if (!status[0] || (job_status_parse(status, &s) && job_status_final(s))) {
				rc = 1;
				break;
			}
		}
		long long now = rw_now_ms(), left = deadline - now;
		if (left <= 0)
			break;
		/* sleep at most until the backstop read is due */
		long long until_backstop = last_read + RW_BACKSTOP_MS - now;
		if (until_backstop < 0)
			until_backstop = 0;
		enum jobwait_wake why = jobwait_sleep_job(&w->jw, (int)(left < until_backstop ? left : until_backstop), id);
		if (why == JOBWAIT_DONE) {
			rc = 1;   /* the runner wrote its final state */
			break;
		}
		/* another job's finish needs no read until the backstop is due */
		read = why != JOBWAIT_OTHER || rw_now_ms() - last_read >= RW_BACKSTOP_MS;
	}
	run_wait_end(w);
	return rc;
}

/* Unregister (see run_wait.h). */
void run_wait_end(struct run_wait *w)
{
	jobwait_leave(&w->jw);
}
