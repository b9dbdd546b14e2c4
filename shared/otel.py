"""OpenTelemetry spans of units of work (imported only when tracing is on: ``shared/tracing.py``).

Names follow the GenAI semantic conventions (``gen_ai.*``, opentelemetry-semantic-conventions;
``tests/unit/test_otel_names.py`` checks them against the package); ``agent_runtime.*`` are ours.
Configuration is the standard ``OTEL_*`` environment (docs/observability.md):
``OTEL_TRACES_EXPORTER`` = ``otlp`` (OTLP over HTTP/protobuf, ``OTEL_EXPORTER_OTLP_*``),
``gcp_trace`` (Cloud Trace), ``console``, comma-separated; ``OTEL_RESOURCE_DETECTORS=gcp`` adds
the Cloud Run / Functions resource; ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``
records model output and tool arguments/results (off: ids, names, sizes and token counts only).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Protocol

from opentelemetry import trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.trace import Span, SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

if TYPE_CHECKING:
    from shared.models.base import ModelResponse
    from shared.state.records import ActionRecord, RunRecord, UsageEntry


class _Kind(Protocol):
    @property
    def kind(self) -> str: ...


class Unit(Protocol):
    """What an invocation's span reads of the unit it drives (the loop's ``RunContext``): its run
    and its host's kind. A protocol, so tracing sits below the loop (no package cycle)."""

    @property
    def run(self) -> RunRecord: ...
    @property
    def host(self) -> _Kind: ...

# GenAI semantic conventions (attribute names and values).
OPERATION = "gen_ai.operation.name"
PROVIDER = "gen_ai.provider.name"
AGENT_NAME = "gen_ai.agent.name"
AGENT_ID = "gen_ai.agent.id"
CONVERSATION = "gen_ai.conversation.id"
REQUEST_MODEL = "gen_ai.request.model"
RESPONSE_MODEL = "gen_ai.response.model"
FINISH_REASONS = "gen_ai.response.finish_reasons"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
REASONING_TOKENS = "gen_ai.usage.reasoning.output_tokens"
CACHED_TOKENS = "gen_ai.usage.cache_read.input_tokens"
OUTPUT_MESSAGES = "gen_ai.output.messages"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_TYPE = "gen_ai.tool.type"
TOOL_ARGUMENTS = "gen_ai.tool.call.arguments"
TOOL_RESULT = "gen_ai.tool.call.result"
ERROR_TYPE = "error.type"
TOKEN_TYPE = "gen_ai.token.type"
TOKEN_USAGE = "gen_ai.client.token.usage"
OPERATION_DURATION = "gen_ai.client.operation.duration"
INVOKE_AGENT, CHAT, EXECUTE_TOOL = "invoke_agent", "chat", "execute_tool"
GEMINI = "gcp.gemini"

# Ours.
RUN_ID = "agent_runtime.run.id"
INVOCATION = "agent_runtime.invocation"
RUN_STATUS = "agent_runtime.run.status"
APPROVAL_IDS = "agent_runtime.approval.ids"
APPROVAL_ID = "agent_runtime.approval.id"
ACTION_ID = "agent_runtime.action.id"
POLICY_DECISION = "agent_runtime.policy.decision"
OUTCOME = "agent_runtime.tool.outcome"
ENTRY_ID = "agent_runtime.usage.entry_id"
OPERATION_TYPE = "agent_runtime.usage.operation_type"
COST = "agent_runtime.usage.cost_usd"
STEP = "agent_runtime.step"
UNIT_KIND = "agent_runtime.unit.kind"

CAPTURE_CONTENT = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
_conversation: ContextVar[str | None] = ContextVar("agent_runtime_conversation", default=None)
_propagator = TraceContextTextMapPropagator()


def traceparent_of(span: Span) -> str | None:
    sc = span.get_span_context()
    if not sc.is_valid:
        return None
    return f"00-{sc.trace_id:032x}-{sc.span_id:016x}-{int(sc.trace_flags):02x}"


class Tracing:
    """Spans of the runtime on ``provider`` (its own, not the global one: tests install several)."""

    def __init__(self, provider: TracerProvider, *, capture_content: bool = False, flush: bool = True,
                 meters: MeterProvider | None = None) -> None:
        self.provider = provider
        self.tracer = provider.get_tracer("agent_runtime")
        self.meters = meters
        """Metrics (``OTEL_METRICS_EXPORTER``): the GenAI client histograms of every model call."""
        if meters is not None:
            meter = meters.get_meter("agent_runtime")
            self.token_usage = meter.create_histogram(TOKEN_USAGE, unit="{token}",
                                                      description="Tokens of each model call, by gen_ai.token.type")
            self.duration = meter.create_histogram(OPERATION_DURATION, unit="s",
                                                   description="Duration of each model call")
        self.capture_content = capture_content
        self.flush = flush
        """Export at the end of every invocation (Cloud Run takes the CPU away between requests)."""

    @contextmanager
    def invocation(self, ctx: Unit, how: str, traceparent: str | None) -> Iterator[None]:
        run = ctx.run
        parent = traceparent or run.trace_parent
        context = _propagator.extract({"traceparent": parent}) if parent else None
        kind = ctx.host.kind
        attrs: dict[str, Any] = {OPERATION: INVOKE_AGENT, PROVIDER: GEMINI, AGENT_NAME: kind, AGENT_ID: run.run_id,
                                 RUN_ID: run.run_id, INVOCATION: how}
        if run.host == "chat":
            attrs[CONVERSATION] = run.thread_id
        token = _conversation.set(attrs.get(CONVERSATION))
        try:
            with self.tracer.start_as_current_span(f"{INVOKE_AGENT} {kind}", context=context, kind=SpanKind.INTERNAL,
                                                   attributes=attrs, record_exception=False,
                                                   set_status_on_exception=False) as span:
                if run.trace_parent is None:
                    run.trace_parent = traceparent_of(span)  # committed with the invocation's next commit
                try:
                    yield
                finally:
                    self._ended(span, ctx)
        finally:
            _conversation.reset(token)
            if self.flush:
                self.provider.force_flush()
                if self.meters is not None:
                    self.meters.force_flush()

    @staticmethod
    def _ended(span: Span, ctx: Unit) -> None:
        run = ctx.run
        span.set_attribute(RUN_STATUS, run.status)
        if run.status == "awaiting_confirmation" and run.pending_approval_ids:
            span.set_attribute(APPROVAL_IDS, list(run.pending_approval_ids))
        if run.status == "failed" and run.error is not None:
            span.set_attribute(ERROR_TYPE, str(run.error.code))
            span.set_status(Status(StatusCode.ERROR, str(run.error.code)))

    def model_call(self, entry: UsageEntry, response: ModelResponse | None, request_model: str,
                   started_ns: int) -> None:
        u = entry.usage
        attrs: dict[str, Any] = {
            OPERATION: CHAT, PROVIDER: GEMINI, REQUEST_MODEL: request_model, RESPONSE_MODEL: entry.model,
            INPUT_TOKENS: u.input_tokens, OUTPUT_TOKENS: u.output_tokens + u.thinking_tokens,
            REASONING_TOKENS: u.thinking_tokens, CACHED_TOKENS: u.cached_tokens,
            ENTRY_ID: entry.entry_id, OPERATION_TYPE: entry.operation_type, UNIT_KIND: entry.unit_kind,
            COST: entry.cost_usd}
        if entry.unit_kind == "run":
            attrs[RUN_ID] = entry.unit_id
        if entry.step is not None:
            attrs[STEP] = entry.step
        conversation = _conversation.get()
        if conversation:
            attrs[CONVERSATION] = conversation
        if response is not None and response.finish_reason:
            attrs[FINISH_REASONS] = [response.finish_reason.lower()]
        if response is not None and self.capture_content:
            attrs[OUTPUT_MESSAGES] = json.dumps([{"role": "assistant", "parts": [
                p.model_dump(mode="json", exclude_none=True) for p in response.turn.parts]}], ensure_ascii=False)
        span = self.tracer.start_span(f"{CHAT} {request_model}", kind=SpanKind.CLIENT, attributes=attrs,
                                      start_time=started_ns)
        if entry.outcome == "error":
            span.set_attribute(ERROR_TYPE, entry.error_code or "MODEL_ERROR")
            span.set_status(Status(StatusCode.ERROR, entry.error_code))
        ended_ns = max(started_ns, time.time_ns())
        span.end(end_time=ended_ns)
        if self.meters is not None:
            common = {OPERATION: CHAT, PROVIDER: GEMINI, REQUEST_MODEL: request_model, RESPONSE_MODEL: entry.model}
            if entry.outcome == "error":
                common[ERROR_TYPE] = entry.error_code or "MODEL_ERROR"
            self.duration.record((ended_ns - started_ns) / 1e9, common)
            if entry.outcome != "error":
                self.token_usage.record(u.input_tokens, {**common, TOKEN_TYPE: "input"})
                self.token_usage.record(u.output_tokens + u.thinking_tokens, {**common, TOKEN_TYPE: "output"})

    @contextmanager
    def tool_call(self, action: ActionRecord, conversation_id: str | None) -> Iterator[None]:
        attrs: dict[str, Any] = {OPERATION: EXECUTE_TOOL, TOOL_NAME: action.tool, TOOL_TYPE: "function",
                                 TOOL_CALL_ID: action.call_id or action.action_id, ACTION_ID: action.action_id,
                                 RUN_ID: action.run_id,
                                 POLICY_DECISION: "approved" if action.approval_id else "allow"}
        if action.approval_id:
            attrs[APPROVAL_ID] = action.approval_id
        if conversation_id:
            attrs[CONVERSATION] = conversation_id
        if self.capture_content:
            attrs[TOOL_ARGUMENTS] = json.dumps(action.args, ensure_ascii=False, default=str)
        with self.tracer.start_as_current_span(f"{EXECUTE_TOOL} {action.tool}", kind=SpanKind.INTERNAL,
                                               attributes=attrs, record_exception=False,
                                               set_status_on_exception=False) as span:
            try:
                yield
            finally:
                outcome = action.outcome or ("waiting" if action.status == "awaiting_confirmation" else "none")
                span.set_attribute(OUTCOME, outcome)
                if outcome in ("error", "unknown"):
                    span.set_attribute(ERROR_TYPE, outcome)
                    span.set_status(Status(StatusCode.ERROR, action.error or outcome))
                if self.capture_content and action.result is not None:
                    span.set_attribute(TOOL_RESULT, json.dumps(action.result, ensure_ascii=False, default=str))

    @staticmethod
    def current_traceparent() -> str | None:
        return traceparent_of(trace.get_current_span())


def exporters(environ: Mapping[str, str]) -> list[SpanExporter]:
    """The span exporters ``OTEL_TRACES_EXPORTER`` names (default ``otlp``)."""
    out: list[SpanExporter] = []
    for name in [n.strip().lower() for n in environ.get("OTEL_TRACES_EXPORTER", "otlp").split(",") if n.strip()]:
        if name == "otlp":
            protocol = environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
            if protocol and protocol != "http/protobuf":
                raise ValueError(f"OTEL_EXPORTER_OTLP_PROTOCOL={protocol!r}: only http/protobuf is installed")
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            out.append(OTLPSpanExporter())
        elif name == "gcp_trace":
            from opentelemetry.exporter.cloud_trace import CloudTraceSpanExporter

            project = environ.get("OTEL_EXPORTER_GCP_TRACE_PROJECT_ID") or environ.get("GOOGLE_CLOUD_PROJECT")
            out.append(CloudTraceSpanExporter(project_id=project or None))  # type: ignore[no-untyped-call]
        elif name == "console":
            from opentelemetry.sdk.trace.export import ConsoleSpanExporter

            out.append(ConsoleSpanExporter())
        elif name != "none":
            raise ValueError(f"OTEL_TRACES_EXPORTER names an unknown exporter: {name!r} "
                             "(otlp, gcp_trace, console, none)")
    return out


def resource(environ: Mapping[str, str]) -> Resource:
    """``OTEL_SERVICE_NAME`` / ``OTEL_RESOURCE_ATTRIBUTES`` (read by the SDK), the Cloud Run service
    name as a default, and the GCP resource when ``OTEL_RESOURCE_DETECTORS`` names ``gcp``."""
    base = Resource.create({} if environ.get("OTEL_SERVICE_NAME")
                           else {"service.name": environ.get("K_SERVICE") or "agent-runtime"})
    detectors = {d.strip() for d in environ.get("OTEL_RESOURCE_DETECTORS", "").split(",")}
    if "gcp" in detectors:
        from opentelemetry.resourcedetector.gcp_resource_detector import GoogleCloudResourceDetector

        base = GoogleCloudResourceDetector().detect().merge(base)
    return base


def metric_readers(environ: Mapping[str, str]) -> list[Any]:
    """The metric readers ``OTEL_METRICS_EXPORTER`` names (``otlp``, ``console``; default none)."""
    from opentelemetry.sdk.metrics.export import ConsoleMetricExporter, PeriodicExportingMetricReader

    out: list[Any] = []
    for name in [n.strip().lower() for n in environ.get("OTEL_METRICS_EXPORTER", "none").split(",") if n.strip()]:
        if name == "otlp":
            from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

            out.append(PeriodicExportingMetricReader(OTLPMetricExporter()))
        elif name == "console":
            out.append(PeriodicExportingMetricReader(ConsoleMetricExporter()))
        elif name != "none":
            raise ValueError(f"OTEL_METRICS_EXPORTER names an unknown exporter: {name!r} (otlp, console, none)")
    return out


def from_env(environ: Mapping[str, str]) -> Tracing:
    res = resource(environ)
    provider = TracerProvider(resource=res)
    for exporter in exporters(environ):
        provider.add_span_processor(BatchSpanProcessor(exporter))
    readers = metric_readers(environ)
    meters = MeterProvider(resource=res, metric_readers=readers) if readers else None
    return Tracing(provider, capture_content=environ.get(CAPTURE_CONTENT, "").strip().lower() == "true",
                   meters=meters)
