"""``resume``: CloudEvent function triggered by the resume topic (Pub/Sub message published).

Malformed or unknown payloads are acknowledged and logged (never retried forever); a message for
a run that already ended is a no-op. Store outages raise, so Pub/Sub redelivers (bounded by the
subscription's dead-letter policy).
"""

from __future__ import annotations

import logging
from typing import Any

import functions_framework

from shared.agent.resume import handle_message
from shared.dispatch import decode_message
from shared.logs import log_context
from shared.runtime import get_runtime

log = logging.getLogger("agent_runtime.resume")


@functions_framework.cloud_event
def resume(cloud_event: Any) -> None:
    try:
        message = decode_message(cloud_event.data)
    except ValueError as exc:
        log.warning("resume event ignored: %s", exc, extra={"fields": {"eventId": cloud_event.get("id")}})
        return
    rt = get_runtime()
    with log_context(runId=message.runId, uid=message.uid, eventId=cloud_event.get("id")):
        handle_message(rt.services, rt.dispatcher, message)
