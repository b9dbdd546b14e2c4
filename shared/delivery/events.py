"""The deliveries an event records: one per webhook of the user subscribed to it (its name, or its
family ``run.*`` / ``session.*``), plus any extra targets (a run's own URL), all with the same body
``{type, timestamp, data}``, written in the commit of the change they announce and published after
it (``sender``)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from typing import Any, Literal

from shared.delivery.sender import published, recorded
from shared.durable.outbox import Outbox
from shared.state.deliveries_repo import DeliveriesRepo, DeliveryRecord
from shared.state.docstore import DocStore, Write
from shared.state.users_repo import StampedCache, Stamps
from shared.state.webhooks_repo import WebhooksRepo
from shared.wire import rfc3339

__all__ = ["SessionEventType", "Target", "announced", "published", "session_announced", "subscribed"]

SessionEventType = Literal["session.awaiting_confirmation", "session.awaiting_approval", "session.completed",
                           "session.rejected", "session.failed", "session.cancelled", "session.deadline_exceeded"]
"""A plan session's transitions (``session.*``): its plan proposed, an approval awaited, its end."""

Target = tuple[str, str, str]
"""(the webhook the delivery is listed under, its URL, the webhook whose secret signs it)."""


def subscribed(events: object, event_type: str) -> bool:
    if not isinstance(events, list):
        return False
    family = event_type.split(".", 1)[0] + ".*"
    return event_type in events or family in events


def announced(store: DocStore, outbox: Outbox, new_id: Callable[[str], str], uid: str, event_type: str,
              data: dict[str, Any], *, subject: str | None,
              extra: Sequence[Target] = (), stamped: tuple[StampedCache, Stamps] | None = None
              ) -> tuple[list[Write], list[str]]:
    """The writes recording ``event_type``'s deliveries (and their first attempts' outbox entries)
    for the commit of the change; the delivery ids to publish after that commit. ``stamped``: the
    user's stamps as the invocation read them and the process's cache (shared/state/users_repo.py):
    no query when they say the user has no webhook, or when the cache holds their current list."""
    repo = WebhooksRepo(store)
    hooks = repo.list(uid) if stamped is None else stamped[0].read(stamped[1], "webhooks", lambda: repo.list(uid))
    targets = [(name, str(doc.get("url")), name) for name, doc in hooks
               if subscribed(doc.get("events", []), event_type)]
    targets += extra
    if not targets:
        return [], []
    at = time.time()
    body = json.dumps({"type": event_type, "timestamp": rfc3339(at), "data": data},
                      ensure_ascii=False, separators=(",", ":"))
    deliveries = DeliveriesRepo(store)
    writes: list[Write] = []
    ids: list[str] = []
    for target, url, secret_name in targets:
        record = DeliveryRecord(delivery_id=new_id("msg"), uid=uid, target=target, url=url, event_type=event_type,
                                body=body, secret_name=secret_name, subject=subject, created_at=at)
        writes += recorded(deliveries, outbox, record)
        ids.append(record.delivery_id)
    return writes, ids


def session_announced(store: DocStore, outbox: Outbox, new_id: Callable[[str], str], uid: str,
                      event: SessionEventType, session_id: str, *, run_id: str | None = None,
                      error: dict[str, Any] | None = None, stamped: tuple[StampedCache, Stamps] | None = None
                      ) -> tuple[list[Write], list[str]]:
    """A plan session's ``event`` (``session.*``): ``data`` names the session, its execution's run
    (none before it is confirmed), its new status and the error it ended with. ``stamped``: as
    :func:`announced`'s (no query for a user the stamps know has no webhook)."""
    return announced(store, outbox, new_id, uid, event, {"sessionId": session_id, "runId": run_id,
                                                         "status": event.removeprefix("session."), "error": error},
                     subject=run_id, stamped=stamped)
