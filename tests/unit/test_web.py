"""The HTTP edge's error rendering: API errors, store contention and unexpected failures."""

from __future__ import annotations

import json

import flask
import pytest

from shared.errors import Conflict
from shared.state.docstore import TransactionContention
from shared.web import http_endpoint

app = flask.Flask(__name__)


def serve(exc: BaseException) -> flask.Response:
    @http_endpoint
    def handler(request: flask.Request) -> flask.Response:
        raise exc

    with app.test_request_context("/api/agent/approve", method="POST"):
        return handler(flask.request)


def test_api_errors_keep_their_status_and_code() -> None:
    resp = serve(Conflict("already decided", code="ALREADY_DECIDED"))
    assert resp.status_code == 409 and "Retry-After" not in resp.headers
    assert json.loads(resp.get_data()) == {"ok": False, "error": {"code": "ALREADY_DECIDED",
                                                                   "message": "already decided"}}


def test_store_contention_is_a_retryable_503() -> None:
    resp = serve(TransactionContention("transaction gave up after 5 attempts"))
    assert resp.status_code == 503 and resp.headers["Retry-After"] == "1"
    body = json.loads(resp.get_data())
    assert body["ok"] is False and body["error"]["code"] == "CONTENTION"


def test_unexpected_errors_are_a_logged_500_without_internals(caplog: pytest.LogCaptureFixture) -> None:
    resp = serve(RuntimeError("secret detail"))
    assert resp.status_code == 500
    assert json.loads(resp.get_data()) == {"ok": False, "error": {"code": "INTERNAL", "message": "internal error"}}
    assert "secret detail" not in resp.get_data(as_text=True)
    assert any("unhandled error serving POST /api/agent/approve" in r.getMessage() for r in caplog.records)
