"""Cold start (issue 2): each deployed function imports only what its requests need.

Every check runs in a fresh interpreter, as a deployed instance: functions-framework loads
``main.py`` for one target and serves one real request on a SQLite store. A Gemini API key is
configured (pointing nowhere), so a model created by mistake would import google-genai.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from shared.agent.approvals import decide
from shared.api import ApproveRequest, RunRequest
from shared.durable.dispatcher import RecordingDispatcher
from shared.models.scripted import ScriptedModel, call, calls_turn
from shared.routes import FUNCTIONS
from shared.runtime import Runtime
from shared.state.sqlite_docstore import SqliteDocStore
from tests.agent.conftest import make_settings

REPO = Path(__file__).resolve().parents[2]
ENTRY_POINTS = sorted(fn.name for fn in FUNCTIONS)
"""main.py's entry points: one per function of the route table."""
TOOL_MODULES = ("shared.tools.memory", "shared.tools.gmail_tools", "shared.tools.calendar_tools",
                "shared.tools.slack_tools")
VENDOR_SDKS = ("google.genai", "googleapiclient", "slack_sdk", "google.cloud.pubsub_v1")
LOOP_DRIVE = ("shared.loop.steps", "shared.loop.context", "shared.loop.tool_calls", "shared.loop.budget_pause",
              "shared.events", "shared.tools", "shared.tracing")
"""What drives a run on (the loop, its tools, events and tracing): a resume imports it only for a run
it claimed (issue 33)."""
TRACING = ("opentelemetry", "shared.otel", "google.cloud.trace")
"""Tracing is off unless ``OTEL_*`` turns it on (issue 30): then none of it is imported."""
OWN_MODULES = {"runs": 40, "runs_404": 39, "approve": 51, "resume": 48, "run": 97, "stream": 99, "goals": 43,
               "integrations": 38}
"""Issue 33 (cold start): how many of our modules (``main``, ``shared.*``, ``functions.*``) each
function has loaded after its first request here (a returning user, SQLite): one more fails (lower
the count when one goes)."""

# Serve one request through functions-framework's app for argv[1], print the status and modules.
SERVE = """
import json, sys
import functions_framework
target, signature, method, path, headers, body = sys.argv[1:7]
app = functions_framework.create_app(target, "main.py", signature or None)
resp = app.test_client().open(path, method=method, headers=json.loads(headers),
                              data=body or None, content_type="application/json")
resp.get_data()
print(json.dumps({"status": resp.status_code, "modules": sorted(sys.modules)}))
"""


def runs_cleanly(code: str) -> None:
    """``code`` runs in a fresh interpreter (only ``PATH`` in its environment) and exits 0."""
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env={"PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr[-3000:]


def _loaded(modules: list[str], prefixes: tuple[str, ...]) -> list[str]:
    return [m for m in modules if any(m == p or m.startswith(p + ".") for p in prefixes)]


def assert_own_modules(got: dict[str, Any], function: str) -> None:
    ours = [m for m in got["modules"] if m.split(".")[0] in ("main", "shared", "functions")]
    assert len(ours) <= OWN_MODULES[function], f"{function}: {len(ours)} > {OWN_MODULES[function]}: {ours}"


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A SQLite file holding four of alice's runs paused on a save_memory approval."""
    path = str(tmp_path_factory.mktemp("imports") / "state.sqlite3")
    store = SqliteDocStore(path)
    try:
        model = ScriptedModel([calls_turn(call("save_memory", {"text": "Alice likes tea"})) for _ in range(4)])
        rt = Runtime(make_settings(), store=store, model=model, dispatcher=RecordingDispatcher())
        out: dict[str, str] = {"path": path}
        for name in ("a", "b", "c", "d"):
            started = rt.agent.start("alice", RunRequest(prompt="remember that I like tea"))
            result = rt.agent.run(rt.agent.context(started))
            assert result.approval is not None, result
            out[f"run_{name}"], out[f"approval_{name}"] = result.run_id, result.approval.id
        return out
    finally:
        store.close()


def serve(seeded: dict[str, str], target: str, method: str, path: str, body: Any = None, *,
          signature: str = "", headers: dict[str, str] | None = None, gemini_key: bool = True,
          env_extra: dict[str, str] | None = None) -> dict[str, Any]:
    env = {"PATH": "/usr/bin:/bin", "STATE_BACKEND": "sqlite", "SQLITE_PATH": seeded["path"],
           "AUTH_MODE": "local", "DISPATCHER": "none", "GOOGLE_CLOUD_PROJECT": "demo-imports", "LOG_LEVEL": "WARNING",
           **(env_extra or {})}
    if gemini_key:
        env.update(GEMINI_API_KEY="test-key", GEMINI_BASE_URL="http://127.0.0.1:9")
    headers = headers if headers is not None else {"Authorization": "Bearer dev:alice"}
    data = "" if body is None else json.dumps(body)
    done = subprocess.run([sys.executable, "-c", SERVE, target, signature, method, path, json.dumps(headers), data],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def pubsub_event(message: dict[str, Any]) -> tuple[dict[str, str], dict[str, Any]]:
    headers = {"ce-id": "evt-imports", "ce-specversion": "1.0", "ce-source": "//pubsub.googleapis.com/t",
               "ce-type": "google.cloud.pubsub.topic.v1.messagePublished"}
    data = {"message": {"data": base64.b64encode(json.dumps(message).encode()).decode(), "messageId": "1",
                        "publishTime": "2026-01-01T00:00:00Z"}, "subscription": "projects/p/subscriptions/s"}
    return headers, data


def test_importing_main_loads_only_the_configuration() -> None:
    code = ("import sys, types, main\n"
            f"assert sorted(main.__all__) == {ENTRY_POINTS!r}, main.__all__\n"
            "assert all(isinstance(getattr(main, n), types.FunctionType) for n in main.__all__)\n"
            "ours = sorted(m for m in sys.modules if m.split('.')[0] in ('shared', 'functions'))\n"
            "assert ours == ['shared', 'shared.config', 'shared.errors', 'shared.http_errors', 'shared.routes'], ours\n"
            "heavy = ('google.genai', 'google.cloud.firestore', 'google.cloud.pubsub', 'pydantic')\n"
            "heavy = sorted(m for m in sys.modules if m.startswith(heavy))\n"
            "assert not heavy, heavy\n")
    runs_cleanly(code)


def test_runs_reads_a_run_without_the_loop_tools_connectors_goals_or_a_model(seeded: dict[str, str]) -> None:
    """Not even the model contract (``shared.models``): the runs repository imports it only to load
    turns."""
    got = serve(seeded, "runs", "GET", f"/api/agent/runs/{seeded['run_a']}")
    assert got["status"] == 200
    assert _loaded(got["modules"], (*VENDOR_SDKS, "shared.agent", "shared.tools", "shared.connectors",
                                    "shared.goals", "shared.models", "shared.durable", "shared.loop")) == []
    assert_own_modules(got, "runs")


def test_runs_events_never_load_the_loop_tools_connectors_goals_or_a_model(seeded: dict[str, str]) -> None:
    """A replay loads the streaming helpers only: the loop (and its context) only for a live stream."""
    got = serve(seeded, "runs", "GET", f"/api/agent/runs/{seeded['run_a']}/events?after=0")
    assert got["status"] == 200
    assert "shared.agent.streaming" in got["modules"]
    assert _loaded(got["modules"], (*VENDOR_SDKS, "shared.tools", "shared.connectors", "shared.goals", "shared.models",
                                    "shared.loop", "shared.agent.service")) == []


def test_an_unknown_run_is_404_on_the_same_imports(seeded: dict[str, str]) -> None:
    got = serve(seeded, "runs", "GET", "/api/agent/runs/run_unknown")
    assert got["status"] == 404
    assert_own_modules(got, "runs_404")
    assert _loaded(got["modules"], (*VENDOR_SDKS, "shared.agent", "shared.tools", "shared.connectors",
                                    "shared.goals", "shared.models")) == []


def test_approve_decides_without_the_loop_tools_connectors_goals_or_a_model(seeded: dict[str, str]) -> None:
    """Ids come from ``shared.ids``, so deciding (which mints audit ids) never loads the agent service
    or its loop."""
    got = serve(seeded, "approve", "POST", "/api/agent/approve",
                {"approvalId": seeded["approval_a"], "decision": "approve"})
    assert got["status"] == 202
    assert "shared.ids" in got["modules"]
    assert_own_modules(got, "approve")
    assert _loaded(got["modules"], (*VENDOR_SDKS, *TOOL_MODULES, *TRACING, "shared.connectors", "shared.goals",
                                    "shared.models.factory", "shared.agent.service", "shared.loop.steps",
                                    "shared.agent.chat_host", "shared.plans", "shared.events.plan",
                                    "shared.events.run", "shared.events.session", "shared.kernel",
                                    "shared.loop.context", "shared.loop.host", "shared.tools", "shared.models")) == []


@pytest.mark.parametrize("signature", ["cloudevent", ""], ids=["signature-cloudevent", "no-signature-type"])
def test_resume_of_a_waiting_run_needs_no_model_tools_or_connectors(seeded: dict[str, str], signature: str) -> None:
    """Also: ``resume`` is a CloudEvent function with or without ``--signature-type cloudevent``."""
    headers, data = pubsub_event({"runId": seeded["run_b"], "uid": "alice"})
    got = serve(seeded, "resume", "POST", "/", data, signature=signature, headers=headers)
    assert got["status"] == 200
    assert "shared.loop.resume" in got["modules"]  # the message was handled, not dropped
    assert_own_modules(got, "resume")
    assert _loaded(got["modules"], (*VENDOR_SDKS, *TOOL_MODULES, *TRACING, "shared.connectors", "shared.goals",
                                    "shared.models.factory", "shared.plans.sessions", "shared.plans.host")) == []
    # issue 33: the loop is imported once a run is claimed to be driven, not for a run that still waits
    assert _loaded(got["modules"], LOOP_DRIVE) == []


def test_resume_of_a_run_that_is_gone_loads_no_loop(seeded: dict[str, str]) -> None:
    """The ``resume`` probe of bench/coldstart.py: a message for a run that does not exist is
    acknowledged after one read; the router imports the loop's resume on dispatch, and that module
    imports the rest of the loop only to drive a claimed run. The check can fail: resuming an
    approved run loads it (below)."""
    headers, data = pubsub_event({"runId": "run_unknown", "uid": "alice"})
    got = serve(seeded, "resume", "POST", "/", data, signature="cloudevent", headers=headers)
    assert got["status"] == 200 and "shared.loop.resume" in got["modules"]
    assert _loaded(got["modules"], LOOP_DRIVE) == []
    assert_own_modules(got, "resume")
    store = SqliteDocStore(seeded["path"])
    try:
        rt = Runtime(make_settings(), store=store, dispatcher=RecordingDispatcher())
        decide(rt.services, rt.dispatcher, "alice", ApproveRequest(approvalId=seeded["approval_d"], decision="reject"))
    finally:
        store.close()
    headers, data = pubsub_event({"runId": seeded["run_d"], "uid": "alice"})
    driven = serve(seeded, "resume", "POST", "/", data, signature="cloudevent", headers=headers, gemini_key=False)
    assert driven["status"] == 200
    assert set(LOOP_DRIVE) <= set(driven["modules"])


def test_a_refused_decision_and_an_unknown_runs_message_never_import_pub_sub(seeded: dict[str, str]) -> None:
    """With the Pub/Sub dispatcher configured, ``approve`` builds it only to publish a resume
    message: an unknown approval (404) and ``resume`` of a run that does not exist import no Pub/Sub
    client (what ``bench/coldstart.py``'s probes of them need: Firestore alone)."""
    pubsub = {"DISPATCHER": "pubsub", "PUBSUB_EMULATOR_HOST": "127.0.0.1:9"}
    got = serve(seeded, "approve", "POST", "/api/agent/approve", {"approvalId": "apr_unknown", "decision": "approve"},
                env_extra=pubsub)
    assert got["status"] == 404
    headers, data = pubsub_event({"runId": "run_unknown", "uid": "alice"})
    gone = serve(seeded, "resume", "POST", "/", data, signature="cloudevent", headers=headers, env_extra=pubsub)
    assert gone["status"] == 200
    assert _loaded(got["modules"] + gone["modules"], ("google.cloud.pubsub_v1", "google.pubsub_v1")) == []


def test_a_recorded_decision_publishes_through_pub_sub(seeded: dict[str, str]) -> None:
    """The check above can fail: a decision that is recorded builds the dispatcher (its publication
    fails here, no server: the outbox keeps the message for the sweep) and imports the client."""
    got = serve(seeded, "approve", "POST", "/api/agent/approve", {"approvalId": seeded["approval_c"], "decision":
                "reject"}, env_extra={"DISPATCHER": "pubsub", "PUBSUB_EMULATOR_HOST": "127.0.0.1:9"})
    assert got["status"] == 202
    assert "google.cloud.pubsub_v1" in got["modules"]


def test_goals_loads_the_usage_ledger_but_never_the_agent(seeded: dict[str, str]) -> None:
    """Issue 9: the goals planner's model calls go to the usage ledger, so goals opens the store
    (it used to load none); it still loads no agent, loop, tools, connectors or auth."""
    got = serve(seeded, "goals", "POST", "/agent/run", {"message": "I want to run a marathon in the spring"},
                gemini_key=False)
    assert got["status"] == 200
    assert "shared.state.usage_repo" in got["modules"]
    assert_own_modules(got, "goals")
    assert _loaded(got["modules"], (*VENDOR_SDKS, "google.cloud.firestore", "shared.agent", "shared.loop",
                                    "shared.tools", "shared.connectors", "shared.auth")) == []


def test_integrations_status_loads_no_agent_tools_goals_or_vendor_sdk(seeded: dict[str, str]) -> None:
    got = serve(seeded, "integrations", "GET", "/api/integrations")
    assert got["status"] == 200
    assert_own_modules(got, "integrations")
    assert _loaded(got["modules"], (*VENDOR_SDKS, "shared.agent", "shared.tools", "shared.goals",
                                    "shared.state.records")) == []


def test_goals_with_gemini_imports_the_sdk_but_not_requests(seeded: dict[str, str]) -> None:
    """The Gemini adapter classifies ``requests`` errors without importing ``requests`` (~30 ms that
    google-genai itself does not need); here the model is unreachable, so the step answers 503."""
    got = serve(seeded, "goals", "POST", "/agent/run", {"message": "I want to run a marathon in the spring"})
    assert got["status"] == 503
    assert "google.genai" in got["modules"]
    assert _loaded(got["modules"], ("requests", "googleapiclient", "slack_sdk", "google.cloud.firestore",
                                    "google.cloud.pubsub_v1", "shared.agent", "shared.loop",
                                    "shared.tools", "shared.connectors")) == []
    assert "shared.state.usage_repo" in got["modules"]  # the failed call is in the ledger (issue 9)


def test_gemini_adapter_classifies_transport_errors_without_importing_requests() -> None:
    code = ("import sys\n"
            "from shared.errors import ModelTimeout\n"
            "from shared.models.gemini import map_error\n"
            "assert 'requests' not in sys.modules\n"
            "import httpx2, requests\n"
            "assert type(map_error(httpx2.ReadTimeout('t'))) is ModelTimeout\n"
            "assert type(map_error(requests.exceptions.ConnectTimeout('t'))) is ModelTimeout\n"
            "for exc in (httpx2.ConnectError('c'), requests.exceptions.ConnectionError('c'),\n"
            "            requests.exceptions.ChunkedEncodingError('c')):\n"
            "    err = map_error(exc)\n"
            "    assert err.retryable and 'connection to Gemini failed' in str(err), err\n"
            "assert not map_error(ValueError('v')).retryable\n")
    runs_cleanly(code)


@pytest.mark.parametrize("target", ["run", "stream"])
def test_run_and_stream_with_gemini_import_the_sdk_but_not_requests(seeded: dict[str, str], target: str) -> None:
    path = "/api/agent/run/stream" if target == "stream" else "/api/agent/run"
    got = serve(seeded, target, "POST", path, {"prompt": "hello"})  # the model is unreachable: a failed run
    assert got["status"] == 200
    assert "google.genai" in got["modules"]
    assert _loaded(got["modules"], ("requests", "googleapiclient", "slack_sdk", "google.cloud.pubsub_v1",
                                    *TRACING, "shared.goals")) == []


@pytest.mark.parametrize("target", ["run", "stream"])
def test_run_and_stream_load_no_goals_nor_connector_sdk(seeded: dict[str, str], target: str) -> None:
    path = "/api/agent/run/stream" if target == "stream" else "/api/agent/run"
    got = serve(seeded, target, "POST", path, {"prompt": "hello"}, gemini_key=False)  # the offline model
    assert got["status"] == 200
    assert "shared.loop.steps" in got["modules"] and "shared.tracing" in got["modules"]
    assert_own_modules(got, target)
    # a returning user with no webhooks, MCP servers, A2A agents or money budget (issue 33)
    assert _loaded(got["modules"], ("shared.agent.webhooks", "shared.delivery", "shared.state.webhooks_repo",
                                    "shared.state.mcp_servers_repo", "shared.loop.budget_pause",
                                    "shared.usage.budget")) == []
    assert _loaded(got["modules"], (*VENDOR_SDKS, *TRACING, "shared.goals")) == []


def test_a_chat_run_without_a_plan_loads_no_plan_executor_or_projects_workspace(tmp_path: Path) -> None:
    """Issue 20 (cold start): the chat host offers the plan meta tools and the project tools by their
    argument models only; the plan engine, executor, contracts and events, and the projects service
    and records load when a plan is made or a project tool runs."""
    code = ("import sys\n"
            "from shared.api import RunRequest\n"
            "from shared.config import Settings\n"
            "from shared.durable.dispatcher import RecordingDispatcher\n"
            "from shared.models.scripted import ScriptedModel, call, calls_turn, text_turn\n"
            "from shared.runtime import Runtime\n"
            "from shared.state.sqlite_docstore import SqliteDocStore\n"
            f"store = SqliteDocStore({str(tmp_path / 'chat.sqlite3')!r})\n"
            "model = ScriptedModel([calls_turn(call('search_memory', {'query': 'tea'})), text_turn('none')])\n"
            "rt = Runtime(Settings(state_backend='sqlite', auth_mode='local', dispatcher='none'), store=store,\n"
            "             model=model, dispatcher=RecordingDispatcher())\n"
            "started = rt.agent.start('alice', RunRequest(prompt='what do I drink?'))\n"
            "result = rt.agent.run(rt.agent.context(started))\n"
            "assert result.status == 'completed', result\n"
            "assert 'shared.tools.project_tools' in sys.modules and 'shared.agent.plan_tool' in sys.modules\n"
            "lazy = ('shared.plans.host', 'shared.plans.sessions', 'shared.plans.contracts', 'shared.events.plan',\n"
            "        'shared.events.run', 'shared.events.session', 'shared.projects', 'shared.state.project_records')\n"
            "loaded = sorted(m for m in sys.modules if m.startswith(lazy))\n"
            "assert not loaded, loaded\n"
            "assert rt.hosts.get('plan') is not None and 'shared.plans.host' in sys.modules\n")
    runs_cleanly(code)


def test_the_kernel_names_the_host_kinds_as_the_hosts_do() -> None:
    from shared.agent.chat_host import ChatHost
    from shared.kernel import CHAT_KIND, PLAN_KIND
    from shared.plans.host import PlanHost
    from shared.plans.plan_state import KIND

    assert (ChatHost.kind, PlanHost.kind) == (CHAT_KIND, PLAN_KIND)
    assert PLAN_KIND == KIND
