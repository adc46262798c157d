/*
 * fuzz_json: libFuzzer driver over JSON bodies (body_parse with its depth,
 * strictness, UTF-8 and trailing-bytes rules) and the field validators.
 * Any body that body_parse accepts must be an object that json-c can
 * serialise and re-parse to an equal object.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fcgi/app.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_object *o = NULL;
	char msg[160];
	struct field_error e;
	enum body_status st = body_parse((const char *)data, size, &o, msg, sizeof msg);
	if ((st == BODY_OK) != (o != NULL))
		abort();
	if (o == NULL)
		return 0;
	if (!json_object_is_type(o, json_type_object))
		abort();
	const char *s = NULL;
	int64_t i = 0;
	double d = 0;
	bool b = false;
	json_object *sub = NULL;
	static const char *const allowed[] = { "a", "b", NULL };
	(void)field_string(o, "a", FIELD_REQUIRED, 0, 100, &s, &e);
	if (field_int(o, "a", FIELD_OPTIONAL, -1000, 1000, &i, &e) && (i < -1000 || i > 1000))
		abort();
	if (field_number(o, "b", FIELD_OPTIONAL | FIELD_NULLABLE, -1e300, 1e300, &d, &e) && !isfinite(d))
		abort();
	(void)field_bool(o, "c", FIELD_OPTIONAL, &b, &e);
	(void)field_object(o, "d", FIELD_OPTIONAL, &sub, &e);
	(void)field_array(o, "d", FIELD_OPTIONAL, 3, &sub, &e);
	(void)field_only(o, allowed, &e);
	/* serialise and parse again: still valid for our parser */
	size_t len = 0;
	const char *txt = json_object_to_json_string_length(o, JSON_C_TO_STRING_PLAIN, &len);
	json_object *o2 = NULL;
	if (body_parse(txt, len, &o2, msg, sizeof msg) != BODY_OK)
		abort();
	json_object_put(o2);
	json_object_put(o);
	return 0;
}
