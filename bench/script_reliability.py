"""``make reliability``'s script scenario: a script is not idempotent, so a crash during it must
end as outcome ``unknown`` and never run it again.

    python -m bench.script_reliability [--runs 40] [--seed 1]

Each iteration: a supervised user's run asks to run ``echo run >> runs.txt`` in a workspace of the
sandbox service (its own process); the call is approved; the resume is delivered 1-3 times, one
delivery crashing at a random point (after the run's claim, after the action's claim = before the
script, after the script before its result is recorded, or not at all); then recovery as in
production (the lease lapses, the sweep, a redelivery). Invariants: the script ran at most once
(the workspace's ``runs.txt`` has at most one line); a script that ran but whose result was never
recorded is ``unknown`` (never re-run); one that did not run before the crash runs once; no run is
left unfinished. Prints one JSON summary; exits 1 on any violation.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from bench.instrument import Crash, CrashAt
from shared.agent.approvals import decide
from shared.api import ApproveRequest, RunRequest
from shared.durable.dispatcher import RecordingDispatcher
from shared.models.scripted import ScriptedModel, call, calls_turn, text_turn
from shared.runtime import Runtime
from shared.state.docstore import DocStore
from shared.state.records import UserRecord
from shared.state.sqlite_docstore import SqliteDocStore
from shared.state.workspaces_repo import WorkspacesRepo
from tests.agent.conftest import make_settings
from tests.sandbox.support import SandboxProcess

UID = "alice"
LEASE_S = 0.2
CRASH_POINTS: tuple[tuple[str, int] | None, ...] = (None, ("after", 1), ("after", 2), ("before", 3), ("after", 3))
"""A resume's commits: 1 claims the run, 2 claims the action (then the script runs), 3 records the
workspace's last use (after the script), 4 the result. ``("before", 3)``: the script ran, nothing
recorded it."""


def _deliver(rt: Runtime, copies: int) -> None:
    dispatcher = rt.dispatcher
    assert isinstance(dispatcher, RecordingDispatcher)
    for message in dispatcher.take():
        for _ in range(copies):
            rt.router.handle(message)


def one(box: SandboxProcess, store: DocStore, rng: random.Random) -> dict[str, Any]:
    chaos = CrashAt(store)
    settings = make_settings(sandbox_url=box.url, sandbox_key=box.key, lease_ttl_s=LEASE_S)
    seed = Runtime(settings, store=store, model=ScriptedModel([calls_turn(call("container_create", {})),
                                                               text_turn("ok")]), dispatcher=RecordingDispatcher())
    seed.users.put_user(UserRecord(uid=UID, trust_level="autonomous"))
    made = seed.agent.run(seed.agent.context(seed.agent.start(UID, RunRequest(prompt="make one"))))
    wid = next(a.result for a in seed.runs.list_actions(made.run_id) if a.tool == "container_create")["containerId"]
    WorkspacesRepo(store).update(wid, keep=True)
    model = ScriptedModel([calls_turn(call("container_exec", {"containerId": wid, "script": "echo run >> runs.txt"})),
                           text_turn("Done.")])
    rt = Runtime(settings, store=chaos.store, model=model, dispatcher=RecordingDispatcher())  # type: ignore[arg-type]
    rt.users.put_user(UserRecord(uid=UID, trust_level="supervised"))
    result = rt.agent.run(rt.agent.context(rt.agent.start(UID, RunRequest(prompt="append"))))
    assert result.approval is not None
    decide(rt.services, rt.dispatcher, UID, ApproveRequest(approvalId=result.approval.id, decision="approve"))
    plan = rng.choice(CRASH_POINTS)
    chaos.arm(*(plan or (None,)))
    dispatcher = rt.dispatcher
    assert isinstance(dispatcher, RecordingDispatcher)
    messages = dispatcher.take()
    crashed = False
    for message in messages:
        for _ in range(rng.randint(1, 3)):
            try:
                rt.router.handle(message)
            except Crash:
                crashed = True
    chaos.arm(None)
    for _ in range(3):  # recovery: the lease lapses, the sweep takes over, redeliveries
        time.sleep(LEASE_S + 0.05)
        rt.router.sweep()
        _deliver(rt, 2)
        for message in messages:
            rt.router.handle(message)
        _deliver(rt, 1)
        snap = rt.runs.get_run(result.run_id)
        if snap is not None and snap.run.terminal:
            break
    try:
        lines = box.client().read_file(wid, "runs.txt").content.count("\n")
    except Exception:
        lines = 0
    (action,) = rt.runs.list_actions(result.run_id)
    snap = rt.runs.get_run(result.run_id)
    box.client().destroy(wid)
    return {"crash": "none" if plan is None else f"{plan[0]}-{plan[1]}", "crashed": crashed, "runs": lines,
            "outcome": action.outcome, "status": action.status, "attempts": action.attempts,
            "finished": bool(snap is not None and snap.run.terminal)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=40)
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args(argv)
    rng = random.Random(args.seed)
    tmp = Path(tempfile.mkdtemp(prefix="script-reliability-"))
    box = SandboxProcess.start(tmp, snapshot_dir=tmp / "snapshots")
    results: list[dict[str, Any]] = []
    try:
        for i in range(args.runs):
            store = SqliteDocStore(str(tmp / f"run-{i}.sqlite3"))
            try:
                results.append(one(box, store, rng))
            finally:
                store.close()
    finally:
        box.stop()
    twice = sum(1 for r in results if r["runs"] > 1)
    ran_unrecorded_not_unknown = sum(1 for r in results if r["crash"] == "before-3" and r["outcome"] != "unknown")
    # Without a crash after the action's claim, the script runs exactly once and succeeds.
    not_once = sum(1 for r in results if r["outcome"] != "unknown" and (r["runs"] != 1 or r["status"] != "completed"))
    stuck = sum(1 for r in results if not r["finished"])
    violations = twice + ran_unrecorded_not_unknown + not_once + stuck
    out = {"scenario": "script", "runs": len(results), "seed": args.seed,
           "crash_points": dict(Counter(r["crash"] for r in results)),
           "outcomes": dict(Counter(f"{r['status']}/{r['outcome']}" for r in results)),
           "scripts_executed_twice_or_more": twice,
           "ran_before_crash_but_not_unknown": ran_unrecorded_not_unknown,
           "known_outcome_but_not_run_exactly_once": not_once,
           "claimed_then_crashed_unknown_without_running": sum(
               1 for r in results if r["outcome"] == "unknown" and r["runs"] == 0),
           "unknown_outcomes": sum(1 for r in results if r["outcome"] == "unknown"),
           "stuck_runs": stuck, "violations": violations, "ok": violations == 0}
    print(json.dumps(out, indent=2))
    return 0 if violations == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
