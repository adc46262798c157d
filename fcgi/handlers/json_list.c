/*
 * json_list: see json_list.h.
 */
#include "fcgi/handlers/json_list.h"

long long jl_next(struct json_list *l)
{
	if (l->n++)
		buf_putc(l->b, ',');
	return l->offset + l->n;
}

void jl_reply(struct fcgi_ctx *c, enum db_status st, const char *tail)
{
	struct buf *b = fcgi_body_buf(c);
	if (st != DB_OK) {
		buf_reset(b);
		fcgi_reply_db_error(c, st);
		return;
	}
	buf_puts(b, tail);
	fcgi_reply_buf(c, 200, "application/json");
}
