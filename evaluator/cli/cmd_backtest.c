/*
 * agenttest backtest: run one strategy over one dataset, like the original's
 * `python -m worker.run_backtest`, with the contract enforced.
 *
 *   agenttest backtest --strategy FILE --dataset DIR [--dataset-version V]
 *       [--asset NAME] [--params JSON] [--kind auto|simulate|positions]
 *       [--fee-bps X] [--max-leverage X] [--audit] [--trusted] [--verify]
 *       [--artifacts DIR | --no-artifacts] [--cpu-seconds S] [--memory-mb M]
 *
 * Prints the run result as one JSON object on stdout (run_id,
 * dataset_version, dataset_hash, code_hash, config_hash, metrics, audit,
 * artifacts_dir, ...) and writes <artifacts>/<run_id>/equity.csv (plus
 * positions.csv and host.log when there is something to put in them). A
 * failed run prints {"error","code","detail",...} on stderr and exits 1;
 * usage errors exit 2, internal ones 3.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>
#include <sodium.h>

#include "evaluator/runner/drive/backtest.h"
#include "evaluator/canon_json.h"
#include "evaluator/cli/commands.h"
#include "evaluator/dataset.h"
#include "evaluator/hashes.h"
#include "evaluator/runner/drive/protocol.h"
#include "evaluator/pyrepr.h"
#include "sandbox/box_lease.h"
#include "xalloc.h"

int cmd_backtest(int argc, char **argv);

struct bt_opts {
	const char  *strategy, *dataset, *version, *asset, *params, *artifacts;
	enum bt_kind kind;
	double       fee_bps, max_leverage, cpu_seconds, memory_mb;
	int          audit, trusted, verify, no_artifacts;
};

/* Usage text on out. */
static void bt_usage(FILE *out)
{
	fprintf(out,
		"usage: agenttest backtest --strategy FILE --dataset DIR [--dataset-version V]\n"
		"           [--asset NAME] [--params JSON] [--kind auto|simulate|positions]\n"
		"           [--fee-bps X] [--max-leverage X] [--audit] [--trusted] [--verify]\n"
		"           [--artifacts DIR | --no-artifacts] [--cpu-seconds S] [--memory-mb M]\n"
		"--dataset takes a dataset directory or a directory holding prices.csv.\n"
		"--dataset-version defaults to the dataset's label, else $DATASET_VERSION, else v1.\n"
		"--trusted runs the strategy without the sandbox (your own code only).\n"
		"See docs/strategies.md for the strategy contracts and the audit.\n");
}

/* Parse a finite double with full consumption; 0 or -1. */
static int bt_parse_double(const char *s, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v))
		return -1;
	*out = v;
	return 0;
}

/* Parse argv into o; returns 0, or the exit status for a usage error/help. */
static int bt_parse(int argc, char **argv, struct bt_opts *o)
{
	static const struct option lo[] = {
		{ "strategy", required_argument, NULL, 's' }, { "dataset", required_argument, NULL, 'd' },
		{ "dataset-version", required_argument, NULL, 'V' }, { "asset", required_argument, NULL, 'a' },
		{ "params", required_argument, NULL, 'p' }, { "kind", required_argument, NULL, 'k' },
		{ "fee-bps", required_argument, NULL, 'f' }, { "max-leverage", required_argument, NULL, 'L' },
		{ "audit", no_argument, NULL, 'A' }, { "trusted", no_argument, NULL, 'T' },
		{ "verify", no_argument, NULL, 'Y' }, { "artifacts", required_argument, NULL, 'o' },
		{ "cpu-seconds", required_argument, NULL, 'c' }, { "memory-mb", required_argument, NULL, 'm' },
		{ "no-artifacts", no_argument, NULL, 'N' },
		{ "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	*o = (struct bt_opts){ .fee_bps = ENGINE_DEFAULT_FEE_BPS, .max_leverage = ENGINE_DEFAULT_MAX_LEVERAGE,
			       .artifacts = "run_artifacts" };
	int ch, k;
	optind = 1;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (ch) {
		case 's': o->strategy = optarg; break;
		case 'd': o->dataset = optarg; break;
		case 'V': o->version = optarg; break;
		case 'a': o->asset = optarg; break;
		case 'p': o->params = optarg; break;
		case 'o': o->artifacts = optarg; break;
		case 'A': o->audit = 1; break;
		case 'T': o->trusted = 1; break;
		case 'Y': o->verify = 1; break;
		case 'N': o->no_artifacts = 1; break;
		case 'k':
			if ((k = bt_kind_parse(optarg)) < 0)
				return cli_error(CLI_USAGE, "invalid_field", "--kind must be auto, simulate or positions");
			o->kind = (enum bt_kind)k;
			break;
		case 'f':
			if (bt_parse_double(optarg, &o->fee_bps) < 0)
				return cli_error(CLI_USAGE, "invalid_field", "--fee-bps needs a number");
			break;
		case 'L':
			if (bt_parse_double(optarg, &o->max_leverage) < 0)
				return cli_error(CLI_USAGE, "invalid_field", "--max-leverage needs a number");
			break;
		case 'c':
			if (bt_parse_double(optarg, &o->cpu_seconds) < 0 || o->cpu_seconds <= 0 || o->cpu_seconds > 86400)
				return cli_error(CLI_USAGE, "invalid_field", "--cpu-seconds needs a number in (0, 86400]");
			break;
		case 'm':
			if (bt_parse_double(optarg, &o->memory_mb) < 0 || o->memory_mb < 16 || o->memory_mb > 65536)
				return cli_error(CLI_USAGE, "invalid_field", "--memory-mb needs a number in [16, 65536]");
			break;
		case 'h':
			bt_usage(stdout);
			return -CLI_OK - 1;
		default:
			bt_usage(stderr);
			return cli_error(CLI_USAGE, "bad_request", "unknown or incomplete option '%s'", argv[optind - 1]);
		}
	}
	if (optind != argc)
		return cli_error(CLI_USAGE, "bad_request", "unexpected argument '%s'", argv[optind]);
	if (!o->strategy || !o->dataset) {
		bt_usage(stderr);
		return cli_error(CLI_USAGE, "missing_field", "--strategy and --dataset are required");
	}
	return 0;
}

/* A random UUID4 in out (37 bytes). */
static void bt_uuid4(char out[37])
{
	unsigned char b[16];
	randombytes_buf(b, sizeof b);
	b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
	b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
	snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

/* mkdir -p for a relative or absolute path; 0 or -1. */
static int bt_mkdirs(const char *path)
{
	char tmp[4096];
	int n = snprintf(tmp, sizeof tmp, "%s", path);
	if (n < 0 || (size_t)n >= sizeof tmp)
		return -1;
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	return mkdir(tmp, 0755) < 0 && errno != EEXIST ? -1 : 0;
}

/* Format rows [from, to) of "step,value\n" into b (Python-repr floats). */
static void bt_csv_rows(struct buf *b, const double *v, size_t from, size_t to)
{
	for (size_t i = from; i < to; i++) {
		buf_reserve(b, 24 + PYREPR_MAX + 2);
		char *out = b->data + b->len;
		char num[24];
		size_t nl = 0, len = 0, x = i;
		do {
			num[nl++] = (char)('0' + x % 10);
			x /= 10;
		} while (x);
		while (nl)
			out[len++] = num[--nl];
		out[len++] = ',';
		len += pyrepr_double(v[i], out + len);
		out[len++] = '\n';
		b->len += len;
	}
	if (b->data)
		b->data[b->len] = '\0';
}

struct bt_csv_part {
	const double *v;
	size_t        from, to;
	struct buf    out;
};

/* Thread body: format one part. */
static void *bt_csv_thread(void *arg)
{
	struct bt_csv_part *p = arg;
	bt_csv_rows(&p->out, p->v, p->from, p->to);
	return NULL;
}

/*
 * Write "step,<col>" CSV of v[0..n) to dir/name with Python-repr floats.
 * Long series are formatted in two halves on two threads (formatting, not
 * the disk, is the cost) and written in order.
 */
static int bt_write_csv(const char *dir, const char *name, const char *col, const double *v, size_t n)
{
	char path[4200];
	int k = snprintf(path, sizeof path, "%s/%s", dir, name);
	if (k < 0 || (size_t)k >= sizeof path)
		return -1;
	FILE *f = fopen(path, "we");
	if (!f)
		return -1;
	struct bt_csv_part second = { .v = v, .from = n, .to = n, .out = BUF_INIT };
	pthread_t th;
	int threaded = 0;
	if (n >= 200000) {
		second.from = n / 2;
		threaded = pthread_create(&th, NULL, bt_csv_thread, &second) == 0;
		if (!threaded)
			second.from = n;
	}
	int rc = fprintf(f, "step,%s\n", col) < 0 ? -1 : 0;
	struct buf b = BUF_INIT;
	enum { CHUNK = 1 << 16, ROWS = CHUNK / 48 };
	for (size_t i = 0; i < second.from; i += ROWS) {
		size_t to = i + ROWS < second.from ? i + ROWS : second.from;
		buf_reset(&b);
		bt_csv_rows(&b, v, i, to);
		if (rc == 0 && fwrite(b.data, 1, b.len, f) != b.len)
			rc = -1;
	}
	if (threaded) {
		pthread_join(th, NULL);
		if (rc == 0 && second.out.len && fwrite(second.out.data, 1, second.out.len, f) != second.out.len)
			rc = -1;
	}
	buf_free(&b);
	buf_free(&second.out);
	if (fclose(f) != 0)
		rc = -1;
	return rc;
}

/* Append "key": hex-string. */
static void bt_kv_str(struct buf *b, const char *key, const char *v, int first)
{
	if (!first)
		buf_putc(b, ',');
	cj_write_string(b, key, strlen(key));
	buf_putc(b, ':');
	cj_write_string(b, v, strlen(v));
}

/* Append "key": number. */
static void bt_kv_num(struct buf *b, const char *key, double v)
{
	buf_putc(b, ',');
	cj_write_string(b, key, strlen(key));
	buf_putc(b, ':');
	cj_write_double(b, v);
}

/* The audit part of the result. */
static void bt_audit_json(struct buf *b, const struct bt_audit *a)
{
	if (!a->performed) {
		buf_puts(b, "null");
		return;
	}
	buf_printf(b, "{\"performed\":true,\"passed\":%s,\"cuts\":[", a->passed ? "true" : "false");
	for (size_t i = 0; i < a->n_cuts; i++)
		buf_printf(b, "%s%zu", i ? "," : "", a->cuts[i]);
	buf_printf(b, "],\"runs\":%zu}", a->runs);
}

/* Print the error of a failed run on stderr; returns the exit status. */
static int bt_print_error(const struct bt_result *res)
{
	json_object *o = bt_error_json(res);
	struct buf b = BUF_INIT;
	char err[128];
	if (cj_write(&b, o, err, sizeof err) < 0) {
		buf_reset(&b);
		buf_puts(&b, json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	}
	fprintf(stderr, "%s\n", buf_cstr(&b));
	buf_free(&b);
	json_object_put(o);
	return res->err == EV_INTERNAL ? CLI_INTERNAL : CLI_FAILED;
}

struct bt_run_ctx {
	struct bt_opts   o;
	struct sbx_box_lease box;   /* leased for a confined run */
	struct dataset  *ds;
	char            *code;
	size_t           code_len;
	json_object     *params;
	struct buf       params_canon;
	const char      *version;
	const char      *asset;
	char             code_hash[HASH_HEX_LEN + 1];
	char             config_hash[HASH_HEX_LEN + 1];
	char             run_id[37];
	char             artdir[4096];
	int              art_rc;     /* exit status of the artifact writer, -1: not run */
	double           art_s;      /* seconds spent writing artifacts */
};

/* Open the dataset, pick the asset and the version label. 0 or exit status. */
static int bt_prepare_dataset(struct bt_run_ctx *x)
{
	enum ds_err de;
	char msg[600];
	x->ds = ds_open_any(x->o.dataset, x->o.verify, x->o.asset, &de, msg, sizeof msg);
	if (!x->ds)
		return cli_error(CLI_FAILED, ds_errcode(de), "%s: %s", x->o.dataset, msg);
	long ai = 0;
	if (x->o.asset) {
		ai = ds_asset_index(x->ds, x->o.asset);
		if (ai < 0)
			return cli_error(CLI_FAILED, "invalid_field", "asset %s is not in the dataset", x->o.asset);
	}
	x->asset = ds_asset_name(x->ds, (size_t)ai);
	if (!ds_column(x->ds, (size_t)ai, DS_CLOSE))
		return cli_error(CLI_FAILED, "dataset_error", "the dataset has no close prices for %s", x->asset);
	const char *label = ds_version(x->ds);
	if (label && label[0]) {
		if (x->o.version && strcmp(x->o.version, label) != 0)
			return cli_error(CLI_FAILED, "conflict", "the dataset at %s is version %s, not %s",
					 x->o.dataset, label, x->o.version);
		x->version = label;
	} else {
		const char *env = getenv("DATASET_VERSION");
		x->version = x->o.version ? x->o.version : (env && env[0]) ? env : "v1";
	}
	return 0;
}

/* Read the code, parse params. 0 or exit status. */
static int bt_prepare_inputs(struct bt_run_ctx *x)
{
	char msg[600];
	if (cli_read_strategy(x->o.strategy, BT_MAX_CODE, &x->code, &x->code_len) != 0)
		return CLI_FAILED;
	hash_code(x->code, x->code_len, x->code_hash);
	const char *p = x->o.params ? x->o.params : "{}";
	if (cj_parse(p, strlen(p), &x->params, msg, sizeof msg) < 0)
		return cli_error(CLI_USAGE, "invalid_json", "--params: %s", msg);
	if (!json_object_is_type(x->params, json_type_object))
		return cli_error(CLI_USAGE, "invalid_field", "--params must be a JSON object");
	if (cj_write(&x->params_canon, x->params, msg, sizeof msg) < 0)
		return cli_error(CLI_USAGE, "invalid_field", "--params: %s", msg);
	return 0;
}

/* config_hash, now that the kind is known. 0 or exit status. */
static int bt_config_hash(struct bt_run_ctx *x, enum bt_kind kind)
{
	char msg[256];
	json_object *eng = NULL;
	if (kind == BT_KIND_POSITIONS) {
		eng = json_object_new_object();
		json_object_object_add(eng, "fee_bps", json_object_new_double(x->o.fee_bps));
		json_object_object_add(eng, "max_leverage", json_object_new_double(x->o.max_leverage));
	}
	int rc = hash_config(x->version, x->params, eng, x->config_hash, NULL, msg, sizeof msg);
	json_object_put(eng);
	if (rc < 0)
		return cli_error(CLI_USAGE, "invalid_field", "%s", msg);
	return 0;
}

/* Write equity.csv, positions.csv and host.log. 0 or exit status. */
static int bt_write_artifacts(struct bt_run_ctx *x, const struct bt_result *res)
{
	if (x->o.no_artifacts)
		return 0;
	int n = snprintf(x->artdir, sizeof x->artdir, "%s/%s", x->o.artifacts, x->run_id);
	if (n < 0 || (size_t)n >= sizeof x->artdir || bt_mkdirs(x->artdir) < 0)
		return cli_error(CLI_INTERNAL, "internal", "cannot create the artifacts directory %s", x->artdir);
	if (bt_write_csv(x->artdir, "equity.csv", "equity", res->equity, res->n) < 0 ||
	    (res->positions && bt_write_csv(x->artdir, "positions.csv", "position", res->positions, res->n) < 0))
		return cli_error(CLI_INTERNAL, "internal", "cannot write artifacts under %s", x->artdir);
	return 0;
}

/* Keep the tail of the host's stderr next to the equity (best effort). */
static void bt_write_log(struct bt_run_ctx *x, const struct bt_result *res)
{
	if (!res->log_tail[0] || x->o.no_artifacts)
		return;
	char path[4200];
	int n = snprintf(path, sizeof path, "%s/host.log", x->artdir);
	if (n < 0 || (size_t)n >= sizeof path)
		return;
	FILE *f = fopen(path, "we");
	if (f) {
		fputs(res->log_tail, f);
		fclose(f);
	}
}

/* on_output hook: write the artifacts while the host exits. */
static void bt_on_output(void *arg, const struct bt_result *res)
{
	struct bt_run_ctx *x = arg;
	double t = proto_now();
	x->art_rc = bt_write_artifacts(x, res);
	x->art_s = proto_now() - t;
}

/* Remove the artifacts of a run that failed after they were written. */
static void bt_remove_artifacts(struct bt_run_ctx *x)
{
	static const char *const names[] = { "equity.csv", "positions.csv", "host.log" };
	char path[4200];
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		snprintf(path, sizeof path, "%s/%s", x->artdir, names[i]);
		(void)unlink(path);
	}
	(void)rmdir(x->artdir);
}

/* Print the run result on stdout. */
static void bt_print_result(struct bt_run_ctx *x, const struct bt_result *res, double cli_s)
{
	struct buf b = BUF_INIT;
	buf_putc(&b, '{');
	bt_kv_str(&b, "run_id", x->run_id, 1);
	bt_kv_str(&b, "dataset_version", x->version, 0);
	bt_kv_str(&b, "dataset_hash", ds_hash(x->ds), 0);
	bt_kv_str(&b, "code_hash", x->code_hash, 0);
	bt_kv_str(&b, "config_hash", x->config_hash, 0);
	bt_kv_str(&b, "strategy_kind", bt_kind_name(res->kind), 0);
	bt_kv_str(&b, "asset", x->asset, 0);
	buf_printf(&b, ",\"bars\":%zu", res->n);
	bt_kv_num(&b, "bars_per_year", ds_bars_per_year(x->ds));
	if (res->kind == BT_KIND_POSITIONS) {
		buf_puts(&b, ",\"engine\":{\"fee_bps\":");
		cj_write_double(&b, x->o.fee_bps);
		buf_puts(&b, ",\"max_leverage\":");
		cj_write_double(&b, x->o.max_leverage);
		buf_printf(&b, ",\"clamped_positions\":%zu}", res->engine.clamped);
	}
	buf_puts(&b, ",\"metrics\":");
	metrics_to_json(&res->metrics, &b);
	buf_puts(&b, ",\"audit\":");
	bt_audit_json(&b, &res->audit);
	if (x->o.no_artifacts)
		buf_puts(&b, ",\"artifacts_dir\":null");
	else
		bt_kv_str(&b, "artifacts_dir", x->artdir, 0);
	bt_kv_str(&b, "sandbox", x->o.trusted ? "trusted" : "confined", 0);
	double py = res->timing.startup_s + res->timing.load_s + res->timing.host_s + res->timing.shutdown_s;
	buf_puts(&b, ",\"timing\":{\"cli_s\":");
	cj_write_double(&b, cli_s);
	bt_kv_num(&b, "startup_s", res->timing.startup_s);
	bt_kv_num(&b, "load_s", res->timing.load_s);
	bt_kv_num(&b, "host_s", res->timing.host_s);
	bt_kv_num(&b, "audit_s", res->timing.audit_s);
	bt_kv_num(&b, "shutdown_s", res->timing.shutdown_s);
	bt_kv_num(&b, "artifacts_s", x->art_s);
	bt_kv_num(&b, "python_s", py);
	bt_kv_num(&b, "overhead_s", cli_s - py);
	/* CPU seconds: robust on a busy machine, where wall splits are not */
	struct rusage ru;
	double c_cpu = 0;
	if (getrusage(RUSAGE_SELF, &ru) == 0)
		c_cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
			(double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
	bt_kv_num(&b, "python_cpu_s", res->verdict.cpu_seconds);
	bt_kv_num(&b, "c_cpu_s", c_cpu);
	buf_puts(&b, "}}\n");
	fwrite(b.data, 1, b.len, stdout);
	buf_free(&b);
}

/* Run the backtest described by x->o. Returns the exit status. */
static int bt_execute(struct bt_run_ctx *x, double t0)
{
	int rc = bt_prepare_dataset(x);
	if (rc == 0)
		rc = bt_prepare_inputs(x);
	if (rc != 0)
		return rc;
	bt_uuid4(x->run_id);
	char berr[256];
	if (!x->o.trusted && sbx_box_acquire(&x->box, berr, sizeof berr) != 0)
		return cli_error(CLI_INTERNAL, "internal", "%s", berr);
	long ai = x->o.asset ? ds_asset_index(x->ds, x->o.asset) : 0;
	struct bt_request rq = {
		.code = x->code, .code_len = x->code_len, .kind = x->o.kind,
		.prices = ds_column(x->ds, (size_t)ai, DS_CLOSE), .n = ds_bars(x->ds),
		.params_json = buf_cstr(&x->params_canon), .bars_per_year = ds_bars_per_year(x->ds),
		.engine = { .fee_bps = x->o.fee_bps, .max_leverage = x->o.max_leverage },
		.audit = x->o.audit,
		/* a box number leased on this machine (sandbox/box_lease.h):
		 * a uid and cgroup no concurrent run shares */
		.sbx = { .mode = x->o.trusted ? SBX_TRUSTED : SBX_CONFINED,
			 .box_id = x->box.box_id,
			 .limits = { .cpu_seconds = x->o.cpu_seconds,
				     .memory_bytes = (uint64_t)(x->o.memory_mb * 1048576.0) } },
	};
	memcpy(&rq.audit_seed, x->code_hash, sizeof rq.audit_seed);
	rq.on_output = bt_on_output;
	rq.on_output_arg = x;
	x->art_rc = -1;
	struct bt_result res;
	if (bt_run(&rq, &res) != EV_OK) {
		if (x->art_rc >= 0 && !x->o.no_artifacts)
			bt_remove_artifacts(x);
		rc = bt_print_error(&res);
	} else if ((rc = bt_config_hash(x, res.kind)) == 0) {
		/* like the original: runtime_s covers everything but the artifacts */
		metrics_set(&res.metrics, MET_RUNTIME_S, proto_now() - t0 - (x->art_s > 0 ? x->art_s : 0));
		if (x->art_rc < 0)
			bt_on_output(x, &res);
		if ((rc = x->art_rc) == 0) {
			bt_write_log(x, &res);
			bt_print_result(x, &res, proto_now() - t0);
		}
	}
	bt_result_free(&res);
	return rc;
}

int cmd_backtest(int argc, char **argv)
{
	double t0 = proto_now();
	struct bt_run_ctx x = { .params_canon = BUF_INIT, .box = SBX_BOX_LEASE_INIT };
	int rc = bt_parse(argc, argv, &x.o);
	if (rc != 0)
		return rc < 0 ? CLI_OK : rc;
	if (sodium_init() < 0)
		return cli_error(CLI_INTERNAL, "internal", "libsodium initialisation failed");
	signal(SIGPIPE, SIG_IGN);
	rc = bt_execute(&x, t0);
	sbx_box_release(&x.box);
	ds_close(x.ds);
	free(x.code);
	json_object_put(x.params);
	buf_free(&x.params_canon);
	return rc;
}
