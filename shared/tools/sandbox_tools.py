"""The workspace tools of seed 004's coding agent (docs/workspaces.md): scripts run in the sandbox
service, never in this process.

Side effects (policy, approvals bound to the arguments, audit and the kill switch apply):
``container_create``, ``container_exec``, ``container_destroy``, ``container_cleanup_group``,
``container_git_push``, ``run_shell_command``. Read-only: ``container_read_file``,
``container_source_files``, ``container_list``.

A script is not idempotent: a crash while it runs leaves the action ``unknown`` and it is never run
again by a resume (``idempotent=False``, no reconciliation). ``container_create`` derives the
workspace id from the action id, so its repeat finds the same workspace (idempotent), and
destroying twice is harmless. Previews show the exact script. A script's time is ``timeoutS`` (default
120 s, at most 600) and never more than the caller's time left. Registered only when
``SANDBOX_URL`` is set.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel
from pydantic_core import PydanticCustomError, core_schema

from shared.errors import DomainError, ToolError
from shared.tools.constrained import Constrained as _Constrained
from shared.tools.context import ToolContext
from shared.tools.registry import ToolRegistry

if TYPE_CHECKING:
    from shared.connectors.sandbox import ExecResult
    from shared.workspaces import Workspaces

DEFAULT_TIMEOUT_S = 120.0
MAX_TIMEOUT_S = 600.0
CREATE_TIMEOUT_S = 300.0
PUSH_TIMEOUT_S = 300.0
READ_TIMEOUT_S = 30.0
MAX_SCRIPT_CHARS = 20_000
_ID = re.compile(r"^ws_[A-Za-z0-9_-]{6,60}$")
_GROUP = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_BRANCH = re.compile(r"^(?!-)(?!.*\.\.)(?!.*//)(?!.*@\{)[A-Za-z0-9._/-]{1,200}(?<![./])$")


def _matching(pattern: re.Pattern[str], kind: str, what: str) -> Any:
    def check(value: str) -> str:
        text = value.strip()
        if not pattern.match(text):
            raise PydanticCustomError(kind, "'{value}' is not " + what, {"value": value[:100]})
        return text

    return check


def _relative_path(value: str) -> str:
    text = value.strip()
    if not text or text.startswith("/") or "\x00" in text or ".." in text.replace("\\", "/").split("/"):
        raise PydanticCustomError("workspace_path", "'{value}' is not a path inside the workspace: give it "
                                  "relative to the workspace, without '..'", {"value": value[:100]})
    return text


class ContainerId(_Constrained, str):
    schema = core_schema.no_info_after_validator_function(
        _matching(_ID, "container_id", "a container id (ws_...)"), core_schema.str_schema(max_length=80))
    json = {"type": "string", "description": "A containerId from container_create or container_list."}


class Script(_Constrained, str):
    schema = core_schema.str_schema(min_length=1, max_length=MAX_SCRIPT_CHARS)
    json = {"type": "string", "minLength": 1, "maxLength": MAX_SCRIPT_CHARS,
            "description": "A POSIX shell script (/bin/sh -c), run in the workspace directory."}


class WorkspacePath(_Constrained, str):
    schema = core_schema.no_info_after_validator_function(_relative_path, core_schema.str_schema(max_length=4096))
    json = {"type": "string", "description": "A path relative to the workspace (no '..')."}


class Group(_Constrained, str):
    schema = core_schema.no_info_after_validator_function(
        _matching(_GROUP, "container_group", "a group name (letters, digits, . _ -)"),
        core_schema.str_schema(max_length=64))
    json = {"type": "string", "maxLength": 64}


class GitBranch(_Constrained, str):
    schema = core_schema.no_info_after_validator_function(
        _matching(_BRANCH, "git_branch", "a valid branch name"), core_schema.str_schema(max_length=200))
    json = {"type": "string", "description": "The branch to push to (created or fast-forwarded)."}


class RepoRef(_Constrained, str):
    schema = core_schema.no_info_after_validator_function(
        _matching(_BRANCH, "git_ref", "a branch, tag or commit"), core_schema.str_schema(max_length=200))
    json = {"type": "string", "description": "A branch, tag or commit to check out (default: the default branch)."}


class Timeout(_Constrained, float):
    schema = core_schema.float_schema(gt=0, le=MAX_TIMEOUT_S)
    json = {"type": "number", "exclusiveMinimum": 0, "maximum": MAX_TIMEOUT_S}


def _service(ctx: ToolContext) -> Workspaces:
    from shared.workspaces import Workspaces

    return Workspaces(ctx.users.store, ctx.settings, ctx.connectors)


def _told(exc: DomainError) -> ToolError:
    return ToolError(f"{exc.code}: {exc.message}")


def _exec_result(done: ExecResult) -> dict[str, Any]:
    out: dict[str, Any] = {"exitCode": done.exit_code, "stdout": done.stdout, "stderr": done.stderr,
                           "truncated": done.truncated, "durationMs": done.duration_ms}
    if done.timed_out:
        out["timedOut"] = True
    return out


def _preview_exec(args: BaseModel) -> str:
    timeout = getattr(args, "timeoutS", None) or DEFAULT_TIMEOUT_S
    return f"Run this script in workspace {args.containerId} (up to {timeout:g} s):\n{args.script}"  # type: ignore[attr-defined]


def _preview_shell(args: BaseModel) -> str:
    return f"Run this command in the default workspace:\n{args.command}"  # type: ignore[attr-defined]


def _preview_create(args: BaseModel) -> str:
    repo = getattr(args, "repo", None)
    ref = getattr(args, "ref", None)
    group = getattr(args, "group", None)
    what = f"a clone of {repo}" + (f" at {ref}" if ref else "") if repo else "an empty workspace"
    return f"Create {what}" + (f" in group {group}" if group else "")


def _preview_push(args: BaseModel) -> str:
    message = getattr(args, "message", None) or "(default message)"
    return (f"Commit every change in workspace {args.containerId} and push it to branch "  # type: ignore[attr-defined]
            f"{args.branch} of its repository; commit message: {message}")  # type: ignore[attr-defined]


def register(registry: ToolRegistry) -> None:
    @registry.tool(side_effect=True, idempotent=True, preview=_preview_create)
    def container_create(ctx: ToolContext, repo: str | None = None, ref: RepoRef | None = None,
                         group: Group | None = None) -> dict[str, Any]:
        """Create a workspace: an isolated directory, empty or holding a clone of a repository, in which
        scripts run without network access. Cloning uses the user's GitHub connection.

        Args:
            repo: owner/name of a GitHub repository, or an https git URL; omit for an empty workspace.
            ref: Branch, tag or commit to check out.
            group: A label to destroy several workspaces at once (container_cleanup_group).
        """
        from shared.workspaces import workspace_id_for

        try:
            record = _service(ctx).create(ctx.uid, workspace_id_for(ctx.uid, ctx.action_id), run_id=ctx.run_id,
                                          repo=repo, ref=ref, group=group,
                                          timeout_s=ctx.call_budget("the sandbox", CREATE_TIMEOUT_S))
        except DomainError as exc:
            raise _told(exc) from None
        out: dict[str, Any] = {"containerId": record.workspace_id}
        if record.repo:
            out.update(repo=record.repo, commit=record.commit)
        return out

    @registry.tool(side_effect=True, preview=_preview_exec)
    def container_exec(ctx: ToolContext, containerId: ContainerId, script: Script,
                       timeoutS: Timeout | None = None) -> dict[str, Any]:
        """Run a shell script in a workspace (no network; files outside the workspace are read-only).
        Returns the exit code and the output (each stream cut at 64 KiB, then truncated is true).

        Args:
            containerId: The workspace.
            script: The script, run with /bin/sh -c in the workspace directory.
            timeoutS: Seconds the script may run (default 120, at most 600).
        """
        budget = ctx.call_budget("the sandbox", timeoutS or DEFAULT_TIMEOUT_S)
        try:
            return _exec_result(_service(ctx).exec(ctx.uid, containerId, script, timeout_s=budget))
        except DomainError as exc:
            raise _told(exc) from None

    @registry.tool(side_effect=True, preview=_preview_shell)
    def run_shell_command(ctx: ToolContext, command: Script) -> dict[str, Any]:
        """Run a shell command in this task's default workspace (created empty on first use; no network).

        Args:
            command: The command, run with /bin/sh -c.
        """
        from shared.workspaces import workspace_id_for

        svc = _service(ctx)
        workspace_id = workspace_id_for(ctx.uid, ctx.run_id, "default")
        budget = ctx.call_budget("the sandbox", DEFAULT_TIMEOUT_S)
        try:
            record = svc.repo.get(workspace_id)
            if record is None or record.status != "live":
                svc.create(ctx.uid, workspace_id, run_id=ctx.run_id, default=True,
                           timeout_s=ctx.call_budget("the sandbox", CREATE_TIMEOUT_S))
            return {"containerId": workspace_id, **_exec_result(svc.exec(ctx.uid, workspace_id, command,
                                                                         timeout_s=budget))}
        except DomainError as exc:
            raise _told(exc) from None

    @registry.tool(side_effect=False)
    def container_read_file(ctx: ToolContext, containerId: ContainerId, path: WorkspacePath) -> dict[str, Any]:
        """Read a file of a workspace (the first 256 KiB; truncated says whether there is more).

        Args:
            containerId: The workspace.
            path: The file, relative to the workspace.
        """
        try:
            got = _service(ctx).read_file(ctx.uid, containerId, path,
                                          timeout_s=ctx.call_budget("the sandbox", READ_TIMEOUT_S))
        except DomainError as exc:
            raise _told(exc) from None
        out: dict[str, Any] = {"path": got.path, "content": got.content, "size": got.size, "truncated": got.truncated}
        if got.binary:
            out["binary"] = True
        return out

    @registry.tool(side_effect=False)
    def container_source_files(ctx: ToolContext, containerId: ContainerId, glob: str | None = None) -> dict[str, Any]:
        """The text files of a workspace with their paths, in path order, up to 512 KiB in all
        (.git and dependency folders skipped); truncated says whether files were left out.

        Args:
            containerId: The workspace.
            glob: Only paths matching this pattern (e.g. *.py or src/*).
        """
        try:
            return dict(_service(ctx).source_files(ctx.uid, containerId, glob,
                                                   timeout_s=ctx.call_budget("the sandbox", 60.0)))
        except DomainError as exc:
            raise _told(exc) from None

    @registry.tool(side_effect=False)
    def container_list(ctx: ToolContext, all: bool = False) -> dict[str, Any]:
        """The live workspaces of this task (all: every live workspace of the user).

        Args:
            all: List the user's workspaces of every task, not only this one's.
        """
        records = _service(ctx).live_of(ctx.uid)
        return {"containers": [{"containerId": r.workspace_id, "repo": r.repo, "group": r.group,
                                "default": r.default} for r in records if all or r.run_id == ctx.run_id]}

    @registry.tool(side_effect=True, idempotent=True)
    def container_destroy(ctx: ToolContext, containerId: ContainerId) -> dict[str, Any]:
        """Destroy a workspace and its files.

        Args:
            containerId: The workspace.
        """
        svc = _service(ctx)
        record = svc.repo.get(containerId)
        if record is not None and record.uid == ctx.uid and record.status == "destroyed":
            return {"containerId": containerId, "destroyed": True}  # a repeat after a crash
        try:
            svc.destroy(ctx.uid, containerId)
        except DomainError as exc:
            raise _told(exc) from None
        return {"containerId": containerId, "destroyed": True}

    @registry.tool(side_effect=True, idempotent=True)
    def container_cleanup_group(ctx: ToolContext, group: Group) -> dict[str, Any]:
        """Destroy every live workspace of a group.

        Args:
            group: The group given to container_create.
        """
        return {"group": group, "destroyed": _service(ctx).cleanup_group(ctx.uid, group)}

    @registry.tool(side_effect=True, preview=_preview_push)
    def container_git_push(ctx: ToolContext, containerId: ContainerId, branch: GitBranch,
                           message: str | None = None) -> dict[str, Any]:
        """Commit every change of a workspace's clone and push it to a branch of its repository, with
        the user's GitHub connection (then open a pull request with github_pull_create).

        Args:
            containerId: The workspace (created with a repo).
            branch: The branch to push to; never the default branch unless the user asked for it.
            message: The commit message.
        """
        text = (message or "").strip() or "Changes by the agent"
        try:
            return _service(ctx).push(ctx.uid, containerId, branch=branch, message=text[:2000],
                                      timeout_s=ctx.call_budget("the sandbox", PUSH_TIMEOUT_S))
        except DomainError as exc:
            raise _told(exc) from None
