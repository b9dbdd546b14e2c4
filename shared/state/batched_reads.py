"""Documents a start reads for its checks, read together in one round trip (issue 33).

Starting a run read the user's document three times (profile, daily-token limit, active-run
limit), the day's usage counter and the active-run slot one by one before its first model call:
on Firestore each is a sequential round trip. :class:`BatchedReads` reads them with one
``get_many`` and serves each of those reads in its place. They are the same non-transactional
reads as before, made a few milliseconds earlier: the daily-token check reads a counter that
other runs move anyway; the slot's reservation writes on the slot document's token, so a slot
document that changed meanwhile fails the conditional write and is read again (as before).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from shared.state.docstore import Doc, DocStore

log = logging.getLogger("agent_runtime.state")


class BatchedReads:
    """The documents at ``paths``, read with one ``get_many`` (missing ones as ``None``)."""

    def __init__(self, store: DocStore, paths: Sequence[str]) -> None:
        wanted = list(dict.fromkeys(paths))
        self._docs: dict[str, Doc | None] = dict(zip(wanted, store.get_many(wanted), strict=True))

    def get(self, store: DocStore, path: str) -> Doc | None:
        """The document as batched, or read from ``store`` when ``path`` was not in the batch."""
        return self._docs[path] if path in self._docs else store.get(path)

    def get_many(self, store: DocStore, paths: Sequence[str]) -> list[Doc | None]:
        """The documents at ``paths`` in order: as batched, those not in the batch read from
        ``store`` together (one round trip, none when the batch holds them all)."""
        missing = [p for p in dict.fromkeys(paths) if p not in self._docs]
        found = dict(zip(missing, store.get_many(missing), strict=True)) if missing else {}
        return [self._docs[p] if p in self._docs else found[p] for p in paths]


def read_together(store: DocStore, paths: Sequence[str]) -> BatchedReads | None:
    """:class:`BatchedReads` of ``paths``, or None (each then read on its own, as without a batch)
    when there are none or the batched read failed: the reads it stands for keep their own
    handling of a failure (a profile read failure is tolerated, a limit read failure is not)."""
    if not paths:
        return None
    try:
        return BatchedReads(store, paths)
    except Exception:
        log.warning("batched read failed; reading one by one", exc_info=True)
        return None


def read(store: DocStore, path: str, batch: BatchedReads | None) -> Doc | None:
    """``store.get(path)``, served by ``batch`` when it holds ``path``."""
    return store.get(path) if batch is None else batch.get(store, path)


def read_many(store: DocStore, paths: Sequence[str], batch: BatchedReads | None) -> list[Doc | None]:
    """``store.get_many(paths)``, served by ``batch`` for the paths it holds."""
    if not paths:
        return []
    return store.get_many(paths) if batch is None else batch.get_many(store, paths)
