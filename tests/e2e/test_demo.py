"""`make demo` (scripts/demo.py) end to end: it starts its own dev server on a free port with a fresh
SQLite file, and its output shows the run stopping for approval, the approval, and the resumed run."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 60


def sections(stdout: str) -> dict[str, list[str]]:
    """The demo's numbered sections ("== 1. ...") and their indented lines (the server's JSON log
    lines on the same stdout are left out)."""
    out: dict[str, list[str]] = {}
    current = ""
    for line in stdout.splitlines():
        if line.startswith("== "):
            current = line[3:].split(".", 1)[0]
            out[current] = [line]
        elif current and line.startswith("    "):
            out[current].append(line.strip())
    return out


def test_demo_runs_the_approval_tour_against_a_fresh_server(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items()
           if k not in ("LOG_LEVEL", "GEMINI_API_KEY", "GEMINI_USE_VERTEX", "GEMINI_BASE_URL", "K_SERVICE", "PORT",
                        "SQLITE_PATH", "STATE_BACKEND", "AUTH_MODE", "DISPATCHER")}
    env.update(TMPDIR=str(tmp_path), PYTHONUNBUFFERED="1")  # the demo's throw-away SQLite file goes here
    proc = subprocess.Popen([sys.executable, "scripts/demo.py"], cwd=ROOT, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the demo and the dev server it started
        stdout, stderr = proc.communicate()
        raise AssertionError(f"make demo did not finish in {TIMEOUT_S} s:\n{stdout[-3000:]}\n{stderr[-3000:]}"
                             ) from None
    assert proc.returncode == 0, f"{stdout[-3000:]}\n{stderr[-3000:]}"
    assert "model: offline model" in stderr and "store: sqlite" in stderr
    assert re.search(r"Dev console: http://127\.0\.0\.1:\d+/ ", stderr), stderr[-2000:]
    assert "\"severity\"" not in stdout  # the server logs to stderr: stdout is the tour alone
    assert '"severity": "INFO"' not in stderr  # in a terminal stderr shows too: no INFO lines between steps

    (demo_dir,) = tmp_path.glob("agent-demo-*")  # a fresh store, not var/agent-runtime.sqlite3
    assert (demo_dir / "demo.sqlite3").is_file()

    got = sections(stdout)
    assert list(got) == ["1", "2", "3", "4", "5"], stdout
    streamed = "\n".join(got["1"])
    assert '"type": "tool_call", "toolName": "save_memory"' in streamed
    assert '"status": "awaiting_confirmation"' in streamed
    assert "-> paused for approval apr_" in stdout
    assert got["2"][1].startswith("202 ") and '"decision":"approved"' in got["2"][1]
    resumed = got["3"][1:]
    assert resumed, "no resumed events were shown"
    assert any('"type": "tool_result", "toolName": "save_memory"' in line and '"status": "completed"' in line
               for line in resumed), resumed
    assert '"type": "result"' in resumed[-1] and '"status": "completed"' in resumed[-1]
    assert got["4"][1].startswith("200 ") and '"status": "completed"' in got["4"][1]
    assert "I prefer window seats" in got["4"][1]  # the follow-up found the approved memory
    assert got["5"][1].startswith("status=completed")
