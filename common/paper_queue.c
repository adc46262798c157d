/* paper_queue: queue a paper-trading step of a label (see paper_queue.h). */
#include <string.h>

#include "paper_queue.h"

int paper_queue_step(struct db *db, const char *label)
{
	struct db_arg a[] = { DB_ARG_TEXT(label) };
	struct db_result res = { 0 };
	/* one step per active account (the default and its shadows, sql/024) without a queued one */
	if (db_exec(db, "INSERT INTO paper_steps (id, label, account_id) SELECT UUID(), a.label, a.id "
			"FROM paper_accounts a WHERE a.label = ? AND a.state = 'active' AND NOT EXISTS "
			"(SELECT 1 FROM paper_steps s WHERE s.status = 'queued' AND s.account_id = a.id) ORDER BY a.id",
		    a, 1, NULL, 0, NULL, NULL, &res, 0) != DB_OK)
		return -1;
	return res.affected > 0 ? 1 : 0;
}
