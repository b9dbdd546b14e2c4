"""Context perception (seed 002 §2.1): host payloads -> memory -> ``PerceivedContext``.

``observe`` folds one inbound envelope (``session.started``, ``snapshot.state``,
``state.updated``, ``user.message``) into memory and says what it was: ``state`` (a new current UI
state), ``stale`` (a ``state.updated`` caused by an action older than the state already known:
drift, ignored), ``message`` or ``ignored``. ``perceive`` builds the planner's view: the screen
normalised by ``hostagent.screen`` (any host's uiSpec dialect), the toolSchema, the conversation.

``signals`` extracts the intent cues planners use from the goal and the user's later messages;
a later message overrides what an earlier one said (the user changed their mind).
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from hostagent.memory import AgentMemory, UIState
from hostagent.protocol import (
    ChatMessage,
    Envelope,
    SessionStarted,
    SnapshotState,
    StateUpdated,
    ToolSpec,
    UserMessage,
)
from hostagent.screen import ScreenView, read_screen

HISTORY_TAIL = 12


class IntentSignals(BaseModel):
    """Cues from the user's words. None: not said."""

    model_config = ConfigDict(frozen=True)

    date: str | None = None
    time: str | None = None
    day_part: str | None = None
    count: int | None = None
    name: str | None = None
    email: str | None = None
    coupon: str | None = None


class PerceivedContext(BaseModel):
    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    sessionId: str | None
    stage: str | None
    screen: ScreenView = ScreenView()
    """What the screen offers, normalised from any host's uiSpec (``hostagent.screen``)."""
    uiSpec: Any
    """The raw uiSpec: only for the LLM planner when ``screen.recognised`` is False."""
    toolSchema: list[ToolSpec]
    lastUserMessage: ChatMessage | None
    messageHistoryTail: list[ChatMessage]
    goal: str
    userTexts: list[str] = Field(default_factory=list)
    signals: IntentSignals = IntentSignals()

    def tool(self, name: str) -> ToolSpec | None:
        return next((t for t in self.toolSchema if t.name == name), None)


def observe(env: Envelope, memory: AgentMemory) -> str:
    working = memory.working
    if env.type == "session.started":
        body: SessionStarted = env.body(SessionStarted)
        working.session_id = body.sessionId
        working.phase = "SESSION_ACTIVE"
        return "ignored"
    if env.type == "snapshot.state":
        snap: SnapshotState = env.body(SnapshotState)
        _set_state(memory, UIState(stage=snap.stage, ui_spec=snap.uiSpec, tools=tuple(snap.toolSchema),
                                   source="snapshot.state", cause=None, ordinal=memory.actions_sent))
        working.messages = list(snap.messages)
        return "state"
    if env.type == "state.updated":
        update: StateUpdated = env.body(StateUpdated)
        current = working.current
        if update.cause is not None and update.cause in memory.call_ordinals:
            ordinal = memory.call_ordinals[update.cause]
            if (current is not None and ordinal < current.ordinal) or (
                    current is not None and ordinal == current.ordinal and current.source == "snapshot.state"):
                return "stale"
        else:
            # Caused by the host itself (or by a call this agent never sent): the newest state.
            ordinal = memory.actions_sent
        _set_state(memory, UIState(stage=update.stage, ui_spec=update.uiSpec, tools=tuple(update.toolSchema),
                                   source="state.updated", cause=update.cause, ordinal=ordinal))
        return "state"
    if env.type == "user.message":
        message: UserMessage = env.body(UserMessage)
        working.user_texts.append(message.text)
        working.messages.append(ChatMessage(role="user", text=message.text, stage=message.stage))
        working.awaiting_user = False
        return "message"
    return "ignored"


def _set_state(memory: AgentMemory, state: UIState) -> None:
    memory.working.current = state
    memory.ui_states.add(state)


def perceive(memory: AgentMemory) -> PerceivedContext:
    working = memory.working
    current = working.current
    users = [m for m in working.messages if m.role == "user"]
    return PerceivedContext(
        sessionId=working.session_id, stage=current.stage if current else None,
        screen=read_screen(current.ui_spec) if current else ScreenView(),
        uiSpec=current.ui_spec if current else None, toolSchema=list(current.tools) if current else [],
        lastUserMessage=users[-1] if users else None, messageHistoryTail=working.messages[-HISTORY_TAIL:],
        goal=working.goal, userTexts=list(working.user_texts), signals=signals([working.goal, *working.user_texts]))


_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
          "a": 1, "an": 1, "single": 1, "pair of": 2, "couple of": 2}
_DATE = re.compile(r"\b(\d{4}-\d{2}-\d{2})\b")
_TIME = re.compile(r"\b([01]?\d|2[0-3])[:.h]([0-5]\d)\b")
_COUNT = re.compile(r"\b(\d{1,2}|one|two|three|four|five|six|seven|eight|a|an|single|pair of|couple of)\s+"
                    r"(?:\w+\s+)?(?:seats?|tickets?|places?)\b", re.IGNORECASE)
EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
_NAME = re.compile(r"\b(?:name\s+is|name:?|named|under(?:\s+the\s+name)?)\s+([A-Z][\w'-]+(?:\s+[A-Z][\w'-]+){0,3})")
_COUPON = re.compile(r"\b(?:coupon|promo(?:\s+code)?|discount(?:\s+code)?|voucher)\s*(?:code\s*)?:?\s*"
                     r"([A-Za-z0-9]{3,16})\b", re.IGNORECASE)
_DAY_PARTS = {"morning": "morning", "afternoon": "afternoon", "matinee": "afternoon", "evening": "evening",
              "tonight": "evening", "night": "evening"}


def signals(texts: list[str]) -> IntentSignals:
    """Intent cues of ``texts`` (oldest first); a later text overrides an earlier one."""
    found: dict[str, Any] = {}
    for text in texts:
        found.update(_signals_of(text))
    return IntentSignals(**found)


def _signals_of(text: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if m := _DATE.search(text):
        out["date"] = m.group(1)
    if m := _TIME.search(_DATE.sub(" ", text)):
        out["time"] = f"{int(m.group(1)):02d}:{m.group(2)}"
    lowered = text.lower()
    for word, part in _DAY_PARTS.items():
        if re.search(rf"\b{word}\b", lowered):
            out["day_part"] = part
            break
    if m := _COUNT.search(text):
        raw = m.group(1).lower()
        out["count"] = int(raw) if raw.isdigit() else _WORDS[raw]
    if m := EMAIL.search(text):
        out["email"] = m.group(0)
    if m := _NAME.search(text):
        name = m.group(1).strip()
        if "@" not in name:
            out["name"] = name
    if m := _COUPON.search(text):
        out["coupon"] = m.group(1)
    return out
