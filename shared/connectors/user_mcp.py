"""A user's own MCP servers: ``/api/integrations/mcp/{name}`` (docs/connectors.md, "MCP servers").

A user declares a server by name with its URL (Streamable HTTP only: a Cloud Function reaches
remote servers, never a process of its own) and, optionally, a bearer token. The URL and the token
are sealed together (AES-256-GCM, the credentials key, the document's path as associated data);
the URL must lead to public addresses (``shared/connectors/url_guard.py``, unless
``MCP_ALLOW_PRIVATE_URLS``), checked here and before every connection;
answers show the URL without its query and fragment (where tokens often hide) and never the token.
The server's tools join that user's runs only (``shared.runtime.Runtime.registry_for``).
"""

from __future__ import annotations

import json
import logging
import re
import time
from typing import Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

from shared.config import McpServer
from shared.connectors.credentials import ConnectorError, CredentialVault
from shared.connectors.url_guard import check_public_url
from shared.errors import Conflict, InvalidInput
from shared.responses import PageBody, ResponseBody
from shared.routes import NAME_PATTERN, NAME_RULE
from shared.state.docstore import DocStore
from shared.state.mcp_servers_repo import MAX_SERVERS_PER_USER, McpServersRepo
from shared.state.pages import Page, page_in_memory
from shared.state.record_base import field_flag, field_instant, field_text
from shared.wire import WHITESPACE_CLASS, UtcTime

log = logging.getLogger("agent_runtime.mcp")

URL_PATTERN = f"^https?://[^{WHITESPACE_CLASS}/?#@]+(?:[/?#][^{WHITESPACE_CLASS}]*)?$"
"""http(s), a host (no ``user:password@``: a token goes in ``accessToken``), no whitespace."""
_NAME = re.compile(NAME_PATTERN[:-1] + r"\Z")
_URL = re.compile(URL_PATTERN[:-1] + r"\Z")
TOKEN_PATTERN = "^[!-~]+$"
"""A bearer token is an HTTP header value: printable ASCII, no spaces (``"…"`` is refused at POST,
not at the first request it would break)."""
_TOKEN = re.compile(r"[!-~]+\Z")
MAX_TOKEN_CHARS = 4096
SCHEMA_VERSION = 1
LABEL = "MCP server"


def server_name(segment: str, what: str = "an MCP server's", code: str = "INVALID_MCP_SERVER_NAME") -> str:
    """The ``{name}`` of ``/api/integrations/mcp/{name}`` (and ``/a2a/{name}``: ``what``, ``code``);
    400 when outside ``[A-Za-z0-9_-]{1,40}``."""
    if not _NAME.match(segment):
        raise InvalidInput(f"{what} name must be {NAME_RULE} (got {segment[:40]!r})", code=code)
    return segment


class McpServerRequest(BaseModel):
    """Body of ``POST /api/integrations/mcp/{name}`` (unknown fields refused)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, strict=True)

    url: str = Field(min_length=1, max_length=2048, json_schema_extra={"pattern": URL_PATTERN},
                     description="the server's Streamable HTTP endpoint (http or https)")
    access_token: str | None = Field(default=None, alias="accessToken", min_length=1, max_length=MAX_TOKEN_CHARS,
                                     json_schema_extra={"pattern": TOKEN_PATTERN},
                                     description="sent as Authorization: Bearer; printable ASCII without spaces, "
                                                 f"at most {MAX_TOKEN_CHARS} characters; stored encrypted, never "
                                                 "shown")

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if not _URL.match(value):
            raise ValueError("must be an http(s) URL with a host, without whitespace or user:password@")
        return value

    @field_validator("access_token")
    @classmethod
    def _header_value(cls, value: str | None) -> str | None:
        if value is not None and not _TOKEN.match(value):
            bad = next((c for c in value if not "!" <= c <= "~"), "")
            raise ValueError(f"must be printable ASCII without spaces (it goes in an HTTP header); found "
                             f"{'a space' if bad.isspace() else f'U+{ord(bad):04X}'}")
        return value


class McpServerStatusBody(ResponseBody):
    """Whether the caller declared the server ``name``; never its token."""

    name: str
    connected: bool
    url: str | None = Field(default=None, description="the URL without its query and fragment")
    hasToken: bool | None = Field(default=None, description="whether a token is stored (never the token)")
    updatedAt: UtcTime | None = None


class McpServerResponse(McpServerStatusBody):
    """``GET`` and ``POST /api/integrations/mcp/{name}``."""

    ok: bool = True


class DeploymentMcpServerBody(ResponseBody):
    """A server of the deployment (``MCP_SERVERS``): its tools join every user's runs. Read-only
    here (it is configured, not declared through the API); never its headers."""

    name: str
    transport: Literal["http", "stdio"]
    url: str | None = Field(default=None, description="http: the URL without its query and fragment")
    readOnly: Literal[True] = Field(default=True, description="configured by the deployment, not through the API")
    available: bool
    tools: list[McpToolBody] = Field(default_factory=list)
    errorCode: McpErrorClass | None = Field(default=None, description="why it could not be listed")
    error: str | None = None


class McpServersResponse(PageBody):
    """``GET /api/integrations/mcp``: the caller's servers, by name, and the deployment's (read-only,
    with their tools)."""

    ok: bool = True
    servers: list[McpServerStatusBody]
    deployment: list[DeploymentMcpServerBody] = Field(default_factory=list)


class McpServerRemovedResponse(ResponseBody):
    """``DELETE /api/integrations/mcp/{name}``: ``removed`` is false when nothing was stored."""

    ok: bool = True
    name: str
    connected: Literal[False] = False
    removed: bool


McpErrorClass = Literal["MCP_AUTH_FAILED", "MCP_UNREACHABLE", "MCP_PROTOCOL_ERROR", "MCP_TIMEOUT"]
"""Why a server could not be used (``shared.connectors.mcp.McpErrorCode``; docs/connectors.md)."""


class McpToolBody(ResponseBody):
    """One tool as the caller's runs see it."""

    name: str = Field(description="what the model calls it: {server}_{tool}")
    tool: str = Field(description="the server's own name for it")
    description: str
    sideEffect: bool = Field(description="needs the policy's consent (approval for supervised users)")
    idempotent: bool


class McpToolsResponse(ResponseBody):
    """``GET /api/integrations/mcp/{name}/tools``: the server's tools now (cached listing, at most
    ``MCP_TIMEOUT_S``); ``available`` false when it could not be listed (``error`` says why)."""

    ok: bool = True
    name: str
    connected: bool
    available: bool
    tools: list[McpToolBody] = Field(default_factory=list)
    errorCode: McpErrorClass | None = Field(default=None, description="why it could not be listed")
    error: str | None = None


def shown_url(url: str) -> str:
    return re.split(r"[?#]", url, maxsplit=1)[0]


E = TypeVar("E")


class UserEndpoints(Generic[E]):
    """A user's named endpoints (a URL and an optional bearer token, sealed together): stores,
    lists and opens them. :class:`UserMcpServers` and ``shared/connectors/user_a2a.py``."""

    repo_type: type[McpServersRepo] = McpServersRepo
    label = LABEL
    noun = "MCP servers"
    too_many = "TOO_MANY_MCP_SERVERS"

    def __init__(self, store: DocStore, vault: CredentialVault, *, allow_private: bool = False) -> None:
        self._repo = self.repo_type(store)
        self._vault = vault
        self._allow_private = allow_private
        """``MCP_ALLOW_PRIVATE_URLS``: without it a URL must lead to public addresses only."""

    def put(self, uid: str, name: str, request: McpServerRequest) -> McpServerStatusBody:
        """Declare (replace) ``uid``'s server ``name``; 409 beyond :data:`MAX_SERVERS_PER_USER`;
        400 ``MCP_URL_NOT_ALLOWED`` when the URL leads to a non-public address (unless allowed)."""
        if not self._allow_private:
            check_public_url(request.url)
        if self._repo.get(uid, name) is None and len(self._repo.list(uid)) >= MAX_SERVERS_PER_USER:
            raise Conflict(f"at most {MAX_SERVERS_PER_USER} {self.noun} per user; delete one first",
                           code=self.too_many)
        location = self._repo.location(uid, name)
        secret = json.dumps({"url": request.url, "accessToken": request.access_token})
        doc = {"schemaVersion": SCHEMA_VERSION, "name": name, "url": shown_url(request.url),
               "hasToken": request.access_token is not None, "updatedAt": time.time(),
               **self._vault.seal_text(location, secret, self.label)}
        self._repo.put(uid, name, doc)
        return _status(name, doc)

    def delete(self, uid: str, name: str) -> bool:
        return self._repo.delete(uid, name)

    def status(self, uid: str, name: str) -> McpServerStatusBody:
        doc = self._repo.get(uid, name)
        return McpServerStatusBody(name=name, connected=False) if doc is None else _status(name, doc)

    def statuses(self, uid: str, limit: int, cursor: str | None = None) -> Page[McpServerStatusBody]:
        """One page of the caller's servers, by name."""
        return page_in_memory([_status(name, doc) for name, doc in self._repo.list(uid)],
                              lambda s: (s.name, s.name), cursor, limit)

    def server(self, uid: str, name: str) -> E | None:
        """The server as the MCP adapter reaches it (its token as a bearer header); ``None`` when
        not declared. :class:`ConnectorError` when it cannot be read (another key sealed it)."""
        doc = self._repo.get(uid, name)
        return None if doc is None else self._open(uid, name, doc)

    def servers(self, uid: str) -> tuple[list[E], list[str]]:
        """Every server of ``uid`` that can be opened, and the names of those that cannot."""
        opened: list[E] = []
        unreadable: list[str] = []
        for name, doc in self._repo.list(uid)[:MAX_SERVERS_PER_USER]:
            try:
                opened.append(self._open(uid, name, doc))
            except ConnectorError:
                log.warning("%s %s of %s cannot be read", self.label, name, uid,
                            extra={"fields": {"component": "mcp", "server": name}})
                unreadable.append(name)
        return opened, unreadable

    def _open(self, uid: str, name: str, doc: dict[str, object]) -> E:
        plain = json.loads(self._vault.open_text(self._repo.location(uid, name), dict(doc), self.label))
        token = plain.get("accessToken")
        headers = (("Authorization", f"Bearer {token}"),) if token else ()
        return self._endpoint(name, str(plain["url"]), headers)

    def _endpoint(self, name: str, url: str, headers: tuple[tuple[str, str], ...]) -> E:
        raise NotImplementedError


class UserMcpServers(UserEndpoints[McpServer]):
    """Stores, lists and opens users' MCP servers."""

    def _endpoint(self, name: str, url: str, headers: tuple[tuple[str, str], ...]) -> McpServer:
        return McpServer(name=name, url=url, headers=headers, public_only=not self._allow_private)


def _status(name: str, doc: dict[str, object]) -> McpServerStatusBody:
    """What a stored server document says; a value of the wrong type or range is answered as unknown
    (an unreadable token is told when a run opens it: ``servers``)."""
    return McpServerStatusBody(name=name, connected=True, url=field_text(doc, "url") or "",
                               hasToken=field_flag(doc, "hasToken"), updatedAt=field_instant(doc, "updatedAt"))
