"""Regression tests for what the OpenAPI fuzz test (tests/fuzz) found: each request below used to be
answered against the document (accepted while the document calls it invalid, refused while the
document calls it valid, or a 500)."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import jsonschema_rs
import pytest
from flask.testing import FlaskClient

from shared.models.offline import OfflineModel
from shared.models.scripted import ScriptedModel, call, calls_turn, text_turn
from shared.state.docstore import Write
from shared.wire import MAX_INT64, NOT_BLANK_PATTERN, WHITESPACE, has_whitespace, is_blank
from tests.e2e.conftest import ALICE, Install
from tests.e2e.test_openapi import KEY


def schema_of(client: FlaskClient, name: str) -> jsonschema_rs.Draft202012Validator:
    """The document's schema as schemathesis (and any ECMA-262 regex engine) reads it: jsonschema_rs.
    (Python's ``jsonschema`` matches ``pattern`` with ``re``, where ``$`` accepts a trailing newline.)"""
    doc = client.get("/openapi.json").get_json()
    return jsonschema_rs.Draft202012Validator({"$ref": f"#/components/schemas/{name}",
                                               "components": doc["components"]})


def test_whitespace_is_the_union_of_python_and_json_schema_whitespace() -> None:
    python = {chr(c) for c in range(0x110000) if chr(c).isspace()}
    assert python | {"\ufeff"} == set(WHITESPACE)
    for ch in sorted(WHITESPACE):
        assert is_blank(ch * 3) and has_whitespace(f"a{ch}b"), hex(ord(ch))
        for engine in (jsonschema.Draft202012Validator, jsonschema_rs.Draft202012Validator):
            assert not engine({"pattern": NOT_BLANK_PATTERN}).is_valid(ch), hex(ord(ch))
    assert not is_blank(" x ") and jsonschema_rs.Draft202012Validator({"pattern": NOT_BLANK_PATTERN}).is_valid(" x ")


@pytest.mark.parametrize("body", [
    {"prompt": "hi", "supersede": 0},  # lax pydantic read 0 as false
    {"prompt": "hi", "supersede": "true"},
    {"prompt": "\ufeff"},  # blank to JSON Schema, not to str.strip()
    {"prompt": "\x1c\x1d"},  # blank to str.isspace, not to JSON Schema's \\s
    {"prompt": "hi", "conversation": [{"role": "user", "text": 5}]},
])
def test_run_requests_the_document_rejects_are_rejected(install: Install, client: FlaskClient,
                                                        body: dict[str, Any]) -> None:
    install(ScriptedModel([]))
    resp = client.post("/api/agent/run", json=body, headers=ALICE)
    assert resp.status_code == 400 and resp.get_json()["error"]["code"] == "INVALID_REQUEST", resp.get_json()
    assert not schema_of(client, "RunRequest").is_valid(body)


@pytest.mark.parametrize(("query", "message"), [
    ("follow=null", "must be true or false"), ("follow=yes", "must be true or false"),
    ("follow=1&follow=1", "given 2 times"), ("after=-1", ">= 0"), ("after=%20%205", "integer"),
    ("after=", "integer"), ("after=%D9%A5", "integer"), (f"after={MAX_INT64 + 1}", f"<= {MAX_INT64}"),
    ("after=1e3", "integer"),
])
def test_event_queries_the_document_rejects_are_400(install: Install, client: FlaskClient, query: str,
                                                    message: str) -> None:
    install(ScriptedModel([text_turn("hi")]))
    run_id = client.post("/api/agent/run", json={"prompt": "hi"}, headers=ALICE).get_json()["runId"]
    resp = client.get(f"/api/agent/runs/{run_id}/events?{query}", headers=ALICE)
    assert resp.status_code == 400, resp.get_data(as_text=True)
    assert resp.get_json()["error"]["code"] == "INVALID_QUERY" and message in resp.get_json()["error"]["message"]
    ok = client.get(f"/api/agent/runs/{run_id}/events?after={MAX_INT64}&follow=true", headers=ALICE)
    assert ok.status_code == 200  # the largest documented value is served; the follow says the run had ended
    assert [(e["type"], e["reason"]) for e in map(json.loads, ok.get_data(as_text=True).splitlines())] == [
        ("stream_end", "run_ended")]
    assert client.get(f"/api/agent/runs/{run_id}/events?after=0&follow=0", headers=ALICE).status_code == 200


def test_a_run_path_with_a_trailing_newline_is_no_route(install: Install, client: FlaskClient) -> None:
    install(ScriptedModel([text_turn("hi")]))
    run_id = client.post("/api/agent/run", json={"prompt": "hi"}, headers=ALICE).get_json()["runId"]
    for path in (f"/api/agent/runs/{run_id}%0A", f"/api/agent/runs/{run_id}/events%0A"):
        resp = client.get(path, headers=ALICE)
        assert resp.status_code == 404 and resp.get_json()["error"]["code"] == "ROUTE_NOT_FOUND", path


TOKENS = {"accessToken": "ya29.x"}


@pytest.mark.parametrize(("body", "valid"), [
    ({**TOKENS, "expiresIn": 3599.0}, True),  # JSON Schema's integer includes 3599.0
    ({**TOKENS, "expiresIn": "3599"}, False),  # lax pydantic read the string as a number
    ({**TOKENS, "expiresIn": True}, False),
    ({**TOKENS, "expiresAt": 2e9, "expiresIn": 5}, False),  # now stated in the document too
    ({**TOKENS, "expiresAt": None, "expiresIn": 5}, True),
    ({**TOKENS, "accountEmail": "alice@example.com\n"}, False),  # `$` let a trailing newline through
    ({**TOKENS, "accountEmail": "000"}, False),  # the document had no email pattern
    ({**TOKENS, "scopes": [" "]}, False),  # the document had no rule for scopes
    ({**TOKENS, "scopes": ["x" * 301]}, False),
    ({"accessToken": "ya29\u3000x"}, False),
    ({**TOKENS, "expiresAt": 1.6e308}, False),  # stored, it made every later read a 500 (issue 35)
    ({**TOKENS, "expiresAt": 253402300799}, True),  # 9999-12-31T23:59:59Z: the latest the API writes
    ({**TOKENS, "expiresAt": 253402300800}, False),
])
def test_connect_requests_match_the_document(install: Install, client: FlaskClient, body: dict[str, Any],
                                             valid: bool) -> None:
    install(ScriptedModel([]), credentials_encryption_key=KEY)
    resp = client.post("/api/integrations/google", json=body, headers=ALICE)
    assert resp.status_code == (200 if valid else 400), resp.get_json()
    assert schema_of(client, "ConnectRequest").is_valid(body) is valid


@pytest.mark.parametrize(("body", "valid"), [
    ({"message": "plan", "state": None, "context": None}, True),  # null is read as the default
    ({"message": "plan", "context": {"existingGoals": None, "calendarEvents": None}}, True),
    ({"message": "plan", "state": {"proposed_plan": {}}}, True),  # {} means "no plan"
    ({"message": "plan", "state": {"iteration": 1.0}}, True),
    ({"message": "plan", "state": {"iteration": "1"}}, False),
    ({"message": "\u2003"}, False),
    ({"message": "plan", "state": {"proposed_plan": {"goal": {"title": "g"}, "milestones": [
        {"title": "m", "dueDate": 0}]}}}, False),  # a number is not a date (was 1970-01-01)
    ({"message": "plan", "context": {"calendarEvents": [{"start": 0, "end": 10}]}}, False),
])
def test_goals_requests_match_the_document(install: Install, client: FlaskClient, body: dict[str, Any],
                                           valid: bool) -> None:
    install(ScriptedModel([]))
    resp = client.post("/agent/run", json=body)
    assert (resp.status_code == 200) is valid, resp.get_json()
    if not valid:
        assert resp.status_code == 400
    assert schema_of(client, "GoalsRequest").is_valid(body) is valid


def test_the_ndjson_schema_checks_every_line(install: Install, client: FlaskClient) -> None:
    """The document describes an NDJSON body as the array of its lines: a broken line anywhere
    (not only the first) makes the body invalid."""
    install(ScriptedModel([calls_turn(call("save_memory", {"text": "tea"}))]))
    doc = client.get("/openapi.json").get_json()
    content = doc["paths"]["/api/agent/run/stream"]["post"]["responses"]["200"]["content"]["application/x-ndjson"]
    schema = jsonschema.Draft202012Validator({**content["schema"], "components": doc["components"]})
    resp = client.post("/api/agent/run/stream", json={"prompt": "remember tea"}, headers=ALICE)
    events = [json.loads(line) for line in resp.get_data(as_text=True).splitlines()]
    assert len(events) > 3
    schema.validate(events)
    for i in range(len(events)):
        broken = [dict(ev) for ev in events]
        broken[i]["unexpected"] = 1
        assert not schema.is_valid(broken), i
    assert doc["paths"]["/api/agent/runs/{runId}/events"]["get"]["responses"]["200"]["content"][
        "application/x-ndjson"] == content


def test_links_name_real_operations_and_fields(client: FlaskClient) -> None:
    doc = client.get("/openapi.json").get_json()
    operations = {op["operationId"]: op for item in doc["paths"].values() for op in item.values()}
    links = [(name, link, response) for op in operations.values() for response in op["responses"].values()
             for name, link in response.get("links", {}).items()]
    assert len(links) >= 8
    for name, link, response in links:
        target = operations[link["operationId"]]
        params = {p["name"] for p in target.get("parameters", [])}
        assert set(link.get("parameters", {})) <= params, name
        if "requestBody" in link:
            body_schema = target["requestBody"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[-1]
            assert set(link["requestBody"]) <= set(doc["components"]["schemas"][body_schema]["properties"]), name
        source = response["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[-1]
        for value in [*link.get("parameters", {}).values(), *link.get("requestBody", {}).values()]:
            if isinstance(value, str) and value.startswith("$response.body#/"):
                field = value.removeprefix("$response.body#/").split("/")[0]
                assert field in doc["components"]["schemas"][source]["properties"], (name, value)


@pytest.mark.parametrize(("path", "field"), [
    ("/api/agent/runs?limit=%C2%B2", "limit"),  # "²": str.isdigit() but not int(): used to be a 500
    ("/api/agent/sessions?limit=%C2%B2", "limit"),
    ("/api/agent/sessions?limit=", "limit"),
    ("/api/agent/runs?limit=5&limit=6", "limit"),
    ("/api/agent/usage?to=", "to"),  # given but empty used to mean "absent"
    ("/api/agent/usage?from=%202026-01-01", "from"),  # not RFC 3339 (fromisoformat took it after strip)
    ("/api/agent/usage?from=2026-01-01%2000:00:00Z", "from"),
    ("/api/agent/usage?groupBy=", "groupBy"),
    ("/api/agent/usage?groupBy=day&groupBy=model", "groupBy"),
])
def test_list_and_usage_queries_the_document_rejects_are_400(install: Install, client: FlaskClient, path: str,
                                                             field: str) -> None:
    install(ScriptedModel([]))
    resp = client.get(path, headers=ALICE)
    assert resp.status_code == 400, resp.get_data(as_text=True)
    error = resp.get_json()["error"]
    assert error["code"] == "INVALID_QUERY" and error["details"]["field"] == field, error


def test_session_queries_and_paths_the_document_rejects(install: Install, client: FlaskClient) -> None:
    install(OfflineModel())
    sid = client.post("/api/agent/sessions", json={"prompt": "tidy my notes"}, headers=ALICE).get_json()["sessionId"]
    for query in ("after=%C2%B2", "after=-1", "follow=yes", "follow=1&follow=0", f"after={MAX_INT64 + 1}"):
        resp = client.get(f"/api/agent/sessions/{sid}/events?{query}", headers=ALICE)
        assert resp.status_code == 400 and resp.get_json()["error"]["code"] == "INVALID_QUERY", (query, resp.data)
    assert client.get(f"/api/agent/sessions/{sid}/events?after=0&follow=false", headers=ALICE).status_code == 200
    for path in (f"/api/agent/sessions/{sid}%0A", f"/api/agent/sessions/{sid}/events%0A"):
        resp = client.get(path, headers=ALICE)
        assert resp.status_code == 404 and resp.get_json()["error"]["code"] == "ROUTE_NOT_FOUND", path


@pytest.mark.parametrize("body", [
    {"prompt": "plan", "deadline": "2099-01-01 00:00:00Z"},  # space: not RFC 3339
    {"prompt": "plan", "deadline": "2099-01-01T00:00:00"},  # no zone
    {"prompt": "\ufeff"},  # blank to JSON Schema
    {"prompt": "plan", "tools": "save_memory"},  # strict: a string is not a list
])
def test_session_requests_the_document_rejects_are_400(install: Install, client: FlaskClient,
                                                       body: dict[str, Any]) -> None:
    install(OfflineModel())
    resp = client.post("/api/agent/sessions", json=body, headers=ALICE)
    assert resp.status_code == 400, resp.get_data(as_text=True)
    sid = client.post("/api/agent/sessions", json={"prompt": "plan"}, headers=ALICE).get_json()["sessionId"]
    for confirm in ({"planVersion": "1"}, {"planVersion": True}, {"planVersion": 1.5}):
        resp = client.post(f"/api/agent/sessions/{sid}/confirm", json=confirm, headers=ALICE)
        assert resp.status_code == 400, (confirm, resp.get_data(as_text=True))
    # JSON Schema's integer includes 1.0: accepted, as the document says.
    assert client.post(f"/api/agent/sessions/{sid}/confirm", json={"planVersion": 1.0},
                       headers=ALICE).status_code == 202


def test_a_stored_time_out_of_range_is_read_as_unknown(install: Install, client: FlaskClient,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    """A connection stored before times were validated (``expiresAt: 1.6e308``) no longer makes every
    read of the user's integrations a 500: the value is answered as unknown and named in the log."""
    rt = install(ScriptedModel([]), credentials_encryption_key=KEY)
    assert client.post("/api/integrations/google", json={**TOKENS, "expiresAt": 2e9}, headers=ALICE).status_code == 200
    path = "users/alice/integrations/google"
    doc = rt.store.get(path)
    assert doc is not None
    rt.store.commit([Write("set", path, {**doc.data, "expiresAt": 1.6e308, "scopes": "not a list"})])
    for route in ("/api/integrations", "/api/integrations/google"):
        resp = client.get(route, headers=ALICE)
        assert resp.status_code == 200, resp.get_data(as_text=True)
    one = client.get("/api/integrations/google", headers=ALICE).get_json()
    assert one["connected"] is True and "expiresAt" not in one and one["scopes"] == []
    assert any("google" in r.getMessage() and "expiresAt" in r.getMessage() for r in caplog.records)
