/*
 * agenttest-egress: the egress proxy of one LLM agent turn (theory of
 * operation in egress.h; options in docs/agents.md).
 *
 * The parent reads the key from --key-fd (its first line; a second line,
 * when present, is the database URL the owner's daily budget is reserved
 * in: owner.c), makes itself undumpable (no
 * ptrace, no /proc/<pid>/mem or environ for anyone but root), listens on
 * the unix socket --listen, prints "ready" on stdout, then accepts: each
 * connection is served by a forked child (at most --max-conns at once;
 * further clients wait in the listen queue). SIGTERM, SIGINT or the death
 * of the process that started it end the proxy and its children.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <curl/curl.h>

#include "evaluator/runner/egress/egress.h"
#include "log.h"
#include "parse.h"

#define KEY_MAX    256
#define SECRET_MAX (KEY_MAX + DBURL_MAX + 4)   /* the key line and the database URL line */

static volatile sig_atomic_t stopping;

static void on_stop(int sig)
{
	(void)sig;
	stopping = 1;
}

static void usage(void)
{
	fprintf(stderr, "usage: agenttest-egress --listen=SOCKET --key-fd=N --agent=ID --owner=N "
		"--agent-ledger=FILE --turn-usage=FILE [--upstream=URL] [--prices=FILE] "
		"[--agent-tokens=N] [--agent-usd=X] [--agent-requests=N] [--owner-day-tokens=N] "
		"[--owner-day-usd=X] [--owner-day-requests=N] [--max-conns=N]\n");
	exit(2);
}

/* A fatal configuration error: one JSON line with code invalid_config. */
static void die_config(const char *what)
{
	fprintf(stderr, "{\"error\":\"%s\",\"code\":\"invalid_config\"}\n", what);
	exit(2);
}

/*
 * Read fd to its end: the key (first line) into key, validated, and the
 * database URL (second line, optional) parsed into *db (*has_db says
 * whether there was one). Everything read is wiped.
 */
static void read_secrets(int fd, char *key, struct dburl *db, bool *has_db)
{
	static char raw[SECRET_MAX + 1];
	size_t n = 0;
	for (;;) {
		ssize_t r = read(fd, raw + n, SECRET_MAX - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
		if (n == SECRET_MAX)
			die_config("the key or the database URL is too long");
	}
	close(fd);
	raw[n] = '\0';
	char *nl = memchr(raw, '\n', n), *url = nl ? nl + 1 : NULL;
	size_t kn = nl ? (size_t)(nl - raw) : n;
	if (kn > 0 && raw[kn - 1] == '\r')
		kn--;
	if (kn > KEY_MAX)
		die_config("the key is too long");
	memcpy(key, raw, kn);
	key[kn] = '\0';
	*has_db = false;
	if (url) {
		size_t un = strcspn(url, "\r\n");
		url[un] = '\0';
		if (un > 0) {
			struct buf err = BUF_INIT;
			if (!dburl_parse(url, db, &err))
				die_config("the database URL on --key-fd is malformed");
			buf_free(&err);
			*has_db = true;
		}
	}
	explicit_bzero(raw, sizeof raw);
	if (kn < 8)
		die_config("no key on --key-fd");
	for (size_t i = 0; i < kn; i++) {
		char c = key[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_'))
			die_config("the key has characters outside [A-Za-z0-9_-]");
	}
}

/* A limit option: an integer >= 0 (or a USD amount). */
static int64_t opt_i64(const char *v, const char *name)
{
	int64_t x;
	if (!parse_int(v, strlen(v), 0, INT64_MAX / 4, &x))
		die_config(name);
	return x;
}

static double opt_usd(const char *v, const char *name)
{
	char *end;
	errno = 0;
	double x = strtod(v, &end);
	if (errno || *end || !(x >= 0 && x <= 1e9))
		die_config(name);
	return x;
}

/* Bind and listen on a unix socket path (replacing a stale one). */
static int listen_on(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof sa.sun_path)
		die_config("--listen path too long");
	memcpy(sa.sun_path, path, strlen(path) + 1);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	unlink(path);
	if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || chmod(path, 0666) < 0 || listen(fd, 64) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Remove the socket at path if it is still the one bound at (dev, ino): a
 * later proxy of the same agent (the retried attempt of a killed turn) may
 * have bound its own there already, and that one must stay. */
static void unlink_own_socket(const char *path, dev_t dev, ino_t ino)
{
	struct stat st;
	if (lstat(path, &st) == 0 && st.st_dev == dev && st.st_ino == ino)
		unlink(path);
}

/* Drop expired reservations of any owner (best effort: each reservation sweeps its owner's too). */
static void sweep(const struct dburl *u)
{
	struct db *db = db_new(u);
	struct buf err = BUF_INIT;
	if (llm_reserve_sweep(db, &err) < 0)
		log_msg(LOG_LVL_WARNING, "egress_sweep", "expired reservations not swept: %s", buf_cstr(&err));
	buf_free(&err);
	db_free(db);   /* before any fork: no child inherits a live connection */
}

/* The children serving connections. */
static pid_t kids[64];
static int nkids;

/* Forget the children that have ended. */
static void reap(void)
{
	for (int i = 0; i < nkids;) {
		pid_t r = waitpid(kids[i], NULL, WNOHANG);
		if (r == kids[i] || (r < 0 && errno == ECHILD))
			kids[i] = kids[--nkids];
		else
			i++;
	}
}

int main(int argc, char **argv)
{
	static char key[KEY_MAX + 1];
	const char *listen_path = NULL, *prices_path = getenv("AGENTTEST_LLM_PRICES");
	const char *upstream = getenv("AGENTTEST_ANTHROPIC_UPSTREAM");
	int key_fd = -1, max_conns = 8;
	struct egress_ledger led = { .agent = { -1, -1, -1.0 } };
	struct egress_owner own = { .lim = { -1, -1, -1.0 } };
	struct dburl dbu = { 0 };
	bool has_db = false, owner_limited = false;
	struct egress_ctx cx = { 0 };
	for (int i = 1; i < argc; i++) {
		char *a = argv[i], *v = strchr(a, '=');
		if (!v || strncmp(a, "--", 2) != 0)
			usage();
		*v++ = '\0';
		if (!strcmp(a, "--listen")) listen_path = v;
		else if (!strcmp(a, "--upstream")) upstream = v;
		else if (!strcmp(a, "--prices")) prices_path = v;
		else if (!strcmp(a, "--key-fd")) key_fd = (int)opt_i64(v, "--key-fd");
		else if (!strcmp(a, "--agent")) cx.agent_id = v;
		else if (!strcmp(a, "--owner")) own.owner_id = (uint64_t)opt_i64(v, "--owner");
		else if (!strcmp(a, "--agent-ledger")) led.agent_path = v;
		else if (!strcmp(a, "--turn-usage")) led.turn_path = v;
		else if (!strcmp(a, "--agent-tokens")) led.agent.tokens = opt_i64(v, a);
		else if (!strcmp(a, "--agent-requests")) led.agent.requests = opt_i64(v, a);
		else if (!strcmp(a, "--agent-usd")) led.agent.usd = opt_usd(v, a);
		else if (!strcmp(a, "--owner-day-tokens")) own.lim.tokens = opt_i64(v, a), owner_limited = true;
		else if (!strcmp(a, "--owner-day-requests")) own.lim.requests = opt_i64(v, a), owner_limited = true;
		else if (!strcmp(a, "--owner-day-usd")) own.lim.usd = opt_usd(v, a), owner_limited = true;
		else if (!strcmp(a, "--max-conns")) max_conns = (int)opt_i64(v, a);
		else usage();
	}
	if (!listen_path || key_fd < 0 || !cx.agent_id || !led.agent_path || !led.turn_path)
		usage();
	if (max_conns < 1 || max_conns > 64)
		die_config("--max-conns must be 1..64");
	if (!upstream || !*upstream)
		upstream = "https://api.anthropic.com";
	if (!llm_upstream_ok(upstream))
		die_config("the upstream must be https:// (or http:// to loopback, for tests)");
	size_t ul = strlen(upstream);
	char *up = strndup(upstream, ul > 0 && upstream[ul - 1] == '/' ? ul - 1 : ul);
	struct llm_prices prices;
	llm_prices_default(&prices);
	if (prices_path && *prices_path) {
		struct buf err = BUF_INIT;
		if (!llm_prices_load(&prices, prices_path, &err))
			die_config(buf_cstr(&err));
		buf_free(&err);
	}
	prctl(PR_SET_DUMPABLE, 0);
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	read_secrets(key_fd, key, &dbu, &has_db);
	if (owner_limited && !has_db)
		die_config("the owner's daily budget (--owner-day-*) needs the database URL on --key-fd");
	own.url = has_db ? &dbu : NULL;
	own.agent_id = cx.agent_id;
	if (has_db)
		sweep(&dbu);
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0)
		die_config("libcurl could not start");
	cx.upstream = up;
	cx.key = key;
	cx.prices = &prices;
	cx.ledger = &led;
	cx.owner = &own;
	signal(SIGPIPE, SIG_IGN);
	struct sigaction sa = { .sa_handler = on_stop };
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	int lfd = listen_on(listen_path);
	struct stat own_sock;
	if (lfd < 0 || lstat(listen_path, &own_sock) != 0) {
		log_msg(LOG_LVL_ERROR, "egress_listen", "cannot listen on %s: %s", listen_path, strerror(errno));
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	while (!stopping) {
		reap();
		struct pollfd p = { .fd = lfd, .events = POLLIN };
		if (nkids >= max_conns) {
			usleep(20000);
			continue;
		}
		if (poll(&p, 1, 200) <= 0)
			continue;
		int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0)
			continue;
		pid_t pid = fork();
		if (pid == 0) {
			close(lfd);
			signal(SIGTERM, SIG_DFL);
			prctl(PR_SET_PDEATHSIG, SIGTERM);
			egress_serve(&cx, c);
			close(c);
			explicit_bzero(key, sizeof key);
			_exit(0);
		}
		close(c);
		if (pid > 0)
			kids[nkids++] = pid;
	}
	close(lfd);
	unlink_own_socket(listen_path, own_sock.st_dev, own_sock.st_ino);
	for (int i = 0; i < nkids; i++)
		kill(kids[i], SIGTERM);
	for (int i = 0; i < nkids; i++)
		waitpid(kids[i], NULL, 0);
	explicit_bzero(key, sizeof key);
	llm_prices_free(&prices);
	dburl_free(&dbu);
	free(up);
	curl_global_cleanup();
	return 0;
}
