"""Configuration is checked when a function starts, not on its first request (issue 2, auth):
local auth (``Bearer dev:<uid>``) refuses to start on Cloud Run (``K_SERVICE`` set)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FF = str(Path(sys.executable).with_name("functions-framework"))
START_LIMIT_S = 60.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "STATE_BACKEND": "sqlite",
            "SQLITE_PATH": str(tmp_path / "state.sqlite3"), "GOOGLE_CLOUD_PROJECT": "demo-startup",
            "DISPATCHER": "none",
            # Nothing may go online: certificate fetches would fail fast.
            "FIREBASE_CERTS_URL": "http://127.0.0.1:9/certs",
            "FIREBASE_SESSION_CERTS_URL": "http://127.0.0.1:9/session-certs", **extra}


def _functions_framework(target: str, port: int) -> list[str]:
    cmd = [FF, "--target", target, "--source", "main.py", "--host", "127.0.0.1", "--port", str(port)]
    return [*cmd, "--signature-type", "cloudevent"] if target == "resume" else cmd


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


@pytest.mark.parametrize("target", ["run", "runs", "approve", "resume", "goals", "integrations"])
def test_local_auth_on_cloud_run_refuses_to_start(tmp_path: Path, target: str) -> None:
    port = _free_port()
    proc = subprocess.Popen(_functions_framework(target, port), cwd=REPO, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True,
                            env=_env(tmp_path, K_SERVICE=f"agent-{target}", AUTH_MODE="local"))
    try:
        deadline = time.monotonic() + START_LIMIT_S
        while proc.poll() is None:
            assert not _listening(port), f"{target} started with AUTH_MODE=local on Cloud Run"
            assert time.monotonic() < deadline, f"{target} neither exited nor listened"
            time.sleep(0.1)
        stderr = proc.stderr.read() if proc.stderr else ""
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)
        if proc.stderr:
            proc.stderr.close()
    assert proc.returncode != 0
    assert "ConfigurationError" in stderr and "AUTH_MODE=local" in stderr and "K_SERVICE" in stderr, stderr[-2000:]


def test_importing_main_refuses_local_auth_on_cloud_run(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", "import main"], cwd=REPO, capture_output=True, text=True,
                          env=_env(tmp_path, K_SERVICE="agent-run", AUTH_MODE="local"), timeout=60, check=False)
    assert done.returncode != 0 and "refused on Cloud Run" in done.stderr, done.stderr[-2000:]


def test_cloud_run_without_auth_mode_starts_in_firebase_mode(tmp_path: Path) -> None:
    port = _free_port()
    log = tmp_path / "run.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(_functions_framework("run", port), cwd=REPO, stdout=out, stderr=subprocess.STDOUT,
                                env=_env(tmp_path, K_SERVICE="agent-run"))
    try:
        deadline = time.monotonic() + START_LIMIT_S
        while True:
            assert proc.poll() is None, log.read_text()[-2000:]
            req = urllib.request.Request(f"http://127.0.0.1:{port}/api/agent/run", method="POST",
                                         data=json.dumps({"prompt": "hi"}).encode(),
                                         headers={"Content-Type": "application/json",
                                                  "Authorization": "Bearer dev:alice"})
            try:
                urllib.request.urlopen(req, timeout=30)
                pytest.fail("a dev identity was accepted on Cloud Run")
            except urllib.error.HTTPError as exc:
                status, body = exc.code, json.loads(exc.read())
                break
            except (ConnectionError, urllib.error.URLError):
                assert time.monotonic() < deadline, log.read_text()[-2000:]
                time.sleep(0.1)
        # Firebase mode: the dev token is not a JWT, so it is refused before any certificate fetch.
        assert status == 401, body
        assert body["error"]["code"] and "Firebase" in body["error"]["message"]
    finally:
        proc.terminate()
        proc.wait(10)


def test_devserver_refuses_cloud_run(tmp_path: Path) -> None:
    for extra in ({}, {"AUTH_MODE": "local"}):
        env = _env(tmp_path, K_SERVICE="agent-run", PORT=str(_free_port()), **extra)
        done = subprocess.run([sys.executable, "devserver.py"], cwd=REPO, env=env, capture_output=True, text=True,
                              timeout=60, check=False)
        assert done.returncode != 0, done.stderr[-2000:]
        assert "K_SERVICE" in done.stderr, done.stderr[-2000:]
        assert not (tmp_path / "state.sqlite3").exists()  # refused before opening any state


@pytest.mark.parametrize("value", [None, "firebase"])
def test_settings_accept_firebase_or_the_default_on_cloud_run(monkeypatch: pytest.MonkeyPatch,
                                                             value: str | None) -> None:
    from shared.config import Settings

    monkeypatch.setenv("K_SERVICE", "agent-run")
    if value is None:
        monkeypatch.delenv("AUTH_MODE", raising=False)
    else:
        monkeypatch.setenv("AUTH_MODE", value)
    settings = Settings.from_env()
    assert settings.auth_mode == "firebase" and settings.on_cloud_run


def test_settings_refuse_local_auth_on_cloud_run(monkeypatch: pytest.MonkeyPatch) -> None:
    from shared.config import Settings
    from shared.errors import ConfigurationError

    monkeypatch.setenv("K_SERVICE", "agent-run")
    monkeypatch.setenv("AUTH_MODE", "local")
    with pytest.raises(ConfigurationError, match=r"AUTH_MODE=local.*K_SERVICE"):
        Settings.from_env()
    monkeypatch.delenv("K_SERVICE")
    assert Settings.from_env().auth_mode == "local"
