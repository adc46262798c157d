/*
 * agenttest db: database administration.
 *
 *   agenttest db migrate [--dir DIR] [--dry-run] [--config FILE]
 *
 * Applies the pending sql/NNN_name.sql migrations (see common/migrate.h)
 * to the database named by DATABASE_URL. The SQL directory is --dir, else
 * $AGENTTEST_SQL_DIR, else <exe dir>/../share/agenttest/sql, else ./sql.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "common/config.h"
#include "common/db.h"
#include "common/migrate.h"
#include "evaluator/cli/commands.h"

int cmd_db(int argc, char **argv);

/* Print the usage of `agenttest db` on out. */
static void db_usage(FILE *out)
{
	fprintf(out, "usage: agenttest db migrate [--dir DIR] [--dry-run] [--config FILE]\n"
	             "  Apply pending migrations (sql/NNN_name.sql) in order; each is recorded with its\n"
	             "  SHA-256 in schema_migrations, and a changed applied migration is refused.\n");
}

int cmd_db(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "dir", required_argument, NULL, 'd' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "config", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *dirarg = NULL, *cfgpath = NULL;
	bool dry = false;
	int c, rc = CLI_OK;
	struct config cfg;
	struct buf err = BUF_INIT;
	struct db *db = NULL;
	char *dir = NULL;
	size_t applied = 0;

	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "help") == 0) {
		db_usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? CLI_USAGE : CLI_OK;
	}
	if (strcmp(argv[1], "migrate") != 0)
		return cli_error(CLI_USAGE, "bad_request", "unknown 'db' subcommand '%s' (try 'agenttest db --help')", argv[1]);
	optind = 1;
	while ((c = getopt_long(argc - 1, argv + 1, "", opts, NULL)) != -1) {
		switch (c) {
		case 'd': dirarg = optarg; break;
		case 'n': dry = true; break;
		case 'c': cfgpath = optarg; break;
		case 'h': db_usage(stdout); return CLI_OK;
		default: db_usage(stderr); return CLI_USAGE;
		}
	}
	if (optind != argc - 1)
		return cli_error(CLI_USAGE, "bad_request", "unexpected argument '%s'", argv[optind + 1]);
	if (sodium_init() < 0)
		return cli_error(CLI_INTERNAL, "internal", "libsodium failed to initialise");
	if (!config_load(&cfg, cfgpath, &err)) {
		rc = cli_error(CLI_FAILED, "bad_request", "configuration: %s", buf_cstr(&err));
		buf_free(&err);
		return rc;
	}
	dir = migrate_default_dir(dirarg);
	db = db_new(&cfg.db);
	if (db_connect(db) != DB_OK) {
		rc = cli_error(CLI_INTERNAL, "unavailable", "cannot connect to the database: %s", db_error(db));
		goto out;
	}
	if (!migrate_run(db, dir, dry, stdout, &applied, &err)) {
		rc = cli_error(CLI_FAILED, "conflict", "migration failed: %s", buf_cstr(&err));
		goto out;
	}
	printf("%zu migration%s %s (%s)\n", applied, applied == 1 ? "" : "s", dry ? "pending" : "applied", dir);
out:
	db_free(db);
	free(dir);
	config_free(&cfg);
	buf_free(&err);
	return rc;
}
