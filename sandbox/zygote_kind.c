/*
 * zygote_kind.c: which zygote a strategy's run should fork from.
 *
 * The choice only decides speed (sandbox.h, enum sbx_zygote): a run on the
 * small NUMPY zygote that imports pandas anyway imports it itself. So the
 * test is a plain, conservative byte search rather than a parse: any
 * mention of pandas (an import, `pandas_ta`, a string, a comment) sends the
 * run to the FULL zygote, where pandas is preloaded.
 */
#include <string.h>

#include "sandbox/sandbox.h"

enum sbx_zygote sbx_zygote_for_code(const char *code, size_t len)
{
	static const char word[] = "pandas";
	if (code && memmem(code, len, word, sizeof word - 1))
		return SBX_ZYGOTE_FULL;
	return SBX_ZYGOTE_NUMPY;
}
