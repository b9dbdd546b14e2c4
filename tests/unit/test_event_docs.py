"""The step's events built as documents (shared/events/loop.py, issue 33) are exactly the documents
their models give: same keys, same order, ``None`` left out, values as JSON."""

from __future__ import annotations

from typing import Any

import pytest

from shared.events import AgentStateEvent, ToolCallEvent, ToolResultEvent, event_to_doc
from shared.events.loop import agent_state_doc, tool_call_doc, tool_result_doc

NESTED: dict[str, Any] = {"q": "x", "n": 3, "f": 1.5, "ok": True, "none": None, "list": [1, {"a": [2, "é"]}],
                          "tuple": (1, 2), "deep": {"k": {"j": None}}}


def _same(built: dict[str, Any], model_doc: dict[str, Any]) -> None:
    assert list(built.items()) == list(model_doc.items())  # values and key order


@pytest.mark.parametrize("details", [None, "lookup", ""])
@pytest.mark.parametrize("state", ["thinking", "executing_tool", "executing_plan", "waiting_on_user"])
def test_agent_state_doc(state: Any, details: str | None) -> None:
    _same(agent_state_doc(state, "general", details),
          event_to_doc(AgentStateEvent(state=state, contextType="general", details=details)))


@pytest.mark.parametrize("args", [None, {}, {"q": "x"}, NESTED])
@pytest.mark.parametrize("status", ["executing", "awaiting_confirmation", "rejected", "failed"])
def test_tool_call_doc(status: Any, args: dict[str, Any] | None) -> None:
    _same(tool_call_doc("lookup", "look x up", "act_1", status, args),
          event_to_doc(ToolCallEvent(toolName="lookup", preview="look x up", actionId="act_1", status=status,
                                     args=args)))


@pytest.mark.parametrize(("output", "error"), [(None, None), ({"result": "r"}, None), (None, "it broke"),
                                               (NESTED, "both"), ({}, "")])
@pytest.mark.parametrize("status", ["completed", "failed", "rejected"])
def test_tool_result_doc(status: Any, output: dict[str, Any] | None, error: str | None) -> None:
    _same(tool_result_doc("lookup", "act_1", status, output=output, error=error),
          event_to_doc(ToolResultEvent(toolName="lookup", actionId="act_1", status=status, output=output,
                                       error=error)))


def test_a_built_document_shares_nothing_with_its_arguments() -> None:
    """As a model's dump, the document holds copies: changing the action's arguments or result
    afterwards changes no event already emitted."""
    args: dict[str, Any] = {"q": {"deep": [1]}}
    output: dict[str, Any] = {"result": {"deep": [1]}}
    call, result = tool_call_doc("t", "p", "a", "executing", args), tool_result_doc("t", "a", "completed", output)
    args["q"]["deep"].append(2)
    output["result"]["deep"].append(2)
    assert call["args"] == {"q": {"deep": [1]}} and result["output"] == {"result": {"deep": [1]}}
