/*
 * ch_prepare: from the caller's market to the series a challenge is scored
 * (and streamed) on.
 *
 * Memory: the prepared market points into the caller's columns whenever it
 * can (the common case: no gaps, a regular grid), so preparing is O(assets).
 * Copies are made only when alignment changes the data:
 *   mantis - the original aligns by row: every asset's existing bars are
 *            squeezed together and all assets are cut to the shortest
 *            (DataProvider's iloc[:min_len]); copies when any asset has a gap.
 *   strict - aligned by timestamp: the grid is the regular 1-minute grid from
 *            the first to the last timestamp, bars an asset lacks are NaN;
 *            copies when the timestamps skip minutes or a validity mask
 *            hides a finite value.
 * All copies live in one allocation (p->owned) released by ch_prepared_free.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "xalloc.h"
#include "evaluator/challenges/ch_internal.h"

#define CH_MINUTE_MS 60000

/* Column f (0 open .. 4 volume) of the input, asset a, or NULL. */
static const double *ch_incol(const struct ch_market *m, int f, size_t a)
{
	const double *const *c[5] = { m->open, m->high, m->low, m->close, m->volume };
	return c[f] != NULL ? c[f][a] : NULL;
}

/* Does bar t of asset a exist? */
static bool ch_bar_ok(const struct ch_market *m, size_t a, size_t t)
{
	if (m->valid != NULL && m->valid[a] != NULL && !m->valid[a][t])
		return false;
	return !isnan(m->close[a][t]);
}

/* Check the shape of the caller's market. */
static bool ch_market_ok(const struct ch_market *m, char *err, size_t errlen)
{
	if (m == NULL || m->T > CH_MAX_BARS || m->n_assets > CH_MAX_ASSETS ||
	    m->names == NULL || m->close == NULL) {
		snprintf(err, errlen, "market: missing columns or beyond limits (%zu bars max)",
		    (size_t)CH_MAX_BARS);
		return false;
	}
	for (size_t a = 0; a < m->n_assets; a++)
		if (m->names[a] == NULL || m->close[a] == NULL) {
			snprintf(err, errlen, "market: asset %zu has no name or no close column", a);
			return false;
		}
	if (m->n_fields > 0 && (m->field_names == NULL || m->fields == NULL)) {
		snprintf(err, errlen, "market: %zu fields declared without columns", m->n_fields);
		return false;
	}
	return true;
}

/* Index of asset `name` in m, or -1. */
static long ch_find_asset(const struct ch_market *m, const char *name)
{
	for (size_t a = 0; a < m->n_assets; a++)
		if (strcmp(m->names[a], name) == 0)
			return (long)a;
	return -1;
}

/* Index of field `name` in m, or -1. */
static long ch_find_field(const struct ch_market *m, const char *name)
{
	if (name == NULL)
		return -1;
	for (size_t f = 0; f < m->n_fields; f++)
		if (m->field_names[f] != NULL && strcmp(m->field_names[f], name) == 0)
			return (long)f;
	return -1;
}

/* Map each input bar to its slot on the regular minute grid (strict).
 * Returns the grid length, 0 on an error (message in err). */
static size_t ch_minute_grid(const struct ch_market *m, size_t **slot, char *err, size_t errlen)
{
	const int64_t *ts = m->ts;
	size_t n;

	*slot = NULL;
	for (size_t t = 1; t < m->T; t++)
		if (ts[t] <= ts[t - 1] || (ts[t] - ts[0]) % CH_MINUTE_MS != 0) {
			snprintf(err, errlen, "timestamps must increase on a 1-minute grid "
			    "(bar %zu: %lld after %lld)", t, (long long)ts[t], (long long)ts[t - 1]);
			return 0;
		}
	if (m->T == 0)
		return 0;
	n = (size_t)((ts[m->T - 1] - ts[0]) / CH_MINUTE_MS) + 1;
	if (n > CH_MAX_BARS) {
		snprintf(err, errlen, "timestamps span %zu minutes, more than %zu", n,
		    (size_t)CH_MAX_BARS);
		return 0;
	}
	if (n != m->T) {
		*slot = xcalloc(m->T, sizeof **slot);
		for (size_t t = 0; t < m->T; t++)
			(*slot)[t] = (size_t)((ts[t] - ts[0]) / CH_MINUTE_MS);
	}
	return n;
}

/* Strict: does any selected asset need a NaN-masked copy? */
static bool ch_needs_mask(const struct ch_market *m, const long *sel, size_t k)
{
	if (m->valid == NULL)
		return false;
	for (size_t i = 0; i < k; i++) {
		const unsigned char *v = m->valid[sel[i]];
		if (v == NULL)
			continue;
		for (size_t t = 0; t < m->T; t++)
			if (!v[t])
				return true;
	}
	return false;
}

/* Copy column src (input bars) of asset a into dst on the strict grid. */
static void ch_copy_strict(const struct ch_market *m, size_t a, const double *src,
    const size_t *slot, size_t n, double *dst)
{
	for (size_t t = 0; t < n; t++)
		dst[t] = NAN;
	for (size_t t = 0; t < m->T; t++)
		dst[slot ? slot[t] : t] = ch_bar_ok(m, a, t) ? src[t] : NAN;
}

/* Copy the existing bars of asset a, the first n of them (mantis). */
static void ch_copy_rows(const struct ch_market *m, size_t a, const double *src, size_t n,
    double *dst)
{
	size_t k = 0;
	for (size_t t = 0; t < m->T && k < n; t++)
		if (ch_bar_ok(m, a, t))
			dst[k++] = src[t];
}

/* Columns to carry: 5 OHLCV fields + the challenge's extra field. */
static const double *ch_src(const struct ch_market *m, int f, long fld, size_t a)
{
	if (f < 5)
		return ch_incol(m, f, a);
	return fld >= 0 ? m->fields[(size_t)fld * m->n_assets + a] : NULL;
}

/* Fill p->m from the selection, copying when `copy` (grid length n). */
static void ch_fill(struct ch_prepared *p, const struct ch_market *m, const long *sel, size_t k,
    long fld, bool copy, bool rows, const size_t *slot, size_t n)
{
	size_t used = 0, ncols = 0;

	for (size_t i = 0; copy && i < k; i++)
		for (int f = 0; f < 6; f++)
			ncols += ch_src(m, f, fld, (size_t)sel[i]) != NULL &&
			    (f < 5 ? p->cols[f] != NULL : p->fields != NULL);
	if (copy)
		p->owned = xcalloc(xmul(ncols ? ncols : 1, n ? n : 1), sizeof *p->owned);
	for (size_t i = 0; i < k; i++) {
		size_t a = (size_t)sel[i];
		p->names[i] = m->names[a];
		for (int f = 0; f < 6; f++) {
			const double *src = ch_src(m, f, fld, a);
			const double **dst = f < 5 ? p->cols[f] : p->fields;
			if (src == NULL || dst == NULL) {
				if (dst != NULL)
					dst[i] = NULL;
				continue;
			}
			if (!copy) {
				dst[i] = src;
				continue;
			}
			double *d = p->owned + used;
			used += n;
			if (rows)
				ch_copy_rows(m, a, src, n, d);
			else
				ch_copy_strict(m, a, src, slot, n, d);
			dst[i] = d;
		}
	}
}

/* Timestamps of the prepared grid (mantis: the first asset's bars). */
static void ch_fill_ts(struct ch_prepared *p, const struct ch_market *m, size_t a0, bool copy,
    bool rows, size_t n)
{
	int64_t *ts;
	size_t k = 0;

	if (m->ts == NULL || !copy) {
		p->m.ts = m->ts;
		return;
	}
	ts = xcalloc(n ? n : 1, sizeof *ts);
	for (size_t t = 0; rows && t < m->T && k < n; t++)
		if (ch_bar_ok(m, a0, t))
			ts[k++] = m->ts[t];
	for (size_t t = 0; !rows && t < n; t++)
		ts[t] = m->ts[0] + (int64_t)t * CH_MINUTE_MS;
	p->ts_owned = ts;
	p->m.ts = ts;
}

/*
 * A challenge's extra field (FUNDING-XSEC: funding_1h) must be carried for at
 * least one of the selected assets; otherwise say so in err (which field,
 * the fields the dataset has) and return false. No extra field: true.
 */
static bool ch_field_ok(const struct ch_def *def, const struct ch_market *m, const long *sel, size_t k,
    long fld, char *err, size_t errlen)
{
	size_t have = 0, used;
	if (def->field == NULL)
		return true;
	for (size_t i = 0; fld >= 0 && i < k; i++)
		have += m->fields[(size_t)fld * m->n_assets + (size_t)sel[i]] != NULL ? 1 : 0;
	if (have > 0)
		return true;
	if (fld >= 0) {
		snprintf(err, errlen, "%s needs the %s field and this dataset carries it for none of the "
		    "challenge's %zu assets", def->name, def->field, def->n_assets);
		return false;
	}
	int n = snprintf(err, errlen, "%s needs the %s field and this dataset has none (its fields: "
	    "open, high, low, close, volume", def->name, def->field);
	used = n > 0 ? (size_t)n : 0;
	for (size_t f = 0; f < m->n_fields && used < errlen; f++) {
		n = snprintf(err + used, errlen - used, ", %s", m->field_names[f] ? m->field_names[f] : "?");
		used += n > 0 ? (size_t)n : 0;
	}
	if (used < errlen)
		snprintf(err + used, errlen - used, "); evaluate it on a dataset fetched with CoinGlass data "
		    "(docs/market-data.md)");
	return false;
}

/* Select, align, and wrap the challenge's series. */
enum ch_err ch_prepare(const struct ch_def *def, enum ch_mode mode,
    const struct ch_market *m, struct ch_prepared **out, char *err, size_t errlen)
{
	char dummy[8];
	struct ch_prepared *p = NULL;
	long *sel = NULL, fld;
	size_t k = 0, n, *slot = NULL;
	bool copy = false, rows = mode == CH_MODE_MANTIS;
	enum ch_err rc = CH_ERR_INPUT;

	if (err == NULL || errlen == 0) {
		err = dummy;
		errlen = sizeof dummy;
	}
	err[0] = '\0';
	*out = NULL;
	if (def == NULL || (unsigned)mode >= CH_MODE__MAX) {
		snprintf(err, errlen, "unknown challenge or mode");
		return CH_ERR_INPUT;
	}
	if (!ch_market_ok(m, err, errlen))
		return CH_ERR_INPUT;
	sel = xcalloc(def->n_assets ? def->n_assets : 1, sizeof *sel);
	for (size_t i = 0; i < def->n_assets; i++) {
		long a = ch_find_asset(m, def->assets[i]);
		if (a >= 0)
			sel[k++] = a;
	}
	if (def->n_assets == 1 && k == 0) {
		snprintf(err, errlen, "the dataset has no %s prices", def->primary_asset);
		goto out;
	}
	fld = ch_find_field(m, def->field);
	if (!ch_field_ok(def, m, sel, k, fld, err, errlen))
		goto out;
	n = m->T;
	if (rows) {
		for (size_t i = 0; i < k; i++) {
			size_t c = 0;
			for (size_t t = 0; t < m->T; t++)
				c += ch_bar_ok(m, (size_t)sel[i], t) ? 1 : 0;
			copy = copy || c != m->T;
			n = c < n ? c : n;
		}
	} else {
		if (m->ts != NULL && m->T > 0) {
			n = ch_minute_grid(m, &slot, err, errlen);
			if (n == 0)
				goto out;
		}
		copy = slot != NULL || ch_needs_mask(m, sel, k);
	}
	p = xcalloc(1, sizeof *p);
	p->def = def;
	p->mode = mode;
	p->names = xcalloc(k ? k : 1, sizeof *p->names);
	{
		const double *const *in[5] = { m->open, m->high, m->low, m->close, m->volume };
		for (int f = 0; f < 5; f++)
			if (in[f] != NULL)
				p->cols[f] = xcalloc(k ? k : 1, sizeof *p->cols[f]);
	}
	if (def->field != NULL)
		p->fields = xcalloc(k ? k : 1, sizeof *p->fields);
	ch_fill(p, m, sel, k, fld, copy, rows, slot, n);
	ch_fill_ts(p, m, k ? (size_t)sel[0] : 0, copy, rows, n);
	p->m.T = n;
	p->m.n_assets = k;
	p->m.names = p->names;
	p->m.open = p->cols[0];
	p->m.high = p->cols[1];
	p->m.low = p->cols[2];
	p->m.close = p->cols[3];
	p->m.volume = p->cols[4];
	p->m.valid = NULL;
	if (p->fields != NULL) {
		p->field_name = def->field;
		p->m.n_fields = 1;
		p->m.field_names = &p->field_name;
		p->m.fields = p->fields;
	}
	*out = p;
	p = NULL;
	rc = CH_OK;
out:
	free(sel);
	free(slot);
	ch_prepared_free(p);
	return rc;
}

/* The aligned market. */
const struct ch_market *ch_prepared_market(const struct ch_prepared *p)
{
	return p != NULL ? &p->m : NULL;
}

/* Release a prepared series (NULL allowed). */
void ch_prepared_free(struct ch_prepared *p)
{
	if (p == NULL)
		return;
	free(p->names);
	for (int f = 0; f < 5; f++)
		free(p->cols[f]);
	free(p->fields);
	free(p->owned);
	free(p->ts_owned);
	free(p);
}
