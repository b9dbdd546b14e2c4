"""Cold start (issue 33): the modules a cold ``run`` imports, counted (never timed).

A fresh interpreter, functions-framework serving ``main.py``'s ``run``, one run answered through
the real google-genai SDK by the fake Gemini server (a tool call, then the answer), on SQLite
(``bench.features.cold_run_modules``). Every module imported is paid by every cold start of
``run`` and ``stream``: a module more of ours fails here (lower ``OWN_MODULES`` when one goes), and
so does any third-party package outside the ones a run needs, or any module of a feature that is
off. The wall-clock figures are ``make bench``'s ``cold_start`` section.
"""

from __future__ import annotations

import sys

import pytest

from bench.features import FEATURES, cold_run_modules, loaded, own_modules

OWN_MODULES = 107
"""``main``, ``shared.*`` and ``functions.*`` modules loaded by a cold run today."""
OFF_FEATURE_MODULES = {
    # NOT free when off today (issue 33: a feature off adds no import): what each loads.
    "webhooks": ["shared.agent.webhooks", "shared.delivery", "shared.delivery.events", "shared.delivery.sender",
                 "shared.delivery.signing", "shared.state.deliveries_repo", "shared.state.webhooks_repo"],
    "run_control": ["shared.agent.run_queue", "shared.state.thread_queue"],
    "budgets": ["shared.loop.budget_pause", "shared.usage.budget"],
    "mcp": ["shared.state.mcp_servers_repo"],  # the query of the user's servers (A2A agents: same module)
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


def test_a_feature_turned_on_shows_in_the_modules() -> None:
    """The check can fail: the same cold run with tracing on (a console exporter) loads it."""
    traced = cold_run_modules({"OTEL_TRACES_EXPORTER": "console"})
    otel = next(f for f in FEATURES if f.name == "otel")
    assert "shared.otel" in loaded(traced, otel.modules) and "opentelemetry.sdk" in traced
