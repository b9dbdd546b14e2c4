"""Issue 30 acceptance (traces through Pub/Sub): the unit's W3C trace context travels as the
``traceparent`` attribute of the resume and continue messages on the Pub/Sub emulator, and the
invocation that handles a delivered message (a fresh runtime: another process) joins the trace
of the unit's first invocation, for chat runs and plan sessions."""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from devserver import create_app
from shared import otel
from shared.auth import LocalAuthenticator
from shared.durable.dispatcher import PubSubDispatcher
from shared.runtime import Runtime, set_runtime
from shared.state.docstore import DocStore
from tests.agent.conftest import make_settings
from tests.emulators import TEST_PROJECT, pubsub_topic
from tests.observability.support import attr, by_run, ledger_sums, spans_in_memory, token_model, token_sums
from tests.observability.test_traces import ALICE, SCRIPT, decide

Pulled = list[dict[str, Any]]


@pytest.fixture
def topic(pubsub_emulator: Any) -> Iterator[tuple[str, Any]]:
    with pubsub_topic("agent-trace") as (name, pull):

        def pushed() -> Pulled:
            """The delivered messages as a push subscription's CloudEvent ``data`` carries them."""
            return [{"message": {"data": base64.b64encode(m.data).decode(), "attributes": dict(m.attributes),
                                 "messageId": m.message_id}} for m in pull()]

        yield name, pushed


def process(store: DocStore, topic: str) -> Runtime:
    """A fresh runtime: each invocation below is another process as far as the unit knows."""
    return Runtime(make_settings(dispatcher="pubsub", resume_topic=topic), store=store, model=token_model(SCRIPT),
                   authenticator=LocalAuthenticator(), dispatcher=PubSubDispatcher(TEST_PROJECT, topic))


def handle_until(store: DocStore, topic: str, pull: Any, done: Callable[[], bool]) -> list[dict[str, str]]:
    """Deliver the messages published, each in a fresh runtime, until ``done()``; their attributes."""
    seen: list[dict[str, str]] = []
    while not done():
        batch = pull()
        assert batch, f"nothing more was published after {len(seen)} messages"
        for data in batch:
            seen.append(data["message"]["attributes"])
            process(store, topic).router.handle_pubsub(data)
    return seen


def status(rt: Runtime, run_id: str) -> str:
    snap = rt.runs.get_run(run_id)
    assert snap is not None
    return snap.run.status


@pytest.mark.firestore
@pytest.mark.pubsub
def test_resumed_invocations_join_the_units_trace_through_the_pubsub_emulator(
        firestore_docstore: DocStore, topic: tuple[str, Any]) -> None:
    name, pull = topic
    store = firestore_docstore
    with spans_in_memory() as exporter:
        rt = process(store, name)
        set_runtime(rt)
        client = create_app().test_client()
        run_ids, attributes = [], []
        try:
            for i in range(6):
                body = client.post("/api/agent/run", json={"prompt": f"remember {i}"}, headers=ALICE).get_json()
                assert body["status"] == "awaiting_confirmation", body
                run_ids.append(body["runId"])
                decide(client, body["approval"]["id"], "approve")
                attributes += handle_until(store, name, pull, lambda: status(rt, run_ids[-1]) == "completed")
            sid = client.post("/api/agent/sessions", json={"prompt": "Summarise my notes and publish"},
                              headers=ALICE).get_json()["sessionId"]
            assert client.post(f"/api/agent/sessions/{sid}/confirm", json={"planVersion": 1},
                               headers=ALICE).status_code == 202
            run_ids.append(client.get(f"/api/agent/sessions/{sid}", headers=ALICE).get_json()["runId"])
            continues = handle_until(store, name, pull,  # its first invocation is its trace's root
                                     lambda: status(rt, run_ids[-1]) == "awaiting_confirmation")
            session = client.get(f"/api/agent/sessions/{sid}", headers=ALICE).get_json()
            decide(client, session["pendingApprovals"][0]["approvalId"], "approve")
            later = handle_until(store, name, pull, lambda: status(rt, run_ids[-1]) == "completed")
            assert continues[0].get("traceparent") is None and all(a["traceparent"] for a in continues[1:] + later)
            attributes.append(later[0])
            assert client.get(f"/api/agent/sessions/{sid}", headers=ALICE).get_json()["status"] == "completed"
        finally:
            set_runtime(None)
        spans = list(exporter.get_finished_spans())
    units = by_run(spans)
    for run_id, attrs in zip(run_ids, attributes, strict=True):
        snap = rt.runs.get_run(run_id)
        assert snap is not None and snap.run.status == "completed" and snap.run.trace_parent
        assert attrs["kind"] == "resume" and attrs["traceparent"] == snap.run.trace_parent  # W3C, as an attribute
        invocations = [s for s in units[run_id] if attr(s, otel.OPERATION) == otel.INVOKE_AGENT]
        [root] = [s for s in invocations if s.parent is None]
        assert root.context is not None and len(invocations) >= 2
        for span in units[run_id]:
            assert span.context is not None and span.context.trace_id == root.context.trace_id
        assert token_sums(units[run_id]) == ledger_sums([e.usage for e in rt.usage.for_unit("alice", run_id)])
