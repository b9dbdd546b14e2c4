"""Workspace records: ``workspaces/{id}`` (owner, origin, status, last use), the functions' truth
about who holds which workspace of the sandbox service (docs/workspaces.md).

A record is ``live`` from its creation until it is destroyed (then ``destroyed``, kept as the
trace of what existed). The per-user limit is checked in the transaction that creates the record.
"""

from __future__ import annotations

import logging
from typing import Literal

from shared.errors import Conflict
from shared.state import paths
from shared.state.docstore import Doc, DocStore, Query, Transaction, Write
from shared.state.pages import tolerant
from shared.state.record_base import SCHEMA_VERSION, Record

log = logging.getLogger("agent_runtime.state")

Status = Literal["live", "destroyed"]


class WorkspaceRecord(Record):
    workspace_id: str
    uid: str
    status: Status = "live"
    created_at: float
    last_used_at: float
    run_id: str | None = None
    """The unit (chat run or plan session run) that created it; ``None``: created elsewhere."""
    group: str | None = None
    repo: str | None = None
    """What was cloned: ``owner/name`` or a git URL (never with credentials)."""
    ref: str | None = None
    commit: str | None = None
    default: bool = False
    """The unit's default workspace (``run_shell_command``)."""
    keep: bool = False
    """Outlives its unit (``keepWorkspaces``); the idle TTL still applies."""
    destroyed_at: float | None = None
    schema_version: int = SCHEMA_VERSION


class WorkspaceLimitReached(Conflict):
    code = "WORKSPACE_LIMIT_REACHED"


def _record(doc: Doc) -> WorkspaceRecord:
    record: WorkspaceRecord = WorkspaceRecord.from_doc(doc.data, doc.path)
    return record


_listed = tolerant(_record, log)


class WorkspacesRepo:
    def __init__(self, store: DocStore) -> None:
        self.store = store

    def get(self, workspace_id: str) -> WorkspaceRecord | None:
        doc = self.store.get(paths.workspace(workspace_id))
        return None if doc is None else _record(doc)

    def live_of(self, uid: str, *, limit: int = 100) -> list[WorkspaceRecord]:
        """``uid``'s live workspaces, oldest first (a user holds a handful: the limit)."""
        docs = self.store.query(Query(paths.workspaces(), where=(("uid", uid), ("status", "live")), limit=limit))
        return sorted((r for d in docs if (r := _listed(d)) is not None), key=lambda r: (r.created_at, r.workspace_id))

    def create(self, record: WorkspaceRecord, *, max_live: int) -> WorkspaceRecord:
        """Store ``record`` unless its user already holds ``max_live`` live workspaces
        (:class:`WorkspaceLimitReached`); a live record of the same id is returned as it is."""

        def txn(tx: Transaction) -> WorkspaceRecord:
            existing = tx.get(paths.workspace(record.workspace_id))
            if existing is not None and existing.data.get("status") == "live":
                return _record(existing)
            live = tx.query(Query(paths.workspaces(), where=(("uid", record.uid), ("status", "live")),
                                  limit=max_live + 1))
            if len(live) >= max_live:
                raise WorkspaceLimitReached(
                    f"you already hold {len(live)} live workspaces (the most is {max_live}): destroy one "
                    "(container_destroy, or DELETE /api/agent/containers/{id}) first",
                    details={"limit": max_live, "live": len(live)})
            tx.write(Write("set", paths.workspace(record.workspace_id), record.to_doc()))
            return record

        return self.store.run_transaction(txn)

    def update(self, workspace_id: str, **fields: object) -> None:
        """Set fields (record names, e.g. ``last_used_at``) of an existing record."""
        data = {WorkspaceRecord.model_fields[k].alias or k: v for k, v in fields.items()}
        self.store.commit([Write("update", paths.workspace(workspace_id), data)])

    def mark_destroyed(self, workspace_id: str, at: float) -> None:
        self.update(workspace_id, status="destroyed", destroyed_at=at)

    def live(self, *, limit: int) -> list[WorkspaceRecord]:
        """Live workspaces, least recently used first (what the sweep looks at)."""
        docs = self.store.query(Query(paths.workspaces(), where=(("status", "live"),), order_by="lastUsedAt",
                                      limit=limit))
        return [r for d in docs if (r := _listed(d)) is not None]
