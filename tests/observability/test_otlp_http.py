"""Issue 30 acceptance (OTLP over HTTP): ``make dev``'s server (devserver.py, offline model) with
``OTEL_EXPORTER_OTLP_ENDPOINT`` pointing at a local receiver exports the spans of a run that
pauses for approval and resumes; the receiver decodes them with opentelemetry-proto."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from tests.serving import served_handler

ROOT = Path(__file__).resolve().parents[2]
ALICE = {"Authorization": "Bearer dev:alice", "Content-Type": "application/json"}


class Receiver:
    def __init__(self) -> None:
        self.spans: list[tuple[dict[str, Any], Span]] = []
        self.paths: list[str] = []
        self.lock = threading.Lock()

    def add(self, path: str, body: bytes) -> None:
        req = ExportTraceServiceRequest()
        req.ParseFromString(body)
        with self.lock:
            self.paths.append(path)
            for rs in req.resource_spans:
                resource = {kv.key: kv.value.string_value for kv in rs.resource.attributes}
                for ss in rs.scope_spans:
                    self.spans.extend((resource, s) for s in ss.spans)


@pytest.fixture
def receiver() -> Iterator[tuple[str, Receiver]]:
    got = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            assert self.headers.get("Content-Type") == "application/x-protobuf"
            got.add(self.path, body)
            out = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        def log_message(self, *args: Any) -> None:
            pass

    with served_handler(Handler) as url:
        yield url, got


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def call(base: str, method: str, path: str, body: Any = None) -> dict[str, Any]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(base + path, data=data, method=method, headers=ALICE)
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read())  # type: ignore[no-any-return]


def attrs(span: Span) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kv in span.attributes:
        v = kv.value
        out[kv.key] = (v.string_value if v.HasField("string_value") else v.int_value if v.HasField("int_value")
                       else [x.string_value for x in v.array_value.values] if v.HasField("array_value")
                       else v.double_value)
    return out


def test_make_dev_exports_a_runs_spans_over_otlp_http(tmp_path: Path, receiver: tuple[str, Receiver]) -> None:
    endpoint, got = receiver
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "GEMINI_", "K_SERVICE"))}
    env.update(PORT=str(port), SQLITE_PATH=str(tmp_path / "dev.sqlite3"), STATE_BACKEND="sqlite", AUTH_MODE="local",
               DISPATCHER="inline", SANDBOX_URL="off", OTEL_EXPORTER_OTLP_ENDPOINT=endpoint,
               OTEL_SERVICE_NAME="agent-runtime-dev", TMPDIR=str(tmp_path))
    proc = subprocess.Popen([sys.executable, "devserver.py"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(200):
            try:
                with urllib.request.urlopen(base + "/healthz", timeout=1):
                    break
            except OSError:
                time.sleep(0.1)
        run = call(base, "POST", "/api/agent/run", {"prompt": "Remember that I prefer window seats on trains."})
        assert run["status"] == "awaiting_confirmation", run
        call(base, "POST", "/api/agent/approve", {"approvalId": run["approval"]["id"], "decision": "approve"})
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if call(base, "GET", f"/api/agent/runs/{run['runId']}")["status"] == "completed":
                break
            time.sleep(0.1)
        deadline = time.monotonic() + 30  # the resumed invocation flushes when it ends
        while time.monotonic() < deadline:
            with got.lock:
                ops = [attrs(s).get("gen_ai.operation.name") for _, s in got.spans]
            if ops.count("invoke_agent") >= 2:
                break
            time.sleep(0.1)
    finally:
        proc.terminate()
        _, stderr = proc.communicate(timeout=15)
    assert got.paths and set(got.paths) == {"/v1/traces"}, (got.paths, stderr[-2000:])
    spans = [(resource, s, attrs(s)) for resource, s in got.spans
             if attrs(s).get("agent_runtime.run.id") == run["runId"]]
    assert {r["service.name"] for r, _, _ in spans} == {"agent-runtime-dev"}
    invocations = [(s, a) for _, s, a in spans if a["gen_ai.operation.name"] == "invoke_agent"]
    [root] = [s for s, _ in invocations if not s.parent_span_id]
    assert len(invocations) == 2 and all(s.trace_id == root.trace_id for _, s, _ in spans)
    assert [a["agent_runtime.invocation"] for _, a in invocations] == ["start", "resume"]
    names = sorted(s.name for _, s, _ in spans)
    assert names.count("invoke_agent chat") == 2 and "execute_tool save_memory" in names
    chats = [a for _, s, a in spans if a["gen_ai.operation.name"] == "chat"]
    assert len(chats) == 2 and all("gen_ai.usage.input_tokens" in a and a["gen_ai.conversation.id"] == run["threadId"]
                                   for a in chats)
