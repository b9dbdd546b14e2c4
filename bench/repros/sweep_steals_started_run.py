"""A sweep that runs while a freshly started run is in its first step (its first model call) takes
the run over: ``start_run`` writes the run ``planning`` with no lease (``leaseExpiresAt`` 0), and
``shared.agent.resume.sweep`` resumes every ``planning``/``executing`` run whose
``leaseExpiresAt`` is in the past. The sweep's invocation calls the model again and drives the
run; the invocation that started it (the HTTP request) then loses its first commit, logs
"run failed: INTERNAL" (the run did not fail) and raises ``PreconditionFailed`` to its caller.
No side effect runs twice (claims are conditional commits), but the model is called twice and the
client of POST /runs gets an error for a run that goes on.

    python -m bench.repros.sweep_steals_started_run

Exits 1 while a sweep can take over a run between its start and its first commit.
"""

from __future__ import annotations

import sys

from bench.repros import scene
from shared.state.docstore import PreconditionFailed


def main() -> int:
    at = scene(lease_ttl_s=30.0)
    rt = at.rt
    started = at.start_single()
    run = started.outcome.snapshot.run
    print(f"started {run.run_id}: status={run.status} lease={run.lease} leaseExpiresAt={run.lease_expires_at}")
    # The periodic sweep fires while the starting invocation waits for its first model answer.
    swept = rt.router.sweep()
    print("sweep during the first step:", swept)
    try:
        result = rt.agent.run(rt.agent.context(started))
        print("the starting invocation finished:", result.status)
        lost = False
    except PreconditionFailed as exc:
        print("the starting invocation lost the run:", exc)
        lost = True
    snap = rt.runs.get_run(run.run_id)
    assert snap is not None
    print(f"run {run.run_id}: status={snap.run.status} steps={snap.run.steps}")
    return 1 if lost or swept["recovered"] else 0


if __name__ == "__main__":
    sys.exit(main())
