"""Five-field cron expressions (minute hour day-of-month month day-of-week) and their next
occurrence in a time zone. Fields take ``*``, numbers, ranges ``a-b``, lists ``a,b`` and steps
``*/n`` or ``a-b/n``; day-of-week 0-7 (0 and 7 are Sunday). As in Vixie cron, when both day fields
are restricted a day matching either one matches. Local times that do not exist (a DST gap) are
skipped; a repeated hour (DST fold) fires once, at its first occurrence."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from shared.errors import InvalidInput

_BOUNDS = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 7))
_NAMES = ("minute", "hour", "day of month", "month", "day of week")
MAX_SEARCH_DAYS = 366 * 5


def _field(text: str, index: int) -> frozenset[int]:
    low, high = _BOUNDS[index]
    values: set[int] = set()
    for part in text.split(","):
        body, _, step_text = part.partition("/")
        try:
            step = int(step_text) if step_text else 1
            if body == "*":
                start, end = low, high
            elif "-" in body:
                a, b = body.split("-", 1)
                start, end = int(a), int(b)
            else:
                start = end = int(body)
                if step_text:
                    end = high
        except ValueError:
            raise InvalidInput(f"cron {_NAMES[index]} field {text!r} is not a number, range, list or step",
                               code="INVALID_CRON") from None
        if step < 1 or not low <= start <= end <= high:
            raise InvalidInput(f"cron {_NAMES[index]} field {text!r} is outside {low}-{high}", code="INVALID_CRON")
        values.update(range(start, end + 1, step))
    if index == 4 and 7 in values:
        values = (values - {7}) | {0}
    return frozenset(values)


@dataclass(frozen=True)
class Cron:
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]
    """0 = Sunday."""
    any_day: bool
    any_weekday: bool

    def day_matches(self, day: datetime) -> bool:
        if day.month not in self.months:
            return False
        dom = day.day in self.days
        dow = (day.isoweekday() % 7) in self.weekdays
        if self.any_day or self.any_weekday:
            return dom and dow
        return dom or dow


def parse_cron(expression: str) -> Cron:
    fields = expression.split()
    if len(fields) != 5:
        raise InvalidInput("cron must have five fields: minute hour day-of-month month day-of-week",
                           code="INVALID_CRON")
    minutes, hours, days, months, weekdays = (_field(f, i) for i, f in enumerate(fields))
    return Cron(minutes, hours, days, months, weekdays, any_day=fields[2] == "*", any_weekday=fields[4] == "*")


def zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise InvalidInput(f"unknown time zone {name[:64]!r} (an IANA name, e.g. Europe/Paris)",
                           code="INVALID_TIMEZONE") from None


def next_after(cron: Cron, tz: ZoneInfo, after: float) -> float:
    """The first occurrence strictly after ``after`` (epoch seconds), as epoch seconds."""
    start = datetime.fromtimestamp(after, tz).replace(second=0, microsecond=0) + timedelta(minutes=1)
    day = start.replace(hour=0, minute=0)
    for _ in range(MAX_SEARCH_DAYS):
        if cron.day_matches(day):
            for hour in sorted(cron.hours):
                for minute in sorted(cron.minutes):
                    local = datetime(day.year, day.month, day.day, hour, minute, tzinfo=tz)
                    if local < start:
                        continue
                    at = local.astimezone(UTC)
                    if at.astimezone(tz).replace(tzinfo=None) != local.replace(tzinfo=None):
                        continue  # a local time the DST change skipped
                    return at.timestamp()
        day = (day + timedelta(days=1)).replace(hour=0, minute=0)
    raise InvalidInput("the cron expression never fires", code="INVALID_CRON")
