"""Virtual (meta) tools: tools a host answers itself, not the registry (seed 003 §5.3).

They change no outside state by themselves (so no policy decision: what they start, e.g. a plan's
acts, goes through the policy like everything else); their arguments are validated against their
declaration, and a malformed call is answered with the problems so the model can fix it once.
A virtual tool may also make the turn *wait* (for a child unit of work, e.g. a plan it started):
the unit pauses like for an approval and goes on when the child ends.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel

from shared.models.base import ToolDeclaration

if TYPE_CHECKING:
    from shared.loop.context import RunContext
    from shared.state.records import ActionRecord


@dataclass(frozen=True)
class VirtualOutcome:
    result: dict[str, Any] | None = None
    error: str | None = None
    waiting: bool = False
    """The turn waits for a child unit; its end approves this action and resumes the unit."""


class VirtualTool(Protocol):
    name: str

    def declaration(self) -> ToolDeclaration: ...

    def validate(self, args: dict[str, Any]) -> BaseModel:
        """The arguments; raises ``ToolArgsError`` naming the problems."""
        ...

    def preview(self, args: BaseModel) -> str: ...

    def run(self, ctx: RunContext, action: ActionRecord, args: BaseModel) -> VirtualOutcome: ...
