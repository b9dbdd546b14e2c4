"""Real MCP servers the tests start (the official SDK's, and the registries' reference servers)."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import time
from collections.abc import Iterator

from tests.emulators import free_port


@contextlib.contextmanager
def serving(argv: list[str], *, path: str = "/mcp", cwd: str | None = None,
            port_env: str | None = None) -> Iterator[str]:
    """Start ``argv`` (``{port}`` in it replaced by a free port, also given in the environment
    variable ``port_env``) as its own process, wait until it accepts connections, yield its URL
    (``http://127.0.0.1:{port}{path}``); stop it on exit."""
    port = free_port()
    env = {**os.environ, port_env: str(port)} if port_env else None
    proc = subprocess.Popen([a.replace("{port}", str(port)) for a in argv], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, cwd=cwd, env=env)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
                break
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else b""
            time.sleep(0.1)
        else:
            raise AssertionError(f"{argv[0]} did not start listening on {port}")
        yield f"http://127.0.0.1:{port}{path}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        if proc.stderr:
            proc.stderr.close()
