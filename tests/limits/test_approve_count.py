"""An approve's request count rides in its decision's transaction (issue 33, docs/limits.md).

``POST /api/agent/approve`` reads the user's request counter with the approval (one read of the
transaction) and writes ``count + 1`` with the decision: exactly one count per request, none when
refused. At the limit (requests counted by other instances), the decision is refused with 429
``RATE_LIMITED`` before anything else and writes nothing: the approval stays pending, no resume
message. An approve that records no decision (404) is counted on its way out, once. A decision
that contends (the counter is one document for all the user's requests: an approve of each pending
call at once) is counted apart and decided without the counter, not answered 503. On both stores.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from flask.testing import FlaskClient

from bench.instrument import InstrumentedStore
from shared.models.scripted import FunctionModel
from shared.state import paths
from shared.state.docstore import Doc, DocStore, Transaction, TransactionContention, Write
from tests.limits.conftest import ALICE, Clock, MakeRuntime
from tests.limits.support import refused
from tests.limits.test_runs_and_requests import MINUTE, remember, start

LIMIT = 5
T = TypeVar("T")


def counter(store: DocStore) -> dict[str, Any] | None:
    doc = store.get(paths.limit("alice", "requests"))
    return None if doc is None else doc.data


def test_an_approve_is_counted_once_by_its_decisions_commit(make_rt: MakeRuntime, client: FlaskClient,
                                                             store: DocStore) -> None:
    rt = make_rt(FunctionModel(remember), clock=Clock(MINUTE + 1), limit_requests_per_minute=LIMIT)
    paused = start(client, ALICE)  # the run start counts 1
    assert counter(store) is not None and counter(store)["count"] == 1  # type: ignore[index]
    counted = InstrumentedStore(store)
    rt.limits.repo.store = counted
    rt.services.runs.store = counted
    trips = counted.record_trips()
    resp = client.post("/api/agent/approve", json={"approvalId": paused["approval"]["id"], "decision": "reject"},
                       headers=ALICE)
    assert resp.status_code == 202, resp.get_json()
    assert counter(store)["count"] == 2  # type: ignore[index]
    # The counter is read with the approval inside the decision's transaction: no read or commit of its own.
    assert not any(t in ("commit limits", f"get {paths.limit('alice', 'requests')}") for t in trips), trips
    assert any(t.startswith("txn_get_many") and paths.limit("alice", "requests") in t for t in trips), trips
    # A decision replayed (409) and one of no approval (404) record none: each is counted on its way out, once.
    assert client.post("/api/agent/approve", json={"approvalId": paused["approval"]["id"], "decision": "reject"},
                       headers=ALICE).status_code == 409
    assert client.post("/api/agent/approve", json={"approvalId": "apr_nothing", "decision": "reject"},
                       headers=ALICE).status_code == 404
    assert counter(store)["count"] == 4  # type: ignore[index]


def test_an_approve_at_the_limit_is_refused_before_its_decision_and_writes_nothing(
        make_rt: MakeRuntime, client: FlaskClient, store: DocStore) -> None:
    clock = Clock(MINUTE + 1)
    rt = make_rt(FunctionModel(remember), clock=clock, limit_requests_per_minute=LIMIT)
    paused = start(client, ALICE)
    approval_id = paused["approval"]["id"]
    # Other instances counted the rest of the window (this one counted 1 in its memory).
    doc = store.get(paths.limit("alice", "requests"))
    assert doc is not None
    store.commit([Write("set", doc.path, {**doc.data, "count": LIMIT})])
    outbox_before = rt.store.get(paths.outbox(approval_id))
    resp = client.post("/api/agent/approve", json={"approvalId": approval_id, "decision": "approve"}, headers=ALICE)
    refused(client, resp, "RATE_LIMITED", path="/api/agent/approve", method="post")
    assert counter(store)["count"] == LIMIT  # type: ignore[index]
    got = rt.runs.get_approval("alice", approval_id)
    assert got is not None and got[0].status == "pending"
    assert outbox_before is None and rt.store.get(paths.outbox(approval_id)) is None
    snap = rt.runs.get_run(paused["runId"])
    assert snap is not None and snap.run.status == "awaiting_confirmation"
    # The next window: the same decision goes through.
    clock.at += 60
    resp = client.post("/api/agent/approve", json={"approvalId": approval_id, "decision": "approve"}, headers=ALICE)
    assert resp.status_code == 202, resp.get_json()
    assert counter(store)["count"] == 1  # type: ignore[index]


class CounterContended:
    """The store as seen while the user's other requests keep moving the counter document: every
    transaction that reads it together with an approval (a decision carrying its count) gives up,
    as Firestore's does when other transactions keep winning that document. Everything else is the
    real store."""

    def __init__(self, inner: DocStore) -> None:
        self._inner = inner
        self.contended = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def run_transaction(self, fn: Callable[[Transaction], T]) -> T:
        outer = self

        class Watched:
            def __init__(self, t: Transaction) -> None:
                self._t = t

            def __getattr__(self, name: str) -> Any:
                return getattr(self._t, name)

            def get_many(self, many: Sequence[str]) -> list[Doc | None]:
                if paths.limit("alice", "requests") in many and any("/agentApprovals/" in p for p in many):
                    outer.contended += 1
                    raise TransactionContention("transaction gave up after 5 attempts (test: the counter)")
                return self._t.get_many(many)

        return self._inner.run_transaction(lambda t: fn(Watched(t)))  # type: ignore[arg-type]


def test_an_approve_contended_on_the_counter_is_decided_and_counted_apart(
        make_rt: MakeRuntime, client: FlaskClient, store: DocStore) -> None:
    rt = make_rt(FunctionModel(remember), clock=Clock(MINUTE + 1), limit_requests_per_minute=LIMIT)
    paused = start(client, ALICE)  # counted 1
    contended = CounterContended(store)
    rt.services.runs.store = contended  # type: ignore[assignment]
    resp = client.post("/api/agent/approve", json={"approvalId": paused["approval"]["id"], "decision": "approve"},
                       headers=ALICE)
    # Before: every attempt carried the counter and lost: 503 CONTENTION naming the approval.
    assert resp.status_code == 202, resp.get_json()
    assert contended.contended == 1  # the one attempt with the counter; then decided without it
    assert counter(store)["count"] == 2  # type: ignore[index]  # counted once, apart
    got = rt.runs.get_approval("alice", paused["approval"]["id"])
    assert got is not None and got[0].status == "approved"
