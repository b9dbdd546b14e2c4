"""The OpenAPI 3.1 document of the HTTP API, generated from the pydantic contracts."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, TypeAdapter
from pydantic.json_schema import models_json_schema

from shared.api import ApproveRequest, RunRequest
from shared.events import RunEvent
from shared.goals.contracts import GoalsRequest, GoalsResponse
from shared.state.records import RunRecord, RunResult

REF = "#/components/schemas/{model}"


class ErrorBody(BaseModel):
    code: str
    message: str
    details: dict[str, Any] | None = None


class ErrorResponse(BaseModel):
    ok: bool = False
    error: ErrorBody


class ApproveResponse(BaseModel):
    ok: bool = True
    runId: str
    approvalId: str
    status: str
    decision: str


def _json(schema_ref: str) -> dict[str, Any]:
    return {"application/json": {"schema": {"$ref": schema_ref}}}


def _errors(*codes: int) -> dict[str, Any]:
    return {str(c): {"description": "error", "content": _json("#/components/schemas/ErrorResponse")} for c in codes}


def build_openapi() -> dict[str, Any]:
    models: list[tuple[type[BaseModel], Any]] = [
        (RunRequest, "validation"), (ApproveRequest, "validation"), (ErrorResponse, "serialization"),
        (ApproveResponse, "serialization"), (RunResult, "serialization"), (RunRecord, "serialization"),
        (GoalsRequest, "validation"), (GoalsResponse, "serialization"),
    ]
    _, defs = models_json_schema(models, ref_template=REF, by_alias=True)
    schemas: dict[str, Any] = dict(defs.get("$defs", {}))
    event_schema = TypeAdapter(RunEvent).json_schema(ref_template=REF, mode="serialization")
    schemas.update(event_schema.pop("$defs", {}))
    schemas["RunEvent"] = event_schema
    bearer: list[dict[str, list[str]]] = [{"firebaseIdToken": []}, {"firebaseSession": []}]
    run_id = {"name": "runId", "in": "path", "required": True, "schema": {"type": "string"}}
    idem = {"name": "Idempotency-Key", "in": "header", "required": False,
            "schema": {"type": "string", "maxLength": 255}}
    ndjson = {"application/x-ndjson": {"schema": {"$ref": "#/components/schemas/RunEvent"}}}
    return {
        "openapi": "3.1.0",
        "info": {"title": "Agent Runtime API", "version": "1.0.0",
                 "description": "Durable Gemini agent runs: run, stream, read runs and events, approve."},
        "security": bearer,
        "paths": {
            "/api/agent/run": {"post": {
                "operationId": "run", "parameters": [idem],
                "requestBody": {"required": True, "content": _json(REF.format(model="RunRequest"))},
                "responses": {"200": {"description": "the run's result (status completed, "
                                                     "awaiting_confirmation or failed)",
                                      "content": _json(REF.format(model="RunResult"))},
                              **_errors(400, 401, 404, 409, 413, 415)}}},
            "/api/agent/run/stream": {"post": {
                "operationId": "stream", "parameters": [idem],
                "requestBody": {"required": True, "content": _json(REF.format(model="RunRequest"))},
                "responses": {"200": {"description": "NDJSON run events, one per line", "content": ndjson},
                              **_errors(400, 401, 404, 409, 413, 415)}}},
            "/api/agent/runs/{runId}": {"get": {
                "operationId": "getRun", "parameters": [run_id],
                "responses": {"200": {"description": "the run record",
                                      "content": _json(REF.format(model="RunRecord"))},
                              **_errors(401, 404)}}},
            "/api/agent/runs/{runId}/events": {"get": {
                "operationId": "getRunEvents",
                "parameters": [run_id,
                               {"name": "after", "in": "query", "required": False,
                                "schema": {"type": "integer", "minimum": 0}},
                               {"name": "follow", "in": "query", "required": False,
                                "schema": {"type": "boolean"}}],
                "responses": {"200": {"description": "persisted events with seq > after (NDJSON)",
                                      "content": ndjson},
                              **_errors(400, 401, 404)}}},
            "/api/agent/approve": {"post": {
                "operationId": "approve",
                "requestBody": {"required": True, "content": _json(REF.format(model="ApproveRequest"))},
                "responses": {"202": {"description": "decision recorded; the run resumes asynchronously",
                                      "content": _json(REF.format(model="ApproveResponse"))},
                              **_errors(400, 401, 404, 409, 410, 503)}}},
            "/agent/run": {"post": {
                "operationId": "goals", "security": [],
                "description": "Goal-planning agent (seed 000), called by the backend only (IAM in production).",
                "requestBody": {"required": True, "content": _json(REF.format(model="GoalsRequest"))},
                "responses": {"200": {"description": "reply, action and state",
                                      "content": _json(REF.format(model="GoalsResponse"))},
                              **_errors(400, 502, 503)}}},
        },
        "components": {
            "schemas": schemas,
            "securitySchemes": {
                "firebaseIdToken": {"type": "http", "scheme": "bearer", "bearerFormat": "Firebase ID token"},
                "firebaseSession": {"type": "apiKey", "in": "cookie", "name": "__session"},
            },
        },
    }
