#include "evaluator/runner/market/curl_util.h"

#include <errno.h>
#include <time.h>

#include "buf.h"

size_t mk_curl_collect(char *p, size_t sz, size_t n, void *ud)
{
	struct buf *b = ud;
	if (b->len + sz * n > MK_MAX_ANSWER)
		return 0;
	buf_append(b, p, sz * n);
	return sz * n;
}

int mk_nap(int (*cancelled)(void *ud), void *ud, long ms)
{
	while (ms > 0) {
		long d = ms > 100 ? 100 : ms;
		struct timespec ts = { d / 1000, (d % 1000) * 1000000L };
		while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
			;
		ms -= d;
		if (cancelled && cancelled(ud))
			return 1;
	}
	return cancelled && cancelled(ud);
}
