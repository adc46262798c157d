/*
 * metrics.c: the Prometheus request counters (struct prom, prom_*) shared by
 * every worker; the backtest metrics are evaluator/metrics.h.
 *
 * Theory of operation. The master maps one anonymous MAP_SHARED region
 * before it forks, so every worker (and every replacement worker) writes the
 * same counters, and /metrics served by any worker reports the whole pool.
 * Counters are plain uint64_t cells updated with relaxed atomic adds (no
 * locks; a reader may see a histogram a few requests ahead of its count,
 * which Prometheus tolerates). The layout is fixed at start from the number
 * of routes: per route (plus one row for unmatched requests) a count per
 * status code, latency histogram buckets, and a latency sum.
 */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "common/xalloc.h"
#include "fcgi/app.h"

static const int prom_status[PROM_NSTATUS - 1] = {
	200, 201, 202, 204, 301, 302, 304, 400, 401, 403, 404,
	405, 409, 413, 415, 422, 429, 500, 502, 503, 504,
};
/* Upper bounds in microseconds; the last bucket is +Inf. */
static const uint64_t prom_bounds[PROM_NBUCKETS - 1] = {
	250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 1000000, 2500000, 10000000,
};

struct prom_row {
	uint64_t status[PROM_NSTATUS]; /* last cell: any other status */
	uint64_t bucket[PROM_NBUCKETS];
	uint64_t sum_us;
};

struct prom {
	size_t             nroutes;
	size_t             size;
	uint64_t           worker_restarts;
	uint64_t           db_reconnects;
	uint64_t           workers;
	struct prom_row row[]; /* nroutes + 1 */
};

struct prom *prom_new(size_t nroutes)
{
	size_t size = xadd(sizeof(struct prom), xmul(xadd(nroutes, 1), sizeof(struct prom_row)));
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	struct prom *m = p;
	memset(m, 0, size);
	m->nroutes = nroutes;
	m->size = size;
	return m;
}

void prom_free(struct prom *m)
{
	if (m != NULL)
		munmap(m, m->size);
}

/* Index of a status in prom_status, or the "other" cell. */
static size_t prom_status_index(int status)
{
	for (size_t i = 0; i < PROM_NSTATUS - 1; i++)
		if (prom_status[i] == status)
			return i;
	return PROM_NSTATUS - 1;
}

void prom_request(struct prom *m, size_t route, int status, uint64_t duration_us)
{
	if (m == NULL)
		return;
	if (route > m->nroutes)
		route = m->nroutes;
	struct prom_row *r = &m->row[route];
	size_t b = 0;
	while (b < PROM_NBUCKETS - 1 && duration_us > prom_bounds[b])
		b++;
	__atomic_fetch_add(&r->status[prom_status_index(status)], 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&r->bucket[b], 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&r->sum_us, duration_us, __ATOMIC_RELAXED);
}

void prom_worker_restart(struct prom *m)
{
	if (m != NULL)
		__atomic_fetch_add(&m->worker_restarts, 1, __ATOMIC_RELAXED);
}

void prom_db_reconnect(struct prom *m)
{
	if (m != NULL)
		__atomic_fetch_add(&m->db_reconnects, 1, __ATOMIC_RELAXED);
}

void prom_set_workers(struct prom *m, long n)
{
	if (m != NULL)
		__atomic_store_n(&m->workers, (uint64_t)n, __ATOMIC_RELAXED);
}

/* Read a counter. */
static uint64_t prom_load(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

/* Append the label value of a route (pattern or "unmatched") and method. */
static void prom_labels(struct buf *b, const struct fcgi_route *routes, size_t i, size_t n)
{
	if (i < n)
		buf_printf(b, "method=\"%s\",route=\"%s\"", req_method_name(routes[i].method), routes[i].pattern);
	else
		buf_puts(b, "method=\"\",route=\"unmatched\"");
}

void prom_render(const struct prom *m, const struct fcgi_route *routes, size_t nroutes, struct buf *b)
{
	if (nroutes > m->nroutes)
		nroutes = m->nroutes;
	buf_puts(b, "# HELP agenttest_http_requests_total Requests served, by route and status.\n"
	            "# TYPE agenttest_http_requests_total counter\n");
	for (size_t i = 0; i <= nroutes; i++) {
		const struct prom_row *r = &m->row[i == nroutes ? m->nroutes : i];
		for (size_t s = 0; s < PROM_NSTATUS; s++) {
			uint64_t v = prom_load(&r->status[s]);
			if (v == 0)
				continue;
			buf_puts(b, "agenttest_http_requests_total{");
			prom_labels(b, routes, i, nroutes);
			if (s < PROM_NSTATUS - 1)
				buf_printf(b, ",status=\"%d\"} %llu\n", prom_status[s], (unsigned long long)v);
			else
				buf_printf(b, ",status=\"other\"} %llu\n", (unsigned long long)v);
		}
	}
	buf_puts(b, "# HELP agenttest_http_request_duration_seconds Time from request start to response, by route.\n"
	            "# TYPE agenttest_http_request_duration_seconds histogram\n");
	for (size_t i = 0; i <= nroutes; i++) {
		const struct prom_row *r = &m->row[i == nroutes ? m->nroutes : i];
		uint64_t cum = 0;
		for (size_t k = 0; k < PROM_NBUCKETS; k++)
			cum += prom_load(&r->bucket[k]);
		if (cum == 0)
			continue;
		cum = 0;
		for (size_t k = 0; k < PROM_NBUCKETS; k++) {
			cum += prom_load(&r->bucket[k]);
			buf_puts(b, "agenttest_http_request_duration_seconds_bucket{");
			prom_labels(b, routes, i, nroutes);
			if (k < PROM_NBUCKETS - 1)
				buf_printf(b, ",le=\"%g\"} %llu\n", (double)prom_bounds[k] / 1e6, (unsigned long long)cum);
			else
				buf_printf(b, ",le=\"+Inf\"} %llu\n", (unsigned long long)cum);
		}
		buf_puts(b, "agenttest_http_request_duration_seconds_sum{");
		prom_labels(b, routes, i, nroutes);
		buf_printf(b, "} %.6f\n", (double)prom_load(&r->sum_us) / 1e6);
		buf_puts(b, "agenttest_http_request_duration_seconds_count{");
		prom_labels(b, routes, i, nroutes);
		buf_printf(b, "} %llu\n", (unsigned long long)cum);
	}
	buf_printf(b, "# HELP agenttest_db_reconnects_total Database connections re-established by workers.\n"
	              "# TYPE agenttest_db_reconnects_total counter\n"
	              "agenttest_db_reconnects_total %llu\n"
	              "# HELP agenttest_worker_restarts_total Workers that died and were restarted by the master.\n"
	              "# TYPE agenttest_worker_restarts_total counter\n"
	              "agenttest_worker_restarts_total %llu\n"
	              "# HELP agenttest_workers Configured worker processes.\n"
	              "# TYPE agenttest_workers gauge\n"
	              "agenttest_workers %llu\n",
	           (unsigned long long)prom_load(&m->db_reconnects),
	           (unsigned long long)prom_load(&m->worker_restarts),
	           (unsigned long long)prom_load(&m->workers));
}
