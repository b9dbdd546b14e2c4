"""Every document of one user, wherever it is: the export, the erasure and the deletion of one run
or one thread walk the same tree (docs/firestore-layout.md).

A user's documents are in two places: under ``users/{uid}`` (:data:`UNDER_USER`) and in top-level
collections whose documents name their owner in ``uid`` (:data:`OWNED`), each with its
subcollections. Reads are bounded pages by document id (``PAGE`` documents a query); deletes are
commits of at most ``BATCH`` writes. The usage ledger is not deleted but anonymised: its entries
move to ``erasedUsage`` without the uid, so totals over all users stay true.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from shared.errors import Conflict, NotFound
from shared.state import paths
from shared.state.docstore import Doc, DocStore, Query, Write
from shared.state.record_base import json_safe
from shared.state.records import TERMINAL_RUN_STATUSES, RunRecord, now
from shared.state.runs_repo import AUDIT_KEY, live_step_parts

log = logging.getLogger("agent_runtime.state")

PAGE = 500
BATCH = 400
SECRET_FIELDS = frozenset({"ciphertext", "nonce", "keyId"})
"""Sealed tokens and secrets (integrations, MCP servers, webhooks): never exported (the export names
the connection)."""


@dataclass(frozen=True)
class Tree:
    """A collection and the subcollections of each of its documents."""

    name: str
    children: tuple[Tree, ...] = ()


UNDER_USER: tuple[Tree, ...] = (
    Tree("stamps"),  # first: a stamp must not outlive the data it stood for (shared/state/users_repo.py)
    Tree("threads", (Tree("messages"),)), Tree("agentApprovals"), Tree("memories"), Tree("integrations"),
    Tree("mcpServers"), Tree("templates"), Tree("projects", (Tree("tasks"), Tree("documents"))),
    Tree("usage"), Tree("usageDays"), Tree("usageMonths"), Tree("limits"), Tree("a2aTasks", (Tree("pushConfigs"),)),
    Tree("webhooks"), Tree("a2aAgents"),
)
"""The collections under ``users/{uid}``."""

OWNED: tuple[Tree, ...] = (
    Tree("runs", (Tree("turns"), Tree("actions"), Tree("events"))),
    Tree("threads", (Tree("messages"),)),
    Tree("sessions", (Tree("plans"), Tree("tasks", (Tree("react"),)), Tree("events"))),
    Tree("workspaces"), Tree("audit"), Tree("idempotencyKeys"), Tree("outbox"), Tree("deliveries"),
    Tree("schedules", (Tree("runs"),)),
)
"""Top-level collections whose documents carry their owner's ``uid`` (``threads``: those begun
before issue 35)."""

ANONYMISED = "usage"
ERASED_USAGE = "erasedUsage"


@dataclass
class Erasure:
    """What an erasure did: documents deleted per collection id, ledger entries anonymised."""

    deleted: dict[str, int] = field(default_factory=dict)
    anonymised: int = 0


def _children(store: DocStore, doc_path: str, trees: Sequence[Tree]) -> Iterator[Doc]:
    """The documents of the subcollections ``trees`` of ``doc_path``, each before its own."""
    for tree in trees:
        for doc in _all(store, Query(f"{doc_path}/{tree.name}")):
            yield doc
            yield from _children(store, doc.path, tree.children)


def _all(store: DocStore, query: Query) -> Iterator[Doc]:
    """Every document ``query`` (by id) matches, a page at a time."""
    last: str | None = None
    while True:
        docs = store.query(replace(query, start_after=last, limit=PAGE))
        yield from docs
        if len(docs) < PAGE:
            return
        last = docs[-1].id


def _is_turns(path: str) -> bool:
    """Whether ``path`` is a run's turns document (``runs/{runId}/turns/{n}``)."""
    parts = path.split("/")
    return len(parts) == 4 and parts[0] == "runs" and parts[2] == "turns"


def _shown(doc: Doc) -> dict[str, Any]:
    """What the export shows of ``doc``: a turns document without its parts past their retention."""
    return live_step_parts(doc.data) if _is_turns(doc.path) else doc.data


class UserDataRepo:
    def __init__(self, store: DocStore) -> None:
        self.store = store

    def documents(self, uid: str) -> Iterator[Doc]:
        """Every document of ``uid``: the user document, what is under it, and the owned documents of
        the top-level collections with their subcollections (a parent before its children)."""
        user = self.store.get(paths.user(uid))
        if user is not None:
            yield user
        yield from _children(self.store, paths.user(uid), UNDER_USER)
        for tree in OWNED:
            for doc in _all(self.store, Query(tree.name, where=(("uid", uid),))):
                yield doc
                yield from _children(self.store, doc.path, tree.children)

    def export(self, uid: str) -> dict[str, dict[str, Any]]:
        """Every document of ``uid`` by path, sealed tokens left out (a NaN or an infinity, which
        JSON cannot write, as null)."""
        return {d.path: {k: json_safe(v) for k, v in _shown(d).items() if k not in SECRET_FIELDS}
                for d in self.documents(uid)}

    def refuse_if_working(self, uid: str) -> None:
        """A 409 ``RUN_ACTIVE`` while a run of ``uid`` is still working (not ended and not paused for
        a decision): its next commit would write again. Checked before anything is erased, the
        workspaces in the sandbox service included."""
        for doc in _all(self.store, Query(paths.runs(), where=(("uid", uid),))):
            status = doc.data.get("status")
            if status not in TERMINAL_RUN_STATUSES and status != "awaiting_confirmation":
                raise Conflict(f"run {doc.id} is {status}; erase when it has stopped", code="RUN_ACTIVE",
                               details={"runId": doc.id})

    def erase(self, uid: str) -> Erasure:
        """Delete every document of ``uid`` (the usage ledger anonymised). A run still working is a
        409 ``RUN_ACTIVE`` and nothing is deleted (:meth:`refuse_if_working`). Idempotent: a second
        erasure finds nothing."""
        self.refuse_if_working(uid)
        done = Erasure()
        pseudonym = "erased-" + hashlib.sha256(f"{uid}\x00{now()}".encode()).hexdigest()[:16]
        writes: list[Write] = []
        for doc in reversed(list(self.documents(uid))):  # children before their parent
            collection = doc.path.rsplit("/", 2)[-2]
            if doc.path.startswith(f"{paths.usage_entries(uid)}/"):
                data = {k: v for k, v in doc.data.items() if k != "uid"}
                writes.append(Write("set", f"{ERASED_USAGE}/{pseudonym}-{doc.id}",
                                    {**data, "erasedUser": pseudonym, "erasedAt": now()}))
                done.anonymised += 1
            writes.append(Write("delete", doc.path))
            done.deleted[collection] = done.deleted.get(collection, 0) + 1
            if len(writes) >= BATCH:
                self.store.commit(writes)
                writes = []
        if writes:
            self.store.commit(writes)
        log.info("user data erased", extra={"fields": {"deleted": sum(done.deleted.values()),
                                                       "anonymised": done.anonymised}})
        return done

    # ---- one run, one thread ---------------------------------------------------------------
    def delete_run(self, uid: str, run_id: str) -> int:
        """Delete ``uid``'s ended run: its document, turns, actions, events and approvals. 404 for
        another user's or a missing run, 409 ``RUN_ACTIVE`` while it has not ended (paused runs
        included: decide or supersede first). The usage ledger keeps its entries."""
        doc = self.store.get(paths.run(run_id))
        if doc is None or doc.data.get("uid") != uid:
            raise NotFound(f"run {run_id} not found", code="RUN_NOT_FOUND")
        if doc.data.get("status") not in TERMINAL_RUN_STATUSES:
            raise Conflict(f"run {run_id} is {doc.data.get('status')}; only an ended run (completed or failed) "
                           "can be deleted", code="RUN_ACTIVE", details={"runId": run_id})
        return self._delete_runs(uid, [doc])

    def _delete_runs(self, uid: str, runs: Sequence[Doc]) -> int:
        """Delete ``runs`` with their subcollections and approvals. The audit log outlives them: the
        entries riding in their turns documents (``RunsRepo.fold_step``) are first written to
        ``audit/{auditId}`` as every other entry is (those past their retention are not)."""
        docs: list[Doc] = []
        kept: list[Write] = []
        for run in runs:
            children = list(_children(self.store, run.path, OWNED[0].children))
            kept += [Write("set", paths.audit(str(e["auditId"])), e) for d in children if _is_turns(d.path)
                     for e in live_step_parts(d.data).get(AUDIT_KEY, ()) if isinstance(e, dict)
                     and isinstance(e.get("auditId"), str) and e["auditId"]]
            docs += children
            docs += list(_all(self.store, Query(paths.approvals(uid), where=(("runId", run.id),))))
            docs.append(run)
        for i in range(0, len(kept), BATCH):
            self.store.commit(kept[i:i + BATCH])
        self._delete(docs)
        return len(docs)

    def delete_thread(self, uid: str, thread_id: str, runs: Sequence[RunRecord], thread: Doc) -> int:
        """Delete ``uid``'s thread ``thread`` (found by the caller), its messages and its ``runs``
        (all ended: the caller checks)."""
        run_docs = [d for d in self.store.get_many([paths.run(r.run_id) for r in runs]) if d is not None]
        count = self._delete_runs(uid, run_docs)
        docs = [*_children(self.store, thread.path, (Tree("messages"),)), thread]
        self._delete(docs)
        return count + len(docs)

    def thread_runs(self, uid: str, thread_id: str) -> list[RunRecord]:
        """Every run of ``uid``'s thread (equality filters only: no composite index)."""
        return [RunRecord.from_doc(d.data, d.path)
                for d in _all(self.store, Query(paths.runs(), where=(("uid", uid), ("threadId", thread_id))))]

    def _delete(self, docs: Sequence[Doc]) -> None:
        for i in range(0, len(docs), BATCH):
            self.store.commit([Write("delete", d.path) for d in docs[i:i + BATCH]])

