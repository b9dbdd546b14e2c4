"""``make reliability``'s queue scenario, small, on both stores: crashes between dequeue and start
(and around the claim that continues a started run), duplicates and lost messages; no run lost,
none started twice, order kept (bench/queue_reliability.py)."""

from __future__ import annotations

import argparse

from bench.queue_reliability import run
from shared.state.docstore import DocStore


def test_queued_runs_survive_crashes_between_dequeue_and_start(docstore: DocStore) -> None:
    opts = argparse.Namespace(threads=4, runs=4, seed=7, lease=0.2, crash_p=0.5, duplicate_p=0.3, batch=6,
                              max_rounds=3000)
    out = run(opts, docstore)
    assert out["ok"], out["violations"]
    assert (out["runs_lost"], out["runs_started_twice"], out["threads_out_of_order"]) == (0, 0, 0)
    crashes = {k: v for k, v in out["faults"].items() if k.startswith("crash_dequeue_commit1")}
    assert crashes.get("crash_dequeue_commit1:before", 0) > 0 and crashes.get("crash_dequeue_commit1:after", 0) > 0
