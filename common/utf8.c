/*
 * utf8.c: UTF-8 well-formedness, shared by the canonical JSON parser
 * (evaluator/canon_json.c) and the API's error replies (fcgi/ctx.c), which
 * quote what users sent (names, assets, query values) and what peers
 * answered: JSON text must be valid UTF-8, so valid characters pass
 * unchanged and anything else becomes U+FFFD, one per offending byte.
 */
#include <stdint.h>
#include <string.h>

#include "utf8.h"

/*
 * Length of the valid UTF-8 sequence at s[0..n) (n >= 1), or 0 if the
 * bytes there are not one (RFC 3629: shortest form, no surrogates, at most
 * U+10FFFF). *need gets the length the lead byte announces (0 for a byte
 * that cannot lead).
 */
static size_t seq_len(const unsigned char *s, size_t n, size_t *need)
{
	unsigned c = s[0];
	size_t k;
	uint32_t cp, min;
	if (c < 0x80) {
		*need = 1;
		return 1;
	}
	if ((c & 0xe0) == 0xc0) {
		k = 2; cp = c & 0x1f; min = 0x80;
	} else if ((c & 0xf0) == 0xe0) {
		k = 3; cp = c & 0x0f; min = 0x800;
	} else if ((c & 0xf8) == 0xf0) {
		k = 4; cp = c & 0x07; min = 0x10000;
	} else {
		*need = 0;
		return 0;
	}
	*need = k;
	if (n < k)
		return 0;
	for (size_t i = 1; i < k; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return k;
}

size_t utf8_seq_len(const char *s, size_t n)
{
	size_t need;
	return seq_len((const unsigned char *)s, n, &need);
}

size_t utf8_uncut_len(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	/* the last lead byte lies within the last 4 bytes; only continuations after it */
	for (size_t back = 1; back <= 4 && back <= n; back++) {
		unsigned c = p[n - back];
		if ((c & 0xc0) == 0x80)
			continue;
		size_t need;
		(void)seq_len(p + n - back, back, &need);
		return need > back ? n - back : n;
	}
	return n;
}

size_t utf8_clean(const char *s, size_t n, char *out, size_t cap)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t o = 0;
	for (size_t i = 0; i < n;) {
		size_t need, k = seq_len(p + i, n - i, &need);
		const char *from = k ? s + i : "\xef\xbf\xbd";
		size_t len = k ? k : 3;
		if (o + len >= cap)
			break;   /* only if cap < UTF8_CLEAN_CAP(n): stop at a character boundary */
		memcpy(out + o, from, len);
		o += len;
		i += k ? k : 1;
	}
	if (cap > 0)
		out[o] = '\0';
	return o;
}
