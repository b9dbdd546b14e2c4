"""``resume``: CloudEvent function triggered by the resume topic (Pub/Sub message published).

Every message kind (``resume``, ``continue``, ``sweep``) is routed by the runtime's router.
Malformed messages, unknown kinds and newer schema versions are acknowledged and logged at ERROR
(never retried forever); a message for a unit that already ended is a no-op. Store outages raise,
so Pub/Sub redelivers (bounded by the subscription's dead-letter policy).
"""

from __future__ import annotations

from typing import Any

import functions_framework

from shared.logs import log_context
from shared.runtime import get_runtime


@functions_framework.cloud_event
def resume(cloud_event: Any) -> None:
    rt = get_runtime()
    with log_context(eventId=cloud_event.get("id")):
        rt.router.handle_pubsub(cloud_event.data, event_id=cloud_event.get("id"))
