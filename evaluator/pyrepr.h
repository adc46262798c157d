/*
 * pyrepr: format a double exactly as Python's repr(float) does.
 *
 * Python prints the shortest decimal string that reads back to the same
 * double (round-half-even), choosing the nearest such string when several
 * have that length, and lays it out as `1.0`, `0.1`, `2e-05`, `1e+16`,
 * `123456789012345.0`: scientific notation when the decimal exponent is
 * below -4 or at least 16. The canonical JSON of config_hash and every float
 * we write to CSV or JSON use this, so hashes and files match the original
 * byte for byte.
 *
 * Two paths compute the digits. The fast path, for normal doubles in
 * [1e-5, 2^53) (every equity value in practice), is exact integer arithmetic
 * on 128-bit numbers: the double's rounding interval scaled by a power of
 * ten, then the coarsest decimal grid that still has a point inside it
 * (a Steele-White/Dragon4 shortest search, specialised to the range where it
 * fits in 128 bits; no tables, no allocation). Other doubles take a slower
 * path through snprintf("%.*e") with 15, 16 and 17 significant digits and a
 * strtod round-trip check. Both paths are tested against a table generated
 * with Python itself (tests/unit/evaluator/pyrepr_table.h).
 */
#ifndef AGENTTEST_EVALUATOR_PYREPR_H
#define AGENTTEST_EVALUATOR_PYREPR_H

#include <stddef.h>

/* Bytes the caller provides: the longest output is 24 characters plus the
 * NUL ("-2.2250738585072014e-308"); the rest is room for fixed-size copies. */
#define PYREPR_MAX 40

/*
 * Write repr(x) into out (NUL-terminated) and return its length. NaN gives
 * "nan", infinities "inf"/"-inf" (the caller decides how JSON spells them).
 */
size_t pyrepr_double(double x, char out[PYREPR_MAX]);

#endif
