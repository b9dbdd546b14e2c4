"""Per-user limits on the run routes (issue 14 item 7): requests per minute, active runs, model tokens
per day. Each refusal is a documented 429 with ``Retry-After`` and a code, creates nothing, and
touches only the user over the limit. Time is the limits' clock, moved by the test."""

from __future__ import annotations

import logging
import threading
from datetime import UTC, datetime
from typing import Any

import pytest
from flask.testing import FlaskClient

from bench.instrument import InstrumentedStore
from devserver import create_app
from shared.auth import LocalAuthenticator
from shared.durable.dispatcher import RecordingDispatcher
from shared.errors import LimitExceeded
from shared.models.base import ModelRequest, Turn
from shared.models.scripted import FunctionModel, call, calls_turn, text_turn
from shared.runtime import Runtime, set_runtime
from shared.state import paths
from shared.state.docstore import DocStore
from shared.state.records import UsageEntry
from shared.token_usage import Usage
from tests.agent.conftest import make_settings
from tests.limits.conftest import ALICE, BOB, OFF, Clock, MakeRuntime
from tests.limits.support import ids, refused, snapshot
from tests.messages import deliver

MINUTE = 60 * 29_000_000  # a minute boundary (epoch seconds), in 2025


def remember(request: ModelRequest) -> Turn:
    """Every run asks to save a memory (approval required: the run pauses), then says it is done."""
    answered = any(p.function_response is not None for t in request.turns for p in t.parts)
    return text_turn("Saved.") if answered else calls_turn(call("save_memory", {"text": "tea"}))


def start(client: FlaskClient, headers: dict[str, str], **body: Any) -> dict[str, Any]:
    resp = client.post("/api/agent/run", json={"prompt": "remember tea", **body}, headers=headers)
    assert resp.status_code == 200, resp.get_json()
    return resp.get_json()  # type: ignore[no-any-return]


# ---- requests per minute ---------------------------------------------------------------------------


def test_requests_per_minute_answer_429_until_the_next_window(make_rt: MakeRuntime, client: FlaskClient,
                                                              store: DocStore) -> None:
    clock = Clock(MINUTE + 15)
    make_rt(FunctionModel(remember), clock=clock, limit_requests_per_minute=3)
    for _ in range(3):
        assert client.get("/api/agent/runs", headers=ALICE).status_code == 200
    error = refused(client, client.get("/api/agent/runs", headers=ALICE), "RATE_LIMITED", path="/api/agent/runs",
                    method="get", retry_after=45)
    assert error["details"]["limit"] == 3
    # Every authenticated route counts and is refused the same way; a refused run creates nothing.
    before = snapshot(store, "alice")
    refused(client, client.post("/api/agent/run", json={"prompt": "hi", "threadId": "t-new"}, headers=ALICE),
            "RATE_LIMITED", path="/api/agent/run", method="post")
    refused(client, client.get("/api/agent/usage", headers=ALICE), "RATE_LIMITED", path="/api/agent/usage",
            method="get")
    refused(client, client.get("/api/integrations", headers=ALICE), "RATE_LIMITED", path="/api/integrations",
            method="get")
    assert snapshot(store, "alice") == before
    # Per user: bob is not affected; a request without credentials is a 401 and counts for nobody.
    assert client.get("/api/agent/runs", headers=BOB).status_code == 200
    assert client.get("/api/agent/runs").status_code == 401
    # The window resets at the minute; refused requests were not counted.
    clock.at = MINUTE + 60
    for _ in range(3):
        assert client.get("/api/agent/runs", headers=ALICE).status_code == 200
    refused(client, client.get("/api/agent/runs", headers=ALICE), "RATE_LIMITED", path="/api/agent/runs",
            method="get", retry_after=60)


def test_concurrent_requests_never_exceed_the_limit(make_rt: MakeRuntime, client: FlaskClient) -> None:
    """Counting is a conditional write on the user's counter: racing requests of one user (as from
    several instances) are admitted at most ``limit`` times in a window."""
    rt = make_rt(FunctionModel(remember), clock=Clock(MINUTE), limit_requests_per_minute=3)
    outcomes: list[str] = []

    def go() -> None:
        try:
            rt.limits.admit_request("alice")
            outcomes.append("admitted")
        except Exception as exc:  # the 429 (RATE_LIMITED) is a LimitExceeded
            outcomes.append(getattr(exc, "code", repr(exc)))

    threads = [threading.Thread(target=go) for _ in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert outcomes.count("admitted") == 3 and outcomes.count("RATE_LIMITED") == 2, outcomes


def _counted_runtime(store: DocStore, clock: Clock, **overrides: Any) -> tuple[Runtime, InstrumentedStore]:
    counted = InstrumentedStore(store)
    rt = Runtime(make_settings(**{**OFF, **overrides}), store=counted, model=FunctionModel(remember),
                 authenticator=LocalAuthenticator(), dispatcher=RecordingDispatcher())
    rt.limits.clock = clock
    set_runtime(rt)
    return rt, counted


def test_a_read_costs_no_store_round_trip_and_writes_nothing(store: DocStore, client: FlaskClient) -> None:
    """Issue 33: GETs are counted in the instance's memory (still limited, still per user), never in
    the user's counter document; a request that may write still counts there, exactly."""
    try:
        _, counted = _counted_runtime(store, Clock(MINUTE + 15), limit_requests_per_minute=3)
        before = counted.snapshot()
        for _ in range(3):
            assert client.get("/api/agent/usage", headers=ALICE).status_code == 200
        delta = InstrumentedStore.delta(counted.snapshot(), before)
        assert delta["commits"] == 0 and delta["docs_written"] == {}, delta
        assert "limits" not in delta["docs_read"], delta
        assert ids(store, "users/alice/limits") == []
        # Still limited: the fourth read of the minute is a 429, and so is a write after it.
        refused(client, client.get("/api/agent/usage", headers=ALICE), "RATE_LIMITED", path="/api/agent/usage",
                method="get", retry_after=45)
        refused(client, client.post("/api/agent/run", json={"prompt": "hi"}, headers=ALICE), "RATE_LIMITED",
                path="/api/agent/run", method="post")
        assert ids(store, "users/alice/limits") == []
        # A write of another user counts in the store as before.
        assert client.post("/api/agent/run", json={"prompt": "hi"}, headers=BOB).status_code == 200
        assert ids(store, "users/bob/limits") == ["requests"]
    finally:
        set_runtime(None)


def test_fifty_concurrent_reads_of_one_user_cause_no_store_retries(store: DocStore, client: FlaskClient) -> None:
    try:
        _, counted = _counted_runtime(store, Clock(MINUTE), limit_requests_per_minute=600)
        deltas: list[dict[str, Any]] = []
        statuses: list[int] = []

        def read() -> None:
            before = counted.snapshot()  # per thread
            statuses.append(create_app().test_client().get("/api/agent/runs", headers=ALICE).status_code)
            deltas.append(InstrumentedStore.delta(counted.snapshot(), before))

        threads = [threading.Thread(target=read) for _ in range(50)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert statuses == [200] * 50
        assert len(deltas) == 50
        assert all(d["commits"] == 0 and "run_transaction" not in d["calls"] for d in deltas), deltas
        assert ids(store, "users/alice/limits") == []
    finally:
        set_runtime(None)


def test_a_limit_of_zero_writes_nothing(make_rt: MakeRuntime, client: FlaskClient, store: DocStore) -> None:
    make_rt(FunctionModel(remember), clock=Clock(MINUTE))
    for _ in range(5):
        assert client.get("/api/agent/runs", headers=ALICE).status_code == 200
    assert ids(store, "users/alice/limits") == []


# ---- active runs -----------------------------------------------------------------------------------


def test_active_runs_paused_ones_included(make_rt: MakeRuntime, client: FlaskClient, store: DocStore) -> None:
    rt = make_rt(FunctionModel(remember), limit_active_runs=2)
    first = start(client, ALICE, threadId="t1")
    second = start(client, ALICE, threadId="t2")
    assert first["status"] == second["status"] == "awaiting_confirmation"
    before = snapshot(store, "alice")
    for route in ("/api/agent/run", "/api/agent/run/stream"):
        resp = client.post(route, json={"prompt": "remember tea", "threadId": "t3"}, headers=ALICE)
        error = refused(client, resp, "TOO_MANY_ACTIVE_RUNS", path=route, method="post", retry_after=10)
        assert error["details"]["limit"] == 2
        assert sorted(error["details"]["active"]) == sorted([first["runId"], second["runId"]])
        assert sorted(error["details"]["waiting"]) == sorted(error["details"]["active"])  # both await approval
    # Nothing was created: no run, no thread t3, no message, no event, no outbox entry, no model call.
    assert snapshot(store, "alice") == before
    assert rt.runs.get_thread("alice", "t3") is None
    # Per user.
    assert start(client, BOB)["status"] == "awaiting_confirmation"
    # Superseding the pause of t1 ends it in the same transaction: its slot is free for the new run.
    third = start(client, ALICE, threadId="t1", supersede=True)
    assert third["status"] == "awaiting_confirmation"
    assert rt.runs.get_run(first["runId"]).run.status == "failed"  # type: ignore[union-attr]
    refused(client, client.post("/api/agent/run", json={"prompt": "x", "threadId": "t4"}, headers=ALICE),
            "TOO_MANY_ACTIVE_RUNS", path="/api/agent/run", method="post")
    # A decided approval lets the run finish: then there is room again.
    resp = client.post("/api/agent/approve", json={"approvalId": second["approval"]["id"], "decision": "reject"},
                       headers=ALICE)
    assert resp.status_code == 202
    deliver(rt)
    assert rt.runs.get_run(second["runId"]).run.terminal  # type: ignore[union-attr]
    assert start(client, ALICE, threadId="t4")["status"] == "awaiting_confirmation"


def test_a_repeated_idempotency_key_is_answered_even_at_the_limit(make_rt: MakeRuntime, client: FlaskClient) -> None:
    make_rt(FunctionModel(remember), limit_active_runs=1)
    resp = client.post("/api/agent/run", json={"prompt": "remember tea"}, headers={**ALICE, "Idempotency-Key": "k1"})
    assert resp.status_code == 200
    again = client.post("/api/agent/run", json={"prompt": "remember tea"}, headers={**ALICE, "Idempotency-Key": "k1"})
    assert again.status_code == 200 and again.headers["Idempotent-Replayed"] == "true"
    assert again.get_json()["runId"] == resp.get_json()["runId"]
    other = client.post("/api/agent/run", json={"prompt": "remember tea"}, headers={**ALICE, "Idempotency-Key": "k2"})
    refused(client, other, "TOO_MANY_ACTIVE_RUNS", path="/api/agent/run", method="post")


def test_a_stale_view_cannot_reserve_one_slot_too_many(make_rt: MakeRuntime, client: FlaskClient,
                                                       store: DocStore) -> None:
    """A view of the user's runs read before another run started (a racing request) still cannot
    let one too many in: the reservation reads the slots again and writes them conditionally."""
    rt = make_rt(FunctionModel(remember), limit_active_runs=1)
    stale = rt.limits.slot("alice", "runs")
    assert stale is not None
    stale.check()  # no run yet: room
    start(client, ALICE)
    try:
        stale.reserve("run_racer")
    except Exception as exc:
        assert isinstance(exc, LimitExceeded) and exc.code == "TOO_MANY_ACTIVE_RUNS"
    else:
        raise AssertionError("the stale view let a second run in")
    assert len(ids(store, "runs")) == 1


def test_a_creation_in_flight_holds_its_slot_and_a_failed_one_gives_it_back(
        make_rt: MakeRuntime, client: FlaskClient, store: DocStore) -> None:
    rt = make_rt(FunctionModel(remember), limit_active_runs=1)
    slot = rt.limits.slot("alice", "runs")
    assert slot is not None
    slot.reserve("run_in_flight")  # reserved, its creating transaction not committed yet
    resp = client.post("/api/agent/run", json={"prompt": "remember tea"}, headers=ALICE)
    refused(client, resp, "TOO_MANY_ACTIVE_RUNS", path="/api/agent/run", method="post")
    slot.release("run_in_flight")  # that creation failed
    first = start(client, ALICE)
    assert first["status"] == "awaiting_confirmation"
    # A start refused by its thread (its run still waits for a decision) gives its reservation back.
    rt2 = make_rt(FunctionModel(remember), limit_active_runs=2)
    busy = client.post("/api/agent/run", json={"prompt": "again", "threadId": first["threadId"]}, headers=ALICE)
    assert busy.status_code == 409
    listed = store.get(paths.limit("alice", "runs"))
    assert listed is not None and listed.data["ids"] == [first["runId"]]
    assert rt2.runs.get_run(first["runId"]) is not None


def test_concurrent_starts_of_one_user_under_the_limit_all_go_through(
        make_rt: MakeRuntime, client: FlaskClient, store: DocStore) -> None:
    """Eight starts of one user at once, the limit well above: none is refused or fails on contention
    (claiming slots inside the creating transaction made them queue on the user's slot document,
    and the Firestore emulator's locks timed out: make reliability found it)."""
    make_rt(FunctionModel(remember), limit_active_runs=20)
    statuses = starts_at_once(client, 8)
    assert statuses == [200] * 8, statuses
    assert len(ids(store, "runs")) == 8


def test_racing_starts_create_at_most_the_limit(make_rt: MakeRuntime, client: FlaskClient, store: DocStore) -> None:
    rt = make_rt(FunctionModel(remember), limit_active_runs=1)
    statuses = starts_at_once(client, 3)
    assert sorted(statuses) == [200, 429, 429], statuses
    assert len(ids(store, "runs")) == 1 and len(ids(store, "users/alice/threads")) == 1
    assert rt.runs.list_runs_for("alice", 10)[0].status == "awaiting_confirmation"


def starts_at_once(client: FlaskClient, n: int) -> list[int]:
    """``n`` runs of alice started by ``n`` threads released together (each on its own thread); the
    status codes."""
    statuses: list[int] = []
    lock = threading.Lock()
    together = threading.Barrier(n)

    def go(i: int) -> None:
        together.wait()
        resp = client.post("/api/agent/run", json={"prompt": "remember tea", "threadId": f"race-{i}"}, headers=ALICE)
        with lock:
            statuses.append(resp.status_code)

    threads = [threading.Thread(target=go, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    return statuses


# ---- model tokens per day --------------------------------------------------------------------------


def entry(uid: str, day: str, tokens: int, n: int) -> UsageEntry:
    at = datetime.fromisoformat(f"{day}T12:00:00+00:00").timestamp()
    return UsageEntry(entry_id=f"seed-{day}-{n}", uid=uid, unit_kind="run", unit_id="run_seed", component="loop",
                      operation_type="chat", model="m", usage=Usage(requests=1, total_tokens=tokens), at=at, day=day)


def test_daily_tokens_are_read_from_the_ledger(make_rt: MakeRuntime, client: FlaskClient, store: DocStore) -> None:
    rt = make_rt(FunctionModel(lambda r: text_turn("hello there")), limit_daily_tokens=20)
    first = start(client, ALICE)
    assert first["status"] == "completed"
    (call_entry,) = rt.usage.for_unit("alice", first["runId"])
    rt.limits.clock = Clock(call_entry.at)  # the day of the run's ledger entry, whatever the date now
    used = call_entry.usage.total_tokens
    assert 0 < used < 20
    second = start(client, ALICE)  # still under the limit: runs (and so spends more)
    used += sum(e.usage.total_tokens for e in rt.usage.for_unit("alice", second["runId"]))
    assert used >= 20
    before = snapshot(store, "alice")
    for route in ("/api/agent/run", "/api/agent/run/stream"):
        resp = client.post(route, json={"prompt": "again", "threadId": "t-over"}, headers=ALICE)
        error = refused(client, resp, "DAILY_TOKEN_LIMIT", path=route, method="post")
        assert error["details"]["used"] == used and error["details"]["limit"] == 20
    assert snapshot(store, "alice") == before
    assert start(client, BOB)["status"] == "completed"  # per user


def test_daily_tokens_reset_at_midnight_utc(make_rt: MakeRuntime, client: FlaskClient, store: DocStore) -> None:
    clock = Clock(datetime(2031, 3, 4, 23, 59, 30, tzinfo=UTC).timestamp())
    rt = make_rt(FunctionModel(lambda r: text_turn("ok")), clock=clock, limit_daily_tokens=1000)
    rt.usage.record(entry("alice", "2031-03-04", 600, 1))
    rt.usage.record(entry("alice", "2031-03-03", 5000, 2))  # another day counts for nothing
    assert client.post("/api/agent/run", json={"prompt": "hi"}, headers=ALICE).status_code == 200
    rt.usage.record(entry("alice", "2031-03-04", 400, 3))
    resp = client.post("/api/agent/run", json={"prompt": "hi"}, headers=ALICE)
    error = refused(client, resp, "DAILY_TOKEN_LIMIT", path="/api/agent/run", method="post", retry_after=30)
    assert error["details"]["day"] == "2031-03-04" and error["details"]["resetsAt"] == "2031-03-05T00:00:00Z"
    clock.at += 30  # midnight UTC: a new day
    assert client.post("/api/agent/run", json={"prompt": "hi"}, headers=ALICE).status_code == 200


def test_a_counter_that_cannot_be_written_does_not_take_the_routes_down(
        make_rt: MakeRuntime, client: FlaskClient, store: DocStore, caplog: pytest.LogCaptureFixture) -> None:
    from tests.e2e.test_http_edge_paths import CommitsFailAfter

    failing = CommitsFailAfter(store, ok=0)
    make_rt(FunctionModel(remember), clock=Clock(MINUTE), limit_requests_per_minute=3).limits.repo.store = failing
    decide = {"approvalId": "apr_nothing", "decision": "approve"}
    with caplog.at_level(logging.ERROR, logger="agent_runtime.limits"):
        for _ in range(3):  # requests that may write: the counter document cannot be written
            assert client.post("/api/agent/approve", json=decide, headers=ALICE).status_code == 404
    assert failing.failures == 3
    logged = [r.getMessage() for r in caplog.records]
    assert logged == ["request limit not applied across instances: the counter could not be written"] * 3
    # The instance's own count still limits the user meanwhile.
    refused(client, client.post("/api/agent/approve", json=decide, headers=ALICE), "RATE_LIMITED",
            path="/api/agent/approve", method="post")
