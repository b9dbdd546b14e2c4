"""Issue 30: per environment, log-based metrics read from the runtime's log lines, the alert policies
(dead letters > 0, 5xx ratio, stuck units, daily spend) and one dashboard; the runtime really
logs what the metrics filter on (its source read as text)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agent_infra.monitoring import APPROVALS_WAITING, MODEL_COST, MODEL_TOKENS, RUNS_STOPPED, STUCK_UNITS
from harness import REPO, STACKS, Declared, deploy, named, of_type, stack_config

METRIC = "gcp:logging/metric:Metric"
ALERT = "gcp:monitoring/alertPolicy:AlertPolicy"
DASHBOARD = "gcp:monitoring/dashboard:Dashboard"


def alerts(declared: list[Declared]) -> dict[str, dict[str, object]]:
    return {d.name: d.inputs for d in of_type(declared, ALERT)}


@pytest.mark.parametrize("stack", STACKS)
def test_log_based_metrics(stacks: dict[str, list[Declared]], stack: str) -> None:
    metrics = {d.inputs["name"]: d.inputs for d in of_type(stacks[stack], METRIC)}
    assert set(metrics) == {RUNS_STOPPED, MODEL_COST, MODEL_TOKENS, STUCK_UNITS, APPROVALS_WAITING}
    assert 'jsonPayload.logger="agent_runtime.agent"' in metrics[RUNS_STOPPED]["filter"]
    assert metrics[RUNS_STOPPED]["labelExtractors"] == {"status": "EXTRACT(jsonPayload.status)"}
    assert metrics[MODEL_COST]["valueExtractor"] == "EXTRACT(jsonPayload.costUsd)"
    assert metrics[MODEL_COST]["metricDescriptor"]["valueType"] == "DISTRIBUTION"
    assert metrics[MODEL_TOKENS]["valueExtractor"] == "EXTRACT(jsonPayload.totalTokens)"
    assert "never handled" in metrics[STUCK_UNITS]["filter"] and "severity>=ERROR" in metrics[STUCK_UNITS]["filter"]
    waiting = metrics[APPROVALS_WAITING]
    assert 'jsonPayload.logger="agent_runtime.approvals"' in waiting["filter"]
    assert "approvals waiting" in waiting["filter"]
    assert waiting["valueExtractor"] == "EXTRACT(jsonPayload.approvalsWaiting)"


@pytest.mark.parametrize("stack", STACKS)
def test_alert_policies(stacks: dict[str, list[Declared]], stack: str) -> None:
    declared = stacks[stack]
    cfg = stack_config(stack)
    want = cfg["agent-runtime:alerts"]
    got = alerts(declared)
    assert set(got) == {"alert-dead-letters", "alert-error-rate", "alert-stuck-units", "alert-daily-spend"}
    for policy in got.values():
        assert policy["notificationChannels"] == want["notificationChannels"]
        assert policy["userLabels"] == {"app": "agent-runtime", "env": stack}
        assert stack in str(policy["displayName"])
    dead = got["alert-dead-letters"]["conditions"][0]["conditionThreshold"]  # type: ignore[index]
    dead_sub = named(declared, "resume-dead-letter-sub").inputs["name"]
    assert f'subscription_id="{dead_sub}"' in dead["filter"] and "num_undelivered_messages" in dead["filter"]
    assert dead["comparison"] == "COMPARISON_GT" and dead["thresholdValue"] == 0
    errors = got["alert-error-rate"]["conditions"][0]["conditionThreshold"]  # type: ignore[index]
    assert 'response_code_class="5xx"' in errors["filter"] and "5xx" not in errors["denominatorFilter"]
    assert errors["thresholdValue"] == want["errorRatePct"] / 100
    stuck = got["alert-stuck-units"]["conditions"][0]["conditionThreshold"]  # type: ignore[index]
    assert STUCK_UNITS in stuck["filter"] and stuck["thresholdValue"] == 0
    spend = got["alert-daily-spend"]["conditions"][0]["conditionPrometheusQueryLanguage"]  # type: ignore[index]
    assert MODEL_COST in spend["query"] and spend["query"].endswith(f"> {float(want['dailySpendUsd'])}")
    apis = {d.inputs["service"] for d in of_type(declared, "gcp:projects/service:Service")}
    assert "monitoring.googleapis.com" in apis


@pytest.mark.parametrize("stack", STACKS)
def test_one_dashboard_per_environment(stacks: dict[str, list[Declared]], stack: str) -> None:
    [board] = of_type(stacks[stack], DASHBOARD)
    body = json.loads(str(board.inputs["dashboardJson"]))
    assert body["displayName"] == f"Agent Runtime ({stack})"
    titles = [t["widget"]["title"] for t in body["mosaicLayout"]["tiles"]]
    assert {"Runs by outcome", "Dead letters waiting", "5xx answers", "Stuck units", "Approvals waiting"} <= set(titles)
    filters = json.dumps(body)
    for metric in (RUNS_STOPPED, MODEL_COST, MODEL_TOKENS, STUCK_UNITS, APPROVALS_WAITING):
        assert metric in filters


def test_the_runtime_logs_what_the_metrics_read() -> None:
    meter = (REPO / "shared" / "usage" / "meter.py").read_text()
    assert 'log.info("model call"' in meter and '"costUsd"' in meter and '"totalTokens"' in meter
    stops = (REPO / "shared" / "loop" / "stops.py").read_text()
    for line in ('"run completed"', '"run paused for approval"', 'f"run failed: {code}"', '"run yielded"'):
        assert line in stops, line
    assert '"status": run.status' in stops
    outbox = (REPO / "shared" / "durable" / "outbox.py").read_text()
    assert "never handled" in outbox and "log.error" in outbox
    waiting = (REPO / "shared" / "approvals_waiting.py").read_text()
    assert 'getLogger("agent_runtime.approvals")' in waiting and 'MESSAGE = "approvals waiting"' in waiting
    assert '"approvalsWaiting": approvals' in waiting


@pytest.mark.parametrize("bad", [{"dailySpendUsd": 0}, {"errorRatePct": 150}])
def test_bad_alert_settings_are_refused(bundle_dir: Path, bad: dict[str, object]) -> None:
    with pytest.raises(Exception, match=r"alerts\.(dailySpendUsd|errorRatePct)"):
        deploy("dev", bundle_dir, {"agent-runtime:alerts": {"dailySpendUsd": 5, "errorRatePct": 5, **bad}})


def test_notification_channels_reach_every_policy(bundle_dir: Path) -> None:
    channel = "projects/agent-runtime-dev/notificationChannels/123"
    declared = deploy("dev", bundle_dir, {"agent-runtime:alerts": {"dailySpendUsd": 5, "errorRatePct": 5,
                                                                   "notificationChannels": [channel]}})
    assert all(p["notificationChannels"] == [channel] for p in alerts(declared).values())
