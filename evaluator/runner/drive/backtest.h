/*
 * backtest: one run of a strategy over one price series, end to end.
 *
 * bt_run starts a strategy host through libsandbox (confined by default,
 * trusted on request), loads the code, sends the prices once, asks for the
 * full-series output, validates it as hostile input, computes equity (the
 * positions engine for `positions` strategies) and every metric on the
 * trusted side, and optionally audits causality. The caller owns all I/O
 * policy (files, printing, hashes); it must ignore SIGPIPE.
 *
 * Causality audit (docs/strategies.md, "Causality audit"): for a few
 * deterministic cut points c (25/50/75 % of the series and three seeded
 * pseudo-random ones) the strategy is re-run, each cut in a fresh host that
 * receives only prices[0..c) (so no call can replay what the full run saw;
 * the later hosts get what is left of the run's CPU and wall limits, and
 * the run fails with a timeout when all its hosts together used more CPU
 * than its limit; with a spare box two cuts run side by side, each in its
 * own box, and the first failing cut in cut order decides the error, as
 * if they had run one after the other), on
 *   (a) the prefix prices[0..c): its output must equal the full run's output
 *       on [0, c) bit for bit, else the output used bars at or after c;
 *   (b) simulate only: the prefix with its last price replaced by four
 *       values around the previous price (returns -10 %, -1 %, +1 %, +10 %):
 *       the earlier bars must not change, and the last bar's growth
 *       E[c-1]/E[c-2] must be an affine function of that bar's return (the
 *       exposure over a bar is decided before the bar's price is known),
 *       within BT_AUDIT_EXPOSURE_TOL units of exposure, and the full run's
 *       own growth over that bar must lie on the same line. These calls come
 *       before the cut's prefix call (a), the only one given the real price.
 * A failure is EV_LOOKAHEAD with the first differing bar.
 */
#ifndef AGENTTEST_RUNNER_DRIVE_BACKTEST_H
#define AGENTTEST_RUNNER_DRIVE_BACKTEST_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "evaluator/engine.h"
#include "evaluator/errors.h"
#include "evaluator/metrics.h"
#include "sandbox/sandbox.h"

#define BT_MAX_CUTS 6
#define BT_AUDIT_EXPOSURE_TOL 0.05
#define BT_MAX_CODE (1u << 20) /* strategy source bytes */

enum bt_kind { BT_KIND_AUTO = 0, BT_KIND_SIMULATE, BT_KIND_POSITIONS, BT_KIND__MAX };

/* "auto", "simulate", "positions". */
const char *bt_kind_name(enum bt_kind k);
/* Parse a kind name; -1 if unknown. */
int bt_kind_parse(const char *s);

struct bt_result;

struct bt_request {
	const char       *code;          /* strategy source (not NUL-terminated) */
	size_t            code_len;      /* <= BT_MAX_CODE */
	enum bt_kind      kind;          /* AUTO: simulate if defined, else positions */
	const double     *prices;        /* n prices (NaN allowed: gaps) */
	size_t            n;             /* >= 1 */
	const char       *params_json;   /* JSON object text handed to the strategy ("{}" if NULL) */
	double            bars_per_year; /* annualisation, from the dataset */
	struct engine_cfg engine;        /* positions only */
	int               audit;         /* run the causality audit */
	uint64_t          audit_seed;    /* seeds the pseudo-random cut points */
	struct sbx_spec   sbx;           /* mode, limits, box id */
	/* Optional: called once the output is complete, validated and scored
	 * (metrics filled), while the host is still shutting down, so the
	 * caller's artifact writing overlaps the interpreter's exit. The run
	 * can still fail afterwards (bad verdict): the caller must then undo. */
	void            (*on_output)(void *arg, const struct bt_result *res);
	void             *on_output_arg;
	/* Optional, for cancellation: called with a host's run and live 1 once
	 * it has started, and with live 0 just before sbx_finish releases it
	 * (up to two hosts at once, from different threads, during the audit).
	 * Between the two calls the caller may sbx_kill() the run from another
	 * thread (serialising against its own live-0 call); the run then ends
	 * with the error the verdict implies, which the caller overrides as it
	 * sees fit. */
	void            (*on_host)(void *arg, struct sbx_run *run, int live);
	void             *on_host_arg;
	/* Optional: a second box number, leased like sbx.box_id and distinct
	 * from it, in which the audit runs a second cut alongside the first
	 * whenever a zygote helper is idle to spare (sbx_start_spare); 0: the
	 * cuts run one after the other. */
	uint32_t          spare_box_id;
};

struct bt_audit {
	int    performed;
	int    passed;
	size_t n_cuts;
	size_t cuts[BT_MAX_CUTS];
	size_t runs;         /* strategy calls the audit made */
	size_t fail_cut;     /* on failure: the cut point ... */
	size_t first_diff;   /* ... and the first bar that differs */
	char   check[16];    /* "prefix" or "last_bar" */
};

struct bt_timing {
	double total_s;   /* bt_run wall time */
	double startup_s; /* sbx_start to READY: interpreter and numpy start */
	double load_s;    /* the strategy module's own execution (host-measured) */
	double host_s;    /* sum of host-measured time per call (list, call, convert) */
	double audit_s;   /* wall time of the audit */
	double shutdown_s; /* BYE to the host's exit (interpreter teardown) */
};

struct bt_result {
	enum ev_err          err;
	char                 detail[1024];
	json_object         *extra;     /* error fields beyond the message (bar, exception, ...) */
	enum bt_kind         kind;      /* the kind that ran */
	size_t               n;
	double              *equity;    /* n values */
	double              *positions; /* n values (positions kind, after clamping), else NULL */
	struct metrics       metrics;   /* runtime_s left for the caller */
	struct engine_report engine;
	struct bt_audit      audit;
	struct bt_timing     timing;
	struct sbx_verdict   verdict;
	char                 log_tail[2048]; /* last bytes of the host's stderr (may hold paths:
	                                      * for logs, not for error bodies) */
};

/* Run rq; fills *res (always; free with bt_result_free). Returns res->err. */
enum ev_err bt_run(const struct bt_request *rq, struct bt_result *res);

/* Free what bt_run allocated in res. */
void bt_result_free(struct bt_result *res);

/* The error object {"error","code","detail",...extra} for a failed run. */
json_object *bt_error_json(const struct bt_result *res);

/*
 * The cut points for n bars and seed: sorted, distinct, in [min_cut, n-1]
 * (min_cut >= 1). A simulate run asks for min_cut 2: its cut at 1 would
 * compare E[0] with E[0], which both runs must return as exactly 1.0, so
 * it could never see a look-ahead (and would only fail a strategy that
 * cannot take a single price). The candidates do not depend on min_cut:
 * a larger one only drops the cuts below it.
 */
size_t bt_audit_cuts(size_t n, uint64_t seed, size_t min_cut, size_t cuts[BT_MAX_CUTS]);

#endif
