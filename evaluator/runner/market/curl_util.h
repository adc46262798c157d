/*
 * curl_util: what the Binance and CoinGlass fetchers share around libcurl:
 * a capped answer buffer and a cancellable back-off sleep.
 */
#ifndef AGENTTEST_MARKET_CURL_UTIL_H
#define AGENTTEST_MARKET_CURL_UTIL_H

#include <stddef.h>

/* Largest answer body either fetcher accepts (a page is far smaller). */
#define MK_MAX_ANSWER ((size_t)8 << 20)

/* curl write callback (ud: a struct buf): append, refusing (0) more than
 * MK_MAX_ANSWER in all, which makes curl fail the transfer. */
size_t mk_curl_collect(char *p, size_t sz, size_t n, void *ud);

/* Sleep ms milliseconds in slices of 100 ms so that a cancel is seen
 * within 100 ms; cancelled (may be NULL) is asked with ud after each
 * slice. Non-zero if cancelled. */
int mk_nap(int (*cancelled)(void *ud), void *ud, long ms);

#endif
