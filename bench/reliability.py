"""``make reliability``: the approval/resume scenario, repeated, against the Firestore emulator.

    python -m bench.reliability [--runs 200] [--workers 6] [--seed 1] [--lease 0.3]
    python -m bench.reliability --runs 20          # the fast mode

Each iteration starts a run whose non-idempotent ``send_note`` tool stops for approval (scenarios:
``single``; ``parallel``, two approvals in one turn; ``chain``, a second pause after the first
resume; ``mixed``, an allowed non-idempotent ``notify`` to an allowlisted address in the same turn
as a ``send_note`` needing approval, with a crash armed in that first invocation: inside
``notify`` or at one of its commits; ``reconciled`` and ``keyed``, a ``file_note`` or ``book_slot``
needing approval, tools that can learn their true outcome after a crash; ``mcp`` and ``mcp_keyed``,
``ledger_append_note`` (no annotations) or ``ledger_put_note`` (``idempotentHint``), tools of a real
stdio MCP server that counts their executions itself). Then for every
approval: 2-3 concurrent approve calls (exactly one must succeed, the others 409), the resume
message delivered 1-5 times (some concurrently), a crash injected at a random point of one
delivery (at a commit, before or after it applies, or inside the tool, before or after the side
effect; sometimes that delivery is the only one and the message is dead-lettered after it), and
recovery as production does it:
wait for the lease to expire, run the sweep (which resumes runs whose lease lapsed and re-publishes
decisions whose message was not handled), deliver what it re-published, and as a last resort
redeliver the message whose delivery crashed (Pub/Sub redelivers what was not acknowledged).
Prints one JSON summary; exits 1 if any invariant is violated. ``unknown_outcomes`` counts side
effects left ``unknown``: for tools that can learn their true outcome it must be 0 (each one is a
violation), for the others it is reported. ``mcp_actions_executed_twice_or_more`` (by the MCP server's count)
must be 0; ``mcp_server_calls`` / ``mcp_server_effects``: what the server received and did.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import random
import sys
import tempfile
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from bench.chaos import (
    ALLOWLISTED,
    MCP_SCENARIOS,
    SCENARIO_MARK,
    SCENARIOS,
    Chaos,
    Crash,
    CrashPlan,
    RoutedDispatcher,
    scenario_model,
)
from bench.emulator import firestore_store, sqlite_store
from bench.invariants import RunReport, check_pause, check_run, settled, summarize, summarize_mcp
from bench.scenario import bench_settings
from shared.agent.approvals import decide
from shared.api import ApproveRequest, RunRequest
from shared.durable.messages import WorkMessage
from shared.errors import Conflict, PreconditionFailed
from shared.models.scripted import FunctionModel
from shared.runtime import Runtime
from shared.state.docstore import DocStore, Query
from shared.state.records import UserProfile, UserRecord

CRASH_POINTS = [CrashPlan("commit", w, k) for k in (1, 2, 3, 4) for w in ("before", "after")] + [
    CrashPlan("tool", "before"), CrashPlan("tool", "after")]
"""Crash points of a resume delivery: commit 1 claims the run, 2 claims the action, 3 records the
result (+ events + function responses), 4 the next stop; or inside the tool."""
INITIAL_CRASH_POINTS = [CrashPlan("commit", w, k) for k in (1, 2) for w in ("before", "after")] + [
    CrashPlan("tool", "before"), CrashPlan("tool", "after")]
"""Crash points of a ``mixed`` run's first invocation: commit 1 claims ``notify``, 2 records its
result and the pause; or inside ``notify``."""
SCENARIO_WEIGHTS = {"single": 4, "parallel": 2, "chain": 2, "mixed": 3, "reconciled": 3, "keyed": 2, "mcp": 3,
                    "mcp_keyed": 2}
UID = "alice"


@dataclass(frozen=True)
class Options:
    runs: int = 200
    workers: int = 6
    seed: int = 1
    lease: float = 0.3
    store: str = "firestore"
    initial_crash_p: float = 0.75
    """Probability of a crash armed in a ``mixed`` run's first invocation."""
    delivery_crash_p: float = 0.75
    """Probability of a crash armed in one delivery of each decision's resume message."""
    delivery_crash_points: tuple[CrashPlan, ...] = tuple(CRASH_POINTS)
    scenarios: tuple[str, ...] = ()
    """Only these scenarios (default: all, weighted by ``SCENARIO_WEIGHTS``)."""
    dead_letter_p: float = 0.25
    """Given a crash armed in a delivery: probability that it is the only delivery and the message
    is then dead-lettered (never redelivered)."""


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


def _threads(targets: list[Callable[[], None]]) -> None:
    threads = [threading.Thread(target=t) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)


class Iteration:
    def __init__(self, rt: Runtime, chaos: Chaos, dispatcher: RoutedDispatcher, tally: Tally,
                 rng: random.Random, opts: Options) -> None:
        self.rt, self.chaos, self.dispatcher, self.tally, self.rng = rt, chaos, dispatcher, tally, rng
        self.opts = opts
        self.lease_s = opts.lease
        self.unacked: list[WorkMessage] = []
        self.crashed_at = 0.0
        self._lock = threading.Lock()

    # ---- approve ------------------------------------------------------------------------------
    def approve_concurrently(self, run_id: str, approval_id: str, decision: str) -> None:
        n = self.rng.choice((2, 3))
        barrier = threading.Barrier(n)
        outcomes: list[str] = []

        def go() -> None:
            barrier.wait()
            try:
                decide(self.rt.services, self.dispatcher, UID,
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
    def _deliver(self, message: WorkMessage, plan: CrashPlan | None, *, dead_letter: bool = False) -> None:
        self.chaos.arm(plan)
        try:
            self.rt.router.handle(message)
            self.tally.add("deliveries_acked")
        except BaseException as exc:  # a crash or an error: Pub/Sub will redeliver it
            self.tally.add("deliveries_crashed" if isinstance(exc, Crash) else
                           f"deliveries_error_{type(exc).__name__}")
            with self._lock:
                if dead_letter:
                    self.tally.add("deliveries_dead_lettered")
                else:
                    self.unacked.append(message)
                self.crashed_at = time.monotonic()
        finally:
            fired = self.chaos.disarm()
            if fired:
                self.tally.add(f"crash_fired_{fired}")

    def _delivery(self, message: WorkMessage, plan: CrashPlan | None) -> Callable[[], None]:
        return lambda: self._deliver(message, plan)

    def deliver(self, message: WorkMessage) -> None:
        copies = self.rng.randint(1, 5)
        plan = (self.rng.choice(self.opts.delivery_crash_points) if self.rng.random() < self.opts.delivery_crash_p
                else None)
        if plan is not None:
            self.tally.add(f"crash_armed_{plan.label}")
        if plan is not None and self.rng.random() < self.opts.dead_letter_p:
            # The only delivery crashes and Pub/Sub gives up on the message (dead-lettered): only
            # the sweep (a lapsed lease, or the decision's outbox entry re-published) can finish it.
            self.tally.add("deliveries")
            self._deliver(message, plan, dead_letter=True)
            return
        self.tally.add("deliveries", copies)
        if plan is not None and self.rng.random() < 0.6:  # the crashing delivery first, alone
            self._deliver(message, plan)
            plan, copies = None, copies - 1
        concurrent = self.rng.randint(1, copies) if copies else 0
        _threads([self._delivery(message, plan if i == 0 else None) for i in range(concurrent)])
        for _ in range(copies - concurrent):
            self._deliver(message, None)

    # ---- recover ------------------------------------------------------------------------------
    def recover(self, run_id: str) -> None:
        """Production's recovery of a run left unsettled by a crash: wait for the lease to lapse,
        run the sweep (it resumes runs whose lease lapsed and re-publishes decisions not handled
        within twice the lease), deliver what it re-published for this run as Pub/Sub would, and
        only once the sweep had its chance redeliver the messages whose delivery crashed."""
        for _ in range(30):
            ok, why = settled(self.rt, run_id)
            if ok:
                self._late_duplicates(run_id)
                return
            time.sleep(self.lease_s + 0.05)
            if why == "leased":
                continue
            swept = _sweep(self.rt, self.dispatcher, self.tally)
            self.tally.add("sweep_recovered", swept["recovered"])
            self.tally.add("sweep_republished", swept["republished"])
            if settled(self.rt, run_id)[0]:
                self.tally.add("settled_by_sweep_resume")
                continue
            republished = self.dispatcher.take(run_id)
            for message in republished:
                self.tally.add("sweep_republish_deliveries")
                self._deliver(message, None)
            if republished and settled(self.rt, run_id)[0]:
                self.tally.add("settled_by_sweep_republish")
                continue
            now_why = settled(self.rt, run_id)[1]
            if now_why == "leased":  # another invocation (another iteration's sweep) is on it
                continue
            with self._lock:
                sweep_had_its_chance = time.monotonic() - self.crashed_at > 2 * self.lease_s + 0.1
                redeliver, self.unacked = (self.unacked, []) if sweep_had_its_chance else ([], self.unacked)
            if redeliver:
                snap = self.rt.runs.get_run(run_id)
                self.tally.add(f"redelivery_fallback_{now_why}_{snap.run.status if snap else 'missing'}")
            for message in redeliver:
                self.tally.add("redeliveries")
                self._deliver(message, None)
            if redeliver and settled(self.rt, run_id)[0]:
                self.tally.add("settled_by_redelivery")
        self.tally.violate(run_id, f"did not settle: {settled(self.rt, run_id)[1]}")

    def _late_duplicates(self, run_id: str) -> None:
        """A settled run still gets what Pub/Sub has in flight for it: the re-published messages
        and the redeliveries of crashed deliveries (each must be a no-op now)."""
        with self._lock:
            late, self.unacked = self.unacked + self.dispatcher.take(run_id), []
        for message in late:
            self.tally.add("late_deliveries")
            self._deliver(message, None)

    # ---- one run ------------------------------------------------------------------------------
    def start(self, i: int, scenario: str) -> str:
        """Start the run and drive its first invocation (a ``mixed`` one may crash)."""
        started = self.rt.agent.start(UID, RunRequest(prompt=f"go {SCENARIO_MARK}{scenario} t{i}"))
        run_id = started.outcome.snapshot.run.run_id
        plan = None
        if scenario == "mixed" and self.rng.random() < self.opts.initial_crash_p:
            plan = self.rng.choice(INITIAL_CRASH_POINTS)
            self.tally.add(f"crash_armed_initial_{plan.label}")
        self.chaos.arm(plan)
        try:
            self.rt.agent.run(self.rt.agent.context(started))
        except Crash:
            self.tally.add("initial_runs_crashed")
        except PreconditionFailed:
            # A sweep (another iteration's) resumed the run between its start and its first commit:
            # a started run has no lease yet (bench/repros/sweep_steals_started_run.py).
            self.tally.add("initial_runs_taken_over_by_sweep")
        finally:
            fired = self.chaos.disarm()
            if fired:
                self.tally.add(f"crash_fired_initial_{fired}")
        self.recover(run_id)
        return run_id

    def __call__(self, i: int) -> RunReport | None:
        names = list(self.opts.scenarios or SCENARIOS)
        scenario = self.rng.choices(names, weights=[SCENARIO_WEIGHTS[s] for s in names])[0]
        self.tally.add(f"scenario_{scenario}")
        run_id = self.start(i, scenario)
        for _pause in range(6):
            snap = self.rt.runs.get_run(run_id)
            assert snap is not None
            if snap.run.terminal:
                break
            if snap.run.status != "awaiting_confirmation":
                self.tally.violate(run_id, f"unexpected status {snap.run.status} between pauses")
                break
            for problem in check_pause(self.rt, run_id):
                self.tally.violate(run_id, problem)
            for approval_id in snap.run.pending_approval_ids:
                decision = "reject" if self.rng.random() < 0.2 else "approve"
                self.tally.add(f"decisions_{decision}")
                self.approve_concurrently(run_id, approval_id, decision)
                for message in self.dispatcher.take(run_id):
                    self.deliver(message)
                self.recover(run_id)
        report = check_run(self.rt, run_id, self.chaos.executions, self.chaos.mcp_effects())
        for v in report.violations:
            self.tally.violate(run_id, v)
        return report


def _sweep(rt: Runtime, dispatcher: RoutedDispatcher, tally: Tally) -> dict[str, int]:
    """One tick of the periodic sweep. A sweep invocation that raises is counted (the next tick
    covers what it missed): it does when it resumes a run and loses it inside ``drive`` to another
    invocation (bench/repros/sweep_aborts_on_lost_run.py)."""
    tally.add("sweeps")
    try:
        return rt.router.sweep()
    except Exception as exc:
        tally.add(f"sweep_errors_{type(exc).__name__}")
        return {"republished": 0, "recovered": 0}


def _final_drain(rt: Runtime, dispatcher: RoutedDispatcher, tally: Tally, lease_s: float) -> int:
    """After every run ended: the sweep re-publishes the outbox entries still there (decisions whose
    message was handled only by a delivery that crashed), their delivery removes them. Returns the
    outbox entries left (must be 0: an entry nobody removes is re-published forever)."""
    left = 0
    for _ in range(3):
        left = len(rt.store.query(Query("outbox")))
        if not left:
            break
        time.sleep(2 * lease_s + 0.05)
        _sweep(rt, dispatcher, tally)
        for message in dispatcher.take_all():
            tally.add("final_drain_deliveries")
            rt.router.handle(message)
    return left


@contextlib.contextmanager
def _open_store(opts: Options) -> Iterator[DocStore]:
    if opts.store == "firestore":
        with firestore_store() as store:
            yield store
    else:
        with sqlite_store(os.path.join(tempfile.mkdtemp(prefix="reliability-"), "state.sqlite3")) as store:
            yield store


MCP_TIMEOUT_S = 60.0
"""The harness's MCP call timeout (production's default is 10 s): the run's own ledger server only."""


def run_reliability(opts: Options, store: DocStore | None = None) -> dict[str, Any]:
    """Run the scenario and return the summary. ``store``: an open, empty store to run on (not
    closed here); by default one is opened for ``opts.store`` (Firestore: ``FIRESTORE_EMULATOR_HOST``
    or an emulator started for the purpose). Does not touch logging configuration."""
    t0 = time.perf_counter()
    with contextlib.ExitStack() as stack:
        inner = store if store is not None else stack.enter_context(_open_store(opts))
        with_mcp = any(s in MCP_SCENARIOS for s in (opts.scenarios or SCENARIOS))
        chaos = Chaos(inner, mcp_ledger=os.path.join(tempfile.mkdtemp(prefix="reliability-mcp-"), "ledger.jsonl")
                      if with_mcp else None)
        dispatcher = RoutedDispatcher()
        # The ledger MCP server is a Python process started on first use: on a loaded machine its
        # answer to tools/list took longer than MCP_TIMEOUT_S's 10 s (a timeout is no fault injected
        # here, and it does not change what the harness proves).
        settings = bench_settings(state_backend=opts.store, lease_ttl_s=opts.lease, mcp_timeout_s=MCP_TIMEOUT_S)
        rt = Runtime(settings, store=chaos.store, model=FunctionModel(scenario_model, name="reliability-model"),
                     dispatcher=dispatcher, registry=chaos.registry(settings))
        rt.users.put_user(UserRecord(uid=UID, trust_level="delegated",
                                     profile=UserProfile(email_allowlist=[ALLOWLISTED])))
        tally = Tally()
        master = random.Random(opts.seed)
        seeds = [master.randrange(2**32) for _ in range(opts.runs)]

        def one(i: int) -> RunReport | None:
            try:
                return Iteration(rt, chaos, dispatcher, tally, random.Random(seeds[i]), opts)(i)
            except Exception as exc:
                frames = [f for f in traceback.extract_tb(exc.__traceback__)
                          if "docstore" not in f.filename and "instrument" not in f.filename]
                where = " < ".join(f"{os.path.basename(f.filename)}:{f.lineno} {f.name}" for f in reversed(frames[-8:]))
                tally.violate(f"iteration {i}", f"harness error {type(exc).__name__}: {exc} at {where}")
                return None

        with ThreadPoolExecutor(max_workers=opts.workers) as pool:
            reports = [r for r in pool.map(one, range(opts.runs)) if r is not None]
        outbox_left = _final_drain(rt, dispatcher, tally, opts.lease)
        if outbox_left:
            tally.violate("outbox", f"{outbox_left} entries left after every run ended and a final sweep")
    summary = {**summarize(reports), **summarize_mcp(reports, chaos.mcp_effects())}
    ledger = chaos.mcp_ledger_lines()
    if summary["mcp_actions_executed_twice_or_more"]:
        tally.violate("mcp", f"{summary['mcp_actions_executed_twice_or_more']} MCP actions executed twice or more "
                             "(the server's count once every run ended)")
    executions = summary["executions_per_approved_action"]
    allowed = summary["executions_per_allowed_action"]
    counts = dict(sorted(tally.c.items()))
    out: dict[str, Any] = {
        "store": opts.store, "runs": opts.runs, "checked_runs": len(reports), "workers": opts.workers,
        "seed": opts.seed, "lease_ttl_s": opts.lease,
        **summary,
        "approved_actions_executed_twice_or_more": sum(v for k, v in executions.items() if int(k) >= 2),
        "allowed_actions_executed_twice_or_more": sum(v for k, v in allowed.items() if int(k) >= 2),
        "mcp_server_calls": dict(sorted(Counter(str(line["tool"]) for line in ledger).items())),
        "mcp_server_effects": dict(sorted(Counter(str(line["tool"]) for line in ledger if line["effect"]).items())),
        "event_violations": sum(1 for v in tally.violations if "event" in v),
        "outbox_left": outbox_left,
        "sweep_errors": sum(v for k, v in counts.items() if k.startswith("sweep_errors_")),
        "crashes_fired": {k.removeprefix("crash_fired_"): v for k, v in counts.items()
                          if k.startswith("crash_fired_")},
        "settled_by": {k.removeprefix("settled_by_"): v for k, v in counts.items()
                       if k.startswith("settled_by_")},
        "violations": len(tally.violations),
        "violation_samples": tally.violations[:20],
        "counts": counts,
        "duration_s": round(time.perf_counter() - t0, 1),
    }
    out["ok"] = not tally.violations and len(reports) == opts.runs
    return out


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
    out = run_reliability(Options(runs=args.runs, workers=args.workers, seed=args.seed, lease=args.lease,
                                  store=args.store))
    out["log_records"], out["log_file"] = dict(levels.counts), log_path
    print(json.dumps(out, indent=2))
    return 0 if out["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
