"""The deployable bundle works on its own: installed from its requirements.txt alone into a clean
virtual environment and started with functions-framework from inside the bundle directory, with
no source tree, PYTHONPATH or dev tools around it, every entry point of main.py gives a real answer.
requirements.txt is a full lock: that clean environment holds exactly its pins.

The virtual environment is cached between runs under the system temp dir, keyed by the hash of
requirements.txt and the Python version, so only a dependency change pays for a fresh install.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import requests

from shared.routes import FUNCTIONS, ROUTES

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


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _pins(requirements: Path) -> tuple[dict[str, str], dict[str, str]]:
    """The direct and the transitive pins of the lock (normalized name -> version)."""
    direct: dict[str, str] = {}
    transitive: dict[str, str] = {}
    section = None
    for raw in requirements.read_text().splitlines():
        line = raw.strip()
        if line == "# direct":
            section = direct
        elif line.startswith("# transitive"):
            section = transitive
        elif line and not line.startswith("#"):
            assert section is not None, f"{line}: a pin before the '# direct' section"
            assert re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*==[A-Za-z0-9.+!-]+", line), f"not an exact pin: {line}"
            name, version = line.split("==")
            assert _normalize(name) not in direct and _normalize(name) not in transitive, f"{name} twice"
            section[_normalize(name)] = version
    return direct, transitive


def test_requirements_are_pinned(bundle: Path) -> None:
    direct, transitive = _pins(bundle / "requirements.txt")
    assert {"functions-framework", "google-cloud-firestore", "google-genai"} <= set(direct)
    assert {"protobuf", "grpcio", "flask"} <= set(transitive)  # a lock, not just the direct pins


def _freeze(venv: Path) -> dict[str, str]:
    out = subprocess.run([str(venv / "bin" / "pip"), "freeze", "--all"], capture_output=True, text=True,
                         check=True, env=_pip_env()).stdout
    pins = dict(line.split("==", 1) for line in out.split() if "==" in line)
    return {_normalize(n): v for n, v in pins.items() if _normalize(n) not in ("pip", "setuptools", "wheel")}


def test_the_lock_is_exactly_the_clean_venv(bundle: Path, venv: Path) -> None:
    # Nothing floats: every installed distribution is pinned, at the pinned version, and nothing
    # pinned is missing. A new transitive dependency of an upgraded direct pin fails here.
    direct, transitive = _pins(bundle / "requirements.txt")
    assert _freeze(venv) == {**direct, **transitive}


# Run by the clean venv's python: every distribution the direct pins require (extras and markers
# evaluated for this interpreter), through the installed metadata.
_CLOSURE = r"""
import json, re, sys
from importlib import metadata
from pip._vendor.packaging.requirements import Requirement

def norm(name):
    return re.sub(r"[-_.]+", "-", name).lower()

todo = [(norm(n), frozenset()) for n in json.loads(sys.argv[1])]
seen = set()
while todo:
    name, extras = todo.pop()
    if (name, extras) in seen:
        continue
    seen.add((name, extras))
    for spec in metadata.distribution(name).requires or []:
        req = Requirement(spec)
        if req.marker and not any(req.marker.evaluate({"extra": e}) for e in (extras or {""})):
            continue
        todo.append((norm(req.name), frozenset(req.extras)))
print(json.dumps(sorted({n for n, _ in seen})))
"""


def test_every_transitive_pin_is_needed(bundle: Path, venv: Path) -> None:
    # The other direction: a pin nothing requires any more (a dropped dependency) is stale.
    direct, transitive = _pins(bundle / "requirements.txt")
    out = subprocess.run([str(venv / "bin" / "python"), "-c", _CLOSURE, json.dumps(sorted(direct))],
                         capture_output=True, text=True, check=True, env=_pip_env()).stdout
    assert set(json.loads(out)) == set(direct) | set(transitive)


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


def main_entry_points() -> list[str]:
    """Every name a deployed function can target: main.py's entry points, one per function of the
    route table (shared/routes.py)."""
    return [fn.name for fn in FUNCTIONS]


def _cloud_event(data: str) -> dict[str, Any]:
    return {
        "specversion": "1.0", "type": "google.cloud.pubsub.topic.v1.messagePublished",
        "source": f"//pubsub.googleapis.com/{TOPIC}", "id": "evt-1", "time": "2025-01-01T00:00:00Z",
        "datacontenttype": "application/json",
        "data": {"message": {"data": data, "messageId": "m-1",
                             "publishTime": "2025-01-01T00:00:00Z", "attributes": {"kind": "resume"}},
                 "subscription": "projects/demo-agent-runtime/subscriptions/agent-resume-push"},
    }


@dataclass(frozen=True)
class Probe:
    """A request the entry point must answer, unauthenticated or empty, and the answer expected."""

    method: str
    path: str
    status: int
    body: Any = None
    signature_type: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=lambda: {"Content-Type": "application/json"})


# The HTTP API refuses a caller without credentials with its own 401 JSON (so the bundle imports,
# configures and authenticates); goals refuses an empty body; resume acknowledges a valid event.
# A function without an entry here is probed by its first route of the table, without credentials.
_UNAUTHENTICATED = {"AUTH_MODE": "firebase"}
PROBES: dict[str, Probe] = {
    "run": Probe("POST", "/api/agent/run", 401, {"prompt": "hello"}, env=_UNAUTHENTICATED),
    "stream": Probe("POST", "/api/agent/run/stream", 401, {"prompt": "hello"}, env=_UNAUTHENTICATED),
    "runs": Probe("GET", "/api/agent/runs/run_unknown/events", 401, env=_UNAUTHENTICATED),
    "approve": Probe("POST", "/api/agent/approve", 401, {"approvalId": "apr_1", "decision": "approve"},
                     env=_UNAUTHENTICATED),
    "integrations": Probe("GET", "/api/integrations", 401, env=_UNAUTHENTICATED),
    "usage": Probe("GET", "/api/agent/usage", 401, env=_UNAUTHENTICATED),
    "sessions": Probe("POST", "/api/agent/sessions", 401, {"prompt": "hello"}, env=_UNAUTHENTICATED),
    "goals": Probe("POST", "/agent/run", 400, b""),
    "resume": Probe("POST", "/", 204, _cloud_event(_resume_data("unknown-run-1")), signature_type="cloudevent",
                    headers={"Content-Type": "application/cloudevents+json"}),
}


def probe_for(target: str) -> Probe | None:
    """The request ``target`` must answer: its entry in PROBES, or its first authenticated route of
    the table requested without credentials (401)."""
    if target in PROBES:
        return PROBES[target]
    route = next((r for r in ROUTES if r.function == target and not r.public), None)
    if route is None:
        return None
    path = re.sub(r"\{[A-Za-z_][A-Za-z0-9_]*\}", "x1", route.path)
    return Probe(route.method, path, 401, {} if route.request else None, env=_UNAUTHENTICATED)


def test_every_entry_point_has_a_probe() -> None:
    missing = [t for t in main_entry_points() if probe_for(t) is None]
    assert missing == [], f"add the expected answer of {missing} to PROBES (public or event functions)"
    assert probe_for("runs") is PROBES["runs"]


@pytest.mark.parametrize("target", main_entry_points())
def test_every_entry_point_answers_from_the_bundle(serve: Callable[..., Server], target: str) -> None:
    probe = probe_for(target)
    assert probe is not None, f"main.py exports {target}: add its expected answer to PROBES"
    server = serve(target, signature_type=probe.signature_type, **probe.env)
    payload = probe.body if isinstance(probe.body, bytes) or probe.body is None else json.dumps(probe.body)
    resp = requests.request(probe.method, f"{server.url}{probe.path}", data=payload, headers=probe.headers,
                            timeout=60)
    if probe.status == 204:  # an acknowledged CloudEvent: any 2xx
        assert 200 <= resp.status_code < 300, server.logs()
        # The message was handled (the store was opened and searched), not dropped as malformed.
        assert server.sqlite_path.exists(), server.logs()
        return
    assert resp.status_code == probe.status, f"{resp.status_code} {resp.text}\n{server.logs()}"
    body = resp.json()
    assert body["ok"] is False and body["error"]["code"], body


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


def test_resume_runs_the_sweep_the_scheduler_publishes(serve: Callable[..., Server]) -> None:
    # infra/agent_infra/scheduler.py publishes {"kind": "sweep"} (attributes kind=sweep) to the topic.
    server = serve("resume")
    push = {"message": {"data": base64.b64encode(b'{"kind":"sweep"}').decode(), "messageId": "m-3",
                        "publishTime": "2025-01-01T00:00:00Z", "attributes": {"kind": "sweep"}},
            "subscription": "projects/demo-agent-runtime/subscriptions/agent-resume-push"}
    resp = requests.post(f"{server.url}/{TOPIC}", json=push, timeout=60)
    assert 200 <= resp.status_code < 300, server.logs()
    assert server.sqlite_path.exists(), server.logs()
    logs = server.logs()
    assert "resume event ignored" not in logs and "without runId" not in logs, logs  # read as a sweep
