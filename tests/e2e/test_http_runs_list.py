"""GET /api/agent/runs: the caller's runs, newest first, on both stores; other users' runs never listed."""

from __future__ import annotations

import pytest
from flask.testing import FlaskClient

from shared.models.scripted import ScriptedModel, call, calls_turn, text_turn
from shared.state.docstore import DocStore
from tests.e2e.conftest import ALICE, BOB, Install


@pytest.fixture(params=["sqlite", pytest.param("firestore", marks=pytest.mark.firestore)])
def list_store(request: pytest.FixtureRequest) -> DocStore:
    """The list is a query with an equality filter and a descending order: run it on both stores."""
    return request.getfixturevalue(f"{request.param}_docstore")  # type: ignore[no-any-return]


def test_lists_only_the_callers_runs_newest_first(install: Install, client: FlaskClient,
                                                   list_store: DocStore) -> None:
    install(ScriptedModel([text_turn("one"), text_turn("bob's"), text_turn("two"),
                           calls_turn(call("save_memory", {"text": "tea"}))]), store_override=list_store)
    first = client.post("/api/agent/run", json={"prompt": "a", "threadId": "t-1"}, headers=ALICE).get_json()
    bobs = client.post("/api/agent/run", json={"prompt": "b", "threadId": "t-bob"}, headers=BOB).get_json()
    second = client.post("/api/agent/run", json={"prompt": "c", "threadId": "t-1"}, headers=ALICE).get_json()
    paused = client.post("/api/agent/run", json={"prompt": "remember tea", "threadId": "t-2"},
                         headers=ALICE).get_json()
    assert paused["status"] == "awaiting_confirmation"

    resp = client.get("/api/agent/runs", headers=ALICE)
    assert resp.status_code == 200
    runs = resp.get_json()["runs"]
    assert [r["runId"] for r in runs] == [paused["runId"], second["runId"], first["runId"]]
    assert bobs["runId"] not in {r["runId"] for r in runs}
    top = runs[0]
    assert top["threadId"] == "t-2" and top["status"] == "awaiting_confirmation" and top["host"] == "chat"
    assert [a["id"] for a in top["approvals"]] == [paused["approval"]["id"]]
    assert top["approvals"][0]["tool"] == "save_memory" and top["lastSeq"] >= 3
    assert runs[1]["summary"] == "two" and runs[1]["approvals"] == [] and runs[1]["usage"]["totalTokens"] > 0
    assert runs[0]["createdAt"] >= runs[1]["createdAt"] >= runs[2]["createdAt"]

    limited = client.get("/api/agent/runs?limit=2", headers=ALICE).get_json()["runs"]
    assert [r["runId"] for r in limited] == [paused["runId"], second["runId"]]
    assert [r["runId"] for r in client.get("/api/agent/runs/", headers=BOB).get_json()["runs"]] == [bobs["runId"]]
    assert client.get("/api/agent/runs", headers={"Authorization": "Bearer dev:carol"}).get_json()["runs"] == []


@pytest.mark.parametrize("limit", ["0", "201", "-1", "ten", "1.5"])
def test_a_bad_limit_is_a_400_naming_it(install: Install, client: FlaskClient, limit: str) -> None:
    install(ScriptedModel([]))
    resp = client.get(f"/api/agent/runs?limit={limit}", headers=ALICE)
    assert resp.status_code == 400
    err = resp.get_json()["error"]
    assert err["code"] == "INVALID_QUERY" and err["details"] == {"field": "limit"} and "limit" in err["message"]


def test_listing_needs_authentication_and_get(install: Install, client: FlaskClient) -> None:
    install(ScriptedModel([]))
    assert client.get("/api/agent/runs").status_code == 401
    assert client.post("/api/agent/runs", json={}, headers=ALICE).status_code == 405
