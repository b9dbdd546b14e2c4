"""The per-step scenario of the issue: a zero-latency scripted model calls a trivial read-only
tool once per turn, then answers. ``steps`` counts model calls: N steps = N-1 tool turns + 1 answer.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from shared.agent.run_handlers import run_to_stop
from shared.api import RunRequest
from shared.config import Settings
from shared.durable.dispatcher import RecordingDispatcher
from shared.models.base import ModelRequest, Part, Turn
from shared.models.scripted import FunctionModel, call, calls_turn, text_turn
from shared.runtime import Runtime
from shared.state.docstore import DocStore
from shared.tools import default_registry
from shared.tools.context import ToolContext
from shared.tools.registry import ToolRegistry

STEPS_MARK = "steps="
CHUNKS_MARK = "chunks="


def bench_registry() -> ToolRegistry:
    """The shipped tools plus ``lookup``, a trivial read-only tool that touches no store."""
    registry = default_registry()

    @registry.tool(side_effect=False)
    def lookup(ctx: ToolContext, key: str) -> dict[str, Any]:
        """Look a key up in a fixed table.

        Args:
            key: The key.
        """
        return {"key": key, "value": len(key)}

    return registry


def _wanted_steps(request: ModelRequest) -> int:
    first = request.turns[0].text if request.turns else ""
    return int(first.split(STEPS_MARK, 1)[1].split()[0])


def step_model(request: ModelRequest) -> Turn:
    """Model turn k (1-based) of a run asking for N steps: ``lookup`` while k < N, then text (in
    K streamed pieces when the prompt says ``chunks=K``)."""
    done = sum(1 for t in request.turns if t.role == "model")
    if done + 1 < _wanted_steps(request):
        return calls_turn(call("lookup", {"key": f"k{done}"}))
    first = request.turns[0].text if request.turns else ""
    if CHUNKS_MARK in first:
        pieces = int(first.split(CHUNKS_MARK, 1)[1].split()[0])
        return Turn(role="model", parts=[Part(text=f"Done {i}. ") for i in range(pieces)])
    return text_turn("Done.")


def bench_settings(**overrides: Any) -> Settings:
    base = Settings(state_backend="sqlite", auth_mode="local", dispatcher="none", max_loop_steps=15,
                    max_tool_calls_per_turn=15,
                    run_deadline_s=60.0)
    return dataclasses.replace(base, **overrides)


def bench_runtime(store: DocStore, **overrides: Any) -> Runtime:
    rt = Runtime(bench_settings(**overrides), store=store, model=FunctionModel(step_model, name="bench-model"),
                 dispatcher=RecordingDispatcher(), registry=bench_registry())
    return rt


def run_steps(rt: Runtime, steps: int, uid: str = "bench") -> None:
    """One complete run of ``steps`` steps through the run use case (start + drive)."""
    result, _ = run_to_stop(rt.agent, uid, RunRequest(prompt=f"go {STEPS_MARK}{steps}"))
    if result.status != "completed":
        raise RuntimeError(f"bench run ended {result.status}: {result.summary}")
