"""A run's trace as the console draws it (``GET /api/agent/runs/{runId}/trace``, issue 30): the
waterfall of its invocations, model calls, tool calls and the waits for a person between them,
rebuilt from what the store keeps (the usage ledger, the run's actions and approvals), so it is
there whether or not OpenTelemetry export is on (docs/observability.md, "The console's trace").

Spans, in the OpenTelemetry GenAI names the exported trace uses:

- ``invoke_agent {host}``: one per stretch of work, from the run's start (or a decision) to its
  pause (or end); a run resumed after a pause has one more;
- ``chat {model}``: one per ledger entry of the unit (its start and latency, tokens, cost); a plan
  run also shows its session's own calls (planning, reflections);
- ``execute_tool {tool}``: one per executed action (from its decision, if it waited, to its end);
- ``awaiting approval`` / ``awaiting budget approval``: one per approval, from its request to its
  decision (open while it waits).

Each model and tool span names the invocation it started in (``parentId``). Times are the
records' own (epoch seconds written as RFC 3339), offsets and durations in milliseconds.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from pydantic import Field

from shared.loop.budget_pause import BUDGET_TOOL
from shared.responses import ResponseBody
from shared.state.host_states import PlanRunState
from shared.state.records import ActionRecord, ApprovalRecord, RunRecord, UsageEntry, reported_status
from shared.wire import UtcTime

if TYPE_CHECKING:
    from shared.state.runs_repo import RunsRepo
    from shared.state.usage_repo import UsageRepo

SpanKind = Literal["invocation", "model", "tool", "wait"]
EXECUTED = ("completed", "failed")


class TraceSpan(ResponseBody):
    spanId: str
    parentId: str | None = Field(default=None, description="the invocation a model or tool span started in")
    kind: SpanKind
    name: str = Field(description="invoke_agent {host}, chat {model}, execute_tool {tool}, awaiting approval")
    start: UtcTime
    offsetMs: float = Field(description="from the trace's start")
    durationMs: float
    open: bool = Field(default=False, description="still going (an invocation at work, a wait not decided)")
    step: int | None = None
    model: str | None = None
    operationType: str | None = None
    inputTokens: int | None = None
    outputTokens: int | None = Field(default=None, description="thinking included")
    costUsd: float | None = None
    outcome: str | None = None
    tool: str | None = None
    approvalId: str | None = None
    approvalKind: str | None = None
    status: str | None = None


class RunTrace(ResponseBody):
    ok: bool = True
    runId: str
    host: str
    status: str
    start: UtcTime
    durationMs: float
    costUsd: float
    inputTokens: int
    outputTokens: int
    invocations: int
    spans: list[TraceSpan]


def _ms(seconds: float) -> float:
    return round(max(0.0, seconds) * 1000, 3)


def _waits(approvals: Sequence[ApprovalRecord], at: float) -> list[tuple[float, float]]:
    """The time ranges someone was waited on (approvals of one pause overlap: merged)."""
    ranges = sorted((a.created_at, a.decided_at or at) for a in approvals)
    merged: list[list[float]] = []
    for start, end in ranges:
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(a, b) for a, b in merged]


def run_trace(run: RunRecord, entries: Sequence[UsageEntry], actions: Sequence[ActionRecord],
              approvals: Sequence[ApprovalRecord], now: float | None = None) -> RunTrace:
    at = time.time() if now is None else now
    start = min([run.created_at, *(e.at for e in entries)])
    active = not run.terminal and run.status != "awaiting_confirmation"
    end = at if active else max([run.updated_at, *(e.at + e.latency_ms / 1000 for e in entries)])
    waits = _waits(approvals, at)
    # Invocations: the run's time minus the waits.
    stretches: list[tuple[float, float]] = []
    cursor = start
    for w_start, w_end in waits:
        if w_start > cursor:
            stretches.append((cursor, w_start))
        cursor = max(cursor, w_end)
    if cursor < end or not stretches or (active and cursor <= end):
        stretches.append((cursor, max(cursor, end)))
    spans: list[TraceSpan] = []
    invocations: list[TraceSpan] = []
    for i, (a, b) in enumerate(stretches):
        is_open = active and i == len(stretches) - 1
        invocations.append(TraceSpan(spanId=f"inv-{i + 1}", kind="invocation", name=f"invoke_agent {run.host}",
                                     start=a, offsetMs=_ms(a - start), durationMs=_ms(b - a), open=is_open))

    def parent(t: float) -> str | None:
        inside = [s for s, (a, b) in zip(invocations, stretches, strict=True) if a <= t <= b + 0.001]
        return inside[-1].spanId if inside else (invocations[-1].spanId if invocations else None)

    for e in entries:
        u = e.usage
        spans.append(TraceSpan(spanId=f"chat-{e.entry_id}", parentId=parent(e.at), kind="model", name=f"chat {e.model}",
                               start=e.at, offsetMs=_ms(e.at - start), durationMs=round(e.latency_ms, 3), step=e.step,
                               model=e.model, operationType=e.operation_type, inputTokens=u.input_tokens,
                               outputTokens=u.output_tokens + u.thinking_tokens, costUsd=e.cost_usd, outcome=e.outcome))
    decided = {a.approval_id: a for a in approvals}
    for act in actions:
        if act.tool == BUDGET_TOOL or act.status not in EXECUTED:
            continue
        approval = decided.get(act.approval_id or "")
        begin = approval.decided_at if approval is not None and approval.decided_at else act.created_at
        spans.append(TraceSpan(spanId=f"tool-{act.action_id}", parentId=parent(begin), kind="tool",
                               name=f"execute_tool {act.tool}", start=begin, offsetMs=_ms(begin - start),
                               durationMs=_ms(act.updated_at - begin), tool=act.tool, outcome=act.outcome,
                               status=act.status, approvalId=act.approval_id))
    for ap in approvals:
        waited_until = ap.decided_at or at
        spans.append(TraceSpan(spanId=f"wait-{ap.approval_id}", kind="wait",
                               name="awaiting budget approval" if ap.kind == "budget" else "awaiting approval",
                               start=ap.created_at, offsetMs=_ms(ap.created_at - start),
                               durationMs=_ms(waited_until - ap.created_at), open=ap.decided_at is None,
                               tool=ap.tool, approvalId=ap.approval_id, approvalKind=ap.kind, status=ap.status))
    ordered = sorted([*invocations, *spans], key=lambda s: (s.offsetMs, s.kind != "invocation", s.spanId))
    return RunTrace(runId=run.run_id, host=run.host, status=reported_status(run), start=start,
                    durationMs=_ms(max(end, *(w[1] for w in waits)) - start) if waits else _ms(end - start),
                    costUsd=round(sum(e.cost_usd for e in entries), 8),
                    inputTokens=sum(e.usage.input_tokens for e in entries),
                    outputTokens=sum(e.usage.output_tokens + e.usage.thinking_tokens for e in entries),
                    invocations=len(invocations), spans=ordered)


def unit_ids(run: RunRecord) -> list[str]:
    """The ledger units of a run's trace: the run, and a plan run's session (planning, reflections)."""
    return [run.run_id, run.host_state.session_id] if isinstance(run.host_state, PlanRunState) else [run.run_id]


def trace_of(runs: RunsRepo, usage: UsageRepo, uid: str, run_id: str) -> RunTrace:
    """``uid``'s run's trace (404 ``RUN_NOT_FOUND`` for another user's or a missing run)."""
    run = runs.get_run_for(uid, run_id).run
    entries = sorted((e for unit in unit_ids(run) for e in usage.for_unit(uid, unit)), key=lambda e: (e.at, e.entry_id))
    actions = runs.list_actions(run.run_id)
    approvals = runs.approvals_by_id(uid, sorted({a.approval_id for a in actions if a.approval_id}))
    return run_trace(run, entries, actions, approvals)
