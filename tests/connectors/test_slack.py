"""The Slack adapter: the real slack_sdk WebClient against the local fake Web API."""

from __future__ import annotations

import socket

import pytest

from devfakes.slack import Fail, FakeSlack, cursor_for
from shared.connectors.credentials import ConnectorError
from shared.connectors.slack import MAX_MESSAGE_CHARS, SlackClient
from shared.errors import ToolError
from tests.connectors.tool_support import started

FORM = "application/x-www-form-urlencoded"


fake = started(FakeSlack)


@pytest.fixture
def sleeps() -> list[float]:
    return []


def client_for(fake: FakeSlack, sleeps: list[float], *, token: str | None = None, page_size: int = 2
               ) -> SlackClient:
    return SlackClient(fake.token if token is None else token, base_url=fake.base_url, sleep=sleeps.append,
                       page_size=page_size)


def seed_channels(fake: FakeSlack, n: int) -> None:
    for i in range(n):
        fake.add_channel(f"C{i:07d}", f"chan-{i}", topic=f"topic {i}", is_private=i % 2 == 1)


def test_channels_follow_cursors_across_pages(fake: FakeSlack, sleeps: list[float]) -> None:
    seed_channels(fake, 5)
    fake.add_channel("C9999999", "old", is_archived=True)
    found = client_for(fake, sleeps).channels(limit=100)

    assert [c.name for c in found.channels] == [f"chan-{i}" for i in range(5)]
    assert found.more is False
    assert [(r.http_method, r.method, r.content_type) for r in fake.requests] == [
        ("POST", "conversations.list", FORM)] * 3
    base = {"types": "public_channel,private_channel", "exclude_archived": "1", "limit": "2"}
    assert [r.form for r in fake.requests] == [
        base, {**base, "cursor": cursor_for(2)}, {**base, "cursor": cursor_for(4)}]
    assert fake.requests[0].headers["authorization"] == f"Bearer {fake.token}"
    first = found.channels[1]
    assert (first.id, first.is_private, first.is_member, first.topic) == ("C0000001", True, True, "topic 1")


def test_channels_stop_at_the_bound_and_say_more_exist(fake: FakeSlack, sleeps: list[float]) -> None:
    seed_channels(fake, 5)
    found = client_for(fake, sleeps).channels(limit=3, include_private=False)
    assert [c.name for c in found.channels] == ["chan-0", "chan-2", "chan-4"]
    assert found.more is False  # only three public channels exist
    found = client_for(fake, sleeps).channels(limit=3)
    assert [c.name for c in found.channels] == ["chan-0", "chan-1", "chan-2"]
    assert found.more is True
    assert fake.requests[-1].form["cursor"] == cursor_for(2)  # no page fetched beyond the bound


def test_history_pages_with_cursors_and_returns_oldest_first(fake: FakeSlack, sleeps: list[float]) -> None:
    fake.add_channel("C0000001", "general")
    for i in range(1, 6):
        fake.add_message("C0000001", text=f"message {i}", user=f"U{i}", ts=f"17000000{i:02d}.000100")

    page = client_for(fake, sleeps).history("C0000001", limit=10, oldest="1700000001.000100")

    assert [(m.user, m.text) for m in page.messages] == [(f"U{i}", f"message {i}") for i in range(2, 6)]
    assert page.more is False
    base = {"channel": "C0000001", "limit": "2", "oldest": "1700000001.000100"}
    assert [r.form for r in fake.requests] == [base, {**base, "cursor": cursor_for(2)}]
    assert {(r.method, r.content_type) for r in fake.requests} == {("conversations.history", FORM)}


def test_history_is_bounded_to_the_newest_messages_and_trims_long_ones(fake: FakeSlack, sleeps: list[float]) -> None:
    fake.add_channel("C0000001", "general")
    for i in range(1, 8):
        fake.add_message("C0000001", text=f"message {i}")
    fake.add_message("C0000001", text="y" * 5000, user="U9", thread_ts="1700000001.000100", reply_count=3)

    page = client_for(fake, sleeps, page_size=3).history("C0000001", limit=4)

    assert [m.text[:9] for m in page.messages] == ["message 5", "message 6", "message 7", "yyyyyyyyy"]
    assert page.more is True
    last = page.messages[-1]
    assert last.truncated and last.text.endswith("… [trimmed: 5000 characters in all]")
    assert len(last.text) < MAX_MESSAGE_CHARS + 50
    assert (last.user, last.thread_ts, last.reply_count) == ("U9", "1700000001.000100", 3)
    assert [r.form["limit"] for r in fake.requests] == ["3", "3"]


def test_find_channel_searches_every_page(fake: FakeSlack, sleeps: list[float]) -> None:
    seed_channels(fake, 5)
    assert client_for(fake, sleeps).find_channel("#Chan-4").id == "C0000004"
    assert len(fake.requests) == 3
    with pytest.raises(ToolError, match="#nope was not found"):
        client_for(fake, sleeps).find_channel("nope")


@pytest.mark.parametrize(("token", "error", "reason"), [
    ("xoxp-wrong", "invalid_auth", "unauthorized"),
    ("xoxp-revoked", "token_revoked", "revoked"),
    ("", "not_authed", "unauthorized"),
])
def test_auth_errors_ask_for_a_reconnect(fake: FakeSlack, sleeps: list[float], token: str, error: str,
                                         reason: str) -> None:
    fake.revoked.add("xoxp-revoked")
    with pytest.raises(ConnectorError, match="reconnect Slack") as info:
        client_for(fake, sleeps, token=token).channels()
    assert (info.value.provider, info.value.reason) == ("slack", reason)
    assert error in str(info.value)
    assert [r.error for r in fake.requests] == [error]


def test_unknown_channel_is_a_clear_error(fake: FakeSlack, sleeps: list[float]) -> None:
    with pytest.raises(ToolError, match="channel 'C0404040' was not found") as info:
        client_for(fake, sleeps).history("C0404040")
    assert not isinstance(info.value, ConnectorError)


def test_rate_limited_then_success_honours_retry_after(fake: FakeSlack, sleeps: list[float]) -> None:
    fake.add_channel("C0000001", "general")
    fake.add_message("C0000001", text="hi")
    fake.fail(Fail(retry_after="2"), Fail(retry_after="3"))
    page = client_for(fake, sleeps).history("C0000001")
    assert [m.text for m in page.messages] == ["hi"]
    assert sleeps == [2.0, 3.0]
    assert [r.status for r in fake.requests] == [429, 429, 200]
    assert fake.requests[0].form == fake.requests[2].form  # the same call, repeated


def test_rate_limited_until_the_attempts_run_out(fake: FakeSlack, sleeps: list[float]) -> None:
    fake.fail(*[Fail(retry_after="1")] * 3)
    with pytest.raises(ToolError, match="rate limiting"):
        client_for(fake, sleeps).channels()
    assert sleeps == [1.0, 1.0]
    assert len(fake.requests) == 3


def test_a_retry_after_beyond_the_cap_fails_at_once(fake: FakeSlack, sleeps: list[float]) -> None:
    fake.fail(Fail(retry_after="600"))
    with pytest.raises(ToolError, match="rate limiting"):
        client_for(fake, sleeps).channels()
    assert sleeps == [] and len(fake.requests) == 1


def test_an_unreachable_slack_is_a_clear_error(sleeps: list[float]) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the block ends: nothing listens there
    client = SlackClient("xoxp-x", base_url=f"http://127.0.0.1:{port}/api/", sleep=sleeps.append)
    with pytest.raises(ToolError, match="Slack could not be reached"):
        client.channels()


def test_rate_limited_without_retry_after_backs_off_exponentially(fake: FakeSlack, sleeps: list[float]) -> None:
    fake.fail(Fail(retry_after=None), Fail(retry_after="soon"))  # absent, then not a number
    found = client_for(fake, sleeps).channels()
    assert sleeps == [1.0, 2.0] and [r.status for r in fake.requests] == [429, 429, 200]
    assert found.channels == []
    fake.requests.clear()
    fake.fail(*[Fail(retry_after=None)] * 3)
    with pytest.raises(ToolError, match="rate limiting"):
        client_for(fake, sleeps).channels()
    assert sleeps == [1.0, 2.0, 1.0, 2.0] and len(fake.requests) == 3


def test_backoff_without_retry_after_is_capped(fake: FakeSlack) -> None:
    waits: list[float] = []
    client = SlackClient(fake.token, base_url=fake.base_url, sleep=waits.append, max_attempts=5,
                         first_backoff_s=10.0, max_retry_after_s=30.0)
    fake.fail(*[Fail(retry_after=None)] * 4)
    client.channels()
    assert waits == [10.0, 20.0, 30.0, 30.0]
