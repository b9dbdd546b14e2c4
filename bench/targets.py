"""The issue's targets (issue 2, "Performance"), next to which the measured values are reported."""

from __future__ import annotations

from typing import Any

PER_STEP_SQLITE_MS = 1.8
CPU_PER_STEP_MS = 1.0
COMMITS_PER_STEP_WITHOUT_TOOL = 1
WARM_RSS_MIB = 160.0
CONCURRENT_RSS_MIB = 256.0
COLD_START_OVERHEAD_PCT = 15.0
PEERS_PER_STEP_MS = {
    "langgraph": {"no_persistence": [1.8, 2.6], "sqlite_checkpointer": [4.1, 4.7]},
    "openai_agents_sdk": {"no_persistence": [2.1, 2.3], "sqlite_session": [3.7, 4.5]},
    "pydantic_ai": {"no_persistence": [2.0, 2.4]},
    "adk": {"in_memory": [2.0, 2.5], "sqlite_session": [10.1, 11.4]},
}


def at_most(value: float | None, target: float, ref_ms: float | None = None) -> dict[str, Any]:
    """``{"value", "target", "met"}`` (``met`` is None when there is no value)."""
    out: dict[str, Any] = {"value": value, "target": target, "met": None if value is None else value <= target}
    if ref_ms and value is not None:
        out["ratio_to_reference"] = round(value / ref_ms, 4)
    return out
