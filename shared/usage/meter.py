"""Metering model calls: every call becomes one ledger entry, whoever makes it.

``metered_generate`` calls the model, times it and returns the entry with the response (or with
the error); the caller decides where the entry is written (the loop commits it with its step, so
metering adds no commit). ``MeteredModel`` is the same as a ``Model`` that hands each entry to a
sink (the goals planner and other callers outside a unit's commit write it at once).
``metered_search`` meters a Google Search grounded call (``google_web_search``) the same way.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Protocol, TypeVar

from shared import tracing
from shared.config import Profile, Settings
from shared.errors import ModelError, ModelTimeout
from shared.ids import new_id
from shared.models.base import DeltaSink, GroundedAnswer, Model, ModelRequest, ModelResponse, SearchModel
from shared.state.records import UsageEntry
from shared.token_usage import Usage

log = logging.getLogger("agent_runtime.usage")

LOOP = "loop"
GOALS_PLANNER = "goals_planner"
WEB_SEARCH = "web_search"


@dataclass(frozen=True)
class MeteredCall:
    """What a model call is for: who pays (uid), which unit of work, who calls and why."""

    uid: str
    unit_kind: str
    unit_id: str
    component: str
    operation_type: str
    profile: Profile = "balanced"
    context_type: str | None = None
    step: int | None = None


@dataclass
class Metered:
    entry: UsageEntry
    response: ModelResponse | None = None
    error: ModelError | None = field(default=None)


def estimate_cost(settings: Settings, model: str, usage: Usage) -> float:
    """Estimated USD cost of ``usage`` on ``model`` (0 for a model without a price, e.g. offline)."""
    price = settings.price_of(model)
    if price is None:
        return 0.0
    per_input, per_cached, per_output = price
    cached = min(usage.cached_tokens, usage.input_tokens)
    cost = ((usage.input_tokens - cached) * per_input + cached * per_cached
            + (usage.output_tokens + usage.thinking_tokens) * per_output) / 1_000_000
    return round(cost, 8)


def _entry_id(call: MeteredCall) -> str:
    step = f"{call.step:05d}-" if call.step is not None else ""
    return f"{call.unit_id}-{step}{new_id('mc')}"


def _new_entry(call: MeteredCall, model_name: str) -> UsageEntry:
    at = time.time()
    return UsageEntry(entry_id=_entry_id(call), uid=call.uid, unit_kind=call.unit_kind, unit_id=call.unit_id,
                      component=call.component, operation_type=call.operation_type, profile=call.profile,
                      context_type=call.context_type, model=model_name, step=call.step, at=at,
                      day=datetime.fromtimestamp(at, UTC).date().isoformat())


def _failed(entry: UsageEntry, exc: ModelError, started: float) -> None:
    entry.latency_ms = round((time.perf_counter() - started) * 1000, 3)
    entry.outcome = "error"
    entry.error_code = "MODEL_TIMEOUT" if isinstance(exc, ModelTimeout) else "MODEL_ERROR"
    entry.usage = Usage(requests=1)
    log.warning("model call failed", extra={"fields": {
        "component": entry.component, "stage": entry.operation_type, "operationType": entry.operation_type,
        "errorCode": entry.error_code, "unitId": entry.unit_id}})


def _answered(entry: UsageEntry, usage: Usage, model: str, settings: Settings, started: float,
              fee_usd: float = 0.0) -> None:
    entry.latency_ms = round((time.perf_counter() - started) * 1000, 3)
    entry.usage = usage if usage.requests >= 1 else replace_requests(usage)
    entry.model = model
    entry.cost_usd = round(estimate_cost(settings, entry.model, entry.usage) + fee_usd, 8)
    u = entry.usage
    # One line per answered call: Cloud Monitoring's log-based metrics (cost, tokens) are read from it
    # (infra/agent_infra/monitoring.py). Figures and ids only.
    log.info("model call", extra={"fields": {
        "component": entry.component, "operationType": entry.operation_type, "model": entry.model,
        "unitId": entry.unit_id, "costUsd": entry.cost_usd, "inputTokens": u.input_tokens,
        "outputTokens": u.output_tokens + u.thinking_tokens, "totalTokens": u.total_tokens,
        "latencyMs": entry.latency_ms}})


class _Answer(Protocol):
    """A model's answer as metering reads it."""

    @property
    def usage(self) -> Usage: ...

    @property
    def model_version(self) -> str | None: ...


A = TypeVar("A", bound=_Answer)


def _metered(name: str, call: MeteredCall, settings: Settings, ask: Callable[[], A], *, traced: bool,
             fee: Callable[[A, str], float] | None = None) -> tuple[UsageEntry, A | None, ModelError | None]:
    """``ask()`` once (a call of model ``name``), metered: its entry, and its answer or its
    ``ModelError`` (returned, not raised). ``traced``: the span records the answer's own figures.
    ``fee(answer, model)``: what the call costs beside its tokens (Google Search grounding's)."""
    started, started_ns = time.perf_counter(), time.time_ns()
    entry = _new_entry(call, name)
    try:
        answer = ask()
    except ModelError as exc:
        _failed(entry, exc, started)
        tracing.model_call(entry, None, name, started_ns)
        return entry, None, exc
    model = answer.model_version or name
    _answered(entry, answer.usage, model, settings, started, fee(answer, model) if fee is not None else 0.0)
    tracing.model_call(entry, answer if traced and isinstance(answer, ModelResponse) else None, name, started_ns)
    return entry, answer, None


def metered_generate(model: Model, request: ModelRequest, call: MeteredCall, settings: Settings, *,
                     on_delta: DeltaSink | None = None) -> Metered:
    """Call ``model`` once and meter it. A ``ModelError`` is returned (with its entry), not raised."""
    entry, response, error = _metered(model.name, call, settings,
                                      lambda: model.generate(request, on_delta=on_delta), traced=True)
    return Metered(entry=entry, response=response, error=error)


@dataclass
class MeteredSearch:
    entry: UsageEntry
    answer: GroundedAnswer | None = None
    error: ModelError | None = field(default=None)


def metered_search(model: SearchModel, query: str, call: MeteredCall, settings: Settings, *,
                   timeout_s: float | None = None) -> MeteredSearch:
    """One grounded search call of ``model``, metered; a ``ModelError`` is returned, not raised."""
    entry, answer, error = _metered(model.name, call, settings,
                                    lambda: model.grounded_search(query, timeout_s=timeout_s), traced=False,
                                    fee=lambda a, name: settings.search_fee(name, search_queries(a)))
    return MeteredSearch(entry=entry, answer=answer, error=error)


def search_queries(answer: GroundedAnswer) -> int:
    """The search queries a grounded call ran, as billed: the distinct non-empty ones."""
    return len({q for q in answer.queries if q.strip()})


def replace_requests(usage: Usage) -> Usage:
    """A call counts as at least one request even when the model reported none."""
    return usage.model_copy(update={"requests": 1})


class MeteredModel:
    """A ``Model`` whose every call is metered and handed to ``sink`` (errors are re-raised)."""

    def __init__(self, model: Model, call: MeteredCall, settings: Settings,
                 sink: Callable[[UsageEntry], None]) -> None:
        self._model = model
        self._call = call
        self._settings = settings
        self._sink = sink
        self._calls = 0

    @property
    def name(self) -> str:
        return self._model.name

    def generate(self, request: ModelRequest, on_delta: DeltaSink | None = None) -> ModelResponse:
        self._calls += 1
        metered = metered_generate(self._model, request, replace(self._call, step=self._calls), self._settings,
                                   on_delta=on_delta)
        try:
            self._sink(metered.entry)
        except Exception:  # metering must never break the caller's work
            log.exception("usage entry could not be recorded", extra={"fields": {"unitId": self._call.unit_id}})
        if metered.error is not None:
            raise metered.error
        assert metered.response is not None
        return metered.response
