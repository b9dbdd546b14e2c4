"""The cold-start floor: a trivial HTTP function served by the same functions-framework CLI."""

from __future__ import annotations

from typing import Any


def hello(request: Any) -> str:
    return "ok"
