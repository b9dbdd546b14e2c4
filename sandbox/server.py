"""The sandbox's HTTP API (JSON). Reached only by the functions.

Auth: ``SANDBOX_KEY`` set → every request but ``/healthz`` carries it in ``X-Sandbox-Key``
(tests, ``make dev``); on Cloud Run with ``SANDBOX_AUTH=cloud-run-iam`` the platform admits only
callers with the invoker role (the functions' ID token) and no key is needed. Without either the
service refuses to start.

```
PUT    /v1/workspaces/{id}              {repo?: {url, ref?, authHeader?}} -> 201 {workspaceId, created, commit?}
GET    /v1/workspaces/{id}                                -> {workspaceId, diskBytes, quotaBytes}
POST   /v1/workspaces/{id}/exec         {script, timeoutS?} -> {exitCode, stdout, stderr, truncated,
                                                              durationMs, timedOut, changed}
POST   /v1/workspaces/{id}/read         {path}  -> {path, content, size, truncated, binary}
POST   /v1/workspaces/{id}/source-files {glob?} -> {files: [{path, content}], truncated}
POST   /v1/workspaces/{id}/files        {}      -> {files: [{path, size}], truncated} (at most 5,000)
POST   /v1/workspaces/{id}/push         {url, branch, message, authHeader?} -> {branch, commit, committed}
DELETE /v1/workspaces/{id}                                -> {workspaceId, deleted}
```
Errors: ``{"error": {"code", "message"}}`` (400 INVALID_ARGUMENT / PATH_REFUSED, 401 UNAUTHENTICATED,
404 WORKSPACE_NOT_FOUND / FILE_NOT_FOUND, 422 GIT_FAILED).

Run: ``python -m sandbox.server`` (``PORT``, ``HOST``, ``SANDBOX_ROOT``, ``SANDBOX_PARENT_PID``,
``SANDBOX_SNAPSHOT_DIR`` or ``SANDBOX_SNAPSHOT_BUCKET``, limits in ``sandbox/limits.py``).
"""

from __future__ import annotations

import hmac
import json
import os
import re
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from sandbox import files, gitops, mounts, reaper, snapshots
from sandbox.jail import JailUnavailable, bwrap_path
from sandbox.limits import Limits
from sandbox.workspaces import BadWorkspaceId, WorkspaceNotFound, Workspaces

REAP_EVERY_S = 2.0

MAX_BODY = 2 << 20
_ROUTE = re.compile(r"^/v1/workspaces/([^/]+)(?:/(exec|read|source-files|files|push))?$")


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def _str(body: dict[str, Any], name: str, *, required: bool = True, max_len: int = 100_000) -> str | None:
    value = body.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str) or (required and not value) or len(value) > max_len:
        raise ApiError(400, "INVALID_ARGUMENT", f"'{name}' must be a non-empty string of at most {max_len} characters")
    return value


class Api:
    """The operations behind the routes (no HTTP here: tests and ``make dev`` may call it)."""

    def __init__(self, workspaces: Workspaces) -> None:
        self.workspaces = workspaces

    def handle(self, method: str, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if method == "GET" and path == "/healthz":
            return 200, {"ok": True}
        found = _ROUTE.match(path)
        if found is None:
            raise ApiError(404, "NOT_FOUND", f"no route {method} {path}")
        wid, action = found.group(1), found.group(2)
        ws = self.workspaces
        try:
            if action is None and method == "PUT":
                return self._create(wid, body)
            if action is None and method == "GET":
                return 200, {"workspaceId": wid, "diskBytes": ws.usage(wid), "quotaBytes": ws.limits.disk_bytes}
            if action is None and method == "DELETE":
                return 200, {"workspaceId": wid, "deleted": ws.destroy(wid)}
            if method != "POST":
                raise ApiError(405, "METHOD_NOT_ALLOWED", f"{method} is not allowed on {path}")
            if action == "exec":
                return 200, self._exec(wid, body)
            if action == "read":
                item = ws.read(wid, _str(body, "path", max_len=4096) or "")
                return 200, {"path": item.path, "content": item.content, "size": item.size,
                             "truncated": item.truncated, "binary": item.binary}
            if action == "files":
                listed, truncated = ws.listing(wid)
                return 200, {"files": [{"path": p, "size": n} for p, n in listed], "truncated": truncated}
            if action == "source-files":
                found_files, truncated = ws.source_files(wid, _str(body, "glob", required=False, max_len=500))
                return 200, {"files": [{"path": f.path, "content": f.content} for f in found_files],
                             "truncated": truncated}
            return 200, self._push(wid, body)
        except BadWorkspaceId as exc:
            raise ApiError(400, "INVALID_ARGUMENT", str(exc)) from None
        except WorkspaceNotFound:
            raise ApiError(404, "WORKSPACE_NOT_FOUND", f"workspace {wid} does not exist") from None
        except files.PathRefused as exc:
            raise ApiError(400, "PATH_REFUSED", str(exc)) from None
        except FileNotFoundError as exc:
            raise ApiError(404, "FILE_NOT_FOUND", f"'{str(exc)[:200]}' does not exist in the workspace") from None
        except gitops.GitFailed as exc:
            raise ApiError(422, "GIT_FAILED", str(exc)) from None

    def _create(self, wid: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        repo = body.get("repo")
        commit: list[str] = []
        populate = None
        if repo is not None:
            if not isinstance(repo, dict):
                raise ApiError(400, "INVALID_ARGUMENT", "'repo' must be an object {url, ref?, authHeader?}")
            url = _str(repo, "url", max_len=2000) or ""
            if urlsplit(url).scheme not in ("https", "http", "git"):
                raise ApiError(400, "INVALID_ARGUMENT", "'repo.url' must be an https, http or git URL")
            ref = _str(repo, "ref", required=False, max_len=250)
            auth = _str(repo, "authHeader", required=False, max_len=4000)

            def populate(path: str, uid: int | None) -> None:
                commit.append(gitops.clone(url, ref, path, auth_header=auth, uid=uid))

        created = self.workspaces.create(wid, populate)
        out: dict[str, Any] = {"workspaceId": wid, "created": created}
        if commit:
            out["commit"] = commit[0]
        return (201 if created else 200), out

    def _exec(self, wid: str, body: dict[str, Any]) -> dict[str, Any]:
        script = _str(body, "script", max_len=100_000) or ""
        timeout = body.get("timeoutS", self.workspaces.limits.wall_s)
        if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or timeout <= 0:
            raise ApiError(400, "INVALID_ARGUMENT", "'timeoutS' must be a number > 0")
        done = self.workspaces.exec(wid, script, float(timeout))
        r = done.result
        return {"exitCode": r.exit_code, "stdout": r.stdout, "stderr": r.stderr, "truncated": r.truncated,
                "durationMs": r.duration_ms, "timedOut": r.timed_out, "changed": done.changed,
                "snapshotBytes": done.snapshot_bytes, "snapshotMs": done.snapshot_ms}

    def _push(self, wid: str, body: dict[str, Any]) -> dict[str, Any]:
        url = _str(body, "url", max_len=2000) or ""
        branch = _str(body, "branch", max_len=250) or ""
        message = _str(body, "message", max_len=10_000) or ""
        auth = _str(body, "authHeader", required=False, max_len=4000)
        result = self.workspaces.with_files(
            wid, lambda path, uid: gitops.push(path, url, branch, message, auth_header=auth, uid=uid))
        return {"branch": result.branch, "commit": result.commit, "committed": result.committed}


def make_handler(api: Api, key: str | None) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Headers and body go out as two writes: with Nagle's algorithm and the client's delayed
        # ACK, every answer on a kept-alive connection would wait ~40 ms.
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _answer(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _serve(self) -> None:
            try:
                path = urlsplit(self.path).path
                if path != "/healthz" and key is not None and not hmac.compare_digest(
                        self.headers.get("X-Sandbox-Key", "").encode(), key.encode()):
                    raise ApiError(401, "UNAUTHENTICATED", "missing or wrong X-Sandbox-Key")
                length = int(self.headers.get("Content-Length") or 0)
                if length > MAX_BODY:
                    raise ApiError(413, "TOO_LARGE", f"the request body is over {MAX_BODY} bytes")
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else {}
                except ValueError:
                    raise ApiError(400, "INVALID_JSON", "the body is not JSON") from None
                if not isinstance(body, dict):
                    raise ApiError(400, "INVALID_JSON", "the body must be a JSON object")
                status, payload = api.handle(self.command, path, body)
                self._answer(status, payload)
            except ApiError as exc:
                self._answer(exc.status, {"error": {"code": exc.code, "message": exc.message}})
            except Exception as exc:  # the service stays up; the caller learns what failed
                print(f"sandbox: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
                self._answer(500, {"error": {"code": "INTERNAL", "message": f"{type(exc).__name__}: {exc}"[:500]}})

        do_GET = do_PUT = do_POST = do_DELETE = _serve

    return Handler


def _auth_key() -> str | None:
    key = os.environ.get("SANDBOX_KEY", "").strip()
    if key:
        return key
    if os.environ.get("SANDBOX_AUTH") == "cloud-run-iam" and os.environ.get("K_SERVICE"):
        return None
    raise SystemExit("sandbox: set SANDBOX_KEY, or SANDBOX_AUTH=cloud-run-iam on Cloud Run")


def _die_with_parent() -> None:
    """``SANDBOX_PARENT_PID`` (``make dev``'s child): killed when that process ends, however it ends."""
    parent = os.environ.get("SANDBOX_PARENT_PID", "").strip()
    if not parent:
        return
    import ctypes
    import signal

    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)
    if os.getppid() != int(parent):  # it ended before the line above
        raise SystemExit("sandbox: the parent process is gone")


def main() -> None:
    _die_with_parent()
    key = _auth_key()
    try:
        bwrap_path()
    except JailUnavailable as exc:
        raise SystemExit(f"sandbox: {exc}") from None
    real_root = mounts.enter_private_namespace()  # before any thread starts
    reaper.adopt_orphans()  # bubblewrap's orphans come here, not to pid 1 (sandbox/reaper.py)
    reaper.reap_every(REAP_EVERY_S)
    root = os.environ.get("SANDBOX_ROOT", "").strip() or "/var/lib/sandbox/workspaces"
    workspaces = Workspaces(root, Limits.from_env(), snapshots.from_env(), real_root=real_root)
    server = ThreadingHTTPServer((os.environ.get("HOST", "127.0.0.1"), int(os.environ.get("PORT", "8090"))),
                                 make_handler(Api(workspaces), key))
    server.daemon_threads = True
    host, port = server.server_address[:2]
    print(f"sandbox: listening on {host!s}:{port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
