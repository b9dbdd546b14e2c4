"""Expiring a lease on purpose: a test that needs an invocation's lease to have lapsed (the holder
"died") writes its expiry in the past through the runs repository, as the store would hold it after
the lease's time ran out. The runtime keeps a long lease meanwhile, so a check that needs the lease
still held never depends on how fast a loaded machine ran (no wall-clock timing in tests)."""

from __future__ import annotations

from shared.state.outbox_repo import OutboxRepo
from shared.state.records import Lease, now
from shared.state.runs_repo import RunsRepo

LONG_LEASE_S = 600.0
"""A lease no test outlives: held for the whole of a test whatever the machine's load."""


def lapse(runs: RunsRepo, run_id: str) -> None:
    """Make the lease of run ``run_id`` (it holds one) expired now, through a conditional commit of
    the run: everything else on the run stays as its last invocation committed it."""
    snap = runs.get_run(run_id)
    assert snap is not None, run_id
    run = snap.run
    assert run.lease is not None, f"run {run_id} holds no lease"
    run.lease = Lease(owner=run.lease.owner, expires_at=now() - 1.0)
    run.lease_expires_at = run.lease.expires_at
    runs.commit(snap, run)


def overdue(outbox: OutboxRepo, entry_id: str, wait_s: float) -> None:
    """Move the last publication of outbox entry ``entry_id`` ``wait_s`` seconds (and one more)
    into the past: the sweep's wait for its message (twice the lease) is over, however long the
    lease."""
    got = outbox.get(entry_id)
    assert got is not None, entry_id
    entry, _ = got
    assert entry.published_at is not None, f"outbox entry {entry_id} was never published"
    aged = entry.model_copy(update={"published_at": entry.published_at - wait_s - 1.0})
    outbox.store.commit([outbox.create_write(aged)])


def expire_pause(runs: RunsRepo, uid: str, run_id: str) -> None:
    """Make the open approvals of run ``run_id`` (paused for them) expired now, and the run's
    ``pauseExpiresAt`` with them (when it has one: a run paused by an older runtime has none), in
    one conditional commit of the run: as the store holds them once the approvals' time ran out."""
    snap = runs.get_run(run_id)
    assert snap is not None, run_id
    run = snap.run
    assert run.pending_approval_ids, f"run {run_id} waits for no approval"
    at = now() - 1.0
    expired = []
    for approval_id in run.pending_approval_ids:
        got = runs.get_approval(uid, approval_id)
        assert got is not None, approval_id
        expired.append(runs.approval_write(got[0].model_copy(update={"expires_at": at})))
    if run.pause_expires_at is not None:
        run.pause_expires_at = at
    runs.commit(snap, run, expired)
