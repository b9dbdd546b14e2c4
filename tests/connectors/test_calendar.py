"""The Calendar v3 adapter: the real google-api-python-client against the local fake API."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest
from google.oauth2.credentials import Credentials

from devfakes.calendar import Fail, FakeCalendar, at
from shared.connectors.calendar import CalendarClient, EventChanges, EventDraft
from shared.connectors.credentials import ConnectorError
from shared.connectors.google_http import RetryPolicy
from shared.errors import ToolError
from tests.connectors.tool_support import started

PARIS = ZoneInfo("Europe/Paris")


fake = started(lambda: FakeCalendar(primary_time_zone="Europe/Paris"))


@pytest.fixture
def sleeps() -> list[float]:
    return []


@pytest.fixture
def client(fake: FakeCalendar, sleeps: list[float]) -> Iterator[CalendarClient]:
    with CalendarClient(Credentials(token=fake.token), base_url=fake.base_url,
                        retry=RetryPolicy(sleep=sleeps.append)) as c:
        yield c


def test_search_sends_the_range_query_and_order_and_maps_events(fake: FakeCalendar, client: CalendarClient) -> None:
    fake.add_event("primary", summary="Standup", start=at("2026-03-02T09:00", "Europe/Paris"),
                   end=at("2026-03-02T09:15", "Europe/Paris"), time_zone="Europe/Paris",
                   attendees=["ana@example.com", "bo@example.com"])
    fake.add_event("primary", summary="Lunch", start=at("2026-03-02T12:00", "Europe/Paris"),
                   end=at("2026-03-02T13:00", "Europe/Paris"))
    fake.add_event("primary", summary="Standup", start=at("2026-03-09T09:00", "Europe/Paris"),
                   end=at("2026-03-09T09:15", "Europe/Paris"))

    page = client.search(time_min=datetime(2026, 3, 2, tzinfo=PARIS), time_max=datetime(2026, 3, 3, tzinfo=PARIS),
                         query="standup", max_results=10)

    [req] = fake.requests
    assert (req.method, req.path) == ("GET", "/calendar/v3/calendars/primary/events")
    assert req.query == {"timeMin": ["2026-03-02T00:00:00+01:00"], "timeMax": ["2026-03-03T00:00:00+01:00"],
                         "q": ["standup"], "singleEvents": ["true"], "orderBy": ["startTime"],
                         "maxResults": ["10"], "alt": ["json"]}
    assert req.headers["authorization"] == f"Bearer {fake.token}"
    assert [(e.summary, e.start, e.end, e.timezone, e.attendees) for e in page.events] == [
        ("Standup", "2026-03-02T09:00:00+01:00", "2026-03-02T09:15:00+01:00", "Europe/Paris",
         ["ana@example.com", "bo@example.com"])]
    assert page.calendar_timezone == "Europe/Paris"
    assert page.more is False


def test_search_is_bounded_and_says_when_more_match(fake: FakeCalendar, client: CalendarClient) -> None:
    for day in range(1, 31):
        fake.add_event("primary", summary=f"Day {day}", start=f"2026-04-{day:02d}T08:00:00Z",
                       end=f"2026-04-{day:02d}T09:00:00Z", description="x" * 2000)
    page = client.search(time_min=datetime(2026, 4, 1, tzinfo=UTC), max_results=500)
    assert fake.requests[0].param("maxResults") == "50"  # clamped to the bound
    assert len(page.events) == 30 and page.more is False
    assert [e.summary for e in page.events][:2] == ["Day 1", "Day 2"]
    first = page.events[0]
    assert first.description is not None and len(first.description) == 501
    assert first.notes == ["the description has 2000 characters; showing the start"]

    small = client.search(time_min=datetime(2026, 4, 1, tzinfo=UTC), max_results=5)
    assert [e.summary for e in small.events] == [f"Day {d}" for d in range(1, 6)]
    assert small.more is True


def test_calendar_ids_are_escaped_in_the_path(fake: FakeCalendar, client: CalendarClient) -> None:
    fake.add_calendar("team@group.calendar.google.com", time_zone="America/New_York")
    page = client.search(calendar_id="team@group.calendar.google.com", time_min=datetime(2026, 1, 1, tzinfo=UTC))
    assert fake.requests[0].path == "/calendar/v3/calendars/team@group.calendar.google.com/events"
    assert page.events == [] and page.calendar_timezone == "America/New_York"


def test_create_sends_times_with_their_zone_and_invites_attendees(fake: FakeCalendar, client: CalendarClient) -> None:
    ny = ZoneInfo("America/New_York")
    draft = EventDraft(summary="Quarterly review", start=datetime(2026, 7, 1, 15, 0, tzinfo=ny),
                       end=datetime(2026, 7, 1, 16, 30, tzinfo=ny), time_zone="America/New_York",
                       attendees=["ana@example.com"], description="Numbers", location="Room 4")
    event = client.create(draft)

    [req] = fake.requests
    assert (req.method, req.path) == ("POST", "/calendar/v3/calendars/primary/events")
    assert req.query == {"sendUpdates": ["all"], "alt": ["json"]}
    assert req.json == {
        "summary": "Quarterly review",
        "start": {"dateTime": "2026-07-01T15:00:00-04:00", "timeZone": "America/New_York"},
        "end": {"dateTime": "2026-07-01T16:30:00-04:00", "timeZone": "America/New_York"},
        "attendees": [{"email": "ana@example.com"}], "description": "Numbers", "location": "Room 4"}
    assert event.id and fake.event("primary", event.id)["summary"] == "Quarterly review"
    assert (event.start, event.timezone, event.attendees) == (
        "2026-07-01T15:00:00-04:00", "America/New_York", ["ana@example.com"])


def test_create_converts_an_aware_start_into_the_event_zone(fake: FakeCalendar, client: CalendarClient) -> None:
    draft = EventDraft(summary="Call", start=datetime(2026, 1, 5, 8, 0, tzinfo=UTC),
                       end=datetime(2026, 1, 5, 9, 0, tzinfo=UTC), time_zone="Asia/Tokyo")
    client.create(draft)
    body = fake.requests[0].json
    assert body is not None
    assert body["start"] == {"dateTime": "2026-01-05T17:00:00+09:00", "timeZone": "Asia/Tokyo"}
    assert fake.requests[0].query["sendUpdates"] == ["none"]  # nobody to invite
    assert "attendees" not in body


def test_update_patches_only_the_named_fields(fake: FakeCalendar, client: CalendarClient) -> None:
    seeded = fake.add_event("primary", summary="Sync", start=at("2026-03-02T10:00", "Europe/Paris"),
                            end=at("2026-03-02T11:00", "Europe/Paris"), time_zone="Europe/Paris",
                            attendees=["ana@example.com"])
    changes = EventChanges(summary="Sync (moved)", start=datetime(2026, 3, 3, 14, tzinfo=PARIS),
                           end=datetime(2026, 3, 3, 15, tzinfo=PARIS), time_zone="Europe/Paris")
    event = client.update(seeded["id"], changes)

    [req] = fake.requests
    assert (req.method, req.path) == ("PATCH", f"/calendar/v3/calendars/primary/events/{seeded['id']}")
    assert req.query == {"sendUpdates": ["all"], "alt": ["json"]}
    assert req.json == {"summary": "Sync (moved)",
                        "start": {"dateTime": "2026-03-03T14:00:00+01:00", "timeZone": "Europe/Paris"},
                        "end": {"dateTime": "2026-03-03T15:00:00+01:00", "timeZone": "Europe/Paris"}}
    assert event.summary == "Sync (moved)" and event.attendees == ["ana@example.com"]


def test_update_needs_a_zone_for_new_times(client: CalendarClient, fake: FakeCalendar) -> None:
    with pytest.raises(ValueError, match="time_zone is required"):
        client.update("evt1", EventChanges(start=datetime(2026, 3, 3, 14, tzinfo=PARIS)))
    assert fake.requests == []


def test_unknown_event_or_calendar_is_a_clear_tool_error(fake: FakeCalendar, client: CalendarClient) -> None:
    with pytest.raises(ToolError, match="event 'nope' in calendar 'primary' was not found"):
        client.update("nope", EventChanges(summary="x"))
    with pytest.raises(ToolError, match=r"calendar 'missing@example\.com' was not found"):
        client.search(calendar_id="missing@example.com")
    assert [r.status for r in fake.requests] == [404, 404]


def test_an_api_refusal_carries_its_message(fake: FakeCalendar, client: CalendarClient) -> None:
    seeded = fake.add_event("primary", summary="Sync", start="2026-03-02T10:00:00Z", end="2026-03-02T11:00:00Z")
    # Moving only the end before the stored start: the API itself refuses the empty range.
    changes = EventChanges(end=datetime(2026, 3, 2, 9, tzinfo=UTC), time_zone="UTC")
    with pytest.raises(ToolError, match="rejected the request as invalid: The specified time range is empty"):
        client.update(seeded["id"], changes)


def test_rate_limited_then_success_retries_with_backoff(fake: FakeCalendar, client: CalendarClient,
                                                         sleeps: list[float]) -> None:
    fake.fail(Fail(429, "Rate Limit Exceeded"), Fail(429, "Rate Limit Exceeded"))
    draft = EventDraft(summary="Once", start=datetime(2026, 3, 2, 10, tzinfo=PARIS),
                       end=datetime(2026, 3, 2, 11, tzinfo=PARIS), time_zone="Europe/Paris")
    event = client.create(draft)
    assert [r.status for r in fake.requests] == [429, 429, 200]
    assert sleeps == [0.5, 1.0]
    assert list(fake.calendars["primary"].events) == [event.id]  # exactly one event made


def test_rate_limited_until_the_attempts_run_out(fake: FakeCalendar, client: CalendarClient,
                                                 sleeps: list[float]) -> None:
    fake.fail(*[Fail(429, "Rate Limit Exceeded")] * 4)
    with pytest.raises(ToolError, match="rate limiting"):
        client.search()
    assert [r.status for r in fake.requests] == [429] * 4
    assert sleeps == [0.5, 1.0, 2.0]


class NoRefresh(Credentials):  # type: ignore[misc]
    """A token google-auth cannot refresh here: the 401 comes back to the adapter."""

    def refresh(self, request: object) -> None:
        pass


def test_rejected_credentials_ask_for_a_reconnect(fake: FakeCalendar) -> None:
    with CalendarClient(NoRefresh(token="ya29.stale"), base_url=fake.base_url) as client, \
            pytest.raises(ConnectorError, match="reconnect Google") as info:
        client.search()
    assert (info.value.provider, info.value.reason) == ("google", "unauthorized")
    assert {r.status for r in fake.requests} == {401}
