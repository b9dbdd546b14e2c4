"""Declare a tool once: its typed signature and docstring give validation, schema and description.

```python
registry = ToolRegistry()

@registry.tool(side_effect=True)
def save_memory(ctx: ToolContext, text: str, tags: list[str] | None = None) -> dict[str, Any]:
    \"\"\"Save a durable fact about the user.

    Args:
        text: The fact, one sentence.
        tags: Optional short labels.
    \"\"\"
```
The first parameter is the :class:`ToolContext`; the rest become a pydantic model (extra fields
forbidden) whose JSON schema is the Gemini function declaration.

What recovery may do with a side effect that a crash cut off (``docs/recovery.md``):
- ``idempotent=True``: repeating it is harmless or recognised by the service (an id or key derived
  from ``ToolContext.action_id``), so it is run again;
- ``reconcile=fn``: ``fn(ctx, args)`` asks the service whether it happened (a marker or header
  derived from the action id); found → recorded as done, not found → run once;
- neither: the outcome is recorded as ``unknown`` and the call is never repeated.
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, get_type_hints

from pydantic import BaseModel, ConfigDict, ValidationError, create_model
from pydantic.fields import FieldInfo
from pydantic.json_schema import GenerateJsonSchema

from shared.errors import AgentRuntimeError, ConfigurationError
from shared.formats import args_hash as args_hash  # defined there: deciding an approval loads no tools
from shared.formats import clean_json_schema, validation_problems
from shared.models.base import ToolDeclaration

if TYPE_CHECKING:
    from shared.tools.context import ToolContext

ToolFn = Callable[..., dict[str, Any]]
PreviewFn = Callable[[BaseModel], str]
RecipientsFn = Callable[[BaseModel], list[str]]
ReconcileFn = Callable[["ToolContext", BaseModel], "dict[str, Any] | None"]
"""After a crash cut a call off: the call's result when its side effect is found at the service
(recorded as done, never repeated), ``None`` when it surely did not happen (then it runs once); an
exception when the service cannot tell (the outcome stays ``unknown``)."""


class ToolArgsError(AgentRuntimeError):
    """The model called a tool with arguments that do not match its declaration."""

    def __init__(self, tool: str, problems: list[str]) -> None:
        super().__init__(f"invalid arguments for {tool}: " + "; ".join(problems))
        self.tool = tool
        self.problems = problems


_ARG_LINE = re.compile(r"^\s{2,}(\w+)(?:\s*\([^)]*\))?:\s*(.*)$")


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Summary and per-argument descriptions of a Google-style docstring."""
    lines = inspect.cleandoc(doc).splitlines()
    summary: list[str] = []
    args: dict[str, str] = {}
    in_args = False
    current: str | None = None
    for line in lines:
        if line.strip() in ("Args:", "Arguments:"):
            in_args = True
            continue
        if in_args:
            if line and not line.startswith(" "):
                in_args = False
            else:
                m = _ARG_LINE.match(line)
                if m:
                    current = m.group(1)
                    args[current] = m.group(2).strip()
                elif current and line.strip():
                    args[current] += " " + line.strip()
                continue
        summary.append(line)
    return "\n".join(summary).strip(), args


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    args_model: type[BaseModel]
    fn: Callable[..., Any]
    """``fn(ctx: ToolContext, **args)``; of a ``host`` tool ``fn(call, args)`` (shared/loop/virtual.py)."""
    side_effect: bool
    idempotent: bool
    preview_fn: PreviewFn | None = None
    recipients_fn: RecipientsFn | None = None
    """Mail-like tools: every recipient of a call (the delegated allowlist applies to them)."""
    reconcile_fn: ReconcileFn | None = None
    """Side effects the service can be asked about: how recovery learns a cut-off call's true outcome
    (``idempotent`` tools need none: their repeat is recognised by the service or harmless)."""
    host: bool = False
    """A virtual tool: answered by the unit's host (shared/loop/virtual.py), not run with a ToolContext."""
    connector: str | None = None
    """The integration it acts through (``google``, ``slack``, ``github``): the user must have
    connected it (an A2A task waiting on such a call while it is not is ``auth-required``)."""

    def declaration(self) -> ToolDeclaration:
        return self._declaration

    @functools.cached_property
    def _declaration(self) -> ToolDeclaration:
        """Built once per tool (frozen); hosts offer their virtual tools at every step."""
        return ToolDeclaration(name=self.name, description=self.description, parameters=args_schema(self.args_model))

    def validate(self, args: dict[str, Any]) -> BaseModel:
        try:
            return self.args_model.model_validate(args)
        except ValidationError as exc:
            problems = [f"{field}: {message}" for field, message in validation_problems(exc, root="(args)")]
            raise ToolArgsError(self.name, problems) from None

    def preview(self, args: BaseModel) -> str:
        if self.preview_fn is not None:
            return self.preview_fn(args)
        parts = [f"{k}: {v}" for k, v in args.model_dump(exclude_none=True).items()]
        return f"{self.name}(" + ", ".join(parts)[:300] + ")"

    def run(self, ctx: ToolContext, args: BaseModel) -> dict[str, Any]:
        assert not self.host, f"{self.name} is answered by its host"
        out = self.fn(ctx, **{k: getattr(args, k) for k in type(args).model_fields})
        return out if isinstance(out, dict) else {"result": out}

    @property
    def reconcilable(self) -> bool:
        """Whether recovery can learn a cut-off call's true outcome (never ``unknown``)."""
        return self.idempotent or self.reconcile_fn is not None


class ArgsJsonSchema(GenerateJsonSchema):
    """pydantic's JSON schema, with a short cut for the defaults arguments have: ``None``, booleans,
    integers and strings encode to themselves, so no serializer is built per default (pydantic
    builds a ``TypeAdapter`` for each; ~20 % of building the declarations at a cold start, issue 20).
    tests/unit/test_registry.py checks every shipped tool's schema equals pydantic's own."""

    def encode_default(self, dft: Any) -> Any:
        if dft is None or type(dft) in (bool, int, str):
            return dft
        return super().encode_default(dft)


@functools.cache
def args_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema of an arguments model, built once per model (~1 ms each; a runtime builds
    its hosts' virtual tools anew from the same models)."""
    schema = clean_json_schema(model.model_json_schema(schema_generator=ArgsJsonSchema))
    schema.pop("description", None)  # an arguments model's docstring is the tool's description
    return schema


class ToolRegistry:
    def __init__(self) -> None:
        self._tools: dict[str, Tool] = {}
        self._declarations: tuple[ToolDeclaration, ...] | None = None
        self.unavailable: tuple[str, ...] = ()
        """Tool sources (MCP servers) left out when the registry was built: the model is told."""

    def tool(self, *, side_effect: bool, idempotent: bool = False, name: str | None = None,
             preview: PreviewFn | None = None, recipients: RecipientsFn | None = None,
             reconcile: ReconcileFn | None = None, connector: str | None = None) -> Callable[[ToolFn], ToolFn]:
        def register(fn: ToolFn) -> ToolFn:
            self.add(build_tool(fn, side_effect=side_effect, idempotent=idempotent, name=name,
                                preview=preview, recipients=recipients, reconcile=reconcile, connector=connector))
            return fn

        return register

    def add(self, tool: Tool) -> None:
        if tool.name in self._tools:
            raise ConfigurationError(f"tool {tool.name!r} is declared twice")
        self._tools[tool.name] = tool
        self._declarations = None

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def declarations(self) -> list[ToolDeclaration]:
        """The Gemini function declarations, built once per registry (tools are frozen) and
        rebuilt only after :meth:`add`: building a JSON schema costs ~1 ms per tool."""
        if self._declarations is None:
            self._declarations = tuple(t.declaration() for t in self._tools.values())
        return list(self._declarations)


def build_tool(fn: ToolFn, *, side_effect: bool, idempotent: bool = False, name: str | None = None,
               preview: PreviewFn | None = None, recipients: RecipientsFn | None = None,
               reconcile: ReconcileFn | None = None, connector: str | None = None) -> Tool:
    tool_name = name or fn.__name__
    if reconcile is not None and not side_effect:
        raise ConfigurationError(f"tool {tool_name!r}: only a side effect has an outcome to reconcile")
    if not fn.__doc__:
        raise ConfigurationError(f"tool {tool_name!r} needs a docstring (it is the model's description)")
    summary, arg_docs = _parse_docstring(fn.__doc__)
    hints = get_type_hints(fn, include_extras=True)  # keep Annotated constraints (lengths, validators)
    params = list(inspect.signature(fn).parameters.values())[1:]  # first parameter: ToolContext
    fields: dict[str, Any] = {}
    for p in params:
        if p.name not in hints:
            raise ConfigurationError(f"tool {tool_name!r}: parameter {p.name!r} needs a type annotation")
        default = ... if p.default is inspect.Parameter.empty else p.default
        fields[p.name] = (hints[p.name], FieldInfo(default=default, description=arg_docs.get(p.name)))
    model = create_model(
        f"{tool_name}_args", __config__=ConfigDict(extra="forbid"), **fields)
    return Tool(name=tool_name, description=summary, args_model=model, fn=fn, side_effect=side_effect,
                idempotent=idempotent, preview_fn=preview, recipients_fn=recipients, reconcile_fn=reconcile,
                connector=connector)
