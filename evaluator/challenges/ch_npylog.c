/*
 * ch_npylog: the natural logarithm of a float32 exactly as numpy 1.24
 * computes np.log on float32 arrays on x86-64 CPUs with AVX2+FMA3 or
 * AVX-512F (its own SIMD code, which the original's hitfirst logits go
 * through on every such CPU), in portable scalar C. glibc's logf rounds
 * differently in the last bit for about a quarter of inputs, which changes
 * which near-equal logits tie and so the AUC (docs/challenges.md, "Parity").
 *
 * The algorithm (the same arithmetic as numpy's vector code, lane by lane):
 * x = m·2^k with m in [0.5, 1) (subnormals scaled by 2^100 first); if
 * m <= sqrt(1/2) then m = 2m, k = k − 1; t = m − 1 (exact); log(1+t) by a
 * rational minimax approximation P(t)/Q(t), each polynomial by Horner's rule
 * with fused multiply-adds; result fma(k, ln 2, P/Q). fmaf is correctly
 * rounded in glibc whether or not the CPU has FMA, so the result is the
 * same bits on every machine. Checked against numpy itself on 6.5·10^7
 * float32 values (tests/challenges/test_labels_metrics.py).
 *
 * The coefficients and the order of operations are numpy's (NumPy,
 * BSD-3-Clause, Copyright (c) 2005-2023, NumPy Developers); they were read
 * off the installed numpy's behaviour, the code here is ours.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "evaluator/challenges/challenges.h"

/* numpy's float32 coefficients (exact float32 values). */
#define NPL_P1 1.0f
#define NPL_P2 0x1.0e6c38p+1f
#define NPL_P3 0x1.7ae152p+0f
#define NPL_P4 0x1.860666p-2f
#define NPL_P5 0x1.a8579ap-6f
#define NPL_Q1 0x1.4e6c38p+1f
#define NPL_Q2 0x1.39fc1ap+1f
#define NPL_Q3 0x1.f915c8p-1f
#define NPL_Q4 0x1.3cb7e6p-3f
#define NPL_Q5 0x1.8107bep-8f
#define NPL_LN2 0x1.62e430p-1f
#define NPL_SQRT_HALF 0x1.6a09e6p-1f

/* ln(x) of a float32 as numpy's SIMD np.log (see the file comment). */
float ch_npy_logf(float x)
{
	uint32_t u, mb;
	float m, k, t, n, d;
	int e;

	if (isnan(x) || x < 0.0f)
		return NAN;
	if (x == 0.0f)
		return -INFINITY;
	if (isinf(x))
		return INFINITY;
	if (x < 0x1p-126f) {            /* subnormal: scale into the normal range */
		x *= 0x1p100f;
		memcpy(&u, &x, sizeof u);
		e = (int)((u >> 23) & 0xff) - 126 - 100;
	} else {
		memcpy(&u, &x, sizeof u);
		e = (int)((u >> 23) & 0xff) - 126;
	}
	mb = (u & 0x007fffffu) | (126u << 23);
	memcpy(&m, &mb, sizeof m);
	k = (float)e;
	if (m <= NPL_SQRT_HALF) {
		m = m + m;
		k = k - 1.0f;
	}
	t = m - 1.0f;
	n = fmaf(NPL_P5, t, NPL_P4);
	n = fmaf(n, t, NPL_P3);
	n = fmaf(n, t, NPL_P2);
	n = fmaf(n, t, NPL_P1);
	n = fmaf(n, t, 0.0f);
	d = fmaf(NPL_Q5, t, NPL_Q4);
	d = fmaf(d, t, NPL_Q3);
	d = fmaf(d, t, NPL_Q2);
	d = fmaf(d, t, NPL_Q1);
	d = fmaf(d, t, 1.0f);
	return fmaf(k, NPL_LN2, n / d);
}
