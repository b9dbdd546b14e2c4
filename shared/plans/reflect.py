"""Reflect: after each act, the model says whether the task is complete or failed and how the plan
should change. Its usage is accounted like the loop's own model calls (``RunContext.charge``)."""

from __future__ import annotations

import logging

from shared.loop.context import RunContext
from shared.plans import planner
from shared.plans.react import Act
from shared.state.host_states import PlanRunState
from shared.state.plan_records import PlanTask
from shared.state.records import UsageEntry
from shared.usage.meter import MeteredCall, MeteredModel

log = logging.getLogger("agent_runtime.plans")

COMPONENT = "reflector"


def reflect(ctx: RunContext, state: PlanRunState, task: PlanTask, act: Act) -> planner.Reflection | None:
    """The reflection on ``act`` (None when the model failed: the act stays recorded, the task goes on)."""
    services = ctx.services
    entries: list[UsageEntry] = []  # charged with the step's commit, not one by one
    call = MeteredCall(uid=ctx.run.uid, unit_kind="session", unit_id=state.session_id,
                       component=COMPONENT, operation_type="executor")
    model = MeteredModel(services.model_factory(), call, services.settings, entries.append)
    try:
        answer = planner.reflect(model, state.objective, task, state.tasks, act.to_reflect(),
                                 timeout_s=max(0.001, ctx.remaining()))
    except Exception as exc:  # a failed reflection must not lose the act: it is recorded, the task goes on
        log.warning("reflection failed: %s", type(exc).__name__, extra={"fields": {
            "component": COMPONENT, "stage": "reflect", "sessionId": state.session_id}})
        answer = None
    for i, e in enumerate(entries):
        e.entry_id, e.step = f"{state.session_id}-{ctx.run.steps:05d}-r{i}", ctx.run.steps
        ctx.charge(e)
    return None if answer is None else answer.value
