"""A user's sealed connector tokens: ``users/{uid}/integrations/{provider}`` (one document each)."""

from __future__ import annotations

from typing import Any

from shared.state import paths
from shared.state.docstore import DocStore, Write


class IntegrationsRepo:
    def __init__(self, store: DocStore) -> None:
        self.store = store

    @staticmethod
    def location(uid: str, provider: str) -> str:
        """Where the document lives; the sealing binds the ciphertext to it (associated data)."""
        return paths.integration(uid, provider)

    def get(self, uid: str, provider: str) -> dict[str, Any] | None:
        doc = self.store.get(paths.integration(uid, provider))
        return None if doc is None else doc.data

    def put(self, uid: str, provider: str, data: dict[str, Any]) -> None:
        self.store.commit([Write("set", paths.integration(uid, provider), data)])

    def delete(self, uid: str, provider: str) -> bool:
        """Forget the document; ``True`` if there was one."""
        path = paths.integration(uid, provider)
        existed = self.store.get(path) is not None
        self.store.commit([Write("delete", path)])
        return existed
