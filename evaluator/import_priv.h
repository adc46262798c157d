/* import_priv: the per-format entry points behind import_files(). */
#ifndef AGENTTEST_EVALUATOR_IMPORT_PRIV_H
#define AGENTTEST_EVALUATOR_IMPORT_PRIV_H

#include <stddef.h>

#include "evaluator/dataset.h"

/* binance-klines: see import.h. */
enum ds_err import__klines(const char *dir, const char *version, const char *asset, size_t n,
			   const char *const *files, char hash[65], struct ds_error *e);

#endif
