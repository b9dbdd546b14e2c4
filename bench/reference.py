"""A fixed pure-Python reference loop, timed in the same run, so figures from noisy machines compare
as ratios (``value / reference_ms``)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def reference_loop() -> int:
    """Dict, list, string and arithmetic work typical of interpreter-bound code (fixed size)."""
    table: dict[str, int] = {}
    items: list[int] = []
    total = 0
    for i in range(20_000):
        key = f"k{i & 1023}"
        table[key] = table.get(key, 0) + i
        if i % 7 == 0:
            items.append(i)
        total += len(key) * (i & 15)
    return total + len(items) + len(table)


def _median_ms(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def reference_ms(repeats: int = 9) -> float:
    """Median wall time of ``reference_loop`` in milliseconds."""
    return _median_ms(reference_loop, repeats)


def peers_reference_loop() -> dict[int, int]:
    """The peer benchmark's REF workload (../shared/bench-peers/common.py ``ref_workload``): the
    issue's "REF %" figures are shares of it."""
    d: dict[int, int] = {}
    for i in range(20_000):
        d[i % 97] = d.get(i % 97, 0) + i
    return d


def peers_reference_ms(repeats: int = 21) -> float:
    """Median wall time of ``peers_reference_loop`` in milliseconds."""
    return _median_ms(peers_reference_loop, repeats)
