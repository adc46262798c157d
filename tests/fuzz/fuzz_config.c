/*
 * fuzz_config: libFuzzer driver over the configuration file parser and the
 * DATABASE_URL parser. The first byte picks which one gets the rest.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "common/dburl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct buf err = BUF_INIT;
	if (size < 1)
		return 0;
	if (data[0] & 1) {
		struct config cfg;
		memset(&cfg, 0, sizeof cfg);
		if (config_parse_text(&cfg, "fuzz", (const char *)data + 1, size - 1, &err)) {
			for (size_t i = 0; i < cfg.nraw; i++)
				if (cfg.raw[i].key[0] < 'A' || cfg.raw[i].key[0] > 'Z')
					abort();
		} else if (err.len == 0) {
			abort();
		}
		config_free(&cfg);
	} else {
		struct dburl u;
		char *s = malloc(size);
		memcpy(s, data + 1, size - 1);
		s[size - 1] = '\0';
		if (dburl_parse(s, &u, &err)) {
			if (u.host == NULL || u.database == NULL || u.database[0] == '\0')
				abort();
			if (u.socket != NULL && u.socket[0] != '/')
				abort();
			dburl_free(&u);
		} else if (err.len == 0 || u.host != NULL) {
			abort();
		}
		free(s);
	}
	buf_free(&err);
	return 0;
}
