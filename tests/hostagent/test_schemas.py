"""The published schemas are the ones in force: docs/host-protocol.md holds exactly what the models
generate, every schema is valid JSON Schema, and frames are judged by them."""

from __future__ import annotations

import json
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from hostagent.docs_sections import DOC, SECTIONS, section
from hostagent.errors import ProtocolViolation
from hostagent.protocol import FROM_AGENT, MESSAGES, TO_AGENT, Envelope
from hostagent.schemas import ENVELOPE_SCHEMA, check_outbound, message_schema, parse_frame, tool_schema_problems
from hostagent.session_log import log_record_schema

EXAMPLES: dict[str, dict[str, Any]] = {
    "relay.join": {"room": "r1", "role": "agent"},
    "relay.joined": {"room": "r1"},
    "session.start": {"goal": "Book Dune"},
    "session.started": {"sessionId": "s1", "stage": "browse"},
    "snapshot.get": {},
    "snapshot.state": {"stage": "browse", "uiSpec": {"movies": []}, "messages": [{"role": "user", "text": "hi"}],
                       "toolSchema": [{"name": "go_back", "params": {"type": "object"}}]},
    "tool.call": {"name": "go_back", "params": {}, "reason": "the user wants another movie"},
    "tool.result": {"name": "go_back", "ok": True, "result": None},
    "error": {"code": "UNKNOWN_TOOL", "message": "no such tool"},
    "agent.message": {"text": "Booked.", "kind": "info"},
    "session.end": {"reason": "done"},
    "session.ended": {"sessionId": "s1", "summary": "booked"},
    "state.updated": {"stage": "seats", "uiSpec": None, "toolSchema": [], "cause": "a-1"},
    "user.message": {"text": "make it two", "stage": "seats"},
}


def test_the_docs_hold_the_generated_schemas() -> None:
    text = DOC.read_text()
    for name, build in SECTIONS.items():
        assert section(text, name) == build(), f"docs/host-protocol.md {name} is stale: " \
                                               "run python -m hostagent.docs_sections"
    for type_ in MESSAGES:
        assert f"#### `{type_}`" in text and f"| `{type_}` |" in text


@pytest.mark.parametrize("type_", list(MESSAGES))
def test_each_message_schema_is_valid_and_accepts_its_example(type_: str) -> None:
    schema = message_schema(type_)
    Draft202012Validator.check_schema(schema)
    frame = {"v": "mvp-0.2", "id": "x1", "type": type_, "payload": EXAMPLES[type_]}
    assert not list(Draft202012Validator(schema).iter_errors(frame))
    assert not list(Draft202012Validator(ENVELOPE_SCHEMA).iter_errors(frame))
    sender = "agent" if type_ in FROM_AGENT else ("relay" if type_ == "relay.joined" else "host")
    env = parse_frame(json.dumps(frame), sender=sender)
    assert env.wire() == frame
    # Optional fields are optional, never nullable; unknown fields are refused.
    for key in ("goal", "kind", "summary", "cause", "stage", "description"):
        if key in EXAMPLES[type_] and key not in schema["properties"]["payload"].get("required", []):
            nulled = {**frame, "payload": {**EXAMPLES[type_], key: None}}
            assert list(Draft202012Validator(schema).iter_errors(nulled)), key
    extra = {**frame, "payload": {**EXAMPLES[type_], "surprise": 1}}
    assert list(Draft202012Validator(schema).iter_errors(extra))


def test_the_agent_and_the_host_split_the_message_types() -> None:
    agent_sends = {"relay.join", "session.start", "snapshot.get", "tool.call", "agent.message", "session.end"}
    assert agent_sends == set(FROM_AGENT)
    assert set(MESSAGES) - agent_sends == set(TO_AGENT)


def test_the_log_schema_is_valid_and_strict() -> None:
    schema = log_record_schema()
    Draft202012Validator.check_schema(schema)
    assert set(schema["required"]) >= {"ts", "sessionId", "direction", "type", "id", "replyTo", "stage", "reason",
                                       "outcome", "code"}
    assert schema["additionalProperties"] is False


def test_outbound_envelopes_are_checked_before_sending() -> None:
    with pytest.raises(ProtocolViolation, match=r"refusing to send an invalid tool\.call"):
        check_outbound(Envelope(id="a1", type="tool.call", payload={"name": "x", "params": {}, "reason": ""}))
    with pytest.raises(ProtocolViolation, match="unknown message type"):
        check_outbound(Envelope(id="a1", type="tool.progress", payload={}))


@pytest.mark.parametrize(("tools", "problem"), [
    ([{"name": "a", "params": {"type": "nonsense"}}], "params is not a valid JSON Schema at type"),
    ([{"name": "a", "params": {"type": "object", "required": "x"}}], "params is not a valid JSON Schema at required"),
    ([{"name": "a", "params": {}}, {"name": "a", "params": {}}], "duplicate tool name 'a'"),
], ids=["bad-type", "bad-required", "duplicate"])
def test_tool_schema_problems(tools: list[dict[str, Any]], problem: str) -> None:
    problems = tool_schema_problems(tools)
    assert len(problems) == 1 and problem in problems[0]
