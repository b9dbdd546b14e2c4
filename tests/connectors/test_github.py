"""The GitHub adapter (real PyGithub) against the local fake GitHub REST API: every operation,
the exact requests it sends, bounds, the agent's marker, and each error mapping."""

from __future__ import annotations

import base64
import socket
from collections.abc import Iterator

import pytest

from devfakes.github import LARGE_FILE_BYTES, Fail, FakeGitHub
from shared.connectors import ConnectorError
from shared.connectors.github import (
    DirectoryListing,
    FileContent,
    GitHubClient,
    marker,
    split_marker,
    with_marker,
)
from shared.errors import ToolError

REPO = "octo-org/hello-world"
README = "".join(f"line {i}\n" for i in range(1, 1001)).encode()


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    with FakeGitHub() as server:
        server.add_repo(REPO, description="Hello", topics=["demo"], files={
            "README.md": README, "src/app.py": b"print('hi')\n", "src/lib/util.py": b"x = 1\n",
            "logo.png": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "data/big.csv": b"a,b\n" * (LARGE_FILE_BYTES // 4 + 1),
            "AGENT.md": "Use ruff. Ünïcode ✓\n".encode()},
            branches={"feature": {"README.md": b"changed\n"}})
        server.repos[REPO].branches["same"] = dict(server.repos[REPO].branches["main"])
        yield server


@pytest.fixture
def gh(fake: FakeGitHub) -> Iterator[GitHubClient]:
    with GitHubClient(fake.token, base_url=fake.base_url, backoff_s=0.01) as client:
        yield client


# ---- the marker ------------------------------------------------------------------------------------

def test_marker_is_appended_once_and_found_again() -> None:
    body = with_marker("Steps to reproduce", "act_42")
    assert body == "Steps to reproduce\n\n<!-- agent-runtime:action=act_42 -->"
    assert with_marker(body, "act_42") == body
    assert with_marker("", "act_1") == marker("act_1") == "<!-- agent-runtime:action=act_1 -->"
    assert split_marker(body) == ("Steps to reproduce", "act_42")
    assert split_marker("no marker here") == ("no marker here", None)
    assert split_marker(None) == ("", None)


# ---- reads -------------------------------------------------------------------------------------------

def test_repository(fake: FakeGitHub, gh: GitHubClient) -> None:
    fake.add_issue(REPO, "open one")
    info = gh.repository(REPO)
    assert (info.full_name, info.description, info.default_branch, info.topics, info.open_issues) == (
        REPO, "Hello", "main", ["demo"], 1)
    assert info.pushed_at == "2026-01-05T10:00:00Z" and info.html_url == f"https://github.com/{REPO}"
    [req] = fake.requests
    assert (req.method, req.path) == ("GET", f"/repos/{REPO}")
    assert req.headers["authorization"].split(" ", 1)[1] == fake.token


def test_read_file_lines_and_notes(fake: FakeGitHub, gh: GitHubClient) -> None:
    first = gh.read_file(REPO, "README.md", max_lines=3)
    assert isinstance(first, FileContent)
    assert (first.text, first.start_line, first.end_line, first.total_lines) == ("line 1\nline 2\nline 3\n", 1, 3, 1000)
    assert first.notes == ["showing lines 1-3 of 1000; ask for start_line=4 to read on"]
    last = gh.read_file(REPO, "README.md", start_line=999, max_lines=10)
    assert isinstance(last, FileContent) and last.text == "line 999\nline 1000\n" and last.notes == []
    past = gh.read_file(REPO, "README.md", start_line=2000)
    assert isinstance(past, FileContent) and past.text == "" and past.notes == ["the file has only 1000 lines"]
    utf8 = gh.read_file(REPO, "AGENT.md")
    assert isinstance(utf8, FileContent) and utf8.text == "Use ruff. Ünïcode ✓\n"
    on_branch = gh.read_file(REPO, "README.md", ref="feature")
    assert isinstance(on_branch, FileContent) and on_branch.text == "changed\n" and on_branch.ref == "feature"
    assert fake.requests[-1].query == {"ref": "feature"}


def test_read_file_caps_the_characters(fake: FakeGitHub) -> None:
    fake.repos[REPO].branches["main"]["wide.txt"] = ("x" * 9000 + "\n").encode() * 5
    with GitHubClient(fake.token, base_url=fake.base_url) as gh:
        found = gh.read_file(REPO, "wide.txt", max_lines=5)
    assert isinstance(found, FileContent) and found.end_line == 1 and len(found.text) == 9001
    assert found.notes == ["cut at 16000 characters", "showing lines 1-1 of 5; ask for start_line=2 to read on"]


def test_read_directory(gh: GitHubClient) -> None:
    root = gh.read_file(REPO, "")
    assert isinstance(root, DirectoryListing)
    assert [(e.name, e.type) for e in root.entries] == [
        ("AGENT.md", "file"), ("README.md", "file"), ("data", "dir"), ("logo.png", "file"), ("src", "dir")]
    src = gh.read_file(REPO, "src")
    assert isinstance(src, DirectoryListing) and [e.path for e in src.entries] == ["src/app.py", "src/lib"]


def test_read_file_refusals(gh: GitHubClient) -> None:
    with pytest.raises(ToolError, match=r"logo.png is a binary file"):
        gh.read_file(REPO, "logo.png")
    with pytest.raises(ToolError, match=r"data/big.csv is too large to read through the API \(1048580 bytes\)"):
        gh.read_file(REPO, "data/big.csv")
    with pytest.raises(ToolError, match=r"^GitHub: path nope.md in octo-org/hello-world was not found \(or this"):
        gh.read_file(REPO, "nope.md")
    with pytest.raises(ToolError, match=r"path README.md at no-such-branch in octo-org/hello-world was not found"):
        gh.read_file(REPO, "README.md", ref="no-such-branch")


def test_issue_with_its_last_comments_reads_only_the_last_pages(fake: FakeGitHub, gh: GitHubClient) -> None:
    fake.add_issue(REPO, "Crash", body="It crashes\n\n" + marker("act_7"), labels=["bug"])
    for i in range(45):
        fake.add_comment(REPO, 1, f"comment {i}")
    issue = gh.issue(REPO, 1)
    assert (issue.title, issue.body, issue.agent_action, issue.labels, issue.comments_count) == (
        "Crash", "It crashes", "act_7", ["bug"], 45)
    assert [c.body for c in issue.comments] == [f"comment {i}" for i in range(25, 45)]
    assert issue.notes == ["the issue has 45 comments; showing the last 20"]
    assert [(r.path, r.query.get("page")) for r in fake.requests] == [
        (f"/repos/{REPO}/issues/1", None), (f"/repos/{REPO}/issues/1/comments", "3"),
        (f"/repos/{REPO}/issues/1/comments", "2")]


def test_issues_list_skips_pull_requests_filters_and_bounds(fake: FakeGitHub, gh: GitHubClient) -> None:
    for i in range(1, 8):
        fake.add_issue(REPO, f"issue {i}", labels=["bug"] if i % 2 else ["docs"], body="b" * 600 if i == 7 else "")
    fake.add_pull(REPO, "a change", head="feature")
    fake.add_issue(REPO, "closed one", state="closed")
    found = gh.issues(REPO, limit=3)
    assert [i.title for i in found.issues] == ["issue 7", "issue 6", "issue 5"] and found.more
    assert found.issues[0].body.endswith("[trimmed: 600 characters in all]") and found.issues[0].notes
    # Pull requests are skipped, so pages are full ones of 100.
    assert [r.query for r in fake.requests] == [{"state": "open", "per_page": "100"}]
    with_pulls = gh.issues(REPO, limit=2, include_pull_requests=True)
    assert [(i.title, i.is_pull_request) for i in with_pulls.issues] == [("a change", True), ("issue 7", False)]
    bugs = gh.issues(REPO, labels=["bug"], state="all")
    assert [i.title for i in bugs.issues] == ["issue 7", "issue 5", "issue 3", "issue 1"] and not bugs.more
    assert fake.requests[-1].query["labels"] == "bug"
    closed = gh.issues(REPO, state="closed")
    assert [i.state for i in closed.issues] == ["closed"]
    # Every listed issue came from the list pages: no request per issue.
    assert all(r.path == f"/repos/{REPO}/issues" for r in fake.requests)


def test_issues_list_follows_pages(fake: FakeGitHub, gh: GitHubClient) -> None:
    for i in range(1, 121):
        fake.add_issue(REPO, f"issue {i}")
    for i in range(150):  # the newest items are pull requests: skipped, so the scan reads on
        fake.add_pull(REPO, f"pr {i}", head=f"b{i}")
    fake.repos[REPO].branches.update({f"b{i}": {} for i in range(150)})
    found = gh.issues(REPO, limit=50)
    assert [i.title for i in found.issues] == [f"issue {n}" for n in range(120, 70, -1)] and found.more
    assert [r.query.get("page") for r in fake.requests] == [None, "2", "3"]  # 150 + 51 items
    fake.requests.clear()
    with_pulls = gh.issues(REPO, limit=3, include_pull_requests=True)
    assert [i.title for i in with_pulls.issues] == ["pr 149", "pr 148", "pr 147"] and with_pulls.more
    assert [r.query for r in fake.requests] == [{"state": "open", "per_page": "4"}]


def test_issues_list_scan_is_bounded(fake: FakeGitHub, gh: GitHubClient) -> None:
    fake.add_issue(REPO, "old issue")
    for i in range(310):
        fake.add_pull(REPO, f"pr {i}", head=f"b{i}")
    fake.repos[REPO].branches.update({f"b{i}": {} for i in range(310)})
    found = gh.issues(REPO, limit=5)
    assert found.issues == [] and not found.more
    assert found.note == ("only the 300 most recent issues and pull requests were scanned (pull requests are "
                          "skipped); older issues may exist")
    assert len(fake.requests) == 3


def test_pull(fake: FakeGitHub, gh: GitHubClient) -> None:
    fake.add_pull(REPO, "Add feature", head="feature", body="Does things")
    pull = gh.pull(REPO, 1)
    assert (pull.title, pull.head, pull.base, pull.state, pull.merged, pull.mergeable, pull.body) == (
        "Add feature", "feature", "main", "open", False, True, "Does things")
    with pytest.raises(ToolError, match="pull request #2 in octo-org/hello-world was not found"):
        gh.pull(REPO, 2)
    fake.add_issue(REPO, "plain issue")
    with pytest.raises(ToolError, match="pull request #2 in"):  # an issue is not a pull request
        gh.pull(REPO, 2)


# ---- writes ------------------------------------------------------------------------------------------

def test_create_update_close_issue(fake: FakeGitHub, gh: GitHubClient) -> None:
    created = gh.create_issue(REPO, title="Crash on start", body=with_marker("Steps", "act_1"), labels=["bug"],
                              assignees=["agent-user"])
    assert (created.number, created.title, created.body, created.agent_action, created.assignees) == (
        1, "Crash on start", "Steps", "act_1", ["agent-user"])
    assert fake.requests[-1].json == {"title": "Crash on start", "body": "Steps\n\n" + marker("act_1"),
                                      "labels": ["bug"], "assignees": ["agent-user"]}
    updated = gh.update_issue(REPO, 1, title="Crash on start (macOS)", labels=[])
    assert (updated.title, updated.labels, updated.state) == ("Crash on start (macOS)", [], "open")
    assert fake.requests[-1].method == "PATCH" and fake.requests[-1].json == {
        "title": "Crash on start (macOS)", "labels": []}
    closed = gh.close_issue(REPO, 1, reason="not_planned")
    assert (closed.state, closed.state_reason) == ("closed", "not_planned") and closed.closed_at
    assert fake.requests[-1].json == {"state": "closed", "state_reason": "not_planned"}
    with pytest.raises(ToolError, match="nothing to change"):
        gh.update_issue(REPO, 1)
    assert len(fake.writes()) == 3


def test_create_issue_refusals(fake: FakeGitHub, gh: GitHubClient) -> None:
    with pytest.raises(ToolError, match=r"^GitHub rejected the request as invalid: Validation Failed: "
                                        r"Issue assignees invalid$"):
        gh.create_issue(REPO, title="x", body="", assignees=["stranger"])
    with pytest.raises(ToolError, match="repository octo-org/missing was not found"):
        gh.create_issue("octo-org/missing", title="x", body="")
    assert fake.repos[REPO].items == {}


def test_pull_request_lifecycle_and_refusals(fake: FakeGitHub, gh: GitHubClient) -> None:
    pull = gh.create_pull(REPO, title="Change README", head="feature", base="main", body=with_marker("Why", "a2"),
                          draft=True)
    assert (pull.number, pull.head, pull.base, pull.draft, pull.body, pull.agent_action) == (
        1, "feature", "main", True, "Why", "a2")
    assert fake.requests[-1].json == {"base": "main", "head": "feature", "title": "Change README",
                                      "body": "Why\n\n" + marker("a2"), "draft": True}
    with pytest.raises(ToolError, match=r"A pull request already exists for octo-org:feature\."):
        gh.create_pull(REPO, title="again", head="feature", base="main", body="")
    with pytest.raises(ToolError, match="No commits between main and same"):
        gh.create_pull(REPO, title="empty", head="same", base="main", body="")
    with pytest.raises(ToolError, match="Validation Failed: PullRequest head invalid"):
        gh.create_pull(REPO, title="x", head="no-such-branch", base="main", body="")
    updated = gh.update_pull(REPO, 1, title="Better README", base="same")
    assert (updated.title, updated.base) == ("Better README", "same")
    with pytest.raises(ToolError, match="Validation Failed: PullRequest base invalid"):
        gh.update_pull(REPO, 1, base="nowhere")
    closed = gh.close_pull(REPO, 1)
    assert (closed.state, closed.merged) == ("closed", False)
    assert fake.requests[-1].json == {"state": "closed"}


def test_comment_and_reconciliation(fake: FakeGitHub, gh: GitHubClient) -> None:
    fake.add_issue(REPO, "Question")
    fake.add_comment(REPO, 1, "human comment")
    comment = gh.comment(REPO, 1, body=with_marker("Answer", "act_9"))
    assert (comment.body, comment.agent_action, comment.author) == ("Answer", "act_9", fake.login)
    assert fake.requests[-1].path == f"/repos/{REPO}/issues/1/comments"
    created = gh.create_issue(REPO, title="Follow-up", body=with_marker("", "act_10"))
    assert [(m.kind, m.number) for m in gh.find_marked(REPO, "act_9")] == [("comment", 1)]
    assert [(m.kind, m.number) for m in gh.find_marked(REPO, "act_10")] == [("issue", created.number)]
    assert gh.find_marked(REPO, "act_11") == []
    with pytest.raises(ToolError, match="issue or pull request #99 in octo-org/hello-world was not found"):
        gh.comment(REPO, 99, body="x")


# ---- errors ------------------------------------------------------------------------------------------

def test_revoked_and_wrong_tokens_ask_to_reconnect(fake: FakeGitHub) -> None:
    fake.revoked.add(fake.token)
    for token in (fake.token, "ghp_someone_else"):
        with GitHubClient(token, base_url=fake.base_url) as gh, pytest.raises(ConnectorError) as info:
            gh.repository(REPO)
        assert (info.value.provider, info.value.reason) == ("github", "unauthorized")
        assert str(info.value) == ("GitHub rejected the stored token (it was revoked or has expired); ask the user "
                                   "to reconnect GitHub")


def test_a_hidden_repository_is_not_found(fake: FakeGitHub, gh: GitHubClient) -> None:
    fake.add_repo("octo-org/secret", hidden=True, files={"a": b"b"})
    with pytest.raises(ToolError, match=r"repository octo-org/secret was not found \(or this user's token cannot "):
        gh.repository("octo-org/secret")


def test_rate_limits_are_reported_not_awaited(fake: FakeGitHub, gh: GitHubClient) -> None:
    fake.rate_limited = True
    with pytest.raises(ToolError, match=r"^GitHub rate limit reached for this user's token; the limit resets at "
                                        r"\d\d:\d\d UTC$"):
        gh.repository(REPO)
    fake.rate_limited, fake.secondary_limited = False, True
    with pytest.raises(ToolError, match=r"secondary rate limit \(too many requests at once\) reached for this "
                                        r"user's token; try again in 60 seconds$"):
        gh.create_issue(REPO, title="x", body="")
    fake.secondary_limited = False
    fake.fail(Fail(429, "Too Many Requests", {"retry-after": "5"}))
    with pytest.raises(ToolError, match="try again in 5 seconds"):
        gh.issues(REPO)
    assert len(fake.requests) == 3  # none retried
    fake.fail(Fail(403, "Resource not accessible by personal access token"))
    with pytest.raises(ToolError, match=r"lacks permission for repository octo-org/hello-world\): Resource not "):
        gh.create_issue(REPO, title="x", body="")


def test_reads_are_retried_after_5xx_writes_never(fake: FakeGitHub, gh: GitHubClient) -> None:
    fake.fail(Fail(502), Fail(503))
    assert gh.repository(REPO).full_name == REPO
    assert [r.status for r in fake.requests] == [502, 503, 200]
    fake.requests.clear()
    fake.fail(Fail(503), Fail(503), Fail(503))
    with pytest.raises(ToolError, match=r"^GitHub failed with a server error \(503\)$"):
        gh.repository(REPO)
    assert len(fake.requests) == 3
    fake.requests.clear()
    fake.fail(Fail(502))
    with pytest.raises(ToolError, match=r"server error \(502\); it may or may not have taken effect"):
        gh.create_issue(REPO, title="x", body="")
    assert len(fake.requests) == 1


def test_an_unreachable_api_is_a_clear_error() -> None:
    with socket.socket() as probe:  # a loopback port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with GitHubClient("ghp_x", base_url=f"http://127.0.0.1:{port}", read_retries=0) as gh, \
            pytest.raises(ToolError, match=r"^GitHub could not be reached \(ConnectionError\)$"):
        gh.repository(REPO)
    with GitHubClient("ghp_x", base_url=f"http://127.0.0.1:{port}") as gh, \
            pytest.raises(ToolError, match=r"could not be reached \(ConnectionError\); it may or may not"):
        gh.comment(REPO, 1, body="x")


def test_base64_content_with_line_breaks_decodes(fake: FakeGitHub, gh: GitHubClient) -> None:
    # GitHub wraps the base64 of a file every 60 characters (the fake does too).
    data = ("0123456789" * 50 + "\n").encode()
    assert len(base64.b64encode(data)) > 60
    fake.repos[REPO].branches["main"]["long.txt"] = data
    found = gh.read_file(REPO, "long.txt")
    assert isinstance(found, FileContent) and found.text.encode() == data and found.size == len(data)
