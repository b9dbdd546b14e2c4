"""``make reliability``: money budgets under load and crashes (issue 30, docs/budgets.md).

    python -m bench.budget_reliability [--users 10] [--per-user 20] [--cap 0.05] [--month-cap 0.08]
                                       [--earlier 0.04] [--crash 0.05] [--store sqlite]

``users`` x ``per_user`` runs (default 200), all of a user's runs at once (20 concurrent per
user), each with its own ``budgetUsd``, under a per-user daily cap (``--cap``, USD) and a monthly
cap (``--month-cap``; 0: none), each user having spent ``--earlier`` USD on an earlier day of the
month (the 1st; today when today is the 1st), so the month's spend is read as the sum of its days'
counters (docs/budgets.md) and the monthly cap pauses runs before the daily one. The fake
model is priced (``gemini-3-flash-preview``) and reports tokens; each run makes ``STEPS`` model
calls and ``STEPS - 1`` tool calls (each tool execution counted by its (run, step)). A share of
the model calls (``--crash``) kill their invocation (an exception nothing in the runtime catches,
its lease held, its budget reservation left behind); the sweep recovers them once the lease
expired. Every paused run's budget approval is approved and its resume delivered, until every run
completed. Checked, and printed as one JSON summary (exit 1 on a violation):

- no run spent more than its budget (as finally raised) plus one call's maximum cost;
- no user spent more than their daily cap, nor their monthly cap (each as finally raised), plus
  concurrent runs x one call's maximum (by design the caps hold exactly: each call is reserved at
  its maximum);
- every stop that was not the run's end or a crash was a pause on a budget approval
  (``kind: budget``): no run failed;
- approving resumed every run to completion with no tool execution and no model call of a step
  repeated (0 duplicate side effects), and each UTC day's counter equals that day's ledger entries
  and the month's spend this month's entries (the earlier spend included), day by day so that a
  scenario running across a UTC midnight is checked too (``counter_violations``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import random
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from bench.emulator import store_of
from shared.agent.approvals import decide
from shared.api import ApproveRequest, RunRequest
from shared.config import Settings
from shared.durable.dispatcher import RecordingDispatcher
from shared.models.base import ModelRequest, ModelResponse
from shared.models.scripted import FunctionModel, call, calls_turn, text_turn
from shared.runtime import Runtime
from shared.state import paths
from shared.state.budget_repo import MICRO, BudgetRepo, day_and_month
from shared.state.docstore import DocStore
from shared.state.record_base import field_count
from shared.state.records import UsageEntry
from shared.state.usage_repo import UsageRepo, entry_day
from shared.tools import default_registry
from shared.tools.context import ToolContext
from shared.tools.registry import ToolRegistry
from shared.usage.budget import call_max_cost
from shared.usage.figures import Usage

MODEL = "gemini-3-flash-preview"
STEPS = 6
RUN_BUDGET_USD = 0.009
LEASE_S = 0.3


class Crash(BaseException):
    """The invocation dies (nothing in the runtime catches it)."""


class World:
    def __init__(self, crash_share: float, seed: int) -> None:
        self.rng = random.Random(seed)
        self.crash_share = crash_share
        self.lock = threading.Lock()
        self.executions: Counter[str] = Counter()
        self.model_calls: Counter[str] = Counter()
        self.crashes = 0
        self.max_call_usd = 0.0

    def registry(self) -> ToolRegistry:
        reg = default_registry()

        @reg.tool(side_effect=False)
        def count_step(ctx: ToolContext, run: str, n: int) -> dict[str, Any]:
            """Record that step n of a run ran.

            Args:
                run: The run's label.
                n: The step number.
            """
            with self.lock:
                self.executions[f"{run}:{n}"] += 1
            return {"done": n}

        return reg

    def model(self, settings: Settings) -> FunctionModel:
        def answer(request: ModelRequest) -> ModelResponse:
            label = (request.turns[0].parts[0].text or "").split()[-1]
            done = sum(1 for t in request.turns for p in t.parts if p.function_response is not None)
            with self.lock:
                self.max_call_usd = max(self.max_call_usd, call_max_cost(settings, MODEL, request))
                key = f"{label}:{done}"
                first = self.model_calls[key] == 0
                self.model_calls[key] += 1
                crash = first and self.rng.random() < self.crash_share
                if crash:
                    self.crashes += 1
            if crash:
                raise Crash(key)
            turn = calls_turn(call("count_step", {"run": label, "n": done + 1})) if done < STEPS - 1 \
                else text_turn(f"finished {label}")
            return ModelResponse(turn=turn, finish_reason="STOP",
                                 usage=Usage(requests=1, input_tokens=400, output_tokens=60, total_tokens=460))

        return FunctionModel(answer, name=MODEL)


EARLIER_UNIT = "run_earlier"
"""The unit of each user's earlier spend (:func:`earlier_this_month`)."""


def earlier_this_month(rt: Runtime, uid: str, usd: float) -> str:
    """A model call of an earlier run on the 1st of this UTC month (today when today is the 1st):
    the ledger entry and its day's counter. Returns the day."""
    now = datetime.now(UTC)
    at = now.replace(day=1, hour=0, minute=30, second=0, microsecond=0) if now.day > 1 else now
    day = at.date().isoformat()
    rt.usage.record(UsageEntry(entry_id=f"{EARLIER_UNIT}-{uid}", uid=uid, unit_kind="run", unit_id=EARLIER_UNIT,
                               component="loop", operation_type="chat", model=MODEL, cost_usd=usd,
                               at=at.timestamp(), day=day))
    return day


def run_scenario(store: DocStore, *, users: int, per_user: int, cap: float, crash_share: float,
                 seed: int, month_cap: float = 0.0, earlier: float = 0.0) -> dict[str, Any]:
    world = World(crash_share, seed)
    settings = Settings(state_backend="sqlite", auth_mode="local", dispatcher="none", run_deadline_s=60.0,
                        model_max_output_tokens=200, budget_user_daily_usd=cap, budget_user_monthly_usd=month_cap,
                        lease_ttl_s=LEASE_S, model_timeout_s=1.0, limit_active_runs=0, limit_requests_per_minute=0)
    rt = Runtime(settings, store=store, model=world.model(settings), registry=world.registry(),
                 dispatcher=RecordingDispatcher())
    uids = [f"user{u}" for u in range(users)]
    if earlier > 0:
        for uid in uids:
            earlier_this_month(rt, uid, earlier)
    runs: dict[str, tuple[str, str]] = {}  # run id -> (uid, label)
    lock = threading.Lock()
    violations: list[str] = []
    tally: Counter[str] = Counter()

    def one(uid: str, label: str) -> None:
        started = rt.agent.start(uid, RunRequest(prompt=f"count {label}", budgetUsd=RUN_BUDGET_USD))
        with lock:
            runs[started.outcome.snapshot.run.run_id] = (uid, label)
        with contextlib.suppress(Crash):
            rt.agent.run(rt.agent.context(started))

    t0 = time.perf_counter()
    threads = [threading.Thread(target=one, args=(uid, f"{uid}-r{i}")) for uid in uids for i in range(per_user)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    recording = rt.dispatcher
    assert isinstance(recording, RecordingDispatcher)
    for _ in range(200):
        statuses = {rid: rt.runs.get_run(rid) for rid in runs}
        open_runs = [rid for rid, snap in statuses.items() if snap is not None and not snap.run.terminal]
        if not open_runs:
            break
        for rid in open_runs:
            snap = statuses[rid]
            assert snap is not None
            if snap.run.status != "awaiting_confirmation":
                continue
            uid = runs[rid][0]
            approvals = [a for a in (rt.runs.get_approval(uid, i) for i in snap.run.pending_approval_ids) if a]
            if not approvals or any(a[0].kind != "budget" for a in approvals):
                violations.append(f"{rid} paused without a budget approval")
                continue
            tally["budget_pauses"] += 1
            tally[f"scope_{approvals[0][0].budget_scope}"] += 1
            check_spend(rt, uid, snap.run.cost_usd, snap.run.budget_usd, world, per_user, violations, rid)
            for a, _token in approvals:
                if a.status == "pending":
                    with contextlib.suppress(Exception):  # already decided by an earlier round
                        decide(rt.services, recording, uid, ApproveRequest(approvalId=a.approval_id,
                                                                           decision="approve"))
        while msgs := recording.take():
            for m in msgs:
                with contextlib.suppress(Crash):
                    rt.router.handle(m)
        time.sleep(LEASE_S * 1.5)  # crashed invocations' leases expire
        with contextlib.suppress(Crash):
            rt.router.sweep()
    final = {rid: rt.runs.get_run(rid) for rid in runs}
    statuses_count = Counter(s.run.status if s else "missing" for s in final.values())
    for rid, snap in final.items():
        if snap is None or snap.run.status != "completed":
            violations.append(f"{rid} ended {snap.run.status if snap else 'missing'}")
            continue
        uid, _label = runs[rid]
        check_spend(rt, uid, snap.run.cost_usd, snap.run.budget_usd, world, per_user, violations, rid)
    duplicates = {k: n for k, n in world.executions.items() if n > 1}
    expected = {f"{label}:{n}" for _uid, label in runs.values() for n in range(1, STEPS)}
    missing = sorted(expected - set(world.executions))
    user_spend = {}
    for uid in uids:
        units = [rid for rid, (u, _l) in runs.items() if u == uid] + ([EARLIER_UNIT] if earlier > 0 else [])
        violations.extend(counter_violations(rt.usage, rt.services.budgets, uid, units))
        day, month = rt.services.budgets.spent(uid)
        cap_now, month_cap_now = rt.services.budgets.caps(uid, cap, month_cap)
        user_spend[uid] = {"spentUsd": round(day, 6), "capUsd": cap_now, "spentThisMonthUsd": round(month, 6),
                           "monthlyCapUsd": month_cap_now}
    if duplicates:
        violations.append(f"{len(duplicates)} tool executions repeated")
    if missing:
        violations.append(f"{len(missing)} tool executions missing")
    return {
        "runs": len(runs), "users": users, "concurrent_per_user": per_user, "daily_cap_usd": cap,
        "monthly_cap_usd": month_cap, "earlier_this_month_usd": earlier,
        "run_budget_usd": RUN_BUDGET_USD, "crashes": world.crashes, "statuses": dict(statuses_count),
        "budget_pauses": tally["budget_pauses"], "pauses_by_scope": {k[6:]: v for k, v in tally.items()
                                                                      if k.startswith("scope_")},
        "max_call_usd": round(world.max_call_usd, 6), "duplicate_tool_executions": len(duplicates),
        "missing_tool_executions": len(missing), "users_spend": user_spend,
        "violations": violations[:20], "violation_count": len(violations),
        "duration_s": round(time.perf_counter() - t0, 1),
    }


def counter_violations(usage: UsageRepo, budgets: BudgetRepo, uid: str, units: Iterable[str]) -> list[str]:
    """The user's counters against the ledger entries of ``units``, day by day: each UTC day's
    counter (``usageDays/{day}.costMicroUsd``) must be the sum of that day's entries, and the month's
    spend as ``spent`` reads it now (the sum of its days' counters) the sum of this month's entries.
    Day by day, because a scenario that runs across a UTC midnight spends on two days: today's
    counter alone is then less than the ledger although no increment was lost."""
    by_day: Counter[str] = Counter()
    for unit in units:
        for entry in usage.for_unit(uid, unit):
            by_day[entry_day(entry)] += round(entry.cost_usd * MICRO)  # as the entry's increment
    days = sorted(by_day)
    docs = usage.store.get_many([paths.usage_day(uid, d) for d in days])
    out = [f"{uid}: day counter {d} {counted / MICRO} != ledger {by_day[d] / MICRO}"
           for d, doc in zip(days, docs, strict=True)
           if (counted := field_count(doc.data if doc is not None else None, "costMicroUsd")) != by_day[d]]
    _today, month_now = day_and_month(budgets.clock())
    _day, month = budgets.spent(uid)
    ledger_month = sum(micro for d, micro in by_day.items() if d.startswith(month_now)) / MICRO
    if abs(month - ledger_month) > 1e-6:
        out.append(f"{uid}: month's counters {month} != ledger {ledger_month} (this month's entries)")
    return out


def check_spend(rt: Runtime, uid: str, run_cost: float, run_budget: float | None, world: World, per_user: int,
                violations: list[str], rid: str) -> None:
    one_call = world.max_call_usd
    if run_budget is not None and run_cost > run_budget + one_call + 1e-9:
        violations.append(f"{rid}: spent {run_cost} over its budget {run_budget} + one call {one_call}")
    day, month = rt.services.budgets.spent(uid)
    cap, month_cap = rt.services.budgets.caps(uid, rt.settings.budget_user_daily_usd,
                                              rt.settings.budget_user_monthly_usd)
    if day > cap + per_user * one_call + 1e-9:
        violations.append(f"{uid}: spent {day} over the daily cap {cap} + {per_user} calls of {one_call}")
    if month_cap and month > month_cap + per_user * one_call + 1e-9:
        violations.append(f"{uid}: spent {month} this month, over the monthly cap {month_cap} + {per_user} calls "
                          f"of {one_call}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--users", type=int, default=10)
    p.add_argument("--per-user", type=int, default=20)
    p.add_argument("--cap", type=float, default=0.05)
    p.add_argument("--month-cap", type=float, default=0.08)
    p.add_argument("--earlier", type=float, default=0.04, help="USD each user spent earlier this month")
    p.add_argument("--crash", type=float, default=0.05)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--store", choices=("sqlite", "firestore"), default="sqlite")
    args = p.parse_args(argv)
    logging.disable(logging.WARNING)
    with store_of(args.store) as store:
        out = run_scenario(store, users=args.users, per_user=args.per_user, cap=args.cap, crash_share=args.crash,
                           seed=args.seed, month_cap=args.month_cap, earlier=args.earlier)
    out["store"] = args.store
    print(json.dumps(out, indent=2))
    return 1 if out["violation_count"] else 0


if __name__ == "__main__":
    sys.exit(main())
