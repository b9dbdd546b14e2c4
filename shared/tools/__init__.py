"""Tools the agent can call, declared once in a :class:`~shared.tools.registry.ToolRegistry`."""

from __future__ import annotations

from shared.tools.registry import ToolRegistry


def default_registry() -> ToolRegistry:
    """The registry with every shipped tool."""
    from shared.tools import gmail_tools, memory

    registry = ToolRegistry()
    memory.register(registry)
    gmail_tools.register(registry)
    return registry
