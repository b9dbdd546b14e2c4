"""``make reliability``: the approval/resume scenario, repeated, against the Firestore emulator.

    python -m bench.reliability [--runs 200] [--workers 6] [--seed 1] [--lease 0.3]
    python -m bench.reliability --runs 20          # the fast mode

Each iteration starts a run whose non-idempotent ``send_note`` tool stops for approval (some
iterations: two approvals in one turn, or a second pause after the first resume), then for every
approval: 2-3 concurrent approve calls (exactly one must succeed, the others 409), the resume
message delivered 1-5 times (some concurrently), a crash injected at a random point of one
delivery (at a commit, before or after it applies, or inside the tool, before or after the side
effect), and recovery as production does it: wait for the lease to expire, run the sweep, and
redeliver the message whose delivery crashed (Pub/Sub redelivers what was not acknowledged).
Prints one JSON summary; exits 1 if any invariant is violated.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from bench.chaos import SCENARIO_MARK, Chaos, CrashPlan, RoutedDispatcher, scenario_model
from bench.emulator import firestore_store, sqlite_store
from bench.invariants import RunReport, check_run, settled, summarize
from bench.scenario import bench_settings
from shared.agent.approvals import decide
from shared.agent.resume import handle_message, sweep
from shared.api import ApproveRequest, RunRequest
from shared.dispatch import ResumeMessage
from shared.errors import Conflict
from shared.models.scripted import FunctionModel
from shared.runtime import Runtime

CRASH_POINTS = [CrashPlan("commit", w, k) for k in (1, 2, 3, 4) for w in ("before", "after")] + [
    CrashPlan("tool", "before"), CrashPlan("tool", "after")]


class _LevelCounter(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.counts: Counter[str] = Counter()

    def emit(self, record: logging.LogRecord) -> None:
        self.counts[record.levelname] += 1


class Tally:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.c: Counter[str] = Counter()
        self.violations: list[str] = []

    def add(self, key: str, n: int = 1) -> None:
        with self.lock:
            self.c[key] += n

    def violate(self, run_id: str, what: str) -> None:
        with self.lock:
            self.violations.append(f"{run_id}: {what}")


def _threads(targets: list[Any]) -> None:
    threads = [threading.Thread(target=t) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)


class Iteration:
    def __init__(self, rt: Runtime, chaos: Chaos, dispatcher: RoutedDispatcher, tally: Tally,
                 rng: random.Random, lease_s: float) -> None:
        self.rt, self.chaos, self.dispatcher, self.tally, self.rng = rt, chaos, dispatcher, tally, rng
        self.lease_s = lease_s
        self.unacked: list[ResumeMessage] = []
        self._lock = threading.Lock()

    # ---- approve ------------------------------------------------------------------------------
    def approve_concurrently(self, run_id: str, approval_id: str, decision: str) -> None:
        n = self.rng.choice((2, 3))
        barrier = threading.Barrier(n)
        outcomes: list[str] = []

        def go() -> None:
            barrier.wait()
            try:
                decide(self.rt.services, self.dispatcher, "alice",
                       ApproveRequest(approvalId=approval_id, decision=decision))
                outcomes.append("ok")
            except Conflict:
                outcomes.append("409")
            except Exception as exc:
                outcomes.append(type(exc).__name__)

        _threads([go] * n)
        self.tally.add("approve_calls", n)
        for o in outcomes:
            self.tally.add(f"approve_{o}")
        if outcomes.count("ok") != 1 or outcomes.count("409") != n - 1:
            self.tally.violate(run_id, f"concurrent approve outcomes {sorted(outcomes)}")

    # ---- deliver ------------------------------------------------------------------------------
    def _deliver(self, message: ResumeMessage, plan: CrashPlan | None) -> None:
        self.chaos.arm(plan)
        try:
            handle_message(self.rt.services, self.dispatcher, message)
            self.tally.add("deliveries_acked")
        except BaseException as exc:  # a crash or an error: Pub/Sub will redeliver it
            self.tally.add("deliveries_crashed" if type(exc).__name__ == "Crash" else
                           f"deliveries_error_{type(exc).__name__}")
            with self._lock:
                self.unacked.append(message)
        finally:
            fired = self.chaos.disarm()
            if fired:
                self.tally.add(f"crash_fired_{fired}")

    def deliver(self, message: ResumeMessage) -> None:
        copies = self.rng.randint(1, 5)
        self.tally.add("deliveries", copies)
        plan = self.rng.choice(CRASH_POINTS) if self.rng.random() < 0.75 else None
        if plan is not None:
            self.tally.add(f"crash_armed_{plan.label}")
        if plan is not None and self.rng.random() < 0.6:  # the crashing delivery first, alone
            self._deliver(message, plan)
            plan, copies = None, copies - 1
        concurrent = self.rng.randint(1, copies) if copies else 0
        first = [lambda p=plan if i == 0 else None: self._deliver(message, p) for i in range(concurrent)]
        _threads(first)
        for _ in range(copies - concurrent):
            self._deliver(message, None)

    def recover(self, run_id: str) -> None:
        """Wait for the crashed invocation's lease to lapse, sweep, redeliver what was not acked."""
        for _ in range(20):
            ok, why = settled(self.rt, run_id)
            if ok:
                return
            time.sleep(self.lease_s + 0.05)
            if why == "leased":
                continue
            self.tally.add("sweeps")
            self.tally.add("sweep_recovered", sweep(self.rt.services, self.dispatcher)["recovered"])
            if settled(self.rt, run_id)[0]:
                return
            with self._lock:
                redeliver, self.unacked = self.unacked, []
            if not redeliver:
                continue
            self.tally.add("settled_by_redelivery_not_sweep")
            for message in redeliver:
                self.tally.add("redeliveries")
                self._deliver(message, None)
        self.tally.violate(run_id, f"did not settle: {settled(self.rt, run_id)[1]}")

    # ---- one run ------------------------------------------------------------------------------
    def __call__(self, i: int) -> RunReport | None:
        scenario = self.rng.choices(["single", "parallel", "chain"], weights=[5, 3, 2])[0]
        self.tally.add(f"scenario_{scenario}")
        started = self.rt.agent.start("alice", RunRequest(prompt=f"go {SCENARIO_MARK}{scenario} t{i}"))
        result = self.rt.agent.run(self.rt.agent.context(started))
        run_id = result.run_id
        for _pause in range(4):
            snap = self.rt.runs.get_run(run_id)
            assert snap is not None
            if snap.run.terminal:
                break
            if snap.run.status != "awaiting_confirmation":
                self.tally.violate(run_id, f"unexpected status {snap.run.status} between pauses")
                break
            for approval_id in snap.run.pending_approval_ids:
                decision = "reject" if self.rng.random() < 0.2 else "approve"
                self.tally.add(f"decisions_{decision}")
                self.approve_concurrently(run_id, approval_id, decision)
                for message in self.dispatcher.take(run_id):
                    self.deliver(message)
                self.recover(run_id)
        report = check_run(self.rt, run_id, self.chaos.executions)
        for v in report.violations:
            self.tally.violate(run_id, v)
        return report


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=200)
    p.add_argument("--workers", type=int, default=6, help="iterations in flight at once")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--lease", type=float, default=0.3, help="RESUME_LEASE_TTL_S for the scenario")
    p.add_argument("--store", choices=["firestore", "sqlite"], default="firestore",
                   help="sqlite: a quick local check of the harness (the figures are for firestore)")
    args = p.parse_args(argv)
    log_path = os.path.join(tempfile.mkdtemp(prefix="reliability-log-"), "reliability.log")
    logging.basicConfig(filename=log_path, level=logging.WARNING, force=True)
    levels = _LevelCounter()
    logging.getLogger().addHandler(levels)
    t0 = time.perf_counter()
    tmp = tempfile.mkdtemp(prefix="reliability-")
    opened = firestore_store() if args.store == "firestore" else sqlite_store(os.path.join(tmp, "state.sqlite3"))
    with opened as inner:
        chaos = Chaos(inner)
        dispatcher = RoutedDispatcher()
        rt = Runtime(bench_settings(state_backend=args.store, lease_ttl_s=args.lease),
                     store=chaos.store, model=FunctionModel(scenario_model, name="reliability-model"),
                     dispatcher=dispatcher, registry=chaos.registry())
        tally = Tally()
        master = random.Random(args.seed)
        seeds = [master.randrange(2**32) for _ in range(args.runs)]

        def one(i: int) -> RunReport | None:
            try:
                return Iteration(rt, chaos, dispatcher, tally, random.Random(seeds[i]), args.lease)(i)
            except Exception as exc:
                tally.violate(f"iteration {i}", f"harness error {type(exc).__name__}: {exc}")
                return None

        with ThreadPoolExecutor(max_workers=args.workers) as pool:
            reports = [r for r in pool.map(one, range(args.runs)) if r is not None]
    summary = summarize(reports)
    counts = dict(sorted(tally.c.items()))
    executions = summary["executions_per_approved_action"]
    out = {
        "store": args.store, "runs": args.runs, "checked_runs": len(reports), "workers": args.workers,
        "seed": args.seed,
        "lease_ttl_s": args.lease,
        **summary,
        "approved_actions_executed_twice_or_more": sum(v for k, v in executions.items() if int(k) >= 2),
        "runs_stuck": sum(1 for v in tally.violations if "did not settle" in v or "not terminal" in v),
        "event_violations": sum(1 for v in tally.violations if "event" in v),
        "violations": len(tally.violations),
        "violation_samples": tally.violations[:20],
        "counts": counts,
        "log_records": dict(levels.counts), "log_file": log_path,
        "duration_s": round(time.perf_counter() - t0, 1),
    }
    out["ok"] = not tally.violations and len(reports) == args.runs
    print(json.dumps(out, indent=2))
    return 0 if out["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
