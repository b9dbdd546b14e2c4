"""A run's events (docs/event-protocol.md) as AG-UI events, deterministically.

One AG-UI run is a range of the run's event log: from its start (or from the pause it resumes) to
its next stop. The translation is a pure function of that range (message ids are derived from
``seq``, tool call ids are action ids), so a client that reconnects with ``Last-Event-ID`` gets
exactly the frames after the one it saw: the range is translated again and the frames up to that
id are skipped. Each frame is named ``(seq, n)``: the run event it came from and its place among
that event's AG-UI events.

- text (``delta``) is ``TEXT_MESSAGE_START/CONTENT/END``; thoughts (``thought_delta``) are
  ``REASONING_START``, ``REASONING_MESSAGE_START/CONTENT/END``, ``REASONING_END``;
- a call (``tool_call``) is ``TOOL_CALL_START/ARGS/END`` (the arguments the model gave; an edited
  approval's executed call shows the edited ones), its end (``tool_result``) ``TOOL_CALL_RESULT``;
- a plan (``plan_created``) is a ``STATE_SNAPSHOT`` ``{"plan": ...}`` of the one plan shape, then
  ``STATE_DELTA`` JSON Patches as its steps start and end and as it changes;
- the stop: ``result`` completed is ``RUN_FINISHED`` (success, the range's token usage), a pause
  for approval ``RUN_FINISHED`` with an interrupt per approval (``id`` = approvalId, ``toolCallId``,
  ``reason``, ``expiresAt``, the payload's schema), ``error`` is ``RUN_ERROR``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ag_ui.core import (
    BaseEvent,
    Interrupt,
    ReasoningEndEvent,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessageStartEvent,
    ReasoningStartEvent,
    RunErrorEvent,
    RunFinishedCancelledOutcome,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    StateDeltaEvent,
    StateSnapshotEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    TokenUsage,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)

Frame = tuple[int, int, BaseEvent]
"""``(seq, n, event)``: the n-th AG-UI event made of the run event ``seq``."""


@dataclass(frozen=True)
class ApprovalInfo:
    """What the log's events leave out of an approval: its call, its expiry and the payload's schema."""

    action_id: str | None
    expires_at: str | None = None
    response_schema: dict[str, Any] | None = None
    client: bool = False
    """The call is a client tool's: the client answers it (pendingToolCallIds), nobody approves it."""


@dataclass
class Translator:
    """Translates one AG-UI run's range of the event log. ``call_args(actionId, executed)`` gives a
    call's arguments (``executed``: as it runs, with an approval's edits; else as the model made
    them), ``approval_info(approvalId)`` what an interrupt says of an approval; ``usage_before`` is
    the run's token usage when the range began (an AG-UI run reports only its own calls)."""

    thread_id: str
    run_id: str
    call_args: Callable[[str, bool], dict[str, Any]]
    approval_info: Callable[[str], ApprovalInfo]
    usage_before: dict[str, int] = field(default_factory=dict)
    client_tools: frozenset[str] = frozenset()
    """The run's client tools: their calls are the client's to answer (announced once, when the run
    stops on them; their execution with the client's result is not the client's news)."""
    model: str = ""
    _text: str | None = None
    _reasoning: str | None = None
    _plan: dict[str, Any] | None = None
    _usage: dict[str, int] | None = None
    _announced: set[str] = field(default_factory=set)
    _plan_wait: tuple[str, str, str] | None = None
    finished: bool = False

    def feed(self, ev: dict[str, Any]) -> Iterator[Frame]:
        """The AG-UI events of one run event (none for those AG-UI has no word for)."""
        seq, kind = int(ev.get("seq", 0)), ev.get("type")
        out: list[BaseEvent] = []
        if kind != "delta":
            out += self._close_text()
        if kind != "thought_delta":
            out += self._close_reasoning()
        handler = getattr(self, f"_on_{kind}", None)
        if handler is not None:
            out += handler(ev)
        now = int(time.time() * 1000)
        for n, event in enumerate(out):
            if event.timestamp is None:
                event.timestamp = now
            yield seq, n, event

    # ---- text and thoughts -------------------------------------------------------------------
    def _on_delta(self, ev: dict[str, Any]) -> list[BaseEvent]:
        if not ev.get("delta"):
            return []
        out: list[BaseEvent] = []
        if self._text is None:
            self._text = f"msg-{self.run_id}-{ev['seq']}"
            out.append(TextMessageStartEvent(message_id=self._text, role="assistant"))
        out.append(TextMessageContentEvent(message_id=self._text, delta=ev["delta"]))
        return out

    def _on_thought_delta(self, ev: dict[str, Any]) -> list[BaseEvent]:
        if not ev.get("delta"):
            return []
        out: list[BaseEvent] = []
        if self._reasoning is None:
            self._reasoning = f"reasoning-{self.run_id}-{ev['seq']}"
            out += [ReasoningStartEvent(message_id=self._reasoning),
                    ReasoningMessageStartEvent(message_id=self._reasoning)]
        out.append(ReasoningMessageContentEvent(message_id=self._reasoning, delta=ev["delta"]))
        return out

    def _close_text(self) -> list[BaseEvent]:
        if self._text is None:
            return []
        done, self._text = self._text, None
        return [TextMessageEndEvent(message_id=done)]

    def _close_reasoning(self) -> list[BaseEvent]:
        if self._reasoning is None:
            return []
        done, self._reasoning = self._reasoning, None
        return [ReasoningMessageEndEvent(message_id=done), ReasoningEndEvent(message_id=done)]

    # ---- tool calls ----------------------------------------------------------------------------
    def _on_tool_call(self, ev: dict[str, Any]) -> list[BaseEvent]:
        call_id = ev["actionId"]
        if call_id in self._announced or (ev["toolName"] in self.client_tools and ev["status"] == "executing"):
            return []
        self._announced.add(call_id)
        args = ev.get("args")
        if not isinstance(args, dict):  # a log written before tool_call carried its arguments
            args = self.call_args(call_id, ev.get("status") == "executing")
        return [ToolCallStartEvent(tool_call_id=call_id, tool_call_name=ev["toolName"]),
                ToolCallArgsEvent(tool_call_id=call_id, delta=json.dumps(args, ensure_ascii=False)),
                ToolCallEndEvent(tool_call_id=call_id)]

    def _on_tool_result(self, ev: dict[str, Any]) -> list[BaseEvent]:
        call_id = ev["actionId"]
        if ev["toolName"] in self.client_tools and call_id not in self._announced:
            return []  # the client's own result, answered in its messages
        out = [] if call_id in self._announced else self._on_tool_call({**ev, "toolName": ev["toolName"]})
        body = ev.get("output") if ev["status"] == "completed" else {"error": ev.get("error") or ev["status"],
                                                                       "status": ev["status"]}
        out.append(ToolCallResultEvent(message_id=f"result-{call_id}", tool_call_id=call_id, role="tool",
                                       content=json.dumps(body if body is not None else {}, ensure_ascii=False)))
        return out

    # ---- plans: shared state -------------------------------------------------------------------
    def _on_plan_created(self, ev: dict[str, Any]) -> list[BaseEvent]:
        self._plan = {"planId": ev["planId"], **ev["plan"]}
        return [StateSnapshotEvent(snapshot={"plan": self._plan})]

    def _on_plan_ready_for_review(self, ev: dict[str, Any]) -> list[BaseEvent]:
        return self._replace_plan(ev)

    def _on_plan_updated(self, ev: dict[str, Any]) -> list[BaseEvent]:
        return self._replace_plan(ev)

    def _replace_plan(self, ev: dict[str, Any]) -> list[BaseEvent]:
        plan = {"planId": ev["planId"], **ev["plan"]}
        if self._plan is None:
            self._plan = plan
            return [StateSnapshotEvent(snapshot={"plan": plan})]
        self._plan = plan
        return [StateDeltaEvent(delta=[{"op": "replace", "path": "/plan", "value": plan}])]

    def _task_status(self, step_id: str, status: str) -> list[BaseEvent]:
        if self._plan is None:
            return []
        for i, task in enumerate(self._plan.get("tasks", [])):
            if task.get("taskId") == step_id:
                task["status"] = status
                return [StateDeltaEvent(delta=[{"op": "replace", "path": f"/plan/tasks/{i}/status", "value": status}])]
        return []

    def _on_step_start(self, ev: dict[str, Any]) -> list[BaseEvent]:
        return self._task_status(ev["stepId"], "in_progress")

    def _on_step_complete(self, ev: dict[str, Any]) -> list[BaseEvent]:
        return self._task_status(ev["stepId"], ev["status"])

    # ---- the stop --------------------------------------------------------------------------------
    def _on_usage(self, ev: dict[str, Any]) -> list[BaseEvent]:
        self._usage = dict(ev["usage"])
        return []

    def _token_usage(self) -> list[TokenUsage] | None:
        if self._usage is None:
            return None
        spent = {k: int(self._usage.get(k, 0)) - int(self.usage_before.get(k, 0))
                 for k in ("inputTokens", "outputTokens", "thinkingTokens")}
        output = spent["outputTokens"] + spent["thinkingTokens"]
        return [TokenUsage(provider="google", model=self.model or None, input_tokens=max(0, spent["inputTokens"]),
                           output_tokens=max(0, output), reasoning_tokens=max(0, spent["thinkingTokens"]),
                           total_tokens=max(0, spent["inputTokens"] + output))]

    def _on_result(self, ev: dict[str, Any]) -> list[BaseEvent]:
        result = ev["result"]
        self.model = self.model or result.get("model", "")
        if result["status"] == "awaiting_confirmation":
            approvals = result.get("approvals") or ([result["approval"]] if result.get("approval") else [])
            infos = {a["approvalId"]: self.approval_info(a["approvalId"]) for a in approvals}
            asked = [a for a in approvals if not infos[a["approvalId"]].client]
            if asked:
                return [self._interrupted([(a["approvalId"], a["reason"], a["preview"]) for a in asked])]
            if approvals:  # only the client's tools wait: a completed AG-UI run that left them to the client
                self.finished = True
                pending = [i.action_id for i in infos.values() if i.action_id]
                return [RunFinishedEvent(thread_id=self.thread_id, run_id=self.run_id,
                                         outcome=RunFinishedSuccessOutcome(pending_tool_call_ids=pending),
                                         usage=self._token_usage())]
        if result["status"] == "cancelled":  # stopped by whoever ran it (run control), not failed
            self.finished = True
            return [RunFinishedEvent(thread_id=self.thread_id, run_id=self.run_id,
                                     outcome=RunFinishedCancelledOutcome(), usage=self._token_usage())]
        if result["status"] in ("failed", "rejected", "deadline_exceeded"):
            self.finished = True
            error = result.get("error") or {}
            return [RunErrorEvent(message=error.get("message") or f"the run ended {result['status']}",
                                  code=error.get("code") or result["status"].upper(), usage=self._token_usage())]
        if result["status"] != "completed":
            return []
        self.finished = True
        return [RunFinishedEvent(thread_id=self.thread_id, run_id=self.run_id, result=result.get("summary") or None,
                                 outcome=RunFinishedSuccessOutcome(), usage=self._token_usage())]

    def _on_approval_required(self, ev: dict[str, Any]) -> list[BaseEvent]:
        # A plan act waits: remembered; the stream's end (stream_end plan_awaiting_approval) stops the run.
        self._plan_wait = (ev["approvalId"], ev.get("reason", ""), ev.get("preview", ""))
        return []

    def _on_stream_end(self, ev: dict[str, Any]) -> list[BaseEvent]:
        if ev["reason"] == "plan_awaiting_approval" and self._plan_wait is not None:
            return [self._interrupted([self._plan_wait])]
        if ev["reason"] in ("awaiting_approval", "run_ended"):
            return []
        self.finished = True
        return [RunErrorEvent(message="the stream's time is spent while the run goes on; reconnect with "
                                      "Last-Event-ID to follow it", code="STREAM_TIME_SPENT")]

    def _interrupted(self, waits: list[tuple[str, str, str]]) -> RunFinishedEvent:
        self.finished = True
        interrupts = []
        for approval_id, reason, preview in waits:
            info = self.approval_info(approval_id)
            call_id = info.action_id if info.action_id in self._announced else None
            interrupts.append(Interrupt(id=approval_id, reason=reason or "approval required", message=preview,
                                        tool_call_id=call_id, expires_at=info.expires_at,
                                        response_schema=info.response_schema))
        return RunFinishedEvent(thread_id=self.thread_id, run_id=self.run_id,
                                outcome=RunFinishedInterruptOutcome(interrupts=interrupts), usage=self._token_usage())

    def _on_error(self, ev: dict[str, Any]) -> list[BaseEvent]:
        self.finished = True
        return [RunErrorEvent(message=ev.get("error") or "the run failed", code=ev.get("code"),
                              usage=self._token_usage())]

    def close(self) -> list[BaseEvent]:
        """What ends a range that stopped without a stop event (the events closed before it)."""
        return [*self._close_text(), *self._close_reasoning()]
