"""End to end for the GitHub tools: the real stores, the real agent loop, the real PyGithub against
the local fake GitHub REST API.

- A supervised user's run reads ``AGENT.md`` (a read: no approval), then asks to create an issue:
  approval with a preview in words -> approved -> resume delivered 3 times -> exactly one
  ``POST /issues``, whose body carries the action's marker.
- A rejected close writes nothing; a token revoked before the approved create fails the action
  with "reconnect GitHub" (told to the model, audited), nothing created.
- Autonomous users act without approval; the kill switch denies; bad arguments fail the run before
  any request.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Iterator
from typing import Any

import pytest

from devfakes.github import FakeGitHub
from shared.agent.approvals import decide
from shared.api import ApproveRequest
from shared.config import Settings
from shared.connectors import IntegrationTokens
from shared.connectors.github import marker
from shared.durable.dispatcher import RecordingDispatcher
from shared.models.base import Model
from shared.models.scripted import ScriptedModel, call, calls_turn, text_turn
from shared.runtime import Runtime
from shared.state.docstore import DocStore, Query
from shared.state.records import UserRecord
from tests.connectors.loop_support import start
from tests.messages import deliver_published as deliver

UID = "alice"
REPO = "octo-org/hello-world"
ISSUE = {"repo": REPO, "title": "Tests fail on Python 3.13", "body": "`make test` fails: see the log.",
         "labels": ["bug"]}


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with FakeGitHub() as fake:
        fake.add_repo(REPO, files={"AGENT.md": b"Run `make test` before opening a pull request.\n"},
                      branches={"fix": {"AGENT.md": b"x"}})
        yield fake


def runtime(store: DocStore, model: Model, github: FakeGitHub, *, trust: str = "supervised",
            connect: bool = True, **settings: Any) -> Runtime:
    config = Settings(state_backend="sqlite", auth_mode="local", dispatcher="none", run_deadline_s=30.0,
                      credentials_encryption_key=base64.b64encode(os.urandom(32)).decode(),
                      github_api_base_url=github.base_url, **settings)
    rt = Runtime(config, store=store, model=model, dispatcher=RecordingDispatcher())
    rt.users.put_user(UserRecord(uid=UID, trust_level=trust))
    if connect:
        rt.connectors().vault.put(UID, "github", IntegrationTokens(access_token=github.token, scopes=["repo"]))
    return rt


def test_read_then_create_issue_with_approval_exactly_once(github: FakeGitHub, store: DocStore) -> None:
    model = ScriptedModel([
        calls_turn(call("github_file_read", {"repo": f"https://github.com/{REPO}", "path": "AGENT.md"})),
        calls_turn(call("github_issue_create", ISSUE)),
        text_turn("I opened the issue."),
    ])
    rt = runtime(store, model, github)

    result = start(rt, "Open an issue about the failing tests in octo-org/hello-world")

    assert result.status == "awaiting_confirmation" and result.approval is not None
    assert result.approval.preview == (
        f'Create a GitHub issue in {REPO}\nTitle: "Tests fail on Python 3.13"\nLabels: bug\n'
        "Body: `make test` fails: see the log.")
    assert result.approval.reason == "trust level supervised: github_issue_create has side effects"
    assert github.writes() == []  # the read ran, nothing was written yet
    read_answer = model.requests[1].turns[-1].parts[0].function_response
    assert read_answer is not None and read_answer.response["text"].startswith("Run `make test`")

    decide(rt.services, rt.dispatcher, UID, ApproveRequest(approvalId=result.approval.id, decision="approve"))
    deliver(rt, copies=3)  # the resume message redelivered

    [create] = github.writes()
    read, action = rt.runs.list_actions(result.run_id)
    assert (create.method, create.path) == ("POST", f"/repos/{REPO}/issues")
    assert create.json == {"title": "Tests fail on Python 3.13", "labels": ["bug"],
                           "body": "`make test` fails: see the log.\n\n" + marker(action.action_id)}
    assert (read.tool, read.status, read.side_effect, read.approval_id) == ("github_file_read", "completed", False,
                                                                            None)
    assert (action.status, action.attempts, action.side_effect, action.idempotent) == ("completed", 1, True, False)
    snap = rt.runs.get_run(result.run_id)
    assert snap is not None and snap.run.status == "completed"
    told = model.requests[2].turns[-1].parts[0].function_response
    assert told is not None and told.response["created"] is True
    assert told.response["issue"]["createdByAgentAction"] == action.action_id
    assert told.response["issue"]["body"] == "`make test` fails: see the log."
    audit = [a.data for a in store.query(Query("audit")) if a.data.get("kind") == "side_effect_result"]
    assert [a["decision"] for a in audit] == ["success"]
    model.assert_complete()


def test_a_rejected_close_writes_nothing(github: FakeGitHub, store: DocStore) -> None:
    github.add_pull(REPO, "Fix", head="fix")
    model = ScriptedModel([calls_turn(call("github_pull_close", {"repo": REPO, "number": 1})),
                           text_turn("Left it open.")])
    rt = runtime(store, model, github)
    result = start(rt, "Close my pull request")
    assert result.approval is not None
    assert result.approval.preview == f"Close pull request {REPO}#1 without merging it (its branch is kept)"

    decide(rt.services, rt.dispatcher, UID, ApproveRequest(approvalId=result.approval.id, decision="reject"))
    deliver(rt, copies=2)

    assert github.writes() == [] and github.item(REPO, 1)["state"] == "open"
    (action,) = rt.runs.list_actions(result.run_id)
    assert action.status == "rejected"
    told = model.requests[1].turns[-1].parts[0].function_response
    assert told is not None and told.response["rejected"] is True


def test_a_token_revoked_before_the_approved_create_fails_the_action(github: FakeGitHub, store: DocStore) -> None:
    model = ScriptedModel([calls_turn(call("github_comment_create", {"repo": REPO, "number": 1, "body": "On it"})),
                           text_turn("GitHub needs reconnecting.")])
    github.add_issue(REPO, "Bug")
    rt = runtime(store, model, github)
    result = start(rt, "Tell them I'm on it")
    assert result.approval is not None
    github.revoked.add(github.token)  # the user revoked the token on github.com meanwhile

    decide(rt.services, rt.dispatcher, UID, ApproveRequest(approvalId=result.approval.id, decision="approve"))
    deliver(rt, copies=1)

    assert github.repos[REPO].comments == []
    (action,) = rt.runs.list_actions(result.run_id)
    assert (action.status, action.outcome) == ("failed", "error")
    assert action.error == ("GitHub rejected the stored token (it was revoked or has expired); ask the user to "
                            "reconnect GitHub")
    told = model.requests[1].turns[-1].parts[0].function_response
    assert told is not None and told.response == {"error": action.error}
    audit = [a.data for a in store.query(Query("audit")) if a.data.get("kind") == "side_effect_result"]
    assert [a["decision"] for a in audit] == ["error"]


def test_autonomous_users_act_without_approval(github: FakeGitHub, store: DocStore) -> None:
    model = ScriptedModel([calls_turn(call("github_issue_create", ISSUE)), text_turn("Done.")])
    rt = runtime(store, model, github, trust="autonomous")
    result = start(rt, "Open the issue")
    assert result.status == "completed" and result.approval is None
    assert [i["title"] for i in github.repos[REPO].items.values()] == ["Tests fail on Python 3.13"]


def test_the_kill_switch_denies_github_writes(github: FakeGitHub, store: DocStore) -> None:
    model = ScriptedModel([calls_turn(call("github_issue_create", ISSUE)), text_turn("Writes are disabled.")])
    rt = runtime(store, model, github, trust="autonomous", side_effects_enabled=False)
    start(rt, "Open the issue")
    assert github.requests == []


def test_bad_arguments_fail_the_run_before_any_request(github: FakeGitHub, store: DocStore) -> None:
    model = ScriptedModel([calls_turn(call("github_issue_create", {**ISSUE, "repo": "hello-world"}))])
    rt = runtime(store, model, github, trust="autonomous")
    result = start(rt, "Open the issue")
    assert result.status == "failed" and github.requests == []
    (action,) = rt.runs.list_actions(result.run_id)
    assert action.status == "failed" and "is not a GitHub repository: use owner/name" in (action.error or "")


def test_an_unknown_repository_is_told_to_the_model(github: FakeGitHub, store: DocStore) -> None:
    model = ScriptedModel([calls_turn(call("github_repo_get", {"repo": "octo-org/nothing-here"})),
                           text_turn("That repository does not exist or is private.")])
    rt = runtime(store, model, github)
    result = start(rt, "Describe octo-org/nothing-here")
    assert result.status == "completed"
    told = model.requests[1].turns[-1].parts[0].function_response
    assert told is not None and told.response == {
        "error": "GitHub: repository octo-org/nothing-here was not found (or this user's token cannot see it)"}
