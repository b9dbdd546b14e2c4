"""Runtime configuration read from the environment once per process.

Every variable is documented in README.md (Configuration).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from shared.errors import ConfigurationError

N = TypeVar("N", int, float)


def _parsed(name: str, default: N, parse: Callable[[str], N], what: str) -> N:
    """Environment variable ``name`` read by ``parse`` (unset or blank: ``default``)."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return parse(raw)
    except ValueError as exc:
        raise ConfigurationError(f"{name} must be {what}, got {raw!r}") from exc


def _int(name: str, default: int) -> int:
    return _parsed(name, default, int, "an integer")


def _float(name: str, default: float) -> float:
    return _parsed(name, default, float, "a number")


def _bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name, "").strip().lower()
    if not raw:
        return default
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("0", "false", "no", "off"):
        return False
    raise ConfigurationError(f"{name} must be true or false, got {raw!r}")


def _limit(name: str, default: int) -> int:
    """A per-user limit: an integer >= 0, where 0 means no limit."""
    value = _int(name, default)
    if value < 0:
        raise ConfigurationError(f"{name} must be >= 0 (0: no limit), got {value}")
    return value


def _key32(name: str) -> str | None:
    """A base64 (standard or URL-safe) 32-byte key; refused at startup when malformed."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    from shared.formats import b64decode_any  # only when a key is configured (main.py stays light)

    try:
        key = b64decode_any(raw)
    except ValueError as exc:
        raise ConfigurationError(f"{name} must be base64 of 32 bytes") from exc
    if len(key) != 32:
        raise ConfigurationError(f"{name} must decode to 32 bytes, got {len(key)}")
    return raw


Profile = Literal["speed", "balanced", "quality"]
PROFILES: tuple[Profile, ...] = ("speed", "balanced", "quality")

DEFAULT_MODEL_PRICES: tuple[tuple[str, float, float, float], ...] = (
    # model, USD per million input tokens, per million cached input tokens, per million output
    # tokens (thinking tokens are billed as output). Gemini Developer API list prices, paid tier,
    # prompts up to 200k tokens, from https://ai.google.dev/gemini-api/docs/pricing (docs/usage.md).
    ("gemini-3-pro-preview", 2.00, 0.20, 12.00),
    ("gemini-3-flash-preview", 0.50, 0.05, 3.00),
    ("gemini-2.5-pro", 1.25, 0.125, 10.00),
    ("gemini-2.5-flash", 0.30, 0.03, 2.50),
    ("gemini-2.5-flash-lite", 0.10, 0.01, 0.40),
)


DEFAULT_SEARCH_PRICES: tuple[tuple[str, str, float], ...] = (
    # model family (a name prefix), what Google Search grounding bills on top of the tokens, USD
    # per 1,000: Gemini 3 each search query the model ran, Gemini 2.5 and 2.0 each grounded prompt
    # (paid tier; the free allowance is not counted: an estimate errs high). docs/usage.md.
    ("gemini-3", "query", 14.0),
    ("gemini-2.5", "prompt", 35.0),
    ("gemini-2.0", "prompt", 35.0),
)


def _prices(name: str) -> tuple[tuple[str, float, float, float], ...]:
    """``MODEL_PRICES``: JSON ``{"model": [input, cachedInput, output], ...}`` (USD per million
    tokens) merged over the defaults."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return DEFAULT_MODEL_PRICES
    import json

    try:
        extra = json.loads(raw)
        parsed = {str(k): (float(v[0]), float(v[1]), float(v[2])) for k, v in extra.items()}
    except (ValueError, TypeError, IndexError, AttributeError) as exc:
        raise ConfigurationError(f"{name} must be a JSON object of model -> [input, cachedInput, output] "
                                 "USD per million tokens") from exc
    merged = {m: (i, c, o) for m, i, c, o in DEFAULT_MODEL_PRICES}
    merged.update(parsed)
    return tuple((m, *p) for m, p in sorted(merged.items()))


def _allow_hosts(raw: str, on_cloud_run: bool) -> tuple[str, ...]:
    """``WEB_FETCH_ALLOW_HOSTS``: comma-separated host names or IP addresses ``web_fetch`` may reach
    although they are private, loopback or on another port. A test and local-dev switch: it would
    open the metadata server and the VPC to the model, so a deployed function refuses to start."""
    hosts = tuple(h.strip().lower().strip("[]") for h in raw.split(",") if h.strip())
    if hosts and on_cloud_run:
        raise ConfigurationError("WEB_FETCH_ALLOW_HOSTS is for tests and local development only and is refused "
                                 "on Cloud Run (K_SERVICE is set)")
    return hosts


def _allow_private_mcp_urls(on_cloud_run: bool) -> bool:
    """``MCP_ALLOW_PRIVATE_URLS``: users' MCP servers may be at private addresses. A local-dev and
    test switch (it would open the metadata server and the VPC to any user): refused on Cloud Run."""
    allowed = _bool("MCP_ALLOW_PRIVATE_URLS", False)
    if allowed and on_cloud_run:
        raise ConfigurationError("MCP_ALLOW_PRIVATE_URLS is for tests and local development only and is refused "
                                 "on Cloud Run (K_SERVICE is set)")
    return allowed


def clamp_loop_steps(value: int) -> int:
    return max(1, min(15, value))


@dataclass(frozen=True)
class McpServer:
    """One MCP server of the deployment (``MCP_SERVERS``): Streamable HTTP (``url``, ``headers``) or
    stdio (``command``); ``tools``: the tool names to expose (None: all); ``side_effects``: per-tool
    overrides of what the server's annotations say."""

    name: str
    url: str | None = None
    command: tuple[str, ...] = ()
    headers: tuple[tuple[str, str], ...] = ()
    tools: tuple[str, ...] | None = None
    side_effects: tuple[tuple[str, bool], ...] = ()
    public_only: bool = False
    """A user's server (never a deployment's): every connection first checks that its host resolves
    to public addresses only (``shared/connectors/url_guard.py``)."""


_MCP_KEYS = frozenset({"name", "url", "command", "headers", "tools", "sideEffects"})


def _mcp_server(item: object, index: int) -> McpServer:
    where = f"MCP_SERVERS[{index}]"
    if not isinstance(item, dict) or not set(item) <= _MCP_KEYS:
        raise ConfigurationError(f"{where} must be an object with keys among {', '.join(sorted(_MCP_KEYS))}")
    name, url, command = item.get("name"), item.get("url"), item.get("command")
    if not isinstance(name, str) or not name.strip():
        raise ConfigurationError(f"{where}.name must be a non-empty string")
    if (url is None) == (command is None):
        raise ConfigurationError(f"{where} needs exactly one of url (Streamable HTTP) or command (stdio)")
    if url is not None and not (isinstance(url, str) and url.startswith(("http://", "https://"))):
        raise ConfigurationError(f"{where}.url must be an http(s) URL")
    if command is not None and not (isinstance(command, list) and command
                                    and all(isinstance(c, str) and c for c in command)):
        raise ConfigurationError(f"{where}.command must be a non-empty list of strings")
    headers, tools, effects = item.get("headers", {}), item.get("tools"), item.get("sideEffects", {})
    if not (isinstance(headers, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in headers.items())):
        raise ConfigurationError(f"{where}.headers must be an object of strings")
    if tools is not None and not (isinstance(tools, list) and all(isinstance(t, str) for t in tools)):
        raise ConfigurationError(f"{where}.tools must be a list of tool names")
    if not (isinstance(effects, dict) and all(isinstance(v, bool) for v in effects.values())):
        raise ConfigurationError(f"{where}.sideEffects must be an object of tool name -> true/false")
    return McpServer(name=name.strip(), url=url, command=tuple(command or ()), headers=tuple(sorted(headers.items())),
                     tools=tuple(tools) if tools is not None else None, side_effects=tuple(sorted(effects.items())))


def _json_list(name: str, of: str) -> list[Any]:
    """Environment variable ``name`` as a JSON list of ``of`` (unset or blank: empty)."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return []
    import json

    try:
        items = json.loads(raw)
    except ValueError as exc:
        raise ConfigurationError(f"{name} must be a JSON list of {of}") from exc
    if not isinstance(items, list):
        raise ConfigurationError(f"{name} must be a JSON list of {of}")
    return items


def _mcp_servers(name: str) -> tuple[McpServer, ...]:
    """``MCP_SERVERS``: a JSON list of servers (docs/connectors.md, "MCP servers")."""
    items = _json_list(name, "servers")
    servers = tuple(_mcp_server(item, i) for i, item in enumerate(items))
    names = [s.name for s in servers]
    if len(set(names)) != len(names):
        raise ConfigurationError(f"{name}: server names must be unique")
    return servers


@dataclass(frozen=True)
class A2aAgent:
    """A remote A2A agent our runs may call as a tool (``A2A_AGENTS``, or a user's own through
    ``/api/integrations/a2a/{name}``): its base URL (the card's), headers (a token), and whether a
    message to it is a side effect (the default: it needs the policy's consent)."""

    name: str
    url: str
    headers: tuple[tuple[str, str], ...] = ()
    side_effects: bool = True
    public_only: bool = False
    """A user's agent: its host must resolve to public addresses at every call (url_guard)."""


_A2A_KEYS = frozenset({"name", "url", "headers", "sideEffects"})
A2A_AGENT_NAME = r"^[A-Za-z0-9_-]{1,40}$"


def _a2a_agents(name: str) -> tuple[A2aAgent, ...]:
    """``A2A_AGENTS``: a JSON list ``[{name, url, headers?, sideEffects?}]`` (docs/a2a.md)."""
    import re

    items = _json_list(name, "agents")
    agents: list[A2aAgent] = []
    for i, item in enumerate(items):
        where = f"{name}[{i}]"
        if not isinstance(item, dict) or not set(item) <= _A2A_KEYS:
            raise ConfigurationError(f"{where} must be an object with keys among {', '.join(sorted(_A2A_KEYS))}")
        agent_name, url = item.get("name"), item.get("url")
        if not isinstance(agent_name, str) or not re.match(A2A_AGENT_NAME, agent_name):
            raise ConfigurationError(f"{where}.name must match {A2A_AGENT_NAME}")
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ConfigurationError(f"{where}.url must be an http(s) URL")
        headers = item.get("headers") or {}
        if not isinstance(headers, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                    for k, v in headers.items()):
            raise ConfigurationError(f"{where}.headers must be an object of strings")
        side_effects = item.get("sideEffects", True)
        if not isinstance(side_effects, bool):
            raise ConfigurationError(f"{where}.sideEffects must be true or false")
        agents.append(A2aAgent(agent_name, url.rstrip("/"), tuple(sorted(headers.items())), side_effects))
    names = [a.name for a in agents]
    if len(set(names)) != len(names):
        raise ConfigurationError(f"{name}: agent names must be unique")
    return tuple(agents)


@dataclass(frozen=True)
class Settings:
    state_backend: Literal["sqlite", "firestore"] = "sqlite"
    sqlite_path: str = "var/agent-runtime.sqlite3"
    google_cloud_project: str = "demo-agent-runtime"
    auth_mode: Literal["local", "firebase"] = "local"
    firebase_project_id: str = ""
    firebase_certs_url: str | None = None
    firebase_session_certs_url: str | None = None
    gemini_api_key: str | None = None
    gemini_model: str = "gemini-3-flash-preview"
    gemini_base_url: str | None = None
    gemini_use_vertex: bool = False
    gemini_location: str = "global"
    offline_model_pace_s: float = 0.04
    """The offline model's pause between streamed chunks of a few words (``OFFLINE_MODEL_PACE_MS``)."""
    model_timeout_s: float = 60.0
    model_max_retries: int = 3
    max_loop_steps: int = 8
    max_tool_calls_per_turn: int = 8
    run_deadline_s: float = 90.0
    side_effects_enabled: bool = True
    max_body_bytes: int = 256 * 1024
    approval_ttl_s: float = 24 * 3600.0
    lease_ttl_s: float = 120.0
    event_retention_s: float = 30 * 86400.0
    audit_retention_s: float = 400 * 86400.0
    dispatcher: Literal["inline", "pubsub", "none"] = "inline"
    resume_topic: str = "agent-resume"
    on_cloud_run: bool = field(default=False)
    credentials_encryption_key: str | None = field(default=None, repr=False)
    """Base64 of the 32-byte AES key sealing users' integration tokens (a Secret Manager secret)."""
    google_token_uri: str = "https://oauth2.googleapis.com/token"
    google_oauth_client_id: str | None = None
    google_oauth_client_secret: str | None = field(default=None, repr=False)
    gmail_api_base_url: str | None = None
    calendar_api_base_url: str | None = None
    slack_api_base_url: str | None = None
    plan_default_deadline_s: float = 3600.0
    plan_max_deadline_s: float = 7 * 86400.0
    plan_max_acts_per_task: int = 12
    plan_max_tasks: int = 30
    plan_steps_per_invocation: int = 12
    """Model calls one invocation makes on a plan before it yields to the next one."""
    plan_yield_margin_s: float = 10.0
    """Time left (of AGENT_RUN_DEADLINE_S) below which a plan invocation yields."""
    github_api_base_url: str | None = None
    """GitHub REST API root (default ``https://api.github.com``; GitHub Enterprise: ``https://HOST/api/v3``)."""
    web_fetch_timeout_s: float = 20.0
    web_fetch_max_bytes: int = 2 * 1024 * 1024
    web_fetch_allow_hosts: tuple[str, ...] = ()
    """Hosts ``web_fetch`` may reach although they are private or loopback (tests and local dev only;
    refused on Cloud Run)."""
    model_profiles: tuple[tuple[str, str], ...] = ()
    """``speed | balanced | quality`` -> model name (MODEL_PROFILE_*; each defaults to GEMINI_MODEL)."""
    model_prices: tuple[tuple[str, float, float, float], ...] = DEFAULT_MODEL_PRICES
    search_prices: tuple[tuple[str, str, float], ...] = DEFAULT_SEARCH_PRICES
    """Google Search grounding's fee by model family (``DEFAULT_SEARCH_PRICES``)."""
    # Per-user limits (docs/limits.md); 0 turns a limit off.
    limit_requests_per_minute: int = 600
    """Authenticated API requests per user per minute (fixed one-minute windows)."""
    admin_uids: tuple[str, ...] = ()
    """``ADMIN_UIDS``: comma-separated uids of the principals with the admin role (the admin API,
    ``/api/admin/users/{uid}``); production's admin is rather a service account
    (:attr:`admin_service_accounts`). ``make dev`` also
    takes a ``dev-admin:<name>`` token."""
    admin_service_accounts: tuple[str, ...] = ()
    """``ADMIN_SERVICE_ACCOUNTS``: comma-separated Google service account emails with the admin role
    (the stack config's ``agent-runtime:admin.serviceAccounts``, set by the infra program on the
    functions that serve the admin API). Such an account calls with a Google-signed ID token whose
    audience is :attr:`admin_audience` (``shared/auth.py``)."""
    admin_audience: str = ""
    """``ADMIN_AUDIENCE``: the audience the admin service accounts' ID tokens must name."""
    google_certs_url: str | None = None
    """``GOOGLE_ID_TOKEN_CERTS_URL``: where Google's ID-token certificates are read (tests: a local server)."""
    limit_active_runs: int = 10
    """Chat runs a user may have not yet completed or failed (paused for approval included)."""
    limit_active_sessions: int = 5
    """Plan sessions a user may have not yet ended (awaiting confirmation included)."""
    limit_daily_tokens: int = 2_000_000
    """Model tokens (the ledger's ``totalTokens``) per user per UTC day before new work is refused."""
    budget_user_daily_usd: float = 0.0
    """``BUDGET_USER_DAILY_USD``: the estimated cost a user's model calls may reach per UTC day
    before a unit pauses with a budget approval (docs/budgets.md); 0: no cap."""
    budget_user_monthly_usd: float = 0.0
    """``BUDGET_USER_MONTHLY_USD``: the same per UTC month; 0: no cap."""
    model_max_output_tokens: int = 8192
    """``MODEL_MAX_OUTPUT_TOKENS``: the most one model call may answer (thinking included), sent to
    Gemini; the budgets count a call at this many output tokens before it is made."""
    mcp_servers: tuple[McpServer, ...] = ()
    """Deployment-wide MCP servers whose tools join the registry (``MCP_SERVERS``)."""
    mcp_timeout_s: float = 10.0
    """The most an MCP server's tool listing may take at a registry's build (a slow one is left out)."""
    mcp_list_ttl_s: float = 300.0
    """How long an instance keeps an MCP server's tool list (``MCP_LIST_TTL_S``; 0: lists at every
    run start). A ``notifications/tools/list_changed`` drops it sooner (docs/connectors.md)."""
    mcp_allow_private_urls: bool = False
    """``MCP_ALLOW_PRIVATE_URLS``: a user's MCP server may be at a private, loopback or link-local
    address (``make dev``, tests; refused on Cloud Run). Off by default: such URLs are refused
    (``shared/connectors/url_guard.py``)."""
    follow_max_wait_s: float = 60.0
    a2a_public_url: str | None = None
    a2a_agents: tuple[A2aAgent, ...] = ()
    a2a_timeout_s: float = 60.0
    """``A2A_PUBLIC_URL``: the server's public base URL as the agent card names it (default: the
    scheme and host the card was requested at)."""
    """The longest one ``events?follow=1`` request reads on (then the client reconnects with ``after``)."""
    sandbox_url: str | None = None
    """The sandbox service (``SANDBOX_URL``, docs/workspaces.md): the container and shell tools exist
    only when it is set."""
    sandbox_key: str | None = None
    """``SANDBOX_KEY``: sent as ``X-Sandbox-Key`` (tests, ``make dev``); unset: a Google ID token."""
    workspaces_per_user: int = 5
    """Live workspaces one user may hold (``WORKSPACES_PER_USER``); one more is a 409."""
    workspace_idle_ttl_s: float = 86400.0
    """A workspace unused this long is deleted by the sweep (``WORKSPACE_IDLE_TTL_S``)."""
    github_git_base_url: str = "https://github.com"
    """Where ``owner/name`` repositories are cloned from and pushed to (``GITHUB_GIT_BASE_URL``);
    the user's GitHub token is sent only to this origin."""
    heartbeat_s: float = 15.0
    """``STREAM_HEARTBEAT_S``: the longest a followed stream stays silent: then it sends a heartbeat (an
    SSE comment line, an NDJSON ``{"type": "heartbeat"}`` line), so proxies with an idle timeout keep it."""

    def model_for(self, profile: Profile) -> str:
        return dict(self.model_profiles).get(profile, self.gemini_model)

    def price_of(self, model: str) -> tuple[float, float, float] | None:
        """(input, cached input, output) USD per million tokens of ``model``; None when unknown.
        A versioned name (``gemini-2.5-flash-001``) uses the price of its base name."""
        for name, i, c, o in self.model_prices:
            if model == name or model.startswith(f"{name}-"):
                return i, c, o
        return None

    def search_fee(self, model: str, queries: int) -> float:
        """Google Search grounding's own fee (USD) for one grounded call of ``model`` that ran
        ``queries`` distinct search queries: per query (Gemini 3) or per grounded prompt, i.e. once
        when it searched at all (Gemini 2.5, 2.0); 0 for a model without a search price."""
        for family, unit, per_1000 in self.search_prices:
            if model == family or model.startswith((f"{family}-", f"{family}.")):
                count = queries if unit == "query" else min(queries, 1)
                return round(count * per_1000 / 1000, 8)
        return 0.0

    @staticmethod
    def from_env() -> Settings:
        _check_tracing_env()
        backend = os.environ.get("STATE_BACKEND", "sqlite").strip() or "sqlite"
        if backend not in ("sqlite", "firestore"):
            raise ConfigurationError(f"STATE_BACKEND must be sqlite or firestore, got {backend!r}")
        on_cloud_run = bool(os.environ.get("K_SERVICE"))
        auth_mode = os.environ.get("AUTH_MODE", "firebase" if on_cloud_run else "local").strip()
        if auth_mode not in ("local", "firebase"):
            raise ConfigurationError(f"AUTH_MODE must be local or firebase, got {auth_mode!r}")
        if auth_mode == "local" and on_cloud_run:
            # Checked here, at process start (main.py), not when the first request builds the
            # authenticator: a deployed function must refuse to start, not answer 500 forever.
            raise ConfigurationError(
                "AUTH_MODE=local accepts unsigned dev identities and is refused on Cloud Run "
                "(K_SERVICE is set); use AUTH_MODE=firebase or leave AUTH_MODE unset")
        dispatcher = os.environ.get("DISPATCHER", "pubsub" if on_cloud_run else "inline").strip()
        if dispatcher not in ("inline", "pubsub", "none"):
            raise ConfigurationError(f"DISPATCHER must be inline, pubsub or none, got {dispatcher!r}")
        project = os.environ.get("GOOGLE_CLOUD_PROJECT", "").strip() or "demo-agent-runtime"
        return Settings(
            state_backend=backend,  # type: ignore[arg-type]
            sqlite_path=os.environ.get("SQLITE_PATH", "var/agent-runtime.sqlite3"),
            google_cloud_project=project,
            auth_mode=auth_mode,  # type: ignore[arg-type]
            firebase_project_id=os.environ.get("FIREBASE_PROJECT_ID", "").strip() or project,
            firebase_certs_url=os.environ.get("FIREBASE_CERTS_URL") or None,
            firebase_session_certs_url=os.environ.get("FIREBASE_SESSION_CERTS_URL") or None,
            gemini_api_key=os.environ.get("GEMINI_API_KEY") or None,
            gemini_model=os.environ.get("GEMINI_MODEL", "").strip() or "gemini-3-flash-preview",
            gemini_base_url=os.environ.get("GEMINI_BASE_URL") or None,
            gemini_use_vertex=_bool("GEMINI_USE_VERTEX", False),
            gemini_location=os.environ.get("GEMINI_LOCATION", "").strip() or "global",
            offline_model_pace_s=max(0.0, _float("OFFLINE_MODEL_PACE_MS", 40.0)) / 1000,
            model_timeout_s=_float("MODEL_TIMEOUT_S", 60.0),
            model_max_retries=_int("MODEL_MAX_RETRIES", 3),
            max_loop_steps=clamp_loop_steps(_int("AGENT_MAX_LOOP_STEPS", 8)),
            max_tool_calls_per_turn=max(1, _int("AGENT_MAX_TOOL_CALLS_PER_TURN", 8)),
            run_deadline_s=_float("AGENT_RUN_DEADLINE_S", 90.0),
            side_effects_enabled=_bool("AGENT_SIDE_EFFECTS_ENABLED", True),
            max_body_bytes=_int("MAX_BODY_BYTES", 256 * 1024),
            approval_ttl_s=_float("APPROVAL_TTL_S", 24 * 3600.0),
            lease_ttl_s=_float("RESUME_LEASE_TTL_S", 120.0),
            event_retention_s=_float("EVENT_RETENTION_S", 30 * 86400.0),
            audit_retention_s=_float("AUDIT_RETENTION_S", 400 * 86400.0),
            dispatcher=dispatcher,  # type: ignore[arg-type]
            resume_topic=os.environ.get("RESUME_TOPIC", "").strip() or "agent-resume",
            on_cloud_run=on_cloud_run,
            credentials_encryption_key=_key32("CREDENTIALS_ENCRYPTION_KEY"),
            google_token_uri=os.environ.get("GOOGLE_TOKEN_URI", "").strip() or "https://oauth2.googleapis.com/token",
            google_oauth_client_id=os.environ.get("GOOGLE_OAUTH_CLIENT_ID", "").strip() or None,
            google_oauth_client_secret=os.environ.get("GOOGLE_OAUTH_CLIENT_SECRET", "").strip() or None,
            gmail_api_base_url=os.environ.get("GMAIL_API_BASE_URL", "").strip() or None,
            calendar_api_base_url=os.environ.get("CALENDAR_API_BASE_URL", "").strip() or None,
            slack_api_base_url=os.environ.get("SLACK_API_BASE_URL", "").strip() or None,
            plan_default_deadline_s=_float("PLAN_DEFAULT_DEADLINE_S", 3600.0),
            plan_max_deadline_s=_float("PLAN_MAX_DEADLINE_S", 7 * 86400.0),
            plan_max_acts_per_task=max(1, _int("PLAN_MAX_ACTS_PER_TASK", 12)),
            plan_max_tasks=max(1, _int("PLAN_MAX_TASKS", 30)),
            plan_steps_per_invocation=max(1, _int("PLAN_STEPS_PER_INVOCATION", 12)),
            plan_yield_margin_s=_float("PLAN_YIELD_MARGIN_S", 10.0),
            github_api_base_url=os.environ.get("GITHUB_API_BASE_URL", "").strip().rstrip("/") or None,
            web_fetch_timeout_s=_float("WEB_FETCH_TIMEOUT_S", 20.0),
            web_fetch_max_bytes=_int("WEB_FETCH_MAX_BYTES", 2 * 1024 * 1024),
            web_fetch_allow_hosts=_allow_hosts(os.environ.get("WEB_FETCH_ALLOW_HOSTS", ""), on_cloud_run),
            model_profiles=tuple((p, os.environ.get(f"MODEL_PROFILE_{p.upper()}", "").strip()) for p in PROFILES
                                 if os.environ.get(f"MODEL_PROFILE_{p.upper()}", "").strip()),
            model_prices=_prices("MODEL_PRICES"),
            limit_requests_per_minute=_limit("LIMIT_REQUESTS_PER_MINUTE", 600),
            admin_uids=tuple(u.strip() for u in os.environ.get("ADMIN_UIDS", "").split(",") if u.strip()),
            admin_service_accounts=tuple(a.strip().lower() for a in os.environ.get("ADMIN_SERVICE_ACCOUNTS", "")
                                         .split(",") if a.strip()),
            admin_audience=os.environ.get("ADMIN_AUDIENCE", "").strip(),
            google_certs_url=os.environ.get("GOOGLE_ID_TOKEN_CERTS_URL") or None,
            limit_active_runs=_limit("LIMIT_ACTIVE_RUNS", 10),
            limit_active_sessions=_limit("LIMIT_ACTIVE_SESSIONS", 5),
            limit_daily_tokens=_limit("LIMIT_DAILY_TOKENS", 2_000_000),
            budget_user_daily_usd=_usd("BUDGET_USER_DAILY_USD"),
            budget_user_monthly_usd=_usd("BUDGET_USER_MONTHLY_USD"),
            model_max_output_tokens=max(1, _int("MODEL_MAX_OUTPUT_TOKENS", 8192)),
            mcp_servers=_mcp_servers("MCP_SERVERS"),
            mcp_timeout_s=_float("MCP_TIMEOUT_S", 10.0),
            mcp_list_ttl_s=max(0.0, _float("MCP_LIST_TTL_S", 300.0)),
            mcp_allow_private_urls=_allow_private_mcp_urls(on_cloud_run),
            follow_max_wait_s=max(1.0, _float("FOLLOW_MAX_WAIT_S", 60.0)),
            sandbox_url=os.environ.get("SANDBOX_URL", "").strip().rstrip("/") or None,
            sandbox_key=os.environ.get("SANDBOX_KEY", "").strip() or None,
            workspaces_per_user=max(1, _int("WORKSPACES_PER_USER", 5)),
            workspace_idle_ttl_s=max(60.0, _float("WORKSPACE_IDLE_TTL_S", 86400.0)),
            github_git_base_url=os.environ.get("GITHUB_GIT_BASE_URL", "").strip().rstrip("/") or "https://github.com",
            heartbeat_s=max(0.01, _float("STREAM_HEARTBEAT_S", 15.0)),
            a2a_public_url=os.environ.get("A2A_PUBLIC_URL", "").strip().rstrip("/") or None,
            a2a_agents=_a2a_agents("A2A_AGENTS"),
            a2a_timeout_s=max(1.0, _float("A2A_TIMEOUT_S", 60.0)),
        )


TRACE_EXPORTERS = ("otlp", "gcp_trace", "console", "none")
"""What ``OTEL_TRACES_EXPORTER`` may name (``shared/otel.py`` builds them; docs/observability.md)."""


def _check_tracing_env() -> None:
    """A tracing configuration the runtime cannot honour refuses to start (not at the first span)."""
    names = [n.strip().lower() for n in os.environ.get("OTEL_TRACES_EXPORTER", "").split(",") if n.strip()]
    unknown = [n for n in names if n not in TRACE_EXPORTERS]
    if unknown:
        raise ConfigurationError(f"OTEL_TRACES_EXPORTER names unknown exporters {unknown}; "
                                 f"known: {', '.join(TRACE_EXPORTERS)}")
    metrics = [n.strip().lower() for n in os.environ.get("OTEL_METRICS_EXPORTER", "").split(",") if n.strip()]
    unknown = [n for n in metrics if n not in ("otlp", "console", "none")]
    if unknown:
        raise ConfigurationError(f"OTEL_METRICS_EXPORTER names unknown exporters {unknown}; known: otlp, console, none")
    for name in ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"):
        protocol = os.environ.get(name, "").strip()
        if protocol and protocol != "http/protobuf":
            raise ConfigurationError(f"{name}={protocol!r}: only http/protobuf is installed")


def _usd(name: str) -> float:
    """A money cap in USD (0 or unset: none)."""
    value = _float(name, 0.0)
    if value < 0:
        raise ConfigurationError(f"{name} must be >= 0 (0: no cap), got {value}")
    return value
