"""The dispatcher seam: how a decided approval reaches the ``resume`` function.

- ``PubSubDispatcher`` publishes to the resume topic (production, and tests via the emulator);
  a push subscription / Eventarc trigger delivers it to ``resume`` as a CloudEvent.
- ``InlineDispatcher`` runs resume on a background thread of this process (``make dev``).
- ``RecordingDispatcher`` only records messages (tests that deliver them by hand).
"""

from __future__ import annotations

import json
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from shared.runtime import Runtime

log = logging.getLogger("agent_runtime.dispatch")


class ResumeMessage(BaseModel):
    """The resume topic's message body (JSON)."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["resume", "sweep"] = "resume"
    runId: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_-]{1,128}$")
    uid: str | None = Field(default=None, max_length=128)
    approvalId: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_-]{1,128}$")

    def encode(self) -> bytes:
        return self.model_dump_json(exclude_none=True).encode()


class Dispatcher(Protocol):
    def publish(self, message: ResumeMessage) -> None:
        """Hand the message over for delivery; raises if it could not be handed over."""
        ...


class RecordingDispatcher:
    def __init__(self) -> None:
        self.messages: list[ResumeMessage] = []
        self._lock = threading.Lock()

    def publish(self, message: ResumeMessage) -> None:
        with self._lock:
            self.messages.append(message)

    def take(self) -> list[ResumeMessage]:
        with self._lock:
            out, self.messages = self.messages, []
        return out


class InlineDispatcher:
    """Runs resume in this process on a small worker pool (local development)."""

    def __init__(self, runtime: Runtime) -> None:
        self._runtime = runtime
        self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="resume")

    def publish(self, message: ResumeMessage) -> None:
        from shared.agent.resume import handle_message

        def work() -> None:
            try:
                handle_message(self._runtime.services, self._runtime.dispatcher, message)
            except Exception:
                log.exception("inline resume failed", extra={"fields": {"runId": message.runId}})

        self._pool.submit(work)


class PubSubDispatcher:
    """Publishes to the resume topic with google-cloud-pubsub (client created once per process)."""

    def __init__(self, project: str, topic: str, *, timeout_s: float = 10.0) -> None:
        from google.cloud import pubsub_v1  # type: ignore[attr-defined]

        self._client: Any = pubsub_v1.PublisherClient()
        self._topic = self._client.topic_path(project, topic)
        self._timeout_s = timeout_s

    def publish(self, message: ResumeMessage) -> None:
        future = self._client.publish(self._topic, message.encode(), kind=message.kind)
        future.result(timeout=self._timeout_s)


def create_dispatcher(runtime: Runtime) -> Dispatcher:
    s = runtime.settings
    if s.dispatcher == "pubsub":
        return PubSubDispatcher(s.google_cloud_project, s.resume_topic)
    if s.dispatcher == "inline":
        return InlineDispatcher(runtime)
    return RecordingDispatcher()


def decode_message(data: Any) -> ResumeMessage:
    """The ResumeMessage in a Pub/Sub CloudEvent's data; ValueError when malformed."""
    import base64
    import binascii

    if not isinstance(data, dict) or not isinstance(data.get("message"), dict):
        raise ValueError("CloudEvent data has no Pub/Sub message")
    raw = data["message"].get("data")
    if not isinstance(raw, str):
        raise ValueError("Pub/Sub message has no data")
    try:
        body = json.loads(base64.b64decode(raw, validate=True))
    except (binascii.Error, ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"Pub/Sub message data is not base64 JSON: {exc}") from None
    return ResumeMessage.model_validate(body)
