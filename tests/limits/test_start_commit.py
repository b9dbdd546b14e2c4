"""A run's start is one batched read and one commit (issue 33), and the limits it folds in hold as
before: the request count (``DeferredRequest``) and the active-run slot are written by the run's
creating commit, conditioned on the documents as the batch read them; a rival (another instance)
counting or reserving in between fails that commit, which reads again and refuses when the limit
is reached now, with nothing of the run written. A request whose start wrote no count (refused,
invalid, replayed) is still counted, once."""

from __future__ import annotations

from datetime import datetime

import pytest
from flask.testing import FlaskClient

from shared.state.docstore import DocStore
from tests.limits.conftest import ALICE, DAY, MakeWrapped
from tests.limits.support import refused, snapshot

WINDOW = int(datetime.fromisoformat(f"{DAY}T12:00:00+00:00").timestamp() // 60)


def _count(store: DocStore) -> int:
    doc = store.get("users/alice/limits/requests")
    return int(doc.data["count"]) if doc is not None and doc.data.get("window") == WINDOW else 0


def test_a_run_start_writes_its_request_count_in_its_own_commit(make_wrapped: MakeWrapped, store: DocStore,
                                                                 client: FlaskClient) -> None:
    _, wrapped = make_wrapped(limit_requests_per_minute=5, limit_active_runs=2)
    for n in (1, 2, 3):
        resp = client.post("/api/agent/run", json={"prompt": "hi"}, headers=ALICE)
        assert resp.status_code == 200 and resp.get_json()["status"] == "completed", resp.get_json()
        assert _count(store) == n  # once per request, never twice
    assert "users/alice/limits/requests" in wrapped.batches[0]


def test_a_count_made_elsewhere_after_the_batch_fails_the_commit_and_refuses_at_the_limit(
        make_wrapped: MakeWrapped, store: DocStore, client: FlaskClient) -> None:
    rt, wrapped = make_wrapped(limit_requests_per_minute=3)
    # Another instance admits two requests of alice between this start's batch and its commit: the
    # counter then holds 2; this request is the third (admitted), the start commits on the new count.
    wrapped.hook = lambda: [rt.limits.repo.count_request("alice", WINDOW, 3) for _ in range(2)]
    assert client.post("/api/agent/run", json={"prompt": "hi"}, headers=ALICE).status_code == 200
    assert _count(store) == 3
    # Next window: another instance fills it to the limit after the batch: refused, nothing written.
    rt.limits.clock.at += 60  # type: ignore[attr-defined]
    wrapped.hook = lambda: [rt.limits.repo.count_request("alice", WINDOW + 1, 3) for _ in range(3)]
    before = snapshot(store, "alice")
    refused(client, client.post("/api/agent/run", json={"prompt": "hi"}, headers=ALICE), "RATE_LIMITED",
            path="/api/agent/run", method="post")
    assert snapshot(store, "alice") == before
    doc = store.get("users/alice/limits/requests")
    assert doc is not None and doc.data == {**doc.data, "window": WINDOW + 1, "count": 3}


@pytest.mark.parametrize("route", ["/api/agent/run", "/api/agent/run/stream"])
def test_a_start_that_writes_nothing_still_counts_its_request(make_wrapped: MakeWrapped, store: DocStore,
                                                              client: FlaskClient, route: str) -> None:
    make_wrapped(limit_requests_per_minute=10)
    assert client.post(route, json={"prompt": ""}, headers=ALICE).status_code == 400  # invalid: counted
    assert _count(store) == 1
    resp = client.post(route, json={"prompt": "hi", "multitaskStrategy": "bogus"}, headers=ALICE)
    assert resp.status_code == 400
    assert _count(store) == 2
    # A replay of an Idempotency-Key writes no run: counted on the way out, once.
    key = {**ALICE, "Idempotency-Key": f"k-{route.rsplit('/', 1)[-1]}"}
    first = client.post(route, json={"prompt": "hi"}, headers=key)
    assert first.status_code == 200
    first.get_data()  # a stream: read to its end
    assert _count(store) == 3
    again = client.post(route, json={"prompt": "hi"}, headers=key)
    assert again.status_code == 200 and again.headers.get("Idempotent-Replayed", "true") == "true"
    again.get_data()
    assert _count(store) == 4


def test_the_limit_reached_by_refused_starts_refuses_the_next(make_wrapped: MakeWrapped, store: DocStore,
                                                              client: FlaskClient) -> None:
    # Three instances (each its own runtime, counting in its own memory too) share the store.
    make_wrapped(limit_requests_per_minute=2)
    assert client.post("/api/agent/run", json={"prompt": ""}, headers=ALICE).status_code == 400
    make_wrapped(limit_requests_per_minute=2)
    assert client.post("/api/agent/run", json={"prompt": "hi"}, headers=ALICE).status_code == 200
    make_wrapped(limit_requests_per_minute=2)
    before = snapshot(store, "alice")
    refused(client, client.post("/api/agent/run", json={"prompt": "hi"}, headers=ALICE), "RATE_LIMITED",
            path="/api/agent/run", method="post")
    assert snapshot(store, "alice") == before and _count(store) == 2
