"""The official AG-UI client and validator against the live endpoint (issue 34): ``make dev``'s
server (``devserver.py``, its own process, SQLite, the inline dispatcher) with the real google-genai
SDK against the fake model process of ``make load`` (a save_memory call that needs approval).

- ``@ag-ui/client``'s ``HttpAgent`` (pinned in tests/agui_npm/package-lock.json, run by Node):
  run → interrupt → resume → success, and the side effect ran exactly once;
- ``ag-ui-validate <url>`` (pinned in requirements-dev.txt) on the live endpoint: 0 errors, 0 warnings.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.load import REPO, dev_server, fake_model, server_env
from shared.config import Settings
from shared.runtime import Runtime
from shared.state.sqlite_docstore import SqliteDocStore

CLIENT_DIR = REPO / "tests" / "agui_npm"
NODE = shutil.which("node")
VALIDATE = Path(sys.executable).with_name("ag-ui-validate")


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    with fake_model(0.0, tmp_path / "logs") as (model_env, _):
        env = server_env("unused", "demo-agui", model_env)
        env.pop("FIRESTORE_EMULATOR_HOST", None)
        db = tmp_path / "state.sqlite3"
        env.update({"STATE_BACKEND": "sqlite", "SQLITE_PATH": str(db), "STREAM_HEARTBEAT_S": "5"})
        with dev_server(env, tmp_path / "logs") as (port, _):
            yield f"http://127.0.0.1:{port}/api/agent/agui", db


def memories(db: Path) -> list[str]:
    store = SqliteDocStore(str(db))
    try:
        return [m.text for m in Runtime(Settings(), store=store).users.list_memories("alice")]
    finally:
        store.close()


def test_the_official_client_runs_interrupts_and_resumes(server: tuple[str, Path]) -> None:
    url, db = server
    assert NODE is not None, "node is missing: the AG-UI client test runs @ag-ui/client under Node"
    assert (CLIENT_DIR / "node_modules" / "@ag-ui" / "client").exists(), \
        "tests/agui_npm/node_modules is missing: make test installs it (npm ci)"
    done = subprocess.run([NODE, "interrupt_resume.mjs", url, "dev:alice",
                           "Please save this to memory.\nremember: load-node"], cwd=CLIENT_DIR,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    [interrupt] = got["interrupts"]
    assert interrupt["id"].startswith("apr_") and interrupt["toolCallId"].startswith("act_")
    assert got["firstEvents"][0] == "RUN_STARTED" and got["firstEvents"][-1] == "RUN_FINISHED"
    assert "TOOL_CALL_START" in got["firstEvents"]
    assert got["secondEvents"][0] == "RUN_STARTED" and got["secondEvents"][-1] == "RUN_FINISHED"
    assert "TOOL_CALL_RESULT" in got["secondEvents"] and got["pendingAfter"] == []
    assert got["secondResult"] == "Saved, I will remember that."
    assert got["messages"][0]["role"] == "user"
    assert memories(db) == ["The user asked to remember load-node."]  # the side effect, exactly once


def test_ag_ui_validate_on_the_live_endpoint(server: tuple[str, Path]) -> None:
    url, _ = server
    assert VALIDATE.exists(), f"{VALIDATE} is missing: requirements-dev.txt pins ag-ui-validate"
    done = subprocess.run([str(VALIDATE), url, "--header", "Authorization: Bearer dev:alice", "--json",
                           "--max-warnings", "0", "--timeout", "60"], capture_output=True, text=True, timeout=120,
                          check=False)
    report = json.loads(done.stdout)
    assert done.returncode == 0, json.dumps(report, indent=1)[:4000]
    assert (report["summary"]["errors"], report["summary"]["warnings"]) == (0, 0)
