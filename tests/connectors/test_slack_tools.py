"""The Slack tools through the registry, with a real ``Connectors`` (encrypted token in SQLite)
against the local fake Slack Web API."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from devfakes.slack import FakeSlack
from shared.connectors import ConnectorError, IntegrationTokens
from shared.errors import ToolError
from shared.state.sqlite_docstore import SqliteDocStore
from shared.state.users_repo import UsersRepo
from shared.tools import slack_tools
from shared.tools.context import ToolContext
from shared.tools.registry import ToolArgsError, ToolRegistry
from tests.connectors.tool_support import connected, registry_fixture, run, tool

UID = "u-slack"


registry = registry_fixture(slack_tools)


@pytest.fixture
def fake() -> Iterator[FakeSlack]:
    with FakeSlack() as server:
        server.add_channel("C0000001", "general", topic="Company news")
        server.add_channel("C0000002", "random")
        yield server


@pytest.fixture
def ctx(fake: FakeSlack, tmp_path: Path) -> Iterator[ToolContext]:
    store = SqliteDocStore(str(tmp_path / "state.sqlite3"))
    conn = connected(store, UID, "slack", IntegrationTokens(access_token=fake.token, team_id="T0001"),
                     slack_api_base_url=fake.base_url)
    yield ToolContext(uid=UID, run_id="run-1", action_id="act-1", users=UsersRepo(store), settings=conn.settings,
                      connectors=conn)
    store.close()


def test_both_tools_are_read_only(registry: ToolRegistry) -> None:
    assert [(t.name, t.side_effect) for t in registry] == [("slack_channels", False), ("slack_read", False)]
    assert tool(registry, "slack_read").declaration().parameters["required"] == ["channel"]


def test_slack_channels(registry: ToolRegistry, fake: FakeSlack, ctx: ToolContext) -> None:
    out = run(registry, "slack_channels", ctx, {})
    assert out == {"channels": [
        {"id": "C0000001", "name": "general", "private": False, "member": True, "topic": "Company news"},
        {"id": "C0000002", "name": "random", "private": False, "member": True}], "count": 2}
    assert fake.requests[0].form == {"types": "public_channel,private_channel", "exclude_archived": "1",
                                     "limit": "100"}


def test_slack_channels_notes_a_trimmed_list(registry: ToolRegistry, fake: FakeSlack, ctx: ToolContext) -> None:
    out = run(registry, "slack_channels", ctx, {"limit": 1})
    assert out["count"] == 1 and "only the first 1" in out["note"]


def test_slack_read_by_name_keeps_user_ids_and_converts_oldest(registry: ToolRegistry, fake: FakeSlack,
                                                               ctx: ToolContext) -> None:
    fake.add_message("C0000001", text="old", user="U1", ts="1767225500.000100")
    fake.add_message("C0000001", text="hello", user="U2", ts="1767225601.000200")
    fake.add_message("C0000001", text="ship it", user="U3", ts="1767225700.000300")

    out = run(registry, "slack_read", ctx, {"channel": "#general", "oldest": "2026-01-01T00:00:00Z", "limit": 5})

    assert [r.method for r in fake.requests] == ["conversations.list", "conversations.history"]
    assert fake.requests[1].form == {"channel": "C0000001", "limit": "5", "oldest": "1767225600.000000"}
    assert out == {"channel": "C0000001", "count": 2, "messages": [
        {"ts": "1767225601.000200", "user": "U2", "text": "hello", "time": "2026-01-01T00:00:01+00:00"},
        {"ts": "1767225700.000300", "user": "U3", "text": "ship it", "time": "2026-01-01T00:01:40+00:00"}]}


def test_slack_read_bounds_and_trims_with_notes(registry: ToolRegistry, fake: FakeSlack, ctx: ToolContext) -> None:
    for i in range(6):
        fake.add_message("C0000002", text=f"m{i}", user="U1")
    fake.add_message("C0000002", text="z" * 4000, user="U2")
    out = run(registry, "slack_read", ctx, {"channel": "C0000002", "limit": 3})
    assert [m["text"][:2] for m in out["messages"]] == ["m4", "m5", "zz"]
    assert out["messages"][-1]["truncated"] is True
    assert out["note"] == "older messages exist; only the latest 3 are shown; long messages were trimmed"
    assert [r.form.get("cursor") for r in fake.requests] == [None]  # the first page held enough


def test_slack_read_errors(registry: ToolRegistry, fake: FakeSlack, ctx: ToolContext) -> None:
    with pytest.raises(ToolArgsError, match="oldest: Value error, 'yesterday' is neither"):
        tool(registry, "slack_read").validate({"channel": "C0000001", "oldest": "yesterday"})
    with pytest.raises(ToolError, match="channel 'C0999999' was not found"):
        run(registry, "slack_read", ctx, {"channel": "C0999999"})
    with pytest.raises(ToolError, match="#missing was not found"):
        run(registry, "slack_read", ctx, {"channel": "#missing"})
    fake.revoked.add(fake.token)
    with pytest.raises(ConnectorError, match="reconnect Slack") as info:
        run(registry, "slack_read", ctx, {"channel": "C0000001"})
    assert (info.value.provider, info.value.reason) == ("slack", "revoked")


def test_slack_without_a_stored_token(registry: ToolRegistry, fake: FakeSlack, ctx: ToolContext) -> None:
    other = ToolContext(uid="nobody", run_id="r", action_id="a", users=ctx.users, settings=ctx.settings,
                        connectors=ctx.connectors)
    with pytest.raises(ConnectorError, match="Slack is not connected"):
        run(registry, "slack_channels", other, {})
    assert fake.requests == []
