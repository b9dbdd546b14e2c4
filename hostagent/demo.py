"""``make host-demo [HOST=alt]``: start a host, run ``host-agent`` against it, show the session.

``python -m hostagent.demo --host reference|alt``: the reference host (default) or the independent
alternative host (``hostagent/alt_host``, another uiSpec dialect). Offline by default (the rules
planner); ``HOST_DEMO_PLANNER=llm`` uses Gemini (GEMINI_API_KEY). ``HOST_DEMO_GOAL`` replaces the
goal; ``HOST_DEMO_FAULTS`` (comma-separated fault specs, see the host's ``faults.py``) replaces the
default fault, one failed ``confirm_booking`` that the agent recovers from. The goal leaves out the
contact details, so the agent asks and the host's simulated user answers. The JSONL log is written
to ``var/host-demo.jsonl``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hostagent.alt_host.server import running
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


@contextlib.contextmanager
def _host(kind: str, specs: list[str]) -> Iterator[Any]:
    if kind == "alt":
        with running(faults=specs) as alt:
            yield alt
    else:
        with serve_in_thread(faults=[parse_fault(s) for s in specs]) as reference:
            yield reference


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hostagent.demo", description="Run host-agent against a host.")
    parser.add_argument("--host", choices=("reference", "alt"), default="reference",
                        help="the reference host or the alternative host (default reference)")
    kind = parser.parse_args(sys.argv[1:] if argv is None else argv).host
    goal = os.environ.get("HOST_DEMO_GOAL", "").strip() or GOAL
    planner = os.environ.get("HOST_DEMO_PLANNER", "").strip() or "rules"
    specs = os.environ.get("HOST_DEMO_FAULTS", FAULTS)
    log_path = Path(os.environ.get("HOST_DEMO_LOG", "").strip() or REPO / "var" / "host-demo.jsonl")
    with _host(kind, [s.strip() for s in specs.split(",") if s.strip()]) as host:
        print(f"== {kind} host on {host.url} (faults: {specs or 'none'})", flush=True)
        command = [*_command(), "--url", host.url, "--room", "demo", "--goal", goal, "--log", str(log_path),
                   "--planner", planner, "--timeout-s", "5"]
        print(f"== {shlex.join(command)}", flush=True)  # the very command, to run again by hand
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
        code = subprocess.call(command, cwd=REPO, env=env)
    print(f"== host-agent exited {code}; the JSONL log is {log_path}", flush=True)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
