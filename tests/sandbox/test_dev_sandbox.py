"""``make dev`` runs its own sandbox service (a child process) and points the runtime at it."""

from __future__ import annotations

from pathlib import Path

import pytest

from devserver import start_local_sandbox
from shared.config import Settings
from shared.workspaces import sandbox_client


def test_make_dev_starts_a_sandbox_and_the_workspace_tools_reach_it(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SANDBOX_URL", raising=False)
    monkeypatch.delenv("SANDBOX_KEY", raising=False)
    proc = start_local_sandbox(tmp_path / "snapshots")
    try:
        settings = Settings.from_env()
        assert settings.sandbox_url and settings.sandbox_url.startswith("http://127.0.0.1:")
        box = sandbox_client(settings)
        box.create("ws_devserver01")
        assert box.exec("ws_devserver01", "echo hi > a && cat a", timeout_s=10).stdout == "hi\n"
        assert (tmp_path / "snapshots" / "ws_devserver01.tar.gz").exists()
    finally:
        proc.kill()
        proc.wait()
