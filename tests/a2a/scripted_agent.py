"""The scripted test model behind the A2A tests: a handler of the fake Gemini server
(``tests/fakes/fake_gemini.py``) that answers by the A2A message id the request names.

The server tells the model which A2A message a run answers (the system instruction's "A2A message
<id>", and a reply the caller sent to a pause reaches the model as the rejected call's reason,
"A2A message <id>: ..."), so the TCK's messageId prefixes (``tck-complete-task``,
``tck-input-required``, ``tck-stream-001``, ...) drive the model, never the server:

- ``message-response``: answer directly, without any tool (our server then replies with a message,
  not a task: docs/a2a.md, "Message or task");
- ``input-required``: call ``save_memory`` (a side effect: the run pauses for approval, the task is
  ``input-required``); once the call ran, answer that it is done;
- every other scenario is a task: first look something up (``search_memory``, read-only), then
  answer: ``complete-task`` and the other prefixes the TCK scenarios name with their text,
  ``artifact-file`` with a file's bytes, ``artifact-file-url`` with a file by URL;
- ``test-resubscribe-message-id``: answer after a few seconds (a long task to subscribe to).
"""

from __future__ import annotations

import json
import re
import threading
from typing import Any

from tests.fakes.fake_gemini import Received, Reply, call, file_ref, inline

_ID = re.compile(r"A2A message (\S+)")
ANSWERS = {
    "complete-task": "Hello from TCK",
    "stream-001": "Stream hello from TCK",
    "stream-003": "Stream task lifecycle",
    "stream-ordering-001": "Ordered output",
    "stream-artifact-text": "Streamed text content",
    "artifact-text": "Generated text content",
    "artifact-data": '{"key": "value", "count": 42}',
}
FILES = {
    "artifact-file": inline(b"Generated file content\n", "text/plain", name="output.txt"),
    "artifact-file-url": file_ref("https://example.com/output.txt", "text/plain", name="output.txt"),
}
"""Scenarios the model answers with a file: its bytes (Gemini ``inlineData``) or a reference."""
DIRECT = "message-response"
DIRECT_ANSWER = "Direct message response"
SIDE_EFFECT = "save_memory"
LOOK_UP = "search_memory"
LONG_TASK_S = 4.0


def latest_message_id(received: Received) -> str:
    """The id of the last A2A message the request shows the model: a reply in a tool response
    (newest first), else the one named by the system instruction."""
    for content in reversed(received.body.get("contents", [])):
        for part in reversed(content.get("parts", [])):
            found = _ID.findall(json.dumps(part.get("functionResponse") or {}))
            if found:
                return str(found[-1]).rstrip('",.:')
    found = _ID.findall(received.system_instruction)
    return str(found[-1]).rstrip(",.:") if found else ""


def _first_word(received: Received) -> str:
    for content in received.body.get("contents", []):
        if content.get("role") == "user":
            for part in content.get("parts", []):
                if part.get("text"):
                    return str(part["text"]).split()[0] if part["text"].split() else ""
    return ""


def _last_parts(received: Received) -> list[dict[str, Any]]:
    contents = received.body.get("contents", [])
    return list(contents[-1].get("parts", [])) if contents else []


class ScriptedAgent:
    """Counts the side effects it asked for and saw done (``done``), for the tests' checks."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.calls = 0

    def __call__(self, received: Received) -> Reply:
        message_id = latest_message_id(received)
        prefix = message_id.removeprefix("tck-")
        if not any(prefix.startswith(k) for k in (*ANSWERS, *FILES, DIRECT, "input-required")) \
                and not message_id.startswith("test-resubscribe-message-id"):
            # A message id of no scenario (another agent's own ids): the first user text's first
            # word names the scenario instead.
            message_id = _first_word(received) or message_id
            prefix = message_id.removeprefix("tck-")
        executed = [p["functionResponse"] for p in _last_parts(received)
                    if p.get("functionResponse") and "error" not in json.dumps(p["functionResponse"]["response"])]
        if prefix.startswith(DIRECT):  # answered directly, no tool: a message, not a task
            return Reply.text(DIRECT_ANSWER)
        if prefix.startswith("input-required"):
            if executed:
                return Reply.text(f"Done: {SIDE_EFFECT} ran.")
            with self._lock:
                self.calls += 1
            return Reply([call(SIDE_EFFECT, {"text": f"tck note {message_id}"})])
        if not any(e.get("name") == LOOK_UP for e in executed):
            # Every other scenario is a task: the agent looks something up first.
            return Reply([call(LOOK_UP, {"query": message_id})])
        if message_id.startswith("test-resubscribe-message-id"):
            return Reply.text("Long task done", delay_s=LONG_TASK_S)
        for key in sorted(FILES, key=len, reverse=True):  # artifact-file-url before artifact-file
            if prefix.startswith(key):
                return Reply([FILES[key]])
        for key, answer in ANSWERS.items():
            if prefix.startswith(key):
                return Reply.text(answer)
        return Reply.text(f"Unhandled messageId prefix: {message_id}")
