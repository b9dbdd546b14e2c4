"""The MCP adapter: the only module that imports the official ``mcp`` SDK (lazily, so a function
without configured servers never loads it). It lists a server's tools and calls one, each over a
short-lived connection (stdio: the command as a subprocess; Streamable HTTP: the URL), bounded in
time, and maps what the SDK raises to :class:`McpError`.

A ``notifications/tools/list_changed`` the server sends during any of these connections (a listing
or a call) is handed to ``on_list_changed``: the listing cache (``shared.tools.mcp_listings``)
forgets that server's tools, so the next registry lists them again.

Sampling and elicitation requests from a server are refused: no callback is registered, so the
SDK answers them with a JSON-RPC error and the server sees "not supported" (docs/connectors.md).

A user's server (``McpServer.public_only``) is reached only when its host resolves to public
addresses at that moment (``shared/connectors/url_guard.py``): otherwise the listing or the call
fails as if the server were down, before anything is sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from shared.config import McpServer
from shared.errors import AgentRuntimeError

if TYPE_CHECKING:
    from mcp import Client

log = logging.getLogger("agent_runtime.mcp")

MAX_TEXT_CHARS = 16_000
"""What a tool result may bring back to the model (text and structured content, as JSON)."""


McpErrorCode = Literal["MCP_AUTH_FAILED", "MCP_UNREACHABLE", "MCP_PROTOCOL_ERROR", "MCP_TIMEOUT"]
"""What went wrong with a server: it refused the credentials (HTTP 401/403), could not be reached
(connection refused, no such host, a gateway's 502/503/504, an address the SSRF guard refuses),
answered but not as an MCP server (another HTTP error, a JSON-RPC error, a broken stream), or did
not answer in time."""


class McpError(AgentRuntimeError):
    """The server could not be reached, did not answer in time, or refused the request (``code``
    says which). ``maybe_done``: the request had been sent when the answer was lost (the server
    died or went silent mid-call), so what it asked for may have happened."""

    def __init__(self, message: str, *, code: McpErrorCode = "MCP_PROTOCOL_ERROR", maybe_done: bool = False) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.reason = message
        self.maybe_done = maybe_done


@dataclass
class _Seen:
    """The HTTP statuses a connection's answers had (the SDK turns them into JSON-RPC errors
    without the status, so they are recorded on the way in)."""

    statuses: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class McpToolInfo:
    name: str
    description: str
    input_schema: dict[str, Any]
    read_only: bool | None
    destructive: bool | None
    idempotent: bool | None
    open_world: bool | None


@dataclass(frozen=True)
class McpResult:
    is_error: bool
    response: dict[str, Any]
    """The bounded function response: ``text``, ``structured``, ``images`` (references), ``resources``."""


ListChanged = Callable[[], None]
"""Called when the server says its tool list changed."""


def _handler(on_list_changed: ListChanged | None) -> Any:
    """The session's message handler: a tool-list change is reported, anything else ignored."""
    async def handle(message: Any) -> None:
        if getattr(message, "method", None) == "notifications/tools/list_changed" and on_list_changed is not None:
            on_list_changed()

    return handle


@contextlib.asynccontextmanager
async def _client(server: McpServer, on_list_changed: ListChanged | None = None,
                  seen: _Seen | None = None) -> AsyncIterator[Client]:
    """A connected client; what it opened (the process, the HTTP client) is closed on exit. Over
    HTTP, every answer's status goes to ``seen``."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    handler = _handler(on_list_changed)
    if server.command:
        params = StdioServerParameters(command=server.command[0], args=list(server.command[1:]))
        async with Client(params, mode="legacy", message_handler=handler) as client:
            yield client
        return
    assert server.url is not None
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client  # the SDK's client and timeouts

    http = create_mcp_http_client(headers=dict(server.headers) or None)

    async def record(response: Any) -> None:
        if seen is not None:
            seen.statuses.append(int(response.status_code))

    http.event_hooks["response"].append(record)
    async with http, Client(streamable_http_client(server.url, http_client=http), mode="legacy",
                            message_handler=handler) as client:
        yield client


def _leaves(exc: BaseException) -> list[BaseException]:
    """The exceptions an exception group holds (at any depth), and their causes."""
    out: list[BaseException] = []
    stack = [exc]
    while stack:
        e = stack.pop()
        inner = getattr(e, "exceptions", None)
        if isinstance(inner, tuple | list):
            stack.extend(x for x in inner if isinstance(x, BaseException))
        else:
            out.append(e)
        if e.__cause__ is not None:
            stack.append(e.__cause__)
    return out


def classify(exc: BaseException, statuses: list[int]) -> tuple[McpErrorCode, str]:
    """The error class of a failed connection, and what happened in words."""
    refused = [s for s in statuses if s in (401, 403)]
    if refused:
        return "MCP_AUTH_FAILED", f"the server refused the credentials (HTTP {refused[0]}): check its token"
    gateway = [s for s in statuses if s in (502, 503, 504)]
    if gateway:
        return "MCP_UNREACHABLE", f"the server is not available (HTTP {gateway[0]})"
    leaves = _leaves(exc)
    names = {type(e).__name__ for e in leaves}
    if any(isinstance(e, TimeoutError) for e in leaves) or names & {"ReadTimeout", "ConnectTimeout", "PoolTimeout",
                                                                      "WriteTimeout"}:
        return "MCP_TIMEOUT", "the server did not answer in time"
    if any(isinstance(e, ConnectionError | OSError) for e in leaves) or names & {"ConnectError"}:
        return "MCP_UNREACHABLE", "the server could not be reached (connection refused or no such host)"
    failed = [s for s in statuses if s >= 400]
    if failed:
        return "MCP_PROTOCOL_ERROR", f"the server answered HTTP {failed[0]}: is this the server's MCP endpoint?"
    detail = next((str(e) for e in leaves if str(e)), type(exc).__name__)
    return "MCP_PROTOCOL_ERROR", f"the server did not answer as an MCP server ({detail[:200]})"


def _guard(server: McpServer, what: str) -> None:
    """A user's server (``public_only``): its host must resolve to public addresses now."""
    if not (server.public_only and server.url):
        return
    from shared.connectors.url_guard import UrlNotAllowed, check_public_url

    try:
        check_public_url(server.url)
    except UrlNotAllowed as exc:
        log.warning("MCP %s refused: %s", what, exc,
                    extra={"fields": {"component": "mcp", "server": server.name, "stage": what}})
        raise McpError(f"MCP server {server.name} not reached: {exc.message}", code="MCP_UNREACHABLE") from None


def _run(server: McpServer, what: str, coro_fn: Any, timeout_s: float, sent: list[bool] | None = None,
         seen: _Seen | None = None) -> Any:
    """Run ``coro_fn()`` within ``timeout_s``; ``sent`` (set by it when its request went out) says
    whether a lost answer may hide a done request; ``seen``: the HTTP statuses it got. A user's
    server is checked first (``_guard``). Failures are :class:`McpError` with their class, logged."""
    _guard(server, what)
    async def bounded() -> Any:
        return await asyncio.wait_for(coro_fn(), timeout=max(0.05, timeout_s))

    try:
        return asyncio.run(bounded())
    except TimeoutError:
        code: McpErrorCode = "MCP_TIMEOUT"
        message = f"MCP server {server.name} did not answer {what} within {timeout_s:.1f} s"
    except McpError:
        raise
    except Exception as exc:  # the SDK's and the transport's errors: the server is unusable now
        code, why = classify(exc, seen.statuses if seen is not None else [])
        message = f"MCP server {server.name} failed at {what}: {why}"
    log.warning("%s: %s", code, message, extra={"fields": {"component": "mcp", "server": server.name,
                                                                   "stage": what, "code": code}})
    raise McpError(message, code=code, maybe_done=bool(sent)) from None


def _hint(annotations: Any, name: str) -> bool | None:
    value = getattr(annotations, name, None) if annotations is not None else None
    return value if isinstance(value, bool) else None


def list_tools(server: McpServer, *, timeout_s: float,
               on_list_changed: ListChanged | None = None) -> list[McpToolInfo]:
    """The server's tools (every page), each with its annotations."""

    seen = _Seen()

    async def go() -> list[McpToolInfo]:
        out: list[McpToolInfo] = []
        async with _client(server, on_list_changed, seen) as client:
            cursor: str | None = None
            while True:
                page = await client.list_tools(cursor=cursor) if cursor else await client.list_tools()
                for t in page.tools:
                    a = t.annotations
                    out.append(McpToolInfo(name=t.name, description=t.description or t.name,
                                           input_schema=dict(t.input_schema or {"type": "object"}),
                                           read_only=_hint(a, "read_only_hint"),
                                           destructive=_hint(a, "destructive_hint"),
                                           idempotent=_hint(a, "idempotent_hint"),
                                           open_world=_hint(a, "open_world_hint")))
                cursor = getattr(page, "next_cursor", None)
                if not cursor:
                    return out

    result: list[McpToolInfo] = _run(server, "tools/list", go, timeout_s, seen=seen)
    return result


def call_tool(server: McpServer, tool: str, args: dict[str, Any], *, timeout_s: float,
              on_list_changed: ListChanged | None = None) -> McpResult:
    """One ``tools/call``; its content made into a bounded function response."""

    sent: list[bool] = []
    seen = _Seen()

    async def go() -> McpResult:
        async with _client(server, on_list_changed, seen) as client:
            sent.append(True)  # connected: from here a lost answer may hide a done call
            result = await client.call_tool(tool, args, read_timeout_seconds=max(0.05, timeout_s))
        return _response(result)

    out: McpResult = _run(server, "tools/call", go, timeout_s, sent, seen)
    return out


def _response(result: Any) -> McpResult:
    """Text parts joined; structured content as is; images and audio as references (type and
    size, never their bytes); resources by URI. Bounded to :data:`MAX_TEXT_CHARS`."""
    texts: list[str] = []
    images: list[dict[str, Any]] = []
    resources: list[dict[str, Any]] = []
    for part in getattr(result, "content", None) or []:
        kind = getattr(part, "type", "")
        if kind == "text":
            texts.append(str(getattr(part, "text", "")))
        elif kind in ("image", "audio"):
            data = str(getattr(part, "data", ""))
            images.append({"type": kind, "mimeType": getattr(part, "mime_type", None), "base64Chars": len(data)})
        elif kind in ("resource", "resource_link"):
            resource = getattr(part, "resource", part)
            resources.append({"uri": str(getattr(resource, "uri", "")),
                              "text": str(getattr(resource, "text", "") or "")[:2000] or None})
    response: dict[str, Any] = {}
    text = "\n".join(texts)
    if text:
        response["text"] = text[:MAX_TEXT_CHARS] + ("…(truncated)" if len(text) > MAX_TEXT_CHARS else "")
    structured = getattr(result, "structured_content", None)
    if structured is not None:
        import json

        encoded = json.dumps(structured, ensure_ascii=False, default=str)
        fits = len(encoded) <= MAX_TEXT_CHARS
        response["structured"] = structured if fits else {"truncated": encoded[:MAX_TEXT_CHARS]}
    if images:
        response["images"] = images[:20]
    if resources:
        response["resources"] = resources[:20]
    return McpResult(is_error=bool(getattr(result, "is_error", False)), response=response)
