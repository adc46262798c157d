/*
 * protocol: the framed binary protocol between the trusted evaluator and the
 * Python strategy host (docs/protocol.md is the full specification).
 *
 * A frame is a 16-byte header, a JSON "meta" part and a binary "body":
 *
 *   offset size  field
 *   0      4     magic "ATP1"
 *   4      2     type      (u16 little-endian, table below)
 *   6      2     flags     (u16, must be 0)
 *   8      4     meta_len  (u32 LE, bytes of UTF-8 JSON object, may be 0)
 *   12     4     body_len  (u32 LE, bytes of binary body, may be 0)
 *
 * Bodies that carry series are float64 little-endian arrays. The evaluator
 * treats everything the host sends as hostile: the header is checked before
 * a single byte of payload is read, meta is capped (PROTO_MAX_META_IN) and
 * must be a JSON object, a body must have exactly the size the request
 * implies (8 bytes per requested bar) and is read straight into the
 * caller's array, and any violation ends the run.
 *
 * I/O runs on non-blocking pipes under poll(2) with a wall-clock deadline,
 * and the host's stderr is drained in the same loop (its tail is kept for
 * error reports), so neither side can deadlock on a full pipe whatever the
 * result size (the original deadlocked above ~7,300 floats).
 */
#ifndef AGENTTEST_RUNNER_DRIVE_PROTOCOL_H
#define AGENTTEST_RUNNER_DRIVE_PROTOCOL_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "sandbox/host/agenttest_host/wire.h"

/* the values both ends must agree on are defined once, in wire.h */
#define PROTO_MAGIC        WIRE_FRAME_MAGIC
#define PROTO_VERSION      WIRE_PROTOCOL_VERSION
#define PROTO_HEADER_LEN   WIRE_FRAME_HEADER_LEN
#define PROTO_MAX_META_IN  (64u * 1024u)        /* meta bytes accepted from the host */
#define PROTO_MAX_META_OUT ((uint32_t)WIRE_FRAME_MAX_META) /* meta bytes we send (params) */
#define PROTO_MAX_BODY     ((uint32_t)WIRE_FRAME_MAX_BODY) /* any body, either direction */
#define PROTO_LOG_TAIL     (16u * 1024u)        /* stderr bytes kept */

/*
 * Frame types. Requests (evaluator → host) are 0x01-0x7f, replies
 * (host → evaluator) 0x80-0xff. 0x10-0x1f and 0x90-0x9f are reserved for
 * lockstep streaming (featurizer/predictor strategies fed one step at a
 * time); a host answers an unknown request type with an ERROR frame.
 */
enum proto_type {
	PROTO_LOAD = WIRE_LOAD,     /* meta {"kind","filename"}, body = source bytes */
	PROTO_DATA = WIRE_DATA,     /* meta {"bars":N}, body = N float64 prices */
	PROTO_RUN = WIRE_RUN,       /* meta {"bars":n,"params":{...}}: call on prices[:n] */
	PROTO_BYE = WIRE_BYE,       /* no payload: the host exits 0 */
	PROTO_CHECK = WIRE_CHECK,   /* body = source: syntax/contract check (check_service.c) */
	PROTO_STREAM = WIRE_STREAM, /* meta = layout, body = source, fd 3 the market (stream.c) */
	PROTO_READY = WIRE_READY,   /* meta {"protocol":1,"python":..,"numpy":..} */
	PROTO_LOADED = WIRE_LOADED, /* meta {"kind":..,"load_s":..} */
	PROTO_OUTPUT = WIRE_OUTPUT, /* meta {"bars":n,"host_s":..}, body = n float64 */
	PROTO_COMPILED = WIRE_COMPILED, /* body = the marshalled code of a LOAD with want_code */
	PROTO_CHECKED = WIRE_CHECKED,         /* meta = the check's verdict */
	PROTO_ERROR = WIRE_ERROR,             /* meta {"code","type","message","traceback":[..],"phase"} */
	PROTO_STREAMING = WIRE_STREAMING,     /* meta {"warmup","compute_interval"} */
	PROTO_STREAM_DONE = WIRE_STREAM_DONE, /* meta {"steps","compute_calls","strategy_s"} */
};

enum proto_status {
	PROTO_OK = 0,
	PROTO_EOF,        /* the peer closed its end (or died) */
	PROTO_TIMEOUT,    /* the deadline passed */
	PROTO_MALFORMED,  /* bad magic, flags, type or meta */
	PROTO_TOO_BIG,    /* a length above the cap or not what was asked */
	PROTO_IO,         /* an unexpected system error (errno) */
	PROTO_STATUS__MAX
};

struct proto_hdr {
	uint16_t type;
	uint32_t meta_len;
	uint32_t body_len;
};

#define PROTO_RBUF 4096u   /* bytes read ahead from the host's stdout */
/* One connection to a host: our ends of its stdin, stdout and stderr. */
struct proto_conn {
	int        wfd;      /* frames to the host */
	int        rfd;      /* frames from the host */
	int        logfd;    /* the host's stderr (the caller's: never closed here), or -1 once at its end */
	double     deadline; /* CLOCK_MONOTONIC seconds; 0: none */
	struct buf log;      /* last PROTO_LOG_TAIL bytes of stderr */
	uint64_t   log_total;
	/* read-ahead: one read(2) usually takes a whole small frame (header,
	 * meta, body) instead of one call per part; rbuf[roff..rlen) is what
	 * was read from rfd and not consumed yet (see proto_buffered) */
	uint32_t   roff, rlen;
	uint8_t    rbuf[PROTO_RBUF];
};
/* One frame to send: type, meta and body (either may be NULL with length 0). */
struct proto_frame {
	uint16_t    type;
	const void *meta;
	size_t      meta_len;
	const void *body;
	size_t      body_len;
};

/* Text for a status ("eof", "timeout", ...). */
const char *proto_status_str(enum proto_status s);

/* Write the header for (type, meta_len, body_len) into out. */
void proto_header_encode(uint8_t out[PROTO_HEADER_LEN], uint16_t type, uint32_t meta_len, uint32_t body_len);

/*
 * Decode and validate a header received from the host: magic, zero flags,
 * a reply type (0x80-0xff), meta_len <= max_meta, body_len <= max_body.
 * Returns PROTO_OK, PROTO_MALFORMED or PROTO_TOO_BIG.
 */
enum proto_status proto_header_decode(const uint8_t in[PROTO_HEADER_LEN], struct proto_hdr *h,
				      uint32_t max_meta, uint32_t max_body);

/* Set up c over the three fds (made non-blocking); deadline 0 = none. */
void proto_conn_init(struct proto_conn *c, int wfd, int rfd, int logfd, double deadline);
/* Release the log buffer (the fds belong to the caller). */
void proto_conn_free(struct proto_conn *c);

/* Send one frame (meta may be NULL with meta_len 0, same for body). */
enum proto_status proto_send(struct proto_conn *c, uint16_t type, const void *meta, size_t meta_len,
			     const void *body, size_t body_len);
/*
 * Send n frames (n <= PROTO_SENDV_MAX) in one writev(2) where the pipe
 * takes them whole: the host wakes once for the lot instead of once per
 * part, and frames it reads in order are exactly those of n proto_send
 * calls. PROTO_TOO_BIG (nothing sent) if a frame is out of bounds.
 */
#define PROTO_SENDV_MAX 4
enum proto_status proto_sendv(struct proto_conn *c, const struct proto_frame *f, size_t n);

/*
 * Receive one frame: header (validated with max_meta and body_cap), meta
 * appended to `meta` (NUL-terminated), body read into body[0..body_len)
 * (body may be NULL only if body_cap is 0).
 */
enum proto_status proto_recv(struct proto_conn *c, struct proto_hdr *h, struct buf *meta,
			     void *body, uint32_t max_meta, uint32_t body_cap);

/* Bytes read from the host's stdout and not consumed by proto_recv yet: a
 * caller that polls rfd itself must look here first (a frame may already
 * be in the read-ahead, and poll would not see it). */
size_t proto_buffered(const struct proto_conn *c);
/* Read whatever stderr the host has left (until EOF or `wait` seconds;
 * wait <= 0: only what is there now, without blocking). */
void proto_drain_log(struct proto_conn *c, double wait);

/* Seconds on CLOCK_MONOTONIC. */
double proto_now(void);

#endif
