/*
 * GET /health: liveness and database reachability, nothing else (no counts,
 * no uptime: nothing that helps an attacker). The database check is cached
 * per worker for one second (app_db_healthy), so the endpoint stays cheap
 * under load. 200 {"ok":true,"status":"healthy","db":"ok","version":...};
 * 503 {"ok":false,"status":"unhealthy","db":"down",...} when MariaDB is down.
 */
#include "fcgi/app.h"
#include "fcgi/handlers/handlers.h"

#define HEALTH_VERSION AGENTTEST_VERSION

void h_health(struct fcgi_ctx *c)
{
	static const char ok[] = "{\"ok\":true,\"status\":\"healthy\",\"db\":\"ok\",\"version\":\"" HEALTH_VERSION "\"}";
	static const char down[] =
		"{\"ok\":false,\"status\":\"unhealthy\",\"db\":\"down\",\"version\":\"" HEALTH_VERSION "\"}";
	if (app_db_healthy(fcgi_ctx_app(c)))
		fcgi_reply_raw(c, 200, "application/json", ok, sizeof ok - 1);
	else
		fcgi_reply_raw(c, 503, "application/json", down, sizeof down - 1);
}
