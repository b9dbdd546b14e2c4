"""What tracing costs when on (docs/observability.md): the per-step figures of ``bench/steps.py`` on
an in-memory SQLite store with tracing off and on (spans batched to an in-memory exporter and
flushed at the end of every invocation, as in production), and the import time of the tracing
modules a traced process loads on its first unit (off, none is imported)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench import steps
from bench.emulator import sqlite_store

ROOT = Path(__file__).resolve().parents[1]
IMPORT = ("import time; t = time.perf_counter(); import shared.otel; "
          "from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter; "
          "print(round((time.perf_counter() - t) * 1000, 1))")


def _measure(repeats: int) -> dict[str, Any]:
    with sqlite_store(":memory:") as store:
        return steps.measure(store, repeats=repeats)


def figures(quick: bool) -> dict[str, Any]:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from shared import otel, tracing

    repeats = 6 if quick else 20
    tracing.use(None)
    off = _measure(repeats)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(exporter))
    tracing.use(otel.Tracing(provider))
    try:
        on = _measure(repeats)
    finally:
        tracing.use(None)
        provider.shutdown()
    imports = [float(subprocess.run([sys.executable, "-c", IMPORT], cwd=ROOT, capture_output=True, text=True,
                                    check=True).stdout) for _ in range(3)]
    keys = ("per_step_ms", "run_1_step_ms", "cpu_per_step_ms")
    return {"off": {k: off[k] for k in keys}, "on": {k: on[k] for k in keys},
            "per_step_overhead_ms": round(on["per_step_ms"] - off["per_step_ms"], 3),
            "run_1_step_overhead_ms": round(on["run_1_step_ms"] - off["run_1_step_ms"], 3),
            "spans_exported": len(exporter.get_finished_spans()),
            "first_use_import_ms": sorted(imports)[1],
            "note": "sqlite ':memory:', fake model; on = BatchSpanProcessor to an in-memory exporter, flushed "
                    "per invocation; first_use_import_ms: shared.otel + the OTLP/HTTP exporter, median of 3 "
                    "fresh interpreters (paid once per traced process, never when off)"}


if __name__ == "__main__":
    print(json.dumps(figures("--quick" in sys.argv), indent=2))
