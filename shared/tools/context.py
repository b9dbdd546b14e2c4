"""What a tool receives besides its arguments."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from shared.config import Settings
from shared.state.users_repo import UsersRepo


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
