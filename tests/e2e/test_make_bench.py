"""Issue 33: ``BENCH_PEERS=1 make bench`` is the one command of the acceptance run: it builds the
peers' virtualenv from its pinned requirements when missing, and measures the previous commit
beside this tree. Checked on what make would run (``make -n``, nothing is installed or measured)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def dry_run(tmp_path: Path, *assignments: str) -> list[str]:
    done = subprocess.run(["make", "-n", "bench", f"VENV={tmp_path / 'fresh-venv'}", *assignments], cwd=REPO,
                          capture_output=True, text=True, timeout=60, check=True)
    return done.stdout.splitlines()


def test_with_the_peers_make_bench_builds_their_pinned_venv_first(tmp_path: Path) -> None:
    venv = tmp_path / "peers-venv"
    commands = dry_run(tmp_path, "BENCH_PEERS=1", f"BENCH_PEERS_VENV={venv}")
    build = next(i for i, c in enumerate(commands) if c.endswith(f"{venv}/bin/pip install -q "
                                                                 "--disable-pip-version-check -r "
                                                                 "bench/peers-requirements.txt"))
    run = next(i for i, c in enumerate(commands) if c.endswith("-m bench.run"))
    assert build < run
    assert f"BENCH_PEERS_VENV={venv}" in commands[run] and "BENCH_BASELINE_REF=HEAD~1" in commands[run]


def test_without_the_peers_no_peers_venv_is_built(tmp_path: Path) -> None:
    commands = dry_run(tmp_path, f"BENCH_PEERS_VENV={tmp_path / 'peers-venv'}")
    assert not any("peers-requirements" in c for c in commands), commands
    assert any(c.endswith("-m bench.run") and "BENCH_BASELINE_REF=HEAD~1" in c for c in commands), commands


def test_a_baseline_commit_given_to_make_is_the_one_measured(tmp_path: Path) -> None:
    commands = dry_run(tmp_path, "BENCH_BASELINE_REF=abc1234")
    assert any("BENCH_BASELINE_REF=abc1234" in c and c.endswith("-m bench.run") for c in commands), commands


def test_the_peers_requirements_are_pinned() -> None:
    lines = [ln.strip() for ln in (REPO / "bench" / "peers-requirements.txt").read_text().splitlines()]
    pins = [ln for ln in lines if ln and not ln.startswith("#")]
    assert pins and all(re.fullmatch(r"[A-Za-z0-9_.\-\[\]]+==[A-Za-z0-9_.+\-]+", p) for p in pins), pins
    names = {p.split("==")[0].lower() for p in pins}
    assert {"openai-agents", "langgraph-checkpoint-sqlite", "google-adk"} <= names
    assert len(names) == len(pins)  # no package pinned twice
