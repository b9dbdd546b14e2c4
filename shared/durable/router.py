"""Routing messages to the handler of their kind, and the sweep over every registered kind.

Handlers and recoverers are registered at the edge (``shared/kernel.py``); this module imports
nothing of the domain. A handler returns ``"done"`` when the message's work is over (the outbox
entry it came from is removed), ``"consumed"`` when the handler's own commit removed that entry
already (nothing left to check: one store read less, issue 33) or ``"keep"`` when another
invocation still holds the unit (the entry stays, so the sweep re-publishes it if that invocation
dies).

Bad deliveries never crash the function and are never retried forever: a malformed message, an
unknown kind or a newer schema version is acknowledged and logged at ERROR with kind and version.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Literal

from shared.durable.kinds import SWEEP
from shared.durable.messages import MalformedMessage, WorkMessage, decode_pubsub_data, parse_message
from shared.durable.outbox import Outbox

log = logging.getLogger("agent_runtime.router")

Disposition = Literal["done", "consumed", "keep"]
Handler = Callable[[WorkMessage], Disposition]
Recoverer = Callable[[int], int]
"""``recover(limit)`` takes over units of its kind whose lease expired; returns how many."""


class Router:
    def __init__(self, outbox: Outbox) -> None:
        self.outbox = outbox
        self._handlers: dict[str, Handler] = {}
        self._recoverers: dict[str, Recoverer] = {}

    def register(self, kind: str, handler: Handler, *, recover: Recoverer | None = None) -> None:
        if kind == SWEEP or kind in self._handlers:
            raise ValueError(f"message kind {kind!r} is already registered")
        self._handlers[kind] = handler
        if recover is not None:
            self._recoverers[kind] = recover

    def add_recoverer(self, name: str, recover: Recoverer) -> None:
        """A sweep task of its own (not tied to a message kind), e.g. ending work past a deadline."""
        if name in self._recoverers:
            raise ValueError(f"recoverer {name!r} is already registered")
        self._recoverers[name] = recover

    @property
    def kinds(self) -> list[str]:
        return [SWEEP, *self._handlers]

    def handle(self, message: WorkMessage) -> None:
        """Run the handler of ``message.kind``. Store outages raise (Pub/Sub redelivers)."""
        if message.kind == SWEEP:
            found = self.sweep()
            if any(found.values()):
                log.info("sweep: %s", found)
            return
        handler = self._handlers.get(message.kind)
        if handler is None:
            log.error("message of an unknown kind acknowledged",
                      extra={"fields": {"kind": message.kind, "schemaVersion": message.schemaVersion,
                                        "unitId": message.unitId}})
            return
        if handler(message) == "done":
            self.outbox.handled(message)

    def handle_body(self, body: Any) -> None:
        """Decode a JSON body (already parsed) and handle it; malformed ones are acknowledged."""
        try:
            message = parse_message(body)
        except MalformedMessage as exc:
            _log_malformed(exc)
            return
        self.handle(message)

    def handle_pubsub(self, data: Any, event_id: object = None) -> None:
        """Handle a Pub/Sub CloudEvent's ``data``; malformed ones are acknowledged and logged."""
        try:
            message = decode_pubsub_data(data)
        except MalformedMessage as exc:
            _log_malformed(exc, eventId=event_id)
            return
        self.handle(message)

    def sweep(self, *, limit: int = 50) -> dict[str, int]:
        """Periodic safety net: re-publish outbox entries whose message may be lost, then let every
        registered kind take over its units whose lease expired. One kind's trouble does not stop
        the others (logged)."""
        republished = self.outbox.sweep()
        recovered = 0
        for kind, recover in self._recoverers.items():
            try:
                recovered += recover(limit)
            except Exception:
                log.exception("recovery of a kind failed", extra={"fields": {"kind": kind}})
        return {"republished": republished, "recovered": recovered}


def _log_malformed(exc: MalformedMessage, **fields: object) -> None:
    log.error("malformed message acknowledged: %s", exc.reason,
              extra={"fields": {"kind": exc.kind, "schemaVersion": exc.version, **fields}})
