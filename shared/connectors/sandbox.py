"""The sandbox service's client: the functions' only way to run a model-chosen script.

The functions never run such a script in their own process: every workspace operation is an HTTP
call to the sandbox service (``SANDBOX_URL``; ``sandbox/server.py``). Auth: ``SANDBOX_KEY`` is sent
as ``X-Sandbox-Key`` (tests, ``make dev``); on Google Cloud an ID token for ``SANDBOX_URL`` is
sent as the bearer (Cloud Run admits callers with the invoker role). Service errors become
:class:`SandboxError` with the service's code; a script's own failure is not an error (its exit
code is in the result).

```python
box = SandboxClient("http://127.0.0.1:8090", key="...")
box.create("ws_abc123", repo=RepoSource(url="https://github.com/octo/hello.git", auth_header=None))
box.exec("ws_abc123", "pytest -q", timeout_s=60).exit_code
```
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from typing import Any

import urllib3

from shared.errors import OutcomeUnknown, ToolError

_ID_TOKEN_TTL_S = 45 * 60


class SandboxError(ToolError):
    """The sandbox service refused or failed a request (``code``: the service's error code)."""

    def __init__(self, message: str, *, code: str, status: int) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.status = status


@dataclass(frozen=True)
class RepoSource:
    url: str
    ref: str | None = None
    auth_header: str | None = None
    """``Authorization: ...`` for git's requests; never stored, never in the workspace."""


@dataclass(frozen=True)
class ExecResult:
    exit_code: int
    stdout: str
    stderr: str
    truncated: bool
    duration_ms: int
    timed_out: bool
    changed: bool
    snapshot_bytes: int = 0
    """The snapshot saved after a changing script: its size and how long saving took (service side)."""
    snapshot_ms: int = 0


@dataclass(frozen=True)
class FileContent:
    path: str
    content: str
    size: int
    truncated: bool
    binary: bool


class _IdTokens:
    """Google ID tokens for one audience, fetched from the metadata server and cached."""

    def __init__(self, audience: str) -> None:
        self.audience = audience
        self._token: str | None = None
        self._until = 0.0
        self._lock = threading.Lock()

    def get(self) -> str:
        with self._lock:
            if self._token is None or time.monotonic() > self._until:
                import google.auth.transport.requests
                from google.oauth2 import id_token

                self._token = str(id_token.fetch_id_token(  # type: ignore[no-untyped-call]
                    google.auth.transport.requests.Request(), self.audience))
                self._until = time.monotonic() + _ID_TOKEN_TTL_S
            return self._token


class SandboxClient:
    """One per process (it keeps a connection pool)."""

    def __init__(self, base_url: str, *, key: str | None = None, id_token_audience: str | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self._key = key
        self._tokens = _IdTokens(id_token_audience) if id_token_audience else None
        self._http = urllib3.PoolManager(maxsize=8, retries=False)

    def _call(self, method: str, path: str, body: dict[str, Any] | None, *, timeout_s: float) -> dict[str, Any]:
        headers = {"Content-Type": "application/json"}
        if self._key:
            headers["X-Sandbox-Key"] = self._key
        if self._tokens is not None:
            headers["Authorization"] = f"Bearer {self._tokens.get()}"
        try:
            resp = self._http.request(method, self.base_url + path, headers=headers,
                                      body=None if body is None else json.dumps(body).encode(),
                                      timeout=urllib3.Timeout(connect=min(10.0, timeout_s), read=timeout_s))
        except (urllib3.exceptions.NewConnectionError, urllib3.exceptions.ConnectTimeoutError) as exc:
            raise SandboxError(f"the sandbox service cannot be reached: {type(exc).__name__}",
                               code="SANDBOX_UNAVAILABLE", status=503) from None
        except urllib3.exceptions.HTTPError as exc:  # the request went out; its answer was lost
            raise OutcomeUnknown(f"the sandbox service went silent during {method} {path.rsplit('/', 1)[-1]} "
                                 f"({type(exc).__name__}): it may or may not have happened") from None
        try:
            payload = json.loads(resp.data or b"{}")
        except ValueError:
            payload = {}
        if resp.status >= 400:
            error = payload.get("error") if isinstance(payload, dict) else None
            error = error if isinstance(error, dict) else {}
            raise SandboxError(str(error.get("message") or f"the sandbox service answered {resp.status}"),
                               code=str(error.get("code") or "SANDBOX_FAILED"), status=resp.status)
        return payload if isinstance(payload, dict) else {}

    def create(self, workspace_id: str, *, repo: RepoSource | None = None, timeout_s: float = 300.0) -> dict[str, Any]:
        body: dict[str, Any] = {}
        if repo is not None:
            body["repo"] = {"url": repo.url, "ref": repo.ref, "authHeader": repo.auth_header}
        return self._call("PUT", f"/v1/workspaces/{workspace_id}", body, timeout_s=timeout_s)

    def exec(self, workspace_id: str, script: str, *, timeout_s: float) -> ExecResult:
        out = self._call("POST", f"/v1/workspaces/{workspace_id}/exec", {"script": script, "timeoutS": timeout_s},
                         timeout_s=timeout_s + 60.0)  # the answer waits for the snapshot too
        return ExecResult(exit_code=int(out["exitCode"]), stdout=str(out["stdout"]), stderr=str(out["stderr"]),
                          truncated=bool(out["truncated"]), duration_ms=int(out["durationMs"]),
                          timed_out=bool(out["timedOut"]), changed=bool(out["changed"]),
                          snapshot_bytes=int(out.get("snapshotBytes") or 0),
                          snapshot_ms=int(out.get("snapshotMs") or 0))

    def read_file(self, workspace_id: str, path: str, *, timeout_s: float = 30.0) -> FileContent:
        out = self._call("POST", f"/v1/workspaces/{workspace_id}/read", {"path": path}, timeout_s=timeout_s)
        return FileContent(path=str(out["path"]), content=str(out["content"]), size=int(out["size"]),
                           truncated=bool(out["truncated"]), binary=bool(out["binary"]))

    def source_files(self, workspace_id: str, glob: str | None, *, timeout_s: float = 60.0) -> dict[str, Any]:
        return self._call("POST", f"/v1/workspaces/{workspace_id}/source-files", {"glob": glob}, timeout_s=timeout_s)

    def files(self, workspace_id: str, *, timeout_s: float = 30.0) -> dict[str, Any]:
        """``{files: [{path, size}], truncated}``: every file of the workspace, in path order."""
        return self._call("POST", f"/v1/workspaces/{workspace_id}/files", {}, timeout_s=timeout_s)

    def push(self, workspace_id: str, *, url: str, branch: str, message: str, auth_header: str | None,
             timeout_s: float = 300.0) -> dict[str, Any]:
        return self._call("POST", f"/v1/workspaces/{workspace_id}/push",
                          {"url": url, "branch": branch, "message": message, "authHeader": auth_header},
                          timeout_s=timeout_s)

    def info(self, workspace_id: str, *, timeout_s: float = 30.0) -> dict[str, Any]:
        return self._call("GET", f"/v1/workspaces/{workspace_id}", None, timeout_s=timeout_s)

    def destroy(self, workspace_id: str, *, timeout_s: float = 60.0) -> bool:
        return bool(self._call("DELETE", f"/v1/workspaces/{workspace_id}", None, timeout_s=timeout_s)["deleted"])
