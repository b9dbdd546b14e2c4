"""The reference host on its own: its relay, its answers to bad frames, a separate host process
joining a room through the relay, and its fault switches."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import InvalidStatus

from hostagent.agent import AgentConfig, HostAgent
from hostagent.reference_host.faults import parse_fault
from hostagent.reference_host.server import ReferenceHost, run_external_host
from hostagent.rules_planner import RulesPlanner
from hostagent.schemas import parse_frame
from hostagent.session_log import SessionLog
from tests.hostagent.support import GOAL, check_log


def _env(type_: str, payload: dict[str, Any], id_: str) -> str:
    return json.dumps({"v": "mvp-0.2", "id": id_, "type": type_, "payload": payload})


async def _reply(ws: ClientConnection) -> dict[str, Any]:
    text = await asyncio.wait_for(ws.recv(), 5)
    parse_frame(text, sender=("host", "relay"))  # whatever the host sends is valid
    data: dict[str, Any] = json.loads(text)
    return data


def _talk(frames: list[str], *, join: bool = True) -> list[dict[str, Any]]:
    async def go() -> list[dict[str, Any]]:
        async with ReferenceHost() as host, connect(host.url) as ws:
            if join:
                await ws.send(_env("relay.join", {"room": "r", "role": "agent"}, "j1"))
                assert (await _reply(ws))["type"] == "relay.joined"
            out = []
            for frame in frames:
                await ws.send(frame)
                out.append(await _reply(ws))
            return out

    return asyncio.run(go())


def test_the_first_frame_must_be_relay_join() -> None:
    (reply,) = _talk([_env("session.start", {}, "s1")], join=False)
    assert reply["type"] == "error" and reply["replyTo"] == "s1"
    assert reply["payload"] == {"code": "INVALID_MESSAGE",
                                "message": "the first message must be relay.join, not session.start"}


@pytest.mark.parametrize(("frame", "message"), [
    ("{not json", "frame is not JSON"),
    (json.dumps({"v": "mvp-0.1", "id": "x", "type": "snapshot.get", "payload": {}}), "unsupported protocol version"),
    (_env("tool.dance", {}, "x"), "unknown message type 'tool.dance'"),
    (_env("tool.result", {"name": "a", "ok": True, "result": 1}, "x"), "'tool.result' may not be sent by the agent"),
    (_env("tool.call", {"name": "select_movie", "params": {}, "reason": ""}, "x"),
     "tool.call is invalid at payload/reason"),
], ids=["not-json", "wrong-version", "unknown-type", "wrong-sender", "empty-reason"])
def test_a_bad_frame_is_answered_invalid_message(frame: str, message: str) -> None:
    (reply,) = _talk([frame])
    assert reply["type"] == "error" and reply["payload"]["code"] == "INVALID_MESSAGE"
    assert message in reply["payload"]["message"]


def test_host_errors_name_the_request() -> None:
    replies = _talk([
        _env("snapshot.get", {}, "g0"),
        _env("session.start", {"goal": "Book Dune"}, "s1"),
        _env("tool.call", {"name": "confirm_booking", "params": {}, "reason": "book it now please"}, "c1"),
        _env("tool.call", {"name": "select_movie", "params": {"movieId": 7}, "reason": "open the movie"}, "c2"),
        _env("tool.call", {"name": "select_movie", "params": {"movieId": "m9"}, "reason": "open the movie"}, "c3"),
        _env("session.end", {"reason": "done"}, "e1"),
        _env("snapshot.get", {}, "g1"),
    ])
    assert [(r["type"], r.get("replyTo"), r["payload"].get("code")) for r in replies] == [
        ("error", "g0", "SESSION_NOT_ACTIVE"), ("session.started", "s1", None), ("error", "c1", "UNKNOWN_TOOL"),
        ("error", "c2", "INVALID_PARAMS"), ("error", "c3", "INVALID_PARAMS"), ("session.ended", "e1", None),
        ("error", "g1", "SESSION_NOT_ACTIVE")]
    assert replies[5]["payload"]["summary"] == "no booking made (left at stage browse)"


def test_a_wrong_path_is_refused_at_the_handshake() -> None:
    async def go() -> None:
        async with ReferenceHost() as host:
            with pytest.raises(InvalidStatus) as refused:
                async with connect(host.url.replace("/relay", "/nope")):
                    pass
            assert refused.value.response.status_code == 404

    asyncio.run(go())


def test_the_relay_forwards_between_a_separate_host_and_the_agent(tmp_path: Path) -> None:
    async def go() -> tuple[Any, Any, ReferenceHost]:
        async with ReferenceHost() as relay:
            host_task = asyncio.create_task(run_external_host(relay.url, "shared-room"))
            while "shared-room" not in relay.rooms or relay.rooms["shared-room"].external_host is None:
                await asyncio.sleep(0.01)  # wait until the host has joined
            cfg = AgentConfig(url=relay.url, room="shared-room", goal=GOAL, timeout_s=5)
            result = await HostAgent(cfg, RulesPlanner(), SessionLog(tmp_path / "s.jsonl")).run()
            return result, await asyncio.wait_for(host_task, 5), relay

    result, host, relay = asyncio.run(go())
    assert result.outcome == "completed"
    assert host.booking.booking_id is not None and host.booking.name == "Grace Hopper"
    assert relay.rooms["shared-room"].host is None  # the relay did not answer for the room itself
    records = [json.loads(line) for line in (tmp_path / "s.jsonl").read_text().splitlines()]
    check_log(records, result)
    forwarded = [f.json() for f in relay.transcripts["shared-room"] if f.direction == "out"]
    assert [f["type"] for f in forwarded if f][:3] == ["relay.joined", "session.started", "snapshot.state"]


def test_fault_specs_parse_and_refuse_nonsense() -> None:
    fault = parse_fault("goal_change:select_showtime:1:Make it Oppenheimer: the 20:30 one")
    assert (fault.kind, fault.tool, fault.times, fault.text) == (
        "goal_change", "select_showtime", 1, "Make it Oppenheimer: the 20:30 one")
    assert parse_fault("drop_state_update").tool is None and parse_fault("drop_state_update:*:2").times == 2
    for bad, why in [("explode", "unknown fault"), ("tool_execution_failed::x", "TIMES must be an integer"),
                     ("goal_change:select_movie", "needs the user's new text"), ("drop_state_update::0", "at least 1")]:
        with pytest.raises(ValueError, match=why):
            parse_fault(bad)
