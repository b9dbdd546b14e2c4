"""Edge paths over HTTP: a failed profile read, a run record from a newer runtime, and the store
failing in the middle of a live stream."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import jsonschema
import pytest
from flask.testing import FlaskClient

from shared.errors import StoreError
from shared.models.scripted import ScriptedModel, call, calls_turn, text_turn
from shared.state import paths
from shared.state.docstore import Doc, DocStore, Query, Transaction, Write
from shared.state.records import SCHEMA_VERSION, UserProfile, UserRecord
from tests.e2e.conftest import ALICE, Install

T = TypeVar("T")


def ndjson(body: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in body.decode().splitlines() if line.strip()]


def test_a_failed_profile_read_does_not_block_the_run(install: Install, client: FlaskClient,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    """The stored profile says autonomous; when it cannot be read the run goes on with the
    defaults, so the side effect waits for approval (supervised) instead of running."""
    model = ScriptedModel([calls_turn(call("save_memory", {"text": "a"})), text_turn("saved"),
                           calls_turn(call("save_memory", {"text": "b"}))])
    rt = install(model)
    rt.users.put_user(UserRecord(uid="alice", trust_level="autonomous",
                                 profile=UserProfile(display_name="Alicia Profile")))
    control = client.post("/api/agent/run", json={"prompt": "remember a"}, headers=ALICE).get_json()
    assert control["status"] == "completed" and control["mode"] == "tool_executed"  # the profile counts
    assert "Alicia Profile" in model.requests[0].system_instruction

    def unreadable(uid: str) -> UserRecord:
        raise StoreError("users/alice: deadline exceeded")

    rt.users.get_user = unreadable  # type: ignore[method-assign]  # a failing collaborator, not the code under test
    with caplog.at_level(logging.WARNING, logger="agent_runtime"):
        resp = client.post("/api/agent/run", json={"prompt": "remember b"}, headers=ALICE)
    assert resp.status_code == 200
    body = resp.get_json()
    assert body["status"] == "awaiting_confirmation" and body["mode"] == "requires_approval"
    assert body["approval"]["tool"] == "save_memory" and "supervised" in body["approval"]["reason"]
    assert "Alicia Profile" not in model.requests[-1].system_instruction
    assert [m.text for m in rt.users.list_memories("alice")] == ["a"]
    assert any("profile read failed" in r.getMessage() and r.levelno == logging.WARNING for r in caplog.records)
    model.assert_complete()


def test_a_run_record_from_a_newer_runtime_is_refused_clearly(install: Install, client: FlaskClient,
                                                              caplog: pytest.LogCaptureFixture) -> None:
    rt = install(ScriptedModel([text_turn("ok")]))
    run_id = client.post("/api/agent/run", json={"prompt": "x"}, headers=ALICE).get_json()["runId"]
    doc = rt.store.get(paths.run(run_id))
    assert doc is not None and doc.data["schemaVersion"] == SCHEMA_VERSION
    rt.store.commit([Write("set", paths.run(run_id), {**doc.data, "schemaVersion": SCHEMA_VERSION + 1})])
    with caplog.at_level(logging.ERROR, logger="agent_runtime"):
        for path in (f"/api/agent/runs/{run_id}", f"/api/agent/runs/{run_id}/events?after=0"):
            resp = client.get(path, headers=ALICE)
            assert resp.status_code == 500, (path, resp.data)
            err = resp.get_json()["error"]
            assert err["code"] == "SCHEMA_VERSION_UNSUPPORTED"
            assert f"schemaVersion {SCHEMA_VERSION + 1}" in err["message"]
            assert f"knows up to {SCHEMA_VERSION}" in err["message"]
    logged = [r for r in caplog.records if "SCHEMA_VERSION_UNSUPPORTED" in r.getMessage()]
    assert len(logged) == 2 and all(r.levelno == logging.ERROR for r in logged)
    assert rt.store.get(paths.run(run_id)).data["schemaVersion"] == SCHEMA_VERSION + 1  # type: ignore[union-attr]
    doc_api = client.get("/openapi.json").get_json()
    assert "500" in doc_api["paths"]["/api/agent/runs/{runId}"]["get"]["responses"]


class CommitsFailAfter:
    """A real store whose ``commit`` raises StoreError after ``ok`` successful commits."""

    def __init__(self, inner: DocStore, ok: int) -> None:
        self.inner, self.ok, self.commits, self.failures = inner, ok, 0, 0

    def get(self, path: str) -> Doc | None:
        return self.inner.get(path)

    def get_many(self, paths: Sequence[str]) -> list[Doc | None]:
        return self.inner.get_many(paths)

    def query(self, query: Query) -> list[Doc]:
        return self.inner.query(query)

    def sum_of(self, query: Query, field: str) -> float:
        return self.inner.sum_of(query, field)

    def commit(self, writes: Sequence[Write]) -> list[str]:
        if self.commits >= self.ok:
            self.failures += 1
            raise StoreError("disk on fire")
        self.commits += 1
        return self.inner.commit(writes)

    def run_transaction(self, fn: Callable[[Transaction], T]) -> T:
        return self.inner.run_transaction(fn)

    def delete_collection(self, collection: str) -> None:
        self.inner.delete_collection(collection)

    def close(self) -> None:
        self.inner.close()


def test_store_failing_mid_stream_ends_the_stream_with_an_error(install: Install, client: FlaskClient,
                                                                sqlite_docstore: DocStore) -> None:
    """The first step (a read-only tool) commits; then every commit fails, so the run can record
    neither its answer nor its failure: the live stream still ends with an ``error`` event."""
    store = CommitsFailAfter(sqlite_docstore, ok=1)
    # No request limit: its counter would take the one commit that succeeds.
    install(ScriptedModel([calls_turn(call("search_memory", {"query": "tea"})), text_turn("no tea")]),
            store_override=store, limit_requests_per_minute=0)
    resp = client.post("/api/agent/run/stream", json={"prompt": "tea?"}, headers=ALICE)
    assert resp.status_code == 200 and resp.mimetype == "application/x-ndjson"
    events = ndjson(resp.data)  # the body was read to its end: the stream closed
    assert store.commits == 1 and store.failures >= 1
    last = events[-1]
    assert last["type"] == "error" and last["code"] == "INTERNAL"
    assert "disk on fire" not in json.dumps(events)  # the store's message stays in the logs
    assert last["error"] == "the run stopped unexpectedly (StoreError)"
    # Stop events go out only once their commit succeeded: no unrecorded "completed" result, and
    # the failure the run could not record is not announced either: one error, the final one.
    assert [e["type"] for e in events if e["type"] in ("result", "usage", "error")] == ["error"]
    seqs = [e["seq"] for e in events]
    assert seqs == sorted(set(seqs)) and seqs[0] == 1
    doc = client.get("/openapi.json").get_json()
    schema = jsonschema.Draft202012Validator({"$ref": "#/components/schemas/RunEvent", "components": doc["components"]})
    for ev in events:
        schema.validate(ev)
    run_id = events[0]["runId"]
    assert not [t for t in threading.enumerate() if t.name == f"run-{run_id}" and t.is_alive()]
    # What was committed before the failure replays identically; nothing after it was stored.
    replayed = ndjson(client.get(f"/api/agent/runs/{run_id}/events?after=0", headers=ALICE).data)
    assert replayed and replayed == events[:len(replayed)] and len(replayed) < len(events)
    assert not any(e["type"] in ("result", "error") for e in replayed)
    record = client.get(f"/api/agent/runs/{run_id}", headers=ALICE).get_json()
    assert record["status"] not in ("completed", "failed")  # left to recovery (its lease expires)
