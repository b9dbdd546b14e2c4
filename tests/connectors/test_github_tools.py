"""The GitHub tools through the registry, with a real ``Connectors`` (the token encrypted in SQLite)
against the local fake GitHub REST API: declarations, argument checks, previews, results, markers."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devfakes.github import FakeGitHub
from shared.connectors import ConnectorError, IntegrationTokens
from shared.connectors.github import marker
from shared.errors import ToolError
from shared.state.sqlite_docstore import SqliteDocStore
from shared.state.users_repo import UsersRepo
from shared.tools import github_tools
from shared.tools.context import ToolContext
from shared.tools.registry import ToolArgsError, ToolRegistry
from tests.connectors.tool_support import connected, preview, registry_fixture, run, tool

UID = "u-github"
REPO = "octo-org/hello-world"


registry = registry_fixture(github_tools)


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    with FakeGitHub() as server:
        server.add_repo(REPO, description="Hello", files={"AGENT.md": b"Run make test.\n", "src/app.py": b"x\n"},
                        branches={"feature": {"AGENT.md": b"changed\n"}})
        yield server


@pytest.fixture
def ctx(fake: FakeGitHub, tmp_path: Path) -> Iterator[ToolContext]:
    store = SqliteDocStore(str(tmp_path / "state.sqlite3"))
    conn = connected(store, UID, "github", IntegrationTokens(access_token=fake.token, scopes=["repo"]),
                     github_api_base_url=fake.base_url)
    yield ToolContext(uid=UID, run_id="run-1", action_id="act_abc123", users=UsersRepo(store), settings=conn.settings,
                      connectors=conn)
    store.close()


def test_the_tools_and_their_kinds(registry: ToolRegistry) -> None:
    assert [(t.name, t.side_effect, t.idempotent) for t in registry] == [
        ("github_repo_get", False, False), ("github_file_read", False, False), ("github_issue_get", False, False),
        ("github_issues_list", False, False), ("github_pull_get", False, False),
        ("github_issue_create", True, False), ("github_issue_update", True, True),
        ("github_issue_close", True, True), ("github_pull_create", True, False), ("github_pull_update", True, True),
        ("github_pull_close", True, True), ("github_comment_create", True, False)]
    declared = {d.name: d.parameters for d in registry.declarations()}
    assert declared["github_pull_create"]["required"] == ["repo", "title", "head", "base"]
    assert declared["github_issue_get"]["properties"]["number"] == {
        "type": "integer", "minimum": 1, "description": "The issue number."}
    assert all(d.description for d in registry.declarations())


def test_default_registry_has_them_and_building_it_loads_no_sdk() -> None:
    code = ("import sys; from shared.tools import default_registry; names = {t.name for t in default_registry()}; "
            "assert {'github_issue_create', 'web_fetch', 'google_web_search'} <= names, names; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('github', 'html2text', 'nacl', 'jwt')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[2])
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize(("given", "normalised"), [
    ("octo-org/hello-world", REPO), (" octo-org/hello-world ", REPO), ("https://github.com/octo-org/hello-world", REPO),
    ("https://github.com/octo-org/hello-world.git", REPO), ("git@github.com:octo-org/hello-world.git", REPO),
    ("https://github.com/octo-org/hello-world/tree/main/src", REPO), ("a/b.c_d-e", "a/b.c_d-e"),
])
def test_repo_names_are_normalised(registry: ToolRegistry, given: str, normalised: str) -> None:
    args: Any = tool(registry, "github_repo_get").validate({"repo": given})
    assert args.repo == normalised


@pytest.mark.parametrize(("name", "args", "problem"), [
    ("github_repo_get", {"repo": "hello-world"}, "repo: 'hello-world' is not a GitHub repository"),
    ("github_repo_get", {"repo": "octo/hello/world"}, "is not a GitHub repository"),
    ("github_repo_get", {"repo": "https://gitlab.com/octo/hello"}, "is not a GitHub repository"),
    ("github_repo_get", {"repo": "-octo/hello"}, "is not a GitHub repository"),
    ("github_repo_get", {"repo": REPO, "owner": "x"}, "owner: Extra inputs are not permitted"),
    ("github_issue_get", {"repo": REPO, "number": 0}, "number: Input should be greater than or equal to 1"),
    ("github_issue_get", {"repo": REPO, "number": "seven"}, "number: Input should be a valid integer"),
    ("github_issue_get", {"repo": REPO}, "number: Field required"),
    ("github_issue_create", {"repo": REPO, "title": "two\nlines"}, "title: must be a single line"),
    ("github_issue_create", {"repo": REPO, "title": "   "}, "title: must not be empty"),
    ("github_issue_create", {"repo": REPO, "title": "t" * 257}, "title: String should have at most 256"),
    ("github_issue_create", {"repo": REPO, "title": "x", "assignees": ["not a login"]}, "is not a GitHub user"),
    ("github_issue_create", {"repo": REPO, "title": "x", "labels": ["a,b"]}, "without commas"),
    ("github_issue_close", {"repo": REPO, "number": 1, "reason": "duplicate"}, "reason: Input should be"),
    ("github_pull_create", {"repo": REPO, "title": "x", "head": "bad..branch", "base": "main"},
     "head: 'bad..branch' is not a valid branch name"),
    ("github_pull_create", {"repo": REPO, "title": "x", "head": "feature branch", "base": "main"},
     "is not a valid branch name"),
    ("github_file_read", {"repo": REPO, "path": "../../etc/passwd"}, "is not a path inside the repository"),
    ("github_comment_create", {"repo": REPO, "number": 1, "body": "  "}, "body: String should have at least 1"),
])
def test_bad_arguments_are_refused_before_any_request(registry: ToolRegistry, fake: FakeGitHub, name: str,
                                                      args: dict[str, Any], problem: str) -> None:
    with pytest.raises(ToolArgsError) as info:
        tool(registry, name).validate(args)
    assert problem in str(info.value)
    assert fake.requests == []


def test_previews_say_what_will_happen_in_words(registry: ToolRegistry) -> None:
    assert preview(registry, "github_issue_create", {
        "repo": "https://github.com/octo-org/hello-world", "title": "Crash on start", "labels": ["bug", "p1"],
        "assignees": ["@alice"], "body": "When I run it\n\nit crashes with a stack trace " + "x" * 300}) == (
        "Create a GitHub issue in octo-org/hello-world\nTitle: \"Crash on start\"\nLabels: bug, p1\n"
        "Assignees: alice (GitHub notifies them)\nBody: When I run it it crashes with a stack trace "
        + "x" * 196 + " …")  # the first 240 characters, on one line
    assert preview(registry, "github_issue_create", {"repo": REPO, "title": "Empty"}) == (
        f'Create a GitHub issue in {REPO}\nTitle: "Empty"\nBody: (empty)')
    assert preview(registry, "github_issue_update", {"repo": REPO, "number": 4, "title": "New", "labels": [],
                                                     "state": "open"}) == (
        f'Update GitHub issue {REPO}#4 (only the fields below change)\nTitle: "New"\n'
        "Labels (replacing the current ones): none\nState: reopen the issue")
    assert preview(registry, "github_issue_update", {"repo": REPO, "number": 4}).endswith(
        "(no changes given: the update will be refused)")
    assert preview(registry, "github_issue_close", {"repo": REPO, "number": 4}) == (
        f"Close GitHub issue {REPO}#4 as completed")
    assert preview(registry, "github_issue_close", {"repo": REPO, "number": 4, "reason": "not_planned"}) == (
        f"Close GitHub issue {REPO}#4 as not planned")
    assert preview(registry, "github_pull_create", {"repo": REPO, "title": "Fix", "head": "fix-1", "base": "main",
                                                    "draft": True, "body": "Fixes #4"}) == (
        f'Open a draft pull request in {REPO}: merge branch fix-1 into main\nTitle: "Fix"\nBody: Fixes #4')
    assert preview(registry, "github_pull_update", {"repo": REPO, "number": 5, "base": "develop"}) == (
        f"Update pull request {REPO}#5 (only the fields below change)\n"
        "Base branch: develop (the pull request will merge into it instead)")
    assert preview(registry, "github_pull_close", {"repo": REPO, "number": 5}) == (
        f"Close pull request {REPO}#5 without merging it (its branch is kept)")
    assert preview(registry, "github_comment_create", {"repo": REPO, "number": 5, "body": "LGTM,\nthanks!"}) == (
        f"Comment on GitHub issue or pull request {REPO}#5 (visible to everyone who can see the repository)\n"
        "LGTM, thanks!")


def test_reads(registry: ToolRegistry, fake: FakeGitHub, ctx: ToolContext) -> None:
    assert run(registry, "github_repo_get", ctx, {"repo": REPO}) == {
        "repo": REPO, "description": "Hello", "private": False, "defaultBranch": "main", "language": "Python",
        "stars": 7, "forks": 2, "openIssues": 0, "pushedAt": "2026-01-05T10:00:00Z", "url": f"https://github.com/{REPO}"}
    agent_md = run(registry, "github_file_read", ctx, {"repo": REPO, "path": "/AGENT.md"})
    assert (agent_md["type"], agent_md["text"], agent_md["totalLines"]) == ("file", "Run make test.\n", 1)
    listing = run(registry, "github_file_read", ctx, {"repo": REPO, "path": ""})
    assert listing == {"repo": REPO, "path": "/", "type": "directory",
                       "entries": [{"name": "AGENT.md", "type": "file", "size": 15}, {"name": "src", "type": "dir"}]}
    fake.add_issue(REPO, "Bug", body="Broken\n\n" + marker("act_old"), labels=["bug"])
    fake.add_comment(REPO, 1, "me too")
    issue = run(registry, "github_issue_get", ctx, {"repo": REPO, "number": 1})
    assert (issue["title"], issue["body"], issue["createdByAgentAction"], issue["labels"]) == (
        "Bug", "Broken", "act_old", ["bug"])
    assert [c["body"] for c in issue["comments"]] == ["me too"]
    listed = run(registry, "github_issues_list", ctx, {"repo": REPO, "labels": ["bug"]})
    assert [i["number"] for i in listed["issues"]] == [1] and listed["count"] == 1 and "note" not in listed
    fake.add_pull(REPO, "Change", head="feature")
    pull = run(registry, "github_pull_get", ctx, {"repo": REPO, "number": 2})
    assert (pull["head"], pull["base"], pull["state"], pull["merged"]) == ("feature", "main", "open", False)


def test_creations_carry_the_action_marker(registry: ToolRegistry, fake: FakeGitHub, ctx: ToolContext) -> None:
    out = run(registry, "github_issue_create", ctx, {"repo": REPO, "title": "Crash", "body": "Steps"})
    assert out["created"] is True and out["issue"]["number"] == 1
    assert out["issue"]["body"] == "Steps" and out["issue"]["createdByAgentAction"] == "act_abc123"
    assert fake.item(REPO, 1)["body"] == "Steps\n\n<!-- agent-runtime:action=act_abc123 -->"
    empty = run(registry, "github_issue_create", ctx, {"repo": REPO, "title": "No body"})
    assert fake.item(REPO, empty["issue"]["number"])["body"] == "<!-- agent-runtime:action=act_abc123 -->"
    pr = run(registry, "github_pull_create", ctx, {"repo": REPO, "title": "Fix", "head": "feature", "base": "main"})
    assert fake.item(REPO, pr["pullRequest"]["number"])["body"] == marker("act_abc123")
    comment = run(registry, "github_comment_create", ctx, {"repo": REPO, "number": 1, "body": "Working on it"})
    assert comment["comment"]["body"] == "Working on it"
    assert fake.repos[REPO].comments[-1]["body"] == "Working on it\n\n" + marker("act_abc123")


def test_updates_and_closes(registry: ToolRegistry, fake: FakeGitHub, ctx: ToolContext) -> None:
    fake.add_issue(REPO, "Bug")
    fake.add_pull(REPO, "Change", head="feature")
    out = run(registry, "github_issue_update", ctx, {"repo": REPO, "number": 1, "body": "Clearer", "state": "closed"})
    assert (out["issue"]["body"], out["issue"]["state"]) == ("Clearer", "closed")
    assert fake.requests[-1].json == {"body": "Clearer", "state": "closed"}  # an update adds no marker
    reopened = run(registry, "github_issue_update", ctx, {"repo": REPO, "number": 1, "state": "open"})
    assert reopened["issue"]["state"] == "open"
    closed = run(registry, "github_issue_close", ctx, {"repo": REPO, "number": 1, "reason": "not_planned"})
    assert (closed["closed"], closed["issue"]["stateReason"]) == (True, "not_planned")
    updated = run(registry, "github_pull_update", ctx, {"repo": REPO, "number": 2, "title": "Better"})
    assert updated["pullRequest"]["title"] == "Better"
    assert run(registry, "github_pull_close", ctx, {"repo": REPO, "number": 2})["pullRequest"]["state"] == "closed"
    with pytest.raises(ToolError, match="nothing to change"):
        run(registry, "github_pull_update", ctx, {"repo": REPO, "number": 2})


def test_errors_reach_the_caller_clearly(registry: ToolRegistry, fake: FakeGitHub, ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match="repository octo-org/nope was not found"):
        run(registry, "github_repo_get", ctx, {"repo": "octo-org/nope"})
    with pytest.raises(ToolError, match="issue #3 in octo-org/hello-world was not found"):
        run(registry, "github_issue_get", ctx, {"repo": REPO, "number": 3})
    fake.revoked.add(fake.token)
    with pytest.raises(ConnectorError, match="reconnect GitHub") as info:
        run(registry, "github_issue_create", ctx, {"repo": REPO, "title": "x"})
    assert info.value.reason == "unauthorized"
    assert fake.repos[REPO].items == {}


def test_without_a_stored_token(registry: ToolRegistry, fake: FakeGitHub, ctx: ToolContext) -> None:
    other = ToolContext(uid="nobody", run_id="r", action_id="a", users=ctx.users, settings=ctx.settings,
                        connectors=ctx.connectors)
    with pytest.raises(ConnectorError, match="GitHub is not connected for this user; ask them to connect it"):
        run(registry, "github_repo_get", other, {"repo": REPO})
    no_connectors = ToolContext(uid=UID, run_id="r", action_id="a", users=ctx.users, settings=ctx.settings)
    with pytest.raises(ConnectorError, match="integrations are not available"):
        run(registry, "github_repo_get", no_connectors, {"repo": REPO})
    assert fake.requests == []


def test_no_call_starts_once_the_callers_time_is_spent(registry: ToolRegistry, fake: FakeGitHub,
                                                       ctx: ToolContext) -> None:
    spent = dataclasses.replace(ctx, deadline=time.monotonic() - 1)
    with pytest.raises(ToolError, match="GitHub: no time is left for this call"):
        run(registry, "github_issue_create", spent, {"repo": REPO, "title": "late"})
    assert fake.requests == []
