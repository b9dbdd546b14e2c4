"""The per-instance runtime: settings, store, model, auth and tools, created once and shared.

Cloud Functions gen2 serve many requests at once on one instance, so everything here is created
lazily once per process (under a lock) and is thread-safe. Tests install their own runtime with
``set_runtime`` (real stores and models pointed at emulators / fake servers).
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from shared.config import Settings
from shared.ids import new_id

T = TypeVar("T")

if TYPE_CHECKING:
    from shared.agent.service import AgentService
    from shared.auth import Authenticator, Principal
    from shared.connectors import Connectors
    from shared.durable.dispatcher import Dispatcher
    from shared.durable.outbox import Outbox
    from shared.durable.router import Router
    from shared.limits import Limits
    from shared.loop.host import Host, HostRegistry
    from shared.loop.services import HostLookup, Services
    from shared.models.base import Model
    from shared.state.docstore import DocStore
    from shared.state.runs_repo import RunsRepo
    from shared.state.sessions_repo import SessionsRepo
    from shared.state.usage_repo import UsageRepo
    from shared.state.users_repo import Stamps, UsersRepo
    from shared.tools.registry import ToolRegistry


class Runtime:
    """The collaborators of one process. Only the store is opened here; everything else (the
    repositories, tool registry, loop services, model, authenticator, dispatcher, connectors) is
    built on first use, so each deployed function imports only what its requests touch: ``runs``
    never loads the agent loop, tools or connectors, ``approve`` never loads the tools, and no
    function that does not call the model imports its SDK (cold start, issue 2)."""

    def __init__(self, settings: Settings, *, store: DocStore | None = None, model: Model | None = None,
                 authenticator: Authenticator | None = None, registry: ToolRegistry | None = None,
                 dispatcher: Dispatcher | None = None, connectors: Connectors | None = None,
                 hosts: list[Host] | None = None) -> None:
        self.settings = settings
        # Re-entrant: building one collaborator may build another (services -> runs repository).
        self._lock = threading.RLock()
        if store is None:
            from shared.state.factory import create_docstore

            store = create_docstore(settings)
        self.store = store
        self._model = model
        self._authenticator = authenticator
        self._dispatcher = dispatcher
        self._connectors = connectors
        self._registry = registry
        self._extra_hosts = hosts
        self._runs: RunsRepo | None = None
        self._users: UsersRepo | None = None
        self._usage: UsageRepo | None = None
        self._outbox: Outbox | None = None
        self._router: Router | None = None
        self._hosts: HostRegistry | None = None
        self._sessions: SessionsRepo | None = None
        self._services: Services | None = None
        self._agent: AgentService | None = None
        self._limits: Limits | None = None

    def _once(self, attr: str, build: Callable[[], T]) -> T:
        """The collaborator in ``attr``, built by ``build`` on first use (once, under the lock)."""
        value = getattr(self, attr)
        if value is None:
            with self._lock:
                value = getattr(self, attr)
                if value is None:
                    value = build()
                    setattr(self, attr, value)
        return value  # type: ignore[no-any-return]

    @property
    def runs(self) -> RunsRepo:
        def build() -> RunsRepo:
            from shared.state.runs_repo import RunsRepo

            return RunsRepo(self.store, event_retention_s=self.settings.event_retention_s,
                            audit_retention_s=self.settings.audit_retention_s)

        return self._once("_runs", build)

    @property
    def users(self) -> UsersRepo:
        def build() -> UsersRepo:
            from shared.state.users_repo import UsersRepo

            return UsersRepo(self.store)

        return self._once("_users", build)

    @property
    def usage(self) -> UsageRepo:
        def build() -> UsageRepo:
            from shared.state.usage_repo import UsageRepo

            return UsageRepo(self.store)

        return self._once("_usage", build)

    @property
    def sessions(self) -> SessionsRepo:
        def build() -> SessionsRepo:
            from shared.state.sessions_repo import SessionsRepo

            return SessionsRepo(self.store)

        return self._once("_sessions", build)

    @property
    def limits(self) -> Limits:
        """The per-user limits (docs/limits.md): requests per minute, active runs and sessions,
        model tokens per day."""
        def build() -> Limits:
            from shared.limits import Limits
            from shared.state.limits_repo import LimitsRepo

            return Limits(self.settings, LimitsRepo(self.store), lambda: self.usage)

        return self._once("_limits", build)

    @property
    def outbox(self) -> Outbox:
        def build() -> Outbox:
            from shared.durable.outbox import Outbox
            from shared.state.outbox_repo import OutboxRepo

            return Outbox(OutboxRepo(self.store), lambda: self.dispatcher, lease_ttl_s=self.settings.lease_ttl_s)

        return self._once("_outbox", build)

    @property
    def hosts(self) -> HostRegistry:
        def build() -> HostRegistry:
            from shared.kernel import build_hosts

            return build_hosts(self.sessions, self._extra_hosts)

        return self._once("_hosts", build)

    @property
    def router(self) -> Router:
        """Message kind -> handler (resume, continue, sweep): what the ``resume`` function runs."""
        def build() -> Router:
            from shared.kernel import build_router

            return build_router(self.services, lambda: self.sessions)

        return self._once("_router", build)

    @property
    def registry(self) -> ToolRegistry:
        """Every shipped tool (their modules, pydantic argument models and connectors load here)."""
        def build() -> ToolRegistry:
            from shared.tools import default_registry

            registry = default_registry()
            if self.settings.sandbox_url:  # the workspace tools need the sandbox service
                from shared.tools import sandbox_tools

                sandbox_tools.register(registry)
            if self.settings.a2a_agents:  # remote A2A agents as tools (the a2a-sdk loads when one is called)
                from shared.tools.a2a_tools import add_agents

                add_agents(registry, self.settings.a2a_agents, self.settings)
            if self.settings.mcp_servers:  # only then is the MCP SDK imported (cold start)
                from shared.tools.mcp_tools import add_servers

                registry.unavailable = tuple(add_servers(registry, self.settings.mcp_servers, self.settings))
            return registry

        return self._once("_registry", build)

    @registry.setter
    def registry(self, registry: ToolRegistry) -> None:
        self._registry = registry

    def registry_for(self, base: ToolRegistry, uid: str, stamps: Stamps | None = None) -> ToolRegistry:
        """The tools of ``uid``'s runs: ``base`` plus the user's own MCP servers' and A2A agents' (a
        store query each per invocation, none for a collection ``stamps`` know empty or this
        process read at the same stamp: shared/state/users_repo.py). The deployment's servers are listed
        again when their listing expired (``MCP_LIST_TTL_S``). Without any server the MCP SDK is
        never imported (cold start), nor their repository when the stamps say the user has none."""
        stamped = self.services.stamped
        agents = stamped.read(stamps, "a2aAgents", lambda: _user_servers(self.store, "a2aAgents", uid))
        if not self.settings.mcp_servers and not stamped.read(stamps, "mcpServers",
                                                              lambda: _user_servers(self.store, "mcpServers", uid)):
            return self._with_agents(base, uid) if agents else base
        from shared.connectors.user_mcp import UserMcpServers
        from shared.tools.mcp_tools import with_servers

        mine, unreadable = UserMcpServers(self.store, self.connectors().vault,
                                          allow_private=self.settings.mcp_allow_private_urls).servers(uid)
        registry = with_servers(base, [*self.settings.mcp_servers, *mine], self.settings, unreadable)
        return self._with_agents(registry, uid) if agents else registry

    def _with_agents(self, base: ToolRegistry, uid: str) -> ToolRegistry:
        """``base`` plus the tools of ``uid``'s own remote A2A agents (a new registry)."""
        from shared.connectors.user_a2a import UserA2aAgents
        from shared.tools.a2a_tools import add_agents
        from shared.tools.registry import ToolRegistry

        registry = ToolRegistry()
        for tool in base:
            registry.add(tool)
        mine, unreadable = UserA2aAgents(self.store, self.connectors().vault,
                                         allow_private=self.settings.mcp_allow_private_urls).servers(uid)
        add_agents(registry, mine, self.settings)
        registry.unavailable = (*base.unavailable, *unreadable)
        return registry

    @property
    def services(self) -> Services:
        """The loop's collaborators; their tool registry is only built when a tool is looked up."""
        return self._once("_services", lambda: _lazy_services_type()(
            settings=self.settings, runs=self.runs, users=self.users, registry=self._registry,
            model_factory=self.model, new_id=new_id, connectors=self.connectors, usage=self.usage,
            outbox=self.outbox, hosts=self._hosts, registry_factory=lambda: self.registry,
            hosts_factory=lambda: self.hosts,
            profile_models=self.model_for, limits=self.limits, user_registry=self.registry_for))

    @property
    def agent(self) -> AgentService:
        def build() -> AgentService:
            from shared.agent.service import AgentService

            return AgentService(self.services)

        return self._once("_agent", build)

    def model(self) -> Model:
        """The model, created on first use (functions that never call it never import its SDK)."""
        def build() -> Model:
            from shared.models.factory import create_model

            return create_model(self.settings)

        return self._once("_model", build)

    def model_for(self, profile: str) -> Model:
        """The model of a call profile: ``MODEL_PROFILE_<PROFILE>`` when set to another model than
        ``GEMINI_MODEL`` (Gemini only), else the process's model (tests' injected model included)."""
        name = self.settings.model_for(profile)  # type: ignore[arg-type]
        if name == self.settings.gemini_model or (self._model is not None and not (
                self.settings.gemini_api_key or self.settings.gemini_use_vertex)):
            return self.model()
        import dataclasses

        from shared.models.factory import create_model

        return create_model(dataclasses.replace(self.settings, gemini_model=name))

    def connectors(self) -> Connectors:
        """Per-user access to Gmail, Calendar and Slack, created on first use by a tool."""
        def build() -> Connectors:
            from shared.connectors import create_connectors

            return create_connectors(self.settings, self.store)

        return self._once("_connectors", build)

    @property
    def authenticator(self) -> Authenticator:
        def build() -> Authenticator:
            from shared.auth import create_authenticator

            return create_authenticator(self.settings)

        return self._once("_authenticator", build)

    @property
    def dispatcher(self) -> Dispatcher:
        def build() -> Dispatcher:
            from shared.durable.dispatcher import InlineDispatcher, PubSubDispatcher, RecordingDispatcher

            s = self.settings
            if s.dispatcher == "pubsub":
                return PubSubDispatcher(s.google_cloud_project, s.resume_topic)
            if s.dispatcher == "inline":
                return InlineDispatcher(lambda message: self.router.handle(message))
            return RecordingDispatcher()

        return self._once("_dispatcher", build)

    def authenticate(self, headers: dict[str, str], cookies: dict[str, str]) -> Principal:
        return self.authenticator.authenticate(headers, cookies)


def _user_servers(store: DocStore, kind: str, uid: str) -> list[tuple[str, dict[str, Any]]]:
    """The documents of ``uid``'s own A2A agents (``kind`` ``a2aAgents``) or MCP servers (``mcpServers``)."""
    from shared.state.mcp_servers_repo import A2aAgentsRepo, McpServersRepo

    repo = A2aAgentsRepo(store) if kind == "a2aAgents" else McpServersRepo(store)
    return repo.list(uid)


@functools.cache
def _lazy_services_type() -> Callable[..., Services]:
    """A :class:`~shared.loop.services.Services` whose ``registry`` and ``hosts`` are built on first
    access.

    Deciding an approval or resuming a run that is gone never looks a tool up, so ``approve`` and
    most ``resume`` deliveries do not pay for importing and declaring every tool; deciding never
    asks a host, so ``approve`` does not import the kernel, the hosts or the loop's working state
    either. Assigning ``services.registry`` or ``services.hosts`` still replaces it (tests do)."""
    from shared.loop.services import Services

    class LazyRegistryServices(Services):
        _registry_value: ToolRegistry | None
        _registry_factory: Callable[[], ToolRegistry]
        _hosts_value: HostLookup | None
        _hosts_factory: Callable[[], HostLookup]

        def __init__(self, *, registry_factory: Callable[[], ToolRegistry], hosts_factory: Callable[[], HostLookup],
                     **fields: Any) -> None:
            self._registry_factory = registry_factory
            self._hosts_factory = hosts_factory
            super().__init__(**fields)

        @property
        def hosts(self) -> HostLookup:
            value = self._hosts_value
            if value is None:
                value = self._hosts_value = self._hosts_factory()
            return value

        @hosts.setter
        def hosts(self, value: HostLookup | None) -> None:
            self._hosts_value = value

        @property
        def registry(self) -> ToolRegistry:
            value = self._registry_value
            if value is None:
                value = self._registry_value = self._registry_factory()
            return value

        @registry.setter
        def registry(self, value: ToolRegistry | None) -> None:
            self._registry_value = value

    return LazyRegistryServices


_runtime: Runtime | None = None
_runtime_lock = threading.Lock()


def _default_runtime() -> Runtime:
    from shared.logs import configure_logging

    settings = Settings.from_env()
    configure_logging(settings.google_cloud_project, os.environ.get("LOG_LEVEL", "INFO").upper())
    return Runtime(settings)


_factory: Callable[[], Runtime] = _default_runtime


def get_runtime() -> Runtime:
    global _runtime
    if _runtime is None:
        with _runtime_lock:
            if _runtime is None:
                _runtime = _factory()
    return _runtime


def set_runtime(runtime: Runtime | None) -> None:
    """Install (or with ``None`` forget) the process runtime. For tests and the dev server."""
    global _runtime
    with _runtime_lock:
        _runtime = runtime
