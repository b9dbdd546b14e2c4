"""Assertions shared by the limit tests: a refusal is a documented 429 that created nothing."""

from __future__ import annotations

from typing import Any

from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from shared.state.docstore import DocStore, Query
from tests.e2e.test_openapi import check


def refused(client: FlaskClient, resp: TestResponse, code: str, *, path: str, method: str,
            retry_after: int | None = None) -> dict[str, Any]:
    """``resp`` is a 429 with ``code`` in the JSON envelope, a ``Retry-After`` of whole seconds
    (``retry_after`` when given) that the details repeat, and it matches the OpenAPI document."""
    assert resp.status_code == 429, (resp.status_code, resp.get_data(as_text=True)[:300])
    assert resp.mimetype == "application/json"
    body = resp.get_json()
    assert body["ok"] is False and body["error"]["code"] == code, body
    assert body["error"]["message"]
    header = resp.headers.get("Retry-After")
    assert header is not None and header.isdigit() and int(header) >= 1, header
    if retry_after is not None:
        assert int(header) == retry_after
    assert body["error"]["details"]["retryAfterS"] == int(header)
    check(client.get("/openapi.json").get_json(), path, method, resp)
    return body["error"]  # type: ignore[no-any-return]


def ids(store: DocStore, collection: str) -> list[str]:
    return [d.id for d in store.query(Query(collection))]


def snapshot(store: DocStore, uid: str) -> dict[str, list[str]]:
    """What a refused creation must not change: runs, sessions, threads, outbox, the user's ledger."""
    return {c: ids(store, c) for c in ("runs", "sessions", f"users/{uid}/threads", "threads", "outbox",
                                       f"users/{uid}/usage")}
