/*
 * agenttest token: API token administration.
 *
 *   agenttest token create --user NAME [--role admin|user]   prints the token, once
 *   agenttest token list [--table]                           JSON lines (never the secret)
 *   agenttest token revoke ID
 *
 * All take --config FILE. `create` reads (or, on first use, creates) the
 * server secret file AGENTTEST_SECRET_FILE, whose key the server needs to
 * verify the token: run it as the user the server runs as.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>
#include <sodium.h>

#include "common/config.h"
#include "common/db.h"
#include "common/parse.h"
#include "common/tokstore.h"
#include "evaluator/cli/commands.h"

int cmd_token(int argc, char **argv);

/* Print the usage of `agenttest token` on out. */
static void token_usage(FILE *out)
{
	fprintf(out, "usage: agenttest token create --user NAME [--role admin|user] [--config FILE]\n"
	             "       agenttest token list [--table] [--config FILE]\n"
	             "       agenttest token revoke ID [--config FILE]\n"
	             "  create prints the new token once on stdout (only its hash is stored).\n");
}

struct token_opts {
	const char *user, *role, *config;
	bool        table;
	const char *arg; /* the one positional argument (revoke ID) */
};

/* Parse the options after the subcommand; CLI_OK or an exit status. */
static int token_parse(int argc, char **argv, struct token_opts *o)
{
	static const struct option opts[] = {
		{ "user", required_argument, NULL, 'u' },
		{ "role", required_argument, NULL, 'r' },
		{ "config", required_argument, NULL, 'c' },
		{ "table", no_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	memset(o, 0, sizeof *o);
	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'u': o->user = optarg; break;
		case 'r': o->role = optarg; break;
		case 'c': o->config = optarg; break;
		case 't': o->table = true; break;
		case 'h': token_usage(stdout); return -1;
		default: token_usage(stderr); return CLI_USAGE;
		}
	}
	if (optind < argc)
		o->arg = argv[optind++];
	if (optind < argc)
		return cli_error(CLI_USAGE, "bad_request", "unexpected argument '%s'", argv[optind]);
	return CLI_OK;
}

/* token create. */
static int token_create(struct config *cfg, struct db *db, const struct token_opts *o)
{
	unsigned char key[SECRET_BYTES];
	char token[TOKEN_TEXT_LEN + 1];
	enum tokstore_role role = TOKSTORE_ROLE_USER;
	struct buf err = BUF_INIT;
	long long id = 0;
	int rc = CLI_OK;

	if (o->user == NULL || !tokstore_name_ok(o->user))
		return cli_error(CLI_USAGE, "invalid_field", "--user NAME is required: 1 to 64 of A-Z a-z 0-9 . _ @ -");
	if (o->role != NULL && !tokstore_role_parse(o->role, &role))
		return cli_error(CLI_USAGE, "invalid_field", "--role must be admin or user");
	if (o->arg != NULL)
		return cli_error(CLI_USAGE, "bad_request", "unexpected argument '%s'", o->arg);
	if (!secret_load(cfg->secret_file, true, key, &err)) {
		rc = cli_error(CLI_INTERNAL, "internal", "%s", buf_cstr(&err));
		goto out;
	}
	enum db_status st = tokstore_create(db, key, o->user, role, token, &id, &err);
	if (st != DB_OK) {
		rc = cli_error(st == DB_UNAVAILABLE ? CLI_INTERNAL : CLI_FAILED,
		               st == DB_DUPLICATE ? "conflict" : st == DB_UNAVAILABLE ? "unavailable" : "internal",
		               "cannot create the token: %s", buf_cstr(&err));
		goto out;
	}
	printf("%s\n", token);
	fflush(stdout);
out:
	sodium_memzero(key, sizeof key);
	sodium_memzero(token, sizeof token);
	buf_free(&err);
	return rc;
}

/* Print one token row as a JSON line or a table row. */
static void token_print(void *ctx, const struct tokstore_row *r)
{
	const bool *table = ctx;
	if (*table) {
		printf("%-6lld %-20s %-6s %-11s %-24s %-24s %s\n", r->id, r->user, r->role, r->prefix,
		       r->created_at, r->last_used_at[0] ? r->last_used_at : "-",
		       r->revoked_at[0] ? r->revoked_at : "-");
		return;
	}
	json_object *o = json_object_new_object();
	json_object_object_add(o, "id", json_object_new_int64(r->id));
	json_object_object_add(o, "user", json_object_new_string(r->user));
	json_object_object_add(o, "role", json_object_new_string(r->role));
	json_object_object_add(o, "prefix", json_object_new_string(r->prefix));
	json_object_object_add(o, "created_at", json_object_new_string(r->created_at));
	json_object_object_add(o, "last_used_at", r->last_used_at[0] ? json_object_new_string(r->last_used_at) : NULL);
	json_object_object_add(o, "revoked_at", r->revoked_at[0] ? json_object_new_string(r->revoked_at) : NULL);
	printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
}

/* token list. */
static int token_list(struct db *db, const struct token_opts *o)
{
	bool table = o->table;
	if (o->arg != NULL)
		return cli_error(CLI_USAGE, "bad_request", "unexpected argument '%s'", o->arg);
	if (table)
		printf("%-6s %-20s %-6s %-11s %-24s %-24s %s\n", "ID", "USER", "ROLE", "PREFIX", "CREATED",
		       "LAST USED", "REVOKED");
	if (tokstore_list(db, token_print, &table) != DB_OK)
		return cli_error(CLI_INTERNAL, "unavailable", "cannot list tokens: %s", db_error(db));
	return CLI_OK;
}

/* token revoke ID. */
static int token_revoke(struct db *db, const struct token_opts *o)
{
	int64_t id;
	bool found = false;
	if (o->arg == NULL || !parse_int(o->arg, strlen(o->arg), 1, INT64_MAX - 1, &id))
		return cli_error(CLI_USAGE, "invalid_field", "token revoke needs a numeric token ID (see 'token list')");
	if (tokstore_revoke(db, id, &found) != DB_OK)
		return cli_error(CLI_INTERNAL, "unavailable", "cannot revoke: %s", db_error(db));
	if (!found)
		return cli_error(CLI_FAILED, "not_found", "no active token with ID %lld", (long long)id);
	printf("revoked token %lld\n", (long long)id);
	return CLI_OK;
}

int cmd_token(int argc, char **argv)
{
	struct token_opts o;
	struct config cfg;
	struct buf err = BUF_INIT;
	struct db *db = NULL;
	int rc;

	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "help") == 0) {
		token_usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? CLI_USAGE : CLI_OK;
	}
	const char *sub = argv[1];
	if (strcmp(sub, "create") != 0 && strcmp(sub, "list") != 0 && strcmp(sub, "revoke") != 0)
		return cli_error(CLI_USAGE, "bad_request", "unknown 'token' subcommand '%s'", sub);
	rc = token_parse(argc - 1, argv + 1, &o);
	if (rc != CLI_OK)
		return rc < 0 ? CLI_OK : rc;
	if (sodium_init() < 0)
		return cli_error(CLI_INTERNAL, "internal", "libsodium failed to initialise");
	if (!config_load(&cfg, o.config, &err)) {
		rc = cli_error(CLI_FAILED, "bad_request", "configuration: %s", buf_cstr(&err));
		buf_free(&err);
		return rc;
	}
	db = db_new(&cfg.db);
	if (db_connect(db) != DB_OK) {
		rc = cli_error(CLI_INTERNAL, "unavailable", "cannot connect to the database: %s", db_error(db));
		goto out;
	}
	if (strcmp(sub, "create") == 0)
		rc = token_create(&cfg, db, &o);
	else if (strcmp(sub, "list") == 0)
		rc = token_list(db, &o);
	else
		rc = token_revoke(db, &o);
out:
	db_free(db);
	config_free(&cfg);
	buf_free(&err);
	return rc;
}
