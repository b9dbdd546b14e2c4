"""A user's own MCP servers: ``users/{uid}/mcpServers/{name}`` (one document each, the URL and the
token sealed like connector tokens)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from shared.state import paths
from shared.state.docstore import DocStore, Query, Write

if TYPE_CHECKING:
    from shared.state.users_repo import StampKind

MAX_SERVERS_PER_USER = 20
"""What one user may declare (the listing of every one bounds a run's start)."""


class McpServersRepo:
    collection = staticmethod(paths.mcp_servers)
    document = staticmethod(paths.mcp_server)
    stamp: StampKind = "mcpServers"
    """Every write moves the user's stamp of the collection (shared/state/users_repo.py)."""

    def __init__(self, store: DocStore) -> None:
        self.store = store

    @classmethod
    def location(cls, uid: str, name: str) -> str:
        """Where the document lives; the sealing binds the ciphertext to it (associated data)."""
        return cls.document(uid, name)

    def get(self, uid: str, name: str) -> dict[str, Any] | None:
        doc = self.store.get(self.document(uid, name))
        return None if doc is None else doc.data

    def list(self, uid: str) -> list[tuple[str, dict[str, Any]]]:
        """``(name, document)`` of every server of ``uid``, by name."""
        docs = self.store.query(Query(self.collection(uid), limit=MAX_SERVERS_PER_USER + 1))
        return [(doc.id, doc.data) for doc in docs]

    def _bump(self, uid: str) -> Write:
        from shared.state.users_repo import bump  # the records load when a server is written, not listed

        return bump(uid, self.stamp)

    def put(self, uid: str, name: str, data: dict[str, Any]) -> None:
        self.store.commit([Write("set", self.document(uid, name), data), self._bump(uid)])

    def delete(self, uid: str, name: str) -> bool:
        """Forget the server; ``True`` if there was one."""
        path = self.document(uid, name)
        existed = self.store.get(path) is not None
        self.store.commit([Write("delete", path), self._bump(uid)])
        return existed


class A2aAgentsRepo(McpServersRepo):
    """A user's own remote A2A agents: ``users/{uid}/a2aAgents/{name}``, kept like MCP servers (their
    URL and token sealed), at most :data:`MAX_SERVERS_PER_USER`."""

    collection = staticmethod(paths.a2a_agents)
    document = staticmethod(paths.a2a_agent)
    stamp: StampKind = "a2aAgents"
