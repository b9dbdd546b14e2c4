"""Per-user namespaces for client-chosen ids, and Idempotency-Key fingerprints (issue 35), through
make dev's app on SQLite and the Firestore emulator.

- Two users with the same thread id get two threads (the second is not a 404 ``THREAD_NOT_FOUND``),
  each with its own messages; two users with the same ``Idempotency-Key`` get two runs.
- A key sent again with another body is a 422 ``IDEMPOTENCY_KEY_REUSED`` and writes nothing; with
  the same body it replays the run; after 24 h it is a new key.
- Data written before issue 35 keeps working: a thread in the shared ``threads`` collection is
  continued where it is (its messages are the conversation), and a paused run written without
  ``threadScope`` releases its shared thread when it completes; an old key without a fingerprint
  replays its run.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from flask.testing import FlaskClient
from functions_framework import create_app

from shared.models.scripted import ScriptedModel, call, calls_turn, text_turn
from shared.state.docstore import DocStore, Query, Write
from tests.e2e.conftest import ALICE, BOB, Install
from tests.messages import published_event


def texts(model: ScriptedModel, index: int) -> list[str]:
    """The texts of the turns the model was sent in its ``index``-th call."""
    return [p.text for t in model.requests[index].turns for p in t.parts if p.text]


def every_doc(store: DocStore, uid: str) -> dict[str, Any]:
    """The documents a start may write, by path."""
    out: dict[str, Any] = {}
    for coll in ("runs", "threads", "idempotencyKeys", "outbox", f"users/{uid}/threads"):
        for d in store.query(Query(coll)):
            out[d.path] = d.data
            if coll.endswith("threads"):
                out.update({m.path: m.data for m in store.query(Query(f"{d.path}/messages"))})
    return out


def test_two_users_with_the_same_thread_id_get_two_threads(install: Install, client: FlaskClient,
                                                          docstore: DocStore) -> None:
    model = ScriptedModel([text_turn("hello henry"), text_turn("hello ivan"), text_turn("again henry")])
    rt = install(model, store_override=docstore)
    henry = client.post("/api/agent/run", json={"prompt": "hi", "threadId": "conv-42"}, headers=ALICE)
    ivan = client.post("/api/agent/run", json={"prompt": "hi there", "threadId": "conv-42"}, headers=BOB)
    assert henry.status_code == ivan.status_code == 200, ivan.get_data(as_text=True)
    assert henry.get_json()["threadId"] == ivan.get_json()["threadId"] == "conv-42"
    assert henry.get_json()["runId"] != ivan.get_json()["runId"]
    assert [m.text for m in rt.runs.list_messages("alice", "conv-42")] == ["hi", "hello henry"]
    assert [m.text for m in rt.runs.list_messages("bob", "conv-42")] == ["hi there", "hello ivan"]
    # The next turn of alice's thread sees alice's conversation only.
    client.post("/api/agent/run", json={"prompt": "and now?", "threadId": "conv-42"}, headers=ALICE)
    assert texts(model, 2) == ["hi", "hello henry", "and now?"]
    assert docstore.get("threads/conv-42") is None  # nothing in the shared collection any more


def test_idempotency_keys_are_per_user_and_bound_to_the_body(install: Install, client: FlaskClient,
                                                            docstore: DocStore) -> None:
    install(ScriptedModel([text_turn("one"), text_turn("two")]), store_override=docstore)
    key = {"Idempotency-Key": "order-7"}
    first = client.post("/api/agent/run", json={"prompt": "hi"}, headers={**ALICE, **key})
    other_user = client.post("/api/agent/run", json={"prompt": "hi"}, headers={**BOB, **key})
    assert first.status_code == other_user.status_code == 200
    assert first.get_json()["runId"] != other_user.get_json()["runId"]
    # The same request again (fields in another order, a default written out): the same run.
    again = client.post("/api/agent/run", json={"supersede": False, "prompt": "hi"}, headers={**ALICE, **key})
    assert again.status_code == 200 and again.headers["Idempotent-Replayed"] == "true"
    assert again.get_json()["runId"] == first.get_json()["runId"]
    before = every_doc(docstore, "alice")
    for route in ("/api/agent/run", "/api/agent/run/stream"):
        reused = client.post(route, json={"prompt": "something else"}, headers={**ALICE, **key})
        assert reused.status_code == 422, reused.get_data(as_text=True)
        error = reused.get_json()["error"]
        assert error["code"] == "IDEMPOTENCY_KEY_REUSED" and error["details"] == {"runId": first.get_json()["runId"]}
    assert every_doc(docstore, "alice") == before  # nothing written


def test_a_key_expires_after_24_hours(install: Install, client: FlaskClient, docstore: DocStore) -> None:
    install(ScriptedModel([text_turn("one"), text_turn("two")]), store_override=docstore)
    key = {**ALICE, "Idempotency-Key": "k-old"}
    first = client.post("/api/agent/run", json={"prompt": "hi"}, headers=key).get_json()
    (doc,) = docstore.query(Query("idempotencyKeys"))
    assert doc.data["expireAt"] == pytest.approx(doc.data["createdAt"] + 24 * 3600)
    docstore.commit([Write("update", doc.path, {"expireAt": time.time() - 1})])
    later = client.post("/api/agent/run", json={"prompt": "something else"}, headers=key)
    assert later.status_code == 200 and "Idempotent-Replayed" not in later.headers
    assert later.get_json()["runId"] != first["runId"]


def test_a_key_stored_before_fingerprints_replays_its_run(install: Install, client: FlaskClient,
                                                         docstore: DocStore) -> None:
    install(ScriptedModel([text_turn("one")]), store_override=docstore)
    key = {**ALICE, "Idempotency-Key": "k-legacy"}
    first = client.post("/api/agent/run", json={"prompt": "hi"}, headers=key).get_json()
    (doc,) = docstore.query(Query("idempotencyKeys"))
    docstore.commit([Write("set", doc.path, {"runId": first["runId"], "uid": "alice", "createdAt": time.time()})])
    again = client.post("/api/agent/run", json={"prompt": "another body"}, headers=key)
    assert again.status_code == 200 and again.get_json()["runId"] == first["runId"]


def test_threads_written_before_issue_35_keep_working(install: Install, client: FlaskClient,
                                                      docstore: DocStore) -> None:
    """A shared-collection thread of alice's, with a run paused on it written without
    ``threadScope``: the run resumes and completes on that thread, the next turn continues it with its
    messages, and bob's thread of the same id is bob's own."""
    model = ScriptedModel([calls_turn(call("save_memory", {"text": "Alice likes tea"})), text_turn("Saved."),
                           text_turn("Tea, you said."), text_turn("Hello bob.")])
    rt = install(model, store_override=docstore)
    paused = client.post("/api/agent/run", json={"prompt": "remember tea", "threadId": "old-1"},
                         headers=ALICE).get_json()
    assert paused["status"] == "awaiting_confirmation"
    # Rewrite it the way the previous version stored it: the thread and its messages in `threads`,
    # the run without threadScope.
    mine = "users/alice/threads/old-1"
    moves = [Write("create", "threads/old-1", docstore.get(mine).data), Write("delete", mine)]  # type: ignore[union-attr]
    for m in docstore.query(Query(f"{mine}/messages")):
        moves += [Write("create", f"threads/old-1/messages/{m.id}", m.data), Write("delete", m.path)]
    run_doc = docstore.get(f"runs/{paused['runId']}")
    assert run_doc is not None and run_doc.data["threadScope"] == "user"
    moves.append(Write("set", run_doc.path, {k: v for k, v in run_doc.data.items() if k != "threadScope"}))
    docstore.commit(moves)

    resp = client.post("/api/agent/approve", json={"approvalId": paused["approval"]["id"], "decision": "approve"},
                       headers=ALICE)
    assert resp.status_code == 202
    headers, data = published_event(rt)
    assert create_app("resume", "main.py", "cloudevent").test_client().post("/", headers=headers,
                                                                           data=data).status_code == 200
    assert client.get(f"/api/agent/runs/{paused['runId']}", headers=ALICE).get_json()["status"] == "completed"
    shared = docstore.get("threads/old-1")
    assert shared is not None and shared.data["activeRunId"] is None  # released where it is
    assert docstore.get(mine) is None

    nxt = client.post("/api/agent/run", json={"prompt": "what do I like?", "threadId": "old-1"}, headers=ALICE)
    assert nxt.status_code == 200 and nxt.get_json()["summary"] == "Tea, you said."
    assert texts(model, 2)[0] == "remember tea" and texts(model, 2)[-1] == "what do I like?"
    assert [m.text for m in rt.runs.list_messages("alice", "old-1")] == [
        "remember tea", "Saved.", "what do I like?", "Tea, you said."]
    assert docstore.get(mine) is None  # continued in the shared collection

    theirs = client.post("/api/agent/run", json={"prompt": "hi", "threadId": "old-1"}, headers=BOB)
    assert theirs.status_code == 200 and theirs.get_json()["summary"] == "Hello bob."
    assert [m.text for m in rt.runs.list_messages("bob", "old-1")] == ["hi", "Hello bob."]
