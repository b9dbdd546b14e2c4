"""Context perception (seed 002 §2.1): host payloads -> memory -> ``PerceivedContext``.

``observe`` folds one inbound envelope (``session.started``, ``snapshot.state``,
``state.updated``, ``user.message``) into memory and says what it was: ``state`` (a new current UI
state), ``stale`` (a ``state.updated`` caused by an action older than the state already known:
drift, ignored), ``message`` or ``ignored``. ``perceive`` builds the planner's view: the screen
normalised by ``hostagent.screen`` (any host's uiSpec dialect), the toolSchema, the conversation.

``PerceivedContext.signals`` is what the goal and the user's later messages say, read by
``hostagent.understanding`` (contact details, seats, showtime, cancelling, the answers that did not
help); a later message overrides what an earlier one said (the user changed their mind).
"""

from __future__ import annotations

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
from hostagent.understanding import EMAIL, Turn, Understanding, understand

__all__ = ["EMAIL", "PerceivedContext", "observe", "perceive", "signals"]
HISTORY_TAIL = 12


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
    signals: Understanding = Understanding()
    """What the goal and the user's messages say (``hostagent.understanding``)."""

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
        working.turns.append(Turn(message.text, working.open_question))
        working.open_question = None
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
    screen = read_screen(current.ui_spec) if current else ScreenView()
    working.titles.update(m.title for m in [*screen.movies, *([screen.movie] if screen.movie else [])])
    return PerceivedContext(
        sessionId=working.session_id, stage=current.stage if current else None, screen=screen,
        uiSpec=current.ui_spec if current else None, toolSchema=list(current.tools) if current else [],
        lastUserMessage=users[-1] if users else None, messageHistoryTail=working.messages[-HISTORY_TAIL:],
        goal=working.goal, userTexts=list(working.user_texts),
        signals=understand(working.goal, working.turns, contact=working.contact, titles=working.titles))


def signals(texts: list[str]) -> Understanding:
    """What ``texts`` say: the goal, then the user's messages said unasked (oldest first)."""
    return understand(texts[0], [Turn(t) for t in texts[1:]]) if texts else Understanding()
