#include "parse.h"

#include <string.h>

bool parse_int(const char *s, size_t n, int64_t min, int64_t max, int64_t *out)
{
	size_t i = 0;
	bool neg = false;
	uint64_t v = 0, limit;

	if (s == NULL || n == 0 || n > 20)
		return false;
	if (s[0] == '-') {
		neg = true;
		i = 1;
		if (n == 1)
			return false;
	}
	limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	for (; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		unsigned d = (unsigned)(s[i] - '0');
		if (v > (limit - d) / 10)
			return false;
		v = v * 10 + d;
	}
	int64_t r = neg ? (v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v) : (int64_t)v;
	if (r < min || r > max)
		return false;
	*out = r;
	return true;
}

/* Value of one hex digit, or -1. */
static int parse_hex(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

bool parse_pct_decode(const char *s, size_t n, bool plus_is_space, char *dst, size_t *dlen)
{
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (c == '%') {
			if (n - i < 3)
				return false;
			int hi = parse_hex(s[i + 1]), lo = parse_hex(s[i + 2]);
			if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
				return false;
			dst[o++] = (char)(hi * 16 + lo);
			i += 2;
		} else if (c == '+' && plus_is_space) {
			dst[o++] = ' ';
		} else if (c == '\0') {
			return false;
		} else {
			dst[o++] = c;
		}
	}
	dst[o] = '\0';
	*dlen = o;
	return true;
}

bool parse_ieq(const char *a, size_t n, const char *b)
{
	size_t bl = strlen(b);
	if (bl != n)
		return false;
	for (size_t i = 0; i < n; i++) {
		char x = a[i], y = b[i];
		if (x >= 'A' && x <= 'Z')
			x = (char)(x - 'A' + 'a');
		if (y >= 'A' && y <= 'Z')
			y = (char)(y - 'A' + 'a');
		if (x != y)
			return false;
	}
	return true;
}
