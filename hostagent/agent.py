"""The control loop (seed 002 §5): connect, join, start, snapshot; then perceive -> plan -> execute
until the goal is reached, the user was told why not, or the session fails.

Single flight: the loop plans only when nothing is waiting for a reply, and sends one action at a
time. Every wait is bounded (``timeout_s``; the whole session by ``session_timeout_s``). However
the session ends, ``run`` returns a ``SessionResult`` with an explicit outcome, ends the session
with the host when the connection still allows it, and writes the log's ``session.finish`` line.

Outcomes and the CLI's exit codes: ``completed`` (goal reached), ``blocked`` (the user was told
why not), ``cancelled`` (the user called the booking off before it was made), ``ended`` (the host
ended the session): 0; ``internal_error``: 1; ``protocol_error``
(the host broke the protocol): 3; ``connection_lost`` (could not connect, or the connection
closed mid-session): 4; ``timeout`` (a handshake reply or the session deadline): 5; ``no_answer``
(a question to the user went unanswered within its bound; the user was told, the session ended): 6.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import asdict, dataclass
from typing import Any, Literal

from pydantic import BaseModel

from hostagent.errors import ConnectionLost, HostAgentError, HostError, ProtocolViolation, ReplyTimeout
from hostagent.event_bus import EventBus
from hostagent.executor import Executor
from hostagent.memory import AgentMemory, WorkingMemory
from hostagent.perception import observe, perceive
from hostagent.planner import Planner
from hostagent.plans import NavigationPlan, PlannedAction, PlannerError
from hostagent.policies.retry import PROTOCOL_CODES, Recovery, RetryPolicy, adjust_params
from hostagent.policies.safety import SafetyPolicy
from hostagent.protocol import ErrorPayload, RelayJoin, SessionEnded, SessionStart, envelope, new_id
from hostagent.relay_client import RelayClient
from hostagent.session_log import SessionLog
from hostagent.transport import Transport
from hostagent.understanding import MAX_UNHELPFUL_ANSWERS, Contact, Understanding, read, topic_of, understand
from hostagent.verifier import Verifier
from shared.errors import LimitExceeded, ModelError

Outcome = Literal["completed", "blocked", "cancelled", "ended", "internal_error", "protocol_error", "connection_lost",
                  "timeout", "no_answer"]
EXIT_CODES: dict[str, int] = {"completed": 0, "blocked": 0, "cancelled": 0, "ended": 0, "internal_error": 1,
                              "protocol_error": 3, "connection_lost": 4, "timeout": 5, "no_answer": 6}
MAX_IDLE_STEPS = 6  # actions in a row without a tool call (messages, snapshots) before the agent gives up


@dataclass(frozen=True)
class AgentConfig:
    url: str
    room: str
    goal: str
    timeout_s: float = 10.0
    """Bound of every wait for a reply, and of the wait for a state update unless ``update_timeout_s``."""
    update_timeout_s: float | None = None
    """Bound of the wait for the ``state.updated`` a successful ``tool.result`` announces (None:
    ``timeout_s``). A host sends it right after the result, so a host that drops it can cost less
    than a reply's bound."""
    question_timeout_s: float = 60.0
    """How long a question to the user waits for a ``user.message`` (never past the session's end)."""
    session_timeout_s: float = 600.0
    """Hard bound of the whole session (``--max-session-s``), closing it included."""
    connect_timeout_s: float = 10.0
    max_frame_bytes: int = 1024 * 1024
    max_actions: int = 60
    max_stage_failures: int = 3
    max_protocol_faults: int = 3
    """Refused frames from the host (malformed, unknown type, wrong version...) that end the session."""
    retry_delay_s: float = 0.0
    """Pause before acting again after a failed call (a transient host failure may clear)."""
    contact: Contact | None = None
    """Who the booking is for, given up front (``--contact "Name <email>"``): the agent need not ask.
    The goal and the user's messages still win over it."""
    max_unhelpful_answers: int = MAX_UNHELPFUL_ANSWERS
    """Answers in a row to the agent's questions that gave nothing usable before it stops as ``blocked``."""


class SessionResult(BaseModel):
    outcome: Outcome
    exit_code: int
    reason: str
    code: str | None = None
    sessionId: str | None = None
    stage: str | None = None
    toolCalls: int = 0
    failures: dict[str, int] = {}
    summary: str | None = None


class _Stop(Exception):
    """Ends the session with an outcome (control flow, raised from deep in the loop). ``tell``: a
    message the user is still to get while the session is closed (the outcome is decided already)."""

    def __init__(self, outcome: Outcome, reason: str, code: str | None = None,
                 tell: NavigationPlan | None = None) -> None:
        super().__init__(reason)
        self.outcome = outcome
        self.reason = reason
        self.code = code
        self.tell = tell


class HostAgent:
    def __init__(self, config: AgentConfig, planner: Planner, log: SessionLog) -> None:
        self.config = config
        self.planner = planner
        self.log = log
        self.memory = AgentMemory(working=WorkingMemory(goal=config.goal, contact=config.contact))
        self.bus = EventBus()
        self.client = RelayClient(Transport(config.url, connect_timeout_s=config.connect_timeout_s,
                                            max_frame_bytes=config.max_frame_bytes), self.bus, log,
                                  max_protocol_faults=config.max_protocol_faults)
        self.executor = Executor(self.client, self.memory, log, config.timeout_s)
        self.verifier = Verifier(self.bus, self.memory, self.executor, log,
                                 config.update_timeout_s if config.update_timeout_s is not None else config.timeout_s)
        self.retry = RetryPolicy(max_stage_failures=config.max_stage_failures)
        self.safety = SafetyPolicy(max_actions=config.max_actions)
        self.summary: str | None = None
        self.deadline = 0.0
        self.close_by = 0.0
        """When the session's loop must stop (monotonic): the hard bound less the closing reserve."""

    # the session ---------------------------------------------------------------------------------
    async def run(self) -> SessionResult:
        cfg = self.config
        self.log.write("session", "session.begin", data={
            "url": cfg.url, "room": cfg.room, "goal": cfg.goal, "planner": self.planner.name,
            "config": {k: v for k, v in asdict(cfg).items() if k not in ("url", "room", "goal")}})
        stop: _Stop
        # The hard bound covers closing too: a question's wait ends a reserve before it (time for
        # _finish to say so and end the session), the loop half a reserve before it.
        reserve = min(cfg.timeout_s, cfg.session_timeout_s / 4)
        self.deadline = time.monotonic() + cfg.session_timeout_s - reserve
        self.close_by = self.deadline + reserve
        try:
            async with asyncio.timeout(cfg.session_timeout_s - reserve / 2):
                stop = await self._session()
        except _Stop as s:
            stop = s
        except TimeoutError:
            stop = _Stop("timeout", f"the session did not finish within {cfg.session_timeout_s:g}s", "SESSION_TIMEOUT")
        except ProtocolViolation as exc:
            stop = _Stop("protocol_error", f"protocol error: {exc.message}", exc.code)
        except ConnectionLost as exc:
            stop = _Stop("connection_lost", exc.message, exc.code)
        except ReplyTimeout as exc:
            stop = _Stop("timeout", exc.message, exc.code)
        except HostError as exc:
            stop = _Stop("protocol_error", f"the host refused the session: {exc.code}: {exc.message}", exc.code)
        except Exception as exc:  # a bug must still end the session and complete the log
            stop = _Stop("internal_error", f"{type(exc).__name__}: {exc}", "INTERNAL")
            self.log.write("error", "internal", code="INTERNAL", reason=stop.reason)
        return await self._finish(stop)

    async def _session(self) -> _Stop:
        cfg, working = self.config, self.memory.working
        await self.client.start()
        working.phase = "CONNECTED"
        await self.client.request(envelope("relay.join", RelayJoin(room=cfg.room, role="agent")),
                                  frozenset({"relay.joined"}), cfg.timeout_s)
        working.phase = "JOINED"
        started = await self.client.request(envelope("session.start", SessionStart(goal=cfg.goal)),
                                            frozenset({"session.started"}), cfg.timeout_s)
        observe(started, self.memory)
        self.log.session_id = working.session_id
        await self.executor.snapshot("initial sync")
        idle = 0
        while True:
            self._take_events()
            if self.client.resync_needed:  # a frame was refused: read the state again before planning
                await self.executor.snapshot("resync after a frame that broke the protocol")
                continue
            if working.awaiting_user:
                await self._wait_for_user()
                continue
            context = perceive(self.memory)
            if len(context.signals.unhelpful) >= cfg.max_unhelpful_answers:
                await self._block_unhelpful(context.signals)
            plan = await self._plan(context)
            if plan is None:
                continue
            action = plan.nextAction
            problems = self.safety.check(action, context, self.memory, in_flight=self.client.in_flight is not None)
            if problems:
                self.log.write("recovery", "plan_rejected", id=plan.planId, code="SAFETY_REJECTED",
                               reason="; ".join(problems), data={"nextAction": action.model_dump()})
                await self._failure(f"the planned action was refused: {problems[0]}")
                continue
            idle = 0 if action.type == "tool.call" else idle + 1
            if idle > MAX_IDLE_STEPS:
                await self._block("I keep planning without acting on the app, so I am stopping here.")
            stop = await self._act(plan, action)
            if stop is not None:
                return stop

    async def _plan(self, context: Any) -> NavigationPlan | None:
        try:
            plan = await self.planner.plan(context, self.memory)
        except LimitExceeded as exc:  # the user's money cap has no room for the planner's call (docs/budgets.md)
            self.log.write("error", "plan", code=exc.code, reason=exc.message)
            why = f"{exc.code}: {exc.message}"
            plan = self._blocked_plan(why, "the user's money budget is reached")
            await self.executor.message(plan, plan.nextAction)
            raise await self._end("blocked", f"blocked: {why}") from exc
        except (PlannerError, ModelError) as exc:
            code = getattr(exc, "code", None) or "PLANNER_FAILED"
            self.log.write("error", "plan", code=code if isinstance(code, str) else "PLANNER_FAILED",
                           reason=str(exc))
            await self._failure(f"planning failed: {exc}")
            return None
        self.memory.working.active_plan = plan
        usage = getattr(self.planner, "usage", None)
        self.log.write("plan", "plan", id=plan.planId, reason=plan.nextAction.reason, data={
            "planner": plan.planner, "operationType": getattr(self.planner, "operation_type", None),
            "confidence": plan.confidence, "remainingSteps": plan.remainingSteps,
            "nextAction": plan.nextAction.model_dump(),
            "usage": usage.model_dump() if isinstance(usage, BaseModel) else None})
        return plan

    async def _act(self, plan: NavigationPlan, action: PlannedAction) -> _Stop | None:
        if action.type == "tool.call":
            await self._tool_step(plan, action)
            return None
        if action.type == "agent.message":
            await self.executor.message(plan, action)
            kind = action.payload.get("kind")
            if kind == "question":
                self.memory.working.awaiting_user = True
            elif kind == "blocked":
                return await self._end("blocked", f"blocked: {action.payload.get('text')}")
            return None
        if action.type == "snapshot.get":
            await self.executor.snapshot(action.reason)
            return None
        if self.memory.working.stage != "confirmation" and perceive(self.memory).signals.cancel:
            return await self._end("cancelled", action.reason)  # the user called it off before booking
        return await self._end("completed", action.reason)

    async def _tool_step(self, plan: NavigationPlan, action: PlannedAction, retry_of: str | None = None) -> None:
        refused = self.bus.refused
        outcome, call = await self.executor.tool_call(plan, action, retry_of=retry_of)
        if outcome.ok:
            verified = await self.verifier.verify(call, action, refused_before=refused)
            if not verified.ok:
                await self._failure(f"{action.tool} led to stage {verified.observed_stage!r}, "
                                    f"not {action.expectedStage!r}")
            return
        code = outcome.code or "TOOL_EXECUTION_FAILED"
        decision = self.retry.decide(code, is_retry=retry_of is not None)
        self.log.write("recovery", decision.value, id=call.id, code=code, reason=outcome.message)
        if decision is Recovery.ABORT:
            raise ProtocolViolation(f"the host answered {action.tool} with {code}: {outcome.message}", code=code)
        stage = self.memory.working.stage
        if self.retry.counts_as_failure(code):
            await self._failure(f"{action.tool} failed with {code}: {outcome.message}")
        if decision is Recovery.RESYNC_REPLAN:
            await self.executor.snapshot(f"resync after {code}")
        elif decision is Recovery.ADJUST_RETRY and self.memory.working.stage == stage:
            current = self.memory.working.current
            tool = current.tool(action.tool) if current is not None and action.tool else None
            params = adjust_params(tool, action.params) if tool is not None else action.params
            retry = action.model_copy(update={
                "payload": {"name": action.tool, "params": params},
                "reason": f"retry once with adjusted params after INVALID_PARAMS ({action.reason})"[:1000]})
            problems = self.safety.check(retry, perceive(self.memory), self.memory, in_flight=False)
            if problems:
                self.log.write("recovery", "plan_rejected", id=call.id, code="SAFETY_REJECTED",
                               reason="; ".join(problems))
                return
            await self._tool_step(plan, retry, retry_of=call.id)
        elif self.config.retry_delay_s > 0:
            await asyncio.sleep(self.config.retry_delay_s)

    async def _failure(self, why: str) -> None:
        """Count a failure on the current stage; at the limit tell the user and stop (raises _Stop)."""
        stage = self.memory.working.stage
        count = self.memory.fail_on_stage(stage)
        if self.retry.blocked(count):
            await self._block(f"{count} attempts failed on the {stage} screen; the last: {why}")

    def _blocked_plan(self, why: str, reason: str) -> NavigationPlan:
        """The policy's plan telling the user why the agent stops (logged as the ``block`` recovery)."""
        text = f"I am stopping without finishing: {why}"
        plan = NavigationPlan(planId=new_id("plan"), planner="policy", goal=self.config.goal,
                              currentStage=self.memory.working.stage, remainingSteps=[], confidence=1.0,
                              nextAction=PlannedAction(type="agent.message", reason=reason,
                                                       payload={"text": text[:4000], "kind": "blocked"}))
        self.log.write("recovery", "block", id=plan.planId, code="BLOCKED", reason=why)
        return plan

    async def _block(self, why: str) -> None:
        plan = self._blocked_plan(why, "retry policy: too many failures")
        await self.executor.message(plan, plan.nextAction)
        raise await self._end("blocked", f"blocked: {why}")

    async def _block_unhelpful(self, understood: Understanding) -> None:
        """The user's answers did not help ``max_unhelpful_answers`` times in a row: say so (quoting
        them and what was understood), log the answers and the clarifying questions, stop."""
        working = self.memory.working
        answers = list(understood.unhelpful)
        asked = working.questions[-len(answers):]
        quoted = ", ".join(f'"{a[:80]}"' for a in answers)
        have = f"; so far I have {understood.known_contact()}" if any(
            topic_of(q) in ("contact", "name", "email") for q in asked) else ""
        why = f"{len(answers)} answers in a row did not give me what I asked for ({quoted}){have}"
        self.log.write("recovery", "unhelpful_answers", code="UNHELPFUL_ANSWERS", reason=why,
                       data={"answers": answers, "questions": asked, "understood": understood.summary()})
        plan = self._blocked_plan(why, "the user's answers did not help")
        await self.executor.message(plan, plan.nextAction)
        raise await self._end("blocked", f"blocked: {why}")

    async def _end(self, outcome: Outcome, reason: str) -> _Stop:
        ended = await self.executor.end(reason)
        self.summary = ended.body(SessionEnded).summary
        self.memory.working.phase = "DISCONNECTED"
        return _Stop(outcome, reason)

    async def _wait_for_user(self) -> None:
        """Wait for the user's answer, at most ``question_timeout_s`` and never past the session's
        end; without one: ``blocked`` message, ``session.end``, outcome ``no_answer`` (exit 6)."""
        bound = max(0.0, min(self.config.question_timeout_s, self.deadline - time.monotonic()))
        refused = self.bus.refused
        event = await self.bus.next(timeout=bound, refused_before=refused)
        if event is None and self.bus.refused > refused:
            return  # a refused frame: the loop resyncs, then waits again
        if event is None:
            # The outcome is decided here; _finish tells the user and ends the session within the
            # session's bound, so a slow close cannot turn it into a timeout.
            self.memory.working.awaiting_user = False
            seconds = f"{bound:.1f}".rstrip("0").rstrip(".")  # 60, 0.5, 3.7: what a person reads
            why = f"no answer to my question within {seconds}s"
            raise _Stop("no_answer", f"blocked: {why}", tell=self._blocked_plan(why, "the question went unanswered"))
        self._observe(event)

    def _take_events(self) -> None:
        for event in self.bus.drain():
            self._observe(event)

    def _observe(self, event: Any) -> None:
        seen = observe(event, self.memory)
        self.log.stage = self.memory.working.stage
        if seen == "stale":
            self.log.write("verification", "state.updated", id=event.id, outcome="stale",
                           reason=f"caused by {event.payload.get('cause')}, older than the state already known")
        elif event.type == "session.ended":
            self.summary = event.body(SessionEnded).summary
            self.memory.working.phase = "DISCONNECTED"
            raise _Stop("ended", "the host ended the session")
        elif event.type == "error":
            body = event.body(ErrorPayload)
            if event.replyTo is None and body.code in PROTOCOL_CODES:
                raise ProtocolViolation(f"the host reported {body.code}: {body.message}", code=body.code)
            self.log.write("note", "error", id=event.id, code=body.code, reason="an error for no pending request "
                           f"(late or unsolicited), ignored: {body.message}")
        elif seen == "ignored":
            self.log.write("note", event.type, id=event.id, reply_to=event.replyTo,
                           reason="late or unsolicited, ignored")
        elif seen == "message":
            self._log_reading(event.id)

    def _log_reading(self, message_id: str) -> None:
        """What the agent understood from the user's message (and from everything said so far)."""
        working = self.memory.working
        turn = working.turns[-1]
        understood = understand(working.goal, working.turns, contact=working.contact, titles=working.titles)
        reading = understood.last or read(turn.text)
        # An answer helped when it left no unhelpful streak ("yes" to a quoted guess helps in context).
        usable = not understood.unhelpful if turn.question is not None else reading.usable
        self.log.write("note", "user.reading", id=message_id, outcome="usable" if usable else "unusable",
                       reason=f"the answer to: {turn.question}" if turn.question else "said unasked",
                       data={"question": turn.question, "reading": reading.model_dump(exclude_defaults=True),
                             "understood": understood.summary()})

    async def _finish(self, stop: _Stop) -> SessionResult:
        working = self.memory.working
        if working.session_id is not None and working.phase not in ("DISCONNECTED", "TERMINATING") \
                and self.client.transport.is_open:
            # End the session with the host too, so both sides agree it is over.
            with contextlib.suppress(HostAgentError, RuntimeError, TimeoutError):
                async with asyncio.timeout(max(0.0, min(self.config.timeout_s, self.close_by - time.monotonic()))):
                    if stop.tell is not None:
                        await self.executor.message(stop.tell, stop.tell.nextAction)
                    await self._end(stop.outcome, stop.reason)
        await self.client.close()
        result = SessionResult(outcome=stop.outcome, exit_code=EXIT_CODES[stop.outcome], reason=stop.reason,
                               code=stop.code, sessionId=working.session_id, stage=working.stage,
                               toolCalls=self.memory.actions_sent, failures=dict(self.memory.failures),
                               summary=self.summary)
        usage = getattr(self.planner, "usage", None)
        self.log.write("session", "session.finish", outcome=stop.outcome, code=stop.code, reason=stop.reason,
                       data={**result.model_dump(exclude={"outcome", "code", "reason"}),
                             "usage": usage.model_dump() if isinstance(usage, BaseModel) else None})
        self.log.close()
        return result
