/*
 * hostdir.c: where the strategy host and the helper binary live, and the
 * fixed environment a strategy host gets.
 *
 * Installed layout: <prefix>/bin/agenttest-sandbox and
 * <prefix>/share/agenttest/host/agenttest_host; dev tree: bin/ next to
 * sandbox/host/. Both are found relative to the running executable, with
 * environment overrides for tests (AGENTTEST_HOST_DIR,
 * AGENTTEST_SANDBOX_HELPER).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sandbox/sbx_int.h"

char *const sbx_host_env[] = {
	"PATH=/usr/bin:/bin",
	"LANG=C.UTF-8",
	"LC_ALL=C.UTF-8",
	"HOME=/nonexistent",
	"PYTHONDONTWRITEBYTECODE=1",
	"PYTHONHASHSEED=0",
	"OPENBLAS_NUM_THREADS=1",
	"OMP_NUM_THREADS=1",
	"MKL_NUM_THREADS=1",
	"NUMEXPR_NUM_THREADS=1",
	NULL,
};

/* Copy s into out (len bytes); -1 if it does not fit. */
static int copy_path(char *out, size_t len, const char *s)
{
	int n = snprintf(out, len, "%s", s);
	return (n < 0 || (size_t)n >= len) ? -1 : 0;
}

/* The directory of the running executable into out. Returns 0 or -1. */
static int exe_dir(char *out, size_t len)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n <= 0)
		return -1;
	exe[n] = '\0';
	char *slash = strrchr(exe, '/');
	if (!slash)
		return -1;
	*slash = '\0';
	return copy_path(out, len, exe);
}

/* True if path names a directory. */
static int is_dir(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int sbx_host_dir(char *out, size_t len)
{
	const char *env = getenv("AGENTTEST_HOST_DIR");
	if (env && *env)
		return copy_path(out, len, env);
	char dir[PATH_MAX], cand[PATH_MAX];
	if (exe_dir(dir, sizeof dir) < 0)
		return -1;
	static const char *const rel[] = { "../share/agenttest/host", "../sandbox/host", NULL };
	for (int i = 0; rel[i]; i++) {
		int n = snprintf(cand, sizeof cand, "%s/%s", dir, rel[i]);
		if (n < 0 || (size_t)n >= sizeof cand)
			return -1;
		if (is_dir(cand)) {
			char *real = realpath(cand, NULL);
			int rc = real ? copy_path(out, len, real) : -1;
			free(real);
			return rc;
		}
	}
	return -1;
}

int sbx_helper_path(char *out, size_t len)
{
	const char *env = getenv("AGENTTEST_SANDBOX_HELPER");
	if (env && *env)
		return copy_path(out, len, env);
	char dir[PATH_MAX];
	if (exe_dir(dir, sizeof dir) < 0)
		return -1;
	int n = snprintf(out, len, "%s/agenttest-sandbox", dir);
	if (n < 0 || (size_t)n >= len)
		return -1;
	return access(out, X_OK) == 0 ? 0 : -1;
}
