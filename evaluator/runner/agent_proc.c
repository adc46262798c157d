/*
 * agent_proc: run the trusted iteration harness (python3 -m agentloop.job,
 * evaluator/runner/agentloop/job.py) for one agent iteration.
 *
 * Theory of operation. The harness is a child in its own process group
 * with PR_SET_PDEATHSIG(SIGTERM), so a runner that dies takes the iteration
 * down (the harness kills the agent's sandbox on SIGTERM; the queue reclaims
 * the iteration when the lease expires). The request goes to its stdin in
 * one write, then stdin is closed; stdout (the result object, at most
 * AGENT_OUT_MAX bytes) and stderr (the last AGENT_ERR_MAX bytes kept) are
 * read with poll() on a 100 ms tick, and so is the harness's fd 3, its live
 * activity lines (agent_activity.c), on which the slot's cancellation is
 * checked: a cancel sends SIGTERM to the group (the harness stops the
 * sandbox and answers "stopped"), and SIGKILL follows after
 * AGENT_KILL_GRACE_MS. The environment is the runner's minus its secrets
 * (database URL, tokens, key files), plus what the harness needs.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "xalloc.h"
#include "evaluator/runner/agent.h"
#include "evaluator/runner/runner.h"

#define AGENT_OUT_MAX       (32u << 20)
#define AGENT_ERR_MAX       8192
#define AGENT_KILL_GRACE_MS 5000

extern char **environ;

/* Variables of the runner's environment the harness must not inherit. */
static bool agent_secret_var(const char *kv)
{
	static const char *const deny[] = { "DATABASE_URL=", "MANTIS_AUTH_TOKEN=", "AGENTTEST_SECRET_FILE=",
					    "ANTHROPIC_", "COINGLASS_", "AGENTTEST_TOKEN=", "PYTHONPATH=",
					    "AGENTTEST_BINDIR=", NULL };
	for (int i = 0; deny[i]; i++)
		if (strncmp(kv, deny[i], strlen(deny[i])) == 0)
			return true;
	return false;
}

/* The child's environment: the runner's minus secrets, plus extra (NULL-terminated). */
static char **agent_envp(const char *const *extra)
{
	size_t n = 0, m = 0;
	while (environ[n])
		n++;
	while (extra[m])
		m++;
	char **env = xcalloc(n + m + 1, sizeof *env);
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		bool overridden = false;
		for (size_t j = 0; j < m && !overridden; j++) {
			const char *eq = strchr(extra[j], '=');
			size_t kl = eq ? (size_t)(eq - extra[j]) + 1 : 0;
			overridden = kl && strncmp(environ[i], extra[j], kl) == 0;
		}
		if (!overridden && !agent_secret_var(environ[i]))
			env[k++] = environ[i];
	}
	for (size_t j = 0; j < m; j++)
		env[k++] = (char *)(uintptr_t)extra[j];
	env[k] = NULL;
	return env;
}

/* Monotonic milliseconds. */
static long long agent_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Append what fd has to b (at most cap bytes kept: the first, or with tail the last). 0 more, 1 EOF, -1 error. */
static int agent_drain(int fd, struct buf *b, size_t cap, bool tail)
{
	char chunk[65536];
	ssize_t r = read(fd, chunk, sizeof chunk);
	if (r == 0)
		return 1;
	if (r < 0)
		return errno == EINTR || errno == EAGAIN ? 0 : -1;
	if (tail && b->len + (size_t)r > cap) {
		buf_append(b, chunk, (size_t)r);
		size_t cut = b->len - cap;
		memmove(b->data, b->data + cut, cap);
		b->len = cap;
		b->data[cap] = '\0';
		return 0;
	}
	if (b->len + (size_t)r > cap)
		return -1;   /* a result larger than any the harness writes */
	buf_append(b, chunk, (size_t)r);
	return 0;
}

/* Exec the harness in the child (never returns); act becomes its fd 3. */
static void agent_child(const struct agent_env *env, int in, int out, int errfd, int act, char **envp)
{
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	setpgid(0, 0);
	if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(errfd, 2) < 0)
		_exit(127);
	if (act == 3 ? fcntl(3, F_SETFD, 0) < 0 : dup2(act, 3) < 0) /* dup2 onto itself keeps O_CLOEXEC */
		_exit(127);
	for (int fd = 4; fd < 1024; fd++)
		close(fd);
	signal(SIGPIPE, SIG_DFL);
	char *const argv[] = { (char *)(uintptr_t)env->python, "-s", "-m", "agentloop.job", NULL };
	execve(env->python, argv, envp);
	_exit(127);
}

int agent_proc_run(const struct agent_env *env, struct job_ctl *ctl, const char *request, struct buf *out,
		   struct buf *err_tail, bool *stopped, struct agent_activity *act)
{
	int pin[2] = { -1, -1 }, pout[2] = { -1, -1 }, perr[2] = { -1, -1 }, pact[2] = { -1, -1 }, rc = -1;
	struct buf actb = BUF_INIT;
	*stopped = false;
	if (pipe2(pin, O_CLOEXEC) || pipe2(pout, O_CLOEXEC) || pipe2(perr, O_CLOEXEC) || pipe2(pact, O_CLOEXEC)) {
		buf_printf(err_tail, "pipe: %s", strerror(errno));
		goto out;
	}
	char pp[2 * AGENT_PATH_MAX + 32], bd[AGENT_PATH_MAX + 32], hd[AGENT_PATH_MAX + 32];
	snprintf(pp, sizeof pp, "PYTHONPATH=%s:%s", env->loop_dir, env->host_dir);
	snprintf(bd, sizeof bd, "AGENTTEST_BINDIR=%s", env->bin_dir);
	snprintf(hd, sizeof hd, "AGENTTEST_HOST_DIR=%s", env->host_dir);
	const char *extra[9] = { pp, bd, hd, "PYTHONDONTWRITEBYTECODE=1", "AGENTTEST_ACTIVITY_FD=3" };
	size_t ne = 5;
	for (size_t i = 0; i < env->nexport && ne < 8; i++)
		extra[ne++] = env->exports[i];
	extra[ne] = NULL;
	char **envp = agent_envp(extra);
	pid_t pid = fork();
	if (pid == 0)
		agent_child(env, pin[0], pout[1], perr[1], pact[1], envp);
	free(envp);
	if (pid < 0) {
		buf_printf(err_tail, "fork: %s", strerror(errno));
		goto out;
	}
	setpgid(pid, pid);
	close(pin[0]), pin[0] = -1;
	close(pout[1]), pout[1] = -1;
	close(perr[1]), perr[1] = -1;
	close(pact[1]), pact[1] = -1;
	/* the request: one blocking write (the harness reads it whole first) */
	size_t len = strlen(request), off = 0;
	while (off < len) {
		ssize_t w = write(pin[1], request + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	close(pin[1]), pin[1] = -1;
	fcntl(pout[0], F_SETFL, O_NONBLOCK);
	fcntl(perr[0], F_SETFL, O_NONBLOCK);
	fcntl(pact[0], F_SETFL, O_NONBLOCK);
	bool out_eof = false, err_eof = false, act_eof = false, hb = false, too_big = false;
	long long killed_at = 0;
	while (!out_eof || !err_eof) {
		struct pollfd p[3] = { { .fd = out_eof ? -1 : pout[0], .events = POLLIN },
				       { .fd = err_eof ? -1 : perr[0], .events = POLLIN },
				       { .fd = act_eof ? -1 : pact[0], .events = POLLIN } };
		if (poll(p, 3, 100) < 0 && errno != EINTR)
			break;
		if (!act_eof && (p[2].revents & (POLLIN | POLLHUP))) {
			act_eof = agent_drain(pact[0], &actb, 1u << 20, true) != 0;
			if (act && actb.len)
				agent_activity_feed(act, actb.data, actb.len);
			buf_reset(&actb);
		}
		if (!out_eof && (p[0].revents & (POLLIN | POLLHUP))) {
			int d = agent_drain(pout[0], out, AGENT_OUT_MAX, false);
			out_eof = d != 0;
			too_big |= d < 0;
		}
		if (!err_eof && (p[1].revents & (POLLIN | POLLHUP)))
			err_eof = agent_drain(perr[0], err_tail, AGENT_ERR_MAX, true) != 0;
		if (!killed_at && (too_big || job_cancelled(ctl, &hb))) {
			*stopped = !too_big;
			kill(-pid, SIGTERM);
			killed_at = agent_ms();
		} else if (killed_at && agent_ms() - killed_at > AGENT_KILL_GRACE_MS) {
			kill(-pid, SIGKILL);
		}
	}
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	while (!act_eof && agent_drain(pact[0], &actb, 1u << 20, true) == 0 && actb.len) { /* written last */
		if (act)
			agent_activity_feed(act, actb.data, actb.len);
		buf_reset(&actb);
	}
	if (too_big)
		buf_puts(err_tail, " (the harness wrote more than its result limit)");
	else if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		rc = 0;
	else if (WIFEXITED(status))
		buf_printf(err_tail, " (harness exit status %d)", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		buf_printf(err_tail, " (harness killed by signal %d)", WTERMSIG(status));
out:
	buf_free(&actb);
	for (int i = 0; i < 2; i++) {
		if (pact[i] >= 0)
			close(pact[i]);
		if (pin[i] >= 0)
			close(pin[i]);
		if (pout[i] >= 0)
			close(pout[i]);
		if (perr[i] >= 0)
			close(perr[i]);
	}
	return rc;
}

/* Whether c may come just before an absolute path in a line of text. */
static bool path_lead(char c)
{
	return c == ' ' || c == '"' || c == '\'' || c == '(' || c == '[' || c == '=' || c == ',' || c == ':';
}

/* Whether c ends a path started in a line of text. */
static bool path_end(char c)
{
	return c == ' ' || c == '"' || c == '\'' || c == ')' || c == ']' || c == ',' || c == ':';
}

/* Append line[0..n) to b, each absolute path in it replaced by <path>. */
static void put_without_paths(struct buf *b, const char *line, size_t n)
{
	for (size_t i = 0; i < n;) {
		if (line[i] == '/' && i + 1 < n && !path_end(line[i + 1]) && (i == 0 || path_lead(line[i - 1]))) {
			buf_puts(b, "<path>");
			while (i < n && !path_end(line[i]))
				i++;
			continue;
		}
		buf_putc(b, line[i++]);
	}
}

/* The user-facing line of a failed harness (agent.h). */
size_t agent_err_summary(const char *tail, char *out, size_t cap)
{
	size_t n = strlen(tail), end = n;
	const char *note = NULL;
	/* agent_proc_run's own reason, " (harness ...)" or " (the harness ...)", ends the tail */
	for (const char *p = tail; (p = strstr(p, " (")) != NULL; p++)
		if (strncmp(p, " (harness ", 10) == 0 || strncmp(p, " (the harness ", 14) == 0)
			note = p;
	if (note && tail[n - 1] == ')')
		end = (size_t)(note - tail);
	else
		note = NULL;
	/* the last non-empty line of what the harness wrote */
	while (end > 0 && (tail[end - 1] == '\n' || tail[end - 1] == '\r' || tail[end - 1] == ' '))
		end--;
	size_t start = end;
	while (start > 0 && tail[start - 1] != '\n')
		start--;
	struct buf b = BUF_INIT;
	put_without_paths(&b, tail + start, end - start);
	if (note)
		buf_puts(&b, b.len ? note : note + 1);
	size_t len = agent_activity_clean(b.data ? b.data : "", b.len, out, cap);
	buf_free(&b);
	return len;
}
