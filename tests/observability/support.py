"""Spans in memory, and a fake model whose answers carry every kind of token the ledger counts."""

from __future__ import annotations

import itertools
import threading
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from bench.plan_model import Script
from shared import otel, tracing
from shared.models.base import ModelRequest, ModelResponse
from shared.models.scripted import FunctionModel
from shared.usage.figures import Usage


@contextmanager
def spans_in_memory() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.use(otel.Tracing(provider, flush=False))
    try:
        yield exporter
    finally:
        tracing.use(None)
        provider.shutdown()


def token_model(script: Script) -> FunctionModel:
    """The plan script's answers with varied input, output, thinking and cached tokens."""
    counter = itertools.count(1)
    lock = threading.Lock()

    def answer(request: ModelRequest) -> ModelResponse:
        with lock:
            n = next(counter)
        turn = script.answer(request)
        inp, out, think, cached = 100 + n % 37, 5 + n % 11, n % 7, n % 5 * 10
        return ModelResponse(turn=turn, finish_reason="STOP", usage=Usage(
            requests=1, input_tokens=inp, output_tokens=out, thinking_tokens=think, cached_tokens=cached,
            total_tokens=inp + out + think))

    return FunctionModel(answer, name="gemini-3-flash-preview")


def attr(span: ReadableSpan, name: str) -> object:
    return (span.attributes or {}).get(name)


def by_run(spans: list[ReadableSpan]) -> dict[str, list[ReadableSpan]]:
    out: dict[str, list[ReadableSpan]] = defaultdict(list)
    for span in spans:
        run_id = attr(span, otel.RUN_ID)
        if isinstance(run_id, str):
            out[run_id].append(span)
    return out


def token_sums(spans: list[ReadableSpan]) -> dict[str, int]:
    sums = {"input": 0, "output": 0, "reasoning": 0, "cached": 0, "calls": 0}
    for span in spans:
        if attr(span, otel.OPERATION) != otel.CHAT:
            continue
        sums["calls"] += 1
        for key, name in (("input", otel.INPUT_TOKENS), ("output", otel.OUTPUT_TOKENS),
                          ("reasoning", otel.REASONING_TOKENS), ("cached", otel.CACHED_TOKENS)):
            value = attr(span, name)
            assert isinstance(value, int), (span.name, name)
            sums[key] += value
    return sums


def ledger_sums(usages: list[Usage]) -> dict[str, int]:
    """The ledger's figures in the conventions' terms: output tokens include reasoning."""
    return {"input": sum(u.input_tokens for u in usages),
            "output": sum(u.output_tokens + u.thinking_tokens for u in usages),
            "reasoning": sum(u.thinking_tokens for u in usages),
            "cached": sum(u.cached_tokens for u in usages), "calls": len(usages)}
