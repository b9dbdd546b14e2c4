"""Structured logs for Cloud Logging: one JSON object per line on stdout.

Cloud Run (and so Cloud Functions gen2) parses each JSON line of stdout into a log entry:
``severity`` sets the level, ``message`` the summary, ``logging.googleapis.com/trace`` and
``.../spanId`` join the entry to the request's trace, and ``stack_trace`` feeds Error Reporting.

Use::

    configure_logging(settings.google_cloud_project)            # once per process; idempotent
    with log_context(uid=uid, runId=run_id, **trace_fields(request.headers)):
        log.info("run started", extra={"fields": {"steps": 3}})

``log_context`` binds fields in a ``contextvars.ContextVar``, so requests served concurrently on
threads never see each other's fields. A new ``threading.Thread`` starts with an empty context;
hand work to threads with ``contextvars.copy_context().run`` to keep the fields. A streamed
response body is iterated by the server *after* the handler returned (and left its
``log_context`` blocks): wrap it in ``iterate_in_context`` to keep the request's fields.

Rule: no prompt text, model output or tool arguments/results at INFO or above. Those are user
data; log ids, sizes, counts, names and outcomes instead, and keep payloads (if ever) at DEBUG.
"""

from __future__ import annotations

import contextvars
import datetime
import json
import logging
import re
import sys
from collections.abc import Generator, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from types import MappingProxyType
from typing import IO, Any, TypeVar

TRACE_HEADER = "X-Cloud-Trace-Context"
TRACE_KEY = "logging.googleapis.com/trace"
SPAN_KEY = "logging.googleapis.com/spanId"
SAMPLED_KEY = "logging.googleapis.com/trace_sampled"

_EMPTY: Mapping[str, Any] = MappingProxyType({})
_context: ContextVar[Mapping[str, Any]] = ContextVar("agent_runtime_log_context", default=_EMPTY)
_TRACE_ID = re.compile(r"[0-9a-fA-F]{32}")
_SPAN_DECIMAL = re.compile(r"\d{1,20}")
_TRACEPARENT = re.compile(r"([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})")
_T = TypeVar("_T")
_RESERVED = ("severity", "message", "time", "logger", "logging.googleapis.com/sourceLocation")


def _severity(levelno: int) -> str:
    """Cloud Logging's severity names; custom levels round down to the nearest standard one."""
    for threshold, name in ((logging.CRITICAL, "CRITICAL"), (logging.ERROR, "ERROR"),
                            (logging.WARNING, "WARNING"), (logging.INFO, "INFO"), (logging.DEBUG, "DEBUG")):
        if levelno >= threshold:
            return name
    return "DEFAULT"


def _parse_cloud_trace(value: str | None) -> tuple[str | None, str | None, bool]:
    if not value:
        return None, None, False
    ids, _, options = value.strip().partition(";")
    trace, _, span = ids.partition("/")
    if not _TRACE_ID.fullmatch(trace) or not trace.strip("0"):
        return None, None, False
    span_hex = None
    # The header carries the span as a decimal uint64; Cloud Logging wants 16 hex digits.
    if _SPAN_DECIMAL.fullmatch(span) and 0 < int(span) < 2**64:
        span_hex = f"{int(span):016x}"
    return trace.lower(), span_hex, options.strip() == "o=1"


def trace_from_header(value: str | None) -> tuple[str | None, str | None]:
    """``(traceId, spanId)`` from ``X-Cloud-Trace-Context: TRACE_ID/SPAN_ID;o=1``.

    The trace id is 32 hex digits (lower-cased); the span id is returned as the 16 hex digits Cloud
    Logging expects (the header sends it in decimal). Missing or malformed parts give None.
    """
    trace, span, _ = _parse_cloud_trace(value)
    return trace, span


def trace_fields(headers: Mapping[str, str]) -> dict[str, Any]:
    """``log_context`` fields for a request's trace: ``X-Cloud-Trace-Context``, else W3C ``traceparent``."""
    lowered = {k.lower(): v for k, v in headers.items()}
    trace, span, sampled = _parse_cloud_trace(lowered.get(TRACE_HEADER.lower()))
    if trace is None:
        match = _TRACEPARENT.fullmatch(lowered.get("traceparent", "").strip())
        if match and match.group(2).strip("0") and match.group(3).strip("0"):
            trace, span, sampled = match.group(2), match.group(3), bool(int(match.group(4), 16) & 1)
    if trace is None:
        return {}
    fields: dict[str, Any] = {"traceId": trace, "traceSampled": sampled}
    if span is not None:
        fields["spanId"] = span
    return fields


def _merged(fields: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType({**_context.get(), **{k: v for k, v in fields.items() if v is not None}})


@contextmanager
def log_context(**fields: Any) -> Iterator[None]:
    """Add ``fields`` (e.g. ``runId``, ``threadId``, ``uid``, ``traceId``, ``spanId``) to every record
    logged inside the block, on this thread / task only. Nested blocks add to the outer fields;
    ``None`` values are left out."""
    token = _context.set(_merged(fields))
    try:
        yield
    finally:
        _context.reset(token)


def iterate_in_context(items: Iterable[_T], **fields: Any) -> Generator[_T, None, None]:
    """``items``, each step of which runs in the log context current *now* plus ``fields``.

    A streamed HTTP response is iterated by the web server after the handler returned, outside
    its ``log_context`` blocks (the request's trace). The returned iterator runs every step of
    ``items`` (and its ``close()``) in a copy of the context taken at this call, so a generator
    body, and the threads it starts with ``contextvars.copy_context()``, keep the fields.
    """
    captured = contextvars.copy_context()
    captured.run(lambda: _context.set(_merged(fields)))
    return _steps_in(captured, iter(items))


def _steps_in(captured: contextvars.Context, it: Iterator[_T]) -> Generator[_T, None, None]:
    try:
        while True:
            try:
                item = captured.run(next, it)
            except StopIteration:
                return
            yield item
    finally:
        close = getattr(it, "close", None)
        if close is not None:
            captured.run(close)


def current_log_context() -> Mapping[str, Any]:
    """The fields bound by the enclosing ``log_context`` blocks (read-only)."""
    return _context.get()


class CloudLoggingFormatter(logging.Formatter):
    """Formats a record as one JSON line that Cloud Logging parses into a structured entry.

    Field order of precedence: context fields < ``extra={"fields": {...}}`` < the entry's own
    keys (severity, message, time, logger, sourceLocation), which nothing can overwrite.
    """

    def __init__(self, project: str) -> None:
        super().__init__()
        self.project = project

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = dict(_context.get())
        extra = getattr(record, "fields", None)
        if isinstance(extra, Mapping):
            entry.update(extra)
        trace = entry.pop("traceId", None)
        if trace:
            entry[TRACE_KEY] = f"projects/{self.project}/traces/{trace}" if self.project else str(trace)
        span = entry.pop("spanId", None)
        if span:
            entry[SPAN_KEY] = span
        sampled = entry.pop("traceSampled", None)
        if trace and sampled is not None:
            entry[SAMPLED_KEY] = bool(sampled)
        entry.update({
            "severity": _severity(record.levelno),
            "message": record.getMessage(),
            "time": datetime.datetime.fromtimestamp(record.created, datetime.UTC)
            .isoformat(timespec="microseconds").replace("+00:00", "Z"),
            "logger": record.name,
            "logging.googleapis.com/sourceLocation": {
                "file": record.pathname, "line": str(record.lineno), "function": record.funcName},
        })
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            # A Python traceback in stack_trace is what Error Reporting groups errors by.
            entry["stack_trace"] = self.formatException(record.exc_info)
            entry["exception"] = f"{type(exc).__name__}: {exc}"
        if record.stack_info:
            entry["stack_info"] = self.formatStack(record.stack_info)
        try:
            return json.dumps(entry, default=str, ensure_ascii=False)
        except (TypeError, ValueError):  # e.g. non-string keys in extra fields
            fallback = {k: entry[k] for k in (*_RESERVED, "stack_trace", "exception") if k in entry}
            fallback["fieldsError"] = repr({k: v for k, v in entry.items() if k not in fallback})
            return json.dumps(fallback, default=str, ensure_ascii=False)


class _CloudLoggingHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Marks the handler configure_logging installed, so a second call replaces it, not adds one."""


def configure_logging(project: str, level: int | str = logging.INFO, *, stream: IO[str] | None = None) -> None:
    """Send the root logger's records as JSON lines to ``stream`` (stdout) for ``project``'s traces.

    Idempotent: calling it again updates project, level and stream without adding a handler.
    Other handlers on the root logger are left alone.
    """
    root = logging.getLogger()
    for handler in list(root.handlers):
        if isinstance(handler, _CloudLoggingHandler):
            root.removeHandler(handler)
            handler.close()
    handler = _CloudLoggingHandler(stream if stream is not None else sys.stdout)
    handler.setFormatter(CloudLoggingFormatter(project))
    root.addHandler(handler)
    root.setLevel(level)
