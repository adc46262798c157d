/*
 * zygote_kind.c: which zygote a strategy's run should fork from.
 *
 * The choice only decides speed (sandbox.h, enum sbx_zygote): a run on a
 * smaller zygote that imports numpy or pandas anyway imports it itself,
 * and the host seeds numpy's generator whenever numpy arrives (seeding.py),
 * so the results are the same. So the tests are plain, conservative byte
 * searches rather than a parse:
 *
 *   FULL   any mention of pandas (an import, `pandas_ta`, a string, a
 *          comment): pandas is preloaded there;
 *   PLAIN  no mention of numpy, and every "import" in the bytes is the
 *          keyword of a one-statement import line of the standard modules
 *          below (`import math, random as r`, `from statistics import
 *          mean`): the interpreter without numpy, a quarter cheaper to
 *          fork, run and tear down than the numpy one (issue 19);
 *   NUMPY  everything else.
 *
 * Written by hand: it is a scan of lines for two statement shapes, not a
 * Python parser; anything it does not recognise (`__import__`, importlib,
 * "import" in a string or comment, a `;` or a continuation on an import
 * line, a relative import) simply is not PLAIN.
 */
#include <stdbool.h>
#include <string.h>

#include "sandbox/sandbox.h"

/* Standard modules that import nothing heavy (never numpy). */
static const char *const plain_modules[] = {
	"__future__", "abc", "array", "bisect", "calendar", "cmath", "collections", "copy",
	"dataclasses", "datetime", "decimal", "enum", "fractions", "functools", "heapq",
	"itertools", "json", "math", "numbers", "operator", "random", "re", "statistics",
	"string", "struct", "sys", "time", "typing", "warnings", NULL,
};

static bool is_ident(char c)
{
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* Whether [p, p+n) is a module of plain_modules. */
static bool plain_module(const char *p, size_t n)
{
	for (int i = 0; plain_modules[i]; i++)
		if (strlen(plain_modules[i]) == n && memcmp(plain_modules[i], p, n) == 0)
			return true;
	return false;
}

/* Skip spaces and tabs from *i below end. */
static void skip_blank(const char *s, size_t end, size_t *i)
{
	while (*i < end && (s[*i] == ' ' || s[*i] == '\t'))
		(*i)++;
}

/* Read the identifier at *i (advancing past it); its length, 0 if none. */
static size_t ident(const char *s, size_t end, size_t *i)
{
	size_t b = *i;
	while (*i < end && is_ident(s[*i]))
		(*i)++;
	return *i - b;
}

/* Read a dotted module name at *i whose first part is a plain module.
 * True if there is one. */
static bool plain_dotted(const char *s, size_t end, size_t *i)
{
	size_t b = *i, n = ident(s, end, i);
	if (n == 0 || !plain_module(s + b, n))
		return false;
	while (*i < end && s[*i] == '.') {
		(*i)++;
		if (ident(s, end, i) == 0)
			return false;
	}
	return true;
}

/* Whether the keyword at *i is `kw` followed by a blank. */
static bool keyword(const char *s, size_t end, size_t i, const char *kw)
{
	size_t n = strlen(kw);
	return end - i > n && memcmp(s + i, kw, n) == 0 && (s[i + n] == ' ' || s[i + n] == '\t');
}

/*
 * One line [b, end) of an import statement of plain modules only:
 * `import M[ as X][, M2[ as Y]...]` or `from M import ...`, with nothing
 * after but a comment, and no ';' or line continuation. Lines that hold
 * no "import" pass too.
 */
static bool plain_line(const char *s, size_t b, size_t end)
{
	const char *imp = memmem(s + b, end - b, "import", 6);
	if (!imp)
		return true;
	size_t i = b;
	skip_blank(s, end, &i);
	size_t kw = i;
	if (memchr(s + b, ';', end - b) || (end > b && s[end - 1] == '\\'))
		return false;
	if (keyword(s, end, i, "from")) {
		i += 4;
		skip_blank(s, end, &i);
		if (!plain_dotted(s, end, &i))
			return false;
		skip_blank(s, end, &i);
		if (!keyword(s, end, i, "import"))
			return false;
		/* the names imported; no second "import" on the line */
		return !memmem(s + i + 6, end - i - 6, "import", 6);
	}
	if (!keyword(s, end, i, "import") || s + kw != imp)
		return false;
	i += 6;
	for (;;) {
		skip_blank(s, end, &i);
		if (!plain_dotted(s, end, &i))
			return false;
		skip_blank(s, end, &i);
		if (keyword(s, end, i, "as")) {
			i += 2;
			skip_blank(s, end, &i);
			if (ident(s, end, &i) == 0)
				return false;
			skip_blank(s, end, &i);
		}
		if (i < end && s[i] == ',') {
			i++;
			continue;
		}
		return i == end || s[i] == '#' || s[i] == '\r';
	}
}

/* PLAIN test over the whole source (see the top of this file). */
static bool plain_code(const char *code, size_t len)
{
	if (memmem(code, len, "numpy", 5))
		return false;
	size_t b = 0;
	while (b < len) {
		const char *nl = memchr(code + b, '\n', len - b);
		size_t end = nl ? (size_t)(nl - code) : len;
		if (!plain_line(code, b, end))
			return false;
		b = end + 1;
	}
	return true;
}

enum sbx_zygote sbx_zygote_for_code(const char *code, size_t len)
{
	static const char word[] = "pandas";
	if (code && memmem(code, len, word, sizeof word - 1))
		return SBX_ZYGOTE_FULL;
	if (!code || plain_code(code, len))
		return SBX_ZYGOTE_PLAIN;
	return SBX_ZYGOTE_NUMPY;
}
