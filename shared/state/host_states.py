"""The host's own durable state in a run document (``runs/{runId}.hostState``): one typed model
per host kind, keyed by ``kind``, with its own ``schemaVersion``, committed with every step.

Versions: 1 = an untyped dict (no ``kind``, no ``schemaVersion``; a plan's version under
``version``, the loop's malformed-call counter under ``virtualArgErrors``), migrated on read;
2 = typed by host kind. A state written by a newer version is refused like any record
(``SchemaVersionError``). A kind this runtime has no model for keeps its fields in ``data`` (its
host is not registered here: the unit fails with ``UNKNOWN_HOST``, or a test's host reads them).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeVar

from pydantic import Discriminator, Field, Tag

from shared.state.plan_tasks import PlanTask
from shared.state.record_base import Record, SchemaVersionError

HOST_STATE_VERSION = 2
LEGACY_ARG_ERRORS = "virtualArgErrors"
"""Version 1 kept the loop's count of malformed virtual-tool calls in the host's state; it is
the run's own field now (``RunRecord.virtualArgErrors``)."""


class ChatState(Record):
    """The chat host's state: the planner's last ``agent_state`` and the plans the run made."""

    kind: Literal["chat"] = "chat"
    agent_state: str | None = None
    execution_modes: list[str] = Field(default_factory=list)
    """The execution modes of the run's ``agent_create_plan`` calls (the thread records them)."""
    plan_id: str | None = None
    """The last plan the run created."""
    pending_plan_id: str | None = None
    """A plan left for review (draft, or not approved by the reviewer)."""
    executing: str | None = None
    """The plan ``agent_execute_plan`` started (a resumed call answers with its outcome)."""
    relay_plan_id: str | None = None
    """The plan the run waits on: its events are relayed into the run's log (agent/plan_relay.py)."""
    schema_version: int = HOST_STATE_VERSION


class PlanRunState(Record):
    """The plan host's state: the session it executes, its tasks and where it is."""

    kind: Literal["plan"] = "plan"
    session_id: str
    objective: str
    deadline: float
    """The session's deadline (``time.time()``)."""
    tools: list[str] | None = None
    """The tools the session may use (None: every tool)."""
    tasks: list[PlanTask]
    task_id: str | None = None
    """The task in progress (None once none is left)."""
    plan_version: int = 1
    seq: int = 0
    """Unused: the session's events are the run's (``RunRecord.lastSeq``); read from older records."""
    finished: bool = False
    parent_run_id: str | None = None
    parent_action_id: str | None = None
    """A plan started by a chat run's ``agent_create_plan``: the call waiting for its end."""
    schema_version: int = HOST_STATE_VERSION

    @property
    def current(self) -> PlanTask | None:
        return next((t for t in self.tasks if t.id == self.task_id), None)


class OtherState(Record):
    """The state of a host kind without a model here (kept as it is)."""

    kind: str
    data: dict[str, Any] = Field(default_factory=dict)
    schema_version: int = HOST_STATE_VERSION


KNOWN = ("chat", "plan")


def _tag(value: Any) -> str:
    kind = value.get("kind") if isinstance(value, dict) else getattr(value, "kind", None)
    return kind if kind in KNOWN else "other"


HostState = Annotated[Annotated[ChatState, Tag("chat")] | Annotated[PlanRunState, Tag("plan")]
                      | Annotated[OtherState, Tag("other")], Discriminator(_tag)]

S = TypeVar("S", ChatState, PlanRunState, OtherState)


def migrate(raw: Any, host: str) -> Any:
    """A stored host state as this version reads it: version 1 (an untyped dict) becomes the typed
    state of ``host``; a newer version is refused; a model instance passes unchanged."""
    if not isinstance(raw, dict):
        return raw
    version = raw.get("schemaVersion")
    if isinstance(version, int) and version > HOST_STATE_VERSION:
        raise SchemaVersionError(f"the host state of a {host} run has schemaVersion {version}; "
                                 f"this runtime knows up to {HOST_STATE_VERSION}")
    if isinstance(version, int) and version >= 2:
        return raw
    data = {k: v for k, v in raw.items() if k not in (LEGACY_ARG_ERRORS, "kind", "schemaVersion")}
    kind = str(raw.get("kind") or host)
    if kind == "plan" and "version" in data:
        data["planVersion"] = data.pop("version")
    if kind not in KNOWN:
        data = {"data": data}
    return {**data, "kind": kind, "schemaVersion": HOST_STATE_VERSION}


def initial(host: str) -> ChatState | OtherState:
    """The state of a new unit of ``host`` created without one."""
    return ChatState() if host == "chat" else OtherState(kind=host)


def expect(state: Any, cls: type[S]) -> S:
    """``state`` as the model its host uses (a run of another kind is a programming error)."""
    if not isinstance(state, cls):
        raise TypeError(f"expected a {cls.__name__} host state, got {type(state).__name__}")
    return state
