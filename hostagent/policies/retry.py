"""Failure classification and recovery (seed 002 §7).

- ``UNKNOWN_TOOL``: resync with ``snapshot.get`` and replan from the new toolSchema.
- ``INVALID_PARAMS``: adjust the params once, retry once, then replan.
- ``TIMEOUT_STATE_UPDATE``: ``snapshot.get`` and continue (the action itself succeeded).
- ``TIMEOUT_RESULT`` (the call may or may not have run), ``FRAME_REFUSED`` (a frame that broke the
  protocol came while the call waited; it may have been its reply): resync and replan.
- ``TOOL_EXECUTION_FAILED`` (the host says nothing changed), ``DESYNC_DETECTED`` (the state was
  just read): replan.
- ``INVALID_MESSAGE``, ``SESSION_NOT_ACTIVE``: the session cannot go on (protocol failure).
- Every failure but a late state update counts against its stage; at ``max_stage_failures`` (3)
  the agent tells the user it is blocked and stops acting.
"""

from __future__ import annotations

import contextlib
import copy
import enum
from dataclasses import dataclass
from typing import Any

from jsonschema import Draft202012Validator

from hostagent.protocol import ToolSpec


class Recovery(enum.StrEnum):
    RESYNC_REPLAN = "resync_replan"
    ADJUST_RETRY = "adjust_retry"
    REPLAN = "replan"
    SNAPSHOT_CONTINUE = "snapshot_continue"
    ABORT = "abort"


PROTOCOL_CODES = frozenset({"INVALID_MESSAGE", "SESSION_NOT_ACTIVE"})


@dataclass(frozen=True)
class RetryPolicy:
    max_stage_failures: int = 3

    def decide(self, code: str, *, is_retry: bool = False) -> Recovery:
        if code in PROTOCOL_CODES:
            return Recovery.ABORT
        if code == "UNKNOWN_TOOL":
            return Recovery.RESYNC_REPLAN
        if code == "INVALID_PARAMS":
            return Recovery.REPLAN if is_retry else Recovery.ADJUST_RETRY
        if code == "TIMEOUT_STATE_UPDATE":
            return Recovery.SNAPSHOT_CONTINUE
        if code in ("TIMEOUT_RESULT", "FRAME_REFUSED"):
            return Recovery.RESYNC_REPLAN
        # TOOL_EXECUTION_FAILED: the host says nothing changed; DESYNC_DETECTED: the state was just read.
        return Recovery.REPLAN

    @staticmethod
    def counts_as_failure(code: str) -> bool:
        """A late state update is not a failure; a refused frame counts among the protocol faults."""
        return code not in ("TIMEOUT_STATE_UPDATE", "FRAME_REFUSED")

    def blocked(self, failures_on_stage: int) -> bool:
        return failures_on_stage >= self.max_stage_failures


def adjust_params(tool: ToolSpec, params: dict[str, Any]) -> dict[str, Any]:
    """``params`` made to fit ``tool``'s schema where a mechanical fix exists: unknown keys dropped
    (when the schema forbids them), strings trimmed, numbers/booleans given as text converted, case
    changed to satisfy a pattern, missing required keys filled from a schema ``default``.
    Returns the params unchanged when nothing applies (the retry then tests a transient rejection)."""
    schema = tool.params
    props: dict[str, Any] = schema.get("properties", {}) if isinstance(schema.get("properties"), dict) else {}
    out = copy.deepcopy(params)
    if schema.get("additionalProperties") is False:
        out = {k: v for k, v in out.items() if k in props}
    for key, sub in props.items():
        if key in out and isinstance(sub, dict):
            out[key] = _fit(out[key], sub)
        elif key not in out and key in schema.get("required", ()) and isinstance(sub, dict) and "default" in sub:
            out[key] = sub["default"]
    return out


def _fits(value: Any, schema: dict[str, Any]) -> bool:
    return not any(True for _ in Draft202012Validator(schema).iter_errors(value))


def _fit(value: Any, schema: dict[str, Any]) -> Any:
    if _fits(value, schema):
        return value
    kind = schema.get("type")
    candidates: list[Any] = []
    if isinstance(value, str):
        text = value.strip()
        candidates += [text, text.upper(), text.lower(), " ".join(text.split())]
        if kind == "integer":
            candidates += [int(text)] if text.lstrip("-").isdigit() else []
        if kind == "number":
            with contextlib.suppress(ValueError):
                candidates.append(float(text))
        if kind == "boolean" and text.lower() in ("true", "false"):
            candidates.append(text.lower() == "true")
        if kind == "array":
            candidates.append([p.strip() for p in text.split(",") if p.strip()])
    if isinstance(value, int | float) and kind == "string":
        candidates.append(str(value))
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        fitted = [_fit(v, schema["items"]) for v in value]
        candidates += [fitted, list(dict.fromkeys(fitted))]
    for candidate in candidates:
        if _fits(candidate, schema):
            return candidate
    return value
