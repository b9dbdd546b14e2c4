"""The work messages tests hand over by hand: every published one delivered in-process, or the one
published message as the Pub/Sub CloudEvent a function receives."""

from __future__ import annotations

import base64
from collections.abc import Callable

from cloudevents.conversion import to_structured
from cloudevents.http import CloudEvent

from shared.durable.dispatcher import RecordingDispatcher
from shared.durable.messages import WorkMessage
from shared.runtime import Runtime


def deliver(rt: Runtime, check: Callable[[WorkMessage], None] | None = None, *, copies: int = 1) -> int:
    """Deliver every published message, and those its handling publishes, until none is left (each
    one a function invocation; ``check`` sees each first; ``copies``: each delivered that many
    times, as Pub/Sub may); how many messages there were."""
    d = rt.dispatcher
    assert isinstance(d, RecordingDispatcher)
    n = 0
    while msgs := d.take():
        for m in msgs:
            if check is not None:
                check(m)
            for _ in range(copies):
                rt.router.handle(m)
            n += 1
    return n


def deliver_published(rt: Runtime, copies: int = 1) -> None:
    """Deliver the messages published so far (not those their handling publishes), each ``copies``
    times (duplicate deliveries)."""
    d = rt.dispatcher
    assert isinstance(d, RecordingDispatcher)
    for msg in d.take():
        for _ in range(copies):
            rt.router.handle(msg)


def pubsub_event(payload: bytes) -> tuple[dict[str, str], bytes]:
    """``payload`` as the structured CloudEvent Pub/Sub pushes to a function: (headers, body)."""
    event = CloudEvent({"type": "google.cloud.pubsub.topic.v1.messagePublished",
                        "source": "//pubsub.googleapis.com/projects/p/topics/agent-resume"},
                       {"message": {"data": base64.b64encode(payload).decode(), "messageId": "1"}})
    headers, body = to_structured(event)
    return dict(headers), body


def published_event(rt: Runtime) -> tuple[dict[str, str], bytes]:
    """The one message ``rt`` published (exactly one), as :func:`pubsub_event`."""
    dispatcher = rt.dispatcher
    assert isinstance(dispatcher, RecordingDispatcher)
    (msg,) = dispatcher.take()
    return pubsub_event(msg.encode())
