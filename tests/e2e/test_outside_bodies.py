"""Request bodies and stream requests as other clients send them (session 2026-11-26d outside
trial, docs/session-notes/2026-11-26d/issue-33p.md).

Some HTTP clients compress request bodies (``Content-Encoding: gzip``). Nothing here decompresses
them: such a body answered 400 ``INVALID_JSON`` "'utf-8' codec can't decode byte 0x8b", which
names neither the header nor what to do. It is now a 415 ``UNSUPPORTED_MEDIA_TYPE`` naming
``Content-Encoding``, on every route with a body, and nothing is written.

An SSE client that sends ``Accept: text/event-stream; charset=utf-8`` got NDJSON: werkzeug took the
parameter as part of the type, which then matched neither offer. A type's parameters other than
its quality no longer make it another type, on every route that streams.
"""

from __future__ import annotations

import gzip
from collections.abc import Iterator

import pytest
from flask.testing import FlaskClient

from shared import routes
from shared.models.scripted import ScriptedModel, text_turn
from tests.e2e.conftest import ALICE, Install
from tests.e2e.test_outside_clients import concrete

ADMIN = {"Authorization": "Bearer dev-admin:ops"}


@pytest.fixture
def runtime(install: Install) -> Iterator[None]:
    install(ScriptedModel([text_turn("hello")] * 3))
    yield




@pytest.mark.parametrize("route", [r for r in routes.ROUTES if r.request is not None], ids=lambda r: r.operation_id)
@pytest.mark.parametrize("coding", ["gzip", "br", "GZIP, deflate"])
def test_a_compressed_body_is_a_415_naming_content_encoding(runtime: None, client: FlaskClient,
                                                             route: routes.Route, coding: str) -> None:
    headers = {**(ADMIN if route.path.startswith("/api/admin/") else ALICE), "Content-Encoding": coding}
    resp = client.open(concrete(route), method=route.method, data=gzip.compress(b'{"prompt": "hi"}'),
                       content_type="application/json", headers=headers)
    assert resp.status_code == 415, (route.path, resp.get_data(as_text=True)[:300])
    error = resp.get_json()["error"]
    assert error["code"] == "UNSUPPORTED_MEDIA_TYPE" and error["details"] == {"field": "Content-Encoding"}, error
    assert coding.lower()[:4] in error["message"] and "uncompressed" in error["message"]


def test_identity_is_no_coding_and_nothing_compressed_is_written(runtime: None, client: FlaskClient) -> None:
    ok = client.post("/api/agent/run", json={"prompt": "hi"}, headers={**ALICE, "Content-Encoding": "identity"})
    assert ok.status_code == 200, ok.get_json()
    client.post("/api/agent/run", data=gzip.compress(b'{"prompt": "hi"}'), content_type="application/json",
                headers={**ALICE, "Content-Encoding": "gzip"})
    assert len(client.get("/api/agent/runs", headers=ALICE).get_json()["runs"]) == 1


@pytest.mark.parametrize("accept", ["text/event-stream; charset=utf-8", "text/event-stream;charset=UTF-8, */*;q=0.1",
                                    'TEXT/EVENT-STREAM; version="1"'])
def test_an_sse_accept_with_parameters_is_answered_with_sse(runtime: None, client: FlaskClient, accept: str) -> None:
    streamed = client.post("/api/agent/run/stream", json={"prompt": "hi"}, headers={**ALICE, "Accept": accept})
    assert streamed.mimetype == "text/event-stream", streamed.headers
    assert streamed.get_data(as_text=True).startswith(("retry:", "id:", "event:")), streamed.get_data(as_text=True)[:80]
    run_id = client.get("/api/agent/runs", headers=ALICE).get_json()["runs"][0]["runId"]
    events = client.get(f"/api/agent/runs/{run_id}/events", headers={**ALICE, "Accept": accept})
    assert events.status_code == 200 and events.mimetype == "text/event-stream", events.headers
    assert "\nid: 1\n" in "\n" + events.get_data(as_text=True)
    for plain, sse in [("application/x-ndjson", False), ("*/*", False), ("text/event-stream;q=0", False),
                       ("text/event-stream;q=0.1, application/x-ndjson", False), ("text/*", True)]:
        got = client.get(f"/api/agent/runs/{run_id}/events", headers={**ALICE, "Accept": plain})
        assert (got.mimetype == "text/event-stream") is sse, (plain, got.mimetype)
