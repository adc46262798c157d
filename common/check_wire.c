/*
 * check_wire: the header of the check service's requests and answers, and
 * the socket path rule, shared by the runner (evaluator/runner/check_service.c) and the
 * API pool (fcgi/handlers/strategy_check.c). No I/O and no sandbox here, so
 * the pool links this file alone. Format: check_wire.h.
 */
#include <stdio.h>
#include <string.h>
#include <sys/un.h>

#include "check_wire.h"

static const char magic_req[4] = { 'A', 'T', 'C', 'Q' };
static const char magic_ans[4] = { 'A', 'T', 'C', 'A' };

void check_hdr_encode(uint8_t out[CHECK_HDR_LEN], enum check_magic kind, unsigned code, uint32_t len)
{
	memcpy(out, kind == CHECK_REQUEST ? magic_req : magic_ans, 4);
	out[4] = CHECK_WIRE_VERSION;
	out[5] = (uint8_t)code;
	out[6] = 0;
	out[7] = 0;
	for (int i = 0; i < 4; i++)
		out[8 + i] = (uint8_t)(len >> (8 * i));
}

int check_hdr_decode(const uint8_t in[CHECK_HDR_LEN], enum check_magic kind, unsigned ncodes, uint32_t max,
		     unsigned *code, uint32_t *len)
{
	uint32_t n = 0;
	if (memcmp(in, kind == CHECK_REQUEST ? magic_req : magic_ans, 4) != 0 || in[4] != CHECK_WIRE_VERSION ||
	    in[5] >= ncodes || in[6] != 0 || in[7] != 0)
		return -1;
	for (int i = 0; i < 4; i++)
		n |= (uint32_t)in[8 + i] << (8 * i);
	if (n > max)
		return -1;
	*code = in[5];
	*len = n;
	return 0;
}

int check_socket_path(const char *configured, const char *notify_dir, char *out, size_t outlen)
{
	int n;
	if (configured && *configured)
		n = snprintf(out, outlen, "%s", configured);
	else if (notify_dir && *notify_dir)
		n = snprintf(out, outlen, "%s/%s", notify_dir, CHECK_SOCKET_NAME);
	else
		n = snprintf(out, outlen, "%s", CHECK_SOCKET_DEFAULT);
	if (n < 0 || (size_t)n >= outlen || (size_t)n >= sizeof(((struct sockaddr_un *)0)->sun_path) || out[0] != '/') {
		if (outlen)
			out[0] = '\0';
		return -1;
	}
	return 0;
}
