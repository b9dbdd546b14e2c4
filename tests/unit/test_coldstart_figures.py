"""The cold-start figures' statistics (bench/coldstart.py, issue 33: a median stable across runs),
on made-up per-round ratios (nothing is timed), and the precision of its CPU reading."""

from __future__ import annotations

import os
import subprocess
import sys

from bench.coldstart import (
    STABLE_POINTS,
    VS_FIRST_USE,
    VS_IMPORTS,
    ColdStart,
    _paired,
    _pct,
    _tree_cpu_s,
    targets,
    unstable,
)


def test_an_overhead_is_the_median_of_the_rounds_and_its_halves_are_the_even_and_odd_rounds() -> None:
    got = _pct([0.10, 0.30, 0.12, 0.28, 0.14])
    assert got["median"] == 14.0
    assert got["halves"] == [12.0, 29.0]  # rounds 0, 2, 4 and rounds 1, 3
    assert got["stable"] is False  # 17 points apart


def test_halves_within_the_allowance_are_stable() -> None:
    got = _pct([0.10, 0.12, 0.11, 0.13])
    assert got["halves"] == [10.5, 12.5] and abs(got["halves"][0] - got["halves"][1]) <= STABLE_POINTS
    assert got["stable"] is True


def test_one_round_has_no_halves_to_compare() -> None:
    assert _pct([0.2]) == {"median": 20.0, "q1": 20.0, "q3": 20.0, "halves": [20.0], "stable": False}


def test_each_round_is_paired_with_the_baseline_started_in_it() -> None:
    got = _paired([1.1, 2.2, 1.1], [1.0, 2.0, 1.0])
    assert got["median"] == 10.0 and got["stable"] is True
    assert _paired([1.2], [1.0], extra_s=0.2)["median"] == 0.0  # floor + an import time


def _starts(wall: list[float], cpu: list[float]) -> list[ColdStart]:
    return [ColdStart(seconds=w, status=200, cpu_s=c) for w, c in zip(wall, cpu, strict=True)]


def test_a_target_is_named_until_both_its_wall_and_cpu_halves_agree() -> None:
    """What ``_timed_rounds`` adds rounds for (up to ``MAX_ROUNDS``)."""
    base = _starts([1.0] * 4, [0.4] * 4)
    got = {"first_read": base, "first_use": base,
           "approve": _starts([1.1, 1.1, 1.1, 1.1], [0.44, 0.52, 0.44, 0.52]),  # CPU halves +10 / +30
           "runs": _starts([1.0, 1.5, 1.0, 1.5], [0.42] * 4),  # wall halves 0 / +50
           "resume": _starts([1.05] * 4, [0.42] * 4)}
    assert unstable(got) == ["approve:cpu", "runs:wall"]  # run/stream/goals not measured: nothing to wait for


def test_the_cpu_of_a_process_is_read_to_well_under_a_clock_tick() -> None:
    """The per-thread run times (nanoseconds), not ``stat``'s 10 ms ticks: a process that spun and
    then sleeps reads as the CPU time it reports itself, within 3 ms (a tick is 10 ms)."""
    code = ("import sys, time\n"
            "t = time.process_time()\n"
            "while time.process_time() - t < 0.137: pass\n"
            "print(time.process_time(), flush=True)\n"
            "time.sleep(30)\n")
    with subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True) as proc:
        try:
            assert proc.stdout is not None
            own = float(proc.stdout.readline())
            read = _tree_cpu_s(proc.pid)
        finally:
            proc.kill()
    assert os.sysconf("SC_CLK_TCK") == 100
    assert own - 0.001 <= read <= own + 0.003, (own, read)


def test_approve_resume_and_runs_are_judged_against_the_first_read_with_pydantic() -> None:
    """The imports they need include pydantic (every contract is a model): ``met`` is judged on that
    baseline; Firestore's first read alone stays reported beside it."""
    row = {"overhead_pct_vs_first_read_with_pydantic": 4.0, "met_vs_first_read_with_pydantic": True,
           "cpu_overhead_pct_vs_first_read_with_pydantic": 6.0, "cpu_met_vs_first_read_with_pydantic": True,
           "overhead_pct_vs_sdk_first_read": 14.0, "met_vs_sdk_first_read": False,
           "cpu_overhead_pct_vs_sdk_first_read": 16.0, "cpu_met_vs_sdk_first_read": False}
    got = targets({"functions": {**{fn: {} for fn in VS_FIRST_USE}, **{fn: row for fn in VS_IMPORTS}}})
    for fn in VS_IMPORTS:
        t = got["cold_start_vs_imports_pct"][fn]
        assert (t["value"], t["met"], t["cpu_value"], t["cpu_met"]) == (4.0, True, 6.0, True)
        assert (t["vs_sdk_first_read_alone"], t["cpu_vs_sdk_first_read_alone"]) == (14.0, 16.0)
        assert t["met_vs_sdk_first_read_alone"] is False
