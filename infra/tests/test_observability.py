"""Issue 30: every function of every environment traces to Cloud Trace through the standard OTEL_*
variables the runtime reads (shared/otel.py), may write spans, and nothing else can switch it."""

from __future__ import annotations

from pathlib import Path

import pytest
from agent_infra.config import CATALOG
from harness import REPO, STACKS, Declared, deploy, functions, of_type, sa_member, stack_config

TRACE_ROLE = "roles/cloudtrace.agent"


def trace_grants(declared: list[Declared]) -> set[str]:
    return {d.inputs["member"] for d in of_type(declared, "gcp:projects/iAMMember:IAMMember")
            if d.inputs["role"] == TRACE_ROLE}


@pytest.mark.parametrize("stack", STACKS)
def test_every_function_exports_its_spans_to_cloud_trace(stacks: dict[str, list[Declared]], stack: str) -> None:
    declared = stacks[stack]
    cfg = stack_config(stack)
    ratio = str(float(cfg["agent-runtime:tracing"]["sampleRatio"]))
    for name, fn in functions(declared).items():
        env = fn["serviceConfig"]["environmentVariables"]
        assert {k: v for k, v in env.items() if k.startswith("OTEL_")} == {
            "OTEL_TRACES_EXPORTER": "gcp_trace", "OTEL_RESOURCE_DETECTORS": "gcp", "OTEL_SERVICE_NAME": name,
            "OTEL_EXPORTER_GCP_TRACE_PROJECT_ID": cfg["gcp:project"],
            "OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": ratio}, name
    assert trace_grants(declared) == {sa_member(declared, f"sa-{s.name}") for s in CATALOG}
    apis = {d.inputs["service"] for d in of_type(declared, "gcp:projects/service:Service")}
    assert "cloudtrace.googleapis.com" in apis


def test_the_runtime_knows_the_exporter_and_reads_the_variables() -> None:
    """The infra venv cannot import the runtime: its source is read as text."""
    config = (REPO / "shared" / "config.py").read_text()
    otel = (REPO / "shared" / "otel.py").read_text()
    assert '"gcp_trace"' in config.split("TRACE_EXPORTERS = ", 1)[1].split("\n", 1)[0]
    for name in ("OTEL_EXPORTER_GCP_TRACE_PROJECT_ID", "OTEL_RESOURCE_DETECTORS", "CloudTraceSpanExporter",
                 "GoogleCloudResourceDetector"):
        assert name in otel, name
    lock = (REPO / "requirements.txt").read_text().splitlines()
    assert {"opentelemetry-exporter-gcp-trace==1.15.0", "opentelemetry-resourcedetector-gcp==1.14.0"} <= set(lock)


def test_content_capture_and_off_are_one_setting(bundle_dir: Path) -> None:
    on = deploy("dev", bundle_dir, {"agent-runtime:tracing": {"exporter": "gcp_trace", "sampleRatio": 0.25,
                                                              "captureContent": True}})
    for fn in functions(on).values():
        env = fn["serviceConfig"]["environmentVariables"]
        assert env["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] == "true"
        assert env["OTEL_TRACES_SAMPLER_ARG"] == "0.25"
    off = deploy("dev", bundle_dir, {"agent-runtime:tracing": {"exporter": "none"}})
    for fn in functions(off).values():
        assert not [k for k in fn["serviceConfig"]["environmentVariables"] if k.startswith("OTEL_")]
    assert trace_grants(off) == set()


@pytest.mark.parametrize("bad", [
    {"agent-runtime:tracing": {"exporter": "zipkin"}},
    {"agent-runtime:tracing": {"exporter": "gcp_trace", "sampleRatio": 2}},
    {"agent-runtime:runtimeEnv": {"OTEL_TRACES_EXPORTER": "console"}},
])
def test_a_bad_tracing_setting_is_refused(bundle_dir: Path, bad: dict[str, object]) -> None:
    with pytest.raises(Exception, match=r"tracing\.exporter|tracing\.sampleRatio|runtimeEnv may not"):
        deploy("dev", bundle_dir, bad)
