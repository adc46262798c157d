/*
 * stream.c: the runner side of lockstep signal streaming (stream.h).
 *
 * Theory of operation.
 *
 * Memory. One memfd holds, page-aligned:
 *   [0, C)           the market, runner-written, read-only for the host:
 *                    int64 timestamps (T), closes T x A (row-major, assets
 *                    sorted by name: prices_matrix() is a slice), one T x 5
 *                    OHLCV block per asset, derivative columns
 *   [C, C+4096)      control page: magic; the runner's cache line (seq_r,
 *                    cmd, t, runner-sleeping flag); the host's cache line
 *                    (seq_h, status, dim, host-sleeping flag, counters)
 *   [C+4096, size)   the embedding slot (STREAM_MAX_DIM float32), host-written
 * The columns are preallocated for T bars and zero until written; bars are
 * appended, never rewritten, so the host's numpy views stay valid and O(1).
 *
 * Sealing. The memfd cannot shrink or grow. The host maps the control page
 * and slot read-write first and says so (seq_h = WIRE_SEQ_MAPPED), before
 * any strategy code exists in it; the runner then adds F_SEAL_FUTURE_WRITE
 * (and F_SEAL_SEAL) and answers seq_r = WIRE_SEQ_SEALED; only then does the
 * host map the market and load the strategy. From there on no process can
 * write the memfd or map it writable (mmap, mprotect, write, fallocate all
 * fail), only the runner's and the host's existing mappings stay writable,
 * and the host's ends at the file's end, so growing it with mremap reaches
 * nothing (the file cannot grow). The market is read-only for good in the
 * box, whatever its code does.
 *
 * Lockstep. For t = warmup .. bars-1: write bar t (bars 0..warmup-1 before
 * the first step), store t, publish seq_r = k (release), wait until
 * seq_h == k (acquire), copy the row. Bar t+1 is therefore written only
 * after row t is read back: the future is not in the sandbox. A caller's
 * mark (on_mark: a split evaluation's holdout start) runs just before its
 * bar is written, and may end the stream there.
 *
 * Waiting. Each side spins on the other's sequence word, then sleeps on it
 * with futex(2) after raising its "sleeping" flag; the poster stores its
 * sequence, issues a full barrier and wakes the other side only if that
 * flag is up (no system call on the fast path). The runner's spin budget is
 * adaptive: twice the strategy's recent time per step (the host's own
 * counter) plus 20 us, or only 2 us when that exceeds spin_us (200 us by
 * default, $AGENTTEST_STREAM_SPIN_US), so a quick
 * strategy is caught spinning and a slow or idle one costs no core. For a
 * slow strategy the runner first naps (a futex wait with a timeout) until
 * 30 us before its usual step time, then spins up to 90 us before it
 * blocks: the timer, not the host's wake-up call, ends the nap, so the
 * scheduler's wake-up latency stays off the critical path (the thread's
 * timer slack is 1 us while it streams). The host's counter is hostile:
 * a step counts for at most what the runner's own clock saw, and a nap
 * lasts at most NAP_MAX_NS and never past the deadline.
 * Futex sleeps time out every 2 ms so that the runner also notices a dead
 * host (EOF on the frame pipe), an ERROR frame, the wall-clock deadline and
 * cancellation (sbx_kill ends the host).
 *
 * Nothing in the shared memory is trusted: dim is bounds-checked, rows of
 * different lengths end the run, the host's timing counters are reported
 * but never scored.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <math.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "cpu_relax.h"
#include "xalloc.h"
#include "evaluator/runner/drive/protocol.h"
#include "evaluator/runner/drive/stream.h"
#include "evaluator/runner/drive/verdict_map.h"

#define PAGE            4096u
#define SLOT_OFF        ((size_t)WIRE_STREAM_SLOT_OFF)
#define CMD_STEP        ((uint32_t)WIRE_CMD_STEP)
#define CMD_DONE        ((uint32_t)WIRE_CMD_DONE)
#define SLEEP_NS        2000000L
#define SPIN_MIN_NS     2000.0
#define NAP_LEAD_NS     30000.0   /* a slow strategy's nap ends this early */
#define NAP_MAX_NS      20000000.0 /* longest nap: then the sleep loop's checks (host gone, deadline) */
#define CTL_BYTES       (SLOT_OFF + ((STREAM_MAX_DIM * sizeof(float) + PAGE - 1) & ~(size_t)(PAGE - 1)))

/* The control page, as the host indexes it (stream.py: u32 word / i64 index). */
struct ctl {
	char     magic[8];
	char     pad0[56];
	uint32_t seq_r;          /* word 16 */
	uint32_t cmd;            /* word 17 */
	int64_t  t;              /* i64 index 9 */
	uint32_t rsleep;         /* word 20 */
	char     pad1[44];
	uint32_t seq_h;          /* word 32 */
	uint32_t status;         /* word 33 */
	uint32_t dim;            /* word 34 */
	uint32_t hsleep;         /* word 35 */
	uint64_t strategy_ns;    /* i64 index 18 */
	uint64_t computes;       /* i64 index 19 */
};
/* the layout the host indexes is wire.h's: every field sits where it says */
#define CTL_W(f, w) (offsetof(struct ctl, f) == 4 * (w))
#define CTL_Q(f, q) (offsetof(struct ctl, f) == 8 * (q))
_Static_assert(CTL_W(seq_r, WIRE_CTL_SEQ_R) && CTL_W(cmd, WIRE_CTL_CMD) && CTL_Q(t, WIRE_CTL_T) &&
	       CTL_W(rsleep, WIRE_CTL_RSLEEP) && CTL_W(seq_h, WIRE_CTL_SEQ_H) &&
	       CTL_W(status, WIRE_CTL_STATUS) && CTL_W(dim, WIRE_CTL_DIM) && CTL_W(hsleep, WIRE_CTL_HSLEEP) &&
	       CTL_Q(strategy_ns, WIRE_CTL_STRATEGY_NS) && CTL_Q(computes, WIRE_CTL_COMPUTES) &&
	       sizeof(struct ctl) <= WIRE_STREAM_SLOT_OFF && sizeof(WIRE_STREAM_MAGIC) - 1 == 8,
	       "control page layout (wire.h)");

struct shm {
	int      fd;
	uint8_t *base;
	size_t   size, ctl_off;
	size_t   T, A;
	size_t  *order;          /* sorted position -> market column */
	int64_t *ts;
	double  *closes;
	double **ohlcv;          /* per sorted asset */
	size_t   n_cg;
	double **cg;             /* per present (field, asset) column */
	const double **cg_src;
	struct ctl *ctl;
	float   *slot;
};

struct sctx {
	const struct stream_request *rq;
	struct stream_result *res;
	struct shm shm;
	struct sbx_run run;
	struct proto_conn conn;
	struct buf meta;
	int started;
	enum proto_status proto_fail;
	uint16_t fail_type;
	const char *phase;
	double deadline;
	double spin_us;   /* spin cap of both sides */
};

/* Record the first failure (later ones are consequences). */
static void __attribute__((format(printf, 3, 4))) sfail(struct sctx *c, enum ev_err e, const char *fmt, ...)
{
	if (c->res->err != EV_OK)
		return;
	c->res->err = e;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->res->message, sizeof c->res->message, fmt, ap);
	va_end(ap);
}

/* Round n up to a multiple of a (a power of two); 0 on overflow. */
static size_t round_up(size_t n, size_t a)
{
	return n > SIZE_MAX - a ? 0 : (n + a - 1) & ~(a - 1);
}

/* Compare market names through an index array (qsort_r context). */
static int cmp_names(const void *a, const void *b, void *ctx)
{
	const struct ch_market *m = ctx;
	return strcmp(m->names[*(const size_t *)a], m->names[*(const size_t *)b]);
}

/* Offset bookkeeping: add `bytes` at *off (64-byte aligned); false on overflow. */
static bool take(size_t *off, size_t bytes, size_t *at)
{
	if (*off > SIZE_MAX - 64)
		return false;
	size_t o = round_up(*off, 64);
	if (bytes > SIZE_MAX - o)
		return false;
	*at = o;
	*off = o + bytes;
	return true;
}

/* Create the memfd and lay the market out; false with a message. */
static bool shm_create(struct shm *s, const struct ch_market *m, size_t T, json_object *lay, char *err, size_t errlen)
{
	size_t A = m->n_assets, off, at = 0;
	s->fd = -1;
	s->T = T;
	s->A = A;
	s->order = xcalloc(A ? A : 1, sizeof *s->order);
	for (size_t j = 0; j < A; j++)
		s->order[j] = j;
	struct ch_market mc = *m;  /* qsort_r's context is not const */
	qsort_r(s->order, A, sizeof *s->order, cmp_names, &mc);
	off = 0;
	size_t ts_at = 0, cl_at = 0, *oh_at = xcalloc(A ? A : 1, sizeof *oh_at);
	bool ok = T <= STREAM_MAX_BARS && A <= 1024 && take(&off, T * 8, &ts_at) && take(&off, T * A * 8, &cl_at);
	for (size_t j = 0; ok && j < A; j++)
		ok = take(&off, T * 40, &oh_at[j]);
	/* derivative columns: every (field, asset) the market has */
	s->cg = xcalloc(m->n_fields * A + 1, sizeof *s->cg);
	s->cg_src = xcalloc(m->n_fields * A + 1, sizeof *s->cg_src);
	size_t *cg_at = xcalloc(m->n_fields * A + 1, sizeof *cg_at);
	json_object *jcg = json_object_new_object();
	for (size_t j = 0; ok && j < A; j++) {
		size_t a = s->order[j];
		json_object *fo = NULL;
		for (size_t f = 0; ok && f < m->n_fields; f++) {
			const double *src = m->fields ? m->fields[f * A + a] : NULL;
			if (!src)
				continue;
			ok = take(&off, T * 8, &at);
			cg_at[s->n_cg] = at;
			s->cg_src[s->n_cg++] = src;
			if (!fo) {
				fo = json_object_new_object();
				json_object_object_add(jcg, m->names[a], fo);
			}
			json_object_object_add(fo, m->field_names[f], json_object_new_int64((int64_t)at));
		}
	}
	s->ctl_off = ok && off <= SIZE_MAX - PAGE ? round_up(off ? off : 1, PAGE) : 0;
	s->size = s->ctl_off && s->ctl_off <= SIZE_MAX - CTL_BYTES ? s->ctl_off + CTL_BYTES : 0;
	if (!ok || !s->size) {
		snprintf(err, errlen, "market too large to stream (%zu bars x %zu assets)", T, A);
		goto fail;
	}
	s->fd = memfd_create("agenttest-stream", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (s->fd < 0 || ftruncate(s->fd, (off_t)s->size) < 0 ||
	    fcntl(s->fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) < 0) {
		snprintf(err, errlen, "shared memory (%zu bytes): %s", s->size, strerror(errno));
		goto fail;
	}
	s->base = mmap(NULL, s->size, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd, 0);
	if (s->base == MAP_FAILED) {
		s->base = NULL;
		snprintf(err, errlen, "mmap of %zu bytes: %s", s->size, strerror(errno));
		goto fail;
	}
	s->ctl = (struct ctl *)(void *)(s->base + s->ctl_off);
	memcpy(s->ctl->magic, WIRE_STREAM_MAGIC, sizeof s->ctl->magic);
	s->slot = (float *)(void *)(s->base + s->ctl_off + SLOT_OFF);
	s->ts = (int64_t *)(void *)(s->base + ts_at);
	s->closes = (double *)(void *)(s->base + cl_at);
	s->ohlcv = xcalloc(A ? A : 1, sizeof *s->ohlcv);
	json_object *jassets = json_object_new_array(), *joh = json_object_new_object();
	for (size_t j = 0; j < A; j++) {
		s->ohlcv[j] = (double *)(void *)(s->base + oh_at[j]);
		json_object_array_add(jassets, json_object_new_string(m->names[s->order[j]]));
		json_object_object_add(joh, m->names[s->order[j]], json_object_new_int64((int64_t)oh_at[j]));
	}
	for (size_t k = 0; k < s->n_cg; k++)
		s->cg[k] = (double *)(void *)(s->base + cg_at[k]);
	json_object_object_add(lay, "fd", json_object_new_int(4));
	json_object_object_add(lay, "size", json_object_new_int64((int64_t)s->size));
	json_object_object_add(lay, "ctl_offset", json_object_new_int64((int64_t)s->ctl_off));
	json_object_object_add(lay, "max_dim", json_object_new_int(STREAM_MAX_DIM));
	json_object_object_add(lay, "T", json_object_new_int64((int64_t)T));
	json_object_object_add(lay, "assets", jassets);
	json_object_object_add(lay, "ts", json_object_new_int64((int64_t)ts_at));
	json_object_object_add(lay, "closes", json_object_new_int64((int64_t)cl_at));
	json_object_object_add(lay, "ohlcv", joh);
	json_object_object_add(lay, "cg", jcg);
	free(oh_at);
	free(cg_at);
	return true;
fail:
	json_object_put(jcg);
	free(oh_at);
	free(cg_at);
	return false;
}

/* Unmap and close; safe on a partly created shm. */
static void shm_free(struct shm *s)
{
	if (s->base)
		munmap(s->base, s->size);
	if (s->fd >= 0)
		close(s->fd);
	free(s->order);
	free(s->ohlcv);
	free(s->cg);
	free(s->cg_src);
	memset(s, 0, sizeof *s);
	s->fd = -1;
}

/* Column value or a fallback when the column is absent. */
static double colv(const double *const *cols, size_t a, size_t t, double dflt)
{
	return cols && cols[a] ? cols[a][t] : dflt;
}

/* Append bar t (the columns of every asset). */
static void shm_put_bar(struct shm *s, const struct ch_market *m, size_t t)
{
	s->ts[t] = m->ts ? m->ts[t] : (int64_t)t * 60000;
	double *row = s->closes + t * s->A;
	for (size_t j = 0; j < s->A; j++) {
		size_t a = s->order[j];
		double c = m->close[a][t];
		double *o = s->ohlcv[j] + t * 5;
		row[j] = c;
		o[0] = colv(m->open, a, t, c);
		o[1] = colv(m->high, a, t, c);
		o[2] = colv(m->low, a, t, c);
		o[3] = c;
		o[4] = colv(m->volume, a, t, 0.0);
	}
	for (size_t k = 0; k < s->n_cg; k++)
		s->cg[k][t] = s->cg_src[k][t];
}

/* qsort order of uint32_t. */
static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

/* Monotonic nanoseconds. */
static inline int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* futex(2) on a word of the shared mapping. */
static long futex(uint32_t *w, int op, uint32_t val, const struct timespec *to)
{
	return syscall(SYS_futex, w, op, val, to, NULL, 0);
}

/* An ERROR frame's meta -> the result's error; other frames: protocol failure. */
static void host_error(struct sctx *c, const struct proto_hdr *h)
{
	json_object *m = h->type == PROTO_ERROR ? json_tokener_parse(buf_cstr(&c->meta)) : NULL;
	if (!m || !json_object_is_type(m, json_type_object)) {
		json_object_put(m);
		c->proto_fail = PROTO_MALFORMED;
		c->fail_type = h->type;
		return;
	}
	json_object *v;
	const char *code = json_object_object_get_ex(m, "code", &v) ? json_object_get_string(v) : "strategy_error";
	const char *type = json_object_object_get_ex(m, "type", &v) ? json_object_get_string(v) : "Exception";
	const char *msg = json_object_object_get_ex(m, "message", &v) ? json_object_get_string(v) : "";
	const char *phase = json_object_object_get_ex(m, "phase", &v) ? json_object_get_string(v) : c->phase;
	enum ev_err e = ev_from_host_code(code);
	if (e == EV_BAD_OUTPUT)
		sfail(c, e, "%.900s", msg);
	else
		sfail(c, e, "%.100s in %.32s: %.800s", type, phase, msg);
	json_object *ex = json_object_new_object(), *tb = json_object_new_array(), *lines;
	json_object_object_add(ex, "type", json_object_new_string(type));
	json_object_object_add(ex, "message", json_object_new_string(msg));
	json_object_object_add(ex, "phase", json_object_new_string(phase));
	if (json_object_object_get_ex(m, "traceback", &lines) && json_object_is_type(lines, json_type_array)) {
		size_t n = json_object_array_length(lines);
		for (size_t i = n > 40 ? n - 40 : 0; i < n; i++) {
			json_object *l = json_object_array_get_idx(lines, i);
			if (json_object_is_type(l, json_type_string) && json_object_get_string_len(l) <= 1024)
				json_object_array_add(tb, json_object_new_string(json_object_get_string(l)));
		}
	}
	json_object_object_add(ex, "traceback", tb);
	if (!c->res->exception)
		c->res->exception = ex;
	else
		json_object_put(ex);
	json_object_put(m);
}

/* Receive one frame; `want` or ERROR. 0 for `want`, -1 otherwise (recorded). */
static int recv_frame(struct sctx *c, uint16_t want)
{
	struct proto_hdr h;
	buf_reset(&c->meta);
	enum proto_status st = proto_recv(&c->conn, &h, &c->meta, NULL, PROTO_MAX_META_IN, 0);
	if (st != PROTO_OK) {
		c->proto_fail = st;
		c->fail_type = h.type;
		return -1;
	}
	if (h.type != want) {
		host_error(c, &h);
		return -1;
	}
	return 0;
}

/* Parse the last meta as an object (NULL if not one). */
static json_object *meta_obj(struct sctx *c)
{
	json_object *m = json_tokener_parse(buf_cstr(&c->meta));
	if (m && !json_object_is_type(m, json_type_object)) {
		json_object_put(m);
		return NULL;
	}
	return m;
}

/* Non-negative integer member or -1. */
static int64_t meta_int(json_object *m, const char *k)
{
	json_object *v;
	if (!m || !json_object_object_get_ex(m, k, &v) || !json_object_is_type(v, json_type_int))
		return -1;
	return json_object_get_int64(v);
}

/* Finite non-negative number member or -1. */
static double meta_num(json_object *m, const char *k)
{
	json_object *v;
	if (!m || !json_object_object_get_ex(m, k, &v) ||
	    !(json_object_is_type(v, json_type_double) || json_object_is_type(v, json_type_int)))
		return -1;
	double d = json_object_get_double(v);
	return isfinite(d) && d >= 0 ? d : -1;
}

/* Sleep on seq_h for at most ns (the host wakes us if it publishes
 * earlier). True when seq has been published. */
static bool nap(struct sctx *c, uint32_t seq, int64_t ns)
{
	struct ctl *ctl = c->shm.ctl;
	__atomic_store_n(&ctl->rsleep, 1, __ATOMIC_SEQ_CST);
	uint32_t cur = __atomic_load_n(&ctl->seq_h, __ATOMIC_SEQ_CST);
	if (cur != seq) {
		struct timespec to = { ns / 1000000000, ns % 1000000000 };
		c->res->st.runner_naps++;
		futex(&ctl->seq_h, FUTEX_WAIT, cur, &to);
	}
	__atomic_store_n(&ctl->rsleep, 0, __ATOMIC_RELAXED);
	return __atomic_load_n(&ctl->seq_h, __ATOMIC_ACQUIRE) == seq;
}

/*
 * Wait until the host publishes seq (see "Waiting" above). *ewma is the
 * recent strategy time per step (from the host's counter, last_ns its
 * previous value). 0 when it did, -1 when the run failed meanwhile.
 */
static int wait_host(struct sctx *c, uint32_t seq, double *ewma, uint64_t *last_ns, double cap_ns)
{
	struct ctl *ctl = c->shm.ctl;
	int64_t start = now_ns(), t_in = start;
	/* spin through a quick strategy's step */
	double budget = 2 * *ewma + 20000;
	if (budget > cap_ns) {
		/* a slow one: nap through most of its usual time, then spin over
		 * the expected end (its wake-up is then off the critical path) */
		budget = SPIN_MIN_NS;
		if (*ewma > 2 * NAP_LEAD_NS) {
			/* the estimate comes from the host's counter: the runner's
			 * own clock bounds the nap (NAP_MAX_NS, the deadline) */
			double ns = *ewma - NAP_LEAD_NS, left = (c->deadline - proto_now()) * 1e9;
			if (ns > NAP_MAX_NS)
				ns = NAP_MAX_NS;
			if (ns > left)
				ns = left > 0 ? left : 0;
			if (nap(c, seq, (int64_t)ns))
				goto done;
			start = now_ns();
			budget = 3 * NAP_LEAD_NS;
		}
	}
	unsigned n = 0;
	while (__atomic_load_n(&ctl->seq_h, __ATOMIC_ACQUIRE) != seq) {
		cpu_relax();
		if ((++n & 63) == 0 && (double)(now_ns() - start) > budget)
			goto sleep;
	}
	goto done;
sleep:
	for (;;) {
		__atomic_store_n(&ctl->rsleep, 1, __ATOMIC_SEQ_CST);
		uint32_t cur = __atomic_load_n(&ctl->seq_h, __ATOMIC_SEQ_CST);
		if (cur == seq)
			break;
		struct timespec to = { 0, SLEEP_NS };
		c->res->st.runner_sleeps++;
		futex(&ctl->seq_h, FUTEX_WAIT, cur, &to);
		if (__atomic_load_n(&ctl->seq_h, __ATOMIC_ACQUIRE) == seq)
			break;
		struct pollfd p = { .fd = c->run.from_host, .events = POLLIN };
		if (proto_buffered(&c->conn) > 0 || poll(&p, 1, 0) > 0) {
			__atomic_store_n(&ctl->rsleep, 0, __ATOMIC_RELAXED);
			/* an ERROR frame (its seq bump may follow) or the host is gone */
			recv_frame(c, 0xffff);
			if (c->res->err == EV_OK && c->proto_fail == PROTO_OK)
				c->proto_fail = PROTO_MALFORMED;
			return -1;
		}
		if (proto_now() > c->deadline) {
			__atomic_store_n(&ctl->rsleep, 0, __ATOMIC_RELAXED);
			c->proto_fail = PROTO_TIMEOUT;
			return -1;
		}
	}
	__atomic_store_n(&ctl->rsleep, 0, __ATOMIC_RELAXED);
done:
	/* the host's own time for the step (its counter; only steers spinning) */
	uint64_t sns = __atomic_load_n(&ctl->strategy_ns, __ATOMIC_RELAXED);
	double step = (double)(sns - *last_ns), seen = (double)(now_ns() - t_in);
	*last_ns = sns;
	if (step > seen)
		step = seen;   /* never more than the runner saw this wait take */
	if (step >= 0)
		*ewma = 0.9 * *ewma + 0.1 * step;
	return 0;
}

/* Publish step `cmd` (t) as sequence seq and wake the host if it sleeps. */
static void post(struct shm *s, uint32_t seq, uint32_t cmd, int64_t t)
{
	struct ctl *ctl = s->ctl;
	__atomic_store_n(&ctl->cmd, cmd, __ATOMIC_RELAXED);
	__atomic_store_n(&ctl->t, t, __ATOMIC_RELAXED);
	__atomic_store_n(&ctl->seq_r, seq, __ATOMIC_RELEASE);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&ctl->hsleep, __ATOMIC_RELAXED))
		futex(&ctl->seq_r, FUTEX_WAKE, 1, NULL);
}

/* The sealing hand-shake (see "Sealing" above): wait until the host has
 * mapped the control page, seal the memfd against every later write,
 * answer. 0 or -1 (recorded). */
static int s_seal(struct sctx *c)
{
	double ewma = 0;
	uint64_t last_ns = 0;
	if (wait_host(c, WIRE_SEQ_MAPPED, &ewma, &last_ns, 0) < 0)
		return -1;
	if (fcntl(c->shm.fd, F_ADD_SEALS, F_SEAL_FUTURE_WRITE | F_SEAL_SEAL) < 0) {
		sfail(c, EV_INTERNAL, "cannot seal the shared market read-only: %s", strerror(errno));
		return -1;
	}
	post(&c->shm, WIRE_SEQ_SEALED, CMD_STEP, -1);
	return 0;
}

/* Start the host, send STREAM, seal the market, read STREAMING. 0 or -1. */
static int s_start(struct sctx *c, json_object *lay)
{
	const struct stream_request *rq = c->rq;
	struct sbx_spec spec = rq->sbx;
	char err[256];
	double t0 = proto_now();
	spec.shm_fd = c->shm.fd;
	/* the stream path itself (agenttest_host/stream.py) works on numpy arrays */
	spec.zygote = sbx_zygote_for_code(rq->code, rq->code_len);
	if (spec.zygote == SBX_ZYGOTE_PLAIN)
		spec.zygote = SBX_ZYGOTE_NUMPY;
	if (sbx_start(&spec, &c->run, err, sizeof err) < 0) {
		sfail(c, EV_INTERNAL, "cannot start the strategy host: %s", err);
		return -1;
	}
	c->started = 1;
	if (rq->on_host)
		rq->on_host(rq->on_host_arg, &c->run, 1);
	struct sbx_limits l = spec.limits;
	double cpu = l.cpu_seconds > 0 ? l.cpu_seconds : 60;
	double wall = l.wall_seconds > 0 ? l.wall_seconds : 2 * cpu;
	c->deadline = t0 + wall + 5;
	proto_conn_init(&c->conn, c->run.to_host, c->run.from_host, c->run.log_fd, c->deadline);
	c->phase = "start";
	if (recv_frame(c, PROTO_READY) < 0)
		return -1;
	c->res->st.startup_s = proto_now() - t0;
	c->phase = "load";
	json_object_object_add(lay, "spin_us", json_object_new_double(c->spin_us));
	const char *meta = json_object_to_json_string_ext(lay, JSON_C_TO_STRING_PLAIN);
	enum proto_status st = proto_send(&c->conn, PROTO_STREAM, meta, strlen(meta), rq->code, rq->code_len);
	if (st != PROTO_OK) {
		c->proto_fail = st;
		return -1;
	}
	if (s_seal(c) < 0 || recv_frame(c, PROTO_STREAMING) < 0)
		return -1;
	json_object *m = meta_obj(c);
	int64_t w = meta_int(m, "warmup"), ci = meta_int(m, "compute_interval");
	double ls = meta_num(m, "load_s");
	json_object_put(m);
	if (w < 0) {
		sfail(c, EV_BAD_OUTPUT, "the featurizer's warmup must be a non-negative integer");
		return -1;
	}
	c->res->warmup = (size_t)w;
	c->res->compute_interval = ci < 0 ? 0 : (size_t)ci;
	c->res->st.load_s = ls >= 0 ? ls : 0;
	return 0;
}

/* The caller's mark (stream_request.on_mark) when bar t is the next to be
 * written: 0 to go on, -1 when the caller ended the stream there (t0: the
 * loop's start, for the stats the caller sees). */
static int at_mark(struct sctx *c, size_t t, double t0)
{
	const struct stream_request *rq = c->rq;
	if (!rq->on_mark || t != rq->mark_bar)
		return 0;
	c->res->st.steps = c->res->rows;
	c->res->st.loop_s = proto_now() - t0;
	if (rq->on_mark(rq->on_mark_arg, c->res) == 0)
		return 0;
	sfail(c, EV_INTERNAL, "stopped at bar %zu by the caller", t);
	return -1;
}

/* The lockstep loop. 0 or -1. */
static int s_loop(struct sctx *c)
{
	const struct stream_request *rq = c->rq;
	struct stream_result *res = c->res;
	struct shm *s = &c->shm;
	size_t bars = rq->bars, w = res->warmup;
	uint64_t last_ns = 0;
	double ewma = 20000, cap = c->spin_us * 1000;
	uint32_t seq = 0;
	size_t rows = w < bars ? bars - w : 0, dim = 0;
	size_t max_dim = rq->max_dim && rq->max_dim < STREAM_MAX_DIM ? rq->max_dim : STREAM_MAX_DIM;
	c->phase = "stream";
	double t0 = proto_now();
	for (size_t t = 0; t < w && t < bars; t++) {
		if (at_mark(c, t, t0) < 0)
			return -1;
		shm_put_bar(s, rq->m, t);
	}
	uint32_t *plat = xcalloc(rows + 1, sizeof *plat);  /* per-step platform ns (saturated) */
	if (rq->on_progress)
		rq->on_progress(rq->on_progress_arg, 0, rows);
	for (size_t t = w; t < bars; t++) {
		if (at_mark(c, t, t0) < 0) {
			free(plat);
			return -1;
		}
		int64_t s0 = now_ns();
		uint64_t h0 = last_ns;
		shm_put_bar(s, rq->m, t);
		post(s, ++seq, CMD_STEP, (int64_t)t);
		if (wait_host(c, seq, &ewma, &last_ns, cap) < 0) {
			free(plat);
			return -1;
		}
		if (__atomic_load_n(&s->ctl->status, __ATOMIC_ACQUIRE) != 0) {
			recv_frame(c, 0xffff); /* the ERROR frame the host sent first */
			free(plat);
			return -1;
		}
		uint32_t d = __atomic_load_n(&s->ctl->dim, __ATOMIC_RELAXED);
		if (t == w && d > max_dim) {   /* later rows must have the first one's width */
			sfail(c, EV_BAD_OUTPUT, "embedding at t=%zu has %u values, more than %s%zu", t, d,
			      max_dim < STREAM_MAX_DIM ? "the challenge's embedding_dim " : "", max_dim);
			free(plat);
			return -1;
		}
		if (t == w) {
			dim = d;
			res->dim = dim;
			res->emb = xcalloc(rows * dim + 1, sizeof *res->emb);
		} else if (d != dim) {
			sfail(c, EV_BAD_OUTPUT,
			      "embedding rows of different lengths: t=%zu has %u values, t=%zu had %zu", t, d, w, dim);
			free(plat);
			return -1;
		}
		memcpy(res->emb + (t - w) * dim, s->slot, dim * sizeof(float));
		res->rows++;
		int64_t step = now_ns() - s0 - (int64_t)(last_ns - h0);
		plat[t - w] = step <= 0 ? 0 : step > UINT32_MAX ? UINT32_MAX : (uint32_t)step;
		if (rq->on_progress)
			rq->on_progress(rq->on_progress_arg, t - w + 1, rows);
	}
	if (at_mark(c, bars, t0) < 0) {
		free(plat);
		return -1;
	}
	if (rows) {
		qsort(plat, rows, sizeof *plat, cmp_u32);
		res->st.platform_us_p50 = plat[rows / 2] / 1000.0;
		res->st.platform_us_p90 = plat[rows * 9 / 10] / 1000.0;
	}
	free(plat);
	res->st.loop_s = proto_now() - t0;
	res->st.steps = res->rows;
	post(s, ++seq, CMD_DONE, -1);
	c->phase = "finish";
	if (recv_frame(c, PROTO_STREAM_DONE) < 0)
		return -1;
	json_object *m = meta_obj(c);
	double ss = meta_num(m, "strategy_s");
	int64_t cc = meta_int(m, "compute_calls");
	json_object_put(m);
	res->st.strategy_s = ss >= 0 ? ss : 0;
	res->st.compute_calls = cc >= 0 ? (size_t)cc : 0;
	return 0;
}

/* BYE, verdict, and the final error for protocol failures. */
static void s_finish(struct sctx *c)
{
	struct stream_result *res = c->res;
	if (!c->started)
		return;
	int failed = res->err != EV_OK || c->proto_fail != PROTO_OK;
	if (!failed && proto_send(&c->conn, PROTO_BYE, NULL, 0, NULL, 0) != PROTO_OK)
		failed = 1;
	if (failed)
		sbx_kill(&c->run);
	proto_drain_log(&c->conn, failed ? 0.5 : 2.0);
	if (c->rq->on_host)
		c->rq->on_host(c->rq->on_host_arg, &c->run, 0);
	if (sbx_finish(&c->run, &res->verdict) < 0)
		res->verdict.status = SBX_XX;
	size_t keep = c->conn.log.len < sizeof res->log_tail - 1 ? c->conn.log.len : sizeof res->log_tail - 1;
	if (keep)
		memcpy(res->log_tail, c->conn.log.data + c->conn.log.len - keep, keep);
	res->log_tail[keep] = '\0';
	const struct sbx_verdict *v = &res->verdict;
	enum ev_err ve = verdict_map_error(v);
	if (res->err != EV_OK)
		return;
	if (c->proto_fail == PROTO_OK) {
		if (v->status != SBX_OK)
			sfail(c, ve == EV_OK ? EV_CRASHED : ve, "the strategy host ended badly: %s%s%s",
			      sbx_status_code(v->status), v->message[0] ? ": " : "", v->message);
		return;
	}
	if (ve == EV_FORBIDDEN_SYSCALL)
		sfail(c, ve, "forbidden system call %s during %s", v->syscall_name, c->phase);
	else if (ve != EV_OK && ve != EV_CRASHED)
		sfail(c, ve, "%s during %s%s%s", ev_strerror(ve), c->phase, v->message[0] ? ": " : "", v->message);
	else if (c->proto_fail == PROTO_TIMEOUT)
		sfail(c, EV_TIMEOUT, "no answer from the strategy host within the wall-clock limit (%s)", c->phase);
	else if (c->proto_fail == PROTO_EOF || ve == EV_CRASHED)
		sfail(c, EV_CRASHED, "the strategy host exited (status %s, exit code %d, signal %d) during %s",
		      sbx_status_code(v->status), v->exit_code, v->exit_signal, c->phase);
	else if (c->proto_fail == PROTO_TOO_BIG)
		sfail(c, EV_OUTPUT_LIMIT, "the strategy host sent a frame larger than allowed (%s)", c->phase);
	else
		sfail(c, EV_BAD_OUTPUT, "the strategy host broke the protocol (frame type 0x%02x during %s)",
		      c->fail_type, c->phase);
}

enum ev_err stream_run(const struct stream_request *rq, struct stream_result *res)
{
	struct sctx c;
	char err[256];
	memset(res, 0, sizeof *res);
	memset(&c, 0, sizeof c);
	c.rq = rq;
	c.res = res;
	c.shm.fd = -1;
	c.spin_us = rq->spin_us > 0 ? rq->spin_us : 200;
	const char *env = getenv("AGENTTEST_STREAM_SPIN_US");
	if (env && atof(env) > 0 && atof(env) <= 100000)
		c.spin_us = atof(env);
	json_object *lay = json_object_new_object();
	if (!rq->m || rq->bars > rq->m->T || !rq->code || rq->code_len > STREAM_MAX_CODE) {
		sfail(&c, EV_INVALID_FIELD, "invalid stream request (bars %zu, code %zu bytes)", rq->bars, rq->code_len);
		goto out;
	}
	if (!shm_create(&c.shm, rq->m, rq->bars, lay, err, sizeof err)) {
		sfail(&c, EV_INTERNAL, "%s", err);
		goto out;
	}
	res->st.shm_bytes = c.shm.size;
	int slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
	prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
	if (s_start(&c, lay) == 0)
		s_loop(&c);
	if (slack > 0)
		prctl(PR_SET_TIMERSLACK, (unsigned long)slack, 0, 0, 0);
	s_finish(&c);
out:
	json_object_put(lay);
	proto_conn_free(&c.conn);
	buf_free(&c.meta);
	shm_free(&c.shm);
	if (res->err != EV_OK && !rq->keep_rows) {
		free(res->emb);
		res->emb = NULL;
		res->rows = 0;
	}
	return res->err;
}

void stream_result_free(struct stream_result *res)
{
	free(res->emb);
	res->emb = NULL;
	json_object_put(res->exception);
	res->exception = NULL;
}

json_object *stream_error_json(const struct stream_result *res)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "error", json_object_new_string(res->message));
	json_object_object_add(o, "code", json_object_new_string(ev_errcode(res->err)));
	json_object_object_add(o, "detail", json_object_new_string(res->message));
	if (res->exception)
		json_object_object_add(o, "exception", json_object_get(res->exception));
	if (res->log_tail[0])
		json_object_object_add(o, "log_tail", json_object_new_string(res->log_tail));
	return o;
}

json_object *stream_stats_json(const struct stream_stats *st)
{
	json_object *o = json_object_new_object();
	double per = st->steps ? 1e6 / (double)st->steps : 0;
	double plat = st->loop_s - st->strategy_s;
	json_object_object_add(o, "steps", json_object_new_int64((int64_t)st->steps));
	json_object_object_add(o, "compute_calls", json_object_new_int64((int64_t)st->compute_calls));
	json_object_object_add(o, "startup_s", json_object_new_double(st->startup_s));
	json_object_object_add(o, "load_s", json_object_new_double(st->load_s));
	json_object_object_add(o, "loop_s", json_object_new_double(st->loop_s));
	json_object_object_add(o, "strategy_s", json_object_new_double(st->strategy_s));
	json_object_object_add(o, "strategy_us_per_step", json_object_new_double(st->strategy_s * per));
	json_object_object_add(o, "platform_us_per_step", json_object_new_double((plat > 0 ? plat : 0) * per));
	json_object_object_add(o, "platform_us_p50", json_object_new_double(st->platform_us_p50));
	json_object_object_add(o, "platform_us_p90", json_object_new_double(st->platform_us_p90));
	json_object_object_add(o, "runner_sleeps", json_object_new_int64((int64_t)st->runner_sleeps));
	json_object_object_add(o, "runner_naps", json_object_new_int64((int64_t)st->runner_naps));
	json_object_object_add(o, "shm_bytes", json_object_new_int64((int64_t)st->shm_bytes));
	return o;
}
