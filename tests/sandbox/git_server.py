"""A real git server over HTTP for tests: ``git http-backend`` (CGI) behind a small threaded
server that requires the GitHub-style token (``Authorization: Basic x-access-token:<token>``).

Repositories live under ``root`` as bare repos ``{owner}/{name}.git``; ``seed(owner/name, files)``
creates one with an initial commit on ``main``.
"""

from __future__ import annotations

import base64
import os
import subprocess
import tempfile
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

GIT_ENV = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_CONFIG_GLOBAL": "/dev/null",
           "GIT_AUTHOR_NAME": "Test", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "Test",
           "GIT_COMMITTER_EMAIL": "t@example.com"}


def git(*args: str, cwd: Path | str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=GIT_ENV, check=True, capture_output=True, text=True).stdout


class GitServer:
    def __init__(self, root: Path, token: str, on_push: Callable[[str], None] | None = None) -> None:
        self.root = root
        self.token = token
        self.on_push = on_push
        """Called with ``owner/name`` after each push (a fake GitHub learns the new branches)."""
        self.requests: list[dict[str, Any]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _cgi(self) -> None:
                auth = self.headers.get("Authorization", "")
                server.requests.append({"method": self.command, "path": self.path, "authorization": auth})
                expected = "Basic " + base64.b64encode(f"x-access-token:{server.token}".encode()).decode()
                if auth != expected:
                    self.send_response(401)
                    self.send_header("WWW-Authenticate", 'Basic realm="git"')
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                parts = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                env = {**GIT_ENV, "GIT_PROJECT_ROOT": str(server.root), "GIT_HTTP_EXPORT_ALL": "1",
                       "PATH_INFO": parts.path, "QUERY_STRING": parts.query, "REQUEST_METHOD": self.command,
                       "CONTENT_TYPE": self.headers.get("Content-Type", ""), "CONTENT_LENGTH": str(len(body)),
                       "REMOTE_USER": "x-access-token", "REMOTE_ADDR": "127.0.0.1"}
                if self.headers.get("Content-Encoding"):
                    env["HTTP_CONTENT_ENCODING"] = self.headers["Content-Encoding"]
                done = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True)
                head, _, payload = done.stdout.partition(b"\r\n\r\n")
                status = 200
                headers: list[tuple[str, str]] = []
                for line in head.decode().split("\r\n"):
                    if not line:
                        continue
                    name, _, value = line.partition(":")
                    if name.lower() == "status":
                        status = int(value.strip().split()[0])
                    else:
                        headers.append((name, value.strip()))
                self.send_response(status)
                for name, value in headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
                if parts.path.endswith("/git-receive-pack") and status == 200 and server.on_push is not None:
                    server.on_push(parts.path.strip("/").removesuffix("/git-receive-pack").removesuffix(".git"))

            do_GET = do_POST = _cgi

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()

    def auth_header(self) -> str:
        return "Authorization: Basic " + base64.b64encode(f"x-access-token:{self.token}".encode()).decode()

    def seed(self, repo: str, files: dict[str, str]) -> str:
        bare = self.root / f"{repo}.git"
        bare.parent.mkdir(parents=True, exist_ok=True)
        git("init", "--bare", "-b", "main", str(bare), cwd=self.root)
        git("config", "http.receivepack", "true", cwd=bare)
        with tempfile.TemporaryDirectory() as tmp:
            git("init", "-b", "main", cwd=tmp)
            for name, text in files.items():
                path = Path(tmp) / name
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text)
                if name.endswith(".sh"):
                    os.chmod(path, 0o755)
            git("add", "-A", cwd=tmp)
            git("commit", "-m", "initial", cwd=tmp)
            git("push", str(bare), "main", cwd=tmp)
        return f"{self.url}/{repo}.git"

    def pushes(self, repo: str) -> int:
        return sum(1 for r in self.requests if r["method"] == "POST" and
                   r["path"] == f"/{repo}.git/git-receive-pack" and r["authorization"])

    def files(self, repo: str, ref: str) -> dict[str, bytes]:
        bare = self.root / f"{repo}.git"
        names = git("ls-tree", "-r", "--name-only", ref, cwd=bare).split()
        return {name: subprocess.run(["git", "show", f"{ref}:{name}"], cwd=bare, env=GIT_ENV, check=True,
                                     capture_output=True).stdout for name in names}

    def show(self, repo: str, ref: str, path: str) -> str:
        return git("show", f"{ref}:{path}", cwd=self.root / f"{repo}.git")

    def branches(self, repo: str) -> list[str]:
        out = git("for-each-ref", "--format=%(refname:short)", "refs/heads", cwd=self.root / f"{repo}.git")
        return sorted(out.split())

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
