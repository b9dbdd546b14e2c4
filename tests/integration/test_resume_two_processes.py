"""Resuming an events stream on another server process (issue 34): two ``devserver.py`` processes on
one store (an SQLite file; the Firestore emulator), the real google-genai SDK against the fake model
process of ``make load`` (a run that pauses for ``save_memory``'s approval, then answers).

A client follows the run live as Server-Sent Events on process A until the pause, the approval is
decided on B, and the client reconnects to B with ``Last-Event-ID`` and follows to the end; then, for
50 random cut points of the finished log, a read of A cut after that many events plus a reconnect to B
with ``Last-Event-ID`` equals the uninterrupted read: 0 duplicates, 0 gaps."""

from __future__ import annotations

import contextlib
import http.client
import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench.load import dev_server, fake_model, server_env
from tests.emulators import Emulator, reset_firestore

CUTS = 50
HEADERS = {"Authorization": "Bearer dev:alice", "Accept": "text/event-stream"}


def sse(port: int, path: str, *, last_event_id: str | None = None,
        stop_after: int | None = None) -> list[tuple[str, dict[str, Any]]]:
    """``(id, event)`` of each SSE frame of ``GET path`` on ``port``; the connection is closed after
    ``stop_after`` frames (a client that lost it), else read to the server's end."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    headers = dict(HEADERS) if last_event_id is None else {**HEADERS, "Last-Event-ID": last_event_id}
    conn.request("GET", path, headers=headers)
    resp = conn.getresponse()
    assert resp.status == 200 and resp.getheader("Content-Type", "").startswith("text/event-stream")
    frames: list[tuple[str, dict[str, Any]]] = []
    fields: dict[str, str] = {}
    try:
        while stop_after is None or len(frames) < stop_after:
            raw = resp.readline()
            if not raw:
                break
            line = raw.decode().rstrip("\n")
            if line == "":
                if "data" in fields:
                    frames.append((fields.get("id", ""), json.loads(fields["data"])))
                fields = {}
            elif not line.startswith(":"):
                name, _, value = line.partition(": ")
                fields[name] = value
    finally:
        conn.close()
    return frames


def post(port: int, path: str, body: dict[str, Any]) -> tuple[int, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("POST", path, body=json.dumps(body),
                 headers={"Authorization": "Bearer dev:alice", "Content-Type": "application/json"})
    resp = conn.getresponse()
    data = resp.read()
    conn.close()
    return resp.status, json.loads(data)


@contextlib.contextmanager
def two_servers(env: dict[str, str], log_dir: Path) -> Iterator[tuple[int, int]]:
    with dev_server(env, log_dir / "a") as (a, _), dev_server(env, log_dir / "b") as (b, _):
        yield a, b


@pytest.fixture(params=["sqlite", pytest.param("firestore", marks=pytest.mark.firestore)])
def servers(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[int, int]]:
    with fake_model(0.0, tmp_path / "logs") as (model_env, _):
        if request.param == "firestore":
            emulator: Emulator = request.getfixturevalue("firestore_emulator")
            project = "demo-resume-two-processes"
            reset_firestore(emulator.host, project)
            env = server_env(emulator.host, project, model_env)
        else:
            env = server_env("unused", "demo-resume-two-processes", model_env)
            env.update({"STATE_BACKEND": "sqlite", "SQLITE_PATH": str(tmp_path / "state.sqlite3")})
            env.pop("FIRESTORE_EMULATOR_HOST", None)
        env.update({"FOLLOW_MAX_WAIT_S": "30", "STREAM_HEARTBEAT_S": "15"})
        with two_servers(env, tmp_path / "logs") as ports:
            yield ports


def events_only(frames: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, dict[str, Any]]]:
    return [(i, ev) for i, ev in frames if ev["type"] != "stream_end"]


def test_a_stream_resumed_on_another_process_has_no_gap_and_no_duplicate(servers: tuple[int, int]) -> None:
    a, b = servers
    status, run = post(a, "/api/agent/run", {"prompt": "Please save this to memory.\nremember: load-tea"})
    assert status == 200 and run["status"] == "awaiting_confirmation", run
    follow = f"/api/agent/runs/{run['runId']}/events?after=0&follow=1&until=stop"
    # live: on A until the pause (the follow stops there), the decision on B, the rest from B
    before = events_only(sse(a, follow))
    assert before[-1][1]["type"] == "result" and before[-1][1]["result"]["status"] == "awaiting_confirmation"
    status, decided = post(b, "/api/agent/approve", {"approvalId": run["approval"]["approvalId"],
                                                     "decision": "approve"})
    assert status == 202, decided
    after = events_only(sse(b, follow.replace("until=stop", "until=end"), last_event_id=before[-1][0]))
    assert after[-1][1]["type"] == "result" and after[-1][1]["result"]["status"] == "completed"
    whole = events_only(sse(a, f"/api/agent/runs/{run['runId']}/events?after=0"))
    assert before + after == whole
    assert [i for i, _ in whole] == [str(n) for n in range(1, len(whole) + 1)]
    # 50 random cut points: A cut after k events, B from Last-Event-ID
    rng = random.Random(34)
    duplicates = gaps = 0
    for _ in range(CUTS):
        k = rng.randint(0, len(whole))
        head = events_only(sse(a, follow.replace("until=stop", "until=end"), stop_after=k)) if k else []
        last = head[-1][0] if head else "0"
        tail = events_only(sse(b, follow.replace("until=stop", "until=end"), last_event_id=last))
        seqs = [ev["seq"] for _, ev in head + tail]
        duplicates += len(seqs) - len(set(seqs))
        gaps += len(set(range(1, len(whole) + 1)) - set(seqs))
        assert head + tail == whole, k
    assert (duplicates, gaps) == (0, 0)
