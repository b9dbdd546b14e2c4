"""``make dev`` provisions a local CREDENTIALS_ENCRYPTION_KEY (issue 14, scope 1): integrations work
in the one-command local run, the key survives restarts, and nothing is provisioned on Cloud Run."""

from __future__ import annotations

import base64
import json
import os
import stat
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from devserver import provision_local_encryption_key
from tests.e2e.test_startup_config import _env, _free_port

REPO = Path(__file__).resolve().parents[2]
START_LIMIT_S = 60.0


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    monkeypatch.delenv("K_SERVICE", raising=False)
    monkeypatch.delenv("CREDENTIALS_ENCRYPTION_KEY", raising=False)
    return monkeypatch


def test_first_start_creates_a_private_key_later_starts_reuse_it(env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    path = tmp_path / "var" / "credentials-encryption.key"
    assert provision_local_encryption_key(path) == path
    key = os.environ["CREDENTIALS_ENCRYPTION_KEY"]
    assert len(base64.b64decode(key, validate=True)) == 32
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text().strip() == key
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary file left behind
    env.delenv("CREDENTIALS_ENCRYPTION_KEY")
    assert provision_local_encryption_key(path) == path
    assert os.environ["CREDENTIALS_ENCRYPTION_KEY"] == key
    # A second environment gets its own key.
    env.delenv("CREDENTIALS_ENCRYPTION_KEY")
    provision_local_encryption_key(tmp_path / "other" / "key")
    assert os.environ["CREDENTIALS_ENCRYPTION_KEY"] != key


def test_an_explicit_key_wins_and_nothing_is_written(env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    explicit = base64.b64encode(bytes(range(32))).decode()
    env.setenv("CREDENTIALS_ENCRYPTION_KEY", explicit)
    assert provision_local_encryption_key(tmp_path / "var" / "key") is None
    assert os.environ["CREDENTIALS_ENCRYPTION_KEY"] == explicit
    assert not (tmp_path / "var").exists()


def test_never_on_cloud_run(env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    env.setenv("K_SERVICE", "agent-run")
    with pytest.raises(SystemExit, match="K_SERVICE"):
        provision_local_encryption_key(tmp_path / "var" / "key")
    assert not (tmp_path / "var").exists() and "CREDENTIALS_ENCRYPTION_KEY" not in os.environ


def test_a_damaged_key_file_is_refused_clearly(env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    path = tmp_path / "key"
    path.write_text("not a key\n")
    path.chmod(0o644)
    with pytest.raises(SystemExit, match=r"does not hold base64 of 32 bytes"):
        provision_local_encryption_key(path)
    assert "CREDENTIALS_ENCRYPTION_KEY" not in os.environ
    assert stat.S_IMODE(path.stat().st_mode) == 0o600  # a readable key file is made private first


def _request(port: int, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, dict[str, Any]]:
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method,
                                 data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Content-Type": "application/json", "Authorization": "Bearer dev:alice"})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def _serve(tmp_path: Path, log: Path) -> tuple[subprocess.Popen[bytes], int]:
    """``make dev`` as a user runs it: devserver.py in a fresh checkout directory (here tmp_path)."""
    port = _free_port()
    env = _env(tmp_path, PORT=str(port), DISPATCHER="inline")
    env.pop("SQLITE_PATH")  # the default, var/agent-runtime.sqlite3 in the working directory
    with log.open("ab") as out:
        proc = subprocess.Popen([sys.executable, str(REPO / "devserver.py")], cwd=tmp_path, env=env,
                                stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + START_LIMIT_S
    while True:
        assert proc.poll() is None, log.read_text()[-2000:]
        try:
            if _request(port, "GET", "/healthz")[0] == 200:
                return proc, port
        except (ConnectionError, urllib.error.URLError):
            pass
        assert time.monotonic() < deadline, log.read_text()[-2000:]
        time.sleep(0.1)


def test_make_dev_connects_integrations_and_keeps_its_key_across_restarts(tmp_path: Path) -> None:
    log = tmp_path / "dev.log"
    key_file = tmp_path / "var" / "credentials-encryption.key"
    proc, port = _serve(tmp_path, log)
    try:
        status, body = _request(port, "POST", "/api/integrations/slack", {"accessToken": "xoxp-local", "teamId": "T1"})
        assert status == 200 and body["connected"] is True, body
    finally:
        proc.terminate()
        proc.wait(10)
    key = key_file.read_text()
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert f"integrations: local key {Path('var') / key_file.name}" in log.read_text()
    proc, port = _serve(tmp_path, log)
    try:
        status, body = _request(port, "GET", "/api/integrations/slack")
        assert status == 200 and body["connected"] is True, body  # one integration: an object
    finally:
        proc.terminate()
        proc.wait(10)
    assert key_file.read_text() == key  # reused, not replaced: the stored tokens stay readable
    # The tokens are readable with that key (a replaced key would fail to decrypt them).
    done = subprocess.run(
        [sys.executable, "-c", "import os, sys; sys.path.insert(0, sys.argv[1]); "
         "from shared.runtime import get_runtime; "
         "print(get_runtime().connectors().slack_token('alice'))", str(REPO)],
        cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False,
        env={**_env(tmp_path), "CREDENTIALS_ENCRYPTION_KEY": key.strip(), "SQLITE_PATH": "var/agent-runtime.sqlite3"})
    assert done.stdout.strip() == "xoxp-local", done.stderr[-2000:]
