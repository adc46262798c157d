/*
 * worker.c: one FastCGI worker process.
 *
 * Theory of operation. The master forks a worker with every signal blocked;
 * the worker installs its handlers and then unblocks only while it waits for
 * the next request (in FCGX_Accept_r), never while it serves one. So a
 * SIGTERM (graceful stop: the master's shutdown or a SIGHUP rolling
 * replacement) either arrives while the worker is idle, where the handler
 * closes the listening socket and shuts the keep-alive connection so the
 * wait ends at once, or stays pending until the current response has been
 * written and is then handled the same way. The worker exits after at most
 * the request in flight. PR_SET_PDEATHSIG makes a worker whose master died
 * stop too.
 *
 * Keep-alive connections (nginx fastcgi_keep_conn): libfcgi serves one
 * connection at a time, so a worker waiting on an idle kept connection
 * would leave new connections in the listen backlog (a request stuck there
 * for seconds). Before waiting, worker_wait() polls the kept connection and
 * the listening socket together: if a new connection is pending and the
 * kept one is idle, the kept one is closed (nginx drops it from its cache)
 * and the new one is accepted. Under light load connections are reused;
 * under saturation no request waits behind an idle connection.
 *
 * The worker owns one database connection (reconnected on demand by
 * common/db.c, each reconnection counted in the shared metrics), one arena
 * and the reusable buffers of struct fcgi_app.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fcgiapp.h>
#include <sodium.h>

#include "common/log.h"
#include "fcgi/app.h"

#define WORKER_DRAIN_FACTOR 2

static volatile sig_atomic_t worker_stop;
static int worker_listen_fd = -1;
static FCGX_Request *worker_req;
static struct prom *worker_metrics;

/* SIGTERM: stop after the current request (runs only while idle, see above). */
static void worker_on_term(int sig)
{
	(void)sig;
	worker_stop = 1;
	if (worker_listen_fd >= 0)
		close(worker_listen_fd);
	worker_listen_fd = -1;
	if (worker_req != NULL && worker_req->ipcFd >= 0)
		shutdown(worker_req->ipcFd, SHUT_RDWR);
}

/* Reconnect hook of the database layer. */
static void worker_on_reconnect(void)
{
	prom_db_reconnect(worker_metrics);
	log_msg(LOG_LVL_INFO, "db_reconnect", "worker %d reconnected to the database", (int)getpid());
}

/* body_read_fn over a libfcgi input stream. */
static ssize_t worker_read(void *io, char *buf, size_t n)
{
	if (n > INT32_MAX)
		n = INT32_MAX;
	int r = FCGX_GetStr(buf, (int)n, (FCGX_Stream *)io);
	if (r < 0 || FCGX_GetError((FCGX_Stream *)io) != 0)
		return -1;
	return r;
}

/*
 * Read the request's input to its end (the rest of a body the handler did
 * not read, or just the empty end-of-stdin record), at most limit bytes.
 * Returns true when the end was reached. Then nothing of this request is
 * left unread on the connection: a kept connection is clean for the next
 * request, and a closed one can be closed at once (no lingering close).
 * Past the limit the connection is not kept.
 */
static bool worker_drain(FCGX_Request *req, size_t limit)
{
	char tmp[16384];
	size_t total = 0;
	for (;;) {
		int r = FCGX_GetStr(tmp, (int)sizeof tmp, req->in);
		if (r < 0 || FCGX_GetError(req->in) != 0)
			return false;
		if (r == 0)
			return FCGX_HasSeenEOF(req->in) == EOF;
		total += (size_t)r;
		if (total > limit) {
			req->keepConnection = 0;
			return false;
		}
	}
}

/*
 * Called with signals unblocked before FCGX_Accept_r: when the request
 * holds an idle kept connection, wait until it or the listening socket is
 * readable, and release the kept connection if only a new one is pending.
 */
static void worker_wait(FCGX_Request *req, int listen_fd)
{
	while (req->ipcFd >= 0 && !worker_stop) {
		struct pollfd p[2] = { { req->ipcFd, POLLIN, 0 }, { listen_fd, POLLIN, 0 } };
		int n = poll(p, 2, -1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || p[0].revents != 0)
			return; /* data, EOF or error on the kept connection: let libfcgi see it */
		if (p[1].revents & POLLIN) {
			/* nothing unread on it (no POLLIN): close at once, no lingering */
			req->detached = 1;
			FCGX_Free(req, 1);
			req->detached = 0;
			return;
		}
	}
}

/* Install the worker's signal dispositions. */
static void worker_signals(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = worker_on_term;
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGPIPE, &sa, NULL);
	sa.sa_handler = SIG_DFL;
	sigaction(SIGCHLD, &sa, NULL);
}

void worker_main(int listen_fd, struct config *cfg, struct prom *m, const unsigned char key[SECRET_BYTES],
                 int slot)
{
	struct fcgi_app app;
	struct buf err = BUF_INIT, out = BUF_INIT;
	FCGX_Request req;
	sigset_t all, none;

	sigfillset(&all);
	sigemptyset(&none);
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	worker_signals();
	worker_listen_fd = listen_fd;
	worker_metrics = m;
	if (!app_init(&app, cfg, fcgi_routes, fcgi_nroutes, m, key, &err)) {
		log_msg(LOG_LVL_ERROR, "worker_init", "worker %d: %s", slot, buf_cstr(&err));
		_exit(2);
	}
	app.db = db_new(&cfg->db);
	db_set_reconnect_hook(app.db, worker_on_reconnect);
	app.lookup = app_db_lookup;
	app.lookup_ctx = app.db;
	if (db_connect(app.db) != DB_OK)
		log_msg(LOG_LVL_WARNING, "db_unavailable", "worker %d: %s", slot, db_error(app.db));
	if (FCGX_Init() != 0 || FCGX_InitRequest(&req, listen_fd, FCGI_FAIL_ACCEPT_ON_INTR) != 0) {
		log_msg(LOG_LVL_ERROR, "worker_init", "worker %d: libfcgi initialisation failed", slot);
		_exit(2);
	}
	worker_req = &req;
	log_msg(LOG_LVL_DEBUG, "worker_start", "worker %d (pid %d) ready", slot, (int)getpid());
	while (!worker_stop) {
		sigprocmask(SIG_SETMASK, &none, NULL);
		worker_wait(&req, listen_fd);
		int rc = worker_stop ? -1 : FCGX_Accept_r(&req);
		sigprocmask(SIG_SETMASK, &all, NULL);
		if (rc < 0) {
			if (worker_stop)
				break;
			if (errno != EINTR)
				log_msg(LOG_LVL_WARNING, "accept", "worker %d: accept failed: %s", slot, strerror(errno));
			continue;
		}
		struct fcgi_exchange x = { .envp = req.envp, .read = worker_read, .io = req.in, .out = &out };
		app_handle(&app, &x);
		FCGX_PutStr(buf_cstr(&out), (int)out.len, req.out);
		/*
		 * libfcgi closes a connection with shutdown(SHUT_WR) and then waits
		 * for the web server to close its side, so that unread input can
		 * never turn into a TCP reset that destroys the response. That wait
		 * idles the worker for a round trip through nginx on every request.
		 * When the input has been read to its end there is nothing to
		 * reset, so the connection is closed at once ("detached" close).
		 */
		req.detached = worker_drain(&req, WORKER_DRAIN_FACTOR * cfg->body_limit);
		FCGX_Finish_r(&req);
		req.detached = 0;
	}
	worker_req = NULL;
	FCGX_Free(&req, 1);
	db_free(app.db);
	app_free(&app);
	buf_free(&out);
	buf_free(&err);
	log_msg(LOG_LVL_DEBUG, "worker_stop", "worker %d (pid %d) stopped", slot, (int)getpid());
	_exit(0);
}
