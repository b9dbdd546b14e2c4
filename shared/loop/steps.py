"""The loop (seed 001 section 6): model call -> tool calls under policy -> next step.

A step *decides*: it returns an outcome (run again, final output, interruption for approval,
failure); the host of the unit acts on every outcome but "run again" (commits the stop and says
what it means). ``drive`` checks the invocation's budget before each step and asks the host what a
spent budget means (fail for chat runs, yield for long work). Every step is committed before the
next begins.
"""

from __future__ import annotations

import logging

from pydantic import BaseModel

from shared.errors import ModelTimeout, PreconditionFailed
from shared.events import DeltaEvent, ThoughtDeltaEvent
from shared.failures import FailureCode
from shared.loop.context import RunContext
from shared.loop.outcomes import (
    BudgetSpent,
    HostStep,
    NextStepFailed,
    NextStepFinalOutput,
    NextStepInterruption,
    NextStepLost,
    NextStepRunAgain,
    Settled,
    StepOutcome,
)
from shared.loop.tool_calls import decide_calls, execute_action, outcomes, responses_turn
from shared.models.base import DeltaKind, ModelRequest
from shared.usage.meter import LOOP, MeteredCall, metered_generate

log = logging.getLogger("agent_runtime.loop")

NO_TOOLS_REMINDER = "You currently have no tools, focus on guidance."
"""Seed 003 §4.5: a turn with no tools available is reminded of it."""


def drive(ctx: RunContext) -> StepOutcome:
    """Run steps until the host stopped the unit (completed, paused, failed or yielded).

    Every commit is conditioned on the run as this invocation last wrote it. If one fails, another
    invocation took the run over (e.g. recovery after this one's lease lapsed): this one stops at
    once, writes nothing more and reports ``NextStepLost``; the run goes on there."""
    try:
        return _drive(ctx)
    except PreconditionFailed:
        log.warning("another invocation took the run over; this one stops",
                    extra={"fields": {"runId": ctx.run.run_id, "steps": ctx.run.steps}})
        return NextStepLost()


def _drive(ctx: RunContext) -> StepOutcome:
    while True:
        spent: BudgetSpent | None = None
        if ctx.max_steps is not None and ctx.steps_taken() >= ctx.max_steps:
            spent = "steps"
        elif ctx.remaining() <= ctx.yield_margin_s:
            spent = "time"
        stop = ctx.host.budget_spent(ctx, spent) if spent is not None else ctx.host.before_step(ctx)
        if stop is not None:
            outcome: StepOutcome = stop
        else:
            outcome = _guarded(ctx, lambda: step(ctx), "step")
            if isinstance(outcome, NextStepRunAgain | NextStepFinalOutput):
                outcome = host_step(ctx, outcome)
        if isinstance(outcome, NextStepRunAgain):
            ctx.commit()
            continue
        assert not isinstance(outcome, NextStepLost)
        ctx.host.act(ctx, outcome)
        return outcome


def _guarded(ctx: RunContext, run: HostStep, stage: str) -> StepOutcome:
    """A step whose unexpected error fails the unit (``INTERNAL``); a lost commit stops it."""
    try:
        return run()
    except PreconditionFailed:
        raise
    except Exception:
        log.exception("unexpected error in run step",
                      extra={"fields": {"runId": ctx.run.run_id, "component": "loop", "stage": stage}})
        return NextStepFailed(FailureCode.INTERNAL, "the run failed because of an internal error")


def host_step(ctx: RunContext, outcome: Settled) -> StepOutcome:
    """The host's own step after the loop's (``Host.after_step``; e.g. a plan's reflection), taken
    like the loop's step; the loop's outcome when the host has none."""
    follow = ctx.host.after_step(ctx, outcome)
    return outcome if follow is None else _guarded(ctx, follow, "host_step")


def step(ctx: RunContext) -> StepOutcome:
    """One model call and its tool calls. Decides; commits nothing but a side effect's claim."""
    services = ctx.services

    def on_delta(kind: DeltaKind, text: str) -> None:
        ctx.emit(ThoughtDeltaEvent(delta=text) if kind == "thought" else DeltaEvent(delta=text))

    tools = ctx.host.declarations(ctx)
    instruction = ctx.run.system_instruction if tools else f"{ctx.run.system_instruction}\n\n{NO_TOOLS_REMINDER}"
    if ctx.registry.unavailable:  # tool sources that could not be reached: the model is told
        instruction += ("\n\n[UNAVAILABLE TOOLS]\nThe tools of these servers are unavailable right now: "
                        + ", ".join(ctx.registry.unavailable) + ". Do not promise what only they could do.")
    request = ModelRequest(system_instruction=instruction, turns=ctx.turns, tools=tools,
                           timeout_s=max(0.001, ctx.remaining()))
    model = services.model_for(ctx.run.profile)
    if ctx.budgeted:  # else the budget modules are not even imported (cold start)
        from shared.loop import budget_pause

        paused = budget_pause.check(ctx, model.name, request)
        if paused is not None:  # no room in a money budget: pause before the call (docs/budgets.md)
            return paused
    ctx.run.steps += 1
    call = MeteredCall(uid=ctx.run.uid, unit_kind="run", unit_id=ctx.run.run_id, component=LOOP,
                       operation_type=ctx.host.operation_type, step=ctx.run.steps,
                       profile=ctx.run.profile,  # type: ignore[arg-type]
                       context_type=ctx.run.context_type)
    metered = metered_generate(model, request, call, services.settings, on_delta=on_delta)
    entry = metered.entry
    if metered.error is not None:
        ctx.write(*services.usage.entry_writes(entry))
        if isinstance(metered.error, ModelTimeout):
            return NextStepFailed(FailureCode.MODEL_TIMEOUT, f"the model did not answer in time: {metered.error}")
        return NextStepFailed(FailureCode.MODEL_ERROR, f"the model call failed: {metered.error}")
    assert metered.response is not None
    turn = metered.response.turn
    if turn.role != "model" or not turn.parts:
        ctx.charge(entry)
        return NextStepFailed(FailureCode.MALFORMED_MODEL_OUTPUT, "the model returned an empty answer")
    turn_index = ctx.add_turn(turn)
    entry.turn_index = turn_index
    ctx.charge(entry)
    calls = turn.function_calls
    if not calls:
        text = turn.text
        if not text.strip() and not turn.files:
            return NextStepFailed(FailureCode.MALFORMED_MODEL_OUTPUT, "the model returned neither text nor a tool call")
        return NextStepFinalOutput(text)
    limit = services.settings.max_tool_calls_per_turn
    if len(calls) > limit:
        return NextStepFailed(FailureCode.TOO_MANY_TOOL_CALLS,
                              f"the model asked for {len(calls)} tool calls in one turn; the limit is {limit}")
    validated: dict[str, BaseModel] = {}
    decided = decide_calls(ctx, turn_index, calls, validated=validated)
    if isinstance(decided, tuple):
        code, message = decided
        return NextStepFailed(code, message)
    for action in decided:
        if action.status == "planned":
            execute_action(ctx, action, validated.get(action.action_id))
    waiting = [a for a in decided if a.status == "awaiting_confirmation"]
    if waiting:
        return NextStepInterruption(turn_index, waiting)
    ctx.add_turn(responses_turn(calls, decided))
    return NextStepRunAgain(outcomes(decided))
