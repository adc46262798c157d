/*
 * stream: walk-forward evaluation of a signal strategy by causal, lockstep
 * streaming into the sandboxed strategy host (runner side).
 *
 * The market is laid out in a memfd that the host maps (the STREAM request
 * of docs/protocol.md; the host side is sandbox/host/agenttest_host/
 * stream.py). Bars are appended one at a time: bar t+1 is written only
 * after the embedding row for t has been read back, so the future does not
 * exist inside the sandbox. stream_run drives one evaluation and returns
 * the embedding matrix (rows for t = warmup .. bars-1, float32) for
 * ch_score_prepared; it computes no metric itself.
 */
#ifndef AGENTTEST_RUNNER_DRIVE_STREAM_H
#define AGENTTEST_RUNNER_DRIVE_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "evaluator/challenges/challenges.h"
#include "evaluator/errors.h"
#include "sandbox/sandbox.h"

#define STREAM_MAX_DIM      4096u        /* embedding values per row */
#define STREAM_MAX_CODE     (1u << 20)   /* strategy source bytes */
#define STREAM_MAX_BARS     (1u << 24)

struct stream_result;

struct stream_request {
	const struct ch_market *m;   /* the prepared market (ch_prepared_market) */
	size_t       bars;           /* stream bars 0..bars-1 (<= m->T; less in dev-only mode) */
	const char  *code;           /* strategy source (not NUL-terminated) */
	size_t       code_len;
	struct sbx_spec sbx;         /* sandbox mode and limits; shm_fd is set here */
	double       spin_us;        /* cap of the runner's spin before it sleeps (0: 200) */
	size_t       max_dim;        /* widest embedding row accepted, <= STREAM_MAX_DIM (0: STREAM_MAX_DIM);
	                                the challenge's embedding_dim, so the runner's buffer is rows x that */
	/* Optional, for cancellation (as in struct bt_request): called with the
	 * host's run and live 1 once it has started and with live 0 just before
	 * sbx_finish releases it; in between the caller may sbx_kill() it from
	 * another thread, serialising against its own live-0 call. */
	void       (*on_host)(void *arg, struct sbx_run *run, int live);
	void        *on_host_arg;
	/* Optional: told after each step that `done` of `total` predict calls
	 * are answered (first with 0 before the loop); called on the driving
	 * thread, so it must be cheap (job_progress: two atomic stores). */
	void       (*on_progress)(void *arg, size_t done, size_t total);
	void        *on_progress_arg;
	int          keep_rows;      /* on a failure keep the rows read back before it in res->emb, res->rows
	                                (a split evaluation scores the dev rows of a run that failed later) */
	/* Optional, the holdout start of a split evaluation: on_mark(arg, res) is
	 * called once, when bar mark_bar is about to be written (after the last
	 * row when mark_bar == bars), with the rows read back so far in res (all
	 * of the bars before mark_bar; res->st.steps and loop_s say how far).
	 * A nonzero return ends the stream there: bar mark_bar is never written,
	 * the host is killed and res->err is EV_INTERNAL ("stopped at bar ..."). */
	int        (*on_mark)(void *arg, const struct stream_result *res);
	void        *on_mark_arg;
	size_t       mark_bar;
};

struct stream_stats {
	size_t steps;          /* predict calls */
	size_t compute_calls;  /* featurizer compute calls (host-reported) */
	double startup_s;      /* sandbox start to READY */
	double load_s;         /* STREAM to STREAMING (code load, setup) */
	double loop_s;         /* wall time of the lockstep loop */
	double strategy_s;     /* time inside compute/predict (host-reported) */
	size_t runner_sleeps;  /* times the runner blocked on the futex */
	size_t runner_naps;    /* timed naps through a slow strategy's step */
	double platform_us_p50; /* per-step platform time (step wall time minus the */
	double platform_us_p90; /* strategy's time of that step): median, 90th percentile */
	size_t shm_bytes;      /* size of the shared market */
};

struct stream_result {
	enum ev_err  err;            /* EV_OK or the failure */
	char         message[1024];
	json_object *exception;      /* {type, message, traceback} of a strategy error, or NULL */
	float       *emb;            /* rows x dim, malloc'd */
	size_t       rows, dim, warmup, compute_interval;
	struct stream_stats st;
	struct sbx_verdict verdict;
	char         log_tail[4096]; /* the host's stderr tail */
};

/* Run the evaluation stream (see the top of this file). Returns res->err. */
enum ev_err stream_run(const struct stream_request *rq, struct stream_result *res);

/* Free what stream_run allocated in res (emb, exception). */
void stream_result_free(struct stream_result *res);

/* The error object of a failed stream: {"error","code","detail"[,"exception"]}. */
json_object *stream_error_json(const struct stream_result *res);

/* Timing figures as a JSON object (per-step platform overhead included). */
json_object *stream_stats_json(const struct stream_stats *st);

/* ---- one evaluation end to end (stream_eval.c) ------------------------ */

struct dataset;

struct stream_eval_opts {
	const char  *challenge;
	enum ch_mode mode;
	double       days_back;     /* > 0: the last days_back days of the dataset; 0: all */
	double       holdout_days;  /* the holdout is the last holdout_days days (0: all holdout) */
	size_t       holdout_bars;  /* > 0: the holdout is the last holdout_bars bars instead (forward scores) */
	int          dev_only;      /* stream and score the dev period only: holdout bars never sent */
	int          split;         /* stream the whole span once; score the dev period on its own from the
	                               rows before the holdout and the whole span with the holdout (below) */
	const char  *code;
	size_t       code_len;
	struct sbx_spec sbx;        /* limits 0 = evaluation defaults (STREAM_CPU_S, ...) */
	void       (*on_host)(void *arg, struct sbx_run *run, int live); /* optional: stream_request.on_host */
	void        *on_host_arg;
	void       (*on_progress)(void *arg, size_t done, size_t total); /* optional: stream_request.on_progress */
	void        *on_progress_arg;
	/* Optional, split mode: on_dev(arg, dev, dev_bars, holdout_bars) is called
	 * once with the dev result (the object that becomes "dev" of the output;
	 * the callee must not keep or free it) when the dev rows are in and
	 * scored, before bar dev_bars (the first holdout bar) is written. A
	 * split whose dev part fails never calls it, and streams no holdout bar. */
	void       (*on_dev)(void *arg, json_object *dev, size_t dev_bars, size_t holdout_bars);
	void        *on_dev_arg;
};

#define STREAM_CPU_S     900.0
#define STREAM_MEM_BASE  (768ull << 20)  /* plus the shared market's size */

/*
 * Bars in `days` days at `per_day` bars a day: floor(days * per_day), where a
 * product within 1e-6 of an integer counts as that integer (so 300/1440 days
 * of 1-minute bars are 300 bars, not 299 from the rounding of 300/1440).
 */
size_t stream_days_bars(double days, double per_day);

/*
 * Evaluate `code` on challenge o->challenge over dataset ds: select and
 * align the challenge's assets, stream them (stream_run), score the
 * embeddings with ch_score_prepared. On EV_OK *out is the result
 * dictionary plus "mode", "dev_length", "eval_holdout_minutes", "dev_only",
 * "dataset_version", "dataset_hash" and "timing"; otherwise *out is
 * {"error","code","detail"[,"exception","log_tail"]} (scoring refusals:
 * code bad_request or bad_output, returned as EV_BAD_OUTPUT/EV_INVALID_FIELD).
 */
enum ev_err stream_evaluate(const struct dataset *ds, const struct stream_eval_opts *o, json_object **out);

/*
 * Split mode (o->split, agent scoring): one stream over the whole span
 * stands for a dev-only evaluation and a full one. Bar t+1 reaches the
 * sandbox only after row t is read back, so the rows before the holdout
 * start were all computed before any holdout bar existed there. Those rows
 * are scored against the dev period prepared on its own, exactly as a
 * dev-only run scores them (ch_prepare of the cut market); all the rows,
 * with the holdout, as a full run. The dev part counts as done once its
 * rows are in, whatever happens later: so whether it succeeded, its
 * metrics and its error text depend on dev bars only. On EV_OK *out is
 * {"dev": <dev-only result>, "full": <full result> | null,
 * "full_error": <error object> | null}; when the dev part failed, the
 * error object of that failure as in the other modes. The dev rows are
 * scored at the holdout start, before its first bar is written (on_mark):
 * a dev part that fails there (no dev row, a refused prediction) ends the
 * stream, so a failed dev part never streams a holdout bar, and o->on_dev
 * learns the dev result the moment the holdout part begins (the agent
 * loop bounds the holdout part's time from it: docs/agents.md). The CPU limit, when
 * not given, is twice STREAM_CPU_S (the two runs it replaces).
 */

#endif
