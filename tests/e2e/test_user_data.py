"""The caller's data APIs (issue 35) through make dev's app, on SQLite and the Firestore emulator:
threads and their history, deleting runs, threads and memories, the export, and the erasure, which
a walk over every collection of docs/firestore-layout.md checks leaves nothing of the user.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from flask.testing import FlaskClient

from devserver import create_app
from shared.auth import LocalAuthenticator
from shared.durable.dispatcher import RecordingDispatcher
from shared.models.base import ModelRequest, Turn
from shared.models.scripted import FunctionModel, ScriptedModel, call, calls_turn, text_turn
from shared.runtime import Runtime, set_runtime
from shared.state.docstore import Doc, DocStore, Query, Write
from shared.state.records import ThreadRecord
from shared.state.user_data_repo import ERASED_USAGE, OWNED, UNDER_USER, Tree
from shared.state.workspaces_repo import WorkspaceRecord
from tests.agent.conftest import make_settings
from tests.e2e.conftest import ALICE, BOB, Install
from tests.e2e.test_authz_matrix import (
    SECRET,
    Api,
    _approve_until_done,
    _model,
    _paused_run,
    create_integration,
    create_mcp_server,
    create_project,
    create_session,
)
from tests.e2e.test_openapi import KEY
from tests.messages import deliver_published

LAYOUT = Path(__file__).resolve().parents[2] / "docs" / "firestore-layout.md"


def test_threads_list_view_and_delete(install: Install, client: FlaskClient, docstore: DocStore) -> None:
    install(ScriptedModel([text_turn("one"), text_turn("two"), text_turn("three"),
                           calls_turn(call("save_memory", {"text": "x"})), text_turn("bob's")]),
            store_override=docstore)
    for prompt, thread in (("a", "t1"), ("b", "t1"), ("c", "t2")):
        resp = client.post("/api/agent/run", json={"prompt": prompt, "threadId": thread}, headers=ALICE)
        assert resp.status_code == 200
    paused = client.post("/api/agent/run", json={"prompt": "d", "threadId": "t3"}, headers=ALICE).get_json()
    client.post("/api/agent/run", json={"prompt": "e", "threadId": "t1"}, headers=BOB)
    # A thread begun before issue 35 (the shared collection) is listed too.
    docstore.commit([Write("create", "threads/old", ThreadRecord(thread_id="old", uid="alice",
                                                                 created_at=time.time() - 99).to_doc())])
    listed = client.get("/api/agent/threads?limit=2", headers=ALICE).get_json()
    assert [t["threadId"] for t in listed["threads"]] == ["t3", "t2"] and listed["nextCursor"]
    rest = client.get(f"/api/agent/threads?limit=2&cursor={listed['nextCursor']}", headers=ALICE).get_json()
    assert [t["threadId"] for t in rest["threads"]] == ["t1", "old"] and rest["nextCursor"] is None

    view = client.get("/api/agent/threads/t1?limit=3", headers=ALICE).get_json()
    assert [m["text"] for m in view["messages"]] == ["two", "b", "one"]  # newest first
    assert len(view["runs"]) == 2 and view["nextCursor"]
    assert client.get("/api/agent/threads/t2", headers=BOB).status_code == 404

    busy = client.delete("/api/agent/threads/t3", headers=ALICE)
    assert busy.status_code == 409 and busy.get_json()["error"]["details"]["runIds"] == [paused["runId"]]
    run_ids = {r["runId"] for r in view["runs"]}
    gone = client.delete("/api/agent/threads/t1", headers=ALICE)
    assert gone.status_code == 200 and gone.get_json()["deleted"] == "t1"
    assert client.get("/api/agent/threads/t1", headers=ALICE).status_code == 404
    for run_id in run_ids:
        assert client.get(f"/api/agent/runs/{run_id}", headers=ALICE).status_code == 404
        assert docstore.query(Query(f"runs/{run_id}/turns")) == []
        assert docstore.query(Query(f"runs/{run_id}/events")) == []
    # bob's thread of the same id is bob's and untouched.
    assert [m["text"] for m in client.get("/api/agent/threads/t1", headers=BOB).get_json()["messages"]] == [
        "bob's", "e"]


def test_deleting_runs_and_memories(install: Install, client: FlaskClient, docstore: DocStore) -> None:
    rt = install(ScriptedModel([calls_turn(call("save_memory", {"text": "Alice likes tea"})), text_turn("Saved.")]),
                 store_override=docstore)
    paused = client.post("/api/agent/run", json={"prompt": "remember tea"}, headers=ALICE).get_json()
    live = client.delete(f"/api/agent/runs/{paused['runId']}", headers=ALICE)
    assert live.status_code == 409 and live.get_json()["error"]["code"] == "RUN_ACTIVE"
    client.post("/api/agent/approve", json={"approvalId": paused["approval"]["id"], "decision": "approve"},
                headers=ALICE)
    deliver_published(rt)
    assert client.get(f"/api/agent/runs/{paused['runId']}", headers=ALICE).get_json()["status"] == "completed"
    assert client.delete(f"/api/agent/runs/{paused['runId']}", headers=BOB).status_code == 404
    done = client.delete(f"/api/agent/runs/{paused['runId']}", headers=ALICE)
    assert done.status_code == 200 and done.get_json()["documents"] > 3
    assert client.get(f"/api/agent/runs/{paused['runId']}", headers=ALICE).status_code == 404
    assert client.get("/api/agent/approvals?status=all", headers=ALICE).get_json()["approvals"] == []
    assert client.delete(f"/api/agent/runs/{paused['runId']}", headers=ALICE).status_code == 404

    memories = client.get("/api/agent/memories", headers=ALICE).get_json()
    assert [m["text"] for m in memories["memories"]] == ["Alice likes tea"] and memories["nextCursor"] is None
    memory_id = memories["memories"][0]["memoryId"]
    assert client.delete(f"/api/agent/memories/{memory_id}", headers=BOB).status_code == 404
    assert client.delete(f"/api/agent/memories/{memory_id}", headers=ALICE).status_code == 200
    assert client.get("/api/agent/memories", headers=ALICE).get_json()["memories"] == []
    assert client.delete(f"/api/agent/memories/{memory_id}", headers=ALICE).status_code == 404


# ---- export and erasure: every collection of docs/firestore-layout.md --------------------------------

def layout_collections() -> list[list[str]]:
    """The collection paths of the layout's table, as segment lists (``{…}`` marks an id)."""
    out: list[list[str]] = []
    for line in LAYOUT.read_text().splitlines():
        if not line.startswith("| `"):
            continue
        first = ""
        for path in re.findall(r"`([^`]+)`", line.split("|")[1]):
            if path.startswith("/"):  # "(+ `/messages/{id}`)": a subcollection of the cell's first path
                path = first + path
            first = first or path
            segments = path.split("/")
            collection = segments[:-1] if len(segments) % 2 == 0 else segments
            if collection not in out:
                out.append(collection)
    return out


def tree_names(trees: tuple[Tree, ...]) -> set[str]:
    return {t.name for t in trees} | {n for t in trees for n in tree_names(t.children)}


def test_the_erasure_knows_every_collection_of_the_layout() -> None:
    """A collection added to docs/firestore-layout.md without teaching the export and erasure
    (shared/state/user_data_repo.py) where a user's documents are fails here."""
    named = {segments[-1] for segments in layout_collections()} - {"users"}
    known = tree_names(UNDER_USER) | tree_names(OWNED) | {ERASED_USAGE, "limits"}
    assert named - known == set(), named - known
    assert {"runs", "threads", "messages", "memories", "integrations", "mcpServers", "usage", "audit",
            "idempotencyKeys", "outbox", "workspaces", "projects", "documents"} <= named


def test_the_erasure_knows_every_collection_under_a_user_in_the_paths() -> None:
    """Every collection under ``users/{uid}`` that shared/state/paths.py builds (documented in the
    layout or not yet) is walked by the export and the erasure."""
    text = (Path(__file__).resolve().parents[2] / "shared" / "state" / "paths.py").read_text()
    under = {m.group(1) for m in re.finditer(r'f"users/\{uid\}/([A-Za-z0-9]+)', text)}
    assert under - tree_names(UNDER_USER) == set()
    assert {"threads", "memories", "mcpServers", "a2aAgents"} <= under


def walk(store: DocStore, parents: set[str]) -> dict[str, Doc]:
    """Every document the layout's collections hold, by path: a top-level collection read whole, a
    subcollection under each document found before it, and under each of ``parents`` (the users,
    whose documents need not exist, and documents seen before: children left behind by a deleted
    parent are found too)."""
    found: dict[str, Doc] = {}
    for segments in sorted(layout_collections(), key=len):
        bases = [""] if len(segments) == 1 else [p for p in {*found, *parents} if _matches(p.split("/"), segments[:-1])]
        for base in bases:
            for d in store.query(Query(f"{base}/{segments[-1]}" if base else segments[0])):
                found[d.path] = d
    return found


def _matches(path: list[str], pattern: list[str]) -> bool:
    """``path`` is a document of ``pattern`` (an id segment ``{…}`` matches any id)."""
    return len(path) == len(pattern) and all(p == q or q.startswith("{") for p, q in zip(path, pattern, strict=True))


@pytest.fixture
def api(docstore: DocStore) -> Iterator[Api]:
    dispatcher = RecordingDispatcher()
    rt = Runtime(make_settings(credentials_encryption_key=KEY, mcp_allow_private_urls=True), store=docstore,
                 model=FunctionModel(_model), authenticator=LocalAuthenticator(), dispatcher=dispatcher)
    set_runtime(rt)
    yield Api(create_app().test_client(), rt, dispatcher)
    set_runtime(None)


def mine(docs: dict[str, Doc], uid: str) -> list[str]:
    """The paths of ``uid``'s documents: under ``users/{uid}``, owned (``uid``), and their descendants."""
    roots = {p for p, d in docs.items() if p.startswith(f"users/{uid}/") or p == f"users/{uid}"
             or d.data.get("uid") == uid}
    return sorted(p for p in docs if any(p == r or p.startswith(r + "/") for r in roots))


def test_export_then_erasure_leaves_nothing_of_the_user(api: Api, docstore: DocStore) -> None:
    client = api.client
    # Alice's everything: a paused run and thread with its approval (and an undelivered decision in
    # the outbox), a completed one with a memory, an Idempotency-Key, an integration and an MCP server
    # with their sealed tokens, a plan session, a project with tasks, a workspace record, a thread
    # begun before issue 35, her profile, her usage ledger, day counters and request counter.
    _paused_run(api)
    _approve_until_done(api, _paused_run(api))
    client.post("/api/agent/run", json={"prompt": f"keyed {SECRET}"}, headers={**ALICE, "Idempotency-Key": "k1"})
    create_integration(api)
    create_mcp_server(api)
    create_session(api)
    create_project(api)
    waiting = _paused_run(api)
    assert client.post("/api/agent/approve", json={"approvalId": waiting["approval"]["id"], "decision": "reject"},
                       headers=ALICE).status_code == 202  # its resume message stays in the outbox (not delivered)
    at = time.time()
    docstore.commit([
        Write("set", "workspaces/ws_alice", WorkspaceRecord(workspace_id="ws_alice", uid="alice", created_at=at,
                                                            last_used_at=at, group=SECRET).to_doc()),
        Write("create", "threads/old", ThreadRecord(thread_id="old", uid="alice").to_doc()),
        Write("create", "threads/old/messages/m1", {"id": "m1", "role": "user", "text": SECRET, "createdAt": at}),
        Write("set", "users/alice", {"uid": "alice", "trustLevel": "supervised", "profile": {"about": SECRET}}),
        # a month counter written before issue 33's third session (no longer written; still erased)
        Write("set", "users/alice/usageMonths/2026-10", {"calls": 1, "costMicroUsd": 5}),
    ])
    client.post("/api/agent/run", json={"prompt": "remember bob things"}, headers=BOB)  # bob's must survive

    users = {"users/alice", "users/bob"}
    before = walk(docstore, users)
    alices = mine(before, "alice")
    collections = {p.rsplit("/", 2)[-2] for p in alices}
    assert {"runs", "turns", "events", "actions", "threads", "messages", "agentApprovals", "memories",
            "integrations", "mcpServers", "sessions", "projects", "tasks", "usage", "usageDays", "usageMonths",
            "limits", "audit", "idempotencyKeys", "outbox", "workspaces"} <= collections, collections
    alice_usage = [d for p, d in before.items() if p.startswith("users/alice/usage/")]
    bobs = {p: d.data for p, d in before.items() if p in mine(before, "bob")}

    exported = client.post("/api/agent/me/export", headers=ALICE)
    assert exported.status_code == 200
    body = exported.get_json()
    assert set(alices) <= set(body["documents"]) and not set(mine(before, "bob")) & set(body["documents"])
    text = json.dumps(body)
    assert "ciphertext" not in text and f"xoxp-{SECRET}" not in text and f"tok-{SECRET}" not in text

    erased = client.delete("/api/agent/me", headers=ALICE)
    assert erased.status_code == 200, erased.get_json()
    assert erased.get_json()["anonymised"] == len(alice_usage) > 0

    after = walk(docstore, users | set(before))
    assert mine(after, "alice") == []
    leftovers = [p for p, d in after.items() if SECRET in json.dumps(d.data) and p not in bobs]  # (the test's
    # model writes the marker into bob's pause too)
    assert leftovers == [], leftovers
    assert all(docstore.get(p) is None for p in alices)
    # Bob's data is as it was; alice's usage is kept without her uid, its totals true.
    assert {p: after[p].data for p in bobs} == bobs
    kept = [d for p, d in after.items() if p.startswith(f"{ERASED_USAGE}/")]
    assert len(kept) == len(alice_usage) and all("uid" not in d.data for d in kept)
    assert sum(d.data["tokens"] for d in kept) == sum(d.data["tokens"] for d in alice_usage)

    again = client.delete("/api/agent/me", headers=ALICE)  # idempotent: only this request's own counter
    assert again.status_code == 200 and again.get_json()["anonymised"] == 0
    assert again.get_json()["deleted"] == {"limits": 1}  # users/alice/limits/requests, written by this request
    assert mine(walk(docstore, users | set(before)), "alice") == []


def test_erasure_waits_for_a_working_run(install: Install, client: FlaskClient, docstore: DocStore) -> None:
    install(ScriptedModel([]), store_override=docstore)
    docstore.commit([Write("set", "runs/run_busy", {"uid": "alice", "status": "executing", "threadId": "t",
                                                    "runId": "run_busy"}),
                     Write("set", "users/alice/memories/m1", {"id": "m1", "text": "x", "createdAt": 1.0})])
    resp = client.delete("/api/agent/me", headers=ALICE)
    assert resp.status_code == 409 and resp.get_json()["error"]["code"] == "RUN_ACTIVE"
    assert docstore.get("users/alice/memories/m1") is not None  # nothing deleted


def test_every_action_of_a_long_run_is_exported_once_and_erased(docstore: DocStore) -> None:
    """Issue 33's third session keeps the actions of a step's answered calls in its turns document
    and the open turn's in documents of their own: a run of 32 answered steps, then a pause, an
    approval and its resume (yields between invocations on the way). The export holds each action
    exactly once (by id, in either place), GET /runs/{id} shows no stored-only field,
    the events replay from any point, and the erasure leaves none."""
    steps = 32

    def model(request: ModelRequest) -> Turn:
        answered = sum(1 for t in request.turns for p in t.parts if p.function_response is not None)
        if answered < steps:
            return calls_turn(call("search_memory", {"query": f"q{answered}"}))
        if answered == steps:
            return calls_turn(call("save_memory", {"text": f"note {SECRET}"}))
        return text_turn("Done.")

    rt = Runtime(make_settings(credentials_encryption_key=KEY, max_loop_steps=steps + 5,
                               max_tool_calls_per_turn=steps + 5), store=docstore,
                 model=FunctionModel(model), authenticator=LocalAuthenticator(), dispatcher=RecordingDispatcher())
    set_runtime(rt)
    try:
        api = Api(create_app().test_client(), rt, rt.dispatcher)  # type: ignore[arg-type]
        run = _approve_until_done(api, _paused_run(api, "long one"))
        assert run["status"] == "completed", run
        run_id = run["runId"]
        assert not {"pausedActionIds", "queuedBehind", "pauseExpiresAt", "lease"} & set(run)
        listed = [a.action_id for a in rt.runs.list_actions(run_id)]
        assert len(listed) == steps + 1 == len(set(listed))
        turns = docstore.query(Query(f"runs/{run_id}/turns"))
        inline = [a["actionId"] for d in turns for a in d.data.get("actions", [])]
        own = [d.data["actionId"] for d in docstore.query(Query(f"runs/{run_id}/actions"))]
        assert inline and own and sorted(inline + own) == sorted(listed)  # both places, each action once

        exported = api.client.post("/api/agent/me/export", headers=ALICE).get_json()["documents"]
        in_export = [a["actionId"] for p, d in exported.items() if p.startswith(f"runs/{run_id}/turns/")
                     for a in d.get("actions", [])]
        in_export += [d["actionId"] for p, d in exported.items() if p.startswith(f"runs/{run_id}/actions/")]
        assert sorted(in_export) == sorted(listed)

        events = api.client.get(f"/api/agent/runs/{run_id}/events", headers=ALICE).get_data(as_text=True)
        seqs = [json.loads(line)["seq"] for line in events.splitlines() if line.strip()]
        assert seqs == list(range(1, len(seqs) + 1))
        half = seqs[len(seqs) // 2]
        later = api.client.get(f"/api/agent/runs/{run_id}/events?after={half}", headers=ALICE).get_data(as_text=True)
        assert [json.loads(line)["seq"] for line in later.splitlines() if line.strip()] == seqs[seqs.index(half) + 1:]
        calls = [json.loads(line) for line in events.splitlines() if line.strip()]
        assert {e["actionId"] for e in calls if e["type"] == "tool_call"} == set(listed)  # the approved one twice

        assert api.client.delete("/api/agent/me", headers=ALICE).status_code == 200
        assert docstore.query(Query(f"runs/{run_id}/turns")) == []
        assert docstore.query(Query(f"runs/{run_id}/actions")) == []
        assert docstore.get(f"runs/{run_id}") is None
    finally:
        set_runtime(None)
