"""GitHub REST API adapter: the only module that imports ``github`` (PyGithub).

Repository info, file reads, issues, pull requests and comments for one user's token. Results are
plain pydantic models, bounded before they reach the model (long bodies and files are trimmed with
a note). PyGithub and HTTP errors become ours:

- 401 → :class:`ConnectorError` ``unauthorized`` (the token was revoked or expired: reconnect GitHub);
- 404 → a ``ToolError`` naming what was not found (GitHub also answers 404 for a private repository
  the token cannot see);
- 403/429 with ``x-ratelimit-remaining: 0`` or ``Retry-After`` (primary or secondary rate limit) →
  a ``ToolError`` saying so and when to try again (never waited for: a run must not block);
- other 403 → permission denied; 422 → GitHub's validation messages; 410 → disabled (issues turned off);
- 5xx and connection failures: reads are retried twice with backoff; a write is never repeated and
  its error says it may or may not have taken effect.

Everything the agent creates carries a hidden marker derived from the action id
(:func:`marker`), so a reconciliation after a crash can find it (:meth:`GitHubClient.find_marked`).

```python
with GitHubClient(token, base_url=None) as gh:
    repo = gh.repository("octo/hello")
    issue = gh.create_issue("octo/hello", title="Bug", body="Steps..." + "\\n\\n" + marker("act_1"))
```
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from itertools import islice
from typing import Any, Literal

import requests
from github import Auth, Github, GithubException
from github.ContentFile import ContentFile
from github.Issue import Issue
from github.IssueComment import IssueComment
from github.PullRequest import PullRequest
from github.Repository import Repository
from pydantic import BaseModel, Field
from urllib3.util.retry import Retry

from shared.connectors.credentials import ConnectorError
from shared.errors import ToolError

DEFAULT_BASE_URL = "https://api.github.com"
SERVICE = "GitHub"
MAX_BODY_CHARS = 8000
MAX_COMMENT_CHARS = 2000
MAX_COMMENTS = 20
MAX_LIST = 50
MAX_SCAN = 300
MAX_FILE_CHARS = 16_000
MAX_DIRECTORY_ENTRIES = 200
MARKER_PREFIX = "agent-runtime:action="
_MARKER = re.compile(r"\s*<!--\s*agent-runtime:action=([A-Za-z0-9_-]{1,128})\s*-->\s*")
_RETRYABLE_5XX = (500, 502, 503, 504)

IssueState = Literal["open", "closed", "all"]
CloseReason = Literal["completed", "not_planned"]


def marker(action_id: str) -> str:
    """The hidden HTML comment every creation carries: ``<!-- agent-runtime:action=act_... -->``.
    GitHub renders Markdown, so it is invisible on the page but kept in the stored body."""
    return f"<!-- {MARKER_PREFIX}{action_id} -->"


def with_marker(body: str, action_id: str) -> str:
    """``body`` followed by the action's marker (a blank line apart; never added twice)."""
    text = body.rstrip()
    tag = marker(action_id)
    if tag in text:
        return text
    return f"{text}\n\n{tag}" if text else tag


def split_marker(body: str | None) -> tuple[str, str | None]:
    """The body without the agent's marker, and the action id the marker names (if any)."""
    text = body or ""
    found = _MARKER.search(text)
    if found is None:
        return text, None
    return (text[:found.start()] + text[found.end():]).strip(), found.group(1)


# ---- results -------------------------------------------------------------------------------------

class RepoInfo(BaseModel):
    full_name: str
    description: str = ""
    private: bool = False
    default_branch: str = ""
    html_url: str = ""
    language: str | None = None
    topics: list[str] = Field(default_factory=list)
    stars: int = 0
    forks: int = 0
    open_issues: int = 0
    archived: bool = False
    pushed_at: str | None = None


class FileContent(BaseModel):
    path: str
    ref: str | None = None
    sha: str = ""
    size: int = 0
    text: str = ""
    start_line: int = 1
    end_line: int = 0
    total_lines: int = 0
    notes: list[str] = Field(default_factory=list)


class DirectoryEntry(BaseModel):
    name: str
    path: str
    type: str
    size: int = 0


class DirectoryListing(BaseModel):
    path: str
    ref: str | None = None
    entries: list[DirectoryEntry]
    more: bool = False


class CommentView(BaseModel):
    id: int
    author: str = ""
    created_at: str | None = None
    body: str = ""
    html_url: str = ""
    agent_action: str | None = None
    """The action id of the agent's marker, when the agent wrote this comment."""
    truncated: bool = False


class IssueView(BaseModel):
    number: int
    title: str
    state: str
    state_reason: str | None = None
    author: str = ""
    body: str = ""
    labels: list[str] = Field(default_factory=list)
    assignees: list[str] = Field(default_factory=list)
    comments_count: int = 0
    is_pull_request: bool = False
    created_at: str | None = None
    updated_at: str | None = None
    closed_at: str | None = None
    html_url: str = ""
    agent_action: str | None = None
    comments: list[CommentView] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


class IssueList(BaseModel):
    issues: list[IssueView]
    more: bool = False
    note: str | None = None


class PullView(BaseModel):
    number: int
    title: str
    state: str
    merged: bool = False
    draft: bool = False
    author: str = ""
    body: str = ""
    head: str = ""
    base: str = ""
    mergeable: bool | None = None
    commits: int | None = None
    additions: int | None = None
    deletions: int | None = None
    changed_files: int | None = None
    labels: list[str] = Field(default_factory=list)
    created_at: str | None = None
    updated_at: str | None = None
    closed_at: str | None = None
    merged_at: str | None = None
    html_url: str = ""
    agent_action: str | None = None
    notes: list[str] = Field(default_factory=list)


class MarkedItem(BaseModel):
    """Something the agent created, found by its marker (reconciliation)."""

    kind: Literal["issue", "pull_request", "comment"]
    number: int | None = None
    """Issue or pull request number (for a comment: the issue or pull request it is on)."""
    id: int | None = None
    html_url: str = ""


# ---- helpers -------------------------------------------------------------------------------------

def _trim(text: str, limit: int) -> tuple[str, str | None]:
    if len(text) <= limit:
        return text, None
    return text[:limit] + f"… [trimmed: {len(text)} characters in all]", f"trimmed to {limit} characters"


def _when(value: datetime | None) -> str | None:
    if value is None:
        return None
    stamp = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    return stamp.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _login(user: Any) -> str:
    return str(getattr(user, "login", "") or "") if user is not None else ""


def _header(headers: dict[str, str] | None, name: str) -> str | None:
    for key, value in (headers or {}).items():
        if key.lower() == name:
            return str(value)
    return None


def _validation_details(data: Any) -> str:
    """GitHub's 422 body as one line: its message and each error's message or code."""
    if not isinstance(data, dict):
        return ""
    parts: list[str] = []
    for err in data.get("errors") or []:
        if isinstance(err, dict):
            text = err.get("message") or " ".join(str(err.get(k)) for k in ("resource", "field", "code")
                                                  if err.get(k))
            parts.append(str(text))
        else:
            parts.append(str(err))
    detail = "; ".join(p for p in parts if p)
    message = str(data.get("message") or "")
    return f"{message}: {detail}" if detail and message else detail or message


def _rate_limit_message(status: int, headers: dict[str, str] | None, data: Any) -> str | None:
    """The user-facing text for a rate-limited answer; ``None`` when the answer is not one."""
    remaining = _header(headers, "x-ratelimit-remaining")
    retry_after = _header(headers, "retry-after")
    message = str(data.get("message") or "") if isinstance(data, dict) else ""
    secondary = "secondary rate limit" in message.lower()
    if status == 429 or secondary or remaining == "0" or (status == 403 and retry_after is not None) \
            or message.lower().startswith("api rate limit exceeded"):
        when = ""
        reset = _header(headers, "x-ratelimit-reset")
        if retry_after is not None and retry_after.strip().isdigit():
            when = f"; try again in {int(retry_after)} seconds"
        elif reset is not None and reset.strip().isdigit():
            at = datetime.fromtimestamp(int(reset), UTC)
            when = f"; the limit resets at {at:%H:%M} UTC"
        kind = "secondary rate limit (too many requests at once)" if secondary else "rate limit"
        return f"{SERVICE} {kind} reached for this user's token{when}"
    return None


class GitHubClient:
    """The GitHub REST API for one token.

    Args:
        token: The user's token (sent as ``Authorization: Bearer``).
        base_url: API root (default ``https://api.github.com``; a local fake in tests).
        timeout_s: Socket timeout of each request (the tools pass what is left of the caller's time).
        read_retries: Retries of a read after a 5xx or a connection failure (writes: none).
        backoff_s: urllib3's backoff factor between read retries (the first retry is immediate,
            the second waits ``2 * backoff_s``).
    """

    def __init__(self, token: str, *, base_url: str | None = None, timeout_s: float = 30.0,
                 read_retries: int = 2, backoff_s: float = 0.25) -> None:
        retry = Retry(total=read_retries, connect=read_retries, read=0, status=read_retries,
                      status_forcelist=_RETRYABLE_5XX, allowed_methods=frozenset({"GET"}),
                      backoff_factor=backoff_s, raise_on_status=False, respect_retry_after_header=False)
        # No client-side throttling (PyGithub sleeps 0.25 s between requests and 1 s between writes
        # by default): a tool call makes one or two requests; rate limits are reported, not awaited.
        self._gh = Github(auth=Auth.Token(token), base_url=(base_url or DEFAULT_BASE_URL).rstrip("/"),
                          timeout=max(1, math.ceil(timeout_s)), retry=retry, per_page=MAX_LIST,
                          seconds_between_requests=None, seconds_between_writes=None, lazy=True)

    def close(self) -> None:
        self._gh.close()

    def __enter__(self) -> GitHubClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- errors ------------------------------------------------------------------------------------
    @contextmanager
    def _calling(self, what: str, *, write: bool = False) -> Iterator[None]:
        """Map PyGithub and transport errors of the block to ours. ``what`` names the object (404)."""
        try:
            yield
        except GithubException as exc:
            raise _mapped(exc, what, write) from None
        except requests.exceptions.Timeout:
            hint = "; it may or may not have taken effect, check before retrying" if write else ""
            raise ToolError(f"{SERVICE} did not answer in time{hint}") from None
        except requests.exceptions.RequestException as exc:
            hint = "; it may or may not have taken effect, check before retrying" if write else ""
            raise ToolError(f"{SERVICE} could not be reached ({type(exc).__name__}){hint}") from None

    def _repo(self, full_name: str) -> Repository:
        return self._gh.get_repo(full_name)

    # ---- reads -------------------------------------------------------------------------------------
    def repository(self, full_name: str) -> RepoInfo:
        with self._calling(f"repository {full_name}"):
            repo = self._gh.get_repo(full_name)  # lazy: the first attribute read fetches it, once
            return RepoInfo(full_name=repo.full_name, description=repo.description or "", private=repo.private,
                            default_branch=repo.default_branch or "", html_url=repo.html_url or "",
                            language=repo.language, topics=list(repo.topics or []), stars=repo.stargazers_count or 0,
                            forks=repo.forks_count or 0, open_issues=repo.open_issues_count or 0,
                            archived=bool(repo.archived), pushed_at=_when(repo.pushed_at))

    def read_file(self, full_name: str, path: str, *, ref: str | None = None, start_line: int = 1,
                  max_lines: int = 400) -> FileContent | DirectoryListing:
        """A text file's lines ``start_line`` .. ``start_line + max_lines - 1`` (at most 16,000
        characters), or a directory's entries."""
        where = f"{path or '/'}" + (f" at {ref}" if ref else "")
        with self._calling(f"path {where} in {full_name}"):
            found = self._repo(full_name).get_contents(path, ref=ref) if ref else \
                self._repo(full_name).get_contents(path)
            if isinstance(found, list):
                entries = [DirectoryEntry(name=c.name, path=c.path, type=c.type, size=c.size or 0)
                           for c in found[:MAX_DIRECTORY_ENTRIES]]
                return DirectoryListing(path=path, ref=ref, entries=entries,
                                        more=len(found) > MAX_DIRECTORY_ENTRIES)
            return self._file(found, path, ref, start_line, max_lines)

    def _file(self, found: ContentFile, path: str, ref: str | None, start_line: int, max_lines: int) -> FileContent:
        if found.type != "file":
            raise ToolError(f"{SERVICE}: {path} in the repository is a {found.type}, not a file")
        if found.encoding != "base64" or found.content is None:
            # The contents API leaves files over 1 MB without content (encoding "none").
            raise ToolError(f"{SERVICE}: {path} is too large to read through the API ({found.size} bytes)")
        try:
            raw = base64.b64decode(found.content)
        except (binascii.Error, ValueError):
            raise ToolError(f"{SERVICE}: {path} came back in an unreadable encoding") from None
        if b"\x00" in raw[:8000]:
            raise ToolError(f"{SERVICE}: {path} is a binary file ({found.size} bytes); only text files can be read")
        text = raw.decode("utf-8", errors="replace")
        lines = text.splitlines(keepends=True)
        first = max(1, start_line)
        count = max(1, max_lines)
        chosen = lines[first - 1:first - 1 + count]
        notes: list[str] = []
        body = "".join(chosen)
        if len(body) > MAX_FILE_CHARS:
            kept: list[str] = []
            size = 0
            for line in chosen:
                if size + len(line) > MAX_FILE_CHARS and kept:
                    break
                kept.append(line[:MAX_FILE_CHARS])
                size += len(kept[-1])
            chosen = kept
            body = "".join(chosen)
            notes.append(f"cut at {MAX_FILE_CHARS} characters")
        end = first + len(chosen) - 1 if chosen else first - 1
        if first > len(lines) and lines:
            notes.append(f"the file has only {len(lines)} lines")
        elif end < len(lines):
            notes.append(f"showing lines {first}-{end} of {len(lines)}; ask for start_line={end + 1} to read on")
        return FileContent(path=found.path or path, ref=ref, sha=found.sha or "", size=found.size or len(raw),
                           text=body, start_line=first, end_line=end, total_lines=len(lines), notes=notes)

    def issue(self, full_name: str, number: int, *, comments: int = MAX_COMMENTS) -> IssueView:
        """An issue (or a pull request seen as an issue) with its latest ``comments`` comments."""
        with self._calling(f"issue #{number} in {full_name}"):
            issue = self._repo(full_name).get_issue(number)
            view = _issue_view(issue, completed=True)
            count = issue.comments or 0
            if comments > 0 and count:
                view.comments = [_comment_view(c) for c in self._last_comments(issue, count, comments)]
                if count > len(view.comments):
                    view.notes.append(f"the issue has {count} comments; showing the last {len(view.comments)}")
            return view

    def _last_comments(self, issue: Issue, count: int, wanted: int) -> list[IssueComment]:
        """The last ``wanted`` of ``count`` comments, reading only the one or two last pages (the
        comments API lists oldest first and has no ``direction``)."""
        self._gh.per_page = wanted
        pages = issue.get_comments()
        last = (count - 1) // wanted
        listed = list(pages.get_page(last))
        if last > 0 and len(listed) < wanted:
            listed = list(pages.get_page(last - 1)) + listed
        return listed[-wanted:]

    def issues(self, full_name: str, *, state: IssueState = "open", labels: list[str] | None = None,
               limit: int = 20, include_pull_requests: bool = False) -> IssueList:
        """Issues, most recently created first (at most 50).

        The REST API lists pull requests among issues; unless they are wanted they are skipped, reading
        full pages of 100 and at most ``MAX_SCAN`` items (a note says when that bound stopped the scan).
        """
        bound = max(1, min(MAX_LIST, limit))
        scan = bound + 1 if include_pull_requests else MAX_SCAN
        with self._calling(f"repository {full_name}"):
            self._gh.per_page = bound + 1 if include_pull_requests else 100
            found = self._repo(full_name).get_issues(state=state, labels=labels) if labels else \
                self._repo(full_name).get_issues(state=state)
            views: list[IssueView] = []
            more = False
            scanned = 0
            for issue in islice(found, scan):
                scanned += 1
                if _is_pull(issue) and not include_pull_requests:
                    continue
                if len(views) == bound:
                    more = True
                    break
                view = _issue_view(issue, completed=False)
                view.body, note = _trim(view.body, 500)
                if note:
                    view.notes = ["body trimmed to 500 characters; read the issue for all of it"]
                views.append(view)
            note = None
            if not more and scanned == scan and not include_pull_requests:
                note = (f"only the {scan} most recent issues and pull requests were scanned (pull requests are "
                        "skipped); older issues may exist")
            return IssueList(issues=views, more=more, note=note)

    def pull(self, full_name: str, number: int) -> PullView:
        with self._calling(f"pull request #{number} in {full_name}"):
            return _pull_view(self._repo(full_name).get_pull(number))

    # ---- writes ------------------------------------------------------------------------------------
    def create_issue(self, full_name: str, *, title: str, body: str, labels: list[str] | None = None,
                     assignees: list[str] | None = None) -> IssueView:
        with self._calling(f"repository {full_name}", write=True):
            kwargs: dict[str, Any] = {}
            if labels:
                kwargs["labels"] = labels
            if assignees:
                kwargs["assignees"] = assignees
            return _issue_view(self._repo(full_name).create_issue(title=title, body=body, **kwargs), completed=True)

    def update_issue(self, full_name: str, number: int, *, title: str | None = None, body: str | None = None,
                     labels: list[str] | None = None, assignees: list[str] | None = None,
                     state: Literal["open", "closed"] | None = None,
                     state_reason: CloseReason | Literal["reopened"] | None = None) -> IssueView:
        changes: dict[str, Any] = {k: v for k, v in (("title", title), ("body", body), ("labels", labels),
                                                     ("assignees", assignees), ("state", state),
                                                     ("state_reason", state_reason)) if v is not None}
        if not changes:
            raise ToolError("nothing to change: give at least one field")
        with self._calling(f"issue #{number} in {full_name}", write=True):
            issue = self._repo(full_name).get_issue(number)
            issue.edit(**changes)
            return _issue_view(issue, completed=True)

    def close_issue(self, full_name: str, number: int, *, reason: CloseReason = "completed") -> IssueView:
        return self.update_issue(full_name, number, state="closed", state_reason=reason)

    def create_pull(self, full_name: str, *, title: str, head: str, base: str, body: str,
                    draft: bool = False) -> PullView:
        with self._calling(f"repository {full_name}", write=True):
            return _pull_view(self._repo(full_name).create_pull(base=base, head=head, title=title, body=body,
                                                                draft=draft))

    def update_pull(self, full_name: str, number: int, *, title: str | None = None, body: str | None = None,
                    base: str | None = None, state: Literal["open", "closed"] | None = None) -> PullView:
        changes: dict[str, Any] = {k: v for k, v in (("title", title), ("body", body), ("base", base),
                                                     ("state", state)) if v is not None}
        if not changes:
            raise ToolError("nothing to change: give at least one field")
        with self._calling(f"pull request #{number} in {full_name}", write=True):
            pull = self._repo(full_name).get_pull(number)
            pull.edit(**changes)
            return _pull_view(pull)

    def close_pull(self, full_name: str, number: int) -> PullView:
        return self.update_pull(full_name, number, state="closed")

    def comment(self, full_name: str, number: int, *, body: str) -> CommentView:
        """Comment on issue or pull request ``number`` (one conversation per number on GitHub)."""
        with self._calling(f"issue or pull request #{number} in {full_name}", write=True):
            return _comment_view(self._repo(full_name).get_issue(number).create_comment(body))

    # ---- reconciliation ----------------------------------------------------------------------------
    def find_marked(self, full_name: str, action_id: str, *, scan: int = 100) -> list[MarkedItem]:
        """What action ``action_id`` created in ``full_name``: issues, pull requests and comments whose
        body carries its marker, among the ``scan`` most recently created of each (a reconciliation
        after a crash inside a create: did it happen?)."""
        tag = marker(action_id)
        found: list[MarkedItem] = []
        with self._calling(f"repository {full_name}"):
            repo = self._repo(full_name)
            self._gh.per_page = min(100, scan)
            for issue in islice(repo.get_issues(state="all", sort="created", direction="desc"), scan):
                if tag in (issue.body or ""):
                    kind: Literal["issue", "pull_request"] = "pull_request" if _is_pull(issue) else "issue"
                    found.append(MarkedItem(kind=kind, number=issue.number, html_url=issue.html_url or ""))
            for c in islice(repo.get_issues_comments(sort="created", direction="desc"), scan):
                if tag in (c.body or ""):
                    number = _number_from_url(getattr(c, "issue_url", "") or "")
                    found.append(MarkedItem(kind="comment", id=c.id, number=number, html_url=c.html_url or ""))
        return found


def _is_pull(issue: Issue) -> bool:
    """Whether an issue of the REST API is a pull request. Read from ``html_url`` (``.../pull/N``):
    plain issues have no ``pull_request`` field, and asking PyGithub for a missing field of a listed
    issue fetches the whole issue again (one request per issue)."""
    return "/pull/" in (issue.html_url or "")


def _number_from_url(url: str) -> int | None:
    tail = url.rstrip("/").rsplit("/", 1)[-1]
    return int(tail) if tail.isdigit() else None


def _issue_view(issue: Issue, *, completed: bool) -> IssueView:
    body, action = split_marker(issue.body)
    notes: list[str] = []
    if completed:
        body, note = _trim(body, MAX_BODY_CHARS)
        if note:
            notes.append(f"body {note}")
    return IssueView(number=issue.number, title=issue.title or "", state=issue.state or "",
                     state_reason=issue.state_reason, author=_login(issue.user), body=body,
                     labels=[lb.name for lb in issue.labels], assignees=[_login(a) for a in issue.assignees],
                     comments_count=issue.comments or 0, is_pull_request=_is_pull(issue),
                     created_at=_when(issue.created_at), updated_at=_when(issue.updated_at),
                     closed_at=_when(issue.closed_at), html_url=issue.html_url or "", agent_action=action,
                     notes=notes)


def _comment_view(comment: IssueComment) -> CommentView:
    body, action = split_marker(comment.body)
    text, note = _trim(body, MAX_COMMENT_CHARS)
    return CommentView(id=comment.id, author=_login(comment.user), created_at=_when(comment.created_at), body=text,
                       html_url=comment.html_url or "", agent_action=action, truncated=note is not None)


def _pull_view(pull: PullRequest) -> PullView:
    body, action = split_marker(pull.body)
    body, note = _trim(body, MAX_BODY_CHARS)
    return PullView(number=pull.number, title=pull.title or "", state=pull.state or "", merged=bool(pull.merged),
                    draft=bool(pull.draft), author=_login(pull.user), body=body,
                    head=pull.head.ref if pull.head else "", base=pull.base.ref if pull.base else "",
                    mergeable=pull.mergeable, commits=pull.commits,
                    additions=pull.additions, deletions=pull.deletions, changed_files=pull.changed_files,
                    labels=[lb.name for lb in pull.labels], created_at=_when(pull.created_at),
                    updated_at=_when(pull.updated_at), closed_at=_when(pull.closed_at),
                    merged_at=_when(pull.merged_at), html_url=pull.html_url or "", agent_action=action,
                    notes=[f"body {note}"] if note else [])


def _mapped(exc: GithubException, what: str, write: bool) -> ToolError:
    status = int(exc.status or 0)
    data = exc.data
    message = str(data.get("message") or "") if isinstance(data, dict) else ""
    if status == 401:
        return ConnectorError(f"{SERVICE} rejected the stored token (it was revoked or has expired); ask the user "
                              "to reconnect GitHub", provider="github", reason="unauthorized")
    limited = _rate_limit_message(status, exc.headers, data) if status in (403, 429) else None
    if limited is not None:
        return ToolError(limited)
    if status == 403:
        return ToolError(f"{SERVICE} refused the request (the token lacks permission for {what}): "
                         f"{message[:200] or 'forbidden'}")
    if status == 404:
        return ToolError(f"{SERVICE}: {what} was not found (or this user's token cannot see it)")
    if status == 410:
        return ToolError(f"{SERVICE}: {what} is gone or disabled: {message[:200] or 'gone'}")
    if status == 422:
        return ToolError(f"{SERVICE} rejected the request as invalid: {_validation_details(data)[:400]}")
    if status >= 500:
        hint = "; it may or may not have taken effect, check before retrying" if write else ""
        return ToolError(f"{SERVICE} failed with a server error ({status}){hint}")
    return ToolError(f"{SERVICE} refused the request ({status}): {message[:200] or 'no details'}")
