"""One query parser and a JSON depth limit on every route (issue 35), through make dev's app.

The routes come from the route table (``shared/routes.py``), so a route added later is covered
without editing this file: a query parameter the route does not take (``?limt=5``) answers 400
``INVALID_QUERY`` naming it, whatever the route; a body nested 10,000 levels deep answers 400
``INVALID_JSON`` naming the limit on every route that reads a body, and nothing is logged as an
error.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator

import pytest
from flask.testing import FlaskClient

from shared import routes
from shared.models.scripted import ScriptedModel
from shared.web import MAX_JSON_DEPTH, json_depth_exceeds
from tests.e2e.conftest import ALICE, Install

SAMPLES = {"provider": "google", "name": "srv1"}
ADMIN = {"Authorization": "Bearer dev-admin:ops"}


def concrete(route: routes.Route) -> str:
    """The route's path with a value in each parameter (an id unless the route says otherwise)."""
    return re.sub(r"\{([A-Za-z_]+)\}", lambda m: SAMPLES.get(m.group(1), "x1"), route.path)


@pytest.fixture
def runtime(install: Install) -> Iterator[None]:
    install(ScriptedModel([]))
    yield


def route_id(route: routes.Route) -> str:
    return route.operation_id


@pytest.mark.parametrize("route", routes.ROUTES, ids=route_id)
def test_a_typo_in_a_query_parameter_is_a_400_on_every_route(runtime: None, client: FlaskClient,
                                                              route: routes.Route) -> None:
    resp = client.open(concrete(route) + "?limt=5", method=route.method, headers=ALICE, json={})
    assert resp.status_code == 400, (route.method, route.path, resp.get_data(as_text=True)[:300])
    error = resp.get_json()["error"]
    assert error["code"] == "INVALID_QUERY" and error["details"]["field"] == "limt"
    assert "limt" in error["message"]
    assert error["details"]["allowed"] == [p.name for p in route.query]


@pytest.mark.parametrize("route", [r for r in routes.ROUTES if r.query], ids=route_id)
def test_every_declared_parameter_given_twice_is_a_400(runtime: None, client: FlaskClient,
                                                       route: routes.Route) -> None:
    for p in route.query:
        value = {"integer": "1", "boolean": "true", "enum": p.values[0] if p.values else "",
                 "instant": "2026-01-01", "string": "x"}[p.kind]
        resp = client.open(f"{concrete(route)}?{p.name}={value}&{p.name}={value}", method=route.method,
                           headers=ALICE)
        assert resp.status_code == 400 and resp.get_json()["error"]["details"]["field"] == p.name


def test_a_known_parameter_still_works_and_documents_match_the_table(runtime: None, client: FlaskClient) -> None:
    assert client.get("/api/agent/runs?limit=5", headers=ALICE).status_code == 200
    resp = client.get("/api/agent/runs?limit=0", headers=ALICE)
    assert resp.status_code == 400 and resp.get_json()["error"]["details"]["field"] == "limit"
    doc = client.get("/openapi.json").get_json()
    for route in routes.ROUTES:
        op = doc["paths"][route.path][route.method.lower()]
        documented = [p["name"] for p in op.get("parameters", []) if p["in"] == "query"]
        assert documented == [p.name for p in route.query], route.operation_id
        assert "400" in op["responses"], route.operation_id


BODY_ROUTES = [r for r in routes.ROUTES if r.request is not None]


@pytest.mark.parametrize("route", BODY_ROUTES, ids=route_id)
def test_a_body_nested_10000_deep_is_a_400_naming_the_limit_and_logs_no_error(
        runtime: None, client: FlaskClient, caplog: pytest.LogCaptureFixture, route: routes.Route) -> None:
    body = '{"attachedContext": ' + "[" * 10_000 + "]" * 10_000 + "}"
    with caplog.at_level(logging.INFO):
        resp = client.open(concrete(route), method=route.method, data=body, content_type="application/json",
                           headers=ADMIN if route.path.startswith("/api/admin/") else ALICE)
    assert resp.status_code == 400, resp.get_data(as_text=True)[:300]
    error = resp.get_json()["error"]
    assert error["code"] == "INVALID_JSON" and str(MAX_JSON_DEPTH) in error["message"]
    assert error["details"] == {"limit": "maxDepth", "maxDepth": MAX_JSON_DEPTH}
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []


def test_nesting_up_to_the_limit_reaches_validation(runtime: None, client: FlaskClient) -> None:
    inner = "[" * (MAX_JSON_DEPTH - 1) + "]" * (MAX_JSON_DEPTH - 1)
    resp = client.post("/api/agent/run", headers=ALICE, data='{"prompt": "hi", "attachedContext": ' + inner + "}",
                       content_type="application/json")
    assert resp.status_code == 400 and resp.get_json()["error"]["code"] == "INVALID_REQUEST"


def test_the_depth_check_ignores_brackets_in_strings() -> None:
    deep = b"[" * 65 + b"]" * 65
    assert json_depth_exceeds(deep) and not json_depth_exceeds(b"[" * 64 + b"]" * 64)
    assert not json_depth_exceeds(b'{"a": "' + b"[" * 500 + b'"}')
    assert not json_depth_exceeds(b'["\\"' + b"{" * 100 + b'", 1]')  # an escaped quote does not end the string
    assert json_depth_exceeds(b'["\\\\", ' + b"[" * 70 + b"]" * 70 + b"]")  # an escaped backslash does
    assert not json_depth_exceeds(b"[[]]" * 1000)  # many brackets, shallow
