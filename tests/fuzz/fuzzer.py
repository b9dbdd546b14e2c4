"""The OpenAPI fuzzer of ``tests/fuzz/test_openapi_fuzz.py`` (issue 14, scope 2): schemathesis against
the dev server through its own ``/openapi.json``, every check on, NDJSON validated line by line,
stateful links followed. ``python -m tests.fuzz.fuzzer`` serves, fuzzes and prints the outcome as
JSON; the test runs it in a fresh interpreter with a fixed ``PYTHONHASHSEED`` so that nothing an
earlier test left in the process (and no hash order) changes which requests are made.

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
import contextlib
import json
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import schemathesis
from schemathesis.core.failures import Failure
from schemathesis.engine import Status, events, from_schema
from werkzeug.serving import WSGIRequestHandler

from shared.config import Settings
from shared.models.base import ModelRequest, ModelResponse, Usage
from shared.models.offline import OfflineModel
from shared.models.scripted import FunctionModel, call, calls_turn
from shared.routes import CURSOR, ROUTES
from shared.runtime import Runtime
from tests.serving import served

KEY = base64.b64encode(bytes(range(32))).decode()
SEED = 20261130
"""Any fixed seed is as good as another, but which chains the stateful phase explores follows the
document and the answers: when issue 31 added fields (the deployment's MCP servers, error classes)
20261123 no longer reached a confirm with a real plan version (its chains cancelled first); when
issue 27 gave a session its run from creation (runs lists and session views changed) 20261126 no
longer reached ``GET /api/agent/runs/{runId}`` 200 nor a confirm 202 (20261127 and 20261128 missed
others); 20261130 reaches every chain the test asks for."""
CONFIG: dict[str, Any] = {
    "seed": SEED,
    "request-timeout": 30,
    "generation": {"deterministic": True, "database": "none", "max-examples": 12},
    # Every check, the optional ones (negative/positive data, auth, use-after-free, methods...) too.
    "auth": {"openapi": {"firebaseIdToken": {"bearer": "dev:fuzzer"}}},
    "phases": {"stateful": {"max-steps": 32, "generation": {"max-examples": 100}}},
    # A body over MAX_BODY_BYTES is refused with 413 before it is parsed: a rejection too.
    "checks": {"enabled": True, "negative_data_rejection": {"expected-statuses": [
        400, 401, 403, 404, 405, 406, 409, 413, 415, 422, 428, 429]}},
    "operations": [{
        # An integration's status is never deleted: DELETE forgets the tokens and GET then answers
        # 200 {"connected": false} by design (README), not the 404 use_after_free expects.
        "include-path": "/api/integrations/{provider}", "include-method": "GET",
        "checks": {"use_after_free": {"enabled": False}}}, *[{
        # The same for a user's MCP server (and its tools: "connected": false once deleted).
        "include-path": path, "include-method": "GET", "checks": {"use_after_free": {"enabled": False}}}
        for path in ("/api/integrations/mcp/{name}", "/api/integrations/mcp/{name}/tools",
                     "/api/integrations/a2a/{name}")], {
        # The A2A server answers in the A2A spec's shapes (JSON-RPC errors, google.rpc statuses),
        # which the document does not restate: the official TCK checks it (tests/a2a/test_tck.py).
        "include-path-regex": "^/(a2a|\\.well-known/)", "enabled": False}],
}
RUN_RULES = (("IDEMPOTENCY_KEY_REUSED", "was used with a different request body"),
             ("INVALID_REQUEST", "supersede is an alias of multitaskStrategy"),
             ("WEBHOOK_SECRET_MISSING", "PUT /api/agent/webhooks/default first"))
"""A run's rules between fields, the same on the stream (below)."""
SEMANTIC_RULES: dict[str, tuple[tuple[str, str], ...]] = {
    # The goals plan's rules between fields (a task's start/end both or neither and in order, a
    # calendar event's end not before its start).
    "POST /agent/run": (("INVALID_REQUEST", "start and end must be given together"),
                        ("INVALID_REQUEST", "end must be after start"),
                        ("INVALID_REQUEST", "end must not be before start")),
    # A deadline in the future within PLAN_MAX_DEADLINE_S; tools this deployment registers; an
    # Idempotency-Key the caller used before with another body (the stateful phase reuses keys).
    "POST /api/agent/sessions": (("INVALID_DEADLINE", "deadline is in the past"),
                                 ("INVALID_DEADLINE", "s away (PLAN_MAX_DEADLINE_S)"),
                                 ("UNKNOWN_TOOLS", "unknown tool names"),
                                 ("IDEMPOTENCY_KEY_REUSED", "was used with a different request body")),
    # A user's MCP servers are at most 20.
    "POST /api/integrations/mcp/{name}": (("TOO_MANY_MCP_SERVERS", "at most 20 MCP servers per user"),),
    # from before to, at most 93 days apart.
    "GET /api/agent/usage": (("INVALID_QUERY", "must be before to"), ("INVALID_QUERY", "is at most 93 days")),
    # Edited arguments go with an approval only (a rejection runs nothing to edit), and they are the
    # tool's arguments (its own schema, which the approval names, not the document).
    "POST /api/agent/approve": (("INVALID_REQUEST", "arguments (edits) go only with decision approve"),
                                ("INVALID_ARGUMENTS", ""),  # one entry per field, each its own message
                                ("EDIT_DENIED_BY_POLICY", "policy refuses"), ("EDIT_NOT_SUPPORTED", "takes no edits")),
    # A new AG-UI run needs a user message with text; resume entries name the caller's own interrupts.
    "POST /api/agent/agui": (("INVALID_REQUEST", "a new run needs a user message with text"),
                             ("INVALID_REQUEST", "must be 1-128 characters of A-Z, a-z, 0-9, _ and -"),
                             ("INVALID_REQUEST", "must be 1-255 visible ASCII characters"),
                             # frontend tools: names and count as the model takes them; a tool result
                             # answers a call that waits; a resume payload's own shape (docs/ag-ui.md)
                             ("INVALID_REQUEST", "String should match pattern"),
                             ("INVALID_REQUEST", "List should have at most 20 items"),
                             ("INVALID_REQUEST", "is not a pending call of a client tool"),
                             ("INVALID_REQUEST", "must be true or false"),
                             ("INVALID_REQUEST", "unknown field; the payload takes"),
                             ("INVALID_REQUEST", "edits go only with an approval"),
                             ("INVALID_REQUEST", "must be an object {approved?, arguments?, reason?}"),
                             ("INVALID_REQUEST", "interrupts of one run only"),
                             ("INVALID_ARGUMENTS", ""), ("EDIT_DENIED_BY_POLICY", "policy refuses"),
                             ("EDIT_NOT_SUPPORTED", "takes no edits")),
    # An Idempotency-Key the caller used before with another body (the stateful phase reuses keys);
    # supersede (rollback's alias) with another multitaskStrategy.
    # A run's own webhook needs the caller's webhook named default (its secret signs).
    "POST /api/agent/run": RUN_RULES,
    "POST /api/agent/run/stream": RUN_RULES,
    # A cron expression, an IANA time zone (docs/run-control.md); at most 20 schedules and webhooks.
    "PUT /api/agent/schedules/{name}": (("INVALID_CRON", ""), ("INVALID_TIMEZONE", "unknown time zone"),
                                        ("TOO_MANY_SCHEDULES", "at most 20 schedules per user")),
    "PUT /api/agent/webhooks/{name}": (("TOO_MANY_WEBHOOKS", "at most 20 webhooks per user"),),
    # A cursor is the nextCursor of the list's previous page, an opaque string the schema cannot tell apart
    # (every list of the route table that takes one).
    **{f"{route.method} {route.path}": (("INVALID_CURSOR", "is not a cursor of this list"),)
       for route in ROUTES if CURSOR in route.query},
}
"""Rules JSON Schema cannot state (between fields, relative to now, or about the deployment), each
written in the operation's description in the document: a schema-valid request breaking one gets a
400 (422 for a reused Idempotency-Key) naming it. Only those refusals are not counted as
``positive_data_acceptance`` failures; any other refusal of a schema-valid request is."""

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
    """The offline model of ``make dev`` (which also plans, refines and executes plan sessions),
    except that every chat prompt is answered with a ``save_memory`` call: every run pauses for
    approval, so the caller's newest run is always one to approve and the stateful phase reaches
    ``approve`` with a real id (through the runs list's links) whatever ran before it."""
    offline = OfflineModel()

    def answer(request: ModelRequest) -> ModelResponse:
        last = request.turns[-1] if request.turns else None
        chat = request.response_schema is None  # plan sessions' structured requests go to the offline model
        if chat and last is not None and last.role == "user" and not any(p.function_response for p in last.parts):
            turn = calls_turn(call("save_memory", {"text": (last.text.strip() or "a note")[:200]}))
            return ModelResponse(turn=turn, usage=Usage(requests=1), finish_reason="STOP")
        return offline.generate(request)

    return FunctionModel(answer, name="offline")


@contextlib.contextmanager
def dev_server(tmp_path: Path) -> Iterator[str]:
    """``make dev`` on a free loopback port: its base URL."""
    # The per-user limits are off: one fuzzing user sends thousands of requests and starts hundreds of
    # runs, which would only answer 429 (the limits have their own tests in tests/limits, and every
    # route's 429 is in the document the response checks use).
    settings = Settings(sqlite_path=str(tmp_path / "dev.sqlite3"), credentials_encryption_key=KEY,
                        dispatcher="inline", gemini_api_key=None, limit_requests_per_minute=0,
                        limit_active_runs=0, limit_active_sessions=0, limit_daily_tokens=0,
                        follow_max_wait_s=5.0,  # a follow (until=end) of a paused run ends within the request timeout
                        mcp_timeout_s=2.0,  # the fuzzer's MCP servers are made up: nothing answers there
                        mcp_allow_private_urls=True)  # they are 127.0.0.1 and made-up hosts: no DNS lookups
    rt = Runtime(settings, model=pausing_model())
    try:
        with served(rt=rt, request_handler=_QuietHandler) as url:
            yield url
    finally:
        rt.store.close()


def _broken_rules(body: bytes) -> list[tuple[str, str]]:
    """``(code, message)`` of each problem a 400 names (one per field error when it lists them)."""
    try:
        error = json.loads(body)["error"]
    except (ValueError, KeyError, TypeError):
        return []
    details = error.get("details") or {}
    listed = details.get("errors") if isinstance(details, dict) else None
    if isinstance(listed, list) and listed:
        return [(error["code"], str(e.get("message", ""))) for e in listed if isinstance(e, dict)]
    return [(error["code"], str(error.get("message", "")))]


def _keep_failure(ctx: schemathesis.HookContext, failure: Failure, case: schemathesis.Case,
                  response: schemathesis.Response) -> bool:
    rules = SEMANTIC_RULES.get(case.operation.label)
    if not rules or "positive_data_acceptance" not in type(failure).checks or response.status_code not in (400, 422):
        return True
    broken = _broken_rules(response.content)
    return not (broken and all(any(code == c and text in message for c, text in rules) for code, message in broken))


def run_fuzzer(base_url: str, seed: int = SEED) -> Outcome:
    config = schemathesis.Config.from_dict({**CONFIG, "seed": seed})
    schema = schemathesis.openapi.from_url(f"{base_url}/openapi.json", config=config)
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


def main() -> None:
    """Serve, fuzz, and print the outcome as one JSON line (read by ``test_openapi_fuzz``);
    ``--seed N`` walks with another seed than :data:`SEED`."""
    args = sys.argv[1:]
    seed = int(args[args.index("--seed") + 1]) if "--seed" in args else SEED
    with tempfile.TemporaryDirectory() as tmp, dev_server(Path(tmp)) as url:
        outcome = run_fuzzer(url, seed)
    print(json.dumps({
        "findings": [asdict(f) | {"text": str(f)} for f in outcome.findings],
        "errors": outcome.errors, "stop_reason": outcome.stop_reason,
        "stateful": [[op, status, n] for (op, status), n in sorted(outcome.stateful_statuses.items())],
        "statuses": [[op, status, n] for (op, status), n in sorted(outcome.statuses.items())],
        "ndjson": dict(NDJSON_SEEN)}), file=sys.stdout)


if __name__ == "__main__":
    main()
