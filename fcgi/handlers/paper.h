/* paper: the paper account of a promoted default (paper.c, docs/paper-trading.md). */
#ifndef AGENTTEST_FCGI_PAPER_H
#define AGENTTEST_FCGI_PAPER_H

#include "db.h"
#include "fcgi/handler.h"

/*
 * Inside the promotion's transaction: if label is a market-data window
 * label (dataset_labels), retire the label's earlier paper accounts, open
 * one for promotion promotion_id with the qualifying run run_id (its asset,
 * params and engine; flat, equity 1, at the last bar the label holds now)
 * and queue its first step. DB_OK also when label is no window label.
 */
enum db_status paper_open_account(struct fcgi_ctx *c, long long promotion_id, const char *label, const char *run_id);

/*
 * Inside the caller's transaction: open a shadow paper account of a
 * candidate on window label (sql/024, common/updater.h): the qualifying
 * run run_id's asset, params and engine, flat at the label's last bar, no
 * promotion; queue its first step. *account_id the new account, 0 when
 * label is no window label or the run's kind does not trade on paper.
 */
enum db_status paper_open_shadow(struct fcgi_ctx *c, const char *label, const char *run_id, long long *account_id);

#endif
