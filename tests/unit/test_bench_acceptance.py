"""Issue 33: ``python -m bench.acceptance`` turns one ``make bench`` output into the acceptance table
docs/benchmarks.md quotes: each figure's value, target and ``met`` as the run reported them."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from bench import acceptance, versus


def output(**extra: Any) -> dict[str, Any]:
    targets: dict[str, Any] = {
        "round_trips_to_first_model_call": {"value": 2, "target": 2, "met": True},
        "round_trips_per_tool_step": {"value": 1.0, "target": 1, "met": True},
        "round_trips_to_resume": {"value": 5, "target": 2, "met": False},
        "ms_to_first_model_call_at_10ms_per_round_trip": {"value": 27.2, "round_trips": 2, "best_peer": None},
        "documents_written_per_tool_step": {"sqlite_file": {"value": 6.0, "target": 4, "met": False}},
        "free_when_off_a2a": {"met": True}, "free_when_off_webhooks": {"met": False},
        **extra}
    return {"targets": targets, "per_step": {"sqlite_file": {"store_reads_per_step_with_read_only_tool": 0.0}},
            "peers": {"measured": False}, "commit": {"head": "abc"}, "versus_baseline": {"ref": "def"}}


def by_figure(out: dict[str, Any]) -> dict[str, tuple[str, ...]]:
    return {r[0]: r for r in acceptance.rows(out)}


def test_each_target_is_quoted_with_its_value_and_met() -> None:
    got = by_figure(output())
    assert got["store round trips before the first model call"][2:] == ("2", "≤ 2", "yes")
    assert got["round trips to resume after an approval"][2:] == ("5", "≤ 2", "**no**")
    assert got["documents written per tool step (sqlite_file)"][2:] == ("6.0", "≤ 4", "**no**")
    assert got["store reads per tool step (sqlite_file)"][2:] == ("0.0", "0", "yes")
    off = got["new features free when off"]
    assert off[2] == "a2a yes, webhooks no" and off[4] == "**no**"
    # figures the run does not carry are said so, never invented
    assert got["documents written per tool step (firestore_emulator)"][2] == "not measured"
    assert "not measured" in got["per step vs the best durable peer (REF-normalised)"][2]
    assert "peers not measured" in got["ms to the first model call at 10 ms per round trip, ours vs the best "
                                       "durable peer's own start"][2]


def test_the_peers_start_and_per_step_rounds_are_quoted_when_measured() -> None:
    peers = {"ms_to_first_model_call_at_10ms_per_round_trip": {
                 "value": 27.2, "round_trips": 2, "best_peer": "openai_agents SQLiteSession(file)",
                 "best_peer_ms": 32.3,
                 "best_peer_round_trips": 2, "ratio_to_best_peer": 0.843, "faster_than_best_peer": True,
                 "fastest_peer": "langgraph sync/SqliteSaver", "ratio_to_fastest_peer": 2.05},
             "peers_per_step_ratio": {"ratio": 0.154, "ratios_per_round": [0.155, 0.152],
                                      "best_durable_peer": "openai_agents async/SQLiteSession(file)", "met": False}}
    got = by_figure(output(**peers))
    start = got["ms to the first model call at 10 ms per round trip, ours vs the best durable peer's own start"]
    assert "best peer openai_agents SQLiteSession(file) 32.3 ms" in start[2] and start[4] == "ours faster"
    step = got["per step vs the best durable peer (REF-normalised)"]
    assert step[2].startswith("0.154 (rounds [0.155, 0.152]") and step[3:] == ("≤ 0.12", "**no**")


def test_the_table_reads_make_output_with_or_without_echoed_commands(tmp_path: Path, capsys: Any) -> None:
    path = tmp_path / "bench.json"
    path.write_text("BENCH_PEERS_VENV=x .venv/bin/python -m bench.run\n" + json.dumps(output()))
    assert acceptance.main([str(path)]) == 0
    table = capsys.readouterr().out
    assert table.startswith("`make bench` of abc (baseline `versus_baseline.ref` def)")
    assert "| store round trips before the first model call | `targets.round_trips_to_first_model_call` | 2 |" in table


def test_the_measured_commit_is_named() -> None:
    head = versus.head()
    assert head is not None and re.fullmatch(r"[0-9a-f]{40}\+?", head)
