"""The peer frameworks in the same run (``BENCH_PEERS=1``): ../shared/bench-peers, its venv and scripts.

The peer benchmark (its README) times one scenario in each framework: a scripted zero-latency model
calls a trivial tool once per turn, N = 1 and N = 10 times; per step = (t(10) - t(1)) / 9, medians,
and a fixed pure-Python workload (REF) timed in each process. Here its scripts run one process
at a time (this project through its ``bench_ours.py`` with this checkout and this venv, then each
peer's durable configurations in the peers' venv), and the figures are compared as shares of
each process's REF, since the machine's speed drifts between processes. Then ``BENCH_PEERS_ROUNDS``
rounds in all (default 3, ``--quick`` 2) of ours and the best durable peer(s) only, alternating
which goes first: ``ratio`` is the median over rounds of ours / best (``ratios_per_round`` beside).

    python -m bench.peers [--quick]   (the section alone, with its targets; ~3-6 min)

- ``BENCH_PEERS_DIR`` (default ``../shared/bench-peers`` beside this checkout): the scripts, copied
  to a temporary directory (the folder may be read-only: they write ``db/`` next to themselves);
  ``bench/peer_ours.py``, our maintained copy of its ``bench_ours.py``, replaces that one.
- ``BENCH_PEERS_VENV`` (default ``var/peers-venv`` in this checkout): the peers' virtualenv, pinned
  in ``bench/peers-requirements.txt``; ``BENCH_PEERS=1 make bench`` builds it when missing. Missing
  here (``python -m bench.run`` alone), the section says so and nothing is measured.
- ``start_at_latency`` (issue 33): ``bench/peer_latency.py`` in the peers' venv, each durable
  peer's own start with 10 ms slept per call of its store API, until its first model call (that
  file says exactly what is counted); ``bench/round_trips.py`` measures ours the same way and
  ``bench/run.py`` puts both in ``targets.ms_to_first_model_call_at_10ms_per_round_trip``.
- ``BENCH_PEERS_CLOCK=cpu``: every process timed on its CPU time instead of the wall clock (the
  harness unchanged, its clock replaced): on a loaded machine the wall clock counts the waits for a
  core, which are not the frameworks' cost.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
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
LATENCY_MS = 10.0
"""Issue 33: the start of each peer with this much slept per store round trip (``start_at_latency``)."""


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


def start_at_latency(py: str, work: str, quick: bool, log: Any) -> dict[str, Any]:
    """Each durable peer's own start with ``LATENCY_MS`` slept per store round trip (``bench/peer_latency.py``
    in the peers' venv): ms to its first model call and the round trips before it; ``best`` = the fastest
    that had stored the conversation's input before that call (as ours has), ``fastest`` = of all."""
    shutil.copy(os.path.join(REPO, "bench", "peer_latency.py"), os.path.join(work, "peer_latency.py"))
    out = os.path.join(work, "latency.jsonl")
    log(f"peers: peer_latency.py, {LATENCY_MS:g} ms per store round trip")
    done = subprocess.run([py, "peer_latency.py", "--latency-ms", str(LATENCY_MS), "--runs", "7" if quick else "15",
                           "--json", out], cwd=work, env=dict(os.environ), capture_output=True, text=True,
                          timeout=900, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"peer_latency.py failed ({done.returncode}): {done.stderr[-1500:]}")
    with open(out) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    def fastest(rs: list[dict[str, Any]]) -> str:
        r = min(rs, key=lambda r: float(r["ms_to_first_model_call"]))
        return f"{r['framework']} {r['config']}"

    return {"latency_ms_per_round_trip": LATENCY_MS, "peers": rows,
            "best": fastest([r for r in rows if r["input_persisted_before_first_model_call"]]),
            "fastest": fastest(rows),
            "what": "bench/peer_latency.py: each peer's new conversation until its model's first call, every call "
                    "of its store API sleeping the latency first and counted as one round trip (medians); best: "
                    "the fastest whose input was stored before that call, as ours is; fastest: of all"}


def _row(r: dict[str, Any]) -> dict[str, Any]:
    ref = float(r["ref_median_us"])
    step, one = float(r["per_step_median_us"]), float(r["N1"]["median_us"])
    return {"framework": r["framework"], "config": r["config"], "per_step_us": round(step, 1),
            "run_1_step_us": round(one, 1), "run_10_steps_us": round(float(r["N10"]["median_us"]), 1),
            "ref_us": round(ref, 1), "per_step_ref_pct": round(step / ref * 100, 1),
            "run_1_step_ref_pct": round(one / ref * 100, 1)}


def rounds(quick: bool) -> int:
    """``BENCH_PEERS_ROUNDS`` (default 3, quick 2): rounds of ours against the best durable peer."""
    return max(1, int(os.environ.get("BENCH_PEERS_ROUNDS", "") or (2 if quick else 3)))


def _read(path: str) -> list[dict[str, Any]]:
    with open(path) as f:
        return [_row(json.loads(line)) for line in f if line.strip()]


def _pick(rows: list[dict[str, Any]], framework: str, config: str) -> dict[str, Any]:
    return next(r for r in rows if r["framework"] == framework and r["config"] == config)


def compare(per_round: list[dict[str, Any]], best: dict[str, Any], key: str, target: float) -> dict[str, Any]:
    """Ours / ``best`` on ``key`` (``per_step`` or ``run_1_step``) in each round (REF-normalised: each
    process's figure over its own REF), and the median over rounds (``ratio``, ``met`` on it)."""
    ratios = [r["ours"][f"{key}_ref_pct"] / r[key][f"{key}_ref_pct"] for r in per_round]
    raw = [r["ours"][f"{key}_us"] / r[key][f"{key}_us"] for r in per_round]
    ratio = statistics.median(ratios)
    return {"best_durable_peer": f"{best['framework']} {best['config']}", "ratio": round(ratio, 3),
            "ratios_per_round": [round(x, 3) for x in ratios], "ratio_raw": round(statistics.median(raw), 3),
            "target": target, "met": ratio <= target}


def figures(quick: bool, log: Any) -> dict[str, Any]:
    """Ours (``bench_ours.py sqlite-file``) and every peer's persisted configurations, measured now;
    then more rounds of ours and the best durable peer(s) only, alternating which goes first;
    ``ratio`` = the median over rounds of ours / best durable peer (REF-normalised; ``ratio_raw``:
    plain medians)."""
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
    rows = _read(out)
    ours = _pick(rows, "ours", OURS_CONFIG)
    durable = [r for r in rows if r["framework"] != "ours"]
    best_step = min(durable, key=lambda r: r["per_step_ref_pct"])
    best_one = min(durable, key=lambda r: r["run_1_step_ref_pct"])
    per_round = [{"ours": ours, "per_step": best_step, "run_1_step": best_one}]
    scripts = {name: script for name, script, _ in PEERS}
    for i in range(1, rounds(quick)):
        path = os.path.join(work, f"round-{i}.jsonl")
        runs = [(sys.executable, "bench_ours.py", OURS_CONFIG)]
        runs += [(py, scripts[r["framework"]], r["config"]) for r in {id(best_step): best_step,
                                                                       id(best_one): best_one}.values()]
        for run_py, script, only in runs if i % 2 == 0 else runs[::-1]:
            _run(run_py, script, only, work, path, quick, log)
        got = _read(path)
        per_round.append({"ours": _pick(got, "ours", OURS_CONFIG),
                          "per_step": _pick(got, best_step["framework"], best_step["config"]),
                          "run_1_step": _pick(got, best_one["framework"], best_one["config"])})
    latency = start_at_latency(py, work, quick, log)
    return {
        "measured": True, "quick": quick, "clock": clock(), "rounds": len(per_round), "ours": ours,
        "durable_peers": durable,
        "ours_per_round": [r["ours"] for r in per_round],
        "start_at_latency": latency,
        "per_step": compare(per_round, best_step, "per_step", PER_STEP_RATIO_TARGET),
        "run_1_step": compare(per_round, best_one, "run_1_step", RUN_1_STEP_RATIO_TARGET),
    }


def main(argv: list[str] | None = None) -> int:
    """``python -m bench.peers [--quick]``: the ``peers`` section alone (a few minutes), with its targets."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="fewer repetitions and rounds")
    args = p.parse_args(argv)
    got = figures(args.quick, lambda msg: print(f"[peers {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr,
                                                flush=True))
    print(json.dumps({"peers": got, "targets": {"peers_per_step_ratio": got.get("per_step"),
                                                "peers_run_1_step_ratio": got.get("run_1_step")}}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
