"""A frame as a host saw it on the agent's connection: what the hosts' ``transcripts`` keep (tests
read the agent's behaviour on the wire from them). Shared by the reference and the alternative
host; it is a record, not protocol logic."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Literal


@dataclass(frozen=True)
class Frame:
    """One frame on the agent's connection (``in``: from the agent)."""

    direction: Literal["in", "out"]
    text: str | bytes
    ts: float = field(default_factory=time.monotonic)

    def json(self) -> dict[str, Any] | None:
        if isinstance(self.text, bytes):
            return None
        try:
            data = json.loads(self.text)
        except json.JSONDecodeError:
            return None
        return data if isinstance(data, dict) else None
