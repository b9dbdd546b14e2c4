"""Money budgets that pause instead of kill (docs/budgets.md).

Before each model call of a unit's loop, :func:`check` compares what was spent with the limits
that apply, counting the call at its **maximum** cost (:func:`call_max_cost`: the prompt at a
generous token estimate plus ``MODEL_MAX_OUTPUT_TOKENS`` at the output price):

- the run's ``budgetUsd`` (a request field of runs and plan sessions) against the run's own
  ``costUsd`` (the run document is moved by one invocation at a time: no race);
- the user's ``BUDGET_USER_DAILY_USD`` / ``BUDGET_USER_MONTHLY_USD`` against the ledger's counters
  of the day and month (``users/{uid}/usageDays|usageMonths``, moved in the same commit as each
  ledger entry) plus the reservations of calls in flight: the check and the reservation of this
  call's maximum are one conditional write on ``users/{uid}/limits/budget`` (``BudgetRepo``), so
  concurrent runs of one user cannot overshoot the cap by more than one call each.

An overrun is not a failure: the loop pauses the unit with a budget approval
(``shared/loop/budget_pause.py``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Literal

from shared.config import Settings
from shared.errors import LimitExceeded
from shared.models.base import DeltaSink, Model, ModelRequest, ModelResponse, Part, Turn

if TYPE_CHECKING:
    from shared.state.budget_repo import BudgetRepo

Scope = Literal["run", "user_day", "user_month"]
CHARS_PER_TOKEN = 2
"""Prompt characters per token in the estimate: Gemini averages about 4 for English; 2 keeps the
estimate above the real count for most text (code and other scripts run closer to 2-3)."""
REPAIR_CHARS = 4_000
"""The problems a structured call's repair shows the model (at most 20 lines)."""


@dataclass(frozen=True)
class Overrun:
    """A model call the limit of ``scope`` does not leave room for."""

    scope: Scope
    limit_usd: float
    spent_usd: float
    """Spent so far against that limit (reservations of calls in flight included)."""
    call_max_usd: float

    @property
    def proposed_usd(self) -> float:
        """The new limit approving proposes: double the old one, and at least room for this call."""
        return round(max(self.limit_usd * 2, self.spent_usd + self.call_max_usd), 6)

    def situation(self) -> str:
        what = {"run": "this run's budget", "user_day": "your daily budget",
                "user_month": "your monthly budget"}[self.scope]
        return (f"{what}: ${self.spent_usd:.4f} spent of ${self.limit_usd:.4f}; the next model call may cost up to "
                f"${self.call_max_usd:.4f}.")

    def describe(self) -> str:
        return f"{self.situation()} Approve to raise the limit to ${self.proposed_usd:.4f}."


def call_max_cost(settings: Settings, model: str, request: ModelRequest) -> float:
    """The most one call of ``model`` with ``request`` can cost (0 for a model without a price)."""
    price = settings.price_of(model)
    if price is None:
        return 0.0
    per_input, _cached, per_output = price
    chars = len(request.system_instruction) + sum(len(t.model_dump_json()) for t in request.turns)
    chars += sum(len(json.dumps(t.parameters)) + len(t.name) + len(t.description) for t in request.tools)
    if request.response_schema is not None:
        chars += len(json.dumps(request.response_schema))
    input_tokens = chars // CHARS_PER_TOKEN + 1
    return round((input_tokens * per_input + settings.model_max_output_tokens * per_output) / 1_000_000, 8)


def structured_max_cost(settings: Settings, model: str, request: ModelRequest, attempts: int = 2) -> float:
    """The most a structured-output call (``shared/plans/structured.py``: ``request``, then up to
    ``attempts - 1`` repairs, each resending it with the rejected answer and the problems) can cost."""
    price = settings.price_of(model)
    if price is None:
        return 0.0
    repair_tokens = settings.model_max_output_tokens + REPAIR_CHARS // CHARS_PER_TOKEN
    extra = (attempts - 1) * (attempts) // 2 * repair_tokens * price[0] / 1_000_000
    return round(attempts * call_max_cost(settings, model, request) + extra, 8)


def run_overrun(budget_usd: float | None, spent_usd: float, call_max_usd: float) -> Overrun | None:
    if budget_usd is None or spent_usd + call_max_usd <= budget_usd:
        return None
    return Overrun("run", budget_usd, round(spent_usd, 8), call_max_usd)


class CappedModel:
    """A model whose every call is first reserved at its maximum against the user's daily and
    monthly caps (the calls of a plan session's planning and refinement, made while a request is
    answered, outside a unit's loop). Reached: 429 ``BUDGET_EXCEEDED`` naming the cap, before the
    call and before anything of the request is written; else the call is made and its reservation
    released once it returned (``inner`` writes its ledger entry as it returns: ``MeteredModel``)."""

    def __init__(self, inner: Model, budgets: BudgetRepo, settings: Settings, uid: str,
                 new_id: Callable[[str], str]) -> None:
        self.inner, self.budgets, self.settings, self.uid, self.new_id = inner, budgets, settings, uid, new_id

    @property
    def name(self) -> str:
        return self.inner.name

    def generate(self, request: ModelRequest, on_delta: DeltaSink | None = None) -> ModelResponse:
        s = self.settings
        if not s.budget_user_daily_usd and not s.budget_user_monthly_usd:
            return self.inner.generate(request, on_delta)
        call_id = reserve_or_refuse(self.budgets, s, self.uid, call_max_cost(s, self.inner.name, request),
                                    self.new_id, "Nothing was started.")
        try:
            return self.inner.generate(request, on_delta)
        finally:
            self.budgets.release(self.uid, call_id)


def reserve_or_refuse(budgets: BudgetRepo, settings: Settings, uid: str, max_usd: float,
                      new_id: Callable[[str], str], consequence: str) -> str:
    """Reserve ``max_usd`` against ``uid``'s caps (the deployment's must be on) and return the
    reservation's id (release it once the call's ledger entry is committed); a cap without room:
    ``LimitExceeded`` ``BUDGET_EXCEEDED`` (429) naming it, ``consequence`` ending its message."""
    call_id = new_id("bud")
    reached = budgets.reserve(uid, call_id, max_usd, daily_usd=settings.budget_user_daily_usd,
                              monthly_usd=settings.budget_user_monthly_usd,
                              ttl_s=settings.model_timeout_s + settings.lease_ttl_s)
    if reached is None:
        return call_id
    over = Overrun(reached.scope, reached.cap_usd, reached.spent_usd, max_usd)
    raise LimitExceeded(f"{over.situation()} {consequence}",
                        code="BUDGET_EXCEEDED", retry_after_s=retry_after(reached.scope, budgets.clock()),
                        details={"scope": over.scope, "limitUsd": over.limit_usd, "spentUsd": over.spent_usd,
                                 "callMaxUsd": over.call_max_usd})


SEARCH_PROMPT_CHARS = 1_000
"""What a grounded search sends besides the query (its system instruction: about 200 characters)."""
SEARCH_QUERIES_RESERVED = 4
"""The search queries a grounded call's maximum counts Google Search's fee for (Gemini 3 bills each
query the model runs, and nothing bounds how many it runs in one call: a search that runs more
costs up to one query's fee, $0.014, per further query beyond its reservation)."""


def search_max_cost(settings: Settings, model: str, query: str) -> float:
    """The most one grounded search (``google_web_search``) of ``query`` can cost: its prompt,
    ``MODEL_MAX_OUTPUT_TOKENS`` (sent to Gemini as its ``maxOutputTokens``, like the loop's calls)
    and Google Search's fee (``SEARCH_QUERIES_RESERVED`` queries, or the grounded prompt)."""
    request = ModelRequest(system_instruction="x" * SEARCH_PROMPT_CHARS,
                           turns=[Turn(role="user", parts=[Part(text=query)])])
    return round(call_max_cost(settings, model, request) + settings.search_fee(model, SEARCH_QUERIES_RESERVED), 8)


def retry_after(scope: Scope, at: float) -> float:
    """Seconds until the period of ``scope`` ends (a new UTC day or month starts from nothing)."""
    now = datetime.fromtimestamp(at, UTC)
    start = datetime(now.year, now.month, now.day, tzinfo=UTC)
    if scope == "user_day":
        end = start + timedelta(days=1)
    else:
        end = datetime(now.year + now.month // 12, now.month % 12 + 1, 1, tzinfo=UTC)
    return max(1.0, (end - now).total_seconds())
