"""The planner loop's meta tools (seed 003 §4.3): ``agent_create_plan`` and ``agent_execute_plan``.

``agent_create_plan`` turns the call into a ``PlanIntent`` and asks the plan engine (plan
sessions, shared/plans/) for a plan, then by ``execution_mode``:
- ``auto_execute`` (default): the plan runs as a plan session (same durable, exactly-once execution,
  policy and approvals); the call *waits* (the run pauses) and answers, when the plan ends, with its
  outcome (status, insights, references); the run then continues;
- ``draft_only`` (also legacy ``auto_execute: false``): the plan stays ``pending_review`` (a session
  awaiting confirmation); the model gets it to explain that execution is paused. On a later turn
  ``agent_execute_plan {planId, changes?}`` runs it (or the sessions' confirm route does);
- ``agent_review``: a reviewer call (profile ``quality``, operationType ``plan_review``) returns
  ``approved | rejected | needs_changes`` with notes; approved plans run, others go back to the model.
For ``project_create`` the plan must hold template discovery, optional template creation, project
creation and context-document publishing, in that order: repaired once, else refused.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from shared.agent.chat_host import chat_state
from shared.errors import LimitExceeded
from shared.loop.virtual import HostCall, VirtualOutcome, host_tool

if TYPE_CHECKING:
    from shared.loop.context import RunContext
    from shared.state.plan_records import PlanTask
    from shared.state.records import ActionRecord
    from shared.state.sessions_repo import SessionsRepo

# The plan engine (shared/plans/sessions.py: planner, session events), the plan contracts and events
# and the structured-answer helper are imported when a meta tool runs, not with the declarations: a chat
# run's cold start loads this module to offer both tools, and most runs never make a plan (issue 20).

ExecutionMode = Literal["auto_execute", "draft_only", "agent_review"]

PROJECT_CREATE_ORDER = ("template", "project", "context")
PROJECT_CREATE_FIX = ("For a project_create request the plan must contain, in this order: template discovery "
                      "(search templates), optionally creating a template, creating the project from the template, "
                      "and publishing the project's context document. Revise the plan accordingly.")


class CreatePlanArgs(BaseModel):
    """Generate an execution plan for multi-step objectives, optionally executing it or pausing for review."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
    objective: str = Field(min_length=1, max_length=4000, description="What you want to accomplish end-to-end.")
    execution_mode: ExecutionMode | None = Field(
        default=None, description="Default is auto_execute. Use draft_only to return the plan without running it, "
                                  "or agent_review to have another agent critique the plan before execution.")
    auto_execute: bool | None = Field(default=None, description="Legacy alias for execution_mode === auto_execute; "
                                                                "retained for prompt compatibility.")
    requested_outputs: list[str] = Field(default_factory=list, max_length=20,
                                         description="Specific deliverables the user expects.")
    priority_entities: list[str] = Field(default_factory=list, max_length=20,
                                         description="IDs or slugs the plan must focus on.")

    @property
    def mode(self) -> ExecutionMode:
        if self.execution_mode is not None:
            return self.execution_mode
        return "draft_only" if self.auto_execute is False else "auto_execute"


class ExecutePlanArgs(BaseModel):
    """Run a plan the user reviewed (a draft from agent_create_plan), optionally revising it first with the
    user's changes."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
    planId: str = Field(pattern=r"^[A-Za-z0-9_-]{1,160}$", description="The planId of the draft.")
    changes: str | None = Field(default=None, max_length=4000, description="What to change first, in words.")


@dataclass(frozen=True)
class PlanIntent:
    objective: str
    context_type: str
    uid: str
    thread_id: str
    run_id: str
    entity_id: str | None
    execution_mode: ExecutionMode
    requested_outputs: list[str] = field(default_factory=list)
    priority_entities: list[str] = field(default_factory=list)

    def guidance(self) -> str:
        parts = [f"Context type: {self.context_type}."]
        if self.entity_id:
            parts.append(f"Entity in scope: {self.entity_id}.")
        if self.requested_outputs:
            parts.append("Requested outputs: " + "; ".join(self.requested_outputs))
        if self.priority_entities:
            parts.append("Focus on: " + ", ".join(self.priority_entities))
        if self.context_type == "project_create":
            parts.append(PROJECT_CREATE_FIX)
        return " ".join(parts)


class Review(BaseModel):
    model_config = ConfigDict(extra="ignore", defer_build=True)
    verdict: Literal["approved", "rejected", "needs_changes"]
    notes: str = Field(default="", max_length=2000)


REVIEW_INSTRUCTION = """\
You review an execution plan before it runs. Judge whether the tasks, in order, achieve the
objective safely and without needless side effects. Answer with one JSON object matching the
response schema: verdict approved | rejected | needs_changes, and notes (what to change, or why)."""


def session_id_for(action: ActionRecord) -> str:
    """The plan session an ``agent_create_plan`` call makes (one per call: a retried call finds it)."""
    return f"ses_{action.action_id}"


def _tasks(tasks: list[PlanTask]) -> list[dict[str, Any]]:
    return [{"id": t.id, "title": t.title, "description": t.description, "status": t.status}
            for t in tasks if t.status != "obsolete"]


def project_create_order_ok(tasks: list[PlanTask]) -> bool:
    """template discovery, (template creation), project creation, context publishing, in order."""
    text = [f"{t.title} {t.description}".lower() for t in tasks]

    def first(*words: str) -> int:
        return next((i for i, x in enumerate(text) if all(w in x for w in words)), -1)

    template, project, context = first("template"), first("project", "creat"), first("context", "publish")
    return template >= 0 and project > template and context > project


class PlanTools:
    """Both meta tools for one runtime (the plan engine needs the sessions repository), declared as
    virtual tools (shared/loop/virtual.py) by their arguments models."""

    def __init__(self, sessions: SessionsRepo) -> None:
        self.sessions = sessions
        create, execute = AgentCreatePlan(self), AgentExecutePlan(self)
        self.create = host_tool(create.name, CreatePlanArgs, create.run, preview=create.preview)
        self.execute = host_tool(execute.name, ExecutePlanArgs, execute.run, preview=execute.preview)

    def start(self, ctx: RunContext, sid: str, version: int, action: ActionRecord) -> None:
        """Confirm the plan at ``version`` with the run as its parent, and relay its progress into
        the run's log (``plan_relay``)."""
        from shared.plans import sessions as engine

        engine.confirm(ctx.services, self.sessions, ctx.run.uid, sid, version,
                       parent=(ctx.run.run_id, action.action_id))
        chat_state(ctx).relay_plan_id = sid

    def outcome(self, ctx: RunContext, sid: str) -> VirtualOutcome:
        """The answer of a call whose plan ended: status, insights, references (the plan's steps
        are in the run's events already: ``plan_relay``)."""
        got = self.sessions.get(sid)
        if got is None:
            return VirtualOutcome(error=f"plan {sid} is gone")
        session = got[0]
        if not session.terminal:
            return VirtualOutcome(waiting=True)
        from shared.plans import unit

        tasks = unit.read(self.sessions, ctx.services.runs, session).tasks
        return VirtualOutcome(result={
            "status": session.status, "planId": sid,
            "insights": [f"{t.title}: {t.summary or t.status}" for t in tasks if t.status != "obsolete"],
            "references": {"planId": sid, "events": f"/api/agent/sessions/{sid}/events"},
            "error": session.error.to_doc() if session.error else None})


class AgentCreatePlan:
    name = "agent_create_plan"

    def __init__(self, tools: PlanTools) -> None:
        self.tools = tools

    def preview(self, args: CreatePlanArgs) -> str:
        return f"Plan ({args.mode}): {args.objective[:200]}"

    def run(self, call: HostCall, args: CreatePlanArgs) -> VirtualOutcome:
        from shared.events.plan import PlanCreatedEvent, PlanReadyForReviewEvent, PlanReviewEvent
        from shared.plan_views import plan_body
        from shared.plans import sessions as engine

        ctx, action = call.ctx, call.action
        sid = session_id_for(action)
        if self.tools.sessions.get(sid) is not None:  # resumed after the plan ended (or a retried call)
            return self.tools.outcome(ctx, sid)
        run = ctx.run
        intent = PlanIntent(objective=args.objective, context_type=run.context_type or "general", uid=run.uid,
                            thread_id=run.thread_id, run_id=run.run_id, entity_id=run.entity_id,
                            execution_mode=args.mode, requested_outputs=args.requested_outputs,
                            priority_entities=args.priority_entities)
        chat = chat_state(ctx)
        chat.execution_modes = [*chat.execution_modes, intent.execution_mode][-20:]
        services = ctx.services
        try:
            outcome = engine.start_planning(services, self.tools.sessions, run.uid, intent.objective,
                                            deadline=time.time() + services.settings.plan_default_deadline_s,
                                            session_id=sid, guidance=intent.guidance())
        except LimitExceeded as exc:  # the user's active plan sessions are at their limit: nothing was created
            return VirtualOutcome(error=f"{exc.code}: {exc.message}")
        session, tasks = outcome.session, outcome.tasks
        if session.status == "failed":
            return VirtualOutcome(error=f"the plan could not be made: {session.error.message if session.error else ''}")
        if intent.context_type == "project_create" and not project_create_order_ok(tasks):
            try:
                fixed = engine.refine_plan(services, self.tools.sessions, run.uid, sid, PROJECT_CREATE_FIX)
                session, tasks = fixed.session, fixed.tasks
            except Exception:
                tasks = []
            if not project_create_order_ok(tasks):
                engine.cancel(services, self.tools.sessions, run.uid, sid)
                return VirtualOutcome(error="the plan for project_create must contain template discovery, "
                                            "optional template creation, project creation and context-document "
                                            "publishing, in that order; it did not after one repair: revise the "
                                            "objective or ask the user")
        live = _tasks(tasks)
        ctx.emit(PlanCreatedEvent(planId=sid, executionMode=intent.execution_mode,
                                  plan=plan_body(session.plan_version, tasks)))
        chat.plan_id = sid
        if intent.execution_mode == "draft_only":
            ctx.emit(PlanReadyForReviewEvent(planId=sid, plan=plan_body(session.plan_version, tasks),
                                             reasoning=f"{len(live)} steps for: {intent.objective[:300]}"))
            chat.pending_plan_id = sid
            return VirtualOutcome(result={
                "status": "pending_review", "planId": sid, "version": session.plan_version, "tasks": live,
                "note": "Execution is paused until the user reviews the plan: explain it and ask whether to run it "
                        "(agent_execute_plan) or what to change."})
        if intent.execution_mode == "agent_review":
            verdict, notes = self.review(ctx, intent, live)
            ctx.emit(PlanReviewEvent(planId=sid, verdict=verdict, notes=notes))
            if verdict != "approved":
                chat.pending_plan_id = sid
                return VirtualOutcome(result={"status": verdict, "planId": sid, "notes": notes, "tasks": live,
                                              "note": "The reviewer did not approve the plan: revise it "
                                                      "(agent_create_plan again) or explain to the user."})
        self.tools.start(ctx, sid, session.plan_version, action)
        return VirtualOutcome(waiting=True)

    def review(self, ctx: RunContext, intent: PlanIntent, tasks: list[dict[str, Any]]) -> tuple[Any, str]:
        from shared.plans.structured import Refused, ask
        from shared.usage.budget import CappedModel
        from shared.usage.meter import MeteredCall, MeteredModel

        services = ctx.services
        call = MeteredCall(uid=intent.uid, unit_kind="run", unit_id=intent.run_id, component="reviewer",
                           operation_type="plan_review", profile="quality", context_type=intent.context_type)
        metered = MeteredModel(services.model_for("quality"), call, services.settings, services.usage.record)
        model = CappedModel(metered, services.budgets, services.settings, intent.uid, services.new_id)
        prompt = {"objective": intent.objective, "contextType": intent.context_type, "plan": tasks}

        def accept(value: BaseModel) -> Review:
            if not isinstance(value, Review):
                raise Refused(["not a review"])
            return value

        import json

        try:
            answer = ask(model, REVIEW_INSTRUCTION, json.dumps(prompt, ensure_ascii=False), Review, accept,
                         timeout_s=max(1.0, ctx.remaining()))
        except LimitExceeded as exc:  # the user's money cap has no room for the review (docs/budgets.md)
            return "needs_changes", f"the review was not made: {exc.code}: {exc.message}"
        if answer.value is None:  # a review that does not validate (after one repair): needs changes, and why
            return "needs_changes", "the review did not validate: " + "; ".join(answer.problems[:3])
        return answer.value.verdict, answer.value.notes


class AgentExecutePlan:
    name = "agent_execute_plan"

    def __init__(self, tools: PlanTools) -> None:
        self.tools = tools

    def preview(self, args: ExecutePlanArgs) -> str:
        return f"Run plan {args.planId}" + (f" after: {args.changes[:150]}" if args.changes else "")

    def run(self, call: HostCall, args: ExecutePlanArgs) -> VirtualOutcome:
        from shared.plans import sessions as engine

        ctx, action = call.ctx, call.action
        got = self.tools.sessions.get(args.planId)
        if got is None or got[0].uid != ctx.run.uid:
            return VirtualOutcome(error=f"plan {args.planId} not found")
        session = got[0]
        if session.run_id is not None and chat_state(ctx).executing == args.planId:
            return self.tools.outcome(ctx, args.planId)  # resumed after it ended
        if session.status != "awaiting_confirmation":
            return VirtualOutcome(error=f"plan {args.planId} is {session.status}: it was already executed or "
                                        "superseded and cannot run again; create a new plan if needed")
        services = ctx.services
        version = session.plan_version
        if args.changes:
            version = engine.refine_plan(services, self.tools.sessions, ctx.run.uid, args.planId,
                                         args.changes).session.plan_version
        self.tools.start(ctx, args.planId, version, action)
        chat_state(ctx).executing = args.planId
        return VirtualOutcome(waiting=True)
