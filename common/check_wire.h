/*
 * check_wire.h: the wire format of the runner's code-check service, the
 * contract the API pool (client) and the runner (server) share.
 *
 * The pool asks the runner, which owns the sandbox, whether submitted code
 * parses and defines the contract (the pool never starts a sandbox: DESIGN,
 * trust boundaries). Client: fcgi/handlers/strategy_check.c; server:
 * evaluator/runner/check_service.c; protocol: docs/runner.md. Nothing of
 * either side's internals is here, so the pool links common/ alone.
 *
 * Wire format: one request and one answer per connection, each a 12-byte
 * header and a body.
 *
 *   offset 0  magic   4 bytes  "ATCQ" (request) or "ATCA" (answer)
 *   offset 4  version 1 byte   CHECK_WIRE_VERSION
 *   offset 5  code    1 byte   request: enum check_op; answer: enum check_status
 *   offset 6  zero    2 bytes
 *   offset 8  length  uint32, little-endian: body bytes that follow
 *
 * A request body is the source code (at most CHECK_CODE_MAX bytes; empty
 * for a ping). An answer body is one JSON object of at most
 * CHECK_ANSWER_MAX bytes: for CHECK_ST_ANSWER the verdict
 * {"ok":true,"kind":...} or {"ok":false,"error":"syntax"|"contract"|
 * "encoding"|"limit","message":...,"line":L,"column":C,"missing":[...]};
 * for the other statuses {"message":...}. Both sides check the header
 * (magic, version, code, zero bytes, length limit) before reading a body.
 */
#ifndef AGENTTEST_COMMON_CHECK_WIRE_H
#define AGENTTEST_COMMON_CHECK_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CHECK_WIRE_VERSION   1
#define CHECK_HDR_LEN        12
#define CHECK_CODE_MAX       (256u * 1024u)  /* = the API's code limit */
#define CHECK_ANSWER_MAX     (16u * 1024u)
#define CHECK_SOCKET_NAME    "check.sock"
#define CHECK_SOCKET_DEFAULT "/run/agenttest-check/check.sock"
/*
 * The version of the check itself (sandbox/host/agenttest_host/check.py
 * and the Python that parses with it): the API caches verdicts under
 * (code_hash, CHECK_CHECKER_VERSION) in the code_checks table. Bump it with
 * every change of check.py (and of the host's Python minor version);
 * CHECK_CHECKER_SHA256 is check.py's SHA-256, which a unit test compares
 * with the file so that a change cannot forget the bump.
 */
#define CHECK_CHECKER_VERSION "check-1/py3.11"
#define CHECK_CHECKER_SHA256  "0beb5b3de2b3fe8747a2f08b76cafcf70e9ab982654cf1cf30aa4d04600ccf4d"

enum check_magic { CHECK_REQUEST, CHECK_ANSWER };

enum check_op {
	CHECK_OP_PING     = 0,   /* empty body; answered at once (readiness) */
	CHECK_OP_STRATEGY = 1,   /* body: strategy source; the CHECK frame */
	CHECK_OP__MAX
};

enum check_status {
	CHECK_ST_ANSWER = 0,     /* the check ran: the verdict */
	CHECK_ST_BUSY   = 1,     /* too many checks waiting; try again shortly */
	CHECK_ST_FAILED = 2,     /* the check could not run (sandbox trouble) */
	CHECK_ST_BAD    = 3,     /* the request was malformed */
	CHECK_ST__MAX
};

/* Write a header for (kind, code, len) into out. */
void check_hdr_encode(uint8_t out[CHECK_HDR_LEN], enum check_magic kind, unsigned code, uint32_t len);

/*
 * Validate a received header of the given kind: magic, version, zero bytes,
 * code below `ncodes`, length at most `max`. Returns 0 and fills *code and
 * *len, or -1.
 */
int check_hdr_decode(const uint8_t in[CHECK_HDR_LEN], enum check_magic kind, unsigned ncodes, uint32_t max,
		     unsigned *code, uint32_t *len);

/*
 * The check socket path: `configured` (AGENTTEST_CHECK_SOCKET) when set,
 * else <notify_dir>/check.sock when RUNNER_NOTIFY_DIR is set, else
 * CHECK_SOCKET_DEFAULT. Returns 0, or -1 if it is not absolute or does not
 * fit a sockaddr_un (out then empty).
 */
int check_socket_path(const char *configured, const char *notify_dir, char *out, size_t outlen);

#endif
