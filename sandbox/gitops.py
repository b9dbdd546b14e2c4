"""Clone and push, run by the service itself, outside the jail.

The caller (the functions, with the user's stored GitHub connection) passes the authorization
header for one request; it reaches git only through ``GIT_CONFIG_*`` variables of that git
process (``http.extraHeader``), never a file, a URL, a command line or the workspace. A script
could have planted configuration in the workspace's ``.git`` (``core.fsmonitor``, hooks,
filters, alternates) to run code out here: a push therefore works on a copy of the repository
whose configuration, hooks and alternates are replaced by ours, and copies the result back.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass

from sandbox import reaper

GIT_TIMEOUT_S = 300.0
_BRANCH = re.compile(r"^(?!-)(?!.*\.\.)(?!.*//)(?!.*@\{)[A-Za-z0-9._/-]{1,200}(?<![./])$")
_AUTHOR = {"GIT_AUTHOR_NAME": "Agent Runtime", "GIT_AUTHOR_EMAIL": "agent-runtime@users.noreply.github.com",
           "GIT_COMMITTER_NAME": "Agent Runtime", "GIT_COMMITTER_EMAIL": "agent-runtime@users.noreply.github.com"}
_SAFE = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "safe.directory=*",
         "-c", "protocol.file.allow=never", "-c", "credential.helper=", "-c", "core.askPass=")


class GitFailed(RuntimeError):
    def __init__(self, message: str, *, stderr: str = "") -> None:
        super().__init__(message)
        self.stderr = stderr


@dataclass(frozen=True)
class PushResult:
    branch: str
    commit: str
    committed: bool
    """False when there was nothing new to commit (an existing commit was pushed)."""


def _env(auth_header: str | None) -> dict[str, str]:
    env = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_TERMINAL_PROMPT": "0", "LANG": "C.UTF-8", **_AUTHOR}
    if auth_header:
        env.update({"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "http.extraHeader",
                    "GIT_CONFIG_VALUE_0": auth_header})
    return env


def _git(args: list[str], *, cwd: str | None, auth_header: str | None = None,
         timeout_s: float = GIT_TIMEOUT_S) -> str:
    proc = reaper.popen(["git", *_SAFE, *args], cwd=cwd, env=_env(auth_header), stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise GitFailed(f"git {args[0]} took longer than {timeout_s:.0f} s") from None
    finally:
        reaper.release(proc)
        reaper.reap()  # a helper git started (git-remote-https) may end after git, orphaned
    stdout: str = out
    if proc.returncode != 0:
        stderr = str(err).strip()
        if auth_header:
            stderr = stderr.replace(auth_header, "***")
        raise GitFailed(f"git {args[0]} failed: {stderr[-500:]}", stderr=stderr)
    return stdout


def clone(url: str, ref: str | None, dest: str, *, auth_header: str | None, uid: int | None,
          timeout_s: float = GIT_TIMEOUT_S) -> str:
    """Clone ``url`` (at ``ref``) into the empty directory ``dest``; the checked-out commit."""
    if ref is not None and not _BRANCH.match(ref):
        raise GitFailed(f"'{ref[:100]}' is not a branch, tag or commit name")
    with tempfile.TemporaryDirectory(prefix="clone-") as tmp:
        work = os.path.join(tmp, "repo")
        args = ["clone", "--no-tags", "--single-branch", "--", url, work] if ref is None else \
            ["clone", "--no-tags", "--branch", ref, "--", url, work]
        try:
            _git(args, cwd=tmp, auth_header=auth_header, timeout_s=timeout_s)
        except GitFailed as exc:
            if ref is None or "not found in upstream" not in exc.stderr:
                raise
            _git(["clone", "--no-tags", "--", url, work], cwd=tmp, auth_header=auth_header, timeout_s=timeout_s)
            _git(["checkout", "--detach", ref], cwd=work)
        commit = _git(["rev-parse", "HEAD"], cwd=work).strip()
        for name in os.listdir(work):
            shutil.move(os.path.join(work, name), os.path.join(dest, name))
    if uid is not None:
        _chown_tree(dest, uid)
    return commit


def _chown_tree(root: str, uid: int) -> None:
    os.lchown(root, uid, uid)
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            os.lchown(os.path.join(dirpath, name), uid, uid)


def _sanitize(git_dir: str, url: str) -> None:
    for name in ("hooks", "commondir", "objects/info/alternates", "objects/info/http-alternates",
                 "info/attributes"):
        path = os.path.join(git_dir, name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        elif os.path.lexists(path):
            os.remove(path)
    with open(os.path.join(git_dir, "config"), "w") as f:
        f.write("[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tfilemode = true\n"
                f'[remote "origin"]\n\turl = {url}\n')


def push(workspace: str, url: str, branch: str, message: str, *, auth_header: str | None, uid: int | None,
         timeout_s: float = GIT_TIMEOUT_S) -> PushResult:
    """Commit every change of the workspace (if any) and push ``HEAD`` to ``branch`` at ``url``."""
    if not _BRANCH.match(branch):
        raise GitFailed(f"'{branch[:100]}' is not a valid branch name")
    git_dir = os.path.join(workspace, ".git")
    if os.path.islink(git_dir) or not os.path.isdir(git_dir):
        raise GitFailed("the workspace is not a git repository (create it with a repo)")
    with tempfile.TemporaryDirectory(prefix="push-") as tmp:
        work = os.path.join(tmp, "repo")
        shutil.copytree(workspace, work, symlinks=True)
        original_config = os.path.join(tmp, "config")
        if os.path.isfile(os.path.join(work, ".git", "config")):
            shutil.copyfile(os.path.join(work, ".git", "config"), original_config)
        _sanitize(os.path.join(work, ".git"), url)
        _git(["add", "-A"], cwd=work)
        committed = bool(_git(["status", "--porcelain"], cwd=work).strip())
        if committed:
            _git(["commit", "--no-verify", "--no-gpg-sign", "-m", message], cwd=work)
        commit = _git(["rev-parse", "HEAD"], cwd=work).strip()
        _git(["push", "--no-verify", "origin", f"HEAD:refs/heads/{branch}"], cwd=work,
             auth_header=auth_header, timeout_s=timeout_s)
        if os.path.isfile(original_config):
            shutil.copyfile(original_config, os.path.join(work, ".git", "config"))
        # The new commit (objects, refs, index) goes back into the workspace; hooks stay removed.
        shutil.rmtree(git_dir)
        shutil.copytree(os.path.join(work, ".git"), git_dir, symlinks=True)
    if uid is not None:
        _chown_tree(git_dir, uid)
    return PushResult(branch=branch, commit=commit, committed=committed)
