/*
 * agent_activity: the live activity lines of an agent iteration.
 *
 * Theory of operation. The harness (agentloop/job.py) writes one line of
 * text per step on its fd 3 while the iteration runs: each line the agent
 * prints during its turn (the built-in agent logs what it runs and what
 * it writes), and the trusted side's own steps (turn ended, scoring).
 * agent_proc.c reads the pipe on its 100 ms tick and hands the bytes to
 * agent_activity_feed, which splits them into lines, cleans each one
 * (valid UTF-8, no control characters, at most ACT_LINE_MAX bytes: the
 * agent's text is untrusted) and appends it to the agent's change feed as
 * an `activity` event {"iteration": n, "line": "..."} on the job's own
 * connection (the slot's connection belongs to the queue). The feed is
 * what GET /api/agents/{id} (activity.lines) and the events stream show.
 * At most ACT_LINES_MAX lines per iteration are kept, then one line says
 * the rest is not shown. Best effort: without a connection, or after a
 * failed insert, lines are dropped; the iteration itself never depends on
 * them.
 */
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "db.h"
#include "log.h"
#include "evaluator/runner/agent.h"

void agent_activity_init(struct agent_activity *a, struct db *db, const char *agent_id, long long iteration)
{
	memset(a, 0, sizeof *a);
	a->db = db;
	snprintf(a->agent_id, sizeof a->agent_id, "%s", agent_id);
	a->iteration = iteration;
	a->partial = (struct buf)BUF_INIT;
}

/* Length of the valid UTF-8 sequence at s (n bytes left), 0 if invalid. */
static size_t act_utf8_len(const unsigned char *s, size_t n)
{
	size_t len = s[0] < 0x80 ? 1 : (s[0] & 0xE0) == 0xC0 ? 2 : (s[0] & 0xF0) == 0xE0 ? 3 : (s[0] & 0xF8) == 0xF0 ? 4 : 0;
	if (len == 0 || len > n)
		return 0;
	for (size_t i = 1; i < len; i++)
		if ((s[i] & 0xC0) != 0x80)
			return 0;
	unsigned cp = len == 1 ? s[0] : len == 2 ? s[0] & 0x1Fu : len == 3 ? s[0] & 0x0Fu : s[0] & 0x07u;
	for (size_t i = 1; i < len; i++)
		cp = (cp << 6) | (s[i] & 0x3Fu);
	static const unsigned min[5] = { 0, 0, 0x80, 0x800, 0x10000 };
	if (cp < min[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
		return 0; /* overlong, out of range, surrogate */
	return len;
}

size_t agent_activity_clean(const char *in, size_t n, char *out, size_t cap)
{
	const unsigned char *s = (const unsigned char *)in;
	size_t o = 0, i = 0;
	if (cap == 0)
		return 0;
	while (i < n) {
		size_t len = act_utf8_len(s + i, n - i);
		const char *put = (const char *)s + i;
		size_t plen = len;
		if (len == 0) {        /* an invalid byte: U+FFFD */
			put = "\xEF\xBF\xBD";
			plen = 3;
			len = 1;
		} else if (len == 1 && (s[i] < 0x20 || s[i] == 0x7F)) {
			put = " ";     /* tab, CR, escapes: one space */
		}
		if (o + plen > cap - 1)
			break;         /* cut on a character boundary */
		memcpy(out + o, put, plen);
		o += plen;
		i += len;
	}
	while (o > 0 && out[o - 1] == ' ')
		o--;
	out[o] = '\0';
	return o;
}

/* Append one cleaned line to the feed (empty lines are skipped). */
static void act_emit(struct agent_activity *a, const char *line, size_t n)
{
	char clean[ACT_LINE_MAX + 1];
	if (agent_activity_clean(line, n, clean, sizeof clean) == 0 || a->lines > ACT_LINES_MAX)
		return;
	if (a->lines == ACT_LINES_MAX)
		snprintf(clean, sizeof clean, "(further activity lines of this iteration are not shown)");
	a->lines++;
	if (a->db == NULL || a->failed)
		return;
	json_object *o = json_object_new_object();
	json_object_object_add(o, "iteration", json_object_new_int64(a->iteration));
	json_object_object_add(o, "line", json_object_new_string(clean));
	struct db_arg args[] = { DB_ARG_TEXT(a->agent_id),
				 DB_ARG_TEXT(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN)) };
	enum db_status st = db_exec(a->db, "INSERT INTO agent_events (agent_id, type, data) VALUES (?, 'activity', ?)",
				    args, 2, NULL, 0, NULL, NULL, NULL, 0);
	json_object_put(o);
	if (st != DB_OK) {
		a->failed = true;
		log_msg(LOG_LVL_WARNING, "agent_activity", "agent %s: activity lines dropped: %s", a->agent_id,
			db_strerror(st));
	}
}

void agent_activity_feed(struct agent_activity *a, const char *data, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (data[i] == '\n') {
			act_emit(a, buf_cstr(&a->partial), a->partial.len);
			buf_reset(&a->partial);
		} else if (a->partial.len < ACT_LINE_MAX * 4) {
			buf_append(&a->partial, data + i, 1); /* the rest of an overlong line is cut */
		}
	}
}

void agent_activity_finish(struct agent_activity *a)
{
	if (a->partial.len)
		act_emit(a, a->partial.data, a->partial.len);
	buf_free(&a->partial);
}
