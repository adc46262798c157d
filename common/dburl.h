/*
 * dburl: the DATABASE_URL parser.
 *
 * Accepted forms (percent-encoding allowed in every part):
 *   mariadb://user:pass@host:port/db
 *   mariadb://user@localhost/db?socket=/path/to/mysqld.sock
 * `mysql://` is accepted as a synonym of `mariadb://`. The user, password and
 * port are optional; an IPv6 host is written in brackets. The only query
 * parameter is `socket` (an absolute path); it requires the host to be
 * `localhost` or empty. Anything else is an error with a message that says
 * which part is wrong (the password is never echoed).
 */
#ifndef AGENTTEST_DBURL_H
#define AGENTTEST_DBURL_H

#include <stdbool.h>

#include "buf.h"

#define DBURL_MAX 2048

struct dburl {
	char    *user;     /* NULL when absent */
	char    *password; /* NULL when absent; zeroed on free */
	char    *host;     /* "localhost" when empty */
	unsigned port;     /* 0: the connector's default (3306) */
	char    *database;
	char    *socket;   /* NULL unless ?socket= */
};

/* Parse url into *out (all fields owned by *out). On error returns false,
 * leaves *out empty and writes a message into err. */
bool dburl_parse(const char *url, struct dburl *out, struct buf *err);
/* Release the fields (password zeroed first); *u is empty afterwards. */
void dburl_free(struct dburl *u);

#endif
