/*
 * test_policy.c: the seccomp policy (sandbox/policy.c) loaded for real in
 * a forked child (kill-in-kernel variant, no supervisor needed, no root):
 * allowed calls work, refused ones fail with their errno, forbidden ones
 * kill with SIGSYS. Skipped under valgrind, which cannot run seccomp'ed
 * code.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "sandbox/sbx_confine.h"

enum probe { P_GETPID, P_SOCKET_INET, P_SOCKET_UNIX, P_OPEN_WRITE, P_OPEN_READ, P_FORK,
             P_CLONE_NS, P_MMAP_WX, P_MMAP_ANON_X, P_MPROTECT_X, P_PTRACE, P_UNLINK, P_IOCTL_ODD };

/* In the child: load the filter, make one call, report via exit status:
 * 0 success, 100 + errno on failure; SIGSYS if killed. */
static int run_probe(enum probe p, bool writable)
{
	struct sbx_bpf b;
	char err[128];
	struct sbx_policy_opts o = { .writable = writable, .notify = false };
	assert_int_equal(sbx_policy_build(&o, &b, err, sizeof err), 0);
	assert_false(b.notify);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct sock_fprog prog = { .len = b.len, .filter = b.ins };
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
		    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
			_exit(99);
		long r = 0;
		void *m;
		switch (p) {
		case P_GETPID: r = getpid() > 0 ? 0 : -1; break;
		case P_SOCKET_INET: r = socket(AF_INET, SOCK_STREAM, 0); break;
		case P_SOCKET_UNIX: r = socket(AF_UNIX, SOCK_STREAM, 0); break;
		case P_OPEN_WRITE: r = open("/dev/null", O_WRONLY); break;
		case P_OPEN_READ: r = open("/dev/null", O_RDONLY); break;
		case P_FORK: r = syscall(SYS_fork); break;
		case P_CLONE_NS: r = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0); break;
		case P_MMAP_WX:
			m = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			r = m == MAP_FAILED ? -1 : 0;
			break;
		case P_MMAP_ANON_X:
			m = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			r = m == MAP_FAILED ? -1 : 0;
			break;
		case P_MPROTECT_X:
			m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			r = m == MAP_FAILED ? -1 : mprotect(m, 4096, PROT_READ | PROT_EXEC);
			break;
		case P_PTRACE: r = syscall(SYS_ptrace, 0, 0, 0, 0); break;
		case P_UNLINK: r = unlink("/nonexistent-sbx-test"); break;
		case P_IOCTL_ODD: r = syscall(SYS_ioctl, 0, 0x5412 /* TIOCSTI */, "x"); break;
		}
		if (r == 0 && (p == P_FORK || p == P_CLONE_NS))
			_exit(0);    /* a child that got through */
		_exit(r < 0 ? 100 + errno : 0);
	}
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	sbx_policy_free(&b);
	if (WIFSIGNALED(st))
		return -WTERMSIG(st);
	return WEXITSTATUS(st);
}

/* Skip the whole file under valgrind. */
static bool under_valgrind(void)
{
	const char *p = getenv("LD_PRELOAD");
	return p && strstr(p, "vgpreload");
}

static void test_allowed(void **state)
{
	if (under_valgrind())
		skip();
	assert_int_equal(run_probe(P_GETPID, false), 0);
	assert_int_equal(run_probe(P_OPEN_READ, false), 0);
}

static void test_refused_with_errno(void **state)
{
	if (under_valgrind())
		skip();
	assert_int_equal(run_probe(P_SOCKET_UNIX, false), 100 + EACCES);
	assert_int_equal(run_probe(P_OPEN_WRITE, false), 100 + EACCES);
	assert_int_equal(run_probe(P_FORK, false), 100 + EPERM);
	assert_int_equal(run_probe(P_CLONE_NS, false), 100 + EPERM);
	assert_int_equal(run_probe(P_UNLINK, false), 100 + EROFS);
	assert_int_equal(run_probe(P_IOCTL_ODD, false), 100 + ENOTTY);
}

static void test_writable_variant(void **state)
{
	if (under_valgrind())
		skip();
	assert_int_equal(run_probe(P_OPEN_WRITE, true), 0);
	assert_int_equal(run_probe(P_UNLINK, true), 100 + ENOENT);
}

static void test_forbidden_kill(void **state)
{
	if (under_valgrind())
		skip();
	assert_int_equal(run_probe(P_SOCKET_INET, false), -SIGSYS);
	assert_int_equal(run_probe(P_MMAP_WX, false), -SIGSYS);
	assert_int_equal(run_probe(P_MMAP_ANON_X, false), -SIGSYS);
	assert_int_equal(run_probe(P_MPROTECT_X, false), -SIGSYS);
	assert_int_equal(run_probe(P_PTRACE, false), -SIGSYS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_allowed),
		cmocka_unit_test(test_refused_with_errno),
		cmocka_unit_test(test_writable_variant),
		cmocka_unit_test(test_forbidden_kill),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
