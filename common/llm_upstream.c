/*
 * llm_upstream.c: which upstream URLs the model-API clients accept
 * (llm_upstream.h). TLS is required unless the upstream is on loopback.
 */
#include <string.h>

#include "llm_upstream.h"

bool llm_upstream_ok(const char *url)
{
	static const char *const loop[] = { "http://127.0.0.1:", "http://127.0.0.1/", "http://localhost:",
		"http://[::1]:", NULL };
	if (strncmp(url, "https://", 8) == 0 && url[8] != '\0')
		return true;
	for (int i = 0; loop[i]; i++) {
		size_t k = strlen(loop[i]);
		if (strncmp(url, loop[i], k) == 0)   /* a port must follow the colon */
			return loop[i][k - 1] == '/' || (url[k] >= '0' && url[k] <= '9');
	}
	return false;
}
