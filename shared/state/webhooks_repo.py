"""A user's webhooks: ``users/{uid}/webhooks/{name}`` (URL, events, the signing secret sealed like
connector tokens). Names live in the user's namespace. Every write moves the user's ``webhooks``
stamp in its own commit (shared/state/users_repo.py), so a run of a user with none makes no query
at its end."""

from __future__ import annotations

from typing import Any

from shared.state import paths
from shared.state.docstore import DocStore, Query, Write
from shared.state.users_repo import bump

MAX_WEBHOOKS_PER_USER = 20


class WebhooksRepo:
    def __init__(self, store: DocStore) -> None:
        self.store = store

    @staticmethod
    def location(uid: str, name: str) -> str:
        """Where the document lives; the sealing binds the secret to it (associated data)."""
        return paths.webhook(uid, name)

    def get(self, uid: str, name: str) -> dict[str, Any] | None:
        doc = self.store.get(paths.webhook(uid, name))
        return None if doc is None else doc.data

    def list(self, uid: str) -> list[tuple[str, dict[str, Any]]]:
        """``(name, document)`` of every webhook of ``uid``, by name."""
        docs = self.store.query(Query(paths.webhooks(uid), limit=MAX_WEBHOOKS_PER_USER + 1))
        return [(doc.id, doc.data) for doc in docs]

    def put(self, uid: str, name: str, data: dict[str, Any]) -> None:
        self.store.commit([Write("set", paths.webhook(uid, name), data), bump(uid, "webhooks")])

    def delete(self, uid: str, name: str) -> bool:
        path = paths.webhook(uid, name)
        existed = self.store.get(path) is not None
        self.store.commit([Write("delete", path), bump(uid, "webhooks")])
        return existed
