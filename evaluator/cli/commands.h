/*
 * Subcommands of the `agenttest` CLI. Each lives in its own cmd_*.c file and
 * follows one contract: it receives argv starting at its own name, prints
 * results on stdout, errors on stderr as one JSON object
 * {"error","code","detail"}, and returns the process exit status:
 * 0 success, 1 the operation failed (bad input, failed run), 2 usage error,
 * 3 internal or environment error.
 */
#ifndef AGENTTEST_CLI_COMMANDS_H
#define AGENTTEST_CLI_COMMANDS_H

#include <stddef.h>

struct cli_command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
};

/* Exit statuses shared by every subcommand. */
enum cli_exit {
	CLI_OK = 0,
	CLI_FAILED = 1,
	CLI_USAGE = 2,
	CLI_INTERNAL = 3,
};

/* Read a strategy file of at most max bytes into *code (NUL-terminated,
 * caller frees). Returns 0, or prints the error (code invalid_field) and
 * returns CLI_FAILED. */
int cli_read_strategy(const char *path, size_t max, char **code, size_t *len);

/* `agenttest data fetch` (cmd_fetch.c), argv from "fetch". */
int cmd_data_fetch(int argc, char **argv);
/* agenttest data prefetch: queue prefetch jobs (cmd_prefetch.c). */
int cmd_data_prefetch(int argc, char **argv);

/* Print {"error":msg,"code":code,"detail":msg} on stderr; returns `status`. */
int cli_error(int status, const char *code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
