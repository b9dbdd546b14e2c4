"""Google Calendar v3 adapter: the only module that talks to Calendar (``googleapiclient`` through
``google_http``).

The service is built from the static discovery document shipped with the library (no network at
build time); ``base_url`` overrides the endpoint (a local fake in tests). Every time sent carries
an IANA time zone, results are bounded, and API errors become our errors: 404 → a clear
``ToolError``, 401 → ``ConnectorError`` (reconnect), 429 → retried with backoff, then a clear error.

```python
with CalendarClient(credentials) as client:    # google.oauth2.credentials.Credentials
    page = client.search(time_min=..., time_max=..., query="standup", max_results=10)
    event = client.create(EventDraft(summary="1:1", start=..., end=..., time_zone="Europe/Paris"))
```
"""

from __future__ import annotations

import base64
import hashlib
from datetime import datetime
from types import TracebackType
from typing import Any
from zoneinfo import ZoneInfo

from google.auth.credentials import Credentials
from pydantic import BaseModel, Field

from shared.connectors.google_http import HTTP_TIMEOUT_S, AlreadyExists, RetryPolicy, build_service, execute

SERVICE_PATH = "calendar/v3/"
MAX_RESULTS = 50
MAX_ATTENDEES_SHOWN = 25
MAX_DESCRIPTION_CHARS = 500


def event_id_for(key: str) -> str:
    """A Calendar event id derived from ``key`` (an action id): base32hex as the API requires, so the
    same call always asks for the same id."""
    digest = hashlib.sha256(key.encode()).digest()[:20]
    return "ar" + base64.b32hexencode(digest).decode().lower()


class CalendarEvent(BaseModel):
    """An event as the tools return it (start/end: RFC 3339 dateTime, or a date for all-day events)."""

    id: str
    summary: str = ""
    start: str = ""
    end: str = ""
    timezone: str | None = None
    attendees: list[str] = Field(default_factory=list)
    location: str | None = None
    description: str | None = None
    html_link: str | None = None
    notes: list[str] = Field(default_factory=list)
    """Why something was trimmed (long description, long attendee list)."""


class EventPage(BaseModel):
    events: list[CalendarEvent]
    calendar_timezone: str | None = None
    more: bool = False
    """True when the calendar holds more matching events than were returned."""


class EventDraft(BaseModel):
    """A new event. ``start``/``end`` are aware datetimes; ``time_zone`` is an IANA name."""

    summary: str
    start: datetime
    end: datetime
    time_zone: str
    attendees: list[str] = Field(default_factory=list)
    description: str | None = None
    location: str | None = None


class EventChanges(BaseModel):
    """Fields to change (None: unchanged). ``time_zone`` is required with ``start`` or ``end``."""

    summary: str | None = None
    start: datetime | None = None
    end: datetime | None = None
    time_zone: str | None = None
    attendees: list[str] | None = None
    description: str | None = None
    location: str | None = None


def _when(value: datetime, tz: str) -> dict[str, str]:
    # Both the offset and the zone name: the offset pins the instant, the zone keeps recurring
    # and displayed times right across DST changes.
    local = value.astimezone(ZoneInfo(tz))
    return {"dateTime": local.isoformat(), "timeZone": tz}


def _rfc3339(value: datetime) -> str:
    if value.tzinfo is None:
        raise ValueError("time range bounds must be timezone-aware")
    return value.isoformat()


def _event(raw: dict[str, Any], calendar_tz: str | None) -> CalendarEvent:
    start, end = raw.get("start") or {}, raw.get("end") or {}
    notes: list[str] = []
    emails = [str(a.get("email", "")) for a in raw.get("attendees") or [] if a.get("email")]
    if len(emails) > MAX_ATTENDEES_SHOWN:
        notes.append(f"{len(emails)} attendees; showing the first {MAX_ATTENDEES_SHOWN}")
        emails = emails[:MAX_ATTENDEES_SHOWN]
    description = raw.get("description")
    if isinstance(description, str) and len(description) > MAX_DESCRIPTION_CHARS:
        notes.append(f"the description has {len(description)} characters; showing the start")
        description = description[:MAX_DESCRIPTION_CHARS] + "…"
    return CalendarEvent(
        id=str(raw.get("id", "")), summary=str(raw.get("summary", "")),
        start=str(start.get("dateTime") or start.get("date") or ""),
        end=str(end.get("dateTime") or end.get("date") or ""),
        timezone=start.get("timeZone") or calendar_tz, attendees=emails, location=raw.get("location"),
        description=description, html_link=raw.get("htmlLink"), notes=notes)


class CalendarClient:
    """Calendar v3 for one user's credentials; close it (or use ``with``) to release its connections.

    Args:
        credentials: The user's OAuth credentials (refreshed by google-auth when expired).
        base_url: Root URL of the API (default Google's); the client appends ``calendar/v3/``.
        retry: Attempts and backoff when rate limited (tests pass a recording ``sleep``).
        timeout_s: Socket timeout of every request.
    """

    def __init__(self, credentials: Credentials, *, base_url: str | None = None, retry: RetryPolicy | None = None,
                 timeout_s: float = HTTP_TIMEOUT_S) -> None:
        self._service = build_service("calendar", "v3", credentials, base_url=base_url, service_path=SERVICE_PATH,
                                      timeout_s=timeout_s)
        self._retry = retry

    def close(self) -> None:
        """Close the HTTP connections (httplib2 keeps them open otherwise)."""
        self._service.close()

    def __enter__(self) -> CalendarClient:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def _execute(self, request: Any, *, what: str, idempotent: bool) -> dict[str, Any]:
        return execute(request, service="Google Calendar", what=what, idempotent=idempotent, retry=self._retry)

    def search(self, *, calendar_id: str = "primary", time_min: datetime | None = None,
               time_max: datetime | None = None, query: str | None = None,
               max_results: int = 25) -> EventPage:
        """Events overlapping ``[time_min, time_max)`` matching ``query``, earliest first, at most
        ``max_results`` (1..50); ``more`` says whether the calendar holds further matches."""
        size = max(1, min(MAX_RESULTS, max_results))
        params: dict[str, Any] = {"calendarId": calendar_id, "singleEvents": True, "orderBy": "startTime",
                                  "maxResults": size}
        if time_min is not None:
            params["timeMin"] = _rfc3339(time_min)
        if time_max is not None:
            params["timeMax"] = _rfc3339(time_max)
        if query:
            params["q"] = query
        body = self._execute(self._service.events().list(**params), what=f"calendar {calendar_id!r}",
                             idempotent=True)
        tz = body.get("timeZone")
        events = [_event(item, tz) for item in (body.get("items") or [])[:size]]
        return EventPage(events=events, calendar_timezone=tz, more=bool(body.get("nextPageToken")))

    def create(self, draft: EventDraft, *, calendar_id: str = "primary", event_id: str | None = None
               ) -> CalendarEvent:
        """Insert ``draft``; attendees get the invitation email (``sendUpdates=all``).

        With ``event_id`` (see :func:`event_id_for`) the insert is idempotent: a repeat finds the id
        taken (409) and answers the existing event, so nobody is invited twice.
        """
        body: dict[str, Any] = {"summary": draft.summary, "start": _when(draft.start, draft.time_zone),
                                "end": _when(draft.end, draft.time_zone)}
        if event_id is not None:
            body["id"] = event_id
        if draft.attendees:
            body["attendees"] = [{"email": a} for a in draft.attendees]
        if draft.description:
            body["description"] = draft.description
        if draft.location:
            body["location"] = draft.location
        request = self._service.events().insert(calendarId=calendar_id, body=body,
                                                sendUpdates="all" if draft.attendees else "none")
        # Without an id a repeated insert makes a second event, so only an insert with one is retried.
        try:
            raw = self._execute(request, what=f"calendar {calendar_id!r}", idempotent=event_id is not None)
        except AlreadyExists:
            if event_id is None:
                raise
            raw = self._execute(self._service.events().get(calendarId=calendar_id, eventId=event_id),
                                what=f"event {event_id!r} in calendar {calendar_id!r}", idempotent=True)
        return _event(raw, draft.time_zone)

    def update(self, event_id: str, changes: EventChanges, *, calendar_id: str = "primary") -> CalendarEvent:
        """PATCH the fields named in ``changes``; attendees are told about the change."""
        body: dict[str, Any] = {}
        if changes.summary is not None:
            body["summary"] = changes.summary
        for key, value in (("start", changes.start), ("end", changes.end)):
            if value is not None:
                if changes.time_zone is None:
                    raise ValueError(f"time_zone is required to change {key}")
                body[key] = _when(value, changes.time_zone)
        if changes.attendees is not None:
            body["attendees"] = [{"email": a} for a in changes.attendees]
        if changes.description is not None:
            body["description"] = changes.description
        if changes.location is not None:
            body["location"] = changes.location
        request = self._service.events().patch(calendarId=calendar_id, eventId=event_id, body=body,
                                               sendUpdates="all")
        # Not retried on 5xx: attendees would be notified twice.
        raw = self._execute(request, what=f"event {event_id!r} in calendar {calendar_id!r}", idempotent=False)
        return _event(raw, changes.time_zone)
