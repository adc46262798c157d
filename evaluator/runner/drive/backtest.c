/*
 * backtest: orchestration of one run (see backtest.h).
 *
 * Theory of operation: one strategy host for the full run, then one fresh
 * host per audit cut (two at a time when the request has a spare box and a
 * zygote helper is idle to spare: bt_audit below), each driven strictly
 * request/response over protocol.h
 * frames: READY ← ; LOAD → LOADED ← ; DATA → ; RUN → OUTPUT ← (the full
 * series; in an audit host one DATA + RUN per check, DATA holding only the
 * prices that check may see); BYE → ; then sbx_finish for the verdict. A
 * host that ends badly fails the run like the last one does; the resources
 * reported are all hosts' together. Every reply is checked
 * against the request (type, bar count, byte count) before its body is
 * read. A failure in the middle records the protocol status and the host is
 * killed; the final error is decided after the verdict is in, because an
 * EOF means different things when the sandbox reports a timeout, a memory
 * kill or a forbidden system call. Buffers: the equity and (for positions)
 * the raw and clamped positions, n doubles each, plus two n-double scratches
 * (outputs, prices) for the audit; nothing per bar is allocated.
 */
#include "evaluator/runner/drive/backtest.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "evaluator/canon_json.h"
#include "evaluator/implied.h"

/* Recomputed vs reported simulate equity, relative (bt_implied). */
#define BT_IMPLIED_REL 1e-9
#include "evaluator/runner/drive/protocol.h"
#include "evaluator/runner/drive/verdict_map.h"
#include "evaluator/pyrepr.h"
#include "xalloc.h"

#define BT_DEFAULT_CPU_S 60.0

struct bt_ctx {
	const struct bt_request *rq;
	struct bt_result        *res;
	struct sbx_run           run;
	int                      started;
	struct proto_conn        conn;
	struct buf               meta;
	enum proto_status        proto_fail; /* PROTO_OK: none */
	const char              *phase;
	uint16_t                 fail_type;
	double                  *raw;        /* the full run's raw output */
	double                  *scratch;
	double                  *pscratch;   /* prices of one audit call */
	double                   t0;         /* bt_run's start (the run's deadline) */
	unsigned                 hosts;      /* hosts started so far */
	double                   cpu_prev;   /* CPU seconds of the hosts already ended */
	uint64_t                 mem_prev;   /* their peak cgroup memory */
	int                      spare;      /* start in the spare box, only on a spare zygote */
	int                      want_code;  /* LOAD asks for the compiled code (COMPILED) */
	struct buf               compiled;   /* then: the source, then that code (marshal) */
	const struct buf        *given;      /* a cut's LOAD sends this instead of the source */
};

/* COMPILED bodies accepted: generous for any source within BT_MAX_CODE
 * (the marshalled code of a source is a few times its size), and a bound
 * on what a host can make the runner hold. */
#define BT_COMPILED_MAX(code_len) (16 * (code_len) + (1u << 20))

static const char *const bt_kind_names[BT_KIND__MAX] = { "auto", "simulate", "positions" };

const char *bt_kind_name(enum bt_kind k)
{
	return (unsigned)k < BT_KIND__MAX ? bt_kind_names[k] : "unknown";
}

int bt_kind_parse(const char *s)
{
	for (int i = 0; i < BT_KIND__MAX; i++)
		if (strcmp(s, bt_kind_names[i]) == 0)
			return i;
	return -1;
}

/* Record error e with a message unless an error is already recorded. */
static void __attribute__((format(printf, 3, 4))) bt_fail(struct bt_ctx *c, enum ev_err e, const char *fmt, ...)
{
	if (c->res->err != EV_OK)
		return;
	c->res->err = e;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->res->detail, sizeof c->res->detail, fmt, ap);
	va_end(ap);
}

/* Add key → value to the error's extra fields. */
static void bt_extra(struct bt_ctx *c, const char *key, json_object *v)
{
	if (!c->res->extra)
		c->res->extra = json_object_new_object();
	json_object_object_add(c->res->extra, key, v);
}

/* Record a bar-indexed error (bad output, look-ahead). */
static void bt_fail_bar(struct bt_ctx *c, enum ev_err e, size_t bar, const char *msg)
{
	if (c->res->err != EV_OK)
		return;
	bt_fail(c, e, "%s", msg);
	bt_extra(c, "bar", json_object_new_int64((int64_t)bar));
}

/* Record a protocol failure (resolved against the verdict at the end). */
static void bt_proto_fail(struct bt_ctx *c, enum proto_status st, uint16_t type)
{
	if (c->res->err != EV_OK || c->proto_fail != PROTO_OK)
		return;
	c->proto_fail = st;
	c->fail_type = type;
}

/* Parse reply meta text as a JSON object (NULL if it is not one). */
static json_object *bt_meta_obj(struct bt_ctx *c)
{
	if (c->meta.len == 0)
		return json_object_new_object();
	json_object *o = NULL;
	char err[128];
	if (cj_parse(c->meta.data, c->meta.len, &o, err, sizeof err) < 0 || !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

/* String member of o, or def (only strings up to max bytes). */
static const char *bt_str(json_object *o, const char *key, const char *def, size_t max)
{
	json_object *v;
	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string) ||
	    (size_t)json_object_get_string_len(v) > max)
		return def;
	return json_object_get_string(v);
}

/* Non-negative finite number member of o, or -1. */
static double bt_num(json_object *o, const char *key)
{
	json_object *v;
	if (!json_object_object_get_ex(o, key, &v) ||
	    !(json_object_is_type(v, json_type_double) || json_object_is_type(v, json_type_int)))
		return -1;
	double d = json_object_get_double(v);
	return isfinite(d) && d >= 0 ? d : -1;
}

/* Turn an ERROR frame's meta into the run's error. */
static void bt_host_error(struct bt_ctx *c)
{
	json_object *m = bt_meta_obj(c);
	if (!m) {
		bt_proto_fail(c, PROTO_MALFORMED, PROTO_ERROR);
		return;
	}
	const char *code = bt_str(m, "code", "strategy_error", 64);
	const char *type = bt_str(m, "type", "Exception", 128);
	const char *msg = bt_str(m, "message", "", 4096);
	/* the host's word is the user's error: a MemoryError it reports is
	 * strategy_error; memory_limit comes only from the verdict (ML, the
	 * cgroup's OOM kill), which the sandbox's RLIMIT_AS leaves to it */
	enum ev_err e = ev_from_host_code(code);
	if (e == EV_BAD_OUTPUT)
		bt_fail(c, e, "%s", msg);
	else
		bt_fail(c, e, "%s: %s", type, msg);
	json_object *ex = json_object_new_object();
	json_object_object_add(ex, "type", json_object_new_string(type));
	json_object_object_add(ex, "message", json_object_new_string(msg));
	json_object *tb = json_object_new_array(), *lines;
	if (json_object_object_get_ex(m, "traceback", &lines) && json_object_is_type(lines, json_type_array)) {
		size_t n = json_object_array_length(lines);
		for (size_t i = n > 40 ? n - 40 : 0; i < n; i++) {
			json_object *l = json_object_array_get_idx(lines, i);
			if (json_object_is_type(l, json_type_string) && json_object_get_string_len(l) <= 1024)
				json_object_array_add(tb, json_object_new_string(json_object_get_string(l)));
		}
	}
	json_object_object_add(ex, "traceback", tb);
	bt_extra(c, "exception", ex);
	bt_extra(c, "phase", json_object_new_string(c->phase));
	json_object_put(m);
}

/*
 * Receive the reply to the last request: `want` (body read into body, at
 * most body_cap bytes) or an ERROR. Returns 0 with *h filled for `want`,
 * -1 when an error has been recorded.
 */
static int bt_reply(struct bt_ctx *c, uint16_t want, struct proto_hdr *h, void *body, uint32_t body_cap)
{
	enum proto_status st = proto_recv(&c->conn, h, &c->meta, body, PROTO_MAX_META_IN, body_cap);
	if (st == PROTO_TOO_BIG && h->type == PROTO_OUTPUT && want == PROTO_OUTPUT) {
		bt_fail(c, EV_BAD_OUTPUT, "the strategy returned %u values for %u prices",
			h->body_len / 8, body_cap / 8);
		return -1;
	}
	if (st != PROTO_OK) {
		bt_proto_fail(c, st, h->type);
		return -1;
	}
	if (h->type == PROTO_ERROR && h->body_len == 0) {
		bt_host_error(c);
		return -1;
	}
	if (h->type != want) {
		bt_proto_fail(c, PROTO_MALFORMED, h->type);
		return -1;
	}
	return 0;
}

/* Send a request; 0 or -1 (failure recorded). */
static int bt_send(struct bt_ctx *c, uint16_t type, const char *meta, const void *body, size_t body_len)
{
	enum proto_status st = proto_send(&c->conn, type, meta, meta ? strlen(meta) : 0, body, body_len);
	if (st != PROTO_OK) {
		bt_proto_fail(c, st, type);
		return -1;
	}
	return 0;
}

/*
 * Hand the host `data`, prices[0..bars) as its DATA, and call the strategy
 * on them (RUN); read its output into out. The two frames go out in one
 * write (proto_sendv), so the host wakes once for the call. 0 or -1
 * (failure recorded).
 */
static int bt_call(struct bt_ctx *c, const double *data, size_t bars, double *out)
{
	char dmeta[64];
	struct buf m = BUF_INIT;
	snprintf(dmeta, sizeof dmeta, "{\"bars\":%zu}", bars);
	buf_printf(&m, "{\"bars\":%zu,\"params\":", bars);
	buf_puts(&m, c->rq->params_json ? c->rq->params_json : "{}");
	buf_putc(&m, '}');
	struct proto_frame f[2] = {
		{ PROTO_DATA, dmeta, strlen(dmeta), data, bars * 8 },
		{ PROTO_RUN, m.data, m.len, NULL, 0 },
	};
	enum proto_status st = proto_sendv(&c->conn, f, 2);
	buf_free(&m);
	if (st != PROTO_OK) {
		bt_proto_fail(c, st, PROTO_DATA);
		return -1;
	}
	struct proto_hdr h;
	if (bt_reply(c, PROTO_OUTPUT, &h, out, (uint32_t)(bars * 8)) < 0)
		return -1;
	if (h.body_len != bars * 8) {
		bt_fail(c, EV_BAD_OUTPUT, "the strategy returned %u values for %zu prices", h.body_len / 8, bars);
		return -1;
	}
	json_object *mo = bt_meta_obj(c);
	double hs = mo ? bt_num(mo, "host_s") : -1;
	json_object_put(mo);
	if (hs >= 0 && hs < 1e6)
		c->res->timing.host_s += hs;
	return 0;
}

/* Validate a simulate equity curve: finite, > 0, first value exactly 1.0. */
static int bt_check_equity(struct bt_ctx *c, const double *E, size_t n)
{
	char v[PYREPR_MAX], msg[160];
	for (size_t i = 0; i < n; i++) {
		if (isfinite(E[i]) && E[i] > 0 && (i > 0 || E[0] == 1.0))
			continue;
		pyrepr_double(E[i], v);
		if (!isfinite(E[i]))
			snprintf(msg, sizeof msg, "equity[%zu] = %s is not finite", i, v);
		else if (!(E[i] > 0))
			snprintf(msg, sizeof msg, "equity[%zu] = %s is not > 0", i, v);
		else
			snprintf(msg, sizeof msg, "equity[0] = %s; the curve must start at 1.0", v);
		bt_fail_bar(c, EV_BAD_OUTPUT, i, msg);
		return -1;
	}
	return 0;
}

/* The simulate curve must be explained by trading the asset within the
 * leverage limit (implied.h): any unexplained bar fails the run, and the
 * equity recomputed from the implied exposures must match the curve to
 * BT_IMPLIED_REL, so the curve scored (kept bit for bit, for exact reruns
 * and verification) is the recomputed one up to rounding. */
static int bt_implied(struct bt_ctx *c, const struct bt_request *rq)
{
	struct implied_report rep;
	char g[PYREPR_MAX], r[PYREPR_MAX], msg[256];
	double *q = xcalloc(rq->n, sizeof *q);
	int rc = implied_equity(rq->prices, c->raw, rq->n, rq->engine.max_leverage, NULL, q, &rep);
	size_t t = 0;
	while (rc == 0 && t < rq->n && fabs(q[t] / c->raw[t] - 1) <= BT_IMPLIED_REL)
		t++;
	free(q);
	if (rc == 0 && t == rq->n)
		return 0;
	if (rc == 0) {
		snprintf(msg, sizeof msg, "equity at bar %zu is not what trading the asset gives", t);
		bt_fail_bar(c, EV_BAD_OUTPUT, t, msg);
		return -1;
	}
	pyrepr_double(rep.growth, g);
	pyrepr_double(rep.ret, r);
	snprintf(msg, sizeof msg, "equity grows %s at bar %zu while the asset returns %s: more than trading it at "
		 "max_leverage %g explains (%zu such bars)", g, rep.first_bad, r, rq->engine.max_leverage, rep.unexplained);
	bt_fail_bar(c, EV_BAD_OUTPUT, rep.first_bad, msg);
	return -1;
}

/* First index in [0, n) where a and b differ bitwise, or n. */
static size_t bt_first_diff(const double *a, const double *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (memcmp(&a[i], &b[i], sizeof a[i]) != 0)
			return i;
	return n;
}

static int bt_start(struct bt_ctx *c);
static int bt_load(struct bt_ctx *c);
static void bt_stop(struct bt_ctx *c, int failed, int score);
static void bt_settle(struct bt_ctx *c, int failed);

/* One audit call on prices[0..bars), the last one replaced by `last` unless
 * it is NaN, sent to the host as its data first (so it holds no other price
 * from then on). Output into out; 0 or -1 (failure recorded). */
static int bt_audit_call(struct bt_ctx *c, size_t bars, double last, double *out)
{
	memcpy(c->pscratch, c->rq->prices, bars * sizeof *c->pscratch);
	if (!isnan(last))
		c->pscratch[bars - 1] = last;
	return bt_call(c, c->pscratch, bars, out);
}

/* Record an audit failure at (cut, bar) from check `what`. */
static void bt_audit_fail(struct bt_ctx *c, const char *what, size_t cut, size_t bar)
{
	struct bt_audit *a = &c->res->audit;
	a->passed = 0;
	a->fail_cut = cut;
	a->first_diff = bar;
	snprintf(a->check, sizeof a->check, "%s", what);
	char msg[256];
	if (strcmp(what, "prefix") == 0)
		snprintf(msg, sizeof msg, "output at bar %zu changes when the bars from %zu on are removed: "
			 "the strategy uses future prices", bar, cut);
	else
		snprintf(msg, sizeof msg, "the exposure over bar %zu depends on that bar's own price "
			 "(same-bar look-ahead)", bar);
	bt_fail_bar(c, EV_LOOKAHEAD, bar, msg);
	bt_extra(c, "cut", json_object_new_int64((int64_t)cut));
	bt_extra(c, "check", json_object_new_string(what));
}

/* The last-bar check (b) at cut (see backtest.h). 0 passed, -1 failed or error. */
static int bt_audit_last_bar(struct bt_ctx *c, size_t cut)
{
	static const double R[4] = { -0.10, -0.01, 0.01, 0.10 };
	const double *p = c->rq->prices;
	double base = p[cut - 2], e0 = c->raw[cut - 2];
	if (!(isfinite(base) && base > 0 && isfinite(e0) && e0 > 0))
		return 0;
	double g[4], r[4];
	for (int j = 0; j < 4; j++) {
		double last = base * (1 + R[j]);
		if (bt_audit_call(c, cut, last, c->scratch) < 0)
			return -1;
		c->res->audit.runs++;
		size_t d = bt_first_diff(c->scratch, c->raw, cut - 1);
		if (d < cut - 1) {
			bt_audit_fail(c, "prefix", cut - 1, d);
			return -1;
		}
		g[j] = c->scratch[cut - 1] / e0;
		r[j] = last / base - 1;
		if (!isfinite(g[j])) {
			bt_audit_fail(c, "last_bar", cut, cut - 1);
			return -1;
		}
	}
	double s1 = (g[1] - g[0]) / (r[1] - r[0]);
	/* the intercept k of g = 1 + w·r + k is what the bar earns whatever the
	 * asset does: costs only (k <= 0), never a self-granted gain */
	if (!(g[0] - 1 - s1 * r[0] <= IMPLIED_TOL * 1e3)) {
		bt_audit_fail(c, "last_bar", cut, cut - 1);
		return -1;
	}
	for (int j = 2; j < 4; j++) {
		double sj = (g[j] - g[0]) / (r[j] - r[0]);
		if (!(fabs(sj - s1) <= BT_AUDIT_EXPOSURE_TOL)) {
			bt_audit_fail(c, "last_bar", cut, cut - 1);
			return -1;
		}
	}
	/* the full run's own growth over the bar lies on that line: the
	 * exposure it traded is the one decided without the bar's price */
	double rr = p[cut - 1] / base - 1, gr = c->raw[cut - 1] / e0;
	if (isfinite(rr) && !(fabs(gr - (g[0] + s1 * (rr - r[0]))) <= BT_AUDIT_EXPOSURE_TOL * fabs(rr) + 1e-9)) {
		bt_audit_fail(c, "last_bar", cut, cut - 1);
		return -1;
	}
	return 0;
}

/* splitmix64 step. */
static uint64_t bt_mix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* qsort comparator for size_t. */
static int bt_cmp_size(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	return x < y ? -1 : x > y;
}

size_t bt_audit_cuts(size_t n, uint64_t seed, size_t min_cut, size_t cuts[BT_MAX_CUTS])
{
	if (n < 2)
		return 0;
	size_t cand[BT_MAX_CUTS] = { n / 4, n / 2, 3 * n / 4 };
	uint64_t s = seed;
	for (int i = 3; i < BT_MAX_CUTS; i++)
		cand[i] = 1 + (size_t)(bt_mix(&s) % (n - 1));
	qsort(cand, BT_MAX_CUTS, sizeof cand[0], bt_cmp_size);
	size_t k = 0;
	for (int i = 0; i < BT_MAX_CUTS; i++)
		if (cand[i] >= 1 && cand[i] >= min_cut && cand[i] < n && (k == 0 || cuts[k - 1] != cand[i]))
			cuts[k++] = cand[i];
	return k;
}

/* The audit's shared state: which cuts are taken and done, the lowest
 * failed one, and the CPU the run's ended hosts used (the budget of the
 * next host). Guarded by mu. */
struct bt_par {
	struct bt_ctx  *c;                    /* the run */
	pthread_mutex_t mu;
	pthread_cond_t  cv;                   /* full changed */
	int             full;                 /* the full run: 0 running, 1 output valid, -1 failed */
	pthread_t       th;                   /* the spare worker ... */
	int             spare;                /* ... when started */
	size_t          n;                    /* cuts */
	size_t          cuts[BT_MAX_CUTS];
	int             state[BT_MAX_CUTS];   /* BT_CUT_TODO, _TAKEN, _DONE */
	size_t          failed;               /* lowest failed cut index, or n */
	double          cpu_used;
	unsigned        hosts0;               /* the run's hosts before the audit */
	struct bt_ctx   x[BT_MAX_CUTS];       /* each cut's own host context ... */
	struct bt_result r[BT_MAX_CUTS];      /* ... and result */
};

enum { BT_CUT_TODO, BT_CUT_TAKEN, BT_CUT_DONE };

/*
 * One cut in its own fresh host (x, set up by bt_par_new): start, load,
 * then (once the full run has its output: the spare's first cut may start
 * and load while the full run is still running) the last-bar calls
 * (simulate), the prefix call, the comparison with the full run, then the
 * host's end and verdict. Failures land in x->res. Returns 0; -2 when x is
 * a spare and no zygote could be spared (nothing started, nothing
 * recorded); -3 when the full run failed meanwhile (the host is killed,
 * nothing but its resources counts).
 */
static int bt_cut_run(struct bt_par *p, struct bt_ctx *x, size_t cut)
{
	int rc = bt_start(x);
	if (rc == -2)
		return -2;
	if (rc == 0 && bt_load(x) == 0) {
		pthread_mutex_lock(&p->mu);
		while (p->full == 0)
			pthread_cond_wait(&p->cv, &p->mu);
		int go = p->full > 0;
		pthread_mutex_unlock(&p->mu);
		if (!go) {
			bt_stop(x, 1, 0);
			return -3;
		}
		x->phase = "audit";
		if (!(x->res->kind == BT_KIND_SIMULATE && cut >= 2 && bt_audit_last_bar(x, cut) < 0) &&
		    bt_audit_call(x, cut, NAN, x->scratch) == 0) {
			x->res->audit.runs++;
			size_t d = bt_first_diff(x->scratch, x->raw, cut);
			if (d < cut)
				bt_audit_fail(x, "prefix", cut, d);
		}
	}
	int failed = x->res->err != EV_OK || x->proto_fail != PROTO_OK;
	if (x->started) {
		bt_stop(x, failed, 0);
		bt_settle(x, failed);
	}
	return 0;
}

/* The next cut to take (from the low end, or the high end for the spare),
 * n if none; *pending: a cut the spare holds may still be given back.
 * Caller holds p->mu. */
static size_t bt_audit_next(const struct bt_par *p, int spare, int *pending)
{
	size_t n = p->n;
	*pending = 0;
	for (size_t k = 0; k < n; k++) {
		size_t j = spare ? n - 1 - k : k;
		if (j < p->failed && p->state[j] == BT_CUT_TODO)
			return j;
		if (j < p->failed && p->state[j] == BT_CUT_TAKEN)
			*pending = 1;
	}
	return n;
}

/*
 * Audit worker: take the next cut still to do (the main worker the lowest,
 * the spare the highest), skipping cuts above one that failed, and run it.
 * A spare that finds no zygote to spare gives its cut back and stops; the
 * main worker therefore ends only when no cut is left that the spare
 * could still give back.
 */
static void bt_audit_work(struct bt_par *p, int spare)
{
	size_t n = p->n;
	for (;;) {
		pthread_mutex_lock(&p->mu);
		int pending;
		size_t i;
		while ((i = bt_audit_next(p, spare, &pending)) == n && pending && !spare)
			pthread_cond_wait(&p->cv, &p->mu);
		if (i < n) {
			p->state[i] = BT_CUT_TAKEN;
			p->x[i].cpu_prev = p->cpu_used;
		}
		pthread_mutex_unlock(&p->mu);
		if (i == n)
			return;
		p->x[i].spare = spare;
		int rc = bt_cut_run(p, &p->x[i], p->cuts[i]);
		pthread_mutex_lock(&p->mu);
		if (rc == -2) {
			p->state[i] = BT_CUT_TODO;
		} else if (rc == -3) {
			p->state[i] = BT_CUT_DONE;
			p->failed = 0;
		} else {
			p->state[i] = BT_CUT_DONE;
			p->cpu_used += p->r[i].verdict.cpu_seconds;
			if (i < p->failed && p->r[i].err != EV_OK)
				p->failed = i;
		}
		pthread_cond_broadcast(&p->cv);
		pthread_mutex_unlock(&p->mu);
		if (rc == -2)
			return;
	}
}

/* Thread body of the spare audit worker. */
static void *bt_audit_spare(void *arg)
{
	bt_audit_work(arg, 1);
	return NULL;
}

/* Fold the cuts' results into the run's, as if the cuts had run in order
 * and stopped at the first failure: that cut's error, check and log tail;
 * the calls of the cuts up to it; the CPU and peak memory of every host
 * that ran. The run's verdict becomes that of its deciding host (the
 * failed cut, else the last), its CPU and memory counted in cpu_prev and
 * mem_prev as bt_finish expects. Without `decide` (the full run failed)
 * only the resources are added. */
static void bt_audit_merge(struct bt_par *p, int decide)
{
	struct bt_ctx *c = p->c;
	struct bt_result *res = c->res;
	struct bt_audit *a = &res->audit;
	size_t n = p->n, last = n;
	for (size_t i = 0; i < n; i++) {
		struct bt_result *r = &p->r[i];
		if (p->state[i] != BT_CUT_DONE)
			continue;
		last = i <= p->failed ? i : last;
		c->cpu_prev += r->verdict.cpu_seconds;
		if (r->verdict.cg_mem_bytes > c->mem_prev)
			c->mem_prev = r->verdict.cg_mem_bytes;
		res->timing.host_s += r->timing.host_s;
		if (i <= p->failed)
			a->runs += r->audit.runs;
		c->hosts += p->x[i].hosts - p->hosts0;
	}
	/* the full run failed: its error and verdict stand, a cut that the
	 * spare had started counts only its resources */
	if (!decide || res->err != EV_OK)
		return;
	for (size_t i = 0; i < p->failed && i < n; i++)
		if (p->state[i] != BT_CUT_DONE) {
			/* never a pass with a cut missing */
			bt_fail(c, EV_INTERNAL, "audit cut %zu did not run", p->cuts[i]);
			return;
		}
	if (last < n) {
		struct bt_result *r = &p->r[last];
		res->verdict = r->verdict;
		res->verdict.cpu_seconds = 0;
		res->verdict.cg_mem_bytes = 0;
		memcpy(res->log_tail, r->log_tail, sizeof res->log_tail);
	}
	if (p->failed < n && res->err == EV_OK) {
		struct bt_result *r = &p->r[p->failed];
		res->err = r->err;
		memcpy(res->detail, r->detail, sizeof res->detail);
		json_object_put(res->extra);
		res->extra = r->extra;
		r->extra = NULL;
		if (r->audit.check[0]) {
			a->fail_cut = r->audit.fail_cut;
			a->first_diff = r->audit.first_diff;
			memcpy(a->check, r->audit.check, sizeof a->check);
		}
	}
	double cpu = c->rq->sbx.limits.cpu_seconds > 0 ? c->rq->sbx.limits.cpu_seconds : BT_DEFAULT_CPU_S;
	if (c->cpu_prev > cpu)
		bt_fail(c, EV_TIMEOUT, "CPU time limit exceeded during audit");
}

/* The audit's state for run c, whose first host has loaded the code (its
 * kind is known): the cuts and one context per cut. */
static struct bt_par *bt_par_new(struct bt_ctx *c)
{
	struct bt_par *p = xcalloc(1, sizeof *p);
	p->c = c;
	p->n = bt_audit_cuts(c->rq->n, c->rq->audit_seed, c->res->kind == BT_KIND_SIMULATE ? 2 : 1, p->cuts);
	p->failed = p->n;
	p->hosts0 = c->hosts;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	for (size_t i = 0; i < p->n; i++) {
		struct bt_ctx *x = &p->x[i];
		*x = (struct bt_ctx){ .rq = c->rq, .res = &p->r[i], .phase = "audit", .t0 = c->t0, .hosts = c->hosts,
		                      .given = c->compiled.len > c->rq->code_len ? &c->compiled : NULL };
		p->r[i].kind = c->res->kind;
		p->r[i].n = c->rq->n;
		x->scratch = xcalloc(c->rq->n, sizeof *x->scratch);
		x->pscratch = xcalloc(c->rq->n, sizeof *x->pscratch);
	}
	/* with a spare box, the second worker starts its first cut's host now,
	 * alongside the full run: its fork and load need no price */
	p->spare = c->rq->spare_box_id != 0 && p->n > 1 && pthread_create(&p->th, NULL, bt_audit_spare, p) == 0;
	return p;
}

/* The full run is over: its output valid (ok) or failed. Cut hosts
 * waiting for that output go on, or stop. */
static void bt_par_full_done(struct bt_par *p, int ok)
{
	pthread_mutex_lock(&p->mu);
	p->full = ok ? 1 : -1;
	if (!ok)
		p->failed = 0;
	for (size_t i = 0; i < p->n; i++)
		p->x[i].raw = p->c->raw;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

/* Free p (its spare worker joined). */
static void bt_par_free(struct bt_par *p)
{
	for (size_t i = 0; i < p->n; i++) {
		proto_conn_free(&p->x[i].conn);
		buf_free(&p->x[i].meta);
		free(p->x[i].scratch);
		free(p->x[i].pscratch);
		json_object_put(p->r[i].extra);
	}
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	free(p);
}

/*
 * The causality audit over the cut points, once the full run's output is
 * in and valid. Every cut has its own fresh host that never receives a
 * price at or after the cut, so no audit call can replay what the full run
 * (or another cut) saw. Within a cut, the simulate last-bar calls (fake
 * last prices) come first and the prefix call, the only one with the real
 * last price, last: what a call can remember is only what an earlier call
 * of its cut was allowed to see, and never the price it is checked
 * against. One host per cut rather than per call keeps the audit's cost at
 * 6 host starts (a zygote fork and a LOAD).
 *
 * With a spare box, a second worker thread takes cuts from the other end
 * in a host of that box (its own uid, cgroup and limits) while a zygote
 * helper is idle to spare, so a lone run uses the machine's second core; a
 * busy machine runs the cuts one after the other as before. The spare's
 * first host starts and loads while the full run runs (bt_par_new) and
 * gets its prices once the full run's output is valid; the full run's host
 * exits meanwhile, and its verdict is settled before the slot's own worker
 * starts: if it fails the run, no further cut starts and none counts. Each
 * cut host is given what the hosts ended so far left of the CPU limit, and
 * the run fails with a timeout when all hosts together used more. The
 * outcome does not depend on the interleaving: the error is the first
 * failing cut's in cut order, and cuts after it count no calls.
 */
static void bt_audit(struct bt_ctx *c, struct bt_par *p)
{
	struct bt_audit *a = &c->res->audit;
	double t0 = proto_now();
	a->performed = 1;
	a->passed = 1;
	a->n_cuts = p->n;
	memcpy(a->cuts, p->cuts, sizeof a->cuts);
	bt_par_full_done(p, 1);
	bt_stop(c, 0, 0);
	bt_settle(c, 0);
	pthread_mutex_lock(&p->mu);
	p->cpu_used += c->res->verdict.cpu_seconds;
	if (c->res->err != EV_OK)
		p->failed = 0;
	pthread_mutex_unlock(&p->mu);
	c->cpu_prev = c->res->verdict.cpu_seconds;
	c->mem_prev = c->res->verdict.cg_mem_bytes;
	c->res->verdict.cpu_seconds = 0;
	c->res->verdict.cg_mem_bytes = 0;
	if (c->res->err == EV_OK)
		bt_audit_work(p, 0);
	if (p->spare)
		pthread_join(p->th, NULL);
	bt_audit_merge(p, 1);
	if (c->res->err != EV_OK || c->proto_fail != PROTO_OK)
		a->passed = 0;
	c->res->timing.audit_s = proto_now() - t0;
}

/* Start a host and read READY. The first one gets the run's limits; a
 * later one (the audit's fresh hosts) what the ended ones left of the
 * run's CPU and wall budgets (bt_audit_merge checks the total). 0, -1, or
 * -2 for a spare context with no zygote to spare (nothing recorded). */
static int bt_start(struct bt_ctx *c)
{
	struct sbx_spec spec = c->rq->sbx;
	struct sbx_limits *l = &spec.limits;
	spec.zygote = sbx_zygote_for_code(c->rq->code, c->rq->code_len);
	if (c->spare)
		spec.box_id = c->rq->spare_box_id;
	if (l->output_bytes == 0) {
		/* the full run, every audit call, and room for logs */
		uint64_t per = (uint64_t)c->rq->n * 8;
		l->output_bytes = per * (c->rq->audit ? 1 + 5 * BT_MAX_CUTS : 1) + (64u << 20);
	}
	double cpu = l->cpu_seconds > 0 ? l->cpu_seconds : BT_DEFAULT_CPU_S;
	double wall = l->wall_seconds > 0 ? l->wall_seconds : 2 * cpu;
	double deadline = c->t0 + wall + 5;
	if (c->hosts > 0) {
		double now = proto_now();
		if (c->cpu_prev >= cpu || now >= c->t0 + wall) {
			bt_fail(c, EV_TIMEOUT, "%s limit exceeded during %s",
				c->cpu_prev >= cpu ? "CPU time" : "wall time", c->phase);
			return -1;
		}
		l->cpu_seconds = cpu - c->cpu_prev;
		l->wall_seconds = c->t0 + wall - now;
	}
	char err[256];
	if (c->spare && sbx_start_spare(&spec, &c->run, err, sizeof err) < 0)
		return -2;
	if (!c->spare && sbx_start(&spec, &c->run, err, sizeof err) < 0) {
		bt_fail(c, EV_INTERNAL, "cannot start the strategy host: %s", err);
		return -1;
	}
	c->started = 1;
	c->hosts++;
	if (c->rq->on_host)
		c->rq->on_host(c->rq->on_host_arg, &c->run, 1);
	proto_conn_init(&c->conn, c->run.to_host, c->run.from_host, c->run.log_fd, deadline);
	const char *phase = c->phase;
	c->phase = "start";
	struct proto_hdr h;
	if (bt_reply(c, PROTO_READY, &h, NULL, 0) < 0)
		return -1;
	json_object *m = bt_meta_obj(c), *v;
	int ok = m && json_object_object_get_ex(m, "protocol", &v) && json_object_get_int(v) == PROTO_VERSION;
	json_object_put(m);
	if (!ok) {
		bt_proto_fail(c, PROTO_MALFORMED, PROTO_READY);
		return -1;
	}
	if (c->hosts == 1)
		c->res->timing.startup_s = proto_now() - c->t0;
	else
		c->phase = phase;
	return 0;
}

/* LOAD the code and learn its kind. 0 or -1. */
static int bt_load(struct bt_ctx *c)
{
	c->phase = "load";
	char meta[160];
	const struct buf *g = c->given;
	snprintf(meta, sizeof meta, "{\"kind\":\"%s\",\"filename\":\"strategy.py\"%s", bt_kind_name(c->rq->kind),
		 c->want_code ? ",\"want_code\":true" : "");
	if (g)
		snprintf(meta + strlen(meta), sizeof meta - strlen(meta), ",\"code_len\":%zu", c->rq->code_len);
	strcat(meta, "}");
	if (bt_send(c, PROTO_LOAD, meta, g ? g->data : c->rq->code, g ? g->len : c->rq->code_len) < 0)
		return -1;
	struct proto_hdr h;
	if (c->want_code) {
		/* the code the host compiled, sent before any of it ran: the
		 * source, then the marshalled code, for the audit's hosts */
		uint32_t cap = (uint32_t)BT_COMPILED_MAX(c->rq->code_len);
		buf_reset(&c->compiled);
		buf_reserve(&c->compiled, c->rq->code_len + cap);
		buf_append(&c->compiled, c->rq->code, c->rq->code_len);
		if (bt_reply(c, PROTO_COMPILED, &h, c->compiled.data + c->compiled.len, cap) < 0)
			return -1;
		c->compiled.len += h.body_len;
		c->compiled.data[c->compiled.len] = '\0';
		if (h.body_len == 0) {
			bt_proto_fail(c, PROTO_MALFORMED, PROTO_COMPILED);
			return -1;
		}
	}
	if (bt_reply(c, PROTO_LOADED, &h, NULL, 0) < 0)
		return -1;
	json_object *m = bt_meta_obj(c);
	int k = m ? bt_kind_parse(bt_str(m, "kind", "", 32)) : -1;
	double ls = m ? bt_num(m, "load_s") : -1;
	json_object_put(m);
	if (k <= BT_KIND_AUTO || (c->rq->kind != BT_KIND_AUTO && (enum bt_kind)k != c->rq->kind)) {
		bt_proto_fail(c, PROTO_MALFORMED, PROTO_LOADED);
		return -1;
	}
	if (c->hosts > 1 && (enum bt_kind)k != c->res->kind) {
		bt_proto_fail(c, PROTO_MALFORMED, PROTO_LOADED);
		return -1;
	}
	c->res->kind = (enum bt_kind)k;
	if (ls >= 0 && ls < 1e6 && c->hosts == 1)
		c->res->timing.load_s = ls;
	return 0;
}

/* The full run: send the prices, get the output, build the equity. */
static int bt_full(struct bt_ctx *c)
{
	const struct bt_request *rq = c->rq;
	struct bt_result *res = c->res;
	c->phase = "run";
	c->raw = xcalloc(rq->n, sizeof *c->raw);
	if (bt_call(c, rq->prices, rq->n, c->raw) < 0)
		return -1;
	if (res->kind == BT_KIND_SIMULATE) {
		res->equity = c->raw; /* shared: freed once, by bt_result_free */
		return bt_check_equity(c, res->equity, rq->n) < 0 ? -1 : bt_implied(c, rq);
	}
	res->equity = xcalloc(rq->n, sizeof *res->equity);
	res->positions = xcalloc(rq->n, sizeof *res->positions);
	memcpy(res->positions, c->raw, rq->n * sizeof *c->raw);
	enum ev_err e = engine_run(&rq->engine, rq->prices, res->positions, rq->n, res->equity, &res->engine);
	if (e != EV_OK) {
		char v[PYREPR_MAX], msg[128];
		pyrepr_double(c->raw[res->engine.bad_index], v);
		snprintf(msg, sizeof msg, "position[%zu] = %s is not finite", res->engine.bad_index, v);
		bt_fail_bar(c, e, res->engine.bad_index, msg);
		return -1;
	}
	return 0;
}

/* Metrics, positions figures, the non-finite check. */
static void bt_metrics(struct bt_ctx *c)
{
	struct bt_result *res = c->res;
	metrics_compute(res->equity, res->n, c->rq->bars_per_year, &res->metrics);
	if (res->kind == BT_KIND_POSITIONS)
		metrics_add_positions(&res->metrics, &res->engine.pos);
	int bad = metrics_first_non_finite(&res->metrics);
	if (bad >= 0) {
		char v[PYREPR_MAX];
		pyrepr_double(res->metrics.v[bad], v);
		bt_fail(c, EV_NON_FINITE_METRIC, "metric %s is not finite (%s)", metric_name((enum metric_id)bad), v);
		bt_extra(c, "metric", json_object_new_string(metric_name((enum metric_id)bad)));
	}
}

/* Thread body: metrics, then the caller's on_output hook. Touches only
 * c->res (the other thread waits for the host's EOF meanwhile). */
static void *bt_score_thread(void *arg)
{
	struct bt_ctx *c = arg;
	bt_metrics(c);
	if (c->res->err == EV_OK && c->rq->on_output)
		c->rq->on_output(c->rq->on_output_arg, c->res);
	return NULL;
}

/* After BYE: wait (bounded by the deadline) until the host closes its
 * stdout, i.e. has exited; anything it still sends is discarded. */
static void bt_wait_eof(struct bt_ctx *c)
{
	char sink[4096];
	struct proto_conn *pc = &c->conn;
	for (;;) {
		ssize_t r = read(pc->rfd, sink, sizeof sink);
		if (r > 0 || (r < 0 && errno == EINTR))
			continue;
		if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
			return;
		struct pollfd p[2] = { { .fd = pc->rfd, .events = POLLIN }, { .fd = pc->logfd, .events = POLLIN } };
		double left = pc->deadline - proto_now();
		if (left <= 0 || poll(p, pc->logfd >= 0 ? 2 : 1, (int)(left * 1000) + 1) < 0)
			return;
		if (pc->logfd >= 0 && p[1].revents)
			proto_drain_log(pc, 0);
	}
}

/*
 * End the current host: BYE after a clean exchange (with `score`, the
 * metrics are computed on a second thread while this one times the
 * interpreter's exit), else kill it; then its verdict into res->verdict and
 * its log tail into res->log_tail.
 */
static void bt_stop(struct bt_ctx *c, int failed, int score)
{
	struct bt_result *res = c->res;
	if (!failed && proto_send(&c->conn, PROTO_BYE, NULL, 0, NULL, 0) != PROTO_OK)
		failed = 1;
	if (failed) {
		sbx_kill(&c->run);
	} else if (score) {
		double t_bye = proto_now();
		pthread_t th;
		int threaded = pthread_create(&th, NULL, bt_score_thread, c) == 0;
		if (!threaded)
			bt_score_thread(c);
		bt_wait_eof(c);
		res->timing.shutdown_s = proto_now() - t_bye;
		if (threaded)
			pthread_join(th, NULL);
	} else {
		double t_bye = proto_now();
		bt_wait_eof(c);
		res->timing.shutdown_s = proto_now() - t_bye;
	}
	/* the host's last words (its stderr) before the pipes go */
	proto_drain_log(&c->conn, failed ? 0.5 : 2.0);
	if (c->rq->on_host)
		c->rq->on_host(c->rq->on_host_arg, &c->run, 0);
	if (sbx_finish(&c->run, &res->verdict) < 0)
		res->verdict.status = SBX_XX;
	c->started = 0;
	size_t keep = c->conn.log.len < sizeof res->log_tail - 1 ? c->conn.log.len : sizeof res->log_tail - 1;
	if (keep)
		memcpy(res->log_tail, c->conn.log.data + c->conn.log.len - keep, keep);
	res->log_tail[keep] = '\0';
}

/* Settle the run's error from the ended host's verdict and the recorded
 * protocol failure (`failed`: the exchange did not end cleanly). */
static void bt_settle(struct bt_ctx *c, int failed)
{
	struct bt_result *res = c->res;
	enum ev_err ve = verdict_map_error(&res->verdict);
	const struct sbx_verdict *v = &res->verdict;
	if (res->err == EV_OK && c->proto_fail == PROTO_OK && v->status != SBX_OK) {
		/* complete answers, then a bad end: still a failed run */
		if (ve == EV_OK)
			ve = EV_CRASHED;
		bt_fail(c, ve, "the strategy host ended badly: %s%s%s", sbx_status_code(v->status),
			v->message[0] ? ": " : "", v->message);
		return;
	}
	if (c->proto_fail == PROTO_OK)
		return;
	if (ve != EV_OK && !(failed && v->status == SBX_SG && c->proto_fail != PROTO_EOF)) {
		if (ve == EV_CRASHED)
			bt_fail(c, ve, "the strategy host was killed by signal %d during %s", v->exit_signal, c->phase);
		else if (ve == EV_FORBIDDEN_SYSCALL)
			bt_fail(c, ve, "forbidden system call %s during %s", v->syscall_name, c->phase);
		else
			bt_fail(c, ve, "%s during %s%s%s", ev_strerror(ve), c->phase, v->message[0] ? ": " : "", v->message);
		return;
	}
	switch (c->proto_fail) {
	case PROTO_TIMEOUT:
		bt_fail(c, EV_TIMEOUT, "no answer from the strategy host within the wall-clock limit (%s)", c->phase);
		break;
	case PROTO_EOF:
		bt_fail(c, EV_CRASHED, "the strategy host exited (status %s, exit code %d) without answering during %s",
			sbx_status_code(v->status), v->exit_code, c->phase);
		break;
	case PROTO_TOO_BIG:
		bt_fail(c, EV_OUTPUT_LIMIT, "the strategy host sent a frame (type 0x%02x) larger than allowed", c->fail_type);
		break;
	case PROTO_MALFORMED:
		bt_fail(c, EV_BAD_OUTPUT, "the strategy host broke the protocol (frame type 0x%02x during %s)",
			c->fail_type, c->phase);
		break;
	default:
		bt_fail(c, EV_INTERNAL, "talking to the strategy host: %s", proto_status_str(c->proto_fail));
	}
}


/* Stop the last host, collect its verdict, settle the final error; the
 * resources are those of every host of the run together. */
static void bt_finish(struct bt_ctx *c)
{
	struct bt_result *res = c->res;
	int failed = res->err != EV_OK || c->proto_fail != PROTO_OK;
	if (c->started) {
		bt_stop(c, failed, !failed);
		bt_settle(c, failed);
	} else if (!failed) {
		bt_score_thread(c); /* audited: every host has ended */
	}
	res->verdict.cpu_seconds += c->cpu_prev;
	if (c->mem_prev > res->verdict.cg_mem_bytes)
		res->verdict.cg_mem_bytes = c->mem_prev;
	if (c->hosts > 1)
		res->verdict.wall_seconds = proto_now() - c->t0;
}

/* Check the request's own fields. 0 or -1. */
static int bt_validate(struct bt_ctx *c)
{
	const struct bt_request *rq = c->rq;
	char msg[128];
	if (rq->n < 1 || rq->n > (PROTO_MAX_BODY / 8))
		bt_fail(c, EV_DATASET, "the price series has %zu bars (1..%u allowed)", rq->n, PROTO_MAX_BODY / 8);
	else if (rq->code_len > BT_MAX_CODE)
		bt_fail(c, EV_INVALID_FIELD, "strategy source is %zu bytes (at most %u)", rq->code_len, BT_MAX_CODE);
	else if ((unsigned)rq->kind >= BT_KIND__MAX)
		bt_fail(c, EV_INVALID_FIELD, "unknown strategy kind");
	else if (!(rq->bars_per_year > 0 && isfinite(rq->bars_per_year)))
		bt_fail(c, EV_DATASET, "the dataset has no usable bar interval");
	else if (!engine_cfg_valid(&rq->engine, msg, sizeof msg))
		bt_fail(c, EV_INVALID_FIELD, "%s", msg);
	return c->res->err == EV_OK ? 0 : -1;
}

enum ev_err bt_run(const struct bt_request *rq, struct bt_result *res)
{
	double t0 = proto_now();
	memset(res, 0, sizeof *res);
	res->n = rq->n;
	struct bt_ctx c = { .rq = rq, .res = res, .phase = "start" };
	c.t0 = t0;
	/* an audited run's first host sends back its compiled code, which the
	 * cut hosts load instead of compiling the source again, when the
	 * series can have cuts (bt_audit_cuts: from bar 1, or 2 for simulate;
	 * an "auto" kind is known only after the load) */
	c.want_code = rq->audit && rq->n >= (rq->kind == BT_KIND_SIMULATE ? 3u : 2u);
	if (bt_validate(&c) == 0 && bt_start(&c) == 0 && bt_load(&c) == 0) {
		struct bt_par *p = rq->audit ? bt_par_new(&c) : NULL;
		int ok = bt_full(&c) == 0;
		if (p && ok) {
			bt_audit(&c, p);
		} else if (p) {
			/* no audit: a cut host the spare started is stopped and only
			 * its resources count */
			bt_par_full_done(p, 0);
			if (p->spare)
				pthread_join(p->th, NULL);
			bt_audit_merge(p, 0);
		}
		if (p)
			bt_par_free(p);
	}
	bt_finish(&c);
	proto_conn_free(&c.conn);
	buf_free(&c.meta);
	buf_free(&c.compiled);
	if (c.raw != res->equity)
		free(c.raw);
	free(c.scratch);
	free(c.pscratch);
	res->timing.total_s = proto_now() - t0;
	return res->err;
}

void bt_result_free(struct bt_result *res)
{
	free(res->equity);
	free(res->positions);
	json_object_put(res->extra);
	res->equity = res->positions = NULL;
	res->extra = NULL;
}

json_object *bt_error_json(const struct bt_result *res)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "error", json_object_new_string(res->detail));
	json_object_object_add(o, "code", json_object_new_string(ev_errcode(res->err)));
	json_object_object_add(o, "detail", json_object_new_string(res->detail));
	if (res->extra) {
		struct json_object_iterator it = json_object_iter_begin(res->extra);
		struct json_object_iterator end = json_object_iter_end(res->extra);
		for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it))
			json_object_object_add(o, json_object_iter_peek_name(&it),
					       json_object_get(json_object_iter_peek_value(&it)));
	}
	return o;
}
