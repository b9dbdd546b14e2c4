"""``host-agent conform``: checks a host against the rules of the host protocol (mvp-0.2).

For teams implementing a host: it drives the host over the protocol and prints a pass/fail report
per rule, exit 0 when every rule holds, 1 when one is broken (2 bad usage, 4 no connection).

Two passes, each on its own connection:

1. **Probes** (room ``ROOM-probe``): ``relay.join``; ``snapshot.get`` before a session; a frame that
   is not JSON; ``session.start``; ``snapshot.get``; a call of a tool the toolSchema does not offer;
   a call of an offered tool with params its schema refuses; ``session.end``; ``snapshot.get``
   after it. Each must get the reply (and error code) the protocol prescribes.
2. **A session** (room ``ROOM``): the host agent (rules planner) books the first movie the probe saw
   (or ``--goal``), and every frame of it is checked; the report says how it ended.

The rules (``RULES``; docs/host-protocol.md, "Conformance checker", says what each requires):
``envelope``, ``reply-pairing``, ``tool-schema``, ``state-after-call``, ``error-codes``, ``session``.

Behaviour the protocol allows (a ``TOOL_EXECUTION_FAILED``, a ``user.message`` that changes the
goal, text in the screen) passes.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from hostagent.agent import AgentConfig, HostAgent
from hostagent.errors import ConnectionLost, ProtocolViolation
from hostagent.protocol import PROTOCOL_VERSION, Envelope, ToolSpec, new_id
from hostagent.rules_planner import RulesPlanner
from hostagent.schemas import parse_frame
from hostagent.screen import read_screen
from hostagent.session_log import SessionLog
from hostagent.transport import Transport

RULES = {
    "envelope": "every frame is a valid mvp-0.2 envelope of a host message type",
    "reply-pairing": "every request gets exactly one reply of the expected type, paired by replyTo",
    "tool-schema": "every toolSchema names each tool once, with a valid JSON Schema as params",
    "state-after-call": "a successful tool.result is followed by the state.updated it caused",
    "error-codes": "errors carry the protocol's code for what happened",
    "session": "session.start and session.end are answered",
}
EXIT_PASS, EXIT_FAIL, EXIT_USAGE, EXIT_NO_CONNECTION = 0, 1, 2, 4
_REQUEST_REPLIES = {"relay.join": {"relay.joined"}, "session.start": {"session.started"},
                    "snapshot.get": {"snapshot.state"}, "tool.call": {"tool.result"}, "session.end": {"session.ended"}}


@dataclass
class Report:
    url: str
    room: str
    broken: dict[str, list[str]] = field(default_factory=lambda: {rule: [] for rule in RULES})
    checked: dict[str, int] = field(default_factory=lambda: {rule: 0 for rule in RULES})
    session: str | None = None
    """How the session pass ended (the agent's outcome and reason): a pass that booked nothing
    checked fewer frames, and the report says so."""

    def check(self, rule: str, ok: bool, problem: str) -> None:
        self.checked[rule] += 1
        if not ok and problem not in self.broken[rule]:
            self.broken[rule].append(problem)

    @property
    def passed(self) -> bool:
        return not any(self.broken.values())

    def text(self) -> str:
        lines = [f"host-agent conform {self.url} (room {self.room}, protocol {PROTOCOL_VERSION})"]
        for rule, summary in RULES.items():
            problems = self.broken[rule]
            lines.append(f"{'FAIL' if problems else 'PASS'} {rule:<17} {summary} ({self.checked[rule]} checks)")
            lines += [f"     - {p}" for p in problems[:10]]
        if self.session is not None:
            lines.append(f"session pass: {self.session}")
        failed = [r for r, p in self.broken.items() if p]
        lines.append("result: PASS" if not failed else f"result: FAIL ({', '.join(failed)})")
        return "\n".join(lines)

    def json(self) -> dict[str, Any]:
        return {"url": self.url, "room": self.room, "passed": self.passed, "session": self.session,
                "rules": {r: {"passed": not self.broken[r], "checks": self.checked[r], "problems": self.broken[r]}
                          for r in RULES}}


def _tool_schema_problems(tools: Any) -> list[str]:
    if not isinstance(tools, list):
        return ["toolSchema is not a list"]
    problems, seen = [], set()
    for tool in tools:
        name = tool.get("name") if isinstance(tool, dict) else None
        if name in seen:
            problems.append(f"tool {name!r} is listed twice")
        seen.add(name)
        params = tool.get("params") if isinstance(tool, dict) else None
        try:
            Draft202012Validator.check_schema(params if isinstance(params, dict) else {"type": "nonsense"})
        except SchemaError as exc:
            problems.append(f"tool {name!r}: params is not a valid JSON Schema ({exc.message})")
    return problems


def _rule_of(violation: str) -> str:
    return "tool-schema" if "toolSchema" in violation else "envelope"


class _Probe:
    """One connection speaking raw frames, every inbound frame checked."""

    def __init__(self, url: str, report: Report, timeout_s: float) -> None:
        self.transport = Transport(url, connect_timeout_s=timeout_s)
        self.report = report
        self.timeout_s = timeout_s
        self.session_id: str | None = None

    async def send(self, type_: str, payload: dict[str, Any] | str) -> str:
        if isinstance(payload, str):  # a raw (broken) frame
            await self.transport.send(payload)
            return ""
        env: dict[str, Any] = {"v": PROTOCOL_VERSION, "id": new_id("conform"), "type": type_, "payload": payload}
        if self.session_id is not None:
            env["sessionId"] = self.session_id
        await self.transport.send(json.dumps(env))
        return str(env["id"])

    async def reply(self, request_id: str, what: str) -> Envelope | None:
        """The reply to ``request_id`` (an error without replyTo answers a frame that had no id)."""
        try:
            async with asyncio.timeout(self.timeout_s):
                while True:
                    raw = await self.transport.recv()
                    try:
                        env = parse_frame(raw, sender=("host", "relay"))
                    except ProtocolViolation as exc:
                        self.report.check(_rule_of(exc.message), False, f"{what}: {exc.message}")
                        continue
                    self.report.check("envelope", True, "")
                    if env.type in ("snapshot.state", "state.updated"):
                        problems = _tool_schema_problems(env.payload.get("toolSchema"))
                        self.report.check("tool-schema", not problems, "; ".join(problems))
                    if env.replyTo == request_id or (not request_id and env.type == "error"):
                        return env
                    if env.replyTo is None and env.type in ("relay.joined", "session.started", "snapshot.state",
                                                            "session.ended"):
                        return env
        except TimeoutError:
            self.report.check("reply-pairing", False, f"{what}: no reply within {self.timeout_s:g}s")
            return None

    async def expect(self, type_: str, payload: dict[str, Any], want: str, what: str,
                     code: str | None = None) -> Envelope | None:
        request = await self.send(type_, payload)
        env = await self.reply(request, what)
        if env is None:
            return None
        if code is not None:
            got = env.payload.get("code") if env.type == "error" else env.type
            self.report.check("error-codes", got == code, f"{what}: expected error {code}, got {got}")
        else:
            rule = "session" if type_ in ("session.start", "session.end") else "reply-pairing"
            self.report.check(rule, env.type == want, f"{what}: expected {want}, got {env.type} "
                              f"{env.payload.get('code', '')}".strip())
        return env


def _invalid_params(tool: ToolSpec) -> dict[str, Any] | None:
    """Params ``tool``'s schema refuses, when one can be made."""
    schema = tool.params
    props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    candidates: list[dict[str, Any]] = [{"conform_unknown_param": 1}]
    for name, sub in (props or {}).items():
        candidates.append({name: {"conform": ["not", "a", "scalar"]}} if isinstance(sub, dict) else {})
    validator = Draft202012Validator(schema)
    return next((c for c in candidates if c and not validator.is_valid(c)), None)


async def probe(url: str, room: str, report: Report, timeout_s: float) -> str | None:
    """The probe pass; returns the first movie title the host showed (for the session pass)."""
    p = _Probe(url, report, timeout_s)
    await p.transport.open()  # ConnectionLost here: nothing to check (exit 4)
    try:
        return await _probes(p, room, report)
    except ConnectionLost as exc:
        report.check("reply-pairing", False, f"the probe connection was lost: {exc.message}")
        return None
    finally:
        await p.transport.close()


async def _probes(p: _Probe, room: str, report: Report) -> str | None:
    await p.expect("relay.join", {"room": f"{room}-probe", "role": "agent"}, "relay.joined", "relay.join")
    await p.expect("snapshot.get", {}, "", "snapshot.get before session.start", code="SESSION_NOT_ACTIVE")
    await p.send("raw", "{this is not json")
    env = await p.reply("", "a frame that is not JSON")
    if env is not None:
        report.check("error-codes", env.type == "error" and env.payload.get("code") == "INVALID_MESSAGE",
                     f"a frame that is not JSON: expected error INVALID_MESSAGE, got {env.type}")
    started = await p.expect("session.start", {"goal": "conformance check"}, "session.started", "session.start")
    if started is not None and started.type == "session.started":
        p.session_id = str(started.payload.get("sessionId"))
    snap = await p.expect("snapshot.get", {}, "snapshot.state", "snapshot.get")
    tools = [ToolSpec.model_validate(t) for t in (snap.payload.get("toolSchema") or [])] if snap and \
        snap.type == "snapshot.state" and not _tool_schema_problems(snap.payload.get("toolSchema")) else []
    title = next((m.title for m in read_screen(snap.payload.get("uiSpec")).movies), None) if snap else None
    call = {"name": "conform_no_such_tool", "params": {}, "reason": "conformance: a tool nobody offers"}
    await p.expect("tool.call", call, "", "tool.call of a tool not offered", code="UNKNOWN_TOOL")
    target = next(((t, bad) for t in tools if (bad := _invalid_params(t)) is not None), None)
    if target is not None:
        call = {"name": target[0].name, "params": target[1], "reason": "conformance: params the schema refuses"}
        await p.expect("tool.call", call, "", f"tool.call {target[0].name} with params its schema refuses",
                       code="INVALID_PARAMS")
    await p.expect("session.end", {"reason": "conformance probes done"}, "session.ended", "session.end")
    await p.expect("snapshot.get", {}, "", "snapshot.get after session.end", code="SESSION_NOT_ACTIVE")
    return title


def check_session_log(records: list[dict[str, Any]], report: Report) -> None:
    """The rules on the frames of an agent session (its JSONL log)."""
    pending: dict[str, dict[str, Any]] = {}  # request id -> envelope
    offered: list[str] = []
    awaiting_state: dict[str, str] = {}  # tool.call id -> tool, after a successful result
    calls: dict[str, dict[str, Any]] = {}
    refused_params: dict[str, str] = {}  # params json -> call id answered INVALID_PARAMS
    for r in records:
        if r["kind"] == "error" and r["type"] in ("frame", "connection") and r["direction"] == "in":
            if r["code"] == "CONNECTION_LOST":
                for rid, req in pending.items():
                    report.check("reply-pairing", False, f"{req['type']} {rid} got no reply: {r['reason']}")
                pending.clear()
            else:
                report.check(_rule_of(r["reason"] or ""), False, r["reason"] or "a refused frame")
                # The refused frame may have been the awaited reply or state update: only its own rule
                # is reported for it, not the gap it leaves.
                awaiting_state.clear()
                if pending:
                    pending.pop(next(reversed(pending)))
            continue
        if r["kind"] != "envelope":
            continue
        env = r["data"]["envelope"]
        payload = env.get("payload") or {}
        if r["direction"] == "out":
            if env["type"] in _REQUEST_REPLIES:
                for call_id, tool in list(awaiting_state.items()):
                    report.check("state-after-call", False, f"{tool} ({call_id}) succeeded, but no state.updated "
                                 f"with cause {call_id} came before the next request")
                    del awaiting_state[call_id]
                pending[env["id"]] = env
            if env["type"] == "tool.call":
                calls[env["id"]] = env
            continue
        report.check("envelope", True, "")
        if env["type"] in ("snapshot.state", "state.updated"):
            problems = _tool_schema_problems(payload.get("toolSchema"))
            report.check("tool-schema", not problems, "; ".join(problems))
            offered = [t["name"] for t in payload.get("toolSchema", []) if isinstance(t, dict)]
            if env["type"] == "state.updated" and payload.get("cause") in awaiting_state:
                report.check("state-after-call", True, "")
                del awaiting_state[payload["cause"]]
        reply_to = env.get("replyTo")
        request = pending.pop(reply_to, None) if reply_to else None
        if request is None and reply_to is None and env["type"] in ("tool.result", "error") and pending:
            rid, req = next(iter(pending.items()))
            report.check("reply-pairing", False, f"a {env['type']} without replyTo came while {req['type']} {rid} "
                         "waited (a tool.result or error must name the request it answers)")
            continue
        if request is None and reply_to is None and pending:
            # Handshake replies may leave replyTo out: the oldest request of that type is answered.
            oldest = next((i for i, e in pending.items() if env["type"] in _REQUEST_REPLIES[e["type"]]), None)
            request = pending.pop(oldest) if oldest is not None else None
        if request is None:
            continue
        kind = request["type"]
        if env["type"] == "error":
            code = payload.get("code")
            if kind == "tool.call":
                name = request["payload"]["name"]
                if code == "UNKNOWN_TOOL":
                    report.check("error-codes", name not in offered, f"{name} was answered UNKNOWN_TOOL although the "
                                 "current toolSchema offers it")
                if code == "INVALID_PARAMS":
                    refused_params[json.dumps([name, request["payload"]["params"]], sort_keys=True)] = request["id"]
            continue
        report.check("session" if kind in ("session.start", "session.end") else "reply-pairing",
                     env["type"] in _REQUEST_REPLIES[kind],
                     f"{kind} {request['id']} was answered with {env['type']}")
        if kind == "tool.call" and env["type"] == "tool.result":
            name = request["payload"]["name"]
            awaiting_state[request["id"]] = name
            key = json.dumps([name, request["payload"]["params"]], sort_keys=True)
            earlier = refused_params.pop(key, None)
            report.check("error-codes", earlier is None, f"{name} was answered INVALID_PARAMS ({earlier}) and then "
                         "accepted with the very same params")
    for call_id, tool in awaiting_state.items():
        report.check("state-after-call", False, f"{tool} ({call_id}) succeeded, but no state.updated with cause "
                     f"{call_id} followed")
    for rid, req in pending.items():
        if req["type"] != "relay.join":
            report.check("reply-pairing", False, f"{req['type']} {rid} got no reply")


async def conform(url: str, room: str, *, timeout_s: float = 5.0, goal: str | None = None,
                  update_timeout_s: float | None = None) -> Report:
    """Both passes against the host at ``url``; ``timeout_s`` bounds every wait, ``update_timeout_s``
    (default ``timeout_s``) the session pass's wait for a ``state.updated`` after a result."""
    report = Report(url, room)
    title = await probe(url, room, report, timeout_s)
    if goal is None:
        goal = f"Book 1 seat for {title or 'the first movie'}, name Conformance Check, email conform@example.com"
    with tempfile.TemporaryDirectory() as tmp:
        log_path = Path(tmp) / "conform.jsonl"
        config = AgentConfig(url=url, room=room, goal=goal, timeout_s=timeout_s, update_timeout_s=update_timeout_s,
                             question_timeout_s=timeout_s,
                             session_timeout_s=max(60.0, 20 * timeout_s), connect_timeout_s=timeout_s)
        result = await HostAgent(config, RulesPlanner(), SessionLog(str(log_path))).run()
        report.session = f"{result.outcome} ({result.reason})"
        records = [json.loads(line) for line in log_path.read_text().splitlines()]
    check_session_log(records, report)
    return report


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="host-agent conform", description="Check a host against mvp-0.2.")
    parser.add_argument("--url", required=True, help="the host or relay: ws://HOST:PORT/PATH")
    parser.add_argument("--room", required=True, help="the room to use (the probes use ROOM-probe)")
    parser.add_argument("--timeout-s", type=float, default=5.0, help="bound of every wait (default 5)")
    parser.add_argument("--goal", default=None, help="the booking goal of the session pass (default: the first "
                                                     "movie the host lists)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args(argv)
    if not args.url.startswith(("ws://", "wss://")) or args.timeout_s <= 0:
        parser.error("expected --url ws://HOST:PORT/PATH and --timeout-s > 0")
    try:
        report = asyncio.run(conform(args.url, args.room, timeout_s=args.timeout_s, goal=args.goal))
    except ConnectionLost as exc:
        print(f"host-agent conform: {exc.message}", file=sys.stderr)
        return EXIT_NO_CONNECTION
    print(json.dumps(report.json(), indent=2) if args.json else report.text(), flush=True)
    return EXIT_PASS if report.passed else EXIT_FAIL
