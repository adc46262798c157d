/*
 * agenttest: the command-line entry point. Dispatches to one subcommand per
 * file (see commands.h). Add a command by writing cmd_<name>.c and one line
 * in the table below.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "common/readfile.h"
#include "evaluator/cli/commands.h"

int cmd_db(int argc, char **argv);
int cmd_token(int argc, char **argv);
int cmd_dataset(int argc, char **argv);
int cmd_data(int argc, char **argv);
int cmd_backtest(int argc, char **argv);
int cmd_evaluate(int argc, char **argv);

static const struct cli_command commands[] = {
	{ "db", cmd_db, "database administration: migrate" },
	{ "token", cmd_token, "API tokens: create, list, revoke" },
	{ "dataset", cmd_dataset, "dataset registry in the database: register, list" },
	{ "data", cmd_data, "dataset files: synth, import, verify, info" },
	{ "backtest", cmd_backtest, "run a strategy over a dataset: metrics, hashes, audit" },
	{ "evaluate", cmd_evaluate, "walk-forward evaluation of a signal on a MANTIS challenge" },
	{ NULL, NULL, NULL },
};

int cli_error(int status, const char *code, const char *fmt, ...)
{
	char msg[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	json_object *o = json_object_new_object();
	json_object_object_add(o, "error", json_object_new_string(msg));
	json_object_object_add(o, "code", json_object_new_string(code));
	json_object_object_add(o, "detail", json_object_new_string(msg));
	fprintf(stderr, "%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
	return status;
}

int cli_read_strategy(const char *path, size_t max, char **code, size_t *len)
{
	if (read_file_max(path, max, 0, code, len) == 0)
		return 0;
	if (errno == EFBIG)
		return cli_error(CLI_FAILED, "invalid_field", "strategy file %s is larger than %zu bytes", path, max);
	return cli_error(CLI_FAILED, "invalid_field", "cannot read strategy file %s: %s", path,
	                 errno == EINVAL ? "not a regular file" : strerror(errno));
}

/* Print the command list on `out`. */
static void usage(FILE *out)
{
	fprintf(out, "usage: agenttest <command> [options]\n\ncommands:\n");
	for (const struct cli_command *c = commands; c->name; c++)
		fprintf(out, "  %-10s %s\n", c->name, c->summary);
	fprintf(out, "  %-10s %s\n", "version", "print version and commit");
	fprintf(out, "\n'agenttest <command> --help' describes each command.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "help") == 0) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? CLI_USAGE : CLI_OK;
	}
	if (strcmp(argv[1], "version") == 0 || strcmp(argv[1], "--version") == 0) {
		printf("agenttest %s (%s)\n", AGENTTEST_VERSION, AGENTTEST_COMMIT);
		return CLI_OK;
	}
	for (const struct cli_command *c = commands; c->name; c++)
		if (strcmp(argv[1], c->name) == 0)
			return c->run(argc - 1, argv + 1);
	return cli_error(CLI_USAGE, "unknown_command", "unknown command '%s' (see 'agenttest --help')", argv[1]);
}
