/*
 * json_list: the JSON array a db_exec row callback writes into the response
 * body, one element a row, with a comma before all but the first. Shared by
 * the list routes (defaults, updater, datasets, leaderboards) so that each
 * handler writes only its element and its envelope.
 */
#ifndef AGENTTEST_FCGI_JSON_LIST_H
#define AGENTTEST_FCGI_JSON_LIST_H

#include "buf.h"
#include "db.h"
#include "fcgi/handler.h"

/* One array being written: pass a pointer as the row callback's ctx. */
struct json_list {
	struct buf *b;       /* where the elements go (usually fcgi_body_buf) */
	long long   n;       /* elements written so far */
	long long   offset;  /* ranks start after this (a board's OFFSET); 0 otherwise */
};

/* A list on b whose ranks start at offset + 1. */
#define JSON_LIST(b, offset) ((struct json_list){ (b), 0, (offset) })

/*
 * Begin the next element of l: append ',' unless it is the first, count it,
 * and return its rank (offset + its 1-based position). The caller then
 * appends the element itself.
 */
long long jl_next(struct json_list *l);

/*
 * End a list route whose db_exec returned st: on DB_OK append tail (what
 * closes the array and the envelope, e.g. "]}") to the body and reply 200
 * application/json; otherwise drop what was written and reply the database
 * error (fcgi_reply_db_error).
 */
void jl_reply(struct fcgi_ctx *c, enum db_status st, const char *tail);

#endif
