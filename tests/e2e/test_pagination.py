"""Cursor pagination on the lists (issue 35), through make dev's app on SQLite and the Firestore
emulator: ``cursor`` in, ``nextCursor`` out; paging through 450 runs (most of them created in the
same instant) returns each exactly once, newest first; a bad cursor is a 400 ``INVALID_CURSOR``;
a stored document that cannot be read is left out of its page (and named in the log) instead of
making the list answer 500.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import pytest
from flask.testing import FlaskClient

from shared.models.scripted import ScriptedModel, text_turn
from shared.state.docstore import DocStore, Write
from shared.state.records import ApprovalRecord, RunRecord
from tests.e2e.conftest import ALICE, BOB, Install


def pages(client: FlaskClient, path: str, key: str, **query: Any) -> tuple[list[dict[str, Any]], int]:
    """Every item of a list, page after page, and how many pages it took."""
    items: list[dict[str, Any]] = []
    cursor: str | None = None
    count = 0
    while True:
        q = {**query, **({"cursor": cursor} if cursor else {})}
        resp = client.get(path, query_string=q, headers=ALICE)
        assert resp.status_code == 200, resp.get_data(as_text=True)[:300]
        body = resp.get_json()
        items += body[key]
        count += 1
        cursor = body["nextCursor"]
        if cursor is None:
            return items, count
        assert count < 1000


def run_doc(run_id: str, uid: str, at: float) -> Write:
    return Write("set", f"runs/{run_id}", RunRecord(run_id=run_id, uid=uid, thread_id=f"t-{run_id}",
                                                     status="completed", created_at=at, updated_at=at).to_doc())


def test_paging_through_450_runs_returns_each_once(install: Install, client: FlaskClient, docstore: DocStore,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    install(ScriptedModel([text_turn("a real one")]), store_override=docstore)
    newest = client.post("/api/agent/run", json={"prompt": "hi"}, headers=ALICE).get_json()["runId"]
    base = time.time() - 3600
    # 449 more of alice's: in bursts of 50 sharing one creation time (ties across page boundaries),
    # and bob's runs interleaved.
    writes = [run_doc(f"run_a{i:04d}", "alice", base + i // 50) for i in range(449)]
    writes += [run_doc(f"run_b{i:04d}", "bob", base + i) for i in range(30)]
    for i in range(0, len(writes), 200):
        docstore.commit(writes[i:i + 200])
    for limit in (50, 7):
        runs, count = pages(client, "/api/agent/runs", "runs", limit=limit)
        ids = [r["runId"] for r in runs]
        assert len(ids) == len(set(ids)) == 450 and count == -(-450 // limit)
        assert ids[0] == newest and set(ids) == {newest} | {f"run_a{i:04d}" for i in range(449)}
        created = [r["createdAt"] for r in runs]
        assert created == sorted(created, reverse=True)
    # A document that cannot be read is left out and named in the log; the rest is answered.
    bad = run_doc("run_bad", "alice", base + 5).data
    docstore.commit([Write("set", "runs/run_bad", {**bad, "status": "exploded", "steps": "many"})])
    with caplog.at_level(logging.WARNING):
        runs, _ = pages(client, "/api/agent/runs", "runs", limit=200)
    assert len(runs) == 450 and "run_bad" not in {r["runId"] for r in runs}
    assert any("runs/run_bad" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("cursor", ["x", "!!!", "WzEsMl0", "WyJhIiwgImEvYiJd", "bnVsbA"])
def test_a_cursor_that_is_not_one_is_a_400(install: Install, client: FlaskClient, cursor: str) -> None:
    install(ScriptedModel([]))
    for path in ("/api/agent/runs", "/api/agent/sessions", "/api/agent/approvals"):
        resp = client.get(path, query_string={"cursor": cursor}, headers=ALICE)
        assert resp.status_code == 400, (path, cursor)
        assert resp.get_json()["error"]["code"] == "INVALID_CURSOR"


def approval_doc(n: int, at: float, status: str) -> Write:
    record = ApprovalRecord(approval_id=f"apr_{n:03d}", uid="alice", run_id="run_x", action_id=f"act_{n}",
                            tool="save_memory", args_hash="h", reason="r", preview="p", status=status,  # type: ignore[arg-type]
                            created_at=at, expires_at=time.time() + 3600)
    return Write("set", f"users/alice/agentApprovals/apr_{n:03d}", record.to_doc())


def test_the_approvals_inbox_pages_every_status(install: Install, client: FlaskClient, docstore: DocStore) -> None:
    install(ScriptedModel([]), store_override=docstore)
    at = time.time() - 100
    docstore.commit([approval_doc(n, at + n // 4, "pending" if n % 3 else "approved") for n in range(40)])
    everything: Callable[[str], list[str]] = lambda status: [  # noqa: E731
        a["approvalId"] for a in pages(client, "/api/agent/approvals", "approvals", status=status, limit=6)[0]]
    assert sorted(everything("all")) == [f"apr_{n:03d}" for n in range(40)]
    assert sorted(everything("pending")) == [f"apr_{n:03d}" for n in range(40) if n % 3]
    assert sorted(everything("decided")) == [f"apr_{n:03d}" for n in range(40) if not n % 3]
    assert len(everything("all")) == 40


def test_sessions_page_too(install: Install, client: FlaskClient, docstore: DocStore) -> None:
    from shared.models.offline import OfflineModel

    install(OfflineModel(), store_override=docstore, limit_active_sessions=0)
    made = [client.post("/api/agent/sessions", json={"prompt": f"plan {n}"}, headers=ALICE).get_json()["sessionId"]
            for n in range(5)]
    client.post("/api/agent/sessions", json={"prompt": "bob's"}, headers=BOB)
    sessions, count = pages(client, "/api/agent/sessions", "sessions", limit=2)
    assert [s["sessionId"] for s in sessions] == made[::-1] and count == 3


# ---- the shorter lists (issue 35): webhooks, schedules and their runs, deliveries, MCP servers, A2A
# agents, workspaces: the same cursor, the same answers ------------------------------------------------

LISTS = {  # path: the key of its items, how an item is named
    "/api/agent/webhooks": ("webhooks", "name"),
    "/api/agent/schedules": ("schedules", "name"),
    "/api/integrations/mcp": ("servers", "name"),
    "/api/integrations/a2a": ("servers", "name"),
    "/api/agent/containers": ("containers", "containerId"),
    "/api/agent/schedules/hook-0/runs": ("runs", "runId"),
    "/api/agent/webhooks/hook-0/deliveries": ("deliveries", "deliveryId"),
}


@pytest.fixture
def api_client(install: Install, client: FlaskClient, docstore: DocStore) -> FlaskClient:
    from tests.e2e.test_openapi import KEY
    install(ScriptedModel([]), store_override=docstore, credentials_encryption_key=KEY, mcp_allow_private_urls=True)
    return client


def _five_of_each(client: FlaskClient, docstore: DocStore, who: str, headers: dict[str, str], n: int) -> None:
    from shared.state.deliveries_repo import DeliveryRecord
    from shared.state.schedules_repo import ScheduleRun, schedule_id
    from shared.state.workspaces_repo import WorkspaceRecord

    at = time.time()
    writes: list[Write] = []
    for i in range(n):
        name = f"hook-{i}" if who == "alice" else f"{who}-{i}"
        assert client.put(f"/api/agent/webhooks/{name}", json={"url": "http://127.0.0.1:9/h", "events": ["run.*"]},
                          headers=headers).status_code == 200
        assert client.put(f"/api/agent/schedules/{name}", json={"cron": "0 8 * * *", "prompt": "brief"},
                          headers=headers).status_code == 200
        for kind in ("mcp", "a2a"):
            assert client.post(f"/api/integrations/{kind}/{name}", json={"url": "http://127.0.0.1:9/m"},
                               headers=headers).status_code == 200
        writes.append(Write("set", f"workspaces/ws_{who}{i:04d}", WorkspaceRecord(
            workspace_id=f"ws_{who}{i:04d}", uid=who, created_at=at + i // 2, last_used_at=at).to_doc()))
        writes.append(Write("set", f"schedules/{schedule_id(who, 'hook-0')}/runs/{i}",
                            ScheduleRun(occurrence=at - i // 2, run_id=f"run_{who}{i}").to_doc()))
        writes.append(Write("set", f"deliveries/dlv_{who}{i}", DeliveryRecord(
            delivery_id=f"dlv_{who}{i}", uid=who, target="hook-0", url="http://127.0.0.1:9/h",
            event_type="run.completed", body="{}", secret_name="hook-0", created_at=at - i // 2).to_doc()))
    docstore.commit(writes)


def test_the_shorter_lists_page_with_cursors(api_client: FlaskClient, docstore: DocStore) -> None:
    client = api_client
    _five_of_each(client, docstore, "alice", ALICE, 5)
    _five_of_each(client, docstore, "bob", BOB, 1)  # bob's schedule and webhook are named bob-0
    for path, (key, name) in LISTS.items():
        items, count = pages(client, path, key, limit=2)
        names = [item[name] for item in items]
        assert len(names) == len(set(names)) == 5 and count == 3, (path, names)
        assert all(not str(n).startswith(("bob", "ws_bob", "run_bob", "dlv_bob")) for n in names), (path, names)
        first = client.get(path, query_string={"limit": 2}, headers=ALICE).get_json()
        assert [item[name] for item in first[key]] == names[:2] and first["nextCursor"]
        # the whole list in one page by default, as before the cursors
        whole = client.get(path, headers=ALICE).get_json()
        assert [item[name] for item in whole[key]] == names and whole["nextCursor"] is None
        # a cursor that is not one: 400; alice's cursor in bob's request moves within bob's own items only
        bad = client.get(path, query_string={"cursor": "x"}, headers=ALICE)
        assert bad.status_code == 400 and bad.get_json()["error"]["code"] == "INVALID_CURSOR", path
        if "hook-0" not in path:
            theirs = client.get(path, query_string={"cursor": first["nextCursor"]}, headers=BOB)
            assert theirs.status_code == 200, theirs.get_json()
            assert all(not str(item[name]).startswith(("hook", "ws_alice")) for item in theirs.get_json()[key]), path
    for cursor in ("", "x"):  # checked for a schedule the caller does not have too (its runs: an empty page)
        resp = client.get("/api/agent/schedules/nope/runs", query_string={"cursor": cursor}, headers=ALICE)
        assert resp.status_code == 400 and resp.get_json()["error"]["code"] == "INVALID_CURSOR"
    assert [s["name"] for s in client.get("/api/agent/schedules", headers=ALICE).get_json()["schedules"]] == [
        f"hook-{i}" for i in range(5)]  # by name
    created = [c["createdAt"] for c in client.get("/api/agent/containers", headers=ALICE).get_json()["containers"]]
    assert created == sorted(created)  # oldest first, as before
