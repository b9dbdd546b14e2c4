"""``make reliability`` (plan part): plan sessions under crashes, duplicates and lost messages.

    python -m bench.plan_reliability [--sessions 100] [--seed 1] [--store sqlite|firestore]

Each session is a 3-task plan whose tasks act twice each through ``record_act``, a
non-idempotent side-effect tool (the user is ``autonomous``: no approvals). Faults, drawn per
delivery: a crash before or after a random commit of the invocation, or inside the tool (before or
after its side effect); the continue message delivered twice (at once, or later); a message lost
(dead-lettered, never delivered). Recovery is production's: the lease expires, the sweep re-publishes
what was not handled and takes over units whose invocation died. One session in ten gets a deadline
that passes mid-way. Invariants (``ok``): no act executed twice, no session stuck (every one ends),
ReAct histories without gaps or duplicates, plan versions strictly increasing, no act started
after its session's deadline, no outbox entry left. Prints one JSON summary; exits 1 on a violation.
"""

from __future__ import annotations

import argparse
import random
import sys
import threading
import time
from collections import Counter
from typing import Any

from bench.emulator import reliability_parser, run_on_store
from bench.instrument import InstrumentedStore
from bench.plan_model import Script, model
from shared.auth import LocalAuthenticator
from shared.config import Settings
from shared.durable.dispatcher import RecordingDispatcher
from shared.plans import sessions as engine
from shared.plans import unit
from shared.runtime import Runtime
from shared.state.docstore import DocStore
from shared.state.records import UserRecord
from shared.tools import default_registry
from shared.tools.context import ToolContext
from shared.tools.registry import ToolRegistry

TASKS = ["First task", "Second task", "Third task"]
ACTS = 2


class Crash(BaseException):
    """The process dies here."""


class Faults:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        self.armed: tuple[str, int] | None = None  # ("before"|"after", commit index) or ("tool-before"|"tool-after", 0)
        self.commits = 0
        self.executions: Counter[str] = Counter()
        self.tally: Counter[str] = Counter()

    def arm(self) -> None:
        with self.lock:
            self.commits = 0
            r = self.rng.random()
            if r < 0.35:
                self.armed = (self.rng.choice(["before", "after"]), self.rng.randint(1, 8))
            elif r < 0.5:
                self.armed = (self.rng.choice(["tool-before", "tool-after"]), 0)
            else:
                self.armed = None

    def disarm(self) -> None:
        with self.lock:
            self.armed = None

    def commit_hook(self, when: str) -> Any:
        def hook(kind: str, index: int) -> None:
            with self.lock:
                self.commits += 1
                hit = self.armed is not None and self.armed[0] == when and self.armed[1] == self.commits
                if hit:
                    self.armed = None
                    self.tally[f"crash_{when}_commit"] += 1
            if hit:
                raise Crash()
        return hook

    def tool(self, key: str) -> None:
        with self.lock:
            armed = self.armed[0] if self.armed else None
            if armed == "tool-before":
                self.armed = None
                self.tally["crash_tool_before"] += 1
        if armed == "tool-before":
            raise Crash()
        with self.lock:
            self.executions[key] += 1
            if armed == "tool-after":
                self.armed = None
                self.tally["crash_tool_after"] += 1
        if armed == "tool-after":
            raise Crash()


def registry(faults: Faults) -> ToolRegistry:
    reg = default_registry()

    @reg.tool(side_effect=True)
    def record_act(ctx: ToolContext, key: str) -> dict[str, Any]:
        """Record one act (a side effect that must happen at most once).

        Args:
            key: What is recorded.
        """
        faults.tool(f"{ctx.action_id}")
        return {"recorded": key}

    return reg


def script() -> Script:
    return Script(tasks=TASKS, acts={t: [("record_act", {"key": f"{t}-{i}"}) for i in range(ACTS)] for t in TASKS})


def settings(lease: float) -> Settings:
    # One user stands for many here (every session is confirmed before any runs): no per-user
    # limit on active sessions (docs/limits.md).
    return Settings(state_backend="sqlite", auth_mode="local", dispatcher="none", run_deadline_s=60.0,
                    lease_ttl_s=lease, plan_steps_per_invocation=3, plan_yield_margin_s=0.0,
                    limit_active_sessions=0)


def run(opts: argparse.Namespace, store: DocStore) -> dict[str, Any]:
    faults = Faults(opts.seed)
    instrumented = InstrumentedStore(store, before_commit=faults.commit_hook("before"),
                                     after_commit=faults.commit_hook("after"))
    dispatcher = RecordingDispatcher()
    rt = Runtime(settings(opts.lease), store=instrumented, model=model(script()), registry=registry(faults),
                 dispatcher=dispatcher, authenticator=LocalAuthenticator())
    rt.users.put_user(UserRecord(uid="rel", trust_level="autonomous"))
    rng = random.Random(opts.seed + 1)
    sessions: list[tuple[str, float]] = []
    for i in range(opts.sessions):
        deadline = time.time() + (0.5 + rng.random() if i % 10 == 9 else 3600)
        outcome = engine.start_planning(rt.services, rt.sessions, "rel", f"session {i}", deadline=deadline)
        s = outcome.session
        engine.confirm(rt.services, rt.sessions, "rel", s.session_id, s.plan_version)
        sessions.append((s.session_id, deadline))
    later: list[Any] = []
    rounds = 0
    started = time.monotonic()
    while rounds < opts.max_rounds:
        rounds += 1
        msgs = dispatcher.take() + later
        later = []
        for m in msgs:
            r = rng.random()
            if r < 0.05:
                faults.tally["dead_lettered"] += 1
                continue
            copies = 2 if r < 0.15 else 1
            if copies == 2:
                faults.tally["duplicated"] += 1
            for _ in range(copies):
                faults.arm()
                try:
                    rt.router.handle(m)
                except Crash:
                    faults.tally["crashed_deliveries"] += 1
                    if rng.random() < 0.5:
                        later.append(m)  # Pub/Sub redelivers what was not acknowledged
                finally:
                    faults.disarm()
            if rng.random() < 0.05:
                later.append(m)  # a late duplicate
        if all(_ended(rt, sid) for sid, _ in sessions):
            break
        if not msgs:
            time.sleep(opts.lease * 1.2)
            rt.outbox.sweep(older_than_s=0.0)
            found = rt.router.sweep()
            faults.tally["swept_recovered"] += found["recovered"]
            faults.tally["swept_republished"] += found["republished"]
    return report(rt, faults, sessions, rounds, time.monotonic() - started)


def _ended(rt: Runtime, sid: str) -> bool:
    got = rt.sessions.get(sid)
    return got is not None and got[0].terminal


def report(rt: Runtime, faults: Faults, sessions: list[tuple[str, float]], rounds: int,
           seconds: float) -> dict[str, Any]:
    statuses: Counter[str] = Counter()
    violations: list[str] = []
    acts_after_deadline = gaps = 0
    for sid, deadline in sessions:
        session, _ = rt.sessions.get_for("rel", sid)
        statuses[session.status] += 1
        if not session.terminal:
            violations.append(f"{sid}: stuck in {session.status}")
        versions = [v.version for v in rt.sessions.plan_versions(sid)]
        if versions != sorted(set(versions)):
            violations.append(f"{sid}: plan versions {versions}")
        for task in unit.read(rt.sessions, rt.runs, session).tasks:
            steps = rt.sessions.react(sid, task.id)
            ns = [s.n for s in steps]
            if ns != list(range(1, len(ns) + 1)):
                gaps += 1
                violations.append(f"{sid}/{task.id}: react history {ns}")
        if session.run_id:  # an act starts when its call is decided (the action record is created)
            acts_after_deadline += sum(1 for a in rt.runs.list_actions(session.run_id) if a.created_at > deadline)
    twice = [k for k, n in faults.executions.items() if n > 1]
    if twice:
        violations.append(f"acts executed twice: {twice[:5]}")
    if acts_after_deadline:
        violations.append(f"{acts_after_deadline} acts started after their deadline")
    left = rt.outbox.repo.all()
    if left:
        violations.append(f"{len(left)} outbox entries left")
    return {"sessions": len(sessions), "statuses": dict(statuses), "rounds": rounds, "seconds": round(seconds, 1),
            "acts_executed": sum(faults.executions.values()), "acts_executed_twice": len(twice),
            "sessions_stuck": sum(1 for v in violations if "stuck" in v), "history_gaps_or_duplicates": gaps,
            "acts_after_deadline": acts_after_deadline, "outbox_left": len(left), "faults": dict(faults.tally),
            "violations": violations[:20], "ok": not violations}


def main(argv: list[str] | None = None) -> int:
    p = reliability_parser(__doc__, max_rounds=2000)
    p.add_argument("--sessions", type=int, default=100)
    return run_on_store(run, p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())


