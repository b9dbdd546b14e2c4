"""Tracing of units of work with OpenTelemetry's GenAI conventions: the facade the runtime calls.

Off (the default) it is a few no-op functions: nothing of OpenTelemetry is imported, so a cold
start pays nothing (tests/unit/test_entry_point_imports.py). It is on when the standard
environment says so (:func:`wanted`); the first call then builds the exporters from ``OTEL_*``
(``shared/otel.py``, docs/observability.md):

- per invocation of a unit an ``invoke_agent {host}`` span (:func:`invocation`): the unit's first
  invocation is the trace's root; its W3C ``traceparent`` is stored on the run (``traceParent``)
  and carried in the attributes of every message that continues the unit (a decided approval's
  ``resume``, a yield's ``continue``), so every later invocation, in whatever process, is a
  *child* of that root: one trace per unit, across pauses, Pub/Sub and plan continuations;
- per model call a ``chat {model}`` span (:func:`model_call`) with the ``gen_ai.usage.*`` of its
  usage-ledger entry;
- per tool call an ``execute_tool {tool}`` span (:func:`tool_call`, :func:`tool_unknown`).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from shared.models.base import ModelResponse
    from shared.otel import Tracing, Unit
    from shared.state.records import ActionRecord, UsageEntry


_lock = threading.Lock()
_tracing: Tracing | None = None
_checked = False


def wanted(environ: Mapping[str, str]) -> bool:
    """Tracing is on when ``OTEL_TRACES_EXPORTER`` names an exporter (not ``none``), or, without it,
    when an OTLP endpoint is configured; ``OTEL_SDK_DISABLED=true`` turns it off."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporter = environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporter:
        return exporter != "none"
    return bool(environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
                or environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip())


def active() -> Tracing | None:
    """The process's tracing, built from the environment on first use; None when off."""
    global _tracing, _checked
    if not _checked:
        with _lock:
            if not _checked:
                if wanted(os.environ):
                    from shared.otel import from_env

                    _tracing = from_env(os.environ)
                _checked = True
    return _tracing


def use(tracing: Tracing | None) -> None:
    """Install ``tracing`` for this process (tests: an in-memory exporter); None turns it off."""
    global _tracing, _checked
    with _lock:
        _tracing, _checked = tracing, True


@contextmanager
def invocation(ctx: Unit, how: str, traceparent: str | None = None) -> Iterator[None]:
    """One invocation of the unit ``ctx`` drives (``how``: start, resume, continue, recover).

    Its parent is ``traceparent`` (a message's attribute), else the one stored on the run; without
    either it is the root of a new trace, and its context is stored on the run (committed with the
    invocation's next commit)."""
    tracing = active()
    if tracing is None:
        yield
        return
    with tracing.invocation(ctx, how, traceparent):
        yield


def model_call(entry: UsageEntry, response: ModelResponse | None, request_model: str, started_ns: int) -> None:
    """A ``chat {model}`` span for a metered call that just ended (under the current span)."""
    tracing = active()
    if tracing is not None:
        tracing.model_call(entry, response, request_model, started_ns)


@contextmanager
def tool_call(action: ActionRecord, conversation_id: str | None) -> Iterator[None]:
    """An ``execute_tool {tool}`` span around running ``action`` (attributes read when it ends)."""
    tracing = active()
    if tracing is None:
        yield
        return
    with tracing.tool_call(action, conversation_id):
        yield


def tool_unknown(action: ActionRecord, conversation_id: str | None) -> None:
    """A call a crash cut off, recorded with outcome ``unknown``: a span saying so."""
    with tool_call(action, conversation_id):
        pass


def traceparent() -> str | None:
    """The W3C ``traceparent`` of the current span (None when off or outside a span)."""
    tracing = active()
    return tracing.current_traceparent() if tracing is not None else None


def attributes(traceparent: str | None) -> dict[str, Any]:
    """The message attributes carrying ``traceparent`` (empty without one)."""
    return {"traceparent": traceparent} if traceparent else {}
