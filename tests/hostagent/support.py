"""Runs the host agent against the reference host over real WebSockets on loopback, and checks
what every session must satisfy on the wire and in its log (``check_session``)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from hostagent.agent import AgentConfig, HostAgent, SessionResult
from hostagent.alt_host.cinema import FILMS
from hostagent.alt_host.server import AltHost
from hostagent.hosting import Frame
from hostagent.planner import Planner
from hostagent.reference_host.catalog import MOVIES_BY_ID, SHOWTIMES
from hostagent.reference_host.faults import Fault, parse_fault
from hostagent.reference_host.server import ReferenceHost
from hostagent.rules_planner import RulesPlanner
from hostagent.schemas import parse_frame
from hostagent.session_log import SessionLog, log_record_schema

ROOM = "room-1"
GOAL = ("Book 2 seats for Dune on 2026-07-01 in the evening, name Grace Hopper, email grace@example.com, "
        "coupon SAVE10")
# Every wait a test expects to end with an answer keeps run()'s REPLY_TIMEOUT_S, far above any
# loopback reply on a loaded machine. Only the faults that drop or hold back a state.updated need a
# timer to fire: those tests shorten the wait for an update to UPDATE_TIMEOUT_S (the host sends an
# update right after its result, so a second of silence is the fault, not the load). Nothing asserts
# how long anything took.
REPLY_TIMEOUT_S = 5.0
UPDATE_TIMEOUT_S = 1.0
LOG_VALIDATOR = Draft202012Validator(log_record_schema())
VACUOUS = {"next", "next step", "continue", "proceed", "because", "n/a", "none", "todo", "action"}


HOSTS = ("reference", "alt")


@dataclass(frozen=True)
class Booked:
    """What a host booked, the same for both hosts (None: nothing)."""

    stage: str
    reference: str | None
    movie: str | None
    seats: int
    name: str | None
    coupon: str | None
    email: str | None = None
    time: str | None = None
    """The showtime's start, HH:MM."""


@dataclass
class Session:
    result: SessionResult
    records: list[dict[str, Any]]
    host: Any
    """The ReferenceHost or the AltHost the session ran against."""
    log_path: Path
    kind: str = "reference"

    @property
    def frames(self) -> list[Frame]:
        return self.host.transcripts.get(ROOM, [])

    def sent(self, type_: str | None = None) -> list[dict[str, Any]]:
        """The envelopes the agent sent, as the host received them."""
        out = [f.json() for f in self.frames if f.direction == "in"]
        return [e for e in out if e is not None and (type_ is None or e.get("type") == type_)]

    def received(self, type_: str | None = None) -> list[dict[str, Any]]:
        out = [f.json() for f in self.frames if f.direction == "out"]
        return [e for e in out if e is not None and (type_ is None or e.get("type") == type_)]

    def calls(self) -> list[tuple[str, dict[str, Any]]]:
        return [(e["payload"]["name"], e["payload"]["params"]) for e in self.sent("tool.call")]

    def logged(self, kind: str, type_: str | None = None) -> list[dict[str, Any]]:
        return [r for r in self.records if r["kind"] == kind and (type_ is None or r["type"] == type_)]

    @property
    def booking(self) -> Any:
        return self.host.host_of(ROOM).booking

    @property
    def booked(self) -> Booked:
        if self.kind == "alt":
            visit = self.host.visit(ROOM)
            start = visit.screening[-4:] if visit.screening else None
            return Booked(stage=visit.stage, reference=visit.reference,
                          movie=FILMS[visit.film][0] if visit.film else None, seats=len(visit.places),
                          name=visit.buyer[0] if visit.buyer else None, coupon=visit.promo,
                          email=visit.buyer[1] if visit.buyer else None,
                          time=f"{start[:2]}:{start[2:]}" if start else None)
        b = self.booking
        title = MOVIES_BY_ID[b.movie_id].title if b.movie_id else None
        return Booked(stage=b.stage, reference=b.booking_id, movie=title, seats=len(b.seat_ids), name=b.name,
                      coupon=b.coupon, email=b.email,
                      time=SHOWTIMES[b.showtime_id].time if b.showtime_id else None)


def faults(*specs: str) -> list[Fault]:
    return [parse_fault(s) for s in specs]


def start_host(kind: str, fault_specs: Sequence[str] = (), **kwargs: Any) -> Any:
    """An unstarted host of ``kind`` (``reference`` or ``alt``) with these faults."""
    if kind == "alt":
        return AltHost(faults=list(fault_specs), **kwargs)
    return ReferenceHost(faults=faults(*fault_specs), **kwargs)


def run(tmp_path: Path, *, fault_specs: Sequence[str] = (), goal: str = GOAL, planner: Planner | None = None,
        timeout_s: float = REPLY_TIMEOUT_S, host_kwargs: dict[str, Any] | None = None, check: bool = True,
        host: str = "reference",
        **config: Any) -> Session:
    log_path = tmp_path / "session.jsonl"
    kind = host

    async def go() -> tuple[SessionResult, Any]:
        async with start_host(kind, fault_specs, **(host_kwargs or {})) as host:
            cfg = AgentConfig(url=host.url, room=ROOM, goal=goal, timeout_s=timeout_s,
                              question_timeout_s=config.pop("question_timeout_s", 5.0),
                              session_timeout_s=config.pop("session_timeout_s", 60.0), **config)
            result = await HostAgent(cfg, planner or RulesPlanner(), SessionLog(log_path)).run()
            return result, host

    result, host = asyncio.run(go())
    records = [json.loads(line) for line in log_path.read_text().splitlines()]
    session = Session(result, records, host, log_path, kind)
    if check:
        check_session(session)
    return session


def assert_clean(session: Session) -> None:
    """No protocol violation on either side and nothing to recover from: the host sent no error and
    no frame the agent refused; the agent logged no error and no recovery."""
    assert not session.received("error"), session.received("error")
    assert not [r for r in session.records if r["kind"] in ("error", "recovery")], [
        (r["kind"], r["type"], r["code"], r["reason"]) for r in session.records if r["kind"] in ("error", "recovery")]


def check_log(records: list[dict[str, Any]], result: SessionResult | None = None) -> None:
    """The log is complete: every line valid, numbered, from session.begin to session.finish."""
    assert records, "empty log"
    for record in records:
        errors = [e.message for e in LOG_VALIDATOR.iter_errors(record)]
        assert not errors, (record, errors)
    assert [r["seq"] for r in records] == list(range(1, len(records) + 1))
    assert records[0]["type"] == "session.begin"
    assert [r["type"] for r in records].count("session.finish") == 1
    finish = records[-1]
    assert finish["kind"] == "session" and finish["type"] == "session.finish"
    if result is not None:
        assert finish["outcome"] == result.outcome and finish["data"]["exit_code"] == result.exit_code


def check_session(session: Session) -> None:
    """What every session satisfies, whatever the faults: the log is complete and matches the
    wire; every frame the agent sent is valid; every tool.call names a tool of the toolSchema the
    agent knew, with a non-empty reason; never two calls in flight."""
    records = session.records
    check_log(records, session.result)
    out_ids = [r["id"] for r in records if r["kind"] == "envelope" and r["direction"] == "out"]
    # relay.join is the first frame; everything the agent sent reached the log, in order.
    assert out_ids == [e["id"] for e in session.sent()]
    for frame in session.frames:
        if frame.direction == "in":
            parse_frame(frame.text, sender="agent")  # raises on any invalid frame the agent sent
    in_ids = {r["id"] for r in records if r["kind"] == "envelope" and r["direction"] == "in"}
    refused = len([r for r in records if r["kind"] == "error" and r["type"] in ("frame", "connection")])
    host_ids = [e.get("id") for e in session.received()]
    missing = [i for i in host_ids if i not in in_ids]
    assert len(missing) <= refused, f"host frames missing from the log: {missing}"

    stale = {r["id"] for r in records if r["kind"] == "verification" and r["outcome"] == "stale"}
    tools: list[str] = []
    pending: str | None = None
    for r in records:
        if r["kind"] == "outcome" and r["id"] == pending:
            pending = None  # answered, or given up on (TIMEOUT_RESULT): no longer in flight
        if r["kind"] != "envelope":
            continue
        env = r["data"]["envelope"]
        if r["direction"] == "in" and env["type"] in ("snapshot.state", "state.updated") and r["id"] not in stale:
            tools = [t["name"] for t in env["payload"]["toolSchema"]]
        if r["direction"] == "in" and pending is not None and env.get("replyTo") == pending:
            pending = None
        if r["direction"] == "out" and env["type"] == "tool.call":
            assert pending is None, f"tool.call {env['id']} sent while {pending} was in flight"
            assert env["payload"]["name"] in tools, (env["payload"]["name"], tools)
            reason = env["payload"]["reason"].strip()
            assert len(reason) >= 8 and reason.lower().strip(".! ") not in VACUOUS, reason  # a concrete reason
            pending = env["id"]
    # The same on the host's side of the wire.
    waiting: str | None = None
    for frame in session.frames:
        data = frame.json() or {}
        if frame.direction == "in" and data.get("type") == "tool.call":
            assert waiting is None, f"the host received {data['id']} while {waiting} was unanswered"
            waiting = data["id"]
        elif frame.direction == "out" and waiting is not None and data.get("replyTo") == waiting:
            waiting = None
        elif frame.direction == "in" and data.get("type") == "snapshot.get":
            waiting = None  # the agent resyncs only once it stopped waiting for a reply
