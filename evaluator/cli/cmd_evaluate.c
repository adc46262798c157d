/*
 * agenttest evaluate: walk-forward evaluation of a signal strategy
 * (Featurizer/Predictor classes) on a MANTIS challenge.
 *
 *   agenttest evaluate --challenge NAME --strategy FILE [--dataset DIR]
 *       [--days-back N] [--holdout-days N] [--mode mantis|strict]
 *       [--dev-only | --split [--dev-fd FD]] [--trusted] [--cpu-seconds S]
 *       [--memory-mb M]
 *
 * The bars are streamed into the sandboxed strategy host one at a time
 * (evaluator/runner/drive/stream.c); labels, windows and metrics are computed here.
 * Prints the result dictionary as one JSON object on stdout; a failed or
 * refused evaluation prints {"error","code","detail",...} on stderr and
 * exits 1 (usage 2, internal 3). --dataset defaults to $DATASET_DIR.
 * --split (agent scoring) streams once and prints {"dev", "full",
 * "full_error"}: the dev-only and the full result of that one stream
 * (stream.h); it fails as above only when the dev part failed. With
 * --dev-fd FD it also writes one line on FD the moment the dev part is
 * scored, before the first holdout bar is sent: {"dev_bars", "holdout_bars",
 * "dev": <the dev result>}, then closes FD (the agent loop times the
 * holdout part from that line: docs/agents.md). A failed dev part writes
 * nothing there.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "evaluator/cli/commands.h"
#include "evaluator/dataset.h"
#include "evaluator/runner/drive/stream.h"
#include "sandbox/box_lease.h"
#include "xalloc.h"

int cmd_evaluate(int argc, char **argv);

struct ev_opts {
	const char *challenge, *strategy, *dataset;
	double days_back, holdout_days, cpu_seconds, memory_mb;
	int mode, trusted, dev_only, split, dev_fd;
};

/* Usage text on out. */
static void ev_usage(FILE *out)
{
	fprintf(out,
		"usage: agenttest evaluate --challenge NAME --strategy FILE [--dataset DIR]\n"
		"           [--days-back N] [--holdout-days N] [--mode mantis|strict] [--dev-only | --split]\n"
		"           [--dev-fd FD] [--trusted] [--cpu-seconds S] [--memory-mb M]\n"
		"Defaults: --dataset $DATASET_DIR, --days-back 60, --holdout-days 20, --mode strict.\n"
		"--dev-only streams and scores the dev period only (the holdout is never sent).\n"
		"--split streams once and prints {\"dev\": the dev-only result, \"full\": the full one,\n"
		"  \"full_error\"}; the dev rows come before any holdout bar is sent.\n"
		"--dev-fd FD (with --split) writes {\"dev_bars\", \"holdout_bars\", \"dev\"} as one line\n"
		"  on FD when the dev part is scored, before the first holdout bar, then closes FD.\n"
		"--trusted runs the strategy without the sandbox (your own code only).\n"
		"See docs/challenges.md and docs/sdk.md.\n");
}

/* Parse a finite number in [lo, hi]; 0 or -1. */
static int ev_num(const char *s, double lo, double hi, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

/* Parse argv; 0, or an exit status (help: -1). */
static int ev_parse(int argc, char **argv, struct ev_opts *o)
{
	static const struct option lo[] = {
		{ "challenge", required_argument, NULL, 'c' }, { "strategy", required_argument, NULL, 's' },
		{ "dataset", required_argument, NULL, 'd' }, { "days-back", required_argument, NULL, 'b' },
		{ "holdout-days", required_argument, NULL, 'H' }, { "mode", required_argument, NULL, 'm' },
		{ "dev-only", no_argument, NULL, 'D' }, { "trusted", no_argument, NULL, 'T' },
		{ "split", no_argument, NULL, 'S' }, { "dev-fd", required_argument, NULL, 'F' },
		{ "cpu-seconds", required_argument, NULL, 'C' }, { "memory-mb", required_argument, NULL, 'M' },
		{ "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	*o = (struct ev_opts){ .days_back = 60, .holdout_days = 20, .mode = CH_MODE_STRICT,
			       .dataset = getenv("DATASET_DIR"), .dev_fd = -1 };
	int ch;
	optind = 1;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (ch) {
		case 'c': o->challenge = optarg; break;
		case 's': o->strategy = optarg; break;
		case 'd': o->dataset = optarg; break;
		case 'D': o->dev_only = 1; break;
		case 'S': o->split = 1; break;
		case 'F': {
			double fd;
			/* close-on-exec: the line is the trusted side's, never the strategy host's */
			if (ev_num(optarg, 3, 65535, &fd) < 0 || fd != floor(fd) || fcntl((int)fd, F_SETFD, FD_CLOEXEC) < 0)
				return cli_error(CLI_USAGE, "invalid_field", "--dev-fd needs an open descriptor number >= 3");
			o->dev_fd = (int)fd;
			break;
		}
		case 'T': o->trusted = 1; break;
		case 'b':
			if (ev_num(optarg, 0, 3650, &o->days_back) < 0)
				return cli_error(CLI_USAGE, "invalid_field", "--days-back needs a number of days in [0, 3650]");
			break;
		case 'H':
			if (ev_num(optarg, 0, 3650, &o->holdout_days) < 0)
				return cli_error(CLI_USAGE, "invalid_field", "--holdout-days needs a number of days in [0, 3650]");
			break;
		case 'm':
			if ((o->mode = ch_mode_parse(optarg)) < 0)
				return cli_error(CLI_USAGE, "invalid_field", "--mode must be strict or mantis");
			break;
		case 'C':
			if (ev_num(optarg, 1, 86400, &o->cpu_seconds) < 0)
				return cli_error(CLI_USAGE, "invalid_field", "--cpu-seconds needs a number in [1, 86400]");
			break;
		case 'M':
			if (ev_num(optarg, 64, 65536, &o->memory_mb) < 0)
				return cli_error(CLI_USAGE, "invalid_field", "--memory-mb needs a number in [64, 65536]");
			break;
		case 'h':
			ev_usage(stdout);
			return -1;
		default:
			ev_usage(stderr);
			return cli_error(CLI_USAGE, "bad_request", "unknown or incomplete option '%s'", argv[optind - 1]);
		}
	}
	if (optind != argc)
		return cli_error(CLI_USAGE, "bad_request", "unexpected argument '%s'", argv[optind]);
	if (!o->challenge || !o->strategy) {
		ev_usage(stderr);
		return cli_error(CLI_USAGE, "missing_field", "--challenge and --strategy are required");
	}
	if (o->dev_only && o->split)
		return cli_error(CLI_USAGE, "bad_request", "--dev-only and --split exclude each other");
	if (o->dev_fd >= 0 && !o->split)
		return cli_error(CLI_USAGE, "bad_request", "--dev-fd needs --split");
	if (!o->dataset || !*o->dataset)
		return cli_error(CLI_USAGE, "missing_field", "--dataset (or $DATASET_DIR) is required");
	return 0;
}

/* stream_eval_opts.on_dev: the dev line on --dev-fd (arg: the fd), written
 * whole, then the fd is closed. A failed write loses the line (a reader
 * that went away: SIGPIPE ends this process, as on stdout). */
static void ev_dev_line(void *arg, json_object *dev, size_t dev_bars, size_t holdout_bars)
{
	int *fd = arg;
	json_object *o = json_object_new_object();
	json_object_object_add(o, "dev_bars", json_object_new_int64((int64_t)dev_bars));
	json_object_object_add(o, "holdout_bars", json_object_new_int64((int64_t)holdout_bars));
	json_object_object_add(o, "dev", json_object_get(dev));
	const char *text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	size_t len = strlen(text), done = 0;
	while (done <= len) {   /* the text, then its newline */
		const char *p = done < len ? text + done : "\n";
		ssize_t n = write(*fd, p, done < len ? len - done : 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		done += (size_t)n;
	}
	json_object_put(o);
	close(*fd);
	*fd = -1;
}

int cmd_evaluate(int argc, char **argv)
{
	struct ev_opts o;
	char msg[512];
	char *code = NULL;
	size_t code_len = 0;
	struct dataset *ds = NULL;
	json_object *out = NULL;
	struct sbx_box_lease box = SBX_BOX_LEASE_INIT;
	int rc = ev_parse(argc, argv, &o);
	if (rc != 0)
		return rc < 0 ? CLI_OK : rc;
	if (cli_read_strategy(o.strategy, STREAM_MAX_CODE, &code, &code_len) != 0) {
		rc = CLI_FAILED;
		goto out;
	}
	if (!o.trusted && sbx_box_acquire(&box, msg, sizeof msg) != 0) {
		rc = cli_error(CLI_INTERNAL, "internal", "%s", msg);
		goto out;
	}
	enum ds_err de;
	ds = ds_open(o.dataset, 0, &de, msg, sizeof msg);
	if (!ds) {
		rc = cli_error(CLI_FAILED, ds_errcode(de), "%s: %s", o.dataset, msg);
		goto out;
	}
	struct stream_eval_opts eo = {
		.challenge = o.challenge, .mode = (enum ch_mode)o.mode, .days_back = o.days_back,
		.holdout_days = o.holdout_days, .dev_only = o.dev_only, .split = o.split, .code = code, .code_len = code_len,
		/* a box number leased on this machine, as backtest: concurrent
		 * evaluations (agent scoring) must not share a uid and cgroup */
		.sbx = { .mode = o.trusted ? SBX_TRUSTED : SBX_CONFINED, .box_id = box.box_id },
		.on_dev = o.dev_fd >= 0 ? ev_dev_line : NULL, .on_dev_arg = &o.dev_fd,
	};
	eo.sbx.limits.cpu_seconds = o.cpu_seconds;
	eo.sbx.limits.memory_bytes = (uint64_t)(o.memory_mb * 1048576.0);
	enum ev_err e = stream_evaluate(ds, &eo, &out);
	const char *text = json_object_to_json_string_ext(out, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	if (e != EV_OK) {
		fprintf(stderr, "%s\n", text);
		rc = e == EV_INTERNAL ? CLI_INTERNAL : CLI_FAILED;
	} else {
		printf("%s\n", text);
		rc = CLI_OK;
	}
out:
	sbx_box_release(&box);
	json_object_put(out);
	if (ds)
		ds_close(ds);
	free(code);
	return rc;
}
