"""Reflect: after each act, the model says whether the task is complete or failed and how the plan
should change. Its usage is accounted like the loop's own model calls (``RunContext.charge``), and
budgeted with them: the money check before each act reserves room for the act's call and for its
reflection at :func:`max_cost` (docs/budgets.md), so the reflection never starts without room. The
act is shown to it in at most :data:`LAST_ACT_CHARS` characters, which bounds that maximum."""

from __future__ import annotations

import json
import logging
from typing import Any

from shared.loop.context import RunContext
from shared.plans import planner
from shared.plans.react import Act
from shared.state.host_states import PlanRunState
from shared.state.plan_records import PlanTask
from shared.state.records import UsageEntry
from shared.usage.budget import structured_max_cost
from shared.usage.meter import MeteredCall, MeteredModel

log = logging.getLogger("agent_runtime.plans")

COMPONENT = "reflector"
LAST_ACT_CHARS = 30_000
"""The most of an act (its call and observation, as JSON) a reflection is shown; beyond, cut."""


def shown(act: dict[str, Any]) -> dict[str, Any]:
    """The act as the reflection sees it: whole, or its JSON cut at :data:`LAST_ACT_CHARS`."""
    text = json.dumps(act, ensure_ascii=False, default=str)
    return act if len(text) <= LAST_ACT_CHARS else {"cut": text[:LAST_ACT_CHARS], "fullChars": len(text)}


def max_cost(ctx: RunContext, state: PlanRunState) -> float:
    """The most the reflection on the current task's next act can cost (USD): its request with an
    act of :data:`LAST_ACT_CHARS`, and one repair."""
    task = state.current
    if task is None:
        return 0.0
    biggest = {"cut": "x" * LAST_ACT_CHARS, "fullChars": 10**9}
    request = planner.reflect_request(state.objective, task, state.tasks, biggest)
    return structured_max_cost(ctx.services.settings, ctx.services.model_factory().name, request)


def reflect(ctx: RunContext, state: PlanRunState, task: PlanTask, act: Act) -> planner.Reflection | None:
    """The reflection on ``act`` (None when the model failed: the act stays recorded, the task goes on)."""
    services = ctx.services
    entries: list[UsageEntry] = []  # charged with the step's commit, not one by one
    call = MeteredCall(uid=ctx.run.uid, unit_kind="session", unit_id=state.session_id,
                       component=COMPONENT, operation_type="executor")
    model = MeteredModel(services.model_factory(), call, services.settings, entries.append)
    try:
        answer = planner.reflect(model, state.objective, task, state.tasks, shown(act.to_reflect()),
                                 timeout_s=max(0.001, ctx.remaining()))
    except Exception as exc:  # a failed reflection must not lose the act: it is recorded, the task goes on
        log.warning("reflection failed: %s", type(exc).__name__, extra={"fields": {
            "component": COMPONENT, "stage": "reflect", "sessionId": state.session_id}})
        answer = None
    for i, e in enumerate(entries):
        e.entry_id, e.step = f"{state.session_id}-{ctx.run.steps:05d}-r{i}", ctx.run.steps
        ctx.charge(e)
    return None if answer is None else answer.value
