"""The agent's memory (seed 002 §2.4): working, episodic, plan lineage and recent UI states.

- ``WorkingMemory``: the session (id, phase, goal and the user's later messages), the current
  UI state and the active plan.
- ``EpisodicMemory``: append-only record of every action and its outcome.
- ``PlanLineage``: which plan produced which action.
- ``RecentUIStates``: the last UI states with the ordinal of the action each reflects, for drift
  detection: a ``state.updated`` caused by an action older than the state already known is stale.
- Failures per stage (the ``>= 3`` stop condition of §7).

Semantic memory (reusable heuristics persisted per user) is not kept: it would need the runtime's
store (``shared.state``), which this package does not use (see docs/host-protocol.md).
"""

from __future__ import annotations

import datetime
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any, Literal

from hostagent.plans import NavigationPlan, PlannedAction
from hostagent.protocol import ChatMessage, ToolSpec
from hostagent.understanding import Contact, Turn

AgentPhase = Literal["DISCONNECTED", "CONNECTED", "JOINED", "SESSION_ACTIVE", "WAITING_RESULT", "TERMINATING"]


@dataclass(frozen=True)
class UIState:
    stage: str
    ui_spec: Any
    tools: tuple[ToolSpec, ...]
    source: Literal["session.started", "snapshot.state", "state.updated"]
    cause: str | None
    ordinal: int
    """The number of actions the state reflects: a snapshot reflects every action sent before it."""

    def tool(self, name: str) -> ToolSpec | None:
        return next((t for t in self.tools if t.name == name), None)

    @property
    def tool_names(self) -> list[str]:
        return [t.name for t in self.tools]


@dataclass
class WorkingMemory:
    goal: str
    session_id: str | None = None
    phase: AgentPhase = "DISCONNECTED"
    current: UIState | None = None
    active_plan: NavigationPlan | None = None
    messages: list[ChatMessage] = field(default_factory=list)
    user_texts: list[str] = field(default_factory=list)
    """The user's messages after the goal, oldest first (a later one may change the goal)."""
    turns: list[Turn] = field(default_factory=list)
    """The same messages, each with the question it answered (None: said unasked)."""
    contact: Contact | None = None
    """The contact profile given up front (``--contact``): the agent need not ask."""
    questions: list[str] = field(default_factory=list)
    """Every question the agent asked, in order."""
    open_question: str | None = None
    """The question the user has not answered yet."""
    titles: set[str] = field(default_factory=set)
    """Every movie title the screens showed (never read as a person's name)."""
    awaiting_user: bool = False
    notes: dict[str, Any] = field(default_factory=dict)
    """Planner scratch space that must survive replanning (announcements made, questions asked)."""

    @property
    def stage(self) -> str | None:
        return self.current.stage if self.current is not None else None


@dataclass(frozen=True)
class Episode:
    ts: str
    action_id: str
    plan_id: str
    type: str
    stage: str | None
    reason: str
    tool: str | None = None
    params: dict[str, Any] | None = None
    outcome: str = "pending"
    code: str | None = None
    message: str | None = None
    retry_of: str | None = None


class EpisodicMemory:
    """Append-only: an outcome is a new episode for the same action id, never an edit."""

    def __init__(self) -> None:
        self._episodes: list[Episode] = []

    def append(self, episode: Episode) -> None:
        self._episodes.append(episode)

    @property
    def episodes(self) -> tuple[Episode, ...]:
        return tuple(self._episodes)

    def outcomes(self) -> list[Episode]:
        """The final episode of every action, in the order the actions were taken."""
        last: dict[str, Episode] = {}
        for ep in self._episodes:
            last[ep.action_id] = ep
        return list(last.values())

    def tool_failures(self, tool: str, *, stage: str | None = None) -> list[Episode]:
        return [e for e in self.outcomes() if e.tool == tool and e.outcome != "success" and e.outcome != "pending"
                and (stage is None or e.stage == stage)]

    def tool_successes(self, tool: str) -> list[Episode]:
        return [e for e in self.outcomes() if e.tool == tool and e.outcome == "success"]

    def tail(self, n: int = 8) -> list[Episode]:
        return self.outcomes()[-n:]


class PlanLineage:
    def __init__(self) -> None:
        self.plans: dict[str, NavigationPlan] = {}
        self.actions: dict[str, str] = {}  # action id -> plan id

    def add_plan(self, plan: NavigationPlan) -> None:
        self.plans[plan.planId] = plan

    def link(self, action_id: str, plan_id: str) -> None:
        self.actions[action_id] = plan_id

    def plan_of(self, action_id: str) -> NavigationPlan | None:
        plan_id = self.actions.get(action_id)
        return self.plans.get(plan_id) if plan_id is not None else None


class RecentUIStates:
    def __init__(self, size: int = 12) -> None:
        self._states: deque[UIState] = deque(maxlen=size)

    def add(self, state: UIState) -> None:
        self._states.append(state)

    @property
    def states(self) -> tuple[UIState, ...]:
        return tuple(self._states)

    def latest(self) -> UIState | None:
        return self._states[-1] if self._states else None


@dataclass
class AgentMemory:
    working: WorkingMemory
    episodic: EpisodicMemory = field(default_factory=EpisodicMemory)
    lineage: PlanLineage = field(default_factory=PlanLineage)
    ui_states: RecentUIStates = field(default_factory=RecentUIStates)
    failures: Counter[str] = field(default_factory=Counter)
    call_ordinals: dict[str, int] = field(default_factory=dict)
    """tool.call id -> its ordinal (1, 2, ...): how drift detection orders states."""
    actions_sent: int = 0

    def next_ordinal(self, action_id: str) -> int:
        self.actions_sent += 1
        self.call_ordinals[action_id] = self.actions_sent
        return self.actions_sent

    def record(self, plan: NavigationPlan, action_id: str, action: PlannedAction, *,
               retry_of: str | None = None) -> None:
        self.lineage.add_plan(plan)
        self.lineage.link(action_id, plan.planId)
        self.episodic.append(Episode(ts=_now(), action_id=action_id, plan_id=plan.planId, type=action.type,
                                     stage=self.working.stage, reason=action.reason, tool=action.tool,
                                     params=action.params if action.type == "tool.call" else None,
                                     retry_of=retry_of))

    def settle(self, action_id: str, outcome: str, *, code: str | None = None, message: str | None = None) -> None:
        first = next(e for e in self.episodic.episodes if e.action_id == action_id)
        self.episodic.append(Episode(ts=_now(), action_id=action_id, plan_id=first.plan_id, type=first.type,
                                     stage=first.stage, reason=first.reason, tool=first.tool, params=first.params,
                                     outcome=outcome, code=code, message=message, retry_of=first.retry_of))

    def fail_on_stage(self, stage: str | None) -> int:
        key = stage or "(none)"
        self.failures[key] += 1
        return self.failures[key]


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
