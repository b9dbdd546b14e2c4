"""``make host-demo``: start the reference host, run ``host-agent`` against it, show the session.

Offline by default (the rules planner); ``HOST_DEMO_PLANNER=llm`` uses Gemini (GEMINI_API_KEY).
``HOST_DEMO_GOAL`` replaces the goal; ``HOST_DEMO_FAULTS`` (comma-separated fault specs, see
``hostagent/reference_host/faults.py``) replaces the default fault, one failed ``confirm_booking``
that the agent recovers from. The goal leaves out the contact details, so the agent asks and the
reference host's simulated user answers. The JSONL log is written to ``var/host-demo.jsonl``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from hostagent.reference_host.faults import parse_fault
from hostagent.reference_host.server import serve_in_thread

REPO = Path(__file__).resolve().parents[1]
GOAL = "Book two tickets for Inside Out 2 on 2026-07-02 in the afternoon, coupon save10"
FAULTS = "tool_execution_failed:confirm_booking:1"


def _command() -> list[str]:
    launcher = REPO / ".venv" / "bin" / "host-agent"
    if launcher.is_file() and os.access(launcher, os.X_OK):
        return [str(launcher)]
    return [sys.executable, "-m", "hostagent.cli"]  # e.g. run without `make venv`


def main() -> int:
    goal = os.environ.get("HOST_DEMO_GOAL", "").strip() or GOAL
    planner = os.environ.get("HOST_DEMO_PLANNER", "").strip() or "rules"
    specs = os.environ.get("HOST_DEMO_FAULTS", FAULTS)
    faults = [parse_fault(s) for s in specs.split(",") if s.strip()]
    log_path = Path(os.environ.get("HOST_DEMO_LOG", "").strip() or REPO / "var" / "host-demo.jsonl")
    with serve_in_thread(faults=faults) as host:
        print(f"== reference host on {host.url} (faults: {specs or 'none'})", flush=True)
        command = [*_command(), "--url", host.url, "--room", "demo", "--goal", goal, "--log", str(log_path),
                   "--planner", planner, "--timeout-s", "5"]
        print(f"== {' '.join(command[:1])} --room demo --planner {planner} --log {log_path}", flush=True)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
        code = subprocess.call(command, cwd=REPO, env=env)
    print(f"== host-agent exited {code}; the JSONL log is {log_path}", flush=True)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
