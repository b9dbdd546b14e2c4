"""Starting a run from an API request: bootstrap the state, then drive the loop.

Seed 001 section 6 steps 1-3: ownership, run state and user message persisted, system
instruction built from the user's stored profile and memories (a failed read does not block).
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from shared import tracing
from shared.agent.chat_host import current_result
from shared.agent.context_types import context_type
from shared.agent.conversation import conversation_turns as conversation_turns
from shared.api import MAX_CONVERSATION_FOR_MODEL, ConversationItem, RunRequest
from shared.durable import leases
from shared.errors import NotFound
from shared.events import StatusEvent, event_to_doc
from shared.ids import new_id
from shared.instructions import build_system_instruction
from shared.logs import log_context
from shared.loop import stops
from shared.loop.context import EventListener, RunContext, Services, UnitHost
from shared.loop.outcomes import NextStepLost
from shared.loop.steps import drive
from shared.models.base import Part, Turn
from shared.state.batched_reads import BatchedReads, read_together
from shared.state.docstore import TransactionContention, Write
from shared.state.limits_repo import RequestGuard
from shared.state.records import MemoryRecord, MessageRecord, QueuedStart, RunRecord, RunResult, UserRecord
from shared.state.runs_repo import StartOutcome
from shared.state.users_repo import Stamps

if TYPE_CHECKING:
    from shared.limits import DeferredRequest

log = logging.getLogger("agent_runtime.service")

MEMORIES_IN_INSTRUCTION = 20
"""The user's newest memories the system instruction carries."""
START_ATTEMPTS = 6
START_BACKOFF_S = 0.1
"""A contended start is tried again after ~0.1, 0.2, 0.4, 0.8, 1.6 s (jittered) before answering 503."""
_THREAD_LOCKS = tuple(threading.Lock() for _ in range(64))
"""Striped locks: starts on the same (user, thread) in one process are serialised."""

ExtraWrites = Callable[[str], Sequence[Write]]
"""Documents to create with a new run, given its id (in the run's transaction)."""


@dataclass(frozen=True)
class StartedRun:
    outcome: StartOutcome
    user: UserRecord
    turns: list[Turn]
    first_events: list[dict[str, Any]]
    """Events committed with the run (``status: planning``), to be sent first on a live stream."""
    owner: str
    """The invocation holding the new run's lease (it drives the run)."""
    stamps: Stamps | None = None
    """The user's stamps as the start read them (the run's tool list uses them)."""


class AgentService:
    def __init__(self, services: Services) -> None:
        self.services = services

    def _load_user(self, uid: str, batch: BatchedReads | None = None
                   ) -> tuple[UserRecord, list[MemoryRecord] | None, Stamps | None]:
        """The user's profile, memories (none read when their stamp says there are none, or this
        process read them at the same stamp: shared/state/users_repo.py) and stamps."""
        users = self.services.users
        try:
            user = users.get_user(uid, batch=batch)
        except Exception:
            log.warning("profile read failed; using defaults (supervised)", exc_info=True)
            user = UserRecord(uid=uid)
        stamps: Stamps | None
        try:
            stamps = users.stamps(uid, batch)
        except Exception:
            log.warning("stamp read failed; the user's collections are queried", exc_info=True)
            stamps = None
        try:
            memories: list[MemoryRecord] | None = self.services.stamped.read(
                stamps, "memories", lambda: users.list_memories(uid, limit=MEMORIES_IN_INSTRUCTION))
        except Exception:
            log.warning("memory read failed; the run continues without memories", exc_info=True)
            memories = None
        return user, memories, stamps

    def start(self, uid: str, request: RunRequest, *, idempotency_key: str | None = None,
              instruction_note: str | None = None, extra_writes: ExtraWrites | None = None,
              attachments: Sequence[Part] = (), deferred: DeferredRequest | None = None) -> StartedRun:
        """Persist a new run (or find the one an Idempotency-Key already created). On a busy thread,
        ``request.strategy`` says what happens (``outcome.queued``: the run waits its turn).
        ``instruction_note``: appended to the system instruction (where the request came from, e.g.
        an A2A caller); ``extra_writes(run_id)``: documents created in the run's own transaction
        (e.g. the A2A task that is this run); ``attachments``: files sent with the prompt (model
        parts added to its turn, e.g. an A2A message's file parts). ``deferred``: the request's count
        in the store, left to the run's creating commit (checked first: 429 ``RATE_LIMITED``; marked
        counted when that commit wrote it)."""
        req = request.normalised()
        thread_id = req.threadId or new_id("thr")
        limits = self.services.limits
        batch = self._start_batch(uid, deferred, req)
        counter = deferred.guard(batch) if deferred is not None else None
        if limits is not None:  # before anything is read or written for the run (docs/limits.md)
            key = idempotency_key
            limits.check_daily_tokens(uid, replayed=(lambda: self.services.runs.used_idempotency_key(uid, key))
                                      if key else None, batch=batch)
        with log_context(uid=uid, threadId=thread_id):
            fingerprint = request.fingerprint() if idempotency_key else None
            started = self._start_retrying(uid, req, thread_id, idempotency_key, fingerprint, instruction_note,
                                           extra_writes, batch, attachments, counter, deferred)
            if deferred is not None and started.outcome.created:
                deferred.committed()
            run = started.outcome.snapshot.run
            # Counts only: the prompt, conversation and attached context are user data.
            log.info("run started" if started.outcome.created else "run found for a repeated Idempotency-Key",
                     extra={"fields": {"runId": run.run_id, "threadId": run.thread_id,
                                       "turns": len(started.turns),
                                       "attachedContext": len(req.attachedContext)}})
        return started

    def _start_batch(self, uid: str, deferred: DeferredRequest | None, req: RunRequest) -> BatchedReads | None:
        """The documents the start's limit checks and its system instruction read (the user's,
        the day's usage counter, the active-run slot, the request counter when ``deferred``), read
        in one round trip (issue 33). Should that read fail, each is read on its own as before (a
        profile read failure is tolerated).
        The thread's two possible documents too when the run continues a thread the client names."""
        s = self.services
        own = [*s.users.user_paths(uid), *s.users.stamp_paths(uid), *(deferred.paths() if deferred is not None else ()),
               *(s.runs.thread_paths(uid, req.threadId) if req.threadId and not req.conversation else ())]
        return s.limits.read_for_start(uid, "runs", also=own) if s.limits is not None else read_together(
            s.users.store, own)

    def _start_retrying(self, uid: str, req: RunRequest, thread_id: str, idempotency_key: str | None,
                        fingerprint: str | None, instruction_note: str | None,
                        extra_writes: ExtraWrites | None, batch: BatchedReads | None = None,
                        attachments: Sequence[Part] = (), counter: RequestGuard | None = None,
                        deferred: DeferredRequest | None = None) -> StartedRun:
        """:meth:`_start`, tried again (jittered backoff) when concurrent starts on the same thread
        or of the same user kept winning the store's race: nothing was written, and a burst of
        requests on one thread (``multitaskStrategy: enqueue``) must all be taken in, not 503."""
        for attempt in range(START_ATTEMPTS):
            try:
                # Starts on one thread take turns within this process: the store then sees at most
                # one per process at a time (concurrent read-then-write transactions on one document
                # mostly abort each other; the Firestore emulator times their locks out).
                with _THREAD_LOCKS[hash((uid, thread_id)) % len(_THREAD_LOCKS)]:
                    # A retry reads afresh: the batch (and the request counter as read) is the first attempt's.
                    if attempt > 0 and deferred is not None:
                        counter = deferred.guard(None)
                    return self._start(uid, req, thread_id, idempotency_key, fingerprint, instruction_note,
                                       extra_writes, batch if attempt == 0 else None, attachments, counter)
            except TransactionContention:
                if attempt == START_ATTEMPTS - 1:
                    raise
                log.info("run start contended; retrying", extra={"fields": {"attempt": attempt + 1}})
                time.sleep(random.uniform(0.5, 1.0) * START_BACKOFF_S * 2 ** attempt)
        raise AssertionError("unreachable")  # pragma: no cover

    def _start(self, uid: str, req: RunRequest, thread_id: str, idempotency_key: str | None,
               fingerprint: str | None, instruction_note: str | None = None,
               extra_writes: ExtraWrites | None = None, batch: BatchedReads | None = None,
               attachments: Sequence[Part] = (), counter: RequestGuard | None = None) -> StartedRun:
        s = self.services
        conversation = list(req.conversation)
        maybe_shared = True
        if not conversation and req.threadId:  # the caller's own thread of that id (never another user's)
            found, messages = s.runs.found_thread_and_messages(uid, req.threadId, MAX_CONVERSATION_FOR_MODEL,
                                                               batch=batch)
            thread = found[0] if found is not None else None
            maybe_shared = found is not None and found[1] != s.runs.user_thread_path(uid, req.threadId)
            # A rollback closes the thread's paused run and removes its messages: its abandoned
            # prompt is not history (``supersede`` is that rollback).
            dropped = thread.active_run_id if thread is not None and req.strategy == "rollback" else None
            conversation = [ConversationItem(role=m.role, text=m.text) for m in messages
                            if dropped is None or m.run_id != dropped]
        user, memories, stamps = self._load_user(uid, batch)
        run_id = new_id("run")
        # The invocation that starts the run holds its lease from the first write: recovery only
        # takes over a run whose invocation stopped renewing it.
        owner = new_id("inv")
        lease = leases.held(owner, s.settings.lease_ttl_s)
        ctype = context_type(req.contextType)
        if req.entityId and req.contextType in ("project", "task"):
            from shared.projects.scope import entity_scope

            if entity_scope(s.users.store, uid, req.entityId) is None:
                raise NotFound(f"entity {req.entityId} not found", code="ENTITY_NOT_FOUND")
        if req.webhook:
            from shared.agent.webhooks import Webhooks

            Webhooks(s).check_run_webhook(uid, req.webhook)
        instruction = "\n\n".join((build_system_instruction(user, memories, req.attachedContext),
                                    ctype.guidance(req.entityId), *([instruction_note] if instruction_note else [])))
        run = RunRecord(run_id=run_id, uid=uid, thread_id=thread_id, status="planning",
                        model=s.model_for(ctype.profile).name, max_steps=s.settings.max_loop_steps,
                        context_type=ctype.name, profile=ctype.profile, entity_id=req.entityId,
                        system_instruction=instruction,
                        client_tools=[t.model_dump(exclude_none=True) for t in req.clientTools],
                        idempotency_key=idempotency_key, last_seq=1, lease=lease, webhook=req.webhook,
                        budget_usd=req.budgetUsd,
                        lease_expires_at=lease.expires_at)
        first = event_to_doc(StatusEvent(seq=1, status="planning", threadId=thread_id, runId=run_id))
        message = MessageRecord(id=new_id("msg"), role="user", text=req.prompt, run_id=run_id)
        turns = conversation_turns(conversation, req.prompt, attachments)
        slot = s.limits.slot(uid, "runs", batch=batch) if s.limits is not None else None
        queued = QueuedStart(prompt=req.prompt, conversation=[c.model_dump() for c in req.conversation],
                             attachments=[p.model_dump(mode="json", exclude_none=True, exclude_defaults=True)
                                          for p in attachments])
        outcome = s.runs.start_run(run, message=message, turns=turns, events=[first],
                                   idempotency_key=idempotency_key, fingerprint=fingerprint, strategy=req.strategy,
                                   queue_entry=lambda r: _queue_entry(s, r), queued_start=queued, slot=slot,
                                   fail_paused=stops.close_paused,
                                   extra_writes=extra_writes(run_id) if extra_writes is not None else (),
                                   new_thread=not req.threadId, guards=[counter] if counter is not None else [],
                                   maybe_shared=maybe_shared)
        if outcome.deliver:
            from shared.agent.run_queue import publish

            publish(s, uid, list(outcome.deliver))
        return StartedRun(outcome, user, turns, [first], owner, stamps)

    def context(self, started: StartedRun, listener: EventListener | None = None) -> RunContext:
        snap = started.outcome.snapshot
        host: UnitHost = self.services.hosts.get(snap.run.host) or self.services.hosts.fallback
        budget = host.budget(self.services.settings)
        return RunContext(services=self.services, snapshot=snap, turns=list(started.turns), user=started.user,
                          deadline=budget.deadline, max_steps=budget.max_steps, yield_margin_s=budget.yield_margin_s,
                          owner=started.owner, host=host, listener=listener, stamps=started.stamps)

    def run(self, ctx: RunContext) -> RunResult:
        """Drive a freshly started run until it stops; the stop is committed before returning.
        If another invocation took the run over, its current state as stored is returned."""
        with log_context(**ctx.log_fields()), tracing.invocation(ctx, "start"):
            outcome = drive(ctx)
        if isinstance(outcome, NextStepLost):
            snap = self.services.runs.get_run(ctx.run.run_id)
            return current_result(snap.run if snap is not None else ctx.run)
        result = ctx.run.result
        assert result is not None
        return result


def _queue_entry(services: Services, run: RunRecord) -> tuple[str, Write]:
    """``run_queue.queue_entry``, imported only when a run is queued (run control costs a start
    that queues nothing no import: issue 33)."""
    from shared.agent.run_queue import queue_entry

    return queue_entry(services, run)
