"""A remote A2A agent as a tool: our ``make dev`` (process A, ``A2A_AGENTS`` naming the other) calls
a second ``make dev``'s A2A server (B, the scripted agent) through ``remote_send_message``.

- every message to B is our approval first (a side effect); B's ``input-required`` reaches our model
  with B's question, and answering it is another call, so another approval of ours;
- killing A while B's task runs (A's invocation holds the call) never sends the message twice: the
  recovery in the next process finds B's task by the message id and waits for it.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.load import dev_server
from tests.a2a.servers import a2a_servers, sqlite_env
from tests.fakes.fake_gemini import FakeGemini, Received, Reply, call

SEND = "remote_send_message"


def our_model(received: Received) -> Reply:
    """Our agent: forwards the user's prompt to the remote agent; answers the remote's question with
    "approve"; then says what the remote answered."""
    answered = _last_response(received)
    if answered is None:
        prompt = received.body["contents"][0]["parts"][0]["text"]
        return Reply([call(SEND, {"message": prompt})])
    result = answered.get("output", answered)
    if isinstance(result, dict) and result.get("state") == "input-required":
        return Reply([call(SEND, {"message": "approve", "agentTaskId": result["agentTaskId"]})])
    return Reply.text("remote said: " + json.dumps(answered, sort_keys=True))


def _last_response(received: Received) -> dict[str, Any] | None:
    for content in reversed(received.body.get("contents", [])):
        for part in reversed(content.get("parts", [])):
            fr = part.get("functionResponse")
            if fr and fr.get("name") == SEND:
                return fr.get("response")  # type: ignore[no-any-return]
    return None


def _request(port: int, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    conn.request(method, path, body=json.dumps(body) if body is not None else None,
                 headers={"Authorization": "Bearer dev:alice", "Content-Type": "application/json",
                          "A2A-Version": "1.0"})
    resp = conn.getresponse()
    data = json.loads(resp.read() or b"null")
    conn.close()
    return data


def _approve(port: int, approval: dict[str, Any]) -> None:
    assert _request(port, "POST", "/api/agent/approve", {"approvalId": approval["approvalId"],
                                                        "decision": "approve"})["ok"] is True


def _pending(port: int, timeout_s: float = 90) -> dict[str, Any]:
    """The one approval of ours waiting in the inbox (waits for it)."""
    deadline = time.monotonic() + timeout_s
    while True:
        pending = _request(port, "GET", "/api/agent/approvals?status=pending")["approvals"]
        if pending:
            (approval,) = pending
            return approval  # type: ignore[no-any-return]
        assert time.monotonic() < deadline, "no approval came"
        time.sleep(0.2)


def _wait_run(port: int, run_id: str, statuses: set[str], timeout_s: float = 90) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while True:
        run = _request(port, "GET", f"/api/agent/runs/{run_id}")
        if run["status"] in statuses:
            return {**run, **(run.get("result") or {})}
        assert time.monotonic() < deadline, run
        time.sleep(0.2)


@contextlib.contextmanager
def ours(tmp: Path, remote_port: int, fake: FakeGemini, **extra: str) -> Iterator[tuple[int, Any]]:
    env = sqlite_env(fake.env(), tmp / "ours.sqlite3")
    env.update({"A2A_AGENTS": json.dumps([{"name": "remote", "url": f"http://127.0.0.1:{remote_port}",
                                           "headers": {"Authorization": "Bearer dev:tck"}}]),
                "CREDENTIALS_ENCRYPTION_KEY": "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=", **extra})
    with dev_server(env, tmp / "ours") as (port, proc):
        yield port, proc


def test_a_remote_input_required_becomes_our_approval(tmp_path: Path) -> None:
    with a2a_servers(tmp_path / "b", processes=1) as remote, FakeGemini() as fake:
        fake.handler = our_model
        with ours(tmp_path, remote.ports[0], fake) as (port, _):
            run = _request(port, "POST", "/api/agent/run", {"prompt": "tck-input-required note the plan"})
            assert run["status"] == "awaiting_confirmation" and run["approval"]["tool"] == SEND
            assert "a new task" in run["approval"]["preview"]
            _approve(port, run["approval"])
            # B asked for input: our model answers it, which is our approval again (B's task named).
            deadline = time.monotonic() + 90
            while (second := _pending(port))["approvalId"] == run["approval"]["approvalId"]:
                assert time.monotonic() < deadline
                time.sleep(0.2)
            assert "answer to its task" in second["preview"] and ": approve" in second["preview"], second
            _approve(port, second)
            done = _wait_run(port, run["runId"], {"completed", "failed"})
            assert done["status"] == "completed" and "Done: save_memory ran." in done["summary"], done
            assert remote.agent.calls == 1  # B's side effect was asked for once


def test_killing_our_invocation_mid_call_never_sends_twice(tmp_path: Path) -> None:
    with a2a_servers(tmp_path / "b", processes=1) as remote, FakeGemini() as fake:
        fake.handler = our_model
        lease = {"RESUME_LEASE_TTL_S": "2"}
        with ours(tmp_path, remote.ports[0], fake, **lease) as (port, proc):
            run = _request(port, "POST", "/api/agent/run", {"prompt": "test-resubscribe-message-id slow work"})
            _approve(port, run["approval"])  # the resume (inline) sends the message; B takes a few seconds
            deadline = time.monotonic() + 30
            while not _tasks_at(remote.ports[0], run["runId"]):
                assert time.monotonic() < deadline, "the message never reached B"
                time.sleep(0.1)
            os.kill(proc.process.pid, signal.SIGKILL)  # our invocation dies while B's task runs
            proc.process.wait()
        time.sleep(2.5)  # its lease lapses
        with ours(tmp_path, remote.ports[0], fake, **lease) as (port, _):  # the start's sweep recovers it
            done = _wait_run(port, run["runId"], {"completed", "failed"})
        assert done["status"] == "completed", done
        assert "Long task done" in done["summary"], done
        tasks = _tasks_at(remote.ports[0], run["runId"])
        assert len(tasks) == 1, tasks  # one task at B, holding our message once
        assert [m["role"] for m in tasks[0]["history"]].count("ROLE_USER") == 1


def _tasks_at(port: int, run_id: str) -> list[dict[str, Any]]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", f"/a2a/tasks?contextId=agent-runtime-{run_id}",
                 headers={"Authorization": "Bearer dev:tck", "A2A-Version": "1.0"})
    body = json.loads(conn.getresponse().read())
    conn.close()
    return list(body.get("tasks", []))
