"""A run whose approvals are all decided but whose resume message was lost after it was published
(every delivery crashed before claiming the run, then Pub/Sub dead-lettered it). Before the fix the
outbox entry was deleted right after the publish and the sweep never picked the run up: it stayed
``awaiting_confirmation`` with no pending approval and no lease. Now the entry stays until a resume
handled the message, and the sweep re-publishes it.

    python -m bench.repros.sweep_misses_decided_run

Exits 1 when the run is left stranded.
"""

from __future__ import annotations

import sys
import time

from bench.chaos import Crash, CrashPlan
from bench.invariants import settled
from bench.repros import scene
from shared.agent.approvals import decide
from shared.api import ApproveRequest


def main() -> int:
    at = scene(lease_ttl_s=0.2)
    rt, chaos, dispatcher = at.rt, at.chaos, at.dispatcher
    started = at.start_single()
    result = rt.agent.run(rt.agent.context(started))
    assert result.approval is not None
    decide(rt.services, dispatcher, "alice", ApproveRequest(approvalId=result.approval.id, decision="approve"))
    (message,) = dispatcher.take(result.run_id)
    chaos.arm(CrashPlan("commit", "before", 1))  # the resume invocation dies before claiming the run
    try:
        rt.router.handle(message)
    except Crash:
        print("delivery crashed before the claim; the message is not redelivered (dead-lettered)")
    chaos.disarm()
    time.sleep(0.45)  # the sweep re-publishes a published entry not handled within twice the lease
    print("sweep:", rt.router.sweep())
    for redelivered in dispatcher.take(result.run_id):
        rt.router.handle(redelivered)
    snap = rt.runs.get_run(result.run_id)
    assert snap is not None
    state, why = settled(rt, result.run_id)
    print(f"run {result.run_id}: status={snap.run.status} lease={snap.run.lease} "
          f"pending={snap.run.pending_approval_ids} outbox={rt.store.get('outbox/' + result.approval.id)} -> {why}")
    return 0 if state else 1


if __name__ == "__main__":
    sys.exit(main())
