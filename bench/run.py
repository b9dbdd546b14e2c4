"""``make bench``: performance figures of issue 2 as one JSON object on stdout (progress on stderr).

    python -m bench.run [--quick]

Sections: ``reference`` (a fixed pure-Python loop timed in this run; ``ratio_to_reference`` =
value / reference_ms; ``peers_ms``: the peer benchmark's REF workload, of which ``*_ref_pct`` are
shares), ``per_step`` (per store, with documents written per step and per streamed answer chunk),
``run_start_growth`` (bench/growth.py), ``peers`` (``BENCH_PEERS=1``: bench/peers.py), ``memory``,
``cold_start`` (bench/coldstart.py, alone: ``python -m bench.coldstart``), ``genai_import``,
``versus_baseline`` (per-step and commits of this tree and of a baseline commit, bench/versus.py),
``plans`` (plan sessions: per act, continuation latency through Pub/Sub; bench/plans.py),
``tracing`` (per step with OpenTelemetry tracing off and on; bench/tracing_cost.py),
``round_trips`` (issue 33: sequential store round trips before the first model call, per tool step,
to resume, per plan act and plan-session start, and with 10 ms injected per round trip;
bench/round_trips.py, alone: ``python -m bench.round_trips``), ``features`` (issue 33: each new
feature's round trips, documents and modules when off, and on where measurable; bench/features.py)
and ``targets`` (the issue's targets with ``met``); ``commit`` names the tree measured and the
baseline. docs/benchmarks.md explains every figure; ``python -m bench.acceptance <this JSON>``
prints issue 33's acceptance table from it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import Iterator
from typing import Any

from bench import coldstart, features, growth, memory, peers, plans, round_trips, sandbox, steps, tracing_cost, versus
from bench.emulator import firestore_emulator, firestore_store, sqlite_store
from bench.fakemodel import tool_then_answer
from bench.reference import peers_reference_ms, reference_ms
from bench.targets import (
    COLD_START_OVERHEAD_PCT,
    COMMITS_PER_STEP_WITHOUT_TOOL,
    CONCURRENT_RSS_MIB,
    CPU_PER_STEP_MS,
    DOCUMENTS_PER_TOOL_STEP,
    PEERS_PER_STEP_MS,
    PER_STEP_SQLITE_MS,
    PER_STEP_SQLITE_REF_PCT,
    RUN_1_STEP_REF_PCT,
    RUN_START_GROWTH_RATIO,
    WARM_RSS_MIB,
    at_most,
)


def progress(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def base_env(**extra: str) -> dict[str, str]:
    """The environment of measured subprocesses: no inherited runtime or Gemini settings."""
    drop = ("K_SERVICE", "GEMINI_", "STATE_BACKEND", "SQLITE_", "DISPATCHER", "AUTH_MODE", "FIRESTORE_", "PUBSUB_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env.update({"AUTH_MODE": "local", "DISPATCHER": "none", "GOOGLE_CLOUD_PROJECT": "demo-agent-bench", **extra})
    return env


# ---- per step ---------------------------------------------------------------------------------
def per_step(tmp: str, fs_host: str, quick: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    plans: list[tuple[str, Any, int]] = [
        ("sqlite_file", lambda: sqlite_store(os.path.join(tmp, "steps.sqlite3")), 30),
        ("sqlite_file_synchronous_full", lambda: _sqlite_full(os.path.join(tmp, "steps-full.sqlite3")), 30),
        ("sqlite_memory", lambda: sqlite_store(":memory:"), 30),
        ("firestore_emulator", lambda: firestore_store(fs_host), 7),
    ]
    for name, opener, repeats in plans:
        progress(f"per-step: {name}")
        before, peers_before = reference_ms(), peers_reference_ms()
        with opener() as store:
            out[name] = steps.measure(store, repeats=max(3, repeats // 3) if quick else repeats)
        # The machine's speed drifts within a run: each store's ratios use a reference taken around it.
        out[name]["local_reference_ms"] = round((before + reference_ms()) / 2, 3)
        peers_ref = (peers_before + peers_reference_ms()) / 2
        out[name]["local_peers_reference_ms"] = round(peers_ref, 3)
        out[name]["per_step_ref_pct"] = round(out[name]["per_step_ms"] / peers_ref * 100, 1)
        out[name]["run_1_step_ref_pct"] = round(out[name]["run_1_step_ms"] / peers_ref * 100, 1)
    out["sqlite_file"]["note"] = "the default store: WAL, synchronous=NORMAL (survives a process crash)"
    out["sqlite_file_synchronous_full"]["note"] = "SQLITE_SYNCHRONOUS=FULL: one fsync per commit (power loss)"
    out["sqlite_memory"]["note"] = "':memory:' (no durability), for comparison"
    return out


@contextlib.contextmanager
def _sqlite_full(path: str) -> Iterator[Any]:
    from shared.state.sqlite_docstore import SqliteDocStore

    store = SqliteDocStore(path, synchronous="FULL")
    try:
        yield store
    finally:
        store.close()


# ---- run start growth -------------------------------------------------------------------------
def run_start_growth(tmp: str, fs_host: str, quick: bool) -> dict[str, Any]:
    earlier = 1000 if quick else growth.EARLIER_RUNS
    entries = 500 if quick else growth.LEDGER_ENTRIES
    progress(f"run start growth: SQLite, one-step runs before and after {earlier} earlier runs of the user")
    out: dict[str, Any] = growth.sqlite_growth(lambda name: sqlite_store(os.path.join(tmp, f"{name}.sqlite3")),
                                               earlier_runs=earlier)
    out["target"] = RUN_START_GROWTH_RATIO
    out["met"] = out["ratio"] <= RUN_START_GROWTH_RATIO
    progress(f"run start growth: documents read per start, empty ledger and {entries} entries (both stores)")
    with sqlite_store(os.path.join(tmp, "growth-reads.sqlite3")) as store:
        out["reads_sqlite"] = growth.start_reads(store, entries=entries)
    with firestore_store(fs_host) as store:
        out["reads_firestore_emulator"] = growth.start_reads(store, entries=entries)
    return out


# ---- memory -----------------------------------------------------------------------------------
def memory_figures(tmp: str, fs_host: str) -> dict[str, Any]:
    out: dict[str, Any] = {"model": "GeminiModel (google-genai) against a local fake Gemini server",
                           "concurrent_model_latency_ms": 50}
    with tool_then_answer(0.0) as fast, tool_then_answer(0.05) as slow:
        for backend, extra in (("firestore", {"FIRESTORE_EMULATOR_HOST": fs_host}),
                               ("sqlite", {"SQLITE_PATH": os.path.join(tmp, f"mem-{time.time_ns()}.sqlite3")})):
            progress(f"memory: warm instance ({backend})")
            out[f"warm_instance_{backend}"] = memory.warm_instance(base_env(STATE_BACKEND=backend, **extra,
                                                                            **fast.env()))
            progress(f"memory: {memory.CONCURRENT} concurrent streaming runs ({backend})")
            extra = {**extra, "SQLITE_PATH": os.path.join(tmp, f"conc-{time.time_ns()}.sqlite3")}
            out[f"concurrent_streams_{backend}"] = memory.concurrent_streams(
                base_env(STATE_BACKEND=backend, **extra, **slow.env()))
    return out


# ---- cold start and imports -------------------------------------------------------------------
def cold_start_figures(fs_host: str, quick: bool, rounds: int = 0, max_rounds: int = 0) -> dict[str, Any]:
    with tool_then_answer(0.0) as fake:
        # Production configuration: Firestore, Gemini (here the fake server), Pub/Sub dispatcher.
        env = base_env(STATE_BACKEND="firestore", FIRESTORE_EMULATOR_HOST=fs_host, DISPATCHER="pubsub",
                       PUBSUB_EMULATOR_HOST="127.0.0.1:9", **fake.env())
        return coldstart.figures(env, quick=quick, log=progress, rounds=rounds, max_rounds=max_rounds)


def genai_checks(tmp: str) -> dict[str, Any]:
    """approve, resume and runs serve a real request in a fresh process; google.genai must stay unloaded."""
    from bench.genai_check import run_checks

    progress("google.genai import checks (approve, resume, runs)")
    with tool_then_answer(0.0) as fake:
        return run_checks(os.path.join(tmp, "genai-check.sqlite3"), base_env(**fake.env()))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="fewer repeats (a smoke run, noisier figures)")
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    tmp = tempfile.mkdtemp(prefix="bench-")
    reference_ms(3)  # warm the CPU and caches up: the first timings of a process run slow
    ref_before = reference_ms()
    peers_ref_before = peers_reference_ms()
    progress(f"reference loop: {ref_before:.2f} ms")
    peer_figures: dict[str, Any] = {"measured": False, "note": "set BENCH_PEERS=1 (bench/peers.py)"}
    if os.environ.get("BENCH_PEERS", "").strip() in ("1", "true", "yes"):
        # First, alone: no emulator JVM beside the peers' processes.
        peer_figures = peers.figures(args.quick, progress)
    with firestore_emulator() as fs_host:
        progress("round trips on the paths a user waits on (bench/round_trips.py)")
        trips = round_trips.run("firestore", fs_host)
        progress("features free when off: round trips, documents and modules per feature (bench/features.py)")
        feature_costs = features.figures("firestore", fs_host)
        per = per_step(tmp, fs_host, args.quick)
        start_growth = run_start_growth(tmp, fs_host, args.quick)
        mem = memory_figures(tmp, fs_host)
        cold = cold_start_figures(fs_host, args.quick)
        progress("per-step and commits against the baseline commit (bench/versus.py)")
        against = versus.compare(fs_host, tmp, base_env(FIRESTORE_EMULATOR_HOST=fs_host), quick=args.quick)
        progress("plan sessions: per act, and continuation through the Pub/Sub emulator (bench/plans.py)")
        plan_figures = plans.figures(fs_host, tmp, args.quick)
    genai = genai_checks(tmp)
    progress("sandbox: container_exec of true, snapshot/restore of a 2,000-file workspace (bench/sandbox.py)")
    sandbox_figures = sandbox.figures(args.quick)
    progress("tracing: per step off and on, and its import time (bench/tracing_cost.py)")
    traced = tracing_cost.figures(args.quick)
    ref_after = reference_ms()
    ref = (ref_before + ref_after) / 2
    peers_ref = (peers_ref_before + peers_reference_ms()) / 2
    for figures in per.values():
        for key in ("per_step_ms", "cpu_per_step_ms", "cpu_per_step_excl_store_ms", "run_1_step_ms",
                    "run_10_steps_ms"):
            figures[f"{key}_ratio_to_reference"] = round(figures[key] / figures["local_reference_ms"], 4)
    for f in cold["functions"].values():
        if "seconds" in f:
            f["ratio_to_reference"] = round(f["seconds"] * 1000 / ref, 2)
    worst_warm = max(mem["warm_instance_firestore"]["VmHWM"], mem["warm_instance_sqlite"]["VmHWM"])
    worst_conc = max(mem["concurrent_streams_firestore"]["peak_VmHWM_mib"],
                     mem["concurrent_streams_sqlite"]["peak_VmHWM_mib"])
    out = {
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform(),
                    "load_average": [round(x, 2) for x in os.getloadavg()]},
        "commit": {"head": versus.head(), "baseline": against.get("ref"),
                   "what": "the tree measured (git HEAD, + if uncommitted changes) and versus_baseline's commit"},
        "reference": {"ms": round(ref, 3), "before_ms": round(ref_before, 3), "after_ms": round(ref_after, 3),
                      "what": "bench.reference.reference_loop (20k iterations of dict/str/int work), median of 9",
                      "peers_ms": round(peers_ref, 3),
                      "peers_what": "bench.reference.peers_reference_loop, the peer benchmark's REF workload "
                                    "(*_ref_pct figures are shares of it, as in issue 20)"},
        "per_step": per,
        "run_start_growth": start_growth,
        "peers": peer_figures,
        "memory": mem,
        "cold_start": cold,
        "genai_import": genai,
        "versus_baseline": against,
        "plans": plan_figures,
        "sandbox": sandbox_figures,
        "tracing": traced,
        "round_trips": trips,
        "features": feature_costs,
        "targets": {
            **trips["targets"],
            # Ours at 10 ms per round trip beside the peers' own starts at the same latency (BENCH_PEERS=1).
            "ms_to_first_model_call_at_10ms_per_round_trip": round_trips.against_peers(
                trips["targets"]["ms_to_first_model_call_at_10ms_per_round_trip"],
                peer_figures.get("start_at_latency")),
            **coldstart.targets(cold),
            **feature_costs["targets"],
            "documents_written_per_tool_step": {
                store: {**at_most(per[store]["documents_written_per_step"], DOCUMENTS_PER_TOOL_STEP),
                        "by_collection": per[store]["documents_written_per_step_by_collection"]}
                for store in ("sqlite_file", "firestore_emulator")},
            "per_step_not_worse_than_baseline": {
                store: {"head_ms": against.get(store, {}).get("head", {}).get("per_step_ms"),
                        "baseline_ms": against.get(store, {}).get("baseline", {}).get("per_step_ms"),
                        "met": against.get(store, {}).get("per_step_not_worse")}
                for store in ("sqlite_file", "firestore_emulator")},
            "commits_per_step_not_worse_than_baseline": {
                store: {"head": against.get(store, {}).get("head", {}).get("commits_per_step_with_read_only_tool"),
                        "baseline": against.get(store, {}).get("baseline", {}).get(
                            "commits_per_step_with_read_only_tool"),
                        "met": against.get(store, {}).get("commits_per_step_not_worse")}
                for store in ("sqlite_file", "firestore_emulator")},
            "per_step_sqlite_ms": at_most(per["sqlite_file"]["per_step_ms"], PER_STEP_SQLITE_MS,
                                          per["sqlite_file"]["local_reference_ms"]),
            "per_step_sqlite_ref_pct": at_most(per["sqlite_file"]["per_step_ref_pct"], PER_STEP_SQLITE_REF_PCT),
            "run_1_step_sqlite_ref_pct": at_most(per["sqlite_file"]["run_1_step_ref_pct"], RUN_1_STEP_REF_PCT),
            "run_start_growth_ratio": at_most(start_growth["ratio"], RUN_START_GROWTH_RATIO),
            "container_exec_true_p50_ms": at_most(
                sandbox_figures["container_exec_true"]["service_round_trip_p50_ms"], sandbox.EXEC_P50_TARGET_MS, ref),
            "ledger_reads_per_start_constant": {
                store: {"empty": start_growth[key]["ledger_documents_read_per_start_empty"],
                        "after": start_growth[key]["ledger_documents_read_per_start_after"],
                        "met": start_growth[key]["same"]}
                for store, key in (("sqlite", "reads_sqlite"), ("firestore_emulator", "reads_firestore_emulator"))},
            "peers_per_step_ratio": peer_figures.get("per_step"),
            "peers_run_1_step_ratio": peer_figures.get("run_1_step"),
            "cpu_per_step_excl_store_ms": at_most(per["sqlite_file"]["cpu_per_step_excl_store_ms"],
                                                  CPU_PER_STEP_MS, per["sqlite_file"]["local_reference_ms"]),
            "firestore_per_step_ms": {"value": per["firestore_emulator"]["per_step_ms"], "target": None,
                                      "note": "report only"},
            "firestore_commits_per_step_without_tool": at_most(
                per["firestore_emulator"]["commits_per_step_without_tool"], COMMITS_PER_STEP_WITHOUT_TOOL),
            "warm_instance_rss_mib": at_most(worst_warm, WARM_RSS_MIB),
            "concurrent_20_streams_rss_mib": at_most(worst_conc, CONCURRENT_RSS_MIB),
            "cold_start_overhead_pct": {fn: {"value": f.get("overhead_pct"), "target": COLD_START_OVERHEAD_PCT,
                                             "met": f.get("met"),
                                             "value_vs_joint_imports": f.get("overhead_pct_vs_joint_imports"),
                                             "met_vs_joint_imports": f.get("met_vs_joint_imports")}
                                        for fn, f in cold["functions"].items()},
            "no_genai_import": {fn: {"genai_loaded": c.get("genai_loaded"), "met": c.get("genai_loaded") is False}
                                for fn, c in genai.items()},
            "peers_per_step_ms": PEERS_PER_STEP_MS,
        },
        "duration_s": round(time.perf_counter() - t0, 1),
    }
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
