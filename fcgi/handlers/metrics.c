/*
 * GET /metrics: Prometheus text exposition of the pool's shared counters
 * (requests by route and status, latency histogram, database reconnects,
 * worker restarts). Admin callers, or loopback clients (a local scraper)
 * even when authentication is required.
 */
#include "fcgi/app.h"
#include "fcgi/handlers/handlers.h"

void h_metrics(struct fcgi_ctx *c)
{
	struct fcgi_app *app = fcgi_ctx_app(c);
	struct buf *b = fcgi_body_buf(c);
	if (app->metrics == NULL) {
		fcgi_reply_error(c, 503, "unavailable", "metrics are not enabled in this process");
		return;
	}
	metrics_render(app->metrics, app->routes, app->nroutes, b);
	fcgi_reply_buf(c, 200, "text/plain; version=0.0.4; charset=utf-8");
}
