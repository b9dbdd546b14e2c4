"""``Idempotency-Key`` on ``POST /api/agent/sessions`` (found by the outside-client trial: two
identical POSTs made two sessions and two planning calls): a client's retry gets the session its
first request created, planned once; another body under the same key is a 422; keys are per user."""

from __future__ import annotations

from typing import Any

import pytest
from flask.testing import FlaskClient

from devserver import create_app
from tests.plans.conftest import MakeRuntime
from tests.plans.support import Script
from tests.plans.test_sessions_http import ALICE, BOB

BODY = {"prompt": "Summarise my notes and publish", "keepWorkspaces": False}


@pytest.fixture
def client() -> FlaskClient:
    return create_app().test_client()


def post(client: FlaskClient, user: dict[str, str], body: dict[str, Any], key: str | None) -> Any:
    return client.post("/api/agent/sessions", json=body, headers={**user, **({"Idempotency-Key": key} if key else {})})


def sessions_of(client: FlaskClient, user: dict[str, str]) -> list[str]:
    return [s["sessionId"] for s in client.get("/api/agent/sessions", headers=user).get_json()["sessions"]]


def test_a_repeated_key_returns_the_session_it_created_planned_once(make_rt: MakeRuntime, client: FlaskClient) -> None:
    make_rt(Script())
    first = post(client, ALICE, BODY, "s-1")
    assert first.status_code == 201 and "Idempotent-Replayed" not in first.headers
    again = post(client, ALICE, {"keepWorkspaces": False, "prompt": BODY["prompt"]}, "s-1")  # same fields, reordered
    assert again.status_code == 201 and again.headers["Idempotent-Replayed"] == "true"
    assert again.get_json() == first.get_json()
    sid = first.get_json()["sessionId"]
    assert sessions_of(client, ALICE) == [sid]
    view = client.get(f"/api/agent/sessions/{sid}", headers=ALICE).get_json()
    assert view["usage"]["requests"] == 1  # one planning call, not two

    other = post(client, ALICE, {**BODY, "prompt": "Something else"}, "s-1")
    assert other.status_code == 422 and other.get_json()["error"]["code"] == "IDEMPOTENCY_KEY_REUSED"
    assert other.get_json()["error"]["details"]["sessionId"] == sid
    assert sessions_of(client, ALICE) == [sid]  # nothing new

    bobs = post(client, BOB, BODY, "s-1")  # another user's key of the same name is another key
    assert bobs.status_code == 201 and "Idempotent-Replayed" not in bobs.headers
    assert bobs.get_json()["sessionId"] != sid and sessions_of(client, BOB) == [bobs.get_json()["sessionId"]]

    without = [post(client, ALICE, BODY, None).get_json()["sessionId"] for _ in range(2)]
    assert len({*without, sid}) == 3  # no key: every POST is a new session


def test_a_key_is_checked_like_the_runs_key(make_rt: MakeRuntime, client: FlaskClient) -> None:
    make_rt(Script())
    bad = post(client, ALICE, BODY, "é")
    assert bad.status_code == 400 and sessions_of(client, ALICE) == []
