"""The OpenAPI 3.1 document of the HTTP API, generated from the pydantic contracts.

Response schemas are closed: every object schema reachable from a response (or an NDJSON event)
sets ``additionalProperties: false`` unless its model deliberately keeps extra fields (the goals
agent's open plan objects), so a response with an unexpected field does not match the document.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel, TypeAdapter
from pydantic.json_schema import models_json_schema

from shared.api import ApproveRequest, RunRequest
from shared.approvals_inbox import DEFAULT_LIMIT as INBOX_DEFAULT_LIMIT
from shared.approvals_inbox import INBOX_STATUSES, ApprovalsList
from shared.approvals_inbox import MAX_LIMIT as INBOX_MAX_LIMIT
from shared.connectors.credentials import PROVIDERS
from shared.connectors.integrations_api import (
    ConnectRequest,
    IntegrationRemovedResponse,
    IntegrationResponse,
    IntegrationsResponse,
)
from shared.events import RunEvent
from shared.goals.contracts import GoalsRequest, GoalsResponse
from shared.plans.api import DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT, RefineResponse
from shared.plans.contracts import (
    CancelRequest,
    ConfirmRequest,
    CreateSessionRequest,
    RefineRequest,
    SessionAccepted,
    SessionCreated,
    SessionsList,
    SessionView,
)
from shared.responses import ApproveResponse, ErrorResponse
from shared.runs_list import DEFAULT_LIMIT, MAX_LIMIT, RunsListResponse
from shared.session_events import SessionEvent
from shared.state.records import RunResult
from shared.usage.params import MAX_RANGE_DAYS
from shared.usage.views import GROUP_BY, RUN_RECORD_NOT_SERVED, RunView, UsageResponse
from shared.wire import MAX_INT64

REF = "#/components/schemas/{model}"


def _json(schema_ref: str) -> dict[str, Any]:
    return {"application/json": {"schema": {"$ref": schema_ref}}}


def _errors(*codes: int) -> dict[str, Any]:
    return {str(c): {"description": "error", "content": _json("#/components/schemas/ErrorResponse")} for c in codes}


LIMIT_CODES: dict[str, tuple[str, ...]] = {
    # Which 429 codes each operation can answer (docs/limits.md); any other route: RATE_LIMITED only.
    "run": ("TOO_MANY_ACTIVE_RUNS", "DAILY_TOKEN_LIMIT"),
    "stream": ("TOO_MANY_ACTIVE_RUNS", "DAILY_TOKEN_LIMIT"),
    "createSession": ("TOO_MANY_ACTIVE_SESSIONS", "DAILY_TOKEN_LIMIT"),
    "refineSession": ("DAILY_TOKEN_LIMIT",),
    "confirmSession": ("DAILY_TOKEN_LIMIT",),
}


def _too_many_requests(operation_id: str) -> dict[str, Any]:
    codes = ", ".join(("RATE_LIMITED", *LIMIT_CODES.get(operation_id, ())))
    return {"description": f"a per-user limit refused the request ({codes}); nothing was created",
            "headers": {"Retry-After": {"description": "seconds until a retry may succeed",
                                        "required": True, "schema": {"type": "integer", "minimum": 1}}},
            "content": _json("#/components/schemas/ErrorResponse")}


def _refs(node: Any) -> Iterator[str]:
    """Names of the component schemas ``node`` refers to."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/components/schemas/"):
            yield ref.rsplit("/", 1)[-1]
        for value in node.values():
            yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


def _close_response_schemas(schemas: dict[str, Any], responses: list[Any]) -> None:
    """``additionalProperties: false`` on every object schema reachable from a response, unless
    its model says otherwise (``extra="allow"`` gives ``true``). Stored records ignore unknown
    fields when read; what the API answers is exactly what the document lists."""
    seen: set[str] = set()
    todo = [name for r in responses for name in _refs(r)]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        schema = schemas[name]
        if schema.get("type") == "object" and "properties" in schema:
            schema.setdefault("additionalProperties", False)
        todo.extend(_refs(schema))


def build_openapi() -> dict[str, Any]:
    models: list[tuple[type[BaseModel], Any]] = [
        (RunRequest, "validation"), (ApproveRequest, "validation"), (ErrorResponse, "serialization"),
        (ApproveResponse, "serialization"), (RunResult, "serialization"), (RunView, "serialization"),
        (UsageResponse, "serialization"), (RunsListResponse, "serialization"), (CreateSessionRequest, "validation"),
        (RefineRequest, "validation"), (ConfirmRequest, "validation"), (CancelRequest, "validation"),
        (SessionCreated, "serialization"), (RefineResponse, "serialization"), (SessionAccepted, "serialization"),
        (SessionView, "serialization"), (SessionsList, "serialization"), (ApprovalsList, "serialization"),
        (GoalsRequest, "validation"), (GoalsResponse, "serialization"),
        (ConnectRequest, "validation"), (IntegrationsResponse, "serialization"),
        (IntegrationResponse, "serialization"), (IntegrationRemovedResponse, "serialization"),
    ]
    _, defs = models_json_schema(models, ref_template=REF, by_alias=True)
    schemas: dict[str, Any] = dict(defs.get("$defs", {}))
    event_schema = TypeAdapter(RunEvent).json_schema(ref_template=REF, mode="serialization")
    schemas.update(event_schema.pop("$defs", {}))
    schemas["RunEvent"] = event_schema
    session_events = TypeAdapter(SessionEvent).json_schema(ref_template=REF, mode="serialization")
    for name, schema in session_events.pop("$defs", {}).items():
        schemas.setdefault(name, schema)
    schemas["SessionEvent"] = session_events
    record = schemas["RunView"]
    for hidden in RUN_RECORD_NOT_SERVED:
        alias = "".join(w.capitalize() if i else w for i, w in enumerate(hidden.split("_")))
        record["properties"].pop(alias, None)
        if alias in record.get("required", []):
            record["required"].remove(alias)
    if "Lease" not in set(_refs({k: v for k, v in schemas.items() if k != "Lease"})):
        schemas.pop("Lease", None)
    bearer: list[dict[str, list[str]]] = [{"firebaseIdToken": []}, {"firebaseSession": []}]
    run_id = {"name": "runId", "in": "path", "required": True, "schema": {"type": "string"}}
    idem = {"name": "Idempotency-Key", "in": "header", "required": False,
            "description": "1-255 visible ASCII characters (spaces inside allowed); a repeat returns the same run",
            "schema": {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[ -~]*[!-~][ -~]*$"}}
    provider = {"name": "provider", "in": "path", "required": True,
                "schema": {"type": "string", "enum": list(PROVIDERS)}}
    # NDJSON: one RunEvent per line. The schema describes the whole body read as a JSON array of its
    # lines, as OpenAPI 3.2 reads ``schema`` for sequential media types (``itemSchema`` per line), so a
    # client (and the fuzz test's deserializer, tests/fuzz) validates every line, not only one.
    ndjson = {"application/x-ndjson": {"schema": {"type": "array",
                                                  "items": {"$ref": "#/components/schemas/RunEvent"}}}}
    session_ndjson = {"application/x-ndjson": {"schema": {"type": "array",
                                                          "items": {"$ref": "#/components/schemas/SessionEvent"}}}}
    session_id = {"name": "sessionId", "in": "path", "required": True, "schema": {"type": "string"}}
    instant = {"type": "string", "anyOf": [{"format": "date-time"}, {"format": "date"}]}
    integration_status = {"200": {"description": "whether each integration is connected (never a token)",
                                  "content": _json(REF.format(model="IntegrationsResponse"))}}
    one_integration = {"200": {"description": "whether the integration is connected (never a token)",
                               "content": _json(REF.format(model="IntegrationResponse"))}}
    # OpenAPI links: how a response's ids feed the next call (clients, and the stateful phase of the
    # fuzz test, reach approve, runs and events with real ids rather than only 404s).
    run_links = {
        "getRun": {"operationId": "getRun", "parameters": {"runId": "$response.body#/runId"}},
        "getRunEvents": {"operationId": "getRunEvents", "parameters": {"runId": "$response.body#/runId"}},
        "approveAction": {"operationId": "approve", "description": "when the run waits for approval",
                          "requestBody": {"approvalId": "$response.body#/approval/approvalId", "decision": "approve"}},
        "rejectAction": {"operationId": "approve", "description": "when the run waits for approval",
                         "requestBody": {"approvalId": "$response.body#/approval/approvalId", "decision": "reject"}},
        "continueThread": {"operationId": "run", "description": "the next turn of the same thread",
                           "requestBody": {"prompt": "Remember that I like tea",
                                           "threadId": "$response.body#/threadId"}},
    }
    approve_links = {
        "getRun": {"operationId": "getRun", "parameters": {"runId": "$response.body#/runId"}},
        "followRunEvents": {"operationId": "getRunEvents",
                            "parameters": {"runId": "$response.body#/runId", "follow": True}},
        "decideAgain": {"operationId": "approve", "description": "a second decision: 409",
                        "requestBody": {"approvalId": "$response.body#/approvalId", "decision": "reject"}},
    }
    by_session = {"sessionId": "$response.body#/sessionId"}
    session_links = {
        "getSession": {"operationId": "getSession", "parameters": by_session},
        "getSessionEvents": {"operationId": "getSessionEvents", "parameters": by_session},
        "refineSession": {"operationId": "refineSession", "parameters": by_session,
                          "requestBody": {"message": "Also tidy the notes afterwards"}},
        "cancelSession": {"operationId": "cancelSession", "parameters": by_session},
    }
    created_links = {**session_links, "confirmSession": {
        "operationId": "confirmSession", "parameters": by_session,
        "requestBody": {"planVersion": "$response.body#/plan/version"}}}
    refined_links = {**session_links, "confirmSession": {
        "operationId": "confirmSession", "parameters": by_session,
        "requestBody": {"planVersion": "$response.body#/plan/version"}}}
    view_links = {
        **session_links,
        "approvePending": {"operationId": "approve", "description": "when the session's run waits for approval",
                           "requestBody": {"approvalId": "$response.body#/pendingApprovals/0/approvalId",
                                           "decision": "approve"}},
        "rejectPending": {"operationId": "approve", "description": "when the session's run waits for approval",
                          "requestBody": {"approvalId": "$response.body#/pendingApprovals/0/approvalId",
                                          "decision": "reject"}},
    }
    list_runs_links = {
        "getFirstRun": {"operationId": "getRun", "parameters": {"runId": "$response.body#/runs/0/runId"}},
        "getFirstRunEvents": {"operationId": "getRunEvents", "parameters": {"runId": "$response.body#/runs/0/runId"}},
        "continueNewestThread": {"operationId": "run", "description": "the next turn of the newest run's thread",
                                 "requestBody": {"prompt": "Remember that I like tea",
                                                 "threadId": "$response.body#/runs/0/threadId"}},
        "approveFirstRun": {"operationId": "approve", "description": "when the newest run waits for approval",
                            "requestBody": {"approvalId": "$response.body#/runs/0/approvals/0/approvalId",
                                            "decision": "approve"}},
    }
    view_run_links = {"approveAction": {
        "operationId": "approve", "description": "when the run waits for approval",
        "requestBody": {"approvalId": "$response.body#/result/approval/approvalId", "decision": "approve"}}}
    inbox_links = {
        "approveFirst": {"operationId": "approve", "description": "when the newest approval is pending",
                         "requestBody": {"approvalId": "$response.body#/approvals/0/approvalId",
                                         "decision": "approve"}},
    }
    list_sessions_links = {"getFirstSession": {"operationId": "getSession",
                                               "parameters": {"sessionId": "$response.body#/sessions/0/sessionId"}}}
    first_provider = {"provider": "$response.body#/integrations/0/provider"}
    list_integrations_links = {
        "getIntegration": {"operationId": "getIntegration", "parameters": first_provider},
        "connectIntegration": {"operationId": "connectIntegration", "parameters": first_provider},
        "disconnectIntegration": {"operationId": "disconnectIntegration", "parameters": first_provider},
    }
    integration_links = {
        "getIntegration": {"operationId": "getIntegration", "parameters": {"provider": "$request.path.provider"}},
        "disconnectIntegration": {"operationId": "disconnectIntegration",
                                  "parameters": {"provider": "$request.path.provider"}},
    }
    paths: dict[str, Any] = {
        "/api/agent/run": {"post": {
            "operationId": "run", "parameters": [idem],
            "requestBody": {"required": True, "content": _json(REF.format(model="RunRequest"))},
            "responses": {"200": {"description": "the run's result (status completed, "
                                                 "awaiting_confirmation or failed)",
                                  "content": _json(REF.format(model="RunResult")), "links": run_links},
                          **_errors(400, 401, 404, 409, 413, 415)}}},
        "/api/agent/run/stream": {"post": {
            "operationId": "stream", "parameters": [idem],
            "requestBody": {"required": True, "content": _json(REF.format(model="RunRequest"))},
            "responses": {"200": {"description": "NDJSON run events, one per line (Server-Sent Events with "
                                                 "Accept: text/event-stream: event = type, id = seq)",
                                  "content": {**ndjson, "text/event-stream": {"schema": {"type": "string"}}}},
                          **_errors(400, 401, 404, 409, 413, 415)}}},
        "/api/agent/runs": {"get": {
            "operationId": "listRuns",
            "description": "The caller's runs, newest first (other users' runs are never listed).",
            "parameters": [{"name": "limit", "in": "query", "required": False,
                            "schema": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT,
                                       "default": DEFAULT_LIMIT}}],
            "responses": {"200": {"description": "one summary per run",
                                  "content": _json(REF.format(model="RunsListResponse")), "links": list_runs_links},
                          **_errors(400, 401)}}},
        "/api/agent/runs/{runId}": {"get": {
            "operationId": "getRun", "parameters": [run_id],
            "responses": {"200": {"description": "the run record and each model call's usage",
                                  "content": _json(REF.format(model="RunView")), "links": view_run_links},
                          **_errors(401, 404)}}},
        "/api/agent/sessions": {"get": {
            "operationId": "listSessions",
            "parameters": [{"name": "limit", "in": "query", "required": False,
                            "schema": {"type": "integer", "minimum": 1, "maximum": MAX_LIST_LIMIT,
                                       "default": DEFAULT_LIST_LIMIT}}],
            "responses": {"200": {"description": "the caller's sessions, newest first",
                                  "content": _json(REF.format(model="SessionsList")), "links": list_sessions_links},
                          **_errors(400, 401)}},
            "post": {
            "operationId": "createSession",
            "description": "Start a plan session (seed 004): the agent proposes a plan to review.",
            "requestBody": {"required": True, "content": _json(REF.format(model="CreateSessionRequest"))},
            "responses": {"201": {"description": "the proposed plan (status awaiting_confirmation)",
                                  "content": _json(REF.format(model="SessionCreated")), "links": created_links},
                          "200": {"description": "planning failed (ok false, status failed, error)",
                                  "content": _json(REF.format(model="SessionCreated"))},
                          **_errors(400, 401, 413, 415)}}},
        "/api/agent/sessions/{sessionId}": {"get": {
            "operationId": "getSession", "parameters": [session_id],
            "responses": {"200": {"description": "the session: plan, tasks with their ReAct history, plan "
                                                 "versions, pending approvals, usage, result",
                                  "content": _json(REF.format(model="SessionView")), "links": view_links},
                          **_errors(401, 404)}}},
        "/api/agent/sessions/{sessionId}/refine": {"post": {
            "operationId": "refineSession", "parameters": [session_id],
            "requestBody": {"required": True, "content": _json(REF.format(model="RefineRequest"))},
            "responses": {"200": {"description": "the revised plan (version + 1)",
                                  "content": _json(REF.format(model="RefineResponse")), "links": refined_links},
                          **_errors(400, 401, 404, 409, 413, 415)}}},
        "/api/agent/sessions/{sessionId}/confirm": {"post": {
            "operationId": "confirmSession", "parameters": [session_id],
            "requestBody": {"required": True, "content": _json(REF.format(model="ConfirmRequest"))},
            "responses": {"202": {"description": "executing", "content": _json(REF.format(model="SessionAccepted")),
                                  "links": session_links},
                          **_errors(400, 401, 404, 409, 413, 415)}}},
        "/api/agent/sessions/{sessionId}/cancel": {"post": {
            "operationId": "cancelSession", "parameters": [session_id],
            "description": "The body is optional: none, {} or {\"reason\": ...} (shown as the session's "
                           "cancelReason). A repeat answers the session as it is (idempotent); 409 only when "
                           "the session already ended otherwise.",
            "requestBody": {"required": False, "content": _json(REF.format(model="CancelRequest"))},
            "responses": {"202": {"description": "cancelled, or cancelling before the next act",
                                  "content": _json(REF.format(model="SessionAccepted"))},
                          **_errors(400, 401, 404, 409, 413, 415)}}},
        "/api/agent/sessions/{sessionId}/events": {"get": {
            "operationId": "getSessionEvents",
            "parameters": [session_id,
                           {"name": "after", "in": "query", "required": False,
                            "schema": {"type": "integer", "minimum": 0, "maximum": MAX_INT64}},
                           {"name": "follow", "in": "query", "required": False, "schema": {"type": "boolean"}}],
            "responses": {"200": {"description": "the session's events with seq > after (NDJSON)",
                                  "content": session_ndjson},
                          **_errors(400, 401, 404)}}},
        "/api/agent/usage": {"get": {
            "operationId": "getUsage",
            "description": "The caller's model calls (usage ledger) in [from, to), summed per group. "
                           "from/to: RFC 3339 with a zone or YYYY-MM-DD (UTC); default the last 30 days. "
                           f"from must be before to and at most {MAX_RANGE_DAYS} days earlier "
                           "(400 INVALID_QUERY otherwise).",
            "parameters": [{"name": "from", "in": "query", "required": False, "schema": instant},
                           {"name": "to", "in": "query", "required": False, "schema": instant},
                           {"name": "groupBy", "in": "query", "required": False,
                            "schema": {"type": "string", "enum": list(GROUP_BY)}}],
            "responses": {"200": {"description": "token and cost figures per group",
                                  "content": _json(REF.format(model="UsageResponse"))},
                          **_errors(400, 401)}}},
        "/api/agent/runs/{runId}/events": {"get": {
            "operationId": "getRunEvents",
            "parameters": [run_id,
                           {"name": "after", "in": "query", "required": False,
                            "schema": {"type": "integer", "minimum": 0, "maximum": MAX_INT64}},
                           {"name": "follow", "in": "query", "required": False,
                            "schema": {"type": "boolean"}}],
            "responses": {"200": {"description": "persisted events with seq > after (NDJSON)",
                                  "content": ndjson},
                          **_errors(400, 401, 404)}}},
        "/api/agent/approvals": {"get": {
            "operationId": "listApprovals",
            "description": "The caller's approvals across chat runs and plan sessions, newest first (other users' "
                           "are never listed): pending = waiting for a decision; decided = approved, rejected or "
                           "expired. Decide with POST /api/agent/approve. Unknown, repeated or bad parameters: "
                           "400 INVALID_QUERY.",
            "parameters": [{"name": "status", "in": "query", "required": False,
                            "schema": {"type": "string", "enum": list(INBOX_STATUSES), "default": "pending"}},
                           {"name": "limit", "in": "query", "required": False,
                            "schema": {"type": "integer", "minimum": 1, "maximum": INBOX_MAX_LIMIT,
                                       "default": INBOX_DEFAULT_LIMIT}}],
            "responses": {"200": {"description": "the approvals, newest first",
                                  "content": _json(REF.format(model="ApprovalsList")), "links": inbox_links},
                          **_errors(400, 401)}}},
        "/api/agent/approve": {"post": {
            "operationId": "approve",
            "requestBody": {"required": True, "content": _json(REF.format(model="ApproveRequest"))},
            "responses": {"202": {"description": "decision recorded; the run resumes asynchronously",
                                  "content": _json(REF.format(model="ApproveResponse")), "links": approve_links},
                          **_errors(400, 401, 404, 409, 410, 503)}}},
        "/agent/run": {"post": {
            "operationId": "goals", "security": [],
            "description": "Goal-planning agent (seed 000), called by the backend only (IAM in production).",
            "requestBody": {"required": True, "content": _json(REF.format(model="GoalsRequest"))},
            "responses": {"200": {"description": "reply, action and state",
                                  "content": _json(REF.format(model="GoalsResponse"))},
                          **_errors(400, 502, 503)}}},
        "/api/integrations": {"get": {
            "operationId": "listIntegrations",
            "responses": {"200": {**integration_status["200"], "links": list_integrations_links},
                          **_errors(401)}}},
        "/api/integrations/{provider}": {
            "get": {"operationId": "getIntegration", "parameters": [provider],
                    "responses": {**one_integration, **_errors(401, 404)}},
            "post": {"operationId": "connectIntegration", "parameters": [provider],
                     "description": "Store (replace) the caller's tokens for the provider, encrypted. "
                                    "503 INTEGRATIONS_NOT_CONFIGURED without CREDENTIALS_ENCRYPTION_KEY.",
                     "requestBody": {"required": True, "content": _json(REF.format(model="ConnectRequest"))},
                     "responses": {"200": {"description": "the stored connection (never a token)",
                                           "content": _json(REF.format(model="IntegrationResponse")),
                                           "links": integration_links},
                                   **_errors(400, 401, 404, 413, 415, 503)}},
            "delete": {"operationId": "disconnectIntegration", "parameters": [provider],
                       "responses": {"200": {"description": "the tokens are forgotten",
                                             "content": _json(REF.format(model="IntegrationRemovedResponse"))},
                                     **_errors(401, 404, 503)}},
        },
    }
    # make dev's own routes (devserver.py), public: liveness and this document.
    paths["/healthz"] = {"get": {"operationId": "health", "security": [], "description": "make dev is up",
                                 "responses": {"200": {"description": "up", "content": {"application/json": {
                                     "schema": {"type": "object", "properties": {"ok": {"const": True}},
                                                "required": ["ok"], "additionalProperties": False}}}}}}}
    paths["/openapi.json"] = {"get": {"operationId": "openapi", "security": [], "description": "this document",
                                      "responses": {"200": {"description": "the OpenAPI 3.1 document",
                                                            "content": {"application/json": {
                                                                "schema": {"type": "object",
                                                                           "required": ["openapi", "paths"]}}}}}}}
    for item in paths.values():
        for op in item.values():
            op["responses"].update(_errors(500))  # any route: an unexpected error, logged
            if op.get("security") != []:  # every authenticated route counts against the request limit
                op["responses"]["429"] = _too_many_requests(op["operationId"])
    _close_response_schemas(schemas, [op["responses"] for item in paths.values() for op in item.values()])
    return {
        "openapi": "3.1.0",
        "info": {"title": "Agent Runtime API", "version": "1.0.0",
                 "description": "Durable Gemini agent runs: run, stream, read runs and events, approve; "
                                "the user's integrations; the goals agent."},
        "security": bearer,
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {
                "firebaseIdToken": {"type": "http", "scheme": "bearer", "bearerFormat": "Firebase ID token"},
                "firebaseSession": {"type": "apiKey", "in": "cookie", "name": "__session"},
            },
        },
    }
