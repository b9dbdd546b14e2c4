"""The per-instance runtime: settings, store, model, auth and tools, created once and shared.

Cloud Functions gen2 serve many requests at once on one instance, so everything here is created
lazily once per process (under a lock) and is thread-safe. Tests install their own runtime with
``set_runtime`` (real stores and models pointed at emulators / fake servers).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from shared.agent.context import Services
from shared.agent.service import AgentService, new_id
from shared.config import Settings
from shared.models.base import Model
from shared.state.docstore import DocStore
from shared.state.runs_repo import RunsRepo
from shared.state.users_repo import UsersRepo
from shared.tools import default_registry
from shared.tools.registry import ToolRegistry

if TYPE_CHECKING:
    from shared.auth import Authenticator, Principal
    from shared.connectors import Connectors
    from shared.dispatch import Dispatcher


class Runtime:
    def __init__(self, settings: Settings, *, store: DocStore | None = None, model: Model | None = None,
                 authenticator: Authenticator | None = None, registry: ToolRegistry | None = None,
                 dispatcher: Dispatcher | None = None, connectors: Connectors | None = None) -> None:
        self.settings = settings
        self._lock = threading.Lock()
        if store is None:
            from shared.state.factory import create_docstore

            store = create_docstore(settings)
        self.store = store
        self._model = model
        self._authenticator = authenticator
        self._dispatcher = dispatcher
        self._connectors = connectors
        self.runs = RunsRepo(store, event_retention_s=settings.event_retention_s,
                             audit_retention_s=settings.audit_retention_s)
        self.users = UsersRepo(store)
        self.registry = registry or default_registry()
        self.services = Services(settings=settings, runs=self.runs, users=self.users, registry=self.registry,
                                 model_factory=self.model, new_id=new_id, connectors=self.connectors)
        self.agent = AgentService(self.services)

    def model(self) -> Model:
        """The model, created on first use (functions that never call it never import its SDK)."""
        if self._model is None:
            with self._lock:
                if self._model is None:
                    from shared.models.factory import create_model

                    self._model = create_model(self.settings)
        return self._model

    def connectors(self) -> Connectors:
        """Per-user access to Gmail, Calendar and Slack, created on first use by a tool."""
        if self._connectors is None:
            with self._lock:
                if self._connectors is None:
                    from shared.connectors import create_connectors

                    self._connectors = create_connectors(self.settings, self.store)
        return self._connectors

    @property
    def authenticator(self) -> Authenticator:
        if self._authenticator is None:
            with self._lock:
                if self._authenticator is None:
                    from shared.auth import create_authenticator

                    self._authenticator = create_authenticator(self.settings)
        return self._authenticator

    @property
    def dispatcher(self) -> Dispatcher:
        if self._dispatcher is None:
            with self._lock:
                if self._dispatcher is None:
                    from shared.dispatch import create_dispatcher

                    self._dispatcher = create_dispatcher(self)
        return self._dispatcher

    def authenticate(self, headers: dict[str, str], cookies: dict[str, str]) -> Principal:
        return self.authenticator.authenticate(headers, cookies)


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
