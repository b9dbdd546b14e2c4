"""The deployable bundle works on its own: installed from its requirements.txt alone into a clean
virtual environment and started with functions-framework from inside the bundle directory, with
no source tree, PYTHONPATH or dev tools around it, each entry point gives a real answer.

The virtual environment is cached between runs under the system temp dir, keyed by the hash of
requirements.txt and the Python version, so only a dependency change pays for a fresh install.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests

REPO = Path(__file__).resolve().parents[2]
CACHE = Path(tempfile.gettempdir()) / "agent-runtime-cache"
STARTUP_LIMIT_S = 60.0  # bounds a hung start; not a performance assertion
TOPIC = "projects/demo-agent-runtime/topics/agent-resume"


def _build(out: Path) -> None:
    subprocess.run(["bash", str(REPO / "scripts" / "bundle.sh"), str(out), "--zip"], check=True,
                   capture_output=True, text=True)


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist") / "bundle"
    _build(out)
    return out


def _pip_env() -> dict[str, str]:
    """The machine's pip settings (its local indexes), but nothing of this checkout's venv."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if ".venv" not in p)
    return env


@pytest.fixture(scope="module")
def venv(bundle: Path) -> Path:
    """A virtualenv holding exactly what the bundle's requirements.txt installs (cached)."""
    requirements = bundle / "requirements.txt"
    key = hashlib.sha256(requirements.read_bytes() + sys.version.encode()).hexdigest()[:16]
    target = CACHE / f"bundle-venv-{key}"
    if (target / ".complete").is_file():
        return target
    # Built in place (console scripts embed their path); the marker is written last, so an
    # interrupted build is thrown away next time.
    shutil.rmtree(target, ignore_errors=True)
    CACHE.mkdir(parents=True, exist_ok=True)
    base_python = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base_python, "-m", "venv", str(target)], check=True, env=_pip_env())
    subprocess.run([str(target / "bin" / "pip"), "install", "--quiet", "--disable-pip-version-check",
                    "-r", str(requirements)], check=True, env=_pip_env())
    (target / ".complete").write_text(requirements.read_text())
    return target


def test_bundle_holds_only_the_deployable_source(bundle: Path) -> None:
    assert sorted(p.name for p in bundle.iterdir()) == ["functions", "main.py", "requirements.txt", "shared"]
    files = [p.relative_to(bundle).as_posix() for p in bundle.rglob("*") if p.is_file()]
    assert "shared/config.py" in files
    for path in files:
        parts = path.split("/")
        assert "__pycache__" not in parts and "tests" not in parts, path
        assert not path.endswith((".pyc", ".pyo")), path
        assert not parts[-1].startswith("test_") and parts[-1] != "conftest.py", path
    assert (bundle / "requirements.txt").read_text() == (REPO / "requirements.txt").read_text()
    assert Path(f"{bundle}.zip").is_file()


def test_requirements_are_pinned(bundle: Path) -> None:
    lines = [ln.strip() for ln in (bundle / "requirements.txt").read_text().splitlines()]
    reqs = [ln for ln in lines if ln and not ln.startswith("#")]
    assert reqs and all("==" in r and not r.startswith("-") for r in reqs), reqs


def test_the_venv_has_runtime_dependencies_only(venv: Path) -> None:
    check = subprocess.run([str(venv / "bin" / "pip"), "check"], capture_output=True, text=True, env=_pip_env())
    assert check.returncode == 0, check.stdout + check.stderr
    for dev_tool in ("pytest", "mypy", "ruff", "pulumi"):
        probe = subprocess.run([str(venv / "bin" / "python"), "-c", f"import {dev_tool}"], capture_output=True)
        assert probe.returncode != 0, f"{dev_tool} must not be in the runtime environment"


@dataclass
class Server:
    url: str
    process: subprocess.Popen[bytes]
    sqlite_path: Path
    log_path: Path

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)

    def logs(self) -> str:
        self.stop()
        return self.log_path.read_text(errors="replace")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture
def serve(bundle: Path, venv: Path, tmp_path: Path) -> Iterator[Callable[..., Server]]:
    started: list[Server] = []

    def start(target: str, *, signature_type: str | None = None, **env: str) -> Server:
        port = _free_port()
        sqlite_path = tmp_path / f"{target}-{port}.sqlite3"
        clean = {
            "PATH": f"{venv / 'bin'}{os.pathsep}/usr/bin:/bin",
            "HOME": str(tmp_path),
            "LANG": "C.UTF-8",
            "STATE_BACKEND": "sqlite",
            "SQLITE_PATH": str(sqlite_path),
            "GOOGLE_CLOUD_PROJECT": "demo-agent-runtime",
            "DISPATCHER": "none",
            # Any attempt to reach Google's certificate endpoints would fail fast, not go online.
            "FIREBASE_CERTS_URL": "http://127.0.0.1:9/certs",
            "FIREBASE_SESSION_CERTS_URL": "http://127.0.0.1:9/session-certs",
            **env,
        }
        cmd = [str(venv / "bin" / "functions-framework"), "--source", "main.py", "--target", target,
               "--host", "127.0.0.1", "--port", str(port)]
        if signature_type:
            cmd += ["--signature-type", signature_type]
        log_path = tmp_path / f"{target}-{port}.log"
        with log_path.open("wb") as log:  # a file, not a pipe: a chatty server never blocks
            proc = subprocess.Popen(cmd, cwd=bundle, env=clean, stdout=log, stderr=subprocess.STDOUT)
        server = Server(f"http://127.0.0.1:{port}", proc, sqlite_path, log_path)
        started.append(server)
        limit = time.monotonic() + STARTUP_LIMIT_S
        while time.monotonic() < limit:
            if proc.poll() is not None:
                pytest.fail(f"{target} exited with {proc.returncode}:\n{server.logs()}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    return server
            except OSError:
                time.sleep(0.2)
        pytest.fail(f"{target} did not listen on {port}:\n{server.logs()}")

    yield start
    for server in started:
        server.stop()


def _resume_data(run_id: str) -> str:
    return base64.b64encode(json.dumps({"kind": "resume", "runId": run_id}).encode()).decode()


def test_run_refuses_a_request_without_credentials(serve: Callable[..., Server]) -> None:
    server = serve("run", AUTH_MODE="firebase")
    resp = requests.post(f"{server.url}/api/agent/run", json={"prompt": "hello"}, timeout=30)
    assert resp.status_code == 401, server.logs()
    body = resp.json()
    assert body["ok"] is False and body["error"]["code"]


def test_resume_acknowledges_a_cloudevent_about_an_unknown_run(serve: Callable[..., Server]) -> None:
    server = serve("resume", signature_type="cloudevent")
    event = {
        "specversion": "1.0", "type": "google.cloud.pubsub.topic.v1.messagePublished",
        "source": f"//pubsub.googleapis.com/{TOPIC}", "id": "evt-1", "time": "2025-01-01T00:00:00Z",
        "datacontenttype": "application/json",
        "data": {"message": {"data": _resume_data("unknown-run-1"), "messageId": "m-1",
                             "publishTime": "2025-01-01T00:00:00Z", "attributes": {"kind": "resume"}},
                 "subscription": "projects/demo-agent-runtime/subscriptions/agent-resume-push"},
    }
    resp = requests.post(server.url, data=json.dumps(event), timeout=60,
                         headers={"Content-Type": "application/cloudevents+json"})
    assert 200 <= resp.status_code < 300, server.logs()
    # The message was handled (the store was opened and searched), not dropped as malformed.
    assert server.sqlite_path.exists(), server.logs()


def test_resume_accepts_the_raw_pubsub_push_the_infra_delivers(serve: Callable[..., Server]) -> None:
    # Deployed behind a push subscription (infra/agent_infra/messaging.py) the function gets no
    # --signature-type: functions-framework must still serve it as a CloudEvent function.
    server = serve("resume")
    push = {"message": {"data": _resume_data("unknown-run-2"), "messageId": "m-2",
                        "publishTime": "2025-01-01T00:00:00Z", "attributes": {"kind": "resume"}},
            "subscription": "projects/demo-agent-runtime/subscriptions/agent-resume-push"}
    resp = requests.post(f"{server.url}/{TOPIC}", json=push, timeout=60)
    assert 200 <= resp.status_code < 300, server.logs()
    assert server.sqlite_path.exists(), server.logs()


def test_goals_rejects_an_empty_body(serve: Callable[..., Server]) -> None:
    server = serve("goals")
    resp = requests.post(f"{server.url}/agent/run", data=b"", timeout=30,
                         headers={"Content-Type": "application/json"})
    assert resp.status_code == 400, server.logs()
