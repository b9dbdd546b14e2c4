"""Acceptance of issue 28: ten concurrent ``POST /api/agent/run`` with ``multitaskStrategy: enqueue``
on one thread, through ``make dev``'s app (``devserver.py``, the inline dispatcher) as two server
processes on the Firestore emulator, the real google-genai SDK against ``make load``'s fake model
(each run asks for ``save_memory``: a side effect that waits for approval, so every approval wait
holds the queue).

Half the requests go to each process, all at once. Then the test approves whatever waits, on
alternating processes, until every run ended. Expected: 0 x 409, one run started at once and nine
queued; ten runs ``completed`` in their arrival order (``queuePosition``), one at a time; the
thread's messages in that order; each memory saved exactly once (0 duplicate side effects)."""

from __future__ import annotations

import http.client
import itertools
import json
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from bench.load import dev_server, fake_model, server_env
from tests.emulators import Emulator, reset_firestore

RUNS = 10
THREAD = "busy-thread"
PROJECT = "demo-queue-two-processes"
ALICE = {"Authorization": "Bearer dev:alice", "Content-Type": "application/json"}
DEADLINE_S = 240.0


def call(port: int, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    conn.request(method, path, body=json.dumps(body) if body is not None else None, headers=ALICE)
    resp = conn.getresponse()
    data = resp.read()
    conn.close()
    return resp.status, json.loads(data)


@pytest.fixture
def servers(firestore_emulator: Emulator, tmp_path: Path) -> Iterator[tuple[int, int]]:
    with fake_model(0.0, tmp_path / "logs") as (model_env, _):
        reset_firestore(firestore_emulator.host, PROJECT)
        env = server_env(firestore_emulator.host, PROJECT, model_env)
        # The per-user request counter is one document: ten requests of one user at the same
        # instant contend on it (429 RATE_LIMITED when they keep losing, docs/limits.md). That
        # limit is not what this test is about.
        env["LIMIT_REQUESTS_PER_MINUTE"] = "0"
        with dev_server(env, tmp_path / "logs" / "a") as (a, _), dev_server(env, tmp_path / "logs" / "b") as (b, _):
            yield a, b


@pytest.mark.firestore
def test_ten_concurrent_enqueued_runs_on_one_thread_over_two_processes(
        servers: tuple[int, int], firestore_emulator: Emulator) -> None:
    ports = servers

    def post(i: int) -> tuple[int, Any]:
        return call(ports[i % 2], "POST", "/api/agent/run", {
            "prompt": f"Please save this to memory.\nremember: load-q{i}", "threadId": THREAD,
            "multitaskStrategy": "enqueue"})

    with ThreadPoolExecutor(max_workers=RUNS) as pool:
        answers = list(pool.map(post, range(RUNS)))
    statuses = sorted(s for s, _ in answers)
    assert 409 not in statuses, answers
    assert statuses == [200] + [202] * (RUNS - 1), answers
    run_ids = [body["runId"] for _, body in answers]

    deadline = time.monotonic() + DEADLINE_S
    approved: set[str] = set()
    turn = 0
    while True:
        runs = {i: call(ports[0], "GET", f"/api/agent/runs/{i}")[1] for i in run_ids}
        if all(r["status"] in ("completed", "failed") for r in runs.values()):
            break
        assert time.monotonic() < deadline, {i: r["status"] for i, r in runs.items()}
        working = [r for r in runs.values() if r["status"] not in ("queued", "completed", "failed")]
        assert len(working) <= 1, [(r["runId"], r["status"]) for r in working]  # one at a time
        _, inbox = call(ports[turn % 2], "GET", "/api/agent/approvals?status=pending")
        for approval in inbox["approvals"]:
            if approval["approvalId"] not in approved:
                status, _ = call(ports[turn % 2], "POST", "/api/agent/approve",
                                 {"approvalId": approval["approvalId"], "decision": "approve"})
                assert status == 202
                approved.add(approval["approvalId"])
                turn += 1
        time.sleep(0.2)

    runs = {i: call(ports[1], "GET", f"/api/agent/runs/{i}")[1] for i in run_ids}
    assert [r["status"] for r in runs.values()] == ["completed"] * RUNS, runs
    # arrival order: the run started at once first, then by queuePosition; each started after the
    # previous one ended
    ordered = sorted(runs.values(), key=lambda r: r.get("queuePosition", -1))
    assert "queuePosition" not in ordered[0] and [r.get("queuePosition") for r in ordered[1:]] == list(range(RUNS - 1))
    for earlier, later in itertools.pairwise(ordered):
        assert later["startedAt"] >= earlier["updatedAt"], (earlier["runId"], later["runId"])

    import os

    os.environ["FIRESTORE_EMULATOR_HOST"] = firestore_emulator.host
    from google.cloud import firestore

    from shared.state.firestore_docstore import FirestoreDocStore
    from shared.state.runs_repo import RunsRepo
    from shared.state.users_repo import UsersRepo

    store = FirestoreDocStore(firestore.Client(project=PROJECT), owns_client=True)
    try:
        messages = RunsRepo(store).list_messages("alice", THREAD, 100)
        memories = UsersRepo(store).list_memories("alice", limit=100)
    finally:
        store.close()
    by_run = [m.run_id for m in messages if m.role == "user"]
    assert by_run == [r["runId"] for r in ordered]  # the thread's turns in arrival order
    assert [m.role for m in messages] == ["user", "assistant"] * RUNS
    tokens = sorted(m.text for m in memories)
    assert len(tokens) == RUNS and len(set(tokens)) == RUNS, tokens  # each side effect exactly once
