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
from dataclasses import dataclass
from typing import Literal

from shared.config import Settings
from shared.models.base import ModelRequest

Scope = Literal["run", "user_day", "user_month"]
CHARS_PER_TOKEN = 2
"""Prompt characters per token in the estimate: Gemini averages about 4 for English; 2 keeps the
estimate above the real count for most text (code and other scripts run closer to 2-3)."""


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

    def describe(self) -> str:
        what = {"run": "this run's budget", "user_day": "your daily budget",
                "user_month": "your monthly budget"}[self.scope]
        return (f"{what}: ${self.spent_usd:.4f} spent of ${self.limit_usd:.4f}; the next model call may cost up to "
                f"${self.call_max_usd:.4f}. Approve to raise the limit to ${self.proposed_usd:.4f}.")


def call_max_cost(settings: Settings, model: str, request: ModelRequest) -> float:
    """The most one call of ``model`` with ``request`` can cost (0 for a model without a price)."""
    price = settings.price_of(model)
    if price is None:
        return 0.0
    per_input, _cached, per_output = price
    chars = len(request.system_instruction) + sum(len(t.model_dump_json()) for t in request.turns)
    chars += sum(len(json.dumps(t.parameters)) + len(t.name) + len(t.description) for t in request.tools)
    input_tokens = chars // CHARS_PER_TOKEN + 1
    return round((input_tokens * per_input + settings.model_max_output_tokens * per_output) / 1_000_000, 8)


def run_overrun(budget_usd: float | None, spent_usd: float, call_max_usd: float) -> Overrun | None:
    if budget_usd is None or spent_usd + call_max_usd <= budget_usd:
        return None
    return Overrun("run", budget_usd, round(spent_usd, 8), call_max_usd)
