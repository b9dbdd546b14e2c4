"""The GitHub tools of seed 004's coding agent, acting as the user with their stored GitHub token.

Read-only: ``github_repo_get``, ``github_file_read``, ``github_issue_get``, ``github_issues_list``,
``github_pull_get``. Side effects (policy and approvals apply): ``github_issue_create``,
``github_issue_update``, ``github_issue_close``, ``github_pull_create``, ``github_pull_update``,
``github_pull_close``, ``github_comment_create``.

Arguments are checked when the call is planned, before any approval is asked for: ``repo`` is
``owner/name`` (a ``https://github.com/owner/name`` URL is accepted and normalised), numbers are
positive, titles a single line, branch names valid git refs. Previews say in words what will be
created or changed, never JSON, and do no I/O. Everything the agent creates (issues, pull requests,
comments) carries a hidden marker naming the action (``<!-- agent-runtime:action=act_... -->``,
see ``shared.connectors.github.marker``). Creations and comments are not idempotent (a repeat
would create a second one), so after a crash cut one off, recovery looks for its marker: found →
recorded as done, not found → run once (``docs/recovery.md``). Updates and closes set absolute
values and are idempotent. The GitHub adapter (and PyGithub) loads only when a tool runs.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel
from pydantic_core import PydanticCustomError, core_schema

from shared.connectors import require_connectors
from shared.tools.constrained import Constrained as _Constrained
from shared.tools.context import ToolContext
from shared.tools.registry import ToolRegistry

if TYPE_CHECKING:
    from shared.connectors.github import CommentView, GitHubClient, IssueView, PullView

MAX_TITLE_CHARS = 256
MAX_BODY_CHARS = 60_000  # GitHub's limit is 65,536; room for the marker
MAX_LABELS = 20
MAX_ASSIGNEES = 10
PREVIEW_BODY_CHARS = 240
GITHUB_TIMEOUT_S = 30.0

_OWNER = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})"
_NAME = r"[A-Za-z0-9._-]{1,100}"
_REPO = re.compile(rf"^({_OWNER})/({_NAME})$")
_REPO_URL = re.compile(rf"^(?:https?://(?:www\.)?github\.com/|git@github\.com:)({_OWNER})/({_NAME}?)(?:\.git)?(?:/.*)?$")
_LOGIN = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$")
_BAD_REF = re.compile(r"(\.\.|[\x00-\x20~^:?*\[\\\x7f]|@\{|//|\.lock$|^/|/$|\.$|^-)")


def _repo(value: str) -> str:
    text = value.strip()
    found = _REPO.match(text) or _REPO_URL.match(text)
    if found is None or found.group(2) in (".", ".."):
        raise PydanticCustomError("github_repo", "'{value}' is not a GitHub repository: use owner/name "
                                  "(e.g. octo-org/hello-world)", {"value": value[:100]})
    name = found.group(2).removesuffix(".git")
    return f"{found.group(1)}/{name}"


def _one_line(value: str) -> str:
    if "\n" in value or "\r" in value:
        raise PydanticCustomError("one_line", "must be a single line")
    text = value.strip()
    if not text:
        raise PydanticCustomError("empty", "must not be empty")
    return text


def _branch(value: str) -> str:
    text = value.strip()
    ref = text.split(":", 1)[1] if ":" in text and _LOGIN.match(text.split(":", 1)[0]) else text
    if not ref or len(ref) > 255 or _BAD_REF.search(ref):
        raise PydanticCustomError("git_branch", "'{value}' is not a valid branch name", {"value": value[:100]})
    return text


def _login(value: str) -> str:
    text = value.strip().lstrip("@")
    if not _LOGIN.match(text):
        raise PydanticCustomError("github_login", "'{value}' is not a GitHub user name", {"value": value[:100]})
    return text


def _label(value: str) -> str:
    text = value.strip()
    if not text or len(text) > 50 or "," in text:
        raise PydanticCustomError("github_label", "a label is 1-50 characters without commas")
    return text


def _path(value: str) -> str:
    text = value.strip().strip("/")
    if any(part in ("..", ".") for part in text.split("/")) or "\x00" in text:
        raise PydanticCustomError("repo_path", "'{value}' is not a path inside the repository", {"value": value[:100]})
    return text


class RepoName(_Constrained, str):
    schema = core_schema.no_info_after_validator_function(_repo, core_schema.str_schema(max_length=300))
    json = {"type": "string", "description": "The repository as owner/name (e.g. octo-org/hello-world)."}


class Title(_Constrained, str):
    schema = core_schema.no_info_after_validator_function(
        _one_line, core_schema.str_schema(max_length=MAX_TITLE_CHARS))
    json = {"type": "string", "minLength": 1, "maxLength": MAX_TITLE_CHARS}


class Body(_Constrained, str):
    """Markdown text; may be empty."""

    schema = core_schema.str_schema(max_length=MAX_BODY_CHARS)
    json = {"type": "string", "maxLength": MAX_BODY_CHARS}


class CommentBody(_Constrained, str):
    schema = core_schema.str_schema(min_length=1, max_length=MAX_BODY_CHARS, strip_whitespace=True)
    json = {"type": "string", "minLength": 1, "maxLength": MAX_BODY_CHARS}


class Number(_Constrained, int):
    schema = core_schema.int_schema(ge=1, le=10_000_000)
    json = {"type": "integer", "minimum": 1}


class Branch(_Constrained, str):
    schema = core_schema.no_info_after_validator_function(_branch, core_schema.str_schema(max_length=300))
    json = {"type": "string", "description": "A branch name (owner:branch for a branch of a fork)."}


class Labels(_Constrained, list[str]):
    schema = core_schema.list_schema(core_schema.no_info_after_validator_function(_label, core_schema.str_schema()),
                                     max_length=MAX_LABELS)
    json = {"type": "array", "items": {"type": "string"}, "maxItems": MAX_LABELS}


class Logins(_Constrained, list[str]):
    schema = core_schema.list_schema(core_schema.no_info_after_validator_function(_login, core_schema.str_schema()),
                                     max_length=MAX_ASSIGNEES)
    json = {"type": "array", "items": {"type": "string", "description": "A GitHub user name."},
            "maxItems": MAX_ASSIGNEES}


class RepoPath(_Constrained, str):
    schema = core_schema.no_info_after_validator_function(_path, core_schema.str_schema(max_length=1000))
    json = {"type": "string", "description": "A path inside the repository, e.g. src/app.py ('' for the root)."}


# ---- previews (no I/O) ---------------------------------------------------------------------------

def _start(text: str, limit: int = PREVIEW_BODY_CHARS) -> str:
    flat = " ".join(text.split())
    if not flat:
        return "(empty)"
    return flat if len(flat) <= limit else flat[:limit].rstrip() + " …"


def _listed(items: list[str] | None) -> str:
    return ", ".join(items) if items else "none"


def _issue_create_preview(args: BaseModel) -> str:
    a: Any = args
    lines = [f"Create a GitHub issue in {a.repo}", f'Title: "{a.title}"']
    if a.labels:
        lines.append(f"Labels: {_listed(a.labels)}")
    if a.assignees:
        lines.append(f"Assignees: {_listed(a.assignees)} (GitHub notifies them)")
    lines.append(f"Body: {_start(a.body or '')}")
    return "\n".join(lines)


def _update_preview(what: str, a: Any, more: list[str]) -> str:
    """An update's preview: ``what`` is updated, with its new title and body when given, then the
    ``more`` lines of its other fields; none at all: the update will be refused."""
    lines = [f"Update {what} {a.repo}#{a.number} (only the fields below change)"]
    if a.title is not None:
        lines.append(f'Title: "{a.title}"')
    if a.body is not None:
        lines.append(f"Body (replaces the current text): {_start(a.body)}")
    lines.extend(more)
    if len(lines) == 1:
        lines.append("(no changes given: the update will be refused)")
    return "\n".join(lines)


def _issue_update_preview(args: BaseModel) -> str:
    a: Any = args
    more = []
    if a.labels is not None:
        more.append(f"Labels (replacing the current ones): {_listed(a.labels)}")
    if a.assignees is not None:
        more.append(f"Assignees (replacing the current ones): {_listed(a.assignees)}")
    if a.state == "open":
        more.append("State: reopen the issue")
    elif a.state == "closed":
        more.append("State: close the issue as completed")
    return _update_preview("GitHub issue", a, more)


def _issue_close_preview(args: BaseModel) -> str:
    a: Any = args
    why = "as not planned" if a.reason == "not_planned" else "as completed"
    return f"Close GitHub issue {a.repo}#{a.number} {why}"


def _pull_create_preview(args: BaseModel) -> str:
    a: Any = args
    kind = "a draft pull request" if a.draft else "a pull request"
    return "\n".join([f"Open {kind} in {a.repo}: merge branch {a.head} into {a.base}", f'Title: "{a.title}"',
                      f"Body: {_start(a.body or '')}"])


def _pull_update_preview(args: BaseModel) -> str:
    a: Any = args
    base = [] if a.base is None else [f"Base branch: {a.base} (the pull request will merge into it instead)"]
    return _update_preview("pull request", a, base)


def _pull_close_preview(args: BaseModel) -> str:
    a: Any = args
    return f"Close pull request {a.repo}#{a.number} without merging it (its branch is kept)"


def _comment_preview(args: BaseModel) -> str:
    a: Any = args
    return (f"Comment on GitHub issue or pull request {a.repo}#{a.number} (visible to everyone who can see the "
            f"repository)\n{_start(a.body, 600)}")


# ---- results -------------------------------------------------------------------------------------

def _client(ctx: ToolContext) -> GitHubClient:
    return require_connectors(ctx.connectors).github(ctx.uid, timeout_s=ctx.call_budget("GitHub", GITHUB_TIMEOUT_S))


# ---- reconciliation after a crash: what carries this action's marker? ------------------------------

def _reconcile_created(ctx: ToolContext, args: BaseModel, kind: str) -> dict[str, Any] | None:
    """The result of the cut-off creation of a ``kind`` when an item carries the action's marker."""
    repo = str(args.model_dump()["repo"])
    with _client(ctx) as gh:
        item = next((i for i in gh.find_marked(repo, ctx.action_id) if i.kind == kind), None)
        if item is None:
            return None
        if kind == "issue" and item.number is not None:
            return {"created": True, "issue": _issue_out(gh.issue(repo, item.number, comments=0))}
        if kind == "pull_request" and item.number is not None:
            return {"created": True, "pullRequest": _pull_out(gh.pull(repo, item.number))}
    return {"created": True, kind: _drop_empty({"id": item.id, "number": item.number, "url": item.html_url,
                                                "createdByAgentAction": ctx.action_id})}


def _reconcile_issue(ctx: ToolContext, args: BaseModel) -> dict[str, Any] | None:
    return _reconcile_created(ctx, args, "issue")


def _reconcile_pull(ctx: ToolContext, args: BaseModel) -> dict[str, Any] | None:
    return _reconcile_created(ctx, args, "pull_request")


def _reconcile_comment(ctx: ToolContext, args: BaseModel) -> dict[str, Any] | None:
    return _reconcile_created(ctx, args, "comment")


def _drop_empty(out: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in out.items() if v not in (None, "", [], {})}


def _issue_out(issue: IssueView) -> dict[str, Any]:
    return _drop_empty({
        "number": issue.number, "title": issue.title, "state": issue.state, "stateReason": issue.state_reason,
        "author": issue.author, "labels": issue.labels, "assignees": issue.assignees, "body": issue.body,
        "commentsCount": issue.comments_count, "isPullRequest": issue.is_pull_request or None,
        "createdAt": issue.created_at, "updatedAt": issue.updated_at, "closedAt": issue.closed_at,
        "url": issue.html_url, "createdByAgentAction": issue.agent_action,
        "comments": [_comment_out(c) for c in issue.comments], "notes": issue.notes})


def _comment_out(comment: CommentView) -> dict[str, Any]:
    return _drop_empty({"id": comment.id, "author": comment.author, "createdAt": comment.created_at,
                        "body": comment.body, "url": comment.html_url, "createdByAgentAction": comment.agent_action,
                        "truncated": comment.truncated or None})


def _pull_out(pull: PullView) -> dict[str, Any]:
    return _drop_empty({
        "number": pull.number, "title": pull.title, "state": pull.state, "merged": pull.merged,
        "draft": pull.draft, "author": pull.author, "head": pull.head, "base": pull.base, "body": pull.body,
        "mergeable": pull.mergeable, "commits": pull.commits, "additions": pull.additions,
        "deletions": pull.deletions, "changedFiles": pull.changed_files, "labels": pull.labels,
        "createdAt": pull.created_at, "updatedAt": pull.updated_at, "closedAt": pull.closed_at,
        "mergedAt": pull.merged_at, "url": pull.html_url, "createdByAgentAction": pull.agent_action,
        "notes": pull.notes})


def _marked(body: str, ctx: ToolContext) -> str:
    from shared.connectors.github import with_marker

    return with_marker(body, ctx.action_id)


def register(registry: ToolRegistry) -> None:
    tool = functools.partial(registry.tool, connector="github")  # every tool here acts through it

    # ---- reads -------------------------------------------------------------------------------------
    @tool(side_effect=False)
    def github_repo_get(ctx: ToolContext, repo: RepoName) -> dict[str, Any]:
        """Get a GitHub repository's description, default branch, language, topics and counts.

        Args:
            repo: The repository as owner/name.
        """
        with _client(ctx) as gh:
            info = gh.repository(repo)
        return _drop_empty({"repo": info.full_name, "description": info.description, "private": info.private,
                            "defaultBranch": info.default_branch, "language": info.language, "topics": info.topics,
                            "stars": info.stars, "forks": info.forks, "openIssues": info.open_issues,
                            "archived": info.archived or None, "pushedAt": info.pushed_at, "url": info.html_url})

    @tool(side_effect=False)
    def github_file_read(ctx: ToolContext, repo: RepoName, path: RepoPath, ref: Branch | None = None,
                         start_line: int = 1, max_lines: int = 400) -> dict[str, Any]:
        """Read a text file from a GitHub repository (a range of lines), or list a directory.

        Args:
            repo: The repository as owner/name.
            path: Path inside the repository, e.g. src/app.py or AGENT.md; '' or a directory lists its entries.
            ref: Branch, tag or commit SHA (default: the default branch).
            start_line: First line to return (1-based).
            max_lines: How many lines to return at most (1-2000).
        """
        from shared.connectors.github import DirectoryListing

        with _client(ctx) as gh:
            found = gh.read_file(repo, path, ref=ref, start_line=max(1, start_line),
                                 max_lines=max(1, min(2000, max_lines)))
        if isinstance(found, DirectoryListing):
            out: dict[str, Any] = {"repo": repo, "path": found.path or "/", "type": "directory",
                                   "entries": [{"name": e.name, "type": e.type, **({"size": e.size} if e.type == "file"
                                                                                  else {})} for e in found.entries]}
            if found.more:
                out["note"] = f"the directory has more entries; only the first {len(found.entries)} are listed"
            return out
        return _drop_empty({"repo": repo, "path": found.path, "ref": found.ref, "type": "file", "sha": found.sha,
                            "size": found.size, "startLine": found.start_line, "endLine": found.end_line,
                            "totalLines": found.total_lines, "text": found.text, "notes": found.notes})

    @tool(side_effect=False)
    def github_issue_get(ctx: ToolContext, repo: RepoName, number: Number) -> dict[str, Any]:
        """Read a GitHub issue (or a pull request's conversation): title, state, labels, body and its latest comments.

        Args:
            repo: The repository as owner/name.
            number: The issue number.
        """
        with _client(ctx) as gh:
            return _issue_out(gh.issue(repo, number))

    @tool(side_effect=False)
    def github_issues_list(ctx: ToolContext, repo: RepoName, state: Literal["open", "closed", "all"] = "open",
                           labels: Labels | None = None, limit: int = 20,
                           include_pull_requests: bool = False) -> dict[str, Any]:
        """List a GitHub repository's issues, most recently created first.

        Args:
            repo: The repository as owner/name.
            state: open, closed or all.
            labels: Only issues carrying every one of these labels.
            limit: How many issues at most (1-50).
            include_pull_requests: Also list pull requests (GitHub counts them as issues).
        """
        with _client(ctx) as gh:
            found = gh.issues(repo, state=state, labels=labels or None, limit=limit,
                              include_pull_requests=include_pull_requests)
        out: dict[str, Any] = {"repo": repo, "issues": [_issue_out(i) for i in found.issues],
                               "count": len(found.issues)}
        if found.more:
            out["note"] = f"more issues match; only the first {len(found.issues)} are listed"
        elif found.note:
            out["note"] = found.note
        return out

    @tool(side_effect=False)
    def github_pull_get(ctx: ToolContext, repo: RepoName, number: Number) -> dict[str, Any]:
        """Read a GitHub pull request: title, state, branches, body, merge state and size.

        Args:
            repo: The repository as owner/name.
            number: The pull request number.
        """
        with _client(ctx) as gh:
            return _pull_out(gh.pull(repo, number))

    # ---- side effects ------------------------------------------------------------------------------
    @tool(side_effect=True, preview=_issue_create_preview, reconcile=_reconcile_issue)
    def github_issue_create(ctx: ToolContext, repo: RepoName, title: Title, body: Body | None = None,
                            labels: Labels | None = None, assignees: Logins | None = None) -> dict[str, Any]:
        """Create an issue in a GitHub repository.

        Args:
            repo: The repository as owner/name.
            title: The issue title, one line.
            body: The description (Markdown).
            labels: Labels to set (created on GitHub if they do not exist).
            assignees: GitHub user names to assign.
        """
        with _client(ctx) as gh:
            issue = gh.create_issue(repo, title=title, body=_marked(body or "", ctx), labels=labels,
                                    assignees=assignees)
        return {"created": True, "issue": _issue_out(issue)}

    @tool(side_effect=True, idempotent=True, preview=_issue_update_preview)
    def github_issue_update(ctx: ToolContext, repo: RepoName, number: Number, title: Title | None = None,
                            body: Body | None = None, labels: Labels | None = None,
                            assignees: Logins | None = None,
                            state: Literal["open", "closed"] | None = None) -> dict[str, Any]:
        """Change a GitHub issue; only the given fields change (labels and assignees are replaced as a whole).

        Args:
            repo: The repository as owner/name.
            number: The issue number.
            title: New title.
            body: New description, replacing the current one.
            labels: The complete new label list.
            assignees: The complete new list of assignees.
            state: open (reopen) or closed.
        """
        with _client(ctx) as gh:
            issue = gh.update_issue(repo, number, title=title, body=body, labels=labels, assignees=assignees,
                                    state=state)
        return {"updated": True, "issue": _issue_out(issue)}

    @tool(side_effect=True, idempotent=True, preview=_issue_close_preview)
    def github_issue_close(ctx: ToolContext, repo: RepoName, number: Number,
                           reason: Literal["completed", "not_planned"] = "completed") -> dict[str, Any]:
        """Close a GitHub issue.

        Args:
            repo: The repository as owner/name.
            number: The issue number.
            reason: completed (done) or not_planned (won't do, duplicate, stale).
        """
        with _client(ctx) as gh:
            issue = gh.close_issue(repo, number, reason=reason)
        return {"closed": True, "issue": _issue_out(issue)}

    @tool(side_effect=True, preview=_pull_create_preview, reconcile=_reconcile_pull)
    def github_pull_create(ctx: ToolContext, repo: RepoName, title: Title, head: Branch, base: Branch,
                           body: Body | None = None, draft: bool = False) -> dict[str, Any]:
        """Open a pull request in a GitHub repository, merging branch head into branch base.

        Args:
            repo: The repository as owner/name.
            title: The pull request title, one line.
            head: The branch with the changes (owner:branch for a fork's branch).
            base: The branch to merge into, usually the default branch.
            body: The description (Markdown).
            draft: Open it as a draft.
        """
        with _client(ctx) as gh:
            pull = gh.create_pull(repo, title=title, head=head, base=base, body=_marked(body or "", ctx),
                                  draft=draft)
        return {"created": True, "pullRequest": _pull_out(pull)}

    @tool(side_effect=True, idempotent=True, preview=_pull_update_preview)
    def github_pull_update(ctx: ToolContext, repo: RepoName, number: Number, title: Title | None = None,
                           body: Body | None = None, base: Branch | None = None) -> dict[str, Any]:
        """Change a GitHub pull request's title, description or base branch; only the given fields change.

        Args:
            repo: The repository as owner/name.
            number: The pull request number.
            title: New title.
            body: New description, replacing the current one.
            base: New base branch to merge into.
        """
        with _client(ctx) as gh:
            pull = gh.update_pull(repo, number, title=title, body=body, base=base)
        return {"updated": True, "pullRequest": _pull_out(pull)}

    @tool(side_effect=True, idempotent=True, preview=_pull_close_preview)
    def github_pull_close(ctx: ToolContext, repo: RepoName, number: Number) -> dict[str, Any]:
        """Close a GitHub pull request without merging it.

        Args:
            repo: The repository as owner/name.
            number: The pull request number.
        """
        with _client(ctx) as gh:
            pull = gh.close_pull(repo, number)
        return {"closed": True, "pullRequest": _pull_out(pull)}

    @tool(side_effect=True, preview=_comment_preview, reconcile=_reconcile_comment)
    def github_comment_create(ctx: ToolContext, repo: RepoName, number: Number, body: CommentBody) -> dict[str, Any]:
        """Comment on a GitHub issue or pull request.

        Args:
            repo: The repository as owner/name.
            number: The issue or pull request number.
            body: The comment (Markdown).
        """
        with _client(ctx) as gh:
            comment = gh.comment(repo, number, body=_marked(body, ctx))
        return {"created": True, "comment": _comment_out(comment)}


__all__ = ["Body", "Branch", "CommentBody", "Labels", "Logins", "Number", "RepoName", "RepoPath", "Title", "register"]
