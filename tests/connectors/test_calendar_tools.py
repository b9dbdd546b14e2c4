"""The Calendar tools through the registry: declarations, argument checks, previews, and runs
with a real ``Connectors`` (encrypted tokens in SQLite) against the local fake Calendar API."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devfakes.calendar import FakeCalendar, at
from shared import policy
from shared.config import Settings
from shared.connectors import ConnectorError, Connectors, IntegrationTokens
from shared.connectors.calendar import event_id_for
from shared.errors import ToolError
from shared.state.records import UserRecord
from shared.state.sqlite_docstore import SqliteDocStore
from shared.state.users_repo import UsersRepo
from shared.tools import calendar_tools
from shared.tools.context import ToolContext
from shared.tools.registry import ToolArgsError, ToolRegistry
from tests.connectors.tool_support import connected, registry_fixture, run, tool

UID = "u-cal"


registry = registry_fixture(calendar_tools)


@pytest.fixture
def fake() -> Iterator[FakeCalendar]:
    with FakeCalendar(primary_time_zone="Europe/Paris") as server:
        yield server


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteDocStore]:
    s = SqliteDocStore(str(tmp_path / "state.sqlite3"))
    yield s
    s.close()


@pytest.fixture
def connectors(fake: FakeCalendar, store: SqliteDocStore) -> Connectors:
    return connected(store, UID, "google", IntegrationTokens(access_token=fake.token),
                     calendar_api_base_url=fake.base_url)


def ctx_for(connectors: Connectors | None, store: SqliteDocStore, uid: str = UID, action_id: str = "act-1"
            ) -> ToolContext:
    settings = connectors.settings if connectors else Settings()
    return ToolContext(uid=uid, run_id="run-1", action_id=action_id, users=UsersRepo(store), settings=settings,
                       connectors=connectors)


CREATE = {"title": "Design review", "start": "2026-03-02T10:00", "end": "2026-03-02T11:30",
          "timezone": "Europe/Paris", "attendees": ["ana@example.com", "bo@example.org"]}


def test_declarations(registry: ToolRegistry) -> None:
    create, update, search = (tool(registry, n) for n in
                              ("calendar_event_create", "calendar_event_update", "calendar_search"))
    assert (create.side_effect, create.idempotent) == (True, True)
    assert (update.side_effect, update.idempotent) == (True, False)
    assert search.side_effect is False
    params = create.declaration().parameters
    assert params["required"] == ["title", "start", "end", "timezone"]
    assert params["properties"]["end"] == {"type": "string", "description": "End, ISO 8601 date-time, after start."}
    assert params["properties"]["attendees"]["anyOf"][0] == {"type": "array", "items": {"type": "string"}}


@pytest.mark.parametrize(("change", "problem"), [
    ({"end": "2026-03-02T09:00"}, "end: Value error, must be after start (2026-03-02T10:00)"),
    ({"end": "2026-03-02T10:00"}, "end: Value error, must be after start"),
    ({"timezone": "Mars/Olympus"}, "timezone: Value error, unknown time zone 'Mars/Olympus'"),
    ({"attendees": ["ana@example.com", "not an email"]}, "attendees.1: Value error, 'not an email' is not an email"),
    ({"attendees": ["Ana <ana@example.com>"]}, "is not an email address"),
    ({"start": "next tuesday"}, "start: Value error, 'next tuesday' is not an ISO 8601 date-time"),
    ({"start": "2026-03-02"}, "has no time of day"),
])
def test_bad_arguments_fail_when_planned(registry: ToolRegistry, change: dict[str, Any], problem: str) -> None:
    with pytest.raises(ToolArgsError) as info:
        tool(registry, "calendar_event_create").validate({**CREATE, **change})
    assert problem in str(info.value)


def test_update_and_search_check_their_ranges_too(registry: ToolRegistry) -> None:
    with pytest.raises(ToolArgsError, match="end: Value error, must be after start"):
        tool(registry, "calendar_event_update").validate(
            {"event_id": "e1", "start": "2026-03-02T10:00", "end": "2026-03-01T10:00", "timezone": "UTC"})
    with pytest.raises(ToolArgsError, match="time_max: Value error, must be after time_min"):
        tool(registry, "calendar_search").validate({"time_min": "2026-03-02T10:00Z", "time_max": "2026-03-01T00:00Z"})


def test_previews_are_plain_sentences(registry: ToolRegistry) -> None:
    create = tool(registry, "calendar_event_create")
    assert create.preview(create.validate({**CREATE, "location": "Room 2"})) == (
        'Create calendar event "Design review": Mon 2 Mar 2026, 10:00-11:30 (Europe/Paris) at Room 2; '
        "attendees ana@example.com, bo@example.org (they get an invitation)")
    overnight = create.validate({**CREATE, "end": "2026-03-03T01:00", "attendees": None})
    assert create.preview(overnight) == (
        'Create calendar event "Design review": Mon 2 Mar 2026 10:00 to Tue 3 Mar 2026 01:00 (Europe/Paris); '
        "no attendees")
    other = create.validate({**CREATE, "calendar_id": "team@group.calendar.google.com"})
    assert create.preview(other).startswith(
        'Create calendar event "Design review" in calendar team@group.calendar.google.com: Mon 2 Mar 2026')


def update_preview(registry: ToolRegistry, **args: Any) -> str:
    update = tool(registry, "calendar_event_update")
    return update.preview(update.validate({"event_id": "evt9", **args}))


def test_update_previews_name_each_change_in_words(registry: ToolRegistry) -> None:
    assert update_preview(registry, title="Moved", start="2026-03-04T09:00", end="2026-03-04T09:30",
                          timezone="America/New_York", attendees=["cy@example.com"]) == (
        "Update calendar event evt9 (attendees, if any, are told about the change)\n"
        'Title: "Moved"\n'
        "Time: Wed 4 Mar 2026, 09:00-09:30 (America/New_York)\n"
        "Attendees (replacing the current list): cy@example.com")
    assert update_preview(registry, start="2026-03-04T23:30:00+00:00", timezone="Europe/Paris",
                          calendar_id="team@group.calendar.google.com") == (
        "Update calendar event evt9 in calendar team@group.calendar.google.com (attendees, if any, are told "
        "about the change)\nStart: Thu 5 Mar 2026 00:30 (Europe/Paris) (the end is unchanged)")
    assert update_preview(registry, end="2026-03-04T18:00", timezone="UTC").splitlines()[1] == (
        "End: Wed 4 Mar 2026 18:00 (UTC) (the start is unchanged)")
    many = [f"p{i}@example.com" for i in range(12)]
    cleared = update_preview(registry, attendees=many, location="", description="Agenda:\n1. numbers\n" + "x" * 400)
    lines = cleared.splitlines()
    assert lines[1] == f"Attendees (replacing the current list): {', '.join(many[:10])} and 2 more"
    assert lines[2] == "Location: removed"
    assert lines[3].startswith("Description: Agenda: 1. numbers xxx") and lines[3].endswith(" …")
    assert len(lines[3]) < 260
    assert update_preview(registry, attendees=[]).splitlines()[1] == "Attendees: none (every attendee is removed)"
    assert update_preview(registry).endswith("(no changes given: the update will be refused)")
    for preview in (cleared, update_preview(registry, title="x", location="Room 7", description="d")):
        assert "{" not in preview and "[" not in preview and "'" not in preview


def test_update_times_need_a_zone_before_approval(registry: ToolRegistry) -> None:
    # Refused when planned, so a person never approves a change that could not run.
    update = tool(registry, "calendar_event_update")
    for args in ({"start": "2026-03-02T12:00"}, {"end": "2026-03-02T12:00Z"}):
        with pytest.raises(ToolArgsError, match="needs timezone"):
            update.validate({"event_id": "e1", **args})
    with pytest.raises(ToolArgsError) as info:
        update.validate({"event_id": "e1", "start": "2026-03-02T12:00", "timezone": "Mars/Olympus"})
    assert info.value.problems == ["timezone: Value error, unknown time zone 'Mars/Olympus': use an IANA name "
                                   "such as 'Europe/Paris'"]


def test_create_sends_zoned_times_and_returns_the_event(registry: ToolRegistry, fake: FakeCalendar,
                                                        connectors: Connectors, store: SqliteDocStore) -> None:
    out = run(registry, "calendar_event_create", ctx_for(connectors, store), CREATE)

    [req] = fake.requests
    assert (req.method, req.path) == ("POST", "/calendar/v3/calendars/primary/events")
    assert req.json == {"id": event_id_for("act-1"), "summary": "Design review",
                        "start": {"dateTime": "2026-03-02T10:00:00+01:00", "timeZone": "Europe/Paris"},
                        "end": {"dateTime": "2026-03-02T11:30:00+01:00", "timeZone": "Europe/Paris"},
                        "attendees": [{"email": "ana@example.com"}, {"email": "bo@example.org"}]}
    assert out["created"] is True
    event = out["event"]
    assert {k: event[k] for k in ("summary", "start", "end", "timezone", "attendees")} == {
        "summary": "Design review", "start": "2026-03-02T10:00:00+01:00", "end": "2026-03-02T11:30:00+01:00",
        "timezone": "Europe/Paris", "attendees": ["ana@example.com", "bo@example.org"]}
    assert fake.event("primary", event["id"])["summary"] == "Design review"


def test_a_repeated_create_of_the_same_action_finds_its_event_and_invites_nobody_twice(
        registry: ToolRegistry, fake: FakeCalendar, connectors: Connectors, store: SqliteDocStore) -> None:
    first = run(registry, "calendar_event_create", ctx_for(connectors, store), CREATE)
    again = run(registry, "calendar_event_create", ctx_for(connectors, store), CREATE)  # e.g. after a crash

    assert again == first and first["event"]["id"] == event_id_for("act-1")
    assert len(fake.calendars["primary"].events) == 1
    assert [(r.method, r.path.rsplit("/", 1)[-1]) for r in fake.requests] == [
        ("POST", "events"), ("POST", "events"), ("GET", event_id_for("act-1"))]  # 409, then the existing event
    other = run(registry, "calendar_event_create", ctx_for(connectors, store, action_id="act-2"), CREATE)
    assert other["event"]["id"] != first["event"]["id"] and len(fake.calendars["primary"].events) == 2


def test_event_ids_are_what_the_calendar_api_accepts() -> None:
    ids = {event_id_for(f"act_{i}") for i in range(200)}
    assert len(ids) == 200
    assert all(re.fullmatch(r"[a-v0-9]{5,1024}", i) for i in ids)
    assert event_id_for("act_1") == event_id_for("act_1")


def test_update_patches_and_needs_a_zone_for_new_times(registry: ToolRegistry, fake: FakeCalendar,
                                                        connectors: Connectors, store: SqliteDocStore) -> None:
    seeded = fake.add_event("primary", summary="Sync", start=at("2026-03-02T10:00", "Europe/Paris"),
                            end=at("2026-03-02T11:00", "Europe/Paris"), time_zone="Europe/Paris")
    ctx = ctx_for(connectors, store)
    with pytest.raises(ToolArgsError, match="start: Value error, needs timezone"):
        run(registry, "calendar_event_update", ctx, {"event_id": seeded["id"], "start": "2026-03-02T12:00"})
    with pytest.raises(ToolError, match="nothing to change"):
        run(registry, "calendar_event_update", ctx, {"event_id": seeded["id"]})
    assert fake.requests == []

    out = run(registry, "calendar_event_update", ctx, {"event_id": seeded["id"], "location": "Room 7",
                                                       "start": "2026-03-02T12:00", "end": "2026-03-02T12:45",
                                                       "timezone": "Europe/Paris"})
    assert fake.requests[0].json == {"start": {"dateTime": "2026-03-02T12:00:00+01:00", "timeZone": "Europe/Paris"},
                                     "end": {"dateTime": "2026-03-02T12:45:00+01:00", "timeZone": "Europe/Paris"},
                                     "location": "Room 7"}
    assert out["event"]["location"] == "Room 7"
    with pytest.raises(ToolError, match="event 'gone' in calendar 'primary' was not found"):
        run(registry, "calendar_event_update", ctx, {"event_id": "gone", "title": "x"})


def test_search_defaults_to_upcoming_and_notes_a_trimmed_list(registry: ToolRegistry, fake: FakeCalendar,
                                                              connectors: Connectors, store: SqliteDocStore) -> None:
    for day in range(1, 8):
        fake.add_event("primary", summary=f"Gym {day}", start=f"2099-01-{day:02d}T07:00:00Z",
                       end=f"2099-01-{day:02d}T08:00:00Z", attendees=["coach@example.com"])
    fake.add_event("primary", summary="Gym long ago", start="2001-01-01T07:00:00Z", end="2001-01-01T08:00:00Z")
    out = run(registry, "calendar_search", ctx_for(connectors, store), {"query": "gym", "max_results": 3})

    req = fake.requests[0]
    assert req.param("timeMin") is not None and req.param("timeMax") is None
    assert (req.param("q"), req.param("maxResults")) == ("gym", "3")
    assert [e["summary"] for e in out["events"]] == ["Gym 1", "Gym 2", "Gym 3"]
    assert out["events"][0]["attendees"] == ["coach@example.com"]
    assert out["count"] == 3 and "only the first 3" in out["note"]


def test_search_reads_naive_times_in_the_given_zone(registry: ToolRegistry, fake: FakeCalendar,
                                                    connectors: Connectors, store: SqliteDocStore) -> None:
    run(registry, "calendar_search", ctx_for(connectors, store),
        {"time_min": "2026-07-01T00:00", "time_max": "2026-07-02T00:00", "timezone": "America/Los_Angeles"})
    assert (fake.requests[0].param("timeMin"), fake.requests[0].param("timeMax")) == (
        "2026-07-01T00:00:00-07:00", "2026-07-02T00:00:00-07:00")


def test_missing_credentials_or_connectors_are_user_facing_errors(
        registry: ToolRegistry, fake: FakeCalendar, connectors: Connectors, store: SqliteDocStore) -> None:
    with pytest.raises(ConnectorError, match="not connected") as info:
        run(registry, "calendar_search", ctx_for(connectors, store, uid="someone-else"), {})
    assert info.value.reason == "not_connected"
    with pytest.raises(ConnectorError) as info:
        run(registry, "calendar_event_create", ctx_for(None, store), CREATE)
    assert info.value.reason == "not_configured"
    assert fake.requests == []


def test_delegated_users_still_approve_calendar_changes(registry: ToolRegistry) -> None:
    # The delegated allowlist covers mail recipients only: calendar tools declare no recipients.
    create = tool(registry, "calendar_event_create")
    user = UserRecord(uid=UID, trust_level="delegated")
    user.profile.email_allowlist = ["ana@example.com", "bo@example.org"]
    decision = policy.decide(tool_name=create.name, side_effect=True, args=create.validate(CREATE), user=user,
                             side_effects_enabled=True, recipients=create.recipients_fn)
    assert decision.verdict == "require_approval"


def test_the_default_registry_ships_the_seed_tool_set() -> None:
    from shared.tools import default_registry

    names = {t.name for t in default_registry()}
    assert {"calendar_event_create", "calendar_event_update", "calendar_search", "slack_channels",
            "slack_read"} <= names


# Every vendor SDK of the connectors (tests/connectors/test_import_boundary.py names their modules).
VENDOR_SDKS = ("googleapiclient", "google_auth_httplib2", "httplib2", "google.oauth2", "google.auth", "slack_sdk",
               "cryptography", "github", "nacl", "jwt", "html2text", "urllib3", "google.genai")


@pytest.mark.parametrize("module", ["shared.tools.gmail_tools", "shared.tools.calendar_tools",
                                    "shared.tools.slack_tools", "shared.tools.github_tools",
                                    "shared.tools.web_tools", "shared.tools"])
def test_importing_the_tools_does_not_load_the_vendor_sdks(module: str) -> None:
    # Cold start: a function that never runs a connector tool must not pay for the SDKs (nor for
    # google-auth or cryptography); each module in a fresh interpreter, so none hides another.
    code = (f"import sys, {module}; sdks = {VENDOR_SDKS!r}; "
            "print(sorted(m for m in sys.modules if any(m == s or m.startswith(s + '.') for s in sdks)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[2])
    assert out.stdout.strip() == "[]"
