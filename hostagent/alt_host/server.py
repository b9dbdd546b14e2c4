"""The alternative host's WebSocket side: relay and box office in one process.

Implements docs/host-protocol.md directly on JSON objects (it does not use the agent's protocol
models or schemas, so it is an independent check of both): every connection starts with
``relay.join``; an agent then talks to this host's box office for its room. Frames that break the
protocol are answered ``error INVALID_MESSAGE`` (with ``replyTo`` when the frame had a usable id).

``transcripts[room]`` keeps every frame of a room in both directions (tests read it);
``visit(room)`` is the room's app state.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed

from hostagent.alt_host.cinema import Visit
from hostagent.alt_host.faults import Switch, switch
from hostagent.hosting import Frame, Refusal, ThreadedHost, WebSocketHost, in_thread

VERSION = "mvp-0.2"
AGENT_TYPES = {"session.start", "snapshot.get", "tool.call", "agent.message", "session.end"}
ENVELOPE_KEYS = {"v", "id", "type", "replyTo", "sessionId", "payload"}
MAX_FRAME = 1 << 20


@dataclass(frozen=True)
class Send:
    text: str | bytes | None = None
    hold: bool = False
    close: bool = False


def _problem(data: Any) -> str | None:
    """What is wrong with an agent's envelope (None: nothing)."""
    if not isinstance(data, dict):
        return "an envelope is a JSON object"
    extra = set(data) - ENVELOPE_KEYS
    if extra:
        return f"unexpected envelope fields: {', '.join(sorted(extra))}"
    if data.get("v") != VERSION:
        return f"version must be {VERSION}, got {data.get('v')!r}"
    if not isinstance(data.get("id"), str) or not data["id"]:
        return "id must be a non-empty string"
    if data.get("type") not in AGENT_TYPES and data.get("type") not in ("relay.join",):
        return f"type {data.get('type')!r} is not something an agent sends"
    payload = data.get("payload")
    if not isinstance(payload, dict):
        return "payload must be an object"
    kind = data["type"]
    if kind == "tool.call" and not (isinstance(payload.get("name"), str) and isinstance(payload.get("params"), dict)
                                    and isinstance(payload.get("reason"), str) and payload["reason"].strip()):
        return "tool.call needs name, params (object) and a non-empty reason"
    if kind == "agent.message" and not (isinstance(payload.get("text"), str) and payload["text"]):
        return "agent.message needs a text"
    if kind == "session.end" and not isinstance(payload.get("reason"), str):
        return "session.end needs a reason"
    return None


class BoxOffice:
    """One room's session: answers each envelope of the agent with the frames to send."""

    def __init__(self, room: str, switches: list[Switch], user: tuple[str, str] | None,
                 answers: Sequence[str | Sequence[str]] | None = None) -> None:
        self.room = room
        self.switches = switches
        self.user = user
        self.answers = list(answers) if answers is not None else None
        self.visit = Visit(hide_listing=self._on("hide_listing", "*") is not None)
        self.session: str | None = None
        self.closed = False
        self.chat: list[dict[str, Any]] = []
        self.seq = 0
        self.entered_stage = False

    def _on(self, kind: str, target: str) -> Switch | None:
        for s in self.switches:
            if s.kind == kind and s.applies(target):
                s.fired += 1
                return s
        return None

    def _frame(self, kind: str, payload: dict[str, Any], reply_to: str | None = None) -> dict[str, Any]:
        self.seq += 1
        env: dict[str, Any] = {"v": VERSION, "id": f"lum-{self.room}-{self.seq}", "type": kind}
        if reply_to is not None:
            env["replyTo"] = reply_to
        if self.session is not None:
            env["sessionId"] = self.session
        env["payload"] = payload
        return env

    def _send(self, kind: str, payload: dict[str, Any], reply_to: str | None = None) -> Send:
        return Send(json.dumps(self._frame(kind, payload, reply_to)))

    def refuse(self, code: str, message: str, reply_to: str | None) -> Send:
        return self._send("error", {"code": code, "message": message}, reply_to)

    def _state(self) -> dict[str, Any]:
        return {"stage": self.visit.stage, "uiSpec": self.visit.screen(), "toolSchema": self.visit.tools()}

    def answer(self, env: dict[str, Any]) -> list[Send]:
        kind, rid, payload = env["type"], env["id"], env["payload"]
        if kind == "session.start":
            if self.session is not None:
                return [self.refuse("INVALID_MESSAGE", "this room already has a session", rid)]
            self.session = f"lumiere-{self.room}"
            if payload.get("goal"):
                self.chat.append({"role": "user", "text": payload["goal"], "stage": self.visit.stage})
            return [self._send("session.started", {"sessionId": self.session, "stage": self.visit.stage}, rid)]
        if self.session is None or self.closed:
            return [self.refuse("SESSION_NOT_ACTIVE", "start a session first" if self.session is None
                                else "the session is over", rid)]
        if kind == "snapshot.get":
            return [self._send("snapshot.state", {**self._state(), "messages": self.chat[-20:]}, rid)]
        if kind == "agent.message":
            return self._heard(payload)
        if kind == "session.end":
            self.closed = True
            return [self._send("session.ended", {"sessionId": self.session, "summary": self.visit.receipt()}, rid)]
        return self._call(rid, payload)

    def _heard(self, payload: dict[str, Any]) -> list[Send]:
        self.chat.append({"role": "agent", "text": payload["text"], "stage": self.visit.stage})
        if payload.get("kind") != "question":
            return []
        if self.answers is not None:  # a scripted person: the next answer, or silence once they run out
            if not self.answers:
                return []
            answer = self.answers.pop(0)
            texts = [answer] if isinstance(answer, str) else list(answer)  # one message, or several
        elif self.user is None:
            return []
        else:
            texts = [f"Put it under {self.user[0]}, email {self.user[1]} please."]
        self.chat += [{"role": "user", "text": text, "stage": self.visit.stage} for text in texts]
        return [self._send("user.message", {"text": text, "stage": self.visit.stage}) for text in texts]

    def _call(self, rid: str, payload: dict[str, Any]) -> list[Send]:
        name, params = payload["name"], payload["params"]
        if self._on("close_mid_call", name):
            return [Send(close=True)]
        if self.entered_stage:
            self.entered_stage = False
            if self._on("unknown_tool_after_schema_change", self.visit.stage):
                return [self.refuse("UNKNOWN_TOOL", f"{name} went away when the screen changed", rid)]
        if self._on("invalid_params_first", name):
            return [self.refuse("INVALID_PARAMS", f"{name}: please check the details and try again", rid)]
        if self._on("tool_execution_failed", name):
            return [self.refuse("TOOL_EXECUTION_FAILED", f"{name}: the till is offline, nothing was changed", rid)]
        stage = self.visit.stage
        try:
            result = self.visit.run(name, params)
        except Refusal as refusal:
            return [self.refuse(refusal.code, refusal.message, rid)]
        self.entered_stage = self.visit.stage != stage
        planted = self._on("injected_text", name)
        if planted is not None:
            result["notice"] = planted.text
        return [self._result(rid, name, result), *self._aftermath(rid, name, planted)]

    def _result(self, rid: str, name: str, result: dict[str, Any]) -> Send:
        frame = self._frame("tool.result", {"name": name, "ok": True, "result": result}, rid)
        if self._on("malformed_frame", name):
            return Send(json.dumps(frame)[:-7])
        if self._on("unknown_type", name):
            return Send(json.dumps({**frame, "type": "tool.partial"}))
        if self._on("wrong_version", name):
            return Send(json.dumps({**frame, "v": "mvp-0.3"}))
        if self._on("binary_frame", name):
            return Send(json.dumps(frame).encode())
        if self._on("missing_reply_to", name):
            frame.pop("replyTo")
        return Send(json.dumps(frame))

    def _aftermath(self, rid: str, name: str, planted: Switch | None) -> list[Send]:
        out: list[Send] = []
        change = self._on("goal_change", name)
        if change is not None and change.text:
            self.chat.append({"role": "user", "text": change.text, "stage": self.visit.stage})
            out.append(self._send("user.message", {"text": change.text, "stage": self.visit.stage}))
        if self._on("drop_state_update", name):
            return out
        state: dict[str, Any] = {**self._state(), "cause": rid}
        if planted is not None:
            state["uiSpec"]["components" if "components" in state["uiSpec"] else "sections"].append(
                {"type": "notice", "text": planted.text})
        if self._on("invalid_tool_schema", name):
            state["toolSchema"].append({"name": "print_tickets", "params": {"type": 42}})
        padding = self._on("oversized_frame", name)
        if padding is not None:
            state["uiSpec"]["padding"] = "~" * (padding.times << 20)
        update = self._send("state.updated", state)
        out.append(Send(update.text, hold=True) if self._on("delay_state_update", name) else update)
        return out


class AltHost(WebSocketHost):
    """The server: ``await start()`` (port 0 picks one), ``url``, ``await close()``."""

    def __init__(self, *, faults: Sequence[str] = (), user_profile: tuple[str, str] | None = ("Ada Lovelace",
                                                                                               "ada@example.com"),
                 host: str = "127.0.0.1", port: int = 0, path: str = "/ws",
                 user_answers: Sequence[str | Sequence[str]] | None = None) -> None:
        super().__init__(host=host, port=port, path=path)
        self.specs = list(faults)
        for spec in self.specs:
            switch(spec)  # refuse a bad spec at once
        self.user_profile = user_profile
        self.user_answers = user_answers
        """The simulated person's answers to the agent's questions, in order (None: the profile's sentence)."""
        self.offices: dict[str, BoxOffice] = {}

    def _serve_options(self) -> dict[str, Any]:
        return {"max_size": MAX_FRAME}

    def visit(self, room: str) -> Visit:
        return self.offices[room].visit

    async def _connection(self, conn: ServerConnection) -> None:
        with contextlib.suppress(ConnectionClosed):
            office = await self._join(conn)
            if office is not None:
                await self._talk(conn, office)

    async def _join(self, conn: ServerConnection) -> BoxOffice | None:
        try:
            first = await asyncio.wait_for(conn.recv(), 10)
        except TimeoutError:
            await conn.close(1008, "say relay.join first")
            return None
        data = _decode(first)
        problem = _problem(data) if not isinstance(data, str) else data
        if problem is None and isinstance(data, dict) and (
                data["type"] != "relay.join" or not isinstance(data["payload"].get("room"), str)
                or data["payload"].get("role") != "agent"):
            problem = "join a room first: relay.join {room, role: agent}"
        if problem is not None or not isinstance(data, dict):
            await conn.send(json.dumps({"v": VERSION, "id": "lum-join", "type": "error",
                                        **({"replyTo": data["id"]} if isinstance(data, dict)
                                           and isinstance(data.get("id"), str) and data["id"] else {}),
                                        "payload": {"code": "INVALID_MESSAGE", "message": problem}}))
            await conn.close(1008, "relay.join expected")
            return None
        room = data["payload"]["room"]
        office = BoxOffice(room, [switch(s) for s in self.specs], self.user_profile, self.user_answers)
        self.offices[room] = office
        log = self.transcripts.setdefault(room, [])
        log.append(Frame("in", first))
        joined = json.dumps({"v": VERSION, "id": f"lum-{room}-joined", "type": "relay.joined", "replyTo": data["id"],
                             "payload": {"room": room}})
        log.append(Frame("out", joined))
        await conn.send(joined)
        return office

    async def _talk(self, conn: ServerConnection, office: BoxOffice) -> None:
        log = self.transcripts[office.room]
        held: list[Send] = []
        async for text in conn:
            log.append(Frame("in", text))
            data = _decode(text)
            problem = data if isinstance(data, str) else _problem(data)
            if isinstance(data, dict) and problem is None and data["type"] == "relay.join":
                problem = "already joined"
            if isinstance(data, dict) and problem is None:
                sends = office.answer(data)
            else:
                rid = data.get("id") if isinstance(data, dict) and isinstance(data.get("id"), str) else None
                sends = [office.refuse("INVALID_MESSAGE", problem or "invalid frame", rid or None)]
            earlier, held = held, []
            for send in [*sends, *earlier]:
                if send.close:
                    await conn.close(1011, "box office closed")
                    return
                if send.hold:
                    held.append(Send(send.text))
                elif send.text is not None:
                    log.append(Frame("out", send.text))
                    await conn.send(send.text)


def _decode(text: str | bytes) -> dict[str, Any] | str:
    """The frame as a JSON object, or what is wrong with it."""
    if isinstance(text, bytes):
        return "binary frames are not part of the protocol"
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return f"not JSON: {exc.msg}"
    return data if isinstance(data, dict) else "an envelope is a JSON object"


@contextlib.contextmanager
def running(**kwargs: Any) -> Iterator[ThreadedHost[AltHost]]:
    """``with running(faults=[...]) as host: host.url``: the host on its own loop in a thread."""
    with in_thread(AltHost(**kwargs)) as threaded:
        yield threaded
