"""Logs of real HTTP requests: Cloud Logging fields, the request's trace, run ids, no user data.

The lines are captured from the root logger through the real formatter, as Cloud Run reads them
from stdout. A streamed run logs from the thread that drives it, after the handler returned.
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from flask.testing import FlaskClient

from shared.errors import ModelError
from shared.logs import SAMPLED_KEY, SPAN_KEY, TRACE_KEY, CloudLoggingFormatter
from shared.loop.resume import resume_run
from shared.models.base import Turn
from shared.models.scripted import ScriptedModel, call, calls_turn, text_turn
from tests.e2e.conftest import ALICE, Install

PROJECT = "demo-logs-e2e"
TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
TRACE_HEADERS = {**ALICE, "X-Cloud-Trace-Context": f"{TRACE}/1;o=1"}
PROMPT = "PROMPT-SECRET-91c4 plan my surprise party"
TOOL_ARG = "TOOL-ARG-SECRET-5d2e"
ATTACHED = "ATTACHED-SECRET-77ab"
ANSWER = "ANSWER-SECRET-0f3c"
SECRETS = (PROMPT, "PROMPT-SECRET-91c4", TOOL_ARG, ATTACHED, ANSWER)


class Lines:
    def __init__(self) -> None:
        self.stream = io.StringIO()

    def entries(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.stream.getvalue().splitlines()]

    def raw_at_info_or_above(self) -> list[str]:
        return [line for line in self.stream.getvalue().splitlines()
                if json.loads(line)["severity"] not in ("DEBUG", "DEFAULT")]


@pytest.fixture
def lines() -> Iterator[Lines]:
    """Every record of every logger, as the JSON line Cloud Logging would receive."""
    out = Lines()
    root = logging.getLogger()
    handler = logging.StreamHandler(out.stream)
    handler.setFormatter(CloudLoggingFormatter(PROJECT))
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    yield out
    root.removeHandler(handler)
    root.setLevel(level)


def script(ending: str) -> list[Turn | Exception]:
    """A tool call with a recognisable argument, then an answer or a model failure."""
    tool: list[Turn | Exception] = [calls_turn(call("search_memory", {"query": TOOL_ARG}))]
    if ending == "answer":
        return [*tool, text_turn(ANSWER)]
    return [*tool, ModelError("upstream unavailable", status=503, retryable=True)]


def request_body() -> dict[str, Any]:
    return {"prompt": PROMPT,
            "attachedContext": [{"type": "email", "id": "m1", "title": "t", "snippet": ATTACHED}]}


def post(client: FlaskClient, route: str) -> tuple[str, str]:
    """POST the run to ``route`` with a trace header; the run's (runId, threadId)."""
    resp = client.post(route, json=request_body(), headers=TRACE_HEADERS)
    assert resp.status_code == 200
    if route.endswith("/stream"):
        events = [json.loads(x) for x in resp.data.decode().splitlines()]  # iterated after the handler returned
        assert events[-1]["type"] in ("result", "error")
        return events[0]["runId"], events[0]["threadId"]
    body = resp.get_json()
    return body["runId"], body["threadId"]


def assert_no_user_data(lines: Lines) -> None:
    for raw in lines.raw_at_info_or_above():
        for secret in SECRETS:
            assert secret not in raw, f"user data at INFO or above: {raw}"


@pytest.mark.parametrize("ending", ["answer", "model_error"])
@pytest.mark.parametrize("route", ["/api/agent/run", "/api/agent/run/stream"])
def test_request_lines_carry_the_trace_and_run_ids_but_no_user_data(
        install: Install, client: FlaskClient, lines: Lines, route: str, ending: str) -> None:
    install(ScriptedModel(script(ending)))
    run_id, thread_id = post(client, route)
    entries = lines.entries()
    ours = [e for e in entries if e["logger"].startswith("agent_runtime")]
    messages = [e["message"] for e in ours]
    assert "run started" in messages
    assert ("run completed" if ending == "answer" else "run failed: MODEL_ERROR") in messages
    if ending == "model_error":
        assert any(e["severity"] == "WARNING" for e in ours)
    for entry in entries:  # every line logged while serving the request, on any thread
        assert entry[TRACE_KEY] == f"projects/{PROJECT}/traces/{TRACE}", entry
        assert entry[SPAN_KEY] == f"{1:016x}" and entry[SAMPLED_KEY] is True
    for entry in ours:
        assert entry["runId"] == run_id and entry["threadId"] == thread_id and entry["uid"] == "alice", entry
    assert_no_user_data(lines)


def test_resumed_run_lines_carry_run_thread_and_user_ids(install: Install, client: FlaskClient,
                                                         lines: Lines) -> None:
    rt = install(ScriptedModel([calls_turn(call("save_memory", {"text": TOOL_ARG})), text_turn(ANSWER)]))
    body = client.post("/api/agent/run", json=request_body(), headers=ALICE).get_json()
    assert body["status"] == "awaiting_confirmation"
    resp = client.post("/api/agent/approve", json={"approvalId": body["approval"]["id"], "decision": "approve"},
                       headers=ALICE)
    assert resp.status_code == 202
    before = len(lines.entries())
    assert resume_run(rt.services, body["runId"]) == "resumed"  # as the sweep calls it: no outer context
    resumed = [e for e in lines.entries()[before:] if e["logger"].startswith("agent_runtime")]
    assert "run completed" in [e["message"] for e in resumed]
    for entry in resumed:
        assert (entry["runId"], entry["threadId"], entry["uid"]) == (body["runId"], body["threadId"], "alice")
    assert_no_user_data(lines)
