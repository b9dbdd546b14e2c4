"""The JSON Schema of every message, and the validation of every frame in and out.

The schemas are generated from the payload models of ``hostagent.protocol`` and printed in
``docs/host-protocol.md`` (``python -m hostagent.docs_sections`` writes that section;
``tests/hostagent/test_schemas.py`` checks the document matches). Validation uses ``jsonschema``
(Draft 2020-12), so a peer written in another language is held to exactly the published schemas.

``parse_frame`` turns one text frame into an ``Envelope`` or raises ``ProtocolViolation``
(code ``INVALID_MESSAGE``) naming what was wrong: not JSON, not an object, wrong version, unknown
type, a type the peer may not send, a payload that does not match its schema, or a toolSchema
whose ``params`` is not a valid JSON Schema.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from functools import cache
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, ValidationError
from pydantic import BaseModel

from hostagent.errors import ProtocolViolation
from hostagent.protocol import MESSAGES, PROTOCOL_VERSION, Envelope, Sender, ToolSpec
from shared.formats import clean_json_schema

DIALECT = "https://json-schema.org/draft/2020-12/schema"
_ANNOTATIONS = frozenset({"title", "default", "description"})
RAW_EXCERPT = 200  # characters of a bad frame quoted in an error


def model_schema(model: type[BaseModel]) -> dict[str, Any]:
    """``model``'s JSON Schema: ``$ref``s inlined, pydantic's titles/defaults/descriptions dropped
    (``clean_json_schema``), and optional fields optional but not nullable (the wire leaves them out
    instead of sending null)."""
    return clean_json_schema(_optional_not_nullable(model.model_json_schema()), inline_refs=True, drop=_ANNOTATIONS)


def _optional_not_nullable(node: Any) -> Any:
    """``node`` with every property an object does not require stripped of its ``null`` branch."""
    if isinstance(node, list):
        return [_optional_not_nullable(v) for v in node]
    if not isinstance(node, dict):
        return node
    required = set(node.get("required", ()))
    return {key: {name: _optional_not_nullable(sub if name in required else _not_null(sub))
                  for name, sub in value.items()}
            if key == "properties" and isinstance(value, dict) else _optional_not_nullable(value)
            for key, value in node.items()}


def _not_null(prop: dict[str, Any]) -> dict[str, Any]:
    branches = prop.get("anyOf")
    if not isinstance(branches, list):
        return prop
    kept = [b for b in branches if b != {"type": "null"}]
    rest = {k: v for k, v in prop.items() if k != "anyOf"}
    return {**rest, **kept[0]} if len(kept) == 1 else {**rest, "anyOf": kept}


def _envelope(type_schema: dict[str, Any], payload: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "v": {"const": PROTOCOL_VERSION},
            "id": {"type": "string", "minLength": 1, "maxLength": 200},
            "type": type_schema,
            "replyTo": {"type": "string", "minLength": 1, "maxLength": 200},
            "sessionId": {"type": "string", "minLength": 1, "maxLength": 200},
            "payload": payload,
        },
        "required": ["v", "id", "type", "payload"],
        "additionalProperties": False,
    }


@cache
def message_schema(type_: str) -> dict[str, Any]:
    """The complete JSON Schema of one message type (envelope and payload)."""
    model, _ = MESSAGES[type_]
    return {"$schema": DIALECT, "$id": f"urn:host-protocol:{PROTOCOL_VERSION}:{type_}", "title": type_,
            **_envelope({"const": type_}, model_schema(model))}


ENVELOPE_SCHEMA: dict[str, Any] = {
    "$schema": DIALECT, "$id": f"urn:host-protocol:{PROTOCOL_VERSION}:envelope", "title": "envelope",
    **_envelope({"type": "string", "minLength": 1}, {"type": "object"}),
}
# The envelope minus the version constant: a frame of another version gets its own clear error.
_SHAPE = {**ENVELOPE_SCHEMA, "properties": {**ENVELOPE_SCHEMA["properties"], "v": {"type": "string"}}}


@cache
def _validator(type_: str) -> Draft202012Validator:
    return Draft202012Validator(message_schema(type_))


_shape_validator = Draft202012Validator(_SHAPE)


def _first_error(validator: Draft202012Validator, instance: Any) -> ValidationError | None:
    errors = sorted(validator.iter_errors(instance), key=lambda e: (len(e.path), list(map(str, e.path))))
    return errors[0] if errors else None


def _where(error: ValidationError) -> str:
    return "/".join(str(p) for p in error.absolute_path) or "(root)"


def _excerpt(text: str) -> str:
    return text if len(text) <= RAW_EXCERPT else text[:RAW_EXCERPT] + "…"


def parse_frame(text: str | bytes, *, sender: Sender | Iterable[Sender]) -> Envelope:
    """Validate one inbound frame that ``sender`` (or one of several) may have sent."""
    senders = {sender} if isinstance(sender, str) else set(sender)
    if isinstance(text, bytes):
        raise ProtocolViolation("binary frame: the protocol sends JSON text frames only",
                                details={"bytes": len(text)})
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise ProtocolViolation(f"frame is not JSON: {exc}", details={"raw": _excerpt(text)}) from None
    if not isinstance(data, dict):
        raise ProtocolViolation("frame is not a JSON object", details={"raw": _excerpt(text)})
    error = _first_error(_shape_validator, data)
    if error is not None:
        raise ProtocolViolation(f"envelope is invalid at {_where(error)}: {error.message}",
                                details={"path": _where(error), "raw": _excerpt(text)})
    if data["v"] != PROTOCOL_VERSION:
        raise ProtocolViolation(f"unsupported protocol version {data['v']!r} (expected {PROTOCOL_VERSION!r})",
                                details={"v": data["v"], "type": data["type"], "id": data["id"]})
    type_ = data["type"]
    known = MESSAGES.get(type_)
    if known is None:
        raise ProtocolViolation(f"unknown message type {type_!r}", details={"type": type_, "id": data["id"]})
    allowed: set[Sender] = {known[1]}
    # A relay may answer ``error`` for its own failures, so host errors are accepted from it too.
    if type_ == "error":
        allowed.add("relay")
    if not allowed & senders:
        raise ProtocolViolation(f"{type_!r} may not be sent by the {' or the '.join(sorted(senders))}",
                                details={"type": type_, "id": data["id"]})
    error = _first_error(_validator(type_), data)
    if error is not None:
        raise ProtocolViolation(f"{type_} is invalid at {_where(error)}: {error.message}",
                                details={"type": type_, "id": data["id"], "path": _where(error)})
    if type_ in ("snapshot.state", "state.updated"):
        problems = tool_schema_problems(data["payload"]["toolSchema"])
        if problems:
            raise ProtocolViolation(f"{type_} has an invalid toolSchema: {problems[0]}",
                                    details={"type": type_, "id": data["id"], "problems": problems})
    return Envelope.model_validate(data)


def check_outbound(env: Envelope) -> dict[str, Any]:
    """The wire form of an envelope this side sends, validated against its schema (a failure is a
    bug of the sender, raised before anything reaches the peer)."""
    wire = env.wire()
    if env.type not in MESSAGES:
        raise ProtocolViolation(f"refusing to send unknown message type {env.type!r}")
    error = _first_error(_validator(env.type), wire)
    if error is not None:
        raise ProtocolViolation(f"refusing to send an invalid {env.type} ({_where(error)}: {error.message})",
                                details={"type": env.type, "path": _where(error)})
    return wire


def tool_schema_problems(tools: list[dict[str, Any]]) -> list[str]:
    """Why a toolSchema is unusable: duplicate names, or ``params`` that is not a valid JSON Schema."""
    problems: list[str] = []
    seen: set[str] = set()
    for i, tool in enumerate(tools):
        name = tool.get("name")
        if name in seen:
            problems.append(f"toolSchema[{i}]: duplicate tool name {name!r}")
        seen.add(str(name))
        params = tool.get("params")
        if not isinstance(params, dict):
            problems.append(f"toolSchema[{i}] ({name}): params is not a JSON object")
            continue
        try:
            Draft202012Validator.check_schema(params)
        except SchemaError as exc:
            where = "/".join(str(p) for p in exc.absolute_path) or "(root)"
            problems.append(f"toolSchema[{i}] ({name}): params is not a valid JSON Schema at {where}: {exc.message}")
    return problems


def params_problems(tool: ToolSpec, params: dict[str, Any]) -> list[str]:
    """Why ``params`` does not match ``tool``'s JSON Schema (empty when it does)."""
    validator = Draft202012Validator(tool.params)
    errors = sorted(validator.iter_errors(params), key=lambda e: list(map(str, e.path)))
    return [f"{_where(e)}: {e.message}" for e in errors]


def all_message_schemas() -> dict[str, dict[str, Any]]:
    return {type_: message_schema(type_) for type_ in MESSAGES}


def main(argv: list[str] | None = None) -> int:
    """Print every message schema as JSON (``python -m hostagent.docs_sections`` writes them into
    docs/host-protocol.md)."""
    del argv
    json.dump(all_message_schemas(), sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
