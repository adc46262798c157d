/*
 * updater: the default-strategy updater of a window label (sql/024,
 * docs/paper-trading.md "The default-strategy updater"), shared by the
 * runner (the paper job runs the rule after every step it writes, and
 * promotes automatically) and the pool (an admin approves a proposal).
 *
 * A candidate is a shadow paper account of the label (POST
 * /defaults/candidates): the paper job advances it over the same bars as
 * the default's account. Its forward score is its return over the forward
 * period it shares with the default's account, compared with the
 * default's return over the same bars.
 */
#ifndef AGENTTEST_UPDATER_H
#define AGENTTEST_UPDATER_H

#include "buf.h"
#include "db.h"

/*
 * Lock label's rule row (if any) for the caller's transaction. Everything
 * that writes the label's paper accounts or proposals takes it first (the
 * paper job's commit, a prefetch's commit moving the label, a promotion,
 * an approval), so they never wait on each other in
 * opposite orders. 0, or -1 with err.
 */
int updater_lock(struct db *db, const char *label, struct buf *err);

/*
 * Apply label's rule, if one is enabled, to every active shadow of label
 * not yet decided against the current default promotion: a shadow whose
 * strategy version is old enough and whose common forward period with the
 * default holds at least the rule's bars is refused or proposed (and
 * promoted at once when the rule says auto_promote, the best candidate
 * first; the rest are then decided against the new default). Runs inside
 * the caller's transaction. The number of decisions written, or -1 with err.
 */
int updater_consider(struct db *db, const char *label, struct buf *err);

/*
 * Find candidates (sql/026, docs/paper-trading.md "Finding candidates"):
 * when label's rule is enabled and has max_shadows > 0, open a shadow
 * paper account (origin 'updater', flat with equity 1 at the label's last
 * bar) for the best qualifying strategy versions by backtest score, until
 * the label has max_shadows active shadows. A version qualifies with a
 * completed, audit-passed run on a version of the label, kind positions or
 * simulate, created at least min_age_days ago, and no active or paused
 * account on the label. fee_bps and max_leverage are used for a run that
 * pinned no engine configuration (the evaluator's defaults). Call with
 * the rule locked (updater_lock) inside the caller's transaction; the new
 * accounts' first steps are queued. The number opened, or -1 with err.
 */
int updater_discover(struct db *db, const char *label, double fee_bps, double max_leverage, struct buf *err);

/*
 * Promote proposal id (status 'proposed') as the default of its label:
 * a default_promotions row with the proposal's reason and numbers,
 * promoted_by user_id; the shadow account becomes the default account, the
 * old default account is retired, the proposal gets status new_status
 * ('approved' or 'promoted') and the label's other open proposals
 * 'superseded'. Runs inside the caller's transaction. 1 promoted
 * (*promotion_id set), 0 refused with the reason in err (not 'proposed',
 * the default changed since: then the proposal is marked 'superseded', or
 * the shadow account is no longer active), -1 database error (err).
 */
int updater_promote(struct db *db, long long id, const char *new_status, long long user_id,
		    long long *promotion_id, struct buf *err);

#endif
