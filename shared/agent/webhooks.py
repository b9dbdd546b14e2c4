"""Webhooks (docs/run-control.md, "Webhooks"): a user's named webhooks, a run's own ``webhook``
URL, and the deliveries a run's stops announce.

A run that completes, fails or pauses for approval records one delivery per webhook of its owner
subscribed to that event (``run.completed``, ``run.failed``, ``run.awaiting_approval``, or
``run.*``), and one to its own ``webhook`` URL, in the commit of that stop; they are published
after it (``shared/delivery``). A run's own URL is signed with the secret of its owner's webhook
named ``default``. A plan session's transitions (``session.*``) are recorded by the plans package
through ``shared.delivery.events`` the same way.
"""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from shared.delivery.events import announced
from shared.delivery.sender import Deliverer
from shared.delivery.signing import SECRET_PATTERN, new_secret
from shared.errors import Conflict, InvalidInput
from shared.loop.context import RunContext, Services
from shared.responses import PageBody, RemovedResponse, ResponseBody
from shared.routes import NAME_PATTERN, NAME_RULE
from shared.state.deliveries_repo import DeliveriesRepo, DeliveryRecord
from shared.state.pages import page_in_memory
from shared.state.record_base import field_instant, field_text, field_texts
from shared.state.records import SCHEMA_VERSION, RunResult
from shared.state.webhooks_repo import MAX_WEBHOOKS_PER_USER, WebhooksRepo
from shared.wire import UtcTime

if TYPE_CHECKING:
    from shared.connectors.credentials import CredentialVault

LABEL = "webhook"
DEFAULT_WEBHOOK = "default"
"""The webhook whose secret signs the deliveries to a run's own ``webhook`` URL."""
_NAME = re.compile(NAME_PATTERN[:-1] + r"\Z")
URL_PATTERN = r"^https?://[^\s/?#@]+(?:[/?#]\S*)?$"
WebhookEvent = Literal["run.completed", "run.failed", "run.awaiting_approval", "run.*", "session.*"]
RunEventType = Literal["run.completed", "run.failed", "run.awaiting_approval"]
MAX_DELIVERIES_LISTED = 100


def named(segment: str, kind: str, code: str) -> str:
    """A ``{name}`` path segment of the caller's namespace; 400 ``code`` outside ``[A-Za-z0-9_-]{1,40}``."""
    if not _NAME.match(segment):
        raise InvalidInput(f"a {kind}'s name must be {NAME_RULE} (got {segment[:40]!r})", code=code)
    return segment


def webhook_name(segment: str) -> str:
    """The ``{name}`` of ``/api/agent/webhooks/{name}``."""
    return named(segment, "webhook", "INVALID_WEBHOOK_NAME")


class WebhookRequest(BaseModel):
    """Body of ``PUT /api/agent/webhooks/{name}`` (unknown fields refused)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    url: str = Field(min_length=1, max_length=2048, pattern=URL_PATTERN,
                     description="where deliveries are POSTed (http or https; public addresses only)")
    events: list[WebhookEvent] = Field(min_length=1, max_length=8,
                                       description="the events delivered: run.completed, run.failed, "
                                                   "run.awaiting_approval, run.* (all three), session.* (a plan "
                                                   "session's transitions)")
    secret: str | None = Field(default=None, pattern=SECRET_PATTERN,
                               description="the Standard Webhooks signing secret (whsec_ + base64); generated "
                                           "when absent, shown in this answer only, stored encrypted")


class WebhookBody(ResponseBody):
    name: str
    declared: bool = Field(default=True, description="false: the caller has no webhook of this name")
    url: str | None = None
    events: list[str] = Field(default_factory=list)
    updatedAt: UtcTime | None = None


class WebhookResponse(WebhookBody):
    ok: bool = True
    secret: str | None = Field(default=None, description="only in the answer of PUT: verify signatures with it")


class WebhooksResponse(PageBody):
    ok: bool = True
    webhooks: list[WebhookBody]


class WebhookRemovedResponse(RemovedResponse):
    """``DELETE /api/agent/webhooks/{name}``."""


class DeliveryAttemptBody(ResponseBody):
    at: UtcTime
    statusCode: int | None = None
    error: str | None = None


class DeliveryBody(ResponseBody):
    deliveryId: str = Field(description="the webhook-id header of every attempt: de-duplicate by it")
    eventType: str
    url: str
    runId: str | None = None
    status: Literal["pending", "retrying", "delivered", "failed"]
    attempts: int
    nextAttemptAt: UtcTime | None = None
    createdAt: UtcTime
    deliveredAt: UtcTime | None = None
    log: list[DeliveryAttemptBody]


class DeliveriesResponse(PageBody):
    ok: bool = True
    name: str
    deliveries: list[DeliveryBody]


def _body(name: str, doc: dict[str, Any]) -> WebhookBody:
    return WebhookBody(name=name, url=field_text(doc, "url") or "", events=field_texts(doc, "events"),
                       updatedAt=field_instant(doc, "updatedAt"))


def _delivery_body(d: DeliveryRecord) -> DeliveryBody:
    return DeliveryBody(deliveryId=d.delivery_id, eventType=d.event_type, url=d.url, runId=d.subject,
                        status=d.status, attempts=d.attempts,
                        nextAttemptAt=d.next_attempt_at if d.status == "retrying" else None,
                        createdAt=d.created_at, deliveredAt=d.delivered_at,
                        log=[DeliveryAttemptBody(at=a.at, statusCode=a.status_code, error=a.error) for a in d.log])


class Webhooks:
    """Stores and lists a user's webhooks; builds the deliverer; announces a run's stops."""

    def __init__(self, services: Services) -> None:
        self.services = services
        self.repo = WebhooksRepo(services.runs.store)
        self.deliveries = DeliveriesRepo(services.runs.store)

    def _vault(self) -> CredentialVault:
        from shared.connectors import ConnectorError

        if self.services.connectors is None:
            raise ConnectorError("no connectors in this process", provider=LABEL, reason="not_configured")
        vault: CredentialVault = self.services.connectors().vault
        return vault

    def _check_url(self, url: str) -> None:
        if self.services.settings.mcp_allow_private_urls:
            return
        from shared.connectors.url_guard import UrlNotAllowed, check_public_url

        try:
            check_public_url(url)
        except UrlNotAllowed as exc:
            raise InvalidInput(str(exc).replace("A user's MCP server", "A webhook"),
                               code="WEBHOOK_URL_NOT_ALLOWED") from None

    # ---- the API ------------------------------------------------------------------------------
    def put(self, uid: str, name: str, request: WebhookRequest) -> WebhookResponse:
        """Declare (replace) ``uid``'s webhook ``name``; 400 ``WEBHOOK_URL_NOT_ALLOWED`` for a
        non-public URL; 409 beyond :data:`MAX_WEBHOOKS_PER_USER`."""
        self._check_url(request.url)
        if self.repo.get(uid, name) is None and len(self.repo.list(uid)) >= MAX_WEBHOOKS_PER_USER:
            raise Conflict(f"at most {MAX_WEBHOOKS_PER_USER} webhooks per user; delete one first",
                           code="TOO_MANY_WEBHOOKS")
        secret = request.secret or new_secret()
        vault = self._vault()
        doc = {"schemaVersion": SCHEMA_VERSION, "name": name, "url": request.url,
               "events": list(dict.fromkeys(request.events)), "updatedAt": time.time(),
               **vault.seal_text(WebhooksRepo.location(uid, name), secret, LABEL)}
        self.repo.put(uid, name, doc)
        return WebhookResponse(**_body(name, doc).model_dump(), secret=secret)

    def get(self, uid: str, name: str) -> WebhookBody:
        """The webhook (``declared: false`` when the caller has none of that name)."""
        doc = self.repo.get(uid, name)
        return WebhookBody(name=name, declared=False) if doc is None else _body(name, doc)

    def listed(self, uid: str, limit: int, cursor: str | None = None) -> WebhooksResponse:
        """One page of the caller's webhooks, by name."""
        page = page_in_memory(self.repo.list(uid), lambda item: (item[0], item[0]), cursor, limit)
        return WebhooksResponse(webhooks=[_body(name, doc) for name, doc in page.items], nextCursor=page.next_cursor)

    def delete(self, uid: str, name: str) -> bool:
        return self.repo.delete(uid, name)

    def delivery_log(self, uid: str, name: str, limit: int = MAX_DELIVERIES_LISTED, cursor: str | None = None
                     ) -> DeliveriesResponse:
        """One page of the deliveries listed under the webhook, newest first (a run's own URL: under
        ``default``)."""
        page = self.deliveries.page_for_target(uid, name, limit, cursor)
        return DeliveriesResponse(name=name, deliveries=[_delivery_body(d) for d in page.items],
                                  nextCursor=page.next_cursor)

    def check_run_webhook(self, uid: str, url: str) -> None:
        """A run's own ``webhook`` URL: public, and signed by the caller's ``default`` webhook."""
        self._check_url(url)
        if self.repo.get(uid, DEFAULT_WEBHOOK) is None:
            raise InvalidInput("a run's webhook is signed with the secret of your webhook named "
                               f"{DEFAULT_WEBHOOK!r}: PUT /api/agent/webhooks/{DEFAULT_WEBHOOK} first",
                               code="WEBHOOK_SECRET_MISSING")

    # ---- deliveries -----------------------------------------------------------------------------
    def secret_of(self, record: DeliveryRecord) -> str | None:
        doc = self.repo.get(record.uid, record.secret_name)
        if doc is None:
            return None
        try:
            secret: str = self._vault().open_text(WebhooksRepo.location(record.uid, record.secret_name), doc, LABEL)
        except Exception:
            return None
        return secret

    def deliverer(self) -> Deliverer:
        allow = self.services.settings.mcp_allow_private_urls
        return Deliverer(self.deliveries, self.services.outbox, self.secret_of,
                         check_url=None if allow else self._check_url, headers_of=self._push_headers)

    def _push_headers(self, record: DeliveryRecord) -> dict[str, str] | None:
        """An A2A push notification's sealed headers (its module is loaded only for one)."""
        from shared.agent.a2a_push import headers_of

        return headers_of(self.services.runs.store, self._vault)(record)

    def announce(self, ctx: RunContext, event_type: RunEventType, result: RunResult | None) -> list[str]:
        """Record (in the run's next commit) one delivery of ``event_type`` per subscribed webhook
        of the run's owner and one to the run's own URL; the ids to publish after the commit."""
        run = ctx.run
        own = [(DEFAULT_WEBHOOK, run.webhook, DEFAULT_WEBHOOK)] if run.webhook else []
        writes, ids = announced(self.services.runs.store, self.services.outbox, self.services.new_id, run.uid,
                                event_type, {"runId": run.run_id, "threadId": run.thread_id,
                                             "status": event_type.removeprefix("run."),
                                             "result": result.to_doc() if result is not None else None},
                                subject=run.run_id, extra=own,
                                stamped=None if ctx.stamps is None else (self.services.stamped, ctx.stamps))
        ctx.write(*writes)
        return ids
