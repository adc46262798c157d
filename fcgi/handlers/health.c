/*
 * GET /health: liveness and database reachability. For an anonymous caller
 * nothing else (no counts, no uptime: nothing that helps an attacker); the
 * database check is cached per worker for one second (app_db_healthy), so
 * the endpoint stays cheap under load. 200 {"ok":true,"status":"healthy",
 * "db":"ok","version":...}; 503 {"ok":false,"status":"unhealthy","db":"down",
 * ...} when MariaDB is down.
 *
 * An admin or a loopback client (route access ACCESS_PUBLIC_ADMIN_VIEW: a
 * failed credential is anonymous here, never a 401) also gets the agent
 * admission figures: "agents_running" (agents starting or running, the
 * count POST /api/agents admits against; null when the database is down)
 * and "max_agents" (MANTIS_MAX_AGENTS).
 */
#include "fcgi/app.h"
#include "fcgi/handlers/agents.h"
#include "fcgi/handlers/handlers.h"

#define HEALTH_VERSION AGENTTEST_VERSION

/* The admin view: the anonymous fields plus the agent counts. */
static void health_admin(struct fcgi_ctx *c, bool up)
{
	long long running = up ? ag_count_active(fcgi_db(c)) : -1;
	json_object *o = json_object_new_object();
	json_object_object_add(o, "ok", json_object_new_boolean(up));
	json_object_object_add(o, "status", json_object_new_string(up ? "healthy" : "unhealthy"));
	json_object_object_add(o, "db", json_object_new_string(up ? "ok" : "down"));
	json_object_object_add(o, "version", json_object_new_string(HEALTH_VERSION));
	json_object_object_add(o, "agents_running", running >= 0 ? json_object_new_int64(running) : NULL);
	json_object_object_add(o, "max_agents", json_object_new_int64(fcgi_ctx_app(c)->cfg->max_agents));
	fcgi_reply_json(c, up ? 200 : 503, o);
}

void h_health(struct fcgi_ctx *c)
{
	static const char ok[] = "{\"ok\":true,\"status\":\"healthy\",\"db\":\"ok\",\"version\":\"" HEALTH_VERSION "\"}";
	static const char down[] =
		"{\"ok\":false,\"status\":\"unhealthy\",\"db\":\"down\",\"version\":\"" HEALTH_VERSION "\"}";
	bool up = app_db_healthy(fcgi_ctx_app(c));
	if (fcgi_who(c)->admin)
		health_admin(c, up);
	else if (up)
		fcgi_reply_raw(c, 200, "application/json", ok, sizeof ok - 1);
	else
		fcgi_reply_raw(c, 503, "application/json", down, sizeof down - 1);
}
