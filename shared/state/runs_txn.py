"""Typed reads of run documents inside a store transaction (the approve decision uses them)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from shared.state import paths
from shared.state.docstore import Doc, DocStore, Transaction, Write
from shared.state.records import ActionRecord, ApprovalRecord, RunRecord

T = TypeVar("T")


class RunsTransaction:
    """Reads first, then writes (built by the repositories), applied atomically at the end."""

    def __init__(self, t: Transaction) -> None:
        self._t = t

    def approval(self, uid: str, approval_id: str) -> ApprovalRecord | None:
        doc = self._t.get(paths.approval(uid, approval_id))
        return None if doc is None else ApprovalRecord.from_doc(doc.data, doc.path)

    def approval_with(self, uid: str, approval_id: str, path: str) -> tuple[ApprovalRecord | None, Doc | None]:
        """:meth:`approval` and the document at ``path`` (e.g. the user's request counter) in one read."""
        doc, other = self._t.get_many([paths.approval(uid, approval_id), path])
        return (None if doc is None else ApprovalRecord.from_doc(doc.data, doc.path)), other

    def run(self, run_id: str) -> RunRecord | None:
        doc = self._t.get(paths.run(run_id))
        return None if doc is None else RunRecord.from_doc(doc.data, doc.path)

    def action(self, run_id: str, action_id: str) -> ActionRecord | None:
        doc = self._t.get(paths.action(run_id, action_id))
        return None if doc is None else ActionRecord.from_doc(doc.data, doc.path)

    def run_and_action(self, run_id: str, action_id: str) -> tuple[RunRecord | None, ActionRecord | None]:
        """:meth:`run` and :meth:`action` in one read (one round trip)."""
        run, action = self._t.get_many([paths.run(run_id), paths.action(run_id, action_id)])
        return (None if run is None else RunRecord.from_doc(run.data, run.path),
                None if action is None else ActionRecord.from_doc(action.data, action.path))

    def write(self, write: Write) -> None:
        self._t.write(write)


def run_in_transaction(store: DocStore, fn: Callable[[RunsTransaction], T]) -> T:
    return store.run_transaction(lambda t: fn(RunsTransaction(t)))
