"""The wire contracts of the goals function (seed 000 sections 4, 5 and 7).

- ``GoalsRequest``: what the backend posts to ``POST /agent/run``.
- ``GoalPreview``: the structured plan (goal, milestones, tasks; every date optional). Plans the
  backend sends back keep fields this service does not know (``extra="allow"``), so a refinement
  returns them untouched.
- ``GoalsResponse``: ``reply``, ``action`` (a union tagged by ``type``) and ``state``.

Scalars of ``state`` are strict (``"1"`` is not an iteration, ``"true"`` is not a boolean) so a
backend bug is a 400 naming the field instead of a silent coercion.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    Strict,
    StrictBool,
    StrictInt,
    StrictStr,
    field_validator,
    model_validator,
)

from shared.wire import INTEGRAL, NOT_A_NUMBER, NOT_BLANK_PATTERN, is_blank

Step = Literal["plan_generated", "plan_iteration", "finalized"]
STEPS: tuple[Step, ...] = ("plan_generated", "plan_iteration", "finalized")

Title = Annotated[StrictStr, Field(min_length=1, max_length=200)]
Text = Annotated[StrictStr, Field(max_length=2000)]
Day = Annotated[date, NOT_A_NUMBER]
Instant = Annotated[datetime, NOT_A_NUMBER]


class _Open(BaseModel):
    """A contract object that keeps the fields it does not know (the backend's own)."""

    model_config = ConfigDict(extra="allow", defer_build=True)


class _Closed(BaseModel):
    model_config = ConfigDict(extra="ignore", defer_build=True)


def _empty_object_accepted(schema: dict[str, Any]) -> None:
    """The JSON schema of ``proposed_plan``, whose ``{}`` means "no plan" (seed 000): documented."""
    schema["anyOf"] = [*schema["anyOf"], {"type": "object", "maxProperties": 0}]


def _null_accepted(schema: dict[str, Any]) -> None:
    """The JSON schema of a field whose ``null`` a before-validator reads as its default: the
    document says null is accepted (the OpenAPI fuzz test found it undocumented)."""
    inner = {key: schema.pop(key) for key in list(schema) if key not in ("default", "title", "description")}
    schema["anyOf"] = [inner, {"type": "null"}]


# ---- GoalPreview -------------------------------------------------------------------------------

class Task(_Open):
    """One concrete step. ``start``/``end`` schedule it (both or neither); ``dueDate`` is a deadline."""

    id: StrictStr | None = None
    title: Title
    description: Text | None = None
    dueDate: Day | None = None
    start: Instant | None = None
    end: Instant | None = None

    @model_validator(mode="after")
    def _times(self) -> Task:
        if (self.start is None) != (self.end is None):
            raise ValueError("start and end must be given together")
        if self.start is not None and self.end is not None and as_utc(self.end) <= as_utc(self.start):
            raise ValueError("end must be after start")
        return self


class Milestone(_Open):
    id: StrictStr | None = None
    title: Title
    description: Text | None = None
    dueDate: Day | None = None
    tasks: list[Task] = Field(default_factory=list, max_length=50)


class Goal(_Open):
    id: StrictStr | None = None
    title: Title
    description: Text | None = None
    targetDate: Day | None = None


class GoalPreview(_Open):
    """Gritto's plan preview: one goal and its ordered milestones. ``id`` is the backend's preview
    id once it saved one (it becomes ``goalPreviewId`` when the plan is finalised)."""

    id: StrictStr | None = None
    goal: Goal
    milestones: list[Milestone] = Field(default_factory=list, max_length=30)


def dump_plan(plan: GoalPreview) -> dict[str, Any]:
    """The plan as JSON: absent optional fields stay absent."""
    return plan.model_dump(mode="json", exclude_none=True)


# ---- request -----------------------------------------------------------------------------------

class ExistingGoal(_Closed):
    id: StrictStr | None = None
    title: StrictStr


class CalendarEvent(_Closed):
    title: StrictStr = ""
    start: Instant
    end: Instant

    @model_validator(mode="after")
    def _order(self) -> CalendarEvent:
        if as_utc(self.end) < as_utc(self.start):
            raise ValueError("end must not be before start")
        return self


class GoalsContext(_Closed):
    existingGoals: list[ExistingGoal] = Field(default_factory=list, max_length=200, json_schema_extra=_null_accepted)
    calendarEvents: list[CalendarEvent] = Field(default_factory=list, max_length=500,
                                                json_schema_extra=_null_accepted)

    @field_validator("existingGoals", "calendarEvents", mode="before")
    @classmethod
    def _null_is_empty(cls, value: Any) -> Any:
        return [] if value is None else value


class SessionState(_Closed):
    """The session state the backend persisted from the previous response (absent: a new session)."""

    step: Step | None = None
    iteration: Annotated[int, Strict(), Field(ge=0), INTEGRAL] = 0
    sessionActive: StrictBool = True
    proposed_plan: GoalPreview | None = Field(default=None, json_schema_extra=_empty_object_accepted)

    @model_validator(mode="before")
    @classmethod
    def _empty_plan_is_none(cls, data: Any) -> Any:
        # The spec's routing uses bool(proposed_plan): an empty object means "no plan".
        if isinstance(data, dict) and data.get("proposed_plan") == {}:
            return {**data, "proposed_plan": None}
        return data


UID_PATTERN = r"^[A-Za-z0-9_.@-]*[A-Za-z0-9_@-][A-Za-z0-9_.@-]*$"
"""The backend's user id: the ledger's ``users/{userId}`` document, so never a path (``/``), ``.`` or ``..``
(a ``userId`` of ``alice/runs/run_1`` wrote usage entries inside that run)."""
SESSION_ID_PATTERN = r"^[A-Za-z0-9_.@-]{1,128}$"
"""The backend's session id: the prefix of the ledger entries' document ids, so never a path."""


class GoalsRequest(_Closed):
    userId: Annotated[StrictStr, Field(max_length=128, pattern=UID_PATTERN,
                                       json_schema_extra={"not": {"pattern": "^__[\\s\\S]*__$"}})] | None = None
    sessionId: Annotated[StrictStr, Field(pattern=SESSION_ID_PATTERN)] | None = None
    message: Annotated[StrictStr, Field(min_length=1, max_length=4000,
                                        json_schema_extra={"pattern": NOT_BLANK_PATTERN})]
    context: GoalsContext = Field(default_factory=GoalsContext, json_schema_extra=_null_accepted)
    state: SessionState = Field(default_factory=SessionState, json_schema_extra=_null_accepted)

    @field_validator("context", "state", mode="before")
    @classmethod
    def _null_is_default(cls, value: Any) -> Any:
        # A backend starting a new session may send null: the same as leaving the field out.
        return {} if value is None else value

    @field_validator("message")
    @classmethod
    def _message_not_blank(cls, value: str) -> str:
        if is_blank(value):
            raise ValueError("message must not be blank")
        return value

    @field_validator("userId")
    @classmethod
    def _user_id_not_reserved(cls, value: str | None) -> str | None:
        # ``users/__x__``: Firestore reserves such ids; the usage entry was logged as lost.
        if value is not None and len(value) >= 4 and value.startswith("__") and value.endswith("__"):
            raise ValueError("userId must not be of the form __…__ (reserved by Firestore)")
        return value


# ---- response ----------------------------------------------------------------------------------

class StateOut(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    step: Step
    iteration: StrictInt
    sessionActive: StrictBool


class SavePreviewPayload(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    goalPreview: GoalPreview
    iteration: StrictInt


class FinalizePayload(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    goalPreviewId: StrictStr
    goal: Goal
    milestones: list[Milestone]


class SavePreviewAction(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    type: Literal["save_preview"] = "save_preview"
    payload: SavePreviewPayload


class FinalizeAction(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    type: Literal["finalize_goal"] = "finalize_goal"
    payload: FinalizePayload


class NoAction(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    type: Literal["none"] = "none"
    payload: dict[str, Any] = Field(default_factory=dict)


Action = Annotated[SavePreviewAction | FinalizeAction | NoAction, Field(discriminator="type")]


class GoalsResponse(BaseModel):
    """Seed 000 section 5, exactly: ``reply``, ``action {type, payload}``, ``state``."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    reply: StrictStr
    action: Action
    state: StateOut

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)


def as_utc(value: datetime) -> datetime:
    """Naive datetimes are taken as UTC so they compare with the calendar's aware ones."""
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)
