"""The loop's process-wide collaborators (:class:`Services`), in a module of their own: a function
that only needs them (``approve`` deciding an approval) builds them without importing the loop's
working state (``loop/context.py``, which re-exports both names), its outcomes or the model contract
(cold start, issue 33)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from shared.state.users_repo import StampedCache

if TYPE_CHECKING:
    from shared.config import Settings
    from shared.durable.outbox import Outbox
    from shared.limits import Limits
    from shared.models.base import Model
    from shared.state.budget_repo import BudgetRepo
    from shared.state.runs_repo import RunsRepo
    from shared.state.usage_repo import UsageRepo
    from shared.state.users_repo import Stamps, UsersRepo
    from shared.tools.registry import ToolRegistry


class HostLookup(Protocol):
    """The hosts by kind (``loop/host.py``'s ``HostRegistry``). A host is a ``loop.context.UnitHost``,
    typed ``Any`` here: this module imports nothing of the loop, not even for types (no cycle)."""

    @property
    def fallback(self) -> Any: ...
    def get(self, kind: str) -> Any: ...


@dataclass
class Services:
    """Process-wide collaborators of the loop (created once per instance, thread-safe)."""

    settings: Settings
    runs: RunsRepo
    users: UsersRepo
    registry: ToolRegistry
    model_factory: Callable[[], Model]
    new_id: Callable[[str], str]
    usage: UsageRepo
    outbox: Outbox
    hosts: HostLookup
    connectors: Callable[[], Any] | None = None
    """Lazily built access to external services for tools (None: no connector tools)."""
    profile_models: Callable[[str], Model] | None = None
    """The model of a profile (``speed | balanced | quality``); None: ``model_factory`` for all."""
    limits: Limits | None = None
    """The per-user limits (docs/limits.md) checked when work starts; None: none (tests, tools)."""
    user_registry: Callable[[ToolRegistry, str, Stamps | None], ToolRegistry] | None = None
    """``(registry, uid, stamps)`` -> the tools of ``uid``'s runs (the user's own MCP servers and A2A
    agents added; ``stamps`` as the run's start read them, shared/state/users_repo.py); None: every user
    gets ``registry``."""
    stamped: StampedCache = field(default_factory=StampedCache)
    """This process's reads of the users' stamped collections (memories, MCP servers, A2A agents)."""
    clock: Callable[[], float] = time.time
    """The wall clock of the money budgets' periods (the UTC day and month of a check); tests move it."""

    def registry_for(self, uid: str, stamps: Stamps | None = None) -> ToolRegistry:
        """The tools ``uid``'s runs may use: :attr:`registry`, plus the user's own MCP servers'."""
        base = self.registry
        return base if self.user_registry is None else self.user_registry(base, uid, stamps)

    @property
    def budgets(self) -> BudgetRepo:
        """The users' money budgets (docs/budgets.md), their periods on :attr:`clock`."""
        from shared.state.budget_repo import BudgetRepo

        return BudgetRepo(self.runs.store, self.clock)

    def model_for(self, profile: str) -> Model:
        return self.profile_models(profile) if self.profile_models is not None else self.model_factory()
