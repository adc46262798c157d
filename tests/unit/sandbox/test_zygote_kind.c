/*
 * test_zygote_kind.c: which zygote a strategy's run asks for
 * (sandbox/zygote_kind.c, issue 19): FULL when the source names pandas
 * anywhere in its len bytes, PLAIN when its only imports are one-statement
 * import lines of the standard modules that never load numpy, else NUMPY.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "sandbox/sandbox.h"

static enum sbx_zygote kind_of(const char *s)
{
	return sbx_zygote_for_code(s, strlen(s));
}

static void test_numpy_code_goes_small(void **state)
{
	assert_int_equal(kind_of("import numpy as np\ndef simulate(prices, params):\n    return list(np.ones(len(prices)))\n"),
			 SBX_ZYGOTE_NUMPY);
	assert_int_equal(kind_of("import scipy.stats, sklearn\n"), SBX_ZYGOTE_NUMPY);
	/* a name spelled in pieces is not seen: such a run imports it itself */
	assert_int_equal(kind_of("pd = __import__('pan' + 'das')\n"), SBX_ZYGOTE_NUMPY);
}

static void test_standard_library_code_goes_plain(void **state)
{
	assert_int_equal(kind_of(""), SBX_ZYGOTE_PLAIN);
	assert_int_equal(sbx_zygote_for_code(NULL, 0), SBX_ZYGOTE_PLAIN);
	assert_int_equal(kind_of("def simulate(prices, params):\n    return [p / prices[0] for p in prices]\n"),
			 SBX_ZYGOTE_PLAIN);
	assert_int_equal(kind_of("import math\nimport random as r, statistics\n"
				 "from collections import deque\nfrom itertools import (accumulate,\n    chain)\n"
				 "  import os.path as p  # a comment\r\nimport datetime.timezone\n"), SBX_ZYGOTE_NUMPY);
	/* os is not on the list: the same without it */
	assert_int_equal(kind_of("import math\nimport random as r, statistics\n"
				 "from collections import deque\nfrom itertools import (accumulate,\n    chain)\n"
				 "  import json as j  # a comment\r\nimport datetime\n"), SBX_ZYGOTE_PLAIN);
}

static void test_anything_unrecognised_is_not_plain(void **state)
{
	static const char *const no[] = {
		"import numpy\n",
		"x = 1  # numpy later\n",
		"import scipy\n",
		"import math, scipy.stats\n",
		"from math import sqrt; import scipy\n",
		"import math; x = 1\n",
		"import math \\\n    , scipy\n",
		"from . import helper\n",
		"from scipy import stats\n",
		"from math import sqrt  # then import scipy\n",
		"m = __import__('math')\n",
		"import importlib\n",
		"s = 'import math'\n",
		"exec('import sk' + 'learn')\n",
		"from math import(sqrt)\n",
		"import math as\n",
		"import mathx\n",
		NULL,
	};
	for (int i = 0; no[i]; i++) {
		if (kind_of(no[i]) != SBX_ZYGOTE_NUMPY)
			fail_msg("%s: not NUMPY", no[i]);
	}
}

static void test_pandas_code_goes_full(void **state)
{
	assert_int_equal(kind_of("import pandas as pd\n"), SBX_ZYGOTE_FULL);
	assert_int_equal(kind_of("from pandas import Series\n"), SBX_ZYGOTE_FULL);
	assert_int_equal(kind_of("import numpy\nimport pandas_ta\n"), SBX_ZYGOTE_FULL);
	assert_int_equal(kind_of("x = 1  # uses pandas later\n"), SBX_ZYGOTE_FULL);
	assert_int_equal(kind_of("m = importlib.import_module('pandas')\n"), SBX_ZYGOTE_FULL);
}

static void test_length_is_the_bound(void **state)
{
	/* not NUL-terminated: bytes after a NUL count, bytes past len do not */
	static const char with_nul[] = "x = 1\0import pandas\n";
	assert_int_equal(sbx_zygote_for_code(with_nul, sizeof with_nul - 1), SBX_ZYGOTE_FULL);
	static const char cut[] = "import numpy\nimport pandas\n";
	assert_int_equal(sbx_zygote_for_code(cut, 13), SBX_ZYGOTE_NUMPY);
	assert_int_equal(sbx_zygote_for_code(cut, 25), SBX_ZYGOTE_NUMPY); /* "panda" only */
	assert_int_equal(sbx_zygote_for_code(cut, 26), SBX_ZYGOTE_FULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_numpy_code_goes_small),
		cmocka_unit_test(test_standard_library_code_goes_plain),
		cmocka_unit_test(test_anything_unrecognised_is_not_plain),
		cmocka_unit_test(test_pandas_code_goes_full),
		cmocka_unit_test(test_length_is_the_bound),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
