"""A local fake of the Google Calendar v3 REST API, for the real ``google-api-python-client``.

It serves the paths the client builds from the static discovery document when its endpoint is
overridden to ``fake.base_url``:

- ``GET    /calendar/v3/calendars/{calendarId}/events`` (events.list: timeMin, timeMax, q,
  maxResults, pageToken, singleEvents, orderBy)
- ``POST   /calendar/v3/calendars/{calendarId}/events`` (events.insert)
- ``GET    /calendar/v3/calendars/{calendarId}/events/{eventId}`` (events.get)
- ``PATCH  /calendar/v3/calendars/{calendarId}/events/{eventId}`` (events.patch)

It is as strict as the real API where our adapter could go wrong: a bearer token is required,
``dateTime`` values need an offset or a ``timeZone``, time zones must be IANA names, an empty or
negative time range is a 400, attendee emails must look like emails, unknown calendars and events
are 404 with Google's error body. Every request is recorded (``requests``); ``fail`` queues
scripted errors (e.g. 429 with ``Retry-After``) that are served before any real handling.

Example::

    with FakeCalendar() as fake:
        fake.add_event("primary", summary="Standup", start="2026-03-02T09:00:00+01:00",
                       end="2026-03-02T09:15:00+01:00", time_zone="Europe/Paris")
        client = CalendarClient(Credentials(token=fake.token), base_url=fake.base_url)
        ...
        assert fake.requests[0].method == "GET"
"""

from __future__ import annotations

import contextlib
import itertools
import json
import re
import threading
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from devfakes.loopback import JsonHandler, LoopbackServer, Request

PREFIX = "/calendar/v3/calendars/"
_EVENT_ID = re.compile(r"[a-v0-9]{5,1024}")
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_STATUS_NAMES = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
                 409: "ALREADY_EXISTS", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}
_REASONS = {400: "invalid", 401: "authError", 403: "forbidden", 404: "notFound", 409: "duplicate",
            429: "rateLimitExceeded", 500: "backendError", 503: "backendError"}


@dataclass
class Received(Request):
    """One request as the fake saw it (``path`` is percent-decoded)."""

    json: dict[str, Any] | None
    status: int = 0


@dataclass
class Fail:
    """A scripted error answered instead of the next request."""

    status: int
    message: str = "scripted failure"
    retry_after: str | None = None


@dataclass
class Calendar:
    time_zone: str = "UTC"
    summary: str = ""
    events: dict[str, dict[str, Any]] = field(default_factory=dict)


class ApiFailure(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def instant(when: dict[str, Any]) -> datetime:
    """The absolute time of an event ``start``/``end`` object (as the API interprets it)."""
    if "date" in when:
        return datetime.fromisoformat(when["date"]).replace(tzinfo=ZoneInfo(when.get("timeZone") or "UTC"))
    raw = when.get("dateTime")
    if not isinstance(raw, str):
        raise ApiFailure(400, "Invalid start or end: neither date nor dateTime.")
    try:
        value = datetime.fromisoformat(raw)
    except ValueError:
        raise ApiFailure(400, f"Invalid value for dateTime: {raw}") from None
    tz_name = when.get("timeZone")
    if tz_name is not None:
        try:
            zone = ZoneInfo(tz_name)
        except (ZoneInfoNotFoundError, ValueError):
            raise ApiFailure(400, f"Invalid time zone definition: {tz_name}") from None
        if value.tzinfo is None:
            value = value.replace(tzinfo=zone)
    if value.tzinfo is None:
        raise ApiFailure(400, "Missing time zone definition for start time.")
    return value


class FakeCalendar(LoopbackServer):
    """The fake server; ``start()``/``close()`` or a context manager. See the module doc."""

    def __init__(self, *, token: str = "ya29.fake-calendar-token", primary_time_zone: str = "UTC") -> None:
        self.token = token
        self.calendars: dict[str, Calendar] = {"primary": Calendar(time_zone=primary_time_zone, summary="me")}
        self.requests: list[Received] = []
        self._failures: deque[Fail] = deque()
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    # lifecycle ---------------------------------------------------------------------------
    def handler_class(self) -> type[BaseHTTPRequestHandler]:
        return _handler_class(self)

    @property
    def base_url(self) -> str:
        """The root URL (``http://127.0.0.1:PORT/``); the API lives under ``calendar/v3/``."""
        return self.root + "/"

    # scripting ---------------------------------------------------------------------------
    def add_calendar(self, calendar_id: str, *, time_zone: str = "UTC", summary: str = "") -> None:
        with self._lock:
            self.calendars[calendar_id] = Calendar(time_zone=time_zone, summary=summary or calendar_id)

    def add_event(self, calendar_id: str, *, summary: str, start: str, end: str, time_zone: str | None = None,
                  attendees: list[str] | None = None, description: str | None = None,
                  event_id: str | None = None) -> dict[str, Any]:
        """Seed an event (``start``/``end``: RFC 3339 dateTime values)."""
        event: dict[str, Any] = {"summary": summary, "start": {"dateTime": start}, "end": {"dateTime": end}}
        if time_zone:
            event["start"]["timeZone"] = event["end"]["timeZone"] = time_zone
        if attendees:
            event["attendees"] = [{"email": a, "responseStatus": "needsAction"} for a in attendees]
        if description:
            event["description"] = description
        with self._lock:
            return self._store(self.calendars[calendar_id], event, event_id)

    def fail(self, *items: Fail) -> None:
        """Queue scripted errors, each answered instead of one request, in order."""
        with self._lock:
            self._failures.extend(items)

    def event(self, calendar_id: str, event_id: str) -> dict[str, Any]:
        with self._lock:
            return json.loads(json.dumps(self.calendars[calendar_id].events[event_id]))  # type: ignore[no-any-return]

    # the API (called from handler threads, under the lock) ---------------------------------
    def _store(self, cal: Calendar, event: dict[str, Any], event_id: str | None = None) -> dict[str, Any]:
        eid = event_id or f"evt{next(self._ids):04d}"
        stored = {"kind": "calendar#event", "id": eid, "status": "confirmed",
                  "htmlLink": f"https://calendar.example/event?eid={eid}", **event}
        cal.events[eid] = stored
        return stored

    def _calendar(self, calendar_id: str) -> Calendar:
        cal = self.calendars.get(calendar_id)
        if cal is None:
            raise ApiFailure(404, "Not Found")
        return cal

    def _list(self, calendar_id: str, q: dict[str, list[str]]) -> dict[str, Any]:
        cal = self._calendar(calendar_id)

        def one(name: str) -> str | None:
            return q[name][0] if name in q else None

        lo = datetime.fromisoformat(one("timeMin")) if one("timeMin") else None  # type: ignore[arg-type]
        hi = datetime.fromisoformat(one("timeMax")) if one("timeMax") else None  # type: ignore[arg-type]
        for bound in (lo, hi):
            if bound is not None and bound.tzinfo is None:
                raise ApiFailure(400, "Bad Request")  # the API requires an offset in timeMin/timeMax
        text = (one("q") or "").lower()
        hits = []
        for ev in cal.events.values():
            start, end = instant(ev["start"]), instant(ev["end"])
            if (lo and end <= lo) or (hi and start >= hi):
                continue
            haystack = " ".join([ev.get("summary", ""), ev.get("description", ""), ev.get("location", "")]
                                + [a["email"] for a in ev.get("attendees", [])]).lower()
            if text and not all(word in haystack for word in text.split()):
                continue
            hits.append(ev)
        if one("orderBy") == "startTime":
            hits.sort(key=lambda e: instant(e["start"]))
        size = max(1, min(2500, int(one("maxResults") or 250)))
        offset = int(one("pageToken") or 0)
        page = hits[offset:offset + size]
        body: dict[str, Any] = {"kind": "calendar#events", "summary": cal.summary, "timeZone": cal.time_zone,
                                "items": page}
        if offset + size < len(hits):
            body["nextPageToken"] = str(offset + size)
        return body

    def _check_event(self, event: dict[str, Any]) -> None:
        for key in ("start", "end"):
            if not isinstance(event.get(key), dict):
                raise ApiFailure(400, f"Missing {key} time.")
        if instant(event["end"]) <= instant(event["start"]):
            raise ApiFailure(400, "The specified time range is empty.")
        for attendee in event.get("attendees") or []:
            if not _EMAIL.match(str(attendee.get("email", ""))):
                raise ApiFailure(400, "Invalid attendee email.")

    def _insert(self, calendar_id: str, body: dict[str, Any]) -> dict[str, Any]:
        cal = self._calendar(calendar_id)
        self._check_event(body)
        event_id = body.get("id")
        if event_id is not None:  # a client-chosen id: base32hex, 5-1024 characters, unique per calendar
            if not _EVENT_ID.fullmatch(str(event_id)):
                raise ApiFailure(400, "Invalid resource id value.")
            if event_id in cal.events:
                raise ApiFailure(409, "The requested identifier already exists.")
        return self._store(cal, {k: v for k, v in body.items() if k != "id"}, event_id)

    def _patch(self, calendar_id: str, event_id: str, body: dict[str, Any]) -> dict[str, Any]:
        cal = self._calendar(calendar_id)
        current = cal.events.get(event_id)
        if current is None:
            raise ApiFailure(404, "Not Found")
        merged = {**current, **body}  # PATCH replaces the top-level fields it names
        self._check_event(merged)
        cal.events[event_id] = merged
        return merged

    def _get(self, calendar_id: str, event_id: str) -> dict[str, Any]:
        current = self._calendar(calendar_id).events.get(event_id)
        if current is None:
            raise ApiFailure(404, "Not Found")
        return current

    def dispatch(self, req: Received) -> tuple[int, dict[str, Any], dict[str, str]]:
        with self._lock:
            self.requests.append(req)
            if self._failures:
                fail = self._failures.popleft()
                headers = {"Retry-After": fail.retry_after} if fail.retry_after else {}
                return fail.status, _error_body(fail.status, fail.message), headers
            if req.headers.get("authorization") != f"Bearer {self.token}":
                return 401, _error_body(401, "Request had invalid authentication credentials."), {}
            if not req.path.startswith(PREFIX):
                return 404, _error_body(404, f"FakeCalendar does not serve {req.path}"), {}
            segments = req.path[len(PREFIX):].split("/")
            try:
                if len(segments) == 2 and segments[1] == "events":
                    if req.method == "GET":
                        return 200, self._list(segments[0], req.query), {}
                    if req.method == "POST":
                        return 200, self._insert(segments[0], req.json or {}), {}
                if len(segments) == 3 and segments[1] == "events":
                    if req.method == "PATCH":
                        return 200, self._patch(segments[0], segments[2], req.json or {}), {}
                    if req.method == "GET":
                        return 200, self._get(segments[0], segments[2]), {}
                return 404, _error_body(404, f"FakeCalendar does not serve {req.method} {req.path}"), {}
            except ApiFailure as exc:
                return exc.status, _error_body(exc.status, exc.message), {}


def _error_body(status: int, message: str) -> dict[str, Any]:
    reason = _REASONS.get(status, "unknown")
    return {"error": {"code": status, "message": message, "status": _STATUS_NAMES.get(status, "UNKNOWN"),
                      "errors": [{"domain": "global", "reason": reason, "message": message}]}}


def _handler_class(fake: FakeCalendar) -> type[BaseHTTPRequestHandler]:
    class _Handler(JsonHandler):
        do_PATCH = do_PUT = do_DELETE = JsonHandler.do_GET

        def serve(self) -> None:
            raw = self.body()
            url = urlsplit(self.path)
            body: dict[str, Any] | None = None
            if raw:
                with contextlib.suppress(json.JSONDecodeError):
                    body = json.loads(raw)
            req = Received(method=self.command, path=unquote(url.path), query=parse_qs(url.query),
                           headers=self.lower_headers(), json=body)
            status, payload, headers = fake.dispatch(req)
            req.status = status
            self.answer(status, payload, headers, content_type="application/json; charset=UTF-8")

    return _Handler


def at(value: str, tz: str) -> str:
    """An RFC 3339 dateTime with the offset of ``tz`` at that local time (test convenience)."""
    return datetime.fromisoformat(value).replace(tzinfo=ZoneInfo(tz)).isoformat()
