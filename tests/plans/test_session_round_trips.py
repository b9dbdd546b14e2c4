"""The store round trips of a plan session that are gone (issue 33, 33g): its ``session.*`` webhook
deliveries list the user's webhooks through the stamps (none queried for a user known to have none;
one declared later gets the next session's events), and its execution reads no session document
before each act: a cancel asks the run itself to stop, so it still stops the session before its
next act, also when it arrives while an act runs."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from flask.testing import FlaskClient

from bench.instrument import InstrumentedStore
from devserver import create_app
from shared.agent.webhooks import WebhookRequest, Webhooks
from shared.plans import sessions as engine
from shared.runtime import Runtime, set_runtime
from shared.state import paths
from shared.state.docstore import DocStore
from tests.agent.conftest import install
from tests.agent.test_webhooks import Receiver
from tests.e2e.test_openapi import KEY
from tests.messages import deliver
from tests.plans.support import Script, model
from tests.plans.test_sessions_http import ALICE, create

ACTS = {"Read the notes": [("search_memory", {"query": "a"}), ("search_memory", {"query": "b"})]}


@pytest.fixture
def client() -> FlaskClient:
    return create_app().test_client()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver(fail=0)
    yield r
    r.close()


def _runtime(store: DocStore, script: Script) -> tuple[Runtime, InstrumentedStore]:
    counted = InstrumentedStore(store)
    return install(counted, model(script), credentials_encryption_key=KEY, mcp_allow_private_urls=True), counted


def _session(client: FlaskClient, rt: Runtime, counted: InstrumentedStore) -> tuple[str, list[str], list[str]]:
    """A session created, confirmed and executed: its id, the round trips of its requests, those
    of its execution."""
    requests = counted.record_trips()
    created = create(client)
    sid: str = created["sessionId"]
    resp = client.post(f"/api/agent/sessions/{sid}/confirm", json={"planVersion": created["plan"]["version"]},
                       headers=ALICE)
    assert resp.status_code == 202, resp.get_json()
    execution = counted.record_trips()
    deliver(rt)
    return sid, requests, list(execution)


def _status(client: FlaskClient, sid: str) -> dict[str, Any]:
    view: dict[str, Any] = client.get(f"/api/agent/sessions/{sid}", headers=ALICE).get_json()
    return view


def test_a_user_without_webhooks_costs_no_query_at_a_sessions_transitions(
        store: DocStore, client: FlaskClient, receiver: Receiver) -> None:
    rt, counted = _runtime(store, Script(acts=ACTS))
    try:
        first, requests, execution = _session(client, rt, counted)
        assert _status(client, first)["status"] == "completed"
        assert [t for t in requests if t.endswith("/webhooks")] == ["query users/alice/webhooks"]
        stamps = store.get(paths.stamps("alice"))
        assert stamps is not None and stamps.data.get("webhooks") == 0  # learned by the first session's query
        second, requests, execution = _session(client, rt, counted)
        assert _status(client, second)["status"] == "completed"
        assert not [t for t in requests + execution if t.endswith("/webhooks")], requests + execution
        # The execution reads no session document before its acts (a cancel is on the run).
        assert execution and not [t for t in execution if t.startswith("get sessions/")], execution
        assert receiver.got == []
        # A webhook declared later moves the stamp: the next session's transitions reach it.
        Webhooks(rt.services).put("alice", "s", WebhookRequest(url=receiver.url, events=["session.*"]))
        third, _, _ = _session(client, rt, counted)
        got = [json.loads(body) for _, body in receiver.got]
        assert [(b["type"], b["data"]["sessionId"]) for b in got] == [
            ("session.awaiting_confirmation", third), ("session.completed", third)]
    finally:
        set_runtime(None)


def test_a_cancel_while_an_act_runs_stops_the_session_before_its_next_act(store: DocStore,
                                                                          client: FlaskClient) -> None:
    def cancel(rt: Runtime, sid: str) -> None:  # the user cancels while the first act is being reflected on
        session = engine.cancel(rt.services, rt.sessions, "alice", sid)
        assert session.cancel_requested and session.status == "executing"

    rt, view = _cancelled_during_the_first_reflection(store, client, cancel)
    try:
        assert view["status"] == "cancelled" and view["error"]["code"] == "CANCELLED", view
        tasks = view["plan"]["tasks"]
        assert len(tasks[0]["history"]) == 1  # the act that was running is recorded; no other started
        assert {t["status"] for t in tasks} == {"cancelled"}
        run = rt.runs.get_run_for("alice", view["runId"]).run
        assert run.status == "cancelled" and run.lease is None
    finally:
        set_runtime(None)


def test_a_cancel_recorded_by_earlier_code_stops_the_session_when_the_client_retries_it(
        store: DocStore, client: FlaskClient) -> None:
    """A rolling deploy: an instance still on the code before this session records a cancel the way
    it did (the session's ``cancelRequested`` alone; its host read the session before each act),
    while the execution runs on this code, which reads the run's ``stopRequested`` instead. The
    client's retry of the cancel (idempotent) asks the run again, so the session stops before its
    next act (before: the retry answered the session as it was and every act still ran)."""
    def cancel(rt: Runtime, sid: str) -> None:
        sessions = rt.sessions
        sessions.store.commit([sessions.update_write(sid, {"cancelRequested": True,
                                                           "cancelReason": "changed my mind"})])
        resp = client.post(f"/api/agent/sessions/{sid}/cancel", json={}, headers=ALICE)
        assert resp.status_code == 202, resp.get_json()

    _, view = _cancelled_during_the_first_reflection(store, client, cancel)
    try:
        assert view["status"] == "cancelled" and view["error"]["code"] == "CANCELLED", view
        assert view.get("cancelReason") == "changed my mind", view
        assert len(view["plan"]["tasks"][0]["history"]) == 1
    finally:
        set_runtime(None)


def _cancelled_during_the_first_reflection(store: DocStore, client: FlaskClient,
                                           cancel: Callable[[Runtime, str], None]) -> tuple[Runtime, dict[str, Any]]:
    """A confirmed session of four acts, ``cancel`` called while its first act is reflected on, the
    messages delivered: the runtime and the session's view (the caller unsets the runtime)."""
    asked: dict[str, str] = {}
    runtime: list[Runtime] = []

    def reflect(prompt: dict[str, Any]) -> dict[str, Any]:
        if not asked.get("done"):
            asked["done"] = "yes"
            cancel(runtime[0], asked["sid"])
        return {"taskComplete": False, "taskFailed": False, "summary": "progress", "modifications": []}

    acts = {"Read the notes": [("search_memory", {"query": str(i)}) for i in range(4)]}
    rt, _ = _runtime(store, Script(acts=acts, reflect=reflect))
    runtime.append(rt)
    try:
        asked["sid"] = sid = create(client)["sessionId"]
        client.post(f"/api/agent/sessions/{sid}/confirm", json={"planVersion": 1}, headers=ALICE)
        deliver(rt)
        return rt, _status(client, sid)
    except BaseException:
        set_runtime(None)
        raise
