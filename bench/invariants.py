"""The invariants the reliability scenario checks on every run once it has settled."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from shared.runtime import Runtime
from shared.state.records import ActionRecord, now
from shared.tools.mcp_tools import McpTool

TERMINAL_ACTION_STATUSES = ("completed", "failed", "rejected")


@dataclass(frozen=True)
class McpCall:
    """An MCP action as its run ended: ``executed`` its executions as the server had counted them
    when the run was checked (the summary counts them again once every run ended)."""

    tool: str
    key: str
    outcome: str | None
    executed: int


@dataclass
class RunReport:
    run_id: str
    status: str
    error_code: str | None = None
    violations: list[str] = field(default_factory=list)
    executions: list[str] = field(default_factory=list)
    """One ``"{n}:{outcome}"`` per approved action: its real executions and recorded outcome."""
    allowed_executions: list[str] = field(default_factory=list)
    """The same for side-effect actions the policy allowed without approval."""
    rejected_executions: int = 0
    stuck: bool = False
    """Not terminal, no pending approval, no live lease."""
    events_missing: int = 0
    """Sequence numbers in 1..lastSeq with no event."""
    events_duplicated: int = 0
    """Events stored twice under one seq, plus extra ``tool_result`` events of one action."""
    recoveries: Counter[str] = field(default_factory=Counter)
    """What recovery decided for calls a crash cut off (``retry``, ``reconciled_done``,
    ``reconciled_not_done``, ``unknown``), from the run's audit entries."""
    mcp: list[McpCall] = field(default_factory=list)
    """Each approved or allowed side-effect action of an MCP server's tool."""
    unknown: Counter[str] = field(default_factory=Counter)
    """Side effects left with outcome ``unknown``, by whether their tool can learn the true outcome
    (``reconcilable``: idempotent or with a reconciliation) or not (``other``)."""


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


def check_pause(rt: Runtime, run_id: str) -> list[str]:
    """A run paused for approval: its open turn is unanswered and every approval it waits for is
    still pending (nothing answered a call nobody decided)."""
    snap = rt.runs.get_run(run_id)
    assert snap is not None
    run = snap.run
    out: list[str] = []
    turns = rt.runs.load_turns(run_id)
    if run.pending_turn is None or run.pending_turn != len(turns) - 1:
        out.append(f"paused at turn {run.pending_turn} but the last turn is {len(turns) - 1}")
    if not run.pending_approval_ids:
        out.append("paused with no pending approval ids")
    for approval_id in run.pending_approval_ids:
        got = rt.runs.get_approval(run.uid, approval_id)
        if got is None or got[0].status != "pending":
            out.append(f"paused for approval {approval_id} which is {got[0].status if got else 'missing'}")
    return out


def check_run(rt: Runtime, run_id: str, executions: Counter[str],
              mcp_effects: Counter[str] | None = None) -> RunReport:
    """Executions per side-effect action, terminal state, events and function responses.
    ``mcp_effects``: the MCP server's count of calls that took effect, by ``tool|args``
    (``bench.chaos.mcp_key``): an MCP tool's action is counted there, not in ``executions``."""
    snap = rt.runs.get_run(run_id)
    assert snap is not None
    run = snap.run
    report = RunReport(run_id, run.status, run.error.code if run.error else None)
    v = report.violations
    if not run.terminal:
        report.stuck = settled(rt, run_id)[1] == "stuck"
        v.append(f"run not terminal after every approval was decided: {run.status}"
                 + (" (stuck: no pending approval, no live lease)" if report.stuck else ""))
    events = rt.runs.list_events(run_id)
    seqs = [int(e["seq"]) for e in events]
    report.events_missing = len(set(range(1, run.last_seq + 1)) - set(seqs))
    report.events_duplicated = len(seqs) - len(set(seqs))
    if report.events_missing or report.events_duplicated:
        v.append(f"events not contiguous 1..{run.last_seq}: {seqs}")
    if any(s > run.last_seq or s < 1 for s in seqs):
        v.append(f"event seq outside 1..{run.last_seq}: {seqs}")
    results = Counter(e["actionId"] for e in events if e.get("type") == "tool_result")
    report.events_duplicated += sum(n - 1 for n in results.values() if n > 1)
    terminal_events = [e for e in events if e.get("type") == "error" or (
        e.get("type") == "result" and e["result"]["status"] != "awaiting_confirmation")]
    if run.terminal and len(terminal_events) != 1:
        v.append(f"{len(terminal_events)} terminal result/error events")
    responses = _responses_by_call(rt, run_id)
    for action in rt.runs.list_actions(run_id):
        if not action.side_effect:
            continue
        aid = action.action_id
        tool = rt.services.registry.get(action.tool)
        if isinstance(tool, McpTool):
            n = (mcp_effects or Counter()).get(mcp_key(tool.remote_name, action.args), 0)
        else:
            n = executions.get(aid, 0)
        if results[aid] > 1:
            v.append(f"{results[aid]} tool_result events for action {aid}")
        if run.terminal and action.status not in TERMINAL_ACTION_STATUSES:
            v.append(f"{action.tool} action {aid} left {action.status} in a {run.status} run")
        reconcilable = tool is not None and tool.reconcilable
        if action.outcome == "unknown":
            report.unknown["reconcilable" if reconcilable else "other"] += 1
            if reconcilable:
                v.append(f"{action.tool} action {aid} can learn its true outcome but was left unknown")
        if action.approval_id is None:
            if isinstance(tool, McpTool):
                report.mcp.append(McpCall(tool.remote_name, mcp_key(tool.remote_name, action.args), action.outcome, n))
            _check_executed(report, action, n, report.allowed_executions, results[aid], "allowed", run.terminal)
            continue
        approval = rt.runs.get_approval(run.uid, action.approval_id)
        decided = approval[0].status if approval else None
        if decided == "approved" and isinstance(tool, McpTool):
            report.mcp.append(McpCall(tool.remote_name, mcp_key(tool.remote_name, action.args), action.outcome, n))
        if decided == "approved":
            _check_executed(report, action, n, report.executions, results[aid], "approved", run.terminal)
        else:
            report.rejected_executions += n
            if n:
                v.append(f"action {aid} ({decided}) executed {n} times")
            if action.status != "rejected" and run.terminal and run.error is None:
                v.append(f"rejected action {aid} left {action.status}")
        v.extend(_check_answer(action, decided, responses.get(action.call_id or "")))
    v.extend(_check_turns(rt, run_id))
    for audit in rt.runs.audit_of(run_id):  # its own documents and those riding in its turns documents
        if audit.get("kind") == "recovery":
            report.recoveries[str(audit.get("decision"))] += 1
    return report


def mcp_key(remote_tool: str, args: dict[str, Any]) -> str:
    """How the MCP ledger server's calls are matched to actions: the tool and its arguments."""
    return f"{remote_tool}|{json.dumps(args, sort_keys=True)}"


def _check_executed(report: RunReport, action: ActionRecord, n: int, into: list[str], tool_results: int,
                    kind: str, terminal: bool) -> None:
    """An allowed or approved side effect: run at most once, exactly once unless its outcome is
    ``unknown`` (cut off by a crash), and exactly one ``tool_result`` event."""
    v, aid = report.violations, action.action_id
    into.append(f"{n}:{action.outcome}")
    if n > 1:
        v.append(f"{kind} action {aid} executed {n} times")
    elif n == 0 and action.outcome != "unknown":
        v.append(f"{kind} action {aid} never executed (outcome {action.outcome}, status {action.status})")
    elif n == 1 and action.outcome not in ("success", "unknown"):
        v.append(f"{kind} action {aid} executed once but outcome {action.outcome}")
    if terminal and action.status not in ("completed", "failed"):
        v.append(f"{kind} action {aid} left {action.status}")
    if terminal and tool_results != 1:
        v.append(f"{kind} action {aid} has {tool_results} tool_result events")


def _responses_by_call(rt: Runtime, run_id: str) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for turn in rt.runs.load_turns(run_id):
        for p in turn.parts:
            if p.function_response is not None and p.function_response.id:
                out[p.function_response.id] = dict(p.function_response.response)
    return out


def _check_answer(action: ActionRecord, decided: str | None, response: dict[str, Any] | None) -> list[str]:
    """A call needing approval is answered only after its decision: ``rejected`` when rejected,
    its real result or ``unknown`` when approved; never a generic failure, never while pending."""
    if response is None:
        return []
    aid = action.action_id
    if decided in (None, "pending"):
        return [f"action {aid} answered {response} while its approval is {decided}"]
    if response.get("rejected") is True:
        return [] if decided in ("rejected", "expired") else [f"action {aid} ({decided}) answered as rejected"]
    if decided != "approved":
        return [f"action {aid} ({decided}) answered {response}"]
    if response.get("outcome") == "unknown":
        return [] if action.outcome == "unknown" else [f"action {aid} answered unknown, outcome {action.outcome}"]
    if action.status == "completed" and response == (action.result or {}):
        return []
    return [f"approved action {aid} answered {response} (status {action.status}, outcome {action.outcome})"]


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


def _histogram(entries: list[str]) -> tuple[dict[str, int], dict[str, int]]:
    hist = Counter(entries)
    by_count: Counter[int] = Counter(int(k.split(":")[0]) for k in hist.elements())
    return {str(k): by_count[k] for k in sorted(by_count)}, dict(sorted(hist.items()))


def summarize_mcp(reports: list[RunReport], effects: Counter[str]) -> dict[str, Any]:
    """The MCP actions counted again on the server's ledger once every run ended: a call that
    reached the server after its run was checked (an invocation the sweep presumed dead, still
    in its call) is counted too; ``mcp_calls_after_their_run_was_checked`` says how many did."""
    calls = [c for r in reports for c in r.mcp]
    hist = Counter(f"{c.tool} {effects.get(c.key, 0)}:{c.outcome}" for c in calls)
    return {"mcp_executions_and_outcome": dict(sorted(hist.items())),
            "mcp_actions_executed_twice_or_more": sum(1 for c in calls if effects.get(c.key, 0) >= 2),
            "mcp_calls_after_their_run_was_checked": sum(effects.get(c.key, 0) - c.executed for c in calls)}


def summarize(reports: list[RunReport]) -> dict[str, Any]:
    approved, approved_outcomes = _histogram([e for r in reports for e in r.executions])
    allowed, allowed_outcomes = _histogram([e for r in reports for e in r.allowed_executions])
    return {"executions_per_approved_action": approved,
            "executions_and_outcome": approved_outcomes,
            "executions_per_allowed_action": allowed,
            "allowed_executions_and_outcome": allowed_outcomes,
            "executions_of_rejected_actions": sum(r.rejected_executions for r in reports),
            "final_status": dict(Counter(r.status if not r.error_code else f"{r.status}:{r.error_code}"
                                         for r in reports)),
            "runs_stuck": sum(1 for r in reports if r.stuck),
            "recovery_decisions": dict(sorted(sum((r.recoveries for r in reports), Counter()).items())),
            "unknown_outcomes": {"reconcilable": sum(r.unknown["reconcilable"] for r in reports),
                                 "other": sum(r.unknown["other"] for r in reports)},
            "events_missing": sum(r.events_missing for r in reports),
            "events_duplicated": sum(r.events_duplicated for r in reports)}
