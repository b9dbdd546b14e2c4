"""Cloud Monitoring of one environment: log-based metrics from the runtime's structured logs, alert
policies and a dashboard (docs/observability.md, "Metrics and alerts").

The runtime logs one JSON line per unit stop (``agent_runtime.agent``: ``run completed``, ``run
failed: CODE``, ``run paused for approval``, ``run yielded``, with ``status``) and one per model
call (``agent_runtime.usage``: ``model call``, with ``costUsd``, ``inputTokens``,
``outputTokens``, ``latencyMs``); the outbox logs at ERROR a message published again and again
without being handled (a unit stuck past its lease: ``shared/durable/outbox.py``). From those:

| metric | kind | from |
|---|---|---|
| ``agent_runs_stopped`` (label ``status``) | counter | the stop lines |
| ``agent_model_cost_usd`` | distribution | ``costUsd`` of the model call lines |
| ``agent_model_tokens`` (label ``type``: input/output) | distribution | the model call lines |
| ``agent_stuck_units`` | counter | the outbox's "never handled" errors |
| ``agent_approvals_waiting`` | gauge (the sweep's counts; max per period) | ``approvalsWaiting`` of the sweeps |

Alert policies: dead letters waiting (the resume dead-letter subscription's undelivered messages
> 0), the functions' 5xx ratio above ``errorRatePct``, stuck units (> 0 in 10 minutes), and the
day's estimated model spend above ``dailySpendUsd``. Notification channels are the stack's
``notificationChannels`` (ids of channels made in the console; none: the incidents are only in
the console).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_gcp as gcp

from agent_infra.config import StackConfig

RUNS_STOPPED = "agent_runs_stopped"
MODEL_COST = "agent_model_cost_usd"
MODEL_TOKENS = "agent_model_tokens"
STUCK_UNITS = "agent_stuck_units"
APPROVALS_WAITING = "agent_approvals_waiting"
USER_METRIC = "logging.googleapis.com/user/"


@dataclass(frozen=True)
class Monitoring:
    metrics: dict[str, gcp.logging.Metric]
    alerts: dict[str, gcp.monitoring.AlertPolicy]
    dashboard: gcp.monitoring.Dashboard


def _log_filter(logger: str, message: str) -> str:
    return f'jsonPayload.logger="{logger}" AND jsonPayload.message=~"{message}"'


def _metrics(cfg: StackConfig, depends_on: list[pulumi.Resource]) -> dict[str, gcp.logging.Metric]:
    opts = pulumi.ResourceOptions(depends_on=depends_on)
    exponential = gcp.logging.MetricBucketOptionsExponentialBucketsArgs
    buckets = gcp.logging.MetricBucketOptionsArgs(
        exponential_buckets=exponential(num_finite_buckets=40, growth_factor=2, scale=0.000001))
    token_buckets = gcp.logging.MetricBucketOptionsArgs(
        exponential_buckets=exponential(num_finite_buckets=30, growth_factor=2, scale=1))

    def metric(key: str, name: str, description: str, filter_: str, *, unit: str, label: str | None = None,
               value: str | None = None, bucket_options: gcp.logging.MetricBucketOptionsArgs | None = None
               ) -> gcp.logging.Metric:
        """A log-based DELTA metric of the lines ``filter_`` matches: their count, or with ``value``
        the distribution of that ``jsonPayload`` field; ``label``: a ``jsonPayload`` field as a label."""
        labels = [gcp.logging.MetricMetricDescriptorLabelArgs(key=label, value_type="STRING")] if label else None
        return gcp.logging.Metric(
            f"metric-{key}", project=cfg.project, name=name, description=description, filter=filter_,
            metric_descriptor=gcp.logging.MetricMetricDescriptorArgs(
                metric_kind="DELTA", value_type="DISTRIBUTION" if value else "INT64", unit=unit, labels=labels),
            label_extractors={label: f"EXTRACT(jsonPayload.{label})"} if label else None,
            value_extractor=f"EXTRACT(jsonPayload.{value})" if value else None, bucket_options=bucket_options,
            opts=opts)

    model_call = _log_filter("agent_runtime.usage", "^model call")
    return {
        RUNS_STOPPED: metric(
            "runs-stopped", RUNS_STOPPED,
            "Units of work that stopped, by status (completed, failed, awaiting_confirmation, ...)",
            _log_filter("agent_runtime.agent", "^run (completed|failed|paused|yielded)"), unit="1", label="status"),
        MODEL_COST: metric(
            "model-cost", MODEL_COST, "Estimated cost of each model call (USD; the usage ledger's estimate)",
            model_call, unit="USD", value="costUsd", bucket_options=buckets),
        MODEL_TOKENS: metric(
            "model-tokens", MODEL_TOKENS,
            "Tokens of each model call (output includes thinking), as gen_ai.client.token.usage",
            model_call, unit="{token}", label="model", value="totalTokens", bucket_options=token_buckets),
        STUCK_UNITS: metric(
            "stuck-units", STUCK_UNITS,
            "Messages of units published again and again without being handled (stuck past the lease)",
            _log_filter("agent_runtime.outbox", "never handled") + ' AND severity>=ERROR', unit="1"),
        APPROVALS_WAITING: metric(
            "approvals-waiting", APPROVALS_WAITING,
            "Approvals waiting for a person (tool calls, plan acts, budgets), counted by every sweep",
            _log_filter("agent_runtime.approvals", "^approvals waiting$"), unit="{approval}",
            value="approvalsWaiting", bucket_options=token_buckets),
    }


def _threshold(display: str, filter_: str, value: float, *, duration: str = "60s", aligner: str = "ALIGN_MAX",
               period: str = "60s", reducer: str | None = None,
               denominator: str | None = None) -> gcp.monitoring.AlertPolicyConditionArgs:
    aggregation = [gcp.monitoring.AlertPolicyConditionConditionThresholdAggregationArgs(
        alignment_period=period, per_series_aligner=aligner, cross_series_reducer=reducer)]
    return gcp.monitoring.AlertPolicyConditionArgs(
        display_name=display,
        condition_threshold=gcp.monitoring.AlertPolicyConditionConditionThresholdArgs(
            filter=filter_, comparison="COMPARISON_GT", threshold_value=value, duration=duration,
            aggregations=aggregation,
            denominator_filter=denominator,
            denominator_aggregations=aggregation if denominator else None))


def _alerts(cfg: StackConfig, metrics: dict[str, gcp.logging.Metric]) -> dict[str, gcp.monitoring.AlertPolicy]:
    a = cfg.alerts
    channels = list(a.notification_channels)
    env = cfg.environment
    dead_sub = f"{cfg.resume_topic}-dead-letter"
    opts = pulumi.ResourceOptions(depends_on=list(metrics.values()))

    def policy(key: str, display: str, condition: gcp.monitoring.AlertPolicyConditionArgs,
               doc: str) -> gcp.monitoring.AlertPolicy:
        return gcp.monitoring.AlertPolicy(
            f"alert-{key}", project=cfg.project, display_name=f"Agent Runtime ({env}): {display}", combiner="OR",
            conditions=[condition], notification_channels=channels, user_labels={"app": "agent-runtime", "env": env},
            documentation=gcp.monitoring.AlertPolicyDocumentationArgs(content=doc, mime_type="text/markdown"),
            opts=opts)

    run_requests = 'metric.type="run.googleapis.com/request_count" AND resource.type="cloud_run_revision" ' \
                   'AND resource.labels.service_name=starts_with("agent-")'
    spend_query = (f'sum(increase(logging_googleapis_com:user_{MODEL_COST}_sum'
                   f'{{monitored_resource="cloud_run_revision"}}[1d])) > {a.daily_spend_usd}')
    return {
        "dead-letters": policy("dead-letters", "dead letters waiting", _threshold(
            "resume dead-letter subscription has messages",
            'metric.type="pubsub.googleapis.com/subscription/num_undelivered_messages" AND '
            f'resource.type="pubsub_subscription" AND resource.labels.subscription_id="{dead_sub}"', 0),
            f"A resume message failed every delivery and was dead-lettered: read `{dead_sub}` "
            "(docs/deploying.md, Rollback and recovery); the sweep re-publishes its outbox entry."),
        "error-rate": policy("error-rate", f"5xx above {a.error_rate_pct}%", _threshold(
            "share of 5xx answers", run_requests + ' AND metric.labels.response_code_class="5xx"',
            a.error_rate_pct / 100, duration="300s", aligner="ALIGN_RATE", period="300s", reducer="REDUCE_SUM",
            denominator=run_requests),
            "The functions answer 5xx: look for ERROR lines with `stack_trace` in Cloud Logging."),
        "stuck-units": policy("stuck-units", "units stuck past their lease", _threshold(
            "messages never handled", f'metric.type="{USER_METRIC}{STUCK_UNITS}"', 0, aligner="ALIGN_SUM",
            period="600s", duration="0s"),
            "A unit's resume/continue message was published five times without being handled: a run is stuck "
            "past its deadline (the outbox logs its `unitId`)."),
        "daily-spend": policy("daily-spend", f"model spend over ${a.daily_spend_usd}/day",
                              gcp.monitoring.AlertPolicyConditionArgs(
                                  display_name="estimated model spend over the last day",
                                  condition_prometheus_query_language=gcp.monitoring.
                                  AlertPolicyConditionConditionPrometheusQueryLanguageArgs(
                                      query=spend_query, duration="0s", evaluation_interval="300s")),
                              "The usage ledger's estimated cost of the last 24 h passed the stack's "
                              "`alerts.dailySpendUsd` (docs/budgets.md: per-user caps pause units)."),
    }


def _tile(title: str, filter_: str, *, aligner: str = "ALIGN_RATE", reducer: str = "REDUCE_SUM",
          group_by: list[str] | None = None) -> dict[str, Any]:
    return {"title": title, "xyChart": {"dataSets": [{"plotType": "LINE", "timeSeriesQuery": {"timeSeriesFilter": {
        "filter": filter_, "aggregation": {"alignmentPeriod": "300s", "perSeriesAligner": aligner,
                                           "crossSeriesReducer": reducer, "groupByFields": group_by or []}}}}]}}


def dashboard_json(cfg: StackConfig) -> str:
    dead_sub = f"{cfg.resume_topic}-dead-letter"
    tiles = [
        _tile("Runs by outcome", f'metric.type="{USER_METRIC}{RUNS_STOPPED}"', group_by=["metric.label.status"]),
        _tile("Model spend (USD, estimated)", f'metric.type="{USER_METRIC}{MODEL_COST}"', aligner="ALIGN_SUM"),
        _tile("Tokens per model (gen_ai.client.token.usage)", f'metric.type="{USER_METRIC}{MODEL_TOKENS}"',
              aligner="ALIGN_SUM", group_by=["metric.label.model"]),
        _tile("Dead letters waiting", 'metric.type="pubsub.googleapis.com/subscription/num_undelivered_messages" '
              f'AND resource.labels.subscription_id="{dead_sub}"', aligner="ALIGN_MAX", reducer="REDUCE_MAX"),
        _tile("5xx answers", 'metric.type="run.googleapis.com/request_count" AND '
              'metric.labels.response_code_class="5xx"', group_by=["resource.label.service_name"]),
        _tile("Stuck units", f'metric.type="{USER_METRIC}{STUCK_UNITS}"', aligner="ALIGN_SUM"),
        _tile("Approvals waiting", f'metric.type="{USER_METRIC}{APPROVALS_WAITING}"', aligner="ALIGN_MAX",
              reducer="REDUCE_MAX"),
    ]
    layout = {"columns": 2, "tiles": [{"width": 6, "height": 4, "xPos": (i % 2) * 6, "yPos": (i // 2) * 4,
                                        "widget": t} for i, t in enumerate(tiles)]}
    return json.dumps({"displayName": f"Agent Runtime ({cfg.environment})", "mosaicLayout": layout})


def create_monitoring(cfg: StackConfig, depends_on: list[pulumi.Resource]) -> Monitoring:
    metrics = _metrics(cfg, depends_on)
    alerts = _alerts(cfg, metrics)
    board = gcp.monitoring.Dashboard("dashboard", project=cfg.project, dashboard_json=dashboard_json(cfg),
                                     opts=pulumi.ResourceOptions(depends_on=list(metrics.values())))
    return Monitoring(metrics=metrics, alerts=alerts, dashboard=board)
