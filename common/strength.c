#include "strength.h"

#include <math.h>
#include <string.h>

bool strength_check(const char *s, struct buf *why)
{
	size_t n = strlen(s);
	bool seen[256] = { false };
	int lower = 0, upper = 0, digit = 0, other = 0;
	size_t distinct = 0;

	if (n < STRENGTH_MIN_LEN) {
		buf_printf(why, "is too short (%zu characters, at least %d needed)", n, STRENGTH_MIN_LEN);
		return false;
	}
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c >= 'a' && c <= 'z')
			lower = 1;
		else if (c >= 'A' && c <= 'Z')
			upper = 1;
		else if (c >= '0' && c <= '9')
			digit = 1;
		else
			other = 1;
		if (!seen[c]) {
			seen[c] = true;
			distinct++;
		}
	}
	if (lower + upper + digit + other < STRENGTH_MIN_CLASSES) {
		buf_puts(why, "uses a single character class (mix at least two of lowercase, uppercase, digits, symbols)");
		return false;
	}
	double bits = (double)n * log2((double)distinct);
	if (bits < STRENGTH_MIN_BITS) {
		buf_printf(why, "has too little entropy (about %.0f bits, at least %.0f needed)", bits, STRENGTH_MIN_BITS);
		return false;
	}
	return true;
}
