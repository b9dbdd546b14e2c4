"""What the ``goals`` entry point calls: the model to plan with and one workflow step.

Model failures become API errors here (the entry point only renders): 503 when a retry may help
(timeouts, 429, 5xx), 502 otherwise. An invalid *answer* is not an error: the workflow replies
that the plan could not be updated. Every model call is metered into the usage ledger (the
request's ``userId``; ``backend:goals`` when the backend sent none) and, for a request with a
``userId`` while the deployment has money caps, first reserved against that user's caps
(docs/budgets.md): reached, 429 ``BUDGET_EXCEEDED`` before the call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from shared.config import Settings
from shared.errors import ModelError, Unavailable, UpstreamFailed
from shared.goals.contracts import GoalsRequest, GoalsResponse
from shared.goals.workflow import GoalPlanningWorkflow
from shared.ids import new_id
from shared.models.base import Model

if TYPE_CHECKING:
    from shared.state.budget_repo import BudgetRepo
    from shared.state.records import UsageEntry

ANONYMOUS_UID = "backend:goals"
"""Ledger owner of calls for requests without ``userId`` (no Firebase uid contains a colon)."""


def goals_model(settings: Settings) -> Model:
    """Gemini when configured (created on first use, so ``google.genai`` is imported only then),
    otherwise the clearly labelled offline planner."""
    if settings.gemini_api_key or settings.gemini_use_vertex:
        from shared.models.factory import create_model

        return create_model(settings)
    from shared.goals.offline import OfflinePlanner

    return OfflinePlanner()


def metered(model: Model, request: GoalsRequest, settings: Settings,
            sink: Callable[[UsageEntry], None]) -> Model:
    """``model`` with every call recorded through ``sink`` (the ledger is opened only now)."""
    from shared.usage.meter import GOALS_PLANNER, MeteredCall, MeteredModel

    call = MeteredCall(uid=request.userId or ANONYMOUS_UID, unit_kind="goals",
                       unit_id=request.sessionId or new_id("goals"), component=GOALS_PLANNER,
                       operation_type="goals_plan")
    return MeteredModel(model, call, settings, sink)


def capped(model: Model, request: GoalsRequest, settings: Settings, budgets: Callable[[], BudgetRepo]) -> Model:
    """``model`` with every call first reserved against the money caps of the request's user
    (``CappedModel``: 429 ``BUDGET_EXCEEDED`` before the call when a cap has no room). A request
    without ``userId`` is the backend's own (``backend:goals``), not a user's: not capped. With the
    deployment's caps off nothing is read (``budgets`` is not even built)."""
    if request.userId is None or not (settings.budget_user_daily_usd or settings.budget_user_monthly_usd):
        return model
    from shared.usage.budget import CappedModel

    return CappedModel(model, budgets(), settings, request.userId, new_id)


def run_goals(request: GoalsRequest, model: Model, settings: Settings) -> GoalsResponse:
    """One conversational step; raises ``Unavailable`` (the model may answer a retry) or ``UpstreamFailed``
    when the model cannot be reached."""
    try:
        return GoalPlanningWorkflow(model, timeout_s=settings.run_deadline_s).run(request)
    except ModelError as err:
        if err.retryable:
            raise Unavailable(f"the planning model failed: {err}", code="MODEL_UNAVAILABLE") from err
        raise UpstreamFailed(f"the planning model failed: {err}", code="MODEL_ERROR") from err
