/*
 * check_service: the runner answers code-check requests of the API pool.
 *
 * Theory of operation.
 *
 *   acceptor thread ── owns the socket (AGENTTEST_CHECK_SOCKET, mode 0660)
 *     │  The socket belongs to whoever holds an exclusive flock on
 *     │  "<socket>.lock": the first runner of a host takes it; another one
 *     │  retries every 100 ms and takes over when the first is gone (even
 *     │  after SIGKILL, the kernel drops the lock). accept4() → queue.
 *     │  A full queue (CHECK_QUEUE_MAX) is answered BUSY at once.
 *     ▼
 *   worker threads (AGENTTEST_CHECK_CONCURRENCY, default 2), long-lived so
 *   the zygote helpers their sbx_start may spawn (parent-death signal tied
 *   to the starting thread) outlive a single check:
 *        read the request (deadline 2 s after accept, sizes checked first)
 *        → a request that waited more than CHECK_WAIT_MS is answered BUSY
 *        → one confined strategy host, limits 2 s CPU, 3 s wall, 256 MiB,
 *          1 MiB output (its answer lists every top-level name), in the worker's own box (a
 *          machine-wide lease, sandbox/box_lease.h): READY, CHECK
 *          (0x05, the source), CHECKED (0x85), BYE
 *        → the host's answer is hostile input: parsed strictly, only known
 *          fields copied, strings cut, into the answer JSON.
 *
 * Checks never wait for the run slots and the slots never wait for checks:
 * the zygote pool is enlarged by the number of workers at start-up (before
 * the slots run; the extra zygotes warm up in the background from the first
 * checks on, and a check-only runner pre-starts them), so each check and
 * each run finds an idle pre-forked interpreter and a check costs a fork
 * plus `ast.parse` (until then a check takes an idle run zygote or the
 * one-shot helper). A check killed by a
 * limit (timeout, memory, output, a crash) after the code reached the host
 * is the code's fault and answered as {"ok":false,"error":"limit"}; a
 * sandbox that cannot start is answered FAILED (the API says 503).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "log.h"
#include "xalloc.h"
#include "evaluator/runner/drive/protocol.h"
#include "evaluator/runner/drive/verdict_map.h"
#include "evaluator/runner/check_service.h"
#include "sandbox/box_lease.h"
#include "sandbox/sandbox.h"

#define CHECK_WORKERS_MAX   8
#define CHECK_WORKERS_DEF   2
#define CHECK_QUEUE_MAX     64
#define CHECK_READ_MS       2000   /* the request must arrive this soon after accept */
#define CHECK_WAIT_MS       1500   /* longer in the queue: answered BUSY */
#define CHECK_WRITE_MS      1000
#define CHECK_RETRY_MS      100    /* acceptor: try to take the socket again (one flock) */
#define CHECK_CPU_S         2.0
#define CHECK_WALL_S        3.0
#define CHECK_MEM_BYTES     (256u << 20)
#define CHECK_OUT_BYTES     (1u << 20)
#define CHECK_HOST_META_MAX (512u << 10) /* the host lists every top-level name: 256 KiB of
					    one-line defs make about 190 KiB */
#define CHECK_MSG_MAX       400
#define CHECK_MISSING_MAX   8


struct pending {
	int       fd;
	long long accepted_ms;
};

struct check_worker {
	struct check_service *svc;
	pthread_t             thread;
	unsigned              index;
	struct sbx_box_lease  box;   /* this worker's box number, held while it lives */
};

struct check_service {
	char                path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char                lock_path[sizeof(((struct sockaddr_un *)0)->sun_path) + 8];
	int                 lock_fd, listen_fd;
	dev_t               dev;        /* our socket file, so stop unlinks only ours */
	ino_t               ino;
	int                 stop_pipe[2];
	pthread_t           acceptor;
	struct check_worker workers[CHECK_WORKERS_MAX];
	unsigned            nworkers;
	pthread_mutex_t     mu;
	pthread_cond_t      cv;
	struct pending      queue[CHECK_QUEUE_MAX];
	unsigned            qhead, qlen;
	bool                stopping;
	atomic_bool         ready;      /* the zygotes are pre-started: pings say so */
};

/* Monotonic milliseconds. */
static long long mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Read (write=false) or write exactly n bytes on the non-blocking fd before
 * the monotonic deadline. 0 done, -1 error, EOF or deadline.
 */
static int io_full(int fd, void *p, size_t n, long long deadline, bool write)
{
	unsigned char *b = p;
	size_t off = 0;
	while (off < n) {
		ssize_t k = write ? send(fd, b + off, n - off, MSG_NOSIGNAL) : recv(fd, b + off, n - off, 0);
		if (k > 0) {
			off += (size_t)k;
			continue;
		}
		if (k == 0 || (errno != EAGAIN && errno != EINTR))
			return -1;
		long long left = deadline - mono_ms();
		if (left <= 0)
			return -1;
		struct pollfd pfd = { .fd = fd, .events = write ? POLLOUT : POLLIN };
		if (poll(&pfd, 1, (int)left) < 0 && errno != EINTR)
			return -1;
	}
	return 0;
}

/* Send one answer (header + body) on fd, best effort within CHECK_WRITE_MS. */
static void send_answer(int fd, enum check_status st, const char *body)
{
	size_t n = strlen(body);
	uint8_t hdr[CHECK_HDR_LEN];
	if (n > CHECK_ANSWER_MAX)
		return;
	check_hdr_encode(hdr, CHECK_ANSWER, st, (uint32_t)n);
	long long deadline = mono_ms() + CHECK_WRITE_MS;
	if (io_full(fd, hdr, sizeof hdr, deadline, true) == 0)
		(void)io_full(fd, (void *)(uintptr_t)body, n, deadline, true);
}

/* Send {"message": msg} with status st. */
static void send_message(int fd, enum check_status st, const char *msg)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "message", json_object_new_string(msg));
	send_answer(fd, st, json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	json_object_put(o);
}

/* String field k of o, or NULL. */
static const char *str_field(json_object *o, const char *k)
{
	json_object *v;
	return json_object_object_get_ex(o, k, &v) && json_object_is_type(v, json_type_string)
		       ? json_object_get_string(v) : NULL;
}

/* A JSON string of s cut to max bytes at a UTF-8 boundary. */
static json_object *cut_string(const char *s, size_t max)
{
	size_t n = strlen(s);
	if (n > max) {
		n = max;
		while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
			n--;
	}
	return json_object_new_string_len(s, (int)n);
}

/* Integer field k of o clamped to [0, 1e9], or 0. */
static long long int_field(json_object *o, const char *k)
{
	json_object *v;
	if (!json_object_object_get_ex(o, k, &v) || !json_object_is_type(v, json_type_int))
		return 0;
	long long x = json_object_get_int64(v);
	return x < 0 ? 0 : x > 1000000000 ? 1000000000 : x;
}

/*
 * The answer we send for the host's answer a: only known fields, checked
 * and cut. NULL if a is not a well-formed answer.
 */
static json_object *sanitize(json_object *a)
{
	json_object *okv, *out = json_object_new_object();
	if (!json_object_object_get_ex(a, "ok", &okv) || !json_object_is_type(okv, json_type_boolean))
		goto bad;
	if (json_object_get_boolean(okv)) {
		const char *k = str_field(a, "kind");
		if (!k || (strcmp(k, "simulate") != 0 && strcmp(k, "positions") != 0 && strcmp(k, "signal") != 0))
			goto bad;
		json_object_object_add(out, "ok", json_object_new_boolean(1));
		json_object_object_add(out, "kind", json_object_new_string(k));
		return out;
	}
	const char *e = str_field(a, "error"), *m = str_field(a, "message");
	if (!e || (strcmp(e, "syntax") != 0 && strcmp(e, "contract") != 0 && strcmp(e, "encoding") != 0))
		goto bad;
	json_object_object_add(out, "ok", json_object_new_boolean(0));
	json_object_object_add(out, "error", json_object_new_string(e));
	json_object_object_add(out, "message", cut_string(m ? m : "code does not define a strategy", CHECK_MSG_MAX));
	if (strcmp(e, "syntax") == 0) {
		json_object_object_add(out, "line", json_object_new_int64(int_field(a, "line")));
		json_object_object_add(out, "column", json_object_new_int64(int_field(a, "column")));
	}
	json_object *miss, *list = json_object_new_array();
	if (json_object_object_get_ex(a, "missing", &miss) && json_object_is_type(miss, json_type_array)) {
		size_t n = json_object_array_length(miss);
		for (size_t i = 0; i < n && i < CHECK_MISSING_MAX; i++) {
			json_object *x = json_object_array_get_idx(miss, i);
			if (json_object_is_type(x, json_type_string))
				json_object_array_add(list, cut_string(json_object_get_string(x), 64));
		}
	}
	json_object_object_add(out, "missing", list);
	return out;
bad:
	json_object_put(out);
	return NULL;
}

/* Why a limit ended a check, for the user (e from verdict_map_error). */
static const char *limit_reason(enum ev_err e)
{
	switch (e) {
	case EV_TIMEOUT:      return "time limit";
	case EV_MEMORY_LIMIT: return "memory limit";
	case EV_OUTPUT_LIMIT: return "output limit";
	default:              return "checker crashed";
	}
}

/*
 * Run the CHECK frame on code in a sandbox (box id box). Returns
 * CHECK_ST_ANSWER with the answer JSON in *out, or CHECK_ST_FAILED with a
 * message in err. *reached is set once the code was handed to the host.
 */
static enum check_status run_check_once(uint32_t box, const char *code, size_t len, json_object **out,
					bool *reached, char *err, size_t errlen)
{
	struct sbx_spec spec = {
		.mode = SBX_CONFINED, .box_id = box,
		.limits = { .cpu_seconds = CHECK_CPU_S, .wall_seconds = CHECK_WALL_S,
			    .memory_bytes = CHECK_MEM_BYTES, .output_bytes = CHECK_OUT_BYTES },
		.zygote = SBX_ZYGOTE_PLAIN, /* a check only parses the code: the plain zygote */
	};
	struct sbx_run run;
	struct sbx_verdict v;
	struct proto_conn pc;
	struct proto_hdr h;
	struct buf meta = BUF_INIT;
	json_object *a = NULL;
	enum check_status rc = CHECK_ST_FAILED;
	*reached = false;
	if (sbx_start(&spec, &run, err, errlen) != 0)
		return CHECK_ST_FAILED;
	proto_conn_init(&pc, run.to_host, run.from_host, run.log_fd, proto_now() + CHECK_WALL_S + 0.5);
	enum proto_status st = proto_recv(&pc, &h, &meta, NULL, PROTO_MAX_META_IN, 0);
	if (st == PROTO_OK && h.type == PROTO_READY) {
		buf_reset(&meta);
		st = proto_send(&pc, PROTO_CHECK, NULL, 0, code, len);
		*reached = st == PROTO_OK;
		if (st == PROTO_OK)
			st = proto_recv(&pc, &h, &meta, NULL, CHECK_HOST_META_MAX, 0);
	}
	if (st != PROTO_OK)
		snprintf(err, errlen, "strategy host: %s", proto_status_str(st));
	else if (h.type != PROTO_CHECKED)
		snprintf(err, errlen, "strategy host answered frame 0x%02x to CHECK", h.type);
	else if (!(a = json_tokener_parse(buf_cstr(&meta))) || !json_object_is_type(a, json_type_object) ||
		 !(*out = sanitize(a)))
		snprintf(err, errlen, "strategy host sent a malformed CHECK answer");
	else
		rc = CHECK_ST_ANSWER;
	if (st == PROTO_OK)
		(void)proto_send(&pc, PROTO_BYE, NULL, 0, NULL, 0);
	proto_conn_free(&pc);
	if (rc != CHECK_ST_ANSWER && st != PROTO_EOF)
		sbx_kill(&run);   /* not after EOF: the verdict must say why the host ended */
	sbx_finish(&run, &v);
	bool own_kill = v.status == SBX_SG && strcmp(v.message, "cancelled") == 0;
	enum ev_err ve = verdict_map_error(&v);
	if (rc != CHECK_ST_ANSWER && *reached && (st == PROTO_EOF || st == PROTO_TIMEOUT) && !own_kill &&
	    (ve == EV_TIMEOUT || ve == EV_MEMORY_LIMIT || ve == EV_OUTPUT_LIMIT || ve == EV_CRASHED)) {
		/* the code made the parser blow a limit: the submission's fault */
		json_object *o = json_object_new_object();
		char msg[160];
		snprintf(msg, sizeof msg, "code cannot be checked: parsing it hit the checker's %s (%.0f s CPU, %u MiB)",
			 limit_reason(ve), CHECK_CPU_S, CHECK_MEM_BYTES >> 20);
		json_object_object_add(o, "ok", json_object_new_boolean(0));
		json_object_object_add(o, "error", json_object_new_string("limit"));
		json_object_object_add(o, "message", json_object_new_string(msg));
		json_object_object_add(o, "missing", json_object_new_array());
		*out = o;
		rc = CHECK_ST_ANSWER;
	} else if (rc != CHECK_ST_ANSWER && v.status != SBX_OK) {
		snprintf(err, errlen, "the check ended with sandbox status %s: %.200s", sbx_status_code(v.status),
			 v.message);
	}
	json_object_put(a);
	buf_free(&meta);
	return rc;
}

/* run_check_once, tried a second time when the sandbox failed before the code reached it. */
static enum check_status run_check(uint32_t box, const char *code, size_t len, json_object **out, char *err,
				   size_t errlen)
{
	bool reached = false;
	enum check_status st = run_check_once(box, code, len, out, &reached, err, errlen);
	if (st == CHECK_ST_ANSWER || reached)
		return st;
	/* a start-up failure is not the code's fault: log it, try once more */
	log_msg(LOG_LVL_WARNING, "check_sandbox_failed", "%s (retrying)", err);
	struct timespec pause = { 0, 50 * 1000 * 1000 };
	nanosleep(&pause, NULL);
	err[0] = '\0';
	return run_check_once(box, code, len, out, &reached, err, errlen);
}

/* Serve one connection: request, check, answer. Closes fd. */
static void serve(struct check_worker *w, struct pending p)
{
	uint8_t hdr[CHECK_HDR_LEN];
	unsigned op;
	uint32_t len;
	char *code = NULL, err[512] = "";
	json_object *answer = NULL;
	long long t0 = mono_ms(), deadline = p.accepted_ms + CHECK_READ_MS;
	if (io_full(p.fd, hdr, sizeof hdr, deadline, false) != 0)
		goto out;
	if (check_hdr_decode(hdr, CHECK_REQUEST, CHECK_OP__MAX, CHECK_CODE_MAX, &op, &len) != 0) {
		send_message(p.fd, CHECK_ST_BAD, "malformed check request header");
		goto out;
	}
	code = xmalloc((size_t)len + 1);
	if (io_full(p.fd, code, len, deadline, false) != 0)
		goto out;
	code[len] = '\0';
	if (op == CHECK_OP_PING) {
		send_answer(p.fd, CHECK_ST_ANSWER, atomic_load(&w->svc->ready) ? "{\"ready\":true}" : "{\"ready\":false}");
		goto out;
	}
	if (t0 - p.accepted_ms > CHECK_WAIT_MS) {
		send_message(p.fd, CHECK_ST_BUSY, "the code checker is busy");
		log_msg(LOG_LVL_WARNING, "check_busy", "request waited %lld ms", t0 - p.accepted_ms);
		goto out;
	}
	enum check_status st = run_check(w->box.box_id, code, len, &answer, err, sizeof err);
	if (st == CHECK_ST_ANSWER) {
		send_answer(p.fd, st, json_object_to_json_string_ext(answer, JSON_C_TO_STRING_PLAIN));
	} else {
		log_msg(LOG_LVL_ERROR, "check_failed", "%s", err);
		send_message(p.fd, st, err[0] ? err : "the check could not run");
	}
	struct buf b = BUF_INIT;
	log_begin(&b, LOG_LVL_DEBUG, "check_done");
	log_int(&b, "bytes", len);
	log_int(&b, "ms", mono_ms() - t0);
	log_str(&b, "outcome", st == CHECK_ST_ANSWER ? "answered" : "failed");
	log_end(&b);
	buf_free(&b);
out:
	json_object_put(answer);
	free(code);
	close(p.fd);
}

/* Worker thread: take connections off the queue until stopped. */
static void *worker_main(void *arg)
{
	struct check_worker *w = arg;
	struct check_service *s = w->svc;
	for (;;) {
		pthread_mutex_lock(&s->mu);
		while (!s->qlen && !s->stopping)
			pthread_cond_wait(&s->cv, &s->mu);
		if (s->stopping) {
			pthread_mutex_unlock(&s->mu);
			break;
		}
		struct pending p = s->queue[s->qhead];
		s->qhead = (s->qhead + 1) % CHECK_QUEUE_MAX;
		s->qlen--;
		pthread_mutex_unlock(&s->mu);
		serve(w, p);
	}
	return NULL;
}

/* Directory part of path into dir (path has a '/' past its first byte or is "/x"). */
static void dir_of(const char *path, char *dir, size_t n)
{
	const char *slash = strrchr(path, '/');
	size_t k = slash && slash != path ? (size_t)(slash - path) : 1;
	snprintf(dir, n, "%.*s", (int)k, path);
}

/*
 * Take the socket if no other runner holds it: flock "<path>.lock", replace
 * a leftover socket file, bind, 0660, listen. 0 ok, 1 held by another
 * process, -1 error (logged unless quiet: the acceptor retries every 100 ms).
 */
static int acquire(struct check_service *s, bool quiet)
{
	char dir[sizeof s->path];
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	dir_of(s->path, dir, sizeof dir);
	(void)mkdir(dir, 0755);
	if (s->lock_fd < 0) {
		s->lock_fd = open(s->lock_path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (s->lock_fd < 0) {
			if (!quiet)
				log_msg(LOG_LVL_ERROR, "check_socket_failed", "%s: %s", s->lock_path, strerror(errno));
			return -1;
		}
	}
	if (flock(s->lock_fd, LOCK_EX | LOCK_NB) != 0)
		return errno == EWOULDBLOCK ? 1 : -1;
	if (lstat(s->path, &st) == 0 && !S_ISSOCK(st.st_mode)) {
		if (!quiet)
			log_msg(LOG_LVL_ERROR, "check_socket_failed", "%s exists and is not a socket", s->path);
		goto fail;
	}
	(void)unlink(s->path);   /* a dead runner's socket: we hold the lock */
	memcpy(sa.sun_path, s->path, strlen(s->path) + 1);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || chmod(s->path, 0660) != 0 ||
	    listen(fd, CHECK_QUEUE_MAX) != 0 || stat(s->path, &st) != 0) {
		if (!quiet)
			log_msg(LOG_LVL_ERROR, "check_socket_failed", "%s: %s", s->path, strerror(errno));
		if (fd >= 0)
			close(fd);
		goto fail;
	}
	s->listen_fd = fd;
	s->dev = st.st_dev;
	s->ino = st.st_ino;
	return 0;
fail:
	(void)flock(s->lock_fd, LOCK_UN);
	return -1;
}

/* Queue an accepted connection for the workers, or answer BUSY when the queue is full. */
static void enqueue(struct check_service *s, int fd)
{
	pthread_mutex_lock(&s->mu);
	bool full = s->qlen == CHECK_QUEUE_MAX;
	if (!full) {
		s->queue[(s->qhead + s->qlen) % CHECK_QUEUE_MAX] = (struct pending){ fd, mono_ms() };
		s->qlen++;
		pthread_cond_signal(&s->cv);
	}
	pthread_mutex_unlock(&s->mu);
	if (full) {
		send_message(fd, CHECK_ST_BUSY, "the code checker is busy");
		close(fd);
	}
}

/* Acceptor thread: take the socket (retrying while another runner has it), accept until stopped. */
static void *acceptor_main(void *arg)
{
	struct check_service *s = arg;
	bool said_wait = false, said_err = false;
	for (;;) {
		if (s->listen_fd < 0) {
			int a = acquire(s, said_err);
			said_err |= a < 0;
			if (a == 0) {
				log_msg(LOG_LVL_INFO, "check_service_listening", "%s (%u concurrent checks)", s->path,
					s->nworkers);
			} else if (a == 1 && !said_wait) {
				log_msg(LOG_LVL_INFO, "check_service_waiting", "another runner serves %s", s->path);
				said_wait = true;
			}
		}
		struct pollfd p[2] = { { .fd = s->stop_pipe[0], .events = POLLIN }, { .fd = s->listen_fd, .events = POLLIN } };
		if (poll(p, s->listen_fd >= 0 ? 2 : 1, s->listen_fd >= 0 ? -1 : CHECK_RETRY_MS) < 0 && errno != EINTR)
			break;
		if (p[0].revents)
			break;
		if (s->listen_fd >= 0 && (p[1].revents & POLLIN)) {
			int fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
			if (fd >= 0)
				enqueue(s, fd);
			else if (errno == EMFILE || errno == ENFILE || errno == ENOMEM || errno == ENOBUFS)
				(void)poll(NULL, 0, 100);   /* out of descriptors: do not spin */
		}
	}
	return NULL;
}

/* Number of check workers from AGENTTEST_CHECK_CONCURRENCY (1..8). */
static unsigned concurrency(const struct config *cfg)
{
	const char *v = config_get(cfg, "AGENTTEST_CHECK_CONCURRENCY");
	char *end;
	long n = v ? strtol(v, &end, 10) : CHECK_WORKERS_DEF;
	if (v && (*end || end == v || n < 1 || n > CHECK_WORKERS_MAX)) {
		log_msg(LOG_LVL_WARNING, "config_invalid", "AGENTTEST_CHECK_CONCURRENCY must be 1 to %d; using %d",
			CHECK_WORKERS_MAX, CHECK_WORKERS_DEF);
		n = CHECK_WORKERS_DEF;
	}
	return (unsigned)n;
}

/*
 * Enlarge the zygote pool by the check workers; returns its new size. Called
 * before any thread of ours exists (setenv must not race a getenv).
 */
static unsigned grow_zygote_pool(unsigned run_slots, unsigned workers)
{
	unsigned want = run_slots + workers;
	if (want > SBX_ZYGOTES_MAX)
		want = SBX_ZYGOTES_MAX;
	const char *zs = getenv("AGENTTEST_SANDBOX_ZYGOTES");
	if (!zs || atol(zs) < (long)want) {
		char n[16];
		snprintf(n, sizeof n, "%u", want);
		setenv("AGENTTEST_SANDBOX_ZYGOTES", n, 1);
	}
	return want;
}

/* Pre-start the plain-zygote pool up to want helpers (before the slots
 * run); checks need no other kind. */
static void prestart_zygotes(unsigned want)
{
	char err[256] = "";
	if (sbx_prestart_kind(SBX_ZYGOTE_PLAIN, want, err, sizeof err) != 0)
		log_msg(LOG_LVL_WARNING, "sandbox_prestart_failed", "%s (checks start helpers on demand)", err);
}

struct check_service *check_service_start(const struct config *cfg, unsigned run_slots)
{
	const char *conf = config_get(cfg, "AGENTTEST_CHECK_SOCKET");
	if (conf && strcmp(conf, "off") == 0) {
		log_msg(LOG_LVL_INFO, "check_service_off", "AGENTTEST_CHECK_SOCKET=off: no code checks on this host");
		return NULL;
	}
	struct check_service *s = xcalloc(1, sizeof *s);
	s->lock_fd = s->listen_fd = -1;
	s->stop_pipe[0] = s->stop_pipe[1] = -1;
	if (check_socket_path(conf, config_get(cfg, "RUNNER_NOTIFY_DIR"), s->path, sizeof s->path) != 0) {
		log_msg(LOG_LVL_ERROR, "check_service_failed",
			"AGENTTEST_CHECK_SOCKET (or RUNNER_NOTIFY_DIR) must make an absolute path of at most %zu bytes",
			sizeof s->path - 1);
		goto fail;
	}
	snprintf(s->lock_path, sizeof s->lock_path, "%s.lock", s->path);
	if (pipe2(s->stop_pipe, O_CLOEXEC) != 0)
		goto fail;
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	unsigned n = concurrency(cfg), zygotes = grow_zygote_pool(run_slots, n);
	for (unsigned i = 0; i < n; i++) {
		s->workers[i] = (struct check_worker){ .svc = s, .index = i, .box = SBX_BOX_LEASE_INIT };
		char berr[256];
		if (sbx_box_acquire(&s->workers[i].box, berr, sizeof berr) != 0) {
			log_msg(LOG_LVL_ERROR, "check_service_failed", "worker %u: %s", i, berr);
			break;
		}
		if (pthread_create(&s->workers[i].thread, NULL, worker_main, &s->workers[i]) != 0) {
			sbx_box_release(&s->workers[i].box);
			break;
		}
		s->nworkers++;
	}
	if (s->nworkers == 0 || pthread_create(&s->acceptor, NULL, acceptor_main, s) != 0) {
		log_msg(LOG_LVL_ERROR, "check_service_failed", "cannot start threads");
		pthread_mutex_lock(&s->mu);
		s->stopping = true;
		pthread_cond_broadcast(&s->cv);
		pthread_mutex_unlock(&s->mu);
		for (unsigned i = 0; i < s->nworkers; i++) {
			pthread_join(s->workers[i].thread, NULL);
			sbx_box_release(&s->workers[i].box);
		}
		pthread_mutex_destroy(&s->mu);
		pthread_cond_destroy(&s->cv);
		goto fail;
	}
	/* The run slots' zygotes are pre-started right after this (main.c),
	 * while the service already answers (a check meanwhile runs on the
	 * one-shot helper). The extra ones for the checks warm up in the
	 * background from the first checks on (the sandbox library starts one
	 * when none is idle), so the slots do not wait for them; a check-only
	 * runner has no others and waits. Pings say ready only after that. */
	if (run_slots == 0)
		prestart_zygotes(zygotes);
	atomic_store(&s->ready, true);
	return s;
fail:
	if (s->stop_pipe[0] >= 0) {
		close(s->stop_pipe[0]);
		close(s->stop_pipe[1]);
	}
	free(s);
	return NULL;
}

void check_service_stop(struct check_service *s)
{
	struct stat st;
	if (!s)
		return;
	if (write(s->stop_pipe[1], "x", 1) < 0)
		log_msg(LOG_LVL_WARNING, "check_service_stop", "stop pipe: %s", strerror(errno));
	pthread_join(s->acceptor, NULL);
	if (s->listen_fd >= 0) {
		/* unlink the socket only if it is still ours, then let another runner take it */
		if (stat(s->path, &st) == 0 && st.st_dev == s->dev && st.st_ino == s->ino)
			unlink(s->path);
		close(s->listen_fd);
	}
	if (s->lock_fd >= 0)
		close(s->lock_fd);
	pthread_mutex_lock(&s->mu);
	s->stopping = true;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	for (unsigned i = 0; i < s->nworkers; i++) {
		pthread_join(s->workers[i].thread, NULL);
		sbx_box_release(&s->workers[i].box);
	}
	for (unsigned i = 0; i < s->qlen; i++)
		close(s->queue[(s->qhead + i) % CHECK_QUEUE_MAX].fd);
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv);
	close(s->stop_pipe[0]);
	close(s->stop_pipe[1]);
	log_msg(LOG_LVL_INFO, "check_service_stopped", "%s", s->path);
	free(s);
}
