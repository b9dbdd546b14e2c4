"""Clone and push run outside the jail with the user's token, which never enters the workspace
or a script's environment; a real git server (``git http-backend``) checks the token."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest

from shared.connectors.sandbox import RepoSource, SandboxError
from tests.sandbox.git_server import GitServer
from tests.sandbox.support import SandboxProcess, no_zombies_within

TOKEN = "ghp_" + "s3cr3t" * 6


@pytest.fixture
def git_server(tmp_path: Path) -> Iterator[GitServer]:
    server = GitServer(tmp_path / "repos", TOKEN)
    yield server
    server.stop()


def test_clone_edit_push_without_the_token_in_the_workspace(sandbox: SandboxProcess, git_server: GitServer) -> None:
    url = git_server.seed("octo/hello", {"README.md": "hello\n", "test.sh": "#!/bin/sh\ngrep -q fixed README.md\n"})
    box = sandbox.client()
    wid = "ws_" + secrets.token_hex(8)
    created = box.create(wid, repo=RepoSource(url=url, ref="main", auth_header=git_server.auth_header()))
    assert created["created"] is True and len(created["commit"]) == 40
    assert box.exec(wid, "./test.sh", timeout_s=20).exit_code == 1
    assert box.exec(wid, "echo fixed >> README.md && ./test.sh", timeout_s=20).exit_code == 0
    # The token is nowhere a script can look: files (.git included) and environment.
    leak = box.exec(wid, f"grep -r -l '{TOKEN}' . ; grep -r -l '{TOKEN[:12]}' /proc/self/environ .git; env",
                    timeout_s=20)
    assert TOKEN not in leak.stdout and leak.stdout.count("\n") >= 1 and ".git" not in leak.stdout
    # A planted hook / fsmonitor must not run outside the jail during the push.
    box.exec(wid, "git config core.fsmonitor 'touch /tmp/pwned-fsmonitor; false'; mkdir -p .git/hooks; "
             "printf '#!/bin/sh\\ntouch /tmp/pwned-hook\\n' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit",
             timeout_s=20)
    pushed = box.push(wid, url=url, branch="agent/fix", message="Fix the README", auth_header=git_server.auth_header())
    assert pushed["committed"] is True
    assert git_server.show("octo/hello", "agent/fix", "README.md") == "hello\nfixed\n"
    assert not Path("/tmp/pwned-fsmonitor").exists() and not Path("/tmp/pwned-hook").exists()
    assert all(r["authorization"] for r in git_server.requests[-3:])
    # The workspace holds the new commit; pushing again with nothing new commits nothing.
    log = box.exec(wid, "git log -1 --format=%s", timeout_s=20)
    assert log.stdout.strip() == "Fix the README", log.stderr
    again = box.push(wid, url=url, branch="agent/fix", message="again", auth_header=git_server.auth_header())
    assert again["committed"] is False and again["commit"] == pushed["commit"]


def test_a_wrong_token_fails_the_clone_and_leaves_no_workspace(sandbox: SandboxProcess, git_server: GitServer) -> None:
    url = git_server.seed("octo/private", {"a.txt": "a\n"})
    box = sandbox.client()
    wid = "ws_" + secrets.token_hex(8)
    with pytest.raises(SandboxError) as err:
        box.create(wid, repo=RepoSource(url=url, auth_header="Authorization: Basic d3Jvbmc6d3Jvbmc="))
    assert err.value.code == "GIT_FAILED" and "d3Jvbmc6d3Jvbmc" not in str(err.value)
    with pytest.raises(SandboxError) as missing:
        box.exec(wid, "true", timeout_s=5)
    assert missing.value.code == "WORKSPACE_NOT_FOUND"
    # git's own helper (git-remote-http) may outlive the failed git: the service collects it too.
    assert no_zombies_within(sandbox.process.pid, 10.0) == []
