"""The parameters of ``GET /api/agent/usage``, validated (400 naming the field)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime

from shared.errors import InvalidInput
from shared.formats import full_date, rfc3339_datetime
from shared.usage.views import GROUP_BY, GroupBy

MAX_RANGE_DAYS = 93
DEFAULT_RANGE_DAYS = 30
DAY_S = 86400.0
PARAMS = ("from", "to", "groupBy")


@dataclass(frozen=True)
class UsageParams:
    start: float
    end: float
    group_by: GroupBy


def _instant(name: str, raw: str, *, end_of_day: bool) -> float:
    """RFC 3339 ``date-time`` (with its zone) or ``full-date`` (UTC), as the document's formats say."""
    day = full_date(raw)
    if day is not None:
        at = datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp()
        return at + DAY_S if end_of_day else at
    parsed = rfc3339_datetime(raw)
    if parsed is None:
        raise InvalidInput(f"query parameter {name} must be an RFC 3339 timestamp with a time zone (Z or +hh:mm) "
                         "or a date (YYYY-MM-DD)", code="INVALID_QUERY", details={"field": name})
    return parsed.timestamp()


def parse_usage_params(args: dict[str, str], *, now: float | None = None) -> UsageParams:
    unknown = sorted(set(args) - set(PARAMS))
    if unknown:
        raise InvalidInput(f"unknown query parameter {unknown[0]!r}; expected from, to, groupBy",
                         code="INVALID_QUERY", details={"field": unknown[0]})
    at = time.time() if now is None else now
    # Given but empty is not absent: the document's formats refuse "" (a 400, not the default).
    end = _instant("to", args["to"], end_of_day=True) if "to" in args else at
    start = _instant("from", args["from"], end_of_day=False) if "from" in args else end - DEFAULT_RANGE_DAYS * DAY_S
    if start >= end:
        raise InvalidInput("query parameter from must be before to", code="INVALID_QUERY", details={"field": "from"})
    if end - start > MAX_RANGE_DAYS * DAY_S:
        raise InvalidInput(f"the range from..to is at most {MAX_RANGE_DAYS} days", code="INVALID_QUERY",
                         details={"field": "from"})
    group_by = args.get("groupBy", "operationType")
    if group_by not in GROUP_BY:
        raise InvalidInput(f"query parameter groupBy must be one of {', '.join(GROUP_BY)}", code="INVALID_QUERY",
                         details={"field": "groupBy"})
    return UsageParams(start=start, end=end, group_by=group_by)
