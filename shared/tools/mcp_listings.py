"""Each MCP server's tool list, cached per instance (docs/connectors.md, "MCP servers").

- A listing is kept ``MCP_LIST_TTL_S`` (0: never kept); a server that could not be listed is
  remembered as such for at most :data:`FAILURE_TTL_S`, so a down server does not cost every run
  start ``MCP_TIMEOUT_S`` while it stays down.
- Connections are per call, so a ``notifications/tools/list_changed`` is observed only while a
  session with the server is open: one received during any listing or call of this instance drops
  that server's listing at once (the next registry lists it again). A listing during which the
  notification arrived is not kept (it may predate the change).
- Keyed by the whole server (name, endpoint, headers): two users' servers at one URL with
  different tokens are listed apart.
"""

from __future__ import annotations

import threading
import time

from shared.config import McpServer
from shared.connectors import mcp

FAILURE_TTL_S = 30.0


class Listings:
    """Thread-safe; one per process (:data:`LISTINGS`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[McpServer, tuple[float, list[mcp.McpToolInfo] | mcp.McpError]] = {}
        self._changes: dict[McpServer, int] = {}
        self.listed = 0
        """How many listings went to a server (tests count them)."""

    def tools(self, server: McpServer, *, ttl_s: float, timeout_s: float) -> list[mcp.McpToolInfo]:
        """The server's tools, listed again when the kept listing expired or was dropped;
        :class:`~shared.connectors.mcp.McpError` when it cannot be listed."""
        now = time.monotonic()
        with self._lock:
            entry = self._entries.get(server)
            changes = self._changes.get(server, 0)
        if entry is not None and entry[0] > now:
            if isinstance(entry[1], mcp.McpError):
                raise entry[1]
            return entry[1]
        with self._lock:
            self.listed += 1
        try:
            infos = mcp.list_tools(server, timeout_s=timeout_s, on_list_changed=lambda: self.changed(server))
        except mcp.McpError as exc:
            self._keep(server, changes, now + min(ttl_s, FAILURE_TTL_S), exc)
            raise
        self._keep(server, changes, now + ttl_s, infos)
        return infos

    def changed(self, server: McpServer) -> None:
        """The server said its tool list changed: forget what was listed."""
        with self._lock:
            self._entries.pop(server, None)
            self._changes[server] = self._changes.get(server, 0) + 1

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def _keep(self, server: McpServer, changes: int, until: float,
              value: list[mcp.McpToolInfo] | mcp.McpError) -> None:
        with self._lock:
            if self._changes.get(server, 0) == changes and until > time.monotonic():
                self._entries[server] = (until, value)


LISTINGS = Listings()
