#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "parse.h"
#include "strength.h"
#include "xalloc.h"

/* Keys any agenttest component reads; anything else draws a warning. */
static const char *const config_known[] = {
	"DATABASE_URL", "AGENTTEST_SECRET_FILE", "AGENTTEST_FCGI_SOCKET", "AGENTTEST_WORKERS",
	"AGENTTEST_BODY_LIMIT", "AGENTTEST_AUTH", "AGENTTEST_SQL_DIR", "MANTIS_AUTH_TOKEN",
	"MANTIS_HOST", "MANTIS_PORT", "MANTIS_LOG_LEVEL", "MANTIS_RATE_LIMIT_RPM", "MANTIS_WORKERS",
	"DATASET_VERSION", "DATASET_DIR", "STRATEGIES_DIR",
	"AGENTTEST_RUNNER_SLOTS", "AGENTTEST_SANDBOX", "AGENTTEST_DATA_DIR", "AGENTTEST_VAR_DIR",
	"RUNNER_NOTIFY_DIR", "RUNNER_POLL_MS", "TRUSTED_STRATEGY_DIRS", "RUNS_MAX_QUEUED", "ARTIFACTS_DIR",
	"RUNS_MAX_WAITS", "RUNS_MAX_WAITS_PER_USER",
	"AGENTTEST_SYNTH_DAYS", "AGENTTEST_CHECK_SOCKET", "AGENTTEST_CHECK_CONCURRENCY",
	"AGENTTEST_RUN_CPU_SECONDS", "AGENTTEST_RUN_WALL_SECONDS", "AGENTTEST_RUN_MEMORY_MB",
	"AGENTTEST_ALLOWED_HOSTS",
	"MANTIS_PREFETCH_WINDOWS", "MANTIS_DATA_KEEP_VERSIONS", /* market data (issue 13) */
	"MANTIS_FETCH_BACKOFF_MS",   /* prefetch back-off (issue 18: paper trading tests) */
	"BINANCE_API_URLS",          /* the ping-and-fallback endpoint list (issue 13) */
	/* scripts/stack.sh (docs/configuration.md, "Stack") */
	"AGENTTEST_VAR", "AGENTTEST_BIN", "AGENTTEST_RATE_BURST", "AGENTTEST_NGINX_WORKERS",
	"AGENTTEST_NGINX_KEEPALIVE", "AGENTTEST_NGINX_ACCESS_LOG", "AGENTTEST_DB_BUFFER_POOL",
	/* research agents (issue 15, docs/agents.md) */
	"MANTIS_MAX_AGENTS", "MANTIS_PAUSE_TIMEOUT", "MANTIS_CLAUDE_TIMEOUT", "MANTIS_ITER_WALL_TIMEOUT",
	"MANTIS_CONTAINER_MEM_PCT", "AGENTTEST_AGENTS_DIR",
	/* LLM agents (issue 16, docs/agents.md) */
	"AGENTTEST_ANTHROPIC_UPSTREAM", "AGENTTEST_LLM_PRICES", "AGENTTEST_AGENT_COMMAND", "AGENTTEST_CLAUDE_CODE_DIR",
	"AGENTTEST_LLM_AGENT_TOKENS", "AGENTTEST_LLM_AGENT_USD", "AGENTTEST_LLM_AGENT_REQUESTS",
	"AGENTTEST_LLM_OWNER_DAY_TOKENS", "AGENTTEST_LLM_OWNER_DAY_USD", "AGENTTEST_LLM_OWNER_DAY_REQUESTS",
	NULL,
};

/*
 * Keys of the original MANTIS that agenttest accepts but whose feature is
 * not built yet. `effective` is the one flag to flip when the feature that
 * reads the key lands (and then move the key to config_known); until then
 * setting the key logs that it has no effect, so nobody believes it works.
 */
static const struct {
	const char *key;
	bool        effective;
	const char *what;
} config_pending[] = {
	{ "MANTIS_DATA_DIR",          true,  "market data download" },
	{ "BINANCE_API_URL",          true,  "market data download" },
	{ "COINGLASS_API_URL",        true,  "market data download" },
	{ NULL, false, NULL },
};

/* True if key is one of config_pending. */
static bool config_is_pending(const char *key)
{
	for (size_t i = 0; config_pending[i].key; i++)
		if (strcmp(config_pending[i].key, key) == 0)
			return true;
	return false;
}

/* Log once per load, for every pending key that is set (file or
 * environment) and not yet effective, that it has no effect. */
static void config_warn_pending(const struct config *cfg)
{
	for (size_t i = 0; config_pending[i].key; i++) {
		const char *v = config_get(cfg, config_pending[i].key);
		if (v != NULL && !config_pending[i].effective)
			log_msg(LOG_LVL_WARNING, "config_no_effect",
			        "%s is set but has no effect yet (%s is not implemented in agenttest)",
			        config_pending[i].key, config_pending[i].what);
	}
}

/* True if key is in config_known. */
static bool config_is_known(const char *key)
{
	for (const char *const *k = config_known; *k; k++)
		if (strcmp(*k, key) == 0)
			return true;
	return false;
}

/* True for a key spelled [A-Z][A-Z0-9_]*, at most 64 characters. */
static bool config_key_ok(const char *s, size_t n)
{
	if (n == 0 || n > 64 || !(s[0] >= 'A' && s[0] <= 'Z'))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
			return false;
	return true;
}

/* Trim ASCII spaces and tabs from both ends of [*s, *s + *n). */
static void config_trim(const char **s, size_t *n)
{
	while (*n > 0 && ((*s)[0] == ' ' || (*s)[0] == '\t')) {
		(*s)++;
		(*n)--;
	}
	while (*n > 0 && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t' || (*s)[*n - 1] == '\r'))
		(*n)--;
}

/* Parse one non-comment line; appends to cfg->raw. */
static bool config_line(struct config *cfg, const char *name, size_t lineno,
                        const char *s, size_t n, struct buf *err)
{
	const char *eq = memchr(s, '=', n);
	if (eq == NULL) {
		buf_printf(err, "%s:%zu: expected KEY = value", name, lineno);
		return false;
	}
	const char *k = s, *v = eq + 1;
	size_t kn = (size_t)(eq - s), vn = n - kn - 1;
	config_trim(&k, &kn);
	config_trim(&v, &vn);
	if (!config_key_ok(k, kn)) {
		buf_printf(err, "%s:%zu: invalid key (use A-Z, 0-9 and _)", name, lineno);
		return false;
	}
	if (vn >= 2 && v[0] == '"' && v[vn - 1] == '"') {
		v++;
		vn -= 2;
	} else if (vn >= 1 && (v[0] == '"' || v[vn - 1] == '"')) {
		buf_printf(err, "%s:%zu: unbalanced double quote", name, lineno);
		return false;
	}
	for (size_t i = 0; i < vn; i++)
		if ((unsigned char)v[i] < 0x20 && v[i] != '\t') {
			buf_printf(err, "%s:%zu: control character in the value", name, lineno);
			return false;
		}
	for (size_t i = 0; i < cfg->nraw; i++)
		if (strlen(cfg->raw[i].key) == kn && memcmp(cfg->raw[i].key, k, kn) == 0) {
			buf_printf(err, "%s:%zu: duplicate key %.*s (first set on line %zu)", name, lineno,
			           (int)kn, k, cfg->raw[i].line);
			return false;
		}
	cfg->raw = xreallocarray(cfg->raw, xadd(cfg->nraw, 1), sizeof *cfg->raw);
	cfg->raw[cfg->nraw].key = xstrndup(k, kn);
	cfg->raw[cfg->nraw].value = xstrndup(v, vn);
	cfg->raw[cfg->nraw].line = lineno;
	cfg->nraw++;
	return true;
}

bool config_parse_text(struct config *cfg, const char *name, const char *text, size_t len, struct buf *err)
{
	size_t lineno = 0;
	while (len > 0) {
		const char *nl = memchr(text, '\n', len);
		size_t n = nl ? (size_t)(nl - text) : len;
		lineno++;
		if (n > CONFIG_MAX_LINE) {
			buf_printf(err, "%s:%zu: line longer than %d bytes", name, lineno, CONFIG_MAX_LINE);
			return false;
		}
		if (memchr(text, '\0', n) != NULL) {
			buf_printf(err, "%s:%zu: NUL byte", name, lineno);
			return false;
		}
		const char *s = text;
		size_t sn = n;
		config_trim(&s, &sn);
		if (sn > 0 && s[0] != '#' && !config_line(cfg, name, lineno, s, sn, err))
			return false;
		text += n;
		len -= n;
		if (nl != NULL) {
			text++;
			len--;
		}
	}
	return true;
}

/* Read the file at path (at most CONFIG_MAX_BYTES) into cfg->raw. */
static bool config_read_file(struct config *cfg, const char *path, struct buf *err)
{
	struct buf text = BUF_INIT;
	bool ok = false;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		buf_printf(err, "%s: cannot open: %s", path, strerror(errno));
		goto out;
	}
	for (;;) {
		buf_reserve(&text, 4096);
		ssize_t r = read(fd, text.data + text.len, text.cap - text.len - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			buf_printf(err, "%s: read error: %s", path, strerror(errno));
			goto out;
		}
		if (r == 0)
			break;
		text.len += (size_t)r;
		text.data[text.len] = '\0';
		if (text.len > CONFIG_MAX_BYTES) {
			buf_printf(err, "%s: larger than %u bytes", path, CONFIG_MAX_BYTES);
			goto out;
		}
	}
	cfg->path = xstrdup(path);
	ok = config_parse_text(cfg, path, buf_cstr(&text), text.len, err);
out:
	if (fd >= 0)
		close(fd);
	buf_free(&text);
	return ok;
}

const char *config_get(const struct config *cfg, const char *key)
{
	const char *e = getenv(key);
	if (e != NULL)
		return e;
	for (size_t i = 0; i < cfg->nraw; i++)
		if (strcmp(cfg->raw[i].key, key) == 0)
			return cfg->raw[i].value;
	return NULL;
}

/* Where a key's value came from, for messages: "env KEY" or "file:line". */
static void config_where(const struct config *cfg, const char *key, struct buf *err)
{
	if (getenv(key) != NULL) {
		buf_printf(err, "environment variable %s", key);
		return;
	}
	for (size_t i = 0; i < cfg->nraw; i++)
		if (strcmp(cfg->raw[i].key, key) == 0) {
			buf_printf(err, "%s:%zu: %s", cfg->path ? cfg->path : "config", cfg->raw[i].line, key);
			return;
		}
	buf_puts(err, key);
}

/* String value of key (empty counts as unset), or a copy of def (may be NULL). */
static char *config_str(const struct config *cfg, const char *key, const char *def)
{
	const char *v = config_get(cfg, key);
	if (v == NULL || v[0] == '\0')
		v = def;
	return v ? xstrdup(v) : NULL;
}

/* Integer value of key in [min, max], or def when unset. */
static bool config_long(const struct config *cfg, const char *key, long def, long min, long max,
                        long *out, struct buf *err)
{
	const char *v = config_get(cfg, key);
	int64_t x;
	if (v == NULL || v[0] == '\0') {
		*out = def;
		return true;
	}
	if (!parse_int(v, strlen(v), min, max, &x)) {
		config_where(cfg, key, err);
		buf_printf(err, " must be an integer from %ld to %ld", min, max);
		return false;
	}
	*out = (long)x;
	return true;
}

/* Check AGENTTEST_FCGI_SOCKET: an absolute path or host:port. */
static bool config_socket_ok(const char *s)
{
	if (s[0] == '/')
		return strlen(s) < 108;
	const char *colon = strrchr(s, ':');
	int64_t port;
	return colon != NULL && colon != s && parse_int(colon + 1, strlen(colon + 1), 1, 65535, &port);
}

/* Fill the typed fields from cfg->raw and the environment. */
static bool config_typed(struct config *cfg, struct buf *err)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	long body;
	const char *v;

	cfg->database_url = config_str(cfg, "DATABASE_URL",
	    "mariadb://agenttest@localhost/agenttest?socket=/run/mysqld/mysqld.sock");
	struct buf why = BUF_INIT;
	if (!dburl_parse(cfg->database_url, &cfg->db, &why)) {
		config_where(cfg, "DATABASE_URL", err);
		buf_printf(err, ": %s", buf_cstr(&why));
		buf_free(&why);
		return false;
	}
	buf_free(&why);
	cfg->secret_file = config_str(cfg, "AGENTTEST_SECRET_FILE", "/var/lib/agenttest/secret.key");
	cfg->fcgi_socket = config_str(cfg, "AGENTTEST_FCGI_SOCKET", "/run/agenttest/fcgi.sock");
	if (!config_socket_ok(cfg->fcgi_socket)) {
		config_where(cfg, "AGENTTEST_FCGI_SOCKET", err);
		buf_puts(err, " must be an absolute socket path (< 108 bytes) or HOST:PORT");
		return false;
	}
	/* MANTIS_WORKERS is the original's name for the pool size; the agenttest
	 * name wins when both are set. */
	v = config_get(cfg, "AGENTTEST_WORKERS");
	if (!config_long(cfg, v && v[0] ? "AGENTTEST_WORKERS" : "MANTIS_WORKERS",
	                 ncpu > 0 ? ncpu : 2, 1, 256, &cfg->workers, err))
		return false;
	if (!config_long(cfg, "AGENTTEST_BODY_LIMIT", 1048576, 1024, 1L << 30, &body, err))
		return false;
	cfg->body_limit = (size_t)body;
	cfg->mantis_auth_token = config_str(cfg, "MANTIS_AUTH_TOKEN", NULL);
	cfg->mantis_host = config_str(cfg, "MANTIS_HOST", "127.0.0.1");
	if (!config_long(cfg, "MANTIS_PORT", 8000, 1, 65535, &cfg->mantis_port, err))
		return false;
	/* research agents (issue 15): the API's admission limit and the runner's auto-resume */
	if (!config_long(cfg, "MANTIS_MAX_AGENTS", 5, 1, 1000, &cfg->max_agents, err) ||
	    !config_long(cfg, "MANTIS_PAUSE_TIMEOUT", 3600, 10, 30L * 86400, &cfg->pause_timeout_s, err))
		return false;
	{	/* read by the iteration harness (agentloop/config.py): checked here so a bad value stops the start */
		long unused;
		if (!config_long(cfg, "MANTIS_ITER_WALL_TIMEOUT", 1800, 60, 86400, &unused, err) ||
		    !config_long(cfg, "MANTIS_CLAUDE_TIMEOUT", 600, 10, 86400, &unused, err) ||
		    !config_long(cfg, "MANTIS_CONTAINER_MEM_PCT", 15, 1, 100, &unused, err))
			return false;
	}
	v = config_get(cfg, "AGENTTEST_AUTH");
	if (v == NULL || v[0] == '\0' || strcmp(v, "auto") == 0)
		cfg->auth = CONFIG_AUTH_AUTO;
	else if (strcmp(v, "required") == 0)
		cfg->auth = CONFIG_AUTH_REQUIRED;
	else {
		config_where(cfg, "AGENTTEST_AUTH", err);
		buf_puts(err, " must be 'auto' or 'required'");
		return false;
	}
	v = config_get(cfg, "MANTIS_LOG_LEVEL");
	cfg->log_level = LOG_LVL_INFO;
	if (v != NULL && v[0] != '\0' && !log_parse_level(v, &cfg->log_level)) {
		config_where(cfg, "MANTIS_LOG_LEVEL", err);
		buf_puts(err, " must be debug, info, warning or error");
		return false;
	}
	cfg->dataset_version = config_str(cfg, "DATASET_VERSION", "synth-v1");
	cfg->dataset_dir = config_str(cfg, "DATASET_DIR", NULL);
	cfg->strategies_dir = config_str(cfg, "STRATEGIES_DIR", "strategies");
	return true;
}

bool config_load(struct config *cfg, const char *path, struct buf *err)
{
	struct stat st;
	memset(cfg, 0, sizeof *cfg);
	if (path == NULL)
		path = getenv("AGENTTEST_CONFIG");
	if (path == NULL && stat(CONFIG_DEFAULT_PATH, &st) == 0)
		path = CONFIG_DEFAULT_PATH;
	if (path != NULL && path[0] != '\0' && !config_read_file(cfg, path, err))
		goto fail;
	for (size_t i = 0; i < cfg->nraw; i++)
		if (!config_is_known(cfg->raw[i].key) && !config_is_pending(cfg->raw[i].key))
			log_msg(LOG_LVL_WARNING, "config_unknown_key", "%s:%zu: unknown key %s (ignored)",
			        cfg->path, cfg->raw[i].line, cfg->raw[i].key);
	if (!config_typed(cfg, err))
		goto fail;
	config_warn_pending(cfg);
	return true;
fail:
	config_free(cfg);
	return false;
}

bool config_host_is_loopback(const char *host)
{
	return strcmp(host, "127.0.0.1") == 0 || strcmp(host, "::1") == 0 || strcmp(host, "localhost") == 0;
}

bool config_auth_required(const struct config *cfg)
{
	return cfg->mantis_auth_token != NULL || cfg->auth == CONFIG_AUTH_REQUIRED;
}

/* True if AGENTTEST_ALLOWED_HOSTS is unset or a non-empty list of host
 * names and addresses separated by commas or spaces. */
static bool config_hosts_ok(const struct config *cfg)
{
	const char *v = config_get(cfg, "AGENTTEST_ALLOWED_HOSTS");
	bool any = false;
	if (v == NULL || v[0] == '\0')
		return true;
	for (const char *p = v; *p; p++) {
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-:[], ", *p))
			return false;
		any |= *p != ',' && *p != ' ';
	}
	return any;
}

bool config_validate(const struct config *cfg, struct buf *err)
{
	if (!config_hosts_ok(cfg)) {
		buf_printf(err, "AGENTTEST_ALLOWED_HOSTS must list host names or addresses separated by commas");
		return false;
	}
	struct buf why = BUF_INIT;
	if (cfg->mantis_auth_token != NULL && !strength_check(cfg->mantis_auth_token, &why)) {
		buf_printf(err, "MANTIS_AUTH_TOKEN is too weak: it %s", buf_cstr(&why));
		buf_free(&why);
		return false;
	}
	buf_free(&why);
	if (!config_host_is_loopback(cfg->mantis_host) && !config_auth_required(cfg)) {
		buf_printf(err, "MANTIS_HOST=%s is not a loopback address: refusing to serve without "
		           "authentication (set MANTIS_AUTH_TOKEN or AGENTTEST_AUTH=required)", cfg->mantis_host);
		return false;
	}
	return true;
}

void config_free(struct config *cfg)
{
	if (cfg->mantis_auth_token != NULL)
		sodium_memzero(cfg->mantis_auth_token, strlen(cfg->mantis_auth_token));
	for (size_t i = 0; i < cfg->nraw; i++) {
		if (strcmp(cfg->raw[i].key, "MANTIS_AUTH_TOKEN") == 0 || strcmp(cfg->raw[i].key, "DATABASE_URL") == 0)
			sodium_memzero(cfg->raw[i].value, strlen(cfg->raw[i].value));
		free(cfg->raw[i].key);
		free(cfg->raw[i].value);
	}
	free(cfg->raw);
	dburl_free(&cfg->db);
	free(cfg->path);
	if (cfg->database_url != NULL)
		sodium_memzero(cfg->database_url, strlen(cfg->database_url)); /* may hold a password */
	free(cfg->database_url);
	free(cfg->secret_file);
	free(cfg->fcgi_socket);
	free(cfg->mantis_auth_token);
	free(cfg->mantis_host);
	free(cfg->dataset_version);
	free(cfg->dataset_dir);
	free(cfg->strategies_dir);
	memset(cfg, 0, sizeof *cfg);
}
