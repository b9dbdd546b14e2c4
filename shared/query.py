"""Query parameters, read exactly as the OpenAPI document states them (400 ``INVALID_QUERY``
naming the parameter otherwise). Every route with query parameters uses these, so ``after``,
``limit`` and ``follow`` mean the same on runs and sessions.

``int()`` alone would also take ``" 5"``, ``"5_0"`` or non-ASCII digits (``"\\u0665"``, and ``"\\u00b2"``, which
``str.isdigit`` accepts but ``int`` refuses: a 500); a boolean that is neither true nor false used
to be a silent false; a parameter given twice is refused rather than guessed at.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from shared.errors import InvalidInput
from shared.wire import MAX_INT64


class Args(Protocol):
    """What a request's query string offers (``werkzeug``'s ``MultiDict``)."""

    def getlist(self, key: str) -> list[str]: ...

    def __iter__(self) -> Iterator[str]: ...


def _invalid(name: str, message: str) -> InvalidInput:
    return InvalidInput(f"query parameter {name} {message}", code="INVALID_QUERY", details={"field": name})


def one_arg(args: Args, name: str) -> str | None:
    """The parameter's value (``None`` when absent); given twice it is a 400."""
    values = args.getlist(name)
    if len(values) > 1:
        raise _invalid(name, f"is given {len(values)} times")
    return values[0] if values else None


def int_arg(args: Args, name: str, *, default: int, minimum: int = 0, maximum: int = MAX_INT64) -> int:
    """An integer in ASCII digits within ``minimum..maximum`` (absent: ``default``)."""
    raw = one_arg(args, name)
    if raw is None:
        return default
    digits = raw[1:] if raw.startswith("-") else raw
    if not (digits.isascii() and digits.isdigit()):
        raise _invalid(name, f"must be an integer from {minimum} to {maximum}")
    value = int(raw)
    if value < minimum:
        raise _invalid(name, f"must be >= {minimum}")
    if value > maximum:
        raise _invalid(name, f"must be <= {maximum}")
    return value


def bool_arg(args: Args, name: str) -> bool:
    """``true``/``1`` or ``false``/``0``, any case (absent: false)."""
    raw = one_arg(args, name)
    if raw is None:
        return False
    value = raw.lower()
    if value not in ("true", "1", "false", "0"):
        raise _invalid(name, "must be true or false")
    return value in ("true", "1")


def single_values(args: Args) -> dict[str, str]:
    """Every parameter given, each at most once (a repeated one is a 400)."""
    return {name: value for name in args if (value := one_arg(args, name)) is not None}


UNTIL = ("stop", "end")


def until_end(args: Args) -> bool:
    """``until``: ``stop`` (default: a follow ends when the run stops, also at a pause for a
    decision) or ``end`` (a follow goes on through pauses until the run ends)."""
    raw = one_arg(args, "until")
    if raw is None or raw == "stop":
        return False
    if raw != "end":
        raise _invalid("until", f"must be one of {', '.join(UNTIL)}")
    return True


def resume_after(args: Args, last_event_id: str | None) -> int:
    """Where a read of an event log starts: after the ``seq`` in the ``Last-Event-ID`` header (what an
    ``EventSource`` sends when it reconnects, so it wins), else in ``lastEventId`` (for clients that
    cannot set headers), else ``after`` (default 0). ``lastEventId`` and ``after`` together are a 400:
    they say the same thing."""
    if last_event_id is not None and last_event_id.strip():
        raw = last_event_id.strip()
        if not (raw.isascii() and raw.isdigit()) or int(raw) > MAX_INT64:
            raise InvalidInput("header Last-Event-ID must be the seq of an event (an integer >= 0)",
                               code="INVALID_LAST_EVENT_ID", details={"field": "Last-Event-ID"})
        return int(raw)
    if one_arg(args, "lastEventId") is not None:
        if one_arg(args, "after") is not None:
            raise _invalid("lastEventId", "and after are both given; give one")
        return int_arg(args, "lastEventId", default=0)
    return int_arg(args, "after", default=0)
