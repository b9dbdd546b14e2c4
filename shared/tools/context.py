"""What a tool receives besides its arguments."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from shared.config import Settings
from shared.state.users_repo import UsersRepo

if TYPE_CHECKING:
    from shared.projects.service import ProjectsService


@dataclass(frozen=True)
class ToolContext:
    uid: str
    run_id: str
    action_id: str
    """Stable across retries of the same call: tools use it as their idempotency key."""
    users: UsersRepo
    settings: Settings
    connectors: Any = None
    """Per-user access to external services (``shared.connectors.Connectors``), when configured."""
    projects: ProjectsService | None = None
    """The user's projects workspace; ``None``: the project tools build it over ``users``' store."""
