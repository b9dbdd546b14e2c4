"""What outside clients found (session 2026-11-26b, docs/session-notes/2026-11-26b/trial.md), through
make dev's app: each was a 500 or a refusal of a schema-valid body that the suites had not sent.

- A lone UTF-16 surrogate escape (``"\\ud800"``) is legal JSON but decodes to a string no store
  can encode: in a free-form field (a client tool's JSON schema, the goals agent's state) the write
  answered 500. Every route that reads a body now refuses it with 400 ``INVALID_JSON`` naming the
  field, while a surrogate *pair* (one character, e.g. an emoji written as escapes) is accepted.
- ``PUT /api/agent/schedules/{name}`` with a blank ``prompt`` answered 500 (the run request built to
  check it raised outside the 400 mapping); a blank session template's prompt was stored and failed
  at every occurrence; ``session.ttlS: 60.0`` (an integer as JSON Schema reads one) was refused.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator

import flask
import pytest
from flask.testing import FlaskClient

from shared import routes
from shared.errors import InvalidInput
from shared.models.scripted import ScriptedModel
from shared.web import read_json_body
from tests.e2e.conftest import ALICE, Install

ADMIN = {"Authorization": "Bearer dev-admin:ops"}
LONE = '"a\\ud800b"'  # JSON text: a string holding a lone high surrogate


@pytest.fixture
def runtime(install: Install) -> Iterator[None]:
    install(ScriptedModel([]))
    yield


def concrete(route: routes.Route) -> str:
    return re.sub(r"\{([A-Za-z_]+)\}", lambda m: {"provider": "google", "name": "srv1"}.get(m.group(1), "x1"),
                  route.path)


@pytest.mark.parametrize("route", [r for r in routes.ROUTES if r.request is not None], ids=lambda r: r.operation_id)
def test_a_lone_surrogate_anywhere_in_a_body_is_a_400_naming_the_field(
        runtime: None, client: FlaskClient, caplog: pytest.LogCaptureFixture, route: routes.Route) -> None:
    body = '{"prompt": "hi", "clientTools": [{"name": "t", "parameters": {"type": ' + LONE + "}}]}"
    with caplog.at_level(logging.INFO):
        resp = client.open(concrete(route), method=route.method, data=body, content_type="application/json",
                           headers=ADMIN if route.path.startswith("/api/admin/") else ALICE)
    assert resp.status_code == 400, (route.path, resp.get_data(as_text=True)[:300])
    error = resp.get_json()["error"]
    assert error["code"] == "INVALID_JSON" and error["details"] == {"field": "clientTools.0.parameters.type"}
    assert "surrogate" in error["message"]
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []


def test_the_run_whose_client_tool_schema_held_one_answered_500(runtime: None, client: FlaskClient) -> None:
    for where in ('{"type": "object", "properties": {"a": {"type": ' + LONE + "}}}",
                  '{"type": "object", "properties": {' + LONE + ': {"type": "string"}}}'):
        body = '{"prompt": "hello", "clientTools": [{"name": "ct", "description": "d", "parameters": ' + where + "}]}"
        resp = client.post("/api/agent/run", headers=ALICE, data=body, content_type="application/json")
        assert resp.status_code == 400 and resp.get_json()["error"]["code"] == "INVALID_JSON", resp.get_data()
    assert client.get("/api/agent/runs", headers=ALICE).get_json()["runs"] == []  # nothing written


def parsed(raw: bytes) -> dict[str, object]:
    with flask.Flask(__name__).test_request_context(data=raw, content_type="application/json"):
        return read_json_body(flask.request, 10_000)


def test_a_surrogate_pair_is_one_character_and_accepted() -> None:
    # an escaped backslash before "ud800" is text, not an escape
    assert parsed(b'{"p": "\\ud83d\\ude00 \\uD83D\\uDE00", "k\\u00e9": "\\\\ud800"}') == {
        "p": "\U0001F600 \U0001F600", "k\u00e9": "\\ud800"}
    for lone, field in [(b'{"a": "\\udc00"}', "a"), (b'{"a": ["x", {"b": "\\uD800x"}]}', "a.1.b"),
                        (b'{"b": {"\\ud800": 1}}', "b.\\ud800")]:
        with pytest.raises(InvalidInput, match="surrogate") as caught:
            parsed(lone)
        assert caught.value.details == {"field": field}


def test_a_schedule_with_a_blank_prompt_is_a_400_and_nothing_is_stored(runtime: None, client: FlaskClient,
                                                                       caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO):
        for body, field in [({"cron": "0 9 * * *", "prompt": " "}, "prompt"),
                            ({"cron": "0 9 * * *", "prompt": "\n\r\t"}, "prompt"),
                            ({"cron": "0 9 * * *", "session": {"prompt": " \u3000"}}, "session.prompt")]:
            resp = client.put("/api/agent/schedules/daily", headers=ALICE, json=body)
            assert resp.status_code == 400, resp.get_data(as_text=True)
            error = resp.get_json()["error"]
            assert error["code"] == "INVALID_REQUEST" and [e["field"] for e in error["details"]["errors"]] == [field]
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []
    assert client.get("/api/agent/schedules/daily", headers=ALICE).get_json()["declared"] is False


def test_a_session_templates_ttl_is_an_integer_as_json_schema_reads_one(runtime: None, client: FlaskClient) -> None:
    resp = client.put("/api/agent/schedules/notes", headers=ALICE,
                      data=json.dumps({"cron": "0 9 * * *", "session": {"prompt": "Summarise my notes", "ttlS": 60.0}}),
                      content_type="application/json")
    assert resp.status_code == 200, resp.get_data(as_text=True)
    assert resp.get_json()["session"]["ttlS"] == 60
    for bad in ("60", 60.5, True):
        resp = client.put("/api/agent/schedules/notes", headers=ALICE,
                          json={"cron": "0 9 * * *", "session": {"prompt": "Summarise my notes", "ttlS": bad}})
        assert resp.status_code == 400, bad
    assert client.get("/api/agent/schedules/notes", headers=ALICE).get_json()["session"]["ttlS"] == 60


def test_the_goals_agents_user_and_session_ids_are_never_document_paths(runtime: None, client: FlaskClient,
                                                                        caplog: pytest.LogCaptureFixture) -> None:
    """``userId`` names the usage ledger's ``users/{userId}``: ``alice/runs/run_1`` wrote ledger
    entries inside that run's document, ``../x`` was logged as an error and its usage lost."""
    with caplog.at_level(logging.INFO):
        for field, value in [("userId", "alice/runs/run_1"), ("userId", ".."), ("userId", "."), ("userId", "u" * 129),
                             ("userId", "a b"), ("sessionId", "s/1"), ("sessionId", "")]:
            resp = client.post("/agent/run", headers=ALICE, json={field: value, "message": "plan my week"})
            assert resp.status_code == 400, (field, value, resp.get_data(as_text=True)[:200])
            assert [e["field"] for e in resp.get_json()["error"]["details"]["errors"]] == [field]
        ok = client.post("/agent/run", headers=ALICE, json={"userId": "u_001", "sessionId": "sess.goal-001",
                                                            "message": "I want to learn Kotlin."})
    assert ok.status_code == 200, ok.get_data(as_text=True)[:300]
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []


def test_the_admin_api_checks_what_its_document_says(runtime: None, client: FlaskClient) -> None:
    """The mail allowlist's address pattern was in the schema only ("not-an-email" was stored, and
    a delegated user may mail allowlisted addresses without approval); an unknown time zone was
    stored; ``activeRuns: 2.0`` (an integer as JSON Schema reads one) was refused."""
    for body, field in [({"profile": {"emailAllowlist": ["not-an-email"]}}, "profile.emailAllowlist.0"),
                        ({"profile": {"emailAllowlist": ["ok@example.com", "a b@c"]}}, "profile.emailAllowlist.1"),
                        ({"profile": {"timezone": "Mars/Olympus"}}, "profile.timezone"),
                        ({"limits": {"activeRuns": 2.5}}, "limits.activeRuns")]:
        resp = client.patch("/api/admin/users/victim", headers=ADMIN, json=body)
        assert resp.status_code == 400, (body, resp.get_data(as_text=True)[:300])
        assert [e["field"] for e in resp.get_json()["error"]["details"]["errors"]] == [field]
    resp = client.patch("/api/admin/users/victim", headers=ADMIN, data=json.dumps(
        {"profile": {"emailAllowlist": ["ok@example.com"], "timezone": "Europe/Paris"},
         "limits": {"activeRuns": 2.0, "dailyTokens": 1e6}}), content_type="application/json")
    assert resp.status_code == 200, resp.get_data(as_text=True)[:300]
    got = client.get("/api/admin/users/victim", headers=ADMIN).get_json()
    assert got["profile"]["emailAllowlist"] == ["ok@example.com"] and got["profile"]["timezone"] == "Europe/Paris"
    assert got["limits"]["activeRuns"] == 2 and got["limits"]["dailyTokens"] == 1_000_000
