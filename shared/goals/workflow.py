"""GoalPlanningWorkflow (seed 000 sections 6-7): CheckApproval -> Plan (only if needed) -> Finalize.

Each stage is a plain function of the request and the previous stage's result, so the routing
rules can be read (and tested) one at a time:

- ``check_approval``: is there a live plan, and does the message approve it? Routes to
  ``finalize_only`` only when both hold; everything else ``needs_planning``.
- ``plan``: a new plan (no live plan) or an edit of the live one, via ``PlanStage``.
- ``finalize``: reply, action and the next state (section 5 and the FinalizeAgent pseudocode).

The workflow is stateless and never touches a database: the backend persists what it returns.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Literal

from shared.goals.consent import ConsentResult, detect_consent
from shared.goals.contracts import (
    FinalizeAction,
    FinalizePayload,
    GoalPreview,
    GoalsRequest,
    GoalsResponse,
    NoAction,
    SavePreviewAction,
    SavePreviewPayload,
    StateOut,
    dump_plan,
)
from shared.goals.plan_stage import PlanResult, PlanStage
from shared.models.base import Model

log = logging.getLogger("agent_runtime.goals")

Routing = Literal["finalize_only", "needs_planning"]

NEW_PLAN_REPLY = "Here\u2019s a plan based on your message!"
NEW_GOAL_REPLY = "Here\u2019s a plan based on your new message!"
UPDATED_REPLY = "I\u2019ve updated your plan as requested."
CREATE_FAILED_REPLY = ("Sorry, I couldn't create a plan from your message this time. "
                       "Please try again, perhaps with a little more detail.")
UPDATE_FAILED_REPLY = ("Sorry, I couldn't update the plan this time, so your current plan is unchanged. "
                       "Please try rephrasing your request.")


def finalized_reply(title: str) -> str:
    return f"I've created a goal for you: {title} \U0001f3af"


@dataclass(frozen=True)
class Approval:
    """CheckApproval's decision. ``plan`` is the live plan (None: the next plan is a new one);
    ``new_goal`` says the previous session was finalised, so a new goal starts."""

    routing: Routing
    consent: ConsentResult
    plan: GoalPreview | None
    new_goal: bool


def check_approval(request: GoalsRequest) -> Approval:
    """A plan is live unless the session was finalised (``step == "finalized"`` or
    ``sessionActive`` false): a finalised plan is never finalised twice."""
    state = request.state
    closed = state.step == "finalized" or not state.sessionActive
    plan = None if closed else state.proposed_plan
    consent = detect_consent(request.message)
    routing: Routing = "finalize_only" if consent.consent and plan is not None else "needs_planning"
    # INFO carries categories only; the clauses quote the user's message (DEBUG at most).
    log.info("goals: routing %s (consent %s; clauses %s)", routing, consent.consent, consent.code)
    log.debug("goals: consent clauses: %s", consent.reason)
    return Approval(routing=routing, consent=consent, plan=plan, new_goal=closed)


def plan(request: GoalsRequest, approval: Approval, planner: PlanStage) -> PlanResult | None:
    """The Plan stage; None when the routing needs no planning."""
    if approval.routing == "finalize_only":
        return None
    if approval.plan is None:
        return planner.new_plan(request.message, request.context)
    return planner.refine(approval.plan, request.message, request.context)


def finalize(request: GoalsRequest, approval: Approval, result: PlanResult | None) -> GoalsResponse:
    """Reply, action and next state for the outcome of the previous stages."""
    incoming = request.state
    if approval.routing == "finalize_only":
        assert approval.plan is not None  # check_approval routes here only with a plan
        live = approval.plan
        payload = FinalizePayload(goalPreviewId=live.id or preview_id(request, live), goal=live.goal,
                                  milestones=live.milestones)
        return GoalsResponse(reply=finalized_reply(live.goal.title), action=FinalizeAction(payload=payload),
                             state=StateOut(step="finalized", iteration=incoming.iteration, sessionActive=False))
    if result is None or result.plan is None:
        # The model's answer stayed invalid: say so, do nothing, hand back the state unchanged.
        reply = CREATE_FAILED_REPLY if approval.plan is None else UPDATE_FAILED_REPLY
        state = StateOut(step=incoming.step or "plan_generated", iteration=incoming.iteration,
                         sessionActive=incoming.sessionActive)
        return GoalsResponse(reply=reply, action=NoAction(), state=state)
    if approval.plan is None:
        iteration = 1
        opening = NEW_GOAL_REPLY if approval.new_goal else NEW_PLAN_REPLY
    else:
        iteration = max(incoming.iteration, 1) + 1
        opening = UPDATED_REPLY
    reply = " ".join(part for part in (opening, result.summary, _duplicate_note(result)) if part)
    step = "plan_generated" if iteration == 1 else "plan_iteration"
    return GoalsResponse(
        reply=reply,
        action=SavePreviewAction(payload=SavePreviewPayload(goalPreview=result.plan, iteration=iteration)),
        state=StateOut(step=step, iteration=iteration, sessionActive=True),
    )


class GoalPlanningWorkflow:
    """Runs the three stages for one message. ``today`` (default: the UTC date) anchors the dates
    the model proposes; ``timeout_s`` bounds all model calls of one request (AGENT_RUN_DEADLINE_S)."""

    def __init__(self, model: Model, *, today: date | None = None, timeout_s: float | None = None) -> None:
        self._model = model
        self._today = today
        self._timeout_s = timeout_s

    def run(self, request: GoalsRequest) -> GoalsResponse:
        approval = check_approval(request)
        today = self._today or utc_today()
        result = plan(request, approval, PlanStage(self._model, today=today, timeout_s=self._timeout_s))
        return finalize(request, approval, result)


def utc_today() -> date:
    """Today's date in UTC: the ``today`` the model is given and scheduled tasks must come after."""
    return datetime.now(UTC).date()


def preview_id(request: GoalsRequest, live: GoalPreview) -> str:
    """A preview id for a plan the backend sent without one: derived from the session and the plan,
    so a retried request finalises under the same id."""
    seed = json.dumps([request.userId, request.sessionId, dump_plan(live)], sort_keys=True, ensure_ascii=False)
    return "gp_" + hashlib.sha256(seed.encode()).hexdigest()[:16]


def _duplicate_note(result: PlanResult) -> str:
    dup = result.duplicate_of
    if dup is None:
        return ""
    return (f"Note: you already have a goal \u201c{dup.title}\u201d; this plan would be a separate goal. "
            "Tell me if you'd rather build on the existing one.")
