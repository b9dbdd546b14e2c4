"""The dispatcher seam: how a message reaches the handler of its kind in another invocation.

- ``PubSubDispatcher`` publishes to the resume topic (production, and tests via the emulator);
  a push subscription / Eventarc trigger delivers it to the ``resume`` function as a CloudEvent.
- ``InlineDispatcher`` hands it to a delivery function on a background thread (``make dev``).
- ``RecordingDispatcher`` only records messages (tests that deliver them by hand).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from shared.durable.messages import WorkMessage

log = logging.getLogger("agent_runtime.dispatch")


class Dispatcher(Protocol):
    def publish(self, message: WorkMessage) -> None:
        """Hand the message over for delivery; raises if it could not be handed over."""
        ...


class RecordingDispatcher:
    def __init__(self) -> None:
        self.messages: list[WorkMessage] = []
        self._lock = threading.Lock()

    def publish(self, message: WorkMessage) -> None:
        with self._lock:
            self.messages.append(message)

    def take(self) -> list[WorkMessage]:
        with self._lock:
            out, self.messages = self.messages, []
        return out


INLINE_WORKERS = 32
"""Deliveries the inline dispatcher runs at once. A delivery (a resumed run) mostly waits on the
model, as a live stream's worker does, and production runs each in its own ``resume`` invocation:
with 2, ``make load`` (50 users approving at once) queued every resume behind the others."""


class InlineDispatcher:
    """Delivers in this process on a worker pool (local development)."""

    def __init__(self, deliver: Callable[[WorkMessage], None], *, workers: int = INLINE_WORKERS) -> None:
        self._deliver = deliver
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="deliver")

    def publish(self, message: WorkMessage) -> None:
        def work() -> None:
            try:
                self._deliver(message)
            except Exception:
                log.exception("inline delivery failed",
                              extra={"fields": {"kind": message.kind, "unitId": message.unitId}})

        self._pool.submit(work)

    def close(self) -> None:
        """Wait for the deliveries under way (tests end their store after this)."""
        self._pool.shutdown(wait=True)


class PubSubDispatcher:
    """Publishes to the topic with google-cloud-pubsub (client created once per process)."""

    def __init__(self, project: str, topic: str, *, timeout_s: float = 10.0) -> None:
        from google.cloud import pubsub_v1  # type: ignore[attr-defined]

        self._client: Any = pubsub_v1.PublisherClient()
        self._topic = self._client.topic_path(project, topic)
        self._timeout_s = timeout_s

    def publish(self, message: WorkMessage) -> None:
        attributes = {name: value for name, value in (("traceparent", message.traceparent),
                                                      ("paused", message.paused)) if value}
        future = self._client.publish(self._topic, message.encode(), kind=message.kind, **attributes)
        future.result(timeout=self._timeout_s)
