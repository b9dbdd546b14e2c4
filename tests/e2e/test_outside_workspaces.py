"""Workspaces as a chat user meets them over HTTP (session 2026-11-26d outside trial,
docs/session-notes/2026-11-26d/issue-33p.md), with the sandbox service as its own process.

Each chat run's ``run_shell_command`` gets the run's default workspace. A run ends, its workspace
is left for the sweep (every minute or few), and it still counted against ``WORKSPACES_PER_USER``:
a user sending six shell commands in six messages within a sweep interval got
``WORKSPACE_LIMIT_REACHED`` from the sixth on, for workspaces nothing could use any more. Now a
create that meets the limit first destroys the user's workspaces whose unit has ended (the
sweep's own rule: not kept, not of a session that keeps its workspaces) and tries once more.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from flask.testing import FlaskClient

from shared.api import RunRequest
from shared.connectors.sandbox import SandboxError
from shared.models.base import ModelRequest, Turn
from shared.models.offline import OfflineModel
from shared.models.scripted import FunctionModel, ScriptedModel, call, calls_turn, text_turn
from shared.runtime import Runtime, set_runtime
from shared.state.docstore import DocStore
from shared.state.records import UserRecord
from shared.state.workspaces_repo import WorkspacesRepo
from shared.workspaces import workspace_id_for
from tests.agent.conftest import install
from tests.e2e.conftest import ALICE
from tests.messages import deliver
from tests.sandbox.conftest import sandbox as sandbox  # the sandbox service process, one per module
from tests.sandbox.support import SandboxProcess


def _shell_once(request: ModelRequest) -> Turn:
    """One shell command per user message, then a text answer with its output."""
    last = request.turns[-1]
    answered = [p.function_response for p in last.parts if p.function_response]
    if answered:
        return text_turn(f"ran: {answered[0].response}")
    return calls_turn(call("run_shell_command", {"command": "echo hi > f.txt && cat f.txt"}))


@pytest.fixture
def runtime(store: DocStore, sandbox: SandboxProcess) -> Iterator[Runtime]:
    rt = install(store, FunctionModel(_shell_once), sandbox_url=sandbox.url, sandbox_key=sandbox.key,
                 workspaces_per_user=2)
    rt.users.put_user(UserRecord(uid="alice", trust_level="autonomous"))
    yield rt
    set_runtime(None)


def _send(client: FlaskClient, thread: str) -> dict[str, Any]:
    resp = client.post("/api/agent/run", json={"prompt": "run it", "threadId": thread}, headers=ALICE)
    assert resp.status_code == 200, resp.get_json()
    body: dict[str, Any] = resp.get_json()
    assert body["status"] == "completed", body
    return body


def test_ended_runs_workspaces_do_not_hold_the_limit_against_the_next_message(
        runtime: Runtime, client: FlaskClient, sandbox: SandboxProcess) -> None:
    runs = [_send(client, "coding") for _ in range(5)]  # more messages than the limit, no sweep between
    for body in runs:
        (action,) = runtime.runs.list_actions(body["runId"])
        assert action.status == "completed", (action.status, action.error)
        assert "WORKSPACE_LIMIT_REACHED" not in body["summary"]
        assert "exitCode" in body["summary"] and "hi" in body["summary"]
    listed = client.get("/api/agent/containers", headers=ALICE).get_json()["containers"]
    assert 1 <= len(listed) <= 2
    assert {c["runId"] for c in listed} <= {b["runId"] for b in runs[-2:]}
    box = sandbox.client()
    with pytest.raises(SandboxError) as gone:
        box.info(_default_of(runs[0]["runId"]))
    assert gone.value.code == "WORKSPACE_NOT_FOUND"  # destroyed in the service, not only its record


def test_kept_workspaces_still_count_and_the_limit_is_told_when_nothing_can_go(
        runtime: Runtime, client: FlaskClient) -> None:
    repo = WorkspacesRepo(runtime.runs.store)
    first, second = _send(client, "a"), _send(client, "b")
    for body in (first, second):
        repo.update(_default_of(body["runId"]), keep=True)
    third = _send(client, "c")
    (action,) = runtime.runs.list_actions(third["runId"])
    assert action.status == "failed" and (action.error or "").startswith("WORKSPACE_LIMIT_REACHED"), action
    assert len(repo.live_of("alice")) == 2  # the kept ones, untouched


def _default_of(run_id: str) -> str:
    return workspace_id_for("alice", run_id, "default")


def test_a_sessions_kept_workspaces_are_listed_as_kept_and_outlive_the_sweep(
        store: DocStore, sandbox: SandboxProcess, client: FlaskClient) -> None:
    """``keep`` in the listing was the record's own flag, which nothing sets: a plan session created
    with ``keepWorkspaces`` listed its workspaces ``keep: false`` although the sweep keeps them."""
    rt = install(store, OfflineModel(), sandbox_url=sandbox.url, sandbox_key=sandbox.key)
    try:
        rt.users.put_user(UserRecord(uid="alice", trust_level="autonomous"))
        runs: dict[bool, str] = {}
        for keep in (True, False):
            made = client.post("/api/agent/sessions", headers=ALICE,
                               json={"prompt": "use `container_create`", "keepWorkspaces": keep}).get_json()
            sid = made["sessionId"]
            assert client.post(f"/api/agent/sessions/{sid}/confirm", headers=ALICE,
                               json={"planVersion": made["plan"]["version"]}).status_code == 202
            deliver(rt)
            view = client.get(f"/api/agent/sessions/{sid}", headers=ALICE).get_json()
            assert view["status"] == "completed", view
            runs[keep] = view["runId"]
        listed = {c["runId"]: c for c in client.get("/api/agent/containers", headers=ALICE).get_json()["containers"]}
        assert set(listed) == set(runs.values())
        assert listed[runs[True]]["keep"] is True and listed[runs[False]]["keep"] is False
        rt.router.sweep()  # both sessions ended: the sweep keeps exactly what the listing says is kept
        after = client.get("/api/agent/containers", headers=ALICE).get_json()["containers"]
        assert [(c["runId"], c["keep"]) for c in after] == [(runs[True], True)]
    finally:
        set_runtime(None)


def test_an_erasure_refused_for_a_working_run_destroys_no_workspace(
        store: DocStore, sandbox: SandboxProcess, client: FlaskClient) -> None:
    """``DELETE /api/agent/me`` destroyed the user's workspaces in the sandbox service first and only
    then found the run still working: a 409 ``RUN_ACTIVE`` "nothing is deleted", with every
    workspace (files and snapshot) gone."""
    import threading

    release = threading.Event()

    def model(request: ModelRequest) -> Turn:
        prompt = request.turns[0].text
        if any(p.function_response for p in request.turns[-1].parts):
            return text_turn("made")
        if "make" in prompt:
            return calls_turn(call("container_create", {"group": "keepme"}))
        release.wait(30)  # a slow model call: the run is working, not paused
        return text_turn("done")

    rt = install(store, FunctionModel(model), sandbox_url=sandbox.url, sandbox_key=sandbox.key)
    try:
        rt.users.put_user(UserRecord(uid="alice", trust_level="autonomous"))
        assert client.post("/api/agent/run", json={"prompt": "make one"}, headers=ALICE).status_code == 200
        (ws,) = client.get("/api/agent/containers", headers=ALICE).get_json()["containers"]
        answers: dict[str, Any] = {}
        slow = threading.Thread(target=lambda: answers.update(
            run=client.post("/api/agent/run", json={"prompt": "think hard"}, headers=ALICE).status_code))
        slow.start()
        try:
            for _ in range(200):
                runs = client.get("/api/agent/runs", headers=ALICE).get_json()["runs"]
                if len(runs) == 2:
                    break
                release.wait(0.05)
            refused = client.delete("/api/agent/me", headers=ALICE)
            assert refused.status_code == 409 and refused.get_json()["error"]["code"] == "RUN_ACTIVE"
            assert [c["containerId"] for c in client.get("/api/agent/containers", headers=ALICE).get_json()[
                "containers"]] == [ws["containerId"]]
            assert sandbox.client().info(ws["containerId"])["quotaBytes"] > 0  # its files are still there
        finally:
            release.set()
            slow.join(30)
        assert answers["run"] == 200
        erased = client.delete("/api/agent/me", headers=ALICE)
        assert erased.status_code == 200 and erased.get_json()["deleted"].get("workspaces") == 1
        with pytest.raises(SandboxError):
            sandbox.client().info(ws["containerId"])
    finally:
        set_runtime(None)


@pytest.mark.parametrize("url", ["https://127.0.0.1:9/x.git", "https://10.1.2.3/team/repo.git",
                                 "https://169.254.169.254/computeMetadata/v1/", "https://localhost/x.git"])
def test_a_repository_url_at_a_private_address_is_refused_before_the_sandbox_clones_it(
        store: DocStore, sandbox: SandboxProcess, url: str) -> None:
    """``container_create {repo: "https://10.…"}``: the sandbox service cloned from any https host,
    loopback, private networks and the metadata address included (the SSRF guard of MCP servers,
    webhooks and web_fetch did not apply)."""
    model = ScriptedModel([calls_turn(call("container_create", {"repo": url})), text_turn("ok")])
    rt = install(store, model, sandbox_url=sandbox.url, sandbox_key=sandbox.key)
    try:
        rt.users.put_user(UserRecord(uid="alice", trust_level="autonomous"))
        started = rt.agent.start("alice", RunRequest(prompt="clone it"))
        result = rt.agent.run(rt.agent.context(started))
        (action,) = rt.runs.list_actions(result.run_id)
        assert action.status == "failed" and (action.error or "").startswith("REPO_URL_NOT_ALLOWED"), action.error
        assert WorkspacesRepo(store).live_of("alice") == []  # nothing created, nothing cloned
    finally:
        set_runtime(None)


def test_local_development_may_clone_from_a_private_address(store: DocStore, sandbox: SandboxProcess) -> None:
    model = ScriptedModel([calls_turn(call("container_create", {"repo": "https://127.0.0.1:9/x.git"})),
                           text_turn("ok")])
    rt = install(store, model, sandbox_url=sandbox.url, sandbox_key=sandbox.key, mcp_allow_private_urls=True)
    try:
        rt.users.put_user(UserRecord(uid="alice", trust_level="autonomous"))
        started = rt.agent.start("alice", RunRequest(prompt="clone it"))
        result = rt.agent.run(rt.agent.context(started))
        (action,) = rt.runs.list_actions(result.run_id)
        assert action.status == "failed" and "REPO_URL_NOT_ALLOWED" not in (action.error or ""), action.error
        assert "git clone failed" in (action.error or "")  # it got as far as the clone (nothing listens there)
    finally:
        set_runtime(None)
