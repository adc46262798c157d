/*
 * hosts.c: the Host names this site answers (AGENTTEST_ALLOWED_HOSTS).
 *
 * DNS rebinding: a web page on a domain that the attacker later resolves
 * to 127.0.0.1 reaches the local stack with `Host: evil.example` and an
 * Origin that matches it, so neither the loopback address nor the CSRF
 * Origin check can tell it from the local user. Only the Host name can:
 * the pool answers 421 to any Host outside the configured list before any
 * route or handler runs, and the loopback-admin rule never applies to a
 * request without an allowed Host (auth.c). nginx applies the same list.
 */
#include <string.h>
#include <strings.h>

#include "fcgi/app.h"

/* Is c a digit? */
static bool hosts_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Split a Host header value into the name (brackets of an IPv6 literal
 * removed, one trailing dot dropped) and check the optional ":port".
 * Returns false for a malformed value. */
static bool hosts_name(const char *h, const char **name, size_t *len)
{
	const char *rest;
	if (h[0] == '[') {
		const char *close = strchr(h, ']');
		if (close == NULL)
			return false;
		*name = h + 1;
		*len = (size_t)(close - h - 1);
		rest = close + 1;
	} else {
		*name = h;
		*len = strcspn(h, ":");
		rest = h + *len;
	}
	if (*rest == ':') {
		rest++;
		if (*rest == '\0')
			return false;
		while (hosts_digit(*rest))
			rest++;
	}
	if (*rest != '\0' || *len == 0)
		return false;
	if ((*name)[*len - 1] == '.')
		(*len)--;
	return *len > 0;
}

bool hosts_allowed(const char *list, const char *host)
{
	const char *name;
	size_t len;
	if (host == NULL || !hosts_name(host, &name, &len))
		return false;
	if (list == NULL)
		list = HOSTS_DEFAULT;
	for (const char *p = list; *p;) {
		size_t n = strcspn(p, ", ");
		const char *item = p;
		size_t ilen = n;
		if (ilen >= 2 && item[0] == '[' && item[ilen - 1] == ']') {
			item++;
			ilen -= 2;
		}
		if (ilen == len && strncasecmp(item, name, len) == 0)
			return true;
		p += n;
		p += strspn(p, ", ");
	}
	return false;
}
