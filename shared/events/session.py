"""A plan session's events in the session's words: the NDJSON of
``GET /api/agent/sessions/{id}/events`` (docs/event-protocol.md, "Plan sessions").

There is one vocabulary, the run events (``RunEvent``): a session's events are the events of its
run, from its planning on (``PlanRunEvent``s, with the run's ``usage`` and ``error``). The session's
pinned wire words (``task_start``, ``act``, ``status``, ...) are produced here, by one mapping
applied at the HTTP edge (``as_session_event``), and the wire models the OpenAPI document describes
(``SessionEvent``) are derived from the run events by the same mapping, so the two cannot disagree.
A plan event added to ``RunEvent`` is a session event under its own name without touching this
module. The own events of sessions stored by earlier versions before confirmation
(``sessions/{id}/events``) were written in the session's words by the same mapping and are served
as stored.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union, get_args

from pydantic import Field, create_model
from pydantic.fields import FieldInfo

from shared.events.loop import Event
from shared.events.plan import PlanRunEvent
from shared.events.run import RunEvent
from shared.state.plan_records import SessionStatus

SESSION_WORDS: dict[str, str] = {
    "step_start": "task_start", "executor_reason": "reason", "executor_act": "act", "executor_observe": "observe",
    "executor_reflect": "reflect", "step_complete": "task_complete", "plan_status": "status", "plan_result": "result"}
"""A run event's ``type`` -> the session's word for it (the others keep their name)."""
FIELD_WORDS: dict[str, str | None] = {"stepId": "taskId", "toolName": "tool", "planId": None}
"""A run event's field -> the session's word for it (None: not shown; ``status`` names ``sessionId``)."""
SHOWN_RUN_EVENTS = ("usage", "error")
"""The run's own events a session shows besides its plan's (not its ``status``, tool or state events)."""


def _classes() -> list[type[Event]]:
    union = get_args(get_args(RunEvent)[0])
    return [c for c in union if issubclass(c, PlanRunEvent) or c.model_fields["type"].default in SHOWN_RUN_EVENTS]


SESSION_TYPES = frozenset(str(c.model_fields["type"].default) for c in _classes())


def as_session_event(ev: dict[str, Any]) -> dict[str, Any] | None:
    """The session's words for an event of its run (None: not a session event)."""
    kind = str(ev.get("type"))
    if kind not in SESSION_TYPES:
        return None
    out: dict[str, Any] = {"seq": ev["seq"], "type": SESSION_WORDS.get(kind, kind)}
    for key, value in ev.items():
        if key not in ("seq", "type") and (name := FIELD_WORDS.get(key, key)) is not None:
            out[name] = value
    if kind == "plan_status":
        out["sessionId"] = ev["planId"]
    return out


def _wire_model(cls: type[Event]) -> type[Event]:
    """The session's wire model of run event ``cls``, by the mapping above."""
    kind = str(cls.model_fields["type"].default)
    if kind in SHOWN_RUN_EVENTS:
        return cls
    word = SESSION_WORDS.get(kind, kind)
    fields: dict[str, Any] = {"type": (Literal[word], word)}
    for name, info in cls.model_fields.items():
        if name in ("seq", "type") or (renamed := FIELD_WORDS.get(name, name)) is None:
            continue
        fields[renamed] = (info.annotation, FieldInfo.merge_field_infos(info))
    if kind == "plan_status":
        fields["sessionId"] = (str, ...)
    title = "Session" + "".join(w.capitalize() for w in word.split("_")) + "Event"
    return create_model(title, __base__=Event, __doc__=cls.__doc__, **fields)


class SessionStreamEndEvent(Event):
    """Stream only, never persisted: a follow ends before the session's own ``result`` or ``error``
    was sent on it (its window's time is spent, it waits for a decision or a confirmation, or it had
    ended). ``seq`` repeats the last event's; ``follow`` reads on from there."""

    type: Literal["stream_end"] = "stream_end"
    sessionId: str
    status: SessionStatus
    reason: Literal["stream_time_spent", "awaiting_approval", "awaiting_confirmation", "session_ended"]
    follow: str


_MODELS = tuple(_wire_model(c) for c in _classes())
SessionEvent = Annotated[Union[(*_MODELS, SessionStreamEndEvent)], Field(discriminator="type")]  # type: ignore[valid-type]
"""The session's events on the wire (the OpenAPI document's ``SessionEvent``)."""

