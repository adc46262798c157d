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
#ifndef AGENTTEST_EVALUATOR_STREAM_H
#define AGENTTEST_EVALUATOR_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "evaluator/challenges/challenges.h"
#include "evaluator/errors.h"
#include "sandbox/sandbox.h"

#define STREAM_MAX_DIM      4096u        /* embedding values per row */
#define STREAM_MAX_CODE     (1u << 20)   /* strategy source bytes */
#define STREAM_MAX_BARS     (1u << 24)

struct stream_request {
	const struct ch_market *m;   /* the prepared market (ch_prepared_market) */
	size_t       bars;           /* stream bars 0..bars-1 (<= m->T; less in dev-only mode) */
	const char  *code;           /* strategy source (not NUL-terminated) */
	size_t       code_len;
	struct sbx_spec sbx;         /* sandbox mode and limits; shm_fd is set here */
	double       spin_us;        /* cap of the runner's spin before it sleeps (0: 200) */
	/* Optional, for cancellation (as in struct bt_request): called with the
	 * host's run once it has started and with NULL just before sbx_finish
	 * releases it; in between the caller may sbx_kill() it from another
	 * thread, serialising against its own NULL call. */
	void       (*on_host)(void *arg, struct sbx_run *run);
	void        *on_host_arg;
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
	int          dev_only;      /* stream and score the dev period only: holdout bars never sent */
	const char  *code;
	size_t       code_len;
	struct sbx_spec sbx;        /* limits 0 = evaluation defaults (STREAM_CPU_S, ...) */
	void       (*on_host)(void *arg, struct sbx_run *run); /* optional: stream_request.on_host */
	void        *on_host_arg;
};

#define STREAM_CPU_S     900.0
#define STREAM_MEM_BASE  (768ull << 20)  /* plus the shared market's size */

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

#endif
