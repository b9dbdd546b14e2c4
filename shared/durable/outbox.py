"""Publishing messages that were recorded with the state change that needs them.

A unit of work writes an ``OutboxEntry`` in the same commit (or transaction) as its change (a
decided approval, a yielded invocation), publishes after the commit and marks the entry
``published``; the handler of the message deletes it. So the entry outlives every way the message
can be lost: a crash between commit and publish leaves it ``pending`` (re-published by the sweep
after ``OUTBOX_GRACE_S``), and a message that was published but never handled (every delivery
died, then Pub/Sub dead-lettered it) leaves it ``published``: the sweep re-publishes it after twice
the lease, then 4, 8, ... leases (at most 6 h apart; from the fifth publication on each re-send is
logged as an error). Re-publishing is always safe: every handler is idempotent.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from shared.durable.dispatcher import Dispatcher
from shared.durable.messages import WorkMessage
from shared.state.docstore import Write
from shared.state.outbox_repo import OutboxRepo
from shared.state.records import OutboxEntry, now

log = logging.getLogger("agent_runtime.outbox")

OUTBOX_GRACE_S = 30.0
"""The sweep re-publishes pending entries older than this (younger ones are still being published)."""
REPUBLISH_MAX_WAIT_S = 6 * 3600.0
REPUBLISH_ALERT_AFTER = 5


def message_of(entry: OutboxEntry) -> WorkMessage:
    return WorkMessage(kind=entry.kind, unitId=entry.unit_id, uid=entry.uid, approvalId=entry.approval_id,
                       entryId=entry.entry_id, traceparent=entry.traceparent, paused=entry.paused)


class Outbox:
    def __init__(self, repo: OutboxRepo, dispatcher: Dispatcher | Callable[[], Dispatcher], *,
                 lease_ttl_s: float) -> None:
        """``dispatcher`` may be a factory: it is then built on the first publication (a process
        that never publishes never imports the Pub/Sub client)."""
        self.repo = repo
        self._dispatcher = dispatcher
        self.lease_ttl_s = lease_ttl_s

    @property
    def dispatcher(self) -> Dispatcher:
        if callable(self._dispatcher) and not hasattr(self._dispatcher, "publish"):
            self._dispatcher = self._dispatcher()
        return self._dispatcher

    def via(self, dispatcher: Dispatcher) -> Outbox:
        """The same outbox publishing through ``dispatcher``."""
        if dispatcher is self._dispatcher:
            return self
        return Outbox(self.repo, dispatcher, lease_ttl_s=self.lease_ttl_s)

    @staticmethod
    def entry(message: WorkMessage, entry_id: str) -> OutboxEntry:
        return OutboxEntry(entry_id=entry_id, kind=message.kind, unit_id=message.unitId, uid=message.uid,
                           approval_id=message.approvalId, traceparent=message.traceparent, paused=message.paused)

    def record(self, message: WorkMessage, entry_id: str) -> Write:
        """The write recording ``message`` (to include in the commit of the change that needs it)."""
        return self.repo.create_write(self.entry(message, entry_id))

    def done(self, entry_id: str) -> Write:
        """The write removing an entry whose work is done (to include in the commit that did it)."""
        return self.repo.delete_write(entry_id)

    def deliver(self, entry_id: str) -> bool:
        """Publish the entry's message and mark it ``published``. False if the publish failed and
        the entry stays pending (the sweep tries again)."""
        got = self.repo.get(entry_id)
        if got is None:
            return True
        return self._publish(got[0])

    def deliver_recorded(self, message: WorkMessage, entry_id: str) -> bool:
        """:meth:`deliver` of the entry this process has just committed (``record(message,
        entry_id)``): as recorded, so it is not read back (one round trip less, issue 33)."""
        return self._publish(self.entry(message, entry_id))

    def _publish(self, entry: OutboxEntry) -> bool:
        entry_id = entry.entry_id
        message = message_of(entry)
        try:
            self.dispatcher.publish(message)
        except Exception:
            log.exception("publish failed; the outbox keeps the message",
                          extra={"fields": {"kind": entry.kind, "unitId": entry.unit_id}})
            return False
        self.repo.mark_published(entry_id, entry.publish_count + 1)
        return True

    def send(self, message: WorkMessage, entry_id: str) -> bool:
        """Publish ``message`` through its entry, writing the entry first when there is none (a
        message whose entry was removed while it could not act, e.g. a queued run not at the head
        of its queue yet). False if the publish failed (the entry stays for the sweep). The entry
        is read once (issue 33: not again by :meth:`deliver`)."""
        got = self.repo.get(entry_id)
        if got is None:
            self.repo.store.commit([self.record(message, entry_id)])
            return self.deliver_recorded(message, entry_id)
        return self._publish(got[0])

    def handled(self, message: WorkMessage) -> None:
        """The message was handled: remove the entry it was made from (same kind, unit and user)."""
        entry_id = message.outbox_entry
        if entry_id is None:
            return
        got = self.repo.get(entry_id)
        if got is None:
            return
        entry, token = got
        if entry.unit_id != message.unitId or entry.uid != message.uid:
            return
        self.repo.delete_if_unchanged(entry_id, token)

    def sweep(self, *, older_than_s: float = OUTBOX_GRACE_S, republish_after_s: float | None = None,
              limit: int = 100) -> int:
        """Re-publish entries whose message may be lost: ``pending`` ones older than
        ``older_than_s`` and ``published`` ones not handled within ``republish_after_s`` (default:
        twice the lease, doubling with each publication). Returns how many were re-published."""
        at = now()
        if republish_after_s is None:
            republish_after_s = 2 * self.lease_ttl_s
        sent = 0
        for status in ("pending", "published"):
            for entry in self.repo.by_status(status, limit):
                if status == "pending":
                    due = entry.created_at + older_than_s
                else:
                    count = max(1, entry.publish_count)
                    due = (entry.published_at or 0.0) + min(REPUBLISH_MAX_WAIT_S,
                                                            republish_after_s * 2 ** max(0, count - 1))
                    if due <= at and count >= REPUBLISH_ALERT_AFTER:
                        log.error("%s message published %d times and never handled", entry.kind, count,
                                  extra={"fields": {"entryId": entry.entry_id, "kind": entry.kind,
                                                    "unitId": entry.unit_id}})
                if due <= at and self.deliver(entry.entry_id):
                    sent += 1
        return sent
