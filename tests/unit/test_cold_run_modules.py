"""Cold start (issue 33): the modules a cold ``run`` imports, counted (never timed).

A fresh interpreter, functions-framework serving ``main.py``'s ``run``, one run of a returning
user (another fresh instance served their first) answered through the real google-genai SDK by the
fake Gemini server (a tool call, then the answer), on SQLite (``bench.features.cold_run_modules``).
Every module imported is paid by every cold start of ``run`` and ``stream``: a module more of ours
fails here (lower ``OWN_MODULES`` when one goes), and so does any third-party package outside the
ones a run needs, or any module of a feature that is off. A user's very first run also reads their
webhooks, MCP servers and A2A agents once (``FIRST_RUN_MODULES``). The wall-clock figures are
``make bench``'s ``cold_start`` section.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.features import FEATURES, REPO, cold_run_modules, loaded, own_modules

OWN_MODULES = 93
"""``main``, ``shared.*`` and ``functions.*`` modules loaded by a cold run today (94 before session 4
loaded ``shared.agent.run_queue`` only when a run is queued or asked to stop; 107 before issue
33f made webhooks, budgets and the user's MCP/A2A repository load only when used, and the
streaming helpers and the message router only where used; one of the 94, ``shared.loop.services``,
was split out of ``shared.loop.context`` so that ``approve`` loads no loop)."""
OFF_FEATURE_MODULES: dict[str, list[str]] = {
    # NOT free when off today (issue 33: a feature off adds no import): what each loads. Run control
    # was here (``shared.agent.run_queue`` for the stop check and the start's queue entry) until
    # session 4 loaded it only when a run is queued or asked to stop.
}
FIRST_RUN_MODULES = {
    # A user's very first run: their stamps are unknown, so their webhooks, MCP servers and A2A
    # agents are read once (and recorded as 0): the webhooks' announcement and the servers' repository.
    "webhooks": ["shared.agent.webhooks", "shared.delivery", "shared.delivery.events", "shared.delivery.sender",
                 "shared.delivery.signing", "shared.state.deliveries_repo", "shared.state.webhooks_repo"],
    "mcp": ["shared.state.mcp_servers_repo"],
}
THIRD_PARTY = {
    "annotated_types", "anyio", "blinker", "certifi", "click", "cloudevents", "deprecation", "flask",
    "functions_framework", "google", "h11", "httpcore2", "httpx", "httpx2", "idna", "itsdangerous", "jinja2",
    "markupsafe", "packaging", "pydantic", "pydantic_core", "sniffio", "tenacity", "truststore",
    "typing_extensions", "typing_inspection", "websockets", "werkzeug",
    "rich", "pygments",  # httpx imports its command line (rich, pygments) when they are installed
    "_distutils_hack",  # setuptools' import hook (a .pth file), when installed
}
"""What a run needs: functions-framework (flask, werkzeug...), google-genai (httpx, anyio...),
pydantic. Not the Firestore, Pub/Sub, Slack, Google API or tracing clients (not on SQLite)."""
NEVER = ("a2a", "opentelemetry", "playwright", "mcp", "googleapiclient", "slack_sdk", "requests",
         "google.cloud.firestore", "google.cloud.pubsub_v1", "google.cloud.storage", "google.cloud.trace")


@pytest.fixture(scope="module")
def modules() -> list[str]:
    return cold_run_modules()


def test_a_cold_run_imports_no_more_of_our_modules_than_today(modules: list[str]) -> None:
    ours = own_modules(modules)
    assert "shared.loop.steps" in ours and "shared.models.gemini" in ours  # the run was served
    assert len(ours) <= OWN_MODULES, f"{len(ours)} > {OWN_MODULES}: {ours}"


def test_a_cold_run_imports_no_third_party_package_it_does_not_need(modules: list[str]) -> None:
    tops = {m.split(".")[0] for m in modules if not m.startswith(("__main__", "_sysconfigdata_"))}
    tops -= set(sys.stdlib_module_names) | {"main", "shared", "functions"}
    assert tops <= THIRD_PARTY, sorted(tops - THIRD_PARTY)
    assert loaded(modules, NEVER) == []


def test_features_that_are_off_import_what_they_import_today(modules: list[str]) -> None:
    for feature in FEATURES:
        assert loaded(modules, feature.modules) == OFF_FEATURE_MODULES.get(feature.name, []), feature.name


def test_a_users_first_run_reads_their_webhooks_and_servers_once() -> None:
    """The stamps of a user who never ran are unknown: the first run's stop reads their webhooks
    (the announcement's modules load), its tool list reads their MCP servers and A2A agents."""
    first = cold_run_modules(returning=False)
    for feature in FEATURES:
        assert loaded(first, feature.modules) == FIRST_RUN_MODULES.get(feature.name, []), feature.name


def test_a_feature_turned_on_shows_in_the_modules() -> None:
    """The check can fail: the same cold run with tracing on (a console exporter) loads it."""
    traced = cold_run_modules({"OTEL_TRACES_EXPORTER": "console"})
    otel = next(f for f in FEATURES if f.name == "otel")
    assert "shared.otel" in loaded(traced, otel.modules) and "opentelemetry.sdk" in traced


def test_the_collector_runs_rarely_until_the_second_request(tmp_path: Path) -> None:
    """main.py raises the cyclic GC's thresholds for the start and the first request (a cold run
    spends ~15 % of its CPU in collections otherwise) and puts the interpreter's back when the
    second request starts, on HTTP and CloudEvent entry points alike."""
    code = ("import gc, json, sys\n"
            "import functions_framework\n"
            "warm = gc.get_threshold()\n"
            "seen = []\n"
            "for target, signature in (('runs', 'http'), ('resume', 'cloudevent')):\n"
            "    gc.set_threshold(*warm)\n"
            "    client = functions_framework.create_app(target, 'main.py', signature).test_client()\n"
            "    seen.append(gc.get_threshold())\n"
            "    for _ in range(2):\n"
            "        if target == 'runs':\n"
            "            client.get('/api/agent/runs/run_unknown', headers={'Authorization': 'Bearer dev:alice'})\n"
            "        else:\n"
            "            client.post('/', json={}, headers={'ce-id': '1', 'ce-specversion': '1.0', 'ce-source': 's',\n"
            "                                               'ce-type': 't'})\n"
            "        seen.append(gc.get_threshold())\n"
            "print(json.dumps({'warm': warm, 'seen': seen}))\n")
    env = {"PATH": "/usr/bin:/bin", "STATE_BACKEND": "sqlite", "SQLITE_PATH": str(tmp_path / "s.sqlite3"),
           "AUTH_MODE": "local", "DISPATCHER": "none", "GOOGLE_CLOUD_PROJECT": "demo-gc", "LOG_LEVEL": "ERROR"}
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    cold, warm = list(main_cold_threshold()), got["warm"]
    assert cold != warm
    # per app: after loading main.py, after its first request, after its second
    assert got["seen"] == [cold, cold, warm] * 2, got


def main_cold_threshold() -> tuple[int, ...]:
    """``main.COLD_GC_THRESHOLD`` read from the source (importing main here would tune this process)."""
    tree = ast.parse((Path(REPO) / "main.py").read_text())
    value = next(n.value for n in tree.body if isinstance(n, ast.Assign)
                 and any(isinstance(t, ast.Name) and t.id == "COLD_GC_THRESHOLD" for t in n.targets))
    return tuple(ast.literal_eval(value))


def test_pydantic_looks_for_no_plugin_because_none_is_installed() -> None:
    """main.py turns pydantic's plugin search off (it reads every distribution's metadata when the
    first validator is built, ~4.5 ms of every cold start): nothing changes while no plugin is
    installed, which this checks; a deployment that sets the variable itself keeps its value."""
    from importlib.metadata import entry_points

    assert list(entry_points(group="pydantic")) == []
    code = "import os, main; print(os.environ.get('PYDANTIC_DISABLE_PLUGINS'))"
    env = {"PATH": "/usr/bin:/bin", "STATE_BACKEND": "sqlite", "AUTH_MODE": "local", "DISPATCHER": "none",
           "GOOGLE_CLOUD_PROJECT": "demo-plugins"}
    for preset, expected in ((None, "__all__"), ("", "")):
        done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60,
                              env=env if preset is None else {**env, "PYDANTIC_DISABLE_PLUGINS": preset}, check=False)
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout.strip() == expected
