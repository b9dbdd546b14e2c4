"""The cold-start figures' statistics (bench/coldstart.py, issue 33: a median stable across runs),
on made-up per-round ratios: no process is started, nothing is timed."""

from __future__ import annotations

from bench.coldstart import STABLE_POINTS, _paired, _pct


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
