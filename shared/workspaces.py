"""A user's workspaces: records in the store (``shared/state/workspaces_repo.py``), files and
scripts in the sandbox service (``shared/connectors/sandbox.py``). docs/workspaces.md.

Used by the container tools, by ``GET|DELETE /api/agent/containers`` and by the sweep. Another
user's workspace is not found (404 ``WORKSPACE_NOT_FOUND``), like a missing one. The user's GitHub
token (their stored GitHub connection) goes to the sandbox only with a clone or push request, as
an ``Authorization`` header for git, and only when the repository is on ``GITHUB_GIT_BASE_URL``.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import re
import threading
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

from shared.config import Settings
from shared.connectors.sandbox import ExecResult, FileContent, RepoSource, SandboxClient, SandboxError
from shared.errors import ConfigurationError, InvalidInput, NotFound, Unavailable
from shared.responses import PageBody, ResponseBody
from shared.state.docstore import DocStore
from shared.state.pages import page_in_memory
from shared.state.record_base import now
from shared.state.runs_repo import RunsRepo
from shared.state.workspaces_repo import WorkspaceLimitReached, WorkspaceRecord, WorkspacesRepo
from shared.wire import UtcTime

log = logging.getLogger("agent_runtime.workspaces")

_OWNER = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})"
_NAME = r"[A-Za-z0-9._-]{1,100}"
OWNER_NAME = re.compile(rf"^({_OWNER})/({_NAME})$")
_clients: dict[tuple[str, str | None], SandboxClient] = {}
_clients_lock = threading.Lock()


def sandbox_client(settings: Settings) -> SandboxClient:
    """The process's client of ``SANDBOX_URL`` (one connection pool per process)."""
    if not settings.sandbox_url:
        raise ConfigurationError("SANDBOX_URL is not set: the workspace tools are not available")
    key = (settings.sandbox_url, settings.sandbox_key)
    with _clients_lock:
        client = _clients.get(key)
        if client is None:
            client = SandboxClient(settings.sandbox_url, key=settings.sandbox_key,
                                   id_token_audience=None if settings.sandbox_key else settings.sandbox_url)
            _clients[key] = client
        return client


def workspace_id_for(*parts: str) -> str:
    """A workspace id derived from what creates it (an action id; a unit's default): creating it
    again, after a crash or a repeated call, finds the same workspace."""
    return "ws_" + hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:20]


@dataclass(frozen=True)
class Remote:
    url: str
    """What git talks to (never with credentials)."""
    label: str
    """What the record keeps and the user sees: ``owner/name`` or the URL."""
    github: bool
    """On ``GITHUB_GIT_BASE_URL``: the user's GitHub token goes with git's requests."""


def remote_of(repo: str, settings: Settings) -> Remote:
    """``owner/name`` (on GitHub) or a git URL; InvalidInput otherwise."""
    text = repo.strip()
    base = settings.github_git_base_url.rstrip("/")
    found = OWNER_NAME.match(text)
    if found is not None and found.group(2) not in (".", ".."):
        name = found.group(2).removesuffix(".git")
        return Remote(url=f"{base}/{found.group(1)}/{name}.git", label=f"{found.group(1)}/{name}", github=True)
    parts = urlsplit(text)
    if parts.scheme not in ("https", "http") or not parts.hostname or parts.username or parts.password:
        raise InvalidInput(f"'{repo[:200]}' is not a repository: give owner/name or an https git URL without "
                           "credentials", code="INVALID_REPO")
    gh = urlsplit(base)
    on_github = (parts.scheme, parts.netloc) == (gh.scheme, gh.netloc)
    if parts.scheme == "http" and not on_github:
        raise InvalidInput("only https git URLs can be cloned", code="INVALID_REPO")
    label = text
    if on_github:
        path = parts.path.strip("/").removesuffix(".git")
        if OWNER_NAME.match(path):
            label = path
    return Remote(url=text, label=label, github=on_github)


def _check_public(url: str) -> None:
    """A repository URL (not on ``GITHUB_GIT_BASE_URL``, the operator's) must be at a public
    address, like a user's MCP server or a webhook: the sandbox service clones it from its own
    network, and a model may have read the URL in untrusted text (an internal HTTPS service, the
    metadata server). ``MCP_ALLOW_PRIVATE_URLS`` lifts it for local development."""
    from shared.connectors.url_guard import UrlNotAllowed, check_public_url

    try:
        check_public_url(url)
    except UrlNotAllowed as exc:
        raise InvalidInput(str(exc).replace("A user's MCP server", "A repository to clone"),
                           code="REPO_URL_NOT_ALLOWED") from None


def github_git_header(token: str) -> str:
    """The header git sends to GitHub for a token (what ``git`` itself does over HTTPS)."""
    return "Authorization: Basic " + base64.b64encode(f"x-access-token:{token}".encode()).decode()


class Workspaces:
    def __init__(self, store: DocStore, settings: Settings, connectors: Any = None,
                 client: SandboxClient | None = None) -> None:
        self.repo = WorkspacesRepo(store)
        self.store = store
        self.settings = settings
        self.connectors = connectors
        self._client = client

    @property
    def client(self) -> SandboxClient:
        if self._client is None:
            self._client = sandbox_client(self.settings)
        return self._client

    # -- records ---------------------------------------------------------------------------------
    def owned(self, uid: str, workspace_id: str) -> WorkspaceRecord:
        """``uid``'s live workspace ``workspace_id``; NotFound for any other (or another user's)."""
        record = self.repo.get(workspace_id) if workspace_id.startswith("ws_") else None
        if record is None or record.uid != uid or record.status != "live":
            raise NotFound(f"no workspace {workspace_id[:100]}", code="WORKSPACE_NOT_FOUND")
        return record

    def live_of(self, uid: str) -> list[WorkspaceRecord]:
        return self.repo.live_of(uid)

    def _auth(self, uid: str, remote: Remote) -> str | None:
        if not remote.github or self.connectors is None:
            return None
        from shared.connectors import ConnectorError

        try:
            return github_git_header(self.connectors.github_token(uid))
        except ConnectorError:
            return None  # not connected: public repositories still clone

    # -- operations ------------------------------------------------------------------------------
    def create(self, uid: str, workspace_id: str, *, run_id: str | None, repo: str | None = None,
               ref: str | None = None, group: str | None = None, default: bool = False,
               timeout_s: float = 300.0) -> WorkspaceRecord:
        remote = remote_of(repo, self.settings) if repo else None
        if remote is not None and not remote.github and not self.settings.mcp_allow_private_urls:
            _check_public(remote.url)
        at = now()
        record = WorkspaceRecord(workspace_id=workspace_id, uid=uid, created_at=at, last_used_at=at, run_id=run_id,
                                 group=group, repo=remote.label if remote else None, ref=ref, default=default)
        try:
            stored = self.repo.create(record, max_live=self.settings.workspaces_per_user)
        except WorkspaceLimitReached:
            if not self._reclaim(uid):
                raise
            stored = self.repo.create(record, max_live=self.settings.workspaces_per_user)
        if stored.uid != uid:
            raise NotFound(f"no workspace {workspace_id}", code="WORKSPACE_NOT_FOUND")
        source = None if remote is None else RepoSource(url=remote.url, ref=ref, auth_header=self._auth(uid, remote))
        try:
            made = self.client.create(workspace_id, repo=source, timeout_s=timeout_s)
        except SandboxError:
            self.repo.mark_destroyed(workspace_id, now())  # it does not count against the limit
            raise
        if made.get("commit"):
            self.repo.update(workspace_id, commit=made["commit"])
            stored = stored.model_copy(update={"commit": made["commit"]})
        return stored

    def _used(self, record: WorkspaceRecord) -> None:
        """After the call (a crash before it leaves nothing of it in the store)."""
        self.repo.update(record.workspace_id, last_used_at=now())

    def exec(self, uid: str, workspace_id: str, script: str, *, timeout_s: float) -> ExecResult:
        record = self.owned(uid, workspace_id)
        try:
            return self.client.exec(workspace_id, script, timeout_s=timeout_s)
        finally:
            self._used(record)

    def read_file(self, uid: str, workspace_id: str, path: str, *, timeout_s: float) -> FileContent:
        record = self.owned(uid, workspace_id)
        try:
            return self.client.read_file(workspace_id, path, timeout_s=timeout_s)
        finally:
            self._used(record)

    def source_files(self, uid: str, workspace_id: str, glob: str | None, *, timeout_s: float) -> dict[str, Any]:
        record = self.owned(uid, workspace_id)
        try:
            return self.client.source_files(workspace_id, glob, timeout_s=timeout_s)
        finally:
            self._used(record)

    def push(self, uid: str, workspace_id: str, *, branch: str, message: str, timeout_s: float) -> dict[str, Any]:
        record = self.owned(uid, workspace_id)
        if record.repo is None:
            raise InvalidInput(f"workspace {workspace_id} holds no clone (create it with a repo)",
                               code="WORKSPACE_HAS_NO_REPO")
        remote = remote_of(record.repo, self.settings)
        try:
            out = self.client.push(workspace_id, url=remote.url, branch=branch, message=message,
                                   auth_header=self._auth(uid, remote), timeout_s=timeout_s)
        finally:
            self._used(record)
        return {**out, "repo": record.repo}

    def destroy(self, uid: str, workspace_id: str) -> WorkspaceRecord:
        record = self.owned(uid, workspace_id)
        self._destroy(record)
        return record

    def _destroy(self, record: WorkspaceRecord) -> None:
        self.client.destroy(record.workspace_id)
        self.repo.mark_destroyed(record.workspace_id, now())

    def cleanup_group(self, uid: str, group: str) -> list[str]:
        gone = [r for r in self.repo.live_of(uid) if r.group == group]
        for record in gone:
            self._destroy(record)
        return [r.workspace_id for r in gone]

    def _kept_by_session(self, host_state: object) -> bool:
        """A plan session's run: whether the session asked to keep its workspaces (``keepWorkspaces``)."""
        session_id = getattr(host_state, "session_id", None)
        if not isinstance(session_id, str):
            return False
        from shared.state.sessions_repo import SessionsRepo

        found = SessionsRepo(self.store).get(session_id)
        return found is not None and found[0].keep_workspaces

    def _units(self, records: list[WorkspaceRecord]) -> dict[str, tuple[bool, bool]]:
        """The units of ``records`` (not kept themselves), by run id: (ended, keeps its workspaces:
        a plan session created with ``keepWorkspaces``)."""
        units: dict[str, tuple[bool, bool]] = {}
        runs = RunsRepo(self.store)
        for run_id in sorted({r.run_id for r in records if r.run_id and not r.keep}):
            snap = runs.get_run(run_id)
            if snap is not None:
                units[run_id] = (snap.run.terminal, self._kept_by_session(snap.run.host_state))
        return units

    def _ended_units(self, records: list[WorkspaceRecord]) -> set[str]:
        """The run ids among ``records``' (not kept) whose unit ended and does not keep its workspaces."""
        return {run_id for run_id, (ended, keeps) in self._units(records).items() if ended and not keeps}

    def kept(self, records: list[WorkspaceRecord]) -> set[str]:
        """The workspace ids among ``records`` that outlive their unit: kept themselves, or of a plan
        session that keeps its workspaces (what ``keep`` shows in the listing)."""
        keeping = {run_id for run_id, (_, keeps) in self._units(records).items() if keeps}
        return {r.workspace_id for r in records if r.keep or r.run_id in keeping}

    def _reclaim(self, uid: str) -> bool:
        """At the limit: destroy ``uid``'s workspaces that the sweep would destroy because their
        unit ended (a chat user's earlier messages' default workspaces), so they do not refuse the
        next one until the sweep comes by. Whether any went."""
        live = self.repo.live_of(uid)
        ended = self._ended_units(live)
        destroyed = 0
        for record in live:
            if record.run_id in ended and not record.keep:
                try:
                    self._destroy(record)
                    destroyed += 1
                except Exception:  # as in the sweep: it stays live and counts; the limit is told
                    log.exception("a workspace of an ended unit could not be destroyed at the limit",
                                  extra={"fields": {"workspaceId": record.workspace_id}})
        return destroyed > 0

    def sweep(self, *, limit: int = 100) -> int:
        """Destroy live workspaces idle past ``WORKSPACE_IDLE_TTL_S``, and those of units that
        ended (unless kept). Returns how many were destroyed; one failure does not stop the rest."""
        cutoff = now() - self.settings.workspace_idle_ttl_s
        live = self.repo.live(limit=limit)
        ended = self._ended_units(live)
        destroyed = 0
        for record in live:
            if record.last_used_at < cutoff or (record.run_id in ended and not record.keep):
                try:
                    self._destroy(record)
                    destroyed += 1
                except Exception:
                    log.exception("a workspace could not be destroyed by the sweep",
                                  extra={"fields": {"workspaceId": record.workspace_id}})
        return destroyed


class ContainerBody(ResponseBody):
    """One live workspace as ``GET /api/agent/containers`` shows it."""

    containerId: str
    repo: str | None = None
    ref: str | None = None
    commit: str | None = None
    group: str | None = None
    runId: str | None = None
    default: bool = False
    keep: bool = False
    """Outlives its unit (the sweep leaves it until it is idle past ``WORKSPACE_IDLE_TTL_S``): kept
    itself, or made by a plan session created with ``keepWorkspaces``."""
    createdAt: UtcTime
    lastUsedAt: UtcTime


class ContainersResponse(PageBody):
    """``GET /api/agent/containers``: the caller's live workspaces, oldest first (at most
    ``WORKSPACES_PER_USER``)."""

    ok: bool = True
    containers: list[ContainerBody]


class ContainerRemovedResponse(ResponseBody):
    """``DELETE /api/agent/containers/{id}``: the workspace and its files are gone."""

    ok: bool = True
    containerId: str
    destroyed: Literal[True] = True


def container_body(record: WorkspaceRecord, *, kept: bool) -> ContainerBody:
    return ContainerBody(containerId=record.workspace_id, repo=record.repo, ref=record.ref, commit=record.commit,
                         group=record.group, runId=record.run_id, default=record.default, keep=kept,
                         createdAt=record.created_at, lastUsedAt=record.last_used_at)


class ContainerFile(ResponseBody):
    path: str
    size: int


class ContainerFileText(ResponseBody):
    path: str
    content: str
    """The text (empty for a binary file); the first 256 KiB."""
    size: int
    truncated: bool
    binary: bool


class ContainerFilesResponse(ResponseBody):
    """``GET /api/agent/containers/{id}/files``: without ``path``, ``files`` (in path order, at most
    5,000, ``truncated`` when cut; version control and dependency folders left out); with ``path``,
    ``file``."""

    ok: bool = True
    containerId: str
    files: list[ContainerFile] | None = None
    truncated: bool | None = None
    file: ContainerFileText | None = None


def container_files(store: DocStore, settings: Settings, uid: str, container_id: str,
                    path: str | None) -> ContainerFilesResponse:
    """Read-only view of a workspace's files (the console's plan view links a task's workspace
    here). Another user's id is not found; a path out of the workspace is a 400 ``PATH_REFUSED``."""
    workspaces = Workspaces(store, settings)
    record = workspaces.owned(uid, container_id)
    if not settings.sandbox_url:
        raise Unavailable("the sandbox service is not configured (SANDBOX_URL)", code="SANDBOX_NOT_CONFIGURED")
    try:
        if path is None:
            listed = workspaces.client.files(record.workspace_id)
            found = [ContainerFile(path=f["path"], size=f["size"]) for f in listed["files"]]
            return ContainerFilesResponse(containerId=record.workspace_id, truncated=bool(listed["truncated"]),
                                          files=found)
        got = workspaces.client.read_file(record.workspace_id, path)
    except SandboxError as exc:
        if exc.code in ("PATH_REFUSED", "INVALID_ARGUMENT"):
            raise InvalidInput(exc.message, code="PATH_REFUSED", details={"field": "path"}) from None
        if exc.code in ("FILE_NOT_FOUND", "WORKSPACE_NOT_FOUND"):
            raise NotFound(exc.message, code=exc.code) from None
        raise Unavailable(f"the sandbox service failed: {exc.message}", code="SANDBOX_UNAVAILABLE") from None
    return ContainerFilesResponse(containerId=record.workspace_id, file=ContainerFileText(
        path=got.path, content=got.content, size=got.size, truncated=got.truncated, binary=got.binary))


def destroy_all(store: DocStore, settings: Settings, uid: str) -> int:
    """Every live workspace of ``uid`` destroyed in the sandbox service (its files and snapshot),
    e.g. before the user's data is erased; how many."""
    workspaces = Workspaces(store, settings)
    live = workspaces.live_of(uid)
    for record in live:
        workspaces.destroy(uid, record.workspace_id)
    return len(live)


def containers_of(store: DocStore, settings: Settings, uid: str, limit: int, cursor: str | None = None
                  ) -> ContainersResponse:
    """``GET /api/agent/containers``: one page, oldest first."""
    workspaces = Workspaces(store, settings)
    page = page_in_memory(workspaces.live_of(uid), lambda r: (r.created_at, r.workspace_id), cursor, limit)
    kept = workspaces.kept(page.items)
    return ContainersResponse(containers=[container_body(r, kept=r.workspace_id in kept) for r in page.items],
                              nextCursor=page.next_cursor)


def remove_container(store: DocStore, settings: Settings, uid: str, container_id: str) -> ContainerRemovedResponse:
    """``DELETE /api/agent/containers/{id}``: another user's id is not found, before anything else."""
    workspaces = Workspaces(store, settings)
    record = workspaces.owned(uid, container_id)
    if not settings.sandbox_url:
        raise Unavailable("the sandbox service is not configured (SANDBOX_URL)", code="SANDBOX_NOT_CONFIGURED")
    workspaces.destroy(uid, record.workspace_id)
    return ContainerRemovedResponse(containerId=record.workspace_id)
