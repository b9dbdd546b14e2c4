"""The invariants the reliability scenario checks on every run once it has settled."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from shared.runtime import Runtime
from shared.state.records import now


@dataclass
class RunReport:
    run_id: str
    status: str
    error_code: str | None = None
    violations: list[str] = field(default_factory=list)
    executions: list[str] = field(default_factory=list)
    """One ``"{n}:{outcome}"`` per approved action: its real executions and recorded outcome."""
    rejected_executions: int = 0


def settled(rt: Runtime, run_id: str) -> tuple[bool, str]:
    """(settled?, why). Settled: terminal, or paused with an approval still to decide.
    Not settled: a live lease (work in progress) or stuck (none of these)."""
    snap = rt.runs.get_run(run_id)
    if snap is None:
        return False, "missing"
    run = snap.run
    if run.terminal:
        return True, "terminal"
    if run.lease is not None and run.lease.expires_at > now():
        return False, "leased"
    if run.status == "awaiting_confirmation":
        for approval_id in run.pending_approval_ids:
            got = rt.runs.get_approval(run.uid, approval_id)
            if got is not None and got[0].status == "pending":
                return True, "awaiting_approval"
    return False, "stuck"


def check_run(rt: Runtime, run_id: str, executions: Counter[str]) -> RunReport:
    """Executions per approved action, terminal state, events and function responses."""
    snap = rt.runs.get_run(run_id)
    assert snap is not None
    run = snap.run
    report = RunReport(run_id, run.status, run.error.code if run.error else None)
    v = report.violations
    if not run.terminal:
        v.append(f"run not terminal after every approval was decided: {run.status}")
    events = rt.runs.list_events(run_id)
    seqs = [int(e["seq"]) for e in events]
    if seqs != list(range(1, len(seqs) + 1)) or len(seqs) != run.last_seq:
        v.append(f"events not contiguous 1..{run.last_seq}: {seqs}")
    results = Counter(e["actionId"] for e in events if e.get("type") == "tool_result")
    terminal_events = [e for e in events if e.get("type") == "error" or (
        e.get("type") == "result" and e["result"]["status"] != "awaiting_confirmation")]
    if run.terminal and len(terminal_events) != 1:
        v.append(f"{len(terminal_events)} terminal result/error events")
    for action in rt.runs.list_actions(run_id):
        n = executions.get(action.action_id, 0)
        if action.tool != "send_note":
            continue
        approval = rt.runs.get_approval(run.uid, action.approval_id) if action.approval_id else None
        decided = approval[0].status if approval else None
        if results[action.action_id] > 1:
            v.append(f"{results[action.action_id]} tool_result events for action {action.action_id}")
        if decided == "approved":
            report.executions.append(f"{n}:{action.outcome}")
            if n > 1:
                v.append(f"action {action.action_id} executed {n} times")
            elif n == 0 and action.outcome != "unknown":
                v.append(f"approved action {action.action_id} never executed (outcome {action.outcome})")
            elif n == 1 and action.outcome not in ("success", "unknown"):
                v.append(f"action {action.action_id} executed once but outcome {action.outcome}")
            if action.status not in ("completed", "failed"):
                v.append(f"approved action {action.action_id} left {action.status}")
            if results[action.action_id] != 1:
                v.append(f"approved action {action.action_id} has {results[action.action_id]} tool_result events")
        else:
            report.rejected_executions += n
            if n:
                v.append(f"action {action.action_id} ({decided}) executed {n} times")
            if action.status != "rejected" and run.terminal and run.error is None:
                v.append(f"rejected action {action.action_id} left {action.status}")
    v.extend(_check_turns(rt, run_id))
    return report


def _check_turns(rt: Runtime, run_id: str) -> list[str]:
    """Each model turn with calls is followed by exactly one response per call, in call order."""
    turns = rt.runs.load_turns(run_id)
    out: list[str] = []
    for i, turn in enumerate(turns):
        calls = turn.function_calls
        if turn.role != "model" or not calls:
            continue
        if i + 1 >= len(turns):
            out.append(f"turn {i} has unanswered calls")
            continue
        got = [p.function_response.id for p in turns[i + 1].parts if p.function_response is not None]
        if got != [c.id for c in calls]:
            out.append(f"turn {i}: responses {got} do not match calls {[c.id for c in calls]}")
    return out


def summarize(reports: list[RunReport]) -> dict[str, Any]:
    hist: Counter[str] = Counter()
    for r in reports:
        hist.update(r.executions)
    by_count: Counter[int] = Counter(int(k.split(":")[0]) for k in hist.elements())
    return {"executions_per_approved_action": {str(k): by_count[k] for k in sorted(by_count)},
            "executions_and_outcome": dict(sorted(hist.items())),
            "executions_of_rejected_actions": sum(r.rejected_executions for r in reports),
            "final_status": dict(Counter(r.status if not r.error_code else f"{r.status}:{r.error_code}"
                                         for r in reports))}
