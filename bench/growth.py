"""``run_start_growth``: does starting a run cost more as the user's history grows? (issue 20)

- SQLite (time): the median one-step run (start + one model call + stop, the path of
  ``POST /api/agent/run``) of one user on an empty store and on a store holding ``EARLIER_RUNS``
  earlier runs of the same user on the same UTC day (each wrote its ledger entry, run, thread,
  events...), the two alternating run by run. ``ratio`` = after / before. Target: <= 1.10.
- Both stores (counts): the documents a start reads, by collection, with an empty ledger and after
  ``LEDGER_ENTRIES`` ledger entries of the user today (written as the loop writes them). The
  ledger's share (``usage`` entries and the ``usageDays`` counter) must stay the same.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from bench.instrument import InstrumentedStore
from bench.reference import reference_ms
from bench.scenario import bench_runtime, run_steps
from shared.api import RunRequest
from shared.runtime import Runtime
from shared.state.docstore import DocStore, Write
from shared.state.records import UsageEntry
from shared.state.usage_repo import UsageRepo
from shared.token_usage import Usage

EARLIER_RUNS = 5000
LEDGER_ENTRIES = 2000
LEDGER = ("usage", "usageDays")
UID = "bench"


def ledger_writes(uid: str, day: str, count: int, tokens_each: int = 10) -> list[list[Write]]:
    """``count`` earlier model calls of ``uid`` on ``day`` as the loop commits them (the entry and
    its counter increment together), a hundred calls per commit."""
    at = datetime.fromisoformat(f"{day}T00:00:00+00:00").timestamp()
    batches: list[list[Write]] = []
    for start in range(0, count, 100):
        batch: list[Write] = []
        for n in range(start, min(count, start + 100)):
            batch.extend(UsageRepo.entry_writes(UsageEntry(
                entry_id=f"run_earlier{n:06d}-00001-mc", uid=uid, unit_kind="run", unit_id=f"run_earlier{n:06d}",
                component="loop", operation_type="chat", model="bench", at=at + n / 1000,
                usage=Usage(requests=1, total_tokens=tokens_each), day=day)))
        batches.append(batch)
    return batches


def _timed_run(rt: Runtime) -> float:
    t0 = time.perf_counter()
    run_steps(rt, 1, uid=UID)
    return (time.perf_counter() - t0) * 1000


def sqlite_growth(open_store: Callable[[str], Any], *, earlier_runs: int = EARLIER_RUNS,
                  repeats: int = 40) -> dict[str, Any]:
    """One-step run time of one user on an empty store and on one holding ``earlier_runs`` of their
    runs. ``open_store(name)`` opens a fresh SQLite store; the two instances' runs alternate, so the
    machine's drift hits both alike."""
    with open_store("growth-empty") as empty_store, open_store("growth-full") as full_store:
        empty, full = bench_runtime(empty_store), bench_runtime(full_store)
        for _ in range(earlier_runs):
            run_steps(full, 1, uid=UID)
        for rt in (empty, full):  # warm both instances up (first calls build caches), another user
            for _ in range(5):
                run_steps(rt, 1, uid="warmup")
        ref0 = reference_ms()
        empty_ms: list[float] = []
        full_ms: list[float] = []
        for _ in range(repeats):
            empty_ms.append(_timed_run(empty))
            full_ms.append(_timed_run(full))
        ref = (ref0 + reference_ms()) / 2
    before, after = statistics.median(empty_ms), statistics.median(full_ms)
    return {"earlier_runs": earlier_runs, "repeats": repeats,
            "run_1_step_empty_ms": round(before, 3), "run_1_step_after_ms": round(after, 3),
            "run_1_step_empty_ratio_to_reference": round(before / ref, 4),
            "ratio": round(after / before, 3)}


def _start_reads(rt: Runtime, store: InstrumentedStore) -> dict[str, int]:
    """The documents one start reads; its run is then driven to its end (not counted)."""
    before = store.snapshot()
    started = rt.agent.start(UID, RunRequest(prompt="go steps=1"))
    read = dict(InstrumentedStore.delta(store.snapshot(), before)["docs_read"])
    rt.agent.run(rt.agent.context(started))
    return read


def start_reads(inner: DocStore, *, entries: int = LEDGER_ENTRIES) -> dict[str, Any]:
    """Documents one run start reads (by collection) with an empty ledger and after ``entries``
    ledger entries of the user today (the store gets the entries; each start's run is completed
    first so the active-run slot holds the same)."""
    store = InstrumentedStore(inner)
    rt = bench_runtime(store)
    run_steps(rt, 1, uid=UID)  # the user's limit documents exist from here on, as on any later start
    empty = _start_reads(rt, store)
    for batch in ledger_writes(UID, datetime.now(UTC).date().isoformat(), entries):
        inner.commit(batch)
    full = _start_reads(rt, store)
    ledger_empty = sum(empty.get(k, 0) for k in LEDGER)
    ledger_full = sum(full.get(k, 0) for k in LEDGER)
    return {"ledger_entries_today": entries,
            "ledger_documents_read_per_start_empty": ledger_empty,
            "ledger_documents_read_per_start_after": ledger_full,
            "documents_read_per_start_empty": sum(empty.values()),
            "documents_read_per_start_after": sum(full.values()),
            "documents_read_per_start_by_collection_after": full,
            "same": ledger_empty == ledger_full and sum(empty.values()) == sum(full.values())}
