"""Issue 30 acceptance (traces): over 100+ fake-model units (chat runs paused for approval and
decided, plan sessions confirmed, paused, approved and continued) on both stores, every unit has
exactly one ``invoke_agent`` root; every later invocation of the unit (resumes, continues) is in
the root's trace; model and tool spans carry the GenAI semantic-convention names; and the
``gen_ai.usage.*`` of the spans sum to the usage ledger exactly, per unit and in all."""

from __future__ import annotations

import time
from collections import Counter

import pytest
from flask.testing import FlaskClient
from opentelemetry.sdk.trace import ReadableSpan

from devserver import create_app
from shared import otel
from shared.auth import LocalAuthenticator
from shared.durable.dispatcher import RecordingDispatcher
from shared.durable.messages import WorkMessage
from shared.runtime import Runtime, set_runtime
from shared.state.docstore import DocStore
from tests import messages
from tests.agent.conftest import make_settings
from tests.observability.support import attr, by_run, ledger_sums, spans_in_memory, token_model, token_sums
from tests.plans.support import Script

ALICE = {"Authorization": "Bearer dev:alice"}
CHAT_RUNS = 84
SESSIONS = 18
SCRIPT = Script(acts={"": [("save_memory", {"text": "chat note"})],
                      "Read the notes": [("search_memory", {"query": "notes"})],
                      "Write the summary": [("save_memory", {"text": "the summary"})]})


def traced(m: WorkMessage) -> None:
    first = m.kind == "continue" and str(m.entryId).endswith("-00000")  # a confirmed plan's first
    assert first or m.kind not in ("resume", "continue") or m.traceparent, m  # the unit's context travels


def deliver(rt: Runtime) -> int:
    return messages.deliver(rt, traced)


def decide(client: FlaskClient, approval_id: str, decision: str) -> None:
    resp = client.post("/api/agent/approve", json={"approvalId": approval_id, "decision": decision}, headers=ALICE)
    assert resp.status_code == 202, resp.get_json()


def run_units(rt: Runtime, client: FlaskClient) -> list[str]:
    """Chat runs that pause on ``save_memory`` (3 in 4 approved, the rest rejected) and plan
    sessions whose second task pauses on it (approved). Returns the run ids."""
    run_ids = []
    for i in range(CHAT_RUNS):
        body = client.post("/api/agent/run", json={"prompt": f"remember note {i}"}, headers=ALICE).get_json()
        assert body["status"] == "awaiting_confirmation", body
        run_ids.append(body["runId"])
        decide(client, body["approval"]["id"], "reject" if i % 4 == 3 else "approve")
        deliver(rt)
    for _ in range(SESSIONS):
        resp = client.post("/api/agent/sessions", json={"prompt": "Summarise my notes and publish"}, headers=ALICE)
        sid = resp.get_json()["sessionId"]
        assert client.post(f"/api/agent/sessions/{sid}/confirm", json={"planVersion": 1},
                           headers=ALICE).status_code == 202
        deliver(rt)
        session = client.get(f"/api/agent/sessions/{sid}", headers=ALICE).get_json()
        [pending] = session["pendingApprovals"]
        decide(client, pending["approvalId"], "approve")
        deliver(rt)
        session = client.get(f"/api/agent/sessions/{sid}", headers=ALICE).get_json()
        assert session["status"] == "completed", session
        run_ids.append(session["runId"])
    return run_ids


def check_unit_traces(rt: Runtime, spans: list[ReadableSpan], run_ids: list[str]) -> None:
    units = by_run(spans)
    resumed = 0
    for run_id in run_ids:
        run = rt.runs.get_run(run_id)
        assert run is not None and run.run.status in ("completed", "failed") and run.run.trace_parent
        unit = units[run_id]
        invocations = [s for s in unit if attr(s, otel.OPERATION) == otel.INVOKE_AGENT]
        roots = [s for s in invocations if s.parent is None]
        assert len(roots) == 1, (run_id, [s.name for s in invocations])
        root = roots[0]
        assert root.context is not None
        assert run.run.trace_parent.startswith(f"00-{root.context.trace_id:032x}-{root.context.span_id:016x}-")
        assert root.name == f"invoke_agent {run.run.host}"
        assert attr(root, otel.INVOCATION) == ("start" if run.run.host == "chat" else "continue")
        later = [s for s in invocations if s is not root]
        assert later, run_id  # every unit here paused or yielded at least once
        for span in later:  # 100 % of resumed invocations are in the first invocation's trace, under its root
            assert span.context is not None and span.parent is not None
            assert span.context.trace_id == root.context.trace_id and span.parent.span_id == root.context.span_id
            assert attr(span, otel.INVOCATION) in ("resume", "continue")
        resumed += len(later)
        for span in unit:
            assert span.context is not None and span.context.trace_id == root.context.trace_id, span.name
        if run.run.host == "chat":
            assert all(attr(s, otel.CONVERSATION) == run.run.thread_id
                       for s in unit)
        # the unit's model spans sum to its ledger entries exactly
        entries = rt.usage.for_unit("alice", run_id)
        assert token_sums(unit) == ledger_sums([e.usage for e in entries]), run_id
        assert sorted(str(attr(s, otel.ENTRY_ID)) for s in unit if attr(s, otel.OPERATION) == otel.CHAT) == \
            sorted(e.entry_id for e in entries)
    assert resumed >= len(run_ids)


def check_names(spans: list[ReadableSpan]) -> None:
    ops = Counter(attr(s, otel.OPERATION) for s in spans)
    assert set(ops) == {otel.INVOKE_AGENT, otel.CHAT, otel.EXECUTE_TOOL}, ops
    for span in spans:
        op = attr(span, otel.OPERATION)
        assert attr(span, otel.PROVIDER) == otel.GEMINI or op == otel.EXECUTE_TOOL
        if op == otel.CHAT:
            assert span.name == "chat gemini-3-flash-preview"
            assert attr(span, otel.REQUEST_MODEL) == attr(span, otel.RESPONSE_MODEL) == "gemini-3-flash-preview"
            assert attr(span, otel.FINISH_REASONS) == ("stop",)
        elif op == otel.EXECUTE_TOOL:
            tool = attr(span, otel.TOOL_NAME)
            assert span.name == f"execute_tool {tool}" and attr(span, otel.TOOL_CALL_ID)
            assert attr(span, otel.TOOL_TYPE) == "function" and attr(span, otel.ACTION_ID)
            assert attr(span, otel.OUTCOME) in ("success", "error", "unknown")
            if tool == "save_memory":  # executed only once approved
                assert attr(span, otel.POLICY_DECISION) == "approved" and attr(span, otel.APPROVAL_ID)
            assert otel.TOOL_ARGUMENTS not in (span.attributes or {})  # content is opt-in
        else:
            assert span.name in ("invoke_agent chat", "invoke_agent plan")
    paused = [s for s in spans if attr(s, otel.RUN_STATUS) == "awaiting_confirmation"]
    assert paused and all(attr(s, otel.APPROVAL_IDS) for s in paused)


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("firestore", marks=pytest.mark.firestore)])
def test_one_trace_per_unit_across_pauses_and_usage_equal_to_the_ledger(
        request: pytest.FixtureRequest, backend: str) -> None:
    store: DocStore = request.getfixturevalue(f"{backend}_docstore")
    started = time.time()
    with spans_in_memory() as exporter:
        rt = Runtime(make_settings(), store=store, model=token_model(SCRIPT), authenticator=LocalAuthenticator(),
                     dispatcher=RecordingDispatcher())
        set_runtime(rt)
        try:
            run_ids = run_units(rt, create_app().test_client())
        finally:
            set_runtime(None)
        spans = list(exporter.get_finished_spans())
    assert len(run_ids) == CHAT_RUNS + SESSIONS >= 100
    check_names(spans)
    check_unit_traces(rt, spans, run_ids)
    # every model call of the user (the plan sessions' planning calls too) is one span, and the sums agree
    ledger = rt.usage.between("alice", started - 1, time.time() + 1)
    assert token_sums(spans) == ledger_sums([e.usage for e in ledger])
    tools = [s for s in spans if attr(s, otel.OPERATION) == otel.EXECUTE_TOOL]
    actions = [a for r in run_ids for a in rt.runs.list_actions(r) if a.status in ("completed", "failed")]
    assert sorted(str(attr(s, otel.ACTION_ID)) for s in tools) == sorted(a.action_id for a in actions)
