/*
 * wire.h: every constant the trusted side (C) and the strategy host
 * (Python) must agree on, defined once. The C side includes this header
 * (evaluator/runner/drive/protocol.h, stream.c, check_service.c); the host
 * reads it at import (agenttest_host/wire.py), so it ships next to the
 * Python files and is visible inside the box. docs/protocol.md explains
 * each one.
 *
 * Python parses it: keep every constant a single line
 * `#define WIRE_NAME value` whose value is a decimal or hex integer literal
 * or a "string" of printable ASCII, optionally followed by a comment. No
 * expressions, no suffixes (wire.py refuses anything else, so a mistake
 * fails loudly at the host's start and in tests/cli/test_host_wire.py).
 */
#ifndef AGENTTEST_HOST_WIRE_H
#define AGENTTEST_HOST_WIRE_H

/* ---- frames (docs/protocol.md, "Frames") ------------------------------- */

#define WIRE_FRAME_MAGIC      "ATP1"
#define WIRE_PROTOCOL_VERSION 1
#define WIRE_FRAME_HEADER_LEN 16
#define WIRE_FRAME_MAX_META   16777216   /* meta bytes the evaluator sends at most (16 MiB) */
#define WIRE_FRAME_MAX_BODY   1073741824 /* body bytes either way at most (1 GiB) */

/* requests (evaluator -> host) 0x01-0x7f, replies (host -> evaluator) 0x80-0xff */
#define WIRE_LOAD        0x01
#define WIRE_DATA        0x02
#define WIRE_RUN         0x03
#define WIRE_BYE         0x04
#define WIRE_CHECK       0x05
#define WIRE_STREAM      0x10
#define WIRE_READY       0x81
#define WIRE_LOADED      0x82
#define WIRE_OUTPUT      0x83
#define WIRE_COMPILED    0x84
#define WIRE_CHECKED     0x85
#define WIRE_ERROR       0x8f
#define WIRE_STREAMING   0x90
#define WIRE_STREAM_DONE 0x91

/* ---- the lockstep stream's shared memory (docs/challenges.md, "Exchange") */

#define WIRE_STREAM_MAGIC    "ATSTRM01"  /* first 8 bytes of the control page */
#define WIRE_STREAM_SLOT_OFF 4096        /* the embedding slot follows the control page */
/* control page: u32 word indexes (byte offset / 4) */
#define WIRE_CTL_SEQ_R       16          /* runner's sequence: bar t is there */
#define WIRE_CTL_CMD         17          /* WIRE_CMD_STEP or WIRE_CMD_DONE */
#define WIRE_CTL_RSLEEP      20          /* the runner sleeps on SEQ_H: wake it */
#define WIRE_CTL_SEQ_H       32          /* host's sequence: row t is in the slot */
#define WIRE_CTL_STATUS      33          /* 0 ok, 1 the strategy raised */
#define WIRE_CTL_DIM         34          /* values in the slot's row */
#define WIRE_CTL_HSLEEP      35          /* the host sleeps on SEQ_R */
/* control page: i64 indexes (byte offset / 8) */
#define WIRE_CTL_T           9           /* the bar of this step */
#define WIRE_CTL_STRATEGY_NS 18          /* host-measured time inside the strategy */
#define WIRE_CTL_COMPUTES    19          /* featurizer compute calls */
#define WIRE_CMD_STEP        0
#define WIRE_CMD_DONE        1
#define WIRE_SEQ_MAPPED      0xFFFFFFFF  /* seq_h: the host mapped the control page (then the runner seals) */
#define WIRE_SEQ_SEALED      0xFFFFFFFE  /* seq_r: the memfd is sealed against writes: map the market */

#endif
