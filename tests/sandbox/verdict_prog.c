/*
 * verdict_prog: a tiny static program for the helper's verdict table
 * (tests/sandbox/corpus.py, "helper" suite). argv[1] selects a behaviour:
 * ok, exit3, segv, spin, sleep, alloc, socket, flood, execve, tmpwrite,
 * cwdwrite.
 */
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <fcntl.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	const char *m = argc > 1 ? argv[1] : "ok";
	if (strcmp(m, "ok") == 0)
		return write(1, "ok\n", 3) == 3 ? 0 : 1;
	if (strcmp(m, "exit3") == 0)
		return 3;
	if (strcmp(m, "segv") == 0)
		*(volatile int *)(uintptr_t)8 = 1; /* a real fault: PID 1 ignores raise() */
	if (strcmp(m, "spin") == 0)
		for (volatile unsigned long i = 0;; i++)
			;
	if (strcmp(m, "sleep") == 0)
		sleep(100);
	if (strcmp(m, "alloc") == 0) {
		for (int i = 0; i < 64; i++) {
			char *p = malloc(64u << 20);
			if (!p)
				return 4;
			memset(p, 1, 64u << 20);
		}
		return 0;
	}
	if (strcmp(m, "socket") == 0)
		return socket(AF_INET, SOCK_STREAM, 0) >= 0 ? 0 : 5;
	if (strcmp(m, "flood") == 0) {
		static char buf[65536];
		memset(buf, 'x', sizeof buf);
		for (;;)
			if (write(1, buf, sizeof buf) < 0)
				return 6;
	}
	if (strcmp(m, "execve") == 0) {
		char *av[] = { argv[0], (char *)"ok", NULL };
		execve(argv[0], av, NULL);
		return 7;
	}
	if (strcmp(m, "tmpwrite") == 0) {
		int fd = open("/tmp/x", O_WRONLY | O_CREAT | O_TRUNC, 0600);
		return fd >= 0 && write(fd, "x", 1) == 1 ? 0 : 8;
	}
	if (strcmp(m, "cwdwrite") == 0) {   /* --workdir=SRC:DEST: the cwd is DEST, writable */
		int fd = open("x", O_WRONLY | O_CREAT | O_TRUNC, 0600);
		return fd >= 0 && write(fd, "x", 1) == 1 ? 0 : 8;
	}
	return 9;
}
