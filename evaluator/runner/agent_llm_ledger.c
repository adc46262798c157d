/*
 * agent_llm_ledger: the usage of an LLM turn whose harness never reported
 * it (agent_job.c).
 *
 * Theory of operation. The egress proxy of a turn writes what it meters
 * into the turn ledger <root>/llm/turn.json after every answer, before the
 * client sees the answer's end (egress/ledger.c), so the file always holds
 * what the upstream has been asked for so far. The harness reads it when
 * the turn ends and reports it as llm_usage, which the runner charges in
 * the iteration's finishing transaction. When the harness fails instead
 * (it crashed, was killed, or its runner died) nothing reports that usage,
 * yet it was spent: the runner takes the ledger file itself. "Take" means
 * read and remove, so each turn's usage is charged once: the runner takes
 * (and drops) the file as soon as a harness result carries llm_usage,
 * takes and charges it after a failed harness, and takes and charges a
 * leftover before the next attempt starts (one whose runner died before
 * either). The take holds the proxy's flock on the file (egress_ledger_lock),
 * so a proxy child that read the file before the take cannot write those
 * totals back after it: its write-back holds only what it adds, charged by
 * the next take. The directory is the runner's (0700, never bound into the
 * sandbox), so the agent cannot forge or remove the file.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "evaluator/runner/agent.h"
#include "evaluator/runner/egress/egress.h"

int agent_llm_take_ledger(const char *root, json_object **usage, struct buf *err)
{
	char path[AGENT_PATH_MAX + 64];
	struct egress_totals t;
	*usage = NULL;
	if ((size_t)snprintf(path, sizeof path, "%s/llm/turn.json", root) >= sizeof path) {
		buf_puts(err, "the agent directory's path is too long");
		return -1;
	}
	if (access(path, F_OK) != 0) {
		if (errno == ENOENT)
			return 0;
		buf_printf(err, "%s: %s", path, strerror(errno));
		return -1;
	}
	/* under the proxy's lock: a proxy child still finishing a request
	 * (it read the file, it has not written it back yet) must not put back
	 * the totals taken here, or the next attempt would charge them again */
	int lk = egress_ledger_lock(path);
	if (lk < 0) {
		buf_printf(err, "cannot lock %s: %s", path, strerror(errno));
		return -1;
	}
	if (access(path, F_OK) != 0 && errno == ENOENT) {
		close(lk);
		return 0;   /* taken by someone else meanwhile */
	}
	bool ok = egress_totals_read(path, &t);
	int ue = unlink(path) != 0 ? errno : 0;
	close(lk);
	if (ue && ue != ENOENT) {
		buf_printf(err, "cannot remove %s: %s", path, strerror(ue));
		return -1;   /* kept: charging it now could charge it twice */
	}
	if (!ok) {
		buf_printf(err, "%s is not a turn ledger (removed)", path);
		return -1;
	}
	json_object *tk = json_object_new_object(), *u = json_object_new_object();
	json_object_object_add(tk, "input", json_object_new_int64(t.u.input));
	json_object_object_add(tk, "output", json_object_new_int64(t.u.output));
	json_object_object_add(tk, "cache_write", json_object_new_int64(t.u.cache_write));
	json_object_object_add(tk, "cache_read", json_object_new_int64(t.u.cache_read));
	json_object_object_add(tk, "total", json_object_new_int64(egress_tokens(&t.u)));
	json_object_object_add(tk, "requests", json_object_new_int64(t.requests));
	json_object_object_add(tk, "refused", json_object_new_int64(t.refused));
	json_object_object_add(tk, "cost", json_object_new_double(t.usd));
	json_object_object_add(u, "tokens", tk);
	json_object_object_add(u, "exhausted", json_object_new_string(t.exhausted));
	*usage = u;
	return 1;
}
