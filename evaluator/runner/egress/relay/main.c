/*
 * agenttest-relay: the in-box end of an LLM agent's only way out.
 *
 *   agenttest-relay --listen=127.0.0.1:PORT --to=SOCKET -- program [arg...]
 *
 * Runs inside the agent's sandbox, as its first process, in the box's own
 * network namespace (nothing in it but loopback). It listens on
 * 127.0.0.1:PORT, starts `program` (the agent CLI, pointed at
 * http://127.0.0.1:PORT by its environment), and copies the bytes of every
 * connection to and from the unix socket SOCKET, which the egress proxy
 * outside the box listens on. It knows no key and parses nothing: policy is
 * the proxy's. As the box's first process it also reaps orphans. It exits
 * with the program's status (128 + signal when killed) once the program
 * ends; the sandbox then kills whatever is left.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define PAIRS_MAX 32

struct pair {
	int  fd[2];     /* 0: the client (TCP), 1: the proxy (unix) */
	bool eof[2];    /* that side sent EOF */
};

static struct pair pairs[PAIRS_MAX];
static int npairs;

static void die(const char *what)
{
	fprintf(stderr, "agenttest-relay: %s: %s\n", what, strerror(errno));
	exit(125);
}

/* Listen on 127.0.0.1:port. */
static int listen_tcp(const char *spec)
{
	const char *colon = strrchr(spec, ':');
	if (!colon || strncmp(spec, "127.0.0.1", (size_t)(colon - spec)) != 0 || colon - spec != 9)
		die("--listen must be 127.0.0.1:PORT");
	char *end;
	long port = strtol(colon + 1, &end, 10);
	if (*end || port < 1 || port > 65535)
		die("bad port");
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
	    bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(fd, 64) < 0)
		die("listen");
	return fd;
}

/* Connect to the proxy's unix socket; -1 on failure. */
static int connect_unix(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof sa.sun_path)
		return -1;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* Write all of p to fd; false on error. */
static bool write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		p += w;
		n -= (size_t)w;
	}
	return true;
}

static void drop_pair(int i)
{
	close(pairs[i].fd[0]);
	close(pairs[i].fd[1]);
	pairs[i] = pairs[--npairs];
}

/* Move what side s of pair i has to the other side; false to drop it. */
static bool pump(int i, int s)
{
	char b[65536];
	ssize_t n = read(pairs[i].fd[s], b, sizeof b);
	if (n < 0 && errno == EINTR)
		return true;
	if (n <= 0) {
		pairs[i].eof[s] = true;
		shutdown(pairs[i].fd[!s], SHUT_WR);
		return !(pairs[i].eof[!s]) && n == 0;
	}
	return write_all(pairs[i].fd[!s], b, (size_t)n);
}

/* The program's exit status as a shell would report it. */
static int status_of(int st)
{
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int main(int argc, char **argv)
{
	const char *listen_spec = NULL, *to = NULL;
	int i = 1;
	for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
		if (strncmp(argv[i], "--listen=", 9) == 0)
			listen_spec = argv[i] + 9;
		else if (strncmp(argv[i], "--to=", 5) == 0)
			to = argv[i] + 5;
		else
			break;
	}
	if (!listen_spec || !to || i >= argc - 1 || strcmp(argv[i], "--") != 0) {
		fprintf(stderr, "usage: agenttest-relay --listen=127.0.0.1:PORT --to=SOCKET -- program [arg...]\n");
		return 125;
	}
	signal(SIGPIPE, SIG_IGN);
	int lfd = listen_tcp(listen_spec);
	pid_t child = fork();
	if (child < 0)
		die("fork");
	if (child == 0) {
		execv(argv[i + 1], argv + i + 1);
		fprintf(stderr, "agenttest-relay: cannot run %s: %s\n", argv[i + 1], strerror(errno));
		_exit(127);
	}
	for (;;) {
		int st;
		pid_t r;
		while ((r = waitpid(-1, &st, WNOHANG)) > 0) {
			if (r == child)
				return status_of(st);
		}
		struct pollfd p[1 + 2 * PAIRS_MAX];
		int n = 0;
		p[n++] = (struct pollfd){ .fd = npairs < PAIRS_MAX ? lfd : -1, .events = POLLIN };
		for (int k = 0; k < npairs; k++)
			for (int s = 0; s < 2; s++)
				p[n++] = (struct pollfd){ .fd = pairs[k].eof[s] ? -1 : pairs[k].fd[s], .events = POLLIN };
		if (poll(p, (nfds_t)n, 100) <= 0)
			continue;
		for (int k = npairs - 1; k >= 0; k--) {
			for (int s = 0; s < 2; s++) {
				if ((p[1 + 2 * k + s].revents & (POLLIN | POLLHUP | POLLERR)) && !pump(k, s)) {
					drop_pair(k);
					break;
				}
			}
		}
		if (p[0].revents & POLLIN) {
			int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
			if (c < 0)
				continue;
			int u = connect_unix(to);
			if (u < 0) {
				close(c);
				continue;
			}
			pairs[npairs++] = (struct pair){ .fd = { c, u } };
		}
	}
}
