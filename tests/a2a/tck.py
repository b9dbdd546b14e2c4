"""Running the official A2A TCK (``../shared/a2a-tck``, an unchanged copy at a pinned commit) against
a server, from a copy in a temporary directory (it writes its reports next to itself), with its
own virtualenv (``var/tck-venv``, ``make conformance`` installs it from tck-requirements.txt)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
TCK_VENV = REPO / "var" / "tck-venv"
TRANSPORTS = "jsonrpc,http_json"


def tck_dir() -> Path:
    """``A2A_TCK_DIR``, else ``shared/a2a-tck`` beside the checkout (CI, /work/main) or beside the
    worktrees' parent (/work/wt/issue-NN)."""
    env = os.environ.get("A2A_TCK_DIR")
    candidates = [Path(env)] if env else [REPO.parent / "shared" / "a2a-tck", REPO.parent.parent / "shared" / "a2a-tck"]
    for path in candidates:
        if (path / "run_tck.py").is_file():
            return path
    raise FileNotFoundError(f"the A2A TCK is not at {', '.join(map(str, candidates))} (set A2A_TCK_DIR)")


def tck_python() -> Path:
    python = TCK_VENV / "bin" / "python"
    if not python.is_file():
        raise FileNotFoundError(f"{python} is missing: run `make conformance` (it installs the TCK's venv)")
    return python


@dataclass
class TckResult:
    passed: int
    failed: int
    skipped: int
    failures: list[str]
    report: dict[str, Any]
    output: str


def run_tck(sut_url: str, work: Path, *, level: str = "must", timeout_s: float = 900) -> TckResult:
    """Run the TCK's tests of ``level`` over both HTTP transports; counts from its JUnit report."""
    copy = work / "a2a-tck"
    shutil.copytree(tck_dir(), copy, ignore=shutil.ignore_patterns("reports", "__pycache__", ".venv"))
    argv = [str(tck_python()), "run_tck.py", "--sut-host", sut_url, "--transport", TRANSPORTS, "--level", level]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    done = subprocess.run(argv, cwd=copy, env=env, capture_output=True, text=True, timeout=timeout_s)
    output = done.stdout[-20000:] + done.stderr[-5000:]
    junit = copy / "reports" / "junitreport.xml"
    if not junit.is_file():
        raise AssertionError(f"the TCK wrote no report (exit {done.returncode}):\n{output}")
    import xml.etree.ElementTree as ET

    passed = failed = skipped = 0
    failures: list[str] = []
    for case in ET.parse(junit).getroot().iter("testcase"):
        name = f"{case.get('classname')}::{case.get('name')}"
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
            node = case.find("failure") if case.find("failure") is not None else case.find("error")
            failures.append(f"{name}: {(node.get('message') if node is not None else '') or ''}"[:600])
        elif case.find("skipped") is not None:
            skipped += 1
        else:
            passed += 1
    report_path = copy / "reports" / "compatibility.json"
    report = json.loads(report_path.read_text()) if report_path.is_file() else {}
    return TckResult(passed, failed, skipped, failures, report, output)
