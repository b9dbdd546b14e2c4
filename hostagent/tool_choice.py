"""Choosing tools and parameters from the JSON Schemas and descriptions the host sends.

The rules planner knows the booking flow's steps, not a host's spelling of them: which tool of the
current toolSchema searches (a free-text, query-like string parameter, a name or description that
says search/find/filter) and which parameter takes which value are read from the schemas here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from hostagent.protocol import ToolSpec

_QUERY_PARAM = re.compile(r"^(q|query|search|searchText|term|text|keywords?|title|phrase|filter|name)$", re.IGNORECASE)
_SEARCH_WORDS = re.compile(r"\b(search|find|filter|look ?up|query|lookup)", re.IGNORECASE)
_DATE_PARAM = re.compile(r"date|day", re.IGNORECASE)


def _properties(tool: ToolSpec) -> dict[str, dict[str, Any]]:
    props = tool.params.get("properties")
    if not isinstance(props, dict):
        return {}
    return {k: v for k, v in props.items() if isinstance(k, str) and isinstance(v, dict)}


def _required(tool: ToolSpec) -> list[str]:
    required = tool.params.get("required")
    return [r for r in required if isinstance(r, str)] if isinstance(required, list) else []


def _is_string(schema: dict[str, Any]) -> bool:
    kind = schema.get("type")
    return kind == "string" or (isinstance(kind, list) and "string" in kind)


@dataclass(frozen=True)
class SearchTool:
    tool: ToolSpec
    query_param: str
    date_param: str | None

    def params(self, query: str, date: str | None) -> dict[str, Any]:
        out: dict[str, Any] = {self.query_param: query}
        if date is not None and self.date_param is not None:
            out[self.date_param] = date
        return out


def find_search_tool(tools: list[ToolSpec]) -> SearchTool | None:
    """The tool of ``tools`` that takes a free-text query (best match first), or None.

    A candidate has a string parameter named like a query (``query``, ``q``, ``search``, ``text``,
    ...) or, when the tool's name or description says it searches, its only string parameter; and
    every required parameter is that one (or a date the goal may give)."""
    best: tuple[int, SearchTool] | None = None
    for tool in tools:
        props = _properties(tool)
        strings = [k for k, v in props.items() if _is_string(v) and not _DATE_PARAM.search(k)
                   and "pattern" not in v and "enum" not in v and not k.lower().endswith("id")]
        says_search = bool(_SEARCH_WORDS.search(f"{tool.name} {tool.description or ''}"))
        named = [k for k in strings if _QUERY_PARAM.match(k)]
        query = named[0] if named else (strings[0] if says_search and len(strings) == 1 else None)
        if query is None:
            continue
        date = next((k for k, v in props.items() if _DATE_PARAM.search(k) and _is_string(v)), None)
        if any(r not in (query, date) for r in _required(tool)):
            continue
        score = (2 if named else 0) + (2 if says_search else 0) + (1 if date else 0)
        if best is None or score > best[0]:
            best = (score, SearchTool(tool, query, date))
    return best[1] if best is not None else None


def single_param(tool: ToolSpec | None, fallback: str) -> str:
    """The parameter a one-value tool takes: its only required property, else its only property."""
    if tool is None:
        return fallback
    required = _required(tool)
    if len(required) == 1:
        return required[0]
    props = list(_properties(tool))
    return props[0] if len(props) == 1 else fallback


def contact_params(tool: ToolSpec | None, name: str, email: str) -> dict[str, Any]:
    """``name`` and ``email`` under the tool's own property names (``fullName``, ``mail``, ...)."""
    props = list(_properties(tool)) if tool is not None else []
    email_key = next((k for k in props if "mail" in k.lower()), "email")
    name_key = next((k for k in props if "name" in k.lower() and k != email_key), "name")
    return {name_key: name, email_key: email}
