#include "dsretire.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

bool dsretire_is_hash(const char *s)
{
	size_t n = 0;
	for (; s[n]; n++)
		if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f')))
			return false;
	return n == 64;
}

int dsretire_unregister(struct db *db, long long id)
{
	struct db_arg a[] = { DB_ARG_INT(id) };
	struct db_result res = { 0 };
	enum db_status st = db_exec(db, "DELETE FROM datasets WHERE id = ? "
				    "AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.dataset_id = datasets.id) "
				    "AND NOT EXISTS (SELECT 1 FROM evaluations e WHERE e.dataset_id = datasets.id) "
				    "AND NOT EXISTS (SELECT 1 FROM agents g WHERE g.dataset_id = datasets.id) "
				    "AND NOT EXISTS (SELECT 1 FROM paper_accounts p WHERE p.dataset_id = datasets.id)",
				    a, 1, NULL, 0, NULL, NULL, &res, 0);
	if (st != DB_OK)
		return db_errno(db) == 1451 ? 0 : -1;   /* ER_ROW_IS_REFERENCED_2: pinned just now */
	return res.affected == 1 ? 1 : 0;
}

int dsretire_hash_pinned(struct db *db, const char *hash)
{
	struct db_col n = DB_COL_INT;
	struct db_arg a[] = { DB_ARG_TEXT(hash), DB_ARG_TEXT(hash), DB_ARG_TEXT(hash), DB_ARG_TEXT(hash) };
	if (db_exec(db, "SELECT (SELECT COUNT(*) FROM runs r JOIN datasets d ON d.id = r.dataset_id WHERE d.dataset_hash = ?)"
		    " + (SELECT COUNT(*) FROM evaluations e JOIN datasets d ON d.id = e.dataset_id WHERE d.dataset_hash = ?)"
		    " + (SELECT COUNT(*) FROM agents g JOIN datasets d ON d.id = g.dataset_id WHERE d.dataset_hash = ?)"
		    " + (SELECT COUNT(*) FROM paper_accounts p JOIN datasets d ON d.id = p.dataset_id WHERE d.dataset_hash = ?)",
		    a, 4, &n, 1, NULL, NULL, NULL, DB_IDEMPOTENT) != DB_OK)
		return -1;
	return n.i > 0 ? 1 : 0;
}

int dsretire_hash_in_use(struct db *db, const char *hash)
{
	struct db_col n = DB_COL_INT;
	struct db_arg a[] = { DB_ARG_TEXT(hash) };
	if (db_exec(db, "SELECT COUNT(*) FROM datasets WHERE dataset_hash = ?", a, 1, &n, 1, NULL, NULL, NULL,
		    DB_IDEMPOTENT) != DB_OK)
		return -1;
	return n.i > 0;
}

int dsretire_remove_files(const char *data_dir, const char *hash)
{
	char dir[4400], q[4400], mid[4400];
	if (!dsretire_is_hash(hash)) {
		errno = EINVAL;
		return -1;
	}
	snprintf(dir, sizeof dir, "%s/versions/%s", data_dir, hash);
	snprintf(q, sizeof q, "%s/versions/%s.quality.json", data_dir, hash);
	snprintf(mid, sizeof mid, "%s/versions/%s.midstate", data_dir, hash);   /* refresh's hash resume file */
	/* the first failure is the one reported (EACCES for a directory the
	 * runner did not share with the pool), not the ENOTEMPTY it causes */
	DIR *d = opendir(dir);
	if (!d && errno != ENOENT)
		return -1;
	struct dirent *e;
	int failed = 0;
	while (d && (e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && unlinkat(dirfd(d), e->d_name, 0) != 0 &&
		    errno != ENOENT && !failed)
			failed = errno;
	if (d)
		closedir(d);
	if (failed) {
		errno = failed;
		return -1;
	}
	if ((unlink(q) != 0 && errno != ENOENT) || (unlink(mid) != 0 && errno != ENOENT))
		return -1;
	return rmdir(dir) == 0 || errno == ENOENT ? 0 : -1;
}
