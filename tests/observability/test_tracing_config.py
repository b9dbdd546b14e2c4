"""Tracing's switch and configuration (standard ``OTEL_*``), its names against the semantic
conventions package, content capture being opt-in, a streamed run's spans, and a call whose
outcome a crash made unknown showing as such."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai
from opentelemetry.semconv.attributes import error_attributes

from devserver import create_app
from shared import otel, tracing
from shared.auth import LocalAuthenticator
from shared.durable.dispatcher import RecordingDispatcher
from shared.runtime import Runtime, set_runtime
from shared.state.docstore import DocStore
from tests.agent.conftest import MakeRuntime, make_settings
from tests.agent.test_approvals import crashed_after_sending
from tests.leases import lapse
from tests.messages import deliver_published
from tests.observability.support import attr, spans_in_memory, token_model
from tests.observability.test_traces import ALICE, SCRIPT
from tests.plans.support import Script


@pytest.mark.parametrize(("env", "on"), [
    ({}, False),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, True),
    ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, True),
    ({"OTEL_TRACES_EXPORTER": "gcp_trace"}, True),
    ({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, False),
    ({"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"}, False),
])
def test_tracing_is_on_only_when_the_otel_environment_says_so(env: dict[str, str], on: bool) -> None:
    assert tracing.wanted(env) is on


def test_exporters_are_the_ones_otel_traces_exporter_names() -> None:
    got = otel.exporters({"OTEL_TRACES_EXPORTER": "otlp,console",
                          "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"})
    assert [type(e) for e in got] == [OTLPSpanExporter, ConsoleSpanExporter]
    for e in got:
        e.shutdown()
    with pytest.raises(ValueError, match="only http/protobuf"):
        otel.exporters({"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"})
    with pytest.raises(ValueError, match="unknown exporter: 'zipkin'"):
        otel.exporters({"OTEL_TRACES_EXPORTER": "zipkin"})
    resource = otel.resource({"K_SERVICE": "run"}).attributes
    assert resource["service.name"] == "run"
    assert otel.resource({"OTEL_SERVICE_NAME": "mine"}).attributes["service.name"] != "run"


def test_our_names_are_the_semantic_conventions_names() -> None:
    assert (otel.OPERATION, otel.PROVIDER, otel.AGENT_NAME, otel.AGENT_ID, otel.CONVERSATION) == (
        gen_ai.GEN_AI_OPERATION_NAME, gen_ai.GEN_AI_PROVIDER_NAME, gen_ai.GEN_AI_AGENT_NAME, gen_ai.GEN_AI_AGENT_ID,
        gen_ai.GEN_AI_CONVERSATION_ID)
    assert (otel.REQUEST_MODEL, otel.RESPONSE_MODEL, otel.FINISH_REASONS) == (
        gen_ai.GEN_AI_REQUEST_MODEL, gen_ai.GEN_AI_RESPONSE_MODEL, gen_ai.GEN_AI_RESPONSE_FINISH_REASONS)
    assert (otel.INPUT_TOKENS, otel.OUTPUT_TOKENS, otel.REASONING_TOKENS, otel.CACHED_TOKENS) == (
        gen_ai.GEN_AI_USAGE_INPUT_TOKENS, gen_ai.GEN_AI_USAGE_OUTPUT_TOKENS,
        gen_ai.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS, gen_ai.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS)
    assert (otel.TOOL_NAME, otel.TOOL_CALL_ID, otel.TOOL_TYPE, otel.TOOL_ARGUMENTS, otel.TOOL_RESULT,
            otel.OUTPUT_MESSAGES) == (
        gen_ai.GEN_AI_TOOL_NAME, gen_ai.GEN_AI_TOOL_CALL_ID, gen_ai.GEN_AI_TOOL_TYPE, gen_ai.GEN_AI_TOOL_CALL_ARGUMENTS,
        gen_ai.GEN_AI_TOOL_CALL_RESULT, gen_ai.GEN_AI_OUTPUT_MESSAGES)
    ops = gen_ai.GenAiOperationNameValues
    ours = (otel.INVOKE_AGENT, otel.CHAT, otel.EXECUTE_TOOL, otel.GEMINI)
    assert ours == (ops.INVOKE_AGENT.value, ops.CHAT.value, ops.EXECUTE_TOOL.value,
                    gen_ai.GenAiProviderNameValues.GCP_GEMINI.value)
    assert otel.ERROR_TYPE == error_attributes.ERROR_TYPE


def test_content_is_recorded_only_when_opted_in(docstore: DocStore) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.use(otel.Tracing(provider, capture_content=True, flush=False))
    script = Script(acts={"": [("search_memory", {"query": "window seats"})]})
    rt = Runtime(make_settings(), store=docstore, model=token_model(script), authenticator=LocalAuthenticator(),
                 dispatcher=RecordingDispatcher())
    set_runtime(rt)
    try:
        body = create_app().test_client().post("/api/agent/run", json={"prompt": "seats?"}, headers=ALICE).get_json()
    finally:
        set_runtime(None)
        tracing.use(None)
    assert body["status"] == "completed", body
    spans = exporter.get_finished_spans()
    [tool] = [s for s in spans if attr(s, otel.OPERATION) == otel.EXECUTE_TOOL]
    assert attr(tool, otel.TOOL_ARGUMENTS) == '{"query": "window seats"}' and attr(tool, otel.TOOL_RESULT)
    assert all(attr(s, otel.OUTPUT_MESSAGES) for s in spans if attr(s, otel.OPERATION) == otel.CHAT)


def test_a_streamed_run_is_one_trace(docstore: DocStore) -> None:
    with spans_in_memory() as exporter:
        rt = Runtime(make_settings(), store=docstore, model=token_model(SCRIPT), authenticator=LocalAuthenticator(),
                     dispatcher=RecordingDispatcher())
        set_runtime(rt)
        try:
            resp = create_app().test_client().post("/api/agent/run/stream", json={"prompt": "remember tea"},
                                                   headers=ALICE)
            assert resp.status_code == 200 and b'"awaiting_confirmation"' in resp.data
        finally:
            set_runtime(None)
        spans = exporter.get_finished_spans()
    [root] = [s for s in spans if s.parent is None]
    assert root.name == "invoke_agent chat" and attr(root, otel.RUN_STATUS) == "awaiting_confirmation"
    assert root.context is not None and all(s.context and s.context.trace_id == root.context.trace_id for s in spans)
    assert [s.name for s in spans if s.parent is not None] == ["chat gemini-3-flash-preview"]


def test_a_call_a_crash_cut_off_shows_outcome_unknown(make_runtime: MakeRuntime) -> None:

    with spans_in_memory() as exporter:
        rt, _, result, _ = crashed_after_sending(make_runtime)
        lapse(rt.runs, result.run_id)  # the crashed invocation's (long) lease runs out
        assert rt.router.sweep()["recovered"] == 1
        spans = exporter.get_finished_spans()
    tools: list[Any] = [s for s in spans if attr(s, otel.OPERATION) == otel.EXECUTE_TOOL]
    # a real crash never ends the first attempt's span (here the exception ended it); the recovery
    # records the call as unknown
    assert len(tools) == 2 and attr(tools[0], otel.OUTCOME) != "success"
    unknown = tools[1]
    assert attr(unknown, otel.OUTCOME) == "unknown" and attr(unknown, otel.ERROR_TYPE) == "unknown"
    assert attr(unknown, otel.APPROVAL_ID) == result.approval.id
    invocations = [s for s in spans if attr(s, otel.OPERATION) == otel.INVOKE_AGENT]
    assert sorted(str(attr(s, otel.INVOCATION)) for s in invocations) == ["recover", "resume", "start"]
    assert len({s.context.trace_id for s in invocations if s.context}) == 1


@pytest.mark.parametrize(("env", "problem"), [
    ({"OTEL_TRACES_EXPORTER": "otlp,zipkin"}, "unknown exporters ['zipkin']"),
    ({"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, "only http/protobuf"),
])
def test_a_tracing_configuration_the_runtime_cannot_honour_refuses_to_start(
        monkeypatch: pytest.MonkeyPatch, env: dict[str, str], problem: str) -> None:
    from shared.config import Settings
    from shared.errors import ConfigurationError

    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ConfigurationError, match=re.escape(problem)):
        Settings.from_env()


def test_model_calls_record_the_genai_client_metrics(docstore: DocStore) -> None:
    """``gen_ai.client.token.usage`` (by ``gen_ai.token.type``) sums to the ledger; one
    ``gen_ai.client.operation.duration`` point per model call."""
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    reader = InMemoryMetricReader()
    provider = TracerProvider()
    tracing.use(otel.Tracing(provider, flush=False, meters=MeterProvider(metric_readers=[reader])))
    rt = Runtime(make_settings(), store=docstore, model=token_model(SCRIPT), authenticator=LocalAuthenticator(),
                 dispatcher=RecordingDispatcher())
    set_runtime(rt)
    try:
        client = create_app().test_client()
        for i in range(3):
            body = client.post("/api/agent/run", json={"prompt": f"remember {i}"}, headers=ALICE).get_json()
            client.post("/api/agent/approve", json={"approvalId": body["approval"]["id"], "decision": "approve"},
                        headers=ALICE)
            deliver_published(rt)
    finally:
        set_runtime(None)
        tracing.use(None)
    data = reader.get_metrics_data()
    assert data is not None
    points: dict[str, list[Any]] = {}
    for rm in data.resource_metrics:
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                points.setdefault(metric.name, []).extend(metric.data.data_points)
    ledger = rt.usage.between("alice", 0, time.time() + 60)
    tokens = {kind: sum(p.sum for p in points[otel.TOKEN_USAGE] if p.attributes[otel.TOKEN_TYPE] == kind)
              for kind in ("input", "output")}
    assert tokens == {"input": sum(e.usage.input_tokens for e in ledger),
                      "output": sum(e.usage.output_tokens + e.usage.thinking_tokens for e in ledger)}
    assert sum(p.count for p in points[otel.OPERATION_DURATION]) == len(ledger) >= 6
    assert all(p.attributes[otel.OPERATION] == "chat" for p in points[otel.OPERATION_DURATION])
