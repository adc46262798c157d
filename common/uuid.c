/*
 * uuid: syntax check of identifiers (common/uuid.h). Pure, no allocation.
 */
#include <string.h>

#include "uuid.h"

bool uuid_is_canonical(const char *s)
{
	if (!s || strlen(s) != 36)
		return false;
	for (size_t i = 0; i < 36; i++) {
		char ch = s[i];
		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (ch != '-')
				return false;
		} else if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f'))) {
			return false;
		}
	}
	return true;
}
