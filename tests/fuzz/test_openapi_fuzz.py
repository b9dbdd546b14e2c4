"""Fuzzing in CI (issue 14, scope 2): schemathesis against the dev server through its own
``/openapi.json``, every check on, NDJSON validated line by line, stateful links followed.

The dev app (``devserver.create_app``, every function on one port, as ``make dev``) is served on a
real loopback socket by a Werkzeug thread, over the SQLite store, the offline model, local auth, the
inline dispatcher (approvals resume in the background as in ``make dev``) and an encryption key (so
``/api/integrations`` is reachable). Schemathesis' engine then runs the phases its CLI runs:
coverage (boundary values, missing auth, undeclared methods...), fuzzing (generated requests) and
stateful (call chains along the document's OpenAPI links: run -> approve -> events with real ids).

Deterministic: a fixed seed and ``deterministic`` generation (Hypothesis' derandomize), no example
database. Bounded by counts, not time: a few examples per operation and per stateful scenario
(schemathesis' ``max-time`` would instead keep fuzzing until it runs out), and a request timeout.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from schemathesis.core.failures import Failure
from schemathesis.engine import Status, events, from_schema
from werkzeug.serving import BaseWSGIServer, WSGIRequestHandler, make_server

from devserver import create_app
from shared.config import Settings
from shared.models.base import ModelRequest, ModelResponse, Usage
from shared.models.offline import OfflineModel
from shared.models.scripted import FunctionModel, call, calls_turn
from shared.runtime import Runtime, set_runtime

KEY = base64.b64encode(bytes(range(32))).decode()
SEED = 20261123
CONFIG: dict[str, Any] = {
    "seed": SEED,
    "request-timeout": 30,
    "generation": {"deterministic": True, "database": "none", "max-examples": 12},
    # Every check, the optional ones (negative/positive data, auth, use-after-free, methods...) too.
    "auth": {"openapi": {"firebaseIdToken": {"bearer": "dev:fuzzer"}}},
    "phases": {"stateful": {"max-steps": 12, "generation": {"max-examples": 25}}},
    # A body over MAX_BODY_BYTES is refused with 413 before it is parsed: a rejection too.
    "checks": {"enabled": True, "negative_data_rejection": {"expected-statuses": [
        400, 401, 403, 404, 405, 406, 409, 413, 415, 422, 428, 429]}},
    "operations": [{
        # An integration's status is never deleted: DELETE forgets the tokens and GET then answers
        # 200 {"connected": false} by design (README), not the 404 use_after_free expects.
        "include-path": "/api/integrations/{provider}", "include-method": "GET",
        "checks": {"use_after_free": {"enabled": False}}}],
}
CROSS_FIELD_RULES = ("start and end must be given together", "end must be after start",
                     "end must not be before start")
"""The goals plan's rules between fields, which JSON Schema cannot state (a task's start/end both or
neither and in order, a calendar event's end not before its start): a schema-valid body breaking
one gets a 400 naming it. Only those refusals are not counted as ``positive_data_acceptance``."""

NDJSON_SEEN: Counter[str] = Counter()


@schemathesis.deserializer("application/x-ndjson")
def _ndjson(ctx: schemathesis.DeserializationContext, response: schemathesis.Response) -> list[Any]:
    """Every line of an NDJSON body, as the JSON array the document's schema describes (one
    ``RunEvent`` per line): each line is validated, not only the first."""
    NDJSON_SEEN[ctx.operation.label] += 1
    return [json.loads(line) for line in response.content.decode("utf-8").splitlines() if line.strip()]


@dataclass
class Finding:
    phase: str
    operation: str
    check: str
    title: str
    message: str
    status: int | None
    body: str
    curl: str

    def __str__(self) -> str:
        return (f"[{self.phase}] {self.operation}: {self.check}: {self.title}\n  {self.message[:600]}\n"
                f"  -> {self.status} {self.body[:300]}\n  {self.curl[-600:]}")


@dataclass
class Outcome:
    findings: list[Finding]
    errors: list[str]
    stop_reason: str
    stateful_statuses: Counter[tuple[str, int]]
    statuses: Counter[tuple[str, int]]


class _QuietHandler(WSGIRequestHandler):
    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        pass  # thousands of requests: the findings say what matters


def pausing_model() -> FunctionModel:
    """The offline model of ``make dev``, except that about half of the prompts (chosen by a hash of
    their text, so deterministically) are answered with a ``save_memory`` call: runs pause for
    approval often enough for the stateful phase to approve and reject real approvals."""
    offline = OfflineModel()

    def answer(request: ModelRequest) -> ModelResponse:
        last = request.turns[-1] if request.turns else None
        if last is not None and last.role == "user" and not any(p.function_response for p in last.parts):
            text = last.text.strip()
            if text and hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()[0] % 2 == 0:
                turn = calls_turn(call("save_memory", {"text": text[:200]}))
                return ModelResponse(turn=turn, usage=Usage(requests=1), finish_reason="STOP")
        return offline.generate(request)

    return FunctionModel(answer, name="offline")


@pytest.fixture
def dev_server(tmp_path: Path) -> Iterator[str]:
    """``make dev`` on a free loopback port: its base URL."""
    settings = Settings(sqlite_path=str(tmp_path / "dev.sqlite3"), credentials_encryption_key=KEY,
                        dispatcher="inline", gemini_api_key=None)
    rt = Runtime(settings, model=pausing_model())
    set_runtime(rt)
    server: BaseWSGIServer = make_server("127.0.0.1", 0, create_app(), threaded=True,
                                          request_handler=_QuietHandler)
    thread = threading.Thread(target=server.serve_forever, name="fuzz-dev-server", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join(30)
        set_runtime(None)
        rt.store.close()


def _keep_failure(ctx: schemathesis.HookContext, failure: Failure, case: schemathesis.Case,
                  response: schemathesis.Response) -> bool:
    if case.operation.label != "POST /agent/run" or "positive_data_acceptance" not in type(failure).checks:
        return True
    try:
        errors = json.loads(response.content)["error"]["details"]["errors"]
    except (ValueError, KeyError, TypeError):
        return True
    return not (response.status_code == 400 and errors
                and all(any(rule in e.get("message", "") for rule in CROSS_FIELD_RULES) for e in errors))


def run_fuzzer(base_url: str) -> Outcome:
    schema = schemathesis.openapi.from_url(f"{base_url}/openapi.json", config=schemathesis.Config.from_dict(CONFIG))
    schema.hook("filter_failure")(_keep_failure)
    findings: list[Finding] = []
    errors: list[str] = []
    stateful: Counter[tuple[str, int]] = Counter()
    statuses: Counter[tuple[str, int]] = Counter()
    stop_reason = "none"
    for event in from_schema(schema).execute():
        if isinstance(event, events.ScenarioFinished):
            recorder = event.recorder
            for case_id, node in recorder.cases.items():
                response = recorder.find_response(case_id=case_id)
                if response is not None:
                    key = (node.value.operation.label, response.status_code)
                    statuses[key] += 1
                    if event.phase.name == "STATEFUL_TESTING":
                        stateful[key] += 1
            for case_id, checks in recorder.checks.items():
                for check in checks:
                    if check.status != Status.FAILURE or check.failure_info is None:
                        continue
                    info = check.failure_info
                    response = recorder.find_response(case_id=case_id)
                    findings.append(Finding(
                        phase=event.phase.name, operation=recorder.cases[case_id].value.operation.label,
                        check=check.name, title=info.failure.title, message=str(info.failure.message),
                        status=response.status_code if response else None,
                        body=response.content.decode("utf-8", "replace") if response else "",
                        curl=info.code_sample))
        elif isinstance(event, events.NonFatalError):
            errors.append(f"{event.label}: {event.info.format()}"[:2000])
        elif isinstance(event, events.FatalError):
            errors.append(f"fatal: {event.exception!r}")
        elif isinstance(event, events.EngineFinished):
            stop_reason = event.stop_reason.value
    return Outcome(findings, errors, stop_reason, stateful, statuses)


def test_the_dev_server_conforms_to_its_own_openapi_document(dev_server: str) -> None:
    NDJSON_SEEN.clear()
    outcome = run_fuzzer(dev_server)
    assert not outcome.errors, "\n\n".join(outcome.errors)
    unique = {(f.operation, f.check, f.title, f.status): f for f in outcome.findings}
    assert not unique, f"{len(unique)} distinct failures:\n\n" + "\n\n".join(str(f) for f in unique.values())
    assert outcome.stop_reason == "completed", outcome.stop_reason
    # Stateful chains reached the ids-dependent routes with real ids, not only 404s.
    reached = {key for key in outcome.stateful_statuses}
    for wanted in [("POST /api/agent/approve", 202), ("GET /api/agent/runs/{runId}", 200),
                   ("GET /api/agent/runs/{runId}/events", 200), ("GET /api/integrations/{provider}", 200),
                   ("DELETE /api/integrations/{provider}", 200)]:
        assert wanted in reached, (wanted, sorted(reached))
    # NDJSON bodies went through the deserializer (and so were validated line by line).
    assert NDJSON_SEEN["POST /api/agent/run/stream"] and NDJSON_SEEN["GET /api/agent/runs/{runId}/events"], NDJSON_SEEN
    # No answer was a server error, whatever it was asked (not_a_server_error is among the checks;
    # this names the statuses if it ever passes by mistake).
    assert not [key for key in outcome.statuses if key[1] >= 500], outcome.statuses
