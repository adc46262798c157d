/*
 * utf8: UTF-8 well-formedness (RFC 3629: shortest form, no surrogates, at
 * most U+10FFFF) and making text valid for JSON replies.
 */
#ifndef AGENTTEST_UTF8_H
#define AGENTTEST_UTF8_H

#include <stddef.h>

/* Worst-case size of utf8_clean's output for n input bytes (NUL included):
 * every byte may become U+FFFD (3 bytes). */
#define UTF8_CLEAN_CAP(n) (3 * (n) + 1)

/* Length (1 to 4) of the well-formed UTF-8 character at s[0..n) (n >= 1),
 * or 0 if the bytes there do not start one. */
size_t utf8_seq_len(const char *s, size_t n);
/* Length of s[0..n) without a last UTF-8 sequence that was cut short (what
 * a truncating snprintf leaves), so a cut never ends in a broken character. */
size_t utf8_uncut_len(const char *s, size_t n);
/* Copy s[0..n) to out (cap >= UTF8_CLEAN_CAP(n)), NUL-ended: valid UTF-8
 * unchanged, each byte that does not start a well-formed character (stray
 * continuation, overlong form, surrogate, above U+10FFFF, cut short)
 * replaced by U+FFFD, so the result is always valid UTF-8. With a smaller
 * cap it stops at a character boundary. Returns the length written. */
size_t utf8_clean(const char *s, size_t n, char *out, size_t cap);

#endif
