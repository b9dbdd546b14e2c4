"""The agent loop (seed 001 section 6): model call -> tool calls under policy -> next step.

A step ends in one of a few small outcomes (as in openai-agents' run_steps): run again, final
output, interruption for approval, or failure. Every step is committed before the next begins.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from shared.agent.context import RunContext
from shared.agent.results import complete_run, fail_run, pause_for_approvals
from shared.agent.tool_calls import execute_action, plan_calls, responses_turn
from shared.errors import ModelError, ModelTimeout, PreconditionFailed
from shared.events import DeltaEvent, ThoughtDeltaEvent
from shared.models.base import DeltaKind, ModelRequest, Usage
from shared.state.records import ModelCallRecord, UsageRecord

log = logging.getLogger("agent_runtime.loop")


@dataclass(frozen=True)
class NextStepRunAgain:
    pass


@dataclass(frozen=True)
class NextStepFinalOutput:
    text: str


@dataclass(frozen=True)
class NextStepInterruption:
    approval_ids: list[str]


@dataclass(frozen=True)
class NextStepFailed:
    code: str
    message: str


@dataclass(frozen=True)
class NextStepLost:
    """Another invocation moved the run (its commit won): this one stops without writing."""


StepOutcome = NextStepRunAgain | NextStepFinalOutput | NextStepInterruption | NextStepFailed | NextStepLost


def drive(ctx: RunContext) -> StepOutcome:
    """Run steps until the run completes, pauses for approval or fails; every stop is committed.

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
        if ctx.run.steps - ctx.steps_at_start >= ctx.run.max_steps:
            return _failed(ctx, "STEP_LIMIT",
                           f"the run stopped after {ctx.run.max_steps} steps (AGENT_MAX_LOOP_STEPS)")
        if ctx.remaining() <= 0:
            return _failed(ctx, "DEADLINE_EXCEEDED", "the run exceeded its time limit (AGENT_RUN_DEADLINE_S)")
        try:
            outcome = step(ctx)
        except PreconditionFailed:
            raise
        except Exception:
            log.exception("unexpected error in run step", extra={"fields": {"runId": ctx.run.run_id}})
            outcome = _failed(ctx, "INTERNAL", "the run failed because of an internal error")
        if not isinstance(outcome, NextStepRunAgain):
            return outcome
        ctx.commit()


def _failed(ctx: RunContext, code: str, message: str) -> NextStepFailed:
    fail_run(ctx, code, message)
    return NextStepFailed(code, message)


def step(ctx: RunContext) -> StepOutcome:
    services = ctx.services
    ctx.run.steps += 1

    def on_delta(kind: DeltaKind, text: str) -> None:
        ctx.emit(ThoughtDeltaEvent(delta=text) if kind == "thought" else DeltaEvent(delta=text))

    request = ModelRequest(system_instruction=ctx.run.system_instruction, turns=ctx.turns,
                           tools=services.registry.declarations(), timeout_s=max(0.001, ctx.remaining()))
    try:
        response = services.model_factory().generate(request, on_delta=on_delta)
    except ModelTimeout as exc:
        return _failed(ctx, "MODEL_TIMEOUT", f"the model did not answer in time: {exc}")
    except ModelError as exc:
        return _failed(ctx, "MODEL_ERROR", f"the model call failed: {exc}")
    model_call = record_usage(ctx, response.usage)
    turn = response.turn
    if turn.role != "model" or not turn.parts:
        return _failed(ctx, "MALFORMED_MODEL_OUTPUT", "the model returned an empty answer")
    turn_index = ctx.add_turn(turn)
    model_call.turn_index = turn_index
    calls = turn.function_calls
    if not calls:
        text = turn.text
        if not text.strip():
            return _failed(ctx, "MALFORMED_MODEL_OUTPUT", "the model returned neither text nor a tool call")
        complete_run(ctx, text)
        return NextStepFinalOutput(text)
    if len(calls) > services.settings.max_tool_calls_per_turn:
        return _failed(ctx, "TOO_MANY_TOOL_CALLS",
                       f"the model asked for {len(calls)} tool calls in one turn; the limit is "
                       f"{services.settings.max_tool_calls_per_turn}")
    planned = plan_calls(ctx, turn_index, calls)
    if isinstance(planned, tuple):
        code, message = planned
        return _failed(ctx, code, message)
    for action in planned:
        if action.status == "planned":
            execute_action(ctx, action)
    waiting = [a for a in planned if a.status == "awaiting_confirmation"]
    if waiting:
        ids = [a.approval_id for a in waiting if a.approval_id]
        pause_for_approvals(ctx, turn_index, waiting)
        return NextStepInterruption(ids)
    ctx.add_turn(responses_turn(calls, planned))
    return NextStepRunAgain()


def record_usage(ctx: RunContext, usage: Usage) -> ModelCallRecord:
    """Record one model call's usage on the run (committed with its step) and add it to the total."""
    figures = UsageRecord(requests=max(1, usage.requests), input_tokens=usage.input_tokens,
                          output_tokens=usage.output_tokens, thinking_tokens=usage.thinking_tokens,
                          total_tokens=usage.total_tokens)
    call = ModelCallRecord(step=ctx.run.steps, usage=figures)
    ctx.run.model_calls.append(call)
    ctx.run.usage = ctx.run.usage.plus(figures)
    return call
