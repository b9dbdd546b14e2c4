"""Signed HTTP deliveries (``deliveries/{deliveryId}``) and their attempts (``shared/delivery``)."""

from __future__ import annotations

import logging
from typing import Literal

from pydantic import Field

from shared.state import paths
from shared.state.docstore import DocStore, Query, Write
from shared.state.pages import Page, as_records, read_page
from shared.state.record_base import SCHEMA_VERSION, Record, finite, now

log = logging.getLogger("agent_runtime.state")

DeliveryStatus = Literal["pending", "retrying", "delivered", "failed"]
MAX_ATTEMPTS_LOGGED = 10


class DeliveryAttempt(Record):
    at: float
    status_code: int | None = None
    error: str | None = None


class DeliveryRecord(Record):
    delivery_id: str
    """Also the ``webhook-id`` of every attempt: a receiver de-duplicates by it."""
    uid: str
    target: str
    """Whose log lists it (a webhook's name)."""
    url: str
    event_type: str
    body: str
    """The JSON body, sent byte for byte on every attempt."""
    secret_name: str
    """The webhook whose secret signs it ("": not signed, e.g. an A2A push notification)."""
    headers: dict[str, str] = Field(default_factory=dict)
    """Headers of every attempt besides the signature."""
    headers_from: str | None = None
    """The document whose sealed secrets give more headers, read at each attempt (an A2A push
    notification's configuration: its token, its ``Authorization``); never copied here."""
    subject: str | None = None
    """What it is about (a run id)."""
    status: DeliveryStatus = "pending"
    attempts: int = 0
    next_attempt_at: float = 0.0
    log: list[DeliveryAttempt] = Field(default_factory=list)
    created_at: float = Field(default_factory=now)
    delivered_at: float | None = None
    schema_version: int = SCHEMA_VERSION


class DeliveriesRepo:
    def __init__(self, store: DocStore) -> None:
        self.store = store

    @staticmethod
    def create_write(record: DeliveryRecord) -> Write:
        return Write("create", paths.delivery(record.delivery_id), record.to_doc())

    def get(self, delivery_id: str) -> tuple[DeliveryRecord, str] | None:
        doc = self.store.get(paths.delivery(delivery_id))
        return None if doc is None else (DeliveryRecord.from_doc(doc.data, doc.path), doc.token)

    def save(self, record: DeliveryRecord, token: str) -> str:
        """Write ``record`` if unchanged since read with ``token`` (PreconditionFailed otherwise)."""
        record.log = record.log[-MAX_ATTEMPTS_LOGGED:]
        return self.store.commit([Write("set", paths.delivery(record.delivery_id), record.to_doc(),
                                        if_token=token)])[0]

    def due(self, status: DeliveryStatus, before: float, limit: int) -> list[str]:
        """Ids of deliveries in ``status`` whose next attempt is due before ``before``."""
        docs = self.store.query(Query(paths.deliveries(), where=(("status", status),), order_by="nextAttemptAt",
                                      limit=limit))
        # a value that is not a number (corrupt) is never due: the sweep goes on with the others
        return [d.id for d in docs if (at := finite(d.data.get("nextAttemptAt", 0))) is not None and at <= before]

    def page_for_target(self, uid: str, target: str, limit: int, cursor: str | None = None) -> Page[DeliveryRecord]:
        """One page of ``uid``'s deliveries listed under ``target``, newest first, after ``cursor``."""
        query = Query(paths.deliveries(), where=(("uid", uid), ("target", target)), order_by="createdAt",
                      descending=True)
        return read_page(self.store, query, cursor, limit, as_records(DeliveryRecord, log))
