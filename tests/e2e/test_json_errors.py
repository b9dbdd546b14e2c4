"""JSON everywhere (issue 14, scope 1): whatever path or method a client sends, the dev server and
every deployed function answer the JSON error envelope, never the web framework's HTML page.

The deployed functions are served as on Cloud Run: functions-framework's app for a ``main.py``
target (its own routing, robots.txt/favicon.ico rules and crash handler included).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import flask
import pytest
from flask.testing import FlaskClient
from functions_framework import create_app as create_function_app
from werkzeug.test import TestResponse

from shared.http_errors import install_json_errors
from shared.models.scripted import ScriptedModel
from tests.e2e.conftest import ALICE, Install

HTTP_TARGETS = {"run": ("/api/agent/run", "POST"), "stream": ("/api/agent/run/stream", "POST"),
                "runs": ("/api/agent/runs/run_x", "GET, DELETE"), "approve": ("/api/agent/approve", "POST"),
                "goals": ("/agent/run", "POST"), "integrations": ("/api/integrations/google", "GET, POST, DELETE")}
UNROUTABLE = ["/api/integrations/%0A", "/api/integrations/a%0Ab", "/api/integrations/%0D%0ASet-Cookie:x=1",
              "/api/agent/runs/%0A/events", "/robots.txt", "/favicon.ico"]
"""Paths functions-framework's own rules do not route to the function (Werkzeug's ``path`` converter
stops at a newline; robots.txt and favicon.ico are its 404 rules): its HTML 404 without our handlers."""


def envelope(resp: TestResponse, status: int, code: str) -> dict[str, Any]:
    assert resp.status_code == status, (resp.status_code, resp.get_data(as_text=True)[:500])
    assert resp.mimetype == "application/json", resp.get_data(as_text=True)[:500]
    body = resp.get_json()
    assert set(body) == {"ok", "error"} and body["ok"] is False
    assert body["error"]["code"] == code and body["error"]["message"], body
    assert "<" not in resp.get_data(as_text=True)  # no HTML anywhere
    return body  # type: ignore[no-any-return]


@pytest.fixture
def runtime(install: Install) -> Iterator[None]:
    install(ScriptedModel([]))
    yield


@pytest.mark.parametrize("path", ["/nope", "/api", "/api/agent", "/api/agent/runs/run_x/nope", "/%0A", *UNROUTABLE])
@pytest.mark.parametrize("method", ["GET", "POST", "DELETE", "PUT", "PATCH", "OPTIONS", "TRACE"])
def test_dev_server_unmatched_paths_are_json_404(runtime: None, client: FlaskClient, path: str, method: str) -> None:
    resp = client.open(path, method=method, headers=ALICE)
    body = envelope(resp, 404, "ROUTE_NOT_FOUND")
    assert "\n" not in body["error"]["message"] and "\r" not in body["error"]["message"]
    assert "Set-Cookie" not in resp.headers


@pytest.mark.parametrize(("path", "method", "allow"), [
    ("/api/agent/run", "GET", "POST"), ("/api/agent/run", "PUT", "POST"), ("/api/agent/run", "OPTIONS", "POST"),
    ("/api/agent/run/stream", "DELETE", "POST"), ("/api/agent/runs/run_x", "POST", "GET, DELETE"),
    ("/api/agent/runs/run_x/events", "PATCH", "GET"), ("/api/agent/approve", "GET", "POST"),
    ("/agent/run", "TRACE", "POST"), ("/api/integrations", "PUT", "GET"), ("/api/integrations", "POST", "GET"),
    ("/api/integrations/google", "PATCH", "GET, POST, DELETE"), ("/openapi.json", "POST", "GET"),
    ("/healthz", "DELETE", "GET"), ("/api/agent/runs/run_x", "HEAD", "GET, DELETE"),
])
def test_dev_server_wrong_methods_are_json_405_with_allow(runtime: None, client: FlaskClient, path: str,
                                                         method: str, allow: str) -> None:
    resp = client.open(path, method=method, headers=ALICE)
    assert resp.headers["Allow"] == allow
    if method != "HEAD":
        envelope(resp, 405, "METHOD_NOT_ALLOWED")
    else:
        assert resp.status_code == 405 and resp.mimetype == "application/json"


@pytest.mark.parametrize("target", sorted(HTTP_TARGETS))
def test_deployed_functions_answer_json_for_unmatched_paths_and_methods(runtime: None, target: str) -> None:
    fn = create_function_app(target, "main.py").test_client()  # type: ignore[no-untyped-call]
    for path in UNROUTABLE:
        for method in ("GET", "POST", "DELETE"):
            envelope(fn.open(path, method=method, headers=ALICE), 404, "ROUTE_NOT_FOUND")
    route, allow = HTTP_TARGETS[target]
    resp = fn.open(route, method="PUT", headers=ALICE)
    envelope(resp, 405, "METHOD_NOT_ALLOWED")
    assert resp.headers["Allow"] == allow


def test_the_resume_function_answers_json_for_other_methods(runtime: None) -> None:
    fn = create_function_app("resume", "main.py", "cloudevent").test_client()  # type: ignore[no-untyped-call]
    resp = fn.get("/")
    envelope(resp, 405, "METHOD_NOT_ALLOWED")
    assert resp.headers["Allow"] == "POST"
    envelope(fn.post("/a%0Ab"), 404, "ROUTE_NOT_FOUND")
    # Not a CloudEvent at all: functions-framework's own refusal, as JSON.
    envelope(fn.post("/", data="x", content_type="text/plain"), 415, "UNSUPPORTED_MEDIA_TYPE")


def test_framework_errors_and_uncaught_exceptions_are_json(caplog: pytest.LogCaptureFixture) -> None:
    app = flask.Flask("json-errors")
    install_json_errors(app.errorhandler)

    @app.post("/boom")
    def boom() -> flask.Response:
        raise RuntimeError("secret detail")

    @app.post("/parse")
    def parse() -> flask.Response:
        flask.request.get_json()  # a malformed body makes Werkzeug raise its 400
        return flask.Response("unreachable")

    client = app.test_client()
    with caplog.at_level(logging.ERROR, logger="agent_runtime.web"):
        resp = client.post("/boom")
    assert envelope(resp, 500, "INTERNAL")["error"]["message"] == "internal error"
    assert "secret detail" not in resp.get_data(as_text=True)
    (record,) = [r for r in caplog.records if "unhandled error serving POST /boom" in r.getMessage()]
    assert record.exc_info and isinstance(record.exc_info[1], RuntimeError)
    envelope(client.post("/parse", data="{", content_type="application/json"), 400, "BAD_REQUEST")
    resp = client.get("/boom")
    envelope(resp, 405, "METHOD_NOT_ALLOWED")
    assert "POST" in resp.headers["Allow"]
    envelope(client.get("/missing"), 404, "ROUTE_NOT_FOUND")
