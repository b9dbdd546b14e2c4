"""Issue 21: each instance keeps an MCP server's tool list for ``MCP_LIST_TTL_S`` and drops it when
the server sends ``notifications/tools/list_changed`` — against a real SDK server over Streamable
HTTP whose tool list changes when its ``unlock`` tool is called. Listings are counted, not timed."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from shared.config import McpServer
from shared.models.base import ModelRequest, Turn
from shared.models.scripted import call, calls_turn, text_turn
from shared.tools.mcp_listings import LISTINGS
from tests.agent.conftest import MakeRuntime
from tests.agent.mcp_servers import serving
from tests.agent.test_loop import start_and_drive
from tests.agent.test_mcp_tools import runtime

CHANGING = Path(__file__).parent / "mcp_servers" / "changing_server.py"


@pytest.fixture
def changing_url() -> Iterator[str]:
    """A fresh server each test (its tool list is its state)."""
    with serving([sys.executable, str(CHANGING), "{port}"]) as url:
        yield url


def offered(request: ModelRequest) -> set[str]:
    return {d.name for d in request.tools}


def test_a_listing_is_kept_for_its_ttl_and_dropped_when_the_server_says_it_changed(
        make_runtime: MakeRuntime, changing_url: str) -> None:
    server = McpServer(name="changing", url=changing_url)
    chat: list[Turn] = []
    rt, seen = runtime(make_runtime, chat, server, mcp_list_ttl_s=3600.0)
    before = LISTINGS.listed
    start_and_drive(rt, "hi")
    start_and_drive(rt, "hi again")
    assert LISTINGS.listed - before == 1  # listed once for both runs (the TTL keeps it)
    assert "changing_unlock" in offered(seen[-1]) and "changing_secret" not in offered(seen[-1])

    chat[:] = [calls_turn(call("changing_unlock", {})), text_turn("unlocked")]
    done, _ = start_and_drive(rt, "unlock it")
    assert done.status == "completed"
    assert LISTINGS.listed - before == 1  # the call's own run keeps its registry
    start_and_drive(rt, "what can you do now?")
    # The notification received during the call dropped the listing: the next run listed again.
    assert LISTINGS.listed - before == 2
    assert {"changing_unlock", "changing_secret"} <= offered(seen[-1])
    start_and_drive(rt, "and now?")
    assert LISTINGS.listed - before == 2


def test_a_ttl_of_zero_lists_at_every_run_start(make_runtime: MakeRuntime, changing_url: str) -> None:
    rt, seen = runtime(make_runtime, [], McpServer(name="changing", url=changing_url), mcp_list_ttl_s=0.0)
    before = LISTINGS.listed
    for _ in range(3):
        start_and_drive(rt, "hi")
    assert LISTINGS.listed - before == 4  # the process's registry, then each of the three runs
    assert "changing_unlock" in offered(seen[-1])


def test_a_server_that_cannot_be_listed_is_remembered_briefly(make_runtime: MakeRuntime) -> None:
    down = McpServer(name="down", url="http://127.0.0.1:9/mcp")
    rt, seen = runtime(make_runtime, [], down, mcp_list_ttl_s=3600.0, mcp_timeout_s=5.0)
    before = LISTINGS.listed
    for _ in range(3):
        done, _ = start_and_drive(rt, "hi")
        assert done.status == "completed"
    assert LISTINGS.listed - before == 1
    assert all("down" in r.system_instruction and "[UNAVAILABLE TOOLS]" in r.system_instruction for r in seen)
