"""Cold start per function: process start -> first response of ``functions-framework --target FN``,
against the imports the function truly needs, each timed in a fresh interpreter.

Baseline per function = the floor (a trivial function served the same way: interpreter start,
functions-framework import, server start, first response) + the import times of the SDKs the
function needs beyond functions-framework. Overhead = (ours - baseline) / baseline.

Our own sources are byte-compiled before each start, as the SDKs' are (pip compiles them at
install): otherwise the figure would depend on which ``__pycache__`` files happen to be current
(the benchmarks run with ``PYTHONDONTWRITEBYTECODE=1``, so a source edited since its last
compilation is recompiled on every start; for ``run`` compiling everything it imports costs ~50 ms).
"""

from __future__ import annotations

import base64
import compileall
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any

FF = os.path.join(os.path.dirname(sys.executable), "functions-framework")
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OWN_SOURCES = ("main.py", "functions", "shared")
ALICE = "Bearer dev:alice"


@dataclass(frozen=True)
class Probe:
    """One function's first request."""

    target: str
    method: str
    path: str
    body: dict[str, Any] | None
    needs: tuple[str, ...]
    """SDK modules the function truly needs besides functions_framework."""
    signature: str = "http"
    headers: dict[str, str] = field(default_factory=dict)


def pubsub_event(message: dict[str, Any]) -> tuple[dict[str, str], dict[str, Any]]:
    """A binary-mode CloudEvent as Pub/Sub push (Eventarc) delivers it to ``resume``."""
    headers = {"ce-id": f"bench-{time.time_ns()}", "ce-specversion": "1.0",
               "ce-source": "//pubsub.googleapis.com/projects/demo/topics/agent-resume",
               "ce-type": "google.cloud.pubsub.topic.v1.messagePublished", "Content-Type": "application/json"}
    data = {"message": {"data": base64.b64encode(json.dumps(message).encode()).decode(),
                        "messageId": "1", "publishTime": "2026-01-01T00:00:00Z"},
            "subscription": "projects/demo/subscriptions/agent-resume"}
    return headers, data


def import_seconds(module: str, repeats: int) -> float:
    """Median import time of ``module`` in fresh interpreters (measured inside the process)."""
    code = (f"import time; t = time.perf_counter(); import {module}; "
            f"print(time.perf_counter() - t)")
    times = []
    for _ in range(repeats):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        times.append(float(out.stdout.strip()))
    return statistics.median(times)


def marginal_import_seconds(modules: tuple[str, ...], repeats: int) -> float:
    """Median time to import ``modules`` together in a fresh interpreter that has already imported
    functions_framework (shared dependencies count once): what a function pays beyond the floor."""
    if not modules:
        return 0.0
    code = ("import functions_framework, time; t = time.perf_counter(); "
            f"import {', '.join(modules)}; print(time.perf_counter() - t)")
    times = []
    for _ in range(repeats):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        times.append(float(out.stdout.strip()))
    return statistics.median(times)


def compile_own_sources(root: str = REPO) -> None:
    """Byte-compile ``main.py``, ``functions/`` and ``shared/`` (only what is stale), untimed."""
    for name in OWN_SOURCES:
        path = os.path.join(root, name)
        if os.path.isdir(path):
            compileall.compile_dir(path, quiet=2)
        elif os.path.isfile(path):
            compileall.compile_file(path, quiet=2)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _request(port: int, probe: Probe) -> int:
    headers = {"Authorization": ALICE, **probe.headers}
    data = None
    if probe.body is not None:
        data = json.dumps(probe.body).encode()
        headers.setdefault("Content-Type", "application/json")
    req = urllib.request.Request(f"http://127.0.0.1:{port}{probe.path}", data=data, headers=headers,
                                 method=probe.method)
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            resp.read()
            return int(resp.status)
    except urllib.error.HTTPError as exc:
        exc.read()
        return int(exc.code)


def cold_start_once(probe: Probe, env: dict[str, str], source: str = "main.py") -> tuple[float, int]:
    """Seconds from Popen to the first complete response, and its HTTP status."""
    compile_own_sources()
    port = _free_port()
    cmd = [FF, "--target", probe.target, "--source", source, "--signature-type", probe.signature,
           "--host", "127.0.0.1", "--port", str(port)]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = t0 + 60
        while True:
            try:
                status = _request(port, probe)
                return time.perf_counter() - t0, status
            except (ConnectionError, urllib.error.URLError):
                if proc.poll() is not None:
                    err = proc.stderr.read().decode()[-2000:] if proc.stderr else ""
                    raise RuntimeError(f"{probe.target} exited before answering: {err}") from None
                if time.perf_counter() > deadline:
                    raise TimeoutError(f"{probe.target} did not answer within 60 s") from None
                time.sleep(0.005)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
