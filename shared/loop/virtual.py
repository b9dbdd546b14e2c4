"""Virtual (meta) tools: tools a host answers itself, not the registry (seed 003 §5.3).

They are declared like registry tools, as a :class:`~shared.tools.registry.Tool` (``host=True``):
a pydantic arguments model gives the schema, the validation and (its docstring) the description;
``host_tool`` builds one. The loop handles them on the same path as every tool
(``loop/tool_calls.py``) with three differences: they change no outside state by themselves (so no
policy decision: what they start, e.g. a plan's acts, goes through the policy like everything else),
a malformed call is answered with the problems so the model can fix it once, and a call may make
the turn *wait* for a child unit of work (e.g. a plan it started): the unit pauses like for an
approval and goes on when the child ends.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel

from shared.errors import ConfigurationError
from shared.tools.registry import Tool

if TYPE_CHECKING:
    from shared.loop.context import RunContext
    from shared.state.records import ActionRecord

A = TypeVar("A", bound=BaseModel)


@dataclass(frozen=True)
class VirtualOutcome:
    result: dict[str, Any] | None = None
    error: str | None = None
    waiting: bool = False
    """The turn waits for a child unit; its end approves this action and resumes the unit."""


@dataclass(frozen=True)
class HostCall:
    """What a virtual tool gets besides its arguments: the unit's context and the call's action."""

    ctx: RunContext
    action: ActionRecord


def host_tool(name: str, args_model: type[A], run: Callable[[HostCall, A], VirtualOutcome], *,
              preview: Callable[[A], str]) -> Tool:
    """Declare a virtual tool: ``args_model`` (extra fields forbidden; its docstring is the model's
    description) and ``run(call, args)``."""
    if not args_model.__doc__:
        raise ConfigurationError(f"virtual tool {name!r}: its arguments model needs a docstring (the description)")

    def call(host_call: HostCall, args: BaseModel) -> VirtualOutcome:
        assert isinstance(args, args_model)
        return run(host_call, args)

    def show(args: BaseModel) -> str:
        assert isinstance(args, args_model)
        return preview(args)

    return Tool(name=name, description=" ".join(args_model.__doc__.split()), args_model=args_model, fn=call,
                side_effect=False, idempotent=False, preview_fn=show, host=True)


def run_virtual(tool: Tool, ctx: RunContext, action: ActionRecord, args: BaseModel) -> VirtualOutcome:
    out = tool.fn(HostCall(ctx, action), args)
    assert isinstance(out, VirtualOutcome)
    return out
