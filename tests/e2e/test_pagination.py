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
