/*
 * config: the agenttest configuration.
 *
 * One file of `KEY = value` lines (`#` starts a comment line; blank lines
 * are ignored; a value may be wrapped in double quotes, which are removed),
 * found as: the path given by the program (--config), else $AGENTTEST_CONFIG,
 * else /etc/agenttest/agenttest.conf if it exists, else no file. An
 * environment variable with the same name as a key overrides the file.
 * Parsing is strict: a malformed line, a duplicate key or an invalid value is
 * an error naming the file and line (or the variable). Keys that no
 * component knows are reported as warnings (a typo should not go unnoticed,
 * but a newer file must not stop an older binary). docs/configuration.md
 * lists every key with its default.
 */
#ifndef AGENTTEST_CONFIG_H
#define AGENTTEST_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"
#include "dburl.h"
#include "log.h"

#define CONFIG_DEFAULT_PATH "/etc/agenttest/agenttest.conf"
#define CONFIG_MAX_BYTES (1u << 20)
#define CONFIG_MAX_LINE 4096

enum config_auth {
	CONFIG_AUTH_AUTO,     /* loopback clients admitted without a token */
	CONFIG_AUTH_REQUIRED, /* every request but /health needs a credential */
};

struct config_raw {
	char  *key;
	char  *value;
	size_t line;
};

struct config {
	char            *path;             /* file read, or NULL */
	char            *database_url;
	struct dburl     db;               /* parsed database_url */
	char            *secret_file;
	char            *fcgi_socket;
	long             workers;          /* >= 1 (defaults to the CPU count) */
	size_t           body_limit;       /* bytes */
	char            *mantis_auth_token; /* NULL when unset or empty */
	char            *mantis_host;
	long             mantis_port;
	long             max_agents;       /* MANTIS_MAX_AGENTS: agents starting or running at once */
	long             pause_timeout_s;  /* MANTIS_PAUSE_TIMEOUT: a paused agent resumes after this */
	enum config_auth auth;
	enum log_level   log_level;
	char            *dataset_version;
	char            *dataset_dir;      /* NULL when unset */
	char            *strategies_dir;
	struct config_raw *raw;            /* every key of the file, in order */
	size_t           nraw;
};

/*
 * Load the configuration: the file (see above; `path` overrides the search,
 * NULL searches), the environment overrides, then the typed values and their
 * defaults. Returns true on success; on error returns false with a one-line
 * message in err and *cfg released.
 */
bool config_load(struct config *cfg, const char *path, struct buf *err);

/*
 * Parse configuration text (the file format) into cfg->raw. `name` is used in
 * messages. Exposed for the tests and the fuzzer.
 */
bool config_parse_text(struct config *cfg, const char *name, const char *text, size_t len, struct buf *err);

/*
 * The cross-key rules every server start and --check-config enforce:
 * MANTIS_AUTH_TOKEN (if set) must pass the strength rule, and a MANTIS_HOST
 * other than 127.0.0.1, ::1 or localhost needs authentication to be
 * required (MANTIS_AUTH_TOKEN set or AGENTTEST_AUTH=required).
 */
bool config_validate(const struct config *cfg, struct buf *err);

/* True if a credential is needed even from loopback clients. */
bool config_auth_required(const struct config *cfg);

/* True for the loopback spellings of MANTIS_HOST: 127.0.0.1, ::1, localhost. */
bool config_host_is_loopback(const char *host);

/* Value of any key: the environment first, then the file; NULL if unset. */
const char *config_get(const struct config *cfg, const char *key);

/* Release everything (the auth token is zeroed). */
void config_free(struct config *cfg);

#endif
