/*
 * Unit tests of the shared identifier syntax (common/uuid.c): canonical
 * lower-case UUIDs pass; upper case, a wrong length, a misplaced dash,
 * trailing bytes, the empty string and NULL do not.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "uuid.h"

static void test_uuid(void **state)
{
	(void)state;
	assert_true(uuid_is_canonical("0f8fad5b-d9cb-469f-a165-70867728950e"));
	assert_false(uuid_is_canonical("0F8FAD5B-d9cb-469f-a165-70867728950e"));
	assert_false(uuid_is_canonical("0f8fad5b-d9cb-469f-a165-70867728950"));
	assert_false(uuid_is_canonical("0f8fad5bxd9cb-469f-a165-70867728950e"));
	assert_false(uuid_is_canonical("0f8fad5b-d9cb-469f-a165-70867728950e'"));
	assert_false(uuid_is_canonical("0f8fad5b-d9cb-469f-a165-70867728950g"));
	assert_false(uuid_is_canonical(""));
	assert_false(uuid_is_canonical(NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_uuid),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
