"""Minimal reproductions of runtime problems found by the benchmarks (see docs/benchmarks.md)."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass

from bench.chaos import SCENARIO_MARK, Chaos, RoutedDispatcher, scenario_model
from bench.scenario import bench_settings
from shared.agent.service import StartedRun
from shared.api import RunRequest
from shared.models.scripted import FunctionModel
from shared.runtime import Runtime
from shared.state.sqlite_docstore import SqliteDocStore


@dataclass
class Scene:
    """A runtime over a fresh SQLite file with the chaos harness's store, tools and dispatcher."""

    rt: Runtime
    chaos: Chaos
    dispatcher: RoutedDispatcher

    def start_single(self) -> StartedRun:
        """Start the harness's ``single`` scenario run (one ``send_note`` that needs approval)."""
        return self.rt.agent.start("alice", RunRequest(prompt=f"go {SCENARIO_MARK}single t1"))


def scene(lease_ttl_s: float) -> Scene:
    chaos = Chaos(SqliteDocStore(tempfile.mkdtemp() + "/state.sqlite3"))
    dispatcher = RoutedDispatcher()
    rt = Runtime(bench_settings(lease_ttl_s=lease_ttl_s), store=chaos.store, model=FunctionModel(scenario_model),
                 dispatcher=dispatcher, registry=chaos.registry())
    return Scene(rt, chaos, dispatcher)
