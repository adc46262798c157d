/*
 * strategy_check: the syntax and contract check of a submission, run in the
 * sandbox (POST /strategies/submit, POST /strategies).
 *
 * The API worker never parses or runs strategy code itself. It starts a
 * confined strategy host (one-shot, not the zygote: a check needs no numpy
 * and a worker should not keep an interpreter around), sends one CHECK
 * frame (type 0x05, body = the source bytes) and reads one CHECKED frame
 * (0x85, meta = the answer of sandbox/host/agenttest_host/check.py). The host
 * only runs `ast.parse` on the source: nothing of it is compiled into code
 * that runs, imported or executed. Limits: 5 s CPU, 10 s wall, 256 MiB,
 * 64 KiB of output. The answer is hostile input like any host output: the
 * meta is size-capped and parsed strictly, and only known fields are used.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "common/log.h"
#include "evaluator/protocol.h"
#include "fcgi/handlers/runs_view.h"
#include "sandbox/sandbox.h"

#define CHECK_REQ   0x05
#define CHECK_REPLY 0x85
#define CHECK_BOX_BASE 5000u
#define CHECK_BOX_SPAN 4000u

/* The answer of the host as a JSON object (new reference) or NULL with why in err. */
static json_object *ask_host(const char *code, size_t len, char *err, size_t errlen)
{
	struct sbx_spec spec = {
		.mode = SBX_CONFINED,
		.limits = { .cpu_seconds = 5, .wall_seconds = 10, .memory_bytes = 256u << 20, .output_bytes = 64u << 10 },
		.box_id = CHECK_BOX_BASE + (uint32_t)getpid() % CHECK_BOX_SPAN,
	};
	struct sbx_run run;
	struct sbx_verdict v;
	struct proto_conn pc;
	struct proto_hdr h;
	struct buf meta = BUF_INIT;
	json_object *answer = NULL;
	/* one-shot sandbox: no zygote per API worker */
	setenv("AGENTTEST_SANDBOX_ZYGOTE", "0", 1);
	if (sbx_start(&spec, &run, err, errlen) != 0) {
		/* a start-up failure of the sandbox is not the submission's fault:
		 * log it and try once more before answering 503 */
		log_msg(LOG_LVL_WARNING, "check_sandbox_start_failed", "%s", err);
		struct timespec pause = { 0, 50 * 1000 * 1000 };
		nanosleep(&pause, NULL);
		if (sbx_start(&spec, &run, err, errlen) != 0)
			return NULL;
	}
	proto_conn_init(&pc, run.to_host, run.from_host, run.log_fd, proto_now() + 10.0);
	enum proto_status st = proto_recv(&pc, &h, &meta, NULL, PROTO_MAX_META_IN, 0);
	if (st == PROTO_OK && h.type == PROTO_READY) {
		buf_reset(&meta);
		st = proto_send(&pc, CHECK_REQ, NULL, 0, code, len);
		if (st == PROTO_OK)
			st = proto_recv(&pc, &h, &meta, NULL, PROTO_MAX_META_IN, 0);
	}
	if (st != PROTO_OK)
		snprintf(err, errlen, "strategy host: %s", proto_status_str(st));
	else if (h.type != CHECK_REPLY)
		snprintf(err, errlen, "strategy host answered frame 0x%02x to CHECK", h.type);
	else if (!(answer = json_tokener_parse(buf_cstr(&meta))) || !json_object_is_type(answer, json_type_object)) {
		json_object_put(answer);
		answer = NULL;
		snprintf(err, errlen, "strategy host sent a malformed CHECK answer");
	}
	if (st == PROTO_OK)
		(void)proto_send(&pc, PROTO_BYE, NULL, 0, NULL, 0);
	proto_conn_free(&pc);
	if (!answer)
		sbx_kill(&run);
	sbx_finish(&run, &v);
	if (!answer && v.status != SBX_OK && err[0] && strstr(err, "strategy host:"))
		snprintf(err, errlen, "the check ended with sandbox status %s: %s", sbx_status_code(v.status), v.message);
	buf_free(&meta);
	return answer;
}

/* String field of o, or def. */
static const char *field(json_object *o, const char *k, const char *def)
{
	json_object *v;
	return json_object_object_get_ex(o, k, &v) && json_object_is_type(v, json_type_string)
		       ? json_object_get_string(v) : def;
}

/* Integer field of o clamped to [0, 1e9], or 0. */
static long long ifield(json_object *o, const char *k)
{
	json_object *v;
	if (!json_object_object_get_ex(o, k, &v) || !json_object_is_type(v, json_type_int))
		return 0;
	long long x = json_object_get_int64(v);
	return x < 0 ? 0 : x > 1000000000 ? 1000000000 : x;
}

/* Reply 400 for a syntax error: {"error","code","detail","line","column"}. */
static void reply_syntax(struct fcgi_ctx *c, json_object *a)
{
	long long line = ifield(a, "line"), col = ifield(a, "column");
	char msg[512];
	snprintf(msg, sizeof msg, "syntax error at line %lld, column %lld: %.300s", line, col,
		 field(a, "message", "invalid syntax"));
	json_object *o = json_object_new_object();
	json_object_object_add(o, "error", json_object_new_string(msg));
	json_object_object_add(o, "code", json_object_new_string("invalid_field"));
	json_object_object_add(o, "detail", json_object_new_string(msg));
	json_object_object_add(o, "line", json_object_new_int64(line));
	json_object_object_add(o, "column", json_object_new_int64(col));
	fcgi_reply_json(c, 400, o);
}

bool st_check_code(struct fcgi_ctx *c, const char *code, size_t len, char kind[16])
{
	char err[512] = "";
	json_object *a = ask_host(code, len, err, sizeof err);
	bool ok = false;
	if (!a) {
		fcgi_reply_error(c, 503, "unavailable", "the code check could not run: %s", err);
		return false;
	}
	json_object *okv;
	const char *what = field(a, "error", "");
	if (json_object_object_get_ex(a, "ok", &okv) && json_object_get_boolean(okv)) {
		const char *k = field(a, "kind", "");
		if (strcmp(k, "simulate") == 0 || strcmp(k, "positions") == 0 || strcmp(k, "signal") == 0) {
			snprintf(kind, 16, "%s", k);
			ok = true;
		} else {
			fcgi_reply_error(c, 500, "internal", "the code check returned an unknown kind");
		}
	} else if (strcmp(what, "syntax") == 0) {
		reply_syntax(c, a);
	} else {
		fcgi_reply_error(c, 400, "invalid_field", "%.400s", field(a, "message", "code does not define a strategy"));
	}
	json_object_put(a);
	return ok;
}
