"""Tools of MCP servers as registry tools: the loop, the policy and the durability layer see an
ordinary :class:`~shared.tools.registry.Tool` and never learn where it came from.

- Name: ``{server}_{tool}``, every character outside ``[A-Za-z0-9_]`` replaced by ``_`` (at most 64,
  Gemini's limit); a name already taken (another server's, or ours) leaves the later tool out.
- Side effect: from the tool's annotations unless the server's ``sideEffects`` says otherwise:
  ``readOnlyHint: true`` means none; anything else, missing annotations included, means one (the
  safe default). ``idempotentHint: true`` makes a side effect idempotent: recovery may run a
  cut-off call again; any other side effect cut off by a crash ends ``unknown`` and is never
  repeated (docs/recovery.md). Nothing a server says in a description or a result can change
  this: the decision is made here, from the annotations and the configuration, once.
- Arguments are validated against the tool's input schema (JSON Schema) before the policy sees
  them; the schema the model sees is cleaned for Gemini.
- A server that is down or slow when the registry is built costs at most ``MCP_TIMEOUT_S``; its
  tools are left out (logged) and the run goes on without them.
- Listings are cached per instance (``shared.tools.mcp_listings``): ``MCP_LIST_TTL_S``, dropped
  sooner when the server sends ``notifications/tools/list_changed`` during a listing or a call.
- A user's own servers (``/api/integrations/mcp/{name}``) join that user's registry only
  (:func:`with_servers`, called per run by ``Runtime.registry_for``).
"""

from __future__ import annotations

import functools
import logging
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from shared.config import McpServer, Settings
from shared.connectors import mcp
from shared.errors import OutcomeUnknown, ToolError
from shared.formats import clean_json_schema
from shared.models.base import ToolDeclaration
from shared.tools.context import ToolContext
from shared.tools.mcp_listings import LISTINGS
from shared.tools.registry import Tool, ToolArgsError, ToolRegistry

if TYPE_CHECKING:
    from shared.connectors.user_mcp import DeploymentMcpServerBody, McpToolBody, McpToolsResponse, UserMcpServers

log = logging.getLogger("agent_runtime.mcp")

NAME_LIMIT = 64
_GEMINI_DROP = frozenset({"title", "$schema", "additionalProperties", "$id", "examples", "default"})


def tool_name(server: str, tool: str) -> str:
    """What the model calls the tool: ``{server}_{tool}``, outside ``[A-Za-z0-9_]`` made ``_``."""
    return re.sub(r"[^A-Za-z0-9_]", "_", f"{server}_{tool}")[:NAME_LIMIT]


class McpArgs(BaseModel):
    """An MCP tool's arguments: any JSON object (its input schema validates it)."""

    model_config = ConfigDict(extra="allow")


@dataclass(frozen=True)
class McpTool(Tool):
    """A tool of an MCP server: its declaration from the server's schema, its call over MCP."""

    server: McpServer | None = None
    remote_name: str = ""
    input_schema: Any = None

    @functools.cached_property
    def _declaration(self) -> ToolDeclaration:
        schema = clean_json_schema(dict(self.input_schema or {"type": "object"}), inline_refs=True,
                                   drop=_GEMINI_DROP)
        schema.pop("$defs", None)
        return ToolDeclaration(name=self.name, description=self.description, parameters=schema)

    def validate(self, args: dict[str, Any]) -> BaseModel:
        import jsonschema

        validator = jsonschema.Draft202012Validator(self.input_schema or {"type": "object"})
        problems = [f"{'/'.join(str(p) for p in e.absolute_path) or '(args)'}: {e.message}"
                    for e in validator.iter_errors(args)]
        if problems:
            raise ToolArgsError(self.name, problems[:10])
        return McpArgs.model_validate(args)

    def preview(self, args: BaseModel) -> str:
        import json

        assert self.server is not None
        shown = json.dumps(args.model_dump(), ensure_ascii=False, default=str)
        return f"{self.remote_name} on MCP server {self.server.name}: {shown}"[:500]

    def run(self, ctx: ToolContext, args: BaseModel) -> dict[str, Any]:
        server = self.server
        assert server is not None
        timeout = ctx.call_budget(f"MCP server {server.name}", 60.0)  # at most the run's time left
        try:
            result = mcp.call_tool(server, self.remote_name, args.model_dump(), timeout_s=timeout,
                                   on_list_changed=lambda: LISTINGS.changed(server))
        except mcp.McpError as exc:
            if exc.maybe_done and self.side_effect and not self.idempotent:
                raise OutcomeUnknown(f"{exc}; it may or may not have taken effect, and is not repeated") from None
            raise ToolError(str(exc)) from None
        if result.is_error:  # the server's own failure: a tool error the model is told
            raise ToolError(str(result.response.get("text") or f"{self.remote_name} failed")[:2000])
        return result.response


def _side_effect(server: McpServer, info: mcp.McpToolInfo) -> bool:
    override = dict(server.side_effects).get(info.name)
    if override is not None:
        return override
    return info.read_only is not True


def server_tools(server: McpServer, settings: Settings) -> list[McpTool]:
    """The server's tools as registry tools (its ``tools`` allowlist applied); raises
    :class:`~shared.connectors.mcp.McpError` when the server cannot be listed in time."""
    infos = LISTINGS.tools(server, ttl_s=settings.mcp_list_ttl_s, timeout_s=settings.mcp_timeout_s)
    allowed = set(server.tools) if server.tools is not None else None
    out: list[McpTool] = []
    for info in infos:
        if allowed is not None and info.name not in allowed:
            continue
        side_effect = _side_effect(server, info)
        out.append(McpTool(name=tool_name(server.name, info.name),
                           description=f"[MCP server {server.name}] {info.description}"[:1024],
                           args_model=McpArgs, fn=_unused, side_effect=side_effect,
                           idempotent=side_effect and info.idempotent is True,
                           server=server, remote_name=info.name, input_schema=info.input_schema))
    return out


def listed_tools(servers: UserMcpServers, uid: str, name: str, settings: Settings) -> McpToolsResponse:
    """``uid``'s server ``name``'s tools as their runs see them (the listing cache; at most
    ``MCP_TIMEOUT_S``): not connected when not declared, not available (and why) when it cannot be
    read or listed."""
    from shared.connectors.credentials import ConnectorError
    from shared.connectors.user_mcp import McpToolsResponse

    try:
        server = servers.server(uid, name)
    except ConnectorError as exc:
        return McpToolsResponse(name=name, connected=True, available=False, error=str(exc))
    if server is None:
        return McpToolsResponse(name=name, connected=False, available=False)
    try:
        tools = server_tools(server, settings)
    except mcp.McpError as exc:
        return McpToolsResponse(name=name, connected=True, available=False, errorCode=exc.code, error=str(exc))
    return McpToolsResponse(name=name, connected=True, available=True, tools=tool_bodies(tools))


def tool_bodies(tools: list[McpTool]) -> list[McpToolBody]:
    from shared.connectors.user_mcp import McpToolBody

    return [McpToolBody(name=t.name, tool=t.remote_name, description=t.description, sideEffect=t.side_effect,
                        idempotent=t.idempotent) for t in tools]


def deployment_servers(settings: Settings) -> list[DeploymentMcpServerBody]:
    """The deployment's servers (``MCP_SERVERS``) with their tools now (the listing cache; each
    at most ``MCP_TIMEOUT_S``), or why they cannot be listed."""
    from shared.connectors.user_mcp import DeploymentMcpServerBody, shown_url

    out: list[DeploymentMcpServerBody] = []
    for server in settings.mcp_servers:
        shown = {"name": server.name, "transport": "stdio" if server.command else "http",
                 "url": shown_url(server.url) if server.url else None}
        try:
            tools = server_tools(server, settings)
        except mcp.McpError as exc:
            out.append(DeploymentMcpServerBody(**shown, available=False, errorCode=exc.code, error=str(exc)))
            continue
        out.append(DeploymentMcpServerBody(**shown, available=True, tools=tool_bodies(tools)))
    return out


def _unused(ctx: ToolContext, **args: Any) -> dict[str, Any]:  # McpTool.run calls the server itself
    raise AssertionError("an MCP tool runs through McpTool.run")


def add_servers(registry: ToolRegistry, servers: tuple[McpServer, ...], settings: Settings) -> list[str]:
    """Add every configured server's tools; the names of the servers left out (down, slow, or a
    name clash) are returned and logged."""
    left_out: list[str] = []
    for server in servers:
        try:
            tools = server_tools(server, settings)
        except mcp.McpError as exc:
            log.warning("MCP server %s left out: %s", server.name, exc,
                        extra={"fields": {"component": "mcp", "server": server.name}})
            left_out.append(server.name)
            continue
        for tool in tools:
            if registry.get(tool.name) is not None:
                log.warning("MCP tool %s left out: the name is taken", tool.name,
                            extra={"fields": {"component": "mcp", "server": server.name}})
                continue
            registry.add(tool)
    return left_out


def with_servers(base: ToolRegistry, servers: list[McpServer], settings: Settings,
                 unreadable: list[str] | None = None) -> ToolRegistry:
    """A new registry: ``base``'s own tools (its MCP tools dropped) plus ``servers``' tools from
    the listing cache; ``unreadable``: servers already known to be unusable (told to the model)."""
    registry = ToolRegistry()
    for tool in base:
        if not isinstance(tool, McpTool):
            registry.add(tool)
    registry.unavailable = (*add_servers(registry, tuple(servers), settings), *(unreadable or ()))
    return registry
