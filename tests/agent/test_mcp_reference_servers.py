"""Issue 21: the registries' reference MCP servers in chat runs, through the real SDK and a scripted
model: ``@modelcontextprotocol/server-everything`` (npm, pinned in tests/mcp_npm/, Streamable HTTP,
its own process on a free port) and ``mcp-server-git`` (PyPI, pinned in requirements-dev.txt, stdio)
on a temporary repository. Installed by ``make test`` (``npm ci``); never skipped."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from shared.config import McpServer
from shared.connectors import mcp
from shared.loop.resume import resume_run
from shared.models.scripted import call, calls_turn, text_turn
from tests.agent.conftest import MakeRuntime
from tests.agent.mcp_servers import serving
from tests.agent.test_approvals import approve
from tests.agent.test_loop import audits, start_and_drive
from tests.agent.test_mcp_tools import answers, runtime

NPM = Path(__file__).resolve().parents[1] / "mcp_npm"
EVERYTHING = NPM / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"


@pytest.fixture(scope="module")
def everything_url() -> Iterator[str]:
    assert EVERYTHING.exists(), "run `make test` (or `cd tests/mcp_npm && npm ci`): server-everything is missing"
    with serving(["node", str(EVERYTHING), "streamableHttp"], cwd=str(NPM), port_env="PORT") as url:
        yield url


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository with one commit and one untracked file."""
    env = {**os.environ, "GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "T", "GIT_COMMITTER_EMAIL": "t@example.com"}
    path = tmp_path / "repo"
    path.mkdir()
    (path / "README.md").write_text("hello\n")
    for argv in (["init", "-q", "-b", "main"], ["add", "README.md"], ["commit", "-q", "-m", "first commit 7c1d"]):
        subprocess.run(["git", *argv], cwd=path, env=env, check=True)
    (path / "notes.txt").write_text("untracked\n")
    return path


def test_everything_lists_its_tools_with_their_annotations(everything_url: str) -> None:
    tools = {t.name: t for t in mcp.list_tools(McpServer(name="everything", url=everything_url), timeout_s=30)}
    assert {"echo", "get-sum", "toggle-simulated-logging"} <= set(tools)
    assert (tools["get-sum"].read_only, tools["get-sum"].idempotent) == (True, True)
    assert (tools["toggle-simulated-logging"].read_only, tools["toggle-simulated-logging"].idempotent) == (False, False)


def test_everything_answers_a_read_only_call_in_a_chat_run(make_runtime: MakeRuntime, everything_url: str) -> None:
    server = McpServer(name="everything", url=everything_url)
    rt, seen = runtime(make_runtime, [calls_turn(call("everything_get_sum", {"a": 2, "b": 40})),
                                      text_turn("2 + 40 = 42")], server)
    result, _ = start_and_drive(rt, "what is 2 + 40?")
    assert result.status == "completed"
    [got] = answers(seen[-1], "everything_get_sum")
    assert "42" in got["text"]
    [action] = rt.runs.list_actions(result.run_id)
    assert (action.tool, action.status, action.side_effect) == ("everything_get_sum", "completed", False)


def test_everything_side_effect_waits_for_approval_and_runs_once(make_runtime: MakeRuntime,
                                                                 everything_url: str) -> None:
    """``toggle-simulated-logging`` is annotated ``readOnlyHint: false``: a supervised user
    approves it first; the resume, in another runtime (another process) and delivered twice, runs
    it exactly once."""
    server = McpServer(name="everything", url=everything_url)
    rt, _ = runtime(make_runtime, [calls_turn(call("everything_toggle_simulated_logging", {}))], server)
    paused, _ = start_and_drive(rt, "start the simulated logging")
    assert paused.status == "awaiting_confirmation" and paused.approval is not None
    assert "toggle-simulated-logging on MCP server everything" in paused.approval.preview
    approve(rt, paused.approval.id)

    other, seen = runtime(make_runtime, [text_turn("Logging started.")], server)  # the resuming process
    other.store = rt.store
    assert resume_run(other.services, paused.run_id) == "resumed"
    assert resume_run(other.services, paused.run_id) == "terminal"  # a redelivery runs nothing again
    snap = other.runs.get_run(paused.run_id)
    assert snap is not None and snap.run.status == "completed"
    [action] = other.runs.list_actions(paused.run_id)
    assert (action.status, action.side_effect, action.attempts) == ("completed", True, 1)
    [answer] = answers(seen[-1], "everything_toggle_simulated_logging")
    assert answer["text"].startswith("Started simulated, random-leveled logging")
    kinds = [a["kind"] for a in audits(rt) if a.get("tool") == "everything_toggle_simulated_logging"]
    assert "approval_requested" in kinds and "approval_decided" in kinds


def test_git_status_and_log_in_a_chat_run(make_runtime: MakeRuntime, repo: Path) -> None:
    git = McpServer(name="git", command=(sys.executable, "-m", "mcp_server_git", "--repository", str(repo)))
    tools = {t.name: t for t in mcp.list_tools(git, timeout_s=30)}
    assert {"git_status", "git_log"} <= set(tools)
    rt, seen = runtime(make_runtime, [calls_turn(call("git_git_status", {"repo_path": str(repo)}),
                                                 call("git_git_log", {"repo_path": str(repo), "max_count": 5})),
                                      text_turn("One commit; notes.txt is untracked.")], git,
                       mcp_timeout_s=30.0, trust="autonomous")
    result, _ = start_and_drive(rt, "what is the state of the repository?")
    assert result.status == "completed"
    [status] = answers(seen[-1], "git_git_status")
    [log] = answers(seen[-1], "git_git_log")
    assert "notes.txt" in status["text"] and "first commit 7c1d" in log["text"]
    by_tool = {a.tool: a for a in rt.runs.list_actions(result.run_id)}
    assert {t: (a.status, a.side_effect) for t, a in by_tool.items()} == {
        "git_git_status": ("completed", tools["git_status"].read_only is not True),
        "git_git_log": ("completed", tools["git_log"].read_only is not True)}
