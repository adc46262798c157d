#include "dburl.h"

#include <string.h>

#include <sodium.h>

#include "parse.h"
#include "xalloc.h"

/* Percent-decode [s, s+n) into a new string, or NULL on a bad escape. */
static char *dburl_decode(const char *s, size_t n)
{
	char *d = xmalloc(xadd(n, 1));
	size_t dl;
	if (!parse_pct_decode(s, n, false, d, &dl)) {
		free(d);
		return NULL;
	}
	return d;
}

/* Parse the authority "[user[:pass]@]host[:port]" of n bytes. */
static bool dburl_authority(const char *s, size_t n, struct dburl *u, struct buf *err)
{
	const char *at = memrchr(s, '@', n);
	const char *h = s;
	size_t hn = n;
	if (at != NULL) {
		size_t un = (size_t)(at - s);
		const char *colon = memchr(s, ':', un);
		size_t namelen = colon ? (size_t)(colon - s) : un;
		if (namelen == 0) {
			buf_puts(err, "DATABASE_URL: empty user name before '@'");
			return false;
		}
		u->user = dburl_decode(s, namelen);
		if (colon != NULL)
			u->password = dburl_decode(colon + 1, un - namelen - 1);
		if (u->user == NULL || (colon != NULL && u->password == NULL)) {
			buf_puts(err, "DATABASE_URL: bad percent-encoding in the user or password");
			return false;
		}
		h = at + 1;
		hn = n - un - 1;
	}
	const char *port = NULL;
	size_t portn = 0;
	if (hn > 0 && h[0] == '[') {
		const char *close = memchr(h, ']', hn);
		if (close == NULL) {
			buf_puts(err, "DATABASE_URL: unterminated '[' in the host");
			return false;
		}
		u->host = xstrndup(h + 1, (size_t)(close - h - 1));
		size_t rest = hn - (size_t)(close - h) - 1;
		if (rest > 0) {
			if (close[1] != ':') {
				buf_puts(err, "DATABASE_URL: unexpected text after ']'");
				return false;
			}
			port = close + 2;
			portn = rest - 1;
		}
	} else {
		const char *colon = memchr(h, ':', hn);
		size_t name = colon ? (size_t)(colon - h) : hn;
		u->host = dburl_decode(h, name);
		if (u->host == NULL) {
			buf_puts(err, "DATABASE_URL: bad percent-encoding in the host");
			return false;
		}
		if (colon != NULL) {
			port = colon + 1;
			portn = hn - name - 1;
		}
	}
	for (const char *p = u->host; *p; p++)
		if (!(( *p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		      *p == '.' || *p == '-' || *p == ':' || *p == '_')) {
			buf_puts(err, "DATABASE_URL: invalid character in the host");
			return false;
		}
	if (port != NULL) {
		int64_t v;
		if (!parse_int(port, portn, 1, 65535, &v)) {
			buf_puts(err, "DATABASE_URL: the port must be a number from 1 to 65535");
			return false;
		}
		u->port = (unsigned)v;
	}
	return true;
}

/* Parse the query "socket=/path" of n bytes. */
static bool dburl_query(const char *s, size_t n, struct dburl *u, struct buf *err)
{
	while (n > 0) {
		const char *amp = memchr(s, '&', n);
		size_t pn = amp ? (size_t)(amp - s) : n;
		if (pn > 7 && memcmp(s, "socket=", 7) == 0) {
			if (u->socket != NULL) {
				buf_puts(err, "DATABASE_URL: 'socket' given twice");
				return false;
			}
			u->socket = dburl_decode(s + 7, pn - 7);
			if (u->socket == NULL || u->socket[0] != '/') {
				buf_puts(err, "DATABASE_URL: socket= must be an absolute path");
				return false;
			}
		} else {
			buf_printf(err, "DATABASE_URL: unknown parameter '%.*s' (only socket= is accepted)",
			           (int)(pn > 40 ? 40 : pn), s);
			return false;
		}
		s += pn;
		n -= pn;
		if (amp != NULL) {
			s++;
			n--;
			if (n == 0) {
				buf_puts(err, "DATABASE_URL: trailing '&'");
				return false;
			}
		}
	}
	return true;
}

bool dburl_parse(const char *url, struct dburl *out, struct buf *err)
{
	struct dburl u = { 0 };
	size_t n = strlen(url);
	const char *p;
	bool ok = false;

	if (n > DBURL_MAX) {
		buf_puts(err, "DATABASE_URL is too long");
		goto out;
	}
	if (strncmp(url, "mariadb://", 10) == 0)
		p = url + 10;
	else if (strncmp(url, "mysql://", 8) == 0)
		p = url + 8;
	else {
		buf_puts(err, "DATABASE_URL must start with mariadb://");
		goto out;
	}
	for (const char *c = url; *c; c++)
		if ((unsigned char)*c <= 0x20 || (unsigned char)*c >= 0x7f) {
			buf_puts(err, "DATABASE_URL contains a space or a non-ASCII byte (percent-encode it)");
			goto out;
		}
	const char *slash = strchr(p, '/');
	if (slash == NULL) {
		buf_puts(err, "DATABASE_URL: missing /database");
		goto out;
	}
	if (!dburl_authority(p, (size_t)(slash - p), &u, err))
		goto out;
	const char *q = strchr(slash, '?');
	size_t dbn = q ? (size_t)(q - slash - 1) : strlen(slash + 1);
	u.database = dburl_decode(slash + 1, dbn);
	if (u.database == NULL || u.database[0] == '\0' || strchr(u.database, '/') != NULL) {
		buf_puts(err, "DATABASE_URL: missing or invalid database name");
		goto out;
	}
	if (q != NULL && !dburl_query(q + 1, strlen(q + 1), &u, err))
		goto out;
	if (u.host[0] == '\0') {
		if (u.socket == NULL) {
			buf_puts(err, "DATABASE_URL: missing host");
			goto out;
		}
		free(u.host);
		u.host = xstrdup("localhost");
	}
	if (u.socket != NULL && strcmp(u.host, "localhost") != 0) {
		buf_puts(err, "DATABASE_URL: socket= needs the host 'localhost'");
		goto out;
	}
	if (u.socket != NULL && u.port != 0) {
		buf_puts(err, "DATABASE_URL: give either a port or socket=, not both");
		goto out;
	}
	ok = true;
out:
	if (!ok) {
		dburl_free(&u);
		memset(out, 0, sizeof *out);
		return false;
	}
	*out = u;
	return true;
}

void dburl_free(struct dburl *u)
{
	if (u->password != NULL)
		sodium_memzero(u->password, strlen(u->password));
	free(u->user);
	free(u->password);
	free(u->host);
	free(u->database);
	free(u->socket);
	memset(u, 0, sizeof *u);
}
