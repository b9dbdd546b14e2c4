"""Numbers an outside client may send that Python reads differently from JSON (session 2026-11-26d
outside trial, docs/session-notes/2026-11-26d/issue-33p.md).

- An integer literal of more than 4,300 digits (a 5 KB body, well under ``MAX_BODY_BYTES``) made
  ``json.loads`` raise a plain ``ValueError`` (Python's integer string conversion limit): **500** on
  every route with a body. The same in a query integer (``?limit=``, ``?after=``) and in a
  ``Last-Event-ID`` header.
- A number too large for a double (``1e400``) is read as infinity; it was stored as ``null`` (a
  client tool schema's ``maximum: 1e400`` became ``maximum: null``). It is now refused like
  ``Infinity``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator

import pytest
from flask.testing import FlaskClient

from shared import routes
from shared.models.scripted import ScriptedModel, text_turn
from tests.e2e.conftest import ALICE, Install
from tests.e2e.test_outside_clients import concrete

ADMIN = {"Authorization": "Bearer dev-admin:ops"}
HUGE = "1" + "0" * 5000


@pytest.fixture
def runtime(install: Install) -> Iterator[None]:
    install(ScriptedModel([text_turn("hello")] * 4))
    yield




def _headers(route: routes.Route) -> dict[str, str]:
    return ADMIN if route.path.startswith("/api/admin/") else ALICE


def _no_error_logged(caplog: pytest.LogCaptureFixture) -> None:
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []


BODY_ROUTES = [r for r in routes.ROUTES if r.request is not None]


@pytest.mark.parametrize("route", BODY_ROUTES, ids=lambda r: r.operation_id)
@pytest.mark.parametrize("number", [HUGE, "-" + HUGE, "1e400", "-1e400", "1" + "0" * 400 + ".5"],
                         ids=["huge-int", "huge-negative-int", "1e400", "-1e400", "huge-decimal"])
def test_a_number_python_cannot_read_as_json_is_a_400_on_every_route_with_a_body(
        runtime: None, client: FlaskClient, caplog: pytest.LogCaptureFixture, route: routes.Route,
        number: str) -> None:
    body = '{"prompt": "hi", "planVersion": ' + number + "}"
    with caplog.at_level(logging.INFO):
        resp = client.open(concrete(route), method=route.method, data=body, content_type="application/json",
                           headers=_headers(route))
    assert resp.status_code == 400, (route.path, resp.get_data(as_text=True)[:300])
    error = resp.get_json()["error"]
    assert error["code"] == "INVALID_JSON" and "not valid JSON" in error["message"], error
    assert len(error["message"]) < 400  # the number is not echoed back whole
    _no_error_logged(caplog)


def test_a_client_tool_schema_bound_beyond_a_double_is_refused_not_stored_as_null(
        runtime: None, client: FlaskClient) -> None:
    body = ('{"prompt": "hi", "clientTools": [{"name": "t", "description": "d", "parameters": {"type": "object", '
            '"properties": {"a": {"type": "number", "maximum": 1e400}}}}]}')
    resp = client.post("/api/agent/run", data=body, content_type="application/json", headers=ALICE)
    assert resp.status_code == 400 and resp.get_json()["error"]["code"] == "INVALID_JSON", resp.get_json()
    assert "beyond the largest double" in resp.get_json()["error"]["message"]
    assert client.get("/api/agent/runs", headers=ALICE).get_json()["runs"] == []  # nothing written
    ok = client.post("/api/agent/run", headers=ALICE, json={"prompt": "hi", "clientTools": [
        {"name": "t", "description": "d", "parameters": {"type": "object",
                                                         "properties": {"a": {"type": "number", "maximum": 1e300}}}}]})
    assert ok.status_code == 200, ok.get_json()


INT_PARAMS = [(r, p) for r in routes.ROUTES for p in r.query if p.kind == "integer"]


@pytest.mark.parametrize(("route", "param"), INT_PARAMS, ids=lambda x: getattr(x, "operation_id", None)
                         or getattr(x, "name", ""))
@pytest.mark.parametrize("value", [HUGE, "-" + HUGE, "0" * 30 + "5"], ids=["huge", "huge-negative", "zeros"])
def test_a_query_integer_of_thousands_of_digits_is_a_400_naming_it(
        runtime: None, client: FlaskClient, caplog: pytest.LogCaptureFixture, route: routes.Route,
        param: routes.Param, value: str) -> None:
    with caplog.at_level(logging.INFO):
        resp = client.open(f"{concrete(route)}?{param.name}={value}", method=route.method, headers=_headers(route))
    if value.startswith("0"):  # leading zeros are still the number 5
        assert resp.status_code != 500 and resp.get_json().get("error", {}).get("code") != "INVALID_QUERY", \
            resp.get_data(as_text=True)[:300]
    else:
        assert resp.status_code == 400, (route.path, param.name, resp.get_data(as_text=True)[:300])
        error = resp.get_json()["error"]
        assert error["code"] == "INVALID_QUERY" and error["details"] == {"field": param.name}, error
        assert ("<=" if value == HUGE else ">=") in error["message"]
    _no_error_logged(caplog)


def test_a_last_event_id_of_thousands_of_digits_reads_past_every_event(
        runtime: None, client: FlaskClient, caplog: pytest.LogCaptureFixture) -> None:
    run = client.post("/api/agent/run", headers=ALICE, json={"prompt": "hi"}).get_json()
    events = f"/api/agent/runs/{run['runId']}/events"
    assert client.get(events, headers=ALICE).get_data(as_text=True).count('"seq"') > 2
    with caplog.at_level(logging.INFO):
        for header in (HUGE, "0" * 30 + "2"):
            resp = client.get(events, headers={**ALICE, "Last-Event-ID": header})
            assert resp.status_code == 200, resp.get_data(as_text=True)[:300]
            seqs = [int(s) for s in re.findall(r'"seq":(\d+)', resp.get_data(as_text=True))]
            assert seqs == ([] if header == HUGE else list(range(3, 3 + len(seqs)))), seqs
    _no_error_logged(caplog)


A2A = {**ALICE, "A2A-Version": "1.0"}


def test_a_json_rpc_body_with_an_integer_of_thousands_of_digits_is_a_parse_error(
        runtime: None, client: FlaskClient, caplog: pytest.LogCaptureFixture) -> None:
    for body in ('{"jsonrpc": "2.0", "id": ' + HUGE + ', "method": "GetTask", "params": {"id": "x"}}',
                 '{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x", "historyLength": '
                 + HUGE + "}}"):
        with caplog.at_level(logging.INFO):
            resp = client.post("/a2a", data=body, content_type="application/json", headers=A2A)
        assert resp.status_code == 200, resp.get_data(as_text=True)[:300]
        error = resp.get_json()["error"]
        assert error["code"] == -32700 and "4,300 digits" in error["message"], error  # was -32603 Internal error
    _no_error_logged(caplog)
    digits_as_text = {"jsonrpc": "2.0", "id": 2, "method": "SendMessage", "params": {"message": {
        "role": "ROLE_USER", "messageId": "m-1", "parts": [{"text": HUGE}]}}}
    sent = client.post("/a2a", json=digits_as_text, headers=A2A)
    assert sent.status_code == 200 and "result" in sent.get_json(), sent.get_data(as_text=True)[:300]
