"""Seed 004's coding agent end to end (issue 26 acceptance): ``make dev``'s app, the real
google-genai SDK against the fake Gemini, the real store and loop, the sandbox service as its own
process, a real git server (``git http-backend``, token required) and the fake GitHub REST API.

A supervised user's plan session clones the repository, runs its test script (it fails), edits a
file with a script, runs the tests again (they pass), pushes a branch and opens a pull request.
Every side effect waits for the user's approval through the API; every resume is delivered twice.
One push, one pull request.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient

from devfakes.github import FakeGitHub
from devserver import create_app
from shared.auth import LocalAuthenticator
from shared.connectors import IntegrationTokens
from shared.connectors.sandbox import SandboxError
from shared.durable.dispatcher import RecordingDispatcher
from shared.models.gemini import GeminiModel
from shared.runtime import Runtime, set_runtime
from shared.state.docstore import DocStore
from shared.state.records import UserRecord
from tests.agent.conftest import make_settings
from tests.fakes.fake_gemini import FakeGemini, Received, Reply, call, text, thought
from tests.messages import deliver
from tests.sandbox.git_server import GitServer
from tests.sandbox.support import SandboxProcess

ALICE = {"Authorization": "Bearer dev:alice"}
REPO = "octo/calc"
TEST_SCRIPT = ("#!/bin/sh\ngrep -q '^## 1.1' CHANGELOG.md && echo 'tests pass' || "
               "{ echo 'FAIL: no 1.1 entry'; exit 1; }\n")
EDIT = "printf '## 1.1\\n- Add a changelog entry\\n\\n' | cat - CHANGELOG.md > c.tmp && mv c.tmp CHANGELOG.md"


def acts(workspace: str | None) -> list[tuple[str, dict[str, Any]]]:
    wid = workspace or "?"
    return [
        ("container_create", {"repo": REPO, "ref": "main", "group": "changelog"}),
        ("container_exec", {"containerId": wid, "script": "./test.sh", "timeoutS": 60}),
        ("container_exec", {"containerId": wid, "script": EDIT}),
        ("container_exec", {"containerId": wid, "script": "./test.sh", "timeoutS": 60}),
        ("container_git_push", {"containerId": wid, "branch": "agent/changelog", "message": "Add a 1.1 entry"}),
        ("github_pull_create", {"repo": REPO, "title": "Add a CHANGELOG entry", "head": "agent/changelog",
                                "base": "main", "body": "The tests pass."}),
    ]


def brain(r: Received) -> Reply:
    si = r.system_instruction
    prompt = r.body["contents"][0]["parts"][0].get("text", "")
    if "planning module" in si and "reviews the current plan" not in si:
        return Reply([text(json.dumps({"tasks": [{"title": "Add the entry and open a pull request",
                                                  "description": "clone, test, edit, test, push, PR"}],
                                       "summary": "one task"}))])
    if "reflection module" in si:
        done = json.loads(prompt)["lastAct"]["action"]["tool"] == "task_done"
        return Reply([text(json.dumps({"taskComplete": done, "taskFailed": False, "summary": "ok"}))])
    # The executor: the next act after those answered so far in this request.
    answered = [part["functionResponse"] for content in r.body["contents"] for part in content.get("parts", [])
                if "functionResponse" in part]
    created = next((a["response"] for a in answered if a["name"] == "container_create"), None)
    plan = acts(created["containerId"] if created else None)
    if len(answered) < len(plan):
        tool, args = plan[len(answered)]
        return Reply([thought(f"Next: {tool}."), call(tool, args)])
    return Reply.text("Finished: the pull request is open.")


@pytest.fixture
def world(tmp_path: Path, sandbox: SandboxProcess, fake_gemini: FakeGemini,
          sqlite_docstore: DocStore) -> Iterator[tuple[Runtime, FlaskClient, GitServer, FakeGitHub]]:
    with FakeGitHub() as github:
        github.add_repo(REPO, files={})

        def synced(repo: str) -> None:  # GitHub's REST view follows what git received
            for branch in git.branches(repo):
                github.repos[repo].branches[branch] = git.files(repo, branch)

        git = GitServer(tmp_path / "git", github.token, on_push=synced)
        git.seed(REPO, {"README.md": "calc\n", "CHANGELOG.md": "## 1.0\n- First release\n", "test.sh": TEST_SCRIPT})
        synced(REPO)
        fake_gemini.handler = brain
        settings = fake_gemini.settings(make_settings(
            sandbox_url=sandbox.url, sandbox_key=sandbox.key, github_api_base_url=github.base_url,
            github_git_base_url=git.url, credentials_encryption_key=base64.b64encode(os.urandom(32)).decode()))
        rt = Runtime(settings, store=sqlite_docstore, model=GeminiModel(settings), authenticator=LocalAuthenticator(),
                     dispatcher=RecordingDispatcher())
        rt.users.put_user(UserRecord(uid="alice", trust_level="supervised"))
        rt.connectors().vault.put("alice", "github", IntegrationTokens(access_token=github.token, scopes=["repo"]))
        set_runtime(rt)
        try:
            yield rt, create_app().test_client(), git, github
        finally:
            set_runtime(None)
            git.stop()


@pytest.mark.parametrize("keep", [False, True])
def test_a_plan_session_fixes_a_repository_and_opens_one_pull_request(
        world: tuple[Runtime, FlaskClient, GitServer, FakeGitHub], sandbox: SandboxProcess,
        fake_gemini: FakeGemini, keep: bool) -> None:
    rt, client, git, github = world
    created = client.post("/api/agent/sessions", json={"prompt": "Add a CHANGELOG entry for 1.1 to octo/calc and "
                                                                 "make the tests pass", "keepWorkspaces": keep},
                          headers=ALICE)
    assert created.status_code == 201, created.get_json()
    sid = created.get_json()["sessionId"]
    assert client.post(f"/api/agent/sessions/{sid}/confirm", json={"planVersion": 1}, headers=ALICE).status_code == 202
    deliver(rt, copies=2)
    previews: dict[str, list[str]] = {}
    run_ids: set[str] = set()
    for _ in range(12):
        pending = client.get("/api/agent/approvals", headers=ALICE).get_json()["approvals"]
        pending = [a for a in pending if a["status"] == "pending"]
        if not pending:
            break
        for approval in pending:
            previews.setdefault(approval["tool"], []).append(approval["preview"])
            run_ids.add(approval["runId"])
            resp = client.post("/api/agent/approve", json={"approvalId": approval["approvalId"], "decision": "approve"},
                               headers=ALICE)
            assert resp.status_code == 202, resp.get_json()
        deliver(rt, copies=2)
    view = client.get(f"/api/agent/sessions/{sid}", headers=ALICE).get_json()
    assert view["status"] == "completed", view

    # Each side effect was approved by the user, the scripts shown exactly.
    assert sorted(previews) == ["container_create", "container_exec", "container_git_push", "github_pull_create"]
    assert any(EDIT in p for p in previews["container_exec"])
    # The tests failed, the edit made them pass.
    (run_id,) = run_ids  # the session's run
    results: dict[str, list[Any]] = {}
    for action in rt.runs.list_actions(run_id):
        assert action.attempts == 1, action
        results.setdefault(action.tool, []).append(action.result)
    first_test, _, second_test = results["container_exec"]
    assert first_test["exitCode"] == 1 and "FAIL" in first_test["stdout"]
    assert second_test["exitCode"] == 0 and "tests pass" in second_test["stdout"]
    # One push, one pull request; the branch holds the edit; the token never reached the workspace.
    assert git.pushes(REPO) == 1
    assert git.show(REPO, "agent/changelog", "CHANGELOG.md").startswith("## 1.1\n- Add a changelog entry")
    pulls = [i for i in github.repos[REPO].items.values() if i["kind"] == "pull"]
    assert len(pulls) == 1 and pulls[0]["head"] == "agent/changelog"
    wid = results["container_create"][0]["containerId"]
    box = sandbox.client()
    leak = box.exec(wid, f"grep -r -l '{github.token}' . ; env", timeout_s=20)
    assert github.token not in leak.stdout
    assert all(r.rejected is None for r in fake_gemini.requests)  # signed calls went back verbatim
    # The session ended: the sweep destroys its workspace, unless the session keeps them.
    rt.router.sweep()
    listed = client.get("/api/agent/containers", headers=ALICE).get_json()["containers"]
    if keep:
        assert [c["containerId"] for c in listed] == [wid]
        assert box.read_file(wid, "CHANGELOG.md").content.startswith("## 1.1")
    else:
        assert listed == []
        with pytest.raises(SandboxError) as gone:
            box.read_file(wid, "CHANGELOG.md")
        assert gone.value.code == "WORKSPACE_NOT_FOUND"

