"""GET /openapi.json is OpenAPI 3.1 from the pydantic models, and real responses match it."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from flask.testing import FlaskClient

from shared.models.scripted import ScriptedModel, call, calls_turn, text_turn
from tests.e2e.conftest import ALICE, Install


def validator(doc: dict[str, Any], name: str) -> jsonschema.Draft202012Validator:
    schema = {"$ref": f"#/components/schemas/{name}", "components": doc["components"]}
    return jsonschema.Draft202012Validator(schema)


def test_openapi_document_is_served_and_valid(client: FlaskClient) -> None:
    doc = client.get("/openapi.json").get_json()
    assert doc["openapi"].startswith("3.1")
    assert set(doc["paths"]) == {"/api/agent/run", "/api/agent/run/stream", "/api/agent/runs/{runId}",
                                 "/api/agent/runs/{runId}/events", "/api/agent/approve", "/agent/run"}
    for name, schema in doc["components"]["schemas"].items():
        jsonschema.Draft202012Validator.check_schema(schema), name


def test_real_responses_match_the_document(install: Install, client: FlaskClient,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    doc = client.get("/openapi.json").get_json()
    install(ScriptedModel([text_turn("hi", thought="t"), calls_turn(call("save_memory", {"text": "x"})),
                           text_turn("saved")]))
    ok = client.post("/api/agent/run", json={"prompt": "x"}, headers=ALICE)
    validator(doc, "RunResult").validate(ok.get_json())
    streamed = client.post("/api/agent/run/stream", json={"prompt": "save x"}, headers=ALICE)
    events = [json.loads(line) for line in streamed.data.decode().splitlines()]
    ev_validator = validator(doc, "RunEvent")
    for ev in events:
        ev_validator.validate(ev)
    result = events[-1]["result"]
    validator(doc, "RunResult").validate(result)
    run = client.get(f"/api/agent/runs/{result['runId']}", headers=ALICE)
    validator(doc, "RunRecord").validate(run.get_json())
    approved = client.post("/api/agent/approve", json={"approvalId": result["approval"]["id"],
                                                       "decision": "approve"}, headers=ALICE)
    assert approved.status_code == 202
    validator(doc, "ApproveResponse").validate(approved.get_json())
    err = client.post("/api/agent/run", json={"nope": 1}, headers=ALICE)
    assert err.status_code == 400
    validator(doc, "ErrorResponse").validate(err.get_json())
    goals = client.post("/agent/run", json={"message": "I want to run a marathon", "userId": "u1",
                                            "sessionId": "s1"})
    assert goals.status_code == 200  # the offline planner answers (no GEMINI_API_KEY in tests)
    validator(doc, "GoalsResponse").validate(goals.get_json())
    bad_goal = client.post("/agent/run", json={"message": ""})
    assert bad_goal.status_code == 400
    validator(doc, "ErrorResponse").validate(bad_goal.get_json())
    # The validator is strict enough to notice a broken response.
    broken = dict(ok.get_json(), status="exploded")
    assert not validator(doc, "RunResult").is_valid(broken)
