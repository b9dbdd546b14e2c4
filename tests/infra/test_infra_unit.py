"""Runs the infra program's own offline unit tests (Pulumi mocks) in their own environment.

infra/ cannot share this virtualenv (pulumi needs protobuf<7, the runtime uses 7), so its suite
runs through ``make -C infra test``, which creates infra/.venv when missing.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_infra_unit_tests_pass() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if ".venv" not in p)
    proc = subprocess.run(["make", "--no-print-directory", "-C", str(REPO / "infra"), "test"],
                          capture_output=True, text=True, env=env)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    summary = re.search(r"(\d+) passed", output)
    assert summary and int(summary.group(1)) >= 50, output
    assert " failed" not in output and " skipped" not in output, output
