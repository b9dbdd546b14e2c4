"""A tool never runs past the invocation's time left (issue 14 item 6): the Gmail, Calendar and
Slack tools take their request timeouts from ``ToolContext.deadline``, start no request once it has
passed, and start no retry or backoff that would end after it. Real client libraries against the
local fakes."""

from __future__ import annotations

import base64
import dataclasses
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devfakes.calendar import FakeCalendar
from devfakes.google import Fail, FakeGoogle
from devfakes.slack import FakeSlack
from shared.connectors import IntegrationTokens, create_connectors
from shared.errors import ToolError
from shared.state.sqlite_docstore import SqliteDocStore
from shared.state.users_repo import UsersRepo
from shared.tools import calendar_tools, gmail_tools, slack_tools
from shared.tools.context import ToolContext
from shared.tools.registry import ToolRegistry
from tests.connectors.gmail_support import fresh_tokens, google_settings

UID = "alice"


@dataclasses.dataclass
class World:
    google: FakeGoogle
    calendar: FakeCalendar
    slack: FakeSlack
    ctx: ToolContext
    registry: ToolRegistry

    def run(self, name: str, args: dict[str, Any], *, seconds_left: float) -> dict[str, Any]:
        tool = self.registry.get(name)
        assert tool is not None
        ctx = dataclasses.replace(self.ctx, deadline=time.monotonic() + seconds_left)
        return tool.run(ctx, tool.validate(args))


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    store = SqliteDocStore(str(tmp_path / "state.sqlite3"))
    with FakeGoogle() as google, FakeCalendar(token=google.access_token) as calendar, FakeSlack() as slack:
        slack.add_channel("C0000001", "general")
        settings = dataclasses.replace(
            google_settings(google), calendar_api_base_url=calendar.base_url, slack_api_base_url=slack.base_url,
            credentials_encryption_key=base64.b64encode(os.urandom(32)).decode())
        conn = create_connectors(settings, store)
        conn.vault.put(UID, "google", fresh_tokens(google))
        conn.vault.put(UID, "slack", IntegrationTokens(access_token=slack.token, team_id="T0001"))
        registry = ToolRegistry()
        for module in (gmail_tools, calendar_tools, slack_tools):
            module.register(registry)
        ctx = ToolContext(uid=UID, run_id="run-1", action_id="act-1", users=UsersRepo(store), settings=settings,
                          connectors=conn)
        yield World(google, calendar, slack, ctx, registry)
    store.close()


CALLS = {
    "Gmail": ("gmail_search", {"query": "lunch"}),
    "Google Calendar": ("calendar_search", {"time_min": "2026-03-02T00:00:00+00:00"}),
    "Slack": ("slack_channels", {}),
}


@pytest.mark.parametrize("service", sorted(CALLS))
def test_no_request_starts_once_the_time_is_spent(world: World, service: str) -> None:
    name, args = CALLS[service]
    with pytest.raises(ToolError, match=f"^{service}: no time is left for this call$"):
        world.run(name, args, seconds_left=-1)
    assert world.google.requests == [] and world.calendar.requests == [] and world.slack.requests == []


def test_a_slow_service_is_cut_at_the_time_left_and_not_retried_past_it(world: World) -> None:
    world.google.delay_s = 3.0  # each answer comes after 3 s; the caller has 0.5 s
    with pytest.raises(ToolError, match=r"Gmail could not be reached \(TimeoutError\)"):
        world.run("gmail_search", {"query": "lunch"}, seconds_left=0.5)
    # a read is retried after a timeout, but the first backoff (0.5 s) would end past the deadline
    assert len([r for r in world.google.requests if r.path.endswith("/messages")]) <= 1
    assert world.google.sent == []


def test_a_retry_after_longer_than_the_time_left_is_not_waited_for(world: World) -> None:
    world.google.fail(Fail(429, path="/gmail/v1/users/me/messages", retry_after="5"))
    with pytest.raises(ToolError, match="Gmail is rate limiting requests"):
        world.run("gmail_search", {"query": "lunch"}, seconds_left=2.0)
    assert len(world.google.requests) == 1  # no second attempt after a 5 s wait the caller does not have


def test_with_time_left_the_same_429_is_waited_out(world: World) -> None:
    world.google.fail(Fail(429, path="/gmail/v1/users/me/messages", retry_after="0.2"))
    out = world.run("gmail_search", {"query": "lunch"}, seconds_left=20.0)
    assert out["count"] == 0 and len(world.google.requests) == 2
