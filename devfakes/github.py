"""A local fake of the GitHub REST API (v3), for the real PyGithub client.

A real HTTP server on loopback serving the endpoints the GitHub adapter uses:

- ``GET /repos/{owner}/{repo}``
- ``GET /repos/{owner}/{repo}/contents/{path}?ref=`` (files base64 with line breaks, as GitHub
  sends them; directories as lists; files over 1 MB with ``encoding: "none"``)
- ``GET|POST /repos/{owner}/{repo}/issues`` (pull requests included in the list, as on GitHub;
  ``Link`` header pagination), ``GET|PATCH /repos/{owner}/{repo}/issues/{n}``
- ``GET|POST /repos/{owner}/{repo}/issues/{n}/comments``, ``GET /repos/{owner}/{repo}/issues/comments``
- ``POST /repos/{owner}/{repo}/pulls``, ``GET|PATCH /repos/{owner}/{repo}/pulls/{n}``

with GitHub's error style (``{"message": ..., "documentation_url": ...}``): 401 ``Bad credentials``
for a missing, unknown or revoked token; 404 ``Not Found`` for unknown or hidden repositories,
numbers, paths and refs; 422 ``Validation Failed`` with ``errors`` (unknown branch, no commits
between head and base, a duplicate pull request, an unknown assignee, an empty title); and switches
for the primary rate limit (403, ``x-ratelimit-remaining: 0`` and ``x-ratelimit-reset``), the
secondary rate limit (403 with ``Retry-After``) and scripted failures (:class:`Fail`).
Issues and pull requests share one number sequence per repository. Every request is recorded.

Example::

    with FakeGitHub() as fake:
        fake.add_repo("octo/hello", files={"README.md": b"# Hello\\n"})
        client = GitHubClient(fake.token, base_url=fake.base_url)
        ...
        assert fake.requests[-1].json == {"title": "Bug", "body": "..."}
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, unquote, urlencode, urlsplit

from devfakes.loopback import JsonHandler, LoopbackServer

DOCS = "https://docs.github.com/rest"
LARGE_FILE_BYTES = 1024 * 1024


@dataclass
class Received:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    json: Any
    status: int = 0


@dataclass
class Fail:
    """A scripted answer instead of the next request's."""

    status: int = 503
    message: str = "Service Unavailable"
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Repo:
    full_name: str
    private: bool = False
    hidden: bool = False
    """Answers 404 to every request (a private repository this token cannot see)."""
    description: str = ""
    default_branch: str = "main"
    language: str | None = "Python"
    topics: list[str] = field(default_factory=list)
    branches: dict[str, dict[str, bytes]] = field(default_factory=dict)
    """branch -> path -> bytes."""
    collaborators: set[str] = field(default_factory=set)
    items: dict[int, dict[str, Any]] = field(default_factory=dict)
    """number -> issue or pull request (``kind``)."""
    comments: list[dict[str, Any]] = field(default_factory=list)
    next_number: int = 1


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _sha(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\x00" % len(data) + data).hexdigest()


class FakeGitHub(LoopbackServer):
    """The fake server; ``start()``/``close()`` or a context manager. See the module doc."""

    def __init__(self, *, token: str = "ghp_fakeGitHubToken0123456789", login: str = "agent-user") -> None:
        self.token = token
        self.login = login
        self.revoked: set[str] = set()
        self.rate_limited = False
        """Primary rate limit: every request answers 403 with ``x-ratelimit-remaining: 0``."""
        self.secondary_limited = False
        """Secondary rate limit: every request answers 403 with ``Retry-After: 60``."""
        self.repos: dict[str, Repo] = {}
        self.requests: list[Received] = []
        self._failures: deque[Fail] = deque()
        self._ids = itertools.count(1000)
        self._lock = threading.Lock()

    # lifecycle ---------------------------------------------------------------------------
    def handler_class(self) -> type[BaseHTTPRequestHandler]:
        return _handler_class(self)

    @property
    def base_url(self) -> str:
        """The API root (``http://127.0.0.1:PORT``), as ``GITHUB_API_BASE_URL``."""
        return self.root

    # scripting ---------------------------------------------------------------------------
    def add_repo(self, full_name: str, *, files: dict[str, bytes] | None = None,
                 branches: dict[str, dict[str, bytes]] | None = None, collaborators: set[str] | None = None,
                 **kwargs: Any) -> Repo:
        """A repository whose default branch holds ``files`` (more branches via ``branches``)."""
        with self._lock:
            repo = Repo(full_name=full_name, **kwargs)
            repo.branches = {repo.default_branch: dict(files or {}), **(branches or {})}
            repo.collaborators = set(collaborators or {self.login, full_name.split("/")[0]})
            self.repos[full_name] = repo
            return repo

    def add_issue(self, full_name: str, title: str, *, body: str = "", labels: list[str] | None = None,
                  state: str = "open", author: str = "octocat") -> dict[str, Any]:
        with self._lock:
            return self._new_issue(self.repos[full_name], title=title, body=body, labels=labels or [],
                                   assignees=[], author=author, state=state)

    def add_pull(self, full_name: str, title: str, *, head: str, base: str = "main", body: str = "",
                 author: str = "octocat") -> dict[str, Any]:
        with self._lock:
            return self._new_pull(self.repos[full_name], title=title, head=head, base=base, body=body,
                                  draft=False, author=author)

    def add_comment(self, full_name: str, number: int, body: str, *, author: str = "octocat") -> dict[str, Any]:
        with self._lock:
            return self._new_comment(self.repos[full_name], number, body, author)

    def fail(self, *items: Fail) -> None:
        with self._lock:
            self._failures.extend(items)

    def item(self, full_name: str, number: int) -> dict[str, Any]:
        return self.repos[full_name].items[number]

    def writes(self) -> list[Received]:
        """The requests that could change something (POST, PATCH, PUT, DELETE)."""
        return [r for r in self.requests if r.method != "GET"]

    # documents ---------------------------------------------------------------------------
    def _repo_url(self, repo: Repo) -> str:
        return f"{self.base_url}/repos/{repo.full_name}"

    def _new_issue(self, repo: Repo, *, title: str, body: str, labels: list[str], assignees: list[str],
                   author: str, state: str = "open") -> dict[str, Any]:
        number = repo.next_number
        repo.next_number += 1
        stamp = _now()
        item = {"kind": "issue", "id": next(self._ids), "number": number, "title": title, "body": body,
                "state": state, "state_reason": "completed" if state == "closed" else None, "user": author,
                "labels": list(labels), "assignees": list(assignees), "created_at": stamp, "updated_at": stamp,
                "closed_at": stamp if state == "closed" else None}
        repo.items[number] = item
        return item

    def _new_pull(self, repo: Repo, *, title: str, head: str, base: str, body: str, draft: bool,
                  author: str) -> dict[str, Any]:
        item = self._new_issue(repo, title=title, body=body, labels=[], assignees=[], author=author)
        item.update(kind="pull", head=head, base=base, draft=draft, merged=False, merged_at=None)
        return item

    def _new_comment(self, repo: Repo, number: int, body: str, author: str) -> dict[str, Any]:
        stamp = _now()
        comment = {"id": next(self._ids), "number": number, "body": body, "user": author, "created_at": stamp,
                   "updated_at": stamp}
        repo.comments.append(comment)
        return comment

    def _user(self, login: str) -> dict[str, Any]:
        return {"login": login, "id": int(hashlib.sha1(login.encode()).hexdigest()[:6], 16), "type": "User",
                "url": f"{self.base_url}/users/{login}", "html_url": f"https://github.com/{login}"}

    def _repo_doc(self, repo: Repo) -> dict[str, Any]:
        owner, name = repo.full_name.split("/")
        open_count = sum(1 for i in repo.items.values() if i["state"] == "open")
        return {"id": int(hashlib.sha1(repo.full_name.encode()).hexdigest()[:6], 16), "name": name,
                "full_name": repo.full_name, "owner": self._user(owner), "private": repo.private,
                "description": repo.description or None, "default_branch": repo.default_branch,
                "html_url": f"https://github.com/{repo.full_name}", "url": self._repo_url(repo),
                "language": repo.language, "topics": repo.topics, "stargazers_count": 7, "forks_count": 2,
                "open_issues_count": open_count, "archived": False, "pushed_at": "2026-01-05T10:00:00Z"}

    def _issue_doc(self, repo: Repo, item: dict[str, Any]) -> dict[str, Any]:
        n = item["number"]
        doc = {"id": item["id"], "node_id": f"I_{item['id']}", "number": n, "title": item["title"],
               "body": item["body"] or None, "state": item["state"], "state_reason": item["state_reason"],
               "user": self._user(item["user"]), "labels": [{"name": lb, "color": "ededed"} for lb in item["labels"]],
               "assignees": [self._user(a) for a in item["assignees"]],
               "assignee": self._user(item["assignees"][0]) if item["assignees"] else None,
               "comments": sum(1 for c in repo.comments if c["number"] == n), "created_at": item["created_at"],
               "updated_at": item["updated_at"], "closed_at": item["closed_at"],
               "url": f"{self._repo_url(repo)}/issues/{n}", "repository_url": self._repo_url(repo),
               "comments_url": f"{self._repo_url(repo)}/issues/{n}/comments",
               "html_url": f"https://github.com/{repo.full_name}/{'pull' if item['kind'] == 'pull' else 'issues'}/{n}",
               "locked": False}
        if item["kind"] == "pull":
            doc["pull_request"] = {"url": f"{self._repo_url(repo)}/pulls/{n}",
                                   "html_url": f"https://github.com/{repo.full_name}/pull/{n}",
                                   "merged_at": item["merged_at"]}
        return doc

    def _pull_doc(self, repo: Repo, item: dict[str, Any]) -> dict[str, Any]:
        n = item["number"]

        def ref(name: str) -> dict[str, Any]:
            return {"ref": name, "label": f"{repo.full_name.split('/')[0]}:{name}", "sha": _sha(name.encode()),
                    "repo": self._repo_doc(repo)}

        return {"id": item["id"], "number": n, "title": item["title"], "body": item["body"] or None,
                "state": item["state"], "draft": item["draft"], "merged": item["merged"], "mergeable": True,
                "user": self._user(item["user"]), "head": ref(item["head"]), "base": ref(item["base"]),
                "labels": [{"name": lb} for lb in item["labels"]], "commits": 1, "additions": 10, "deletions": 2,
                "changed_files": 1, "created_at": item["created_at"], "updated_at": item["updated_at"],
                "closed_at": item["closed_at"], "merged_at": item["merged_at"],
                "url": f"{self._repo_url(repo)}/pulls/{n}", "issue_url": f"{self._repo_url(repo)}/issues/{n}",
                "html_url": f"https://github.com/{repo.full_name}/pull/{n}"}

    def _comment_doc(self, repo: Repo, comment: dict[str, Any]) -> dict[str, Any]:
        n = comment["number"]
        return {"id": comment["id"], "body": comment["body"], "user": self._user(comment["user"]),
                "created_at": comment["created_at"], "updated_at": comment["updated_at"],
                "url": f"{self._repo_url(repo)}/issues/comments/{comment['id']}",
                "issue_url": f"{self._repo_url(repo)}/issues/{n}",
                "html_url": f"https://github.com/{repo.full_name}/issues/{n}#issuecomment-{comment['id']}"}

    # serving (handler threads) ----------------------------------------------------------------
    def dispatch(self, req: Received) -> tuple[int, Any, dict[str, str]]:
        with self._lock:
            self.requests.append(req)
            if self._failures:
                fail = self._failures.popleft()
                return fail.status, {"message": fail.message, "documentation_url": DOCS}, fail.headers
            auth = req.headers.get("authorization", "")
            scheme, _, token = auth.partition(" ")
            if scheme.lower() not in ("token", "bearer") or not token:
                return _error(401, "Requires authentication")
            if token != self.token or token in self.revoked:
                return _error(401, "Bad credentials")
            if self.rate_limited:
                reset = str(int(time.time()) + 1800)
                return 403, {"message": "API rate limit exceeded for user ID 1.", "documentation_url": DOCS}, {
                    "x-ratelimit-limit": "5000", "x-ratelimit-remaining": "0", "x-ratelimit-reset": reset}
            if self.secondary_limited:
                return 403, {"message": "You have exceeded a secondary rate limit. Please wait a few minutes before "
                             "you try again.", "documentation_url": DOCS}, {"retry-after": "60"}
            return self._route(req)

    def _route(self, req: Received) -> tuple[int, Any, dict[str, str]]:
        parts = [unquote(p) for p in req.path.strip("/").split("/")]
        if len(parts) < 3 or parts[0] != "repos":
            return _error(404, "Not Found")
        repo = self.repos.get(f"{parts[1]}/{parts[2]}")
        if repo is None or repo.hidden:
            return _error(404, "Not Found")
        rest, m = parts[3:], req.method
        if not rest and m == "GET":
            return 200, self._repo_doc(repo), {}
        if rest[:1] == ["contents"] and m == "GET":
            return self._contents(repo, "/".join(rest[1:]), req.query.get("ref"))
        if rest == ["issues"] and m == "GET":
            return self._list_issues(repo, req)
        if rest == ["issues"] and m == "POST":
            return self._create_issue(repo, req.json or {})
        if rest == ["issues", "comments"] and m == "GET":
            return self._list_all_comments(repo, req)
        if len(rest) >= 2 and rest[0] in ("issues", "pulls") and rest[1].isdigit():
            item = repo.items.get(int(rest[1]))
            if item is None or (rest[0] == "pulls" and item["kind"] != "pull"):
                return _error(404, "Not Found")
            if rest[0] == "issues" and len(rest) == 2:
                if m == "GET":
                    return 200, self._issue_doc(repo, item), {}
                if m == "PATCH":
                    return self._edit(repo, item, req.json or {}, pull=False)
            if rest[0] == "issues" and rest[2:] == ["comments"]:
                if m == "GET":
                    chunk, headers = self._page(req, [c for c in repo.comments if c["number"] == item["number"]])
                    return 200, [self._comment_doc(repo, c) for c in chunk], headers
                if m == "POST":
                    body = (req.json or {}).get("body")
                    if not isinstance(body, str) or not body.strip():
                        return _invalid("IssueComment", "body", "missing_field")
                    return 201, self._comment_doc(repo, self._new_comment(repo, item["number"], body, self.login)), {}
            if rest[0] == "pulls" and len(rest) == 2:
                if m == "GET":
                    return 200, self._pull_doc(repo, item), {}
                if m == "PATCH":
                    return self._edit(repo, item, req.json or {}, pull=True)
        if rest == ["pulls"] and m == "POST":
            return self._create_pull(repo, req.json or {})
        return _error(404, "Not Found")

    def _contents(self, repo: Repo, path: str, ref: str | None) -> tuple[int, Any, dict[str, str]]:
        branch = ref or repo.default_branch
        files = repo.branches.get(branch)
        if files is None:
            return _error(404, f"No commit found for the ref {branch}")
        path = path.strip("/")
        if path in files:
            data = files[path]
            doc: dict[str, Any] = {
                "type": "file", "name": path.rsplit("/", 1)[-1], "path": path, "size": len(data), "sha": _sha(data),
                "url": f"{self._repo_url(repo)}/contents/{path}?ref={branch}",
                "html_url": f"https://github.com/{repo.full_name}/blob/{branch}/{path}"}
            if len(data) > LARGE_FILE_BYTES:
                doc.update(encoding="none", content="")
            else:
                encoded = base64.b64encode(data).decode()
                doc.update(encoding="base64", content="\n".join(encoded[i:i + 60] for i in range(0, len(encoded), 60)))
            return 200, doc, {}
        prefix = f"{path}/" if path else ""
        children: dict[str, dict[str, Any]] = {}
        for name, data in files.items():
            if name.startswith(prefix):
                head, sep, _ = name[len(prefix):].partition("/")
                child = prefix + head
                children.setdefault(child, {"type": "dir" if sep else "file", "name": head, "path": child,
                                            "size": 0 if sep else len(data), "sha": _sha(child.encode()),
                                            "url": f"{self._repo_url(repo)}/contents/{child}?ref={branch}"})
        if not children:
            return _error(404, "Not Found")
        return 200, [children[k] for k in sorted(children)], {}

    def _page(self, req: Received, rows: list[Any]) -> tuple[list[Any], dict[str, str]]:
        per_page = max(1, min(100, int(req.query.get("per_page") or 30)))
        page = max(1, int(req.query.get("page") or 1))
        chunk = rows[(page - 1) * per_page:page * per_page]
        headers: dict[str, str] = {}
        if page * per_page < len(rows):
            query = {**req.query, "page": str(page + 1), "per_page": str(per_page)}
            headers["Link"] = f'<{self.base_url}{req.path}?{urlencode(query)}>; rel="next"'
        return chunk, headers

    def _list_issues(self, repo: Repo, req: Received) -> tuple[int, Any, dict[str, str]]:
        state = req.query.get("state", "open")
        wanted = [lb for lb in (req.query.get("labels") or "").split(",") if lb]
        rows = [i for i in repo.items.values() if (state == "all" or i["state"] == state)
                and all(lb in i["labels"] for lb in wanted)]
        rows.sort(key=lambda i: i["number"], reverse=req.query.get("direction", "desc") == "desc")
        chunk, headers = self._page(req, rows)
        return 200, [self._issue_doc(repo, i) for i in chunk], headers

    def _list_all_comments(self, repo: Repo, req: Received) -> tuple[int, Any, dict[str, str]]:
        rows = sorted(repo.comments, key=lambda c: c["id"], reverse=req.query.get("direction", "asc") == "desc")
        chunk, headers = self._page(req, rows)
        return 200, [self._comment_doc(repo, c) for c in chunk], headers

    def _create_issue(self, repo: Repo, body: dict[str, Any]) -> tuple[int, Any, dict[str, str]]:
        title = body.get("title")
        if not isinstance(title, str) or not title.strip():
            return _invalid("Issue", "title", "missing_field")
        assignees = list(body.get("assignees") or [])
        unknown = [a for a in assignees if a not in repo.collaborators]
        if unknown:
            return _invalid("Issue", "assignees", "invalid", value=unknown[0])
        item = self._new_issue(repo, title=title, body=str(body.get("body") or ""),
                               labels=list(body.get("labels") or []), assignees=assignees, author=self.login)
        return 201, self._issue_doc(repo, item), {}

    def _edit(self, repo: Repo, item: dict[str, Any], body: dict[str, Any], *, pull: bool
              ) -> tuple[int, Any, dict[str, str]]:
        if "state" in body and body["state"] not in ("open", "closed"):
            return _invalid("Issue", "state", "invalid", value=body["state"])
        if pull and "base" in body and body["base"] not in repo.branches:
            return _invalid("PullRequest", "base", "invalid", value=body["base"])
        unknown = [a for a in body.get("assignees") or [] if a not in repo.collaborators]
        if unknown:
            return _invalid("Issue", "assignees", "invalid", value=unknown[0])
        for key in ("title", "body", "labels", "assignees", "base"):
            if key in body:
                item[key] = body[key]
        if "state" in body and body["state"] != item["state"]:
            item["state"] = body["state"]
            item["closed_at"] = _now() if body["state"] == "closed" else None
            item["state_reason"] = body.get("state_reason") or ("completed" if body["state"] == "closed"
                                                                else "reopened")
        elif "state_reason" in body:
            item["state_reason"] = body["state_reason"]
        item["updated_at"] = _now()
        return 200, (self._pull_doc(repo, item) if pull else self._issue_doc(repo, item)), {}

    def _create_pull(self, repo: Repo, body: dict[str, Any]) -> tuple[int, Any, dict[str, str]]:
        head, base = str(body.get("head") or ""), str(body.get("base") or "")
        head_branch = head.split(":", 1)[-1]
        for name, value in (("base", base), ("head", head_branch)):
            if value not in repo.branches:
                return _invalid("PullRequest", name, "invalid", value=value)
        if head_branch == base or repo.branches[head_branch] == repo.branches[base]:
            return 422, {"message": "Validation Failed", "documentation_url": DOCS, "errors": [
                {"resource": "PullRequest", "code": "custom", "message": f"No commits between {base} and {head}"}]}, {}
        for item in repo.items.values():
            if item["kind"] == "pull" and item["state"] == "open" and item["head"] == head_branch \
                    and item["base"] == base:
                owner = repo.full_name.split("/")[0]
                return 422, {"message": "Validation Failed", "documentation_url": DOCS, "errors": [
                    {"resource": "PullRequest", "code": "custom",
                     "message": f"A pull request already exists for {owner}:{head_branch}."}]}, {}
        title = body.get("title")
        if not isinstance(title, str) or not title.strip():
            return _invalid("PullRequest", "title", "missing_field")
        item = self._new_pull(repo, title=title, head=head_branch, base=base, body=str(body.get("body") or ""),
                              draft=bool(body.get("draft")), author=self.login)
        return 201, self._pull_doc(repo, item), {}


def _error(status: int, message: str) -> tuple[int, Any, dict[str, str]]:
    return status, {"message": message, "documentation_url": DOCS, "status": str(status)}, {}


def _invalid(resource: str, field_name: str, code: str, *, value: Any = None) -> tuple[int, Any, dict[str, str]]:
    error: dict[str, Any] = {"resource": resource, "field": field_name, "code": code}
    if value is not None:
        error["value"] = value
    return 422, {"message": "Validation Failed", "errors": [error], "documentation_url": DOCS}, {}


def _handler_class(fake: FakeGitHub) -> type[BaseHTTPRequestHandler]:
    class _Handler(JsonHandler):
        do_PATCH = JsonHandler.do_GET

        def serve(self) -> None:
            raw = self.body()
            url = urlsplit(self.path)
            try:
                body = json.loads(raw) if raw else None
            except json.JSONDecodeError:
                body = {"_invalid_json": raw.decode(errors="replace")}
            req = Received(method=self.command, path=url.path,
                           query={k: v[0] for k, v in parse_qs(url.query).items()},
                           headers=self.lower_headers(), json=body)
            status, payload, headers = fake.dispatch(req)
            req.status = status
            self.answer(status, payload, headers)

    return _Handler
