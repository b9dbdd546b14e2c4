"""The function catalog and the per-stack settings read from ``Pulumi.<stack>.yaml``.

The catalog (``catalog.py``, derived from the runtime's route table ``shared/routes.py``) says
what each deployed function is and what it may touch (the source of the least-privilege grants);
the stack config says how big, how many and with which settings it
runs in one environment. Nothing here creates resources.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

import pulumi

from agent_infra.catalog import CATALOG, FunctionSpec, SecretName
from agent_infra.catalog import FirestoreAccess as FirestoreAccess  # re-exported: iam.py reads it here

NAMESPACE = "agent-runtime"
PYTHON_RUNTIME = "python311"

# Seconds a deadline-bound function gets beyond AGENT_RUN_DEADLINE_S: the loop stops at the
# deadline, then persists its state and answers; the platform must not kill it first.
DEADLINE_MARGIN_S = 30

# Secret-backed environment variables: never set as plain values.
SECRET_ENV: dict[SecretName, str] = {
    "gemini": "GEMINI_API_KEY",
    "credentials": "CREDENTIALS_ENCRYPTION_KEY",
    "google_oauth": "GOOGLE_OAUTH_CLIENT_SECRET",
}

# Set by the program itself; a stack may not override them.
PROGRAM_ENV = ("STATE_BACKEND", "GOOGLE_CLOUD_PROJECT", "AUTH_MODE", "DISPATCHER", "RESUME_TOPIC",
               "EVENT_RETENTION_S", "AUDIT_RETENTION_S", "GOOGLE_OAUTH_CLIENT_ID", "SANDBOX_URL", "SANDBOX_KEY",
               "ADMIN_SERVICE_ACCOUNTS", "ADMIN_AUDIENCE")

# The message the scheduler publishes to the resume topic: resume runs the recovery sweep
# (shared/durable/router.py Router.sweep: stranded outbox entries, units whose lease expired).
SWEEP_MESSAGE: dict[str, str] = {"kind": "sweep"}
# Every minute: the schedules' clock (shared/agent/schedules.py: the due schedules start their runs).
SCHEDULE_TICK_MESSAGE: dict[str, str] = {"kind": "schedule_tick"}
SCHEDULE_TICK_CRON = "* * * * *"
_CRON_FIELD = re.compile(r"^[0-9*/,-]+$")


@dataclass(frozen=True)
class Scaling:
    """Per-environment size of one function."""

    memory: str
    cpu: str
    min_instances: int
    max_instances: int
    concurrency: int
    timeout_s: int


@dataclass(frozen=True)
class Retention:
    """How long data lives in one environment (TTL horizons, backups, recovery)."""

    events_days: int
    audit_days: int
    backup_days: int
    point_in_time_recovery: bool
    delete_protection: bool
    dead_letter_days: int


@dataclass(frozen=True)
class HostAgentSpec:
    """The host agent job of one environment (``agent-runtime:hostAgent``)."""

    image_file: str
    memory: str
    cpu: str
    timeout_s: int
    log_retention_days: int
    env: dict[str, str]


@dataclass(frozen=True)
class Tracing:
    """OpenTelemetry traces of one environment (``agent-runtime:tracing``; docs/observability.md)."""

    exporter: str
    """``gcp_trace`` (Cloud Trace, with the GCP resource detected) or ``none`` (off)."""
    sample_ratio: float
    """Share of units traced (parent-based: a unit's later invocations follow its first)."""
    capture_content: bool
    """Model output and tool arguments/results on spans (user data: off unless decided)."""


TRACE_EXPORTERS = ("gcp_trace", "none")


@dataclass(frozen=True)
class Alerts:
    """Alert thresholds of one environment (``agent-runtime:alerts``; infra/agent_infra/monitoring.py)."""

    daily_spend_usd: float
    """The estimated model spend of the last 24 h above which an incident opens."""
    error_rate_pct: float
    """The functions' share of 5xx answers (over 5 minutes) above which an incident opens."""
    notification_channels: tuple[str, ...] = ()
    """Notification channel ids (``projects/P/notificationChannels/N``) the incidents go to."""


def _alerts(raw: dict[str, Any]) -> Alerts:
    alerts = Alerts(daily_spend_usd=float(raw.get("dailySpendUsd", 50)),
                    error_rate_pct=float(raw.get("errorRatePct", 5)),
                    notification_channels=tuple(str(c) for c in raw.get("notificationChannels") or ()))
    if alerts.daily_spend_usd <= 0:
        raise ValueError(f"alerts.dailySpendUsd must be > 0, got {alerts.daily_spend_usd}")
    if not 0 < alerts.error_rate_pct <= 100:
        raise ValueError(f"alerts.errorRatePct must be in (0, 100], got {alerts.error_rate_pct}")
    return alerts


def _tracing(raw: dict[str, Any]) -> Tracing:
    tracing = Tracing(exporter=str(raw.get("exporter", "gcp_trace")), sample_ratio=float(raw.get("sampleRatio", 1.0)),
                      capture_content=bool(raw.get("captureContent", False)))
    if tracing.exporter not in TRACE_EXPORTERS:
        raise ValueError(f"tracing.exporter must be one of {list(TRACE_EXPORTERS)}, got {tracing.exporter!r}")
    if not 0.0 <= tracing.sample_ratio <= 1.0:
        raise ValueError(f"tracing.sampleRatio must be between 0 and 1, got {tracing.sample_ratio}")
    return tracing


# What the host agent job may set as plain environment (the rest is the program's or a secret's).
HOST_AGENT_ENV = ("GEMINI_MODEL", "MODEL_TIMEOUT_S", "MODEL_MAX_RETRIES", "LOG_LEVEL")


def _host_agent(raw: dict[str, Any]) -> HostAgentSpec:
    env = {str(k): str(v) for k, v in (raw.get("env") or {}).items()}
    unknown = set(env) - set(HOST_AGENT_ENV)
    if unknown:
        raise ValueError(f"hostAgent.env may only set {list(HOST_AGENT_ENV)}, not {sorted(unknown)}")
    spec = HostAgentSpec(image_file=str(raw.get("imageFile") or "../dist/host-agent-image.txt"),
                         memory=str(raw.get("memory", "512Mi")), cpu=str(raw.get("cpu", "1")),
                         timeout_s=int(raw.get("timeoutS", 3600)),
                         log_retention_days=int(raw.get("logRetentionDays", 7)), env=env)
    if not 60 <= spec.timeout_s <= 86400:
        raise ValueError(f"hostAgent.timeoutS must be between 60 and 86400 seconds, got {spec.timeout_s}")
    if spec.log_retention_days < 1:
        raise ValueError("hostAgent.logRetentionDays must be at least 1")
    return spec


@dataclass(frozen=True)
class SandboxSpec:
    """The sandbox service of one environment (``agent-runtime:sandbox``, docs/workspaces.md)."""

    image_file: str
    memory: str
    cpu: str
    max_instances: int
    concurrency: int
    snapshot_retention_days: int
    disk_bytes: int


# The functions that run the workspace tools (the agent loop) or destroy workspaces: they get
# SANDBOX_URL and may invoke the sandbox service; no other identity may.
SANDBOX_CALLERS = ("run", "stream", "resume", "sessions", "containers")


def _sandbox(raw: dict[str, Any]) -> SandboxSpec:
    spec = SandboxSpec(image_file=str(raw.get("imageFile") or "../dist/sandbox-image.txt"),
                       memory=str(raw.get("memory", "4Gi")), cpu=str(raw.get("cpu", "2")),
                       max_instances=int(raw.get("maxInstances", 1)), concurrency=int(raw.get("concurrency", 8)),
                       snapshot_retention_days=int(raw.get("snapshotRetentionDays", 7)),
                       disk_bytes=int(raw.get("diskBytes", 1 << 30)))
    if spec.max_instances != 1:
        # Each instance keeps local copies of the workspaces it served; a second instance would
        # restore an older snapshot of one the first is changing (docs/workspaces.md).
        raise ValueError("sandbox.maxInstances must be 1 (workspaces are cached per instance)")
    if spec.snapshot_retention_days < 2:
        raise ValueError("sandbox.snapshotRetentionDays must outlive the idle TTL (at least 2 days)")
    return spec


@dataclass(frozen=True)
class Admin:
    """The admin principal of one environment (``agent-runtime:admin``; the admin API,
    ``/api/admin/users/{uid}``): Google service accounts calling with their Google-signed ID token
    for ``audience`` (``shared/auth.py``)."""

    service_accounts: tuple[str, ...] = ()
    audience: str = ""


_SERVICE_ACCOUNT = re.compile(r"^[a-z0-9][a-z0-9._-]*@[a-z0-9][a-z0-9.-]*\.gserviceaccount\.com$")


def _admin(raw: dict[str, Any], project: str) -> Admin:
    unknown = set(raw) - {"serviceAccounts", "audience"}
    if unknown:
        raise ValueError(f"admin may only set serviceAccounts and audience, not {sorted(unknown)}")
    accounts = tuple(str(a).strip().lower() for a in raw.get("serviceAccounts") or ())
    bad = [a for a in accounts if not _SERVICE_ACCOUNT.match(a)]
    if bad:
        raise ValueError(f"admin.serviceAccounts must be service account emails (…@….gserviceaccount.com), got {bad}")
    if not accounts:
        return Admin()
    return Admin(service_accounts=accounts, audience=str(raw.get("audience") or f"agent-runtime-admin:{project}"))


def _iap_client_id(raw: dict[str, Any]) -> str:
    """``endpointIap.oauthClientId`` (empty: the Google-managed OAuth client)."""
    unknown = set(raw) - {"oauthClientId"}
    if unknown:
        raise ValueError(f"endpointIap may only set oauthClientId, not {sorted(unknown)} (its secret is the "
                         "secret config value endpointIapClientSecret)")
    return str(raw.get("oauthClientId") or "").strip()


@dataclass(frozen=True)
class StackConfig:
    environment: str
    project: str
    region: str
    firestore_location: str
    backend_invoker: str
    bundle_dir: str
    resume_topic: str
    max_delivery_attempts: int
    runtime_env: dict[str, str]
    scaling: dict[str, Scaling]
    retention: Retention
    sweep_schedule: str
    google_oauth_client_id: str
    host_agent: HostAgentSpec
    sandbox: SandboxSpec
    tracing: Tracing = Tracing(exporter="none", sample_ratio=1.0, capture_content=False)
    endpoint_domain: str = ""
    """``endpointDomain``: the custom domain of the one endpoint (a managed certificate, HTTPS);
    empty: HTTP on the load balancer's address until DNS exists (agent_infra/endpoint.py)."""
    alerts: Alerts = Alerts(daily_spend_usd=50.0, error_rate_pct=5.0)
    admin: Admin = Admin()
    endpoint_iap_client_id: str = ""
    """``endpointIap.oauthClientId``: the OAuth client IAP uses on the endpoint (empty: the
    Google-managed one); its secret is the secret config value ``endpointIapClientSecret``."""

    @property
    def run_deadline_s(self) -> float:
        return float(self.runtime_env.get("AGENT_RUN_DEADLINE_S", "90"))

    def function_env(self, spec: FunctionSpec) -> dict[str, str]:
        """Plain environment variables of one function (no secrets among them)."""
        env = {
            **self.runtime_env,
            "STATE_BACKEND": "firestore",
            "GOOGLE_CLOUD_PROJECT": self.project,
            "AUTH_MODE": "firebase",
            "DISPATCHER": "pubsub",
            "RESUME_TOPIC": self.resume_topic,
            "EVENT_RETENTION_S": str(self.retention.events_days * 86400),
            "AUDIT_RETENTION_S": str(self.retention.audit_days * 86400),
        }
        env.update(self.tracing_env(spec))
        # The public half of the OAuth client, next to its secret (functions that refresh tokens).
        if "google_oauth" in spec.secrets and self.google_oauth_client_id:
            env["GOOGLE_OAUTH_CLIENT_ID"] = self.google_oauth_client_id
        # The admin principal, only where the admin API is served (elsewhere such a token is refused).
        if spec.admin and self.admin.service_accounts:
            env["ADMIN_SERVICE_ACCOUNTS"] = ",".join(self.admin.service_accounts)
            env["ADMIN_AUDIENCE"] = self.admin.audience
        return env


    def tracing_env(self, spec: FunctionSpec) -> dict[str, str]:
        """The standard ``OTEL_*`` variables turning the runtime's tracing on (none when off)."""
        t = self.tracing
        if t.exporter == "none":
            return {}
        env = {"OTEL_TRACES_EXPORTER": t.exporter, "OTEL_RESOURCE_DETECTORS": "gcp",
               "OTEL_SERVICE_NAME": f"agent-{spec.name}", "OTEL_EXPORTER_GCP_TRACE_PROJECT_ID": self.project,
               "OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": str(t.sample_ratio)}
        if t.capture_content:
            env["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "true"
        return env


def _scaling(spec: FunctionSpec, raw: dict[str, Any], deadline_s: float) -> Scaling:
    floor = math.ceil(deadline_s) + DEADLINE_MARGIN_S if spec.deadline_bound else 1
    timeout = int(raw.get("timeoutS", floor if spec.deadline_bound else spec.default_timeout_s))
    if timeout < floor:
        raise ValueError(f"{spec.name}: timeoutS {timeout} is below the run deadline plus margin ({floor})")
    scaling = Scaling(
        memory=str(raw.get("memory", "512Mi")),
        cpu=str(raw.get("cpu", "1")),
        min_instances=int(raw.get("minInstances", 0)),
        max_instances=int(raw.get("maxInstances", 3)),
        concurrency=int(raw.get("concurrency", 8)),
        timeout_s=timeout,
    )
    if scaling.concurrency > 1 and float(scaling.cpu) < 1:
        raise ValueError(f"{spec.name}: concurrency > 1 needs at least 1 CPU")
    if not 0 <= scaling.min_instances <= scaling.max_instances:
        raise ValueError(f"{spec.name}: need 0 <= minInstances <= maxInstances")
    return scaling


def _schedule(raw: str | None) -> str:
    """A five-field cron expression (Cloud Scheduler's unix-cron format)."""
    schedule = " ".join((raw or "").split())
    fields = schedule.split(" ")
    if len(fields) != 5 or not all(_CRON_FIELD.match(f) for f in fields):
        raise ValueError(f"sweepSchedule must be a five-field cron expression, got {raw!r}")
    return schedule


def load() -> StackConfig:
    """Read and validate the current stack's configuration (raises ValueError on a bad stack)."""
    cfg = pulumi.Config(NAMESPACE)
    gcp = pulumi.Config("gcp")
    runtime_env = {str(k): str(v) for k, v in (cfg.get_object("runtimeEnv") or {}).items()}
    forbidden = (set(runtime_env) & (set(SECRET_ENV.values()) | set(PROGRAM_ENV))
                 | {k for k in runtime_env if k.startswith("OTEL_")})  # agent-runtime:tracing says those
    if forbidden:
        raise ValueError(f"runtimeEnv may not set {sorted(forbidden)}: secrets and program-owned variables")
    deadline = float(runtime_env.get("AGENT_RUN_DEADLINE_S", "90"))
    raw_scaling: dict[str, Any] = cfg.get_object("scaling") or {}
    unknown = set(raw_scaling) - {s.name for s in CATALOG}
    if unknown:
        raise ValueError(f"scaling names unknown functions: {sorted(unknown)}")
    missing = {s.name for s in CATALOG} - set(raw_scaling)
    if missing:
        raise ValueError(f"scaling has no settings for functions {sorted(missing)}: size every function per stack")
    raw_retention: dict[str, Any] = cfg.require_object("retention")
    return StackConfig(
        environment=pulumi.get_stack(),
        project=gcp.require("project"),
        region=gcp.require("region"),
        firestore_location=cfg.require("firestoreLocation"),
        backend_invoker=cfg.require("backendServiceAccount"),
        bundle_dir=cfg.get("bundleDir") or "../dist/bundle",
        resume_topic=cfg.get("resumeTopic") or "agent-resume",
        max_delivery_attempts=cfg.get_int("maxDeliveryAttempts") or 5,
        runtime_env=runtime_env,
        scaling={s.name: _scaling(s, raw_scaling.get(s.name) or {}, deadline) for s in CATALOG},
        sweep_schedule=_schedule(cfg.require("sweepSchedule")),
        google_oauth_client_id=(cfg.get("googleOAuthClientId") or "").strip(),
        host_agent=_host_agent(cfg.require_object("hostAgent")),
        sandbox=_sandbox(cfg.require_object("sandbox")),
        tracing=_tracing(cfg.get_object("tracing") or {"exporter": "none"}),
        endpoint_domain=(cfg.get("endpointDomain") or "").strip(),
        alerts=_alerts(cfg.get_object("alerts") or {}),
        admin=_admin(cfg.get_object("admin") or {}, gcp.require("project")),
        endpoint_iap_client_id=_iap_client_id(cfg.get_object("endpointIap") or {}),
        retention=Retention(
            events_days=int(raw_retention["eventsDays"]),
            audit_days=int(raw_retention["auditDays"]),
            backup_days=int(raw_retention.get("backupDays", 0)),
            point_in_time_recovery=bool(raw_retention.get("pointInTimeRecovery", False)),
            delete_protection=bool(raw_retention.get("deleteProtection", False)),
            dead_letter_days=int(raw_retention.get("deadLetterDays", 7)),
        ),
    )
