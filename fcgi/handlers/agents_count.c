/*
 * The count of agents starting or running, on its own: POST /api/agents
 * admits against it and GET /health shows it to admins, so the health
 * handler (also linked into the request fuzzers) needs nothing else of the
 * agents handlers.
 */
#include "fcgi/handlers/agents.h"

long long ag_count_active(struct db *db)
{
	struct db_col n = DB_COL_INT;
	if (db_exec(db, "SELECT COUNT(*) FROM agents WHERE status IN ('starting','running') AND deleted_at IS NULL",
		    NULL, 0, &n, 1, NULL, NULL, NULL, 0) != DB_OK)
		return -1;
	return n.i;
}
