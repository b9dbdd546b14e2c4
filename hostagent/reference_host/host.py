"""The reference host's protocol side: one ``MovieHost`` per room answers the agent's envelopes.

``handle(envelope)`` returns the frames to send, in order (``Out``); the server sends them. A frame
marked ``hold`` is kept back until the agent's next message has been answered (the delayed
``state.updated`` fault); ``close`` closes the connection instead of answering.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hostagent.hosting import Refusal
from hostagent.protocol import (
    AgentMessage,
    ChatMessage,
    Envelope,
    ErrorPayload,
    SessionEnded,
    SessionStart,
    SessionStarted,
    SnapshotState,
    StateUpdated,
    ToolCall,
    ToolResult,
    ToolSpec,
    UserMessage,
    envelope,
)
from hostagent.reference_host.booking import Booking
from hostagent.reference_host.faults import Fault
from hostagent.schemas import check_outbound

DEFAULT_PROFILE = ("Ada Lovelace", "ada@example.com")


@dataclass(frozen=True)
class Out:
    text: str | bytes | None = None
    hold: bool = False
    close: bool = False


class MovieHost:
    def __init__(self, faults: Sequence[Fault] = (), *, user_profile: tuple[str, str] | None = DEFAULT_PROFILE,
                 user_answers: Sequence[str | Sequence[str]] | None = None) -> None:
        self.faults = list(faults)
        self.user_profile = user_profile
        self.user_answers = list(user_answers) if user_answers is not None else None
        """When given, the simulated user answers each question with the next of these (a text, or
        several texts sent as messages one after the other), in order, and says nothing once they run
        out (instead of the profile's sentence)."""
        self.booking = Booking()
        self.session_id: str | None = None
        self.active = False
        self.ended = False
        self.goal: str | None = None
        self.messages: list[ChatMessage] = []
        self.calls: list[ToolCall] = []
        self._schema_changed = False

    # frames ----------------------------------------------------------------------------------
    def _send(self, type_: str, payload: Any, reply_to: str | None = None) -> Out:
        env = envelope(type_, payload, id_prefix="h", reply_to=reply_to, session_id=self.session_id)
        return Out(json.dumps(check_outbound(env)))

    def _error(self, code: str, message: str, reply_to: str | None) -> Out:
        return self._send("error", ErrorPayload(code=code, message=message), reply_to)

    def _tools(self) -> list[ToolSpec]:
        return [ToolSpec.model_validate(t) for t in self.booking.tools()]

    def _state(self, cause: str | None) -> StateUpdated:
        return StateUpdated(stage=self.booking.stage, uiSpec=self.booking.ui_spec(), toolSchema=self._tools(),
                            cause=cause)

    def _fault(self, kind: str, tool: str) -> Fault | None:
        for fault in self.faults:
            if fault.kind == kind and fault.matches(tool):
                fault.fire()
                return fault
        return None

    # protocol --------------------------------------------------------------------------------
    def handle(self, env: Envelope) -> list[Out]:
        if env.type == "session.start":
            if self.active or self.ended:
                return [self._error("INVALID_MESSAGE", "a session was already started on this connection", env.id)]
            self.active = True
            self.session_id = f"sess-{env.id}"
            self.goal = env.body(SessionStart).goal
            if self.goal:
                self.messages.append(ChatMessage(role="user", text=self.goal, stage=self.booking.stage))
            return [self._send("session.started", SessionStarted(sessionId=self.session_id, stage=self.booking.stage),
                               env.id)]
        if not self.active:
            return [self._error("SESSION_NOT_ACTIVE", f"no active session for {env.type}", env.id)]
        if env.type == "snapshot.get":
            return [self._send("snapshot.state", SnapshotState(
                stage=self.booking.stage, uiSpec=self.booking.ui_spec(), toolSchema=self._tools(),
                messages=self.messages[-30:]), env.id)]
        if env.type == "agent.message":
            return self._agent_message(env.body(AgentMessage))
        if env.type == "session.end":
            self.active, self.ended = False, True
            assert self.session_id is not None
            return [self._send("session.ended", SessionEnded(sessionId=self.session_id,
                                                             summary=self.booking.summary()), env.id)]
        if env.type == "tool.call":
            return self._tool_call(env)
        return [self._error("INVALID_MESSAGE", f"a host does not accept {env.type}", env.id)]

    def _agent_message(self, message: AgentMessage) -> list[Out]:
        self.messages.append(ChatMessage(role="agent", text=message.text, stage=self.booking.stage))
        if message.kind != "question":
            return []
        if self.user_answers is not None:  # a scripted person: the next answer, or silence
            if not self.user_answers:
                return []
            answer = self.user_answers.pop(0)
            texts = [answer] if isinstance(answer, str) else list(answer)
        elif self.user_profile is None:
            return []
        else:  # the simulated user answers questions with their profile
            name, email = self.user_profile
            texts = [f"My name is {name} and my email is {email}."]
        self.messages += [ChatMessage(role="user", text=text, stage=self.booking.stage) for text in texts]
        return [self._send("user.message", UserMessage(text=text, stage=self.booking.stage)) for text in texts]

    def _tool_call(self, env: Envelope) -> list[Out]:
        call = env.body(ToolCall)
        self.calls.append(call)
        if self._fault("close_mid_call", call.name):
            return [Out(close=True)]
        if self._schema_changed:
            self._schema_changed = False
            if self._fault("unknown_tool_after_schema_change", self.booking.stage):
                return [self._error("UNKNOWN_TOOL", f"{call.name!r} is not available (the screen changed)", env.id)]
        if self._fault("invalid_params_first", call.name):
            return [self._error("INVALID_PARAMS", f"{call.name}: parameters rejected on first attempt", env.id)]
        if self._fault("tool_execution_failed", call.name):
            return [self._error("TOOL_EXECUTION_FAILED", f"{call.name}: the booking service is unavailable", env.id)]
        before = self.booking.stage
        try:
            result = self.booking.call(call.name, call.params)
        except Refusal as failure:
            return [self._error(failure.code, failure.message, env.id)]
        if self.booking.stage != before:
            self._schema_changed = True
        injected = self._fault("injected_text", call.name)
        if injected is not None:
            result = {**result, "notice": injected.text}
        return [*self._result(env, call, result), *self._after(env, call, banner=injected.text if injected else None)]

    def _result(self, env: Envelope, call: ToolCall, result: dict[str, Any]) -> list[Out]:
        reply = envelope("tool.result", ToolResult(name=call.name, ok=True, result=result), id_prefix="h",
                         reply_to=env.id, session_id=self.session_id)
        wire = check_outbound(reply)
        if self._fault("malformed_frame", call.name):
            return [Out('{"v": "mvp-0.2", "type": "tool.result", ' + json.dumps(call.name))]
        if self._fault("unknown_type", call.name):
            return [Out(json.dumps({**wire, "type": "tool.progress", "payload": {"percent": 50}}))]
        if self._fault("wrong_version", call.name):
            return [Out(json.dumps({**wire, "v": "mvp-0.1"}))]
        if self._fault("binary_frame", call.name):
            return [Out(json.dumps(wire).encode())]
        return [Out(json.dumps(wire))]

    def _after(self, env: Envelope, call: ToolCall, *, banner: str | None = None) -> list[Out]:
        outs: list[Out] = []
        change = self._fault("goal_change", call.name)
        if change is not None:
            assert change.text
            self.messages.append(ChatMessage(role="user", text=change.text, stage=self.booking.stage))
            outs.append(self._send("user.message", UserMessage(text=change.text, stage=self.booking.stage)))
        if self._fault("drop_state_update", call.name):
            return outs
        state = self._send("state.updated", self._state(env.id))
        if banner is not None:
            wire = json.loads(str(state.text))
            wire["payload"]["uiSpec"]["banner"] = banner
            state = Out(json.dumps(wire))
        if self._fault("invalid_tool_schema", call.name):
            wire = json.loads(str(state.text))
            wire["payload"]["toolSchema"].append({"name": "broken_tool", "params": {"type": "nonsense"}})
            state = Out(json.dumps(wire))
        oversized = self._fault("oversized_frame", call.name)
        if oversized is not None:
            wire = json.loads(str(state.text))
            wire["payload"]["uiSpec"]["padding"] = "x" * oversized.size_bytes
            state = Out(json.dumps(wire))
        if self._fault("delay_state_update", call.name):
            state = Out(state.text, hold=True)
        outs.append(state)
        return outs
