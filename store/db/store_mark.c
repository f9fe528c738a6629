/*
 * store_mark.c - the writer's "complete up to" mark (meta "complete_ns"):
 * every sample taken before it is stored. Readers use it to tell a
 * complete minute (SPEC §2 Minutes) from one whose last batch is still in
 * the daemon's memory; it lives in the store, not in the daemon, so a
 * second process mounting a live store sees the same `latest`.
 */
#include <errno.h>

#include "store/db/store_int.h"

#define MARK_KEY "complete_ns"

int store__set_complete(struct store *s, int64_t time_ns)
{
	MDB_txn *txn;
	uint64_t old;
	int rc;

	if (time_ns <= 0)
		return -EINVAL;
	rc = store__txn_begin(s, false, &txn);
	if (rc)
		return rc;
	rc = meta__get_u64(s, txn, MARK_KEY, &old);
	/* Never back: a wall clock stepped back does not un-complete the
	 * minutes already served as complete. */
	if (!rc && (uint64_t)time_ns > old)
		rc = meta__put_u64(s, txn, MARK_KEY, (uint64_t)time_ns);
	else if (!rc) {
		store__txn_abort(s, txn);
		return 0;
	}
	if (rc) {
		store__txn_abort(s, txn);
		return rc;
	}
	return store__txn_commit(s, txn);
}

int store__complete(struct store *s, int64_t *time_ns)
{
	MDB_txn *txn;
	uint64_t v;
	int rc;

	rc = store__txn_begin(s, true, &txn);
	if (rc)
		return rc;
	rc = meta__get_u64(s, txn, MARK_KEY, &v);
	store__txn_abort(s, txn);
	if (rc)
		return rc;
	if (!v)
		return -ENOENT;
	*time_ns = (int64_t)v;
	return 0;
}
