"""NDJSON framing of event streams: one compact JSON document per line (a leaf: chat runs, plan
sessions and the HTTP edge all frame their streams with it)."""

from __future__ import annotations

import json
from typing import Any


def ndjson(event: dict[str, Any]) -> bytes:
    return (json.dumps(event, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
