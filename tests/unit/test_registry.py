"""The tool registry: declarations built once per registry, rebuilt when a tool is added."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from pydantic import StringConstraints

from shared.errors import ConfigurationError
from shared.formats import clean_json_schema
from shared.tools import default_registry
from shared.tools.context import ToolContext
from shared.tools.registry import ToolArgsError, ToolRegistry, args_schema, build_tool


def _lookup(ctx: ToolContext, key: str, limit: int = 3) -> dict[str, Any]:
    """Look something up.

    Args:
        key: What to look up.
        limit: At most this many results.
    """
    return {"key": key, "limit": limit}


def _ping(ctx: ToolContext) -> dict[str, Any]:
    """Answer pong."""
    return {"pong": True}


def test_declarations_match_the_tools_and_are_built_once() -> None:
    registry = default_registry()
    first = registry.declarations()
    assert [d.name for d in first] == [t.name for t in registry]
    assert [d.parameters for d in first] == [t.declaration().parameters for t in registry]
    second = registry.declarations()
    assert all(a is b for a, b in zip(first, second, strict=True))  # cached, not rebuilt
    second.clear()  # callers get their own list
    assert len(registry.declarations()) == len(first)


def test_adding_a_tool_rebuilds_the_declarations() -> None:
    registry = ToolRegistry()
    registry.add(build_tool(_lookup, side_effect=False))
    assert [d.name for d in registry.declarations()] == ["_lookup"]
    decl = registry.declarations()[0]
    assert decl.description == "Look something up."
    assert decl.parameters["required"] == ["key"]
    assert decl.parameters["properties"]["limit"]["description"] == "At most this many results."
    registry.add(build_tool(_ping, side_effect=False))
    assert [d.name for d in registry.declarations()] == ["_lookup", "_ping"]
    with pytest.raises(ConfigurationError):
        registry.add(build_tool(_ping, side_effect=True))
    assert [d.name for d in registry.declarations()] == ["_lookup", "_ping"]


def _note(ctx: ToolContext, title: str, body: str = "") -> dict[str, Any]:
    """Write a note.

    Args:
        title: The note's title.
        body: Its text.
    """
    return {"title": title}


def test_an_argument_called_title_is_declared() -> None:
    registry = ToolRegistry()
    registry.add(build_tool(_note, side_effect=False))
    (decl,) = registry.declarations()
    assert decl.parameters["required"] == ["title"]
    assert decl.parameters["properties"]["title"] == {"type": "string", "description": "The note's title."}
    assert "title" not in decl.parameters  # pydantic's annotation is dropped


def test_every_required_argument_of_a_shipped_tool_is_declared() -> None:
    for decl in default_registry().declarations():
        props = decl.parameters.get("properties", {})
        assert set(decl.parameters.get("required", [])) <= set(props), decl.name
    create = next(d for d in default_registry().declarations() if d.name == "calendar_event_create")
    assert "title" in create.parameters["properties"]


def _tag(ctx: ToolContext, label: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1,
                                                                   max_length=5)]) -> dict[str, Any]:
    """Tag something.

    Args:
        label: A short label.
    """
    return {"label": label}


def test_annotated_constraints_are_validated_and_declared() -> None:
    # get_type_hints drops Annotated metadata unless asked to keep it: the constraints must survive.
    tool = build_tool(_tag, side_effect=False)
    assert tool.declaration().parameters["properties"]["label"] == {
        "type": "string", "minLength": 1, "maxLength": 5, "description": "A short label."}
    assert tool.validate({"label": " ok "}).label == "ok"  # type: ignore[attr-defined]
    with pytest.raises(ToolArgsError, match="label: String should have at most 5 characters"):
        tool.validate({"label": "too long"})


def test_declared_schemas_equal_pydantics_own() -> None:
    """``args_schema`` encodes simple defaults itself (cold start): every shipped tool's schema, the
    plan meta tools' and one with defaults of every kind are exactly what pydantic generates."""
    from shared.agent.plan_tool import CreatePlanArgs, ExecutePlanArgs

    def _defaults(ctx: ToolContext, a: str = "x", b: int = 3, c: bool = False, d: float = 0.5,
                  e: list[str] | None = None, f: tuple[int, ...] = (1, 2), g: str | None = None) -> dict[str, Any]:
        """Defaults of every kind."""
        return {}

    models = [t.args_model for t in default_registry()]
    models += [CreatePlanArgs, ExecutePlanArgs, build_tool(_defaults, side_effect=False).args_model]
    for model in models:
        expected = clean_json_schema(model.model_json_schema())
        expected.pop("description", None)
        assert args_schema(model) == expected, model.__name__
