"""Bad input from the host: a single bad frame is refused and the session goes on (resync); three,
a lost connection or a broken handshake end it in an explicit state with a clear logged error, a
complete log, and no wait beyond its timeout."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.server import ServerConnection, serve

from hostagent.agent import AgentConfig, HostAgent
from hostagent.rules_planner import RulesPlanner
from hostagent.session_log import SessionLog
from tests.hostagent.support import HOSTS, REPLY_TIMEOUT_S, Session, check_log, run


def _refused(session: Session) -> list[dict[str, Any]]:
    return [r for r in session.records if r["kind"] == "error"]


BAD_FRAMES = [
    ("malformed_frame", "frame is not JSON"),
    ("unknown_type", "unknown message type"),
    ("wrong_version", "unsupported protocol version"),
    ("binary_frame", "binary frame: the protocol sends JSON text frames only"),
    ("invalid_tool_schema", "params is not a valid JSON Schema"),
]
BAD_IDS = ["malformed-frame", "unknown-type", "wrong-version", "binary-frame", "invalid-tool-schema"]


@pytest.mark.parametrize("host", HOSTS)
@pytest.mark.parametrize(("fault", "message"), BAD_FRAMES, ids=BAD_IDS)
def test_one_bad_frame_mid_flow_is_refused_and_the_booking_completes(tmp_path: Path, host: str, fault: str,
                                                                     message: str) -> None:
    session = run(tmp_path, host=host, fault_specs=[f"{fault}:select_movie"])
    assert session.result.outcome == "completed" and session.result.exit_code == 0
    (error,) = _refused(session)
    assert error["direction"] == "in" and error["code"] == "INVALID_MESSAGE" and message in error["reason"]
    assert error["data"]["fault"] == 1 and error["data"]["maxFaults"] == 3
    # The refused frame is followed by a snapshot.get: the agent reads the state again and goes on.
    sent = session.sent()
    select = next(i for i, e in enumerate(sent) if e["type"] == "tool.call" and e["payload"]["name"] == "select_movie")
    assert sent[select + 1]["type"] == "snapshot.get"
    assert [c[0] for c in session.calls()].count("select_movie") == 1  # it ran: the snapshot showed it
    # At once: no bound had to run out first (the refused frame took the reply's or the update's place).
    assert not [r for r in session.logged("recovery") if r["code"] in ("TIMEOUT_RESULT", "TIMEOUT_STATE_UPDATE")]
    assert session.booked.reference is not None and session.booked.movie == "Dune: Part Two"
    assert session.result.failures == {}  # a refused frame counts among the protocol faults, not the stage's


@pytest.mark.parametrize("host", HOSTS)
def test_three_bad_frames_end_the_session_as_a_protocol_error(tmp_path: Path, host: str) -> None:
    session = run(tmp_path, host=host, fault_specs=["malformed_frame:*:3"])
    assert session.result.outcome == "protocol_error" and session.result.exit_code == 3
    assert session.result.code == "INVALID_MESSAGE"
    assert session.result.reason.startswith("protocol error: 3 frames from the host broke the protocol; the last: ")
    assert [e["data"]["fault"] for e in _refused(session)] == [1, 2, 3]
    assert len(session.sent("tool.call")) == 3  # nothing after the third
    # The agent told the host the session is over, and the host confirmed.
    assert session.sent()[-1]["type"] == "session.end"
    assert session.sent()[-1]["payload"]["reason"].startswith("protocol error: ")
    assert session.received()[-1]["type"] == "session.ended"
    assert session.booked.reference is None


@pytest.mark.parametrize("host", HOSTS)
def test_an_oversized_frame_closes_the_connection_and_ends_the_session(tmp_path: Path, host: str) -> None:
    session = run(tmp_path, host=host, fault_specs=["oversized_frame:select_movie:1"],
                  max_frame_bytes=64 * 1024)
    assert session.result.outcome == "protocol_error" and session.result.exit_code == 3
    (error,) = _refused(session)
    assert error["type"] == "connection" and "larger than 65536 bytes" in error["reason"]
    assert session.sent()[-1]["type"] == "tool.call"  # the connection is gone: no session.end possible


@pytest.mark.parametrize("host", HOSTS)
def test_a_host_that_closes_mid_call(tmp_path: Path, host: str) -> None:
    session = run(tmp_path, host=host, fault_specs=["close_mid_call:select_showtime"])
    assert session.result.outcome == "connection_lost" and session.result.exit_code == 4
    assert "closed the connection (1011 " in session.result.reason
    assert session.sent()[-1]["payload"]["name"] == "select_showtime"
    call_id = session.sent()[-1]["id"]
    # The pending call failed when the connection closed (not at its timeout), and the log says so.
    (outcome,) = [r for r in session.records if r["kind"] == "outcome" and r["id"] == call_id]
    assert outcome["outcome"] == "failed" and outcome["code"] == "CONNECTION_LOST"
    assert _refused(session)[0]["code"] == "CONNECTION_LOST"


def _silent_session(tmp_path: Path, answer: Any, timeout_s: float = REPLY_TIMEOUT_S,
                    ) -> tuple[Any, list[dict[str, Any]], list[str]]:
    """A peer that answers relay.join with ``answer(frame)`` (None: nothing), then stays silent."""
    got: list[str] = []

    async def handler(conn: ServerConnection) -> None:
        async for text in conn:
            got.append(str(text))
            reply = answer(json.loads(text))
            if reply is not None:
                await conn.send(json.dumps(reply))

    async def go() -> Any:
        async with serve(handler, "127.0.0.1", 0) as server:
            port = server.sockets[0].getsockname()[1]
            cfg = AgentConfig(url=f"ws://127.0.0.1:{port}/relay", room="r", goal="Book Dune",
                              timeout_s=timeout_s, session_timeout_s=30)
            return await HostAgent(cfg, RulesPlanner(), SessionLog(tmp_path / "s.jsonl")).run()

    result = asyncio.run(go())
    records = [json.loads(line) for line in (tmp_path / "s.jsonl").read_text().splitlines()]
    check_log(records, result)
    return result, records, got


def test_a_silent_relay_times_out(tmp_path: Path) -> None:
    # Nothing ever answers: the reply's bound is the timer that must fire (1 s keeps the test short).
    result, _, got = _silent_session(tmp_path, lambda frame: None, timeout_s=1.0)
    assert result.outcome == "timeout" and result.exit_code == 5
    assert "no reply to relay.join" in result.reason
    assert [json.loads(g)["type"] for g in got] == ["relay.join"]


def test_a_reply_of_the_wrong_type_is_a_protocol_error(tmp_path: Path) -> None:
    def answer(frame: dict[str, Any]) -> dict[str, Any]:
        return {"v": "mvp-0.2", "id": "x1", "type": "session.started", "replyTo": frame["id"],
                "payload": {"sessionId": "s", "stage": "browse"}}

    result, _, _ = _silent_session(tmp_path, answer)
    assert result.outcome == "protocol_error" and result.exit_code == 3
    assert "relay.join" in result.reason and "answered with session.started" in result.reason


def test_an_envelope_with_extra_fields_is_refused(tmp_path: Path) -> None:
    def answer(frame: dict[str, Any]) -> dict[str, Any]:
        return {"v": "mvp-0.2", "id": "x1", "type": "relay.joined", "replyTo": frame["id"],
                "payload": {"room": "r"}, "extra": True}

    result, records, _ = _silent_session(tmp_path, answer)
    assert result.outcome == "protocol_error"
    (error,) = [r for r in records if r["kind"] == "error"]
    assert "Additional properties are not allowed ('extra' was unexpected)" in error["reason"]
