"""What the API shows of the ledger: a run's model calls, and a user's figures grouped."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import ConfigDict, Field

from shared.responses import ResponseBody
from shared.state.host_states import PlanRunState
from shared.state.records import RunRecord, UsageEntry, reported_status
from shared.token_usage import Usage
from shared.wire import UtcTime

if TYPE_CHECKING:
    from shared.config import Settings
    from shared.state.budget_repo import BudgetRepo


class ModelCallView(ResponseBody):
    """One model call of a run, from the usage ledger."""

    step: int | None = None
    turnIndex: int | None = Field(default=None, description="the model turn it produced (None: no usable turn)")
    operationType: str
    model: str
    outcome: str
    latencyMs: float
    costUsd: float
    usage: Usage


RUN_RECORD_NOT_SERVED = frozenset({"system_instruction", "lease", "lease_expires_at", "pause_expires_at",
                                   "host_state", "queued_behind", "paused_action_ids"})
"""Fields of a stored run that ``GET /api/agent/runs/{runId}`` leaves out (``hostState`` is the host's
own typed, versioned state, not a contract: what a client needs of it is served by name, ``sessionId``)."""


class RunView(RunRecord):
    """``GET /api/agent/runs/{runId}``: the run record (without its instruction and lease) and
    each model call's usage from the ledger."""

    ok: bool = True
    created_at: UtcTime
    updated_at: UtcTime
    started_at: UtcTime | None = None
    queued: Any = Field(default=None, exclude=True)
    queue_position: int | None = None
    """Its place in its thread's arrival order, when it was queued (docs/run-control.md)."""
    host_state: Any = Field(default=None, exclude=True)
    thread_id: str | None = None  # type: ignore[assignment]  # none for a plan session's run, not ""
    session_id: str | None = None
    """The plan session this run executes (host ``plan``)."""
    model_calls: list[ModelCallView] = Field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True, exclude=set(RUN_RECORD_NOT_SERVED))


class UsageGroup(ResponseBody):
    key: str
    calls: int
    errors: int
    usage: Usage
    costUsd: float


class BudgetStatus(ResponseBody):
    """The caller's money caps now and what was spent against them (docs/budgets.md)."""

    dailyCapUsd: float | None = Field(default=None, description="BUDGET_USER_DAILY_USD, or the cap an approval raised "
                                                  "it to today; null: no daily cap")
    spentTodayUsd: float
    monthlyCapUsd: float | None = None
    spentThisMonthUsd: float


class UsageResponse(ResponseBody):
    """``GET /api/agent/usage``: the caller's model calls in ``[from, to)``, summed per group."""

    ok: bool = True
    start: UtcTime = Field(alias="from")
    to: UtcTime
    groupBy: str
    calls: int
    usage: Usage
    costUsd: float
    groups: list[UsageGroup]
    budget: BudgetStatus | None = None

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


GroupBy = Literal["operationType", "contextType", "model", "day"]
GROUP_BY: tuple[GroupBy, ...] = ("operationType", "contextType", "model", "day")


def run_view(run: RunRecord, entries: Sequence[UsageEntry]) -> RunView:
    calls = [ModelCallView(step=e.step, turnIndex=e.turn_index, operationType=e.operation_type, model=e.model,
                           outcome=e.outcome, latencyMs=e.latency_ms, costUsd=e.cost_usd, usage=e.usage)
             for e in entries]
    session_id = run.host_state.session_id if isinstance(run.host_state, PlanRunState) else None
    return RunView.model_validate({**run.model_dump(), "model_calls": calls, "session_id": session_id,
                                   "thread_id": run.thread_id or None, "status": reported_status(run),
                                   "queue_position": run.queued.position if run.queued is not None else None})


def _key(entry: UsageEntry, group_by: GroupBy) -> str:
    if group_by == "operationType":
        return entry.operation_type
    if group_by == "contextType":
        return entry.context_type or "(none)"
    if group_by == "model":
        return entry.model
    return entry.day


def summarise(entries: Sequence[UsageEntry], group_by: GroupBy, start: float, end: float) -> UsageResponse:
    usage: dict[str, Usage] = defaultdict(Usage)
    cost: dict[str, float] = defaultdict(float)
    calls: dict[str, int] = defaultdict(int)
    errors: dict[str, int] = defaultdict(int)
    for e in entries:
        k = _key(e, group_by)
        usage[k] = usage[k] + e.usage
        cost[k] += e.cost_usd
        calls[k] += 1
        errors[k] += e.outcome != "ok"
    groups = [UsageGroup(key=k, calls=calls[k], errors=errors[k], usage=usage[k], costUsd=round(cost[k], 8))
              for k in sorted(usage)]
    total = sum((g.usage for g in groups), Usage())
    return UsageResponse(start=start, to=end, groupBy=group_by, calls=len(entries), usage=total,
                         costUsd=round(sum(g.costUsd for g in groups), 8), groups=groups)


def budget_status(budgets: BudgetRepo, uid: str, settings: Settings) -> BudgetStatus:
    """Spend so far today and this month (UTC) against the caller's caps (2 round trips; 1 when the
    deployment has no cap)."""
    day, month = budgets.spent(uid)
    day_cap, month_cap = budgets.caps(uid, settings.budget_user_daily_usd, settings.budget_user_monthly_usd)
    return BudgetStatus(dailyCapUsd=day_cap or None, spentTodayUsd=round(day, 6),
                        monthlyCapUsd=month_cap or None, spentThisMonthUsd=round(month, 6))
