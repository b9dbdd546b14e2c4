"""Per-step overhead, commits, documents written and CPU per step on one store.

per_step = (t(10 steps) - t(1 step)) / 9 with medians over repeats (runs of 1 and 10 steps are
interleaved so drift hits both). Commits, documents and CPU are taken from the drive part of each
run (the run's creation is the same for both and cancels out anyway). Documents written count the
writes of the commits that applied (``bench.instrument``), by collection id; per streamed answer
chunk = the documents a one-step run writes more when its answer comes in ``CHUNKS`` pieces.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from bench.instrument import InstrumentedStore
from bench.scenario import CHUNKS_MARK, STEPS_MARK, bench_runtime
from shared.api import RunRequest
from shared.runtime import Runtime
from shared.state.docstore import DocStore

LONG = 10


def _one_run(rt: Runtime, store: InstrumentedStore, steps: int) -> dict[str, Any]:
    pre = store.snapshot()
    w0, c0 = time.perf_counter(), time.thread_time()
    started = rt.agent.start("bench", RunRequest(prompt=f"go {STEPS_MARK}{steps}"))
    s0 = store.snapshot()
    w1, c1 = time.perf_counter(), time.thread_time()
    result = rt.agent.run(rt.agent.context(started))
    w2, c2 = time.perf_counter(), time.thread_time()
    drive = InstrumentedStore.delta(store.snapshot(), s0)
    if result.status != "completed":
        raise RuntimeError(f"bench run ended {result.status}: {result.summary}")
    return {"wall_s": w2 - w0, "drive_wall_s": w2 - w1, "drive_cpu_s": c2 - c1,
            "drive_store_cpu_s": drive["store_cpu_s"], "drive_commits": drive["commits"],
            "drive_calls": drive["calls"], "drive_docs_written": drive["docs_written"], "start_cpu_s": c1 - c0,
            "start_commits": InstrumentedStore.delta(s0, pre)["commits"]}


CHUNKS = 8


def _documents_per_chunk(rt: Runtime, store: InstrumentedStore) -> float:
    """Documents a one-step run writes per streamed answer chunk (a ``chunks=K`` prompt: the bench
    model answers in K text parts, each streamed as its own delta)."""
    written = []
    for k in (1, CHUNKS):
        before = store.snapshot()
        started = rt.agent.start("bench", RunRequest(prompt=f"go {STEPS_MARK}1 {CHUNKS_MARK}{k}"))
        rt.agent.run(rt.agent.context(started, listener=lambda event: None))
        written.append(sum(InstrumentedStore.delta(store.snapshot(), before)["docs_written"].values()))
    return (written[1] - written[0]) / (CHUNKS - 1)


def _docs(row: dict[str, Any]) -> dict[str, int]:
    return dict(row["drive_docs_written"])


def _per_step(short: list[float], long: list[float]) -> float:
    return (statistics.median(long) - statistics.median(short)) / (LONG - 1)


def measure(inner: DocStore, *, repeats: int, warmup: int = 3) -> dict[str, Any]:
    """Run the scenario ``repeats`` times at 1 and 10 steps on ``inner`` (wrapped to count calls)."""
    store = InstrumentedStore(inner)
    rt = bench_runtime(store)
    for _ in range(warmup):
        _one_run(rt, store, 1)
        _one_run(rt, store, LONG)
    ones: list[dict[str, Any]] = []
    tens: list[dict[str, Any]] = []
    for _ in range(repeats):
        ones.append(_one_run(rt, store, 1))
        tens.append(_one_run(rt, store, LONG))

    def col(rows: list[dict[str, Any]], key: str) -> list[float]:
        return [float(r[key]) for r in rows]

    domain_one = [r["drive_cpu_s"] - r["drive_store_cpu_s"] for r in ones]
    domain_ten = [r["drive_cpu_s"] - r["drive_store_cpu_s"] for r in tens]
    tool_commits = (statistics.median(col(tens, "drive_commits")) - statistics.median(col(ones, "drive_commits")))
    reads_one = sum(v for k, v in ones[0]["drive_calls"].items() if k not in ("commit", "run_transaction"))
    reads_ten = sum(v for k, v in tens[0]["drive_calls"].items() if k not in ("commit", "run_transaction"))
    one_docs, ten_docs = _docs(ones[0]), _docs(tens[0])
    by_kind = {k: round((ten_docs.get(k, 0) - one_docs.get(k, 0)) / (LONG - 1), 3)
               for k in sorted(set(one_docs) | set(ten_docs))}
    return {
        "repeats": repeats,
        "per_step_ms": round(_per_step(col(ones, "wall_s"), col(tens, "wall_s")) * 1000, 3),
        "run_1_step_ms": round(statistics.median(col(ones, "wall_s")) * 1000, 3),
        "run_10_steps_ms": round(statistics.median(col(tens, "wall_s")) * 1000, 3),
        "cpu_per_step_ms": round(_per_step(col(ones, "drive_cpu_s"), col(tens, "drive_cpu_s")) * 1000, 3),
        "cpu_per_step_excl_store_ms": round(_per_step(domain_one, domain_ten) * 1000, 3),
        "store_cpu_per_step_ms": round(_per_step(col(ones, "drive_store_cpu_s"),
                                                 col(tens, "drive_store_cpu_s")) * 1000, 3),
        "commits_per_step_with_read_only_tool": round(tool_commits / (LONG - 1), 3),
        "commits_per_step_without_tool": statistics.median(col(ones, "drive_commits")),
        "commits_to_create_run": statistics.median(col(ones, "start_commits")),
        "store_reads_per_step_with_read_only_tool": round((reads_ten - reads_one) / (LONG - 1), 3),
        "store_reads_per_step_without_tool": reads_one,
        "store_calls_10_step_drive": tens[0]["drive_calls"],
        "documents_written_per_step": round(sum(by_kind.values()), 3),
        "documents_written_per_step_by_collection": {k: v for k, v in by_kind.items() if v},
        "documents_written_one_step_run_drive": sum(one_docs.values()),
        "documents_written_per_streamed_answer_chunk": _documents_per_chunk(rt, store),
    }
