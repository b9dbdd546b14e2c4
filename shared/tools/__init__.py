"""Tools the agent can call, declared once in a :class:`~shared.tools.registry.ToolRegistry`."""

from __future__ import annotations

from shared.tools.registry import ToolRegistry


def default_registry() -> ToolRegistry:
    """The registry with every shipped tool."""
    from shared.tools import calendar_tools, github_tools, gmail_tools, memory, project_tools, slack_tools, web_tools

    registry = ToolRegistry()
    memory.register(registry)
    gmail_tools.register(registry)
    calendar_tools.register(registry)
    slack_tools.register(registry)
    github_tools.register(registry)
    web_tools.register(registry)
    project_tools.register(registry)
    return registry
