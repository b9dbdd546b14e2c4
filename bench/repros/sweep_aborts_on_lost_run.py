"""An invocation that loses its run in the middle of ``drive`` (its lease lapsed during a slow step
and another invocation claimed the run) raises ``PreconditionFailed`` out of ``resume_run``:
``close_open_turn`` is guarded, ``drive`` is not. The loop's error path first logs
"unexpected error in run step" and "run failed: INTERNAL" (the run did not fail: the other
invocation completes it), then ``fail_run``'s commit loses too and the exception escapes. Through
``sweep`` it aborts the whole pass: the runs after it in that pass are not recovered until the next
tick. (Through ``handle_message`` the delivery errors and Pub/Sub redelivers it, which is harmless.)

Here: two approved runs whose resume invocation died right after claiming them (lease lapsed).
The sweep resumes the first; its model call outlasts the lease, and meanwhile another invocation
takes the run over and completes it.

    python -m bench.repros.sweep_aborts_on_lost_run

Exits 1 when the sweep raises or leaves the second run unrecovered.
"""

from __future__ import annotations

import contextlib
import sys
import tempfile
import threading
import time

from bench.chaos import SCENARIO_MARK, Chaos, Crash, CrashPlan, RoutedDispatcher, scenario_model
from bench.scenario import bench_settings
from shared.agent.approvals import decide
from shared.api import ApproveRequest, RunRequest
from shared.loop.resume import resume_run
from shared.models.base import ModelRequest, Turn
from shared.models.scripted import FunctionModel
from shared.runtime import Runtime
from shared.state.sqlite_docstore import SqliteDocStore

LEASE_S = 0.3


def main() -> int:
    store = SqliteDocStore(tempfile.mkdtemp() + "/state.sqlite3")
    chaos = Chaos(store)
    dispatcher = RoutedDispatcher()
    slow: dict[str, str] = {}

    def model(request: ModelRequest) -> Turn:
        prompt = request.turns[0].text if request.turns else ""
        run_id = slow.pop(prompt, None)
        if run_id is not None:  # the sweep's model call: slower than the lease
            time.sleep(LEASE_S + 0.1)
            other = threading.Thread(target=lambda: print("another invocation:", resume_run(rt.services, run_id)))
            other.start()
            other.join()
        return scenario_model(request)

    rt = Runtime(bench_settings(lease_ttl_s=LEASE_S), store=chaos.store, model=FunctionModel(model),
                 dispatcher=dispatcher, registry=chaos.registry())
    runs: list[str] = []
    for tag in ("t1", "t2"):
        prompt = f"go {SCENARIO_MARK}single {tag}"
        started = rt.agent.start("alice", RunRequest(prompt=prompt))
        result = rt.agent.run(rt.agent.context(started))
        assert result.approval is not None
        decide(rt.services, dispatcher, "alice", ApproveRequest(approvalId=result.approval.id, decision="approve"))
        (message,) = dispatcher.take(result.run_id)
        chaos.arm(CrashPlan("commit", "after", 1))  # the resume invocation dies right after its claim
        with contextlib.suppress(Crash):
            rt.router.handle(message)
        chaos.disarm()
        runs.append(result.run_id)
        if tag == "t1":
            slow[prompt] = result.run_id
        time.sleep(0.05)
    time.sleep(LEASE_S + 0.05)
    failed = False
    try:
        print("sweep:", rt.router.sweep())
    except Exception as exc:
        print(f"sweep raised {type(exc).__name__}: {exc}")
        failed = True
    for run_id in runs:
        snap = rt.runs.get_run(run_id)
        assert snap is not None
        print(f"{run_id}: status={snap.run.status}")
        failed = failed or snap.run.status != "completed"
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
