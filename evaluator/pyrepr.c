/* pyrepr: Python's repr(float) in C (see pyrepr.h for the method). */
#include "evaluator/pyrepr.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned __int128 u128;

static const uint64_t pr_pow10[20] = {
	1ULL, 10ULL, 100ULL, 1000ULL, 10000ULL, 100000ULL, 1000000ULL, 10000000ULL,
	100000000ULL, 1000000000ULL, 10000000000ULL, 100000000000ULL,
	1000000000000ULL, 10000000000000ULL, 100000000000000ULL,
	1000000000000000ULL, 10000000000000000ULL, 100000000000000000ULL,
	1000000000000000000ULL, 10000000000000000000ULL,
};

/* 10^k as a 128-bit integer, 0 <= k <= 38. */
static u128 pr_pow10_128(int k)
{
	if (k < 20)
		return pr_pow10[k];
	return (u128)pr_pow10[19] * pr_pow10[k - 19];
}

/*
 * Lay out `nd` significant digits (no trailing zeros, nd >= 1) with the
 * decimal point after position `decpt` the way Python's repr does.
 * Returns the length written (out has PYREPR_MAX bytes).
 */
static size_t pr_layout(int neg, const char *digs, int nd, int decpt, char *out)
{
	size_t n = 0;
	if (neg)
		out[n++] = '-';
	if (decpt <= -4 || decpt > 16) {
		int e = decpt - 1;
		out[n++] = digs[0];
		if (nd > 1) {
			out[n++] = '.';
			memcpy(out + n, digs + 1, (size_t)nd - 1);
			n += (size_t)nd - 1;
		}
		out[n++] = 'e';
		out[n++] = e < 0 ? '-' : '+';
		if (e < 0)
			e = -e;
		if (e >= 100)
			out[n++] = (char)('0' + e / 100);
		out[n++] = (char)('0' + e / 10 % 10);
		out[n++] = (char)('0' + e % 10);
	} else if (decpt <= 0) {
		out[n++] = '0';
		out[n++] = '.';
		for (int i = 0; i < -decpt; i++)
			out[n++] = '0';
		memcpy(out + n, digs, 17); /* fixed size: n <= 6 here */
		n += (size_t)nd;
	} else if (decpt < nd) {
		/* fixed-size copies (digs has 24 readable bytes, out PYREPR_MAX) */
		memcpy(out + n, digs, 16);
		memcpy(out + n + decpt + 1, digs + decpt, 17);
		out[n + decpt] = '.';
		n += (size_t)nd + 1;
	} else {
		memcpy(out + n, digs, (size_t)nd);
		n += (size_t)nd;
		for (int i = nd; i < decpt; i++)
			out[n++] = '0';
		out[n++] = '.';
		out[n++] = '0';
	}
	out[n] = '\0';
	return n;
}

static const char pr_pairs[201] =
	"00010203040506070809101112131415161718192021222324252627282930313233343536373839"
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879"
	"8081828384858687888990919293949596979899";

/* Write the 4 decimal digits of v (< 10^4) into d[0..4). */
static inline void pr_digits4(uint32_t v, char *d)
{
	uint32_t hi = v / 100, lo = v % 100;
	memcpy(d, pr_pairs + 2 * hi, 2);
	memcpy(d + 2, pr_pairs + 2 * lo, 2);
}

/* Write the 8 decimal digits of v (< 10^8) into d[0..8), 32-bit math. */
static inline void pr_digits8(uint32_t v, char *d)
{
	pr_digits4(v / 10000, d);
	pr_digits4(v % 10000, d + 4);
}

/* The 17 decimal digits of v (10^16 <= v < 10^17) into q[0..17). */
static void pr_digits17(uint64_t v, char q[17])
{
	uint64_t hi = v / 100000000u;           /* 9 digits */
	uint32_t lo = (uint32_t)(v % 100000000u);
	q[0] = (char)('0' + hi / 100000000u);
	pr_digits8((uint32_t)(hi % 100000000u), q + 1);
	pr_digits8(lo, q + 9);
}

/*
 * Add one unit in the last of the nd digits (nd may be 0: the step above
 * everything, i.e. 10^17), carrying; strip trailing zeros. Returns the new
 * digit count; *decpt grows by one when the carry runs out of digits.
 */
static int pr_round_up(char *digs, int nd, int *decpt)
{
	int i = nd - 1;
	while (i >= 0 && digs[i] == '9')
		digs[i--] = '0';
	if (i < 0) {
		digs[0] = '1';
		(*decpt)++;
		return 1;
	}
	digs[i]++;
	nd = i + 1; /* everything after i is now 0 */
	return nd;
}

struct pr_scaled {
	uint64_t Q;    /* floor(x * 10^k), 17 digits */
	u128     R;    /* remainder, in units of 1/T */
	int      sh;   /* T = 2^sh */
	u128     w_lo; /* lower half-gap of x, in units of 1/T */
	u128     w_hi; /* upper half-gap */
	uint64_t h_lo; /* w_lo >> sh, w_hi >> sh: the half-gaps in whole units */
	uint64_t h_hi;
	int      even; /* mantissa even: interval bounds are inclusive */
};

/* Distance from X down to the grid point Q - qm (or UINT128 max if out of
 * reach of the interval); qm is Q mod the grid step. */
static int pr_ok_below(const struct pr_scaled *s, uint64_t qm, u128 *dist)
{
	if (qm > s->h_lo)
		return 0;
	*dist = ((u128)qm << s->sh) + s->R;
	return *dist < s->w_lo || (s->even && *dist == s->w_lo);
}

/* Same for the grid point above: Q - qm + c. */
static int pr_ok_above(const struct pr_scaled *s, uint64_t up, u128 *dist)
{
	if (up > s->h_hi + 1)
		return 0;
	*dist = ((u128)up << s->sh) - s->R;
	return *dist < s->w_hi || (s->even && *dist == s->w_hi);
}

/*
 * Exact shortest digits for a positive normal x in the fast range. Returns
 * the digit count (digits in digs, *decpt set) or 0 when x is out of range.
 */
static int pr_fast(double x, char *digs, int *decpt)
{
	uint64_t bits;
	memcpy(&bits, &x, sizeof bits);
	int bexp = (int)((bits >> 52) & 0x7ff);
	uint64_t frac = bits & ((1ULL << 52) - 1);
	if (bexp == 0 || bexp == 0x7ff)
		return 0;
	uint64_t m = frac | (1ULL << 52);
	int e = bexp - 1075;
	if (e > 0 || e < -72)
		return 0;
	/* floor(log10(x)) from the binary exponent (78913 / 2^18 ~ log10(2));
	 * off by at most one, which the loop below corrects. */
	int e2 = bexp - 1023;
	int fl = e2 >= 0 ? (e2 * 78913) >> 18 : -(((-e2) * 78913 + 262143) >> 18);
	int k = 16 - fl;
	struct pr_scaled s;
	s.sh = 2 - e;
	s.even = (m & 1) == 0;
	for (int tries = 0;; tries++) {
		if (k < 0 || k > 21 || tries > 2)
			return 0;
		u128 p10k = pr_pow10_128(k);
		u128 v4 = ((u128)m * p10k) << 2;
		u128 q = v4 >> s.sh;
		if (q >= pr_pow10[17]) {
			k--;
			continue;
		}
		if (q < pr_pow10[16]) {
			k++;
			continue;
		}
		s.Q = (uint64_t)q;
		s.R = v4 & (((u128)1 << s.sh) - 1);
		s.w_hi = p10k << 1;
		s.w_lo = (frac == 0 && bexp > 1) ? p10k : p10k << 1;
		break;
	}
	char q[17];
	pr_digits17(s.Q, q);
	*decpt = 17 - k;
	/* Grid steps c = 10^j from fine to coarse: j = 0 always has a point
	 * inside the interval (the nearer of Q and Q+1: the half-gap is at
	 * least 0.55 units), validity is monotone in j, so stop at the first
	 * step without one; qm = Q mod c comes from Q's digits (no division).
	 * Most doubles need all 17 digits: if neither multiple of 10 next to
	 * X is within reach, the answer is the nearer of Q and Q+1. */
	unsigned d1 = (unsigned)(q[16] - '0');
	s.h_lo = (uint64_t)(s.w_lo >> s.sh);
	s.h_hi = (uint64_t)(s.w_hi >> s.sh);
	if (d1 > s.h_lo && 10 - d1 > s.h_hi + 1) {
		u128 half = (u128)1 << (s.sh - 1);
		memcpy(digs, q, 17);
		if (s.R > half || (s.R == half && (d1 & 1)))
			return pr_round_up(digs, 17, decpt);
		return 17;
	}
	u128 half = (u128)1 << (s.sh - 1);
	uint64_t qm = 0;
	int bestj = 0, bestup = s.R > half || (s.R == half && (d1 & 1)); /* j = 0: the nearer */
	for (int j = 1; j <= 17; j++) {
		uint64_t c = pr_pow10[j];
		qm += (uint64_t)(q[17 - j] - '0') * pr_pow10[j - 1];
		u128 dlo = 0, dhi = 0;
		int lo = pr_ok_below(&s, qm, &dlo);
		int hi = pr_ok_above(&s, c - qm, &dhi);
		if (!lo && !hi)
			break;
		int up;
		if (lo && hi) {
			if (dlo != dhi)
				up = dhi < dlo;
			else /* a tie: the even last digit */
				up = j < 17 && (q[16 - j] - '0') % 2 == 1;
		} else {
			up = hi;
		}
		bestj = j;
		bestup = up;
	}
	int nd = 17 - bestj;
	memcpy(digs, q, 17);
	if (bestup)
		return pr_round_up(digs, nd, decpt);
	while (nd > 1 && digs[nd - 1] == '0')
		nd--;
	return nd;
}

/* Digits and decimal point of a "%.*e" rendering in buf. */
static int pr_parse_e(const char *buf, char *digs, int *decpt)
{
	int nd = 0;
	const char *p = buf;
	if (*p == '-')
		p++;
	for (; *p && *p != 'e'; p++)
		if (*p >= '0' && *p <= '9')
			digs[nd++] = *p;
	int ex = (*p == 'e') ? atoi(p + 1) : 0;
	while (nd > 1 && digs[nd - 1] == '0')
		nd--;
	*decpt = ex + 1;
	return nd;
}

/* Does 0.DIGS x 10^decpt read back as x? */
static int pr_roundtrips(double x, const char *digs, int nd, int decpt)
{
	char buf[64];
	int n = snprintf(buf, sizeof buf, "0.%.*se%d", nd, digs, decpt);
	if (n < 0 || (size_t)n >= sizeof buf)
		return 0;
	return strtod(buf, NULL) == x;
}

/*
 * Shortest digits for any positive finite x through snprintf/strtod. A normal
 * double carries more than 15 significant digits, so any shorter decimal
 * that reads back shows up as the 15-digit rounding with trailing zeros;
 * subnormals carry fewer and search from one digit up.
 */
static int pr_slow(double x, char *digs, int *decpt)
{
	char buf[64];
	for (int p = x < 2.2250738585072014e-308 ? 1 : 15; p <= 17; p++) {
		snprintf(buf, sizeof buf, "%.*e", p - 1, x);
		int nd = pr_parse_e(buf, digs, decpt);
		if (strtod(buf, NULL) == x)
			return nd;
		if (p == 17)
			return nd;
		/* At a power of two the interval is lopsided: the nearest p-digit
		 * decimal may miss while the next one up still reads back. */
		char up[24];
		int upn = p, updecpt = *decpt;
		snprintf(buf, sizeof buf, "%.*e", p - 1, x);
		int full = 0;
		for (const char *q = buf; *q && *q != 'e'; q++)
			if (*q >= '0' && *q <= '9')
				up[full++] = *q;
		int i = full - 1;
		while (i >= 0 && up[i] == '9')
			up[i--] = '0';
		if (i < 0) {
			memmove(up + 1, up, (size_t)full - 1);
			up[0] = '1';
			updecpt++;
		} else {
			up[i]++;
		}
		while (upn > 1 && up[upn - 1] == '0')
			upn--;
		if (pr_roundtrips(x, up, upn, updecpt)) {
			memcpy(digs, up, (size_t)upn);
			*decpt = updecpt;
			return upn;
		}
	}
	return 0;
}

size_t pyrepr_double(double x, char out[PYREPR_MAX])
{
	if (isnan(x)) {
		memcpy(out, "nan", 4);
		return 3;
	}
	int neg = signbit(x) != 0;
	if (isinf(x)) {
		const char *s = neg ? "-inf" : "inf";
		size_t n = strlen(s);
		memcpy(out, s, n + 1);
		return n;
	}
	if (x == 0.0) {
		const char *s = neg ? "-0.0" : "0.0";
		size_t n = strlen(s);
		memcpy(out, s, n + 1);
		return n;
	}
	double ax = fabs(x);
	char digs[40];
	int decpt = 0;
	int nd = pr_fast(ax, digs, &decpt);
	if (nd == 0)
		nd = pr_slow(ax, digs, &decpt);
	return pr_layout(neg, digs, nd, decpt, out);
}
