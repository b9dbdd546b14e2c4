"""``RunAgentInput`` (AG-UI) into what the runtime takes: a run request, or decisions.

- A new run: the last user message is the prompt; earlier user and assistant text messages are
  the conversation; each ``context`` entry is attached context (``briefing``); ``threadId`` is the
  run's thread; ``runId`` names the start (the Idempotency-Key: the same input again is the same run);
  ``forwardedProps.supersede: true`` rejects the thread's pending approvals instead of a 409.
- The client's results of its own tools (trailing ``tool`` messages): they answer the calls of the
  ``tools`` it declared that the thread's paused run stopped on (``loop/client_tools.py``); the
  run then goes on (streamed like a resume).
- A resume (``resume`` entries): each entry decides the approval it names (``interruptId`` =
  approvalId) through the same path as ``POST /api/agent/approve``: ``resolved`` approves (with
  ``payload.arguments``: approves with edits; ``payload.approved: false``: rejects), ``cancelled``
  rejects. ``payload.reason`` is the decision's reason. The messages are not a new prompt then.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from ag_ui.core import RunAgentInput

from shared.api import ID_PATTERN, MAX_PROMPT_CHARS, ApproveRequest, AttachedContextItem, ConversationItem, RunRequest
from shared.errors import InvalidInput
from shared.web import MAX_IDEMPOTENCY_KEY, parse_model


@dataclass(frozen=True)
class AguiRequest:
    input: RunAgentInput
    run: RunRequest | None
    """The run to start (None: the input resumes one)."""
    decisions: list[ApproveRequest]
    tool_results: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Client tools' results by toolCallId (the input's trailing ``tool`` messages): they answer the
    calls the thread's paused run waits for."""


def _invalid(field: str, message: str) -> InvalidInput:
    return InvalidInput(f"invalid request: {field}", code="INVALID_REQUEST",
                        details={"errors": [{"field": field, "message": message}]})


def _text(content: Any) -> str:
    """A message's text: its string content, or its text parts joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(getattr(p, "text", "") for p in content if getattr(p, "type", None) == "text")
    return ""


def parse_input(body: dict[str, Any]) -> AguiRequest:
    """The request's ``RunAgentInput``, or a 400 naming what is wrong."""
    agui = parse_model(RunAgentInput, body)
    if not re.fullmatch(ID_PATTERN.strip("^$"), agui.thread_id):
        raise _invalid("threadId", "must be 1-128 characters of A-Z, a-z, 0-9, _ and -, not __…__")
    if not (0 < len(agui.run_id) <= MAX_IDEMPOTENCY_KEY and agui.run_id.isascii() and agui.run_id.isprintable()):
        raise _invalid("runId", f"must be 1-{MAX_IDEMPOTENCY_KEY} visible ASCII characters")
    if agui.resume:
        return AguiRequest(agui, None, [_decision(i, e.interrupt_id, e.status, e.payload)
                                        for i, e in enumerate(agui.resume)])
    trailing = []
    for m in reversed(agui.messages):
        if m.role != "tool":
            break
        trailing.append(m)
    if trailing:  # the client answers the calls of its tools the previous run stopped on
        return AguiRequest(agui, None, [], {getattr(m, "tool_call_id", ""): _tool_result(getattr(m, "content", ""))
                                            for m in reversed(trailing)})
    users = [i for i, m in enumerate(agui.messages) if m.role == "user"]
    if not users or not _text(agui.messages[users[-1]].content).strip():
        raise _invalid("messages", "a new run needs a user message with text (or resume entries)")
    last = users[-1]
    conversation = [ConversationItem(role=m.role, text=_text(m.content)[:MAX_PROMPT_CHARS])
                    for m in agui.messages[:last] if m.role in ("user", "assistant") and _text(m.content).strip()]
    attached = [AttachedContextItem(type="briefing", id=f"context-{i}", title=c.description[:1000],
                                    snippet=c.value[:10_000]) for i, c in enumerate(agui.context or [])]
    props = agui.forwarded_props if isinstance(agui.forwarded_props, dict) else {}
    supersede = props.get("supersede", False)
    if not isinstance(supersede, bool):
        raise _invalid("forwardedProps.supersede", "must be true or false")
    tools = [{"name": t.name, "description": t.description or t.name,
              **({"parameters": t.parameters} if isinstance(t.parameters, dict) else {})} for t in agui.tools or []]
    try:
        run = parse_model(RunRequest, {"prompt": _text(agui.messages[last].content), "threadId": agui.thread_id,
                                       "conversation": [c.model_dump() for c in conversation],
                                       "attachedContext": [a.model_dump(exclude_none=True) for a in attached],
                                       "supersede": supersede, "clientTools": tools})
    except InvalidInput as exc:  # name the input's fields, not the run request's
        errors = [{**e, "field": e["field"].replace("clientTools", "tools", 1)} for e in exc.details.get("errors", [])]
        raise InvalidInput(f"invalid request: {', '.join(e['field'] for e in errors)}", code="INVALID_REQUEST",
                           details={"errors": errors}) from None
    return AguiRequest(agui, run, [])


def _decision(index: int, interrupt_id: str, status: str, payload: Any) -> ApproveRequest:
    field = f"resume.{index}.payload"
    decision, reason, arguments = "approve" if status == "resolved" else "reject", None, None
    if status == "cancelled":
        reason = "cancelled"
    if isinstance(payload, bool):
        decision = "approve" if payload and status == "resolved" else "reject"
    elif isinstance(payload, dict):
        unknown = set(payload) - {"approved", "arguments", "reason"}
        if unknown:
            raise _invalid(f"{field}.{sorted(unknown)[0]}",
                           "unknown field; the payload takes approved, arguments, reason")
        if "approved" in payload:
            if not isinstance(payload["approved"], bool):
                raise _invalid(f"{field}.approved", "must be true or false")
            decision = "approve" if payload["approved"] and status == "resolved" else "reject"
        reason = payload.get("reason", reason)
        arguments = payload.get("arguments")
        if arguments is not None and decision != "approve":
            raise _invalid(f"{field}.arguments", "edits go only with an approval")
    elif payload is not None:
        raise _invalid(field, "must be an object {approved?, arguments?, reason?} or a boolean")
    req: dict[str, Any] = {"approvalId": interrupt_id, "decision": decision}
    if reason is not None:
        req["reason"] = reason
    if arguments is not None:
        req["arguments"] = arguments
    try:
        return parse_model(ApproveRequest, req)
    except InvalidInput as exc:
        renamed = {"approvalId": "interruptId"}
        errors = [{**e, "field": f"resume.{index}." + renamed.get(e["field"], f"payload.{e['field']}")}
                  for e in exc.details.get("errors", [])]
        raise InvalidInput(f"invalid request: {', '.join(e['field'] for e in errors)}", code="INVALID_REQUEST",
                           details={"errors": errors}) from None


def _tool_result(content: Any) -> dict[str, Any]:
    """A client tool's result as the model is given it: a JSON object as sent, anything else wrapped."""
    text = _text(content)
    try:
        value = json.loads(text)
    except ValueError:
        value = text
    return value if isinstance(value, dict) else {"result": value}
