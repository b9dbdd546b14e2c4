"""The peer frameworks in the same run (``BENCH_PEERS=1``): ../shared/bench-peers, its venv and scripts.

The peer benchmark (its README) times one scenario in each framework: a scripted zero-latency model
calls a trivial tool once per turn, N = 1 and N = 10 times; per step = (t(10) - t(1)) / 9, medians,
and a fixed pure-Python workload (REF) timed in each process. Here its scripts run one process
at a time (this project through its ``bench_ours.py`` with this checkout and this venv, then each
peer's durable configurations in the peers' venv), and the figures are compared as shares of
each process's REF, since the machine's speed drifts between processes.

- ``BENCH_PEERS_DIR`` (default ``../shared/bench-peers`` beside this checkout): the scripts, copied
  to a temporary directory (the folder may be read-only: they write ``db/`` next to themselves);
  ``bench/peer_ours.py``, our maintained copy of its ``bench_ours.py``, replaces that one.
- ``BENCH_PEERS_VENV`` (default ``var/peers-venv`` in this checkout): the peers' virtualenv, pinned
  in ``bench/peers-requirements.txt``; ``BENCH_PEERS=1 make bench`` builds it when missing. Missing
  here (``python -m bench.run`` alone), the section says so and nothing is measured.
- ``BENCH_PEERS_CLOCK=cpu``: every process timed on its CPU time instead of the wall clock (the
  harness unchanged, its clock replaced): on a loaded machine the wall clock counts the waits for a
  core, which are not the frameworks' cost.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from typing import Any

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PEERS: tuple[tuple[str, str, str], ...] = (
    # (framework as the scripts name it, script, --only filter selecting its persisted configurations)
    ("langgraph", "bench_langgraph.py", "SqliteSaver"),
    ("openai_agents", "bench_openai_agents.py", "SQLiteSession(file)"),
    ("google_adk", "bench_adk.py", "SessionService"),
)
OURS_CONFIG = "sqlite-file"
PER_STEP_RATIO_TARGET = 0.12
"""Issue 33 (issue 20 asked 0.10): per step, ours / the best durable peer, REF-normalised."""
RUN_1_STEP_RATIO_TARGET = 0.5


def peers_dir() -> str:
    return os.environ.get("BENCH_PEERS_DIR", os.path.join(REPO, "..", "shared", "bench-peers"))


def peers_python() -> str:
    venv = os.environ.get("BENCH_PEERS_VENV", os.path.join(REPO, "var", "peers-venv"))
    return os.path.join(venv, "bin", "python")


CPU_CLOCK = ("import runpy, sys, time; time.perf_counter = time.process_time; sys.argv = sys.argv[1:]; "
             "runpy.run_path(sys.argv[0], run_name='__main__')")
"""Runs a harness script with its clock (``common.py`` reads ``time.perf_counter`` at each use) made
the process's CPU time: every figure then counts CPU of all the process's threads, not waits."""


def clock() -> str:
    """``BENCH_PEERS_CLOCK``: ``wall`` (the harness as written; the issue's figure) or ``cpu``."""
    value = os.environ.get("BENCH_PEERS_CLOCK", "wall").strip() or "wall"
    if value not in ("wall", "cpu"):
        raise ValueError(f"BENCH_PEERS_CLOCK must be wall or cpu, got {value!r}")
    return value


def _run(py: str, script: str, only: str, work: str, out: str, quick: bool, log: Any) -> None:
    reps, blocks, warmup = (30, 3, 5) if quick else (100, 5, 10)
    env = {**os.environ, "PROJECT_DIR": REPO, "OURS_FIRESTORE": "0"}
    cmd = [py, *(["-c", CPU_CLOCK] if clock() == "cpu" else []), script, "--reps", str(reps), "--warmup",
           str(warmup), "--blocks", str(blocks), "--only", only, "--json", out]
    log(f"peers: {script} --only {only}")
    done = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=1800, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{script} failed ({done.returncode}): {done.stderr[-1500:]}")


def _row(r: dict[str, Any]) -> dict[str, Any]:
    ref = float(r["ref_median_us"])
    step, one = float(r["per_step_median_us"]), float(r["N1"]["median_us"])
    return {"framework": r["framework"], "config": r["config"], "per_step_us": round(step, 1),
            "run_1_step_us": round(one, 1), "run_10_steps_us": round(float(r["N10"]["median_us"]), 1),
            "ref_us": round(ref, 1), "per_step_ref_pct": round(step / ref * 100, 1),
            "run_1_step_ref_pct": round(one / ref * 100, 1)}


def figures(quick: bool, log: Any) -> dict[str, Any]:
    """Ours (``bench_ours.py sqlite-file``) and every peer's persisted configurations, measured now,
    with ``ratio`` = ours / best durable peer (REF-normalised; ``ratio_raw``: plain medians)."""
    src, py = peers_dir(), peers_python()
    if not os.path.isfile(py):
        return {"measured": False, "note": f"no peers venv at {py}: BENCH_PEERS=1 make bench builds it "
                                           "(bench/peers-requirements.txt), or set BENCH_PEERS_VENV"}
    work = tempfile.mkdtemp(prefix="bench-peers-")
    for name in os.listdir(src):
        path = os.path.join(src, name)
        if name.endswith(".py") or (os.path.isdir(path) and name == "fnmod"):
            (shutil.copytree if os.path.isdir(path) else shutil.copy)(path, os.path.join(work, name))
    # The folder's bench_ours.py imports our internals as they were: our maintained copy runs instead.
    shutil.copy(os.path.join(REPO, "bench", "peer_ours.py"), os.path.join(work, "bench_ours.py"))
    out = os.path.join(work, "runtime.jsonl")
    _run(sys.executable, "bench_ours.py", OURS_CONFIG, work, out, quick, log)
    for _, script, only in PEERS:
        _run(py, script, only, work, out, quick, log)
    with open(out) as f:
        rows = [_row(json.loads(line)) for line in f if line.strip()]
    ours = next(r for r in rows if r["framework"] == "ours" and r["config"] == OURS_CONFIG)
    durable = [r for r in rows if r["framework"] != "ours"]
    best_step = min(durable, key=lambda r: r["per_step_ref_pct"])
    best_one = min(durable, key=lambda r: r["run_1_step_ref_pct"])
    step_ratio = ours["per_step_ref_pct"] / best_step["per_step_ref_pct"]
    one_ratio = ours["run_1_step_ref_pct"] / best_one["run_1_step_ref_pct"]
    return {
        "measured": True, "quick": quick, "clock": clock(), "ours": ours, "durable_peers": durable,
        "per_step": {"best_durable_peer": f"{best_step['framework']} {best_step['config']}",
                     "ratio": round(step_ratio, 3),
                     "ratio_raw": round(ours["per_step_us"] / best_step["per_step_us"], 3),
                     "target": PER_STEP_RATIO_TARGET, "met": step_ratio <= PER_STEP_RATIO_TARGET},
        "run_1_step": {"best_durable_peer": f"{best_one['framework']} {best_one['config']}",
                       "ratio": round(one_ratio, 3),
                       "ratio_raw": round(ours["run_1_step_us"] / best_one["run_1_step_us"], 3),
                       "target": RUN_1_STEP_RATIO_TARGET, "met": one_ratio <= RUN_1_STEP_RATIO_TARGET},
    }
