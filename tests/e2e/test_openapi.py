"""GET /openapi.json is OpenAPI 3.1 from the pydantic models, and real responses match it.

Every response below is checked against the schema the document gives for its route, method and
status code (an undocumented status fails), and the response schemas are closed: an extra field
anywhere in a response, or an event without its ``seq``, does not match.
"""

from __future__ import annotations

import base64
import copy
import json
from typing import Any

import jsonschema
import pytest
from flask.testing import FlaskClient
from functions_framework import create_app as create_function_app
from werkzeug.test import TestResponse

from shared.durable.dispatcher import RecordingDispatcher
from shared.models.scripted import ScriptedModel, call, calls_turn, text_turn
from tests.e2e.conftest import ALICE, Install
from tests.e2e.test_http_approve import pubsub_event

KEY = base64.b64encode(bytes(range(32))).decode()
TOKENS = {"accessToken": "ya29.secret-access", "refreshToken": "1//secret-refresh", "expiresIn": 3599,
          "scopes": ["https://www.googleapis.com/auth/gmail.modify"], "accountEmail": "alice@example.com"}
OPEN_MODELS = {"Goal", "GoalPreview", "Milestone", "Task"}
"""The goals agent's plan objects keep fields they do not know (seed 000): open on purpose."""


def validator(doc: dict[str, Any], name: str) -> jsonschema.Draft202012Validator:
    schema = {"$ref": f"#/components/schemas/{name}", "components": doc["components"]}
    return jsonschema.Draft202012Validator(schema)


def check(doc: dict[str, Any], path: str, method: str, resp: TestResponse) -> Any:
    """Validate ``resp`` against the document's schema for ``method path`` and its status code;
    returns the JSON body (a list of events for NDJSON)."""
    responses = doc["paths"][path][method]["responses"]
    assert str(resp.status_code) in responses, f"{method.upper()} {path} answered {resp.status_code}: undocumented"
    content = responses[str(resp.status_code)]["content"]
    assert resp.mimetype in content, (resp.mimetype, list(content))
    schema = jsonschema.Draft202012Validator({**content[resp.mimetype]["schema"], "components": doc["components"]})
    if resp.mimetype == "application/x-ndjson":  # the schema is the stream read as an array of its lines
        events = [json.loads(line) for line in resp.get_data(as_text=True).splitlines() if line.strip()]
        schema.validate(events)
        return events
    body = resp.get_json()
    schema.validate(body)
    return body


def refs(node: Any) -> set[str]:
    if isinstance(node, dict):
        found = {node["$ref"].rsplit("/", 1)[-1]} if isinstance(node.get("$ref"), str) else set()
        return found.union(*(refs(v) for v in node.values()))
    if isinstance(node, list):
        return set().union(*(refs(v) for v in node))
    return set()


def test_openapi_document_is_served_and_valid(client: FlaskClient) -> None:
    doc = client.get("/openapi.json").get_json()
    assert doc["openapi"].startswith("3.1")
    assert {path: set(item) for path, item in doc["paths"].items()} == {
        "/api/agent/run": {"post"}, "/api/agent/run/stream": {"post"}, "/api/agent/agui": {"post"},
        "/api/agent/runs": {"get"},
        "/api/agent/runs/{runId}": {"get", "delete"},
        "/api/agent/runs/{runId}/events": {"get"}, "/api/agent/runs/{runId}/trace": {"get"},
        "/api/agent/runs/{runId}/cancel": {"post"},
        "/api/agent/approve": {"post"}, "/agent/run": {"post"},
        "/api/agent/approvals": {"get"}, "/api/agent/approvals/{approvalId}": {"get"},
        "/api/agent/usage": {"get"}, "/api/agent/sessions": {"get", "post"}, "/api/agent/sessions/{sessionId}": {"get"},
        "/api/agent/sessions/{sessionId}/refine": {"post"}, "/api/agent/sessions/{sessionId}/confirm": {"post"},
        "/api/agent/sessions/{sessionId}/cancel": {"post"}, "/api/agent/sessions/{sessionId}/events": {"get"},
        "/api/integrations": {"get"}, "/api/integrations/{provider}": {"get", "post", "delete"},
        "/api/integrations/mcp": {"get"}, "/api/integrations/mcp/{name}": {"get", "post", "delete"},
        "/api/integrations/mcp/{name}/tools": {"get"},
        "/api/integrations/a2a": {"get"}, "/api/integrations/a2a/{name}": {"get", "post", "delete"},
        "/api/agent/webhooks": {"get"}, "/api/agent/webhooks/{name}": {"get", "put", "delete"},
        "/api/agent/webhooks/{name}/deliveries": {"get"},
        "/api/agent/schedules": {"get"}, "/api/agent/schedules/{name}": {"get", "put", "delete"},
        "/api/agent/schedules/{name}/runs": {"get"},
        "/api/agent/containers": {"get"}, "/api/agent/containers/{containerId}": {"delete"},
        "/api/agent/containers/{containerId}/files": {"get"},
        "/api/agent/threads": {"get"}, "/api/agent/threads/{threadId}": {"get", "delete"},
        "/api/agent/memories": {"get"}, "/api/agent/memories/{memoryId}": {"delete"},
        "/api/agent/me/export": {"post"}, "/api/agent/me": {"delete"}, "/api/admin/users/{uid}": {"get", "patch"},
        "/a2a": {"post"}, "/a2a/message:send": {"post"}, "/a2a/message:stream": {"post"},
        "/a2a/tasks": {"get"}, "/a2a/tasks/{taskId}": {"get"}, "/a2a/tasks/{taskId}:cancel": {"post"},
        "/a2a/tasks/{taskId}:subscribe": {"get", "post"},
        "/a2a/tasks/{taskId}/pushNotificationConfigs": {"get", "post"},
        "/a2a/tasks/{taskId}/pushNotificationConfigs/{configId}": {"get", "delete"},
        "/a2a/extendedAgentCard": {"get"}, "/.well-known/agent-card.json": {"get"},
        "/healthz": {"get"}, "/openapi.json": {"get"}}
    jsonschema.Draft202012Validator.check_schema({"components": doc["components"]})
    for schema in doc["components"]["schemas"].values():
        jsonschema.Draft202012Validator.check_schema(schema)
    assert refs(doc["paths"]) | refs(doc["components"]) <= set(doc["components"]["schemas"])
    connect = doc["paths"]["/api/integrations/{provider}"]["post"]
    assert connect["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith("/ConnectRequest")
    assert connect["parameters"][0]["schema"]["enum"] == ["google", "slack", "github"]


def test_event_schemas_require_seq_and_type(client: FlaskClient) -> None:
    doc = client.get("/openapi.json").get_json()
    schemas = doc["components"]["schemas"]
    events = [ref.rsplit("/", 1)[-1] for ref in schemas["RunEvent"]["discriminator"]["mapping"].values()]
    # the eight of seed 001, agent_state, the five plan events (seed 003), the events of a plan's
    # execution (executor_reason/act/observe/reflect, approval_required, plan_updated, plan_status,
    # plan_result: a plan run's log, partly relayed into its chat run's), stream_end and the
    # heartbeat (stream only, the one event without a seq)
    assert len(events) == 24
    assert "seq" not in schemas["HeartbeatEvent"]["properties"]
    for name in set(events) - {"HeartbeatEvent"}:
        assert {"seq", "type"} <= set(schemas[name]["required"]), name
        seq = schemas[name]["properties"]["seq"]
        assert seq["minimum"] == 1 and "default" not in seq, name
    ev = validator(doc, "RunEvent")
    good = {"type": "delta", "seq": 3, "delta": "hi"}
    ev.validate(good)
    for broken in ({"type": "delta", "delta": "hi"}, {**good, "seq": 0}, {"seq": 3, "delta": "hi"}):
        assert not ev.is_valid(broken), broken


def test_response_schemas_are_closed(client: FlaskClient) -> None:
    doc = client.get("/openapi.json").get_json()
    schemas = doc["components"]["schemas"]
    todo = refs([op["responses"] for item in doc["paths"].values() for op in item.values()])
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        seen.add(name)
        todo |= refs(schemas[name]) - seen
        if "properties" in schemas[name]:
            assert schemas[name]["additionalProperties"] is (name in OPEN_MODELS), name
    assert {"RunResult", "RunView", "Approval", "Usage", "StatusEvent", "ErrorResponse",
            "IntegrationsResponse", "GoalsResponse"} <= seen
    # The run record as served: without the fields the route leaves out.
    assert not {"systemInstruction", "lease"} & set(schemas["RunView"]["properties"])


def with_extra(body: dict[str, Any], *path: str | int) -> dict[str, Any]:
    """A copy of ``body`` with an unexpected field added to the object at ``path``."""
    out = copy.deepcopy(body)
    node: Any = out
    for key in path:
        node = node[key]
    node["unexpected"] = 1
    return out


def test_real_responses_match_the_document(install: Install, client: FlaskClient,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    doc = client.get("/openapi.json").get_json()
    rt = install(ScriptedModel([text_turn("hi", thought="t"),
                                calls_turn(call("search_memory", {"query": "x"}), call("save_memory", {"text": "x"})),
                                text_turn("saved")]))
    ok = client.post("/api/agent/run", json={"prompt": "x"}, headers=ALICE)
    run_result = check(doc, "/api/agent/run", "post", ok)
    events = check(doc, "/api/agent/run/stream", "post",
                   client.post("/api/agent/run/stream", json={"prompt": "save x"}, headers=ALICE))
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert {"status", "tool_call", "tool_result", "usage", "result"} <= {e["type"] for e in events}
    result = events[-1]["result"]
    assert result["status"] == "awaiting_confirmation"
    run_id = result["runId"]
    replayed = check(doc, "/api/agent/runs/{runId}/events", "get",
                     client.get(f"/api/agent/runs/{run_id}/events?after=0", headers=ALICE))
    assert replayed == events
    paused = check(doc, "/api/agent/runs/{runId}", "get", client.get(f"/api/agent/runs/{run_id}", headers=ALICE))
    listed = check(doc, "/api/agent/runs", "get", client.get("/api/agent/runs", headers=ALICE))
    assert [r["status"] for r in listed["runs"]] == ["awaiting_confirmation", "completed"]
    assert check(doc, "/api/agent/runs", "get",
                 client.get("/api/agent/runs?limit=0", headers=ALICE))["error"]["code"] == "INVALID_QUERY"
    approved = client.post("/api/agent/approve", json={"approvalId": result["approval"]["id"],
                                                       "decision": "approve"}, headers=ALICE)
    assert approved.status_code == 202
    check(doc, "/api/agent/approve", "post", approved)
    # The resumed run's events, as a client following the run reads them.
    dispatcher = rt.dispatcher
    assert isinstance(dispatcher, RecordingDispatcher)
    (msg,) = dispatcher.take()
    resume = create_function_app("resume", "main.py", "cloudevent").test_client()  # type: ignore[no-untyped-call]
    headers, data = pubsub_event(msg.encode())
    assert resume.post("/", headers=headers, data=data).status_code == 200
    resumed = check(doc, "/api/agent/runs/{runId}/events", "get",
                    client.get(f"/api/agent/runs/{run_id}/events?after={events[-1]['seq']}&follow=1",
                               headers=ALICE))
    assert [e["seq"] for e in resumed] == list(range(events[-1]["seq"] + 1, events[-1]["seq"] + 1 + len(resumed)))
    assert resumed[-1]["type"] == "result" and resumed[-1]["result"]["status"] == "completed"
    assert any(e["type"] == "tool_result" and e["toolName"] == "save_memory" for e in resumed)
    done = check(doc, "/api/agent/runs/{runId}", "get", client.get(f"/api/agent/runs/{run_id}", headers=ALICE))
    assert done["status"] == "completed" and done["result"]["ok"] is True
    err = check(doc, "/api/agent/run", "post", client.post("/api/agent/run", json={"nope": 1}, headers=ALICE))
    assert err["error"]["code"] == "INVALID_REQUEST"
    check(doc, "/api/agent/runs/{runId}", "get", client.get("/api/agent/runs/run_missing", headers=ALICE))
    goals = client.post("/agent/run", json={"message": "I want to run a marathon", "userId": "u1",
                                            "sessionId": "s1"})
    assert goals.status_code == 200  # the offline planner answers (no GEMINI_API_KEY in tests)
    goals_body = check(doc, "/agent/run", "post", goals)
    usage = check(doc, "/api/agent/usage", "get", client.get("/api/agent/usage?groupBy=day", headers=ALICE))
    assert usage["calls"] >= 3 and [g["key"] for g in usage["groups"]] == [usage["to"][:10]]
    assert check(doc, "/api/agent/usage", "get",
                 client.get("/api/agent/usage?groupBy=color", headers=ALICE))["error"]["code"] == "INVALID_QUERY"
    bad_goal = client.post("/agent/run", json={"message": ""})
    assert bad_goal.status_code == 400
    check(doc, "/agent/run", "post", bad_goal)

    # The document is strict enough to notice a broken response: a wrong value, a missing seq,
    # or an unexpected field at any depth.
    assert not validator(doc, "RunResult").is_valid(dict(run_result, status="exploded"))
    broken: list[tuple[str, dict[str, Any]]] = [
        ("RunResult", with_extra(run_result)),
        ("RunResult", with_extra(result, "approval")),
        ("RunView", with_extra(paused)),
        ("RunView", with_extra(done, "result")),
        ("RunView", with_extra(done, "usage")),
        ("RunView", dict(done, systemInstruction="the persona")),
        ("ApproveResponse", with_extra(approved.get_json())),
        ("RunsListResponse", with_extra(listed, "runs", 0)),
        ("RunsListResponse", with_extra(listed, "runs", 0, "approvals", 0)),
        ("ErrorResponse", with_extra(err)),
        ("ErrorResponse", with_extra(err, "error")),
        ("GoalsResponse", with_extra(goals_body, "state")),
    ]
    broken += [("RunEvent", with_extra(ev)) for ev in events + resumed]
    broken += [("RunEvent", {k: v for k, v in ev.items() if k != "seq"}) for ev in events + resumed]
    broken += [("RunEvent", with_extra(events[-1], "result", "approval"))]
    for name, body in broken:
        assert not validator(doc, name).is_valid(body), (name, body)


def test_integration_responses_match_the_document(install: Install, client: FlaskClient) -> None:
    doc = client.get("/openapi.json").get_json()
    collection, one = "/api/integrations", "/api/integrations/{provider}"
    install(ScriptedModel([]), credentials_encryption_key=KEY)
    listed = check(doc, collection, "get", client.get("/api/integrations", headers=ALICE))
    assert [(i["provider"], i["connected"]) for i in listed["integrations"]] == [
        ("google", False), ("slack", False), ("github", False)]
    connected = check(doc, one, "post", client.post("/api/integrations/google", json=TOKENS, headers=ALICE))
    assert connected["connected"] is True and connected["accountEmail"] == "alice@example.com"
    slack = check(doc, one, "post", client.post("/api/integrations/slack", json={"accessToken": "xoxp-1"},
                                                 headers=ALICE))
    assert slack["connected"] is True and slack.get("accountEmail") is None
    github = check(doc, one, "post", client.post("/api/integrations/github", json={"accessToken": "ghp_x"},
                                                  headers=ALICE))
    assert (github["provider"], github["connected"]) == ("github", True)
    got = check(doc, one, "get", client.get("/api/integrations/google", headers=ALICE))
    assert got["ok"] is True and got["provider"] == "google" and got["connected"] is True  # one object, like POST
    removed = check(doc, one, "delete", client.delete("/api/integrations/google", headers=ALICE))
    assert removed == {"ok": True, "provider": "google", "connected": False, "removed": True}
    assert check(doc, one, "delete", client.delete("/api/integrations/google", headers=ALICE))["removed"] is False
    for method, path, body, headers, code in [
        ("get", "/api/integrations", None, {}, "UNAUTHENTICATED"),
        ("get", "/api/integrations/gitlab", None, ALICE, "UNKNOWN_INTEGRATION"),
        ("post", "/api/integrations/gitlab", TOKENS, ALICE, "UNKNOWN_INTEGRATION"),
        ("post", "/api/integrations/google", {**TOKENS, "clientSecret": "x"}, ALICE, "INVALID_REQUEST"),
        ("post", "/api/integrations/google", {}, {}, "UNAUTHENTICATED"),
        ("delete", "/api/integrations/slack", None, {}, "UNAUTHENTICATED"),
    ]:
        resp = client.open(path, method=method.upper(), json=body, headers=headers)
        route = one if path.count("/") == 3 else collection
        assert check(doc, route, method, resp)["error"]["code"] == code, (method, path)
    form = client.post("/api/integrations/google", data="accessToken=x", headers=ALICE,
                       content_type="application/x-www-form-urlencoded")
    assert form.status_code == 415
    check(doc, one, "post", form)
    install(ScriptedModel([]), credentials_encryption_key=None)
    refused = client.post("/api/integrations/google", json=TOKENS, headers=ALICE)
    assert refused.status_code == 503
    assert check(doc, one, "post", refused)["error"]["code"] == "INTEGRATIONS_NOT_CONFIGURED"
    # No token ever matches: a response that leaked one has a field the document does not list.
    assert not validator(doc, "IntegrationResponse").is_valid(dict(connected, accessToken="ya29.x"))
    assert not validator(doc, "IntegrationsResponse").is_valid(with_extra(listed, "integrations", 0))
    assert not validator(doc, "IntegrationRemovedResponse").is_valid(dict(removed, connected=True))


def test_the_document_passes_the_openapi_spec_validator(client: FlaskClient) -> None:
    """openapi-spec-validator's 3.1 schema (issue 35: the followRunEvents link of approve gave a
    boolean where a link parameter must be a string or an expression)."""
    from openapi_spec_validator import validate

    validate(client.get("/openapi.json").get_json())
