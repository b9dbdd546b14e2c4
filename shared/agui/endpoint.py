"""``POST /api/agent/agui``: start or resume a run from a ``RunAgentInput`` and answer its AG-UI
event stream (Server-Sent Events, each frame ``id: <start>:<seq>:<n>``, data through the official
``ag_ui.encoder.EventEncoder``).

One AG-UI run is a range of the durable run's event log (``translate.py``): a new run from its
first event to its first stop; a resumed one from the pause its ``resume`` entries answer to the
next stop. A new run is streamed live from this instance; a resumed one is followed in the store,
so whichever instance the resume message reached executes it. A reconnect (the same input with
``Last-Event-ID``) starts or decides nothing again: the range is read again from its start and the
frames up to that id are skipped (no gap, no duplicate).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ag_ui.core import (
    BaseEvent,
    Interrupt,
    RunErrorEvent,
    RunFinishedCancelledOutcome,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunStartedEvent,
)
from ag_ui.encoder import EventEncoder

from shared.agent.approvals import decide
from shared.agent.streaming import live_events, replay_events
from shared.agui.inputs import AguiRequest
from shared.agui.translate import ApprovalInfo, Translator
from shared.api import ApproveRequest
from shared.errors import Conflict, InvalidInput, NotFound, Unprocessable
from shared.loop.client_tools import CLIENT_REASON
from shared.wire import rfc3339

if TYPE_CHECKING:
    from shared.runtime import Runtime

Position = tuple[int, int, int]
"""``(start, seq, n)``: the range's start, and the frame's place in it (``translate.Frame``)."""

_encoder = EventEncoder()


def parse_last_event_id(value: str | None) -> Position | None:
    """``Last-Event-ID`` of an AG-UI stream (``<start>:<seq>:<n>``); a 400 when it is not one."""
    if value is None or not value.strip():
        return None
    parts = value.strip().split(":")
    if len(parts) != 3 or not all(p.isascii() and p.isdigit() and len(p) <= 18 for p in parts):
        raise InvalidInput("header Last-Event-ID must be the id of an AG-UI event of this endpoint "
                           "(<start>:<seq>:<n>)", code="INVALID_LAST_EVENT_ID", details={"field": "Last-Event-ID"})
    return int(parts[0]), int(parts[1]), int(parts[2])


def agui_stream(rt: Runtime, uid: str, req: AguiRequest, *, idempotency_key: str | None,
                last_event_id: str | None) -> Iterator[bytes]:
    """Start the run (or record the decisions) now, so that refusals are plain 4xx JSON; then the
    stream's frames."""
    after = parse_last_event_id(last_event_id)
    if req.run is not None:
        try:
            started = rt.agent.start(uid, req.run, idempotency_key=idempotency_key or f"agui:{req.input.run_id}")
        except Unprocessable as exc:
            if idempotency_key or exc.code != "IDEMPOTENCY_KEY_REUSED":
                raise
            # The key is the runId (the client sent none): say so, not "this Idempotency-Key".
            raise Unprocessable(f"runId {req.input.run_id} was already used with a different input (within 24 h); "
                                "send a new runId for a new run (the same input again reads the same run)",
                                code="IDEMPOTENCY_KEY_REUSED", details={**exc.details, "field": "runId"}) from None
        run_id, start = started.outcome.snapshot.run.run_id, 0
        if started.outcome.created:
            events: Iterator[dict[str, Any]] = live_events(rt.agent.context(started), started.first_events,
                                                          lambda: rt.sessions)
        else:
            start = after[0] if after else 0
            events = _follow(rt, run_id, start)
    else:
        if req.tool_results:
            req = _answers(rt, uid, req)
        run_id, start = _resume(rt, uid, req, reconnect=after is not None)
        if after is not None:
            start = after[0]
        events = _follow(rt, run_id, start)
    return _frames(rt, uid, req, run_id, start, events, after)


def _follow(rt: Runtime, run_id: str, start: int) -> Iterator[dict[str, Any]]:
    return replay_events(rt.runs, run_id, start, follow=True, max_wait_s=max(rt.settings.run_deadline_s,
                                                                             rt.settings.follow_max_wait_s),
                         heartbeat_s=rt.settings.heartbeat_s, sessions=lambda: rt.sessions)


def _answers(rt: Runtime, uid: str, req: AguiRequest) -> AguiRequest:
    """Client tools' results as the decisions they are: each answers the approval of the call it
    names (``toolCallId`` = the action id) in the thread's paused run."""
    thread = rt.runs.get_thread(uid, req.input.thread_id)
    snap = rt.runs.get_run(thread.active_run_id) if thread is not None and thread.active_run_id else None
    actions = {a.action_id: a for a in rt.runs.list_actions(snap.run.run_id)} if snap is not None else {}
    decisions = []
    for call_id in req.tool_results:
        action = actions.get(call_id)
        if action is None or action.approval_id is None:
            raise InvalidInput(f"no call {call_id} of a client tool waits in thread {req.input.thread_id}",
                               code="INVALID_REQUEST",
                               details={"errors": [{"field": "messages", "message": f"toolCallId {call_id} is not "
                                                                                   "a pending call of a client tool"}]})
        decisions.append(ApproveRequest(approvalId=action.approval_id, decision="approve"))
    return replace(req, decisions=decisions)


def _resume(rt: Runtime, uid: str, req: AguiRequest, *, reconnect: bool) -> tuple[str, int]:
    """Decide every ``resume`` entry (one run's approvals) through the approvals path; the run and
    the seq of the pause they answer (the resumed AG-UI run reads on from there)."""
    run_ids = set()
    for d in req.decisions:
        got = rt.runs.get_approval(uid, d.approvalId)
        if got is None:
            raise NotFound(f"interrupt {d.approvalId} not found", code="APPROVAL_NOT_FOUND")
        run_ids.add(got[0].run_id)
    if len(run_ids) != 1:
        raise InvalidInput("the resume entries answer interrupts of different runs", code="INVALID_REQUEST",
                           details={"errors": [{"field": "resume", "message": "interrupts of one run only"}]})
    run_id = run_ids.pop()
    start = _pause_seq(rt, run_id, {d.approvalId for d in req.decisions})
    if not reconnect:
        results = {}
        if req.tool_results:
            actions = {a.approval_id: a.action_id for a in rt.runs.list_actions(run_id) if a.approval_id}
            results = {approval_id: req.tool_results[call_id] for approval_id, call_id in actions.items()
                       if call_id in req.tool_results}
        for d in req.decisions:
            try:
                decide(rt.services, rt.dispatcher, uid, d, client_result=results.get(d.approvalId))
            except Conflict as exc:  # the same input again (a retry): decided already, read on
                if exc.code != "ALREADY_DECIDED":
                    raise
    return run_id, start


def _pause_seq(rt: Runtime, run_id: str, approval_ids: set[str]) -> int:
    """The seq of the event that paused the run for these approvals (a ``result`` awaiting them, or
    a plan act's ``stream_end`` after its ``approval_required``)."""
    for ev in rt.runs.list_events(run_id):
        if ev["type"] == "result" and ev["result"]["status"] == "awaiting_confirmation":
            named = {a.get("approvalId") or a.get("id") for a in ev["result"].get("approvals")
                     or [ev["result"].get("approval") or {}]}
            if named & approval_ids:
                return int(ev["seq"])
        if ev["type"] == "approval_required" and ev["approvalId"] in approval_ids:
            return int(ev["seq"])
    raise Conflict("the run has no pause for these interrupts", code="APPROVAL_CLOSED")


def _frames(rt: Runtime, uid: str, req: AguiRequest, run_id: str, start: int, events: Iterator[dict[str, Any]],
            after: Position | None) -> Iterator[bytes]:
    thread, agui_run = req.input.thread_id, req.input.run_id
    actions: dict[str, Any] = {}

    def call_args(action_id: str, executed: bool) -> dict[str, Any]:
        if action_id not in actions:
            actions.update({a.action_id: a for a in rt.runs.list_actions(run_id)})
        action = actions.get(action_id)
        if action is None:
            return {}
        return dict(action.args if executed or action.original_args is None else action.original_args)

    def approval_info(approval_id: str) -> ApprovalInfo:
        got = rt.runs.get_approval(uid, approval_id)
        if got is None:
            return ApprovalInfo(action_id=None)
        approval = got[0]
        tool = rt.services.registry_for(uid).get(approval.tool)
        schema: dict[str, Any] = {"type": "object", "properties": {
            "approved": {"type": "boolean", "description": "false rejects the call"},
            "reason": {"type": "string", "maxLength": 2000}}, "additionalProperties": False}
        if tool is not None and not tool.host:
            schema["properties"]["arguments"] = {**tool.declaration().parameters,
                                                 "description": "approve with these arguments instead"}
        return ApprovalInfo(action_id=approval.action_id, expires_at=rfc3339(approval.expires_at),
                            response_schema=schema, client=approval.reason == CLIENT_REASON)

    usage_before: dict[str, int] = {}
    if start:
        for ev in rt.runs.list_events(run_id, limit=None):
            if int(ev["seq"]) > start:
                break
            if ev["type"] == "usage":
                usage_before = dict(ev["usage"])
    snap = rt.runs.get_run(run_id)
    translator = Translator(thread_id=thread, run_id=agui_run, call_args=call_args, approval_info=approval_info,
                            usage_before=usage_before,
                            client_tools=frozenset(t["name"] for t in snap.run.client_tools) if snap else frozenset())

    def frame(seq: int, n: int, event: BaseEvent) -> bytes | None:
        if after is not None and (seq, n) <= (after[1], after[2]):
            return None
        if event.timestamp is None:
            event.timestamp = int(time.time() * 1000)
        return f"id: {start}:{seq}:{n}\n".encode() + _encoder.encode(event).encode()

    def stream() -> Iterator[bytes]:
        first = frame(start, 0, RunStartedEvent(thread_id=thread, run_id=agui_run, protocol_version="1.0",
                                                metadata={"agentRuntime": {"runId": run_id}}))
        if first is not None:
            yield first
        last = start
        for ev in events:
            if "seq" not in ev:  # a heartbeat: keeps the connection
                yield b": heartbeat\n\n"
                continue
            last = max(last, int(ev["seq"]))
            for seq, n, event in translator.feed(ev):
                if (out := frame(seq, n, event)) is not None:
                    yield out
            if translator.finished:
                return
        for n, event in enumerate([*translator.close(), _stop(rt, uid, translator, run_id, approval_info)], start=1):
            if (out := frame(last, 1000 + n, event)) is not None:
                yield out

    return stream()


def _stop(rt: Runtime, uid: str, translator: Translator, run_id: str, info: Any) -> BaseEvent:
    """How a range that ended without a stop event ends: the run's own state says it."""
    snap = rt.runs.get_run(run_id)
    run = snap.run if snap is not None else None
    if run is not None and run.status == "awaiting_confirmation" and run.pending_approval_ids:
        pending = []
        for approval_id in run.pending_approval_ids:
            got = rt.runs.get_approval(uid, approval_id)
            if got is not None and got[0].status == "pending":
                a: ApprovalInfo = info(approval_id)
                pending.append(Interrupt(id=approval_id, reason=got[0].reason, message=got[0].preview,
                                         expires_at=a.expires_at, response_schema=a.response_schema))
        if pending:
            return RunFinishedEvent(thread_id=translator.thread_id, run_id=translator.run_id,
                                    outcome=RunFinishedInterruptOutcome(interrupts=pending))
    if run is not None and run.status == "completed":
        return RunFinishedEvent(thread_id=translator.thread_id, run_id=translator.run_id)
    if run is not None and run.status == "cancelled":
        return RunFinishedEvent(thread_id=translator.thread_id, run_id=translator.run_id,
                                outcome=RunFinishedCancelledOutcome())
    if run is not None and run.terminal:
        return RunErrorEvent(message=run.error.message if run.error else f"the run ended {run.status}",
                             code=run.error.code if run.error else run.status.upper())
    return RunErrorEvent(message="the stream's time is spent while the run goes on; POST the same input again "
                                 "with Last-Event-ID to follow it", code="STREAM_TIME_SPENT")
