/*
 * test_agent_llm_db.c: the LLM side of the agent kind
 * (evaluator/runner/agent_llm.c) against a private MariaDB with every
 * migration applied (sql/015_llm_budgets.sql): budgets left from the
 * agent's own limits or the operator's defaults and from the owner's UTC
 * day; charges from two connections at once (two runner hosts) never lose
 * one (agent totals and usage rows all add up exactly) and leave the
 * owner's day alone (the egress proxy settled it request by request,
 * common/llm_reserve.c); the exhausted budget is named; the key comes from
 * the owner's row, else the admin default (owner 0), else none; the
 * spliced request is the request with the key first and the database URL;
 * the turn ledger of an unreported turn is taken once and charges its
 * numbers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include <json-c/json.h>
#include <mysql.h>

#include "common/db.h"
#include "common/secret.h"
#include "common/secret_store.h"
#include "evaluator/runner/agent.h"
#include "evaluator/runner/egress/egress.h"
#include "tests/unit/lib/tmariadb.h"

#define DBNAME "agenttest_llm"
#define A1 "aaaaaaaa-0000-0000-0000-000000000001"
#define A2 "aaaaaaaa-0000-0000-0000-000000000002"
#define A3 "aaaaaaaa-0000-0000-0000-000000000003"
#define CHARGES 25

static struct tmariadb srv;
static struct db *db;
static char secret_path[256];
static struct agent_llm_env env;

/* One statement that must succeed. */
static void ok(struct db *d, const char *sql, const struct db_arg *a, size_t na)
{
	if (db_exec(d, sql, a, na, NULL, 0, NULL, NULL, NULL, 0) != DB_OK)
		fail_msg("%s: %s", sql, db_error(d));
}

/* One integer of a one-row query. */
static long long one_int(const char *sql)
{
	struct db_col c = DB_COL_INT;
	if (db_exec(db, sql, NULL, 0, &c, 1, NULL, NULL, NULL, 0) != DB_OK)
		fail_msg("%s: %s", sql, db_error(db));
	return c.i;
}

static int setup(void **state)
{
	struct buf err = BUF_INIT;
	unsigned char k[SECRET_BYTES];
	(void)state;
	snprintf(secret_path, sizeof secret_path, "/tmp/agenttest-llm-secret-%ld", (long)getpid());
	unlink(secret_path);
	if (!tmariadb_start_migrated(&srv, DBNAME, &db, "agent_llm test"))
		return 1;
	if (!secret_load(secret_path, true, k, &err)) {
		fprintf(stderr, "agent_llm test setup: %s\n", buf_cstr(&err));
		buf_free(&err);
		tmariadb_finish(&srv, db);
		unlink(secret_path);
		return 1;
	}
	buf_free(&err);
	ok(db, "INSERT IGNORE INTO users (id, name) VALUES (7, 'llm-owner'), (8, 'llm-other')", NULL, 0);
	ok(db, "INSERT IGNORE INTO datasets (id, version, dataset_hash, path, assets, interval_ms, bars, first_ts, last_ts) "
	       "VALUES (1, 'v1', REPEAT('a', 64), '/nonexistent', '[\"X\"]', 60000, 10, 0, 540000)", NULL, 0);
	/* A1: its own request budget (30), the default tokens and USD; A2: all defaults; one owner */
	ok(db, "INSERT INTO agents (id, owner_id, challenge, goal, driver, dataset_id, dataset_version, dataset_hash, "
	       "budget_requests) VALUES ('" A1 "', 7, 'ETH-1H-BINARY', 'g', 'claude-code', 1, 'v1', REPEAT('a', 64), 30), "
	       "('" A2 "', 7, 'ETH-1H-BINARY', 'g', 'claude-code', 1, 'v1', REPEAT('a', 64), NULL)", NULL, 0);
	env.secret_file = secret_path;
	env.agent = (struct agent_llm_budget){ .tokens = 1000000, .requests = 5000, .usd = 20.0 };
	env.owner_day = (struct agent_llm_budget){ .tokens = 10000000, .requests = 80, .usd = 50.0 };
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	tmariadb_finish(&srv, db);
	unlink(secret_path);
	return 0;
}

/* The budgets of agent id into l (must be found). */
static void budgets(const char *id, struct agent_llm *l)
{
	struct buf err = BUF_INIT;
	int rc = agent_llm_budgets(db, &env, id, l, &err);
	if (rc != 1)
		fail_msg("budgets of %s: %d %s", id, rc, buf_cstr(&err));
	buf_free(&err);
}

static void test_budgets_left_from_limits_and_defaults(void **state)
{
	struct agent_llm l = { .key = BUF_INIT };
	(void)state;
	budgets(A1, &l);
	assert_int_equal(l.owner_id, 7);
	assert_int_equal(l.limit.requests, 30);          /* its own */
	assert_int_equal(l.limit.tokens, 1000000);       /* the operator's default */
	assert_true(l.limit.usd == 20.0);
	assert_int_equal(l.left.requests, 30);
	assert_int_equal(l.owner_left.requests, 80);
	assert_string_equal(l.exhausted, "");
	struct buf err = BUF_INIT;
	assert_int_equal(agent_llm_budgets(db, &env, "aaaaaaaa-0000-0000-0000-00000000dead", &l, &err), 0);
	buf_free(&err);
	agent_llm_free(&l);
}

/* A "runner host": its own connection, CHARGES charges of 1 request and 100 tokens, each in a transaction. */
struct host {
	const char *agent;
	bool failed;
};

static void *charge_host(void *arg)
{
	struct host *h = arg;
	struct db *d = tmariadb_connect(&srv, DBNAME);
	struct agent_llm l = { .owner_id = 7, .key = BUF_INIT };
	struct buf err = BUF_INIT;
	json_object *t = json_tokener_parse("{\"input\":60,\"output\":30,\"cache_write\":6,\"cache_read\":4,"
					    "\"requests\":1,\"refused\":0,\"cost\":0.25}");
	h->failed = d == NULL;
	for (int i = 0; d && i < CHARGES && !h->failed; i++) {
		h->failed = db_begin(d) != DB_OK ||
			    agent_llm_charge(d, &l, h->agent, 1, "bbbbbbbb-0000-0000-0000-000000000001", t, NULL, &err) != 0 ||
			    db_commit(d) != DB_OK;
	}
	if (h->failed)
		fprintf(stderr, "charge: %s %s\n", buf_cstr(&err), d ? db_error(d) : "no connection");
	json_object_put(t);
	buf_free(&err);
	db_free(d);
	return NULL;
}

static void test_concurrent_charges_all_count_and_exhaust(void **state)
{
	(void)state;
	struct host h[2] = { { A1, false }, { A2, false } };
	pthread_t th[2];
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&th[i], NULL, charge_host, &h[i]), 0);
	for (int i = 0; i < 2; i++) {
		pthread_join(th[i], NULL);
		assert_false(h[i].failed);
	}
	/* the owner's day is the proxy's to charge (per request, at settle time): a turn's charge leaves it */
	assert_int_equal(one_int("SELECT COUNT(*) FROM llm_owner_day WHERE owner_id = 7"), 0);
	ok(db, "INSERT INTO llm_owner_day (owner_id, day, input, output, cache_write, cache_read, requests, usd) "
	   "VALUES (7, UTC_DATE(), 3000, 1500, 300, 200, 50, 12.5)", NULL, 0);
	assert_int_equal(one_int("SELECT llm_requests FROM agents WHERE id = '" A1 "'"), CHARGES);
	assert_int_equal(one_int("SELECT tokens_cache_write FROM agents WHERE id = '" A2 "'"), CHARGES * 6);
	assert_int_equal(one_int("SELECT COUNT(*) FROM agent_llm_usage WHERE owner_id = 7 AND kind = 'turn'"), 2 * CHARGES);
	struct agent_llm l = { .key = BUF_INIT };
	budgets(A1, &l);   /* 25 of its 30 requests, 50 of the owner's 80 */
	assert_int_equal(l.left.requests, 5);
	assert_int_equal(l.owner_left.requests, 30);
	assert_int_equal(l.used.tokens, CHARGES * 100);
	assert_string_equal(l.exhausted, "");
	ok(db, "UPDATE agents SET budget_requests = 25 WHERE id = '" A1 "'", NULL, 0);
	budgets(A1, &l);
	assert_non_null(strstr(l.exhausted, "agent requests: 25 of 25 used"));
	env.owner_day.usd = 12.0;   /* the owner's day: 12.5 USD spent over both agents */
	budgets(A2, &l);
	assert_non_null(strstr(l.exhausted, "owner daily usd"));
	env.owner_day.usd = 50.0;
	agent_llm_free(&l);
}

static void test_key_own_then_default_then_none(void **state)
{
	(void)state;
	unsigned char k[SECRET_BYTES];
	struct buf err = BUF_INIT;
	struct agent_llm l = { .owner_id = 8, .key = BUF_INIT };
	assert_true(secret_load(secret_path, false, k, &err));
	assert_int_equal(agent_llm_key(db, &env, &l, &err), 0);            /* nobody set one */
	assert_true(secret_store_put(db, k, 0, "anthropic", "sk-ant-default-key-000000000000", &err));
	assert_int_equal(agent_llm_key(db, &env, &l, &err), 1);
	assert_string_equal(buf_cstr(&l.key), "sk-ant-default-key-000000000000");
	assert_true(secret_store_put(db, k, 8, "anthropic", "sk-ant-own-key-1111111111111111", &err));
	assert_int_equal(agent_llm_key(db, &env, &l, &err), 1);
	assert_string_equal(buf_cstr(&l.key), "sk-ant-own-key-1111111111111111");
	/* the request with the key first, still one JSON object */
	struct buf out = BUF_INIT;
	const char *url = "mariadb://u:p%22\"w@localhost/db?socket=/run/my sql.sock";
	agent_llm_splice(&l, url, "{\"agent\":{\"id\":\"x\"},\"iteration\":1}", &out);
	json_object *o = json_tokener_parse(buf_cstr(&out)), *v;
	assert_non_null(o);
	assert_true(json_object_object_get_ex(o, "anthropic_key", &v));
	assert_string_equal(json_object_get_string(v), "sk-ant-own-key-1111111111111111");
	assert_true(json_object_object_get_ex(o, "database_url", &v));
	assert_string_equal(json_object_get_string(v), url);
	json_object_put(o);
	agent_llm_splice(&l, NULL, "{\"iteration\":2}", &out);   /* no database: no database_url */
	o = json_tokener_parse(buf_cstr(&out));
	assert_non_null(o);
	assert_false(json_object_object_get_ex(o, "database_url", &v));
	assert_true(json_object_object_get_ex(o, "iteration", &v));
	json_object_put(o);
	/* a store opened with another server secret: an error whose text holds no key */
	struct agent_llm_env other = env;
	char p2[300];
	snprintf(p2, sizeof p2, "%s-other", secret_path);
	unlink(p2);
	assert_true(secret_load(p2, true, k, &err));
	other.secret_file = p2;
	buf_reset(&err);
	assert_int_equal(agent_llm_key(db, &other, &l, &err), -1);
	assert_null(strstr(buf_cstr(&err), "sk-ant"));
	unlink(p2);
	buf_free(&out);
	buf_free(&err);
	agent_llm_free(&l);
}

/* Write text into path (must succeed). */
static void put_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (!f || fputs(text, f) < 0 || fclose(f) != 0)
		fail_msg("cannot write %s", path);
}

/* Field k of o as an int64. */
static int64_t jint(json_object *o, const char *k)
{
	json_object *v;
	assert_true(json_object_object_get_ex(o, k, &v));
	return json_object_get_int64(v);
}

/*
 * The turn ledger an unreported turn left (a failed harness) is read with
 * every field, removed (taken once) and charges exactly its numbers; no
 * file is 0; a malformed one is an error and is removed.
 */
static void test_turn_ledger_taken_once_and_charged(void **state)
{
	char root[96], dir[128], path[160];
	struct buf err = BUF_INIT;
	json_object *u = NULL, *t, *v;
	(void)state;
	snprintf(root, sizeof root, "/tmp/agenttest-llm-ledger-%ld", (long)getpid());
	snprintf(dir, sizeof dir, "%s/llm", root);
	snprintf(path, sizeof path, "%s/turn.json", dir);
	assert_int_equal(mkdir(root, 0700), 0);
	assert_int_equal(mkdir(dir, 0700), 0);
	assert_int_equal(agent_llm_take_ledger(root, &u, &err), 0);
	assert_null(u);
	put_file(path, "{\"input\":700,\"output\":40,\"cache_write\":100,\"cache_read\":300,\"tokens\":1140,"
		       "\"requests\":3,\"usd\":0.012300000,\"refused\":1,\"exhausted\":\"agent requests: 3 of 3 used\"}\n");
	assert_int_equal(agent_llm_take_ledger(root, &u, &err), 1);
	assert_int_not_equal(access(path, F_OK), 0);   /* taken: a second charge cannot find it */
	assert_true(json_object_object_get_ex(u, "tokens", &t));
	assert_int_equal(jint(t, "input"), 700);
	assert_int_equal(jint(t, "output"), 40);
	assert_int_equal(jint(t, "cache_write"), 100);
	assert_int_equal(jint(t, "cache_read"), 300);
	assert_int_equal(jint(t, "total"), 1140);
	assert_int_equal(jint(t, "requests"), 3);
	assert_int_equal(jint(t, "refused"), 1);
	assert_true(json_object_object_get_ex(t, "cost", &v));
	assert_true(json_object_get_double(v) > 0.01229 && json_object_get_double(v) < 0.01231);
	assert_true(json_object_object_get_ex(u, "exhausted", &v));
	assert_string_equal(json_object_get_string(v), "agent requests: 3 of 3 used");
	ok(db, "INSERT INTO agents (id, owner_id, challenge, goal, driver, dataset_id, dataset_version, dataset_hash) "
	       "VALUES ('" A3 "', 8, 'ETH-1H-BINARY', 'g', 'claude-code', 1, 'v1', REPEAT('a', 64))", NULL, 0);
	struct agent_llm l = { .key = BUF_INIT };
	budgets(A3, &l);
	if (agent_llm_charge(db, &l, A3, 1, "bbbbbbbb-0000-0000-0000-000000000099", t, "agent requests: 3 of 3 used",
			     &err) != 0)
		fail_msg("charge: %s", buf_cstr(&err));
	assert_int_equal(one_int("SELECT tokens_input + tokens_output + tokens_cache_write + tokens_cache_read FROM agents "
				 "WHERE id = '" A3 "'"), 1140);
	assert_int_equal(one_int("SELECT llm_requests FROM agents WHERE id = '" A3 "'"), 3);
	assert_int_equal(one_int("SELECT ROUND(cost_usd * 1e6) FROM agents WHERE id = '" A3 "'"), 12300);
	assert_int_equal(one_int("SELECT COUNT(*) FROM agent_llm_usage WHERE agent_id = '" A3 "' AND refused = 1"), 1);
	json_object_put(u);
	u = NULL;
	assert_int_equal(agent_llm_take_ledger(root, &u, &err), 0);   /* once only */
	put_file(path, "{not a ledger");
	buf_reset(&err);
	assert_int_equal(agent_llm_take_ledger(root, &u, &err), -1);
	assert_null(u);
	assert_non_null(strstr(buf_cstr(&err), "not a turn ledger"));
	assert_int_not_equal(access(path, F_OK), 0);
	agent_llm_free(&l);
	buf_free(&err);
	char lock[170];   /* the proxy's lock file, which the take locks too */
	snprintf(lock, sizeof lock, "%s.lock", path);
	assert_int_equal(unlink(lock), 0);
	assert_int_equal(rmdir(dir), 0);
	assert_int_equal(rmdir(root), 0);
}

struct take_arg {
	const char  *root;
	int          rc;
	json_object *u;
};

/* Thread body: agent_llm_take_ledger(a->root) into a. */
static void *take_thread(void *p)
{
	struct take_arg *a = p;
	struct buf err = BUF_INIT;
	a->rc = agent_llm_take_ledger(a->root, &a->u, &err);
	buf_free(&err);
	return NULL;
}

/*
 * The take holds the proxy's ledger lock: while a proxy child has the file
 * locked (it read 100 input tokens and is adding a request's 50), the take
 * waits, then takes what the child wrote back (150), and the file is gone.
 * Without the lock the take would return 100 and the child's write-back
 * would leave a file with the taken tokens in it, charged again later.
 */
static void test_turn_ledger_take_waits_for_the_proxy_lock(void **state)
{
	char root[96], dir[128], path[160], lock[170];
	(void)state;
	snprintf(root, sizeof root, "/tmp/agenttest-llm-ledger-lock-%ld", (long)getpid());
	snprintf(dir, sizeof dir, "%s/llm", root);
	snprintf(path, sizeof path, "%s/turn.json", dir);
	snprintf(lock, sizeof lock, "%s.lock", path);
	assert_int_equal(mkdir(root, 0700), 0);
	assert_int_equal(mkdir(dir, 0700), 0);
	put_file(path, "{\"input\":100,\"output\":0,\"cache_write\":0,\"cache_read\":0,\"tokens\":100,"
		       "\"requests\":1,\"usd\":0.0003,\"refused\":0,\"exhausted\":\"\"}\n");
	int lk = egress_ledger_lock(path);
	assert_true(lk >= 0);
	struct take_arg a = { .root = root, .rc = 99, .u = NULL };
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, take_thread, &a), 0);
	usleep(300000);
	put_file(path, "{\"input\":150,\"output\":0,\"cache_write\":0,\"cache_read\":0,\"tokens\":150,"
		       "\"requests\":1,\"usd\":0.00045,\"refused\":0,\"exhausted\":\"\"}\n");
	close(lk);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(a.rc, 1);
	json_object *t;
	assert_true(json_object_object_get_ex(a.u, "tokens", &t));
	assert_int_equal(jint(t, "input"), 150);
	assert_int_not_equal(access(path, F_OK), 0);
	json_object_put(a.u);
	assert_int_equal(unlink(lock), 0);
	assert_int_equal(rmdir(dir), 0);
	assert_int_equal(rmdir(root), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_budgets_left_from_limits_and_defaults),
		cmocka_unit_test(test_concurrent_charges_all_count_and_exhaust),
		cmocka_unit_test(test_key_own_then_default_then_none),
		cmocka_unit_test(test_turn_ledger_taken_once_and_charged),
		cmocka_unit_test(test_turn_ledger_take_waits_for_the_proxy_lock),
	};
	if (mysql_library_init(0, NULL, NULL) != 0)
		return 1;
	int rc = cmocka_run_group_tests(tests, setup, teardown);
	mysql_library_end();
	return rc;
}
