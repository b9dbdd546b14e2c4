"""The Google Calendar tools: ``calendar_search`` (read-only), ``calendar_event_create`` and
``calendar_event_update`` (side effects). A create asks for an event id derived from its action id,
so a repeat after a crash finds that id taken and answers the existing event (nobody is invited
twice): it is idempotent. An update is not (attendees would be told twice), so a crash inside one
leaves its outcome ``unknown``.

Arguments are checked when the call is planned, before any approval is asked for: times must be
ISO 8601 date-times, the end after the start, time zones IANA names, attendees email addresses.
Previews show title, time range (with its zone) and attendees, never JSON; an update's preview
names each changed field in words (it does no I/O, so it cannot show the event's current title).
The Calendar adapter (and ``googleapiclient``) is imported only when one of these tools runs.
"""

from __future__ import annotations

import functools
from datetime import UTC, datetime, tzinfo
from typing import TYPE_CHECKING, Any, ClassVar
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, GetCoreSchemaHandler
from pydantic_core import core_schema

from shared.connectors import require_connectors
from shared.errors import ToolError
from shared.formats import is_email
from shared.tools.context import ToolContext
from shared.tools.registry import ToolRegistry

if TYPE_CHECKING:
    from shared.connectors.calendar import CalendarClient, CalendarEvent

CALENDAR_TIMEOUT_S = 30.0
"""Socket timeout of a Calendar request, lowered to the invocation's time left."""
MAX_TITLE_CHARS = 300
MAX_ATTENDEES = 100
PREVIEW_TEXT_CHARS = 240


def _zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown time zone {name!r}: use an IANA name such as 'Europe/Paris'") from None


def _parse(value: str) -> datetime:
    text = value.strip()
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"{value!r} is not an ISO 8601 date-time such as 2026-03-02T10:00") from None
    if len(text) <= 10:
        raise ValueError(f"{value!r} has no time of day; give a date-time such as {text}T09:00")
    return parsed


class TimeZoneName(str):
    """An IANA time zone name (checked with zoneinfo)."""

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        def check(value: str) -> str:
            _zone(value.strip())
            return value.strip()
        return core_schema.no_info_after_validator_function(check, core_schema.str_schema())


class DateTimeText(str):
    """An ISO 8601 date-time, with or without an offset."""

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        def check(value: str) -> str:
            _parse(value)
            return value.strip()
        return core_schema.no_info_after_validator_function(check, core_schema.str_schema())


def _require_zone(info: core_schema.ValidationInfo) -> None:
    # ``timezone`` is declared before the times it qualifies, so it is in ``info.data`` here (None
    # when not given; absent when it failed its own check, which then reports itself).
    if "timezone" in info.data and info.data["timezone"] is None:
        raise ValueError("needs timezone (the IANA time zone of the event, such as Europe/Paris)")


class ZonedDateTime(str):
    """An ISO 8601 date-time that needs the ``timezone`` argument (declared before it)."""

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        def check(value: str, info: core_schema.ValidationInfo) -> str:
            _parse(value)
            _require_zone(info)
            return value.strip()
        return core_schema.with_info_after_validator_function(check, core_schema.str_schema())


class _LaterThan(str):
    """A date-time that must come after the (already validated) field named ``after``."""

    after: ClassVar[str]
    needs_zone: ClassVar[bool] = False

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        def check(value: str, info: core_schema.ValidationInfo) -> str:
            end = _parse(value)
            if cls.needs_zone:
                _require_zone(info)
            earlier = info.data.get(cls.after)
            if isinstance(earlier, str):
                start = _parse(earlier)
                # Naive and aware values cannot be compared here; the tool checks them once zoned.
                if (start.tzinfo is None) == (end.tzinfo is None) and end <= start:
                    raise ValueError(f"must be after {cls.after} ({earlier})")
            return value.strip()
        return core_schema.with_info_after_validator_function(check, core_schema.str_schema())


class EventEnd(_LaterThan):
    after = "start"


class ZonedEventEnd(_LaterThan):
    """An event's new end: after ``start`` and qualified by ``timezone`` (calendar_event_update)."""

    after = "start"
    needs_zone = True


class RangeEnd(_LaterThan):
    after = "time_min"


class EmailAddress(str):
    """One email address (``name@example.com``; no display name)."""

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        def check(value: str) -> str:
            address = value.strip()
            if not is_email(address):
                raise ValueError(f"{value!r} is not an email address")
            return address
        return core_schema.no_info_after_validator_function(check, core_schema.str_schema())


def _zoned(value: str, zone: tzinfo) -> datetime:
    parsed = _parse(value)
    return parsed.replace(tzinfo=zone) if parsed.tzinfo is None else parsed.astimezone(zone)


def _span(start: str | None, end: str | None, tz: str | None) -> str:
    """A human-readable time range such as ``Mon 2 Mar 2026, 10:00-11:00 (Europe/Paris)``."""
    zone: tzinfo = _zone(tz) if tz else UTC
    label = tz or "UTC"
    s = _zoned(start, zone) if start else None
    e = _zoned(end, zone) if end else None
    day = "%a %-d %b %Y"
    if s and e:
        if s.date() == e.date():
            return f"{s.strftime(day)}, {s:%H:%M}-{e:%H:%M} ({label})"
        return f"{s.strftime(day)} {s:%H:%M} to {e.strftime(day)} {e:%H:%M} ({label})"
    if s:
        return f"starts {s.strftime(day)} {s:%H:%M} ({label})"
    assert e is not None
    return f"ends {e.strftime(day)} {e:%H:%M} ({label})"


def _people(attendees: list[str] | None) -> str:
    if not attendees:
        return "no attendees"
    shown = ", ".join(attendees[:10])
    more = f" and {len(attendees) - 10} more" if len(attendees) > 10 else ""
    return f"attendees {shown}{more} (they get an invitation)"


def _in_calendar(calendar_id: str) -> str:
    return "" if calendar_id == "primary" else f" in calendar {calendar_id}"


def _one_line(text: str, limit: int = PREVIEW_TEXT_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit].rstrip() + " …"


def _create_preview(args: BaseModel) -> str:
    a: Any = args
    where = f" at {a.location}" if a.location else ""
    span = _span(a.start, a.end, a.timezone)
    return (f'Create calendar event "{a.title[:120]}"{_in_calendar(a.calendar_id)}: {span}{where}; '
            f"{_people(a.attendees)}")


def _update_preview(args: BaseModel) -> str:
    """One line per changed field, in words; what is not named stays as it is."""
    a: Any = args
    lines = [f"Update calendar event {a.event_id}{_in_calendar(a.calendar_id)} (attendees, if any, are told "
             "about the change)"]
    if a.title is not None:
        lines.append(f'Title: "{_one_line(a.title, 120)}"')
    if a.start is not None and a.end is not None:
        lines.append(f"Time: {_span(a.start, a.end, a.timezone)}")
    elif a.start is not None:
        lines.append(f"Start: {_span(a.start, None, a.timezone).removeprefix('starts ')} (the end is unchanged)")
    elif a.end is not None:
        lines.append(f"End: {_span(None, a.end, a.timezone).removeprefix('ends ')} (the start is unchanged)")
    if a.attendees is not None:
        listed = ", ".join(a.attendees[:10]) + (f" and {len(a.attendees) - 10} more" if len(a.attendees) > 10
                                                 else "")
        lines.append(f"Attendees (replacing the current list): {listed}" if a.attendees
                     else "Attendees: none (every attendee is removed)")
    if a.location is not None:
        lines.append(f'Location: "{_one_line(a.location, 120)}"' if a.location.strip() else "Location: removed")
    if a.description is not None:
        lines.append(f"Description: {_one_line(a.description)}" if a.description.strip()
                     else "Description: removed")
    if len(lines) == 1:
        lines.append("(no changes given: the update will be refused)")
    return "\n".join(lines)


def _client(ctx: ToolContext) -> CalendarClient:
    return require_connectors(ctx.connectors).calendar(
        ctx.uid, timeout_s=ctx.call_budget("Google Calendar", CALENDAR_TIMEOUT_S), deadline=ctx.deadline)


def _event_out(event: CalendarEvent) -> dict[str, Any]:
    out: dict[str, Any] = {"id": event.id, "summary": event.summary, "start": event.start, "end": event.end,
                           "timezone": event.timezone, "attendees": event.attendees}
    for key, value in (("location", event.location), ("description", event.description),
                       ("htmlLink", event.html_link)):
        if value:
            out[key] = value
    if event.notes:
        out["notes"] = event.notes
    return out


def _title(title: str) -> str:
    text = title.strip()
    if not text:
        raise ToolError("title must not be empty")
    return text[:MAX_TITLE_CHARS]


def register(registry: ToolRegistry) -> None:
    tool = functools.partial(registry.tool, connector="google")  # every tool here acts through it

    @tool(side_effect=False)
    def calendar_search(ctx: ToolContext, time_min: DateTimeText | None = None, time_max: RangeEnd | None = None,
                        query: str | None = None, timezone: TimeZoneName | None = None,
                        max_results: int = 25, calendar_id: str = "primary") -> dict[str, Any]:
        """Find events in the user's Google Calendar, earliest first.

        Args:
            time_min: Start of the range, ISO 8601 date-time (default: now).
            time_max: End of the range, ISO 8601 date-time (default: no end).
            query: Words the events must contain (title, description, location, attendees).
            timezone: IANA time zone for times given without an offset (default UTC).
            max_results: Maximum number of events (1-50).
            calendar_id: Calendar to search; "primary" is the user's own calendar.
        """
        zone: tzinfo = _zone(timezone) if timezone else UTC
        lo = _zoned(time_min, zone) if time_min else datetime.now(UTC)
        hi = _zoned(time_max, zone) if time_max else None
        if hi is not None and hi <= lo:
            raise ToolError("time_max must be after time_min")
        with _client(ctx) as client:
            page = client.search(calendar_id=calendar_id, time_min=lo, time_max=hi, query=query or None,
                                 max_results=max_results)
        out: dict[str, Any] = {"events": [_event_out(e) for e in page.events], "count": len(page.events),
                               "calendarTimezone": page.calendar_timezone}
        if page.more:
            out["note"] = (f"more events match; only the first {len(page.events)} are shown. "
                           "Narrow the time range or the query to see the rest.")
        return out

    @tool(side_effect=True, idempotent=True, preview=_create_preview)
    def calendar_event_create(ctx: ToolContext, title: str, start: DateTimeText, end: EventEnd,
                              timezone: TimeZoneName, attendees: list[EmailAddress] | None = None,
                              description: str | None = None, location: str | None = None,
                              calendar_id: str = "primary") -> dict[str, Any]:
        """Create an event in the user's Google Calendar; attendees receive an invitation.

        Args:
            title: The event title.
            start: Start, ISO 8601 date-time such as 2026-03-02T10:00 (local time in timezone).
            end: End, ISO 8601 date-time, after start.
            timezone: IANA time zone of the event, such as Europe/Paris.
            attendees: Email addresses to invite.
            description: Optional notes for the event.
            location: Optional place or meeting link.
            calendar_id: Calendar to add to; "primary" is the user's own calendar.
        """
        from shared.connectors.calendar import EventDraft, event_id_for  # loads googleapiclient

        zone = _zone(timezone)
        begin, finish = _zoned(start, zone), _zoned(end, zone)
        if finish <= begin:
            raise ToolError("end must be after start")
        if len(attendees or []) > MAX_ATTENDEES:
            raise ToolError(f"at most {MAX_ATTENDEES} attendees")
        draft = EventDraft(summary=_title(title), start=begin, end=finish, time_zone=timezone,
                           attendees=list(dict.fromkeys(attendees or [])), description=description or None,
                           location=location or None)
        with _client(ctx) as client:
            # The event id derives from the action id: a repeat after a crash finds it and invites nobody twice.
            event = client.create(draft, calendar_id=calendar_id, event_id=event_id_for(ctx.action_id))
        return {"created": True, "event": _event_out(event)}

    @tool(side_effect=True, idempotent=False, preview=_update_preview)
    def calendar_event_update(ctx: ToolContext, event_id: str, title: str | None = None,
                              timezone: TimeZoneName | None = None, start: ZonedDateTime | None = None,
                              end: ZonedEventEnd | None = None, attendees: list[EmailAddress] | None = None,
                              description: str | None = None, location: str | None = None,
                              calendar_id: str = "primary") -> dict[str, Any]:
        """Change an existing event in the user's Google Calendar; only the given fields change.

        Args:
            event_id: The event id (from calendar_search).
            title: New title.
            timezone: IANA time zone for start and end, such as Europe/Paris (required with either).
            start: New start, ISO 8601 date-time (needs timezone).
            end: New end, ISO 8601 date-time (needs timezone).
            attendees: The complete new attendee list (replaces the current one).
            description: New description.
            location: New location.
            calendar_id: Calendar holding the event; "primary" is the user's own calendar.
        """
        from shared.connectors.calendar import EventChanges

        if not event_id.strip():
            raise ToolError("event_id must not be empty")
        if (start is not None or end is not None) and timezone is None:
            raise ToolError("timezone is required when changing start or end")
        zone = _zone(timezone) if timezone else UTC
        begin = _zoned(start, zone) if start else None
        finish = _zoned(end, zone) if end else None
        if begin and finish and finish <= begin:
            raise ToolError("end must be after start")
        changes = EventChanges(summary=_title(title) if title is not None else None, start=begin, end=finish,
                               time_zone=timezone, description=description, location=location,
                               attendees=list(dict.fromkeys(attendees)) if attendees is not None else None)
        if not changes.model_dump(exclude_none=True, exclude={"time_zone"}):
            raise ToolError("nothing to change: give at least one field")
        with _client(ctx) as client:
            event = client.update(event_id.strip(), changes, calendar_id=calendar_id)
        return {"updated": True, "event": _event_out(event)}


__all__ = ["DateTimeText", "EmailAddress", "EventEnd", "RangeEnd", "TimeZoneName", "ZonedDateTime", "ZonedEventEnd",
           "register"]
