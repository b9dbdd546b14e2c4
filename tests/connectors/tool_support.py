"""Helpers of the connector tools' tests: a tool of a registry, run or previewed as the loop does
(validated first), and a connectors object holding one provider's encrypted token."""

from __future__ import annotations

import base64
import os
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import pytest

from devfakes.loopback import LoopbackServer
from shared.config import Settings
from shared.connectors import Connectors, IntegrationTokens, create_connectors
from shared.state.docstore import DocStore
from shared.tools.context import ToolContext
from shared.tools.registry import Tool, ToolRegistry


def registry_fixture(*modules: ModuleType) -> Any:
    """A ``registry`` fixture of the tools ``modules`` register (assign it to ``registry``)."""

    @pytest.fixture
    def registry() -> ToolRegistry:
        reg = ToolRegistry()
        for module in modules:
            module.register(reg)
        return reg

    return registry


def started(make: Callable[[], LoopbackServer]) -> Any:
    """A fixture of the fake ``make()`` builds, started for the test (``fake = started(FakeGoogle)``)."""

    @pytest.fixture
    def fake() -> Iterator[Any]:
        with make() as server:
            yield server

    return fake


def tool(registry: ToolRegistry, name: str) -> Tool:
    found = registry.get(name)
    assert found is not None
    return found


def run(registry: ToolRegistry, name: str, ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    t = tool(registry, name)
    return t.run(ctx, t.validate(args))


def preview(registry: ToolRegistry, name: str, args: dict[str, Any]) -> str:
    t = tool(registry, name)
    return t.preview(t.validate(args))


def connected(store: DocStore, uid: str, provider: str, tokens: IntegrationTokens, **settings: Any) -> Connectors:
    """Connectors over ``store`` (a fresh encryption key; ``settings`` point them at a fake) with
    ``uid``'s token for ``provider`` in the vault."""
    conn = create_connectors(Settings(credentials_encryption_key=base64.b64encode(os.urandom(32)).decode(),
                                      **settings), store)
    conn.vault.put(uid, provider, tokens)
    return conn
