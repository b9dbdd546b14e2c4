"""The caller's own data over HTTP (issue 35): threads and their history, memories, deleting a run,
a thread or a memory, the export of everything and the erasure of everything.

Every operation is scoped to the authenticated user: another user's object answers 404 like a
missing one. Lists page with ``cursor``/``nextCursor`` (shared/state/pages.py). The documents are
found by ``shared/state/user_data_repo.py`` (one walk of docs/firestore-layout.md for the export and
the erasure).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field

from shared.errors import Conflict
from shared.responses import PageBody, ResponseBody
from shared.runs_list import RunSummary, summary
from shared.state.records import TERMINAL_RUN_STATUSES, now
from shared.state.user_data_repo import UserDataRepo
from shared.wire import UtcTime

if TYPE_CHECKING:
    from shared.runtime import Runtime


class ThreadSummary(ResponseBody):
    threadId: str
    activeRunId: str | None = Field(default=None, description="the run working on (or paused in) the thread")
    mode: str | None = Field(default=None, description="the contextType of the thread's last turn")
    createdAt: UtcTime
    updatedAt: UtcTime


class ThreadsList(PageBody):
    """``GET /api/agent/threads``: the caller's threads, newest first."""

    ok: bool = True
    threads: list[ThreadSummary]


class Message(ResponseBody):
    messageId: str
    role: str
    text: str
    runId: str | None = None
    createdAt: UtcTime


class ThreadView(PageBody):
    """``GET /api/agent/threads/{threadId}``: one page of its messages (newest first) and the runs
    those messages belong to."""

    ok: bool = True
    threadId: str
    activeRunId: str | None = None
    createdAt: UtcTime
    updatedAt: UtcTime
    messages: list[Message]
    runs: list[RunSummary] = Field(description="the runs of this page's messages, newest first")


class Deleted(ResponseBody):
    """A deletion: what was deleted and how many documents went with it."""

    ok: bool = True
    deleted: str = Field(description="the id of what was deleted")
    documents: int = Field(description="documents deleted (the object and what belonged to it)")


class MemoryItem(ResponseBody):
    memoryId: str
    text: str
    tags: list[str]
    runId: str | None = None
    createdAt: UtcTime


class MemoriesList(PageBody):
    """``GET /api/agent/memories``: what the agent remembers about the caller, newest first."""

    ok: bool = True
    memories: list[MemoryItem]


class Export(ResponseBody):
    """``POST /api/agent/me/export``: every document of the caller, by its path in the store
    (docs/firestore-layout.md); sealed tokens are left out (integrations and MCP servers are named,
    never their tokens)."""

    ok: bool = True
    uid: str
    exportedAt: UtcTime
    documents: dict[str, dict[str, Any]]


class Erased(ResponseBody):
    """``DELETE /api/agent/me``: what the erasure deleted, per collection, and how many usage-ledger
    entries it kept without the uid (so totals over all users stay true)."""

    ok: bool = True
    uid: str
    deleted: dict[str, int]
    anonymised: int


def list_threads(rt: Runtime, uid: str, limit: int, cursor: str | None) -> ThreadsList:
    page = rt.runs.page_threads(uid, limit, cursor)
    return ThreadsList(threads=[ThreadSummary(threadId=t.thread_id, activeRunId=t.active_run_id, mode=t.mode,
                                              createdAt=t.created_at, updatedAt=t.updated_at) for t in page.items],
                       nextCursor=page.next_cursor)


def thread_view(rt: Runtime, uid: str, thread_id: str, limit: int, cursor: str | None) -> ThreadView:
    thread, page = rt.runs.page_messages(uid, thread_id, limit, cursor)
    run_ids = list(dict.fromkeys(m.run_id for m in page.items if m.run_id))
    runs = [snap.run for rid in run_ids if (snap := rt.runs.get_run(rid)) is not None and snap.run.uid == uid]
    return ThreadView(threadId=thread.thread_id, activeRunId=thread.active_run_id, createdAt=thread.created_at,
                      updatedAt=thread.updated_at,
                      messages=[Message(messageId=m.id, role=m.role, text=m.text, runId=m.run_id,
                                        createdAt=m.created_at) for m in page.items],
                      runs=[summary(r, rt.runs) for r in runs], nextCursor=page.next_cursor)


def delete_thread(rt: Runtime, uid: str, thread_id: str) -> Deleted:
    """Delete the thread, its messages and its runs; 409 ``THREAD_ACTIVE`` while one of its runs
    has not ended (a paused one included: decide it, or start the next turn with supersede)."""
    doc = rt.runs.thread_doc(uid, thread_id)
    data = UserDataRepo(rt.store)
    runs = data.thread_runs(uid, thread_id)
    live = [r.run_id for r in runs if r.status not in TERMINAL_RUN_STATUSES]
    if live:
        raise Conflict(f"thread {thread_id} has a run that has not ended ({live[0]})", code="THREAD_ACTIVE",
                       details={"runIds": live})
    return Deleted(deleted=thread_id, documents=data.delete_thread(uid, thread_id, runs, doc))


def delete_run(rt: Runtime, uid: str, run_id: str) -> Deleted:
    return Deleted(deleted=run_id, documents=UserDataRepo(rt.store).delete_run(uid, run_id))


def list_memories(rt: Runtime, uid: str, limit: int, cursor: str | None) -> MemoriesList:
    page = rt.users.page_memories(uid, limit, cursor)
    return MemoriesList(memories=[MemoryItem(memoryId=m.id, text=m.text, tags=m.tags, runId=m.run_id,
                                             createdAt=m.created_at) for m in page.items],
                        nextCursor=page.next_cursor)


def delete_memory(rt: Runtime, uid: str, memory_id: str) -> Deleted:
    rt.users.delete_memory(uid, memory_id)
    return Deleted(deleted=memory_id, documents=1)


def export(rt: Runtime, uid: str) -> Export:
    return Export(uid=uid, exportedAt=now(), documents=UserDataRepo(rt.store).export(uid))


def erase(rt: Runtime, uid: str) -> Erased:
    repo = UserDataRepo(rt.store)
    if rt.settings.sandbox_url:  # the workspaces' files and snapshots live in the sandbox service
        from shared.workspaces import destroy_all

        repo.refuse_if_working(uid)  # a 409 destroys nothing: the workspaces went before the check
        destroy_all(rt.store, rt.settings, uid)
    done = repo.erase(uid)
    return Erased(uid=uid, deleted=done.deleted, anonymised=done.anonymised)
