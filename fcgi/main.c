/*
 * agenttest-fcgi: the FastCGI application server (master + prefork workers).
 *
 *   agenttest-fcgi [--config FILE] [--socket PATH|HOST:PORT] [--workers N] [--check-config]
 *
 * --check-config loads and validates the configuration (including the
 * MANTIS_HOST / authentication rule and the MANTIS_AUTH_TOKEN strength rule,
 * and the secret file if it exists) and exits 0, or prints one JSON error
 * line on stderr and exits 1. Without it the master starts (see pool.c);
 * logs are JSON lines on stderr.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <json-c/json.h>
#include <sodium.h>

#include "common/config.h"
#include "common/parse.h"
#include "common/secret.h"
#include "fcgi/app.h"

/* Print {"error","code","detail"} on one line of stderr; returns 1. */
static int main_fail(const char *code, const char *msg)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "error", json_object_new_string(msg));
	json_object_object_add(o, "code", json_object_new_string(code));
	json_object_object_add(o, "detail", json_object_new_string(msg));
	fprintf(stderr, "%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
	return 1;
}

/* --check-config. */
static int main_check(const struct pool_opts *o)
{
	struct config cfg;
	struct buf err = BUF_INIT;
	struct stat st;
	unsigned char key[SECRET_BYTES];
	int rc = 0;

	if (!config_load(&cfg, o->config_path, &err))
		goto fail;
	if (!config_validate(&cfg, &err))
		goto fail_cfg;
	const char *sock = o->socket ? o->socket : cfg.fcgi_socket;
	if (sock[0] != '/' && strchr(sock, ':') == NULL) {
		buf_printf(&err, "socket must be an absolute path or HOST:PORT, not %s", sock);
		goto fail_cfg;
	}
	if (stat(cfg.secret_file, &st) == 0) {
		if (!secret_load(cfg.secret_file, false, key, &err))
			goto fail_cfg;
		sodium_memzero(key, sizeof key);
	}
	printf("configuration ok\n");
	config_free(&cfg);
	buf_free(&err);
	return 0;
fail_cfg:
	config_free(&cfg);
fail:
	rc = main_fail("invalid_config", buf_cstr(&err));
	buf_free(&err);
	return rc;
}

/* Usage on out. */
static void main_usage(FILE *out)
{
	fprintf(out, "usage: agenttest-fcgi [--config FILE] [--socket PATH|HOST:PORT] [--workers N] [--check-config]\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "socket", required_argument, NULL, 's' },
		{ "workers", required_argument, NULL, 'w' },
		{ "check-config", no_argument, NULL, 'k' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct pool_opts o = { 0 };
	bool check = false;
	int64_t n;
	int c;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'c': o.config_path = optarg; break;
		case 's': o.socket = optarg; break;
		case 'w':
			if (!parse_int(optarg, strlen(optarg), 1, 256, &n))
				return main_fail("invalid_config", "--workers must be an integer from 1 to 256");
			o.workers = (long)n;
			break;
		case 'k': check = true; break;
		case 'V': printf("agenttest-fcgi %s (%s)\n", AGENTTEST_VERSION, AGENTTEST_COMMIT); return 0;
		case 'h': main_usage(stdout); return 0;
		default: main_usage(stderr); return 2;
		}
	}
	if (optind != argc) {
		main_usage(stderr);
		return 2;
	}
	if (sodium_init() < 0)
		return main_fail("internal", "libsodium failed to initialise");
	if (check)
		return main_check(&o);
	return pool_run(&o);
}
