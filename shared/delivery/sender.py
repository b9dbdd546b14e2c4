"""Attempts and retries of signed deliveries, at least once.

``recorded`` gives the writes that create a delivery (its record and a ``deliver`` outbox entry) for
the commit of the change it announces; after that commit its entry is published. The ``deliver``
handler claims the delivery (a conditional write), POSTs the body signed for this attempt, and
records the outcome: a 2xx is ``delivered``; anything else (an error status, a timeout, a refused
connection) schedules the next attempt after :data:`ATTEMPT_DELAYS_S` (the Standard Webhooks
schedule: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h; eight attempts over about 27.5 hours), then
``failed``. The sweep publishes the retries that are due (it runs every minute: a delay is rounded
up to the next sweep). Every attempt carries the same ``webhook-id``: receivers de-duplicate by it.

A URL is checked before every attempt like a user's MCP server (public addresses only, unless
``MCP_ALLOW_PRIVATE_URLS``); redirects are not followed.
"""

from __future__ import annotations

import logging
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass

from shared.delivery.signing import signed_headers
from shared.durable.kinds import DELIVER
from shared.durable.messages import WorkMessage
from shared.durable.outbox import Outbox
from shared.durable.router import Disposition
from shared.state.deliveries_repo import DeliveriesRepo, DeliveryAttempt, DeliveryRecord
from shared.state.docstore import PreconditionFailed, Write

log = logging.getLogger("agent_runtime.delivery")

ATTEMPT_DELAYS_S = (5.0, 300.0, 1800.0, 7200.0, 18000.0, 36000.0, 36000.0)
"""The wait after the 1st, 2nd, ... failed attempt; after the last one the delivery is ``failed``."""
MAX_ATTEMPTS = len(ATTEMPT_DELAYS_S) + 1
RETRY_WINDOW_S = sum(ATTEMPT_DELAYS_S)
ATTEMPT_TIMEOUT_S = 10.0
IN_FLIGHT_S = 60.0
"""A claimed attempt holds the delivery this long: a duplicate message meanwhile does nothing."""
MAX_ERROR_CHARS = 300
REFUSED = "not sent:"
"""Errors that no retry can cure (a URL the guard refuses, a secret that is gone): ``failed`` at once."""

Post = Callable[[str, bytes, dict[str, str], float], int]
"""``post(url, body, headers, timeout_s)`` -> the HTTP status; raises OSError when nothing answered."""


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


def http_post(url: str, body: bytes, headers: dict[str, str], timeout_s: float) -> int:
    opener = urllib.request.build_opener(_NoRedirect())
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with opener.open(request, timeout=timeout_s) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def entry_id(delivery_id: str) -> str:
    return f"{DELIVER}-{delivery_id}"


def recorded(repo: DeliveriesRepo, outbox: Outbox, record: DeliveryRecord) -> list[Write]:
    """The writes creating ``record`` and the message making its first attempt."""
    message = WorkMessage(kind=DELIVER, unitId=record.delivery_id, uid=record.uid)
    return [repo.create_write(record), outbox.record(message, entry_id(record.delivery_id))]


def published(outbox: Outbox, delivery_ids: list[str]) -> None:
    """After the commit that recorded them: their first attempts (through the dispatcher)."""
    for delivery_id in delivery_ids:
        outbox.deliver(entry_id(delivery_id))


@dataclass
class Deliverer:
    repo: DeliveriesRepo
    outbox: Outbox
    secret_of: Callable[[DeliveryRecord], str | None]
    """The signing secret of a delivery (None: it cannot be read any more; the delivery fails)."""
    check_url: Callable[[str], None] | None = None
    """Raises when the URL may not be reached (the SSRF guard); None: any URL."""
    headers_of: Callable[[DeliveryRecord], dict[str, str] | None] | None = None
    """The secret headers of a delivery with ``headers_from`` (None: they cannot be read; it fails)."""
    post: Post = http_post
    clock: Callable[[], float] = time.time

    def recorded(self, record: DeliveryRecord) -> list[Write]:
        return recorded(self.repo, self.outbox, record)

    def publish(self, delivery_ids: list[str]) -> None:
        published(self.outbox, delivery_ids)

    def handle(self, message: WorkMessage) -> Disposition:
        """Handler of ``deliver`` messages: one attempt, if the delivery is due."""
        if message.unitId is not None:
            self.attempt(message.unitId)
        return "done"

    def attempt(self, delivery_id: str) -> DeliveryRecord | None:
        """Claim the delivery if an attempt is due, POST it and record the outcome."""
        got = self.repo.get(delivery_id)
        if got is None:
            return None
        record, token = got
        at = self.clock()
        if record.status in ("delivered", "failed") or record.next_attempt_at > at:
            return record
        record.attempts += 1
        record.next_attempt_at = at + IN_FLIGHT_S
        try:
            token = self.repo.save(record, token)
        except PreconditionFailed:
            return None  # another invocation claimed this attempt
        status_code, error = self._send(record, at)
        record.log.append(DeliveryAttempt(at=at, status_code=status_code, error=error))
        if status_code is not None and 200 <= status_code < 300:
            record.status, record.delivered_at = "delivered", self.clock()
        elif record.attempts >= MAX_ATTEMPTS or (error or "").startswith(REFUSED):
            record.status = "failed"
        else:
            record.status = "retrying"
            record.next_attempt_at = self.clock() + ATTEMPT_DELAYS_S[record.attempts - 1]
        try:
            self.repo.save(record, token)
        except PreconditionFailed:  # pragma: no cover - the claim holds it for IN_FLIGHT_S
            log.warning("delivery changed during its attempt", extra={"fields": {"deliveryId": delivery_id}})
        log.info("delivery attempt: %s", record.status, extra={"fields": {
            "deliveryId": delivery_id, "attempt": record.attempts, "statusCode": status_code,
            "eventType": record.event_type}})
        return record

    def _send(self, record: DeliveryRecord, at: float) -> tuple[int | None, str | None]:
        if self.check_url is not None:
            try:
                self.check_url(record.url)
            except Exception as exc:
                return None, f"{REFUSED} {str(exc)[:MAX_ERROR_CHARS]}"
        if record.secret_name:
            secret = self.secret_of(record)
            if secret is None:
                return None, f"{REFUSED} the signing secret cannot be read (the webhook was deleted or re-keyed)"
            headers = {**signed_headers(secret, record.delivery_id, int(at), record.body), **record.headers}
        else:  # not signed (an A2A push notification: its own token and authentication are in headers)
            headers = {"Content-Type": "application/json", "webhook-id": record.delivery_id, **record.headers}
        if record.headers_from:
            secret_headers = self.headers_of(record) if self.headers_of is not None else None
            if secret_headers is None:
                return None, f"{REFUSED} its credentials cannot be read (the configuration was deleted or re-keyed)"
            headers.update(secret_headers)
        try:
            return self.post(record.url, record.body.encode(), headers, ATTEMPT_TIMEOUT_S), None
        except OSError as exc:
            return None, f"{type(exc).__name__}: {str(exc)[:MAX_ERROR_CHARS]}"

    def retry_due(self, limit: int = 50) -> int:
        """Sweep task: publish a ``deliver`` message for every retry that is due (a first attempt's
        message is kept by the outbox). Returns how many."""
        sent = 0
        for delivery_id in self.repo.due("retrying", self.clock(), limit):
            try:
                self.outbox.dispatcher.publish(WorkMessage(kind=DELIVER, unitId=delivery_id))
                sent += 1
            except Exception:
                log.exception("publishing a due delivery failed", extra={"fields": {"deliveryId": delivery_id}})
        return sent
